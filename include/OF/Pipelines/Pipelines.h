//===- Pipelines.h - The end-to-end OF compilation pipelines ----*- C++ -*-===//
//
// `--of-pipeline=cpu` runs the whole chain from a global of program to an
// ofrt plan whose kernels are in the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#ifndef OF_PIPELINES_PIPELINES_H
#define OF_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::of {

/// The options of `--of-pipeline=<target>[,key=value...]`: their one
/// declaration (name, default, help), parsed by the pass-options parser.
struct PipelineOptions : PassPipelineOptions<PipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("cpu or cuda (the first word)"),
                             llvm::cl::init("cpu")};
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Stop after a stage (sbp, partition, linalg, fusion, "
                     "bufferize, plan); each stage's output can be fed back "
                     "to of-opt")};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("Fuse elementwise chains"),
                    llvm::cl::init(true)};
  Option<bool> inPlace{*this, "in-place",
                       llvm::cl::desc("Update training state in place"),
                       llvm::cl::init(true)};
  Option<bool> useBlas{*this, "use-blas",
                       llvm::cl::desc("Matrix products as BLAS steps"),
                       llvm::cl::init(true)};
  Option<bool> useDnn{
      *this, "use-dnn",
      llvm::cl::desc("Convolutions and poolings (and their gradients) as "
                     "oneDNN/cuDNN library steps"),
      llvm::cl::init(true)};
  Option<bool> autodiff{
      *this, "autodiff",
      llvm::cl::desc("Run --of-autodiff after inlining: functions with "
                     "of.param arguments get their @<name>_grad"),
      llvm::cl::init(false)};
  Option<std::string> train{
      *this, "train",
      llvm::cl::desc("sgd, adam, adamw, adamax, nadam, radam, adagrad, rmsprop "
                     "or adadelta: also run "
                     "--of-training-step (implies "
                     "autodiff), so each differentiated @f gets "
                     "@f_train_step")};
  Option<double> momentum{*this, "momentum",
                          llvm::cl::desc("SGD and RMSprop momentum"),
                          llvm::cl::init(0.0)};
  Option<double> dampening{*this, "dampening", llvm::cl::desc("SGD dampening"),
                           llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(false)};
  Option<double> alpha{*this, "alpha",
                       llvm::cl::desc("RMSprop smoothing constant"),
                       llvm::cl::init(0.99)};
  Option<double> momentumDecay{*this, "momentum-decay",
                               llvm::cl::desc("NAdam's momentum decay"),
                               llvm::cl::init(4e-3)};
  Option<bool> amsgrad{*this, "amsgrad",
                       llvm::cl::desc("Adam/AdamW: AMSGrad's maximum second "
                                      "moment"),
                       llvm::cl::init(false)};
  Option<bool> centered{*this, "centered",
                        llvm::cl::desc("RMSprop: the centred second moment"),
                        llvm::cl::init(false)};
  Option<double> rho{*this, "rho",
                     llvm::cl::desc("Adadelta running-average decay"),
                     llvm::cl::init(0.9)};
  Option<double> lrDecay{*this, "lr-decay",
                         llvm::cl::desc("Adagrad rate decay"),
                         llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> maxGradNorm{
      *this, "max-grad-norm",
      llvm::cl::desc("Clip gradients to this global norm (0: no clipping)"),
      llvm::cl::init(0.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.999)};
  Option<double> epsilon{
      *this, "epsilon",
      llvm::cl::desc("AdamW/Adagrad/RMSprop/Adadelta epsilon"),
      llvm::cl::init(1e-8)};
  Option<unsigned> accumulate{
      *this, "accumulate",
      llvm::cl::desc("Micro-batches whose gradients one step accumulates"),
      llvm::cl::init(1)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Pipeline stages' order of micro-batches: gpipe (every "
                     "forward, then the backwards) or 1f1b (one forward, one "
                     "backward)"),
      llvm::cl::init("gpipe")};
  Option<bool> gradsOut{
      *this, "grads-out",
      llvm::cl::desc("The training step also returns each parameter's "
                     "gradient (grad_<p>) and, when clipping, their norm "
                     "(grad_norm)"),
      llvm::cl::init(false)};
  Option<bool> zero{*this, "zero",
                    llvm::cl::desc("ZeRO: optimizer state split over the "
                                   "data-parallel ranks"),
                    llvm::cl::init(false)};
  Option<bool> autoParallel{
      *this, "auto",
      llvm::cl::desc("Choose every distribution by --of-auto-parallel's "
                     "exact search (annotations are constraints)"),
      llvm::cl::init(false)};
  Option<double> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("auto: bytes per device the step may hold (0: no "
                     "limit)"),
      llvm::cl::init(0)};
  Option<std::string> machineFile{
      *this, "machine-file",
      llvm::cl::desc("JSON machine file of the SBP cost model (see "
                     "--of-propagate-sbp)")};
  Option<std::string> amp{
      *this, "amp",
      llvm::cl::desc("bf16 or f16: run --of-amp before autodiff; with train, "
                     "f16 also turns on dynamic loss scaling")};
  Option<int> lossScaleLog2{
      *this, "loss-scale-log2",
      llvm::cl::desc("Dynamic loss scaling: log2 of the initial scale"),
      llvm::cl::init(16)};
  Option<unsigned> lossScaleWindow{
      *this, "loss-scale-window",
      llvm::cl::desc("Dynamic loss scaling: good steps after which the scale "
                     "doubles"),
      llvm::cl::init(2000)};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("target=cuda: the GPU architecture, e.g. sm_90a"),
      llvm::cl::init("sm_90a")};
  Option<std::string> cudaFormat{
      *this, "format",
      llvm::cl::desc("target=cuda: the kernels' format, bin (cubin through "
                     "ptxas) or isa (PTX)"),
      llvm::cl::init("bin")};
  Option<bool> tf32{*this, "tf32",
                    llvm::cl::desc("f32 gemms and convolutions on TF32 tensor "
                                   "cores (a GPU; the CPU computes them in "
                                   "f32)"),
                    llvm::cl::init(false)};

  /// Whether gradients are built: autodiff, or implied by train.
  bool differentiates() const { return autodiff || !train.empty(); }
};

/// Parses "cpu,stop-after=plan,fuse=false" into `options` (the target
/// first, then the options as key=value, comma-separated) and checks the
/// values; errors go to `errorHandler`.
LogicalResult parsePipelineOptions(
    llvm::StringRef text, PipelineOptions &options,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler);

/// Appends the passes of the pipeline to `pm` (a builtin.module manager).
void buildPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `--of-pipeline=<target>[,options]`.
void registerOFPipelines();

} // namespace mlir::of

#endif // OF_PIPELINES_PIPELINES_H
