//===- StreamOrder.h - Which steps of a program's streams may run at once -===//
//
// A program's steps run in order on their stream; across streams only
// events order them (a wait on stream s for an event recorded on stream t
// orders everything t did before the record ahead of everything s does
// after the wait). On a GPU, two steps on different streams that no chain
// of events orders may run at the same time, so they must not touch the
// same memory. `StreamOrder` tracks the order with vector clocks as the
// steps are added in program order and reports the first such pair. The
// plan verifier (`ofrt.program`) and libofrt's plan loader both check
// programs with it, so a plan whose streams race is refused before it
// runs. Header-only, no MLIR: libofrt includes it.
//
// Memory is named by a space and a byte range: the arena is space 0 (its
// buffers overlap where their [offset, offset + size) ranges do), every
// other buffer (an input, a constant) a space of its own.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_STREAMORDER_H
#define OF_RUNTIME_STREAMORDER_H

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace of::plan {

/// The most streams and events a program may have (a GPU stream or event
/// each, made when the session is).
inline constexpr uint64_t kMaxStreams = 64;
inline constexpr uint64_t kMaxEvents = 1 << 20;

struct MemoryUse {
  uint64_t space = 0, begin = 0, end = 0;
  bool overlaps(const MemoryUse &other) const {
    return space == other.space && begin < other.end && other.begin < end;
  }
};

class StreamOrder {
public:
  /// `numStreams` is at most kMaxStreams (the callers check it).
  explicit StreamOrder(uint32_t numStreams)
      : clocks_(numStreams, std::vector<uint64_t>(numStreams, 0)),
        history_(numStreams) {}

  /// Adds the next step (on `stream`, using `uses`). Returns the index of
  /// an earlier step on another stream that uses overlapping memory and
  /// that the events do not order before this one, or -1.
  int64_t addStep(uint32_t stream, std::vector<MemoryUse> uses) {
    size_t index = next_++;
    std::vector<uint64_t> &clock = clocks_[stream];
    uint64_t seq = ++clock[stream];
    for (uint32_t other = 0; other < history_.size(); ++other) {
      if (other == stream)
        continue;
      const std::vector<Entry> &steps = history_[other];
      // The steps of `other` after the last one this stream waited for.
      for (auto it = steps.rbegin();
           it != steps.rend() && it->seq > clock[other]; ++it)
        for (const MemoryUse &mine : uses)
          for (const MemoryUse &theirs : it->uses)
            if (mine.overlaps(theirs))
              return static_cast<int64_t>(it->index);
    }
    history_[stream].push_back({index, seq, std::move(uses)});
    return -1;
  }
  /// Adds an event record: the event now stands for what `stream` did.
  void addRecord(uint32_t stream, uint32_t event) {
    ++next_;
    events_[event] = clocks_[stream];
  }
  /// Adds an event wait: `stream` is now after what the event stands for.
  void addWait(uint32_t stream, uint32_t event) {
    ++next_;
    auto found = events_.find(event);
    if (found == events_.end())
      return; // never recorded: the callers refuse such a wait
    const std::vector<uint64_t> &recorded = found->second;
    std::vector<uint64_t> &clock = clocks_[stream];
    for (size_t s = 0; s < recorded.size(); ++s)
      clock[s] = std::max(clock[s], recorded[s]);
  }

private:
  struct Entry {
    size_t index;
    uint64_t seq;
    std::vector<MemoryUse> uses;
  };
  size_t next_ = 0;
  std::vector<std::vector<uint64_t>> clocks_; // per stream: what it is after
  std::unordered_map<uint32_t, std::vector<uint64_t>> events_; // last records
  std::vector<std::vector<Entry>> history_; // per stream: its steps
};

} // namespace of::plan

#endif // OF_RUNTIME_STREAMORDER_H
