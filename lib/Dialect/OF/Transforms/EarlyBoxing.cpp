//===- EarlyBoxing.cpp - Boxings right after their operands --------------===//
//
// --of-early-boxing moves every of.boxing up to right after the value it
// converts, so that a collective can start as soon as its input exists (on
// a communication stream, beside the compute that follows).
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::of {
#define GEN_PASS_DEF_EARLYBOXINGPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

/// Moves each boxing of `func`'s body up to right after the op that defines
/// its operand (or to the body's start, for an argument), after the
/// boxings already moved there, so boxings of one value keep their order.
void moveBoxingsEarly(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  Block &body = func.getBody().front();
  // The last op placed at each anchor (null: the body's start).
  DenseMap<Operation *, Operation *> placedAfter;
  SmallVector<BoxingOp> boxings(body.getOps<BoxingOp>());
  for (BoxingOp boxing : boxings) {
    Operation *anchor = boxing.getOperand().getDefiningOp();
    if (anchor && anchor->getBlock() != &body)
      continue;
    Operation *&last = placedAfter[anchor];
    if (last)
      boxing->moveAfter(last);
    else if (anchor)
      boxing->moveAfter(anchor);
    else
      boxing->moveBefore(&body, body.begin());
    last = boxing;
  }
}

struct EarlyBoxingPass : of::impl::EarlyBoxingPassBase<EarlyBoxingPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      moveBoxingsEarly(func);
  }
};

} // namespace
