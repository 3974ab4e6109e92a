//===- KernelObject.h - A plan's kernel shared object, loaded -------------===//
//
// The CPU executable of a plan is an ELF shared object stored as a blob. It
// is loaded without touching the file system: the bytes go into an
// anonymous memfd, which is dlopen'ed through /proc/self/fd/N with
// RTLD_NOW | RTLD_LOCAL, so that every undefined symbol fails at load and two
// sessions (or two plans) never see each other's kernels. Before that, the
// bytes are checked (ElfCheck.h): the loader runs no code of the object and
// reads nothing outside it, and the object imports only math functions. Kernels
// use the packed calling convention `extern "C" void kernel(void **args,
// int64_t begin, int64_t end)`.
//
// In a fuzzing build (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) the check
// runs but nothing is dlopen'ed: a mutated ELF would test the system's dynamic
// loader and run its constructors, not test this runtime. Kernels then resolve
// to null and a launch fails the run.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_KERNELOBJECT_H
#define OF_LIB_RUNTIME_KERNELOBJECT_H

#include "Session/Status.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace of::rt {

/// A kernel with the packed calling convention: args[i] is the data pointer
/// of the i-th buffer of the launch; a kernel with an iteration range runs
/// iterations [begin, end) of its outermost loop (plan::Launch).
using KernelFunction = void (*)(void **args, int64_t begin, int64_t end);

/// A shared object loaded from memory; unloaded on destruction.
class KernelObject {
public:
  /// Loads the `size` bytes at `data` as the executable named `name`.
  static Status load(const std::string &name, const uint8_t *data,
                     uint64_t size, std::unique_ptr<KernelObject> &out);
  ~KernelObject();
  KernelObject(const KernelObject &) = delete;
  KernelObject &operator=(const KernelObject &) = delete;

  /// Looks up the kernel `symbol`; a missing symbol is an error naming it.
  Status resolve(const std::string &symbol, KernelFunction &out) const;

private:
  explicit KernelObject(std::string name) : name_(std::move(name)) {}

  std::string name_;
  /// The functions the object defines in executable memory (checked before
  /// it was loaded): the only symbols a launch may call.
  std::set<std::string> functions_;
  int memfd_ = -1;
  void *handle_ = nullptr;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_KERNELOBJECT_H
