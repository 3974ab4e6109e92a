//===- KernelFaults.h - A plan's kernel faulting, said plainly --*- C++ -*-===//
//
// A plan that passed verification runs its kernels as native code
// (docs/security.md): one whose code was changed after compiling, with its
// checksum recomputed, may fault. Where the process installed the handlers
// (of-run does; a host process with handlers of its own need not), a fault
// while a kernel runs ends the process with a message naming the step and
// the signal instead of a bare SIGSEGV; a fault anywhere else is left to
// the default action (a core dump), so the runtime's own bugs still show.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_KERNELFAULTS_H
#define OF_LIB_RUNTIME_KERNELFAULTS_H

namespace of::rt {

/// The exit status of a process ended by a kernel fault (EX_SOFTWARE).
inline constexpr int kKernelFaultExitCode = 70;

/// Marks, for its lifetime, that the kernel of step `label` runs (on this
/// thread, or on worker threads this thread waits for).
class RunningKernel {
public:
  explicit RunningKernel(const char *label);
  ~RunningKernel();
  RunningKernel(const RunningKernel &) = delete;
  RunningKernel &operator=(const RunningKernel &) = delete;

private:
  const char *previous_;
};

/// Installs the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP (and an
/// alternate signal stack for the calling thread). Idempotent.
void installKernelFaultHandlers();

} // namespace of::rt

#endif // OF_LIB_RUNTIME_KERNELFAULTS_H
