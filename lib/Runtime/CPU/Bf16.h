//===- Bf16.h - bf16 <-> f32 on the CPU, for the f32 fallbacks ------------===//
//
// Where oneDNN has no bf16 kernels (CPUs without AVX-512), the CPU executor
// computes bf16 gemms, convolutions and poolings in f32: operands widened
// exactly, results rounded to the nearest bf16 (ties to even, NaN kept
// quiet), as oneDNN's bf16 kernels round their f32 accumulators.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_CPU_BF16_H
#define OF_LIB_RUNTIME_CPU_BF16_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace of::rt {

inline float bf16ToFloat(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

inline uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if (std::isnan(value))
    return uint16_t(0x7fc0 | ((word >> 16) & 0x8000));
  return uint16_t((word + 0x7fff + ((word >> 16) & 1)) >> 16);
}

} // namespace of::rt

#endif // OF_LIB_RUNTIME_CPU_BF16_H
