//===- OneDnn.h - Convolution, pooling and gemm steps through oneDNN -----===//
//
// The CPU executor runs the plan's convolution library calls (LibraryCalls.h)
// through oneDNN's C API, loaded with dlopen when a session first has one: one
// primitive per distinct geometry and direction, created when the step is
// checked (so a geometry oneDNN rejects fails the session's preparation, not a
// run), with `any` memory formats so oneDNN picks its blocked layouts; the
// plan's dense NCHW/OIHW buffers are reordered into and out of executor-owned
// scratch around each call. Poolings run on the plain NCHW buffers.
//
// f32 gemm steps run as oneDNN matmul primitives on the plan's own strided
// layouts when oneDNN is installed and has an optimised (JIT) kernel for
// the layout; OpenBLAS runs the others (docs/performance.md has the
// measurements behind this).
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_ONEDNN_H
#define OF_LIB_RUNTIME_ONEDNN_H

#include "Session/Executor.h"
#include "CPU/Parallel.h"
#include "Session/Status.h"

#include <memory>

namespace of::rt {

/// oneDNN, which the executor loads with dlopen at the first convolution
/// or gemm.
class OneDnnPrimitives {
public:
  OneDnnPrimitives();
  ~OneDnnPrimitives();
  OneDnnPrimitives(const OneDnnPrimitives &) = delete;
  OneDnnPrimitives &operator=(const OneDnnPrimitives &) = delete;

  /// Creates the primitives `step` (a Conv step) needs, unless a step of
  /// the same geometry and direction already did.
  Status prepare(const PreparedStep &step);
  /// Creates a matmul primitive for `step` (an f32 Gemm step, or bf16 into
  /// bf16 or f32, with m, n and k > 0) unless one of its geometry exists.
  /// Fails, saying why, when oneDNN will not run the step: oneDNN is
  /// missing or rejects the layout, or, for f32, has only its reference
  /// kernel for it or $OF_CPU_GEMM is `openblas`.
  Status prepareGemm(const PreparedStep &step);
  /// Runs the Gemm `step` to completion when prepareGemm took a step of its
  /// geometry (`ran`), else leaves it to OpenBLAS.
  Status runGemm(const PreparedStep &step, bool &ran);
  /// Runs the Conv `step`, which `prepare` accepted, to completion.
  Status run(const PreparedStep &step);
  /// Creates the primitives of the Pool `step`, unless a step of the same
  /// geometry, direction and type already did.
  Status preparePooling(const PreparedStep &step);
  /// Runs the Pool `step`, which preparePooling accepted, to completion.
  Status runPooling(const PreparedStep &step);
  /// Creates the primitive of the BatchNorm `step`, unless a step of the
  /// same geometry and direction already did.
  Status prepareBatchNorm(const PreparedStep &step);
  /// Runs the BatchNorm `step`, which prepareBatchNorm accepted, to
  /// completion.
  Status runBatchNorm(const PreparedStep &step);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_ONEDNN_H
