//===- Embedding.cpp - Embedding lookups and their gradient ---------------===//
//
// --convert-of-to-linalg for gathers with a checked index range
// (of.index_range) and the scatter-add of the gradient.
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

/// result[v, :] = (table[v, :] or 0) + sum of grad[p, :] over the positions
/// p whose index is v: a loop over the positions that adds grad[p, c] into
/// the row its index names (a scatter, which linalg cannot express),
/// skipping indices outside [0, vocab) as the op specifies.
/// Columns outermost by default: each column's iterations touch that column
/// alone, so a GPU runs the columns in parallel (--of-lower-cuda-kernels
/// proves it from the accesses). With `rowScatters` (the CPU's order) the
/// positions are outermost and each row's columns inside: the gradient is
/// read and the table written contiguously (a [64 x 32768] gradient into 32
/// rows, the backward of a gather along a tensor's last axis: 5.4 -> 0.6 ms
/// per run, of-run --print-timing).
struct EmbeddingGradLowering : OpConversionPattern<EmbeddingGradOp> {
  EmbeddingGradLowering(const TypeConverter &converter, MLIRContext *ctx,
                        bool rowScatters)
      : OpConversionPattern(converter, ctx), rowScatters(rowScatters) {}

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
      grad =
          tensor::ExpandShapeOp::create(rewriter, loc, flatGrad, grad,
                                        ArrayRef<ReassociationIndices>{{0, 1}});
    } else if (rank > 1) {
      ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      ids = tensor::CollapseShapeOp::create(
          rewriter, loc, flatIds, ids, ArrayRef<ReassociationIndices>{all});
      grad = tensor::CollapseShapeOp::create(
          rewriter, loc, flatGrad, grad,
          ArrayRef<ReassociationIndices>{all, {rank}});
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value numPositions =
        arith::ConstantIndexOp::create(rewriter, loc, positions);
    Value numCols = arith::ConstantIndexOp::create(rewriter, loc, dim);
    Value numRows = arith::ConstantIndexOp::create(rewriter, loc, vocab);
    // Into a table: its rows are the start (bufferization copies it when
    // it is not writable), and only the named rows change.
    Value init = adaptor.getTable()
                     ? adaptor.getTable()
                     : filledTensor(rewriter, loc, type,
                                    scalarConstant(rewriter, loc, et, 0));
    // table[ids[p], c] += grad[p, c] where ids[p] is in range.
    auto addOne = [&](OpBuilder &b, Location l, Value p, Value c, Value row,
                      Value table) {
      Value g = tensor::ExtractOp::create(b, l, grad, ValueRange{p, c});
      Value old = tensor::ExtractOp::create(b, l, table, ValueRange{row, c});
      Value sum = arith::AddFOp::create(b, l, old, g);
      return tensor::InsertOp::create(b, l, sum, table, ValueRange{row, c})
          .getResult();
    };
    auto rowOf = [&](OpBuilder &b, Location l, Value p) {
      Value row =
          indexCast(b, l, tensor::ExtractOp::create(b, l, ids, ValueRange{p}));
      Value inRange = arith::AndIOp::create(
          b, l,
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, row, zero),
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, row, numRows));
      return std::make_pair(row, inRange);
    };
    // `body(b, l, table)` under the guard of `inRange`, else the table.
    auto guarded = [](OpBuilder &b, Location l, Value inRange, Value table,
                      function_ref<Value(OpBuilder &, Location)> body) {
      return scf::IfOp::create(
                 b, l, inRange,
                 [&](OpBuilder &tb, Location tl) {
                   scf::YieldOp::create(tb, tl, body(tb, tl));
                 },
                 [&](OpBuilder &eb, Location el) {
                   scf::YieldOp::create(eb, el, table);
                 })
          .getResult(0);
    };
    // Two loops, positions and columns, in the chosen order; the index is
    // read and tested in the inner body, so that a one-iteration loop
    // folding away leaves no load or scf.if outside the other (the CPU
    // kernels' hoisting takes the read of the read-only indices out of the
    // column loop).
    Value outerBound = rowScatters ? numPositions : numCols;
    Value innerBound = rowScatters ? numCols : numPositions;
    auto outer = scf::ForOp::create(
        rewriter, loc, zero, outerBound, one, ValueRange{init},
        [&](OpBuilder &b, Location l, Value i, ValueRange acc) {
          auto inner = scf::ForOp::create(
              b, l, zero, innerBound, one, ValueRange{acc[0]},
              [&](OpBuilder &ib, Location il, Value j, ValueRange table) {
                Value p = rowScatters ? i : j, c = rowScatters ? j : i;
                auto [row, inRange] = rowOf(ib, il, p);
                scf::YieldOp::create(ib, il,
                                     guarded(ib, il, inRange, table[0],
                                             [&](OpBuilder &tb, Location tl) {
                                               return addOne(tb, tl, p, c, row,
                                                             table[0]);
                                             }));
              });
          scf::YieldOp::create(b, l, inner.getResult(0));
        });
    rewriter.replaceOp(op, outer.getResult(0));
    return success();
  }

private:
  bool rowScatters;
};

} // namespace

void mlir::of::linalg_lowering::populateEmbeddingPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    bool rowScatters) {
  patterns.add<EmbeddingLowering>(converter, patterns.getContext());
  patterns.add<EmbeddingGradLowering>(converter, patterns.getContext(),
                                      rowScatters);
}
