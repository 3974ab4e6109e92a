//===- ScheduleStages.cpp - The order of a pipeline's micro-batches -------===//
//
// --of-schedule-stages: in a function over several placements (a pipeline),
// the order of the micro-batches' forward and backward work. GPipe: every
// forward before the backwards. 1F1B: per stage, S - s forwards, then one
// backward and one forward in turn, then the remaining backwards.
//
// One function's program order serves every stage: after --of-partition a
// rank runs this order restricted to its ops, and performs its transfers in
// it (so that blocking transfers cannot deadlock, docs/decisions/0004). Any
// per-stage order is the restriction of some global order, as long as the
// stages' orders and the data dependencies have no cycle; 1F1B's has none
// (it runs), and the order of its ideal timeline is one such global order.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVectorExtras.h"

#include <functional>
#include <limits>
#include <queue>
#include <tuple>

namespace mlir::of {
#define GEN_PASS_DEF_SCHEDULESTAGESPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

/// The ops of `body` that `op` uses (through nested regions too).
void forEachProducer(Block &body, Operation *op,
                     llvm::function_ref<void(Operation *)> fn) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (Operation *top = body.findAncestorOpInBlock(*def))
        if (top != op)
          fn(top);
    }
  });
}

/// Ops after the forward work: marked backward, or using such an op.
llvm::SmallPtrSet<Operation *, 32> backwardOps(Block &body) {
  llvm::SmallPtrSet<Operation *, 32> backward;
  for (Operation &op : body.without_terminator()) {
    bool after = op.hasAttr(OFDialect::BackwardAttrHelper::getNameStr());
    forEachProducer(body, &op,
                    [&](Operation *def) { after |= backward.contains(def); });
    if (after)
      backward.insert(&op);
  }
  return backward;
}

/// GPipe: forward work ahead of backward work, keeping each group's
/// order, which is a topological order since the forward group is closed
/// under operands.
void scheduleGPipe(Block &body) {
  llvm::SmallPtrSet<Operation *, 32> backward = backwardOps(body);
  SmallVector<Operation *> late;
  for (Operation &op : body.without_terminator())
    if (backward.contains(&op))
      late.push_back(&op);
  for (Operation *op : late)
    op->moveBefore(body.getTerminator());
}

/// The ideal 1F1B timeline of `stages` stages and `micro` micro-batches:
/// start and end time of each stage's forward (phase 0) and backward
/// (phase 1) of each micro-batch, a forward taking 1 and a backward 2.
struct OneForwardOneBackward {
  OneForwardOneBackward(int64_t stages, int64_t micro)
      : stages(stages), micro(micro), start(2 * stages * micro, -1),
        end(2 * stages * micro, -1) {
    // Stage s's sequence: S - s - 1 warm-up forwards, then a forward and
    // a backward in turn, then the remaining backwards.
    SmallVector<SmallVector<std::pair<int, int64_t>>> order(stages);
    for (int64_t s = 0; s < stages; ++s) {
      int64_t warmup = std::min(stages - s - 1, micro);
      for (int64_t i = 0; i < warmup; ++i)
        order[s].push_back({0, i});
      for (int64_t i = 0; i + warmup < micro; ++i) {
        order[s].push_back({0, i + warmup});
        order[s].push_back({1, i});
      }
      for (int64_t i = micro - warmup; i < micro; ++i)
        order[s].push_back({1, i});
    }
    // Each stage takes its next unit once its input is there: a forward
    // the previous stage's forward, a backward the next stage's backward
    // (the last stage: its own forward).
    SmallVector<size_t> next(stages, 0);
    SmallVector<int64_t> free(stages, 0);
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int64_t s = 0; s < stages; ++s) {
        for (; next[s] < order[s].size(); ++next[s]) {
          auto [phase, i] = order[s][next[s]];
          int64_t ready =
              phase == 0
                  ? (s == 0 ? 0 : end[index(s - 1, 0, i)])
                  : end[s == stages - 1 ? index(s, 0, i) : index(s + 1, 1, i)];
          if (ready < 0)
            break;
          int64_t at = std::max(free[s], ready);
          start[index(s, phase, i)] = at;
          end[index(s, phase, i)] = free[s] = at + (phase == 0 ? 1 : 2);
          progressed = true;
        }
      }
    }
  }
  size_t index(int64_t s, int phase, int64_t i) const {
    return (s * 2 + phase) * micro + i;
  }
  int64_t stages, micro;
  SmallVector<int64_t> start, end;
};

/// 1F1B; false (nothing moved) when `body` has no micro-batch marks.
bool scheduleOneForwardOneBackward(Block &body,
                                   const FuncPlacements &placements) {
  SmallVector<Operation *> ops = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  llvm::SmallPtrSet<Operation *, 32> backward = backwardOps(body);
  // Micro-batch: the mark, else the latest of the producers' (-1: none).
  // Placement: the results', else the operands' (an op runs on the
  // placement of its operands; of.boxing's result names its target).
  DenseMap<Operation *, int64_t> microOf;
  DenseMap<Operation *, const FuncPlacement *> placementOf;
  auto placementOfValue = [&](Value v) -> const FuncPlacement * {
    if (const FuncPlacement *p = placements.of(v.getType()))
      return p;
    Operation *def = v.getDefiningOp();
    Operation *top = def ? body.findAncestorOpInBlock(*def) : nullptr;
    return top ? placementOf.lookup(top) : nullptr;
  };
  int64_t numMicro = 0;
  for (Operation *op : ops) {
    int64_t m = -1;
    if (auto mark = op->getAttrOfType<IntegerAttr>(
            OFDialect::MicroBatchAttrHelper::getNameStr()))
      m = mark.getInt();
    forEachProducer(body, op, [&](Operation *def) {
      m = std::max(m, microOf.lookup(def));
    });
    microOf[op] = m;
    numMicro = std::max(numMicro, m + 1);
    const FuncPlacement *p = nullptr;
    for (Value r : op->getResults())
      if ((p = placements.of(r.getType())))
        break;
    for (Value v : op->getOperands())
      if (!p)
        p = placementOfValue(v);
    placementOf[op] = p;
  }
  if (numMicro <= 1)
    return false;

  // Stages in the order a micro-batch's forward work reaches them.
  DenseMap<const FuncPlacement *, int64_t> stageOf;
  for (Operation *op : ops)
    if (microOf[op] >= 0 && !backward.contains(op))
      if (const FuncPlacement *p = placementOf[op])
        stageOf.try_emplace(p, stageOf.size());
  for (const FuncPlacement &p : placements.list)
    stageOf.try_emplace(&p, stageOf.size());
  OneForwardOneBackward timeline(stageOf.size(), numMicro);

  // Keys: the start of the op's unit; a transfer between placements the
  // end of its source's unit (when what it moves is there); an op of no
  // micro-batch its first user's key, else before (forward) or after
  // (backward) everything.
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  DenseMap<Operation *, int64_t> key;
  llvm::SmallPtrSet<Operation *, 16> transfers;
  DenseMap<Operation *, SmallVector<Operation *>> users;
  for (Operation *op : ops)
    forEachProducer(body, op,
                    [&](Operation *def) { users[def].push_back(op); });
  for (Operation *op : llvm::reverse(ops)) {
    int64_t m = microOf[op];
    int phase = backward.contains(op) ? 1 : 0;
    if (m < 0) {
      int64_t k = phase ? kLast : -1;
      if (!users[op].empty()) {
        k = kLast;
        for (Operation *user : users[op])
          k = std::min(k, key[user]);
      }
      key[op] = k;
      continue;
    }
    const FuncPlacement *p = placementOf[op];
    int64_t s = p ? stageOf.lookup(p) : 0;
    key[op] = timeline.start[timeline.index(s, phase, m)];
    if (auto boxing = dyn_cast<BoxingOp>(op)) {
      const FuncPlacement *from = placementOfValue(boxing.getInput());
      if (from && p && from != p) {
        key[op] = timeline.end[timeline.index(stageOf.lookup(from), phase, m)];
        transfers.insert(op);
      }
    }
  }

  // The ops by key as far as their operands allow (Kahn's algorithm);
  // at one time transfers first (what arrives then is there for the work
  // that starts then), then program order, itself a topological order.
  DenseMap<Operation *, size_t> position, waiting;
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;
  using Entry = std::tuple<int64_t, bool, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  auto entry = [&](Operation *op) -> Entry {
    return {key[op], !transfers.contains(op), position[op]};
  };
  for (Operation *op : ops) {
    llvm::SmallPtrSet<Operation *, 4> producers;
    forEachProducer(body, op, [&](Operation *def) { producers.insert(def); });
    waiting[op] = producers.size();
    if (producers.empty())
      ready.push(entry(op));
  }
  Operation *terminator = body.getTerminator();
  while (!ready.empty()) {
    Operation *op = ops[std::get<2>(ready.top())];
    ready.pop();
    op->moveBefore(terminator);
    llvm::SmallPtrSet<Operation *, 4> done;
    for (Operation *user : users[op])
      if (done.insert(user).second && --waiting[user] == 0)
        ready.push(entry(user));
  }
  return true;
}

struct ScheduleStagesPass
    : of::impl::ScheduleStagesPassBase<ScheduleStagesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (schedule != "gpipe" && schedule != "1f1b") {
      getOperation().emitError("--of-schedule-stages: schedule is gpipe or "
                               "1f1b, not '")
          << schedule << "'";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      FailureOr<FuncPlacements> placements = collectPlacements(func);
      if (failed(placements))
        return signalPassFailure();
      Block &body = func.getBody().front();
      if (placements->list.size() > 1 &&
          (schedule != "1f1b" ||
           !scheduleOneForwardOneBackward(body, *placements)))
        scheduleGPipe(body);
      for (Operation &op : body) {
        op.removeAttr(OFDialect::BackwardAttrHelper::getNameStr());
        op.removeAttr(OFDialect::MicroBatchAttrHelper::getNameStr());
      }
    }
  }
};
} // namespace
