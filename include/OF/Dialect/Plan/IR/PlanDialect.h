//===- PlanDialect.h - The ofrt (plan) dialect ------------------*- C++ -*-===//
//
// Declares the `ofrt` dialect: the execution plan the runtime follows.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_PLAN_IR_PLANDIALECT_H
#define OF_DIALECT_PLAN_IR_PLANDIALECT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "OF/Dialect/Plan/IR/PlanDialect.h.inc"
#include "OF/Dialect/Plan/IR/PlanEnums.h.inc"

#define GET_OP_CLASSES
#include "OF/Dialect/Plan/IR/PlanOps.h.inc"

namespace mlir::ofrt {
/// Bytes per element of a plan buffer's element type (i1 takes one byte), or
/// 0 for a type the runtime does not know.
int64_t getElementByteSize(Type elementType);
} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_IR_PLANDIALECT_H
