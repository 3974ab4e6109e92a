//===- InsertBoxing.cpp - Explicit boxing of every distribution mismatch
//---===//
//
// --of-insert-boxing turns every distribution mismatch of a propagated
// program into an explicit of.boxing, choosing each op's signature as
// --of-propagate-sbp does where the annotations leave a choice.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::of {
#define GEN_PASS_DEF_INSERTBOXINGPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

Value boxTo(OpBuilder &b, Location loc, Value v, Type target) {
  return BoxingOp::create(b, loc, target, v).getResult();
}

LogicalResult insertBoxingInFunction(func::FuncOp func,
                                     const CostModel &model) {
  FailureOr<FuncPlacements> found = collectPlacements(func);
  if (failed(found))
    return failure();
  if (found->list.empty())
    return success();
  const FuncPlacements &placements = *found;
  MLIRContext *ctx = func.getContext();
  Block &body = func.getBody().front();
  OpBuilder b(ctx);

  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      b.setInsertionPoint(ret);
      for (auto [i, operand] : llvm::enumerate(ret->getOpOperands())) {
        Type want = func.getResultTypes()[i];
        if (operand.get().getType() != want) {
          if (!getSbp(want) || !getSbp(operand.get().getType()))
            return ret.emitError("result ")
                   << i << " needs a distribution on both sides";
          operand.set(boxTo(b, ret.getLoc(), operand.get(), want));
        }
      }
      continue;
    }
    if (isa<BoxingOp>(op))
      continue;
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp)
      return op.emitError("op has no SBP signatures (SbpOpInterface), so it "
                          "cannot be distributed");
    // The op runs on the placement of its results.
    const FuncPlacement *where = nullptr;
    for (auto [i, t] : llvm::enumerate(op.getResultTypes())) {
      const FuncPlacement *p = placements.of(t);
      if (!p)
        return op.emitError("result ")
               << i << " has no distribution; run --of-propagate-sbp first";
      if (where && p != where)
        return op.emitError("results on placements ")
               << where->ref << " and " << p->ref
               << "; an op runs on one placement";
      where = p;
    }
    if (!where)
      return op.emitError("an op without results cannot be distributed");
    const FuncPlacement &fp = *where;
    SmallVector<NdSbp> needOperands, needResults;
    auto operandAttr = op.getAttrOfType<ArrayAttr>(
        OFDialect::OperandSbpAttrHelper::getNameStr());
    auto resultAttr = op.getAttrOfType<ArrayAttr>(
        OFDialect::ResultSbpAttrHelper::getNameStr());
    if (operandAttr && resultAttr) {
      for (Attribute a : operandAttr)
        needOperands.emplace_back(cast<SbpAttr>(a).getEntries());
      for (Attribute a : resultAttr)
        needResults.emplace_back(cast<SbpAttr>(a).getEntries());
    } else {
      SmallVector<std::optional<NdSbp>> inputs, annotated;
      if (failed(operandDists(&op, fp, inputs)))
        return failure();
      for (auto [i, t] : llvm::enumerate(op.getResultTypes())) {
        annotated.push_back(distOf(t));
        if (!annotated.back())
          return op.emitError("result ")
                 << i << " has no distribution; run --of-propagate-sbp first";
      }
      SmallVector<SbpSignature> sigs;
      sbpOp.getSbpSignatures(sigs);
      SmallVector<NdSignature, 0> ranked =
          rankSignatures(&op, sigs, inputs, annotated, fp.grid, model);
      // The cost includes boxing the results to their annotations.
      const NdSignature *best = ranked.empty() ? nullptr : &ranked.front();
      if (!best) {
        std::string have;
        for (auto [i, d] : llvm::enumerate(inputs))
          have += (i ? ", " : "") + str(*d);
        return op.emitError("no SBP signature of the op fits operands ")
               << have << " on placement " << fp.ref;
      }
      needOperands.assign(best->operands.begin(), best->operands.end());
      needResults.assign(best->results.begin(), best->results.end());
    }
    op.removeAttr(OFDialect::OperandSbpAttrHelper::getNameStr());
    op.removeAttr(OFDialect::ResultSbpAttrHelper::getNameStr());

    b.setInsertionPoint(&op);
    for (auto [i, operand] : llvm::enumerate(op.getOpOperands())) {
      Type want = withSbp(operand.get().getType(), fp.ref, needOperands[i]);
      if (operand.get().getType() != want)
        operand.set(boxTo(b, op.getLoc(), operand.get(), want));
    }
    b.setInsertionPointAfter(&op);
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      Type annotated = result.getType();
      Type produced = withSbp(annotated, fp.ref, needResults[i]);
      if (produced == annotated)
        continue;
      result.setType(produced);
      Value boxed = boxTo(b, op.getLoc(), result, annotated);
      result.replaceAllUsesExcept(boxed, boxed.getDefiningOp());
    }
  }
  return success();
}

struct InsertBoxingPass : of::impl::InsertBoxingPassBase<InsertBoxingPass> {
  using InsertBoxingPassBase::InsertBoxingPassBase;
  void runOnOperation() override {
    if (failed(forEachFunction(getOperation(), interconnect, machineFile,
                               insertBoxingInFunction)))
      signalPassFailure();
  }
};

} // namespace
