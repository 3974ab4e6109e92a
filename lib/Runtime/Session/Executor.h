//===- Executor.h - Running prepared steps on a device --------------------===//
//
// A session turns each plan step into a PreparedStep whose buffers are
// already resolved to data pointers, then hands the steps, in program order,
// to an Executor. The executor owns how a step runs on its device and where
// the program's buffers live: the CPU executor runs each step to completion
// on the calling thread in host memory, so the streams of the plan run in
// program order and events are satisfied trivially; the CUDA executor
// (CudaExecutor.cpp) keeps the buffers in device memory, enqueues each step
// on its stream, maps the plan's events to CUDA events, and synchronizes at
// the end of the run. Output steps arrive as copies (device to host on a
// device); collectives as PreparedCollectives (Collective.h), which call
// their communicator.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_EXECUTOR_H
#define OF_LIB_RUNTIME_EXECUTOR_H

#include "Comm/Collective.h"
#include "Plan/KernelObject.h"
#include "Plan/PlanFile.h"
#include "Session/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace of::rt {

enum class StepKind {
  Launch,
  Gemm,
  Conv,
  Pool,
  BatchNorm,
  IndexRangeCheck,
  Copy,
  Collective,
  EventRecord,
  EventWait
};

class PreparedCollective;

/// One step with its buffers resolved; the fields of its kind are set.
struct PreparedStep {
  StepKind kind = StepKind::Copy;
  uint32_t stream = 0;
  /// The profiling name ("launch k", "library blas.gemm", ...).
  std::string name;
  /// The step in messages ("program 'main' step 3 (launch k1)").
  std::string label;
  /// Where in the source program the step comes from ("model.py:42:1"), or
  /// empty.
  std::string origin;
  /// An f32 gemm or convolution that a GPU may run on TF32 tensor cores
  /// (the program's allow_tf32).
  bool tf32 = false;

  // Launch: the kernel and the data pointers of its buffers, in order; its
  // outermost loop's independent iterations (0: none) and its work.
  KernelFunction kernel = nullptr;
  std::vector<void *> args;
  int64_t range = 0;
  int64_t work = 0;
  /// On a GPU: the kernel's launches, in order.
  struct GpuCall {
    void *function = nullptr; // the executor's handle (a CUfunction)
    uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::vector<void *> args; // device pointers of the launch's buffers
  };
  std::vector<GpuCall> gpuCalls;

  // Gemm: C[b] = A[b] x B[b] with the checked parameters.
  GemmCall gemm{};
  plan::DType gemmType = plan::DType::F32;    // A's and B's elements
  plan::DType gemmOutType = plan::DType::F32; // C's: gemmType, or f32 for
                                              // bf16 and f16 (on a GPU)
  const void *gemmA = nullptr;
  const void *gemmB = nullptr;
  void *gemmC = nullptr;

  // Conv, Pool and BatchNorm: a convolution, pooling or batch-norm library
  // call (LibraryCalls.h) named by `function`, with the checked geometry,
  // on `args` (the data pointers of its buffers, in the call's order) of
  // type `dnnType`.
  std::string function;
  plan::ConvGeometry conv{};
  plan::PoolGeometry pool{};
  plan::BatchNormGeometry norm{};
  plan::DType dnnType = plan::DType::F32;

  // IndexRangeCheck: every element of `indices` in [lo, hi).
  const void *indices = nullptr;
  uint64_t indexCount = 0;
  plan::DType indexType = plan::DType::I64;
  int64_t lo = 0, hi = 0;
  std::string indicesLabel; // "input 'ids'" or "buffer 'buf3'"

  // Copy: memmove of `bytes` bytes (copies, outputs, one-rank collectives).
  bool isOutput = false; // the copy of an Output step
  void *dst = nullptr;
  const void *src = nullptr;
  uint64_t bytes = 0;

  // Collective: run by the collective itself (it owns the communication).
  PreparedCollective *collective = nullptr;

  // EventRecord / EventWait.
  uint32_t event = 0;
};

/// Runs prepared steps on one device.
class Executor {
public:
  virtual ~Executor() = default;
  /// Whether the program's buffers are host memory. When not, the session
  /// allocates them through `allocate` and moves inputs and outputs with
  /// `upload` and `download` (the remaining members below).
  virtual bool hostMemory() const { return true; }
  /// Checks, once at preparation, that this executor can run `step` (a
  /// library it needs loads, a collective it supports...). `step` moves
  /// afterwards (the session's step list grows): state kept per step is
  /// keyed by its contents or by what it points to (its collective),
  /// never by the step's own address.
  virtual Status check(const PreparedStep &step) { return Status::success(); }
  /// Runs `step` (or enqueues it on its stream, on an asynchronous device).
  virtual Status execute(const PreparedStep &step) = 0;
  /// Returns once every step executed so far has completed.
  virtual Status synchronize() = 0;

  /// Device memory of `bytes` bytes, zeroed, owned by the executor (freed
  /// when it is destroyed); `what` names it in messages.
  virtual Status allocate(uint64_t bytes, const std::string &what,
                          void *&out);
  /// Copies between host and device memory; complete when they return.
  virtual Status upload(void *device, const void *host, uint64_t bytes);
  virtual Status download(void *host, const void *device, uint64_t bytes);
  /// Enqueues a copy within device memory (complete at synchronize).
  virtual Status copyOnDevice(void *dst, const void *src, uint64_t bytes);
  /// Loads a GPU module (a cubin, or PTX) and finds a function in it; the
  /// handles live as long as the executor.
  virtual Status loadGpuModule(const void *image, size_t size, bool ptx,
                               const std::string &what, void *&module);
  virtual Status getGpuFunction(void *module, const std::string &name,
                                void *&function);

  /// Where the collectives of the program move bytes (host memory unless
  /// the executor says otherwise); lives as long as the executor.
  virtual CollectiveMemory &collectiveMemory();
  /// The communicator the program's collectives run in, given the job's
  /// (`host`, over MPI; null for a session without one): `host` itself
  /// unless the device has its own (NCCL on a GPU, made here once).
  virtual Status collectiveCommunicator(Communicator *host,
                                        Communicator *&out) {
    out = host;
    return Status::success();
  }

  /// Step graphs (CUDA graphs): consecutive steps on one stream recorded
  /// once and then replayed by one call, which saves a launch per step.
  /// Whether `step` can be recorded (it needs nothing from the host while
  /// it runs); false everywhere when this executor records no graphs.
  virtual bool canRecord(const PreparedStep &step) const { return false; }
  /// Records `count` recordable steps, all on one stream, into a graph and
  /// runs it (asynchronously); `graph` then names it for `replay`.
  virtual Status record(const PreparedStep *const *steps, size_t count,
                        size_t &graph);
  /// Runs a recorded graph again (complete at synchronize).
  virtual Status replay(size_t graph);

private:
  std::unique_ptr<CollectiveMemory> hostMemory_;
};

/// The CPU executor: every step runs to completion on the calling thread;
/// gemm calls OpenBLAS or oneDNN, convolutions and poolings oneDNN.
std::unique_ptr<Executor> createCpuExecutor();

/// An executor for sessions that only describe a device program (of-run
/// --list on a machine without the device): its "device memory" is never
/// touched, and running a step fails.
std::unique_ptr<Executor> createDescribingExecutor();

/// The CUDA executor for world rank `rank` (CudaExecutor.cpp): loads the
/// CUDA driver (libcuda.so.1, or $OF_CUDA_DRIVER) with dlopen and takes
/// the device $OF_CUDA_DEVICE, else the rank's local rank modulo the
/// device count. Fails with the reason where there is no driver or device.
Status createCudaExecutor(int rank, std::unique_ptr<Executor> &out);

/// What the library state of a Conv `step` depends on: its direction, its
/// bias, its type and its whole geometry (the key of the executors' caches
/// of oneDNN primitives and cuDNN descriptors).
std::vector<int64_t> convolutionKey(const PreparedStep &step);

/// What the library state of a Pool `step` depends on: its direction, its
/// type and its whole geometry.
std::vector<int64_t> poolingKey(const PreparedStep &step);

/// What the library state of a BatchNorm `step` depends on: its direction
/// and its whole geometry (epsilon as its bits).
std::vector<int64_t> batchNormKey(const PreparedStep &step);

/// Checks that every index of `step` (an IndexRangeCheck), read from
/// `indices` in host memory, lies in [lo, hi).
Status checkIndexRange(const PreparedStep &step, const void *indices);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_EXECUTOR_H
