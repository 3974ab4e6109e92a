//===- Checkpoint.h - A session's state as a safetensors file -------------===//
//
// A training step's persistent state (every input that an output updates:
// parameters and optimizer state) is saved as one safetensors file of
// *global* tensors, keyed by the input names: rank 0 gathers each tensor
// from the ranks that hold it and writes it, one tensor in memory at a
// time. So a checkpoint does not depend on the layout it was trained with:
// it loads into a plan for another rank count or SBP, into an evaluation
// entry that takes only the parameters, and into other tools (the
// `safetensors` package reads it). The file is written to a temporary name
// beside its destination, flushed to disk, and renamed over it, so a crash
// at any point leaves the previous checkpoint whole.
//
// Metadata: "of.step" (the number of steps taken, as decimal text) and
// "of.entry" (the entry that wrote it).
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_CHECKPOINT_H
#define OF_LIB_RUNTIME_CHECKPOINT_H

#include "Session/Session.h"

namespace of::rt {

/// Saves the session's state at step `step` to `path`. Collective over the
/// session's ranks; rank 0 writes and reports any failure to write (the
/// other ranks only send their parts).
Status saveState(const Session &session, const std::string &path, int64_t step);

/// Sets every input of the session that the file at `path` has a tensor of
/// the same name for (dtype and global shape must match), each rank taking
/// its part; every state input must be in the file. Tensors the session
/// does not take are ignored. `step` receives "of.step" (0 if absent).
/// With `weightsOnly` (`of-run --init-state`), the optimizer state
/// (StateNames.h) is neither required nor read, so a training step starts
/// afresh from the file's parameters, which must all be there.
Status loadState(Session &session, const std::string &path, int64_t &step,
                 bool weightsOnly = false);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_CHECKPOINT_H
