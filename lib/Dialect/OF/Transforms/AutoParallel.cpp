//===- AutoParallel.cpp - --of-auto-parallel ------------------------------===//
//
// Runs the exact SBP search (SbpSearch.h) on every function and writes its
// choice as annotations: argument, result and op result types, and each
// op's `of.operand_sbp` / `of.result_sbp`.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SbpSearch.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::of {
#define GEN_PASS_DEF_AUTOPARALLELPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

std::string seconds(double s) { return llvm::formatv("{0:e2} s", s).str(); }
std::string gridStr(ArrayRef<int64_t> grid) {
  std::string s = "[";
  for (auto [i, g] : llvm::enumerate(grid))
    s += (i ? "x" : "") + std::to_string(g);
  return s + "]";
}
std::string bytes(double b) { return llvm::formatv("{0:e2} B", b).str(); }

std::string argName(func::FuncOp func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, "of.name"))
    return name.str();
  return "argument " + std::to_string(i);
}

LogicalResult apply(func::FuncOp func, const FuncPlacement &fp,
                    const SbpSearchResult &r, double budget, bool explain) {
  MLIRContext *ctx = func.getContext();
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (auto it = r.dists.find(arg); it != r.dists.end())
      arg.setType(withSbp(arg.getType(), fp.ref, it->second));
  auto sbpArray = [&](ArrayRef<NdSbp> dists) {
    SmallVector<Attribute> attrs;
    for (const NdSbp &d : dists)
      attrs.push_back(SbpAttr::get(ctx, fp.ref, d));
    return ArrayAttr::get(ctx, attrs);
  };
  for (Operation &op : body.without_terminator()) {
    for (Value res : op.getResults())
      if (auto it = r.dists.find(res); it != r.dists.end())
        res.setType(withSbp(res.getType(), fp.ref, it->second));
    if (auto it = r.signatures.find(&op); it != r.signatures.end()) {
      op.setAttr(OFDialect::OperandSbpAttrHelper::getNameStr(),
                 sbpArray(it->second.operands));
      op.setAttr(OFDialect::ResultSbpAttrHelper::getNameStr(),
                 sbpArray(it->second.results));
    }
  }
  SmallVector<Type> results(func.getResultTypes());
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, t] : llvm::enumerate(results)) {
    if (!isa<RankedTensorType>(t) || r.results[i].empty())
      continue;
    t = withSbp(t, fp.ref, r.results[i]);
    if (ret.getOperand(i).getType() != t) {
      OpBuilder b(ret);
      ret.setOperand(i,
                     BoxingOp::create(b, ret.getLoc(), t, ret.getOperand(i)));
    }
  }
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(), results));

  std::string summary = llvm::formatv(
      "auto-parallel on {0} {1}: {2}{3}, modeled step {4} (compute {5}, "
      "boxing {6}), peak {7} per device{8}; {9} nodes",
      fp.ref, gridStr(fp.grid), r.solver,
      !r.optimal ? ""
      : r.clusters && r.pruned
          ? " (optimal over the clusters and the kept nd signatures)"
      : r.clusters ? " (optimal over the clusters)"
      : r.pruned   ? " (optimal over the kept nd signatures)"
                   : " (optimal)",
      seconds(r.objective), seconds(r.compute), seconds(r.boxing),
      bytes(r.peakMemory), budget > 0 ? " of " + bytes(budget) : std::string(),
      r.nodes);
  if (r.clusters)
    summary += llvm::formatv(" in {0} clusters of repeated blocks", r.clusters);
  summary += llvm::formatv(", {0} variables, {1} constraints, searched in {2}",
                           r.variables, r.constraints, seconds(r.seconds));
  func.emitRemark(summary);
  if (!explain)
    return success();
  for (BlockArgument arg : body.getArguments()) {
    auto alts = r.alternatives.find(arg);
    if (alts == r.alternatives.end())
      continue;
    const NdSbp &chosen = r.dists.lookup(arg);
    std::string text = argName(func, arg.getArgNumber()) + ": " + str(chosen);
    bool memoryDecided = false;
    SmallVector<SbpSearchResult::Alternative> sorted(alts->second);
    llvm::stable_sort(sorted, [](const auto &a, const auto &b) {
      return a.objective < b.objective;
    });
    text += "; alternatives:";
    for (const auto &alt : sorted) {
      if (alt.dist == chosen)
        continue;
      bool over = budget > 0 && alt.peakMemory > budget;
      memoryDecided |= over && alt.objective < r.objective;
      text += llvm::formatv(" {0} {1}{2}{3};", str(alt.dist),
                            alt.objective >= r.objective ? "+" : "-",
                            seconds(std::abs(alt.objective - r.objective)),
                            over ? ", over the memory budget (" +
                                       bytes(alt.peakMemory) + ")"
                                 : std::string());
    }
    text += memoryDecided ? " decided by the memory budget"
                          : " decided by the modeled step time";
    func.emitRemark(text);
  }
  return success();
}

/// --of-auto-parallel's factorize: the module's one 1-D placement takes
/// the grid [a, N/a] (or [N]) whose search of the largest function models
/// the fastest step. Distributions already written on it must be all B
/// (they become B on every axis).
LogicalResult factorizeMesh(ModuleOp module, const CostModel &model,
                            const SbpSearchOptions &options) {
  auto placements = llvm::to_vector(module.getOps<PlacementOp>());
  if (placements.size() != 1)
    return module.emitError("--of-auto-parallel: factorize needs a module "
                            "with one placement, not ")
           << placements.size();
  PlacementOp placement = placements.front();
  SmallVector<int64_t> shape = placement.getGridShape();
  if (shape.size() != 1)
    return placement.emitError("--of-auto-parallel: factorize takes a 1-D "
                               "placement; this one is already a grid");
  bool fixed = false;
  module.walk([&](Operation *op) {
    auto check = [&](Type t) {
      if (SbpAttr sbp = getSbp(t))
        fixed |= llvm::any_of(sbp.getEntries(), [](const SbpEntry &e) {
          return !e.isBroadcast();
        });
    };
    for (Type t : op->getResultTypes())
      check(t);
    if (auto f = dyn_cast<func::FuncOp>(op)) {
      for (Type t : f.getArgumentTypes())
        check(t);
      for (Type t : f.getResultTypes())
        check(t);
    }
  });
  if (fixed)
    return placement.emitError("--of-auto-parallel: factorize needs a "
                               "program without split or partial "
                               "annotations (they fix the mesh's shape)");
  func::FuncOp largest;
  size_t most = 0;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal())
      continue;
    size_t ops = f.getBody().front().getOperations().size();
    if (ops > most) {
      most = ops;
      largest = f;
    }
  }
  if (!largest)
    return success();
  int64_t n = shape.front();
  SmallVector<SmallVector<int64_t>> grids{{n}};
  for (int64_t a = 2; a < n; ++a)
    if (n % a == 0)
      grids.push_back({a, n / a});
  auto ref = FlatSymbolRefAttr::get(placement.getSymNameAttr());
  SmallVector<int64_t> ranks = placement.getRankList();
  std::string text = "auto-parallel mesh:";
  double best = std::numeric_limits<double>::infinity();
  SmallVector<int64_t> chosen = shape;
  for (const SmallVector<int64_t> &grid : grids) {
    FuncPlacement fp{ref, grid, ranks};
    FailureOr<SbpSearchResult> r = [&] {
      // A grid that fits no layout (the budget) is just not chosen.
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      return searchSbp(largest, fp, model.forGrid(grid), options);
    }();
    text += " " + gridStr(grid) + " ";
    text += succeeded(r) ? seconds(r->objective) : std::string("no layout");
    text += ";";
    if (succeeded(r) && r->objective < best) {
      best = r->objective;
      chosen = grid;
    }
  }
  text += " chose " + gridStr(chosen);
  module.emitRemark(text);
  if (chosen == shape)
    return success();
  MLIRContext *ctx = module.getContext();
  placement.setShapeAttr(Builder(ctx).getI64ArrayAttr(chosen));
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](SbpAttr sbp) -> std::optional<Attribute> {
    if (sbp.getPlacement() != ref)
      return std::nullopt;
    return SbpAttr::get(ctx, ref, NdSbp(chosen.size(), SbpEntry::broadcast()));
  });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  return success();
}

struct AutoParallelPass : of::impl::AutoParallelPassBase<AutoParallelPass> {
  using AutoParallelPassBase::AutoParallelPassBase;
  void runOnOperation() override {
    if (cluster != "on" && cluster != "off" && cluster != "auto") {
      getOperation().emitError("--of-auto-parallel: cluster takes on, off or "
                               "auto, not '")
          << cluster << "'";
      return signalPassFailure();
    }
    if (solver != "cbc" && solver != "greedy" && solver != "exhaustive") {
      getOperation().emitError("--of-auto-parallel: solver takes cbc, "
                               "greedy or exhaustive, not '")
          << solver << "'";
      return signalPassFailure();
    }
    if (!(memoryBudget >= 0) || !(timeLimit > 0)) {
      getOperation().emitError("--of-auto-parallel: memory-budget takes a "
                               "non-negative number of bytes and time-limit "
                               "a positive number of seconds");
      return signalPassFailure();
    }
    SbpSearchOptions options;
    options.memoryBudget = memoryBudget;
    options.timeLimit = timeLimit;
    options.solver = solver;
    options.explain = explain;
    options.cluster = cluster;
    options.maxNdCandidates = maxNdCandidates;
    if (factorize) {
      bool ok;
      CostModel model =
          makeCostModel(interconnect, machineFile, getOperation(), ok);
      if (!ok || failed(factorizeMesh(getOperation(), model, options)))
        return signalPassFailure();
    }
    if (failed(forEachFunction(
            getOperation(), interconnect, machineFile,
            [&](func::FuncOp f, const CostModel &model) -> LogicalResult {
              FailureOr<std::optional<FuncPlacement>> fp =
                  searchPlacement(f, placement);
              if (failed(fp))
                return failure();
              if (!*fp)
                return success();
              FailureOr<SbpSearchResult> r =
                  searchSbp(f, **fp, model.forGrid((*fp)->grid), options);
              if (failed(r))
                return failure();
              return apply(f, **fp, *r, memoryBudget, explain);
            })))
      signalPassFailure();
  }
};

} // namespace
