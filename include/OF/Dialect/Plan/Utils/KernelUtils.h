//===- KernelUtils.h - What the kernel code generators share ----*- C++ -*-===//
//
// Helpers of both kernel lowerings (PlanToCPU, PlanToCUDA) on the kernel
// modules of ofrt.executable ops.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_PLAN_UTILS_KERNELUTILS_H
#define OF_DIALECT_PLAN_UTILS_KERNELUTILS_H

#include "OF/Dialect/Plan/IR/PlanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::ofrt {

/// Rewrites every memref.copy of `kernels` into a linalg.copy, so that it
/// turns into loops instead of a call into MLIR's C runner utilities: the
/// first step of both kernel lowerings.
LogicalResult copiesToLinalg(ModuleOp kernels);

/// Ops whose result is a view of their first operand's buffer (which the
/// plan builder leaves inside kernels).
bool isView(Operation *op);

/// The indices of the arguments of `kernel` that it may read and that it
/// may write (through a view, or an op with such an effect on it or that
/// does not say): what its signature declares, so that the plan verifiers
/// know what a launch reads and writes. (A linalg pooling's window is
/// neither.)
struct ArgumentAccess {
  SmallVector<int64_t> reads, writes;
};
ArgumentAccess argumentAccess(func::FuncOp kernel);

/// Whether `exe` holds CUDA kernels (an nvptx target).
bool isCudaTarget(ExecutableOp exe);

/// Ops that only describe a view of a buffer (or a constant): a GPU launch
/// rebuilds them inside itself, so its kernel receives whole buffers.
bool isViewOrConstant(Operation *op);

/// The buffer (a kernel argument) under `memref`'s views.
Value rootBuffer(Value memref);

/// A load or store of a kernel.
struct Access {
  Value memref;
  ValueRange indices;
  bool write;
};

/// The loads and stores in `body` (nested loops and conditionals
/// included); false if it has other memory effects.
bool collectAccesses(Block *body, SmallVectorImpl<Access> &accesses);

/// Whether the iterations of a top-level `loop` of a kernel are
/// independent: the loop carries no value, its body only computes, loads
/// and stores (no other memory effects), and every buffer it stores to is
/// accessed, loads and stores alike, through one view whose index in one
/// dimension is the induction variable itself. Each iteration then
/// touches its own slice of every buffer it writes, and reads buffers that
/// no iteration writes. (A kernel's arguments are distinct buffers:
/// --of-build-plan passes each buffer once.) The GPU runs such a loop's
/// iterations on threads, and so does the CPU (a slice of them per
/// thread).
bool iterationsAreIndependent(scf::ForOp loop);

} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_UTILS_KERNELUTILS_H
