//===- NcclCommunicator.cpp - Collectives on GPU buffers through NCCL -----===//
//
// See NcclCommunicator.h. nccl.h is compiled against for its types and
// constants only; the library is loaded with dlopen into a table of
// functions (libnccl.so.2, or $OF_NCCL_LIBRARY).
//
//===----------------------------------------------------------------------===//

#include "Comm/NcclCommunicator.h"

#include "Comm/Distribution.h"
#include "Plan/DynamicLibrary.h"
#include "Plan/PlanFile.h"

#ifndef OF_HAVE_NCCL_HEADERS

namespace of::rt {

constexpr const char *kNoNcclHeader =
    "collectives on the GPU need NCCL, and this libofrt was built without "
    "its header (nccl.h); rebuild it where NCCL is installed";

Status createNcclCommunicator(Communicator *, void *const *,
                              std::unique_ptr<DeviceCommunicator> &) {
  return Status::failure(kNoNcclHeader);
}

Status checkNccl(const std::string *&) {
  return Status::failure(kNoNcclHeader);
}

} // namespace of::rt

#else

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace of::plan;

namespace of::rt {

namespace {

#define OF_NCCL_FUNCTIONS(X)                                                   \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRankConfig)                                                    \
  X(ncclCommFinalize)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclGetErrorString)                                                        \
  X(ncclGetLastError)                                                          \
  X(ncclAllReduce)                                                             \
  X(ncclBroadcast)                                                             \
  X(ncclReduce)                                                                \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclSend)                                                                  \
  X(ncclRecv)                                                                  \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)

struct Nccl {
  OF_LIBRARY_TABLE(OF_NCCL_FUNCTIONS)
};

LibrarySource ncclSource() {
  return {"NCCL", "OF_NCCL_LIBRARY", toolkitCandidates("libnccl.so.2"),
          "collectives on the GPU need NCCL, which cannot be loaded "
          "(libnccl.so.2; $OF_NCCL_LIBRARY names another):",
          "OF needs NCCL 2.18 or later"};
}

/// NCCL, loaded once by the first group made.
Status loadNccl(const Nccl *&out) { return loadLibrary(ncclSource, out); }

ncclDataType_t ncclTypeOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I8:
    return ncclInt8;
  case DType::I1:
    return ncclUint8;
  }
  return ncclUint8;
}

class NcclCommunicator final : public DeviceCommunicator {
public:
  /// The communicator of `worldRanks` (this rank at `rank`), bootstrapped
  /// by `bootstrap` (the MPI communicator of the same ranks; null for one
  /// rank). `world` is the job's NCCL communicator (null: this one).
  NcclCommunicator(Communicator *bootstrap, std::vector<int> worldRanks,
                   int rank, void *const *stream, NcclCommunicator *world)
      : bootstrap_(bootstrap), worldRanks_(std::move(worldRanks)), rank_(rank),
        stream_(stream), world_(world ? world : this),
        timeout_(bootstrap ? bootstrap->timeout()
                           : commTimeoutFromEnvironment()) {}
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(worldRanks_.size()); }
  const std::vector<int> &worldRanks() const override { return worldRanks_; }

  Status subGroup(const std::vector<int> &members, Communicator *&out,
                  const std::string &what) override;
  Status allReduce(const void *src, void *dst, uint64_t count, DType dtype,
                   ReduceOp op, const std::string &what) override;
  Status allGatherV(const void *src, void *dst,
                    const std::vector<uint64_t> &bytes,
                    const std::string &what) override;
  Status reduceScatterV(const void *src, void *dst,
                        const std::vector<uint64_t> &counts, DType dtype,
                        ReduceOp op, const std::string &what) override;
  Status allToAllV(const void *src, const std::vector<uint64_t> &sendBytes,
                   void *dst, const std::vector<uint64_t> &recvBytes,
                   const std::string &what) override;
  Status broadcast(void *data, uint64_t bytes, int root,
                   const std::string &what) override;
  Status send(const void *data, uint64_t bytes, int peer, int tag,
              const std::string &what) override;
  Status recv(void *data, uint64_t bytes, int peer, int tag,
              const std::string &what) override;
  Status barrier(const std::string &what) override;

  [[noreturn]] void abort(int code) override {
    world_->abortAll();
    if (world_->bootstrap_)
      world_->bootstrap_->abort(code);
    ::_exit(code);
  }
  double timeout() const override { return timeout_; }
  void setTimeout(double seconds) override { timeout_ = seconds; }

  Status checkAsyncErrors() override;
  void abortAll() override;

  /// Joins this group's NCCL communicator (once; collective over it).
  Status ready(const std::string &what);

private:
  /// Aborts this communicator alone (it may not be in the world's list).
  void abortThis() {
    if (comm_ && !aborted_)
      nccl_->ncclCommAbort(comm_);
    aborted_ = true;
  }
  /// Waits out an operation NCCL left in progress, under the deadline.
  Status settle(ncclResult_t result, const std::string &what);
  /// NCCL's description of `result`, with its last error.
  std::string describe(ncclResult_t result) const;
  std::string ranksText() const { return formatRanks(worldRanks_); }
  cudaStream_t stream() const { return static_cast<cudaStream_t>(*stream_); }
  /// Runs `body` (NCCL calls) as one NCCL group.
  template <typename Body> Status group(const std::string &what, Body body);

  const Nccl *nccl_ = nullptr;
  Communicator *bootstrap_;
  std::vector<int> worldRanks_;
  int rank_;
  void *const *stream_;
  NcclCommunicator *world_;
  double timeout_;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  // The world's: every group made, by its members.
  std::map<std::vector<int>, std::unique_ptr<NcclCommunicator>> groups_;
};

NcclCommunicator::~NcclCommunicator() {
  groups_.clear();
  if (!comm_ || aborted_)
    return;
  // Finalizing flushes outstanding work and waits for the peers to
  // finalize too; a communicator that does not finish soon (a peer has
  // gone) is aborted instead.
  ncclResult_t state = nccl_->ncclCommFinalize(comm_);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(std::min(timeout_, 10.0));
  while (state == ncclInProgress &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (nccl_->ncclCommGetAsyncError(comm_, &state) != ncclSuccess)
      break;
  }
  if (state == ncclSuccess)
    nccl_->ncclCommDestroy(comm_);
  else
    nccl_->ncclCommAbort(comm_);
}

std::string NcclCommunicator::describe(ncclResult_t result) const {
  std::string text = formatMessage("NCCL ", nccl_->ncclGetErrorString(result));
  if (const char *last = nccl_->ncclGetLastError(comm_); last && *last)
    text += formatMessage(" (", last, ")");
  return text;
}

Status NcclCommunicator::settle(ncclResult_t result, const std::string &what) {
  if (result == ncclSuccess)
    return Status::success();
  if (result != ncclInProgress)
    return fail(what, ": ", describe(result));
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeout_);
  for (;;) {
    ncclResult_t state = ncclInProgress;
    if (ncclResult_t queried = nccl_->ncclCommGetAsyncError(comm_, &state);
        queried != ncclSuccess)
      state = queried;
    if (state == ncclSuccess)
      return Status::success();
    if (state != ncclInProgress) {
      Status failure =
          fail(what, ": ", describe(state), "; the NCCL communicators of rank ",
               world_->worldRank(), " are aborted");
      abortThis();
      world_->abortAll();
      return failure;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abortThis();
      world_->abortAll();
      return fail(what, ": rank ", worldRank(), " waited ", timeout_,
                  " s for ranks ", ranksText(),
                  " (NCCL left it in progress); the NCCL communicators of "
                  "this rank are aborted (OF_COMM_TIMEOUT sets the deadline)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Status NcclCommunicator::ready(const std::string &what) {
  if (comm_ && !aborted_)
    return Status::success();
  std::string label = formatMessage("joining the NCCL communicator of ranks ",
                                    ranksText(), " for ", what);
  if (aborted_)
    return fail(label, ": this rank's NCCL communicators were aborted");
  if (!nccl_)
    if (Status status = loadNccl(nccl_); status.failed())
      return fail(label, ": ", status.message());
  ncclUniqueId id{};
  if (rank_ == 0)
    if (ncclResult_t result = nccl_->ncclGetUniqueId(&id);
        result != ncclSuccess)
      return fail(label,
                  ": ncclGetUniqueId: ", nccl_->ncclGetErrorString(result));
  if (size() > 1) {
    if (!bootstrap_)
      return fail(label, ": no communicator to share NCCL's id with");
    if (Status status = bootstrap_->broadcast(&id, sizeof(id), 0, label);
        status.failed())
      return status;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result =
      nccl_->ncclCommInitRankConfig(&comm_, size(), id, rank_, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    comm_ = nullptr;
    return fail(label, ": ", nccl_->ncclGetErrorString(result));
  }
  return settle(result, label);
}

template <typename Body>
Status NcclCommunicator::group(const std::string &what, Body body) {
  if (ncclResult_t started = nccl_->ncclGroupStart(); started != ncclSuccess)
    return fail(what, ": ncclGroupStart: ", describe(started));
  ncclResult_t result = body();
  ncclResult_t ended = nccl_->ncclGroupEnd();
  if (result != ncclSuccess && result != ncclInProgress)
    return fail(what, ": ", describe(result));
  return settle(ended, what);
}

Status NcclCommunicator::subGroup(const std::vector<int> &members,
                                  Communicator *&out, const std::string &what) {
  if (world_ != this)
    return world_->subGroup(members, out, what);
  if (members == worldRanks_) {
    if (Status status = ready(what); status.failed())
      return status;
    out = this;
    return Status::success();
  }
  if (auto found = groups_.find(members); found != groups_.end()) {
    out = found->second.get();
    return Status::success();
  }
  Communicator *hostGroup = nullptr;
  if (!bootstrap_)
    return fail(what, ": a one-rank job has no group of ranks ",
                formatRanks(members));
  if (Status status = bootstrap_->subGroup(members, hostGroup, what);
      status.failed())
    return status;
  if (!nccl_)
    if (Status status = loadNccl(nccl_); status.failed())
      return fail(what, ": ", status.message());
  auto made = std::make_unique<NcclCommunicator>(
      hostGroup, members, hostGroup->rank(), stream_, this);
  made->nccl_ = nccl_;
  made->timeout_ = timeout_;
  if (Status status = made->ready(what); status.failed())
    return status;
  out = made.get();
  groups_[members] = std::move(made);
  return Status::success();
}

Status NcclCommunicator::allReduce(const void *src, void *dst, uint64_t count,
                                   DType dtype, ReduceOp op,
                                   const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  return settle(nccl_->ncclAllReduce(src, dst, count, ncclTypeOf(dtype),
                                     op == ReduceOp::Max ? ncclMax : ncclSum,
                                     comm_, stream()),
                what);
}

Status NcclCommunicator::allGatherV(const void *src, void *dst,
                                    const std::vector<uint64_t> &bytes,
                                    const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  bool even = std::all_of(bytes.begin(), bytes.end(),
                          [&](uint64_t b) { return b == bytes[0]; });
  if (even)
    return settle(
        nccl_->ncclAllGather(src, dst, bytes[0], ncclUint8, comm_, stream()),
        what);
  // Uneven blocks: member j broadcasts its block into its place.
  return group(what, [&] {
    auto *out = static_cast<unsigned char *>(dst);
    uint64_t offset = 0;
    for (int j = 0; j < size(); ++j) {
      if (bytes[j])
        if (ncclResult_t result = nccl_->ncclBroadcast(
                src, out + offset, bytes[j], ncclUint8, j, comm_, stream());
            result != ncclSuccess && result != ncclInProgress)
          return result;
      offset += bytes[j];
    }
    return ncclSuccess;
  });
}

Status NcclCommunicator::reduceScatterV(const void *src, void *dst,
                                        const std::vector<uint64_t> &counts,
                                        DType dtype, ReduceOp op,
                                        const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  ncclDataType_t type = ncclTypeOf(dtype);
  ncclRedOp_t reduce = op == ReduceOp::Max ? ncclMax : ncclSum;
  bool even = std::all_of(counts.begin(), counts.end(),
                          [&](uint64_t c) { return c == counts[0]; });
  if (even)
    return settle(nccl_->ncclReduceScatter(src, dst, counts[0], type, reduce,
                                           comm_, stream()),
                  what);
  // Uneven blocks: block j is reduced onto member j.
  return group(what, [&] {
    const auto *in = static_cast<const unsigned char *>(src);
    uint64_t offset = 0;
    for (int j = 0; j < size(); ++j) {
      if (counts[j])
        if (ncclResult_t result =
                nccl_->ncclReduce(in + offset * dtypeSize(dtype), dst,
                                  counts[j], type, reduce, j, comm_, stream());
            result != ncclSuccess && result != ncclInProgress)
          return result;
      offset += counts[j];
    }
    return ncclSuccess;
  });
}

Status NcclCommunicator::allToAllV(const void *src,
                                   const std::vector<uint64_t> &sendBytes,
                                   void *dst,
                                   const std::vector<uint64_t> &recvBytes,
                                   const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  return group(what, [&] {
    const auto *in = static_cast<const unsigned char *>(src);
    auto *out = static_cast<unsigned char *>(dst);
    uint64_t sendOffset = 0, recvOffset = 0;
    for (int j = 0; j < size(); ++j) {
      if (sendBytes[j])
        if (ncclResult_t result = nccl_->ncclSend(
                in + sendOffset, sendBytes[j], ncclUint8, j, comm_, stream());
            result != ncclSuccess && result != ncclInProgress)
          return result;
      if (recvBytes[j])
        if (ncclResult_t result = nccl_->ncclRecv(
                out + recvOffset, recvBytes[j], ncclUint8, j, comm_, stream());
            result != ncclSuccess && result != ncclInProgress)
          return result;
      sendOffset += sendBytes[j];
      recvOffset += recvBytes[j];
    }
    return ncclSuccess;
  });
}

Status NcclCommunicator::broadcast(void *data, uint64_t bytes, int root,
                                   const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  return settle(
      nccl_->ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream()),
      what);
}

Status NcclCommunicator::send(const void *data, uint64_t bytes, int peer, int,
                              const std::string &what) {
  // Messages between two ranks arrive in the order they were sent, which
  // is what the tag promises.
  if (Status status = ready(what); status.failed())
    return status;
  return settle(nccl_->ncclSend(data, bytes, ncclUint8, peer, comm_, stream()),
                what);
}

Status NcclCommunicator::recv(void *data, uint64_t bytes, int peer, int,
                              const std::string &what) {
  if (Status status = ready(what); status.failed())
    return status;
  return settle(nccl_->ncclRecv(data, bytes, ncclUint8, peer, comm_, stream()),
                what);
}

Status NcclCommunicator::barrier(const std::string &what) {
  // The ranks meet on the host; the device work before it is the caller's
  // to wait for.
  return bootstrap_ ? bootstrap_->barrier(what) : Status::success();
}

Status NcclCommunicator::checkAsyncErrors() {
  if (world_ != this)
    return world_->checkAsyncErrors();
  auto check = [&](NcclCommunicator &c) -> Status {
    if (!c.comm_ || c.aborted_)
      return Status::success();
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t queried = c.nccl_->ncclCommGetAsyncError(c.comm_, &state);
        queried != ncclSuccess)
      state = queried;
    if (state == ncclSuccess || state == ncclInProgress)
      return Status::success();
    return fail("the NCCL communicator of ranks ", c.ranksText(), ": ",
                c.describe(state));
  };
  if (Status status = check(*this); status.failed())
    return status;
  for (auto &[members, made] : groups_)
    if (Status status = check(*made); status.failed())
      return status;
  return Status::success();
}

void NcclCommunicator::abortAll() {
  if (world_ != this)
    return world_->abortAll();
  for (auto &[members, made] : groups_)
    made->abortThis();
  abortThis();
}

} // namespace

Status checkNccl(const std::string *&path) {
  return loadAndLocate(loadNccl, path);
}

Status createNcclCommunicator(Communicator *bootstrap, void *const *stream,
                              std::unique_ptr<DeviceCommunicator> &out) {
  std::vector<int> ranks = {0};
  int rank = 0;
  if (bootstrap) {
    ranks = bootstrap->worldRanks();
    rank = bootstrap->rank();
  }
  auto world = std::make_unique<NcclCommunicator>(bootstrap, std::move(ranks),
                                                  rank, stream, nullptr);
  if (Status status = world->ready("the job's NCCL communicator");
      status.failed())
    return status;
  out = std::move(world);
  return Status::success();
}

} // namespace of::rt

#endif // OF_HAVE_NCCL_HEADERS
