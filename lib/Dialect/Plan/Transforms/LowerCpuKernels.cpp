//===- LowerCpuKernels.cpp - CPU kernels to the LLVM dialect --------------===//
//
// Implements --of-lower-cpu-kernels: lowers the kernel module of each
// ofrt.executable (func.func kernels on static identity-layout memrefs, as
// --of-build-plan outlines them) to the LLVM dialect with upstream passes,
// then gives every kernel `kN` the packed entry point the runtime calls,
// `void kN(void **args)`, args[i] being the i-th buffer's data pointer.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Dialect/Plan/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::ofrt {
#define GEN_PASS_DEF_LOWERCPUKERNELSPASS
#include "OF/Dialect/Plan/Transforms/Passes.h.inc"
} // namespace mlir::ofrt

using namespace mlir;
using namespace mlir::ofrt;

namespace {

/// The upstream lowering of the kernels once linalg is loops and math is
/// polynomials. Memrefs use the bare-pointer convention: every kernel
/// argument is a static identity-layout memref, so a pointer is all it needs.
///
/// Math ops that neither a polynomial approximation nor convert-math-to-llvm
/// handles (f64 erf, say) become libm calls, which the loader resolves in
/// the host process; libm last, as it would also make calls of ops that
/// libm lacks (rsqrt).
constexpr llvm::StringLiteral kToLLVM =
    "builtin.module(lower-affine, expand-strided-metadata, lower-affine, "
    "convert-scf-to-cf, finalize-memref-to-llvm, convert-math-to-llvm, "
    "convert-math-to-libm, "
    "convert-arith-to-llvm, convert-index-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, "
    "convert-cf-to-llvm, reconcile-unrealized-casts)";

/// memref.copy inside a kernel becomes a linalg.copy, so that it turns into
/// loops instead of a call into MLIR's C runner utilities.
struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

/// Adds `void name(void **args)` calling `name_impl(args[0], args[1], ...)`.
void addPackedEntryPoint(LLVM::LLVMFuncOp impl, StringRef name) {
  OpBuilder b(impl->getContext());
  b.setInsertionPointAfter(impl);
  Location loc = impl.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto voidType = LLVM::LLVMVoidType::get(b.getContext());
  auto wrapper = LLVM::LLVMFuncOp::create(
      b, loc, name, LLVM::LLVMFunctionType::get(voidType, {ptrType}));
  Block *entry = wrapper.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> args;
  for (unsigned i = 0; i < impl.getNumArguments(); ++i) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptrType, ptrType, entry->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{int32_t(i)});
    args.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
  }
  LLVM::CallOp::create(b, loc, impl, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

struct LowerCpuKernelsPass
    : ofrt::impl::LowerCpuKernelsPassBase<LowerCpuKernelsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    SmallVector<ModuleOp> modules;
    getOperation().walk([&](ExecutableOp exe) {
      if (ModuleOp m = exe.getKernelModule())
        modules.push_back(m);
    });
    // bf16 and f16 arithmetic is computed in f32: LLVM would promote it
    // itself, but through compiler-rt calls (__truncsfbf2, ...) that the
    // kernel library does not link.
    FailureOr<OpPassManager> toLoops = parsePassPipeline(
        "builtin.module(convert-linalg-to-loops, "
        "arith-emulate-unsupported-floats{source-types=bf16,f16 "
        "target-type=f32}, math-extend-to-supported-types{target-type=f32})");
    FailureOr<OpPassManager> toLLVM = parsePassPipeline(kToLLVM);
    if (failed(toLoops) || failed(toLLVM))
      return signalPassFailure();

    for (ModuleOp kernels : modules) {
      SmallVector<std::string> names;
      for (auto func : kernels.getOps<func::FuncOp>())
        names.push_back(func.getSymName().str());

      RewritePatternSet copies(ctx);
      copies.add<CopyToLinalg>(ctx);
      if (failed(applyPatternsGreedily(kernels, std::move(copies))) ||
          failed(runPipeline(*toLoops, kernels)))
        return signalPassFailure();
      // Polynomial exp/tanh/erf/log... vectorise where libm calls would not.
      RewritePatternSet math(ctx);
      populateMathPolynomialApproximationPatterns(math);
      // bf16 conversions as integer ops, for the same reason.
      arith::populateExpandBFloat16Patterns(math);
      if (failed(applyPatternsGreedily(kernels, std::move(math))))
        return signalPassFailure();
      // The emulation above marks its extf/truncf `contract`, and
      // convert-arith-to-llvm copies that attribute verbatim onto
      // llvm.fpext/fptrunc, which have no fast-math flags: the printed
      // kernels would name the arith dialect. The flags mean nothing on a
      // conversion, so drop them.
      kernels.walk([](Operation *op) {
        if (isa<arith::ExtFOp, arith::TruncFOp>(op))
          op->removeAttr("fastmath");
      });
      if (failed(runPipeline(*toLLVM, kernels)))
        return signalPassFailure();

      for (const std::string &name : names) {
        auto impl = kernels.lookupSymbol<LLVM::LLVMFuncOp>(name);
        if (!impl) {
          kernels.emitError("kernel ") << name << " vanished in lowering";
          return signalPassFailure();
        }
        impl.setSymName(name + "_impl");
        impl.setLinkage(LLVM::Linkage::Internal);
        addPackedEntryPoint(impl, name);
      }
    }
  }
};

} // namespace
