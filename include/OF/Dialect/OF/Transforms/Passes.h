//===- Passes.h - OF transforms on upstream dialects ------------*- C++ -*-===//

#ifndef OF_TRANSFORMS_PASSES_H
#define OF_TRANSFORMS_PASSES_H

#include "OF/Dialect/OF/IR/OFDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::of {
#define GEN_PASS_DECL
#include "OF/Dialect/OF/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

#endif // OF_TRANSFORMS_PASSES_H
