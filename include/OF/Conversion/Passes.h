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

/// Adds the patterns that lower of ops to linalg/tensor/arith/math. The type
/// converter drops SBP encodings. With `convLibrary`, f32 and bf16 convolutions
/// and their gradients become of.library_call steps (oneDNN on the CPU,
/// cuDNN on a GPU), with `convLibrarySymmetric` only those padded
/// symmetrically.
void populateOFToLinalgPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns,
                                bool convLibrary = false,
                                bool convLibrarySymmetric = false);

#define GEN_PASS_DECL
#include "OF/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "OF/Conversion/Passes.h.inc"

} // namespace of
} // namespace mlir

#endif // OF_CONVERSION_PASSES_H
