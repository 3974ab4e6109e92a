//===- InputLimits.cpp - Bounds on what the tools parse ------------------===//

#include "OF/Support/InputLimits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/thread.h"

using namespace mlir::of;

/// Whether `text` at `i` is the token `array` followed by `<` and the
/// element type `index` (spaces allowed between).
static bool isIndexDenseArray(llvm::StringRef text, size_t i) {
  if (!text.substr(i).starts_with("array") ||
      (i > 0 && (llvm::isAlnum(text[i - 1]) || text[i - 1] == '_' ||
                 text[i - 1] == '.' || text[i - 1] == '$')))
    return false;
  llvm::StringRef rest = text.substr(i + 5).ltrim();
  if (!rest.consume_front("<"))
    return false;
  rest = rest.ltrim();
  return rest.starts_with("index") &&
         (rest.size() == 5 || !(llvm::isAlnum(rest[5]) || rest[5] == '_'));
}

std::string mlir::of::checkBeforeParsing(llvm::StringRef text,
                                         llvm::StringRef name) {
  unsigned depth = 0, line = 1;
  auto error = [&](const llvm::Twine &message) {
    return (llvm::Twine(name) + ":" + llvm::Twine(line) + ": error: " + message)
        .str();
  };
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    switch (c) {
    case 'a':
      if (isIndexDenseArray(text, i))
        return error("array<index: ...> is not a dense array MLIR can parse "
                     "(its element type must be an integer or float type of "
                     "a whole number of bytes, or i1); MLIR 22's parser "
                     "crashes on it, so OF refuses it first");
      break;
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
        return error("nesting deeper than " + llvm::Twine(kMaxNesting) +
                     " levels of brackets; OF refuses it rather than "
                     "overflow the parser's stack");
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
