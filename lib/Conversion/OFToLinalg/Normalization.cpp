//===- Normalization.cpp - Layer, RMS and batch normalisation -------------===//
//
// --convert-of-to-linalg for layer norm, RMS norm and batch norm (training
// and inference, and its gradient) as reductions plus elementwise generics.
//
//===----------------------------------------------------------------------===//

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
using namespace mlir::of::linalg_lowering;

namespace {

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

} // namespace

void mlir::of::linalg_lowering::populateNormalizationPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, RmsNormLowering, BatchNormLowering,
               BatchNormGradLowering>(converter, patterns.getContext());
}
