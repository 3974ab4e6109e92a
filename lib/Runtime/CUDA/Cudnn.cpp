//===- Cudnn.cpp - Convolution, pooling and batch-norm steps through cuDNN
//-===//
//
// See Cudnn.h. cudnn.h is compiled against for its types and constants
// only; the library is loaded with dlopen into a table of functions. The
// convolution, pooling and batch-norm API used here is cuDNN's descriptor
// API, which cuDNN 9 marks deprecated in favour of its graph API but still
// ships (libcudnn_cnn, libcudnn_ops).
//
//===----------------------------------------------------------------------===//

#include "CUDA/Cudnn.h"

#include "Plan/DynamicLibrary.h"
#include "Plan/PlanFile.h"

#ifndef OF_HAVE_CUDNN_HEADERS

namespace of::rt {

struct CudnnSteps::Impl {};
CudnnSteps::CudnnSteps() = default;
CudnnSteps::~CudnnSteps() = default;
Status CudnnSteps::prepare(const PreparedStep &step, Executor &) {
  return fail(step.name, ": dnn steps on the GPU need cuDNN, and "
                         "this libofrt was built without its header "
                         "(cudnn.h); compile with use-dnn=false for im2col "
                         "gemms");
}
Status CudnnSteps::run(const PreparedStep &step, void *) {
  return fail(step.name, ": this libofrt has no cuDNN");
}
Status checkCudnn(const std::string *&) {
  return fail("this libofrt was built without cuDNN's header (cudnn.h)");
}

} // namespace of::rt

#else

#include <cudnn.h>

#include <climits>
#include <map>
#include <mutex>
#include <vector>

// The descriptor API is deprecated in cuDNN 9 (the graph API replaces it);
// the table below names its functions.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using namespace of::plan;

namespace of::rt {

namespace {

#define OF_CUDNN_FUNCTIONS(X)                                                  \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnAddTensor)                                                            \
  X(cudnnCreatePoolingDescriptor)                                              \
  X(cudnnSetPooling2dDescriptor)                                               \
  X(cudnnGetPooling2dForwardOutputDim)                                         \
  X(cudnnDestroyPoolingDescriptor)                                             \
  X(cudnnPoolingForward)                                                       \
  X(cudnnPoolingBackward)                                                      \
  X(cudnnDeriveBNTensorDescriptor)                                             \
  X(cudnnBatchNormalizationForwardTraining)                                    \
  X(cudnnBatchNormalizationBackward)                                           \
  X(cudnnSetTensor)                                                            \
  X(cudnnScaleTensor)

struct Cudnn {
  OF_LIBRARY_TABLE(OF_CUDNN_FUNCTIONS)
};

LibrarySource cudnnSource() {
  return {"cuDNN", "OF_CUDNN_LIBRARY", toolkitCandidates("libcudnn.so.9"),
          "convolution, pooling and batch-norm steps on the GPU need cuDNN 9, "
          "which "
          "cannot be loaded (libcudnn.so.9; $OF_CUDNN_LIBRARY names "
          "another; or compile with use-dnn=false for generated kernels):",
          "OF needs cuDNN 9"};
}

/// cuDNN, loaded once by the first convolution or pooling step.
Status loadCudnn(const Cudnn *&out) { return loadLibrary(cudnnSource, out); }

/// The largest workspace an algorithm may ask for.
constexpr size_t kMaxWorkspaceBytes = size_t(256) << 20;

enum class Direction {
  Forward,
  GradInput,
  GradFilter,
  Pool,
  PoolGrad,
  Norm,
  NormGrad
};

/// The key of a step's descriptors: its kind, then its geometry's.
std::vector<int64_t> stepKey(const PreparedStep &step) {
  std::vector<int64_t> key = step.kind == StepKind::Pool ? poolingKey(step)
                             : step.kind == StepKind::BatchNorm
                                 ? batchNormKey(step)
                                 : convolutionKey(step);
  key.insert(key.begin(), static_cast<int64_t>(step.kind));
  return key;
}

} // namespace

Status checkCudnn(const std::string *&path) {
  return loadAndLocate(loadCudnn, path);
}

struct CudnnSteps::Impl {
  /// The descriptors and algorithm of one geometry, direction and type.
  struct Plan {
    Direction direction = Direction::Forward;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnTensorDescriptor_t channels = nullptr; // a batch norm's [C] tensors
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnPoolingDescriptor_t pool = nullptr;
    int algorithm = 0;
    size_t workspaceBytes = 0;
    bool doublePrecision = false;
    std::string error; // why cuDNN cannot run it ("": it can)
  };

  ~Impl() {
    if (!cudnn)
      return;
    for (auto &[key, plan] : plans) {
      for (cudnnTensorDescriptor_t d :
           {plan.x, plan.y, plan.bias, plan.channels})
        if (d)
          cudnn->cudnnDestroyTensorDescriptor(d);
      if (plan.w)
        cudnn->cudnnDestroyFilterDescriptor(plan.w);
      if (plan.conv)
        cudnn->cudnnDestroyConvolutionDescriptor(plan.conv);
      if (plan.pool)
        cudnn->cudnnDestroyPoolingDescriptor(plan.pool);
    }
    if (handle)
      cudnn->cudnnDestroy(handle);
  }

  Status check(cudnnStatus_t status, const char *what) const {
    if (status == CUDNN_STATUS_SUCCESS)
      return Status::success();
    return fail(what, ": ", cudnn->cudnnGetErrorString(status));
  }

  Status create(const PreparedStep &step, Plan &plan);
  Status createPooling(const PreparedStep &step, Plan &plan);
  Status runPooling(const PreparedStep &step, const Plan &plan, void *stream);
  Status createBatchNorm(const PreparedStep &step, Plan &plan);
  Status runBatchNorm(const PreparedStep &step, const Plan &plan);

  const Cudnn *cudnn = nullptr;
  cudnnHandle_t handle = nullptr;
  std::map<std::vector<int64_t>, Plan> plans;
  // One workspace per stream (steps of two streams may overlap).
  std::vector<void *> workspaces;
  std::vector<size_t> workspaceBytes;
};

Status CudnnSteps::Impl::createPooling(const PreparedStep &step, Plan &plan) {
  const PoolGeometry &g = step.pool;
  if (g.padTop != g.padBottom || g.padLeft != g.padRight)
    return fail("cuDNN pads symmetrically, and this pooling pads [", g.padTop,
                ", ", g.padBottom, "] x [", g.padLeft, ", ", g.padRight,
                "] (--of-pipeline=cuda keeps such poolings as generated "
                "kernels)");
  cudnnDataType_t type;
  switch (step.dnnType) {
  case DType::F32:
    type = CUDNN_DATA_FLOAT;
    break;
  case DType::F64:
    type = CUDNN_DATA_DOUBLE;
    plan.doublePrecision = true;
    break;
  case DType::BF16:
    type = CUDNN_DATA_BFLOAT16;
    break;
  case DType::F16:
    type = CUDNN_DATA_HALF;
    break;
  default:
    return fail("cuDNN has no ", dtypeName(step.dnnType), " pooling");
  }
  for (int64_t v : {g.n, g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw, g.strideH,
                    g.strideW, g.padTop, g.padLeft})
    if (v > INT32_MAX)
      return fail("an extent of ", v, " exceeds cuDNN's int");
  auto narrow = [](int64_t v) { return static_cast<int>(v); };
  plan.direction = step.function == kPoolForwardFunction ? Direction::Pool
                                                         : Direction::PoolGrad;
  cudnnPoolingMode_t mode = g.mode == PoolMode::Max
                                ? CUDNN_POOLING_MAX_DETERMINISTIC
                            : g.mode == PoolMode::AvgIncludePad
                                ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  for (cudnnTensorDescriptor_t *d : {&plan.x, &plan.y})
    if (Status s = check(cudnn->cudnnCreateTensorDescriptor(d),
                         "cudnnCreateTensorDescriptor");
        s.failed())
      return s;
  if (Status s = check(cudnn->cudnnCreatePoolingDescriptor(&plan.pool),
                       "cudnnCreatePoolingDescriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetTensor4dDescriptor(
                           plan.x, CUDNN_TENSOR_NCHW, type, narrow(g.n),
                           narrow(g.c), narrow(g.h), narrow(g.w)),
                       "the input's descriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetTensor4dDescriptor(
                           plan.y, CUDNN_TENSOR_NCHW, type, narrow(g.n),
                           narrow(g.c), narrow(g.oh), narrow(g.ow)),
                       "the output's descriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetPooling2dDescriptor(
                           plan.pool, mode, CUDNN_PROPAGATE_NAN, narrow(g.kh),
                           narrow(g.kw), narrow(g.padTop), narrow(g.padLeft),
                           narrow(g.strideH), narrow(g.strideW)),
                       "the pooling's descriptor");
      s.failed())
    return s;
  // cuDNN's own output extents must be the plan's (its descriptor floors,
  // as the geometry check does), so that a geometry it sees otherwise
  // fails here rather than in a run.
  int dims[4] = {0, 0, 0, 0};
  if (Status s =
          check(cudnn->cudnnGetPooling2dForwardOutputDim(
                    plan.pool, plan.x, &dims[0], &dims[1], &dims[2], &dims[3]),
                "cudnnGetPooling2dForwardOutputDim");
      s.failed())
    return s;
  if (dims[0] != g.n || dims[1] != g.c || dims[2] != g.oh || dims[3] != g.ow)
    return fail("cuDNN's pooling gives an output of [", dims[0], ", ", dims[1],
                ", ", dims[2], ", ", dims[3], "], the plan's is [", g.n, ", ",
                g.c, ", ", g.oh, ", ", g.ow, "]");
  // cudnnPoolingBackward reads the forward output: a gradient step
  // recomputes it into the stream's workspace (for averages too, which
  // should not read it; cuDNN does not say so).
  if (plan.direction == Direction::PoolGrad)
    plan.workspaceBytes =
        static_cast<size_t>(poolOutputElements(g)) * dtypeSize(step.dnnType);
  return Status::success();
}

Status CudnnSteps::Impl::runPooling(const PreparedStep &step, const Plan &plan,
                                    void *stream) {
  float oneF = 1.0f, zeroF = 0.0f;
  double oneD = 1.0, zeroD = 0.0;
  const void *one = plan.doublePrecision ? static_cast<const void *>(&oneD)
                                         : static_cast<const void *>(&oneF);
  const void *zero = plan.doublePrecision ? static_cast<const void *>(&zeroD)
                                          : static_cast<const void *>(&zeroF);
  const std::vector<void *> &a = step.args;
  if (plan.direction == Direction::Pool)
    return check(cudnn->cudnnPoolingForward(handle, plan.pool, one, plan.x,
                                            a[0], zero, plan.y, a[1]),
                 "cudnnPoolingForward");
  void *y = workspaces[step.stream];
  if (Status status =
          check(cudnn->cudnnPoolingForward(handle, plan.pool, one, plan.x, a[0],
                                           zero, plan.y, y),
                "cudnnPoolingForward (for the gradient)");
      status.failed())
    return status;
  return check(cudnn->cudnnPoolingBackward(handle, plan.pool, one, plan.y, y,
                                           plan.y, a[1], plan.x, a[0], zero,
                                           plan.x, a[2]),
               "cudnnPoolingBackward");
}

/// A batch norm's x as [N, C, S, 1] in NCHW, its [C] tensors as cuDNN
/// derives them for spatial batch norm (f32).
Status CudnnSteps::Impl::createBatchNorm(const PreparedStep &step, Plan &plan) {
  const BatchNormGeometry &g = step.norm;
  if (step.dnnType != DType::F32)
    return fail("the batch norm step is f32 only, got ",
                dtypeName(step.dnnType));
  if (batchNormInputElements(g) > INT32_MAX)
    return fail("x has ", batchNormInputElements(g),
                " elements, more than cuDNN's int");
  // The forward pass takes the biased variance from cuDNN's running
  // variance (unbiased: a sum over n * s - 1) scaled back, which one
  // element per channel cannot give.
  if (step.function == kBatchNormForwardFunction && g.n * g.s < 2)
    return fail("a batch norm over one element per channel (the compiler "
                "keeps these generated)");
  plan.direction = step.function == kBatchNormForwardFunction
                       ? Direction::Norm
                       : Direction::NormGrad;
  for (cudnnTensorDescriptor_t *d : {&plan.x, &plan.channels})
    if (Status s = check(cudnn->cudnnCreateTensorDescriptor(d),
                         "cudnnCreateTensorDescriptor");
        s.failed())
      return s;
  if (Status s = check(cudnn->cudnnSetTensor4dDescriptor(
                           plan.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                           static_cast<int>(g.n), static_cast<int>(g.c),
                           static_cast<int>(g.s), 1),
                       "the input's descriptor");
      s.failed())
    return s;
  return check(cudnn->cudnnDeriveBNTensorDescriptor(plan.channels, plan.x,
                                                    CUDNN_BATCHNORM_SPATIAL),
               "cudnnDeriveBNTensorDescriptor");
}

/// dnn.batch_norm: cuDNN's training forward pass with an averaging factor
/// of 1, so that its running mean is the batch mean and its running
/// variance the batch's unbiased variance, which is then scaled by
/// (m - 1) / m (m = n * s) into the biased one that the step gives.
/// dnn.batch_norm_grad: cuDNN's backward pass without the saved statistics
/// (it recomputes them from x, which the step's mean and var equal).
Status CudnnSteps::Impl::runBatchNorm(const PreparedStep &step,
                                      const Plan &plan) {
  const BatchNormGeometry &g = step.norm;
  float one = 1.0f, zero = 0.0f;
  const std::vector<void *> &a = step.args;
  if (plan.direction == Direction::Norm) {
    // The running statistics are blended as old * (1 - factor) + batch *
    // factor: with a factor of 1 an old NaN (the arena's leftovers) would
    // still come through, so they start at zero.
    for (void *statistic : {a[4], a[5]})
      if (Status status = check(
              cudnn->cudnnSetTensor(handle, plan.channels, statistic, &zero),
              "cudnnSetTensor (the statistics)");
          status.failed())
        return status;
    if (Status status =
            check(cudnn->cudnnBatchNormalizationForwardTraining(
                      handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, plan.x,
                      a[0], plan.x, a[3], plan.channels, a[1], a[2], 1.0, a[4],
                      a[5], g.epsilon, nullptr, nullptr),
                  "cudnnBatchNormalizationForwardTraining");
        status.failed())
      return status;
    double m = static_cast<double>(g.n * g.s);
    float biased = static_cast<float>((m - 1.0) / m);
    return check(cudnn->cudnnScaleTensor(handle, plan.channels, a[5], &biased),
                 "cudnnScaleTensor (the biased variance)");
  }
  return check(cudnn->cudnnBatchNormalizationBackward(
                   handle, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
                   plan.x, a[0], plan.x, a[1], plan.x, a[5], plan.channels,
                   a[2], a[6], a[7], g.epsilon, nullptr, nullptr),
               "cudnnBatchNormalizationBackward");
}

Status CudnnSteps::Impl::create(const PreparedStep &step, Plan &plan) {
  if (step.kind == StepKind::Pool)
    return createPooling(step, plan);
  if (step.kind == StepKind::BatchNorm)
    return createBatchNorm(step, plan);
  const ConvGeometry &g = step.conv;
  if (g.padTop != g.padBottom || g.padLeft != g.padRight)
    return fail("cuDNN pads symmetrically, and this convolution pads [",
                g.padTop, ", ", g.padBottom, "] x [", g.padLeft, ", ",
                g.padRight,
                "] (--of-pipeline=cuda keeps such convolutions "
                "as im2col gemms)");
  cudnnDataType_t type, compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_TENSOR_OP_MATH;
  switch (step.dnnType) {
  case DType::F32:
    type = CUDNN_DATA_FLOAT;
    // TF32 tensor cores only where the program allows them (cuDNN's default
    // math uses them for f32 on Ampere and later); otherwise f32 results as
    // the CPU's.
    math = step.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    break;
  case DType::F64:
    type = compute = CUDNN_DATA_DOUBLE;
    math = CUDNN_FMA_MATH;
    plan.doublePrecision = true;
    break;
  case DType::BF16:
    type = CUDNN_DATA_BFLOAT16;
    break;
  case DType::F16:
    type = CUDNN_DATA_HALF;
    break;
  default:
    return fail("cuDNN has no ", dtypeName(step.dnnType), " convolution");
  }
  auto narrow = [](int64_t v) { return static_cast<int>(v); };
  for (int64_t v : {g.n, g.c, g.h, g.w, g.f, g.oh, g.ow, g.kh, g.kw, g.strideH,
                    g.strideW, g.dilationH, g.dilationW, g.padTop, g.padLeft,
                    g.groups})
    if (v > INT32_MAX)
      return fail("an extent of ", v, " exceeds cuDNN's int");
  plan.direction = step.function == kConvForwardFunction ? Direction::Forward
                   : step.function == kConvGradInputFunction
                       ? Direction::GradInput
                       : Direction::GradFilter;
  if (Status s = check(cudnn->cudnnCreateTensorDescriptor(&plan.x),
                       "cudnnCreateTensorDescriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnCreateTensorDescriptor(&plan.y),
                       "cudnnCreateTensorDescriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnCreateFilterDescriptor(&plan.w),
                       "cudnnCreateFilterDescriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnCreateConvolutionDescriptor(&plan.conv),
                       "cudnnCreateConvolutionDescriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetTensor4dDescriptor(
                           plan.x, CUDNN_TENSOR_NCHW, type, narrow(g.n),
                           narrow(g.c), narrow(g.h), narrow(g.w)),
                       "the input's descriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetTensor4dDescriptor(
                           plan.y, CUDNN_TENSOR_NCHW, type, narrow(g.n),
                           narrow(g.f), narrow(g.oh), narrow(g.ow)),
                       "the output's descriptor");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetFilter4dDescriptor(
                           plan.w, type, CUDNN_TENSOR_NCHW, narrow(g.f),
                           narrow(g.c / g.groups), narrow(g.kh), narrow(g.kw)),
                       "the weight's descriptor");
      s.failed())
    return s;
  if (Status s =
          check(cudnn->cudnnSetConvolution2dDescriptor(
                    plan.conv, narrow(g.padTop), narrow(g.padLeft),
                    narrow(g.strideH), narrow(g.strideW), narrow(g.dilationH),
                    narrow(g.dilationW), CUDNN_CROSS_CORRELATION, compute),
                "the convolution's descriptor");
      s.failed())
    return s;
  if (Status s = check(
          cudnn->cudnnSetConvolutionGroupCount(plan.conv, narrow(g.groups)),
          "cudnnSetConvolutionGroupCount");
      s.failed())
    return s;
  if (Status s = check(cudnn->cudnnSetConvolutionMathType(plan.conv, math),
                       "cudnnSetConvolutionMathType");
      s.failed())
    return s;
  if (plan.direction == Direction::Forward && step.args.size() == 4) {
    if (Status s = check(cudnn->cudnnCreateTensorDescriptor(&plan.bias),
                         "cudnnCreateTensorDescriptor");
        s.failed())
      return s;
    if (Status s =
            check(cudnn->cudnnSetTensor4dDescriptor(
                      plan.bias, CUDNN_TENSOR_NCHW, type, 1, narrow(g.f), 1, 1),
                  "the bias's descriptor");
        s.failed())
      return s;
  }

  // cuDNN's heuristics rank the algorithms; the first that works within
  // the workspace cap is taken.
  int returned = 0;
  bool found = false;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  auto pick = [&](const auto &results) {
    for (int i = 0; i < returned && !found; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS &&
          results[i].memory <= kMaxWorkspaceBytes) {
        plan.algorithm = static_cast<int>(results[i].algo);
        // 16-bit: the math the heuristics ranked the algorithm with (f32
        // keeps FMA math, which the heuristics were asked for).
        if (math == CUDNN_TENSOR_OP_MATH)
          status = cudnn->cudnnSetConvolutionMathType(plan.conv,
                                                      results[i].mathType);
        found = true;
      }
  };
  switch (plan.direction) {
  case Direction::Forward: {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    status = cudnn->cudnnGetConvolutionForwardAlgorithm_v7(
        handle, plan.x, plan.w, plan.conv, plan.y,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results);
    pick(results);
    if (found)
      status = cudnn->cudnnGetConvolutionForwardWorkspaceSize(
          handle, plan.x, plan.w, plan.conv, plan.y,
          static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm),
          &plan.workspaceBytes);
    break;
  }
  case Direction::GradInput: {
    cudnnConvolutionBwdDataAlgoPerf_t
        results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    status = cudnn->cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, plan.w, plan.y, plan.conv, plan.x,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results);
    pick(results);
    if (found)
      status = cudnn->cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, plan.w, plan.y, plan.conv, plan.x,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm),
          &plan.workspaceBytes);
    break;
  }
  case Direction::GradFilter: {
    cudnnConvolutionBwdFilterAlgoPerf_t
        results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    status = cudnn->cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle, plan.x, plan.y, plan.conv, plan.w,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results);
    pick(results);
    if (found)
      status = cudnn->cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, plan.x, plan.y, plan.conv, plan.w,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm),
          &plan.workspaceBytes);
    break;
  }
  case Direction::Pool:
  case Direction::PoolGrad:
  case Direction::Norm:
  case Direction::NormGrad:
    break;
  }
  if (Status s = check(status, "choosing the convolution's algorithm");
      s.failed())
    return s;
  if (!found)
    return fail("cuDNN has no algorithm for this convolution within a "
                "workspace of ",
                kMaxWorkspaceBytes >> 20, " MiB");
  return Status::success();
}

CudnnSteps::CudnnSteps() : impl_(std::make_unique<Impl>()) {}
CudnnSteps::~CudnnSteps() = default;

Status CudnnSteps::prepare(const PreparedStep &step, Executor &device) {
  Impl &impl = *impl_;
  if (!impl.cudnn)
    if (Status status = loadCudnn(impl.cudnn); status.failed())
      return fail(step.name, ": ", status.message());
  if (!impl.handle)
    if (Status status =
            impl.check(impl.cudnn->cudnnCreate(&impl.handle), "cudnnCreate");
        status.failed())
      return fail(step.name, ": ", status.message());
  std::vector<int64_t> key = stepKey(step);
  auto found = impl.plans.find(key);
  if (found == impl.plans.end()) {
    // Kept even when it fails: its descriptors go with the others.
    found = impl.plans.emplace(key, Impl::Plan()).first;
    if (Status status = impl.create(step, found->second); status.failed())
      found->second.error = status.message();
  }
  if (!found->second.error.empty())
    return fail(step.name, ": ", found->second.error);
  // The step's stream's workspace grows to what its algorithm needs.
  size_t bytes = found->second.workspaceBytes;
  if (impl.workspaces.size() <= step.stream) {
    impl.workspaces.resize(step.stream + 1, nullptr);
    impl.workspaceBytes.resize(step.stream + 1, 0);
  }
  if (bytes > impl.workspaceBytes[step.stream]) {
    if (Status status = device.allocate(
            bytes, formatMessage("cuDNN's workspace for stream ", step.stream),
            impl.workspaces[step.stream]);
        status.failed())
      return fail(step.name, ": ", status.message());
    impl.workspaceBytes[step.stream] = bytes;
  }
  return Status::success();
}

Status CudnnSteps::run(const PreparedStep &step, void *stream) {
  Impl &impl = *impl_;
  auto found = impl.plans.find(stepKey(step));
  if (found == impl.plans.end() || !found->second.error.empty())
    return fail("the step was not prepared");
  const Impl::Plan &plan = found->second;
  if (Status status =
          impl.check(impl.cudnn->cudnnSetStream(
                         impl.handle, static_cast<cudaStream_t>(stream)),
                     "cudnnSetStream");
      status.failed())
    return status;
  if (step.kind == StepKind::Pool)
    return impl.runPooling(step, plan, stream);
  if (step.kind == StepKind::BatchNorm)
    return impl.runBatchNorm(step, plan);
  // alpha = 1, beta = 0 (beta = 1 to add the bias), in the compute type.
  float oneF = 1.0f, zeroF = 0.0f;
  double oneD = 1.0, zeroD = 0.0;
  const void *one = plan.doublePrecision ? static_cast<const void *>(&oneD)
                                         : static_cast<const void *>(&oneF);
  const void *zero = plan.doublePrecision ? static_cast<const void *>(&zeroD)
                                          : static_cast<const void *>(&zeroF);
  void *workspace = impl.workspaces[step.stream];
  size_t workspaceBytes = impl.workspaceBytes[step.stream];
  const std::vector<void *> &a = step.args;
  switch (plan.direction) {
  case Direction::Forward: {
    void *y = a.back();
    if (Status status = impl.check(
            impl.cudnn->cudnnConvolutionForward(
                impl.handle, one, plan.x, a[0], plan.w, a[1], plan.conv,
                static_cast<cudnnConvolutionFwdAlgo_t>(plan.algorithm),
                workspace, workspaceBytes, zero, plan.y, y),
            "cudnnConvolutionForward");
        status.failed())
      return status;
    if (plan.bias)
      return impl.check(impl.cudnn->cudnnAddTensor(impl.handle, one, plan.bias,
                                                   a[2], one, plan.y, y),
                        "cudnnAddTensor (the bias)");
    return Status::success();
  }
  case Direction::GradInput:
    return impl.check(
        impl.cudnn->cudnnConvolutionBackwardData(
            impl.handle, one, plan.w, a[1], plan.y, a[0], plan.conv,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algorithm),
            workspace, workspaceBytes, zero, plan.x, a[2]),
        "cudnnConvolutionBackwardData");
  case Direction::GradFilter:
    return impl.check(
        impl.cudnn->cudnnConvolutionBackwardFilter(
            impl.handle, one, plan.x, a[0], plan.y, a[1], plan.conv,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algorithm),
            workspace, workspaceBytes, zero, plan.w, a[2]),
        "cudnnConvolutionBackwardFilter");
  case Direction::Pool:
  case Direction::PoolGrad:
  case Direction::Norm:
  case Direction::NormGrad:
    break;
  }
  return fail("unknown convolution direction");
}

} // namespace of::rt

#endif // OF_HAVE_CUDNN_HEADERS
