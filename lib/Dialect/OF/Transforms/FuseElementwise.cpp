//===- FuseElementwise.cpp - Elementwise fusion that spares contractions --===//
//
// Implements --of-fuse-elementwise: upstream's elementwise fusion and
// reshape-by-expansion folding, with a control function that keeps
// contractions and checked gathers out of both, does not fuse a broadcast
// producer that calls math functions into its larger consumer, and does not
// recompute a multi-input producer that other users keep anyway. Reductions
// become generics first, so that a producer that only a reduction reads
// fuses into it. Upstream's
// linalg-fuse-elementwise-ops would fold the reshape around a batched matmul
// into it and turn the linalg.contract into a generic that no longer maps onto
// one BLAS call.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::of {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;

namespace {

bool isContraction(Operation *op) {
  if (!op)
    return false;
  if (isa<linalg::ContractOp>(op))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalg::isaContractionOpInterface(linalgOp);
}

/// Whether fusing would recompute a transcendental producer per element of
/// a larger consumer: a producer that the consumer broadcasts (fewer
/// elements than the consumer's iterations) and that calls math functions,
/// such as AdamW's bias corrections pow(beta, step) on a scalar, stays a
/// kernel of its own instead of running once per parameter element.
bool wouldRecomputeMath(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  auto type = dyn_cast<ShapedType>(fused->get().getType());
  if (!producer || !consumer || !type || !type.hasStaticShape())
    return false;
  int64_t iterations = 1;
  for (int64_t range : consumer.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range))
      return false;
    iterations *= range;
  }
  if (type.getNumElements() >= iterations)
    return false;
  bool callsMath = false;
  producer->walk([&](Operation *op) {
    callsMath |= op->getDialect() && op->getDialect()->getNamespace() == "math";
  });
  return callsMath;
}

/// Whether fusing would make the consumer recompute, from several full-size
/// inputs, a producer that stays anyway for its other users. Its result is
/// then written regardless, and reading it back is one stream where
/// recomputing it reads each of its inputs (and, fused in turn, theirs):
/// chains of residual additions used by many kernels grew into kernels
/// reading dozens of buffers.
bool wouldDuplicate(OpOperand *fused) {
  Value result = fused->get();
  auto producer = result.getDefiningOp<linalg::GenericOp>();
  if (!producer || result.hasOneUse())
    return false;
  int fullInputs = 0;
  for (OpOperand *input : producer.getDpsInputOperands())
    fullInputs += producer.getMatchingIndexingMap(input).isPermutation();
  return fullInputs > 1;
}

/// Whether fusing would make a reduction recompute a transcendental
/// producer that stays for its other users: reading the producer's result
/// back is one stream, as reading its input would be, so recomputing an
/// exp in the reduction only adds work. A producer that the reduction
/// alone reads (a squared deviation, a product of two tensors) fuses and
/// is never written out; so does cheap arithmetic that others read too (a
/// centred input), which disappears once each of its users has fused it.
bool wouldRecomputeForReduction(OpOperand *fused) {
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
  if (!consumer || !producer || consumer.getNumReductionLoops() == 0 ||
      fused->get().hasOneUse())
    return false;
  bool callsMath = false;
  producer->walk([&](Operation *op) {
    callsMath |= op->getDialect() && op->getDialect()->getNamespace() == "math";
  });
  return callsMath;
}

/// Whether `op` gathers with indices that the plan checks first (its
/// `of.index_range`, which --of-build-plan turns into a check.index_range
/// step). Upstream's fusion builds a new op without that attribute, so an
/// embedding fused with the op after it read out of bounds unchecked.
bool checksIndices(Operation *op) {
  return op && op->hasAttr(of::OFDialect::IndexRangeAttrHelper::getNameStr());
}

/// Fused kernels stay under this many ops in their bodies. Each fusion
/// clones the producer's body into the consumer's, so a chain of n
/// elementwise ops fused into one kernel cost O(n^2) (4000 ops 19 s, 8000
/// ops 95 s); capped, it becomes kernels of at most this size in O(n)
/// (and a kernel of thousands of ops helps nothing at run time).
constexpr size_t kMaxFusedOps = 256;

size_t bodyOps(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic ? generic.getRegion().front().getOperations().size() : 1;
}

bool wouldGrowTooLarge(OpOperand *fused) {
  return bodyOps(fused->get().getDefiningOp()) + bodyOps(fused->getOwner()) >
         kMaxFusedOps;
}

/// Fuse only where neither side is a contraction or a checked gather, no
/// transcendental work, multi-input producer or producer kept for other
/// users would be repeated, and the kernel stays under kMaxFusedOps.
bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return !wouldGrowTooLarge(fused) && !isContraction(fused->getOwner()) &&
         !isContraction(producer) && !checksIndices(fused->getOwner()) &&
         !checksIndices(producer) && !wouldRecomputeMath(fused) &&
         !wouldDuplicate(fused) && !wouldRecomputeForReduction(fused);
}

struct FuseElementwisePass
    : of::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    // Reductions as generics, so that an elementwise producer (a squared
    // deviation, a product of two tensors) fuses into the reduction that
    // reads it instead of being written out and read back: upstream's
    // elementwise fusion takes linalg.generic consumers only.
    SmallVector<linalg::ReduceOp> reductions;
    getOperation()->walk(
        [&](linalg::ReduceOp op) { reductions.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::ReduceOp op : reductions) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A fused recomputed copy stays apart from its fused original (CSE).
    of::markRecomputed(getOperation());
  }
};

} // namespace
