//===- StateNames.h - Names of a training step's optimizer state ---------===//
//
// --of-training-step names the optimizer state it adds to a training step's
// inputs after the parameters they belong to: `adam_m_<param>`,
// `adam_v_<param>`, `adam_step` (AdamW), `momentum_<param>` (SGD and
// RMSprop with momentum), `adagrad_sum_<param>`, `adagrad_step` (Adagrad),
// `rmsprop_square_avg_<param>`, `rmsprop_grad_avg_<param>` (RMSprop,
// centered), `adadelta_square_avg_<param>`, `adadelta_acc_delta_<param>`
// (Adadelta), `sgd_step` (SGD with dampening), `loss_scale_log2`,
// `loss_scale_good_steps` (f16 loss scaling). The pass writes them and the
// runtime tells optimizer state from parameters by them (a weights file for
// `of-run --init-state` holds the parameters only), and so does the Python
// frontend, through `ofrt_is_optimizer_state`. Header-only, no MLIR: libofrt
// includes it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_STATENAMES_H
#define OF_RUNTIME_STATENAMES_H

#include <string_view>

namespace of::state {

inline constexpr std::string_view kAdamFirstMoment = "adam_m_";
inline constexpr std::string_view kAdamSecondMoment = "adam_v_";
/// AMSGrad's running maximum of the second moment.
inline constexpr std::string_view kAdamMaxSecondMoment = "adam_vmax_";
/// Adamax's exponentially weighted infinity norm.
inline constexpr std::string_view kAdamaxInfNorm = "adamax_inf_";
/// NAdam's product of its momentum coefficients (a scalar).
inline constexpr std::string_view kNadamMuProduct = "nadam_mu_product";
inline constexpr std::string_view kMomentum = "momentum_";
inline constexpr std::string_view kAdamStep = "adam_step";
inline constexpr std::string_view kAdagradSum = "adagrad_sum_";
inline constexpr std::string_view kAdagradStep = "adagrad_step";
inline constexpr std::string_view kSgdStep = "sgd_step";
inline constexpr std::string_view kRmspropSquareAvg = "rmsprop_square_avg_";
inline constexpr std::string_view kRmspropGradAvg = "rmsprop_grad_avg_";
inline constexpr std::string_view kAdadeltaSquareAvg = "adadelta_square_avg_";
inline constexpr std::string_view kAdadeltaAccDelta = "adadelta_acc_delta_";
inline constexpr std::string_view kLossScaleLog2 = "loss_scale_log2";
inline constexpr std::string_view kLossScaleGoodSteps = "loss_scale_good_steps";

/// Whether a training step's input `name` is optimizer state (not a
/// parameter, a buffer or data).
inline bool isOptimizerState(std::string_view name) {
  for (std::string_view prefix :
       {kAdamFirstMoment, kAdamSecondMoment, kAdamMaxSecondMoment,
        kAdamaxInfNorm, kMomentum, kAdagradSum, kRmspropSquareAvg,
        kRmspropGradAvg, kAdadeltaSquareAvg, kAdadeltaAccDelta})
    if (name.substr(0, prefix.size()) == prefix && name.size() > prefix.size())
      return true;
  return name == kAdamStep || name == kAdagradStep || name == kSgdStep ||
         name == kNadamMuProduct || name == kLossScaleLog2 ||
         name == kLossScaleGoodSteps;
}

} // namespace of::state

#endif // OF_RUNTIME_STATENAMES_H
