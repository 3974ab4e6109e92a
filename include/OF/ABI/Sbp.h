//===- Sbp.h - SBP entries and balanced splits, as the plan stores them ---===//
//
// The one definition of what the compiler and the runtime share about SBP:
// a plan Distribution's entry codes (d >= 0 is S(d); B, P and P(max) are
// the negative codes below), their text (`S(d)`, `B`, `P`, `P(max)`, as
// #of.sbp writes them) and the balanced-split arithmetic (member k of p
// holds e / p + (k < e % p) of an extent e). The of dialect converts its
// SbpEntry to and from these codes; libofrt, of-run and the Python binding
// read them. Header-only, no MLIR: libofrt includes it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_ABI_SBP_H
#define OF_ABI_SBP_H

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace of::sbp {

/// The codes of the entries that are not splits (S(d) is d >= 0).
inline constexpr int32_t kBroadcast = -1;
inline constexpr int32_t kPartialSum = -2;
inline constexpr int32_t kPartialMax = -3;

inline constexpr bool isSplit(int32_t code) { return code >= 0; }
inline constexpr bool isPartial(int32_t code) {
  return code == kPartialSum || code == kPartialMax;
}
/// Whether `code` is an entry of a tensor of rank `rank`.
inline constexpr bool isValid(int32_t code, int64_t rank) {
  return code >= kPartialMax && code < rank;
}

/// `S(d)`, `B`, `P` or `P(max)`; `invalid(<code>)` for another code.
inline std::string text(int32_t code) {
  if (isSplit(code))
    return "S(" + std::to_string(code) + ")";
  switch (code) {
  case kBroadcast:
    return "B";
  case kPartialSum:
    return "P";
  case kPartialMax:
    return "P(max)";
  default:
    return "invalid(" + std::to_string(code) + ")";
  }
}

/// The code of `S(d)`, `B`, `P`, `P(sum)` or `P(max)`; nullopt for other
/// text.
inline std::optional<int32_t> parse(std::string_view text) {
  if (text == "B")
    return kBroadcast;
  if (text == "P" || text == "P(sum)")
    return kPartialSum;
  if (text == "P(max)")
    return kPartialMax;
  if (text.size() < 4 || text.substr(0, 2) != "S(" || text.back() != ')')
    return std::nullopt;
  std::string_view digits = text.substr(2, text.size() - 3);
  if (digits.empty() || digits.size() > 9)
    return std::nullopt;
  int32_t dim = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return std::nullopt;
    dim = dim * 10 + (c - '0');
  }
  return dim;
}

/// Balanced split of `extent` into `parts`: the size and the offset of
/// chunk `index` (the first extent % parts chunks get one more).
inline constexpr int64_t chunkSize(int64_t extent, int64_t parts,
                                   int64_t index) {
  return extent / parts + (index < extent % parts ? 1 : 0);
}
inline constexpr int64_t chunkOffset(int64_t extent, int64_t parts,
                                     int64_t index) {
  return index * (extent / parts) + std::min(index, extent % parts);
}
/// Whether `size` is the size of some chunk of `extent` split into `parts`.
inline constexpr bool isChunkSize(int64_t size, int64_t extent, int64_t parts) {
  return size == extent / parts ||
         (extent % parts != 0 && size == extent / parts + 1);
}

/// A distribution's mesh ranks as text, "[0, 1, 3]"; past 16 ranks, runs
/// of three or more consecutive ranks read "a-b" (a placement may hold a
/// million ranks).
inline std::string ranksText(const int32_t *ranks, size_t count) {
  constexpr size_t kListed = 16;
  std::string text = "[";
  for (size_t i = 0; i < count; ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
    size_t end = i;
    while (count > kListed && end + 1 < count &&
           ranks[end + 1] == ranks[end] + 1)
      ++end;
    if (end >= i + 2) {
      text += "-" + std::to_string(ranks[end]);
      i = end;
    }
  }
  return text + "]";
}

} // namespace of::sbp

#endif // OF_ABI_SBP_H
