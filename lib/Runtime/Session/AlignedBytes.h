//===- AlignedBytes.h - 64-byte aligned heap storage ----------------------===//
//
// The plan copy, the arena, and the session-owned input and output storage
// are all 64-byte aligned: blobs are 64-byte aligned inside the plan, so the
// plan copy must be too for constants to be aligned in place, and kernels
// may assume their buffers are at least as aligned as the arena offsets the
// compiler chose. Allocation failure is a Status, never an abort.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_ALIGNEDBYTES_H
#define OF_LIB_RUNTIME_ALIGNEDBYTES_H

#include "Session/Status.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace of::rt {

/// Owns `size` bytes of zero-initialised, 64-byte aligned heap memory.
class AlignedBytes {
public:
  static constexpr uint64_t kAlignment = 64;

  AlignedBytes() = default;

  /// Allocates `size` zeroed bytes; `what` names the storage in the error.
  /// A size of 0 still yields a valid, aligned (unusable) pointer so that
  /// kernels never see null.
  Status allocate(uint64_t size, const char *what) {
    uint64_t rounded = size == 0 ? kAlignment : size;
    if (rounded > UINT64_MAX - kAlignment || rounded > SIZE_MAX - kAlignment)
      return fail("cannot allocate ", size, " bytes for ", what);
    rounded = (rounded + kAlignment - 1) / kAlignment * kAlignment;
    void *memory = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded));
    if (!memory)
      return fail("cannot allocate ", size, " bytes for ", what);
    std::memset(memory, 0, static_cast<size_t>(rounded));
    data_.reset(static_cast<uint8_t *>(memory));
    size_ = size;
    return Status::success();
  }

  uint8_t *data() { return data_.get(); }
  const uint8_t *data() const { return data_.get(); }
  uint64_t size() const { return size_; }

private:
  struct Free {
    void operator()(uint8_t *memory) const { std::free(memory); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  uint64_t size_ = 0;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_ALIGNEDBYTES_H
