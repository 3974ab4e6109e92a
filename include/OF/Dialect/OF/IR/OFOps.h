//===- OFOps.h - Operations of the of dialect ------------------*- C++ -*-===//
//
// The generated op classes of the of dialect.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFOPS_H
#define OF_DIALECT_OF_IR_OFOPS_H

#include "OF/Dialect/OF/IR/OFAttrs.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "OF/Dialect/OF/IR/OFEnums.h.inc"

#define GET_OP_CLASSES
#include "OF/Dialect/OF/IR/OFOps.h.inc"

#endif // OF_DIALECT_OF_IR_OFOPS_H
