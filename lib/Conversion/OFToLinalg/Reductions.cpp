//===- Reductions.cpp - Reductions, softmax and cross entropy -------------===//
//
// --convert-of-to-linalg for sums, means and maxima as linalg reductions
// (accumulated in f32 for 16-bit types), softmax and log-softmax, and the
// fused cross-entropy loss.
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

} // namespace

void mlir::of::linalg_lowering::populateReductionsPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
               ReduceLowering<ReduceMaxOp>, SoftmaxLowering<SoftmaxOp>,
               SoftmaxLowering<LogSoftmaxOp>, CrossEntropyLowering>(
      converter, patterns.getContext());
}
