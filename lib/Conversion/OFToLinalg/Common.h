//===- Common.h - What the of-to-linalg patterns share ----------*- C++ -*-===//
//
// Building blocks of the lowering patterns of --convert-of-to-linalg (one
// file per op family, as upstream TosaToLinalg), and the populate function
// of each family, which OFToLinalg.cpp combines.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_CONVERSION_OFTOLINALG_COMMON_H
#define OF_LIB_CONVERSION_OFTOLINALG_COMMON_H

#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::of::linalg_lowering {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

/// The body of an elementwise generic: scalar arguments in, one scalar out.
using ScalarFn =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange /*args*/)>;

RankedTensorType localType(Type type);

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type);

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// The lowest value of an element type (-inf for floats), the identity of max.
Value lowestValue(OpBuilder &b, Location loc, Type type);

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value scalar);

/// The indexing map that reads an operand of `shape` broadcast (NumPy rules)
/// into a loop nest over `resultShape`.
AffineMap broadcastMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> resultShape,
                       MLIRContext *ctx);

/// A parallel linalg.generic over `resultType` that reads `inputs` with
/// NumPy broadcasting and computes each element with `fn`.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, ScalarFn fn);

/// The accumulator of a sum of products of `type`'s elements: f32 for bf16
/// and f16 (a 16-bit accumulator stops growing), else `type` itself.
RankedTensorType accumulatorType(RankedTensorType type);

/// `v` (a scalar) extended to the accumulator type `acc` when narrower.
Value widen(OpBuilder &b, Location loc, Type acc, Value v);

/// An accumulator tensor rounded once to `type`'s elements.
Value roundFromAccumulator(OpBuilder &b, Location loc, RankedTensorType type,
                           Value acc);

/// Reduces `input` over `axes` (sorted, non-negative) into a tensor without
/// those dimensions, starting from `init` and combining with `combine`.
Value reduce(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes, Value init,
    llvm::function_ref<Value(OpBuilder &, Location, Value, Value)> combine);

/// Re-inserts size-1 dimensions at `axes` (sorted) into a reduced tensor,
/// giving `keptType`.
Value keepDims(OpBuilder &b, Location loc, Value reduced,
               RankedTensorType keptType);

/// Reshape of a row-major tensor through collapse/expand (views after
/// bufferization); tensor.reshape when a side has rank 0.
Value reshape(OpBuilder &b, Location loc, Value input,
              RankedTensorType resultType);

/// Normalises a possibly negative axis.
int64_t normAxis(int64_t axis, int64_t rank);

/// The maps of a generic over `rank` dims that reads a full tensor and a
/// tensor reduced over `axes` (as a projection).
AffineMap projectionWithout(int64_t rank, ArrayRef<int64_t> axes,
                            MLIRContext *ctx);

/// A generic over `type`'s shape reading `full` (identity) and each of
/// `reduced` (projected over `axes`).
Value combineWithReduced(OpBuilder &b, Location loc, RankedTensorType type,
                         Value full, ValueRange reduced, ArrayRef<int64_t> axes,
                         ScalarFn fn);

Value addValues(OpBuilder &b, Location loc, Value x, Value y);

Value maxValues(OpBuilder &b, Location loc, Value x, Value y);

/// The float sum of `input` over `axes` in stages: the last axis first,
/// then the partial sums over the others. A sum over several axes as one
/// loop nest carries one accumulator through every term (rounding error
/// growing with the square root of their number: 1.2e-5 was seen for a
/// sum of 10^5 positive f32 terms); in stages each accumulator sees one
/// axis's terms.
Value sumInStages(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes);

/// Sum, max (and so on) of `input` over `axes`, as a tensor without them.
Value reduceSum(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> axes);

/// Mean over `axes` of `x` as a reduced tensor.
Value reduceMeanOf(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes);

Value reduceMax(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> axes);

/// Axes [from, rank).
SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank);

//===----------------------------------------------------------------------===//
// Scalar bodies shared by elementwise patterns
//===----------------------------------------------------------------------===//

Value sigmoidScalar(OpBuilder &b, Location loc, Value x);

Value geluScalar(OpBuilder &b, Location loc, Value x, bool tanhApprox);

Value compareScalar(OpBuilder &b, Location loc, CompareDirection direction,
                    Value lhs, Value rhs);

/// Converts a scalar between the element types of of.cast.
Value castScalar(OpBuilder &b, Location loc, Value x, Type to);

/// Marks a gather kernel so that the plan checks operand `operand` (an
/// integer tensor) for indices in [0, hi) before the kernel runs.
void markIndexRange(Operation *op, int64_t operand, int64_t hi);

Value indexCast(OpBuilder &b, Location loc, Value v);

/// Pads the two spatial dimensions of an NCHW tensor with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padding, Value value);

/// Whether a pooling's windows tile its input exactly (stride = window, no
/// padding, the output times the window the input): every input position
/// is then in one window.
bool windowsTile(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> padding, RankedTensorType x,
                 RankedTensorType y);

/// The axes a batch norm of `type` ([N, C, ...]) reduces: all but 1.
SmallVector<int64_t> batchNormAxes(RankedTensorType type);

/// The batch mean and biased variance per channel of `x` ([N, C, ...]).
std::pair<Value, Value> batchStatistics(OpBuilder &b, Location loc, Value x);

/// A training batch norm's new running statistics, from the batch's `mean`
/// and biased `var`: old * (1 - momentum) + batch * momentum, the variance
/// made unbiased (count / (count - 1)), as PyTorch.
std::pair<Value, Value> runningStatistics(OpBuilder &b, Location loc,
                                          BatchNormOp op,
                                          BatchNormOp::Adaptor adaptor,
                                          Value mean, Value var);

template <typename OpTy> SmallVector<int64_t> poolStrides(OpTy op) {
  if (op.getStrides())
    return SmallVector<int64_t>(op.getStrides()->begin(),
                                op.getStrides()->end());
  return SmallVector<int64_t>(op.getKernelSize());
}

/// Index arithmetic for the pooling and gradient kernels' bodies.
struct IndexMath {
  OpBuilder &b;
  Location l;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, l, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, l, x, y); }
  Value mul(Value x, int64_t k) { return arith::MulIOp::create(b, l, x, c(k)); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, l, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, l, x, y); }
  /// For an input position `pos` (padding `pad`), the window offset `k`
  /// (already dilated) of output position (pos + pad - k) / stride:
  /// whether that output exists, and its index (0 where it does not).
  std::pair<Value, Value> window(Value pos, int64_t pad, Value k,
                                 int64_t stride, int64_t outSize) {
    Value at = sub(add(pos, c(pad)), k);
    Value valid = both(cmp(arith::CmpIPredicate::sge, at, c(0)),
                       cmp(arith::CmpIPredicate::slt, at, c(outSize * stride)));
    if (stride != 1)
      valid =
          both(valid, cmp(arith::CmpIPredicate::eq,
                          arith::RemSIOp::create(b, l, at, c(stride)), c(0)));
    Value out = stride == 1 ? at : arith::DivSIOp::create(b, l, at, c(stride));
    return {valid, arith::SelectOp::create(b, l, valid, out, c(0))};
  }
  /// How many elements of window `o` (kernel `k`, stride `s`, padding
  /// `pad`) lie inside an extent of `size`: avg pooling's count without
  /// the padding.
  Value windowCount(Value o, int64_t size, int64_t k, int64_t s, int64_t pad) {
    Value start = sub(mul(o, s), c(pad));
    Value lo = arith::MaxSIOp::create(b, l, start, c(0));
    Value hi = arith::MinSIOp::create(b, l, add(start, c(k)), c(size));
    return sub(hi, lo);
  }
};

//===----------------------------------------------------------------------===//
// The op families
//===----------------------------------------------------------------------===//

/// Adds the patterns of elementwise ops and dropout.
void populateElementwisePatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// Adds the patterns of boxing, reshape, transpose, slice, concat.
void populateDataMovementPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
/// Adds the patterns of reductions, softmax and cross entropy.
void populateReductionsPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns);
/// Adds the patterns of matrix products.
void populateMatmulPatterns(const TypeConverter &converter,
                            RewritePatternSet &patterns);
/// Adds the patterns of layer, RMS and batch normalisation.
void populateNormalizationPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns);
/// Adds the patterns of embedding lookups and their gradient (scattered row
/// by row with `rowScatters`, else column by column).
void populateEmbeddingPatterns(const TypeConverter &converter,
                               RewritePatternSet &patterns, bool rowScatters);
/// Adds the patterns of convolutions and their gradients.
void populateConvolutionPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// Adds the patterns of max and average pooling and their gradients.
void populatePoolingPatterns(const TypeConverter &converter,
                             RewritePatternSet &patterns);

} // namespace mlir::of::linalg_lowering

#endif // OF_LIB_CONVERSION_OFTOLINALG_COMMON_H
