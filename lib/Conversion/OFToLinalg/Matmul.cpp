//===- Matmul.cpp - Matrix products ---------------------------------------===//
//
// --convert-of-to-linalg for of.matmul as linalg.contract, whose indexing
// maps the plan builder reads to call BLAS.
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

} // namespace

void mlir::of::linalg_lowering::populateMatmulPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MatmulLowering>(converter, patterns.getContext());
}
