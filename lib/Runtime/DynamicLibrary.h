//===- DynamicLibrary.h - Loading the libraries libofrt does not link -----===//
//
// libofrt loads the libraries a plan may need (the CUDA driver, cuBLAS,
// OpenBLAS, oneDNN) with dlopen when a session first needs them, so that it
// runs its other steps where they are not installed.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_DYNAMICLIBRARY_H
#define OF_LIB_RUNTIME_DYNAMICLIBRARY_H

#include "Status.h"

#include <dlfcn.h>
#include <string>
#include <vector>

namespace of::rt {

/// dlopens the first of `candidates` that loads; `error` collects why each
/// failed (one "\n  reason" line each).
inline void *openFirst(const std::vector<std::string> &candidates,
                       std::string &error) {
  for (const std::string &name : candidates) {
    if (void *library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return library;
    const char *why = ::dlerror();
    error += formatMessage("\n  ", why ? why : name.c_str());
  }
  return nullptr;
}

} // namespace of::rt

#endif // OF_LIB_RUNTIME_DYNAMICLIBRARY_H
