//===- StateNames.h - Names of a training step's optimizer state ---------===//
//
// --of-training-step names the optimizer state it adds to a training step's
// inputs after the parameters they belong to: `adam_m_<param>`,
// `adam_v_<param>`, `adam_step` (AdamW), `momentum_<param>` (SGD with
// momentum), `loss_scale_log2`, `loss_scale_good_steps` (f16 loss
// scaling). The pass writes them and the runtime tells optimizer state from
// parameters by them (a weights file for `of-run --init-state` holds the
// parameters only), and so does the Python frontend, through
// `ofrt_is_optimizer_state`. Header-only, no MLIR: libofrt includes it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_STATENAMES_H
#define OF_RUNTIME_STATENAMES_H

#include <string_view>

namespace of::state {

inline constexpr std::string_view kAdamFirstMoment = "adam_m_";
inline constexpr std::string_view kAdamSecondMoment = "adam_v_";
inline constexpr std::string_view kMomentum = "momentum_";
inline constexpr std::string_view kAdamStep = "adam_step";
inline constexpr std::string_view kLossScaleLog2 = "loss_scale_log2";
inline constexpr std::string_view kLossScaleGoodSteps = "loss_scale_good_steps";

/// Whether a training step's input `name` is optimizer state (not a
/// parameter, a buffer or data).
inline bool isOptimizerState(std::string_view name) {
  for (std::string_view prefix :
       {kAdamFirstMoment, kAdamSecondMoment, kMomentum})
    if (name.substr(0, prefix.size()) == prefix && name.size() > prefix.size())
      return true;
  return name == kAdamStep || name == kLossScaleLog2 ||
         name == kLossScaleGoodSteps;
}

} // namespace of::state

#endif // OF_RUNTIME_STATENAMES_H
