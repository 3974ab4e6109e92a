//===- ElfCheck.h - What a plan's kernel object may be, before dlopen -----===//
//
// A plan's CPU executable is native code that the system's dynamic loader
// maps and relocates. The loader trusts its input: a malformed object
// crashes it (SIGSEGV, SIGBUS, "Inconsistency detected by ld.so"), and a
// well-formed one runs code while it is loaded (constructors, IFUNC
// resolvers) and may import any function of any library. checkKernelObject
// reads the object first, with every offset and size checked, and accepts
// only what OF's kernel compiler produces:
//
//  - an ELF64 shared object for this machine, with loadable segments inside
//    the file, ordered, not overlapping, never writable and executable, and
//    no executable-stack request;
//  - no code run at load or unload (DT_INIT, DT_FINI, init/fini arrays,
//    IFUNC symbols, IRELATIVE relocations), no thread-local storage, no
//    library search paths, no text relocations;
//  - dependencies only on the C and math libraries, and undefined symbols
//    only from the allow-list below (math functions and memcpy/memmove/
//    memset), so that a kernel calls nothing else by name;
//  - hash tables, symbols, strings, relocations and version tables whose
//    every index and offset lands inside the object, so that neither the
//    loader nor dlsym reads outside it.
//
// A kernel can still execute any instruction once launched: the check bounds
// what loading and inspecting a plan does, not what running one does. Plans
// from someone you do not trust are for `of-run --trusted-keys` (signed
// plans); docs/security.md states the trust model.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_ELFCHECK_H
#define OF_LIB_RUNTIME_ELFCHECK_H

#include "Session/Status.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace of::rt {

/// Whether a kernel object may import `symbol` (a C math function, or
/// memcpy, memmove, memset).
bool isAllowedKernelImport(std::string_view symbol);

/// Checks the `size` bytes at `data`, the executable named `name`, as
/// described above; on success `functions` holds the names of the functions
/// it defines in executable memory (the only names a launch may call).
Status checkKernelObject(const std::string &name, const uint8_t *data,
                         uint64_t size, std::set<std::string> &functions);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_ELFCHECK_H
