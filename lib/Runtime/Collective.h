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
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_COLLECTIVE_H
#define OF_LIB_RUNTIME_COLLECTIVE_H

#include "AlignedBytes.h"
#include "Communicator.h"
#include "Status.h"

#include "OF/Runtime/PlanFormat_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace of::rt {

/// "all_reduce", "all_gather", ... (the ofrt spelling).
const char *collectiveKindName(plan::CollectiveKind kind);

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

/// A collective ready to run: pointers, counts, scratch and communicator.
class PreparedCollective {
public:
  /// `comm` may be null unless the sub-group has several ranks (then
  /// `needsCommunicator()` tells and run fails). `what` names the step in
  /// messages ("all_gather at step 7 (program 'main')").
  static Status prepare(const plan::Collective &collective,
                        const plan::Buffer &src, const plan::Buffer &dst,
                        void *srcData, void *dstData, int worldRank,
                        Communicator *world, std::string what,
                        std::unique_ptr<PreparedCollective> &out);

  Status run();
  bool needsCommunicator() const { return needsComm_ && !comm_; }
  const std::string &what() const { return what_; }

private:
  PreparedCollective() = default;
  Status runLocal();
  /// Copies src to staging when src and dst overlap (MPI forbids aliasing);
  /// returns the pointer to send from.
  const unsigned char *stagedSource();

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
  AlignedBytes scratch_, recvScratch_, staging_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_COLLECTIVE_H
