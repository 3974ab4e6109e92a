//===- TestSbpSignatures.cpp - List the SBP signatures of every op -------===//
//
// --of-test-sbp-signatures emits a remark per op with its SBP signatures
// (SbpOpInterface), for tests and docs.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::of {
#define GEN_PASS_DEF_TESTSBPSIGNATURESPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

struct TestSbpSignaturesPass
    : of::impl::TestSbpSignaturesPassBase<TestSbpSignaturesPass> {
  void runOnOperation() override {
    getOperation().walk([](SbpOpInterface op) {
      SmallVector<SbpSignature> sigs;
      op.getSbpSignatures(sigs);
      std::string text = "sbp signatures:";
      for (const SbpSignature &sig : sigs)
        text += " [" + sig.str() +
                (op.getSbpInternalAllReduce(sig) ? " (two-stage)" : "") + "]";
      op->emitRemark(text);
    });
  }
};

} // namespace
