//===- PlanFormat.h - The fixed header of a binary plan (.ofp) -----------===//
//
// A binary plan is
//
//   [ header (64 bytes) | metadata FlatBuffer | padding | blob section ]
//
// The header says where the metadata (a `of.plan.Plan` FlatBuffer, see
// PlanFormat.fbs) and the blob section are, how long the file is, and holds
// a checksum of everything after the header. Blobs start 64-byte aligned and
// are read in place. All integers are little-endian. Both the writer
// (of-translate) and the reader (libofrt) include this file, so the layout
// has one definition.
//
//===----------------------------------------------------------------------===//

#ifndef OF_RUNTIME_PLANFORMAT_H
#define OF_RUNTIME_PLANFORMAT_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace of::plan {

/// The file starts with these 8 bytes.
inline constexpr char kMagic[8] = {'O', 'F', 'P', 'L', 'A', 'N', '\0', '\x1a'};
/// Bumped on every incompatible change of the header or the schema.
inline constexpr uint32_t kFormatVersion = 3;
/// Blobs (and the blob section) are aligned to this many bytes.
inline constexpr uint64_t kBlobAlignment = 64;

/// The devices a program runs on (Program.device, of.placement's device,
/// the pipeline's target).
/// The most devices a placement (and a plan's world) may hold: 2^20, far
/// beyond any machine, so that rank products and per-rank tables stay in
/// checked, allocatable sizes.
inline constexpr int64_t kMaxDevices = int64_t(1) << 20;

inline constexpr std::string_view kDeviceCpu = "cpu";
inline constexpr std::string_view kDeviceCuda = "cuda";
inline constexpr bool isDevice(std::string_view device) {
  return device == kDeviceCpu || device == kDeviceCuda;
}

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t headerSize;     // sizeof(FileHeader)
  uint64_t metadataOffset; // the FlatBuffer
  uint64_t metadataSize;
  uint64_t blobsOffset;    // the blob section, kBlobAlignment-aligned
  uint64_t blobsSize;
  uint64_t fileSize;       // the whole file
  uint64_t checksum;       // checksum(bytes [headerSize, fileSize))
};
static_assert(sizeof(FileHeader) == 64, "the header is 64 bytes");

/// FNV-1a (64 bit) over `size` bytes. Not cryptographic: it catches flipped
/// and truncated bytes, which is what a plan loader needs.
inline uint64_t checksum(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

} // namespace of::plan

#endif // OF_RUNTIME_PLANFORMAT_H
