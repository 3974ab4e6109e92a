//===- Pooling.cpp - Max and average pooling and their gradients ----------===//
//
// --convert-of-to-linalg for pooling windows as linalg reductions and the
// gradient as generated kernels, when no library runs them.
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

} // namespace

void mlir::of::linalg_lowering::populatePoolingPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MaxPool2DLowering, AvgPool2DLowering, Pool2DGradLowering>(
      converter, patterns.getContext());
}
