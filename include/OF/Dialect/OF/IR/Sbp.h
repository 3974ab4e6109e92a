//===- Sbp.h - The SBP vocabulary of the of dialect ------------*- C++ -*-===//
//
// What SbpOpInterface, the analyses (OF/Dialect/OF/Analysis: boxing plans,
// the cost model, placements) and the passes share:
//   - SbpSignature: one 1-D signature of an op (an entry per operand and per
//     result); an nd signature is one per placement axis (the product rule);
//   - balanced splits and local shapes of nd-SBP tensors.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_SBP_H
#define OF_DIALECT_OF_IR_SBP_H

#include "OF/Dialect/OF/IR/OFAttrs.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <string>

namespace mlir {
namespace of {

/// One 1-D signature: the entry of every operand and every result on one
/// placement axis.
struct SbpSignature {
  llvm::SmallVector<SbpEntry, 4> operands;
  llvm::SmallVector<SbpEntry, 2> results;

  /// `S(0), B -> S(0)`.
  std::string str() const;
  bool operator==(const SbpSignature &o) const {
    return operands == o.operands && results == o.results;
  }
};

/// nd-SBP: one entry per placement axis.
using NdSbp = llvm::SmallVector<SbpEntry, 2>;

/// `[S(0), B]`.
std::string str(llvm::ArrayRef<SbpEntry> sbp);

/// Balanced split of `extent` into `parts`: the size and offset of chunk
/// `index` (the first extent % parts chunks get one more), and whether
/// `size` is the size of some chunk. The arithmetic is the runtime's
/// (OF/ABI/Sbp.h, which this header does not include: its namespace `of`
/// would make `of::` ambiguous under `using namespace mlir`).
int64_t chunkSize(int64_t extent, int64_t parts, int64_t index);
int64_t chunkOffset(int64_t extent, int64_t parts, int64_t index);
bool isChunkSize(int64_t size, int64_t extent, int64_t parts);

/// The local shape at grid coordinate `coord` of a tensor of global shape
/// `shape` distributed as `sbp` over a grid: axes apply in order, each to
/// the extent the previous ones left.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> shape,
                                      llvm::ArrayRef<SbpEntry> sbp,
                                      llvm::ArrayRef<int64_t> grid,
                                      llvm::ArrayRef<int64_t> coord);

/// Grid coordinate of linear (row-major) position `index`.
llvm::SmallVector<int64_t> gridCoordinate(llvm::ArrayRef<int64_t> grid,
                                          int64_t index);

/// Whether `sbp` is a valid distribution of a tensor of rank `rank` on a
/// grid of `gridRank` axes; on failure `why` says what is wrong.
bool isValidSbp(llvm::ArrayRef<SbpEntry> sbp, int64_t rank, size_t gridRank,
                std::string &why);

/// Floating-point work of an op on its global shapes (the default of
/// SbpOpInterface::getSbpFlops): 2MNK for matmul, the MACs of conv2d and its
/// gradients, the result (or input, for reductions) elements otherwise.
double defaultSbpFlops(Operation *op);

/// `nd` with its partial axes (P, P(max)) as B: what a value settled on its
/// placement is, before it moves to another one.
inline NdSbp settled(ArrayRef<SbpEntry> nd) {
  NdSbp out(nd.begin(), nd.end());
  for (SbpEntry &e : out)
    if (e.isPartial())
      e = SbpEntry::broadcast();
  return out;
}

} // namespace of
} // namespace mlir

#endif // OF_DIALECT_OF_IR_SBP_H
