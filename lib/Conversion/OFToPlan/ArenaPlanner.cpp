//===- ArenaPlanner.cpp - Static placement of buffers in one arena --------===//
//
// Greedy-by-size placement with best-fit gaps; see ArenaPlanner.h.
//
//===----------------------------------------------------------------------===//

#include "OF/Conversion/OFToPlan/ArenaPlanner.h"

#include <algorithm>
#include <numeric>

using namespace mlir::ofrt;

static uint64_t roundUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

ArenaPlan mlir::ofrt::planArena(const std::vector<ArenaRequest> &requests,
                                uint64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by earlier start, then by index, so plans are
  // deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes)
      return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });

  struct Placed {
    uint64_t offset, end;
    int64_t first, last;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const ArenaRequest &request = requests[index];
    uint64_t bytes = roundUp(std::max<uint64_t>(request.bytes, 1), alignment);
    // The placed buffers alive at the same time, by offset.
    std::vector<Placed> live;
    for (const Placed &p : placed)
      if (p.first <= request.last && request.first <= p.last)
        live.push_back(p);
    std::sort(live.begin(), live.end(), [](const Placed &a, const Placed &b) {
      return a.offset < b.offset;
    });
    uint64_t best = UINT64_MAX, bestGap = UINT64_MAX, cursor = 0;
    for (const Placed &p : live) {
      if (p.offset >= cursor) {
        uint64_t gap = p.offset - cursor;
        if (gap >= bytes && gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = std::max(cursor, p.end);
    }
    if (best == UINT64_MAX)
      best = cursor;
    plan.offsets[index] = best;
    placed.push_back({best, best + bytes, request.first, request.last});
    plan.size = std::max(plan.size, best + bytes);
  }
  return plan;
}
