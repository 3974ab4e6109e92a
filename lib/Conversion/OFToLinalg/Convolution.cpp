//===- Convolution.cpp - Convolutions and their gradients -----------------===//
//
// --convert-of-to-linalg for 2-D convolution as im2col plus a contraction,
// and its data and filter gradients, when no library runs them.
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
    Value init = filledTensor(rewriter, loc, accType,
                              scalarConstant(rewriter, loc, acc, 0));
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
    Value init = filledTensor(rewriter, loc, accType,
                              scalarConstant(rewriter, loc, acc, 0));
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

} // namespace

void mlir::of::linalg_lowering::populateConvolutionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns
      .add<Conv2DLowering, Conv2DGradInputLowering, Conv2DGradFilterLowering>(
          converter, patterns.getContext());
}
