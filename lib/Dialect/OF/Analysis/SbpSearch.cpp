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
  /// The nodes producing the op's tensor operands (the IR's structure,
  /// which the clustering of repeated blocks hashes).
  SmallVector<unsigned, 4> operands;
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
  /// Bytes of each memory row that no choice changes (eliminated nodes).
  SmallVector<double, 0> memoryFixed;
  double budget = 0;

  double objective(ArrayRef<unsigned> choice) const {
    double total = 0;
    for (auto [n, node] : llvm::enumerate(nodes))
      total += node.cost[choice[n]];
    for (const Edge &e : edges)
      total += e.cost[e.fromClass[choice[e.from]]][e.toClass[choice[e.to]]];
    return total;
  }
  /// Program point at which each node's results die (the original
  /// problem's; rows are built from it only under a budget).
  SmallVector<unsigned, 0> death;

  double peak(ArrayRef<unsigned> choice) const {
    double peak = 0;
    if (memory.empty() && !death.empty()) {
      // Without rows: a sweep over the program.
      SmallVector<double, 0> freed(nodes.size() + 1, 0.0);
      double live = 0;
      for (unsigned t = 0; t <= nodes.size(); ++t) {
        if (t < nodes.size()) {
          double bytes = nodes[t].cands[choice[t]].memory;
          live += bytes;
          freed[death[t]] += bytes;
        }
        peak = std::max(peak, live);
        live -= freed[t];
      }
      return peak;
    }
    for (auto [r, row] : llvm::enumerate(memory)) {
      double bytes = r < memoryFixed.size() ? memoryFixed[r] : 0.0;
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
                 const CostModel &model, unsigned maxNdCandidates)
      : func(func), fp(fp), model(model), maxNdCandidates(maxNdCandidates) {}
  bool pruned = false; ///< nd candidates were left out

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
  /// A written distribution, as the search's grid reads it: all B on
  /// another number of axes (the mesh being factorized) is B on every
  /// axis of this grid.
  std::optional<NdSbp> annotation(Type type) const {
    std::optional<NdSbp> d = distOf(type);
    if (d && d->size() != fp.grid.size() &&
        llvm::all_of(*d, [](const SbpEntry &e) { return e.isBroadcast(); }))
      d = NdSbp(fp.grid.size(), SbpEntry::broadcast());
    return d;
  }

  NdSbp distOfCandidate(const Problem &p, Producer pr, unsigned c) const {
    return p.nodes[pr.node].cands[c].sig.results[pr.result];
  }
  /// Adds the boxing of `v` into the requirement of consumer `to`, whose
  /// candidate c needs distribution `need[c]` (a single one: a fixed need).
  void addEdge(Problem &p, Value v, int to, ArrayRef<NdSbp> need);

  func::FuncOp func;
  const FuncPlacement &fp;
  const CostModel &model;
  unsigned maxNdCandidates;
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
    if (std::optional<NdSbp> d = annotation(type))
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
      cand.sig.results.push_back(*annotation(boxing.getType()));
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
        annotated.push_back(annotation(r.getType()));
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
      // On a mesh of several axes the nd signatures are the product of the
      // 1-D ones (49 for a matmul on 2 axes) and the edges' class products
      // grow as their square: keep every signature that splits on one axis
      // alone (whole on the others) and the cheapest `maxNdCandidates` of
      // the rest (ranked is cheapest first).
      unsigned axesInUse =
          llvm::count_if(fp.grid, [](int64_t g) { return g > 1; });
      if (axesInUse > 1 && ranked.size() > maxNdCandidates) {
        SmallVector<NdSignature, 0> kept;
        unsigned others = 0;
        for (NdSignature &sig : ranked) {
          unsigned splitAxes =
              llvm::count_if(sig.perAxis, [](const SbpSignature &a) {
                return llvm::any_of(a.operands,
                                    [](const SbpEntry &e) {
                                      return !e.isBroadcast();
                                    }) ||
                       llvm::any_of(a.results, [](const SbpEntry &e) {
                         return !e.isBroadcast();
                       });
              });
          if (splitAxes <= 1 || others++ < maxNdCandidates)
            kept.push_back(std::move(sig));
        }
        pruned |= kept.size() < ranked.size();
        ranked = std::move(kept);
      }
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
    for (Value v : op.getOperands())
      if (auto it = producers.find(v); it != producers.end())
        node.operands.push_back(it->second.node);
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
    if (std::optional<NdSbp> d = annotation(declared))
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
  p.death.assign(death.begin(), death.end());
  if (budget <= 0)
    return success();
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

/// The cost of edge `e` when its end `n` is in class `mine` and the other
/// end in class `other`.
double classCost(const Edge &e, unsigned n, unsigned mine, unsigned other) {
  return e.from == n ? e.cost[mine][other] : e.cost[other][mine];
}
/// The class on edge `e` of candidate `c` of its end `n`.
unsigned classOf(const Edge &e, unsigned n, unsigned c) {
  return e.from == n ? e.fromClass[c] : e.toClass[c];
}
ArrayRef<unsigned> classesAt(const Edge &e, unsigned n) {
  return e.from == n ? ArrayRef<unsigned>(e.fromClass)
                     : ArrayRef<unsigned>(e.toClass);
}

/// Exact reductions (min-plus elimination, as in variable elimination):
/// a node whose choice matters only through one edge folds into its
/// neighbour's costs; one between two edges becomes an edge between its
/// neighbours when that is no larger. Under a memory budget only nodes
/// whose candidates hold the same bytes are eliminated (their bytes become
/// constants of the memory rows). The search runs on `reduced`;
/// `expand` chooses the eliminated nodes back, optimally given the rest.
class Reduction {
public:
  explicit Reduction(const Problem &p) : work(p) { run(); }

  Problem reduced;
  SmallVector<unsigned> fromReduced; ///< reduced node -> original node

  SmallVector<unsigned> expand(ArrayRef<unsigned> reducedChoice) const {
    SmallVector<unsigned> choice(work.nodes.size(), 0);
    for (auto [r, n] : llvm::enumerate(fromReduced))
      choice[n] = reducedChoice[r];
    for (const Step &step : llvm::reverse(steps)) {
      double best = kInf;
      for (unsigned c = 0; c < step.cost.size(); ++c) {
        double total = step.cost[c];
        for (const Edge &e : step.edges) {
          unsigned other = e.from == step.node ? e.to : e.from;
          total += classCost(e, step.node, classOf(e, step.node, c),
                             classOf(e, other, choice[other]));
        }
        if (total < best) {
          best = total;
          choice[step.node] = c;
        }
      }
    }
    return choice;
  }

private:
  struct Step {
    unsigned node;
    SmallVector<double> cost;
    SmallVector<Edge, 2> edges;
  };
  Problem work;
  SmallVector<bool> nodeAlive, edgeAlive;
  SmallVector<Step, 0> steps;

  bool eligible(unsigned n) const {
    if (work.budget <= 0)
      return true;
    const Node &node = work.nodes[n];
    return llvm::all_of(node.cands, [&](const SbpCandidate &c) {
      return c.memory == node.cands.front().memory;
    });
  }
  SmallVector<unsigned, 4> liveEdges(unsigned n) const {
    SmallVector<unsigned, 4> out;
    for (unsigned e : work.nodes[n].edges)
      if (edgeAlive[e] && !llvm::is_contained(out, e))
        out.push_back(e);
    return out;
  }
  /// Adds to node `v`'s costs, per candidate, the least over `u`'s
  /// candidates of u's cost and the edges `es` between them.
  void foldInto(unsigned u, unsigned v, ArrayRef<unsigned> es) {
    Node &target = work.nodes[v];
    const Node &source = work.nodes[u];
    for (unsigned cv = 0; cv < target.cands.size(); ++cv) {
      double best = kInf;
      for (unsigned cu = 0; cu < source.cands.size(); ++cu) {
        double total = source.cost[cu];
        for (unsigned ei : es) {
          const Edge &e = work.edges[ei];
          total += classCost(e, u, classOf(e, u, cu), classOf(e, v, cv));
        }
        best = std::min(best, total);
      }
      target.cost[cv] += best;
    }
  }
  void eliminate(unsigned u, ArrayRef<unsigned> es) {
    Step step{u, work.nodes[u].cost, {}};
    for (unsigned e : es) {
      step.edges.push_back(work.edges[e]);
      edgeAlive[e] = false;
    }
    steps.push_back(std::move(step));
    nodeAlive[u] = false;
  }

  void run() {
    nodeAlive.assign(work.nodes.size(), true);
    edgeAlive.assign(work.edges.size(), true);
    SmallVector<unsigned> worklist;
    for (unsigned n = work.nodes.size(); n-- > 0;)
      worklist.push_back(n);
    while (!worklist.empty()) {
      unsigned u = worklist.pop_back_val();
      if (!nodeAlive[u] || !eligible(u))
        continue;
      SmallVector<unsigned, 4> es = liveEdges(u);
      if (es.size() > 2)
        continue;
      auto otherEnd = [&](unsigned e) {
        return work.edges[e].from == u ? work.edges[e].to : work.edges[e].from;
      };
      if (es.empty()) {
        eliminate(u, es);
        continue;
      }
      unsigned v = otherEnd(es[0]);
      if (es.size() == 1 || otherEnd(es[1]) == v) {
        foldInto(u, v, es);
        eliminate(u, es);
        worklist.push_back(v);
        continue;
      }
      unsigned w = otherEnd(es[1]);
      const Edge &e1 = work.edges[es[0]], &e2 = work.edges[es[1]];
      SmallVector<unsigned> vClass(classesAt(e1, v)), wClass(classesAt(e2, w));
      unsigned classesV = 1 + *llvm::max_element(vClass);
      unsigned classesW = 1 + *llvm::max_element(wClass);
      size_t before = e1.cost.size() * e1.cost.front().size() +
                      e2.cost.size() * e2.cost.front().size() +
                      work.nodes[u].cands.size();
      if (static_cast<size_t>(classesV) * classesW > before)
        continue;
      Edge merged{v, w, vClass, wClass, {}};
      const Node &source = work.nodes[u];
      merged.cost.assign(classesV, SmallVector<double>(classesW, kInf));
      for (unsigned cu = 0; cu < source.cands.size(); ++cu) {
        unsigned a1 = classOf(e1, u, cu), a2 = classOf(e2, u, cu);
        for (unsigned a = 0; a < classesV; ++a)
          for (unsigned b = 0; b < classesW; ++b)
            merged.cost[a][b] = std::min(
                merged.cost[a][b], source.cost[cu] + classCost(e1, u, a1, a) +
                                       classCost(e2, u, a2, b));
      }
      eliminate(u, es);
      work.edges.push_back(std::move(merged));
      edgeAlive.push_back(true);
      work.nodes[v].edges.push_back(work.edges.size() - 1);
      work.nodes[w].edges.push_back(work.edges.size() - 1);
      worklist.push_back(v);
      worklist.push_back(w);
    }
    compact();
  }

  void compact() {
    SmallVector<int> toReduced(work.nodes.size(), -1);
    for (unsigned n = 0; n < work.nodes.size(); ++n)
      if (nodeAlive[n]) {
        toReduced[n] = fromReduced.size();
        fromReduced.push_back(n);
        Node node = work.nodes[n];
        node.edges.clear();
        reduced.nodes.push_back(std::move(node));
      }
    for (unsigned e = 0; e < work.edges.size(); ++e) {
      if (!edgeAlive[e])
        continue;
      Edge edge = work.edges[e];
      edge.from = toReduced[edge.from];
      edge.to = toReduced[edge.to];
      reduced.nodes[edge.from].edges.push_back(reduced.edges.size());
      reduced.nodes[edge.to].edges.push_back(reduced.edges.size());
      reduced.edges.push_back(std::move(edge));
    }
    reduced.budget = work.budget;
    for (auto [r, row] : llvm::enumerate(work.memory)) {
      MemoryRow out;
      double fixed = r < work.memoryFixed.size() ? work.memoryFixed[r] : 0.0;
      for (const auto &[n, bytes] : row) {
        if (toReduced[n] >= 0)
          out.emplace_back(toReduced[n], bytes);
        else
          fixed += bytes.front();
      }
      reduced.memory.push_back(std::move(out));
      reduced.memoryFixed.push_back(fixed);
    }
  }
};

/// Identical repeated blocks (the layers of a model) choose alike: nodes
/// whose structure within `rounds` steps of the graph is the same (a
/// Weisfeiler-Lehman hash of op, attributes, types and the positions of
/// operands and users) and whose candidates are the same become one node
/// of `clustered`, with their costs, edges and bytes summed. A restriction
/// of the problem (each layer may not choose differently), which makes a
/// model of L layers cost about what one layer does.
class Clustering {
public:
  Clustering(const Problem &p, unsigned rounds) { run(p, rounds); }

  Problem clustered;
  SmallVector<unsigned> groupOf;

  SmallVector<unsigned> expand(ArrayRef<unsigned> c) const {
    SmallVector<unsigned> out;
    for (unsigned g : groupOf)
      out.push_back(c[g]);
    return out;
  }
  /// The choice of `clustered` that `choice` makes, where it is one.
  std::optional<SmallVector<unsigned>> restrict(
      ArrayRef<unsigned> choice) const {
    SmallVector<unsigned> out(clustered.nodes.size(), ~0u);
    for (auto [n, g] : llvm::enumerate(groupOf)) {
      if (out[g] != ~0u && out[g] != choice[n])
        return std::nullopt;
      out[g] = choice[n];
    }
    return out;
  }

private:
  static bool sameCandidates(const Node &a, const Node &b) {
    if (a.cands.size() != b.cands.size())
      return false;
    for (auto [x, y] : llvm::zip(a.cands, b.cands))
      if (x.sig.operands != y.sig.operands || x.sig.results != y.sig.results)
        return false;
    return true;
  }

  void run(const Problem &p, unsigned rounds) {
    size_t n = p.nodes.size();
    SmallVector<SmallVector<std::pair<unsigned, unsigned>, 2>, 0> users(n);
    for (unsigned v = 0; v < n; ++v)
      for (auto [k, u] : llvm::enumerate(p.nodes[v].operands))
        users[u].push_back({v, static_cast<unsigned>(k)});
    SmallVector<llvm::hash_code, 0> hash(n), next(n);
    for (unsigned v = 0; v < n; ++v) {
      const Node &node = p.nodes[v];
      if (node.op) {
        llvm::hash_code h = llvm::hash_combine(
            node.op->getName().getAsOpaquePointer(),
            node.op->getAttrDictionary().getAsOpaquePointer());
        for (Type t : node.op->getResultTypes())
          h = llvm::hash_combine(h, t.getAsOpaquePointer());
        hash[v] = llvm::hash_combine(h, node.cands.size());
      } else {
        hash[v] = llvm::hash_combine(node.arg.getType().getAsOpaquePointer(),
                                     node.cands.size());
      }
    }
    for (unsigned r = 0; r < rounds; ++r) {
      for (unsigned v = 0; v < n; ++v) {
        llvm::hash_code h = hash[v];
        for (unsigned u : p.nodes[v].operands)
          h = llvm::hash_combine(h, hash[u]);
        SmallVector<size_t, 4> out;
        for (auto [u, k] : users[v])
          out.push_back(llvm::hash_combine(hash[u], k));
        llvm::sort(out);
        for (size_t x : out)
          h = llvm::hash_combine(h, x);
        next[v] = h;
      }
      std::swap(hash, next);
    }
    // Groups: equal hash and equal candidates, in order of first member.
    DenseMap<size_t, SmallVector<unsigned, 1>> byHash;
    groupOf.assign(n, 0);
    SmallVector<unsigned> firstMember;
    for (unsigned v = 0; v < n; ++v) {
      auto &groups = byHash[static_cast<size_t>(hash[v])];
      auto it = llvm::find_if(groups, [&](unsigned g) {
        return sameCandidates(p.nodes[firstMember[g]], p.nodes[v]);
      });
      if (it != groups.end()) {
        groupOf[v] = *it;
        continue;
      }
      groupOf[v] = firstMember.size();
      groups.push_back(firstMember.size());
      firstMember.push_back(v);
    }
    for (unsigned g : firstMember) {
      Node node = p.nodes[g];
      node.edges.clear();
      node.operands.clear();
      llvm::fill(node.cost, 0.0);
      for (SbpCandidate &c : node.cands)
        c.memory = c.compute = 0;
      clustered.nodes.push_back(std::move(node));
    }
    for (unsigned v = 0; v < n; ++v) {
      Node &g = clustered.nodes[groupOf[v]];
      for (unsigned c = 0; c < g.cands.size(); ++c) {
        g.cost[c] += p.nodes[v].cost[c];
        g.cands[c].memory += p.nodes[v].cands[c].memory;
        g.cands[c].compute += p.nodes[v].cands[c].compute;
      }
    }
    std::map<std::pair<unsigned, unsigned>, SmallVector<unsigned, 1>> merged;
    for (const Edge &e : p.edges) {
      unsigned a = groupOf[e.from], b = groupOf[e.to];
      if (a == b) {
        Node &g = clustered.nodes[a];
        for (unsigned c = 0; c < g.cands.size(); ++c)
          g.cost[c] += e.cost[e.fromClass[c]][e.toClass[c]];
        continue;
      }
      auto &list = merged[{a, b}];
      auto it = llvm::find_if(list, [&](unsigned i) {
        const Edge &o = clustered.edges[i];
        return o.fromClass == e.fromClass && o.toClass == e.toClass;
      });
      if (it == list.end()) {
        Edge copy = e;
        copy.from = a;
        copy.to = b;
        list.push_back(clustered.edges.size());
        clustered.nodes[a].edges.push_back(clustered.edges.size());
        clustered.nodes[b].edges.push_back(clustered.edges.size());
        clustered.edges.push_back(std::move(copy));
        continue;
      }
      Edge &o = clustered.edges[*it];
      for (auto [row, add] : llvm::zip(o.cost, e.cost))
        for (auto [x, y] : llvm::zip(row, add))
          x += y;
    }
    clustered.budget = p.budget;
    clustered.memoryFixed = p.memoryFixed;
    for (const MemoryRow &row : p.memory) {
      MemoryRow out;
      DenseMap<unsigned, unsigned> at;
      for (const auto &[v, bytes] : row) {
        unsigned g = groupOf[v];
        auto [it, fresh] = at.try_emplace(g, out.size());
        if (fresh) {
          out.emplace_back(g, bytes);
          continue;
        }
        for (auto [x, y] : llvm::zip(out[it->second].second, bytes))
          x += y;
      }
      clustered.memory.push_back(std::move(out));
    }
  }
};

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
/// The integer program in CBC's column-major form, built once.
class IntegerProgram {
public:
  /// A new column; returns its index.
  int column(double cost, bool integer, double startValue) {
    obj.push_back(cost);
    integers.push_back(integer);
    start.push_back(startValue);
    return obj.size() - 1;
  }
  /// A row lo <= sum coef * column <= hi.
  void row(ArrayRef<std::pair<int, double>> terms, double lo, double hi) {
    for (auto [c, v] : terms)
      triplets.push_back({c, static_cast<int>(rowLo.size()), v});
    rowLo.push_back(lo);
    rowHi.push_back(hi);
  }
  unsigned columns() const { return obj.size(); }
  unsigned rows() const { return rowLo.size(); }

  /// Solves; the columns' values, or nullopt when CBC found none.
  std::optional<std::vector<double>> solve(double timeLimit, bool &optimal,
                                           bool &infeasible) {
    llvm::stable_sort(triplets, [](const Triplet &a, const Triplet &b) {
      return a.col < b.col;
    });
    std::vector<CoinBigIndex> starts(obj.size() + 1, 0);
    std::vector<int> index;
    std::vector<double> value;
    for (const Triplet &t : triplets) {
      ++starts[t.col + 1];
      index.push_back(t.row);
      value.push_back(t.value);
    }
    for (size_t c = 0; c < obj.size(); ++c)
      starts[c + 1] += starts[c];
    std::vector<double> lo(obj.size(), 0.0), hi(obj.size(), 1.0);
    Cbc_Model *m = Cbc_newModel();
    Cbc_loadProblem(m, obj.size(), rowLo.size(), starts.data(), index.data(),
                    value.data(), lo.data(), hi.data(), obj.data(),
                    rowLo.data(), rowHi.data());
    std::vector<int> startCols;
    for (size_t c = 0; c < obj.size(); ++c) {
      if (integers[c])
        Cbc_setInteger(m, c);
      startCols.push_back(c);
    }
    Cbc_setLogLevel(m, getenv("OF_CBC_LOG") ? 1 : 0);
    Cbc_setMaximumSeconds(m, timeLimit);
    Cbc_setParameter(m, "threads", "1");
    // The greedy start is a good incumbent; the feasibility pump took most
    // of the time (7 of 11 s on a 2-layer GPT step) finding worse ones.
    Cbc_setParameter(m, "feas", "off");
    Cbc_setAllowableGap(m, 1e-9);
    Cbc_setAllowableFractionGap(m, 1e-9);
    if (!start.empty())
      Cbc_setMIPStartI(m, startCols.size(), startCols.data(), start.data());
    Cbc_solve(m);
    optimal = Cbc_isProvenOptimal(m);
    infeasible = Cbc_isProvenInfeasible(m);
    std::optional<std::vector<double>> out;
    if (const double *x = Cbc_bestSolution(m))
      out = std::vector<double>(x, x + obj.size());
    Cbc_deleteModel(m);
    return out;
  }
  /// No start (the greedy one breaks the budget).
  void dropStart() { start.clear(); }

private:
  struct Triplet {
    int col, row;
    double value;
  };
  std::vector<double> obj, start, rowLo, rowHi;
  std::vector<bool> integers;
  std::vector<Triplet> triplets;
};

/// The integer program of `p`, solved by CBC from the greedy start.
/// Returns nullopt when CBC found no solution in time.
std::optional<SmallVector<unsigned>>
solveCbc(const Problem &p, ArrayRef<unsigned> start, double timeLimit,
         bool &optimal, bool &infeasible, unsigned &columns, unsigned &rows) {
  // Costs are seconds, often microseconds: the solver's tolerances are
  // absolute, so it works in microseconds, and memory rows in budgets.
  constexpr double kScale = 1e6;
  IntegerProgram ip;
  SmallVector<int> firstColumn(p.nodes.size(), -1); ///< of candidate 0
  for (auto [n, node] : llvm::enumerate(p.nodes)) {
    if (node.cands.size() < 2)
      continue;
    SmallVector<std::pair<int, double>> one;
    for (unsigned c = 0; c < node.cands.size(); ++c) {
      int col = ip.column(node.cost[c] * kScale, true, start[n] == c);
      if (c == 0)
        firstColumn[n] = col;
      one.push_back({col, 1.0});
    }
    ip.row(one, 1, 1);
  }
  SmallVector<std::pair<int, double>> terms;
  for (const Edge &e : p.edges) {
    const Node &from = p.nodes[e.from], &to = p.nodes[e.to];
    unsigned classesA = e.cost.size(), classesB = e.cost.front().size();
    unsigned startA = e.fromClass[start[e.from]];
    unsigned startB = e.toClass[start[e.to]];
    int first = ip.columns();
    for (unsigned a = 0; a < classesA; ++a)
      for (unsigned b = 0; b < classesB; ++b)
        ip.column(e.cost[a][b] * kScale, false, a == startA && b == startB);
    // sum_b y[a][b] = the producer's class-a columns; likewise for b.
    for (unsigned a = 0; a < classesA; ++a) {
      terms.clear();
      for (unsigned b = 0; b < classesB; ++b)
        terms.push_back({first + a * classesB + b, 1.0});
      for (unsigned c = 0; c < from.cands.size(); ++c)
        if (e.fromClass[c] == a)
          terms.push_back({firstColumn[e.from] + static_cast<int>(c), -1.0});
      ip.row(terms, 0, 0);
    }
    for (unsigned b = 0; b < classesB; ++b) {
      terms.clear();
      for (unsigned a = 0; a < classesA; ++a)
        terms.push_back({first + a * classesB + b, 1.0});
      for (unsigned c = 0; c < to.cands.size(); ++c)
        if (e.toClass[c] == b)
          terms.push_back({firstColumn[e.to] + static_cast<int>(c), -1.0});
      ip.row(terms, 0, 0);
    }
  }
  if (p.budget > 0)
    for (auto [r, row] : llvm::enumerate(p.memory)) {
      terms.clear();
      double fixed = r < p.memoryFixed.size() ? p.memoryFixed[r] : 0.0;
      for (const auto &[n, bytes] : row) {
        const Node &node = p.nodes[n];
        if (node.cands.size() < 2) {
          fixed += bytes[0];
          continue;
        }
        for (unsigned c = 0; c < bytes.size(); ++c)
          if (bytes[c] != 0)
            terms.push_back(
                {firstColumn[n] + static_cast<int>(c), bytes[c] / p.budget});
      }
      if (!terms.empty())
        ip.row(terms, -1e30, 1 - fixed / p.budget);
    }
  columns = ip.columns();
  rows = ip.rows();
  if (!p.fits(start))
    ip.dropStart();
  std::optional<std::vector<double>> x =
      ip.solve(timeLimit, optimal, infeasible);
  if (!x)
    return std::nullopt;
  SmallVector<unsigned> choice(p.nodes.size(), 0);
  for (auto [n, node] : llvm::enumerate(p.nodes)) {
    if (node.cands.size() < 2)
      continue;
    double bestValue = -1;
    for (unsigned c = 0; c < node.cands.size(); ++c)
      if ((*x)[firstColumn[n] + c] > bestValue) {
        bestValue = (*x)[firstColumn[n] + c];
        choice[n] = c;
      }
  }
  return choice;
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
  ProblemBuilder builder(func, fp, model, options.maxNdCandidates);
  if (failed(builder.build(p, options.memoryBudget)))
    return failure();

  SbpSearchResult result;
  result.nodes = p.nodes.size();
  result.pruned = builder.pruned;
  SmallVector<unsigned> choice;
  if (options.solver == "exhaustive") {
    FailureOr<SmallVector<unsigned>> found = exhaustive(p, func);
    if (failed(found))
      return failure();
    choice = *found;
    result.solver = "exhaustive";
    result.optimal = p.fits(choice);
  } else {
    // Large programs: repeated blocks choose alike (Clustering).
    bool cluster = options.cluster == "on" ||
                   (options.cluster == "auto" && p.nodes.size() > 1000);
    std::optional<Clustering> clustering;
    if (cluster) {
      clustering.emplace(p, /*rounds=*/3);
      result.clusters = clustering->clustered.nodes.size();
    }
    const Problem &base = clustering ? clustering->clustered : p;
    auto toOriginal = [&](ArrayRef<unsigned> c) {
      return clustering ? clustering->expand(c) : SmallVector<unsigned>(c);
    };
    Reduction reduction(base);
    const Problem &q = reduction.reduced;
    SmallVector<unsigned> reducedChoice = greedy(q);
    choice = toOriginal(reduction.expand(reducedChoice));
    result.solver = "greedy";
    bool choices =
        llvm::any_of(q.nodes, [](const Node &n) { return n.cands.size() > 1; });
    if (options.solver == "cbc" && !choices && p.fits(choice)) {
      // The reductions are exact and left nothing to choose.
      result.solver = "exact reductions";
      result.optimal = true;
    } else if (options.solver == "cbc") {
#ifdef OF_HAVE_CBC
      bool optimal = false, infeasible = false;
      std::optional<SmallVector<unsigned>> solved =
          solveCbc(q, reducedChoice, options.timeLimit, optimal, infeasible,
                   result.variables, result.constraints);
      std::optional<SmallVector<unsigned>> expanded;
      if (solved)
        expanded = toOriginal(reduction.expand(*solved));
      // The solver's tolerances may leave its answer a rounding above the
      // greedy one; then that one is as good.
      if (expanded && p.fits(*expanded) &&
          (p.objective(*expanded) <= p.objective(choice) * (1 + 1e-9) ||
           !p.fits(choice))) {
        choice = *expanded;
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
    result.reducedNodes = q.nodes.size();
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
      if (node.cands.size() < 2 || !options.explain)
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
