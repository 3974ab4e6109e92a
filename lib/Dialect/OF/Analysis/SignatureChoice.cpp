//===- SignatureChoice.cpp - Ranking the nd signatures of an op ----------===//

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"

using namespace mlir;
using namespace mlir::of;

std::string NdSignature::str() const {
  std::string s;
  for (auto [i, o] : llvm::enumerate(operands))
    s += (i ? ", " : "") + of::str(o);
  s += operands.empty() ? "-> " : " -> ";
  for (auto [i, r] : llvm::enumerate(results))
    s += (i ? ", " : "") + of::str(r);
  return s;
}

bool of::splitsFit(ArrayRef<int64_t> shape, ArrayRef<SbpEntry> nd,
                   ArrayRef<int64_t> grid) {
  bool sum = llvm::any_of(
      nd, [](const SbpEntry &e) { return e.kind == SbpKind::PartialSum; });
  bool max = llvm::any_of(
      nd, [](const SbpEntry &e) { return e.kind == SbpKind::PartialMax; });
  if (sum && max)
    return false;
  SmallVector<int64_t> parts(shape.size(), 1);
  for (auto [a, e] : llvm::enumerate(nd))
    if (e.isSplit())
      parts[e.dim] *= grid[a];
  for (auto [d, p] : llvm::enumerate(parts))
    if (p > shape[d])
      return false;
  return true;
}

SmallVector<NdSignature, 0>
of::rankSignatures(Operation *op, ArrayRef<SbpSignature> sigs,
                   ArrayRef<std::optional<NdSbp>> inputs,
                   ArrayRef<std::optional<NdSbp>> annotated,
                   ArrayRef<int64_t> grid, const CostModel &model,
                   ResultCost resultCost) {
  SmallVector<NdSignature, 0> out;
  size_t axes = grid.size();
  SmallVector<unsigned> idx(axes, 0);
  if (sigs.empty())
    return out;
  // On an axis of one rank every distribution is the whole value: only
  // B, so equal programs are not told apart (and moved twice between
  // pipeline stages).
  SbpSignature whole = sigs.front();
  for (SbpEntry &e : whole.operands)
    e = SbpEntry::broadcast();
  for (SbpEntry &e : whole.results)
    e = SbpEntry::broadcast();
  auto choices = [&](unsigned a) -> size_t {
    return grid[a] == 1 ? 1 : sigs.size();
  };
  while (true) {
    NdSignature nd;
    for (unsigned a = 0; a < axes; ++a)
      nd.perAxis.push_back(grid[a] == 1 ? whole : sigs[idx[a]]);
    nd.operands.resize(op->getNumOperands());
    nd.results.resize(op->getNumResults());
    bool fits = true;
    for (unsigned a = 0; a < axes; ++a) {
      for (auto [i, e] : llvm::enumerate(nd.perAxis[a].operands))
        nd.operands[i].push_back(e);
      for (auto [i, e] : llvm::enumerate(nd.perAxis[a].results))
        nd.results[i].push_back(e);
    }
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      fits &= splitsFit(cast<ShapedType>(v.getType()).getShape(),
                        nd.operands[i], grid);
    for (auto [i, v] : llvm::enumerate(op->getResults()))
      fits &= splitsFit(cast<ShapedType>(v.getType()).getShape(), nd.results[i],
                        grid);
    if (fits) {
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (inputs[i])
          nd.boxing += model.boxingCost(
              cast<ShapedType>(v.getType()).getShape(),
              elementBytes(v.getType()), *inputs[i], nd.operands[i], grid);
      for (auto [i, v] : llvm::enumerate(op->getResults())) {
        if (annotated[i])
          nd.boxing += model.boxingCost(
              cast<ShapedType>(v.getType()).getShape(),
              elementBytes(v.getType()), nd.results[i], *annotated[i], grid);
        else if (resultCost)
          nd.boxing += resultCost(i, nd.results[i]);
      }
      nd.cost = nd.boxing + model.computeCost(op, nd.perAxis, grid);
      out.push_back(std::move(nd));
    }
    // Next index tuple (the last axis varies fastest).
    int64_t a = static_cast<int64_t>(axes) - 1;
    for (; a >= 0; --a) {
      if (++idx[a] < choices(a))
        break;
      idx[a] = 0;
    }
    if (a < 0)
      break;
  }
  // Cheapest first; ties keep the op's order (stable).
  std::stable_sort(out.begin(), out.end(),
                   [](const NdSignature &l, const NdSignature &r) {
                     return l.cost < r.cost;
                   });
  return out;
}

LogicalResult of::operandDists(Operation *op, const FuncPlacement &fp,
                               SmallVectorImpl<std::optional<NdSbp>> &dists) {
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    SbpAttr sbp = getSbp(v.getType());
    if (!sbp)
      return op->emitError("operand ")
             << i << " has no distribution; run --of-propagate-sbp first";
    if (sbp.getPlacement() != fp.ref)
      return op->emitError("operand ")
             << i << " is on placement " << sbp.getPlacement() << " ("
             << str(sbp.getEntries()) << ") but the op runs on " << fp.ref
             << "; move it with an of.boxing";
    dists.emplace_back(NdSbp(sbp.getEntries().begin(), sbp.getEntries().end()));
  }
  return success();
}

RankedTensorType of::withSbp(Type type, FlatSymbolRefAttr placement,
                             ArrayRef<SbpEntry> nd) {
  auto t = cast<RankedTensorType>(type);
  return RankedTensorType::get(t.getShape(), t.getElementType(),
                               SbpAttr::get(type.getContext(), placement, nd));
}

std::optional<NdSbp> of::distOf(Type type) {
  SbpAttr sbp = getSbp(type);
  if (!sbp)
    return std::nullopt;
  return NdSbp(sbp.getEntries().begin(), sbp.getEntries().end());
}
