//===- NcclCommunicator.h - Collectives on GPU buffers through NCCL -------===//
//
// The CUDA executor's communicator: the Communicator interface over device
// buffers, each operation enqueued on the executor's current stream (so it
// completes in stream order with the steps around it, not when the call
// returns). NCCL (libnccl.so.2) is loaded with dlopen on first use, like
// the executor's other libraries.
//
// The job's communicator (all ranks) is joined when it is created, which
// is collective over every rank: a CUDA session of a multi-rank job creates
// it, so every rank makes its sessions in the same order. A communicator of
// a sub-group is made when it is first asked for (`subGroup`, at session
// preparation, collective over the group only). Joining one: its first
// member draws a NCCL unique id, the job's own communicator (MPI)
// broadcasts it within the group, and every member joins. Point-to-point
// messages go through the job's communicator. A one-rank job needs no
// bootstrap communicator.
//
// Communicators are non-blocking (ncclConfig_t::blocking = 0): a call that
// NCCL leaves in progress is waited out under the communicator's deadline,
// and past it every NCCL communicator of the job's rank is aborted and the
// operation fails naming the ranks it waited for. The executor's
// synchronize waits for its streams under the same deadline
// (`checkAsyncErrors` while it polls, `abortAll` when it gives up).
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_NCCLCOMMUNICATOR_H
#define OF_LIB_RUNTIME_NCCLCOMMUNICATOR_H

#include "Comm/Communicator.h"

#include <memory>

namespace of::rt {

class DeviceCommunicator : public Communicator {
public:
  /// Fails with NCCL's message when a communicator of this rank has met an
  /// asynchronous error (a peer died, a network failure).
  virtual Status checkAsyncErrors() = 0;
  /// Aborts every communicator of this rank (they are unusable afterwards),
  /// which releases operations stuck on the device.
  virtual void abortAll() = 0;
};

/// Loads NCCL and joins the NCCL communicator of the ranks of `bootstrap`
/// (null: one rank), whose operations are enqueued on `*stream` (a
/// CUstream; read at each call). Collective over those ranks. Fails with
/// the reason where NCCL cannot be loaded (or this libofrt was built
/// without nccl.h) or the ranks cannot join.
Status createNcclCommunicator(Communicator *bootstrap, void *const *stream,
                              std::unique_ptr<DeviceCommunicator> &out);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_NCCLCOMMUNICATOR_H
