//===- KernelFaults.cpp - A plan's kernel faulting, said plainly ----------===//

#include "CPU/KernelFaults.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <unistd.h>

namespace of::rt {
namespace {

/// The label of the step whose kernel runs, or null. One process runs one
/// launch at a time per session; with sessions on several threads the
/// message may name another of the running steps, never a finished one.
std::atomic<const char *> running{nullptr};

void say(const char *text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0)
      return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

const char *signalName(int signal) {
  switch (signal) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  case SIGTRAP:
    return "SIGTRAP";
  default:
    return "a signal";
  }
}

void onFault(int signal, siginfo_t *info, void *) {
  const char *label = running.load(std::memory_order_relaxed);
  if (!label) {
    // Not a kernel: the default action, when the faulting instruction runs
    // again on return.
    std::signal(signal, SIG_DFL);
    return;
  }
  char address[2 + 16 + 1] = "0x";
  auto value = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  for (int i = 0; i < 16; ++i)
    address[2 + i] = "0123456789abcdef"[(value >> (60 - 4 * i)) & 0xf];
  address[18] = '\0';
  say(program_invocation_short_name); // glibc's, set before main
  say(": error: ");
  say(label);
  say(": the kernel faulted (");
  say(signalName(signal));
  say(" at ");
  say(address);
  say("): a verified plan's kernel faults only if its code is corrupt or "
      "was changed after it was compiled; run only plans you trust (of-sign, "
      "of-run --trusted-keys; docs/security.md)\n");
  ::_exit(kKernelFaultExitCode);
}

} // namespace

RunningKernel::RunningKernel(const char *label)
    : previous_(running.exchange(label, std::memory_order_relaxed)) {}

RunningKernel::~RunningKernel() {
  running.store(previous_, std::memory_order_relaxed);
}

void installKernelFaultHandlers() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  // A kernel that wrecked its stack pointer still gets its message.
  static char stack[64 * 1024];
  stack_t alternate{};
  alternate.ss_sp = stack;
  alternate.ss_size = sizeof(stack);
  ::sigaltstack(&alternate, nullptr);
  struct sigaction action {};
  action.sa_sigaction = onFault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP})
    ::sigaction(signal, &action, nullptr);
}

} // namespace of::rt
