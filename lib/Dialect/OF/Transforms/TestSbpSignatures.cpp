//===- TestSbpSignatures.cpp - Test passes of the SBP analyses -----------===//
//
// --of-test-sbp-signatures emits a remark per op with its SBP signatures
// (SbpOpInterface), for tests and docs; --of-test-sbp-search compares the
// exact SBP search with enumeration.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/SbpSearch.h"
#include "OF/Dialect/OF/Analysis/SignatureChoice.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::of {
#define GEN_PASS_DEF_TESTSBPSIGNATURESPASS
#define GEN_PASS_DEF_TESTSBPSEARCHPASS
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

struct TestSbpSearchPass : of::impl::TestSbpSearchPassBase<TestSbpSearchPass> {
  using TestSbpSearchPassBase::TestSbpSearchPassBase;
  void runOnOperation() override {
    CostModel model;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      FailureOr<std::optional<FuncPlacement>> fp = searchPlacement(func, "");
      if (failed(fp))
        return signalPassFailure();
      if (!*fp)
        continue;
      std::string text = "objectives:";
      double objective[3] = {0, 0, 0};
      bool found[3] = {false, false, false}, tooMany = false;
      const char *names[3] = {"cbc", "exhaustive", "greedy"};
      for (int s = 0; s < 3; ++s) {
        SbpSearchOptions options;
        options.solver = names[s];
        options.memoryBudget = memoryBudget;
        options.cluster = "off"; // exact
        // Diagnostics (an infeasible budget, too many assignments to
        // enumerate) are part of the comparison.
        std::string why;
        FailureOr<SbpSearchResult> r = [&] {
          ScopedDiagnosticHandler quiet(&getContext(), [&](Diagnostic &d) {
            why = d.str();
            return success();
          });
          return searchSbp(func, **fp, model, options);
        }();
        found[s] = succeeded(r);
        if (found[s])
          objective[s] = r->objective;
        else if (s == 1 && StringRef(why).contains("stops at a million"))
          tooMany = true;
        text += llvm::formatv(" {0} {1}", names[s],
                              found[s]
                                  ? llvm::formatv("{0:e16}", objective[s]).str()
                                  : std::string("none"));
      }
      if (tooMany) {
        func.emitRemark("objectives: too many assignments to enumerate");
        continue;
      }
      func.emitRemark(text);
      if (found[0] != found[1] ||
          (found[0] && objective[0] > objective[1] * (1 + 1e-9) + 1e-15) ||
          (found[2] && objective[2] < objective[1] * (1 - 1e-9) - 1e-15)) {
        func.emitError("the SBP search is not the enumerated optimum: ")
            << text;
        return signalPassFailure();
      }
    }
  }
};

} // namespace
