//===- Passes.h - Passes that build and lower ofrt plans --------*- C++ -*-===//

#ifndef OF_DIALECT_PLAN_TRANSFORMS_PASSES_H
#define OF_DIALECT_PLAN_TRANSFORMS_PASSES_H

#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::ofrt {

#define GEN_PASS_DECL
#include "OF/Dialect/Plan/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "OF/Dialect/Plan/Transforms/Passes.h.inc"

} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_TRANSFORMS_PASSES_H
