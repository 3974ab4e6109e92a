//===- PropagateSbp.cpp - SBP propagation --------------------------------===//
//
// --of-propagate-sbp / --of-explain-sbp give every value of a global program
// a distribution, choosing per op the nd signature (SbpOpInterface, product
// rule) with the lowest boxing + compute cost (SignatureChoice.h).
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::of {
#define GEN_PASS_DEF_PROPAGATESBPPASS
#define GEN_PASS_DEF_EXPLAINSBPPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

ArrayAttr sbpArray(MLIRContext *ctx, FlatSymbolRefAttr placement,
                   ArrayRef<NdSbp> dists) {
  SmallVector<Attribute> attrs;
  for (const NdSbp &d : dists)
    attrs.push_back(SbpAttr::get(ctx, placement, d));
  return ArrayAttr::get(ctx, attrs);
}

std::string costStr(double seconds) {
  return llvm::formatv("{0:e2} s", seconds).str();
}

/// Seconds to move a tensor distributed as `from` over `grid` to another
/// placement: its partial axes reduced there first (the transfer sends
/// settled values), then the whole tensor once over the link of axis 0.
double transferCost(const CostModel &model, ArrayRef<int64_t> shape,
                    int64_t elementBytes, ArrayRef<SbpEntry> from,
                    ArrayRef<int64_t> grid) {
  double bytes = static_cast<double>(elementBytes);
  for (int64_t d : shape)
    bytes *= static_cast<double>(d);
  LinkCost link = model.axis(0);
  return model.boxingCost(shape, elementBytes, from, of::settled(from), grid) +
         link.latency + bytes / link.bandwidth;
}

/// The placement that the users of `v` suggest, in program order: where
/// the first user with a placement runs, else an annotated function
/// result's, else (last, since a boxing usually moves its input elsewhere)
/// a boxing's target.
const FuncPlacement *
placementFromUsers(Value v, const FuncPlacements &placements,
                   ArrayRef<Type> resultTypes,
                   const DenseMap<Operation *, const FuncPlacement *> &hint) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : v.getUses())
    uses.push_back(&use);
  llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
    return a->getOwner() != b->getOwner() &&
           a->getOwner()->isBeforeInBlock(b->getOwner());
  });
  const FuncPlacement *result = nullptr, *boxed = nullptr;
  for (OpOperand *use : uses) {
    Operation *user = use->getOwner();
    if (auto boxing = dyn_cast<BoxingOp>(user)) {
      if (!boxed)
        boxed = placements.of(boxing.getType());
    } else if (isa<func::ReturnOp>(user)) {
      if (!result)
        result = placements.of(resultTypes[use->getOperandNumber()]);
    } else if (const FuncPlacement *p = hint.lookup(user)) {
      return p;
    }
  }
  return result ? result : boxed;
}

/// Where each op of a function over several placements runs when its
/// operands do not say (an op without distributed operands, such as a
/// constant): the placement of an annotated result, of a distributed
/// operand, or else of its users, found walking the program backwards.
DenseMap<Operation *, const FuncPlacement *>
placementHints(Block &body, const FuncPlacements &placements,
               ArrayRef<Type> resultTypes) {
  DenseMap<Operation *, const FuncPlacement *> hint;
  for (Operation &op : llvm::reverse(body)) {
    if (isa<func::ReturnOp, BoxingOp>(op))
      continue;
    const FuncPlacement *p = nullptr;
    for (Value r : op.getResults())
      if (!p)
        p = placements.of(r.getType());
    for (Value v : op.getOperands())
      if (!p)
        p = placements.of(v.getType());
    for (Value r : op.getResults())
      if (!p)
        p = placementFromUsers(r, placements, resultTypes, hint);
    hint[&op] = p;
  }
  return hint;
}

LogicalResult propagateFunction(func::FuncOp func, const CostModel &model,
                                bool explain) {
  FailureOr<FuncPlacements> found = collectPlacements(func);
  if (failed(found))
    return failure();
  if (found->list.empty())
    return success();
  const FuncPlacements &placements = *found;
  MLIRContext *ctx = func.getContext();

  if (!func.getBody().hasOneBlock())
    return func.emitError("SBP propagation needs a single-block function");
  Block &body = func.getBody().front();
  SmallVector<Type> declaredResults(func.getResultTypes());
  DenseMap<Operation *, const FuncPlacement *> hint =
      placementHints(body, placements, declaredResults);
  // An argument without a distribution is B where its users suggest.
  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()) || getSbp(arg.getType()))
      continue;
    const FuncPlacement *p =
        placementFromUsers(arg, placements, declaredResults, hint);
    if (!p)
      p = &placements.list.front();
    arg.setType(withSbp(arg.getType(), p->ref,
                        NdSbp(p->grid.size(), SbpEntry::broadcast())));
  }

  // What the user wrote is fixed: annotated results and function results.
  DenseMap<Value, NdSbp> pinned;
  for (Operation &op : body)
    if (!isa<BoxingOp>(op))
      for (Value r : op.getResults())
        if (std::optional<NdSbp> d = distOf(r.getType()))
          pinned[r] = *d;

  // What the users of a value need from it: the operand distributions their
  // signatures chose, a boxing's target (a hint: the boxing converts
  // anyway), an annotated function result.
  // On another placement the value is sent there (transferCost).
  auto consumerCost = [&](Value v, ArrayRef<SbpEntry> cand,
                          const FuncPlacement &fp) {
    double cost = 0;
    auto type = cast<ShapedType>(v.getType());
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      SbpAttr want;
      if (auto attr = user->getAttrOfType<ArrayAttr>(
              OFDialect::OperandSbpAttrHelper::getNameStr()))
        want = cast<SbpAttr>(attr[use.getOperandNumber()]);
      else if (auto boxing = dyn_cast<BoxingOp>(user))
        want = getSbp(boxing.getType());
      else if (isa<func::ReturnOp>(user))
        want = getSbp(declaredResults[use.getOperandNumber()]);
      if (!want)
        continue;
      if (want.getPlacement() != fp.ref)
        cost += transferCost(model, type.getShape(), elementBytes(type), cand,
                             fp.grid);
      else
        cost += model.boxingCost(type.getShape(), elementBytes(type), cand,
                                 want.getEntries(), fp.grid);
    }
    return cost;
  };

  // A forward pass in program order, then sweeps that also weigh what each
  // op's users need (coordinate descent: an op is revisited once its users
  // have chosen), until nothing changes.
  DenseMap<Operation *, std::string> explanation;
  constexpr int kMaxSweeps = 4;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool changed = false;
    for (Operation &op : body) {
      if (isa<func::ReturnOp, BoxingOp>(op)) {
        if (auto boxing = dyn_cast<BoxingOp>(op);
            boxing && !getSbp(boxing.getType()))
          return boxing.emitError(
              "the target of an of.boxing needs a distribution");
        continue;
      }
      auto sbpOp = dyn_cast<SbpOpInterface>(op);
      if (!sbpOp)
        return op.emitError("op has no SBP signatures (SbpOpInterface), so "
                            "it cannot be distributed");
      // The op runs where its operands are (operandDists checks that they
      // agree), or where the hints say. A constant that propagation placed
      // (CSE merges equal constants of different stages) does not decide:
      // it gets a copy where the op runs.
      auto movable = [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && def->hasTrait<OpTrait::ConstantLike>() &&
               def->getNumResults() == 1 && !pinned.count(v);
      };
      const FuncPlacement *where = nullptr;
      for (Value v : op.getOperands())
        if (!where && !movable(v))
          where = placements.of(v.getType());
      if (!where)
        where = hint.lookup(&op);
      if (!where)
        for (Value v : op.getOperands())
          if (!where)
            where = placements.of(v.getType());
      if (!where)
        where = &placements.list.front();
      const FuncPlacement &fp = *where;
      for (OpOperand &operand : op.getOpOperands()) {
        const FuncPlacement *p = placements.of(operand.get().getType());
        if (!p || p == where || !movable(operand.get()))
          continue;
        Operation *def = operand.get().getDefiningOp();
        OpBuilder cb(def);
        Operation *copy = cb.clone(*def);
        Value v = copy->getResult(0);
        v.setType(withSbp(v.getType(), fp.ref,
                          NdSbp(fp.grid.size(), SbpEntry::broadcast())));
        copy->removeAttr(OFDialect::OperandSbpAttrHelper::getNameStr());
        copy->removeAttr(OFDialect::ResultSbpAttrHelper::getNameStr());
        hint[copy] = where;
        operand.set(v);
        changed = true;
      }
      SmallVector<std::optional<NdSbp>> inputs;
      if (failed(operandDists(&op, fp, inputs)))
        return failure();
      SmallVector<std::optional<NdSbp>> annotated;
      for (Value r : op.getResults()) {
        auto it = pinned.find(r);
        annotated.push_back(it == pinned.end() ? std::nullopt
                                               : std::optional(it->second));
        if (SbpAttr sbp = getSbp(r.getType());
            sbp && it != pinned.end() && sbp.getPlacement() != fp.ref)
          return op.emitError("result is annotated on placement ")
                 << sbp.getPlacement() << " but the op's operands are on "
                 << fp.ref << "; move it with an of.boxing";
      }
      SmallVector<SbpSignature> sigs;
      sbpOp.getSbpSignatures(sigs);
      SmallVector<NdSignature, 0> ranked =
          rankSignatures(&op, sigs, inputs, annotated, fp.grid, model,
                         [&](unsigned i, ArrayRef<SbpEntry> cand) {
                           return consumerCost(op.getResult(i), cand, fp);
                         });
      if (ranked.empty())
        return op.emitError("no SBP signature of the op fits its shapes on "
                            "placement ")
               << fp.ref;
      const NdSignature &best = ranked.front();
      ArrayAttr operandAttr = sbpArray(ctx, fp.ref, best.operands);
      ArrayAttr resultAttr = sbpArray(ctx, fp.ref, best.results);
      if (op.getAttr(OFDialect::OperandSbpAttrHelper::getNameStr()) ==
              operandAttr &&
          op.getAttr(OFDialect::ResultSbpAttrHelper::getNameStr()) ==
              resultAttr)
        continue;
      changed = true;
      for (auto [i, r] : llvm::enumerate(op.getResults()))
        if (!annotated[i])
          r.setType(withSbp(r.getType(), fp.ref, best.results[i]));
      op.setAttr(OFDialect::OperandSbpAttrHelper::getNameStr(), operandAttr);
      op.setAttr(OFDialect::ResultSbpAttrHelper::getNameStr(), resultAttr);
      if (explain) {
        std::string text = "chose " + best.str() + " at " + costStr(best.cost) +
                           " (boxing " + costStr(best.boxing) + ")";
        if (ranked.size() > 1) {
          text += "; alternatives:";
          for (const NdSignature &alt :
               ArrayRef(ranked).drop_front().take_front(6))
            text += " " + alt.str() + " at " + costStr(alt.cost) + ";";
          if (ranked.size() > 7)
            text += " ... " + std::to_string(ranked.size() - 7) + " more";
        }
        explanation[&op] = text;
      }
    }
    if (!changed)
      break;
  }
  for (Operation &op : body)
    if (auto it = explanation.find(&op); it != explanation.end())
      op.emitRemark(it->second);

  // Unannotated results take what the program computes, except a result
  // that updates an argument (of.update): it takes that argument's
  // distribution (a data-parallel parameter's update is computed P but
  // must come back B), and --of-insert-boxing converts it.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Type> results(func.getResultTypes());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!isa<RankedTensorType>(results[i]) || getSbp(results[i]))
      continue;
    auto target = func.getResultAttrOfType<IntegerAttr>(
        i, OFDialect::UpdateAttrHelper::getNameStr());
    if (target && target.getInt() >= 0 &&
        target.getInt() < static_cast<int64_t>(body.getNumArguments())) {
      results[i] = body.getArgument(target.getInt()).getType();
      if (v.getType() != results[i] && getSbp(v.getType()) &&
          getSbp(results[i])) {
        OpBuilder b(ret);
        ret.setOperand(i, BoxingOp::create(b, ret.getLoc(), results[i], v));
      }
    } else {
      results[i] = v.getType();
    }
  }
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(), results));
  return success();
}

struct PropagateSbpPass : of::impl::PropagateSbpPassBase<PropagateSbpPass> {
  using PropagateSbpPassBase::PropagateSbpPassBase;
  void runOnOperation() override {
    if (failed(forEachFunction(getOperation(), interconnect, machineFile,
                               [&](func::FuncOp f, const CostModel &model) {
                                 return propagateFunction(f, model, explain);
                               })))
      signalPassFailure();
  }
};

struct ExplainSbpPass : of::impl::ExplainSbpPassBase<ExplainSbpPass> {
  using ExplainSbpPassBase::ExplainSbpPassBase;
  void runOnOperation() override {
    if (failed(forEachFunction(getOperation(), interconnect, machineFile,
                               [](func::FuncOp f, const CostModel &model) {
                                 return propagateFunction(f, model, true);
                               })))
      signalPassFailure();
  }
};

} // namespace
