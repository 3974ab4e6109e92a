//===- KernelObject.cpp - memfd + dlopen of a plan's kernels --------------===//
//
// Loads an ELF shared object from memory (see KernelObject.h). The memfd
// stays open as long as the object is loaded, and both are released on
// destruction, so a session leaves no file or mapping behind.
//
//===----------------------------------------------------------------------===//

#include "Plan/KernelObject.h"
#include "Plan/ElfCheck.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace of::rt {

namespace {
constexpr unsigned char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};

std::string lastDlError() {
  const char *message = dlerror();
  return message ? message : "unknown dynamic loader error";
}
} // namespace

Status KernelObject::load(const std::string &name, const uint8_t *data,
                          uint64_t size, std::unique_ptr<KernelObject> &out) {
  if (size < sizeof(kElfMagic) ||
      std::memcmp(data, kElfMagic, sizeof(kElfMagic)) != 0)
    return fail("executable '", name, "' is not an ELF shared object");
  std::unique_ptr<KernelObject> object(new KernelObject(name));
  // The dynamic loader trusts what it maps: check it all first.
  if (Status status = checkKernelObject(name, data, size, object->functions_);
      status.failed())
    return status;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  object->memfd_ = memfd_create(("ofrt:" + name).c_str(), MFD_CLOEXEC);
  if (object->memfd_ < 0)
    return fail("cannot load executable '", name,
                "': memfd_create: ", std::strerror(errno));
  uint64_t written = 0;
  while (written < size) {
    ssize_t done = ::write(object->memfd_, data + written,
                           static_cast<size_t>(size - written));
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      return fail("cannot load executable '", name,
                  "': writing the memfd: ", std::strerror(errno));
    written += static_cast<uint64_t>(done);
  }
  std::string path = "/proc/self/fd/" + std::to_string(object->memfd_);
  object->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!object->handle_)
    return fail("cannot load executable '", name, "': ", lastDlError());
#endif
  out = std::move(object);
  return Status::success();
}

KernelObject::~KernelObject() {
  if (handle_)
    dlclose(handle_);
  if (memfd_ >= 0)
    ::close(memfd_);
}

Status KernelObject::resolve(const std::string &symbol,
                             KernelFunction &out) const {
  out = nullptr;
  // A fuzzing build loads nothing (handle_ stays null).
  void *address = nullptr;
  if (handle_) {
    dlerror();
    address = dlsym(handle_, symbol.c_str());
  }
  if (!functions_.count(symbol) || (handle_ && !address))
    return fail("kernel '", symbol, "' is not defined by executable '", name_,
                "'");
  if (!address)
    return Status::success();
  // POSIX guarantees object and function pointers convert; memcpy keeps
  // -pedantic quiet about the cast.
  static_assert(sizeof(out) == sizeof(address));
  std::memcpy(&out, &address, sizeof(out));
  return Status::success();
}

} // namespace of::rt
