//===- Distribution.h - Global tensors over the ranks of a placement ------===//
//
// The arithmetic of SBP layouts that the runtime needs: balanced chunks
// (member k of p holds e / p + (k < e % p) of an extent e, at offset
// k * (e / p) + min(k, e % p)), the part of a global tensor a rank holds
// under a `Distribution`, and copying boxes of row-major tensors. The
// semantics are those of PlanFormat.fbs; the plan loader checked every
// distribution before anything here sees it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_DISTRIBUTION_H
#define OF_LIB_RUNTIME_DISTRIBUTION_H

#include "Session/Status.h"

#include "OF/ABI/PlanFormat_generated.h"
#include "OF/ABI/Sbp.h"

#include <cstdint>
#include <string>
#include <vector>

namespace of::rt {

/// A Distribution's SBP codes and balanced splits (OF/ABI/Sbp.h).
using sbp::chunkOffset;
using sbp::chunkSize;

/// A Distribution as plain values.
struct DistSpec {
  std::vector<int64_t> globalShape;
  std::vector<int64_t> mesh;
  std::vector<int> meshRanks;
  std::vector<int> sbp;

  static DistSpec from(const plan::Distribution &dist);
  bool operator==(const DistSpec &other) const;
  /// "global [6, 4] over mesh [2, 2] ranks [0, 1, 2, 3] sbp [S(0), B]".
  std::string describe() const;
  /// The position of `worldRank` in meshRanks, or -1.
  int memberIndex(int worldRank) const;
  /// Whether some axis is P (sum or max).
  bool partial() const;
  /// The reduction of the P axes (the loader allows only one kind).
  plan::ReduceOp partialOp() const;
};

/// The row-major grid coordinates of position `index` in `mesh`.
std::vector<int64_t> gridCoordinates(const std::vector<int64_t> &mesh,
                                     int64_t index);
/// The position of grid coordinates in `mesh`.
int64_t gridIndex(const std::vector<int64_t> &mesh,
                  const std::vector<int64_t> &coordinates);

/// The part of the global tensor that grid member `member` holds.
struct LocalPart {
  std::vector<int64_t> offsets; // in the global tensor
  std::vector<int64_t> extents; // the local shape
  /// Some P axis has a non-zero coordinate: under a sum the member holds
  /// the identity (its contribution is zero) when set from a global value.
  bool holdsIdentity = false;
  /// Some B axis has a non-zero coordinate: the member holds a copy of
  /// what the member with coordinate 0 there holds.
  bool duplicate = false;
};
LocalPart localPart(const DistSpec &dist, int member);

/// Copies the box at `offsets` of extents `extents` out of the row-major
/// tensor `whole` of shape `shape` into the dense `box` (or, with `into`,
/// from `box` into `whole`). Elements are `elementSize` bytes.
void copyBox(const void *whole, const std::vector<int64_t> &shape,
             const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &extents, void *box,
             size_t elementSize);
void copyIntoBox(void *whole, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &offsets,
                 const std::vector<int64_t> &extents, const void *box,
                 size_t elementSize);
/// whole[box] = op(whole[box], box) elementwise.
void reduceIntoBox(void *whole, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &extents, const void *box,
                   plan::DType dtype, plan::ReduceOp op);

/// The product of `dims` (1 for none).
uint64_t product(const std::vector<int64_t> &dims);
/// "[6, 4]".
std::string formatDims(const std::vector<int64_t> &dims);
std::string formatRanks(const std::vector<int> &ranks);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_DISTRIBUTION_H
