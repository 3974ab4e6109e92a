//===- Amp.cpp - Automatic mixed precision --------------------------------===//
//
// --of-amp: every f32 of.matmul and of.conv2d becomes cast(f32 -> bf16 or
// f16) of its operands, the 16-bit op (lowered with f32 accumulation), and
// a cast back to f32. The rest of the program, and so the parameters, the
// losses and the optimizer, stay f32. (f16 training needs the training
// step's dynamic loss scaling; see --of-training-step.)
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::of {
#define GEN_PASS_DEF_AMPPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

struct AmpPass : of::impl::AmpPassBase<AmpPass> {
  using AmpPassBase::AmpPassBase;

  void runOnOperation() override {
    Type low;
    if (dtype == "bf16")
      low = BFloat16Type::get(&getContext());
    else if (dtype == "f16")
      low = Float16Type::get(&getContext());
    if (!low) {
      getOperation().emitError("--of-amp: unknown dtype '")
          << dtype << "' (bf16, f16)";
      return signalPassFailure();
    }
    auto isF32 = [](Value v) {
      return v && getElementTypeOrSelf(v.getType()).isF32();
    };
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (auto mm = dyn_cast<MatmulOp>(op);
          mm && isF32(mm.getLhs()) && isF32(mm.getRhs()))
        ops.push_back(op);
      if (auto conv = dyn_cast<Conv2DOp>(op);
          conv && isF32(conv.getInput()) && isF32(conv.getWeight()))
        ops.push_back(op);
    });
    // Each becomes the same op on bf16 operands, its result cast back.
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto narrowType = [&](Type t) {
        auto type = cast<RankedTensorType>(stripSbp(t));
        return RankedTensorType::get(type.getShape(), low);
      };
      IRMapping map;
      for (Value operand : op->getOperands())
        map.map(operand, CastOp::create(
                             b, loc, narrowType(operand.getType()), operand));
      Operation *narrow = b.clone(*op, map);
      narrow->getResult(0).setType(narrowType(op->getResult(0).getType()));
      Value wide = CastOp::create(b, loc, op->getResult(0).getType(),
                                  narrow->getResult(0));
      op->getResult(0).replaceAllUsesWith(wide);
      op->erase();
    }
  }
};

} // namespace
