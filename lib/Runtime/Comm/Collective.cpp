//===- Collective.cpp - A plan's collective steps, laid out and run -------===//

#include "Comm/Collective.h"

#include "Session/AlignedBytes.h"
#include "Comm/Distribution.h"
#include "Plan/PlanFile.h"
#include "CPU/Reduce.h"

#include <algorithm>
#include <cstring>
#include <deque>

using namespace of::plan;

namespace of::rt {

namespace {

/// The tag of the plan's Send/Recv messages.
constexpr int kPlanMessageTag = 100;

template <typename T> uint32_t count(const flatbuffers::Vector<T> *vector) {
  return vector ? vector->size() : 0;
}

std::vector<int64_t> shapeOf(const Buffer &buffer) {
  if (!buffer.shape())
    return {};
  return std::vector<int64_t>(buffer.shape()->begin(), buffer.shape()->end());
}

std::string groupText(const Collective &collective) {
  std::vector<int> ranks;
  if (collective.group())
    ranks.assign(collective.group()->begin(), collective.group()->end());
  return formatRanks(ranks);
}

uint64_t productOf(const std::vector<int64_t> &dims, size_t begin,
                   size_t end) {
  uint64_t result = 1;
  for (size_t d = begin; d < end; ++d)
    result *= static_cast<uint64_t>(dims[d]);
  return result;
}

bool overlaps(const unsigned char *a, uint64_t aBytes, const unsigned char *b,
              uint64_t bBytes) {
  return aBytes && bBytes && a < b + bBytes && b < a + aBytes;
}

class HostCollectiveMemory final : public CollectiveMemory {
public:
  Status allocate(uint64_t bytes, const std::string &what,
                  void *&out) override {
    AlignedBytes &storage = storage_.emplace_back();
    if (Status status = storage.allocate(bytes, what.c_str()); status.failed())
      return status;
    out = storage.data();
    return Status::success();
  }
  Status copyRows(void *dst, uint64_t dstPitch, const void *src,
                  uint64_t srcPitch, uint64_t rowBytes,
                  uint64_t rows) override {
    for (uint64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<unsigned char *>(dst) + r * dstPitch,
                  static_cast<const unsigned char *>(src) + r * srcPitch,
                  static_cast<size_t>(rowBytes));
    return Status::success();
  }
  Status fill(void *dst, uint64_t count, const void *element,
              size_t elementSize) override {
    auto *out = static_cast<unsigned char *>(dst);
    const auto *bytes = static_cast<const unsigned char *>(element);
    if (std::all_of(bytes, bytes + elementSize,
                    [](unsigned char b) { return b == 0; })) {
      std::memset(out, 0, static_cast<size_t>(count * elementSize));
      return Status::success();
    }
    for (uint64_t i = 0; i < count; ++i)
      std::memcpy(out + i * elementSize, element, elementSize);
    return Status::success();
  }

private:
  std::deque<AlignedBytes> storage_;
};

} // namespace

std::unique_ptr<CollectiveMemory> createHostCollectiveMemory() {
  return std::make_unique<HostCollectiveMemory>();
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

Status CollectiveLayout::compute(const Collective &collective,
                                 const Buffer &src, const Buffer &dst,
                                 int worldRank, CollectiveLayout &out) {
  out = CollectiveLayout();
  CollectiveKind kind = collective.kind();
  const char *name = collectiveKindName(kind);
  uint32_t groupSize = count(collective.group());
  int position = -1;
  for (uint32_t i = 0; i < groupSize; ++i)
    if (collective.group()->Get(i) == worldRank)
      position = static_cast<int>(i);
  if (position < 0)
    return fail("rank ", worldRank, " runs the ", name,
                " but is not in its group ", groupText(collective));

  if (kind == CollectiveKind::Send || kind == CollectiveKind::Recv) {
    int peer = collective.peer();
    bool inGroup = false;
    for (uint32_t i = 0; i < groupSize; ++i)
      inGroup = inGroup || collective.group()->Get(i) == peer;
    if (peer == worldRank)
      return fail("rank ", worldRank, " would ", name, " to itself (peer ",
                  peer, ")");
    if (!inGroup)
      return fail("the peer rank ", peer, " is not in the group ",
                  groupText(collective));
    out.srcShape = shapeOf(src);
    out.dstShape = shapeOf(dst);
    return Status::success();
  }

  std::vector<int64_t> mesh;
  if (count(collective.mesh()))
    mesh.assign(collective.mesh()->begin(), collective.mesh()->end());
  else
    mesh.push_back(groupSize);
  uint64_t positions = 1;
  for (int64_t extent : mesh) {
    if (extent < 1)
      return fail("the mesh ", formatDims(mesh), " has the extent ", extent,
                  "; extents are at least 1");
    if (__builtin_mul_overflow(positions, static_cast<uint64_t>(extent),
                               &positions))
      return fail("the mesh ", formatDims(mesh), " overflows");
  }
  if (positions != groupSize)
    return fail("the mesh ", formatDims(mesh), " has ", positions,
                " positions, but the group ", groupText(collective), " has ",
                groupSize, " ranks");
  int axis = collective.axis();
  if (axis < 0 || static_cast<size_t>(axis) >= mesh.size())
    return fail("axis ", axis, " is outside the mesh ", formatDims(mesh));
  std::vector<int64_t> coordinates = gridCoordinates(mesh, position);
  out.parts = mesh[axis];
  out.member = coordinates[axis];
  for (int64_t c = 0; c < out.parts; ++c) {
    coordinates[axis] = c;
    out.members.push_back(
        collective.group()->Get(static_cast<uint32_t>(gridIndex(mesh,
                                                                coordinates))));
  }

  if (collective.shape()) {
    out.shape.assign(collective.shape()->begin(), collective.shape()->end());
    for (int64_t extent : out.shape)
      if (extent < 0)
        return fail("the shape ", formatDims(out.shape),
                    " has a negative extent");
  } else if (kind == CollectiveKind::AllToAll) {
    return fail("all_to_all needs a shape");
  } else {
    // Without a shape, the whole (unsplit) buffer's.
    out.shape = kind == CollectiveKind::AllGather ? shapeOf(dst) : shapeOf(src);
  }

  out.dim = collective.dim();
  out.dim2 = collective.dim2();
  bool splits = kind == CollectiveKind::AllGather ||
                kind == CollectiveKind::ReduceScatter ||
                kind == CollectiveKind::AllToAll ||
                kind == CollectiveKind::Slice;
  int rank = static_cast<int>(out.shape.size());
  if (splits) {
    if (rank == 0) {
      if (out.parts > 1)
        return fail("a ", name, " over ", out.parts,
                    " ranks cannot split the scalar shape []");
      out.dim = out.dim2 = 0;
    } else {
      if (out.dim < 0 || out.dim >= rank)
        return fail("dim ", out.dim, " is outside the shape ",
                    formatDims(out.shape));
      if (kind == CollectiveKind::AllToAll) {
        if (out.dim2 < 0 || out.dim2 >= rank)
          return fail("dim2 ", out.dim2, " is outside the shape ",
                      formatDims(out.shape));
        if (out.dim2 == out.dim && out.parts > 1)
          return fail("all_to_all needs dim != dim2 (both are ", out.dim, ")");
      }
    }
  }
  auto cut = [&](std::vector<int64_t> shape, int d) {
    if (!shape.empty())
      shape[d] = chunkSize(shape[d], out.parts, out.member);
    return shape;
  };
  switch (kind) {
  case CollectiveKind::AllGather:
    out.srcShape = cut(out.shape, out.dim);
    out.dstShape = out.shape;
    break;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Slice:
    out.srcShape = out.shape;
    out.dstShape = cut(out.shape, out.dim);
    break;
  case CollectiveKind::AllToAll:
    out.srcShape = cut(out.shape, out.dim);
    out.dstShape = cut(out.shape, out.dim2);
    break;
  default:
    out.srcShape = out.dstShape = out.shape;
    break;
  }
  return Status::success();
}

Status CollectiveLayout::checkBuffers(const Collective &collective,
                                      const Buffer &src, const Buffer &dst,
                                      int worldRank) const {
  CollectiveKind kind = collective.kind();
  if (src.dtype() != dst.dtype() && kind != CollectiveKind::Send &&
      kind != CollectiveKind::Recv)
    return fail("the source '", src.name() ? src.name()->str() : "", "' is ",
                dtypeName(src.dtype()), " but the destination '",
                dst.name() ? dst.name()->str() : "", "' is ",
                dtypeName(dst.dtype()));
  if ((kind == CollectiveKind::AllReduce ||
       kind == CollectiveKind::ReduceScatter) &&
      parts > 1 && !isReducible(src.dtype()))
    return fail("cannot reduce ", dtypeName(src.dtype()),
                " values (reductions take floats and integers)");
  std::string where =
      kind == CollectiveKind::Send || kind == CollectiveKind::Recv
          ? formatMessage("on rank ", worldRank)
          : formatMessage("on rank ", worldRank, " (coordinate ", member,
                          " of ", parts, " on axis ", collective.axis(), ")");
  auto check = [&](const Buffer &buffer, const char *role,
                   const std::vector<int64_t> &expected) -> Status {
    uint64_t elements = buffer.size() / dtypeSize(buffer.dtype());
    if (elements != product(expected))
      return fail(where, " the ", role, " '",
                  buffer.name() ? buffer.name()->str() : "", "' must hold ",
                  dtypeName(buffer.dtype()), " ", formatDims(expected), " (",
                  product(expected), " elements), but it holds ", elements);
    return Status::success();
  };
  if (kind == CollectiveKind::Send || kind == CollectiveKind::Recv)
    return Status::success();
  if (Status status = check(src, "source", srcShape); status.failed())
    return status;
  return check(dst, "destination", dstShape);
}

//===----------------------------------------------------------------------===//
// Preparing and running
//===----------------------------------------------------------------------===//

Status PreparedCollective::scratch(uint64_t bytes, const char *role,
                                   unsigned char *&out) {
  void *data = nullptr;
  if (Status status = memory_.allocate(bytes, role, data); status.failed())
    return fail(what_, ": ", status.message());
  out = static_cast<unsigned char *>(data);
  return Status::success();
}

Status PreparedCollective::prepare(const Collective &collective,
                                   const Buffer &src, const Buffer &dst,
                                   void *srcData, void *dstData, int worldRank,
                                   Communicator *world,
                                   CollectiveMemory &memory, std::string what,
                                   std::unique_ptr<PreparedCollective> &out) {
  std::unique_ptr<PreparedCollective> prepared(new PreparedCollective(memory));
  PreparedCollective &p = *prepared;
  p.what_ = std::move(what);
  if (Status status = CollectiveLayout::compute(collective, src, dst,
                                                worldRank, p.layout_);
      status.failed())
    return fail(p.what_, ": ", status.message());
  if (Status status =
          p.layout_.checkBuffers(collective, src, dst, worldRank);
      status.failed())
    return fail(p.what_, ": ", status.message());
  p.kind_ = collective.kind();
  p.reduce_ = collective.reduce();
  p.dtype_ = src.dtype();
  p.elementSize_ = dtypeSize(p.dtype_);
  p.src_ = static_cast<unsigned char *>(srcData);
  p.dst_ = static_cast<unsigned char *>(dstData);
  p.srcBytes_ = src.size();
  p.dstBytes_ = dst.size();
  bool aliased = overlaps(p.src_, p.srcBytes_, p.dst_, p.dstBytes_);

  if (p.kind_ == CollectiveKind::Send || p.kind_ == CollectiveKind::Recv) {
    p.needsComm_ = true;
    p.comm_ = world;
    p.peer_ = collective.peer();
    if (world && (p.peer_ < 0 || p.peer_ >= world->size()))
      return fail(p.what_, ": the peer rank ", p.peer_,
                  " is outside the job's ", world->size(), " ranks");
    out = std::move(prepared);
    return Status::success();
  }

  const CollectiveLayout &layout = p.layout_;
  const std::vector<int64_t> &shape = layout.shape;
  if (!shape.empty()) {
    p.outer_ = productOf(shape, 0, layout.dim);
    p.extent_ = static_cast<uint64_t>(shape[layout.dim]);
    p.inner_ = productOf(shape, layout.dim + 1, shape.size());
  }
  uint64_t parts = static_cast<uint64_t>(layout.parts);
  bool local = parts == 1 || p.kind_ == CollectiveKind::Slice ||
               p.kind_ == CollectiveKind::ToPartial;
  if (local) {
    // A slice reads its source through staging when the two overlap; a
    // copy between overlapping ranges goes through staging too.
    if (aliased &&
        (p.src_ != p.dst_ || (p.kind_ == CollectiveKind::Slice && parts > 1)))
      if (Status status = p.scratch(p.srcBytes_, "a staging copy", p.staging_);
          status.failed())
        return status;
    out = std::move(prepared);
    return Status::success();
  }

  p.needsComm_ = true;
  if (world)
    if (Status status = world->subGroup(layout.members, p.comm_, p.what_);
        status.failed())
      return status;
  if (p.comm_ && (p.comm_->size() != layout.parts ||
                  p.comm_->rank() != layout.member))
    return fail(p.what_, ": the sub-group communicator has ", p.comm_->size(),
                " ranks (this one ", p.comm_->rank(), "), expected ",
                layout.parts, " (this one ", layout.member, ")");

  size_t es = p.elementSize_;
  switch (p.kind_) {
  case CollectiveKind::AllGather:
    for (uint64_t j = 0; j < parts; ++j)
      p.blockBytes_.push_back(p.outer_ * chunkSize(p.extent_, parts, j) *
                              p.inner_ * es);
    if (p.outer_ > 1)
      if (Status s = p.scratch(p.dstBytes_, "gather scratch", p.scratch_);
          s.failed())
        return s;
    break;
  case CollectiveKind::ReduceScatter:
    for (uint64_t j = 0; j < parts; ++j)
      p.counts_.push_back(p.outer_ * chunkSize(p.extent_, parts, j) *
                          p.inner_);
    if (p.outer_ > 1)
      if (Status s = p.scratch(p.srcBytes_, "scatter scratch", p.scratch_);
          s.failed())
        return s;
    break;
  case CollectiveKind::AllToAll: {
    const std::vector<int64_t> &srcShape = layout.srcShape;
    const std::vector<int64_t> &dstShape = layout.dstShape;
    p.outer2_ = productOf(srcShape, 0, layout.dim2);
    p.extent2_ = static_cast<uint64_t>(shape[layout.dim2]);
    p.inner2_ = productOf(srcShape, layout.dim2 + 1, srcShape.size());
    p.outerDst_ = productOf(dstShape, 0, layout.dim);
    p.innerDst_ = productOf(dstShape, layout.dim + 1, dstShape.size());
    for (uint64_t j = 0; j < parts; ++j) {
      p.blockBytes_.push_back(p.outer2_ * chunkSize(p.extent2_, parts, j) *
                              p.inner2_ * es);
      p.recvBlockBytes_.push_back(p.outerDst_ *
                                  chunkSize(p.extent_, parts, j) *
                                  p.innerDst_ * es);
    }
    if (p.outer2_ > 1)
      if (Status s = p.scratch(p.srcBytes_, "all_to_all scratch", p.scratch_);
          s.failed())
        return s;
    if (p.outerDst_ > 1)
      if (Status s =
              p.scratch(p.dstBytes_, "all_to_all scratch", p.recvScratch_);
          s.failed())
        return s;
    break;
  }
  default:
    break;
  }
  // Aliased buffers go through a staging copy (MPI forbids aliasing, and
  // device copies do not overlap), except an all-reduce or broadcast in
  // place.
  bool inPlace = p.src_ == p.dst_ && (p.kind_ == CollectiveKind::AllReduce ||
                                      p.kind_ == CollectiveKind::Broadcast);
  if (aliased && !inPlace)
    if (Status s = p.scratch(p.srcBytes_, "a staging copy", p.staging_);
        s.failed())
      return s;
  out = std::move(prepared);
  return Status::success();
}

Status PreparedCollective::move(void *dst, const void *src, uint64_t bytes) {
  if (dst == src || !bytes)
    return Status::success();
  auto *d = static_cast<unsigned char *>(dst);
  auto *s = static_cast<const unsigned char *>(src);
  if (overlaps(d, bytes, s, bytes)) {
    // Through staging (prepare made it): copies do not overlap.
    if (Status status = memory_.copyRows(staging_, bytes, s, bytes, bytes, 1);
        status.failed())
      return status;
    s = staging_;
  }
  return memory_.copyRows(d, bytes, s, bytes, bytes, 1);
}

Status PreparedCollective::stagedSource(const unsigned char *&from) {
  from = src_;
  if (!overlaps(src_, srcBytes_, dst_, dstBytes_))
    return Status::success();
  from = staging_;
  return move(staging_, src_, srcBytes_);
}

Status PreparedCollective::pack(const unsigned char *whole,
                                unsigned char *block, uint64_t outer,
                                uint64_t extent, uint64_t inner,
                                uint64_t offset, uint64_t size) {
  uint64_t rowBytes = size * inner * elementSize_;
  if (!rowBytes || !outer)
    return Status::success();
  return memory_.copyRows(block, rowBytes,
                          whole + offset * inner * elementSize_,
                          extent * inner * elementSize_, rowBytes, outer);
}

Status PreparedCollective::unpack(unsigned char *whole,
                                  const unsigned char *block, uint64_t outer,
                                  uint64_t extent, uint64_t inner,
                                  uint64_t offset, uint64_t size) {
  uint64_t rowBytes = size * inner * elementSize_;
  if (!rowBytes || !outer)
    return Status::success();
  return memory_.copyRows(whole + offset * inner * elementSize_,
                          extent * inner * elementSize_, block, rowBytes,
                          rowBytes, outer);
}

Status PreparedCollective::runLocal() {
  switch (kind_) {
  case CollectiveKind::ToPartial:
    if (layout_.member != 0) {
      unsigned char identity[8];
      fillIdentity(dtype_, reduce_, identity, 1);
      return memory_.fill(dst_, dstBytes_ / elementSize_, identity,
                          elementSize_);
    }
    break;
  case CollectiveKind::Slice:
    if (layout_.parts > 1) {
      const unsigned char *from = nullptr;
      if (Status status = stagedSource(from); status.failed())
        return status;
      uint64_t parts = static_cast<uint64_t>(layout_.parts);
      uint64_t member = static_cast<uint64_t>(layout_.member);
      return pack(from, dst_, outer_, extent_, inner_,
                  chunkOffset(extent_, parts, member),
                  chunkSize(extent_, parts, member));
    }
    break;
  default:
    break;
  }
  // The identity: source and destination have the same size.
  return move(dst_, src_, dstBytes_);
}

Status PreparedCollective::run() {
  if (!needsComm_)
    return runLocal();
  if (!comm_)
    return fail(what_, " runs over ",
                kind_ == CollectiveKind::Send || kind_ == CollectiveKind::Recv
                    ? std::string("two ranks")
                    : formatMessage(layout_.parts, " ranks"),
                "; the session has no communicator (run the plan under MPI: "
                "of-run -n N, or ofrt_session_create_with_comm)");
  uint64_t parts = static_cast<uint64_t>(layout_.parts);
  switch (kind_) {
  case CollectiveKind::AllReduce: {
    uint64_t count = dstBytes_ / elementSize_;
    if (src_ != dst_ && overlaps(src_, srcBytes_, dst_, dstBytes_)) {
      // Through staging: a device copy may not overlap itself.
      if (Status status = move(staging_, src_, srcBytes_); status.failed())
        return status;
      return comm_->allReduce(staging_, dst_, count, dtype_, reduce_, what_);
    }
    return comm_->allReduce(src_, dst_, count, dtype_, reduce_, what_);
  }
  case CollectiveKind::Broadcast:
    if (layout_.member == 0)
      if (Status status = move(dst_, src_, dstBytes_); status.failed())
        return status;
    return comm_->broadcast(dst_, dstBytes_, 0, what_);
  case CollectiveKind::AllGather: {
    const unsigned char *from = nullptr;
    if (Status status = stagedSource(from); status.failed())
      return status;
    if (outer_ <= 1)
      return comm_->allGatherV(from, dst_, blockBytes_, what_);
    if (Status status = comm_->allGatherV(from, scratch_, blockBytes_, what_);
        status.failed())
      return status;
    uint64_t start = 0;
    for (uint64_t j = 0; j < parts; ++j) {
      if (Status status = unpack(dst_, scratch_ + start, outer_, extent_,
                                 inner_, chunkOffset(extent_, parts, j),
                                 chunkSize(extent_, parts, j));
          status.failed())
        return status;
      start += blockBytes_[j];
    }
    return Status::success();
  }
  case CollectiveKind::ReduceScatter: {
    if (outer_ <= 1) {
      const unsigned char *from = nullptr;
      if (Status status = stagedSource(from); status.failed())
        return status;
      return comm_->reduceScatterV(from, dst_, counts_, dtype_, reduce_, what_);
    }
    uint64_t start = 0;
    for (uint64_t j = 0; j < parts; ++j) {
      if (Status status = pack(src_, scratch_ + start, outer_, extent_, inner_,
                               chunkOffset(extent_, parts, j),
                               chunkSize(extent_, parts, j));
          status.failed())
        return status;
      start += counts_[j] * elementSize_;
    }
    return comm_->reduceScatterV(scratch_, dst_, counts_, dtype_, reduce_,
                                 what_);
  }
  case CollectiveKind::AllToAll: {
    const unsigned char *sendFrom = src_;
    if (outer2_ > 1) {
      uint64_t start = 0;
      for (uint64_t j = 0; j < parts; ++j) {
        if (Status status = pack(src_, scratch_ + start, outer2_, extent2_,
                                 inner2_, chunkOffset(extent2_, parts, j),
                                 chunkSize(extent2_, parts, j));
            status.failed())
          return status;
        start += blockBytes_[j];
      }
      sendFrom = scratch_;
    }
    unsigned char *recvInto = outerDst_ > 1 ? recvScratch_ : dst_;
    if (sendFrom == src_ && recvInto == dst_)
      if (Status status = stagedSource(sendFrom); status.failed())
        return status;
    if (Status status = comm_->allToAllV(sendFrom, blockBytes_, recvInto,
                                         recvBlockBytes_, what_);
        status.failed())
      return status;
    if (outerDst_ > 1) {
      uint64_t start = 0;
      for (uint64_t j = 0; j < parts; ++j) {
        if (Status status = unpack(
                dst_, recvScratch_ + start, outerDst_, extent_, innerDst_,
                chunkOffset(extent_, parts, j), chunkSize(extent_, parts, j));
            status.failed())
          return status;
        start += recvBlockBytes_[j];
      }
    }
    return Status::success();
  }
  case CollectiveKind::Send:
    return comm_->send(src_, srcBytes_, peer_, kPlanMessageTag, what_);
  case CollectiveKind::Recv:
    return comm_->recv(dst_, dstBytes_, peer_, kPlanMessageTag, what_);
  case CollectiveKind::Slice:
  case CollectiveKind::ToPartial:
    return runLocal();
  }
  return fail(what_, ": unknown collective kind");
}

} // namespace of::rt
