//===- Reduce.cpp - Elementwise reductions of plan element types ----------===//

#include "CPU/Reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace of::plan;

namespace of::rt {

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13); // inf, nan
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // A subnormal half is a normal float: shift the mantissa up.
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    out = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) // inf, nan (keep nan quiet and non-zero)
    return sign | (absBits > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (absBits >= 0x477ff000u) // rounds to above the largest half
    return sign | 0x7c00u;
  if (absBits < 0x38800000u) {
    // Subnormal or zero half: round the value scaled by 2^24.
    if (absBits < 0x33000000u)
      return sign;
    float magnitude;
    std::memcpy(&magnitude, &absBits, sizeof magnitude);
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  // Normal: rebias, round to nearest even on the 13 dropped bits.
  uint32_t rounded = absBits + 0xfffu + ((absBits >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

uint16_t floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u); // quiet nan
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

bool isReducible(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::I64:
  case DType::I32:
  case DType::I8:
    return true;
  case DType::I1:
    return false;
  }
  return false;
}

namespace {

template <typename T>
void reduceValues(ReduceOp op, void *acc, const void *x, uint64_t count) {
  auto *a = static_cast<unsigned char *>(acc);
  const auto *b = static_cast<const unsigned char *>(x);
  for (uint64_t i = 0; i < count; ++i) {
    T left, right;
    std::memcpy(&left, a + i * sizeof(T), sizeof(T));
    std::memcpy(&right, b + i * sizeof(T), sizeof(T));
    T result;
    if (op == ReduceOp::Sum) {
      // Integers wrap like the kernels' two's-complement arithmetic.
      if constexpr (std::is_integral_v<T>)
        result = static_cast<T>(static_cast<std::make_unsigned_t<T>>(left) +
                                static_cast<std::make_unsigned_t<T>>(right));
      else
        result = left + right;
    } else if constexpr (std::is_floating_point_v<T>) {
      // NaN propagates, as in the kernels' maximumf.
      result = (std::isnan(left) || std::isnan(right))
                   ? std::numeric_limits<T>::quiet_NaN()
                   : std::max(left, right);
    } else {
      result = std::max(left, right);
    }
    std::memcpy(a + i * sizeof(T), &result, sizeof(T));
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduceHalves(ReduceOp op, void *acc, const void *x, uint64_t count) {
  auto *a = static_cast<unsigned char *>(acc);
  const auto *b = static_cast<const unsigned char *>(x);
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t left, right;
    std::memcpy(&left, a + 2 * i, 2);
    std::memcpy(&right, b + 2 * i, 2);
    float l = ToFloat(left), r = ToFloat(right), result;
    if (op == ReduceOp::Sum)
      result = l + r;
    else
      result = (std::isnan(l) || std::isnan(r))
                   ? std::numeric_limits<float>::quiet_NaN()
                   : std::max(l, r);
    uint16_t bits = FromFloat(result);
    std::memcpy(a + 2 * i, &bits, 2);
  }
}

template <typename T> void fill(void *data, uint64_t count, T value) {
  auto *bytes = static_cast<unsigned char *>(data);
  for (uint64_t i = 0; i < count; ++i)
    std::memcpy(bytes + i * sizeof(T), &value, sizeof(T));
}

} // namespace

void reduceInto(DType dtype, ReduceOp op, void *acc, const void *x,
                uint64_t count) {
  switch (dtype) {
  case DType::F32:
    return reduceValues<float>(op, acc, x, count);
  case DType::F64:
    return reduceValues<double>(op, acc, x, count);
  case DType::F16:
    return reduceHalves<halfToFloat, floatToHalf>(op, acc, x, count);
  case DType::BF16:
    return reduceHalves<bfloat16ToFloat, floatToBfloat16>(op, acc, x, count);
  case DType::I64:
    return reduceValues<int64_t>(op, acc, x, count);
  case DType::I32:
    return reduceValues<int32_t>(op, acc, x, count);
  case DType::I8:
    return reduceValues<int8_t>(op, acc, x, count);
  case DType::I1:
    // Not reducible (the loader refuses it); a max is a logical or.
    return reduceValues<uint8_t>(ReduceOp::Max, acc, x, count);
  }
}

void fillIdentity(DType dtype, ReduceOp op, void *data, uint64_t count) {
  if (op == ReduceOp::Sum || dtype == DType::I1) {
    // Zero is all-zero bits in every dtype.
    std::memset(data, 0, static_cast<size_t>(count * [&] {
                  switch (dtype) {
                  case DType::F64:
                  case DType::I64:
                    return 8;
                  case DType::F32:
                  case DType::I32:
                    return 4;
                  case DType::F16:
                  case DType::BF16:
                    return 2;
                  default:
                    return 1;
                  }
                }()));
    return;
  }
  switch (dtype) {
  case DType::F32:
    return fill(data, count, -std::numeric_limits<float>::infinity());
  case DType::F64:
    return fill(data, count, -std::numeric_limits<double>::infinity());
  case DType::F16:
    return fill<uint16_t>(data, count, 0xfc00u);
  case DType::BF16:
    return fill<uint16_t>(data, count, 0xff80u);
  case DType::I64:
    return fill(data, count, std::numeric_limits<int64_t>::lowest());
  case DType::I32:
    return fill(data, count, std::numeric_limits<int32_t>::lowest());
  case DType::I8:
    return fill(data, count, std::numeric_limits<int8_t>::lowest());
  case DType::I1:
    return;
  }
}

} // namespace of::rt
