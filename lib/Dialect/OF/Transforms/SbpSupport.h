//===- SbpSupport.h - Shared by the SBP passes -----------------*- C++ -*-===//
//
// What --of-propagate-sbp, --of-insert-boxing and --of-partition share
// beyond the IR library's Sbp.h.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_TRANSFORMS_SBPSUPPORT_H
#define OF_LIB_TRANSFORMS_SBPSUPPORT_H

#include "OF/Dialect/OF/IR/Sbp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
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

/// `nd` with its partial axes (P, P(max)) as B: what a value settled on its
/// placement is, before it moves to another one.
inline NdSbp settled(ArrayRef<SbpEntry> nd) {
  NdSbp out(nd.begin(), nd.end());
  for (SbpEntry &e : out)
    if (e.isPartial())
      e = SbpEntry::broadcast();
  return out;
}

/// Bytes per element of a shaped type (at least 1).
inline int64_t elementBytes(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  return std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8);
}

/// The cost model of the passes' `interconnect` and `machine-file`
/// options; `ok` false (after an error at `anchor`) when they are wrong.
CostModel makeCostModel(StringRef interconnect, StringRef machineFile,
                        Operation *anchor, bool &ok);

} // namespace mlir::of

#endif // OF_LIB_TRANSFORMS_SBPSUPPORT_H
