//===- LocalForms.h - What an op's per-rank form needs ----------*- C++ -*-===//
//
// SbpOpInterface::localize rewrites an op of a partitioned function into its
// per-rank form where that is not the op itself on local tensors (a softmax
// over a split axis becomes local statistics, all-reduced; an embedding
// whose table rows are split looks up only its own rows, ...). The ops'
// implementations sit with their signatures (lib/Dialect/OF/IR/
// OFLocalForms.cpp); --of-partition is the driver that gives every value
// its local type and calls them. LocalizeContext is what the driver tells
// an op: the global types of values and the placement it runs on.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_LOCALFORMS_H
#define OF_DIALECT_OF_IR_LOCALFORMS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::of {

class LocalizeContext {
public:
  /// `global` maps each value that the driver has given its local type to
  /// its global type; the op runs on `placement`, a grid of shape `grid`
  /// (which outlives the context).
  LocalizeContext(DenseMap<Value, RankedTensorType> &global,
                  FlatSymbolRefAttr placement, ArrayRef<int64_t> grid)
      : global(global), placement(placement), grid(grid) {}

  /// The global type (with its #of.sbp) of `v`, or null.
  RankedTensorType globalType(Value v) const { return global.lookup(v); }
  /// Whether `v`'s distribution splits its dimension `dim` on some axis.
  bool isSplitOn(Value v, int64_t dim) const;
  /// The placement axes on which `v`'s distribution splits one of its
  /// dimensions in [first, last].
  SmallVector<unsigned> axesSplitting(Value v, int64_t first,
                                      int64_t last) const;

  FlatSymbolRefAttr getPlacement() const { return placement; }
  ArrayRef<int64_t> getGrid() const { return grid; }

  /// Replaces the single result of `op` by `local`, which takes the
  /// result's global type, and erases `op`.
  void replace(Operation *op, Value local);
  /// The same for every result of `op`, by `locals` in order.
  void replace(Operation *op, ValueRange locals);

  /// `v` (of local type `type`) all-reduced (summed, or max with `max`)
  /// over each placement axis in `axes`.
  Value allReduceOver(OpBuilder &b, Location loc, Value v,
                      RankedTensorType type, ArrayRef<unsigned> axes,
                      bool max) const;
  /// This rank's offset into dimension `dim` of a tensor of global type
  /// `globalType`, as a 0-d tensor of `elementType`: a constant table with
  /// every grid position's offset, cut down to this rank's entry by one
  /// shard_slice per placement axis, so that the program stays the same on
  /// every rank.
  Value shardOffset(OpBuilder &b, Location loc, RankedTensorType globalType,
                    int64_t dim, Type elementType) const;

private:
  DenseMap<Value, RankedTensorType> &global;
  FlatSymbolRefAttr placement;
  ArrayRef<int64_t> grid;
};

} // namespace mlir::of

#endif // OF_DIALECT_OF_IR_LOCALFORMS_H
