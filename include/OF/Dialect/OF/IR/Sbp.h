//===- Sbp.h - SBP signatures, boxing plans and the cost model -*- C++ -*-===//
//
// The vocabulary that SbpOpInterface, propagation, boxing, partitioning and
// the cost model share:
//   - SbpSignature: one 1-D signature of an op (an entry per operand and per
//     result); an nd signature is one per placement axis (the product rule);
//   - balanced splits and local shapes of nd-SBP tensors;
//   - planBoxing: the per-axis collective sequence of a distribution change,
//     the single definition that the cost model and --of-partition both use;
//   - CostModel: alpha-beta per placement axis plus a roofline for compute.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_SBP_H
#define OF_DIALECT_OF_IR_SBP_H

#include "OF/Dialect/OF/IR/OFAttrs.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <string>

namespace mlir {
namespace of {

/// One 1-D signature: the entry of every operand and every result on one
/// placement axis.
struct SbpSignature {
  llvm::SmallVector<SbpEntry, 4> operands;
  llvm::SmallVector<SbpEntry, 2> results;

  /// `S(0), B -> S(0)`.
  std::string str() const;
  bool operator==(const SbpSignature &o) const {
    return operands == o.operands && results == o.results;
  }
};

/// nd-SBP: one entry per placement axis.
using NdSbp = llvm::SmallVector<SbpEntry, 2>;

/// `[S(0), B]`.
std::string str(llvm::ArrayRef<SbpEntry> sbp);

/// Balanced split of `extent` into `parts`: the size and offset of chunk
/// `index` (the first extent % parts chunks get one more).
inline int64_t chunkSize(int64_t extent, int64_t parts, int64_t index) {
  return extent / parts + (index < extent % parts ? 1 : 0);
}
inline int64_t chunkOffset(int64_t extent, int64_t parts, int64_t index) {
  return index * (extent / parts) + std::min(index, extent % parts);
}
/// Whether `size` is the size of some chunk of `extent` split into `parts`.
inline bool isChunkSize(int64_t size, int64_t extent, int64_t parts) {
  return size == extent / parts || (extent % parts != 0 && size == extent / parts + 1);
}

/// The local shape at grid coordinate `coord` of a tensor of global shape
/// `shape` distributed as `sbp` over a grid: axes apply in order, each to
/// the extent the previous ones left.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> shape,
                                      llvm::ArrayRef<SbpEntry> sbp,
                                      llvm::ArrayRef<int64_t> grid,
                                      llvm::ArrayRef<int64_t> coord);

/// Grid coordinate of linear (row-major) position `index`.
llvm::SmallVector<int64_t> gridCoordinate(llvm::ArrayRef<int64_t> grid,
                                          int64_t index);

/// Whether `sbp` is a valid distribution of a tensor of rank `rank` on a
/// grid of `gridRank` axes; on failure `why` says what is wrong.
bool isValidSbp(llvm::ArrayRef<SbpEntry> sbp, int64_t rank, size_t gridRank,
                std::string &why);

/// Floating-point work of an op on its global shapes (the default of
/// SbpOpInterface::getSbpFlops): 2MNK for matmul, the MACs of conv2d, the
/// result (or input, for reductions) elements otherwise.
double defaultSbpFlops(Operation *op);

//===----------------------------------------------------------------------===//
// Boxing plans
//===----------------------------------------------------------------------===//

/// One collective of a boxing, on one placement axis.
struct BoxingStep {
  enum Kind { AllReduce, AllGather, ReduceScatter, AllToAll, Slice, ToPartial };
  Kind kind;
  unsigned axis;
  int64_t dim = 0;  ///< gathered/scattered dim; AllToAll: the gathered one
  int64_t dim2 = 0; ///< AllToAll: the scattered dim
  bool max = false; ///< AllReduce/ReduceScatter: max instead of sum
  NdSbp before, after;

  /// `all_gather(axis 0, dim 1)`.
  std::string str() const;
};

/// The collectives that turn `from` into `to` on a grid of `grid` (empty if
/// they are equal): one direct step when a single axis changes (P->B
/// all-reduce, P->S reduce-scatter, S->B all-gather, S(i)->S(j) all-to-all,
/// B->S slice, B->P local), otherwise every changed axis back to B from the
/// last axis to the first, then to its target from the first to the last.
/// An axis whose entry is unchanged still takes part when it splits a
/// dimension that an earlier changed axis splits (its shards would move).
llvm::SmallVector<BoxingStep> planBoxing(llvm::ArrayRef<SbpEntry> from,
                                         llvm::ArrayRef<SbpEntry> to,
                                         llvm::ArrayRef<int64_t> grid);

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// Latency (seconds) and bandwidth (bytes/second) of one placement axis.
struct LinkCost {
  double latency;
  double bandwidth;
};

/// alpha-beta per placement axis for collectives, a roofline for compute.
/// Costs are seconds, so boxing and compute add up.
struct CostModel {
  llvm::SmallVector<LinkCost, 2> axes; ///< the last one repeats
  double flopsPerSecond = 5.0e10;
  double memoryBandwidth = 1.0e10;

  /// A preset: "mpi-shm" (default; MPI over shared memory), "nvlink",
  /// "infiniband".
  static bool preset(llvm::StringRef name, CostModel &out, std::string &error);
  /// Reads a machine file (JSON): {"flops": F, "memory_bandwidth": B,
  /// "axes": [{"latency": s, "bandwidth": bytes_per_s}, ...]}, each key
  /// optional, over the preset already in `out`.
  static bool readMachineFile(llvm::StringRef path, CostModel &out,
                              std::string &error);

  LinkCost axis(unsigned a) const {
    return axes.empty() ? LinkCost{1e-6, 1e10}
                        : axes[std::min<size_t>(a, axes.size() - 1)];
  }
  /// Seconds to box a tensor of global `shape` (`elementBytes` each) from
  /// `from` to `to`, following cheapestBoxing (chunk sizes of coordinate 0).
  double boxingCost(llvm::ArrayRef<int64_t> shape, int64_t elementBytes,
                    llvm::ArrayRef<SbpEntry> from, llvm::ArrayRef<SbpEntry> to,
                    llvm::ArrayRef<int64_t> grid) const;
  /// Seconds of one boxing step (chunk sizes of coordinate 0).
  double stepCost(const BoxingStep &step, llvm::ArrayRef<int64_t> shape,
                  int64_t elementBytes, llvm::ArrayRef<int64_t> grid) const;
  /// Seconds of one rank's compute of `op` under an nd signature (one 1-D
  /// signature per grid axis): flops and bytes divided on every axis whose
  /// signature splits something.
  double computeCost(Operation *op, llvm::ArrayRef<SbpSignature> perAxis,
                     llvm::ArrayRef<int64_t> grid) const;
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
llvm::SmallVector<BoxingStep>
cheapestBoxing(llvm::ArrayRef<SbpEntry> from, llvm::ArrayRef<SbpEntry> to,
               llvm::ArrayRef<int64_t> grid, llvm::ArrayRef<int64_t> shape,
               int64_t elementBytes, const CostModel &model);

} // namespace of
} // namespace mlir

#endif // OF_DIALECT_OF_IR_SBP_H
