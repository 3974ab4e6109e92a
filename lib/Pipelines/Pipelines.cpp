//===- Pipelines.cpp - The end-to-end OF compilation pipelines ------------===//
//
// The CPU pipeline, stage by stage (each can be the last, see stop-after):
//   sbp       : canonicalize, inline, of-autodiff (with autodiff=true or
//               train=...), of-training-step and inline (with train=...),
//               of-schedule-stages,
//               of-propagate-sbp, of-insert-boxing
//   partition : of-partition (per-rank programs with collectives)
//   linalg    : convert-of-to-linalg
//   fusion    : of-fuse-elementwise (unless fuse=false), cse
//   bufferize : one-shot-bufferize at function boundaries, identity layouts
//   plan      : of-build-plan (kernels outlined, static arena, BLAS steps)
//   (all)     : of-lower-cpu-kernels (kernels in the LLVM dialect)
// Functions without distributions pass the SBP stages unchanged and run as
// one rank.
//
//===----------------------------------------------------------------------===//

#include "OF/Pipelines/Pipelines.h"
#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::of;

LogicalResult mlir::of::parsePipelineOptions(
    StringRef text, PipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  if (parts.empty())
    return errorHandler("--of-pipeline needs a target, e.g. --of-pipeline=cpu");
  options.target = parts[0].trim().str();
  if (options.target != "cpu" && options.target != "cuda")
    return errorHandler("--of-pipeline: unknown target '" + options.target +
                        "' (this build knows: cpu, cuda)");
  auto parseBool = [&](StringRef key, StringRef value,
                       bool &out) -> LogicalResult {
    if (value == "true" || value == "1")
      out = true;
    else if (value == "false" || value == "0")
      out = false;
    else
      return errorHandler("--of-pipeline: " + key + " takes true or false");
    return success();
  };
  for (StringRef part : ArrayRef(parts).drop_front()) {
    auto [key, value] = part.trim().split('=');
    if (key == "stop-after") {
      if (!llvm::is_contained(
              {"sbp", "partition", "linalg", "fusion", "bufferize", "plan"},
              value))
        return errorHandler("--of-pipeline: stop-after takes sbp, partition, "
                            "linalg, fusion, bufferize or plan, not '" +
                            value + "'");
      options.stopAfter = value.str();
    } else if (key == "fuse") {
      if (failed(parseBool(key, value, options.fuse)))
        return failure();
    } else if (key == "in-place") {
      if (failed(parseBool(key, value, options.inPlace)))
        return failure();
    } else if (key == "use-blas") {
      if (failed(parseBool(key, value, options.useBlas)))
        return failure();
    } else if (key == "use-dnn") {
      if (failed(parseBool(key, value, options.useDnn)))
        return failure();
    } else if (key == "autodiff") {
      if (failed(parseBool(key, value, options.autodiff)))
        return failure();
    } else if (key == "train") {
      if (value != "sgd" && value != "adamw")
        return errorHandler("--of-pipeline: train takes sgd or adamw, not '" +
                            value + "'");
      options.train = value.str();
      options.autodiff = true;
    } else if (key == "momentum" || key == "weight-decay" ||
               key == "max-grad-norm" || key == "beta1" || key == "beta2" ||
               key == "epsilon") {
      double &out = key == "momentum"       ? options.momentum
                    : key == "weight-decay" ? options.weightDecay
                    : key == "beta1"        ? options.beta1
                    : key == "beta2"        ? options.beta2
                    : key == "epsilon"      ? options.epsilon
                                            : options.maxGradNorm;
      if (value.getAsDouble(out) || out < 0)
        return errorHandler("--of-pipeline: " + key +
                            " takes a non-negative number, not '" + value +
                            "'");
    } else if (key == "accumulate") {
      if (value.getAsInteger(10, options.accumulate) || options.accumulate < 1)
        return errorHandler("--of-pipeline: accumulate takes a positive "
                            "integer, not '" +
                            value + "'");
    } else if (key == "amp") {
      if (value != "bf16" && value != "f16")
        return errorHandler("--of-pipeline: amp takes bf16 or f16, not '" +
                            value + "'");
      options.amp = value.str();
    } else if (key == "loss-scale-log2") {
      if (value.getAsInteger(10, options.lossScaleLog2) ||
          std::abs(options.lossScaleLog2) > 100)
        return errorHandler("--of-pipeline: loss-scale-log2 takes an integer "
                            "in [-100, 100], not '" +
                            value + "'");
    } else if (key == "loss-scale-window") {
      if (value.getAsInteger(10, options.lossScaleWindow) ||
          options.lossScaleWindow < 1)
        return errorHandler("--of-pipeline: loss-scale-window takes a "
                            "positive integer, not '" +
                            value + "'");
    } else if (key == "chip") {
      if (!value.starts_with("sm_"))
        return errorHandler("--of-pipeline: chip names an NVIDIA GPU "
                            "architecture such as sm_90a, not '" +
                            value + "'");
      options.chip = value.str();
    } else if (key == "format") {
      if (value != "bin" && value != "isa")
        return errorHandler("--of-pipeline: format takes bin (cubin) or isa "
                            "(PTX), not '" +
                            value + "'");
      options.cudaFormat = value.str();
    } else if (key == "zero") {
      if (failed(parseBool(key, value, options.zero)))
        return failure();
    } else if (key == "tf32") {
      if (failed(parseBool(key, value, options.tf32)))
        return failure();
    } else {
      return errorHandler(
          "--of-pipeline: unknown option '" + key +
          "' (stop-after, fuse, in-place, use-blas, use-dnn, autodiff, train, "
          "momentum, "
          "weight-decay, beta1, beta2, epsilon, max-grad-norm, accumulate, "
          "zero, amp, loss-scale-log2, loss-scale-window, chip, format, "
          "tf32)");
    }
  }
  return success();
}

void mlir::of::buildPipeline(OpPassManager &pm,
                             const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createInlinerPass());
  if (!options.amp.empty()) {
    AmpPassOptions amp;
    amp.dtype = options.amp;
    pm.addPass(createAmpPass(amp));
  }
  if (options.autodiff) {
    // f16 training scales the loss (the backward pass seeded by the scale).
    bool lossScaling = options.amp == "f16" && !options.train.empty();
    AutodiffPassOptions autodiff;
    autodiff.seedArgument = lossScaling;
    pm.addPass(createAutodiffPass(autodiff));
    if (!options.train.empty()) {
      TrainingStepPassOptions train;
      train.optimizer = options.train;
      train.momentum = options.momentum;
      train.weightDecay = options.weightDecay;
      train.maxGradNorm = options.maxGradNorm;
      train.beta1 = options.beta1;
      train.beta2 = options.beta2;
      train.epsilon = options.epsilon;
      train.accumulate = options.accumulate;
      train.zero = options.zero;
      train.lossScaling = lossScaling;
      train.lossScaleLog2 = options.lossScaleLog2;
      train.lossScaleWindow = options.lossScaleWindow;
      pm.addPass(createTrainingStepPass(train));
      pm.addPass(createInlinerPass());
    }
    pm.addPass(createCanonicalizerPass());
    // Pipelines: every micro-batch's forward before the backward passes.
    pm.addPass(createScheduleStagesPass());
  }
  pm.addPass(createPropagateSbpPass());
  pm.addPass(createInsertBoxingPass());
  pm.addPass(createCSEPass()); // one boxing per value and target
  // A chain of boxings with nothing else reading the middle becomes one
  // transition (an inlined gradient's boxing to its parameter's B followed
  // by ZeRO's B -> S(0) is the reduce-scatter it should be).
  pm.addPass(createCanonicalizerPass());
  if (options.stopAfter == "sbp")
    return;
  // On a GPU collectives run on their own stream: issued early, they
  // overlap the compute that follows (see --of-build-plan's comm-stream).
  if (options.target == "cuda")
    pm.addPass(createEarlyBoxingPass());
  pm.addPass(createPartitionPass());
  pm.addPass(createCanonicalizerPass());
  if (options.stopAfter == "partition")
    return;
  // Convolutions and poolings run through oneDNN on the CPU and cuDNN on a
  // GPU (there only those padded symmetrically, as cuDNN's descriptors
  // pad; the others stay generated; f16 ones as they are, which oneDNN
  // cannot). Training batch norms run through cuDNN on a GPU; on the CPU
  // they stay generated: oneDNN 2.6's batch norm on the plain layout took
  // 9.5 ms forward + gradient where the generated kernels take 4.0
  // (bench/cpu_bench.py --only norm, 32x64x32x32).
  ConvertOFToLinalgPassOptions linalg;
  linalg.convLibrary = options.useDnn;
  linalg.poolLibrary = options.useDnn;
  linalg.normLibrary = options.useDnn && options.target == "cuda";
  linalg.dnnLibrary = options.target == "cuda" ? "cudnn" : "onednn";
  pm.addPass(createConvertOFToLinalgPass(linalg));
  pm.addPass(createCanonicalizerPass());
  if (options.stopAfter == "linalg")
    return;
  if (options.fuse)
    pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.stopAfter == "fusion")
    return;
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.stopAfter == "bufferize")
    return;
  of::BuildPlanPassOptions plan;
  plan.inPlace = options.inPlace;
  plan.useBlas = options.useBlas;
  plan.useDnn = options.useDnn;
  plan.device = options.target;
  plan.allowTf32 = options.tf32;
  pm.addPass(of::createBuildPlanPass(plan));
  if (options.stopAfter == "plan")
    return;
  if (options.target == "cuda") {
    of::LowerCudaKernelsPassOptions cuda;
    cuda.chip = options.chip;
    cuda.format = options.cudaFormat;
    pm.addPass(of::createLowerCudaKernelsPass(cuda));
    return;
  }
  pm.addPass(of::createLowerCpuKernelsPass());
}

void mlir::of::registerOFPipelines() {
  registerPassPipeline(
      "of-pipeline",
      "The whole OF chain for a target: --of-pipeline=cpu[,stop-after="
      "sbp|partition|linalg|fusion|bufferize|plan][,fuse=false]"
      "[,in-place=false]"
      "[,use-blas=false][,use-dnn=false][,autodiff=true][,train=sgd|adamw][,"
      "momentum=M]"
      "[,weight-decay=W][,beta1=B1][,beta2=B2][,epsilon=E][,max-grad-norm=N]"
      "[,accumulate=K][,zero=true]"
      "[,amp=bf16|f16][,loss-scale-log2=16][,loss-scale-window=2000]; "
      "--of-pipeline=cuda[,chip=sm_90a][,format=bin|isa][,tf32=true] and "
      "the same options compiles kernels for an NVIDIA GPU",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineOptions options;
        if (failed(parsePipelineOptions(text, options, errorHandler)))
          return failure();
        buildPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
}
