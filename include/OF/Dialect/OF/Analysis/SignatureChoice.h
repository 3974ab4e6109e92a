//===- SignatureChoice.h - Ranking the nd signatures of an op ----*- C++
//-*-===//
//
// The nd signatures of an op on a placement (the product of its 1-D
// SbpOpInterface signatures over the grid axes) and their cost under the
// cost model: boxing from the operands' distributions and to the results'
// annotations, plus compute. --of-propagate-sbp picks the cheapest;
// --of-insert-boxing the cheapest that fits annotations it must keep.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_ANALYSIS_SIGNATURECHOICE_H
#define OF_DIALECT_OF_ANALYSIS_SIGNATURECHOICE_H

#include "OF/Dialect/OF/Analysis/CostModel.h"
#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFAttrs.h"

#include <optional>
#include <string>

namespace mlir::of {

/// An nd signature: for each operand and result its nd-SBP, and the 1-D
/// signature of every axis it came from.
struct NdSignature {
  SmallVector<NdSbp, 4> operands;
  SmallVector<NdSbp, 2> results;
  SmallVector<SbpSignature, 2> perAxis;
  double cost = 0, boxing = 0;

  /// `[S(0), B], [B, B] -> [S(0), B]`.
  std::string str() const;
};

/// Whether every split of `nd` on a tensor of `shape` leaves every rank a
/// non-empty shard, and `nd` does not mix P and P(max) (a sum of maxima has
/// no boxing back to B that every order of axes agrees on).
bool splitsFit(ArrayRef<int64_t> shape, ArrayRef<SbpEntry> nd,
               ArrayRef<int64_t> grid);

using ResultCost = function_ref<double(unsigned, ArrayRef<SbpEntry>)>;
/// All nd signatures of `op` on `grid` (the product of its 1-D signatures
/// over the axes), in a deterministic order, with their cost given the
/// operands' distributions and the results' annotations (null: none).
using ResultCost = function_ref<double(unsigned, ArrayRef<SbpEntry>)>;
SmallVector<NdSignature, 0>
rankSignatures(Operation *op, ArrayRef<SbpSignature> sigs,
               ArrayRef<std::optional<NdSbp>> inputs,
               ArrayRef<std::optional<NdSbp>> annotated, ArrayRef<int64_t> grid,
               const CostModel &model, ResultCost resultCost = nullptr);

/// The distributions of an op's operands, checking that they exist and are
/// all on `placement`.
LogicalResult operandDists(Operation *op, const FuncPlacement &fp,
                           SmallVectorImpl<std::optional<NdSbp>> &dists);

/// `type` (a ranked tensor) distributed as `nd` on `placement`.
RankedTensorType withSbp(Type type, FlatSymbolRefAttr placement,
                         ArrayRef<SbpEntry> nd);

/// The nd-SBP of a distributed type, or nullopt.
std::optional<NdSbp> distOf(Type type);

} // namespace mlir::of

#endif // OF_DIALECT_OF_ANALYSIS_SIGNATURECHOICE_H
