//===- OFToLinalg.cpp - Lower of ops to linalg on tensors -----------------===//
//
// Lowers a single-rank `of` program to linalg/tensor/arith/math on tensors.
// Assumes static shapes (the of verifiers guarantee them) and that the
// program runs on one rank, so SBP encodings are dropped and of.boxing is the
// identity (partitioning, issue 4, runs before this pass for many ranks).
//
// Elementwise ops become one linalg.generic each (NumPy broadcasting becomes
// indexing maps), so that upstream elementwise fusion can merge chains.
// Matrix products become linalg.contract, whose indexing maps the plan
// builder reads to call BLAS; reductions, normalisations and softmax become
// reductions plus elementwise generics.
//
//===----------------------------------------------------------------------===//

#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/ABI/LibraryCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir::of {
#define GEN_PASS_DEF_CONVERTOFTOLINALGPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

/// The body of an elementwise generic: scalar arguments in, one scalar out.
using ScalarFn =
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange /*args*/)>;

RankedTensorType localType(Type type) {
  return cast<RankedTensorType>(stripSbp(type));
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

/// The lowest value of an element type (-inf for floats), the identity of max.
Value lowestValue(OpBuilder &b, Location loc, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/true)));
  return arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(type,
                       APInt::getSignedMinValue(type.getIntOrFloatBitWidth())));
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value scalar) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

/// The indexing map that reads an operand of `shape` broadcast (NumPy rules)
/// into a loop nest over `resultShape`.
AffineMap broadcastMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> resultShape,
                       MLIRContext *ctx) {
  int64_t lead = resultShape.size() - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(shape)) {
    int64_t resultDim = lead + i;
    if (size == 1 && resultShape[resultDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(resultDim, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

/// A parallel linalg.generic over `resultType` that reads `inputs` with
/// NumPy broadcasting and computes each element with `fn`.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(
        broadcastMap(cast<RankedTensorType>(input.getType()).getShape(),
                     resultType.getShape(), ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = fn(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return generic.getResult(0);
}

/// The accumulator of a sum of products of `type`'s elements: f32 for bf16
/// and f16 (a 16-bit accumulator stops growing), else `type` itself.
static RankedTensorType accumulatorType(RankedTensorType type) {
  Type et = type.getElementType();
  if (!et.isBF16() && !et.isF16())
    return type;
  return RankedTensorType::get(type.getShape(),
                               Float32Type::get(type.getContext()));
}

/// `v` (a scalar) extended to the accumulator type `acc` when narrower.
static Value widen(OpBuilder &b, Location loc, Type acc, Value v) {
  return v.getType() == acc ? v : arith::ExtFOp::create(b, loc, acc, v);
}

/// An accumulator tensor rounded once to `type`'s elements.
static Value roundFromAccumulator(OpBuilder &b, Location loc,
                                  RankedTensorType type, Value acc) {
  if (cast<RankedTensorType>(acc.getType()).getElementType() ==
      type.getElementType())
    return acc;
  return elementwise(b, loc, type, acc,
                     [&](OpBuilder &bb, Location l, ValueRange args) -> Value {
                       return arith::TruncFOp::create(
                           bb, l, type.getElementType(), args[0]);
                     });
}

/// Reduces `input` over `axes` (sorted, non-negative) into a tensor without
/// those dimensions, starting from `init` and combining with `combine`.
Value reduce(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes, Value init,
    llvm::function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < inputType.getRank(); ++i)
    if (!llvm::is_contained(axes, i))
      shape.push_back(inputType.getDimSize(i));
  auto resultType = RankedTensorType::get(shape, inputType.getElementType());
  Value acc = filledTensor(b, loc, resultType, init);
  auto op = linalg::ReduceOp::create(
      b, loc, input, acc, axes,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args[0], args[1]));
      });
  return op.getResult(0);
}

/// Re-inserts size-1 dimensions at `axes` (sorted) into a reduced tensor,
/// giving `keptType`.
Value keepDims(OpBuilder &b, Location loc, Value reduced,
               RankedTensorType keptType) {
  auto reducedType = cast<RankedTensorType>(reduced.getType());
  if (reducedType == keptType)
    return reduced;
  return tensor::ReshapeOp::create(
      b, loc, keptType, reduced,
      arith::ConstantOp::create(
          b, loc,
          DenseIntElementsAttr::get(
              RankedTensorType::get({keptType.getRank()}, b.getI64Type()),
              keptType.getShape())));
}

/// Reshape of a row-major tensor through collapse/expand (views after
/// bufferization); tensor.reshape when a side has rank 0.
Value reshape(OpBuilder &b, Location loc, Value input,
              RankedTensorType resultType) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType == resultType)
    return input;
  if (inputType.getRank() == 0 || resultType.getRank() == 0)
    return keepDims(b, loc, input, resultType);
  Value flat = input;
  if (inputType.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < inputType.getRank(); ++i)
      all.push_back(i);
    flat = tensor::CollapseShapeOp::create(b, loc, input,
                                           ArrayRef<ReassociationIndices>{all});
  }
  if (resultType.getRank() == 1)
    return flat;
  ReassociationIndices all;
  for (int64_t i = 0; i < resultType.getRank(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, resultType, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// Normalises a possibly negative axis.
int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The maps of a generic over `rank` dims that reads a full tensor and a
/// tensor reduced over `axes` (as a projection).
AffineMap projectionWithout(int64_t rank, ArrayRef<int64_t> axes,
                            MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(axes, i))
      exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// A generic over `type`'s shape reading `full` (identity) and each of
/// `reduced` (projected over `axes`).
Value combineWithReduced(OpBuilder &b, Location loc, RankedTensorType type,
                         Value full, ValueRange reduced, ArrayRef<int64_t> axes,
                         ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = type.getRank();
  SmallVector<Value> inputs{full};
  SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx)};
  for (Value r : reduced) {
    inputs.push_back(r);
    maps.push_back(projectionWithout(rank, axes, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, inputs, emptyTensor(b, loc, type), maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       fn(nb, nloc, args.drop_back()));
             })
      .getResult(0);
}

Value addValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}

Value maxValues(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MaximumFOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

/// The float sum of `input` over `axes` in stages: the last axis first,
/// then the partial sums over the others. A sum over several axes as one
/// loop nest carries one accumulator through every term (rounding error
/// growing with the square root of their number: 1.2e-5 was seen for a
/// sum of 10^5 positive f32 terms); in stages each accumulator sees one
/// axis's terms.
Value sumInStages(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes) {
  SmallVector<int64_t> sorted(axes);
  llvm::sort(sorted);
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value zero = scalarConstant(b, loc, elementType, 0);
  Value sum = input;
  for (int64_t axis : llvm::reverse(sorted))
    sum = reduce(b, loc, sum, {axis}, zero, addValues);
  return sum;
}

/// Sum, max (and so on) of `input` over `axes`, as a tensor without them.
Value reduceSum(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> axes) {
  auto inputType = cast<RankedTensorType>(input.getType());
  Type elementType = inputType.getElementType();
  // bf16 and f16 sums accumulate in f32 and round once, as PyTorch's do: a
  // bf16 accumulator rounds at every term and stops growing altogether
  // once it is 2^9 times the terms (the mean of a long row is lost).
  if (auto floatType = dyn_cast<FloatType>(elementType);
      floatType && floatType.getWidth() < 32) {
    Type f32 = b.getF32Type();
    Value wide =
        elementwise(b, loc, inputType.clone(f32), input,
                    [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      return arith::ExtFOp::create(nb, l, f32, args[0]);
                    });
    Value sum = sumInStages(b, loc, wide, axes);
    return elementwise(
        b, loc, cast<RankedTensorType>(sum.getType()).clone(elementType), sum,
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::TruncFOp::create(nb, l, elementType, args[0]);
        });
  }
  if (isa<FloatType>(elementType))
    return sumInStages(b, loc, input, axes);
  return reduce(b, loc, input, axes, scalarConstant(b, loc, elementType, 0),
                addValues);
}

/// Mean over `axes` of `x` as a reduced tensor.
Value reduceMeanOf(OpBuilder &b, Location loc, Value x,
                   ArrayRef<int64_t> axes) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= type.getDimSize(axis);
  Value sum = reduceSum(b, loc, x, axes);
  return elementwise(
      b, loc, cast<RankedTensorType>(sum.getType()), sum,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::DivFOp::create(
            nb, l, args[0],
            scalarConstant(nb, l, args[0].getType(), double(count)));
      });
}

Value reduceMax(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> axes) {
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  return reduce(b, loc, input, axes, lowestValue(b, loc, elementType),
                maxValues);
}

/// Axes [from, rank).
SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

//===----------------------------------------------------------------------===//
// Scalar bodies shared by elementwise patterns
//===----------------------------------------------------------------------===//

Value sigmoidScalar(OpBuilder &b, Location loc, Value x) {
  Value one = scalarConstant(b, loc, x.getType(), 1.0);
  Value negX = arith::NegFOp::create(b, loc, x);
  Value expNeg = math::ExpOp::create(b, loc, negX);
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, expNeg));
}

Value geluScalar(OpBuilder &b, Location loc, Value x, bool tanhApprox) {
  Type t = x.getType();
  Value half = scalarConstant(b, loc, t, 0.5);
  Value one = scalarConstant(b, loc, t, 1.0);
  Value inner;
  if (tanhApprox) {
    Value x3 =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, scalarConstant(b, loc, t, 0.044715), x3));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, scalarConstant(b, loc, t, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = math::ErfOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, x,
                              scalarConstant(b, loc, t, 1.0 / std::sqrt(2.0))));
  }
  return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, half, x),
                               arith::AddFOp::create(b, loc, one, inner));
}

Value compareScalar(OpBuilder &b, Location loc, CompareDirection direction,
                    Value lhs, Value rhs) {
  // Indexed by CompareDirection (eq, ne, lt, le, gt, ge). NumPy semantics for
  // floats: every comparison with NaN is false except `!=` (unordered).
  using F = arith::CmpFPredicate;
  using I = arith::CmpIPredicate;
  static constexpr F floatPredicates[] = {F::OEQ, F::UNE, F::OLT,
                                          F::OLE, F::OGT, F::OGE};
  static constexpr I intPredicates[] = {I::eq,  I::ne,  I::slt,
                                        I::sle, I::sgt, I::sge};
  auto index = static_cast<unsigned>(direction);
  if (isa<FloatType>(lhs.getType()))
    return arith::CmpFOp::create(b, loc, floatPredicates[index], lhs, rhs);
  return arith::CmpIOp::create(b, loc, intPredicates[index], lhs, rhs);
}

/// Converts a scalar between the element types of of.cast.
Value castScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (from.isInteger(1)) {
    if (isa<FloatType>(to))
      return arith::UIToFPOp::create(b, loc, to, x);
    return arith::ExtUIOp::create(b, loc, to, x);
  }
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    if (fromFloat.getWidth() > toFloat.getWidth())
      return arith::TruncFOp::create(b, loc, to, x);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, x);
  if (toFloat)
    return arith::SIToFPOp::create(b, loc, to, x);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtSIOp::create(b, loc, to, x);
  return arith::TruncIOp::create(b, loc, to, x);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Elementwise unary ops.
template <typename OpTy> struct UnaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Value result =
        elementwise(rewriter, op.getLoc(), type, adaptor.getOperands(),
                    [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                      return scalar(b, loc, args[0], op);
                    });
    rewriter.replaceOp(op, result);
    return success();
  }
  static Value scalar(OpBuilder &b, Location loc, Value x, OpTy op);
};

template <>
Value UnaryLowering<NegOp>::scalar(OpBuilder &b, Location loc, Value x, NegOp) {
  if (isa<FloatType>(x.getType()))
    return arith::NegFOp::create(b, loc, x);
  return arith::SubIOp::create(b, loc, scalarConstant(b, loc, x.getType(), 0),
                               x);
}
template <>
Value UnaryLowering<ExpOp>::scalar(OpBuilder &b, Location loc, Value x, ExpOp) {
  return math::ExpOp::create(b, loc, x);
}
template <>
Value UnaryLowering<LogOp>::scalar(OpBuilder &b, Location loc, Value x, LogOp) {
  return math::LogOp::create(b, loc, x);
}
template <>
Value UnaryLowering<SqrtOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    SqrtOp) {
  return math::SqrtOp::create(b, loc, x);
}
template <>
Value UnaryLowering<RsqrtOp>::scalar(OpBuilder &b, Location loc, Value x,
                                     RsqrtOp) {
  return math::RsqrtOp::create(b, loc, x);
}
template <>
Value UnaryLowering<TanhOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    TanhOp) {
  return math::TanhOp::create(b, loc, x);
}
template <>
Value UnaryLowering<ErfOp>::scalar(OpBuilder &b, Location loc, Value x, ErfOp) {
  return math::ErfOp::create(b, loc, x);
}
template <>
Value UnaryLowering<SigmoidOp>::scalar(OpBuilder &b, Location loc, Value x,
                                       SigmoidOp) {
  return sigmoidScalar(b, loc, x);
}
template <>
Value UnaryLowering<ReluOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    ReluOp) {
  return maxValues(b, loc, x, scalarConstant(b, loc, x.getType(), 0));
}
template <>
Value UnaryLowering<SiluOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    SiluOp) {
  return arith::MulFOp::create(b, loc, x, sigmoidScalar(b, loc, x));
}
template <>
Value UnaryLowering<GeluOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    GeluOp op) {
  return geluScalar(b, loc, x, op.getApproximate() == "tanh");
}
template <>
Value UnaryLowering<CastOp>::scalar(OpBuilder &b, Location loc, Value x,
                                    CastOp op) {
  return castScalar(b, loc, x, localType(op.getType()).getElementType());
}
template <>
Value UnaryLowering<BroadcastToOp>::scalar(OpBuilder &, Location, Value x,
                                           BroadcastToOp) {
  return x;
}

/// Elementwise binary ops with broadcasting.
template <typename OpTy, typename FloatOp, typename IntOp>
struct BinaryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Value result =
        elementwise(rewriter, op.getLoc(), type, adaptor.getOperands(),
                    [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                      if (isa<FloatType>(args[0].getType()))
                        return FloatOp::create(b, loc, args[0], args[1]);
                      return IntOp::create(b, loc, args[0], args[1]);
                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CompareLowering : OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = elementwise(
        rewriter, op.getLoc(), localType(op.getType()), adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return compareScalar(b, loc, op.getDirection(), args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SelectLowering : OpConversionPattern<SelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SelectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = elementwise(
        rewriter, op.getLoc(), localType(op.getType()), adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

/// of.boxing is the identity on one rank.
struct BoxingLowering : OpConversionPattern<BoxingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BoxingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshape(rewriter, op.getLoc(), adaptor.getInput(),
                                   localType(op.getType())));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value init = emptyTensor(rewriter, loc, localType(op.getType()));
    auto transpose = linalg::TransposeOp::create(
        rewriter, loc, adaptor.getInput(), init, op.getPermutation());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    SmallVector<int64_t> strides(type.getRank(), 1);
    if (op.getStrides())
      strides.assign(op.getStrides()->begin(), op.getStrides()->end());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(), ValueRange{}, ValueRange{}, ValueRange{},
        op.getStarts(), type.getShape(), strides);
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    int64_t axis = normAxis(op.getAxis(), type.getRank());
    Value result = emptyTensor(rewriter, loc, type);
    int64_t offset = 0;
    for (Value input : adaptor.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      SmallVector<int64_t> offsets(type.getRank(), 0);
      offsets[axis] = offset;
      SmallVector<int64_t> strides(type.getRank(), 1);
      result = tensor::InsertSliceOp::create(
          rewriter, loc, input, result, ValueRange{}, ValueRange{},
          ValueRange{}, offsets, inputType.getShape(), strides);
      offset += inputType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Sorted, non-negative reduction axes of a reduce op.
template <typename OpTy> SmallVector<int64_t> reductionAxes(OpTy op) {
  int64_t rank = cast<RankedTensorType>(op.getInput().getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t axis : op.getAxes())
    axes.push_back(normAxis(axis, rank));
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

template <typename OpTy> struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> axes = reductionAxes(op);
    Value input = adaptor.getInput();
    Value result;
    if constexpr (std::is_same_v<OpTy, ReduceMaxOp>)
      result = reduceMax(rewriter, loc, input, axes);
    else if constexpr (std::is_same_v<OpTy, ReduceMeanOp>)
      result = reduceMeanOf(rewriter, loc, input, axes);
    else
      result = reduceSum(rewriter, loc, input, axes);
    rewriter.replaceOp(
        op, keepDims(rewriter, loc, result, localType(op.getType())));
    return success();
  }
};

/// Collapses the size-1 dimensions among the first `numBatch` dimensions of
/// `value` into their neighbours, so that a contraction can leave broadcast
/// batch dimensions out of its indexing map. Returns the kept batch
/// dimensions' positions.
Value dropUnitBatchDims(OpBuilder &b, Location loc, Value value,
                        int64_t numBatch, SmallVectorImpl<int64_t> &kept) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    pending.push_back(i);
    if (i < numBatch && type.getDimSize(i) == 1)
      continue;
    if (i < numBatch)
      kept.push_back(i);
    groups.push_back(pending);
    shape.push_back(type.getDimSize(i));
    pending.clear();
  }
  if (static_cast<int64_t>(groups.size()) == type.getRank())
    return value;
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, resultType, value, groups);
}

/// of.matmul -> linalg.contract. Loop dimensions are (batch..., m, n, k);
/// transposes and broadcast batch dimensions are expressed by the operands'
/// indexing maps, so the plan builder can read BLAS strides off them.
struct MatmulLowering : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getType());
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());

    // A batched lhs times a matrix is one big matrix product.
    if (lhsType.getRank() > 2 && rhsType.getRank() == 2 &&
        !op.getTransposeA()) {
      int64_t rows = lhsType.getNumElements() / lhsType.getShape().back();
      auto flatType = RankedTensorType::get({rows, lhsType.getShape().back()},
                                            lhsType.getElementType());
      Value flatLhs = reshape(rewriter, loc, lhs, flatType);
      auto flatResultType = RankedTensorType::get(
          {rows, type.getShape().back()}, type.getElementType());
      Value product = contract(rewriter, loc, flatLhs, rhs, flatResultType,
                               false, op.getTransposeB());
      rewriter.replaceOp(op, reshape(rewriter, loc, product, type));
      return success();
    }
    // Equal batch shapes collapse into one batch dimension.
    int64_t numBatch = type.getRank() - 2;
    if (numBatch > 1 && lhsType.getRank() == type.getRank() &&
        rhsType.getRank() == type.getRank() &&
        lhsType.getShape().drop_back(2) == type.getShape().drop_back(2) &&
        rhsType.getShape().drop_back(2) == type.getShape().drop_back(2)) {
      auto collapse = [&](Value v, RankedTensorType t) {
        int64_t batch = 1;
        for (int64_t d : t.getShape().drop_back(2))
          batch *= d;
        return reshape(
            rewriter, loc, v,
            RankedTensorType::get(
                {batch, t.getDimSize(t.getRank() - 2), t.getShape().back()},
                t.getElementType()));
      };
      Value product = contract(
          rewriter, loc, collapse(lhs, lhsType), collapse(rhs, rhsType),
          cast<RankedTensorType>(
              collapse(emptyTensor(rewriter, loc, type), type).getType()),
          op.getTransposeA(), op.getTransposeB());
      rewriter.replaceOp(op, reshape(rewriter, loc, product, type));
      return success();
    }
    (void)ctx;
    rewriter.replaceOp(op, contract(rewriter, loc, lhs, rhs, type,
                                    op.getTransposeA(), op.getTransposeB()));
    return success();
  }

  /// A linalg.contract of `lhs` and `rhs` into a zero-filled `type`.
  static Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        RankedTensorType type, bool transposeA,
                        bool transposeB) {
    MLIRContext *ctx = b.getContext();
    int64_t numBatch = type.getRank() - 2;
    int64_t numLoops = numBatch + 3;
    AffineExpr m = getAffineDimExpr(numBatch, ctx);
    AffineExpr n = getAffineDimExpr(numBatch + 1, ctx);
    AffineExpr k = getAffineDimExpr(numBatch + 2, ctx);
    auto operandMap = [&](Value &v, AffineExpr row, AffineExpr col,
                          bool transposed) {
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      int64_t operandBatch = rank - 2;
      SmallVector<int64_t> kept;
      v = dropUnitBatchDims(b, loc, v, operandBatch, kept);
      SmallVector<AffineExpr> exprs;
      for (int64_t d : kept)
        exprs.push_back(getAffineDimExpr(numBatch - operandBatch + d, ctx));
      exprs.push_back(transposed ? col : row);
      exprs.push_back(transposed ? row : col);
      return AffineMap::get(numLoops, 0, exprs, ctx);
    };
    AffineMap lhsMap = operandMap(lhs, m, k, transposeA);
    AffineMap rhsMap = operandMap(rhs, k, n, transposeB);
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < numBatch; ++d)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    outExprs.push_back(m);
    outExprs.push_back(n);
    AffineMap outMap = AffineMap::get(numLoops, 0, outExprs, ctx);
    // bf16 and f16 products accumulate in f32 (the contraction extends its
    // operands to its output's type) and are rounded once at the end, as
    // mixed-precision GEMMs do; a 16-bit accumulator loses the sum.
    RankedTensorType accType = accumulatorType(type);
    Value init = filledTensor(
        b, loc, accType, scalarConstant(b, loc, accType.getElementType(), 0));
    auto op = linalg::ContractOp::create(
        b, loc, TypeRange{accType}, ValueRange{lhs, rhs}, ValueRange{init},
        b.getAffineMapArrayAttr({lhsMap, rhsMap, outMap}));
    return roundFromAccumulator(b, loc, type, op.getResult(0));
  }
};

/// softmax / log_softmax along one axis, numerically stable.
template <typename OpTy> struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    int64_t axis = normAxis(op.getAxis(), type.getRank());
    Value x = adaptor.getInput();
    Value max = reduceMax(rewriter, loc, x, {axis});
    Value shifted = combineWithReduced(
        rewriter, loc, type, x, max, {axis},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::SubFOp::create(b, l, args[0], args[1]);
        });
    Value exps =
        elementwise(rewriter, loc, type, shifted,
                    [](OpBuilder &b, Location l, ValueRange args) -> Value {
                      return math::ExpOp::create(b, l, args[0]);
                    });
    Value sum = reduceSum(rewriter, loc, exps, {axis});
    Value result;
    if constexpr (std::is_same_v<OpTy, SoftmaxOp>) {
      result = combineWithReduced(
          rewriter, loc, type, exps, sum, {axis},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::DivFOp::create(b, l, args[0], args[1]);
          });
    } else {
      result = combineWithReduced(
          rewriter, loc, type, shifted, sum, {axis},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::SubFOp::create(b, l, args[0],
                                         math::LogOp::create(b, l, args[1]));
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Scales `y` by `weight` and shifts by `bias` (either may be null), both of
/// the shape of y's trailing dimensions.
Value affineTail(OpBuilder &b, Location loc, Value y, Value weight,
                 Value bias) {
  auto type = cast<RankedTensorType>(y.getType());
  if (weight)
    y = elementwise(b, loc, type, {y, weight},
                    [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      return arith::MulFOp::create(nb, l, args[0], args[1]);
                    });
  if (bias)
    y = elementwise(b, loc, type, {y, bias},
                    [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                      return arith::AddFOp::create(nb, l, args[0], args[1]);
                    });
  return y;
}

/// `v / sqrt(mean(v^2 over axes) + eps)`: the variance scaling of
/// layer_norm (on centred input) and of rms_norm (on the input itself).
Value scaleByRsqrtMeanSquare(OpBuilder &b, Location loc, Value v,
                             ArrayRef<int64_t> axes, double eps) {
  auto type = cast<RankedTensorType>(v.getType());
  Value squares = elementwise(
      b, loc, type, v, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MulFOp::create(nb, l, args[0], args[0]);
      });
  Value meanSquare = reduceMeanOf(b, loc, squares, axes);
  return combineWithReduced(
      b, loc, type, v, meanSquare, axes,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value denom = arith::AddFOp::create(
            nb, l, args[1], scalarConstant(nb, l, args[1].getType(), eps));
        return arith::MulFOp::create(nb, l, args[0],
                                     math::RsqrtOp::create(nb, l, denom));
      });
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    SmallVector<int64_t> axes =
        trailingAxes(normAxis(op.getAxis(), type.getRank()), type.getRank());
    double eps = op.getEpsilon().convertToDouble();
    Value x = adaptor.getInput();
    Value mean = reduceMeanOf(rewriter, loc, x, axes);
    Value centered = combineWithReduced(
        rewriter, loc, type, x, mean, axes,
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::SubFOp::create(b, l, args[0], args[1]);
        });
    Value normed = scaleByRsqrtMeanSquare(rewriter, loc, centered, axes, eps);
    rewriter.replaceOp(op, affineTail(rewriter, loc, normed,
                                      adaptor.getWeight(), adaptor.getBias()));
    return success();
  }
};

struct RmsNormLowering : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    SmallVector<int64_t> axes =
        trailingAxes(normAxis(op.getAxis(), type.getRank()), type.getRank());
    double eps = op.getEpsilon().convertToDouble();
    Value x = adaptor.getInput();
    Value normed = scaleByRsqrtMeanSquare(rewriter, loc, x, axes, eps);
    rewriter.replaceOp(
        op, affineTail(rewriter, loc, normed, adaptor.getWeight(), nullptr));
    return success();
  }
};

/// Marks a gather kernel so that the plan checks operand `operand` (an
/// integer tensor) for indices in [0, hi) before the kernel runs.
void markIndexRange(Operation *op, int64_t operand, int64_t hi) {
  Builder b(op->getContext());
  op->setAttr("of.index_range", b.getDenseI64ArrayAttr({operand, 0, hi}));
}

Value indexCast(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

struct EmbeddingLowering : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getType());
    Value table = adaptor.getWeight();
    int64_t rank = type.getRank();
    auto idsMap = AffineMap::get(
        rank, 0, ArrayRef(getAffineDimExprs(rank, ctx)).drop_back(), ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, adaptor.getIndices(),
        emptyTensor(rewriter, loc, type),
        {idsMap, AffineMap::getMultiDimIdentityMap(rank, ctx)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value row = indexCast(b, l, args[0]);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          Value v =
              tensor::ExtractOp::create(b, l, table, ValueRange{row, col});
          linalg::YieldOp::create(b, l, v);
        });
    markIndexRange(generic, 0,
                   cast<RankedTensorType>(table.getType()).getDimSize(0));
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  static SmallVector<AffineExpr> getAffineDimExprs(int64_t n,
                                                   MLIRContext *ctx) {
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < n; ++i)
      exprs.push_back(getAffineDimExpr(i, ctx));
    return exprs;
  }
};

/// result[v, :] = sum of grad[p, :] over the positions p whose index is v:
/// for each column, a loop over the positions that adds grad[p, c] into the
/// row its index names (a scatter, which linalg cannot express), skipping
/// indices outside [0, vocab) as the op specifies. Columns outermost: each
/// column's iterations touch that column alone, so a GPU runs the columns
/// in parallel (--of-lower-cuda-kernels proves it from the accesses).
struct EmbeddingGradLowering : OpConversionPattern<EmbeddingGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value ids = adaptor.getIndices(), grad = adaptor.getGrad();
    auto idsType = cast<RankedTensorType>(ids.getType());
    int64_t rank = idsType.getRank();
    int64_t positions = idsType.getNumElements();
    int64_t vocab = type.getDimSize(0), dim = type.getDimSize(1);
    // Positions flattened to one dimension.
    auto flatIds = RankedTensorType::get({positions}, idsType.getElementType());
    auto flatGrad = RankedTensorType::get({positions, dim}, et);
    if (rank == 0) {
      ids = tensor::ExpandShapeOp::create(rewriter, loc, flatIds, ids,
                                          ArrayRef<ReassociationIndices>{});
      grad = tensor::ExpandShapeOp::create(
          rewriter, loc, flatGrad, grad,
          ArrayRef<ReassociationIndices>{{0, 1}});
    } else if (rank > 1) {
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, rank));
      ids = tensor::CollapseShapeOp::create(rewriter, loc, flatIds, ids,
                                            ArrayRef<ReassociationIndices>{all});
      grad = tensor::CollapseShapeOp::create(
          rewriter, loc, flatGrad, grad,
          ArrayRef<ReassociationIndices>{all, {rank}});
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value numPositions = arith::ConstantIndexOp::create(rewriter, loc, positions);
    Value numCols = arith::ConstantIndexOp::create(rewriter, loc, dim);
    Value init = filledTensor(rewriter, loc, type,
                              scalarConstant(rewriter, loc, et, 0));
    auto outer = scf::ForOp::create(
        rewriter, loc, zero, numCols, one, ValueRange{init},
        [&](OpBuilder &b, Location l, Value c, ValueRange acc) {
          auto inner = scf::ForOp::create(
              b, l, zero, numPositions, one, ValueRange{acc[0]},
              [&](OpBuilder &ib, Location il, Value p, ValueRange table) {
                Value row = indexCast(
                    ib, il,
                    tensor::ExtractOp::create(ib, il, ids, ValueRange{p}));
                Value inRange = arith::AndIOp::create(
                    ib, il,
                    arith::CmpIOp::create(ib, il, arith::CmpIPredicate::sge,
                                          row, zero),
                    arith::CmpIOp::create(
                        ib, il, arith::CmpIPredicate::slt, row,
                        arith::ConstantIndexOp::create(ib, il, vocab)));
                auto guard = scf::IfOp::create(
                    ib, il, inRange,
                    [&](OpBuilder &tb, Location tl) {
                      Value g = tensor::ExtractOp::create(tb, tl, grad,
                                                          ValueRange{p, c});
                      Value old = tensor::ExtractOp::create(tb, tl, table[0],
                                                            ValueRange{row, c});
                      Value sum = arith::AddFOp::create(tb, tl, old, g);
                      Value updated = tensor::InsertOp::create(
                          tb, tl, sum, table[0], ValueRange{row, c});
                      scf::YieldOp::create(tb, tl, updated);
                    },
                    [&](OpBuilder &eb, Location el) {
                      scf::YieldOp::create(eb, el, table[0]);
                    });
                scf::YieldOp::create(ib, il, guard.getResult(0));
              });
          scf::YieldOp::create(b, l, inner.getResult(0));
        });
    rewriter.replaceOp(op, outer.getResult(0));
    return success();
  }
};

/// loss = logsumexp(logits[..., :]) - logits[..., label].
struct CrossEntropyLowering : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value logits = adaptor.getLogits();
    auto logitsType = cast<RankedTensorType>(logits.getType());
    int64_t axis = logitsType.getRank() - 1;
    RankedTensorType type = localType(op.getType());
    Value max = reduceMax(rewriter, loc, logits, {axis});
    Value exps = combineWithReduced(
        rewriter, loc, logitsType, logits, max, {axis},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return math::ExpOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]));
        });
    Value sum = reduceSum(rewriter, loc, exps, {axis});
    int64_t rank = type.getRank();
    auto id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{adaptor.getLabels(), max, sum},
        emptyTensor(rewriter, loc, type), {id, id, id, id},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> indices;
          for (int64_t i = 0; i < rank; ++i)
            indices.push_back(linalg::IndexOp::create(b, l, i));
          indices.push_back(indexCast(b, l, args[0]));
          Value picked = tensor::ExtractOp::create(b, l, logits, indices);
          Value lse = arith::AddFOp::create(b, l, args[1],
                                            math::LogOp::create(b, l, args[2]));
          linalg::YieldOp::create(
              b, l, Value(arith::SubFOp::create(b, l, lse, picked)));
        });
    markIndexRange(generic, 0, logitsType.getShape().back());
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Pads the two spatial dimensions of an NCHW tensor with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padding, Value value) {
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> low{0, 0, padding[0], padding[2]};
  SmallVector<int64_t> high{0, 0, padding[1], padding[3]};
  SmallVector<int64_t> shape(type.getShape());
  shape[2] += padding[0] + padding[1];
  shape[3] += padding[2] + padding[3];
  auto padType = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(
      b, loc, padType, input, getAsIndexOpFoldResult(b.getContext(), low),
      getAsIndexOpFoldResult(b.getContext(), high), value);
}

/// A convolution (NCHW input already padded, FCHW weight, one group) as a
/// product: the input's patches gathered into columns [N, C KH KW, OH OW]
/// (im2col, an elementwise gather), then out[n] = weight[F, C KH KW] x
/// columns[n], a contraction the plan runs as one batched BLAS gemm (the
/// weight broadcast over the batch). Measured with bench/cpu_bench.py on
/// 8x64x28x28, 3x3 -> 64: the loop nest of linalg.conv_2d_nchw_fchw ran
/// at 2.0 GFLOP/s, this form at 66, PyTorch's oneDNN convolution at 100 to
/// 150.
Value im2colConvolution(OpBuilder &b, Location loc, Value input, Value weight,
                        Value init, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  auto in = cast<RankedTensorType>(input.getType());
  auto w = cast<RankedTensorType>(weight.getType());
  auto out = cast<RankedTensorType>(init.getType());
  int64_t n = in.getDimSize(0), c = in.getDimSize(1);
  int64_t f = w.getDimSize(0), kh = w.getDimSize(2), kw = w.getDimSize(3);
  int64_t oh = out.getDimSize(2), ow = out.getDimSize(3);
  Type et = in.getElementType();
  // columns[n, c, i, j, y, x] = input[n, c, y sh + i dh, x sw + j dw].
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto gather =
      AffineMap::get(6, 0,
                     {d(0), d(1), d(4) * strides[0] + d(2) * dilations[0],
                      d(5) * strides[1] + d(3) * dilations[1]},
                     ctx);
  auto columnsType = RankedTensorType::get({n, c, kh, kw, oh, ow}, et);
  Value columns =
      linalg::GenericOp::create(
          b, loc, columnsType, ValueRange{input},
          emptyTensor(b, loc, columnsType),
          {gather, AffineMap::getMultiDimIdentityMap(6, ctx)},
          SmallVector<utils::IteratorType>(6, utils::IteratorType::parallel),
          [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(nb, l, args[0]);
          })
          .getResult(0);
  Value flatColumns = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({n, c * kh * kw, oh * ow}, et), columns,
      ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
  Value flatWeight = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({f, c * kh * kw}, et), weight,
      ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}});
  auto flatOutType =
      RankedTensorType::get({n, f, oh * ow}, out.getElementType());
  Value flatInit = tensor::CollapseShapeOp::create(
      b, loc, flatOutType, init,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  // Loops (n, f, p, r): out[n, f, p] += weight[f, r] columns[n, r, p]: the
  // weight is the gemm's A (m = the output channels; C is row-major in the
  // pixels).
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::get(
        4, 0, llvm::map_to_vector(dims, [&](unsigned i) { return d(i); }), ctx);
  };
  Value product = linalg::ContractOp::create(
                      b, loc, TypeRange{flatOutType},
                      ValueRange{flatWeight, flatColumns}, ValueRange{flatInit},
                      b.getAffineMapArrayAttr(
                          {map({1, 3}), map({0, 3, 2}), map({0, 1, 2})}))
                      .getResult(0);
  return tensor::ExpandShapeOp::create(
      b, loc, out, product, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
}

struct Conv2DLowering : OpConversionPattern<Conv2DOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), op.getPadding(),
                             scalarConstant(rewriter, loc, et, 0));
    Value weight = adaptor.getWeight();
    // Named linalg convolutions take i64 elements attributes: an array
    // attribute would be silently ignored (unit strides and dilations).
    auto strides = rewriter.getI64VectorAttr(op.getStrides());
    auto dilations = rewriter.getI64VectorAttr(op.getDilation());
    // bf16 and f16 convolutions accumulate in f32 and round once (the
    // named op extends its operands to its output's type), as matmul does.
    RankedTensorType accType = accumulatorType(type);
    Value init = filledTensor(
        rewriter, loc, accType,
        scalarConstant(rewriter, loc, accType.getElementType(), 0));
    int64_t groups = op.getGroups();
    Value result;
    if (groups == 1 && (et.isF32() || et.isF64())) {
      result = im2colConvolution(rewriter, loc, input, weight, init,
                                 op.getStrides(), op.getDilation());
    } else if (groups == 1) {
      result = linalg::Conv2DNchwFchwOp::create(
                   rewriter, loc, TypeRange{accType}, ValueRange{input, weight},
                   ValueRange{init}, strides, dilations)
                   .getResult(0);
    } else {
      // [N, G*C, H, W] -> [N, G, C, H, W]; [G*F, C, KH, KW] -> [G, F, C, KH,
      // KW].
      auto split = [&](Value v, int64_t dim) {
        auto t = cast<RankedTensorType>(v.getType());
        SmallVector<int64_t> shape;
        SmallVector<ReassociationIndices> groupsOf;
        for (int64_t i = 0, j = 0; i < t.getRank(); ++i) {
          if (i == dim) {
            shape.push_back(groups);
            shape.push_back(t.getDimSize(i) / groups);
            groupsOf.push_back({j, j + 1});
            j += 2;
          } else {
            shape.push_back(t.getDimSize(i));
            groupsOf.push_back({j});
            ++j;
          }
        }
        return tensor::ExpandShapeOp::create(
            rewriter, loc, RankedTensorType::get(shape, t.getElementType()), v,
            groupsOf);
      };
      Value gInput = split(input, 1);
      Value gWeight = split(weight, 0);
      Value gInit = split(init, 1);
      Value conv = linalg::Conv2DNgchwGfchwOp::create(
                       rewriter, loc, TypeRange{gInit.getType()},
                       ValueRange{gInput, gWeight}, ValueRange{gInit}, strides,
                       dilations)
                       .getResult(0);
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, accType, conv,
          ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    }
    result = roundFromAccumulator(rewriter, loc, type, result);
    if (Value bias = adaptor.getBias()) {
      MLIRContext *ctx = rewriter.getContext();
      auto biasMap = AffineMap::get(4, 0, {getAffineDimExpr(1, ctx)}, ctx);
      auto id = AffineMap::getMultiDimIdentityMap(4, ctx);
      result =
          linalg::GenericOp::create(
              rewriter, loc, type, ValueRange{result, bias},
              emptyTensor(rewriter, loc, type), {id, biasMap, id},
              SmallVector<utils::IteratorType>(4,
                                               utils::IteratorType::parallel),
              [](OpBuilder &b, Location l, ValueRange args) {
                linalg::YieldOp::create(
                    b, l, Value(arith::AddFOp::create(b, l, args[0], args[1])));
              })
              .getResult(0);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

template <typename OpTy> SmallVector<int64_t> poolStrides(OpTy op) {
  if (op.getStrides())
    return SmallVector<int64_t>(op.getStrides()->begin(),
                                op.getStrides()->end());
  return SmallVector<int64_t>(op.getKernelSize());
}

struct MaxPool2DLowering : OpConversionPattern<MaxPool2DOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MaxPool2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value lowest = lowestValue(rewriter, loc, et);
    Value input =
        padSpatial(rewriter, loc, adaptor.getInput(), op.getPadding(), lowest);
    Value window =
        tensor::EmptyOp::create(rewriter, loc, op.getKernelSize(), et);
    Value init = filledTensor(rewriter, loc, type, lowest);
    auto pool = linalg::PoolingNchwMaxOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{input, window},
        ValueRange{init}, rewriter.getI64VectorAttr(poolStrides(op)),
        rewriter.getI64VectorAttr({1, 1}));
    rewriter.replaceOp(op, pool.getResult(0));
    return success();
  }
};

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

struct AvgPool2DLowering : OpConversionPattern<AvgPool2DOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AvgPool2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    ArrayRef<int64_t> padding = op.getPadding();
    ArrayRef<int64_t> kernel = op.getKernelSize();
    SmallVector<int64_t> strides = poolStrides(op);
    Value input = padSpatial(rewriter, loc, adaptor.getInput(), padding,
                             scalarConstant(rewriter, loc, et, 0));
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    Value init =
        filledTensor(rewriter, loc, type, scalarConstant(rewriter, loc, et, 0));
    Value sum = linalg::PoolingNchwSumOp::create(
                    rewriter, loc, TypeRange{type}, ValueRange{input, window},
                    ValueRange{init}, rewriter.getI64VectorAttr(strides),
                    rewriter.getI64VectorAttr({1, 1}))
                    .getResult(0);
    bool includePad = op.getCountIncludePad();
    int64_t h = inputType.getDimSize(2), w = inputType.getDimSize(3);
    Value result = elementwise(
        rewriter, loc, type, sum,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          if (includePad)
            return arith::DivFOp::create(
                b, l, args[0],
                scalarConstant(b, l, et, double(kernel[0] * kernel[1])));
          // Count the window's elements inside the unpadded input.
          IndexMath m{b, l};
          Value n = arith::MulIOp::create(
              b, l,
              m.windowCount(linalg::IndexOp::create(b, l, 2), h, kernel[0],
                            strides[0], padding[0]),
              m.windowCount(linalg::IndexOp::create(b, l, 3), w, kernel[1],
                            strides[1], padding[2]));
          Value nf = arith::SIToFPOp::create(
              b, l, et, arith::IndexCastOp::create(b, l, b.getI64Type(), n));
          return arith::DivFOp::create(b, l, args[0], nf);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// dx[n, ci, h, w] = sum over (o, kh, kw) of dy[n, o, oh, ow] w[o, c, kh, kw]
/// where h + pad = oh * stride + kh * dilation (and likewise for w), o in
/// ci's group: a gather over the output positions that each input position
/// feeds, so the kernel is parallel over dx.
struct Conv2DGradInputLowering : OpConversionPattern<Conv2DGradInputOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2DGradInputOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value dy = adaptor.getGrad(), weight = adaptor.getWeight();
    auto dyType = cast<RankedTensorType>(dy.getType());
    auto wType = cast<RankedTensorType>(weight.getType());
    int64_t groups = op.getGroups(), cg = wType.getDimSize(1);
    int64_t f = wType.getDimSize(0) / groups;
    ArrayRef<int64_t> strides = op.getStrides(), padding = op.getPadding(),
                      dilation = op.getDilation();
    int64_t oh = dyType.getDimSize(2), ow = dyType.getDimSize(3);
    // Loops (n, ci, h, w, o, kh, kw).
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineExpr channel = groups == 1 ? d(1) : d(1) % cg;
    auto wMap = AffineMap::get(7, 0, {d(4), channel, d(5), d(6)}, ctx);
    auto outMap = AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx);
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    RankedTensorType accType = accumulatorType(type);
    Type acc = accType.getElementType();
    Value init =
        filledTensor(rewriter, loc, accType, scalarConstant(rewriter, loc, acc, 0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, accType, ValueRange{weight}, ValueRange{init},
        {wMap, outMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          IndexMath m{b, l};
          auto idx = [&](int64_t i) {
            return linalg::IndexOp::create(b, l, i);
          };
          Value o = idx(4);
          auto [validH, hOut] = m.window(
              idx(2), padding[0], m.mul(idx(5), dilation[0]), strides[0], oh);
          auto [validW, wOut] = m.window(
              idx(3), padding[2], m.mul(idx(6), dilation[1]), strides[1], ow);
          Value valid = m.both(validH, validW);
          if (groups != 1)
            valid = m.both(
                valid, m.cmp(arith::CmpIPredicate::eq,
                             arith::DivSIOp::create(b, l, o, m.c(f)),
                             arith::DivSIOp::create(b, l, idx(1), m.c(cg))));
          Value g = widen(b, l, acc,
                          tensor::ExtractOp::create(
                              b, l, dy, ValueRange{idx(0), o, hOut, wOut}));
          Value term = arith::SelectOp::create(
              b, l, valid,
              arith::MulFOp::create(b, l, g, widen(b, l, acc, args[0])),
              scalarConstant(b, l, acc, 0));
          linalg::YieldOp::create(
              b, l, Value(arith::AddFOp::create(b, l, args[1], term)));
        });
    rewriter.replaceOp(
        op, roundFromAccumulator(rewriter, loc, type, generic.getResult(0)));
    return success();
  }
};

/// dw[o, c, kh, kw] = sum over (n, oh, ow) of
/// x_padded[n, g(o) C + c, oh * stride + kh * dilation, ...] dy[n, o, oh, ow].
struct Conv2DGradFilterLowering : OpConversionPattern<Conv2DGradFilterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2DGradFilterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value x = padSpatial(rewriter, loc, adaptor.getInput(), op.getPadding(),
                         scalarConstant(rewriter, loc, et, 0));
    int64_t groups = op.getGroups(), cg = type.getDimSize(1);
    int64_t f = type.getDimSize(0) / groups;
    ArrayRef<int64_t> strides = op.getStrides(), dilation = op.getDilation();
    // Loops (o, c, kh, kw, n, oh, ow).
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineExpr channel = groups == 1 ? d(1) : d(0).floorDiv(f) * cg + d(1);
    auto xMap =
        AffineMap::get(7, 0,
                       {d(4), channel, d(5) * strides[0] + d(2) * dilation[0],
                        d(6) * strides[1] + d(3) * dilation[1]},
                       ctx);
    auto dyMap = AffineMap::get(7, 0, {d(4), d(0), d(5), d(6)}, ctx);
    auto outMap = AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx);
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    RankedTensorType accType = accumulatorType(type);
    Type acc = accType.getElementType();
    Value init =
        filledTensor(rewriter, loc, accType, scalarConstant(rewriter, loc, acc, 0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, accType, ValueRange{x, adaptor.getGrad()},
        ValueRange{init}, {xMap, dyMap, outMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value prod = arith::MulFOp::create(b, l, widen(b, l, acc, args[0]),
                                             widen(b, l, acc, args[1]));
          linalg::YieldOp::create(
              b, l, Value(arith::AddFOp::create(b, l, args[2], prod)));
        });
    rewriter.replaceOp(
        op, roundFromAccumulator(rewriter, loc, type, generic.getResult(0)));
    return success();
  }
};

/// Whether a pooling's windows tile its input exactly (stride = window, no
/// padding, the output times the window the input): every input position
/// is then in one window.
bool windowsTile(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> padding, RankedTensorType x,
                 RankedTensorType y) {
  return strides == kernel &&
         llvm::all_of(padding, [](int64_t p) { return p == 0; }) &&
         x.getDimSize(2) == y.getDimSize(2) * kernel[0] &&
         x.getDimSize(3) == y.getDimSize(3) * kernel[1];
}

/// What the library that runs the dnn steps (the pass's dnn-library) takes,
/// which the convolution and pooling patterns share.
struct DnnLibrary {
  explicit DnnLibrary(const ConvertOFToLinalgPassOptions &options)
      : cudnn(options.dnnLibrary == "cudnn") {}
  /// cuDNN: descriptors pad symmetrically and take int extents; f16 steps
  /// run as they are; max pooling propagates NaN. oneDNN: none of these.
  bool cudnn;

  /// Why `op`, with these padding and tensor types, is not a step of this
  /// library (the pattern's failure message), or null.
  const char *refuses(ArrayRef<int64_t> padding,
                      ArrayRef<RankedTensorType> tensors) const {
    if (!cudnn)
      return nullptr;
    if (padding[0] != padding[1] || padding[2] != padding[3])
      return "cuDNN pads symmetrically; this padding is not";
    for (RankedTensorType type : tensors)
      if (type.getNumElements() > std::numeric_limits<int32_t>::max())
        return "cuDNN's descriptors take int: a tensor has 2^31 elements or "
               "more";
    return nullptr;
  }
};

/// The base of the convolution and pooling library patterns: ahead of the
/// generated forms (benefit 2), with the library that will run the step.
template <typename OpTy> struct DnnLibraryPattern : OpConversionPattern<OpTy> {
  DnnLibraryPattern(const TypeConverter &converter, MLIRContext *ctx,
                    const ConvertOFToLinalgPassOptions &options)
      : OpConversionPattern<OpTy>(converter, ctx, /*benefit=*/2),
        library(options) {}
  DnnLibrary library;
};

/// A convolution or one of its gradients as an of.library_call that the
/// plan runs through the runtime's convolution library (oneDNN on the CPU):
/// added, ahead of the generated forms, when the pass runs with
/// conv-library. f32 and bf16 (which accumulates in f32 and rounds once, as
/// the generated form does; a bias is added before that rounding). Debian's
/// oneDNN 2.6 has no f16 convolution on the CPU, so an f16 one is the f32
/// library convolution of its operands widened, rounded once: the
/// generated form's arithmetic (f32 accumulation, one rounding); cuDNN has
/// them (dnn-library=cudnn), with the same arithmetic. oneDNN has
/// no f64 convolution. Measured with bench/cpu_bench.py on 8x64x28x28, 3x3
/// -> 64 (see docs/architecture.md): oneDNN at 1.6-1.8 ms, the im2col gemm
/// at 5-12 ms.
template <typename OpTy> struct ConvLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    if (!et.isF32() && !et.isBF16() && !et.isF16())
      return rewriter.notifyMatchFailure(
          op, "library convolutions are f32, bf16 or f16");
    // The operands and result, and which of them are x, w and y.
    SmallVector<Value> inputs;
    StringRef callee;
    RankedTensorType x, w, y;
    auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
    if constexpr (std::is_same_v<OpTy, Conv2DOp>) {
      callee = ::of::plan::kConvForwardFunction;
      inputs = {adaptor.getInput(), adaptor.getWeight()};
      if (adaptor.getBias())
        inputs.push_back(adaptor.getBias());
      x = typeOf(adaptor.getInput()), w = typeOf(adaptor.getWeight()), y = type;
    } else if constexpr (std::is_same_v<OpTy, Conv2DGradInputOp>) {
      callee = ::of::plan::kConvGradInputFunction;
      inputs = {adaptor.getGrad(), adaptor.getWeight()};
      x = type, w = typeOf(adaptor.getWeight()), y = typeOf(adaptor.getGrad());
    } else {
      callee = ::of::plan::kConvGradFilterFunction;
      inputs = {adaptor.getInput(), adaptor.getGrad()};
      x = typeOf(adaptor.getInput()), w = type, y = typeOf(adaptor.getGrad());
    }
    ArrayRef<int64_t> strides = op.getStrides(), padding = op.getPadding(),
                      dilation = op.getDilation();
    if (const char *why = library.refuses(padding, {x, w, y}))
      return rewriter.notifyMatchFailure(op, why);
    SmallVector<int64_t> params{
        x.getDimSize(0), x.getDimSize(1), x.getDimSize(2), x.getDimSize(3),
        w.getDimSize(0), w.getDimSize(2), w.getDimSize(3), y.getDimSize(2),
        y.getDimSize(3), strides[0],      strides[1],      dilation[0],
        dilation[1],     padding[0],      padding[1],      padding[2],
        padding[3],      op.getGroups()};
    Location loc = op.getLoc();
    RankedTensorType callType = type;
    if (et.isF16() && !library.cudnn) {
      callType = accumulatorType(type);
      for (Value &input : inputs) {
        auto inType = cast<RankedTensorType>(input.getType());
        input = elementwise(
            rewriter, loc, accumulatorType(inType), input,
            [&](OpBuilder &b, Location l, ValueRange args) -> Value {
              return arith::ExtFOp::create(b, l, b.getF32Type(), args[0]);
            });
      }
    }
    auto call = LibraryCallOp::create(rewriter, loc, TypeRange{callType},
                                      rewriter.getStringAttr(callee), inputs,
                                      emptyTensor(rewriter, loc, callType),
                                      rewriter.getDenseI64ArrayAttr(params));
    rewriter.replaceOp(
        op, roundFromAccumulator(rewriter, loc, type, call->getResult(0)));
    return success();
  }
};

/// A pooling or a pooling gradient as an of.library_call (oneDNN on the
/// CPU, cuDNN on a GPU): added, ahead of the generated forms, when the pass
/// runs with pool-library. f32 and bf16, and f16 on cuDNN (oneDNN 2.6 has
/// no f16 pooling on the CPU); other types, geometries the library call
/// does not take (checkPoolGeometry: padding as large as the window), max
/// pooling's forward pass on oneDNN (whose max drops NaN) and its gradient
/// on cuDNN (whose choice among tied elements is not documented) stay
/// generated. Measured with bench/train_bench.py --model convnet
/// (docs/architecture.md).
template <typename OpTy> struct PoolLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    if (!et.isF32() && !et.isBF16() && !(et.isF16() && library.cudnn))
      return rewriter.notifyMatchFailure(
          op, "library poolings are f32 or bf16 (and f16 on cuDNN)");
    if (std::is_same_v<OpTy, MaxPool2DOp> && !library.cudnn)
      return rewriter.notifyMatchFailure(
          op, "oneDNN's max pooling drops NaN; the generated kernel "
              "propagates it, as PyTorch");
    if constexpr (std::is_same_v<OpTy, Pool2DGradOp>)
      if (op.getKind() == "max" && library.cudnn)
        return rewriter.notifyMatchFailure(
            op, "which element of a tied window cuDNN's max gradient picks "
                "is not documented; the generated kernel picks the first, "
                "as PyTorch");
    ArrayRef<int64_t> padding = op.getPadding(), kernel = op.getKernelSize();
    SmallVector<int64_t> strides = poolStrides(op);
    // Where the windows tile the input, the generated gradient (a parallel
    // map over dx) measured faster than oneDNN's on 32x64x32x32 with 2x2
    // windows: max forward + gradient 2.8 ms against 5.0
    // (bench/cpu_bench.py --only pool; oneDNN's max gradient recomputes the
    // forward pass for its workspace), the average's gradient 0.60-0.62 ms
    // against 0.95-0.98 (of-run --repeat 20 --print-timing).
    if constexpr (std::is_same_v<OpTy, Pool2DGradOp>)
      if (!library.cudnn &&
          windowsTile(kernel, strides, padding,
                      cast<RankedTensorType>(adaptor.getInput().getType()),
                      cast<RankedTensorType>(adaptor.getGrad().getType())))
        return rewriter.notifyMatchFailure(
            op, "the generated gradient of windows that tile the input is "
                "faster than oneDNN's");
    ::of::plan::PoolMode mode;
    SmallVector<Value> inputs{adaptor.getInput()};
    StringRef callee = ::of::plan::kPoolForwardFunction;
    RankedTensorType x = cast<RankedTensorType>(adaptor.getInput().getType()),
                     y = type;
    auto avgMode = [](bool includePad) {
      return includePad ? ::of::plan::PoolMode::AvgIncludePad
                        : ::of::plan::PoolMode::AvgExcludePad;
    };
    if constexpr (std::is_same_v<OpTy, MaxPool2DOp>) {
      mode = ::of::plan::PoolMode::Max;
    } else if constexpr (std::is_same_v<OpTy, AvgPool2DOp>) {
      mode = avgMode(op.getCountIncludePad());
    } else {
      mode = op.getKind() == "max" ? ::of::plan::PoolMode::Max
                                   : avgMode(op.getCountIncludePad());
      inputs.push_back(adaptor.getGrad());
      callee = ::of::plan::kPoolGradFunction;
      y = cast<RankedTensorType>(adaptor.getGrad().getType());
    }
    if (const char *why = library.refuses(padding, {x, y}))
      return rewriter.notifyMatchFailure(op, why);
    SmallVector<int64_t> params{
        x.getDimSize(0), x.getDimSize(1), x.getDimSize(2),
        x.getDimSize(3), kernel[0],       kernel[1],
        y.getDimSize(2), y.getDimSize(3), strides[0],
        strides[1],      padding[0],      padding[1],
        padding[2],      padding[3],      static_cast<int64_t>(mode)};
    if (const char *why = ::of::plan::checkPoolGeometry(
            ::of::plan::decodePoolGeometry(params.data())))
      return rewriter.notifyMatchFailure(op, why);
    Location loc = op.getLoc();
    auto call = LibraryCallOp::create(rewriter, loc, TypeRange{type},
                                      rewriter.getStringAttr(callee), inputs,
                                      emptyTensor(rewriter, loc, type),
                                      rewriter.getDenseI64ArrayAttr(params));
    rewriter.replaceOp(op, call->getResult(0));
    return success();
  }
};

/// Pooling gradients as gathers over the windows each input position is in.
/// Max: a first kernel finds each window's first largest element (its
/// offset kh * KW + kw); an input position takes the gradient of the
/// windows whose choice it is. Avg: each window's gradient divided by its
/// forward count.
struct Pool2DGradLowering : OpConversionPattern<Pool2DGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Pool2DGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    Value dy = adaptor.getGrad();
    auto dyType = cast<RankedTensorType>(dy.getType());
    ArrayRef<int64_t> kernel = op.getKernelSize(), padding = op.getPadding();
    SmallVector<int64_t> strides =
        op.getStrides() ? SmallVector<int64_t>(op.getStrides()->begin(),
                                               op.getStrides()->end())
                        : SmallVector<int64_t>(kernel);
    int64_t oh = dyType.getDimSize(2), ow = dyType.getDimSize(3);
    int64_t h = type.getDimSize(2), w = type.getDimSize(3);
    bool isMax = op.getKind() == "max";
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, et);
    auto windowMap = AffineMap::get(6, 0, {d(4), d(5)}, ctx);
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);

    Value choice;
    if (isMax) {
      Value lowest = lowestValue(rewriter, loc, et);
      Value x = padSpatial(rewriter, loc, adaptor.getInput(), padding, lowest);
      auto outType = RankedTensorType::get(dyType.getShape(), et);
      auto idxType =
          RankedTensorType::get(dyType.getShape(), rewriter.getI64Type());
      auto xMap = AffineMap::get(
          6, 0,
          {d(0), d(1), d(2) * strides[0] + d(4), d(3) * strides[1] + d(5)},
          ctx);
      auto id = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
      auto argmax = linalg::GenericOp::create(
          rewriter, loc, TypeRange{outType, idxType}, ValueRange{x, window},
          ValueRange{
              filledTensor(rewriter, loc, outType, lowest),
              filledTensor(rewriter, loc, idxType,
                           arith::ConstantIntOp::create(
                               rewriter, loc, rewriter.getI64Type(), 0))},
          {xMap, windowMap, id, id}, iterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            IndexMath m{b, l};
            Value offset = arith::IndexCastOp::create(
                b, l, b.getI64Type(),
                m.add(m.mul(linalg::IndexOp::create(b, l, 4), kernel[1]),
                      linalg::IndexOp::create(b, l, 5)));
            Value take = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                               args[0], args[2]);
            linalg::YieldOp::create(
                b, l,
                ValueRange{
                    arith::SelectOp::create(b, l, take, args[0], args[2]),
                    arith::SelectOp::create(b, l, take, offset, args[3])});
          });
      choice = argmax.getResult(1);
    }

    // Windows that tile the input exactly (stride = window, no padding):
    // each input position is in one window, so its gradient is a parallel
    // map over dx seen as [N, C, OH, KH, OW, KW], with affine reads of dy
    // (and the choice) and no gather.
    if (windowsTile(kernel, strides, padding, type, dyType)) {
      int64_t n = type.getDimSize(0), c = type.getDimSize(1);
      auto tiled =
          RankedTensorType::get({n, c, oh, kernel[0], ow, kernel[1]}, et);
      auto windowOf = AffineMap::get(6, 0, {d(0), d(1), d(2), d(4)}, ctx);
      SmallVector<Value> inputs{dy};
      SmallVector<AffineMap> maps{windowOf};
      if (isMax) {
        inputs.push_back(choice);
        maps.push_back(windowOf);
      }
      maps.push_back(AffineMap::getMultiDimIdentityMap(6, ctx));
      double count = double(kernel[0] * kernel[1]);
      Value dx =
          linalg::GenericOp::create(
              rewriter, loc, tiled, inputs, emptyTensor(rewriter, loc, tiled),
              maps,
              SmallVector<utils::IteratorType>(6,
                                               utils::IteratorType::parallel),
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value g = args[0];
                if (isMax) {
                  IndexMath m{b, l};
                  Value offset = arith::IndexCastOp::create(
                      b, l, b.getI64Type(),
                      m.add(m.mul(linalg::IndexOp::create(b, l, 3), kernel[1]),
                            linalg::IndexOp::create(b, l, 5)));
                  Value mine = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::eq, args[1], offset);
                  g = arith::SelectOp::create(b, l, mine, g,
                                              scalarConstant(b, l, et, 0));
                } else {
                  g = arith::DivFOp::create(b, l, g,
                                            scalarConstant(b, l, et, count));
                }
                linalg::YieldOp::create(b, l, g);
              })
              .getResult(0);
      rewriter.replaceOp(
          op, tensor::CollapseShapeOp::create(rewriter, loc, type, dx,
                                              {{0}, {1}, {2, 3}, {4, 5}}));
      return success();
    }

    auto outMap = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
    Value init =
        filledTensor(rewriter, loc, type, scalarConstant(rewriter, loc, et, 0));
    bool includePad = op.getCountIncludePad();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{window}, ValueRange{init},
        {windowMap, outMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          IndexMath m{b, l};
          auto idx = [&](int64_t i) {
            return linalg::IndexOp::create(b, l, i);
          };
          Value kh = idx(4), kw = idx(5);
          auto [validH, hOut] =
              m.window(idx(2), padding[0], kh, strides[0], oh);
          auto [validW, wOut] =
              m.window(idx(3), padding[2], kw, strides[1], ow);
          Value valid = m.both(validH, validW);
          ValueRange at{idx(0), idx(1), hOut, wOut};
          Value g = tensor::ExtractOp::create(b, l, dy, at);
          if (isMax) {
            Value chosen = tensor::ExtractOp::create(b, l, choice, at);
            Value offset = arith::IndexCastOp::create(
                b, l, b.getI64Type(), m.add(m.mul(kh, kernel[1]), kw));
            valid =
                m.both(valid, m.cmp(arith::CmpIPredicate::eq, chosen, offset));
          } else if (includePad) {
            g = arith::DivFOp::create(
                b, l, g,
                scalarConstant(b, l, et, double(kernel[0] * kernel[1])));
          } else {
            // The forward's count: the window's elements inside the input.
            Value n = arith::MulIOp::create(
                b, l, m.windowCount(hOut, h, kernel[0], strides[0], padding[0]),
                m.windowCount(wOut, w, kernel[1], strides[1], padding[2]));
            // Guard the division where the window does not exist.
            n = arith::SelectOp::create(b, l, valid, n, m.c(1));
            Value nf = arith::SIToFPOp::create(
                b, l, et, arith::IndexCastOp::create(b, l, b.getI64Type(), n));
            g = arith::DivFOp::create(b, l, g, nf);
          }
          Value term = arith::SelectOp::create(b, l, valid, g,
                                               scalarConstant(b, l, et, 0));
          linalg::YieldOp::create(
              b, l, Value(arith::AddFOp::create(b, l, args[1], term)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// The axes a batch norm of `type` ([N, C, ...]) reduces: all but 1.
SmallVector<int64_t> batchNormAxes(RankedTensorType type) {
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < type.getRank(); ++i)
    axes.push_back(i);
  return axes;
}

/// The batch mean and biased variance per channel of `x` ([N, C, ...]).
std::pair<Value, Value> batchStatistics(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> axes = batchNormAxes(type);
  Value mean = reduceMeanOf(b, loc, x, axes);
  Value centered = combineWithReduced(
      b, loc, type, x, mean, axes,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value d = arith::SubFOp::create(nb, l, args[0], args[1]);
        return arith::MulFOp::create(nb, l, d, d);
      });
  return {mean, reduceMeanOf(b, loc, centered, axes)};
}

/// A training batch norm's new running statistics, from the batch's `mean`
/// and biased `var`: old * (1 - momentum) + batch * momentum, the variance
/// made unbiased (count / (count - 1)), as PyTorch.
std::pair<Value, Value> runningStatistics(OpBuilder &b, Location loc,
                                          BatchNormOp op,
                                          BatchNormOp::Adaptor adaptor,
                                          Value mean, Value var) {
  RankedTensorType type = localType(op.getResult().getType());
  Type et = type.getElementType();
  double momentum = op.getMomentum().convertToDouble();
  int64_t channels = type.getDimSize(1);
  int64_t count = channels ? type.getNumElements() / channels : 0;
  double unbias = count > 1 ? double(count) / double(count - 1) : 1.0;
  auto channelType = cast<RankedTensorType>(mean.getType());
  auto update = [&](Value old, Value batch, double scale) {
    return elementwise(
        b, loc, channelType, {old, batch},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value keep = arith::MulFOp::create(
              nb, l, args[0], scalarConstant(nb, l, et, 1.0 - momentum));
          Value add = arith::MulFOp::create(
              nb, l, args[1], scalarConstant(nb, l, et, momentum * scale));
          return arith::AddFOp::create(nb, l, keep, add);
        });
  };
  return {update(adaptor.getRunningMean(), mean, 1.0),
          update(adaptor.getRunningVar(), var, unbias)};
}

/// The gradients of a training batch norm: with xhat = (x - mean) * rstd
/// over M = N * S elements per channel, dbias = sum(dy), dweight =
/// sum(dy * xhat) and dx = weight * rstd * (dy - (dbias + xhat * dweight)
/// / M).
struct BatchNormGradLowering : OpConversionPattern<BatchNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getInputGrad().getType());
    Type et = type.getElementType();
    int64_t rank = type.getRank();
    SmallVector<int64_t> axes = batchNormAxes(type);
    double eps = op.getEpsilon().convertToDouble();
    // Elements per channel (none for an empty tensor, whose kernels do no
    // iterations).
    int64_t channels = type.getDimSize(1);
    double count = channels ? double(type.getNumElements() / channels) : 1.0;
    Value x = adaptor.getInput(), dy = adaptor.getGrad();
    auto [mean, var] = batchStatistics(rewriter, loc, x);
    auto channelType = cast<RankedTensorType>(mean.getType());
    Value rstd =
        elementwise(rewriter, loc, channelType, var,
                    [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                      return math::RsqrtOp::create(
                          b, l,
                          arith::AddFOp::create(b, l, args[0],
                                                scalarConstant(b, l, et, eps)));
                    });
    auto normalized = [](OpBuilder &b, Location l, Value x, Value mean,
                         Value rstd) -> Value {
      return arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, x, mean),
                                   rstd);
    };
    Value dbias = reduceSum(rewriter, loc, dy, axes);
    auto channelMap = AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    auto id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    Value dyXhat =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{x, dy, mean, rstd},
            emptyTensor(rewriter, loc, type),
            {id, id, channelMap, channelMap, id}, parallel,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value xhat = normalized(b, l, args[0], args[2], args[3]);
              linalg::YieldOp::create(
                  b, l, Value(arith::MulFOp::create(b, l, args[1], xhat)));
            })
            .getResult(0);
    Value dweight = reduceSum(rewriter, loc, dyXhat, axes);
    Value dx =
        linalg::GenericOp::create(
            rewriter, loc, type,
            ValueRange{x, dy, mean, rstd, adaptor.getWeight(), dbias, dweight},
            emptyTensor(rewriter, loc, type),
            {id, id, channelMap, channelMap, channelMap, channelMap, channelMap,
             id},
            parallel,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value xhat = normalized(b, l, args[0], args[2], args[3]);
              Value inv = scalarConstant(b, l, et, 1.0 / count);
              Value mean = arith::MulFOp::create(
                  b, l,
                  arith::AddFOp::create(
                      b, l, args[5],
                      arith::MulFOp::create(b, l, xhat, args[6])),
                  inv);
              Value scale = arith::MulFOp::create(b, l, args[4], args[3]);
              linalg::YieldOp::create(
                  b, l,
                  Value(arith::MulFOp::create(
                      b, l, scale,
                      arith::SubFOp::create(b, l, args[1], mean))));
            })
            .getResult(0);
    rewriter.replaceOp(op, {dx, dweight, dbias});
    return success();
  }
};

struct BatchNormLowering : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = localType(op.getResult().getType());
    Type et = type.getElementType();
    int64_t rank = type.getRank();
    double eps = op.getEpsilon().convertToDouble();
    Value x = adaptor.getInput();
    Value mean = adaptor.getRunningMean(), var = adaptor.getRunningVar();
    Value newMean = mean, newVar = var;
    if (op.getTraining()) {
      std::tie(mean, var) = batchStatistics(rewriter, loc, x);
      std::tie(newMean, newVar) =
          runningStatistics(rewriter, loc, op, adaptor, mean, var);
    }
    auto channelMap = AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    auto id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    Value y =
        linalg::GenericOp::create(
            rewriter, loc, type,
            ValueRange{x, mean, var, adaptor.getWeight(), adaptor.getBias()},
            emptyTensor(rewriter, loc, type),
            {id, channelMap, channelMap, channelMap, channelMap, id},
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value d = arith::SubFOp::create(b, l, args[0], args[1]);
              Value inv = math::RsqrtOp::create(
                  b, l,
                  arith::AddFOp::create(b, l, args[2],
                                        scalarConstant(b, l, et, eps)));
              Value scaled = arith::MulFOp::create(
                  b, l, arith::MulFOp::create(b, l, d, inv), args[3]);
              linalg::YieldOp::create(
                  b, l, Value(arith::AddFOp::create(b, l, scaled, args[4])));
            })
            .getResult(0);
    rewriter.replaceOp(op, {y, newMean, newVar});
    return success();
  }
};

/// `v` reshaped between [N, C, ...] and [N, C, S] (`to`, either way): the
/// extents after the channels collapsed into S, or a unit S added to
/// [N, C]; which is all a batch norm needs.
Value reshapeForBatchNorm(OpBuilder &b, Location loc, Value v,
                          RankedTensorType to) {
  auto from = cast<RankedTensorType>(v.getType());
  int64_t low = std::min(from.getRank(), to.getRank()),
          high = std::max(from.getRank(), to.getRank());
  if (low == high)
    return v;
  // Over the dimensions of the higher-ranked side.
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  if (low == 3) {
    groups = {{0}, {1}, {}};
    for (int64_t d = 2; d < high; ++d)
      groups[2].push_back(d);
  }
  if (to.getRank() > from.getRank())
    return tensor::ExpandShapeOp::create(b, loc, to, v, groups);
  return tensor::CollapseShapeOp::create(b, loc, to, v, groups);
}

/// A training batch norm, or its gradients, as an of.library_call
/// (`dnn.batch_norm`, `dnn.batch_norm_grad`: oneDNN on the CPU, cuDNN on a
/// GPU), on x collapsed to [N, C, S]: added, ahead of the generated forms,
/// when the pass runs with norm-library. f32 only: both libraries keep the
/// statistics, scale and shift in f32, which for bf16 and f16 data would
/// make the step mix types. The running statistics' update stays generated
/// (a [C] kernel). The gradient's statistics are x's, computed by generated
/// reductions, as the generated gradient does. Inference batch norms stay
/// generated: one elementwise kernel, which fuses with its neighbours.
template <typename OpTy>
struct BatchNormLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool forward = std::is_same_v<OpTy, BatchNormOp>;
    RankedTensorType type = localType(op->getResult(0).getType());
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(
          op, "library batch norms are f32: the libraries keep statistics, "
              "scale and shift in f32");
    if constexpr (forward)
      if (!op.getTraining())
        return rewriter.notifyMatchFailure(
            op, "an inference batch norm is one generated elementwise kernel");
    if (const char *why = library.refuses({0, 0, 0, 0}, {type}))
      return rewriter.notifyMatchFailure(op, why);
    // The geometry from the shape, checked before any IR is made: an empty
    // tensor, say, stays generated.
    int64_t n = type.getDimSize(0), c = type.getDimSize(1);
    int64_t s = n * c ? type.getNumElements() / (n * c) : 0;
    SmallVector<int64_t> params{
        n, c, s,
        ::of::plan::encodeBatchNormEpsilon(op.getEpsilon().convertToDouble())};
    if (const char *why = ::of::plan::checkBatchNormGeometry(
            ::of::plan::decodeBatchNormGeometry(params.data())))
      return rewriter.notifyMatchFailure(op, why);
    if (library.cudnn && forward && n * s < 2)
      return rewriter.notifyMatchFailure(
          op, "the cuDNN step takes the biased variance from cuDNN's "
              "unbiased one, which one element per channel cannot give");
    // PyTorch keeps cuDNN's training batch norm to batches of at most
    // 880801 (cuDNN 7 returned NOT_SUPPORTED above; PyTorch #32763); not
    // yet tried on cuDNN 9.
    if (library.cudnn && n > 880801)
      return rewriter.notifyMatchFailure(
          op, "cuDNN's training batch norm is kept to batches of at most "
              "880801, as PyTorch keeps it");
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto x3Type = RankedTensorType::get({n, c, s}, type.getElementType());
    Value x3 = reshapeForBatchNorm(rewriter, loc, x, x3Type);
    auto channelType = RankedTensorType::get({c}, type.getElementType());
    SmallVector<Value> inputs{x3};
    StringRef callee = ::of::plan::kBatchNormForwardFunction;
    if constexpr (forward) {
      inputs.append({adaptor.getWeight(), adaptor.getBias()});
    } else {
      callee = ::of::plan::kBatchNormGradFunction;
      auto [mean, var] = batchStatistics(rewriter, loc, x);
      inputs.append(
          {reshapeForBatchNorm(rewriter, loc, adaptor.getGrad(), x3Type),
           adaptor.getWeight(), mean, var});
    }
    SmallVector<Type> types{x3Type, channelType, channelType};
    SmallVector<Value> inits;
    for (Type t : types)
      inits.push_back(emptyTensor(rewriter, loc, cast<RankedTensorType>(t)));
    auto call = LibraryCallOp::create(
        rewriter, loc, types, rewriter.getStringAttr(callee), inputs, inits,
        rewriter.getDenseI64ArrayAttr(params));
    Value first = reshapeForBatchNorm(rewriter, loc, call->getResult(0), type);
    if constexpr (forward) {
      auto [newMean, newVar] = runningStatistics(
          rewriter, loc, op, adaptor, call->getResult(1), call->getResult(2));
      rewriter.replaceOp(op, {first, newMean, newVar});
    } else {
      rewriter.replaceOp(op, {first, call->getResult(1), call->getResult(2)});
    }
    return success();
  }
};

/// The dropout mask: element `i` (row-major global index) is kept when
/// `splitmix64(seed + i) >> 40`, as a fraction of 2^24, is at least `p`.
struct DropoutLowering : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    double p = op.getP().convertToDouble();
    Value seedTensor = adaptor.getSeed();
    Value offsets = adaptor.getOffsets();
    int64_t rank = type.getRank();
    uint64_t threshold = static_cast<uint64_t>(std::ceil(p * 16777216.0));
    Value result = elementwise(
        rewriter, loc, type, adaptor.getInput(),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Type i64 = b.getI64Type();
          auto c = [&](uint64_t v) -> Value {
            return arith::ConstantOp::create(
                b, l, b.getIntegerAttr(i64, static_cast<int64_t>(v)));
          };
          // Row-major linear index in the global tensor (a shard adds its
          // offsets and uses the global extents).
          Value linear = c(0);
          for (int64_t d = 0; d < rank; ++d) {
            Value idx = arith::IndexCastOp::create(
                b, l, i64, linalg::IndexOp::create(b, l, d));
            int64_t extent = type.getDimSize(d);
            if (offsets) {
              Value at = arith::ConstantIndexOp::create(b, l, d);
              idx = arith::AddIOp::create(
                  b, l, idx,
                  tensor::ExtractOp::create(b, l, offsets, ValueRange{at}));
              extent = (*op.getGlobalShape())[d];
            }
            linear = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, linear, c(extent)), idx);
          }
          Value seed =
              tensor::ExtractOp::create(b, l, seedTensor, ValueRange{});
          Value z = arith::AddIOp::create(
              b, l, arith::AddIOp::create(b, l, seed, linear),
              c(0x9E3779B97F4A7C15ull));
          auto mix = [&](Value v, uint64_t shift, uint64_t mul) -> Value {
            Value s = arith::ShRUIOp::create(b, l, v, c(shift));
            Value x = arith::XOrIOp::create(b, l, v, s);
            return mul ? Value(arith::MulIOp::create(b, l, x, c(mul))) : x;
          };
          z = mix(z, 30, 0xBF58476D1CE4E5B9ull);
          z = mix(z, 27, 0x94D049BB133111EBull);
          z = mix(z, 31, 0);
          Value bits = arith::ShRUIOp::create(b, l, z, c(40));
          Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             bits, c(threshold));
          Value scaled = arith::MulFOp::create(
              b, l, args[0],
              scalarConstant(b, l, et, p < 1.0 ? 1.0 / (1.0 - p) : 0.0));
          return arith::SelectOp::create(b, l, keep, scaled,
                                         scalarConstant(b, l, et, 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertOFToLinalgPass
    : mlir::of::impl::ConvertOFToLinalgPassBase<ConvertOFToLinalgPass> {
  using ConvertOFToLinalgPassBase::ConvertOFToLinalgPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (dnnLibrary != "onednn" && dnnLibrary != "cudnn") {
      module.emitError("--convert-of-to-linalg: dnn-library must be onednn "
                       "or cudnn, got '")
          << dnnLibrary << "'";
      return signalPassFailure();
    }

    TypeConverter converter;
    converter.addConversion([](Type type) { return stripSbp(type); });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<OFDialect>();
    // The local collectives of partitioned programs stay for the plan.
    target.addLegalOp<PlacementOp, ModuleOp, AllReduceOp, AllGatherOp,
                      ReduceScatterOp, AllToAllOp, ShardSliceOp, ToPartialOp,
                      SendOp, RecvOp, LibraryCallOp>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateOFToLinalgPatterns(
        converter, patterns,
        {convLibrary, poolLibrary, normLibrary, dnnLibrary});
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Placements stay for the plan builder (collective groups, the
    // distributions of inputs and outputs), which removes them. The
    // caller's arguments are read-only to the program.
    OpBuilder b(ctx);
    module.walk([&](func::FuncOp func) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (isa<TensorType>(func.getArgument(i).getType()))
          func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    });
  }
};

} // namespace

void mlir::of::populateOFToLinalgPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    const ConvertOFToLinalgPassOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  if (options.convLibrary)
    patterns.add<ConvLibraryLowering<Conv2DOp>,
                 ConvLibraryLowering<Conv2DGradInputOp>,
                 ConvLibraryLowering<Conv2DGradFilterOp>>(converter, ctx,
                                                          options);
  if (options.poolLibrary)
    patterns
        .add<PoolLibraryLowering<MaxPool2DOp>, PoolLibraryLowering<AvgPool2DOp>,
             PoolLibraryLowering<Pool2DGradOp>>(converter, ctx, options);
  if (options.normLibrary)
    patterns.add<BatchNormLibraryLowering<BatchNormOp>,
                 BatchNormLibraryLowering<BatchNormGradOp>>(converter, ctx,
                                                            options);
  patterns.add<
      UnaryLowering<NegOp>, UnaryLowering<ExpOp>, UnaryLowering<LogOp>,
      UnaryLowering<SqrtOp>, UnaryLowering<RsqrtOp>, UnaryLowering<TanhOp>,
      UnaryLowering<SigmoidOp>, UnaryLowering<ReluOp>, UnaryLowering<SiluOp>,
      UnaryLowering<GeluOp>, UnaryLowering<ErfOp>, UnaryLowering<CastOp>,
      UnaryLowering<BroadcastToOp>,
      BinaryLowering<AddOp, arith::AddFOp, arith::AddIOp>,
      BinaryLowering<SubOp, arith::SubFOp, arith::SubIOp>,
      BinaryLowering<MulOp, arith::MulFOp, arith::MulIOp>,
      BinaryLowering<DivOp, arith::DivFOp, arith::DivSIOp>,
      BinaryLowering<PowOp, math::PowFOp, math::PowFOp>,
      BinaryLowering<MaximumOp, arith::MaximumFOp, arith::MaxSIOp>,
      BinaryLowering<MinimumOp, arith::MinimumFOp, arith::MinSIOp>,
      CompareLowering, SelectLowering, ConstantLowering, BoxingLowering,
      ReshapeLowering, TransposeLowering, SliceLowering, ConcatLowering,
      ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
      ReduceLowering<ReduceMaxOp>, MatmulLowering, SoftmaxLowering<SoftmaxOp>,
      SoftmaxLowering<LogSoftmaxOp>, LayerNormLowering, RmsNormLowering,
      EmbeddingLowering, EmbeddingGradLowering, CrossEntropyLowering,
      Conv2DLowering, MaxPool2DLowering, AvgPool2DLowering,
      Conv2DGradInputLowering, Conv2DGradFilterLowering, Pool2DGradLowering,
      BatchNormLowering, BatchNormGradLowering, DropoutLowering>(converter,
                                                                 ctx);
}
