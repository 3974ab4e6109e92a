//===- PlanFile.h - A verified binary plan (.ofp) in memory ---------------===//
//
// A PlanFile is a private, 64-byte aligned copy of a .ofp file that has been
// verified once, completely: the fixed header (PlanFormat.h), the checksum,
// the FlatBuffers verifier, and then the plan's semantics (every index,
// offset, size, library call parameter and event in bounds). Everything
// downstream (sessions, executors) may therefore index the plan without
// re-checking. The plan is immutable after opening and shared by the
// sessions made from it, whose constant buffers point into it.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_PLANFILE_H
#define OF_LIB_RUNTIME_PLANFILE_H

#include "Session/AlignedBytes.h"
#include "Session/Status.h"

#include "OF/ABI/LibraryCalls.h"
#include "OF/ABI/PlanFormat.h"
#include "OF/ABI/PlanFormat_generated.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace of::rt {

/// Bytes per element of `dtype` (I1 is one byte); 0 for an invalid value.
size_t dtypeSize(plan::DType dtype);
/// "f32", "bf16", ...; "invalid" for a value outside the enum.
const char *dtypeName(plan::DType dtype);
/// "[64, 128]" for a shape; "[]" for a scalar or a missing shape.
std::string formatShape(const flatbuffers::Vector<int64_t> *shape);

/// The parameters of a "blas.gemm" call (see PlanFormat.fbs), with the BLAS
/// layout derived from the strides. Filled by decodeGemm, which the loader
/// has already run successfully on every gemm of an opened plan.
struct GemmCall {
  int64_t batch = 0, m = 0, n = 0, k = 0;
  int64_t aBatchStride = 0, aMStride = 0, aKStride = 0;
  int64_t bBatchStride = 0, bKStride = 0, bNStride = 0;
  int64_t cBatchStride = 0, cMStride = 0;
  /// A second, outer batch level (1 when the call has 12 parameters): a
  /// contraction with two batch dimensions that do not merge into one
  /// stride, e.g. [B, 1, T, C] x [H, C, D] -> [B, H, T, D].
  int64_t outerBatch = 1;
  int64_t aOuterStride = 0, bOuterStride = 0, cOuterStride = 0;
  bool transposeA = false, transposeB = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

/// Decodes the 12 gemm parameters and derives the BLAS layout (row-major;
/// a unit k stride of A means no transpose, a unit m stride a transpose, and
/// likewise for B's n and k strides). Fails on a wrong parameter count, a
/// negative value, a layout BLAS cannot express, or a leading dimension out
/// of BLAS's range. Does not look at buffers.
Status decodeGemm(const flatbuffers::Vector<int64_t> *params, GemmCall &call);

/// A short description of a step for messages and profiling: "launch k",
/// "library blas.gemm", "copy a->b", "collective AllReduce", "output y",
/// "event record 3", "event wait 3". Only for steps of a verified plan, or
/// steps whose detail was checked to be present and of a known type.
std::string describeStep(const plan::Program &program, const plan::Step &step);

/// A verified, immutable plan.
class PlanFile {
public:
  /// Reads and verifies the plan at `path`. With `trustedKeys` (a file of
  /// public keys, PlanSignature.h), the bytes read must first match the
  /// signature `path`.sig by one of those keys.
  static Status openFile(const char *path, std::shared_ptr<const PlanFile> &out,
                         const std::string &trustedKeys = "");
  /// Copies `size` bytes at `data` and verifies them.
  static Status openMemory(const void *data, size_t size,
                           std::shared_ptr<const PlanFile> &out);

  const plan::Plan &plan() const { return *plan_; }
  const plan::FileHeader &header() const { return header_; }

  /// The bytes of blob `index` (checked in bounds and aligned at open).
  const uint8_t *blobData(uint32_t index) const;
  uint64_t blobSize(uint32_t index) const;

  /// The distinct entry names, in the order of their first program.
  const std::vector<std::string> &entries() const { return entries_; }
  /// The program named `entry` that `rank` runs, or null.
  const plan::Program *findProgram(std::string_view entry, int rank) const;
  /// The first program named `entry`, or null.
  const plan::Program *findProgram(std::string_view entry) const;

private:
  PlanFile() = default;
  /// Verifies bytes_ and sets plan_, header_ and entries_.
  Status verify();

  AlignedBytes bytes_;
  plan::FileHeader header_{};
  const plan::Plan *plan_ = nullptr;
  std::vector<std::string> entries_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_PLANFILE_H
