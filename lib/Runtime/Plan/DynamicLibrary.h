//===- DynamicLibrary.h - Loading the libraries libofrt does not link -----===//
//
// libofrt loads the libraries a plan may need (the CUDA driver, cuBLAS,
// cuDNN, NCCL, OpenBLAS, oneDNN, MPI) with dlopen when a session first
// needs them, so that it runs its other steps where they are not installed.
// Each is a table of function pointers (OF_LIBRARY_TABLE) filled once per
// process by loadLibrary.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_DYNAMICLIBRARY_H
#define OF_LIB_RUNTIME_DYNAMICLIBRARY_H

#include "Session/Status.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <string>
#include <vector>

namespace of::rt {

/// dlopens the first of `candidates` that loads; `error` collects why each
/// failed (one "\n  reason" line each).
///
/// A fuzzing build (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) loads none,
/// as it loads no kernel object: the fuzzers test the plan loader, and
/// OpenBLAS, oneDNN and libgomp would bring their constructors and dynamic
/// TLS into the process, where clang 14's LeakSanitizer crashes now and
/// then while it scans them at exit ("Tracer caught signal 11").
inline void *openFirst(const std::vector<std::string> &candidates,
                       std::string &error) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  (void)candidates;
  error += "\n  a fuzzing build loads no libraries";
  return nullptr;
#endif
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

/// Where a library comes from, and what to say when it cannot be used.
struct LibrarySource {
  /// The library in messages ("cuBLAS").
  std::string name;
  /// A variable naming the one file to load instead of `candidates`.
  const char *overrideVariable;
  /// The files to try, in order.
  std::vector<std::string> candidates;
  /// What needs the library and where it comes from; the loader's reasons
  /// follow ("gemm steps on the GPU need cuBLAS, which cannot be loaded
  /// (libcublas.so.13 of CUDA 13; $OF_CUBLAS_LIBRARY names another):").
  std::string unavailable;
  /// Which releases have every function of the table ("OF needs CUDA 12
  /// or later").
  std::string requirement;
  /// Called once before the load (OpenMP's wait policy, say).
  void (*beforeLoad)() = nullptr;
};

/// The members of a table of library functions: one pointer per function
/// of an X-macro list, `resolve` (the first function the library lacks,
/// or null), and the file the table was loaded from.
#define OF_LIBRARY_TABLE(FUNCTIONS)                                            \
  FUNCTIONS(OF_LIBRARY_TABLE_POINTER) std::string loadedFrom;                  \
  const char *resolve(void *library) {                                         \
    FUNCTIONS(OF_LIBRARY_TABLE_RESOLVE) return nullptr;                        \
  }
#define OF_LIBRARY_TABLE_POINTER(name) decltype(&::name) name = nullptr;
#define OF_LIBRARY_TABLE_RESOLVE(name)                                         \
  if (!(name = reinterpret_cast<decltype(name)>(::dlsym(library, #name))))     \
    return #name;

/// The path the dynamic loader gave `library`.
inline std::string loadedPath(void *library) {
  struct link_map *map = nullptr;
  if (::dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
    return map->l_name;
  return "";
}

/// Loads the library of `Table` (a struct of OF_LIBRARY_TABLE) once per
/// process, never to unload it, and resolves every function of the table:
/// $<overrideVariable> when set, else the first of the candidates that
/// loads. Every later call gives the same table, or the same error.
template <typename Table>
Status loadLibrary(LibrarySource (*describe)(), const Table *&out) {
  static Table table;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [describe] {
    LibrarySource source = describe();
    std::vector<std::string> candidates = source.candidates;
    if (const char *path = std::getenv(source.overrideVariable); path && *path)
      candidates = {path};
    if (source.beforeLoad)
      source.beforeLoad();
    std::string tried;
    void *library = openFirst(candidates, tried);
    if (!library) {
      error = source.unavailable + tried;
      return;
    }
    table.loadedFrom = loadedPath(library);
    if (const char *missing = table.resolve(library))
      error = formatMessage(source.name, " (", table.loadedFrom,
                            ") lacks the function ", missing, "; ",
                            source.requirement);
  });
  if (!error.empty())
    return Status::failure(error);
  out = &table;
  return Status::success();
}

/// Loads as `load` does and gives the file it loaded (the table's, which
/// lives as long as the process).
template <typename Table>
Status loadAndLocate(Status (*load)(const Table *&), const std::string *&path) {
  const Table *table = nullptr;
  Status status = load(table);
  if (!status.failed())
    path = &table->loadedFrom;
  return status;
}

/// Each library libofrt may use, loaded as a session would load it (once
/// per process) with every function the runtime calls resolved; `path` is
/// the file loaded (`ofrt_library_check`, `of-run --check-libraries`).
Status checkOpenBlas(const std::string *&path);
Status checkOneDnn(const std::string *&path);
Status checkCudaDriver(const std::string *&path);
Status checkCublas(const std::string *&path);
Status checkCublasLt(const std::string *&path);
Status checkCudnn(const std::string *&path);
Status checkNccl(const std::string *&path);
Status checkMpi(const std::string *&path);

/// The CUDA devices the driver sees (`ofrt_cuda_device_count`); fails when
/// no driver can be loaded or initialised, saying why.
Status cudaDeviceCount(int &count);
/// Device `ordinal`'s compute capability (`ofrt_cuda_device_capability`).
Status cudaDeviceCapability(int ordinal, int &major, int &minor);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_DYNAMICLIBRARY_H
