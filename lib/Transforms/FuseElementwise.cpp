//===- FuseElementwise.cpp - Elementwise fusion that spares contractions --===//
//
// Implements --of-fuse-elementwise: upstream's elementwise fusion and
// reshape-by-expansion folding, with a control function that keeps
// contractions out of both. Upstream's linalg-fuse-elementwise-ops would
// fold the reshape around a batched matmul into it and turn the
// linalg.contract into a generic that no longer maps onto one BLAS call.
//
//===----------------------------------------------------------------------===//

#include "OF/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::of {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "OF/Transforms/Passes.h.inc"
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

/// Fuse only where neither side is a contraction.
bool shouldFuse(OpOperand *fused) {
  return !isContraction(fused->getOwner()) &&
         !isContraction(fused->get().getDefiningOp());
}

struct FuseElementwisePass
    : of::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
