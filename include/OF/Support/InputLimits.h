//===- InputLimits.h - Bounds on what the tools parse ------------*- C++
//-*-===//
//
// MLIR's parser and the passes recurse once per level of nesting (regions,
// attribute lists, types), so a few thousand levels of `module {` overflow a
// thread's stack. The tools and the Python compiler entry refuse text nested
// deeper than kMaxNesting before parsing it, with a message naming the
// line, and run on a thread whose stack holds far more than that.
//
//===----------------------------------------------------------------------===//

#ifndef OF_SUPPORT_INPUTLIMITS_H
#define OF_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::of {

/// The deepest nesting of brackets ({ ( [ <) accepted in program text: far
/// beyond real programs (tens of levels) and well within kLargeStackBytes.
inline constexpr unsigned kMaxNesting = 1000;

/// The stack of the thread the tools compile on.
inline constexpr unsigned kLargeStackBytes = 512u << 20;

/// An error message, naming `name` and the line, if `text` nests brackets
/// deeper than kMaxNesting or holds an `array<index: ...>` attribute (which
/// crashes MLIR 22's parser, a release build without its assertion);
/// strings and `//` comments are skipped. Empty otherwise.
std::string checkBeforeParsing(llvm::StringRef text, llvm::StringRef name);

/// Runs `body` on a thread with a kLargeStackBytes stack; its result.
int runOnLargeStack(llvm::function_ref<int()> body);

} // namespace mlir::of

#endif // OF_SUPPORT_INPUTLIMITS_H
