//===- OFOps.h - Operations of the of dialect ------------------*- C++ -*-===//
//
// The generated op classes of the of dialect.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFOPS_H
#define OF_DIALECT_OF_IR_OFOPS_H

#include "OF/Dialect/OF/IR/OFAttrs.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/IR/Sbp.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::of {
class LocalizeContext; // OF/Dialect/OF/IR/LocalForms.h
} // namespace mlir::of

#include "OF/Dialect/OF/IR/OFInterfaces.h.inc"

namespace mlir {
namespace of {
/// Runs the op's result-type inference and checks the declared result types
/// against it (ignoring #of.sbp), emitting one diagnostic on failure.
LogicalResult verifyInferredShapes(Operation *op);

/// Verifies inferred result shapes before InferTypeOpInterface does, so a
/// bad op gets exactly one diagnostic naming the problem.
template <typename ConcreteType>
class VerifyInferredShapes
    : public ::mlir::OpTrait::TraitBase<ConcreteType, VerifyInferredShapes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyInferredShapes(op);
  }
};
} // namespace of
} // namespace mlir

#define GET_OP_CLASSES
#include "OF/Dialect/OF/IR/OFOps.h.inc"

#endif // OF_DIALECT_OF_IR_OFOPS_H
