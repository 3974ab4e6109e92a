//===- KernelUtils.cpp - What the kernel code generators share ------------===//

#include "OF/Dialect/Plan/Utils/KernelUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ofrt {
namespace {

struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

} // namespace

LogicalResult copiesToLinalg(ModuleOp kernels) {
  RewritePatternSet copies(kernels.getContext());
  copies.add<CopyToLinalg>(kernels.getContext());
  return applyPatternsGreedily(kernels, std::move(copies));
}

bool isView(Operation *op) {
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::SubViewOp,
             memref::ReinterpretCastOp, memref::CastOp, memref::ReshapeOp>(op);
}

bool isCudaTarget(ExecutableOp exe) {
  return exe.getTarget().starts_with("nvptx");
}

} // namespace mlir::ofrt
