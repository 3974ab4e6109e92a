//===- Common.cpp - What the of-to-linalg patterns share ------------------===//

#include "Common.h"

#include "OF/ABI/LibraryCalls.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/IR/OFOps.h"

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

using namespace mlir;
using namespace mlir::of;

namespace mlir::of::linalg_lowering {

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

RankedTensorType accumulatorType(RankedTensorType type) {
  Type et = type.getElementType();
  if (!et.isBF16() && !et.isF16())
    return type;
  return RankedTensorType::get(type.getShape(),
                               Float32Type::get(type.getContext()));
}

Value widen(OpBuilder &b, Location loc, Type acc, Value v) {
  return v.getType() == acc ? v : arith::ExtFOp::create(b, loc, acc, v);
}

Value roundFromAccumulator(OpBuilder &b, Location loc, RankedTensorType type,
                           Value acc) {
  if (cast<RankedTensorType>(acc.getType()).getElementType() ==
      type.getElementType())
    return acc;
  return elementwise(b, loc, type, acc,
                     [&](OpBuilder &bb, Location l, ValueRange args) -> Value {
                       return arith::TruncFOp::create(
                           bb, l, type.getElementType(), args[0]);
                     });
}

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

int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

AffineMap projectionWithout(int64_t rank, ArrayRef<int64_t> axes,
                            MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(axes, i))
      exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

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

SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

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

void markIndexRange(Operation *op, int64_t operand, int64_t hi) {
  Builder b(op->getContext());
  op->setAttr(OFDialect::IndexRangeAttrHelper::getNameStr(),
              b.getDenseI64ArrayAttr({operand, 0, hi}));
}

Value indexCast(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

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

bool windowsTile(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> padding, RankedTensorType x,
                 RankedTensorType y) {
  return strides == kernel &&
         llvm::all_of(padding, [](int64_t p) { return p == 0; }) &&
         x.getDimSize(2) == y.getDimSize(2) * kernel[0] &&
         x.getDimSize(3) == y.getDimSize(3) * kernel[1];
}

SmallVector<int64_t> batchNormAxes(RankedTensorType type) {
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < type.getRank(); ++i)
    axes.push_back(i);
  return axes;
}

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

} // namespace mlir::of::linalg_lowering
