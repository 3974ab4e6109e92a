//===- MpiCommunicator.cpp - The communicator over Open MPI, loaded late --===//
//
// libofrt does not link libmpi: a plan of one rank runs where MPI is not
// installed. `createMpiCommunicator` loads Open MPI's libmpi with dlopen
// (RTLD_GLOBAL, as Open MPI's plugins expect), resolves the functions it
// uses into a table, and takes Open MPI's predefined handles
// (MPI_COMM_WORLD is the address of `ompi_mpi_comm_world`, ...) with dlsym.
// <mpi.h> is only compiled against for its types and constants; no code
// here names an MPI symbol directly (the libofrt-deps test checks that the
// library has no undefined MPI symbol and no NEEDED libmpi).
//
// Every wait is non-blocking MPI (MPI_I* then MPI_Testall polling: spin,
// then yield, then short sleeps) under the communicator's deadline. The few
// MPI calls that have no non-blocking form (MPI_Init, MPI_Comm_dup,
// MPI_Comm_create_group, MPI_Finalize) run under an alarm that ends the
// process with a message when the deadline passes; a sub-group is only made
// after a non-blocking handshake among its members, so that call does not
// wait for a dead rank in practice.
//
// Collectives run on a duplicate of MPI_COMM_WORLD and on sub-communicators
// made from it with MPI_Comm_create_group (collective over the members
// only), cached by their member list. Errors return (MPI_ERRORS_RETURN) and
// become messages.
//
//===----------------------------------------------------------------------===//

#include "Comm/Communicator.h"
#include "Plan/DynamicLibrary.h"

#include "Plan/PlanFile.h"
#include "CPU/Reduce.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <sched.h>
#include <thread>
#include <time.h>
#include <unistd.h>

using namespace of::plan;

namespace of::rt {

double commTimeoutFromEnvironment() {
  const char *text = std::getenv("OF_COMM_TIMEOUT");
  if (!text || !*text)
    return kDefaultCommTimeout;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (*end || !(value > 0) || !std::isfinite(value))
    return kDefaultCommTimeout;
  return value;
}

bool launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char *value = std::getenv(name); value && *value)
      return true;
  return false;
}

namespace {

//===----------------------------------------------------------------------===//
// The MPI function table
//===----------------------------------------------------------------------===//

#define OF_MPI_FUNCTIONS(X)                                                    \
  X(Init_thread)                                                               \
  X(Initialized)                                                               \
  X(Finalized)                                                                 \
  X(Finalize)                                                                  \
  X(Abort)                                                                     \
  X(Comm_rank)                                                                 \
  X(Comm_size)                                                                 \
  X(Comm_dup)                                                                  \
  X(Comm_group)                                                                \
  X(Comm_create_group)                                                         \
  X(Comm_free)                                                                 \
  X(Comm_set_errhandler)                                                       \
  X(Group_incl)                                                                \
  X(Group_free)                                                                \
  X(Error_string)                                                              \
  X(Op_create)                                                                 \
  X(Op_free)                                                                   \
  X(Isend)                                                                     \
  X(Irecv)                                                                     \
  X(Testall)                                                                   \
  X(Iallreduce)                                                                \
  X(Iallgatherv)                                                               \
  X(Ireduce_scatter)                                                           \
  X(Ialltoallv)                                                                \
  X(Ibcast)                                                                    \
  X(Ibarrier)

#define OF_MPI_HANDLES(X)                                                      \
  X(MPI_Comm, commWorld, ompi_mpi_comm_world)                                  \
  X(MPI_Comm, commNull, ompi_mpi_comm_null)                                    \
  X(MPI_Datatype, byteType, ompi_mpi_byte)                                     \
  X(MPI_Datatype, floatType, ompi_mpi_float)                                   \
  X(MPI_Datatype, doubleType, ompi_mpi_double)                                 \
  X(MPI_Datatype, int64Type, ompi_mpi_int64_t)                                 \
  X(MPI_Datatype, int32Type, ompi_mpi_int32_t)                                 \
  X(MPI_Datatype, int8Type, ompi_mpi_int8_t)                                   \
  X(MPI_Datatype, uint16Type, ompi_mpi_uint16_t)                               \
  X(MPI_Op, sumOp, ompi_mpi_op_sum)                                            \
  X(MPI_Op, maxOp, ompi_mpi_op_max)                                            \
  X(MPI_Errhandler, errorsReturn, ompi_mpi_errors_return)

struct MpiApi {
  void *library = nullptr;
  std::string libraryName;
#define OF_DECLARE_FUNCTION(name) decltype(&MPI_##name) name = nullptr;
  OF_MPI_FUNCTIONS(OF_DECLARE_FUNCTION)
#undef OF_DECLARE_FUNCTION
#define OF_DECLARE_HANDLE(type, field, symbol) type field{};
  OF_MPI_HANDLES(OF_DECLARE_HANDLE)
#undef OF_DECLARE_HANDLE
  // User operations for the 16-bit floats (made after MPI_Init).
  MPI_Op halfSum{}, halfMax{}, bfloatSum{}, bfloatMax{};
  bool initialised = false;
};

MpiApi &mpi() {
  static MpiApi api;
  return api;
}

Status loadMpi(MpiApi &api) {
  if (api.library)
    return Status::success();
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("OF_MPI_LIBRARY"); path && *path) {
    candidates.push_back(path);
  } else {
    candidates.push_back("libmpi.so.40");
    candidates.push_back("libmpi.so");
  }
  std::string errors;
  for (const std::string &name : candidates) {
    // Open MPI's components are plugins that expect libmpi's symbols to be
    // global.
    if (void *library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      api.library = library;
      api.libraryName = name;
      break;
    }
    const char *error = ::dlerror();
    errors += formatMessage("\n  ", name, ": ", error ? error : "not found");
  }
  if (!api.library)
    return fail("cannot load the MPI library (Open MPI's libmpi.so.40; on "
                "Debian the package openmpi-bin / libopenmpi3):",
                errors);
#define OF_RESOLVE_FUNCTION(name)                                              \
  api.name = reinterpret_cast<decltype(api.name)>(                             \
      ::dlsym(api.library, "MPI_" #name));                                     \
  if (!api.name)                                                               \
    return fail(api.libraryName, " has no function MPI_" #name,                \
                "; OF needs Open MPI 3 or later");
  OF_MPI_FUNCTIONS(OF_RESOLVE_FUNCTION)
#undef OF_RESOLVE_FUNCTION
#define OF_RESOLVE_HANDLE(type, field, symbol)                                 \
  if (void *address = ::dlsym(api.library, #symbol))                           \
    api.field = reinterpret_cast<type>(address);                               \
  else                                                                         \
    return fail(api.libraryName, " has no symbol " #symbol                     \
                                 "; OF's MPI backend needs Open MPI (it uses " \
                                 "Open MPI's handles)");
  OF_MPI_HANDLES(OF_RESOLVE_HANDLE)
#undef OF_RESOLVE_HANDLE
  return Status::success();
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int length = 0;
  if (mpi().Error_string &&
      mpi().Error_string(code, text, &length) == MPI_SUCCESS)
    return std::string(text, static_cast<size_t>(length));
  return formatMessage("MPI error ", code);
}

std::string formatSeconds(double seconds) {
  return formatMessage(seconds, " s");
}

//===----------------------------------------------------------------------===//
// A deadline for the blocking calls
//===----------------------------------------------------------------------===//

// The message the alarm handler writes (async-signal-safe: a fixed buffer).
char alarmMessage[512];

extern "C" void onBlockingCallAlarm(int) {
  ssize_t ignored = ::write(2, alarmMessage, std::strlen(alarmMessage));
  (void)ignored;
  ::_exit(1);
}

/// Arms an alarm for the lifetime of a blocking MPI call: past `seconds`
/// the process writes `message` and exits 1, which makes the launcher end
/// the job.
class BlockingCallDeadline {
public:
  BlockingCallDeadline(double seconds, const std::string &message) {
    std::snprintf(alarmMessage, sizeof alarmMessage, "%s\n", message.c_str());
    struct sigaction action {};
    action.sa_handler = onBlockingCallAlarm;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGALRM, &action, &previous_);
    ::alarm(static_cast<unsigned>(std::ceil(std::max(1.0, seconds))));
  }
  ~BlockingCallDeadline() {
    ::alarm(0);
    ::sigaction(SIGALRM, &previous_, nullptr);
  }

private:
  struct sigaction previous_ {};
};

//===----------------------------------------------------------------------===//
// Test faults
//===----------------------------------------------------------------------===//

/// OF_TEST_FAULT=ACTION:RANK[:N] makes world rank RANK misbehave at its
/// N-th communication (the first by default): "kill" (SIGKILL), "stop"
/// (SIGSTOP), "hang" (sleeps forever), "exit" (_exit(3) without finalising)
/// or "error" (the operation fails). With OF_TEST_FAULT_PIDFILE, the rank
/// first writes its process id there (so that a test can kill it from
/// outside). For the fault-tolerance tests only.
Status injectFault(int worldRank, const std::string &what) {
  static int count = 0;
  const char *spec = std::getenv("OF_TEST_FAULT");
  if (!spec || !*spec)
    return Status::success();
  std::string text = spec;
  size_t colon = text.find(':');
  if (colon == std::string::npos ||
      std::atoi(text.c_str() + colon + 1) != worldRank)
    return Status::success();
  size_t second = text.find(':', colon + 1);
  int at =
      second == std::string::npos ? 1 : std::atoi(text.c_str() + second + 1);
  if (++count != at)
    return Status::success();
  std::string action = text.substr(0, colon);
  if (const char *pidFile = std::getenv("OF_TEST_FAULT_PIDFILE");
      pidFile && *pidFile) {
    std::string temporary = std::string(pidFile) + ".tmp";
    if (FILE *file = std::fopen(temporary.c_str(), "w")) {
      std::fprintf(file, "%ld\n", static_cast<long>(::getpid()));
      std::fclose(file);
      std::rename(temporary.c_str(), pidFile);
    }
  }
  if (action == "kill")
    std::raise(SIGKILL);
  if (action == "stop")
    std::raise(SIGSTOP);
  if (action == "exit")
    ::_exit(3);
  if (action == "hang")
    for (;;)
      ::pause();
  if (action == "error")
    return fail(what, ": the test fault OF_TEST_FAULT=", text,
                " failed this rank");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

constexpr int kHandshakeTag = 0x4f46;   // "OF"
constexpr int kCreateGroupTag = 0x4f47; // MPI_Comm_create_group's tag
constexpr uint64_t kMaxCount = 1ull << 30;

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, std::vector<int> worldRanks, int rank,
                  MpiCommunicator *world, double timeout)
      : comm_(comm), worldRanks_(std::move(worldRanks)), rank_(rank),
        world_(world ? world : this), timeout_(timeout) {}

  ~MpiCommunicator() override {
    groups_.clear();
    if (!broken() && mpi().initialised && comm_ != mpi().commNull) {
      int finalised = 0;
      mpi().Finalized(&finalised);
      if (!finalised)
        mpi().Comm_free(&comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(worldRanks_.size()); }
  const std::vector<int> &worldRanks() const override { return worldRanks_; }
  double timeout() const override { return world_->timeout_; }
  void setTimeout(double seconds) override {
    if (seconds > 0 && std::isfinite(seconds))
      world_->timeout_ = seconds;
  }

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
    if (mpi().initialised)
      mpi().Abort(world_->comm_, code);
    ::_exit(code);
  }

private:
  Status pointToPoint(void *data, uint64_t bytes, int peer, int tag,
                      const std::string &what, bool sending);
  bool broken() const { return world_->broken_; }
  /// Checks the communicator is usable and runs the test fault hook.
  Status begin(const std::string &what) {
    if (broken())
      return fail(what, ": the communicator is unusable after an earlier "
                        "communication failure");
    return injectFault(worldRank(), what);
  }
  Status checkCall(int code, const char *call, const std::string &what) {
    if (code == MPI_SUCCESS)
      return Status::success();
    world_->broken_ = true;
    return fail(what, ": ", call, " failed: ", mpiError(code));
  }
  /// Waits for `count` requests under the deadline, naming `waitingFor`
  /// (world ranks) when it passes.
  Status wait(MPI_Request *requests, int count, const std::string &what,
              const std::vector<int> &waitingFor);
  Status wait(MPI_Request *requests, int count, const std::string &what) {
    std::vector<int> others;
    for (int member = 0; member < size(); ++member)
      if (member != rank_)
        others.push_back(worldRanks_[member]);
    return wait(requests, count, what, others);
  }
  Status reduceType(DType dtype, ReduceOp op, MPI_Datatype &type,
                    MPI_Op &mpiOp, const std::string &what) const;

  MPI_Comm comm_;
  std::vector<int> worldRanks_;
  int rank_;
  MpiCommunicator *world_;
  double timeout_;
  bool broken_ = false;
  /// On the world communicator: the sub-groups made so far.
  std::map<std::vector<int>, std::unique_ptr<MpiCommunicator>> groups_;
};

Status MpiCommunicator::wait(MPI_Request *requests, int count,
                             const std::string &what,
                             const std::vector<int> &waitingFor) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  double limit = timeout();
  auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(limit));
  for (uint64_t polls = 0;; ++polls) {
    int done = 0;
    if (Status status = checkCall(
            mpi().Testall(count, requests, &done, MPI_STATUSES_IGNORE),
            "MPI_Testall", what);
        status.failed())
      return status;
    if (done)
      return Status::success();
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      world_->broken_ = true;
      std::string ranks;
      for (size_t i = 0; i < waitingFor.size(); ++i)
        ranks += (i ? ", " : "") + std::to_string(waitingFor[i]);
      return fail(what, " timed out after ", formatSeconds(limit),
                  " waiting for rank", waitingFor.size() == 1 ? " " : "s ",
                  ranks, "; a rank failed or disappeared");
    }
    // MPI makes progress (moves the fragments of a large message, advances
    // a non-blocking collective's schedule) only inside MPI_Testall, so
    // keep polling while a collective may still be moving data: spin, then
    // yield the core between polls (ranks may share cores) for the first
    // 100 ms, then sleep between polls, 100 us growing to 1 ms after a
    // second: a rank that waits for a dead one does not burn a core for
    // the whole timeout.
    auto waited = now - start;
    if (polls < 64)
      continue;
    if (waited < std::chrono::milliseconds(100))
      sched_yield();
    else
      std::this_thread::sleep_for(waited < std::chrono::seconds(1)
                                      ? std::chrono::microseconds(100)
                                      : std::chrono::microseconds(1000));
  }
}

Status MpiCommunicator::reduceType(DType dtype, ReduceOp op,
                                   MPI_Datatype &type, MPI_Op &mpiOp,
                                   const std::string &what) const {
  MpiApi &api = mpi();
  bool sum = op == ReduceOp::Sum;
  mpiOp = sum ? api.sumOp : api.maxOp;
  switch (dtype) {
  case DType::F32:
    type = api.floatType;
    return Status::success();
  case DType::F64:
    type = api.doubleType;
    return Status::success();
  case DType::I64:
    type = api.int64Type;
    return Status::success();
  case DType::I32:
    type = api.int32Type;
    return Status::success();
  case DType::I8:
    type = api.int8Type;
    return Status::success();
  case DType::F16:
    type = api.uint16Type;
    mpiOp = sum ? api.halfSum : api.halfMax;
    return Status::success();
  case DType::BF16:
    type = api.uint16Type;
    mpiOp = sum ? api.bfloatSum : api.bfloatMax;
    return Status::success();
  case DType::I1:
    break;
  }
  return fail(what, ": cannot reduce ", dtypeName(dtype), " values");
}

/// The widest of 8, 4, 2, 1 bytes that divides every count, and its MPI
/// type: data that is only moved travels in the largest units, which keeps
/// counts within MPI's int for larger buffers.
size_t unitOf(const std::vector<uint64_t> &bytes, MPI_Datatype &type) {
  uint64_t all = 0;
  for (uint64_t count : bytes)
    all |= count;
  MpiApi &api = mpi();
  if (all % 8 == 0) {
    type = api.int64Type;
    return 8;
  }
  if (all % 4 == 0) {
    type = api.int32Type;
    return 4;
  }
  if (all % 2 == 0) {
    type = api.uint16Type;
    return 2;
  }
  type = api.byteType;
  return 1;
}

/// Counts and displacements in units, or false when one exceeds an int.
bool countsOf(const std::vector<uint64_t> &bytes, size_t unit,
              std::vector<int> &counts, std::vector<int> &displacements) {
  counts.clear();
  displacements.clear();
  uint64_t offset = 0;
  for (uint64_t count : bytes) {
    if (count / unit > INT_MAX || offset / unit > INT_MAX)
      return false;
    counts.push_back(static_cast<int>(count / unit));
    displacements.push_back(static_cast<int>(offset / unit));
    offset += count;
  }
  return true;
}

Status MpiCommunicator::allReduce(const void *src, void *dst, uint64_t count,
                                  DType dtype, ReduceOp op,
                                  const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Datatype type;
  MPI_Op mpiOp;
  if (Status status = reduceType(dtype, op, type, mpiOp, what);
      status.failed())
    return status;
  size_t elementSize = dtypeSize(dtype);
  bool inPlace = src == dst;
  for (uint64_t done = 0; done < count || (count == 0 && done == 0);) {
    uint64_t piece = std::min(count - done, kMaxCount);
    const void *from =
        inPlace ? MPI_IN_PLACE
                : static_cast<const unsigned char *>(src) + done * elementSize;
    void *to = static_cast<unsigned char *>(dst) + done * elementSize;
    MPI_Request request;
    if (Status status = checkCall(mpi().Iallreduce(from, to,
                                                   static_cast<int>(piece),
                                                   type, mpiOp, comm_,
                                                   &request),
                                  "MPI_Iallreduce", what);
        status.failed())
      return status;
    if (Status status = wait(&request, 1, what); status.failed())
      return status;
    done += piece;
    if (count == 0)
      break;
  }
  return Status::success();
}

Status MpiCommunicator::allGatherV(const void *src, void *dst,
                                   const std::vector<uint64_t> &bytes,
                                   const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Datatype type;
  size_t unit = unitOf(bytes, type);
  std::vector<int> counts, displacements;
  if (!countsOf(bytes, unit, counts, displacements))
    return fail(what, ": the gathered buffer exceeds what one MPI call moves");
  MPI_Request request;
  if (Status status = checkCall(
          mpi().Iallgatherv(src, counts[rank_], type, dst, counts.data(),
                            displacements.data(), type, comm_, &request),
          "MPI_Iallgatherv", what);
      status.failed())
    return status;
  return wait(&request, 1, what);
}

Status MpiCommunicator::reduceScatterV(const void *src, void *dst,
                                       const std::vector<uint64_t> &counts,
                                       DType dtype, ReduceOp op,
                                       const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Datatype type;
  MPI_Op mpiOp;
  if (Status status = reduceType(dtype, op, type, mpiOp, what);
      status.failed())
    return status;
  std::vector<int> intCounts;
  uint64_t total = 0;
  for (uint64_t count : counts) {
    total += count;
    if (count > INT_MAX || total > INT_MAX)
      return fail(what, ": the scattered buffer exceeds what one MPI call "
                        "reduces");
    intCounts.push_back(static_cast<int>(count));
  }
  MPI_Request request;
  if (Status status = checkCall(mpi().Ireduce_scatter(src, dst,
                                                      intCounts.data(), type,
                                                      mpiOp, comm_, &request),
                                "MPI_Ireduce_scatter", what);
      status.failed())
    return status;
  return wait(&request, 1, what);
}

Status MpiCommunicator::allToAllV(const void *src,
                                  const std::vector<uint64_t> &sendBytes,
                                  void *dst,
                                  const std::vector<uint64_t> &recvBytes,
                                  const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  std::vector<uint64_t> all = sendBytes;
  all.insert(all.end(), recvBytes.begin(), recvBytes.end());
  MPI_Datatype type;
  size_t unit = unitOf(all, type);
  std::vector<int> sendCounts, sendDisplacements, recvCounts,
      recvDisplacements;
  if (!countsOf(sendBytes, unit, sendCounts, sendDisplacements) ||
      !countsOf(recvBytes, unit, recvCounts, recvDisplacements))
    return fail(what, ": the exchanged buffer exceeds what one MPI call moves");
  MPI_Request request;
  if (Status status = checkCall(
          mpi().Ialltoallv(src, sendCounts.data(), sendDisplacements.data(),
                           type, dst, recvCounts.data(),
                           recvDisplacements.data(), type, comm_, &request),
          "MPI_Ialltoallv", what);
      status.failed())
    return status;
  return wait(&request, 1, what);
}

Status MpiCommunicator::broadcast(void *data, uint64_t bytes, int root,
                                  const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Datatype type;
  size_t unit = unitOf({bytes}, type);
  uint64_t units = bytes / unit;
  for (uint64_t done = 0; done < units;) {
    uint64_t piece = std::min(units - done, kMaxCount);
    MPI_Request request;
    if (Status status = checkCall(
            mpi().Ibcast(static_cast<unsigned char *>(data) + done * unit,
                         static_cast<int>(piece), type, root, comm_, &request),
            "MPI_Ibcast", what);
        status.failed())
      return status;
    // The root waits for every member, the others for the root.
    Status status = rank_ == root
                        ? wait(&request, 1, what)
                        : wait(&request, 1, what, {worldRanks_[root]});
    if (status.failed())
      return status;
    done += piece;
  }
  return Status::success();
}

Status MpiCommunicator::send(const void *data, uint64_t bytes, int peer,
                             int tag, const std::string &what) {
  return pointToPoint(const_cast<void *>(data), bytes, peer, tag, what,
                      /*sending=*/true);
}

Status MpiCommunicator::recv(void *data, uint64_t bytes, int peer, int tag,
                             const std::string &what) {
  return pointToPoint(data, bytes, peer, tag, what, /*sending=*/false);
}

/// One send or receive of `bytes`, in pieces of at most kMaxCount units
/// (MPI counts are ints), each waited for under the deadline.
Status MpiCommunicator::pointToPoint(void *data, uint64_t bytes, int peer,
                                     int tag, const std::string &what,
                                     bool sending) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Datatype type;
  size_t unit = unitOf({bytes}, type);
  uint64_t units = bytes / unit;
  for (uint64_t done = 0; done < units || (units == 0 && done == 0);) {
    uint64_t piece = std::min(units - done, kMaxCount);
    MPI_Request request;
    unsigned char *at = static_cast<unsigned char *>(data) + done * unit;
    int count = static_cast<int>(piece);
    if (Status status = checkCall(
            sending ? mpi().Isend(at, count, type, peer, tag, comm_, &request)
                    : mpi().Irecv(at, count, type, peer, tag, comm_, &request),
            sending ? "MPI_Isend" : "MPI_Irecv", what);
        status.failed())
      return status;
    if (Status status = wait(&request, 1, what, {worldRanks_[peer]});
        status.failed())
      return status;
    done += piece;
    if (units == 0)
      break;
  }
  return Status::success();
}

Status MpiCommunicator::barrier(const std::string &what) {
  if (Status status = begin(what); status.failed())
    return status;
  MPI_Request request;
  if (Status status =
          checkCall(mpi().Ibarrier(comm_, &request), "MPI_Ibarrier", what);
      status.failed())
    return status;
  return wait(&request, 1, what);
}

Status MpiCommunicator::subGroup(const std::vector<int> &members,
                                 Communicator *&out, const std::string &what) {
  if (world_ != this)
    return world_->subGroup(members, out, what);
  if (members == worldRanks_) {
    out = this;
    return Status::success();
  }
  if (auto found = groups_.find(members); found != groups_.end()) {
    out = found->second.get();
    return Status::success();
  }
  int position = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= size())
      return fail(what, ": the group names rank ", members[i],
                  ", but the job has ", size(), " ranks");
    if (members[i] == rank_)
      position = static_cast<int>(i);
  }
  if (position < 0)
    return fail(what, ": rank ", rank_, " is not in the group ",
                formatMessage("[", members.size(), " ranks]"));
  std::string label = formatMessage("setting up the communicator of ranks ");
  for (size_t i = 0; i < members.size(); ++i)
    label += (i ? ", " : "") + std::to_string(members[i]);
  label += " for " + what;
  if (Status status = begin(label); status.failed())
    return status;

  // Every member announces itself to every other, without blocking: past
  // the handshake all of them are in MPI_Comm_create_group.
  std::vector<MPI_Request> requests;
  std::vector<int> others;
  char token = 0, received[1];
  for (int member : members) {
    if (member == rank_)
      continue;
    others.push_back(member);
    requests.emplace_back();
    if (Status status = checkCall(mpi().Irecv(received, 0, mpi().byteType,
                                              member, kHandshakeTag, comm_,
                                              &requests.back()),
                                  "MPI_Irecv", label);
        status.failed())
      return status;
    requests.emplace_back();
    if (Status status = checkCall(mpi().Isend(&token, 0, mpi().byteType,
                                              member, kHandshakeTag, comm_,
                                              &requests.back()),
                                  "MPI_Isend", label);
        status.failed())
      return status;
  }
  if (Status status = wait(requests.data(), static_cast<int>(requests.size()),
                           label, others);
      status.failed())
    return status;

  MPI_Group worldGroup, group;
  MPI_Comm comm;
  if (Status status = checkCall(mpi().Comm_group(comm_, &worldGroup),
                                "MPI_Comm_group", label);
      status.failed())
    return status;
  Status created = checkCall(
      mpi().Group_incl(worldGroup, static_cast<int>(members.size()),
                       members.data(), &group),
      "MPI_Group_incl", label);
  if (created.succeeded()) {
    BlockingCallDeadline deadline(
        timeout(), formatMessage("rank ", rank_, ": ", label, " timed out "
                                 "after ", formatSeconds(timeout()),
                                 "; a rank failed or disappeared"));
    created = checkCall(
        mpi().Comm_create_group(comm_, group, kCreateGroupTag, &comm),
        "MPI_Comm_create_group", label);
    mpi().Group_free(&group);
  }
  mpi().Group_free(&worldGroup);
  if (created.failed())
    return created;
  mpi().Comm_set_errhandler(comm, mpi().errorsReturn);
  auto made = std::make_unique<MpiCommunicator>(comm, members, position, this,
                                                timeout_);
  out = made.get();
  groups_.emplace(members, std::move(made));
  return Status::success();
}

template <DType Type, ReduceOp Op>
void userReduction(void *in, void *inout, int *length, MPI_Datatype *) {
  reduceInto(Type, Op, inout, in, static_cast<uint64_t>(*length));
}

} // namespace

Status checkMpi(const std::string *&path) {
  MpiApi &api = mpi();
  if (Status status = loadMpi(api); status.failed())
    return status;
  static const std::string loaded = loadedPath(api.library);
  path = &loaded;
  return Status::success();
}

Status createMpiCommunicator(int *argc, char ***argv,
                             std::unique_ptr<Communicator> &out) {
  MpiApi &api = mpi();
  if (Status status = loadMpi(api); status.failed())
    return status;
  double timeout = commTimeoutFromEnvironment();
  int initialised = 0;
  api.Initialized(&initialised);
  if (!initialised) {
    BlockingCallDeadline deadline(
        timeout, formatMessage("MPI_Init timed out after ",
                               formatSeconds(timeout),
                               "; a rank failed or disappeared"));
    int provided = 0;
    if (int code = api.Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
        code != MPI_SUCCESS)
      return fail("MPI_Init failed: ", mpiError(code));
  }
  api.initialised = true;
  api.Comm_set_errhandler(api.commWorld, api.errorsReturn);
  int rank = 0, size = 0;
  api.Comm_rank(api.commWorld, &rank);
  api.Comm_size(api.commWorld, &size);
  MPI_Comm comm;
  {
    BlockingCallDeadline deadline(
        timeout, formatMessage("rank ", rank, ": MPI_Comm_dup timed out after ",
                               formatSeconds(timeout),
                               "; a rank failed or disappeared"));
    if (int code = api.Comm_dup(api.commWorld, &comm); code != MPI_SUCCESS)
      return fail("MPI_Comm_dup failed: ", mpiError(code));
  }
  api.Comm_set_errhandler(comm, api.errorsReturn);
  if (!api.halfSum) {
    api.Op_create(&userReduction<DType::F16, ReduceOp::Sum>, 1, &api.halfSum);
    api.Op_create(&userReduction<DType::F16, ReduceOp::Max>, 1, &api.halfMax);
    api.Op_create(&userReduction<DType::BF16, ReduceOp::Sum>, 1,
                  &api.bfloatSum);
    api.Op_create(&userReduction<DType::BF16, ReduceOp::Max>, 1,
                  &api.bfloatMax);
  }
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i)
    ranks[i] = i;
  out = std::make_unique<MpiCommunicator>(comm, std::move(ranks), rank,
                                          nullptr, timeout);
  return Status::success();
}

Status finalizeMpi(double timeout) {
  MpiApi &api = mpi();
  if (!api.initialised)
    return Status::success();
  int finalised = 0;
  api.Finalized(&finalised);
  if (finalised)
    return Status::success();
  for (MPI_Op *op : {&api.halfSum, &api.halfMax, &api.bfloatSum,
                     &api.bfloatMax})
    if (*op)
      api.Op_free(op);
  BlockingCallDeadline deadline(
      timeout, formatMessage("MPI_Finalize timed out after ",
                             formatSeconds(timeout),
                             "; a rank failed or disappeared"));
  if (int code = api.Finalize(); code != MPI_SUCCESS)
    return fail("MPI_Finalize failed: ", mpiError(code));
  return Status::success();
}

} // namespace of::rt
