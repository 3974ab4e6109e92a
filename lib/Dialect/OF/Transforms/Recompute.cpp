//===- Recompute.cpp - Activation recomputation ---------------------------===//
//
// --of-recompute: the forward ops of a checkpointed segment (`of.recompute`)
// whose values the backward pass reads are computed again just before the
// first backward op that reads one (Passes.td says why and what is kept).
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::of {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

constexpr llvm::StringLiteral kRecompute =
    OFDialect::RecomputeAttrHelper::getNameStr();
constexpr llvm::StringLiteral kBackward =
    OFDialect::BackwardAttrHelper::getNameStr();

/// The op of `body` that holds `op` (itself, or an ancestor).
Operation *topLevel(Block &body, Operation *op) {
  return body.findAncestorOpInBlock(*op);
}

bool isBackward(Block &body, Operation *user) {
  Operation *top = topLevel(body, user);
  return top && top->hasAttr(kBackward);
}

void recomputeSegments(Block &body, MLIRContext *ctx) {
  // The segments' forward ops, joined where one reads another of the same
  // segment: each piece is recomputed on its own.
  llvm::EquivalenceClasses<Operation *> pieces;
  SmallVector<Operation *> marked;
  for (Operation &op : body.without_terminator()) {
    auto segment = op.getAttrOfType<IntegerAttr>(kRecompute);
    if (!segment || op.hasAttr(kBackward))
      continue;
    marked.push_back(&op);
    pieces.insert(&op);
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && pieces.contains(def) &&
          def->getAttrOfType<IntegerAttr>(kRecompute) == segment)
        pieces.unionSets(def, &op);
    }
  }

  SmallPtrSet<Operation *, 16> done;
  for (Operation *first : marked) {
    Operation *leader = pieces.getLeaderValue(first);
    if (!done.insert(leader).second)
      continue;
    SmallPtrSet<Operation *, 16> members;
    for (Operation *member : pieces.members(first))
      members.insert(member);

    // The values backward ops read, and the first such op.
    SmallVector<Value> read;
    Operation *insertion = nullptr;
    for (Operation *op : marked) {
      if (!members.contains(op))
        continue;
      for (Value result : op->getResults()) {
        bool used = false;
        for (OpOperand &use : result.getUses()) {
          if (!isBackward(body, use.getOwner()))
            continue;
          used = true;
          Operation *top = topLevel(body, use.getOwner());
          if (!insertion || top->isBeforeInBlock(insertion))
            insertion = top;
        }
        if (used)
          read.push_back(result);
      }
    }
    if (read.empty())
      continue;

    // The members those values depend on, through pure ops only: an op with
    // side effects is not repeated, its values are kept instead.
    SmallPtrSet<Operation *, 16> needed;
    SmallVector<Operation *> work;
    for (Value v : read)
      work.push_back(v.getDefiningOp());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!members.contains(op) || !isPure(op) || !needed.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          work.push_back(def);
    }

    OpBuilder b(insertion);
    IRMapping copies;
    SmallPtrSet<Operation *, 16> cloned;
    for (Operation *op : marked) {
      if (!needed.contains(op))
        continue;
      Operation *copy = b.clone(*op, copies);
      copy->setAttr(kBackward, UnitAttr::get(ctx));
      copy->setLoc(recomputedLoc(op->getLoc(),
                                 op->getAttrOfType<IntegerAttr>(kRecompute)));
      cloned.insert(copy);
    }
    for (Value v : read) {
      Value copy = copies.lookupOrNull(v);
      if (!copy)
        continue; // an op with side effects: kept
      v.replaceUsesWithIf(copy, [&](OpOperand &use) {
        return isBackward(body, use.getOwner()) &&
               !cloned.contains(topLevel(body, use.getOwner()));
      });
    }
  }
  for (Operation *op : marked)
    op->removeAttr(kRecompute);
}

struct RecomputePass : of::impl::RecomputePassBase<RecomputePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        recomputeSegments(func.getBody().front(), &getContext());
  }
};

} // namespace
