//===- OFAttrs.h - SBP distribution attribute ------------------*- C++ -*-===//
//
// Declares SbpEntry (one axis of an SBP distribution) and the generated
// attribute classes of the of dialect, #of.sbp first among them.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFATTRS_H
#define OF_DIALECT_OF_IR_OFATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TensorEncoding.h"
#include "llvm/ADT/Hashing.h"

#include <string>

namespace mlir {
namespace of {

/// How a tensor is laid out along one axis of a placement.
enum class SbpKind : uint8_t {
  Split,      ///< S(d): dimension d is cut into balanced shards.
  Broadcast,  ///< B: every device holds the whole tensor.
  PartialSum, ///< P: the logical value is the sum over the axis.
  PartialMax, ///< P(max): the logical value is the max over the axis.
};

/// One entry of an SBP list: a kind, and for Split the tensor dimension.
struct SbpEntry {
  SbpKind kind = SbpKind::Broadcast;
  int64_t dim = 0; ///< Only meaningful for SbpKind::Split.

  static SbpEntry split(int64_t d) { return {SbpKind::Split, d}; }
  static SbpEntry broadcast() { return {SbpKind::Broadcast, 0}; }
  static SbpEntry partialSum() { return {SbpKind::PartialSum, 0}; }
  static SbpEntry partialMax() { return {SbpKind::PartialMax, 0}; }

  bool isSplit() const { return kind == SbpKind::Split; }
  bool isBroadcast() const { return kind == SbpKind::Broadcast; }
  bool isPartial() const {
    return kind == SbpKind::PartialSum || kind == SbpKind::PartialMax;
  }

  bool operator==(const SbpEntry &other) const {
    return kind == other.kind && (kind != SbpKind::Split || dim == other.dim);
  }
  bool operator!=(const SbpEntry &other) const { return !(*this == other); }

  /// The entry's code in a plan Distribution (OF/ABI/Sbp.h): d for S(d),
  /// ::of::sbp::kBroadcast, kPartialSum or kPartialMax.
  int32_t code() const;
  /// The entry of a valid code.
  static SbpEntry fromCode(int32_t code);

  /// `S(d)`, `B`, `P` or `P(max)`, as written in #of.sbp.
  std::string str() const;
};

inline llvm::hash_code hash_value(const SbpEntry &entry) {
  return llvm::hash_combine(static_cast<uint8_t>(entry.kind),
                            entry.isSplit() ? entry.dim : 0);
}

/// Prints `S(d)`, `B`, `P` or `P(max)`.
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const SbpEntry &entry);

} // namespace of
} // namespace mlir

#include "OF/Dialect/OF/IR/OFEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "OF/Dialect/OF/IR/OFAttrs.h.inc"

#endif // OF_DIALECT_OF_IR_OFATTRS_H
