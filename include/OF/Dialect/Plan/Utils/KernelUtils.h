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

} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_UTILS_KERNELUTILS_H
