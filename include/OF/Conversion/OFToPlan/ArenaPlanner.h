//===- ArenaPlanner.h - Static placement of buffers in one arena -*- C++
//-*-===//
//
// Places buffers with known sizes and lifetimes (step intervals) at offsets
// in one arena so that buffers alive at the same time never overlap. Greedy
// by size: the largest buffer is placed first, each at the smallest gap
// between already placed, time-overlapping buffers that fits it (best fit),
// else after them. This is the planner of TFLite's arena ("greedy by size")
// and of IREE's stream.resource.pack; it knows nothing about MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_PLAN_TRANSFORMS_ARENAPLANNER_H
#define OF_DIALECT_PLAN_TRANSFORMS_ARENAPLANNER_H

#include <cstdint>
#include <vector>

namespace mlir::ofrt {

/// A buffer to place: `bytes` long, alive from step `first` to step `last`
/// (inclusive).
struct ArenaRequest {
  uint64_t bytes;
  int64_t first;
  int64_t last;
};

struct ArenaPlan {
  /// Offset of each request, in request order.
  std::vector<uint64_t> offsets;
  /// Bytes of the arena (a multiple of the alignment).
  uint64_t size = 0;
};

/// Places `requests` with every offset a multiple of `alignment`.
ArenaPlan planArena(const std::vector<ArenaRequest> &requests,
                    uint64_t alignment = 64);

} // namespace mlir::ofrt

#endif // OF_DIALECT_PLAN_TRANSFORMS_ARENAPLANNER_H
