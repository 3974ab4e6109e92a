//===- Executor.h - Running prepared steps on a device --------------------===//
//
// A session turns each plan step into a PreparedStep whose buffers are
// already resolved to data pointers, then hands the steps, in program order,
// to an Executor. The executor owns how a step runs on its device: the CPU
// executor runs each step to completion on the calling thread, so the
// streams of the plan run in program order and events are satisfied
// trivially; a CUDA executor would enqueue each step on its stream, map
// events to CUDA events, and synchronize at the end of the run. Output steps
// arrive as copies; collectives as PreparedCollectives (Collective.h), which
// call their communicator.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_EXECUTOR_H
#define OF_LIB_RUNTIME_EXECUTOR_H

#include "KernelObject.h"
#include "PlanFile.h"
#include "Status.h"

#include <memory>
#include <string>
#include <vector>

namespace of::rt {

enum class StepKind {
  Launch,
  Gemm,
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

  // Launch: the kernel and the data pointers of its buffers, in order.
  KernelFunction kernel = nullptr;
  std::vector<void *> args;

  // Gemm: C[b] = A[b] x B[b] with the checked parameters.
  GemmCall gemm{};
  plan::DType gemmType = plan::DType::F32;
  const void *gemmA = nullptr;
  const void *gemmB = nullptr;
  void *gemmC = nullptr;

  // IndexRangeCheck: every element of `indices` in [lo, hi).
  const void *indices = nullptr;
  uint64_t indexCount = 0;
  plan::DType indexType = plan::DType::I64;
  int64_t lo = 0, hi = 0;
  std::string indexBufferName;

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
  /// Runs `step` (or enqueues it on its stream, on an asynchronous device).
  virtual Status execute(const PreparedStep &step) = 0;
  /// Returns once every step executed so far has completed.
  virtual Status synchronize() = 0;
};

/// The CPU executor: every step runs to completion on the calling thread;
/// gemm calls OpenBLAS.
std::unique_ptr<Executor> createCpuExecutor();

} // namespace of::rt

#endif // OF_LIB_RUNTIME_EXECUTOR_H
