//===- Distribution.cpp - Global tensors over the ranks of a placement ----===//

#include "Comm/Distribution.h"

#include "Plan/PlanFile.h"
#include "CPU/Reduce.h"

#include <cstring>

using namespace of::plan;

namespace of::rt {

DistSpec DistSpec::from(const Distribution &dist) {
  DistSpec spec;
  if (dist.global_shape())
    spec.globalShape.assign(dist.global_shape()->begin(),
                            dist.global_shape()->end());
  if (dist.mesh())
    spec.mesh.assign(dist.mesh()->begin(), dist.mesh()->end());
  if (dist.mesh_ranks())
    spec.meshRanks.assign(dist.mesh_ranks()->begin(), dist.mesh_ranks()->end());
  if (dist.sbp())
    spec.sbp.assign(dist.sbp()->begin(), dist.sbp()->end());
  return spec;
}

bool DistSpec::operator==(const DistSpec &other) const {
  return globalShape == other.globalShape && mesh == other.mesh &&
         meshRanks == other.meshRanks && sbp == other.sbp;
}

std::string DistSpec::describe() const {
  std::string sbpText = "[";
  for (size_t i = 0; i < sbp.size(); ++i)
    sbpText += (i ? ", " : "") + sbp::text(sbp[i]);
  sbpText += "]";
  return formatMessage("global ", formatDims(globalShape), " over mesh ",
                       formatDims(mesh), " ranks ", formatRanks(meshRanks),
                       " sbp ", sbpText);
}

int DistSpec::memberIndex(int worldRank) const {
  for (size_t i = 0; i < meshRanks.size(); ++i)
    if (meshRanks[i] == worldRank)
      return static_cast<int>(i);
  return -1;
}

bool DistSpec::partial() const {
  for (int entry : sbp)
    if (sbp::isPartial(entry))
      return true;
  return false;
}

ReduceOp DistSpec::partialOp() const {
  for (int entry : sbp)
    if (entry == sbp::kPartialMax)
      return ReduceOp::Max;
  return ReduceOp::Sum;
}

std::vector<int64_t> gridCoordinates(const std::vector<int64_t> &mesh,
                                     int64_t index) {
  std::vector<int64_t> coordinates(mesh.size());
  for (size_t a = mesh.size(); a-- > 0;) {
    coordinates[a] = index % mesh[a];
    index /= mesh[a];
  }
  return coordinates;
}

int64_t gridIndex(const std::vector<int64_t> &mesh,
                  const std::vector<int64_t> &coordinates) {
  int64_t index = 0;
  for (size_t a = 0; a < mesh.size(); ++a)
    index = index * mesh[a] + coordinates[a];
  return index;
}

LocalPart localPart(const DistSpec &dist, int member) {
  LocalPart part;
  part.offsets.assign(dist.globalShape.size(), 0);
  part.extents = dist.globalShape;
  std::vector<int64_t> coordinates = gridCoordinates(dist.mesh, member);
  for (size_t a = 0; a < dist.sbp.size(); ++a) {
    int entry = dist.sbp[a];
    if (entry >= 0) {
      int64_t extent = part.extents[entry];
      part.offsets[entry] +=
          chunkOffset(extent, dist.mesh[a], coordinates[a]);
      part.extents[entry] = chunkSize(extent, dist.mesh[a], coordinates[a]);
    } else if (entry == sbp::kBroadcast) {
      part.duplicate = part.duplicate || coordinates[a] != 0;
    } else {
      part.holdsIdentity = part.holdsIdentity || coordinates[a] != 0;
    }
  }
  return part;
}

uint64_t product(const std::vector<int64_t> &dims) {
  uint64_t result = 1;
  for (int64_t dim : dims)
    result *= static_cast<uint64_t>(dim);
  return result;
}

std::string formatDims(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string formatRanks(const std::vector<int> &ranks) {
  return sbp::ranksText(ranks.data(), ranks.size());
}

namespace {

/// Calls `row(wholeOffset, boxOffset)` (in elements) for every innermost
/// row of the box; a row is extents.back() elements (one for a scalar).
template <typename Row>
void forEachRow(const std::vector<int64_t> &shape,
                const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &extents, Row row) {
  size_t rank = shape.size();
  if (rank == 0)
    return row(0, 0);
  for (int64_t extent : extents)
    if (extent == 0)
      return;
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    strides[d] = strides[d + 1] * shape[d + 1];
  std::vector<int64_t> index(rank, 0); // over the box's outer dimensions
  int64_t rowLength = extents[rank - 1];
  for (uint64_t boxOffset = 0;; boxOffset += rowLength) {
    int64_t wholeOffset = 0;
    for (size_t d = 0; d < rank; ++d)
      wholeOffset += (offsets[d] + index[d]) * strides[d];
    row(static_cast<uint64_t>(wholeOffset), boxOffset);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < extents[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

int64_t rowElements(const std::vector<int64_t> &extents) {
  return extents.empty() ? 1 : extents.back();
}

} // namespace

void copyBox(const void *whole, const std::vector<int64_t> &shape,
             const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &extents, void *box,
             size_t elementSize) {
  size_t rowBytes = static_cast<size_t>(rowElements(extents)) * elementSize;
  forEachRow(shape, offsets, extents, [&](uint64_t w, uint64_t b) {
    std::memcpy(static_cast<unsigned char *>(box) + b * elementSize,
                static_cast<const unsigned char *>(whole) + w * elementSize,
                rowBytes);
  });
}

void copyIntoBox(void *whole, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &offsets,
                 const std::vector<int64_t> &extents, const void *box,
                 size_t elementSize) {
  size_t rowBytes = static_cast<size_t>(rowElements(extents)) * elementSize;
  forEachRow(shape, offsets, extents, [&](uint64_t w, uint64_t b) {
    std::memcpy(static_cast<unsigned char *>(whole) + w * elementSize,
                static_cast<const unsigned char *>(box) + b * elementSize,
                rowBytes);
  });
}

void reduceIntoBox(void *whole, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &extents, const void *box,
                   DType dtype, ReduceOp op) {
  size_t elementSize = dtypeSize(dtype);
  uint64_t rowLength = static_cast<uint64_t>(rowElements(extents));
  forEachRow(shape, offsets, extents, [&](uint64_t w, uint64_t b) {
    reduceInto(dtype, op,
               static_cast<unsigned char *>(whole) + w * elementSize,
               static_cast<const unsigned char *>(box) + b * elementSize,
               rowLength);
  });
}

} // namespace of::rt
