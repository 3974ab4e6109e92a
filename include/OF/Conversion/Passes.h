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
/// converter drops SBP encodings. Ops that a library runs are chosen
/// before, by --of-select-library-calls. `rowScatters`: embedding
/// gradients loop over positions outermost (for one CPU thread) rather than
/// over columns (for a GPU's threads).
void populateOFToLinalgPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns,
                                bool rowScatters = false);

#define GEN_PASS_REGISTRATION
#include "OF/Conversion/Passes.h.inc"

} // namespace of
} // namespace mlir

#endif // OF_CONVERSION_PASSES_H
