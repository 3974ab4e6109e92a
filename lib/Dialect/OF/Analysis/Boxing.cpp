//===- Boxing.cpp - Boxing plans -----------------------------------------===//

#include "OF/Dialect/OF/Analysis/Boxing.h"

using namespace mlir;
using namespace mlir::of;

std::string BoxingStep::str() const {
  static const char *names[] = {"all_reduce", "all_gather",  "reduce_scatter",
                                "all_to_all", "shard_slice", "to_partial"};
  std::string s = names[kind];
  s += "(axis " + std::to_string(axis);
  if (kind == AllGather || kind == ReduceScatter || kind == Slice)
    s += ", dim " + std::to_string(dim);
  if (kind == AllToAll)
    s += ", dim " + std::to_string(dim) + " -> " + std::to_string(dim2);
  if (max)
    s += ", max";
  return s + ")";
}

SmallVector<BoxingStep> of::planBoxing(ArrayRef<SbpEntry> from,
                                       ArrayRef<SbpEntry> to,
                                       ArrayRef<int64_t> grid) {
  SmallVector<BoxingStep> steps;
  size_t n = from.size();
  SmallVector<bool> changed(n);
  for (size_t a = 0; a < n; ++a)
    changed[a] = from[a] != to[a] && grid[a] > 1;
  // An unchanged split whose dimension an earlier changed axis also splits
  // must be undone and redone: its shards are cut from the earlier axis's.
  for (size_t b = 0; b < n; ++b) {
    if (changed[b] || !from[b].isSplit() || grid[b] == 1)
      continue;
    for (size_t a = 0; a < b; ++a)
      if (changed[a] && ((from[a].isSplit() && from[a].dim == from[b].dim) ||
                         (to[a].isSplit() && to[a].dim == from[b].dim)))
        changed[b] = true;
  }
  NdSbp cur(from);
  auto emit = [&](BoxingStep::Kind kind, unsigned axis, SbpEntry target,
                  int64_t dim = 0, int64_t dim2 = 0, bool max = false) {
    BoxingStep step{kind, axis, dim, dim2, max, cur, cur};
    step.after[axis] = target;
    cur[axis] = target;
    steps.push_back(std::move(step));
  };
  auto toBroadcast = [&](unsigned a) {
    SbpEntry e = cur[a];
    if (e.isSplit())
      emit(BoxingStep::AllGather, a, SbpEntry::broadcast(), e.dim);
    else if (e.isPartial())
      emit(BoxingStep::AllReduce, a, SbpEntry::broadcast(), 0, 0,
           e.kind == SbpKind::PartialMax);
  };
  auto fromBroadcast = [&](unsigned a, SbpEntry target) {
    if (target.isSplit())
      emit(BoxingStep::Slice, a, target, target.dim);
    else if (target.kind == SbpKind::PartialSum)
      emit(BoxingStep::ToPartial, a, target);
    else
      cur[a] = target; // B -> P(max): every member already holds the max
  };

  unsigned numChanged = llvm::count(changed, true);
  if (numChanged == 1) {
    unsigned a = llvm::find(changed, true) - changed.begin();
    SbpEntry f = from[a], t = to[a];
    if (f.isPartial() && t.isSplit()) {
      emit(BoxingStep::ReduceScatter, a, t, t.dim, 0,
           f.kind == SbpKind::PartialMax);
      return steps;
    }
    if (f.isSplit() && t.isSplit()) {
      emit(BoxingStep::AllToAll, a, t, f.dim, t.dim);
      return steps;
    }
  }
  for (int64_t a = static_cast<int64_t>(n) - 1; a >= 0; --a)
    if (changed[a])
      toBroadcast(a);
  for (size_t a = 0; a < n; ++a)
    if (changed[a])
      fromBroadcast(a, to[a]);
  // Axes of size 1 (and B -> P(max)) take their target without a step.
  if (!steps.empty())
    steps.back().after.assign(to.begin(), to.end());
  return steps;
}
