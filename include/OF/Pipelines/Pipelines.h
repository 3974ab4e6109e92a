//===- Pipelines.h - The end-to-end OF compilation pipelines ----*- C++ -*-===//
//
// `--of-pipeline=cpu` runs the whole chain from a global of program to an
// ofrt plan whose kernels are in the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#ifndef OF_PIPELINES_PIPELINES_H
#define OF_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::of {

/// Options of a pipeline, parsed from `cpu[,key=value...]`.
struct PipelineOptions {
  std::string target = "cpu";
  /// Stop after this stage: "linalg", "fusion", "bufferize", "plan" or ""
  /// (run everything). Every stage's output can be fed back to of-opt.
  std::string stopAfter;
  bool fuse = true;
  bool inPlace = true;
  bool useBlas = true;
  /// Convolutions (f32 and bf16, and their gradients) as oneDNN library steps
  /// on the CPU rather than generated im2col gemms.
  bool useDnn = true;
  /// Run --of-autodiff after inlining: functions with of.param arguments
  /// get their @<name>_grad.
  bool autodiff = false;
  /// "sgd" or "adamw": also run --of-training-step with these settings
  /// (implies autodiff), so each differentiated @f gets @f_train_step.
  std::string train;
  double momentum = 0.0;
  double weightDecay = 0.0;
  double maxGradNorm = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8; // AdamW
  unsigned accumulate = 1;
  bool zero = false;
  /// "bf16" or "f16": run --of-amp before autodiff; "" for none. With
  /// train, f16 also turns on dynamic loss scaling.
  std::string amp;
  /// Dynamic loss scaling (amp=f16 with train): log2 of the initial scale
  /// and the good steps after which it doubles.
  int lossScaleLog2 = 16;
  unsigned lossScaleWindow = 2000;
  /// target=cuda: the GPU architecture and the kernels' format (bin: cubin
  /// through ptxas; isa: PTX).
  std::string chip = "sm_90a";
  std::string cudaFormat = "bin";
  /// f32 gemms and convolutions on TF32 tensor cores (a GPU; the CPU
  /// computes them in f32).
  bool tf32 = false;
};

/// Parses "cpu,stop-after=plan,fuse=false" into `options`.
LogicalResult parsePipelineOptions(
    llvm::StringRef text, PipelineOptions &options,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler);

/// Appends the passes of the pipeline to `pm` (a builtin.module manager).
void buildPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `--of-pipeline=<target>[,options]`.
void registerOFPipelines();

} // namespace mlir::of

#endif // OF_PIPELINES_PIPELINES_H
