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

#define GET_ATTRDEF_CLASSES
#include "OF/Dialect/Plan/IR/PlanAttrs.h.inc"

#define GET_OP_CLASSES
#include "OF/Dialect/Plan/IR/PlanOps.h.inc"

namespace mlir::ofrt {
/// Bytes per element of a plan buffer's element type (i1 takes one byte), or
/// 0 for a type the runtime does not know.
int64_t getElementByteSize(Type elementType);

/// A step's origin: the source location of the op it was compiled from,
/// which the binary plan keeps for errors. A step op's location marks it
/// as loc("ofrt.origin"(SOURCE)), so that where a plan's text was parsed
/// is never taken for where its steps came from.
Location markOrigin(Location source);
/// The source location that `loc` marks as an origin, or null.
LocationAttr getOrigin(Location loc);
/// The origin as text: the file:line:col of each source position in it,
/// in order and without repeats, at most four ("model.py:42:1, ..."); a
/// name location without a position gives its name. Empty for none.
std::string describeOrigin(LocationAttr origin);
} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_IR_PLANDIALECT_H
