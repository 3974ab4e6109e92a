//===- CostModel.cpp - The SBP cost model --------------------------------===//

#include "OF/Dialect/OF/Analysis/CostModel.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::of;

bool CostModel::preset(StringRef name, CostModel &out, std::string &error) {
  // mpi-shm's link is what bench/collective_bench measured for Open MPI
  // over shared memory on the 2-core development VM (all-reduce and
  // all-gather of 2 MiB: ~2.3 GB/s; 8 B: ~1 us); its compute figures and
  // the GPU presets are orders of magnitude. A machine file gives the
  // figures of another machine.
  if (name == "mpi-shm" || name.empty()) {
    out.axes = {{1.0e-6, 2.3e9}};
    out.flopsPerSecond = 5.0e10;
    out.memoryBandwidth = 1.0e10;
  } else if (name == "nvlink") {
    out.axes = {{5.0e-6, 3.0e11}};
    out.flopsPerSecond = 5.0e14;
    out.memoryBandwidth = 3.0e12;
  } else if (name == "infiniband") {
    out.axes = {{5.0e-6, 3.0e11}, {1.0e-5, 2.5e10}};
    out.flopsPerSecond = 5.0e14;
    out.memoryBandwidth = 3.0e12;
  } else if (name == "h100-cluster" || name == "h200-cluster") {
    // Nodes of 8 GPUs: NVLink 4 (450 GB/s a direction) within a node, a
    // 400 Gb/s InfiniBand NIC per GPU between nodes; bf16 dense tensor-core
    // rate at ~50% of peak (989 TFLOP/s) and HBM3 (3.35 TB/s) or HBM3e
    // (4.8 TB/s). Orders of magnitude, as the other presets: calibrate
    // with a machine file.
    bool h200 = name == "h200-cluster";
    out.nodeSize = 8;
    out.intraNode = {3.0e-6, 4.5e11};
    out.interNode = {1.0e-5, 5.0e10};
    out.axes = {out.interNode};
    out.flopsPerSecond = 5.0e14;
    out.memoryBandwidth = h200 ? 4.8e12 : 3.35e12;
  } else {
    error = "unknown interconnect '" + name.str() +
            "' (expected mpi-shm, nvlink, infiniband, h100-cluster or "
            "h200-cluster)";
    return false;
  }
  return true;
}

CostModel CostModel::forGrid(ArrayRef<int64_t> grid) const {
  if (nodeSize <= 0)
    return *this;
  CostModel out = *this;
  out.axes.clear();
  int64_t stride = 1;
  SmallVector<LinkCost, 2> reversed;
  for (int64_t g : llvm::reverse(grid)) {
    reversed.push_back(stride * g <= nodeSize ? intraNode : interNode);
    stride *= g;
  }
  out.axes.assign(reversed.rbegin(), reversed.rend());
  if (out.axes.empty())
    out.axes.push_back(interNode);
  return out;
}

bool CostModel::readMachineFile(StringRef path, CostModel &out,
                                std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read machine file '" + path.str() +
            "': " + buffer.getError().message();
    return false;
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = "machine file '" + path.str() +
            "' is not JSON: " + llvm::toString(json.takeError());
    return false;
  }
  const llvm::json::Object *root = json->getAsObject();
  if (!root) {
    error = "machine file '" + path.str() + "' must hold a JSON object";
    return false;
  }
  auto positive = [&](const llvm::json::Object &o, StringRef key,
                      double &field) {
    if (const llvm::json::Value *v = o.get(key)) {
      std::optional<double> d = v->getAsNumber();
      if (!d || *d <= 0) {
        error = "machine file '" + path.str() + "': '" + key.str() +
                "' must be a positive number";
        return false;
      }
      field = *d;
    }
    return true;
  };
  if (!positive(*root, "flops", out.flopsPerSecond) ||
      !positive(*root, "memory_bandwidth", out.memoryBandwidth))
    return false;
  double nodeSize = static_cast<double>(out.nodeSize);
  if (root->get("node_size")) {
    if (!positive(*root, "node_size", nodeSize))
      return false;
    if (nodeSize != std::floor(nodeSize) || nodeSize > 1e9) {
      error = "machine file '" + path.str() +
              "': 'node_size' must be a whole number of devices";
      return false;
    }
    out.nodeSize = static_cast<int64_t>(nodeSize);
  }
  for (auto [key, link] :
       {std::pair<StringRef, LinkCost *>{"intra_node", &out.intraNode},
        {"inter_node", &out.interNode}}) {
    const llvm::json::Value *v = root->get(key);
    if (!v)
      continue;
    const llvm::json::Object *o = v->getAsObject();
    if (!o) {
      error = "machine file '" + path.str() + "': '" + key.str() +
              "' must be an object";
      return false;
    }
    if (!positive(*o, "latency", link->latency) ||
        !positive(*o, "bandwidth", link->bandwidth))
      return false;
  }
  if (const llvm::json::Value *axes = root->get("axes")) {
    const llvm::json::Array *list = axes->getAsArray();
    if (!list || list->empty()) {
      error =
          "machine file '" + path.str() + "': 'axes' must be a non-empty array";
      return false;
    }
    SmallVector<LinkCost, 2> links;
    for (const llvm::json::Value &v : *list) {
      const llvm::json::Object *o = v.getAsObject();
      if (!o) {
        error = "machine file '" + path.str() +
                "': each entry of 'axes' must be an object";
        return false;
      }
      LinkCost link = out.axis(links.size());
      if (!positive(*o, "latency", link.latency) ||
          !positive(*o, "bandwidth", link.bandwidth))
        return false;
      links.push_back(link);
    }
    out.axes = std::move(links);
  }
  return true;
}

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double CostModel::stepCost(const BoxingStep &step, ArrayRef<int64_t> shape,
                           int64_t elementBytes, ArrayRef<int64_t> grid) const {
  SmallVector<int64_t> zero(grid.size(), 0);
  double p = grid[step.axis];
  double before =
      product(localShape(shape, step.before, grid, zero)) * elementBytes;
  double after =
      product(localShape(shape, step.after, grid, zero)) * elementBytes;
  LinkCost link = axis(step.axis);
  switch (step.kind) {
  case BoxingStep::AllReduce: // ring: reduce-scatter + all-gather
    return 2 * (p - 1) * link.latency +
           2 * (p - 1) / p * before / link.bandwidth;
  case BoxingStep::AllGather:
    return (p - 1) * link.latency + (p - 1) / p * after / link.bandwidth;
  case BoxingStep::ReduceScatter:
  case BoxingStep::AllToAll:
    return (p - 1) * link.latency + (p - 1) / p * before / link.bandwidth;
  case BoxingStep::Slice:
    return after / memoryBandwidth;
  case BoxingStep::ToPartial:
    return before / memoryBandwidth;
  }
  llvm_unreachable("unknown boxing step");
}

double CostModel::boxingCost(ArrayRef<int64_t> shape, int64_t elementBytes,
                             ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
                             ArrayRef<int64_t> grid) const {
  double seconds = 0;
  for (const BoxingStep &step :
       cheapestBoxing(from, to, grid, shape, elementBytes, *this))
    seconds += stepCost(step, shape, elementBytes, grid);
  return seconds;
}

SmallVector<BoxingStep>
of::cheapestBoxing(ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
                   ArrayRef<int64_t> grid, ArrayRef<int64_t> shape,
                   int64_t elementBytes, const CostModel &model) {
  SmallVector<BoxingStep> fixed = planBoxing(from, to, grid);
  size_t n = grid.size();
  // One step is already direct; the search is for hierarchies (and small
  // ones: (rank + 3)^axes states).
  if (fixed.size() < 2 || n > 3)
    return fixed;
  auto total = [&](ArrayRef<BoxingStep> steps) {
    double seconds = 0;
    for (const BoxingStep &step : steps)
      seconds += model.stepCost(step, shape, elementBytes, grid);
    return seconds;
  };

  // The entries each axis may pass through: B, every split, and the
  // partial kinds it starts or ends with. An axis of size 1 moves nothing
  // and takes its target at once.
  int64_t rank = shape.size();
  SmallVector<SmallVector<SbpEntry>> options(n);
  NdSbp start(from.begin(), from.end());
  for (size_t a = 0; a < n; ++a) {
    if (grid[a] == 1) {
      start[a] = to[a];
      options[a] = {to[a]};
      continue;
    }
    options[a].push_back(SbpEntry::broadcast());
    for (int64_t d = 0; d < rank; ++d)
      options[a].push_back(SbpEntry::split(d));
    for (SbpEntry e : {from[a], to[a]})
      if (e.isPartial() && !llvm::is_contained(options[a], e))
        options[a].push_back(e);
  }
  // Every valid combination is a state, found by a linear search (there
  // are a few dozen).
  SmallVector<NdSbp> states;
  std::string why;
  std::function<void(NdSbp &, size_t)> enumerate = [&](NdSbp &cur, size_t a) {
    if (a == n) {
      if (isValidSbp(cur, rank, n, why))
        states.push_back(cur);
      return;
    }
    for (SbpEntry e : options[a]) {
      cur[a] = e;
      enumerate(cur, a + 1);
    }
  };
  NdSbp scratch(n, SbpEntry::broadcast());
  enumerate(scratch, 0);
  auto indexOf = [&](ArrayRef<SbpEntry> sbp) -> int64_t {
    auto it = llvm::find_if(
        states, [&](const NdSbp &s) { return ArrayRef<SbpEntry>(s) == sbp; });
    return it == states.end() ? -1 : it - states.begin();
  };
  int64_t source = indexOf(start), target = indexOf(to);
  if (source < 0 || target < 0)
    return fixed;

  // The single-axis step from `cur` that sets axis `a` to `e`, if legal.
  auto edge = [&](const NdSbp &cur, unsigned a,
                  SbpEntry e) -> std::optional<BoxingStep> {
    SbpEntry f = cur[a];
    for (size_t b = a + 1; b < n; ++b)
      if (grid[b] > 1 && cur[b].isSplit() &&
          ((f.isSplit() && f.dim == cur[b].dim) ||
           (e.isSplit() && e.dim == cur[b].dim)))
        return std::nullopt;
    BoxingStep step{BoxingStep::AllReduce, a, 0, 0, false, cur, cur};
    step.after[a] = e;
    if (f.isPartial() && e.isBroadcast()) {
      step.max = f.kind == SbpKind::PartialMax;
    } else if (f.isPartial() && e.isSplit()) {
      step.kind = BoxingStep::ReduceScatter;
      step.dim = e.dim;
      step.max = f.kind == SbpKind::PartialMax;
    } else if (f.isSplit() && e.isBroadcast()) {
      step.kind = BoxingStep::AllGather;
      step.dim = f.dim;
    } else if (f.isSplit() && e.isSplit()) {
      step.kind = BoxingStep::AllToAll;
      step.dim = f.dim;
      step.dim2 = e.dim;
    } else if (f.isBroadcast() && e.isSplit()) {
      step.kind = BoxingStep::Slice;
      step.dim = e.dim;
    } else if (f.isBroadcast() && e.kind == SbpKind::PartialSum) {
      step.kind = BoxingStep::ToPartial;
    } else {
      return std::nullopt; // through B (B -> P(max) is planBoxing's)
    }
    return step;
  };

  // Dijkstra over the states (a few dozen): O(V^2) with edges on demand.
  size_t v = states.size();
  SmallVector<double> dist(v, std::numeric_limits<double>::infinity());
  SmallVector<int64_t> prev(v, -1);
  SmallVector<std::optional<BoxingStep>> via(v);
  SmallVector<bool> done(v, false);
  dist[source] = 0;
  for (size_t round = 0; round < v; ++round) {
    int64_t u = -1;
    for (size_t i = 0; i < v; ++i)
      if (!done[i] && (u < 0 || dist[i] < dist[u]))
        u = i;
    if (u < 0 || std::isinf(dist[u]) || u == target)
      break;
    done[u] = true;
    for (unsigned a = 0; a < n; ++a)
      for (SbpEntry e : options[a]) {
        if (e == states[u][a])
          continue;
        std::optional<BoxingStep> step = edge(states[u], a, e);
        if (!step)
          continue;
        int64_t w = indexOf(step->after);
        if (w < 0 || done[w])
          continue;
        double d = dist[u] + model.stepCost(*step, shape, elementBytes, grid);
        if (d < dist[w]) {
          dist[w] = d;
          prev[w] = u;
          via[w] = step;
        }
      }
  }
  // Keep planBoxing's plan unless the search's is cheaper by more than
  // rounding.
  if (std::isinf(dist[target]) || !(dist[target] < total(fixed) * (1 - 1e-9)))
    return fixed;
  SmallVector<BoxingStep> steps;
  for (int64_t w = target; w != source; w = prev[w])
    steps.push_back(*via[w]);
  std::reverse(steps.begin(), steps.end());
  return steps;
}

double CostModel::computeCost(Operation *op, ArrayRef<SbpSignature> perAxis,
                              ArrayRef<int64_t> grid) const {
  double divisor = 1;
  for (auto [axis, sig] : llvm::enumerate(perAxis)) {
    auto isSplit = [](const SbpEntry &e) { return e.isSplit(); };
    if (llvm::any_of(sig.operands, isSplit) ||
        llvm::any_of(sig.results, isSplit))
      divisor *= grid[axis];
  }
  double flops = 0;
  if (auto sbp = dyn_cast<SbpOpInterface>(op))
    flops = sbp.getSbpFlops();
  SmallVector<int64_t> zero(grid.size(), 0);
  double bytes = 0;
  auto addBytes = [&](Value v, unsigned index, bool operand) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return;
    NdSbp nd;
    for (const SbpSignature &sig : perAxis)
      nd.push_back(operand ? sig.operands[index] : sig.results[index]);
    int64_t elementBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    bytes +=
        product(localShape(type.getShape(), nd, grid, zero)) * elementBytes;
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    addBytes(v, i, true);
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    addBytes(v, i, false);
  double seconds = flops / divisor / flopsPerSecond + bytes / memoryBandwidth;
  // Collectives inside the op's local form (two-stage normalisations).
  if (auto sbp = dyn_cast<SbpOpInterface>(op)) {
    int64_t elementBytes = 4;
    if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
      elementBytes = std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    for (auto [axis, sig] : llvm::enumerate(perAxis)) {
      double p = grid[axis];
      if (int64_t n = sbp.getSbpInternalAllReduce(sig); n && p > 1) {
        LinkCost link = this->axis(axis);
        seconds += 2 * (p - 1) * link.latency +
                   2 * (p - 1) / p * n * elementBytes / link.bandwidth;
      }
    }
  }
  return seconds;
}

CostModel of::makeCostModel(StringRef interconnect, StringRef machineFile,
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

LogicalResult of::forEachFunction(
    ModuleOp module, StringRef interconnect, StringRef machineFile,
    function_ref<LogicalResult(func::FuncOp, const CostModel &)> perFunction) {
  bool ok;
  CostModel model = makeCostModel(interconnect, machineFile, module, ok);
  if (!ok)
    return failure();
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(perFunction(func, model)))
      return failure();
  return success();
}
