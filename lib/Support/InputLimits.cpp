//===- InputLimits.cpp - Bounds on what the tools parse ------------------===//

#include "OF/Support/InputLimits.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/thread.h"

using namespace mlir::of;

std::string mlir::of::checkNesting(llvm::StringRef text, llvm::StringRef name) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    switch (c) {
    case '\n':
      ++line;
      break;
    case '"': // a string: to its closing quote, past escapes
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
      break;
    case '/':
      if (i + 1 < n && text[i + 1] == '/')
        while (i + 1 < n && text[i + 1] != '\n')
          ++i;
      break;
    case '-':
      if (i + 1 < n && text[i + 1] == '>')
        ++i; // an arrow, not a closing bracket
      break;
    case '{':
    case '(':
    case '[':
    case '<':
      if (++depth > kMaxNesting)
        return (llvm::Twine(name) + ":" + llvm::Twine(line) +
                ": nesting deeper than " + llvm::Twine(kMaxNesting) +
                " levels of brackets; OF refuses it rather than overflow "
                "the parser's stack")
            .str();
      break;
    case '}':
    case ')':
    case ']':
    case '>':
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return {};
}

int mlir::of::runOnLargeStack(llvm::function_ref<int()> body) {
  int result = 1;
  auto run = [&] { result = body(); };
  llvm::thread worker(std::optional<unsigned>(kLargeStackBytes), run);
  worker.join();
  return result;
}
