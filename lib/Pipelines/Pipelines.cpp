//===- Pipelines.cpp - The end-to-end OF compilation pipelines ------------===//
//
// The CPU pipeline, stage by stage (each can be the last, see stop-after):
//   sbp       : canonicalize, inline, of-amp (with amp=...), of-autodiff
//               (with autodiff=true or train=...), of-training-step and
//               inline (with train=...), of-schedule-stages,
//               of-auto-parallel (with auto=true), of-propagate-sbp,
//               of-insert-boxing
//   partition : of-early-boxing (cuda), of-partition (per-rank programs
//               with collectives)
//   linalg    : of-select-library-calls (a no-op with use-dnn=false),
//               convert-of-to-linalg
//   fusion    : of-fuse-elementwise (unless fuse=false), cse
//   bufferize : one-shot-bufferize at function boundaries, identity layouts
//   plan      : of-build-plan (kernels outlined, static arena, BLAS steps)
//   (all)     : of-lower-cpu-kernels (kernels in the LLVM dialect), or
//               of-lower-cuda-kernels (cuda: cubins or PTX)
// Functions without distributions pass the SBP stages unchanged and run as
// one rank.
//
//===----------------------------------------------------------------------===//

#include "OF/Pipelines/Pipelines.h"
#include "OF/ABI/PlanFormat.h"
#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::of;

LogicalResult mlir::of::parsePipelineOptions(
    StringRef text, PipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  // "cpu,key=value,..." -> "target=cpu key=value ..." for the parser.
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  if (parts.empty())
    return errorHandler("--of-pipeline needs a target, e.g. --of-pipeline=cpu");
  SmallVector<std::string> words;
  for (auto [i, part] : llvm::enumerate(parts)) {
    StringRef p = part.trim();
    if (p.contains(' '))
      return errorHandler("--of-pipeline: '" + p +
                          "' has a space; options are key=value, "
                          "comma-separated");
    words.push_back((i == 0 && !p.contains('=') ? "target=" : "") + p.str());
  }
  if (failed(options.parseFromString(llvm::join(words, " "), llvm::nulls()))) {
    // The option parser reports a bad value on stderr only: find the part
    // that fails on its own and name it.
    for (StringRef word : words) {
      PipelineOptions scratch;
      std::string message;
      llvm::raw_string_ostream stream(message);
      if (succeeded(scratch.parseFromString(word, stream)))
        continue;
      StringRef why = StringRef(message).trim();
      if (why.contains("no such option"))
        return errorHandler("--of-pipeline: unknown option '" +
                            word.split('=').first +
                            "' (of-opt --help lists the options)");
      return errorHandler("--of-pipeline: '" + word + "' is not a value " +
                          word.split('=').first +
                          " takes (of-opt --help lists the options)");
    }
    return errorHandler("--of-pipeline: cannot parse '" + text + "'");
  }

  auto oneOf = [&](StringRef key, StringRef value,
                   ArrayRef<StringRef> allowed) -> LogicalResult {
    if (llvm::is_contained(allowed, value))
      return success();
    return errorHandler("--of-pipeline: " + key + " takes " +
                        llvm::join(allowed, " or ") + ", not '" + value + "'");
  };
  if (StringRef t = options.target; !::of::plan::isDevice(t))
    return errorHandler("--of-pipeline: unknown target '" + t +
                        "' (this build knows: cpu, cuda)");
  if (!options.stopAfter.empty() &&
      failed(
          oneOf("stop-after", options.stopAfter,
                {"sbp", "partition", "linalg", "fusion", "bufferize", "plan"})))
    return failure();
  if (!options.train.empty() &&
      failed(oneOf("train", options.train,
                   {"sgd", "adam", "adamw", "adamax", "nadam", "radam",
                    "adagrad", "rmsprop", "adadelta"})))
    return failure();
  if (!options.amp.empty() &&
      failed(oneOf("amp", options.amp, {"bf16", "f16"})))
    return failure();
  if (failed(oneOf("format", options.cudaFormat, {"bin", "isa"})))
    return failure();
  if (failed(oneOf("schedule", options.schedule, {"gpipe", "1f1b"})))
    return failure();
  for (auto [key, value] :
       {std::pair<StringRef, double>{"momentum", options.momentum},
        {"weight-decay", options.weightDecay},
        {"max-grad-norm", options.maxGradNorm},
        {"beta1", options.beta1},
        {"beta2", options.beta2},
        {"epsilon", options.epsilon},
        {"dampening", options.dampening},
        {"alpha", options.alpha},
        {"rho", options.rho},
        {"lr-decay", options.lrDecay},
        {"momentum-decay", options.momentumDecay},
        {"memory-budget", options.memoryBudget}})
    if (!(value >= 0))
      return errorHandler("--of-pipeline: " + key +
                          " takes a non-negative number, not '" +
                          llvm::formatv("{0}", value).str() + "'");
  if (options.accumulate < 1)
    return errorHandler("--of-pipeline: accumulate takes a positive integer, "
                        "not '0'");
  if (std::abs(options.lossScaleLog2) > 100)
    return errorHandler("--of-pipeline: loss-scale-log2 takes an integer in "
                        "[-100, 100], not '" +
                        Twine(options.lossScaleLog2) + "'");
  if (options.lossScaleWindow < 1)
    return errorHandler("--of-pipeline: loss-scale-window takes a positive "
                        "integer, not '0'");
  if (!StringRef(options.chip).starts_with("sm_"))
    return errorHandler("--of-pipeline: chip names an NVIDIA GPU "
                        "architecture such as sm_90a, not '" +
                        options.chip + "'");
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
  if (options.differentiates()) {
    // f16 training scales the loss (the backward pass seeded by the scale).
    bool lossScaling = options.amp == "f16" && !options.train.empty();
    AutodiffPassOptions autodiff;
    autodiff.seedArgument = lossScaling;
    pm.addPass(createAutodiffPass(autodiff));
    if (!options.train.empty()) {
      TrainingStepPassOptions train;
      train.optimizer = options.train;
      train.momentum = options.momentum;
      train.dampening = options.dampening;
      train.nesterov = options.nesterov;
      train.alpha = options.alpha;
      train.centered = options.centered;
      train.amsgrad = options.amsgrad;
      train.momentumDecay = options.momentumDecay;
      train.rho = options.rho;
      train.lrDecay = options.lrDecay;
      train.weightDecay = options.weightDecay;
      train.maxGradNorm = options.maxGradNorm;
      train.beta1 = options.beta1;
      train.beta2 = options.beta2;
      train.epsilon = options.epsilon;
      train.accumulate = options.accumulate;
      train.zero = options.zero;
      train.lossScaling = lossScaling;
      train.gradsOut = options.gradsOut;
      train.lossScaleLog2 = options.lossScaleLog2;
      train.lossScaleWindow = options.lossScaleWindow;
      pm.addPass(createTrainingStepPass(train));
      pm.addPass(createInlinerPass());
    }
    pm.addPass(createCanonicalizerPass());
    // Checkpointed segments' activations, computed again in the backward
    // pass (before the stages are scheduled: the copies are backward work).
    pm.addPass(createRecomputePass());
    // Pipelines: the order of the micro-batches' forward and backward work.
    ScheduleStagesPassOptions stages;
    stages.schedule = options.schedule;
    pm.addPass(createScheduleStagesPass(stages));
  }
  if (options.autoParallel) {
    AutoParallelPassOptions search;
    search.memoryBudget = options.memoryBudget;
    search.machineFile = options.machineFile;
    pm.addPass(createAutoParallelPass(search));
  }
  PropagateSbpPassOptions propagate;
  propagate.machineFile = options.machineFile;
  pm.addPass(createPropagateSbpPass(propagate));
  InsertBoxingPassOptions boxing;
  boxing.machineFile = options.machineFile;
  pm.addPass(createInsertBoxingPass(boxing));
  pm.addPass(createCSEPass()); // one boxing per value and target
  // A chain of boxings with nothing else reading the middle becomes one
  // transition (an inlined gradient's boxing to its parameter's B followed
  // by ZeRO's B -> S(0) is the reduce-scatter it should be).
  pm.addPass(createCanonicalizerPass());
  if (options.stopAfter == "sbp")
    return;
  // On a GPU collectives run on their own stream: issued early, they
  // overlap the compute that follows (see --of-build-plan's comm-stream).
  if (options.target == ::of::plan::kDeviceCuda)
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
  SelectLibraryCallsPassOptions library;
  library.convLibrary = options.useDnn;
  library.poolLibrary = options.useDnn;
  library.normLibrary =
      options.useDnn && options.target == ::of::plan::kDeviceCuda;
  library.dnnLibrary =
      options.target == ::of::plan::kDeviceCuda ? "cudnn" : "onednn";
  pm.addPass(createSelectLibraryCallsPass(library));
  ConvertOFToLinalgPassOptions toLinalg;
  toLinalg.rowScatters = options.target != ::of::plan::kDeviceCuda;
  pm.addPass(createConvertOFToLinalgPass(toLinalg));
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
  mlir::of::BuildPlanPassOptions plan;
  plan.inPlace = options.inPlace;
  plan.useBlas = options.useBlas;
  plan.useDnn = options.useDnn;
  plan.device = options.target;
  plan.allowTf32 = options.tf32;
  pm.addPass(mlir::of::createBuildPlanPass(plan));
  if (options.stopAfter == "plan")
    return;
  if (options.target == ::of::plan::kDeviceCuda) {
    mlir::of::LowerCudaKernelsPassOptions cuda;
    cuda.chip = options.chip;
    cuda.format = options.cudaFormat;
    pm.addPass(mlir::of::createLowerCudaKernelsPass(cuda));
    return;
  }
  pm.addPass(mlir::of::createLowerCpuKernelsPass());
}

void mlir::of::registerOFPipelines() {
  registerPassPipeline(
      "of-pipeline",
      "The whole OF chain for a target: --of-pipeline=cpu|cuda[,key=value...] "
      "with the options below",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineOptions options;
        if (failed(parsePipelineOptions(text, options, errorHandler)))
          return failure();
        buildPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(PipelineOptions());
      });
}
