//===- CostModel.h - The SBP cost model -------------------------*- C++ -*-===//
//
// alpha-beta per placement axis for collectives plus a roofline for
// compute, with its presets and JSON machine file; and the cheapest boxing
// plan under it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_ANALYSIS_COSTMODEL_H
#define OF_DIALECT_OF_ANALYSIS_COSTMODEL_H

#include "OF/Dialect/OF/Analysis/Boxing.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

namespace mlir::of {

/// Latency (seconds) and bandwidth (bytes/second) of one placement axis.
struct LinkCost {
  double latency;
  double bandwidth;
};

/// alpha-beta per placement axis for collectives, a roofline for compute.
/// Costs are seconds, so boxing and compute add up.
struct CostModel {
  SmallVector<LinkCost, 2> axes; ///< the last one repeats
  double flopsPerSecond = 5.0e10;
  double memoryBandwidth = 1.0e10;
  /// A cluster of nodes of `nodeSize` devices (0: `axes` as listed): an
  /// axis whose devices lie within one node (ranks consecutive per node)
  /// has the intra-node link, others the inter-node one (forGrid).
  int64_t nodeSize = 0;
  LinkCost intraNode{5.0e-6, 3.0e11}, interNode{1.0e-5, 2.5e10};

  /// This model's links for the axes of `grid` (placements over ranks 0..N
  /// in row-major order): axis k of size g_k and stride s_k (the product of
  /// the later axes) is within a node when s_k * g_k <= nodeSize.
  CostModel forGrid(ArrayRef<int64_t> grid) const;

  /// A preset: "mpi-shm" (default; MPI over shared memory), "nvlink",
  /// "infiniband", "h100-cluster" / "h200-cluster" (nodes of 8 GPUs on
  /// NVLink, 400 Gb/s InfiniBand between them).
  static bool preset(StringRef name, CostModel &out, std::string &error);
  /// Reads a machine file (JSON): {"flops": F, "memory_bandwidth": B,
  /// "axes": [{"latency": s, "bandwidth": bytes_per_s}, ...], "node_size":
  /// N, "intra_node": {link}, "inter_node": {link}}, each key optional,
  /// over the preset already in `out`.
  static bool readMachineFile(StringRef path, CostModel &out,
                              std::string &error);

  LinkCost axis(unsigned a) const {
    return axes.empty() ? LinkCost{1e-6, 1e10}
                        : axes[std::min<size_t>(a, axes.size() - 1)];
  }
  /// Seconds to box a tensor of global `shape` (`elementBytes` each) from
  /// `from` to `to`, following cheapestBoxing (chunk sizes of coordinate 0).
  double boxingCost(ArrayRef<int64_t> shape, int64_t elementBytes,
                    ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
                    ArrayRef<int64_t> grid) const;
  /// Seconds of one boxing step (chunk sizes of coordinate 0).
  double stepCost(const BoxingStep &step, ArrayRef<int64_t> shape,
                  int64_t elementBytes, ArrayRef<int64_t> grid) const;
  /// Seconds of one rank's compute of `op` under an nd signature (one 1-D
  /// signature per grid axis): flops and bytes divided on every axis whose
  /// signature splits something.
  double computeCost(Operation *op, ArrayRef<SbpSignature> perAxis,
                     ArrayRef<int64_t> grid) const;
};

/// The boxing plan that --of-partition emits and the cost model charges:
/// planBoxing's, unless a sequence of single-axis steps is cheaper under
/// `model`. When several axes change, a shortest-path search over the
/// distributions in between finds it, e.g. [P, P] -> [B, B] as a
/// reduce-scatter on axis 1, an all-reduce of the shard on axis 0 and an
/// all-gather on axis 1 (the hierarchical all-reduce), or [P, S(0)] ->
/// [S(0), B] as an all-gather on axis 1 and a reduce-scatter on axis 0
/// instead of a whole-tensor all-reduce. A step on axis `a` may gather,
/// scatter or exchange dimension `d` only while no later axis splits `d`
/// (a later axis's shards are cut from axis `a`'s). Ties keep planBoxing's
/// plan, so the result is deterministic.
SmallVector<BoxingStep>
cheapestBoxing(ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
               ArrayRef<int64_t> grid, ArrayRef<int64_t> shape,
               int64_t elementBytes, const CostModel &model);

/// Bytes per element of a shaped type (at least 1).
inline int64_t elementBytes(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  return std::max<int64_t>(1, (e.getIntOrFloatBitWidth() + 7) / 8);
}

/// The cost model of the passes' `interconnect` and `machine-file`
/// options; `ok` false (after an error at `anchor`) when they are wrong.
CostModel makeCostModel(StringRef interconnect, StringRef machineFile,
                        Operation *anchor, bool &ok);

/// Runs `perFunction` with the options' cost model on every defined
/// function of `module`.
LogicalResult forEachFunction(
    ModuleOp module, StringRef interconnect, StringRef machineFile,
    function_ref<LogicalResult(func::FuncOp, const CostModel &)> perFunction);

} // namespace mlir::of

#endif // OF_DIALECT_OF_ANALYSIS_COSTMODEL_H
