//===- OFToLinalg.cpp - Lower of ops to linalg on tensors -----------------===//
//
// Lowers a single-rank `of` program to linalg/tensor/arith/math on tensors.
// Assumes static shapes (the of verifiers guarantee them) and that the
// program runs on one rank, so SBP encodings are dropped and of.boxing is the
// identity (partitioning, issue 4, runs before this pass for many ranks).
//
// The patterns live one op family per file (Common.h lists them):
// elementwise ops become one linalg.generic each (NumPy broadcasting becomes
// indexing maps), so that upstream elementwise fusion can merge chains;
// matrix products become linalg.contract, whose indexing maps the plan
// builder reads to call BLAS; reductions, normalisations and softmax become
// reductions plus elementwise generics. The ops that a library runs were
// chosen before, by --of-select-library-calls (LibraryCalls.cpp): their
// of.library_call steps stay.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "OF/ABI/LibraryCalls.h"
#include "OF/Conversion/Passes.h"
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

namespace mlir::of {
#define GEN_PASS_DEF_CONVERTOFTOLINALGPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

struct ConvertOFToLinalgPass
    : mlir::of::impl::ConvertOFToLinalgPassBase<ConvertOFToLinalgPass> {
  using ConvertOFToLinalgPassBase::ConvertOFToLinalgPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    TypeConverter converter;
    converter.addConversion([](Type type) { return stripSbp(type); });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<OFDialect>();
    // The local collectives of partitioned programs stay for the plan.
    target.addLegalOp<PlacementOp, ModuleOp, AllReduceOp, AllGatherOp,
                      ReduceScatterOp, AllToAllOp, ShardSliceOp, ToPartialOp,
                      SendOp, RecvOp, LibraryCallOp>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateOFToLinalgPatterns(converter, patterns, rowScatters);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // Recomputed copies stay apart from their originals (CSE).
    markRecomputed(module);

    // Placements stay for the plan builder (collective groups, the
    // distributions of inputs and outputs), which removes them. The
    // caller's arguments are read-only to the program.
    OpBuilder b(ctx);
    module.walk([&](func::FuncOp func) {
      if (func.isExternal()) // a declaration: nothing is bufferized
        return;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (isa<TensorType>(func.getArgumentTypes()[i]))
          func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    });
  }
};

} // namespace

void mlir::of::populateOFToLinalgPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns,
                                          bool rowScatters) {
  using namespace linalg_lowering;
  populateElementwisePatterns(converter, patterns);
  populateDataMovementPatterns(converter, patterns);
  populateReductionsPatterns(converter, patterns);
  populateMatmulPatterns(converter, patterns);
  populateNormalizationPatterns(converter, patterns);
  populateEmbeddingPatterns(converter, patterns, rowScatters);
  populateConvolutionPatterns(converter, patterns);
  populatePoolingPatterns(converter, patterns);
}
