//===- Placement.cpp - Placements of a function --------------------------===//

#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFOps.h"

using namespace mlir;
using namespace mlir::of;

std::optional<SmallVector<int64_t>>
FuncPlacement::coordinateOf(int64_t rank) const {
  // Rank lists are ranges nearly always (`ranks = [a, ..., a + n - 1]`):
  // there the position is rank - a, checked, without a search per call
  // (the partition asks once per rank, which made 2^20 ranks quadratic).
  if (!ranks.empty() && rank >= ranks.front() &&
      rank - ranks.front() < static_cast<int64_t>(ranks.size()) &&
      ranks[rank - ranks.front()] == rank)
    return gridCoordinate(grid, rank - ranks.front());
  auto it = llvm::find(ranks, rank);
  if (it == ranks.end())
    return std::nullopt;
  return gridCoordinate(grid, it - ranks.begin());
}

const FuncPlacement *FuncPlacements::find(FlatSymbolRefAttr ref) const {
  for (const FuncPlacement &p : list)
    if (p.ref == ref)
      return &p;
  return nullptr;
}

const FuncPlacement *FuncPlacements::of(Type type) const {
  SbpAttr sbp = getSbp(type);
  return sbp ? find(sbp.getPlacement()) : nullptr;
}

FailureOr<FuncPlacements> of::collectPlacements(func::FuncOp func) {
  FuncPlacements out;
  bool unknown = false;
  auto visitType = [&](Type type, Operation *op) {
    SbpAttr sbp = getSbp(type);
    if (!sbp || unknown || out.find(sbp.getPlacement()))
      return;
    auto placement = SymbolTable::lookupNearestSymbolFrom<PlacementOp>(
        func, sbp.getPlacement());
    if (!placement) {
      op->emitError("refers to unknown placement ") << sbp.getPlacement();
      unknown = true;
      return;
    }
    out.list.push_back(FuncPlacement{
        sbp.getPlacement(), placement.getGridShape(), placement.getRankList()});
  };
  for (Type t : func.getArgumentTypes())
    visitType(t, func);
  for (Type t : func.getResultTypes())
    visitType(t, func);
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      visitType(t, op);
  });
  if (unknown)
    return failure();
  return out;
}
