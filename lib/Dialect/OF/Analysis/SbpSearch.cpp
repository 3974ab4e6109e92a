//===- SbpSearch.cpp - The exact SBP search of --of-auto-parallel --------===//

#include "OF/Dialect/OF/Analysis/SbpSearch.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "llvm/ADT/MapVector.h"

#include <chrono>
#include <limits>
#include <map>
#include <set>

#ifdef OF_HAVE_CBC
#include "Cbc_C_Interface.h"
#endif

using namespace mlir;
using namespace mlir::of;

bool of::haveCbc() {
#ifdef OF_HAVE_CBC
  return true;
#else
  return false;
#endif
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// An argument or an op, with its candidates and their linear cost
/// (compute plus the edges folded into it).
struct Node {
  Operation *op = nullptr; ///< null: the argument `arg`
  Value arg;
  SmallVector<SbpCandidate, 1> cands;
  SmallVector<double> cost;
  SmallVector<unsigned> edges; ///< incident product edges
  int firstColumn = -1;        ///< CBC column of candidate 0
};

/// An edge whose two ends both choose: cost[a][b] for the producer's
/// distribution class a and the consumer's operand class b.
struct Edge {
  unsigned from, to;
  SmallVector<unsigned> fromClass, toClass; ///< per candidate of each end
  SmallVector<SmallVector<double>> cost;
};

/// The bytes each node's results hold under each of its candidates, at one
/// program point.
using MemoryRow = SmallVector<std::pair<unsigned, SmallVector<double>>>;

struct Problem {
  SmallVector<Node, 0> nodes;
  SmallVector<Edge, 0> edges;
  SmallVector<MemoryRow, 0> memory;
  double budget = 0;

  double objective(ArrayRef<unsigned> choice) const {
    double total = 0;
    for (auto [n, node] : llvm::enumerate(nodes))
      total += node.cost[choice[n]];
    for (const Edge &e : edges)
      total += e.cost[e.fromClass[choice[e.from]]][e.toClass[choice[e.to]]];
    return total;
  }
  double peak(ArrayRef<unsigned> choice) const {
    double peak = 0;
    for (const MemoryRow &row : memory) {
      double bytes = 0;
      for (const auto &[n, perCand] : row)
        bytes += perCand[choice[n]];
      peak = std::max(peak, bytes);
    }
    return peak;
  }
  bool fits(ArrayRef<unsigned> choice) const {
    return budget <= 0 || peak(choice) <= budget * (1 + 1e-9);
  }
  /// What node `n` adds to the objective under candidate `c`, the others
  /// as `choice` has them.
  double local(ArrayRef<unsigned> choice, unsigned n, unsigned c) const {
    const Node &node = nodes[n];
    double total = node.cost[c];
    for (unsigned ei : node.edges) {
      const Edge &e = edges[ei];
      unsigned a = e.from == n ? e.fromClass[c] : e.fromClass[choice[e.from]];
      unsigned b = e.to == n ? e.toClass[c] : e.toClass[choice[e.to]];
      total += e.cost[a][b];
    }
    return total;
  }
};

double tensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  double bytes = static_cast<double>(elementBytes(type));
  for (int64_t d : shaped.getShape())
    bytes *= static_cast<double>(d);
  return bytes;
}

/// Bytes per device of a tensor of `type` distributed as `nd`.
double shardBytes(Type type, ArrayRef<SbpEntry> nd, ArrayRef<int64_t> grid) {
  double bytes = tensorBytes(type);
  for (auto [a, e] : llvm::enumerate(nd))
    if (e.isSplit())
      bytes /= static_cast<double>(grid[a]);
  return bytes;
}

/// Every distribution an argument may arrive in: B or a split of any
/// dimension on each axis (an input is settled: never partial).
SmallVector<NdSbp> argumentDists(RankedTensorType type,
                                 ArrayRef<int64_t> grid) {
  SmallVector<SbpEntry> perAxis{SbpEntry::broadcast()};
  for (int64_t d = 0; d < type.getRank(); ++d)
    perAxis.push_back(SbpEntry::split(d));
  SmallVector<NdSbp> out;
  SmallVector<unsigned> idx(grid.size(), 0);
  while (true) {
    NdSbp nd;
    for (auto [a, i] : llvm::enumerate(idx))
      nd.push_back(grid[a] == 1 ? SbpEntry::broadcast() : perAxis[i]);
    if (splitsFit(type.getShape(), nd, grid) && !llvm::is_contained(out, nd))
      out.push_back(nd);
    int64_t a = static_cast<int64_t>(grid.size()) - 1;
    for (; a >= 0; --a) {
      if (++idx[a] < perAxis.size())
        break;
      idx[a] = 0;
    }
    if (a < 0)
      break;
  }
  return out;
}

/// Distinct distributions among `dists` and each one's class.
SmallVector<unsigned> classesOf(ArrayRef<NdSbp> dists,
                                SmallVectorImpl<NdSbp> &distinct) {
  SmallVector<unsigned> cls;
  for (const NdSbp &d : dists) {
    auto it = llvm::find(distinct, d);
    cls.push_back(it - distinct.begin());
    if (it == distinct.end())
      distinct.push_back(d);
  }
  return cls;
}

/// Where a value comes from: its node and result index (0 for arguments).
struct Producer {
  unsigned node, result;
};

class ProblemBuilder {
public:
  ProblemBuilder(func::FuncOp func, const FuncPlacement &fp,
                 const CostModel &model)
      : func(func), fp(fp), model(model) {}

  LogicalResult build(Problem &p, double budget);
  /// The target of each function result: fixed, or an argument node.
  struct ResultTarget {
    std::optional<NdSbp> fixed;
    int argNode = -1;
  };
  SmallVector<ResultTarget> targets;
  DenseMap<Value, Producer> producers;
  DenseMap<Operation *, unsigned> opNode;

private:
  NdSbp distOfCandidate(const Problem &p, Producer pr, unsigned c) const {
    return p.nodes[pr.node].cands[c].sig.results[pr.result];
  }
  /// Adds the boxing of `v` into the requirement of consumer `to`, whose
  /// candidate c needs distribution `need[c]` (a single one: a fixed need).
  void addEdge(Problem &p, Value v, int to, ArrayRef<NdSbp> need);

  func::FuncOp func;
  const FuncPlacement &fp;
  const CostModel &model;
};

void ProblemBuilder::addEdge(Problem &p, Value v, int to,
                             ArrayRef<NdSbp> need) {
  Producer pr = producers.lookup(v);
  Node &from = p.nodes[pr.node];
  SmallVector<NdSbp> have, fromDistinct, toDistinct;
  for (unsigned c = 0; c < from.cands.size(); ++c)
    have.push_back(distOfCandidate(p, pr, c));
  SmallVector<unsigned> fromClass = classesOf(have, fromDistinct);
  SmallVector<unsigned> toClass = classesOf(need, toDistinct);
  auto type = cast<ShapedType>(v.getType());
  SmallVector<SmallVector<double>> cost(fromDistinct.size());
  for (auto [a, src] : llvm::enumerate(fromDistinct))
    for (const NdSbp &dst : toDistinct)
      cost[a].push_back(src == dst ? 0.0
                                   : model.boxingCost(type.getShape(),
                                                      elementBytes(type), src,
                                                      dst, fp.grid));
  if (to >= 0 && static_cast<unsigned>(to) == pr.node)
    return; // an argument returned as itself
  if (toDistinct.size() == 1 || to < 0) {
    for (unsigned c = 0; c < from.cands.size(); ++c)
      from.cost[c] += cost[fromClass[c]][0];
    return;
  }
  Node &dst = p.nodes[to];
  if (fromDistinct.size() == 1) {
    for (unsigned c = 0; c < dst.cands.size(); ++c)
      dst.cost[c] += cost[0][toClass[c]];
    return;
  }
  p.edges.push_back(
      Edge{pr.node, static_cast<unsigned>(to), fromClass, toClass, cost});
  from.edges.push_back(p.edges.size() - 1);
  dst.edges.push_back(p.edges.size() - 1);
}

LogicalResult ProblemBuilder::build(Problem &p, double budget) {
  p.budget = budget;
  Block &body = func.getBody().front();
  auto settledB = NdSbp(fp.grid.size(), SbpEntry::broadcast());
  DenseMap<unsigned, unsigned> argNode;

  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    Node node;
    node.arg = arg;
    SmallVector<NdSbp> dists;
    if (std::optional<NdSbp> d = distOf(type))
      dists.push_back(*d);
    else
      dists = argumentDists(type, fp.grid);
    for (NdSbp &d : dists) {
      SbpCandidate cand;
      cand.sig.results.push_back(d);
      cand.memory = shardBytes(type, d, fp.grid);
      node.cands.push_back(std::move(cand));
    }
    node.cost.assign(node.cands.size(), 0.0);
    argNode[arg.getArgNumber()] = p.nodes.size();
    producers[arg] = Producer{static_cast<unsigned>(p.nodes.size()), 0};
    p.nodes.push_back(std::move(node));
  }

  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions())
      return op.emitError("the SBP search handles single-block programs; "
                          "this op has regions");
    Node node;
    node.op = &op;
    if (auto boxing = dyn_cast<BoxingOp>(op)) {
      SbpAttr target = getSbp(boxing.getType());
      if (!target || target.getPlacement() != fp.ref)
        return op.emitError("the SBP search handles one placement, ")
               << fp.ref << "; this boxing moves its value elsewhere";
      SbpCandidate cand;
      cand.sig.results.push_back(
          NdSbp(target.getEntries().begin(), target.getEntries().end()));
      cand.sig.operands.push_back(cand.sig.results.front());
      cand.memory =
          shardBytes(boxing.getType(), cand.sig.results.front(), fp.grid);
      node.cands.push_back(std::move(cand));
    } else {
      auto sbpOp = dyn_cast<SbpOpInterface>(op);
      if (!sbpOp)
        return op.emitError("op has no SBP signatures (SbpOpInterface), so "
                            "it cannot be distributed");
      SmallVector<SbpSignature> sigs;
      sbpOp.getSbpSignatures(sigs);
      SmallVector<std::optional<NdSbp>> none(op.getNumOperands());
      SmallVector<std::optional<NdSbp>> annotated;
      for (Value r : op.getResults()) {
        annotated.push_back(distOf(r.getType()));
        if (SbpAttr s = getSbp(r.getType()); s && s.getPlacement() != fp.ref)
          return op.emitError("the SBP search handles one placement, ")
                 << fp.ref << "; this result is on " << s.getPlacement();
      }
      SmallVector<NdSignature, 0> ranked =
          rankSignatures(&op, sigs, none, annotated, fp.grid, model);
      if (ranked.empty())
        return op.emitError("no SBP signature of the op fits its shapes on "
                            "placement ")
               << fp.ref;
      for (NdSignature &sig : ranked) {
        SbpCandidate cand;
        // rankSignatures charged the boxing of results to their
        // annotations: part of this candidate's own cost.
        cand.compute = sig.cost;
        for (auto [i, r] : llvm::enumerate(op.getResults())) {
          if (annotated[i])
            sig.results[i] = *annotated[i];
          cand.memory += shardBytes(r.getType(), sig.results[i], fp.grid);
        }
        cand.sig = std::move(sig);
        node.cands.push_back(std::move(cand));
      }
    }
    for (const SbpCandidate &c : node.cands)
      node.cost.push_back(c.compute);
    opNode[&op] = p.nodes.size();
    for (auto [i, r] : llvm::enumerate(op.getResults()))
      producers[r] = Producer{static_cast<unsigned>(p.nodes.size()),
                              static_cast<unsigned>(i)};
    p.nodes.push_back(std::move(node));
  }

  // Edges: every operand, then every returned value.
  for (unsigned n = 0; n < p.nodes.size(); ++n) {
    Operation *op = p.nodes[n].op;
    if (!op)
      continue;
    for (auto [k, v] : llvm::enumerate(op->getOperands())) {
      if (!producers.count(v))
        return op->emitError("operand ") << k << " is not a tensor the SBP "
                                         << "search distributes";
      SmallVector<NdSbp> need;
      for (const SbpCandidate &c : p.nodes[n].cands)
        need.push_back(c.sig.operands[k]);
      addEdge(p, v, n, need);
    }
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    ResultTarget target;
    Type declared = func.getResultTypes()[i];
    if (!producers.count(v)) {
      targets.push_back(target);
      continue;
    }
    auto update = func.getResultAttrOfType<IntegerAttr>(
        i, OFDialect::UpdateAttrHelper::getNameStr());
    if (std::optional<NdSbp> d = distOf(declared))
      target.fixed = *d;
    else if (update && argNode.count(update.getInt()))
      target.argNode = argNode[update.getInt()];
    else
      target.fixed = settledB;
    if (target.fixed) {
      addEdge(p, v, -1, {*target.fixed});
    } else {
      SmallVector<NdSbp> need;
      for (const SbpCandidate &c : p.nodes[target.argNode].cands)
        need.push_back(c.sig.results.front());
      addEdge(p, v, target.argNode, need);
    }
    targets.push_back(target);
  }

  // Liveness: an argument lives throughout; an op's results from the op to
  // their last use. Memory peaks just before values die, so a row per such
  // point (and the end) bounds every point.
  unsigned end = p.nodes.size();
  SmallVector<unsigned> death(p.nodes.size(), 0);
  for (unsigned n = 0; n < p.nodes.size(); ++n) {
    if (!p.nodes[n].op) {
      death[n] = end;
      continue;
    }
    death[n] = n;
    for (Value r : p.nodes[n].op->getResults())
      for (Operation *user : r.getUsers()) {
        if (isa<func::ReturnOp>(user)) {
          death[n] = end;
          continue;
        }
        auto it = opNode.find(user);
        death[n] = std::max(death[n], it == opNode.end() ? end : it->second);
      }
  }
  std::set<unsigned> live;
  SmallVector<SmallVector<unsigned>> dying(end + 1);
  for (unsigned n = 0; n < p.nodes.size(); ++n)
    dying[death[n]].push_back(n);
  for (unsigned t = 0; t <= end; ++t) {
    if (t < end)
      live.insert(t);
    if (dying[t].empty() && t != end)
      continue;
    MemoryRow row;
    for (unsigned n : live) {
      SmallVector<double> bytes;
      for (const SbpCandidate &c : p.nodes[n].cands)
        bytes.push_back(c.memory);
      row.emplace_back(n, std::move(bytes));
    }
    p.memory.push_back(std::move(row));
    for (unsigned n : dying[t])
      live.erase(n);
  }
  return success();
}

/// Greedy in program order, then coordinate descent, then (over the
/// budget) the changes that free the most memory per second they cost.
SmallVector<unsigned> greedy(const Problem &p) {
  SmallVector<unsigned> choice(p.nodes.size(), 0);
  // Program order: edges to later nodes are not counted yet (their
  // choice is 0 for now), so count only the earlier ends.
  for (unsigned n = 0; n < p.nodes.size(); ++n) {
    const Node &node = p.nodes[n];
    double best = kInf;
    for (unsigned c = 0; c < node.cands.size(); ++c) {
      double total = node.cost[c];
      for (unsigned ei : node.edges) {
        const Edge &e = p.edges[ei];
        if (e.to == n && e.from < n)
          total += e.cost[e.fromClass[choice[e.from]]][e.toClass[c]];
      }
      if (total < best) {
        best = total;
        choice[n] = c;
      }
    }
  }
  for (int sweep = 0; sweep < 20; ++sweep) {
    bool changed = false;
    for (unsigned n = 0; n < p.nodes.size(); ++n) {
      double current = p.local(choice, n, choice[n]);
      for (unsigned c = 0; c < p.nodes[n].cands.size(); ++c)
        if (double l = p.local(choice, n, c); l < current - 1e-15) {
          current = l;
          choice[n] = c;
          changed = true;
        }
    }
    if (!changed)
      break;
  }
  while (!p.fits(choice)) {
    double peak = p.peak(choice), objective = p.objective(choice);
    double bestRatio = kInf;
    std::pair<unsigned, unsigned> best{0, 0};
    bool found = false;
    SmallVector<unsigned> trial(choice);
    for (unsigned n = 0; n < p.nodes.size(); ++n)
      for (unsigned c = 0; c < p.nodes[n].cands.size(); ++c) {
        if (c == choice[n] ||
            p.nodes[n].cands[c].memory >= p.nodes[n].cands[choice[n]].memory)
          continue;
        trial[n] = c;
        double freed = peak - p.peak(trial);
        if (freed > 0) {
          double ratio = std::max(0.0, p.objective(trial) - objective) / freed;
          if (ratio < bestRatio) {
            bestRatio = ratio;
            best = {n, c};
            found = true;
          }
        }
        trial[n] = choice[n];
      }
    if (!found)
      break;
    choice[best.first] = best.second;
  }
  return choice;
}

/// Every assignment, when there are at most a million.
FailureOr<SmallVector<unsigned>> exhaustive(const Problem &p,
                                            func::FuncOp func) {
  double count = 1;
  for (const Node &n : p.nodes)
    count *= n.cands.size();
  if (count > 1e6)
    return func.emitError("the exhaustive SBP search has ")
           << count << " assignments; it stops at a million";
  SmallVector<unsigned> choice(p.nodes.size(), 0), best;
  double bestObjective = kInf;
  while (true) {
    if (double o = p.objective(choice); o < bestObjective && p.fits(choice)) {
      bestObjective = o;
      best = choice;
    }
    int64_t n = static_cast<int64_t>(p.nodes.size()) - 1;
    for (; n >= 0; --n) {
      if (++choice[n] < p.nodes[n].cands.size())
        break;
      choice[n] = 0;
    }
    if (n < 0)
      break;
  }
  if (best.empty())
    return SmallVector<unsigned>(choice);
  return best;
}

#ifdef OF_HAVE_CBC
/// The integer program, solved by CBC from the greedy start. Returns
/// nullopt when CBC found no solution in time.
std::optional<SmallVector<unsigned>>
solveCbc(Problem &p, ArrayRef<unsigned> start, double timeLimit, bool &optimal,
         bool &infeasible, unsigned &columns, unsigned &rows) {
  Cbc_Model *m = Cbc_newModel();
  Cbc_setLogLevel(m, 0);
  Cbc_setMaximumSeconds(m, timeLimit);
  Cbc_setParameter(m, "threads", "1");
  // Costs are seconds, often microseconds: the solver's tolerances are
  // absolute, so it works in microseconds, and memory rows in budgets.
  constexpr double kScale = 1e6;
  Cbc_setAllowableGap(m, 1e-9);
  Cbc_setAllowableFractionGap(m, 1e-9);
  int column = 0;
  SmallVector<int> startCols;
  SmallVector<double> startVals;
  for (auto [n, node] : llvm::enumerate(p.nodes)) {
    if (node.cands.size() < 2)
      continue;
    node.firstColumn = column;
    for (unsigned c = 0; c < node.cands.size(); ++c) {
      Cbc_addCol(m, "", 0, 1, node.cost[c] * kScale, 1, 0, nullptr, nullptr);
      startCols.push_back(column);
      startVals.push_back(start[n] == c ? 1 : 0);
      ++column;
    }
  }
  unsigned rowCount = 0;
  SmallVector<int> idx;
  SmallVector<double> val;
  for (const Node &node : p.nodes) {
    if (node.cands.size() < 2)
      continue;
    idx.clear();
    val.clear();
    for (unsigned c = 0; c < node.cands.size(); ++c) {
      idx.push_back(node.firstColumn + c);
      val.push_back(1);
    }
    Cbc_addRow(m, "", idx.size(), idx.data(), val.data(), 'E', 1);
    ++rowCount;
  }
  for (const Edge &e : p.edges) {
    const Node &from = p.nodes[e.from], &to = p.nodes[e.to];
    unsigned classesA = e.cost.size(), classesB = e.cost.front().size();
    int first = column;
    for (unsigned a = 0; a < classesA; ++a)
      for (unsigned b = 0; b < classesB; ++b) {
        Cbc_addCol(m, "", 0, 1, e.cost[a][b] * kScale, 0, 0, nullptr, nullptr);
        ++column;
      }
    // sum_b y[a][b] = sum of the producer's class-a columns.
    for (unsigned a = 0; a < classesA; ++a) {
      idx.clear();
      val.clear();
      for (unsigned b = 0; b < classesB; ++b) {
        idx.push_back(first + a * classesB + b);
        val.push_back(1);
      }
      for (unsigned c = 0; c < from.cands.size(); ++c)
        if (e.fromClass[c] == a) {
          idx.push_back(from.firstColumn + c);
          val.push_back(-1);
        }
      Cbc_addRow(m, "", idx.size(), idx.data(), val.data(), 'E', 0);
      ++rowCount;
    }
    for (unsigned b = 0; b < classesB; ++b) {
      idx.clear();
      val.clear();
      for (unsigned a = 0; a < classesA; ++a) {
        idx.push_back(first + a * classesB + b);
        val.push_back(1);
      }
      for (unsigned c = 0; c < to.cands.size(); ++c)
        if (e.toClass[c] == b) {
          idx.push_back(to.firstColumn + c);
          val.push_back(-1);
        }
      Cbc_addRow(m, "", idx.size(), idx.data(), val.data(), 'E', 0);
      ++rowCount;
    }
  }
  if (p.budget > 0)
    for (const MemoryRow &row : p.memory) {
      idx.clear();
      val.clear();
      double fixed = 0;
      for (const auto &[n, bytes] : row) {
        const Node &node = p.nodes[n];
        if (node.cands.size() < 2) {
          fixed += bytes[0];
          continue;
        }
        for (unsigned c = 0; c < bytes.size(); ++c)
          if (bytes[c] != 0) {
            idx.push_back(node.firstColumn + c);
            val.push_back(bytes[c] / p.budget);
          }
      }
      if (idx.empty())
        continue;
      Cbc_addRow(m, "", idx.size(), idx.data(), val.data(), 'L',
                 1 - fixed / p.budget);
      ++rowCount;
    }
  columns = column;
  rows = rowCount;
  if (p.fits(start))
    Cbc_setMIPStartI(m, startCols.size(), startCols.data(), startVals.data());
  Cbc_solve(m);
  optimal = Cbc_isProvenOptimal(m);
  infeasible = Cbc_isProvenInfeasible(m);
  std::optional<SmallVector<unsigned>> out;
  if (const double *x = Cbc_bestSolution(m)) {
    SmallVector<unsigned> choice(p.nodes.size(), 0);
    for (auto [n, node] : llvm::enumerate(p.nodes)) {
      if (node.cands.size() < 2)
        continue;
      double bestValue = -1;
      for (unsigned c = 0; c < node.cands.size(); ++c)
        if (x[node.firstColumn + c] > bestValue) {
          bestValue = x[node.firstColumn + c];
          choice[n] = c;
        }
    }
    out = std::move(choice);
  }
  Cbc_deleteModel(m);
  return out;
}
#endif

} // namespace

FailureOr<SbpSearchResult> of::searchSbp(func::FuncOp func,
                                         const FuncPlacement &fp,
                                         const CostModel &model,
                                         const SbpSearchOptions &options) {
  auto started = std::chrono::steady_clock::now();
  if (!func.getBody().hasOneBlock())
    return func.emitError("the SBP search needs a single-block function");
  Problem p;
  ProblemBuilder builder(func, fp, model);
  if (failed(builder.build(p, options.memoryBudget)))
    return failure();

  SbpSearchResult result;
  result.nodes = p.nodes.size();
  SmallVector<unsigned> choice;
  if (options.solver == "exhaustive") {
    FailureOr<SmallVector<unsigned>> found = exhaustive(p, func);
    if (failed(found))
      return failure();
    choice = *found;
    result.solver = "exhaustive";
    result.optimal = p.fits(choice);
  } else {
    choice = greedy(p);
    result.solver = "greedy";
    if (options.solver == "cbc") {
#ifdef OF_HAVE_CBC
      bool optimal = false, infeasible = false;
      std::optional<SmallVector<unsigned>> solved =
          solveCbc(p, choice, options.timeLimit, optimal, infeasible,
                   result.variables, result.constraints);
      // The solver's tolerances may leave its answer a rounding above the
      // greedy one; then that one is as good.
      if (solved && p.fits(*solved) &&
          (p.objective(*solved) <= p.objective(choice) * (1 + 1e-9) ||
           !p.fits(choice))) {
        choice = *solved;
        result.solver = "cbc";
        result.optimal = optimal;
        if (!optimal)
          result.solver += " (time limit: best found)";
      } else if (infeasible) {
        return func.emitError("no layout fits the memory budget of ")
               << options.memoryBudget << " bytes per device: CBC proved it "
               << "(the values live together at some point need more; the "
               << "least peak found is " << p.peak(choice) << " bytes)";
      } else if (!solved) {
        result.solver = "greedy (cbc found no solution within the time limit)";
      }
#else
      result.solver = "greedy (this build has no CBC)";
#endif
    }
  }
  result.objective = p.objective(choice);
  result.peakMemory = p.peak(choice);
  result.memoryMet = p.fits(choice);
  if (!result.memoryMet)
    return func.emitError("no layout found fits the memory budget of ")
           << options.memoryBudget << " bytes per device (the best found "
           << "needs " << result.peakMemory << "; solver " << result.solver
           << ")";
  for (auto [n, node] : llvm::enumerate(p.nodes))
    result.compute += node.cands[choice[n]].compute;
  result.boxing = result.objective - result.compute;

  for (auto [n, node] : llvm::enumerate(p.nodes)) {
    const SbpCandidate &c = node.cands[choice[n]];
    if (!node.op) {
      result.dists[node.arg] = c.sig.results.front();
      if (node.cands.size() < 2)
        continue;
      SmallVector<unsigned> trial(choice);
      auto &alts = result.alternatives[node.arg];
      for (unsigned k = 0; k < node.cands.size(); ++k) {
        trial[n] = k;
        alts.push_back({node.cands[k].sig.results.front(), p.objective(trial),
                        p.peak(trial)});
      }
      continue;
    }
    if (!isa<BoxingOp>(node.op))
      result.signatures[node.op] = c.sig;
    for (auto [i, r] : llvm::enumerate(node.op->getResults()))
      result.dists[r] = c.sig.results[i];
  }
  for (const ProblemBuilder::ResultTarget &t : builder.targets) {
    if (t.fixed)
      result.results.push_back(*t.fixed);
    else if (t.argNode >= 0)
      result.results.push_back(
          p.nodes[t.argNode].cands[choice[t.argNode]].sig.results.front());
    else
      result.results.push_back({});
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return result;
}

FailureOr<std::optional<FuncPlacement>> of::searchPlacement(func::FuncOp func,
                                                            StringRef name) {
  FailureOr<FuncPlacements> used = collectPlacements(func);
  if (failed(used))
    return failure();
  auto fromOp = [](PlacementOp p) {
    return FuncPlacement{FlatSymbolRefAttr::get(p.getSymNameAttr()),
                         p.getGridShape(), p.getRankList()};
  };
  if (!name.empty()) {
    auto p = SymbolTable::lookupNearestSymbolFrom<PlacementOp>(
        func, StringAttr::get(func.getContext(), name));
    if (!p)
      return func.emitError("--of-auto-parallel: no placement @") << name;
    return std::optional(fromOp(p));
  }
  if (used->list.size() > 1)
    return func.emitError("--of-auto-parallel handles a function on one "
                          "placement; this one uses ")
           << used->list.size() << " (a pipeline)";
  if (used->list.size() == 1)
    return std::optional(used->list.front());
  auto module = func->getParentOfType<ModuleOp>();
  auto all = module.getOps<PlacementOp>();
  if (all.empty())
    return std::optional<FuncPlacement>();
  if (std::next(all.begin()) != all.end())
    return func.emitError("--of-auto-parallel: the module has several "
                          "placements; name one with placement=NAME");
  return std::optional(fromOp(*all.begin()));
}
