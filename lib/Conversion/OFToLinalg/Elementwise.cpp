//===- Elementwise.cpp - Elementwise ops and dropout ----------------------===//
//
// --convert-of-to-linalg for unary and binary arithmetic, comparison,
// select, constants, casts and dropout: one linalg.generic each (NumPy
// broadcasting as indexing maps), which upstream elementwise fusion merges
// into chains.
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
Value UnaryLowering<SinOp>::scalar(OpBuilder &b, Location loc, Value x, SinOp) {
  return math::SinOp::create(b, loc, x);
}
template <>
Value UnaryLowering<CosOp>::scalar(OpBuilder &b, Location loc, Value x, CosOp) {
  return math::CosOp::create(b, loc, x);
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

} // namespace

void mlir::of::linalg_lowering::populateElementwisePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<
      UnaryLowering<NegOp>, UnaryLowering<ExpOp>, UnaryLowering<LogOp>,
      UnaryLowering<SqrtOp>, UnaryLowering<RsqrtOp>, UnaryLowering<TanhOp>,
      UnaryLowering<SigmoidOp>, UnaryLowering<ReluOp>, UnaryLowering<SiluOp>,
      UnaryLowering<GeluOp>, UnaryLowering<ErfOp>, UnaryLowering<SinOp>,
      UnaryLowering<CosOp>, UnaryLowering<CastOp>, UnaryLowering<BroadcastToOp>,
      BinaryLowering<AddOp, arith::AddFOp, arith::AddIOp>,
      BinaryLowering<SubOp, arith::SubFOp, arith::SubIOp>,
      BinaryLowering<MulOp, arith::MulFOp, arith::MulIOp>,
      BinaryLowering<DivOp, arith::DivFOp, arith::DivSIOp>,
      BinaryLowering<PowOp, math::PowFOp, math::PowFOp>,
      BinaryLowering<MaximumOp, arith::MaximumFOp, arith::MaxSIOp>,
      BinaryLowering<MinimumOp, arith::MinimumFOp, arith::MinSIOp>,
      CompareLowering, SelectLowering, ConstantLowering, DropoutLowering>(
      converter, patterns.getContext());
}
