//===- Passes.h - OF conversion passes --------------------------*- C++ -*-===//
//
// Declares the lowerings between dialects (generated from Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef OF_CONVERSION_PASSES_H
#define OF_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;

namespace of {

#define GEN_PASS_DECL
#include "OF/Conversion/Passes.h.inc"

/// Adds the patterns that lower of ops to linalg/tensor/arith/math. The type
/// converter drops SBP encodings. The options are the pass's: with
/// `convLibrary` (`poolLibrary`), convolutions (poolings) and their
/// gradients become of.library_call steps (oneDNN on the CPU, cuDNN on a
/// GPU), as far as `dnnLibrary` (onednn or cudnn) takes them.
void populateOFToLinalgPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns,
                                const ConvertOFToLinalgPassOptions &options);

#define GEN_PASS_REGISTRATION
#include "OF/Conversion/Passes.h.inc"

} // namespace of
} // namespace mlir

#endif // OF_CONVERSION_PASSES_H
