//===- OneDnn.h - Convolution steps through oneDNN ------------------------===//
//
// The CPU executor runs the plan's convolution library calls (LibraryCalls.h)
// through oneDNN's C API, loaded with dlopen when a session first has one: one
// primitive per distinct geometry and direction, created when the step is
// checked (so a geometry oneDNN rejects fails the session's preparation, not a
// run), with `any` memory formats so oneDNN picks its blocked layouts; the
// plan's dense NCHW/OIHW buffers are reordered into and out of executor-owned
// scratch around each call.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_ONEDNN_H
#define OF_LIB_RUNTIME_ONEDNN_H

#include "Executor.h"
#include "Parallel.h"
#include "Status.h"

#include <memory>

namespace of::rt {

/// oneDNN, which the executor loads with dlopen at the first convolution.
class OneDnnConvolutions {
public:
  OneDnnConvolutions();
  ~OneDnnConvolutions();
  OneDnnConvolutions(const OneDnnConvolutions &) = delete;
  OneDnnConvolutions &operator=(const OneDnnConvolutions &) = delete;

  /// Creates the primitives `step` (a Conv step) needs, unless a step of
  /// the same geometry and direction already did.
  Status prepare(const PreparedStep &step);
  /// Runs `step`, which `prepare` accepted, to completion.
  Status run(const PreparedStep &step);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_ONEDNN_H
