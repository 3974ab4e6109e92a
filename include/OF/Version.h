//===- Version.h - OF version reporting ------------------------*- C++ -*-===//
//
// The version line that every OF tool prints with --version.
//
//===----------------------------------------------------------------------===//

#ifndef OF_VERSION_H
#define OF_VERSION_H

#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace of {
/// The OF release, e.g. "0.1.0".
const char *getVersionString();
/// Prints "OF version X (git Y), built against MLIR Z" for --version.
void printVersion(llvm::raw_ostream &os);
} // namespace of
} // namespace mlir

#endif // OF_VERSION_H
