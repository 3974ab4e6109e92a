//===- CudaExecutor.cpp - Steps on an NVIDIA GPU, through the driver API --===//
//
// libofrt links no CUDA library: a CUDA program loads the driver
// (libcuda.so.1) with dlopen when its session is created, and cuBLAS when
// the program has a gemm, each into a table of function pointers resolved
// with dlsym, as the MPI backend does for libmpi. The CUDA headers are only
// compiled against for their types and constants (CMake finds them in the
// toolkit; without them this file builds an executor factory that says
// so). The runtime therefore builds, and runs CPU plans, where no GPU or
// driver exists.
//
// The executor takes the device of its rank, retains its primary context,
// and holds every buffer of the program in device memory. Each plan stream
// is a CUDA stream (non-blocking), each plan event a CUDA event, so steps
// on different streams overlap exactly as far as the plan's events allow.
// Kernel launches take their buffers' device pointers as arguments (the
// kernels use MLIR's bare-pointer memref convention); gemm steps call
// cuBLAS (row-major operands as the column-major transposed product);
// output steps copy device to host on their stream. Errors name the step;
// an error of an asynchronous step surfaces at the run's synchronization,
// where $OF_CUDA_SYNC=1 (synchronize after every step) finds its step.
//
//===----------------------------------------------------------------------===//

#include "CUDA/Cudnn.h"
#include "Plan/DynamicLibrary.h"
#include "Session/Executor.h"
#include "Comm/NcclCommunicator.h"

#ifndef OF_HAVE_CUDA_HEADERS

namespace of::rt {

constexpr const char *kNoCudaHeaders =
    "this libofrt was built without the CUDA headers (cuda.h, cublas_v2.h); "
    "rebuild it where the CUDA toolkit is installed to run CUDA programs";

Status createCudaExecutor(int, std::unique_ptr<Executor> &) {
  return Status::failure(kNoCudaHeaders);
}

Status checkCudaDriver(const std::string *&) {
  return Status::failure(kNoCudaHeaders);
}

Status checkCublas(const std::string *&) {
  return Status::failure(kNoCudaHeaders);
}

Status checkCublasLt(const std::string *&) {
  return Status::failure(kNoCudaHeaders);
}

Status cudaDeviceCount(int &count) {
  count = 0;
  return Status::failure(kNoCudaHeaders);
}

Status cudaDeviceCapability(int, int &major, int &minor) {
  major = minor = 0;
  return Status::failure(kNoCudaHeaders);
}

} // namespace of::rt

#else

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace of::plan;

namespace of::rt {

namespace {

// The driver functions the executor calls, by their exported (versioned)
// names; each member has the prototype cuda.h declares for it.
#define OF_CUDA_FUNCTIONS(X)                                                   \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetPCIBusId)                                                       \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemsetD8_v2)                                                             \
  X(cuMemsetD2D8Async)                                                         \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuMemcpyDtoHAsync_v2)                                                      \
  X(cuMemcpyDtoDAsync_v2)                                                      \
  X(cuMemcpy2DAsync_v2)                                                        \
  X(cuMemsetD8Async)                                                           \
  X(cuMemsetD16Async)                                                          \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD2D32Async)                                                        \
  X(cuModuleLoadData)                                                          \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamQuery)                                                             \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventQuery)                                                              \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamBeginCapture_v2)                                                   \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)

#define OF_CUBLAS_FUNCTIONS(X)                                                 \
  X(cublasCreate_v2)                                                           \
  X(cublasDestroy_v2)                                                          \
  X(cublasSetStream_v2)                                                        \
  X(cublasSetWorkspace_v2)                                                     \
  X(cublasGetStatusName)                                                       \
  X(cublasSgemmStridedBatched_64)                                              \
  X(cublasDgemmStridedBatched_64)                                              \
  X(cublasGemmStridedBatchedEx_64)

// cuBLASLt, for gemm steps when $OF_GEMM_LIBRARY=cublaslt.
#define OF_CUBLASLT_FUNCTIONS(X)                                               \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

struct CudaDriver {
  OF_LIBRARY_TABLE(OF_CUDA_FUNCTIONS)
};

struct CublasLt {
  OF_LIBRARY_TABLE(OF_CUBLASLT_FUNCTIONS)
};

struct Cublas {
  OF_LIBRARY_TABLE(OF_CUBLAS_FUNCTIONS)
};

LibrarySource driverSource() {
  return {"the CUDA driver",
          "OF_CUDA_DRIVER",
          {"libcuda.so.1"},
          "cannot load the CUDA driver (libcuda.so.1, installed with the "
          "NVIDIA driver; $OF_CUDA_DRIVER names another):",
          "OF needs CUDA 12 or later"};
}

LibrarySource cublasSource() {
  return {"cuBLAS", "OF_CUBLAS_LIBRARY", toolkitCandidates("libcublas.so.13"),
          "gemm steps on the GPU need cuBLAS, which cannot be loaded "
          "(libcublas.so.13 of CUDA 13; $OF_CUBLAS_LIBRARY names another):",
          "OF needs CUDA 12 or later"};
}

/// The process's driver, loaded and initialised once (never unloaded: the
/// driver does not support it).
Status loadDriver(const CudaDriver *&out) {
  const CudaDriver *driver = nullptr;
  if (Status status = loadLibrary(driverSource, driver); status.failed())
    return status;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [driver] {
    CUresult result = driver->cuInit(0);
    if (result == CUDA_ERROR_STUB_LIBRARY)
      error = "the loaded libcuda is the CUDA toolkit's link stub, not a "
              "driver: no NVIDIA driver is installed";
    else if (result == CUDA_ERROR_NO_DEVICE)
      error = "the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)";
    else if (result != CUDA_SUCCESS)
      error = formatMessage("cuInit failed with CUDA error ",
                            static_cast<int>(result));
  });
  if (!error.empty())
    return Status::failure(error);
  out = driver;
  return Status::success();
}

/// cuBLAS, loaded once when the first program with a gemm is prepared.
Status loadCublas(const Cublas *&out) { return loadLibrary(cublasSource, out); }

LibrarySource cublasLtSource() {
  return {"cuBLASLt", "OF_CUBLASLT_LIBRARY",
          toolkitCandidates("libcublasLt.so.13"),
          "gemm steps with $OF_GEMM_LIBRARY=cublaslt need cuBLASLt, which "
          "cannot be loaded (libcublasLt.so.13 of CUDA 13; "
          "$OF_CUBLASLT_LIBRARY names another):",
          "OF needs CUDA 12 or later"};
}

Status loadCublasLt(const CublasLt *&out) {
  return loadLibrary(cublasLtSource, out);
}

/// The CUDA type of a gemm operand's elements (the plan verifier admits
/// f32, f64, bf16 and f16).
cudaDataType cudaDataTypeOf(DType type) {
  switch (type) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  case DType::F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

/// The alignment in bytes (at most 256) of every address `base + i *
/// stride` (i < count), as cuBLASLt's heuristic must be told: it assumes
/// 256-byte operands unless a smaller minimum is set.
uint64_t alignmentOf(const void *base, uint64_t strideBytes, int64_t count) {
  uint64_t bits = reinterpret_cast<uintptr_t>(base) | 256;
  if (count > 1)
    bits |= strideBytes;
  return bits & (~bits + 1);
}

} // namespace

Status checkCudaDriver(const std::string *&path) {
  return loadAndLocate(loadDriver, path);
}

Status checkCublas(const std::string *&path) {
  return loadAndLocate(loadCublas, path);
}

Status checkCublasLt(const std::string *&path) {
  return loadAndLocate(loadCublasLt, path);
}

Status cudaDeviceCount(int &count) {
  count = 0;
  const CudaDriver *cu = nullptr;
  if (Status status = loadDriver(cu); status.failed())
    return status;
  CUresult result = cu->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    count = 0;
    return Status::failure(formatMessage(
        "cuDeviceGetCount failed with CUDA error ", static_cast<int>(result)));
  }
  return Status::success();
}

Status cudaDeviceCapability(int ordinal, int &major, int &minor) {
  major = minor = 0;
  int count = 0;
  if (Status status = cudaDeviceCount(count); status.failed())
    return status;
  if (ordinal < 0 || ordinal >= count)
    return fail("CUDA device ", ordinal, " does not exist (the driver sees ",
                count, ")");
  const CudaDriver *cu = nullptr;
  if (Status status = loadDriver(cu); status.failed())
    return status;
  CUdevice device;
  CUresult result = cu->cuDeviceGet(&device, ordinal);
  if (result == CUDA_SUCCESS)
    result = cu->cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (result == CUDA_SUCCESS)
    result = cu->cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (result != CUDA_SUCCESS) {
    major = minor = 0;
    return fail("the compute capability of CUDA device ", ordinal,
                " cannot be read: CUDA error ", static_cast<int>(result));
  }
  return Status::success();
}

namespace {

/// The first of the launchers' local-rank variables that is set, or -1.
int localRankFromEnvironment() {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char *text = std::getenv(var); text && *text)
      return std::atoi(text);
  return -1;
}

class CudaExecutor final : public Executor, public CollectiveMemory {
public:
  ~CudaExecutor() override;
  Status init(int rank);

  bool hostMemory() const override { return false; }
  Status check(const PreparedStep &step) override;
  Status execute(const PreparedStep &step) override;
  Status synchronize() override;
  Status allocate(uint64_t bytes, const std::string &what, void *&out) override;
  Status upload(void *device, const void *host, uint64_t bytes) override;
  Status download(void *host, const void *device, uint64_t bytes) override;
  Status copyOnDevice(void *dst, const void *src, uint64_t bytes) override;
  Status loadGpuModule(const void *image, size_t size, bool ptx,
                       const std::string &what, void *&module) override;
  Status getGpuFunction(void *module, const std::string &name,
                        void *&function) override;
  CollectiveMemory &collectiveMemory() override { return *this; }
  Status collectiveCommunicator(Communicator *host,
                                Communicator *&out) override;
  Status copyRows(void *dst, uint64_t dstPitch, const void *src,
                  uint64_t srcPitch, uint64_t rowBytes, uint64_t rows) override;
  Status fill(void *dst, uint64_t count, const void *element,
              size_t elementSize) override;
  bool canRecord(const PreparedStep &step) const override;
  Status record(const PreparedStep *const *steps, size_t count,
                size_t &graph) override;
  Status replay(size_t graph) override;

private:
  /// The message of a driver error: its name and description.
  std::string describe(CUresult result) const;
  /// Success, or `what` failed with `result`'s description.
  Status check(CUresult result, const std::string &what) const {
    if (result == CUDA_SUCCESS)
      return Status::success();
    return fail(what, ": ", describe(result));
  }
  Status streamFor(uint32_t index, CUstream &out);
  Status eventFor(uint32_t index, CUevent &out);
  Status gemm(const PreparedStep &step, CUstream stream);
  /// cuBLASLt's descriptors and algorithm for `step`'s gemm (made once per
  /// shape, layout and alignment, at check), or the step's error.
  struct LtGemm;
  Status prepareLtGemm(const PreparedStep &step, const LtGemm *&out,
                       bool create);
  void releaseLtGemm(LtGemm &gemm);
  Status ltGemm(const PreparedStep &step, CUstream stream);
  /// Makes the device's context the calling thread's: a session may be
  /// made on one thread and run, read or written on another.
  Status makeCurrent();
  /// Waits until the legacy default stream (synchronous memsets and
  /// copies) has done its work.
  Status waitForLegacyStream(const std::string &what);
  Status run(const PreparedStep &step, CUstream stream);
  /// Waits for the run's collectives, each under the communicator's
  /// deadline from when its stream reached it, watching for NCCL's
  /// asynchronous errors; then for the streams.
  Status synchronizeWithCollectives();
  /// Waits for every stream; a failure names the device.
  Status waitForStreams();
  /// Fails when another rank of this host uses this rank's GPU (NCCL needs
  /// a GPU per rank).
  Status checkDistinctDevices(Communicator &host);

  const CudaDriver *cu_ = nullptr;
  const Cublas *blas_ = nullptr;
  int ordinal_ = 0;
  std::string deviceLabel_; // "CUDA device 0 (NVIDIA H200, sm_90)"
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  // $OF_GEMM_LIBRARY=cublaslt: gemm steps through cuBLASLt, with an
  // algorithm per gemm from its heuristic (cuBLAS by default).
  bool useLt_ = false;
  const CublasLt *lt_ = nullptr;
  cublasLtHandle_t ltHandle_ = nullptr;
  struct LtGemm {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo;
  };
  std::map<std::vector<int64_t>, LtGemm> ltGemms_;
  std::vector<CUstream> streams_;
  // cuBLAS's workspace, one per stream that has gemm steps (steps on two
  // streams may overlap), as large as cuBLAS advises for Hopper.
  static constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;
  std::vector<void *> workspaces_;
  std::vector<CUevent> events_;
  std::vector<CUdeviceptr> allocations_;
  std::vector<CUmodule> modules_;
  // Recorded step graphs, each with the stream it replays on.
  std::vector<std::pair<CUgraphExec, CUstream>> graphs_;
  bool useGraphs_ = true;           // $OF_CUDA_GRAPHS=0 turns them off
  std::vector<void *> params_;      // a launch's kernel parameters
  std::vector<unsigned char> host_; // indices read back for checks
  bool syncEachStep_ = false;
  // The stream of the collective step running (a CUstream; null, the
  // default stream, outside steps): its communicator and copies use it.
  void *currentStream_ = nullptr;
  std::unique_ptr<DeviceCommunicator> nccl_; // the job's NCCL communicator
  std::unique_ptr<CudnnSteps> cudnn_;
  uint64_t maxPitch_ = 0; // the largest pitch of a 2-D copy
  // Each communicating collective step's events, recorded around its
  // operation: started (its stream reached it) and done.
  struct CollectiveEvents {
    CUevent started = nullptr, done = nullptr;
    std::string name;
  };
  std::vector<CollectiveEvents> collectiveEvents_;
  // Keyed by the step's collective, which the session owns for its life:
  // the step itself may move (the session's step list grows after check).
  std::map<const PreparedCollective *, size_t> collectiveIndex_;
  std::vector<size_t> runCollectives_; // issued since the last synchronize
};

std::string CudaExecutor::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cu_->cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return formatMessage("CUDA error ", static_cast<int>(result));
  if (cu_->cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    return name;
  return formatMessage(name, " (", text, ")");
}

Status CudaExecutor::init(int rank) {
  if (Status status = loadDriver(cu_); status.failed())
    return status;
  int count = 0;
  if (Status status = check(cu_->cuDeviceGetCount(&count), "cuDeviceGetCount");
      status.failed())
    return status;
  if (count < 1)
    return fail("the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)");
  if (const char *text = std::getenv("OF_CUDA_DEVICE"); text && *text) {
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end || value < 0 || value >= count)
      return fail("OF_CUDA_DEVICE='", text, "' is not a device ordinal in [0, ",
                  count, ")");
    ordinal_ = static_cast<int>(value);
  } else {
    int local = localRankFromEnvironment();
    ordinal_ = (local >= 0 ? local : rank) % count;
  }
  if (Status status = check(cu_->cuDeviceGet(&device_, ordinal_),
                            formatMessage("cuDeviceGet(", ordinal_, ")"));
      status.failed())
    return status;
  char name[256] = {0};
  cu_->cuDeviceGetName(name, sizeof(name) - 1, device_);
  int major = 0, minor = 0;
  cu_->cuDeviceGetAttribute(
      &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
  cu_->cuDeviceGetAttribute(
      &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
  deviceLabel_ = formatMessage("CUDA device ", ordinal_, " (", name, ", sm_",
                               major, minor, ")");
  int maxPitch = 0;
  cu_->cuDeviceGetAttribute(&maxPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH, device_);
  maxPitch_ = maxPitch > 0 ? static_cast<uint64_t>(maxPitch) : 0;
  if (Status status = check(cu_->cuDevicePrimaryCtxRetain(&context_, device_),
                            deviceLabel_ + ": retaining its context");
      status.failed())
    return status;
  if (Status status = check(cu_->cuCtxSetCurrent(context_),
                            deviceLabel_ + ": cuCtxSetCurrent");
      status.failed())
    return status;
  if (const char *text = std::getenv("OF_CUDA_SYNC"))
    syncEachStep_ = *text && std::strcmp(text, "0") != 0;
  if (const char *text = std::getenv("OF_CUDA_GRAPHS"))
    useGraphs_ = std::strcmp(text, "0") != 0;
  // Synchronizing after every step, to find a failing one, rules out
  // replaying many steps at once.
  useGraphs_ = useGraphs_ && !syncEachStep_;
  if (const char *text = std::getenv("OF_GEMM_LIBRARY"); text && *text) {
    if (std::strcmp(text, "cublaslt") == 0)
      useLt_ = true;
    else if (std::strcmp(text, "cublas") != 0)
      return fail("OF_GEMM_LIBRARY='", text,
                  "' names no gemm library: cublas (the default) or cublaslt");
  }
  return Status::success();
}

CudaExecutor::~CudaExecutor() {
  if (!context_)
    return;
  cu_->cuCtxSetCurrent(context_);
  // Collectives still in flight finish, or are aborted past the deadline,
  // before the streams are waited for.
  if (nccl_ && !runCollectives_.empty())
    (void)synchronizeWithCollectives();
  for (CUstream stream : streams_)
    if (stream)
      cu_->cuStreamSynchronize(stream);
  nccl_.reset(); // before the context they run in goes
  cudnn_.reset();
  for (auto &[graph, stream] : graphs_)
    cu_->cuGraphExecDestroy(graph);
  if (handle_)
    blas_->cublasDestroy_v2(handle_);
  for (auto &[key, g] : ltGemms_)
    releaseLtGemm(g);
  if (ltHandle_)
    lt_->cublasLtDestroy(ltHandle_);
  for (CUevent event : events_)
    if (event)
      cu_->cuEventDestroy_v2(event);
  for (CollectiveEvents &events : collectiveEvents_)
    for (CUevent event : {events.started, events.done})
      if (event)
        cu_->cuEventDestroy_v2(event);
  for (CUstream stream : streams_)
    if (stream)
      cu_->cuStreamDestroy_v2(stream);
  for (CUmodule module : modules_)
    cu_->cuModuleUnload(module);
  for (CUdeviceptr pointer : allocations_)
    cu_->cuMemFree_v2(pointer);
  cu_->cuDevicePrimaryCtxRelease_v2(device_);
}

Status CudaExecutor::streamFor(uint32_t index, CUstream &out) {
  if (index >= streams_.size())
    streams_.resize(index + 1, nullptr);
  if (!streams_[index])
    if (Status status =
            check(cu_->cuStreamCreate(&streams_[index], CU_STREAM_NON_BLOCKING),
                  formatMessage(deviceLabel_, ": creating stream ", index));
        status.failed())
      return status;
  out = streams_[index];
  return Status::success();
}

Status CudaExecutor::eventFor(uint32_t index, CUevent &out) {
  if (index >= events_.size())
    events_.resize(index + 1, nullptr);
  if (!events_[index])
    if (Status status =
            check(cu_->cuEventCreate(&events_[index], CU_EVENT_DISABLE_TIMING),
                  formatMessage(deviceLabel_, ": creating event ", index));
        status.failed())
      return status;
  out = events_[index];
  return Status::success();
}

Status CudaExecutor::check(const PreparedStep &step) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  // Streams and events are made here, so a run creates nothing.
  CUstream stream;
  if (Status status = streamFor(step.stream, stream); status.failed())
    return fail(step.name, ": ", status.message());
  switch (step.kind) {
  case StepKind::Launch:
    if (step.gpuCalls.empty() && step.kernel)
      return fail(step.name, ": a CPU kernel in a CUDA program");
    return Status::success();
  case StepKind::Gemm: {
    // The plan verifier admitted the type pairs: f32, f64, and bf16 or
    // f16 into themselves or into f32.
    if (!blas_)
      if (Status status = loadCublas(blas_); status.failed())
        return fail(step.name, ": ", status.message());
    if (!handle_) {
      cublasStatus_t result = blas_->cublasCreate_v2(&handle_);
      if (result != CUBLAS_STATUS_SUCCESS)
        return fail(step.name, ": cublasCreate failed: ",
                    blas_->cublasGetStatusName(result));
    }
    if (workspaces_.size() <= step.stream)
      workspaces_.resize(step.stream + 1, nullptr);
    if (!workspaces_[step.stream])
      if (Status status = allocate(
              kCublasWorkspaceBytes,
              formatMessage("cuBLAS's workspace for stream ", step.stream),
              workspaces_[step.stream]);
          status.failed())
        return fail(step.name, ": ", status.message());
    // Empty gemms never reach cuBLASLt (gemm() returns or zeroes C).
    const GemmCall &g = step.gemm;
    if (useLt_ && g.outerBatch && g.batch && g.m && g.n && g.k) {
      const LtGemm *prepared = nullptr;
      if (Status status = prepareLtGemm(step, prepared, /*create=*/true);
          status.failed())
        return fail(step.name, ": ", status.message());
    }
    return Status::success();
  }
  case StepKind::Conv:
  case StepKind::Pool:
  case StepKind::BatchNorm:
    if (!cudnn_)
      cudnn_ = std::make_unique<CudnnSteps>();
    return cudnn_->prepare(step, *this);
  case StepKind::Collective: {
    if (!step.collective->communicates() ||
        collectiveIndex_.count(step.collective))
      return Status::success();
    CollectiveEvents events;
    // Errors found at synchronization name the collective and its origin.
    events.name =
        step.origin.empty() ? step.name : step.name + " from " + step.origin;
    for (CUevent *event : {&events.started, &events.done})
      if (Status status =
              check(cu_->cuEventCreate(event, CU_EVENT_DISABLE_TIMING),
                    step.name + ": creating an event");
          status.failed())
        return status;
    collectiveIndex_[step.collective] = collectiveEvents_.size();
    collectiveEvents_.push_back(events);
    return Status::success();
  }
  case StepKind::EventRecord:
  case StepKind::EventWait: {
    CUevent event;
    if (Status status = eventFor(step.event, event); status.failed())
      return fail(step.name, ": ", status.message());
    return Status::success();
  }
  case StepKind::IndexRangeCheck:
    return Status::success();
  case StepKind::Copy: {
    // The CPU's copy is a memmove; cuMemcpyDtoDAsync's result is undefined
    // where the ranges overlap, so such a plan is refused (the compiler
    // emits none: no copy of the GPU bundle's 2367 overlaps). An identical
    // range is skipped at run time.
    auto dst = reinterpret_cast<uintptr_t>(step.dst),
         src = reinterpret_cast<uintptr_t>(step.src);
    if (!step.isOutput && step.bytes && dst != src && dst < src + step.bytes &&
        src < dst + step.bytes)
      return fail(step.name, ": the copy's source and destination overlap, "
                             "which a GPU copy does not allow");
    return Status::success();
  }
  }
  return fail(step.name, ": unknown step kind");
}

Status CudaExecutor::gemm(const PreparedStep &step, CUstream stream) {
  const GemmCall &g = step.gemm;
  if (g.outerBatch == 0 || g.batch == 0 || g.m == 0 || g.n == 0)
    return Status::success();
  size_t size = dtypeSize(step.gemmType), cSize = dtypeSize(step.gemmOutType);
  auto *c = static_cast<unsigned char *>(step.gemmC);
  if (g.k == 0) {
    // C = 0: cuBLAS is not asked to read a product of nothing.
    for (int64_t o = 0; o < g.outerBatch; ++o)
      for (int64_t b = 0; b < g.batch; ++b)
        if (Status status = check(
                cu_->cuMemsetD2D8Async(
                    reinterpret_cast<CUdeviceptr>(
                        c + (o * g.cOuterStride + b * g.cBatchStride) * cSize),
                    g.ldc * cSize, 0, g.n * cSize, g.m, stream),
                "zeroing the result of a gemm with k = 0");
            status.failed())
          return status;
    return Status::success();
  }
  if (useLt_)
    return ltGemm(step, stream);
  cublasStatus_t result = blas_->cublasSetStream_v2(handle_, stream);
  if (result == CUBLAS_STATUS_SUCCESS)
    result = blas_->cublasSetWorkspace_v2(handle_, workspaces_[step.stream],
                                          kCublasWorkspaceBytes);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // same buffers with the operands swapped and m and n exchanged.
  cublasOperation_t opA = g.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto *a = static_cast<const unsigned char *>(step.gemmA);
  const auto *b = static_cast<const unsigned char *>(step.gemmB);
  for (int64_t o = 0; o < g.outerBatch && result == CUBLAS_STATUS_SUCCESS;
       ++o) {
    const void *batchA = a + o * g.aOuterStride * size;
    const void *batchB = b + o * g.bOuterStride * size;
    void *batchC = c + o * g.cOuterStride * cSize;
    bool half = step.gemmType == DType::BF16 || step.gemmType == DType::F16;
    if (half || (step.gemmType == DType::F32 && step.tf32)) {
      // Tensor-core products of 16-bit operands, or of f32 ones rounded to
      // TF32 where the program allows it, accumulated in f32 and rounded
      // once into C's type.
      cudaDataType in = cudaDataTypeOf(step.gemmType);
      cudaDataType out = cudaDataTypeOf(step.gemmOutType);
      float one = 1.0f, zero = 0.0f;
      result = blas_->cublasGemmStridedBatchedEx_64(
          handle_, opB, opA, g.n, g.m, g.k, &one, batchB, in, g.ldb,
          g.bBatchStride, batchA, in, g.lda, g.aBatchStride, &zero, batchC, out,
          g.ldc, g.cBatchStride, g.batch,
          half ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
          CUBLAS_GEMM_DEFAULT);
    } else if (step.gemmType == DType::F32) {
      float one = 1.0f, zero = 0.0f;
      result = blas_->cublasSgemmStridedBatched_64(
          handle_, opB, opA, g.n, g.m, g.k, &one,
          static_cast<const float *>(batchB), g.ldb, g.bBatchStride,
          static_cast<const float *>(batchA), g.lda, g.aBatchStride, &zero,
          static_cast<float *>(batchC), g.ldc, g.cBatchStride, g.batch);
    } else {
      double one = 1.0, zero = 0.0;
      result = blas_->cublasDgemmStridedBatched_64(
          handle_, opB, opA, g.n, g.m, g.k, &one,
          static_cast<const double *>(batchB), g.ldb, g.bBatchStride,
          static_cast<const double *>(batchA), g.lda, g.aBatchStride, &zero,
          static_cast<double *>(batchC), g.ldc, g.cBatchStride, g.batch);
    }
  }
  if (result != CUBLAS_STATUS_SUCCESS)
    return fail("cuBLAS: ", blas_->cublasGetStatusName(result));
  return Status::success();
}

Status CudaExecutor::prepareLtGemm(const PreparedStep &step, const LtGemm *&out,
                                   bool create) {
  const GemmCall &g = step.gemm;
  if (!lt_)
    if (Status status = loadCublasLt(lt_); status.failed())
      return status;
  if (!ltHandle_) {
    cublasStatus_t result = lt_->cublasLtCreate(&ltHandle_);
    if (result != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtCreate failed: ",
                  lt_->cublasLtGetStatusName(result));
  }
  size_t size = dtypeSize(step.gemmType), cSize = dtypeSize(step.gemmOutType);
  // What the heuristic may assume of the operands' addresses, over every
  // outer and inner batch.
  uint64_t alignA =
      std::min(alignmentOf(step.gemmA, g.aOuterStride * size, g.outerBatch),
               alignmentOf(step.gemmA, g.aBatchStride * size, g.batch));
  uint64_t alignB =
      std::min(alignmentOf(step.gemmB, g.bOuterStride * size, g.outerBatch),
               alignmentOf(step.gemmB, g.bBatchStride * size, g.batch));
  uint64_t alignC =
      std::min(alignmentOf(step.gemmC, g.cOuterStride * cSize, g.outerBatch),
               alignmentOf(step.gemmC, g.cBatchStride * cSize, g.batch));
  std::vector<int64_t> key = {g.m,
                              g.n,
                              g.k,
                              g.lda,
                              g.ldb,
                              g.ldc,
                              g.batch,
                              g.aBatchStride,
                              g.bBatchStride,
                              g.cBatchStride,
                              g.transposeA,
                              g.transposeB,
                              static_cast<int64_t>(step.gemmType),
                              static_cast<int64_t>(step.gemmOutType),
                              step.tf32,
                              static_cast<int64_t>(alignA),
                              static_cast<int64_t>(alignB),
                              static_cast<int64_t>(alignC)};
  if (auto it = ltGemms_.find(key); it != ltGemms_.end()) {
    out = &it->second;
    return Status::success();
  }
  if (!create) // a run makes nothing (it may be a CUDA graph's capture)
    return fail("cuBLASLt's gemm was not prepared when the session was");
  if (g.batch > INT32_MAX)
    return fail("a batch of ", g.batch,
                " gemms is more than cuBLASLt takes (OF_GEMM_LIBRARY=cublas "
                "runs it)");
  bool f64 = step.gemmType == DType::F64;
  bool half = step.gemmType == DType::BF16 || step.gemmType == DType::F16;
  cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (!half && step.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                : CUBLAS_COMPUTE_32F);
  LtGemm entry;
  cublasStatus_t result = lt_->cublasLtMatmulDescCreate(
      &entry.desc, compute, f64 ? CUDA_R_64F : CUDA_R_32F);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, as in
  // gemm(): cuBLASLt's first operand is B, its second A.
  cublasOperation_t opA = g.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (result == CUBLAS_STATUS_SUCCESS)
    result = lt_->cublasLtMatmulDescSetAttribute(
        entry.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
  if (result == CUBLAS_STATUS_SUCCESS)
    result = lt_->cublasLtMatmulDescSetAttribute(
        entry.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
  // A layout of `rows` x `cols` (column-major, as stored) with `ld`, and
  // the batch.
  auto layout = [&](cublasLtMatrixLayout_t &made, cudaDataType type,
                    int64_t rows, int64_t cols, int64_t ld,
                    int64_t batchStride) {
    cublasStatus_t r =
        lt_->cublasLtMatrixLayoutCreate(&made, type, rows, cols, ld);
    int32_t count = static_cast<int32_t>(g.batch);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = lt_->cublasLtMatrixLayoutSetAttribute(
          made, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
    if (r == CUBLAS_STATUS_SUCCESS)
      r = lt_->cublasLtMatrixLayoutSetAttribute(
          made, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batchStride,
          sizeof(batchStride));
    return r;
  };
  cudaDataType in = cudaDataTypeOf(step.gemmType),
               outType = cudaDataTypeOf(step.gemmOutType);
  // The first operand, B as stored: n x k (k x n transposed); the second,
  // A as stored: k x m (m x k transposed); C: n x m.
  if (result == CUBLAS_STATUS_SUCCESS)
    result = g.transposeB
                 ? layout(entry.a, in, g.k, g.n, g.ldb, g.bBatchStride)
                 : layout(entry.a, in, g.n, g.k, g.ldb, g.bBatchStride);
  if (result == CUBLAS_STATUS_SUCCESS)
    result = g.transposeA
                 ? layout(entry.b, in, g.m, g.k, g.lda, g.aBatchStride)
                 : layout(entry.b, in, g.k, g.m, g.lda, g.aBatchStride);
  if (result == CUBLAS_STATUS_SUCCESS)
    result = layout(entry.c, outType, g.n, g.m, g.ldc, g.cBatchStride);
  cublasLtMatmulPreference_t preference = nullptr;
  if (result == CUBLAS_STATUS_SUCCESS)
    result = lt_->cublasLtMatmulPreferenceCreate(&preference);
  uint64_t workspace = kCublasWorkspaceBytes;
  uint32_t alignFirst = static_cast<uint32_t>(alignB),
           alignSecond = static_cast<uint32_t>(alignA),
           alignOut = static_cast<uint32_t>(alignC);
  std::pair<cublasLtMatmulPreferenceAttributes_t, const void *> prefs[] = {
      {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignFirst},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignSecond},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignOut},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignOut}};
  for (auto &[attribute, value] : prefs)
    if (result == CUBLAS_STATUS_SUCCESS)
      result = lt_->cublasLtMatmulPreferenceSetAttribute(
          preference, attribute, value,
          attribute == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
              ? sizeof(uint64_t)
              : sizeof(uint32_t));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  if (result == CUBLAS_STATUS_SUCCESS)
    result = lt_->cublasLtMatmulAlgoGetHeuristic(
        ltHandle_, entry.desc, entry.a, entry.b, entry.c, entry.c, preference,
        1, &heuristic, &found);
  if (preference)
    lt_->cublasLtMatmulPreferenceDestroy(preference);
  if (result != CUBLAS_STATUS_SUCCESS || found < 1) {
    releaseLtGemm(entry);
    if (result != CUBLAS_STATUS_SUCCESS)
      return fail("cuBLASLt: ", lt_->cublasLtGetStatusName(result));
    return fail("cuBLASLt has no algorithm for this gemm (", g.m, "x", g.n, "x",
                g.k, ", batch ", g.batch, "); OF_GEMM_LIBRARY=cublas runs it");
  }
  entry.algo = heuristic.algo;
  out = &(ltGemms_[key] = entry);
  return Status::success();
}

void CudaExecutor::releaseLtGemm(LtGemm &g) {
  for (cublasLtMatrixLayout_t layout : {g.a, g.b, g.c})
    if (layout)
      lt_->cublasLtMatrixLayoutDestroy(layout);
  if (g.desc)
    lt_->cublasLtMatmulDescDestroy(g.desc);
  g = LtGemm();
}

Status CudaExecutor::ltGemm(const PreparedStep &step, CUstream stream) {
  const LtGemm *prepared = nullptr;
  if (Status status = prepareLtGemm(step, prepared, /*create=*/false);
      status.failed())
    return status;
  const GemmCall &g = step.gemm;
  size_t size = dtypeSize(step.gemmType), cSize = dtypeSize(step.gemmOutType);
  const auto *a = static_cast<const unsigned char *>(step.gemmA);
  const auto *b = static_cast<const unsigned char *>(step.gemmB);
  auto *c = static_cast<unsigned char *>(step.gemmC);
  double one64 = 1.0, zero64 = 0.0;
  float one32 = 1.0f, zero32 = 0.0f;
  bool f64 = step.gemmType == DType::F64;
  cublasStatus_t result = CUBLAS_STATUS_SUCCESS;
  for (int64_t o = 0; o < g.outerBatch && result == CUBLAS_STATUS_SUCCESS;
       ++o) {
    void *batchC = c + o * g.cOuterStride * cSize;
    result = lt_->cublasLtMatmul(
        ltHandle_, prepared->desc,
        f64 ? static_cast<const void *>(&one64) : &one32,
        b + o * g.bOuterStride * size, prepared->a,
        a + o * g.aOuterStride * size, prepared->b,
        f64 ? static_cast<const void *>(&zero64) : &zero32, batchC, prepared->c,
        batchC, prepared->c, &prepared->algo, workspaces_[step.stream],
        kCublasWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream));
  }
  if (result != CUBLAS_STATUS_SUCCESS)
    return fail("cuBLASLt: ", lt_->cublasLtGetStatusName(result));
  return Status::success();
}

Status CudaExecutor::run(const PreparedStep &step, CUstream stream) {
  switch (step.kind) {
  case StepKind::Launch:
    for (const PreparedStep::GpuCall &call : step.gpuCalls) {
      params_.resize(call.args.size());
      for (size_t i = 0; i < call.args.size(); ++i)
        params_[i] = const_cast<void **>(&call.args[i]);
      if (Status status = check(
              cu_->cuLaunchKernel(static_cast<CUfunction>(call.function),
                                  call.grid[0], call.grid[1], call.grid[2],
                                  call.block[0], call.block[1], call.block[2],
                                  0, stream, params_.data(), nullptr),
              "cuLaunchKernel");
          status.failed())
        return status;
    }
    return Status::success();
  case StepKind::Gemm:
    return gemm(step, stream);
  case StepKind::IndexRangeCheck: {
    // The indices are read back once the steps before have produced them.
    uint64_t bytes = step.indexCount * dtypeSize(step.indexType);
    host_.resize(bytes);
    if (Status status =
            check(cu_->cuStreamSynchronize(stream), "waiting for the indices");
        status.failed())
      return status;
    if (Status status = download(host_.data(), step.indices, bytes);
        status.failed())
      return status;
    return checkIndexRange(step, host_.data());
  }
  case StepKind::Copy:
    if (!step.bytes || (!step.isOutput && step.dst == step.src))
      return Status::success();
    if (step.isOutput)
      return check(cu_->cuMemcpyDtoHAsync_v2(
                       step.dst, reinterpret_cast<CUdeviceptr>(step.src),
                       step.bytes, stream),
                   "copying the output to the host");
    return check(
        cu_->cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(step.dst),
                                  reinterpret_cast<CUdeviceptr>(step.src),
                                  step.bytes, stream),
        "cuMemcpyDtoDAsync");
  case StepKind::EventRecord:
    return check(cu_->cuEventRecord(events_[step.event], stream),
                 "cuEventRecord");
  case StepKind::EventWait:
    return check(cu_->cuStreamWaitEvent(stream, events_[step.event], 0),
                 "cuStreamWaitEvent");
  case StepKind::Collective: {
    auto found = collectiveIndex_.find(step.collective);
    if (found != collectiveIndex_.end()) {
      if (Status status =
              check(cu_->cuEventRecord(collectiveEvents_[found->second].started,
                                       stream),
                    "cuEventRecord");
          status.failed())
        return status;
      runCollectives_.push_back(found->second);
    }
    currentStream_ = stream;
    Status status = step.collective->run();
    currentStream_ = nullptr;
    if (status.failed() || found == collectiveIndex_.end())
      return status;
    return check(
        cu_->cuEventRecord(collectiveEvents_[found->second].done, stream),
        "cuEventRecord");
  }
  case StepKind::Conv:
  case StepKind::Pool:
  case StepKind::BatchNorm:
    return cudnn_->run(step, stream);
  }
  return fail("this step does not run on the GPU");
}

Status CudaExecutor::execute(const PreparedStep &step) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  CUstream stream = streams_[step.stream]; // made by check()
  Status status = run(step, stream);
  if (status.succeeded() && syncEachStep_)
    status = check(cu_->cuStreamSynchronize(stream), "after the step");
  if (status.failed())
    return fail(step.name, " on ", deviceLabel_, ": ", status.message());
  return Status::success();
}

Status CudaExecutor::synchronize() {
  if (Status status = makeCurrent(); status.failed())
    return status;
  if (nccl_)
    return synchronizeWithCollectives();
  return waitForStreams();
}

Status CudaExecutor::waitForStreams() {
  for (CUstream stream : streams_) {
    if (!stream)
      continue;
    if (CUresult result = cu_->cuStreamSynchronize(stream);
        result != CUDA_SUCCESS)
      return fail("a step of the run failed on ", deviceLabel_, ": ",
                  describe(result),
                  syncEachStep_ ? ""
                                : "; run with OF_CUDA_SYNC=1 to find which "
                                  "step");
  }
  return Status::success();
}

Status CudaExecutor::synchronizeWithCollectives() {
  // A collective waits for its peers from when its stream reaches it; only
  // then does its deadline run (the compute before it may take long).
  std::vector<size_t> issued = std::move(runCollectives_);
  runCollectives_.clear();
  for (size_t index : issued) {
    const CollectiveEvents &events = collectiveEvents_[index];
    std::optional<std::chrono::steady_clock::time_point> reached;
    auto waitStart = std::chrono::steady_clock::now();
    for (;;) {
      CUresult done = cu_->cuEventQuery(events.done);
      if (done == CUDA_SUCCESS)
        break;
      if (done != CUDA_ERROR_NOT_READY)
        return fail(events.name, " on ", deviceLabel_, ": ", describe(done));
      if (Status status = nccl_->checkAsyncErrors(); status.failed()) {
        nccl_->abortAll();
        return fail(events.name, " on ", deviceLabel_, ": ", status.message(),
                    "; the NCCL communicators of rank ", nccl_->worldRank(),
                    " are aborted");
      }
      auto now = std::chrono::steady_clock::now();
      if (!reached && cu_->cuEventQuery(events.started) == CUDA_SUCCESS)
        reached = now;
      if (reached &&
          now - *reached > std::chrono::duration<double>(nccl_->timeout())) {
        nccl_->abortAll();
        return fail(events.name, " on ", deviceLabel_, " of rank ",
                    nccl_->worldRank(), " waited more than ", nccl_->timeout(),
                    " s for the other ranks (a rank failed, or does not reach "
                    "it; OF_COMM_TIMEOUT sets the deadline); the NCCL "
                    "communicators of this rank are aborted");
      }
      // Spin for the first millisecond (a collective at the end of a step
      // usually finishes within it), then poll every 50 us, so that a long
      // wait does not keep a core busy.
      if (now - waitStart < std::chrono::milliseconds(1))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return waitForStreams();
}

Status CudaExecutor::checkDistinctDevices(Communicator &host) {
  // Each rank's host name and its GPU's PCI address, gathered.
  constexpr size_t kRecord = 192;
  std::vector<char> mine(kRecord, 0), all(kRecord * host.size(), 0);
  ::gethostname(mine.data(), 127);
  if (Status status =
          check(cu_->cuDeviceGetPCIBusId(mine.data() + 128, 63, device_),
                "cuDeviceGetPCIBusId");
      status.failed())
    return status;
  if (Status status = host.allGatherV(
          mine.data(), all.data(), std::vector<uint64_t>(host.size(), kRecord),
          "comparing GPUs");
      status.failed())
    return status;
  for (int other = 0; other < host.size(); ++other)
    if (other != host.rank() &&
        std::memcmp(all.data() + other * kRecord, mine.data(), kRecord) == 0)
      return fail("ranks ", host.worldRanks()[std::min(other, host.rank())],
                  " and ", host.worldRanks()[std::max(other, host.rank())],
                  " both use ", deviceLabel_, " on host '", mine.data(),
                  "'; NCCL needs a GPU per rank (ranks take their local rank "
                  "modulo the device count; see CUDA_VISIBLE_DEVICES and "
                  "OF_CUDA_DEVICE)");
  return Status::success();
}

Status CudaExecutor::collectiveCommunicator(Communicator *host,
                                            Communicator *&out) {
  if (!nccl_) {
    if (host && host->size() > 1)
      if (Status status = checkDistinctDevices(*host); status.failed())
        return status;
    if (Status status = createNcclCommunicator(host, &currentStream_, nccl_);
        status.failed())
      return status;
  }
  out = nccl_.get();
  return Status::success();
}

Status CudaExecutor::copyRows(void *dst, uint64_t dstPitch, const void *src,
                              uint64_t srcPitch, uint64_t rowBytes,
                              uint64_t rows) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  auto stream = static_cast<CUstream>(currentStream_);
  auto at = [](const void *pointer, uint64_t offset) {
    return reinterpret_cast<CUdeviceptr>(pointer) + offset;
  };
  if (!rows || !rowBytes || (rows == 1 && dst == src))
    return Status::success();
  if (rows == 1)
    return check(
        cu_->cuMemcpyDtoDAsync_v2(at(dst, 0), at(src, 0), rowBytes, stream),
        "cuMemcpyDtoDAsync");
  auto byRows = [&]() -> Status {
    for (uint64_t r = 0; r < rows; ++r)
      if (Status status = check(cu_->cuMemcpyDtoDAsync_v2(at(dst, r * dstPitch),
                                                          at(src, r * srcPitch),
                                                          rowBytes, stream),
                                "cuMemcpyDtoDAsync");
          status.failed())
        return status;
    return Status::success();
  };
  if (srcPitch > maxPitch_ || dstPitch > maxPitch_ || rowBytes > maxPitch_)
    return byRows();
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = at(src, 0);
  copy.srcPitch = srcPitch;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = at(dst, 0);
  copy.dstPitch = dstPitch;
  copy.WidthInBytes = rowBytes;
  copy.Height = rows;
  CUresult result = cu_->cuMemcpy2DAsync_v2(&copy, stream);
  // The driver may refuse pitches that cuMemAllocPitch did not choose.
  if (result == CUDA_ERROR_INVALID_VALUE)
    return byRows();
  return check(result, "cuMemcpy2DAsync");
}

Status CudaExecutor::fill(void *dst, uint64_t count, const void *element,
                          size_t elementSize) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  auto stream = static_cast<CUstream>(currentStream_);
  auto pointer = reinterpret_cast<CUdeviceptr>(dst);
  if (!count)
    return Status::success();
  uint64_t bits = 0;
  std::memcpy(&bits, element, elementSize);
  if (bits == 0 || elementSize == 1)
    return check(cu_->cuMemsetD8Async(pointer, static_cast<unsigned char>(bits),
                                      count * elementSize, stream),
                 "cuMemsetD8Async");
  if (elementSize == 2)
    return check(cu_->cuMemsetD16Async(
                     pointer, static_cast<unsigned short>(bits), count, stream),
                 "cuMemsetD16Async");
  if (elementSize == 4)
    return check(cu_->cuMemsetD32Async(pointer, static_cast<unsigned>(bits),
                                       count, stream),
                 "cuMemsetD32Async");
  if (elementSize != 8)
    return fail("filling elements of ", elementSize, " bytes");
  // Two 32-bit columns, 8 bytes apart: the low words, then the high ones
  // (little-endian).
  for (int half = 0; half < 2; ++half)
    if (Status status = check(
            cu_->cuMemsetD2D32Async(pointer + 4 * half, 8,
                                    static_cast<unsigned>(bits >> (32 * half)),
                                    1, count, stream),
            "cuMemsetD2D32Async");
        status.failed())
      return status;
  return Status::success();
}

Status CudaExecutor::allocate(uint64_t bytes, const std::string &what,
                              void *&out) {
  out = nullptr;
  if (Status status = makeCurrent(); status.failed())
    return status;
  if (!bytes)
    return Status::success();
  CUdeviceptr pointer = 0;
  if (Status status = check(cu_->cuMemAlloc_v2(&pointer, bytes),
                            formatMessage(what, ": allocating ", bytes,
                                          " bytes on ", deviceLabel_));
      status.failed())
    return status;
  allocations_.push_back(pointer);
  out = reinterpret_cast<void *>(pointer);
  if (Status status = check(cu_->cuMemsetD8_v2(pointer, 0, bytes),
                            formatMessage(what, ": zeroing it"));
      status.failed())
    return status;
  return waitForLegacyStream(formatMessage(what, ": zeroing it"));
}

Status CudaExecutor::waitForLegacyStream(const std::string &what) {
  // cuMemsetD8 and a copy from pageable memory may return before the
  // device has done them, and they run on the legacy default stream, which
  // the plan's non-blocking streams do not wait for: the steps could read
  // the memory before it is written.
  return check(cu_->cuStreamSynchronize(nullptr), what);
}

Status CudaExecutor::makeCurrent() {
  CUcontext current = nullptr;
  if (cu_->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
    return Status::success();
  return check(cu_->cuCtxSetCurrent(context_),
               deviceLabel_ + ": making its context current");
}

Status CudaExecutor::upload(void *device, const void *host, uint64_t bytes) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  if (!bytes)
    return Status::success();
  std::string what =
      formatMessage("copying ", bytes, " bytes to ", deviceLabel_);
  if (Status status =
          check(cu_->cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(device),
                                     host, bytes),
                what);
      status.failed())
    return status;
  return waitForLegacyStream(what);
}

Status CudaExecutor::download(void *host, const void *device, uint64_t bytes) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  if (!bytes)
    return Status::success();
  return check(
      cu_->cuMemcpyDtoH_v2(host, reinterpret_cast<CUdeviceptr>(device), bytes),
      formatMessage("copying ", bytes, " bytes from ", deviceLabel_));
}

Status CudaExecutor::copyOnDevice(void *dst, const void *src, uint64_t bytes) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  if (!bytes || dst == src)
    return Status::success();
  CUstream stream;
  if (Status status = streamFor(0, stream); status.failed())
    return status;
  return check(cu_->cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst),
                                         reinterpret_cast<CUdeviceptr>(src),
                                         bytes, stream),
               "cuMemcpyDtoDAsync");
}

Status CudaExecutor::loadGpuModule(const void *image, size_t size, bool ptx,
                                   const std::string &what, void *&module) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  std::string text;
  if (ptx) // cuModuleLoadData reads PTX up to its terminating NUL
    text.assign(static_cast<const char *>(image), size);
  CUmodule loaded = nullptr;
  CUresult result = cu_->cuModuleLoadData(&loaded, ptx ? text.c_str() : image);
  if (result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
      result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    return fail(what, " is not for ", deviceLabel_, ": ", describe(result),
                " (compile with --of-pipeline=cuda,chip=sm_XY for this "
                "device, or format=isa for PTX the driver compiles)");
  if (Status status = check(result, what + ": cuModuleLoadData");
      status.failed())
    return status;
  modules_.push_back(loaded);
  module = loaded;
  return Status::success();
}

Status CudaExecutor::getGpuFunction(void *module, const std::string &name,
                                    void *&function) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  CUfunction found = nullptr;
  if (Status status =
          check(cu_->cuModuleGetFunction(&found, static_cast<CUmodule>(module),
                                         name.c_str()),
                "GPU function '" + name + "'");
      status.failed())
    return status;
  function = found;
  return Status::success();
}

bool CudaExecutor::canRecord(const PreparedStep &step) const {
  if (!useGraphs_)
    return false;
  switch (step.kind) {
  case StepKind::Launch:
  case StepKind::Gemm:
    return true;
  case StepKind::Copy: // a device-to-device copy; outputs go to the host
    return !step.isOutput;
  case StepKind::IndexRangeCheck: // reads the indices back
  case StepKind::Conv:
  case StepKind::Pool:
  case StepKind::BatchNorm:
  case StepKind::Collective:
  case StepKind::EventRecord: // orders streams: stays outside graphs
  case StepKind::EventWait:
    return false;
  }
  return false;
}

Status CudaExecutor::record(const PreparedStep *const *steps, size_t count,
                            size_t &graph) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  CUstream stream = streams_[steps[0]->stream];
  std::string what = formatMessage("recording steps ", steps[0]->name, " .. ",
                                   steps[count - 1]->name,
                                   " into a CUDA graph on ", deviceLabel_);
  if (Status status = check(cu_->cuStreamBeginCapture_v2(
                                stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                            what);
      status.failed())
    return status;
  Status recorded = Status::success();
  for (size_t i = 0; i < count && recorded.succeeded(); ++i) {
    if (steps[i]->stream != steps[0]->stream)
      recorded = fail(steps[i]->name, ": a graph's steps share one stream");
    else
      recorded = run(*steps[i], stream);
    if (recorded.failed())
      recorded =
          fail(steps[i]->name, " on ", deviceLabel_, ": ", recorded.message());
  }
  CUgraph captured = nullptr;
  CUresult ended = cu_->cuStreamEndCapture(stream, &captured);
  if (recorded.failed()) {
    if (captured)
      cu_->cuGraphDestroy(captured);
    return recorded;
  }
  if (Status status = check(ended, what); status.failed())
    return status;
  CUgraphExec exec = nullptr;
  CUresult made = cu_->cuGraphInstantiateWithFlags(&exec, captured, 0);
  cu_->cuGraphDestroy(captured);
  if (Status status = check(made, what + ": cuGraphInstantiate");
      status.failed())
    return fail(status.message(), " ($OF_CUDA_GRAPHS=0 runs the steps one "
                                  "by one)");
  graphs_.push_back({exec, stream});
  graph = graphs_.size() - 1;
  return replay(graph);
}

Status CudaExecutor::replay(size_t graph) {
  if (Status status = makeCurrent(); status.failed())
    return status;
  auto [exec, stream] = graphs_[graph];
  return check(
      cu_->cuGraphLaunch(exec, stream),
      formatMessage("replaying CUDA graph ", graph, " on ", deviceLabel_));
}

} // namespace

Status createCudaExecutor(int rank, std::unique_ptr<Executor> &out) {
  auto executor = std::make_unique<CudaExecutor>();
  if (Status status = executor->init(rank); status.failed())
    return status;
  out = std::move(executor);
  return Status::success();
}

} // namespace of::rt

#endif // OF_HAVE_CUDA_HEADERS
