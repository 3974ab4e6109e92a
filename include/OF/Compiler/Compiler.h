//===- Compiler.h - OF's compiler as a library call -------------*- C++ -*-===//
//
// One call from `of` program text to a binary plan (.ofp), for embedders
// such as the Python frontend: parse, run `--of-pipeline=<options>`, write
// the plan. The header uses only standard C++ types, so it can be included
// by code built with RTTI and exceptions (pybind11) while the compiler
// itself is built like MLIR (without them).
//
//===----------------------------------------------------------------------===//

#ifndef OF_COMPILER_COMPILER_H
#define OF_COMPILER_COMPILER_H

#include <string>
#include <utility>
#include <vector>

namespace of::compiler {

/// One diagnostic of a compile, at the source location of the op that
/// caused it (the embedder writes `loc("file.py":line:col)` on every op).
struct Diagnostic {
  std::string severity; // "error", "warning", "note" or "remark"
  std::string file;     // empty when the location has no file
  unsigned line = 0;
  unsigned column = 0;
  std::string message;
  std::vector<Diagnostic> notes;
};

struct CompileResult {
  bool success = false;
  /// The .ofp bytes (empty on failure).
  std::string plan;
  std::vector<Diagnostic> diagnostics;
  /// Each pass that ran, in order, with its wall time in seconds.
  std::vector<std::pair<std::string, double>> passes;
};

/// Compiles the `of` program `source` (MLIR text; `sourceName` names it in
/// diagnostics) through `--of-pipeline=<pipeline>` (e.g.
/// "cpu,train=adamw") into a binary plan. With a non-empty `dumpDir`, the
/// module after every pass that changed it is written under that folder
/// (one file per pass, numbered in order). Thread-safe: each call has its
/// own MLIR context.
CompileResult compile(const std::string &source, const std::string &sourceName,
                      const std::string &pipeline, const std::string &dumpDir);

} // namespace of::compiler

#endif // OF_COMPILER_COMPILER_H
