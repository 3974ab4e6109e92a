//===- SbpSyntax.h - SBP entries in the IR's text ----------------*- C++ -*-===//
//
// The one parser and printer of an SBP entry in IR text, `S(<dim>)`, `B`,
// `P` (or `P(sum)`) and `P(max)`, which #of.sbp and #ofrt.dist share: the
// entry is read as its code (OF/ABI/Sbp.h), whose text the ABI defines for
// libofrt, of-run and the Python frontend too.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_UTILS_SBPSYNTAX_H
#define OF_DIALECT_UTILS_SBPSYNTAX_H

#include "OF/ABI/Sbp.h"

#include "mlir/IR/OpImplementation.h"

#include <string>

namespace mlir::of_syntax {

/// Parses one entry into its code.
inline ParseResult parseSbpCode(AsmParser &parser, int32_t &code) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseOptionalKeyword(&keyword)))
    return parser.emitError(loc,
                            "expected an SBP entry: S(<dim>), B, P or P(max)");
  std::string text = keyword.str();
  if (keyword == "S") {
    int64_t dim;
    if (parser.parseLParen() || parser.parseInteger(dim) ||
        parser.parseRParen())
      return failure();
    if (dim < 0)
      return parser.emitError(loc, "S(")
             << dim << ") splits a negative dimension";
    text = "S(" + std::to_string(dim) + ")";
  } else if (keyword == "P" && succeeded(parser.parseOptionalLParen())) {
    SMLoc reductionLoc = parser.getCurrentLocation();
    StringRef reduction;
    if (parser.parseKeyword(&reduction))
      return failure();
    text = "P(" + reduction.str() + ")";
    if (!::of::sbp::parse(text))
      return parser.emitError(reductionLoc, "unknown partial reduction '")
             << reduction << "'; expected P, P(sum) or P(max)";
    if (parser.parseRParen())
      return failure();
  }
  std::optional<int32_t> parsed = ::of::sbp::parse(text);
  if (!parsed)
    return parser.emitError(loc, "unknown SBP entry '")
           << text << "'; expected S(<dim>), B, P or P(max)";
  code = *parsed;
  return success();
}

/// Prints one entry from its code.
inline void printSbpCode(AsmPrinter &printer, int32_t code) {
  printer << ::of::sbp::text(code);
}

} // namespace mlir::of_syntax

#endif // OF_DIALECT_UTILS_SBPSYNTAX_H
