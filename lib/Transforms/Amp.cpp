//===- Amp.cpp - Automatic mixed precision --------------------------------===//
//
// --of-amp: every f32 of.matmul becomes cast(f32 -> bf16), a bf16 matmul
// (lowered with f32 accumulation), and cast(bf16 -> f32). The rest of the
// program, and so the parameters, the losses and the optimizer, stay f32.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::of {
#define GEN_PASS_DEF_AMPPASS
#include "OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

struct AmpPass : of::impl::AmpPassBase<AmpPass> {
  using AmpPassBase::AmpPassBase;

  void runOnOperation() override {
    if (dtype == "f16") {
      getOperation().emitError(
          "--of-amp: dtype f16 needs dynamic loss scaling, which is not "
          "implemented yet; use dtype=bf16 (the same exponent range as f32)");
      return signalPassFailure();
    }
    if (dtype != "bf16") {
      getOperation().emitError("--of-amp: unknown dtype '")
          << dtype << "' (bf16)";
      return signalPassFailure();
    }
    Type low = BFloat16Type::get(&getContext());
    SmallVector<MatmulOp> products;
    getOperation().walk([&](MatmulOp op) {
      if (getElementTypeOrSelf(op.getLhs().getType()).isF32() &&
          getElementTypeOrSelf(op.getRhs().getType()).isF32())
        products.push_back(op);
    });
    for (MatmulOp op : products) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto narrow = [&](Value v) -> Value {
        auto type = cast<RankedTensorType>(stripSbp(v.getType()));
        return CastOp::create(b, loc,
                              RankedTensorType::get(type.getShape(), low), v);
      };
      Value lhs = narrow(op.getLhs());
      Value rhs = narrow(op.getRhs());
      Value product = MatmulOp::create(b, loc, lhs, rhs, op.getTransposeA(),
                                       op.getTransposeB());
      Value wide = CastOp::create(b, loc, op.getType(), product);
      op.replaceAllUsesWith(wide);
      op.erase();
    }
  }
};

} // namespace
