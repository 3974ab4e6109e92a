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

/// of.topk over [rows, n] (the input's leading dimensions collapsed): each
/// row's elements in order, each compared with the worst of the k kept
/// (one comparison for most elements) and, when better, inserted: the
/// slots it beats, from the last up, move down one. A slot
/// whose index is -1 is empty (every element beats it). Comparisons are
/// strict, so ties go to the lower position (torch.topk leaves their order
/// open); NaN beats every number when selecting the largest and loses to
/// every number when selecting the smallest (torch.topk's order). Rows are
/// independent (the outer loop).
struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType valuesType = localType(op.getValues().getType());
    RankedTensorType indicesType = localType(op.getIndices().getType());
    auto inputType = localType(adaptor.getInput().getType());
    Type et = inputType.getElementType();
    int64_t n = inputType.getShape().back(), k = op.getK();
    int64_t rows = n ? inputType.getNumElements() / n : 0;
    if (k == 0 || rows == 0) {
      rewriter.replaceOp(op, {emptyTensor(rewriter, loc, valuesType),
                              emptyTensor(rewriter, loc, indicesType)});
      return success();
    }
    Value input = reshape(rewriter, loc, adaptor.getInput(),
                          RankedTensorType::get({rows, n}, et));
    Type i64 = rewriter.getI64Type();
    auto slotsType = RankedTensorType::get({rows, k}, et);
    auto slotIndicesType = RankedTensorType::get({rows, k}, i64);
    Value values = filledTensor(rewriter, loc, slotsType,
                                scalarConstant(rewriter, loc, et, 0));
    Value empty = arith::ConstantOp::create(rewriter, loc, i64,
                                            rewriter.getI64IntegerAttr(-1));
    Value indices = filledTensor(rewriter, loc, slotIndicesType, empty);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value last = arith::ConstantIndexOp::create(rewriter, loc, k - 1);
    bool largest = op.getLargest();
    // Whether element a comes before the slot holding the element at
    // slotIndex: the slot is vacant, or a is larger (smaller). The element
    // compared is always the row's latest, so a tie keeps the slot's (the
    // lower position) first.
    auto beats = [&](OpBuilder &b, Location l, Value a, Value slot,
                     Value slotIndex) -> Value {
      Value vacant = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                           slotIndex, empty);
      Value order = arith::CmpFOp::create(
          b, l, largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
          a, slot);
      Value aNaN = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, a, a);
      Value slotNaN =
          arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, slot, slot);
      Value yes = arith::ConstantIntOp::create(b, l, 1, 1);
      // largest: a is NaN and the slot is not; smallest: the other way.
      Value nan =
          largest
              ? arith::AndIOp::create(b, l, aNaN,
                                      arith::XOrIOp::create(b, l, slotNaN, yes))
              : arith::AndIOp::create(b, l, slotNaN,
                                      arith::XOrIOp::create(b, l, aNaN, yes));
      return arith::OrIOp::create(b, l, vacant,
                                  arith::OrIOp::create(b, l, order, nan));
    };
    Value numRows = arith::ConstantIndexOp::create(rewriter, loc, rows);
    Value numCols = arith::ConstantIndexOp::create(rewriter, loc, n);
    Value numSlots = arith::ConstantIndexOp::create(rewriter, loc, k);
    auto perRow = scf::ForOp::create(
        rewriter, loc, zero, numRows, one, ValueRange{values, indices},
        [&](OpBuilder &b, Location l, Value r, ValueRange rowAcc) {
          auto perElement = scf::ForOp::create(
              b, l, zero, numCols, one, rowAcc,
              [&](OpBuilder &eb, Location el, Value j, ValueRange acc) {
                Value x =
                    tensor::ExtractOp::create(eb, el, input, ValueRange{r, j});
                Value worst = tensor::ExtractOp::create(eb, el, acc[0],
                                                        ValueRange{r, last});
                Value worstIndex = tensor::ExtractOp::create(
                    eb, el, acc[1], ValueRange{r, last});
                Value position = arith::IndexCastOp::create(eb, el, i64, j);
                auto insert = scf::IfOp::create(
                    eb, el, beats(eb, el, x, worst, worstIndex),
                    [&](OpBuilder &tb, Location tl) {
                      // From the last slot up, each slot the element beats
                      // moves down one; the element takes the last freed.
                      Type indexType = tb.getIndexType();
                      auto shift = scf::WhileOp::create(
                          tb, tl,
                          TypeRange{acc[0].getType(), acc[1].getType(),
                                    indexType},
                          ValueRange{acc[0], acc[1], last},
                          [&](OpBuilder &cb, Location cl, ValueRange state) {
                            Value pos = state[2];
                            Value more = arith::CmpIOp::create(
                                cb, cl, arith::CmpIPredicate::sgt, pos, zero);
                            Value above = arith::SelectOp::create(
                                cb, cl, more,
                                arith::SubIOp::create(cb, cl, pos, one), zero);
                            Value slot = tensor::ExtractOp::create(
                                cb, cl, state[0], ValueRange{r, above});
                            Value slotIndex = tensor::ExtractOp::create(
                                cb, cl, state[1], ValueRange{r, above});
                            Value move = arith::AndIOp::create(
                                cb, cl, more,
                                beats(cb, cl, x, slot, slotIndex));
                            scf::ConditionOp::create(cb, cl, move, state);
                          },
                          [&](OpBuilder &sb, Location sl, ValueRange state) {
                            Value pos = state[2];
                            Value above =
                                arith::SubIOp::create(sb, sl, pos, one);
                            Value slot = tensor::ExtractOp::create(
                                sb, sl, state[0], ValueRange{r, above});
                            Value slotIndex = tensor::ExtractOp::create(
                                sb, sl, state[1], ValueRange{r, above});
                            Value values = tensor::InsertOp::create(
                                sb, sl, slot, state[0], ValueRange{r, pos});
                            Value indices = tensor::InsertOp::create(
                                sb, sl, slotIndex, state[1],
                                ValueRange{r, pos});
                            scf::YieldOp::create(
                                sb, sl, ValueRange{values, indices, above});
                          });
                      Value pos = shift.getResult(2);
                      Value values = tensor::InsertOp::create(
                          tb, tl, x, shift.getResult(0), ValueRange{r, pos});
                      Value indices = tensor::InsertOp::create(
                          tb, tl, position, shift.getResult(1),
                          ValueRange{r, pos});
                      scf::YieldOp::create(tb, tl, ValueRange{values, indices});
                    },
                    [&](OpBuilder &fb, Location fl) {
                      scf::YieldOp::create(fb, fl, acc);
                    });
                scf::YieldOp::create(eb, el, insert.getResults());
              });
          scf::YieldOp::create(b, l, perElement.getResults());
        });
    rewriter.replaceOp(
        op, {reshape(rewriter, loc, perRow.getResult(0), valuesType),
             reshape(rewriter, loc, perRow.getResult(1), indicesType)});
    return success();
  }
};

} // namespace

void mlir::of::linalg_lowering::populateReductionsPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns
      .add<ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
           ReduceLowering<ReduceMaxOp>, SoftmaxLowering<SoftmaxOp>,
           SoftmaxLowering<LogSoftmaxOp>, CrossEntropyLowering, TopKLowering>(
          converter, patterns.getContext());
}
