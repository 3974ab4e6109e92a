//===- Collective.h - A plan's collective steps, laid out and run ---------===//
//
// `CollectiveLayout` is the one place that turns a Collective of the plan
// and a world rank into what that rank does (PlanFormat.fbs defines it): the
// sub-group (the ranks of `group` sharing this rank's grid coordinates on
// every axis but `axis`, in coordinate order), this rank's coordinate k of
// p on the axis, and the shapes its source and destination must have. The
// loader computes it for every rank of every program to check the buffers;
// a session computes it for its own rank and prepares a
// `PreparedCollective`, which packs chunks that are not contiguous (dim != 0
// viewed as [outer, extent, inner]) through scratch memory and calls the
// communicator. A sub-group of one rank needs no communicator: its
// collective is local (a copy, a slice).
//
// The buffers may be host or device memory: the collective moves bytes
// within them only through its `CollectiveMemory` (memcpy on the host; on a
// GPU, copies enqueued on the step's stream, in order with the device
// communicator's operations).
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_COLLECTIVE_H
#define OF_LIB_RUNTIME_COLLECTIVE_H

#include "Comm/Communicator.h"
#include "Session/Status.h"

#include "OF/ABI/PlanFormat_generated.h"

#include "OF/ABI/Collectives.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace of::rt {

using plan::collectiveKindName;

struct CollectiveLayout {
  /// World ranks of the sub-group, in coordinate order (Send/Recv: empty).
  std::vector<int> members;
  /// This rank's coordinate on `axis`, and the sub-group's size.
  int64_t member = 0, parts = 1;
  /// The collective's `shape` (or its default), and what src and dst hold.
  std::vector<int64_t> shape, srcShape, dstShape;
  int dim = 0, dim2 = 0;

  /// Lays out `collective` for `worldRank` with source and destination
  /// buffers `src` and `dst`. Fails, without the step's name, when the
  /// collective is malformed or `worldRank` is not in its group; does not
  /// compare the buffers' sizes (see checkBuffers).
  static Status compute(const plan::Collective &collective,
                        const plan::Buffer &src, const plan::Buffer &dst,
                        int worldRank, CollectiveLayout &out);
  /// Checks that `src` and `dst` hold srcShape and dstShape elements.
  Status checkBuffers(const plan::Collective &collective,
                      const plan::Buffer &src, const plan::Buffer &dst,
                      int worldRank) const;
};

/// How a collective moves bytes within its buffers, and where its scratch
/// lives. Copies of a device implementation are enqueued in stream order
/// (they complete with the communicator's operations around them).
class CollectiveMemory {
public:
  virtual ~CollectiveMemory() = default;
  /// Scratch of `bytes` zeroed bytes, owned by this object; `what` names
  /// it in messages.
  virtual Status allocate(uint64_t bytes, const std::string &what,
                          void *&out) = 0;
  /// `rows` rows of `rowBytes` bytes from src (rows `srcPitch` bytes apart)
  /// to dst (rows `dstPitch` apart); src and dst do not overlap (a
  /// collective stages an overlapping move).
  virtual Status copyRows(void *dst, uint64_t dstPitch, const void *src,
                          uint64_t srcPitch, uint64_t rowBytes,
                          uint64_t rows) = 0;
  /// Sets `count` elements of `elementSize` (1, 2, 4 or 8) bytes to
  /// `element`.
  virtual Status fill(void *dst, uint64_t count, const void *element,
                      size_t elementSize) = 0;
};

/// Host memory: memcpy and heap scratch.
std::unique_ptr<CollectiveMemory> createHostCollectiveMemory();

/// A collective ready to run: pointers, counts, scratch and communicator.
class PreparedCollective {
public:
  /// `comm` may be null unless the sub-group has several ranks (then
  /// `needsCommunicator()` tells and run fails). `what` names the step in
  /// messages ("all_gather at step 7 (program 'main')"). `memory` is where
  /// srcData and dstData live; it outlives the collective.
  static Status prepare(const plan::Collective &collective,
                        const plan::Buffer &src, const plan::Buffer &dst,
                        void *srcData, void *dstData, int worldRank,
                        Communicator *world, CollectiveMemory &memory,
                        std::string what,
                        std::unique_ptr<PreparedCollective> &out);

  Status run();
  bool needsCommunicator() const { return needsComm_ && !comm_; }
  /// Whether it runs the communicator (more than a local copy or slice).
  bool communicates() const { return needsComm_; }
  const std::string &what() const { return what_; }

private:
  explicit PreparedCollective(CollectiveMemory &memory) : memory_(memory) {}
  Status runLocal();
  /// Copies src to staging when src and dst overlap (MPI forbids aliasing);
  /// sets `from` to the pointer to send from.
  Status stagedSource(const unsigned char *&from);
  /// Chunk [offset, offset + size) of the middle dimension of the [outer,
  /// extent, inner] `whole` to or from the dense [outer, size, inner]
  /// `block`.
  Status pack(const unsigned char *whole, unsigned char *block, uint64_t outer,
              uint64_t extent, uint64_t inner, uint64_t offset, uint64_t size);
  Status unpack(unsigned char *whole, const unsigned char *block,
                uint64_t outer, uint64_t extent, uint64_t inner,
                uint64_t offset, uint64_t size);
  Status move(void *dst, const void *src, uint64_t bytes);
  Status scratch(uint64_t bytes, const char *role, unsigned char *&out);

  CollectiveMemory &memory_;

  plan::CollectiveKind kind_ = plan::CollectiveKind::AllReduce;
  plan::ReduceOp reduce_ = plan::ReduceOp::Sum;
  plan::DType dtype_ = plan::DType::F32;
  size_t elementSize_ = 1;
  CollectiveLayout layout_;
  std::string what_;
  bool needsComm_ = false;
  Communicator *comm_ = nullptr; // the sub-group's (Send/Recv: world)
  int peer_ = -1;                // Send/Recv: the peer's world rank
  unsigned char *src_ = nullptr;
  unsigned char *dst_ = nullptr;
  uint64_t srcBytes_ = 0, dstBytes_ = 0;

  // [outer, extent, inner] of `shape` at dim (and, for AllToAll, of the
  // source at dim2 and of the destination at dim).
  uint64_t outer_ = 1, extent_ = 1, inner_ = 1;
  uint64_t outer2_ = 1, extent2_ = 1, inner2_ = 1;
  uint64_t outerDst_ = 1, innerDst_ = 1;
  std::vector<uint64_t> blockBytes_, recvBlockBytes_; // per member
  std::vector<uint64_t> counts_;                      // elements per member
  unsigned char *scratch_ = nullptr, *recvScratch_ = nullptr,
                *staging_ = nullptr;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_COLLECTIVE_H
