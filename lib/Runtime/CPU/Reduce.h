//===- Reduce.h - Elementwise reductions of plan element types ------------===//
//
// The sum and max of every reducible plan dtype (f32, f64, f16, bf16, i64,
// i32, i8), used where the runtime reduces itself: the MPI user operations
// for f16 and bf16 (MPI has no such types), assembling a partial output, and
// the identity a partial value holds on the ranks that contribute nothing.
// f16 and bf16 are computed in f32 and rounded to nearest even, like the
// kernels. Buffers need not be aligned to the element type.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_REDUCE_H
#define OF_LIB_RUNTIME_REDUCE_H

#include "OF/ABI/PlanFormat_generated.h"

#include <cstdint>

namespace of::rt {

/// Whether `dtype` can be summed or maxed (every dtype but i1).
bool isReducible(plan::DType dtype);

/// acc[i] = op(acc[i], x[i]) for `count` elements of `dtype`.
void reduceInto(plan::DType dtype, plan::ReduceOp op, void *acc,
                const void *x, uint64_t count);

/// Fills `count` elements with the identity of `op`: 0 for a sum, the lowest
/// value (-inf for floats) for a max.
void fillIdentity(plan::DType dtype, plan::ReduceOp op, void *data,
                  uint64_t count);

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_REDUCE_H
