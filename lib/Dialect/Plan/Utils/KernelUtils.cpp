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

/// Whether an op that uses `value` may have an effect of kind `Effect` on
/// the memory it points to (through views; an op that says nothing may).
template <typename Effect> static bool mayAccessThrough(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isView(user)) {
      if (llvm::any_of(user->getResults(), mayAccessThrough<Effect>))
        return true;
      continue;
    }
    if (isa<func::ReturnOp>(user))
      continue;
    // A linalg op reads an operand only where its body uses it (a
    // pooling's window gives its shape alone), though it says it reads
    // every input.
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
      bool init = linalgOp.isDpsInit(&use);
      if (std::is_same_v<Effect, MemoryEffects::Write> ? init
          : std::is_same_v<Effect, MemoryEffects::Read>
              ? linalgOp.payloadUsesValueFromOperand(&use)
              : false)
        return true;
      continue;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(user);
    if (!effects)
      return true;
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffectsOnValue(value, list);
    if (llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
          return isa<Effect>(e.getEffect());
        }))
      return true;
  }
  return false;
}

ArgumentAccess argumentAccess(func::FuncOp kernel) {
  ArgumentAccess access;
  for (BlockArgument arg : kernel.getArguments()) {
    if (!isa<BaseMemRefType>(arg.getType()))
      continue;
    if (mayAccessThrough<MemoryEffects::Read>(arg))
      access.reads.push_back(arg.getArgNumber());
    if (mayAccessThrough<MemoryEffects::Write>(arg) ||
        mayAccessThrough<MemoryEffects::Free>(arg))
      access.writes.push_back(arg.getArgNumber());
  }
  return access;
}

bool isCudaTarget(ExecutableOp exe) {
  return exe.getTarget().starts_with("nvptx");
}

} // namespace mlir::ofrt
