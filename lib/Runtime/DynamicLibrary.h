//===- DynamicLibrary.h - Loading the libraries libofrt does not link -----===//
//
// libofrt loads the libraries a plan may need (the CUDA driver, cuBLAS,
// NCCL, OpenBLAS, oneDNN) with dlopen when a session first needs them, so
// that it runs its other steps where they are not installed.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_DYNAMICLIBRARY_H
#define OF_LIB_RUNTIME_DYNAMICLIBRARY_H

#include "Status.h"

#include <cstdlib>
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

/// `file`, then `file` in the CUDA toolkit's library folder ($CUDA_HOME,
/// $CUDA_PATH, /usr/local/cuda), for libraries not on the loader's path.
inline std::vector<std::string> toolkitCandidates(const char *file) {
  std::vector<std::string> names = {file};
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var); root && *root)
      names.push_back(std::string(root) + "/lib64/" + file);
  names.push_back(std::string("/usr/local/cuda/lib64/") + file);
  return names;
}

} // namespace of::rt

#endif // OF_LIB_RUNTIME_DYNAMICLIBRARY_H
