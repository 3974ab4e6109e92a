//===- Communicator.h - Collectives among the ranks of a job --------------===//
//
// A Communicator is an ordered set of ranks that run collectives together.
// The world communicator of a job holds every rank; `subGroup` makes (once,
// then from a cache) the communicator of an ordered subset, which is what a
// plan's collective runs in: the ranks of a placement that share this rank's
// grid coordinates on every axis but one. The interface is byte- and
// element-count based and knows nothing of plans: the MPI backend
// (MpiCommunicator.cpp) runs it on host buffers and completes each
// operation before returning; the NCCL backend (NcclCommunicator.h) runs it
// on device buffers and enqueues each operation on a CUDA stream.
//
// Every operation that waits does so under a deadline (the communicator's
// timeout, 60 s unless OF_COMM_TIMEOUT or setTimeout say otherwise): past it
// the operation fails with a message naming this rank, the operation and the
// ranks it waited for. A failed communicator is unusable (an operation may
// still be in flight): its owner ends the job with `abort`, which is how the
// other ranks, possibly blocked in a collective with this one, are released.
// Nothing here prints or exits except `abort`.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_COMMUNICATOR_H
#define OF_LIB_RUNTIME_COMMUNICATOR_H

#include "Session/Status.h"

#include "OF/ABI/PlanFormat_generated.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace of::rt {

/// The default deadline of a wait, in seconds.
inline constexpr double kDefaultCommTimeout = 60.0;

/// The deadline from $OF_COMM_TIMEOUT (seconds, > 0), else the default.
double commTimeoutFromEnvironment();

class Communicator {
public:
  virtual ~Communicator() = default;

  /// This rank's index in the communicator and the number of members.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The world rank of every member, in communicator order.
  virtual const std::vector<int> &worldRanks() const = 0;
  /// This rank's world rank.
  int worldRank() const { return worldRanks()[rank()]; }

  /// The communicator of the world ranks `members` (in that order; this rank
  /// among them), made on first use and cached by the world communicator.
  /// Making one is collective over `members`; `what` names the operation
  /// that needs it, for messages.
  virtual Status subGroup(const std::vector<int> &members, Communicator *&out,
                          const std::string &what) = 0;

  /// dst = reduce(src) over the members, `count` elements of `dtype`;
  /// src == dst is in place. Any other overlap is not allowed.
  virtual Status allReduce(const void *src, void *dst, uint64_t count,
                           plan::DType dtype, plan::ReduceOp op,
                           const std::string &what) = 0;
  /// dst = the members' src concatenated in member order, member j giving
  /// bytes[j] bytes (this member's src holds bytes[rank()]).
  virtual Status allGatherV(const void *src, void *dst,
                            const std::vector<uint64_t> &bytes,
                            const std::string &what) = 0;
  /// src holds one block per member, in order, of counts[j] elements; dst =
  /// this member's block of reduce(src) (counts[rank()] elements).
  virtual Status reduceScatterV(const void *src, void *dst,
                                const std::vector<uint64_t> &counts,
                                plan::DType dtype, plan::ReduceOp op,
                                const std::string &what) = 0;
  /// src holds one block per destination member (sendBytes[j] bytes, in
  /// order); dst receives one block per source member (recvBytes[j]).
  virtual Status allToAllV(const void *src,
                           const std::vector<uint64_t> &sendBytes, void *dst,
                           const std::vector<uint64_t> &recvBytes,
                           const std::string &what) = 0;
  /// data = root's data on every member.
  virtual Status broadcast(void *data, uint64_t bytes, int root,
                           const std::string &what) = 0;
  /// Point to point with member `peer` (an index in this communicator).
  /// Messages between two ranks with the same tag arrive in order.
  virtual Status send(const void *data, uint64_t bytes, int peer, int tag,
                      const std::string &what) = 0;
  virtual Status recv(void *data, uint64_t bytes, int peer, int tag,
                      const std::string &what) = 0;
  virtual Status barrier(const std::string &what) = 0;

  /// Ends the whole job with exit code `code` (MPI_Abort); never returns.
  [[noreturn]] virtual void abort(int code) = 0;

  /// The deadline of every wait, in seconds.
  virtual double timeout() const = 0;
  virtual void setTimeout(double seconds) = 0;
};

/// Whether an MPI launcher started this process (mpirun, mpiexec, srun:
/// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK is set).
bool launchedByMpi();

/// Loads libmpi (Open MPI, with dlopen: libofrt does not link it),
/// initialises MPI and returns the world communicator. Fails with a clear
/// message where no Open MPI library can be loaded.
Status createMpiCommunicator(int *argc, char ***argv,
                             std::unique_ptr<Communicator> &out);

/// Finalises MPI (after the last communicator is destroyed), under a
/// deadline of `timeout` seconds.
Status finalizeMpi(double timeout);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_COMMUNICATOR_H
