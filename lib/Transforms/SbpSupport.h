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

/// The one placement a function's distributions refer to.
struct FuncPlacement {
  FlatSymbolRefAttr ref;
  SmallVector<int64_t> grid;  ///< the grid shape, one entry per axis
  SmallVector<int64_t> ranks; ///< world ranks, row-major over the grid
};

/// The placement of `func`'s distributions: nullopt when nothing in it is
/// distributed, failure (after an error naming the op) when it uses several
/// or an unknown one.
FailureOr<std::optional<FuncPlacement>> findPlacement(func::FuncOp func);

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
