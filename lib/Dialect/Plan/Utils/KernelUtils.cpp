//===- KernelUtils.cpp - What the kernel code generators share ------------===//

#include "OF/Dialect/Plan/Utils/KernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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

bool isViewOrConstant(Operation *op) {
  return isView(op) || isa<arith::ConstantOp>(op);
}

Value rootBuffer(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (!isViewOrConstant(def) || def->getNumOperands() == 0)
      break;
    memref = def->getOperand(0);
  }
  return memref;
}

bool collectAccesses(Block *body, SmallVectorImpl<Access> &accesses) {
  WalkResult walk = body->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), load.getIndices(), false});
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), store.getIndices(), true});
    } else if (!isa<scf::ForOp, scf::IfOp, scf::YieldOp, scf::WhileOp,
                    scf::ConditionOp>(op) &&
               !isViewOrConstant(op) && !isMemoryEffectFree(op)) {
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

bool iterationsAreIndependent(scf::ForOp loop) {
  if (loop.getNumResults())
    return false;
  Value iv = loop.getInductionVar();
  SmallVector<Access> accesses;
  if (!collectAccesses(loop.getBody(), accesses))
    return false;
  llvm::SmallDenseSet<Value> written;
  for (const Access &a : accesses)
    if (a.write)
      written.insert(rootBuffer(a.memref));
  for (Value root : written) {
    Value view;
    std::optional<unsigned> dim;
    for (const Access &a : accesses) {
      if (rootBuffer(a.memref) != root)
        continue;
      if (view && a.memref != view)
        return false;
      view = a.memref;
      std::optional<unsigned> d;
      for (auto [i, index] : llvm::enumerate(a.indices))
        if (index == iv)
          d = i;
      if (!d || (dim && *d != *dim))
        return false;
      dim = d;
    }
  }
  return !written.empty();
}

} // namespace mlir::ofrt
