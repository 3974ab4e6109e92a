//===- ScheduleStages.cpp - Forward work before backward in pipelines -----===//
//
// --of-schedule-stages: in a function over several placements (a pipeline),
// the forward work of every micro-batch runs before the backward work
// (GPipe), so that a stage starts the next micro-batch's forward while the
// gradients of the last are still to come.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::of {
#define GEN_PASS_DEF_SCHEDULESTAGESPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

/// Forward work (unmarked, and depending on nothing
/// marked) ahead of backward work, keeping each group's order, which is a
/// topological order since the forward group is closed under operands.
struct ScheduleStagesPass
    : of::impl::ScheduleStagesPassBase<ScheduleStagesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      FailureOr<FuncPlacements> placements = collectPlacements(func);
      if (failed(placements))
        return signalPassFailure();
      Block &body = func.getBody().front();
      if (placements->list.size() > 1) {
        llvm::SmallPtrSet<Operation *, 32> backward;
        SmallVector<Operation *> late;
        for (Operation &op : body.without_terminator()) {
          bool after =
              op.hasAttr(OFDialect::BackwardAttrHelper::getNameStr()) ||
              llvm::any_of(op.getOperands(), [&](Value v) {
                return backward.contains(v.getDefiningOp());
              });
          if (after) {
            backward.insert(&op);
            late.push_back(&op);
          }
        }
        for (Operation *op : late)
          op->moveBefore(body.getTerminator());
      }
      for (Operation &op : body)
        op.removeAttr(OFDialect::BackwardAttrHelper::getNameStr());
    }
  }
};
} // namespace
