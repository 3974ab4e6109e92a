//===- Boxing.h - Boxing plans ----------------------------------*- C++ -*-===//
//
// planBoxing: the per-axis collective sequence of a distribution change,
// the single definition that the cost model and --of-partition both use.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_ANALYSIS_BOXING_H
#define OF_DIALECT_OF_ANALYSIS_BOXING_H

#include "OF/Dialect/OF/IR/Sbp.h"

#include <string>

namespace mlir::of {

/// One collective of a boxing, on one placement axis.
struct BoxingStep {
  enum Kind { AllReduce, AllGather, ReduceScatter, AllToAll, Slice, ToPartial };
  Kind kind;
  unsigned axis;
  int64_t dim = 0;  ///< gathered/scattered dim; AllToAll: the gathered one
  int64_t dim2 = 0; ///< AllToAll: the scattered dim
  bool max = false; ///< AllReduce/ReduceScatter: max instead of sum
  NdSbp before, after;

  /// `all_gather(axis 0, dim 1)`.
  std::string str() const;
};

/// The collectives that turn `from` into `to` on a grid of `grid` (empty if
/// they are equal): one direct step when a single axis changes (P->B
/// all-reduce, P->S reduce-scatter, S->B all-gather, S(i)->S(j) all-to-all,
/// B->S slice, B->P local), otherwise every changed axis back to B from the
/// last axis to the first, then to its target from the first to the last.
/// An axis whose entry is unchanged still takes part when it splits a
/// dimension that an earlier changed axis splits (its shards would move).
SmallVector<BoxingStep> planBoxing(ArrayRef<SbpEntry> from,
                                   ArrayRef<SbpEntry> to,
                                   ArrayRef<int64_t> grid);

} // namespace mlir::of

#endif // OF_DIALECT_OF_ANALYSIS_BOXING_H
