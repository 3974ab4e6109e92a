//===- Placement.h - Placements of a function -------------------*- C++ -*-===//
//
// The placements (device grids and their ranks) that a function's
// distributions refer to.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_ANALYSIS_PLACEMENT_H
#define OF_DIALECT_OF_ANALYSIS_PLACEMENT_H

#include "OF/Dialect/OF/IR/Sbp.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::of {

/// A placement a function's distributions refer to.
struct FuncPlacement {
  FlatSymbolRefAttr ref;
  SmallVector<int64_t> grid;  ///< the grid shape, one entry per axis
  SmallVector<int64_t> ranks; ///< world ranks, row-major over the grid

  /// The grid coordinate of world rank `rank`, or nullopt if it is not one
  /// of the placement's ranks.
  std::optional<SmallVector<int64_t>> coordinateOf(int64_t rank) const;
};

/// Every placement a function's distributions refer to, in order of first
/// use (arguments, results, then ops in program order). A function over
/// several placements is a pipeline: each op runs on the placement of its
/// results, and of.boxing moves values between placements.
struct FuncPlacements {
  SmallVector<FuncPlacement, 2> list;

  /// The placement named `ref`, or null.
  const FuncPlacement *find(FlatSymbolRefAttr ref) const;
  /// The placement of a distributed type, or null.
  const FuncPlacement *of(Type type) const;
};

/// The placements of `func`'s distributions (none when nothing in it is
/// distributed); failure, after an error naming the op, when one is unknown.
FailureOr<FuncPlacements> collectPlacements(func::FuncOp func);

} // namespace mlir::of

#endif // OF_DIALECT_OF_ANALYSIS_PLACEMENT_H
