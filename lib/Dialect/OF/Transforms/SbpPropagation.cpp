//===- SbpPropagation.cpp - SBP propagation and boxing insertion ----------===//
//
// --of-propagate-sbp / --of-explain-sbp give every value of a global program
// a distribution, choosing per op the nd signature (SbpOpInterface, product
// rule) with the lowest boxing + compute cost; --of-insert-boxing turns every
// remaining mismatch into an explicit of.boxing. --of-test-sbp-signatures
// lists the signatures of each op.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"
#include "OF/Dialect/OF/Transforms/Passes.h"
#include "SbpSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::of {
#define GEN_PASS_DEF_PROPAGATESBPPASS
#define GEN_PASS_DEF_EXPLAINSBPPASS
#define GEN_PASS_DEF_INSERTBOXINGPASS
#define GEN_PASS_DEF_EARLYBOXINGPASS
#define GEN_PASS_DEF_TESTSBPSIGNATURESPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

} // namespace

std::optional<SmallVector<int64_t>>
FuncPlacement::coordinateOf(int64_t rank) const {
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

namespace {

RankedTensorType withSbp(Type type, FlatSymbolRefAttr placement,
                         ArrayRef<SbpEntry> nd) {
  auto t = cast<RankedTensorType>(type);
  return RankedTensorType::get(
      t.getShape(), t.getElementType(),
      SbpAttr::get(type.getContext(), placement, nd));
}

std::optional<NdSbp> distOf(Type type) {
  SbpAttr sbp = getSbp(type);
  if (!sbp)
    return std::nullopt;
  return NdSbp(sbp.getEntries().begin(), sbp.getEntries().end());
}

} // namespace

CostModel mlir::of::makeCostModel(StringRef interconnect, StringRef machineFile,
                                  Operation *anchor, bool &ok) {
  CostModel model;
  std::string error;
  ok = CostModel::preset(interconnect, model, error) &&
       (machineFile.empty() ||
        CostModel::readMachineFile(machineFile, model, error));
  if (!ok)
    anchor->emitError(error);
  return model;
}

namespace {

/// An nd signature: for each operand and result its nd-SBP, and the 1-D
/// signature of every axis it came from.
struct NdSignature {
  SmallVector<NdSbp, 4> operands;
  SmallVector<NdSbp, 2> results;
  SmallVector<SbpSignature, 2> perAxis;
  double cost = 0, boxing = 0;

  std::string str() const {
    std::string s;
    for (auto [i, o] : llvm::enumerate(operands))
      s += (i ? ", " : "") + of::str(o);
    s += operands.empty() ? "-> " : " -> ";
    for (auto [i, r] : llvm::enumerate(results))
      s += (i ? ", " : "") + of::str(r);
    return s;
  }
};

/// Whether every split of `nd` on a tensor of `shape` leaves every rank a
/// non-empty shard, and `nd` does not mix P and P(max) (a sum of maxima has
/// no boxing back to B that every order of axes agrees on).
bool splitsFit(ArrayRef<int64_t> shape, ArrayRef<SbpEntry> nd,
               ArrayRef<int64_t> grid) {
  bool sum = llvm::any_of(nd, [](const SbpEntry &e) {
    return e.kind == SbpKind::PartialSum;
  });
  bool max = llvm::any_of(nd, [](const SbpEntry &e) {
    return e.kind == SbpKind::PartialMax;
  });
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

/// All nd signatures of `op` on `grid` (the product of its 1-D signatures
/// over the axes), in a deterministic order, with their cost given the
/// operands' distributions and the results' annotations (null: none).
using ResultCost = function_ref<double(unsigned, ArrayRef<SbpEntry>)>;
SmallVector<NdSignature, 0>
rankSignatures(Operation *op, ArrayRef<SbpSignature> sigs,
               ArrayRef<std::optional<NdSbp>> inputs,
               ArrayRef<std::optional<NdSbp>> annotated, ArrayRef<int64_t> grid,
               const CostModel &model, ResultCost resultCost = nullptr) {
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
      fits &= splitsFit(cast<ShapedType>(v.getType()).getShape(),
                        nd.results[i], grid);
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

/// The distributions of an op's operands, checking that they exist and are
/// all on `placement`.
LogicalResult operandDists(Operation *op, const FuncPlacement &fp,
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

//===----------------------------------------------------------------------===//
// Propagation
//===----------------------------------------------------------------------===//

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
      if (auto attr = user->getAttrOfType<ArrayAttr>("of.operand_sbp"))
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
        copy->removeAttr("of.operand_sbp");
        copy->removeAttr("of.result_sbp");
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
      if (op.getAttr("of.operand_sbp") == operandAttr &&
          op.getAttr("of.result_sbp") == resultAttr)
        continue;
      changed = true;
      for (auto [i, r] : llvm::enumerate(op.getResults()))
        if (!annotated[i])
          r.setType(withSbp(r.getType(), fp.ref, best.results[i]));
      op.setAttr("of.operand_sbp", operandAttr);
      op.setAttr("of.result_sbp", resultAttr);
      if (explain) {
        std::string text = "chose " + best.str() + " at " +
                           costStr(best.cost) + " (boxing " +
                           costStr(best.boxing) + ")";
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
    auto target = func.getResultAttrOfType<IntegerAttr>(i, "of.update");
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

/// Runs `perFunction` with the options' cost model on every defined
/// function of `module`.
LogicalResult
forEachFunction(ModuleOp module, StringRef interconnect, StringRef machineFile,
                function_ref<LogicalResult(func::FuncOp, const CostModel &)>
                    perFunction) {
  bool ok;
  CostModel model = makeCostModel(interconnect, machineFile, module, ok);
  if (!ok)
    return failure();
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(perFunction(func, model)))
      return failure();
  return success();
}

struct PropagateSbpPass
    : of::impl::PropagateSbpPassBase<PropagateSbpPass> {
  using PropagateSbpPassBase::PropagateSbpPassBase;
  void runOnOperation() override {
    if (failed(forEachFunction(
            getOperation(), interconnect, machineFile,
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

//===----------------------------------------------------------------------===//
// Boxing insertion
//===----------------------------------------------------------------------===//

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
    auto operandAttr = op.getAttrOfType<ArrayAttr>("of.operand_sbp");
    auto resultAttr = op.getAttrOfType<ArrayAttr>("of.result_sbp");
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
    op.removeAttr("of.operand_sbp");
    op.removeAttr("of.result_sbp");

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

/// Moves each boxing of `func`'s body up to right after the op that defines
/// its operand (or to the body's start, for an argument), after the
/// boxings already moved there, so boxings of one value keep their order.
static void moveBoxingsEarly(func::FuncOp func) {
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

//===----------------------------------------------------------------------===//
// Signature listing
//===----------------------------------------------------------------------===//

struct TestSbpSignaturesPass
    : of::impl::TestSbpSignaturesPassBase<TestSbpSignaturesPass> {
  void runOnOperation() override {
    getOperation().walk([](SbpOpInterface op) {
      SmallVector<SbpSignature> sigs;
      op.getSbpSignatures(sigs);
      std::string text = "sbp signatures:";
      for (const SbpSignature &sig : sigs)
        text += " [" + sig.str() +
                (op.getSbpInternalAllReduce(sig) ? " (two-stage)" : "") + "]";
      op->emitRemark(text);
    });
  }
};

} // namespace
