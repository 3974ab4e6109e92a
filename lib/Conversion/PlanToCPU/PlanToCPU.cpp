//===- PlanToCPU.cpp - CPU kernels of a plan to the LLVM dialect ----------===//
//
// --of-lower-cpu-kernels lowers the kernel module of each CPU
// ofrt.executable (func.func kernels on static identity-layout memrefs, as
// --of-build-plan outlines them) to the LLVM dialect with upstream passes,
// then gives every kernel `kN` the packed entry point the runtime calls,
// `void kN(void **args, int64_t begin, int64_t end)`, args[i] being the i-th
// buffer's data pointer and [begin, end) the slice of the kernel's first
// parallel loop to run.
//
//===----------------------------------------------------------------------===//

#include "OF/Conversion/Passes.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/Dialect/Plan/Utils/KernelUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <limits>

namespace mlir::of {
#define GEN_PASS_DEF_LOWERCPUKERNELSPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

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

/// The buffer that `memref` views: a kernel argument or a global, through
/// view ops; null for anything else.
Value viewedBuffer(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return memref;
    if (!isView(def))
      return {};
    memref = def->getOperand(0);
  }
  return memref;
}

/// Keeps the accumulator of each innermost reduction loop in a register.
/// linalg's loops load the output element, combine, and store it back on
/// every iteration; LLVM cannot keep that element in a register, as it
/// cannot tell that the input does not alias it, so the loop ran one
/// dependent load-add-store chain per element and never vectorised. The
/// plan guarantees what LLVM cannot see: different kernel arguments are
/// different buffers, except that an elementwise kernel may write over an
/// input it reads at the same index (whose loops reduce nothing). So a
/// loop whose single store writes, at indices fixed in the loop, the
/// element that it also loads, and which reads nothing else of that
/// buffer, carries the element as an iter_arg instead: one load before,
/// one store after. Its combiner is marked `reassoc`, which lets LLVM
/// vectorise the reduction (partial sums in vector lanes, added at the
/// end); the sums differ from the sequential ones by rounding only.
void accumulateInRegisters(func::FuncOp kernel) {
  SmallVector<scf::ForOp> innermost;
  kernel.walk([&](scf::ForOp loop) {
    bool nested =
        loop.getBody()
            ->walk([](LoopLikeOpInterface) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (!nested && loop.getInitArgs().empty())
      innermost.push_back(loop);
  });
  IRRewriter rewriter(kernel.getContext());
  for (scf::ForOp loop : innermost) {
    memref::StoreOp store;
    SmallVector<memref::LoadOp> loads;
    bool simple = true;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto s = dyn_cast<memref::StoreOp>(op))
        simple &= !store, store = s;
      else if (auto l = dyn_cast<memref::LoadOp>(op))
        loads.push_back(l);
      else
        simple &= isMemoryEffectFree(&op) && op.getNumRegions() == 0;
    }
    if (!simple || !store || !loop.isDefinedOutsideOfLoop(store.getMemRef()) ||
        !llvm::all_of(store.getIndices(), [&](Value index) {
          return loop.isDefinedOutsideOfLoop(index);
        }))
      continue;
    Value out = viewedBuffer(store.getMemRef());
    memref::LoadOp accumulator;
    for (memref::LoadOp load : loads) {
      Value from = viewedBuffer(load.getMemRef());
      if (from && from != out)
        continue;
      if (from && !accumulator && load.getMemRef() == store.getMemRef() &&
          load.getIndices() == store.getIndices() &&
          load->isBeforeInBlock(store))
        accumulator = load;
      else
        simple = false; // another read of the output, or of an unknown buffer
    }
    // A loop that stores back the element it loaded is left alone (its
    // carried value would be the load being replaced).
    if (!out || !accumulator || !simple ||
        store.getValueToStore() == accumulator.getResult())
      continue;

    Location loc = store.getLoc();
    rewriter.setInsertionPoint(loop);
    Value init = memref::LoadOp::create(rewriter, loc, store.getMemRef(),
                                        store.getIndices());
    Value combined = store.getValueToStore();
    FailureOr<LoopLikeOpInterface> carried = loop.replaceWithAdditionalYields(
        rewriter, init, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument> carriedArgs) {
          rewriter.replaceAllUsesWith(accumulator.getResult(), carriedArgs[0]);
          return SmallVector<Value>{combined};
        });
    if (failed(carried))
      continue;
    rewriter.setInsertionPointAfter(*carried);
    memref::StoreOp::create(rewriter, loc, carried->getLoopResults()->front(),
                            store.getMemRef(), store.getIndices());
    rewriter.eraseOp(store);
    rewriter.eraseOp(accumulator);
    // Only an associative combiner may be reordered.
    Operation *op = combined.getDefiningOp();
    auto combiner = dyn_cast_or_null<arith::ArithFastMathInterface>(op);
    if (!combiner ||
        !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp>(op) ||
        !llvm::is_contained(op->getOperands(),
                            carried->getRegionIterArgs().front()))
      continue;
    arith::FastMathFlagsAttr flags = combiner.getFastMathFlagsAttr();
    op->setAttr(combiner.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    kernel.getContext(),
                    (flags ? flags.getValue() : arith::FastMathFlags::none) |
                        arith::FastMathFlags::reassoc));
  }
}

/// Moves out of each loop of a CPU kernel what every iteration recomputes
/// identically: the loads of a buffer the kernel never writes at indices
/// fixed in the loop (a batch norm's per-channel statistics, read again for
/// each element of the spatial loops), and the pure arithmetic on them (the
/// per-channel rsqrt and divisions), as upstream LICM moves. LLVM hoists
/// neither: it cannot tell that the kernel's stores do not alias those
/// buffers. The plan guarantees it (different kernel arguments are
/// different buffers, except an input that an elementwise kernel writes
/// over, which it reads at the index it writes), so a load is left in place
/// when some store of the kernel writes a memref of its type at its
/// indices. Loads leave only loops that run at least once (constant bounds),
/// so none reads where the loop would not have. The ResNet-50 step's batch
/// norm kernel relu(residual) + (x - mean) * rsqrt(var + eps) * gamma + beta
/// on [16, 128, 8, 8]: 0.23 -> 0.13 ms (of-run --print-timing on the plan
/// examples/models/train_resnet50.py --dump-dir writes, this 2-core VM).
void hoistInvariantReads(func::FuncOp kernel) {
  llvm::SmallPtrSet<Value, 4> written;
  SmallVector<memref::StoreOp> stores;
  bool unknown = false;
  kernel.walk([&](Operation *op) {
    if (op == kernel)
      return;
    if (auto store = dyn_cast<memref::StoreOp>(op))
      stores.push_back(store);
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      unknown |= !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
                 !isMemoryEffectFree(op);
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      Value buffer = e.getValue() ? viewedBuffer(e.getValue()) : Value();
      if (!buffer)
        unknown = true;
      else
        written.insert(buffer);
    }
  });
  if (unknown)
    return;
  auto hoistableLoad = [&](memref::LoadOp load) {
    Value buffer = viewedBuffer(load.getMemRef());
    if (!buffer || written.contains(buffer))
      return false;
    return llvm::none_of(stores, [&](memref::StoreOp store) {
      return store.getMemRef().getType() == load.getMemRef().getType() &&
             store.getIndices() == load.getIndices();
    });
  };
  auto runsOnce = [](scf::ForOp loop) {
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    return lb && ub && *lb < *ub;
  };
  // Innermost loops first, so a load can leave several levels.
  kernel.walk<WalkOrder::PostOrder>([&](scf::ForOp loop) {
    bool loadsMayLeave = runsOnce(loop);
    moveLoopInvariantCode(
        {&loop.getRegion()},
        [&](Value value, Region *) {
          return loop.isDefinedOutsideOfLoop(value);
        },
        [&](Operation *op, Region *) {
          if (auto load = dyn_cast<memref::LoadOp>(op))
            return loadsMayLeave && hoistableLoad(load);
          return isMemoryEffectFree(op) && isSpeculatable(op) &&
                 op->getNumRegions() == 0;
        },
        [&](Operation *op, Region *) { op->moveBefore(loop); });
  });
}

/// Retypes the i1 buffers of a CPU kernel, once it is loops, as i8: a load
/// becomes a byte load compared with zero, a store a zero-extended byte.
/// The bytes in memory are the same (LLVM stores an i1 as one byte holding
/// 0 or 1), but LLVM vectorises a loop of i1 loads through one mask
/// register load per element, which made a masked softmax's `select` 4x
/// slower than a `mul` over the same floats. A kernel with an i1 buffer
/// that some other op uses is left as it is.
void storeBoolsAsBytes(func::FuncOp kernel) {
  auto isBoolBuffer = [](Type t) {
    auto m = dyn_cast<MemRefType>(t);
    return m && m.getElementType().isInteger(1);
  };
  auto asBytes = [](Type t) {
    auto m = cast<MemRefType>(t);
    return MemRefType::get(m.getShape(), IntegerType::get(t.getContext(), 8),
                           m.getLayout(), m.getMemorySpace());
  };
  SmallVector<Value> buffers;
  for (BlockArgument arg : kernel.getArguments())
    if (isBoolBuffer(arg.getType()))
      buffers.push_back(arg);
  bool supported = true;
  kernel.walk([&](Operation *op) {
    bool reads = llvm::any_of(op->getOperandTypes(), isBoolBuffer);
    bool views = isView(op);
    if (views && reads && isBoolBuffer(op->getResult(0).getType()))
      buffers.push_back(op->getResult(0));
    else if (views && reads)
      supported = false; // a view to an unranked memref
    else if (reads && !isa<memref::LoadOp, memref::StoreOp>(op))
      supported = false;
    else if (!reads && llvm::any_of(op->getResultTypes(), isBoolBuffer))
      supported = false; // an i1 buffer made inside the kernel
  });
  if (buffers.empty() || !supported)
    return;

  for (Value buffer : buffers)
    buffer.setType(asBytes(buffer.getType()));
  kernel.setType(FunctionType::get(kernel.getContext(),
                                   kernel.getBody().getArgumentTypes(),
                                   kernel.getResultTypes()));
  OpBuilder b(kernel.getContext());
  Type byte = b.getI8Type();
  kernel.walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && load.getType().isInteger(1)) {
      b.setInsertionPointAfter(load);
      Value zero = arith::ConstantIntOp::create(b, load.getLoc(), byte, 0);
      auto bit = arith::CmpIOp::create(b, load.getLoc(),
                                       arith::CmpIPredicate::ne, load, zero);
      load.getResult().replaceAllUsesExcept(bit, bit);
      load.getResult().setType(byte);
    } else if (auto store = dyn_cast<memref::StoreOp>(op);
               store && store.getValueToStore().getType().isInteger(1)) {
      b.setInsertionPoint(store);
      store.getValueMutable().assign(arith::ExtUIOp::create(
          b, store.getLoc(), byte, store.getValueToStore()));
    }
  });
}

/// What the runtime learns of a CPU kernel (plan::Launch): the independent
/// iterations of its outermost loop that it runs a slice of (0: it runs
/// whole), and its count of innermost iterations.
struct KernelRange {
  int64_t range = 0;
  int64_t work = 0;
};

/// The range of a kernel that is one loop `loop` (null: not an scf.for):
/// its iterations, clamped to [begin, end), when they are independent and
/// it runs from 0 by 1 to a constant; else none (the kernel runs whole).
static KernelRange independentLoopRange(scf::ForOp loop, Value begin,
                                        Value end) {
  KernelRange result;
  if (!loop)
    return result;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (lb != 0 || step != 1 || !ub || *ub < 2 || !iterationsAreIndependent(loop))
    return result;
  uint64_t work = static_cast<uint64_t>(*ub);
  for (scf::ForOp inner = loop; inner;) {
    scf::ForOp next;
    for (Operation &op : inner.getBody()->without_terminator())
      if ((next = dyn_cast<scf::ForOp>(op)))
        break;
    if (!next)
      break;
    std::optional<APInt> trips = next.getStaticTripCount();
    if (!trips)
      break;
    work = llvm::SaturatingMultiply(work, trips->getZExtValue());
    inner = next;
  }
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value extent = arith::ConstantIndexOp::create(b, loc, *ub);
  loop.getLowerBoundMutable().assign(
      arith::MaxSIOp::create(b, loc, begin, zero));
  loop.getUpperBoundMutable().assign(
      arith::MinSIOp::create(b, loc, end, extent));
  result.range = *ub;
  result.work = static_cast<int64_t>(
      std::min<uint64_t>(work, std::numeric_limits<int64_t>::max()));
  return result;
}

/// Gives `kernel` the two trailing index arguments `begin` and `end` of the
/// packed calling convention. When its computation is one linalg op whose
/// first loop is parallel and indexes every output, that loop becomes
/// scf.for over [begin, end) clamped to [0, extent): slices of it write
/// disjoint parts of the outputs, so the runtime may run them on different
/// threads. (In place, an output shares a buffer only with an input read
/// at the same index.) So does a kernel that is one scf.for from 0 by 1
/// whose iterations are independent (iterationsAreIndependent: of.topk's
/// rows); its work counts the constant trip counts of the loops nested
/// first in it. Any other kernel ignores the arguments.
FailureOr<KernelRange> addIterationRange(func::FuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  Type index = IndexType::get(ctx);
  Location loc = kernel.getLoc();
  unsigned first = kernel.getNumArguments();
  if (failed(kernel.insertArguments({first, first}, {index, index},
                                    {DictionaryAttr(), DictionaryAttr()},
                                    {loc, loc})))
    return kernel.emitError("cannot add the iteration range arguments");
  Value begin = kernel.getArgument(first), end = kernel.getArgument(first + 1);

  SmallVector<linalg::LinalgOp> computations;
  SmallVector<Operation *> ownLoops;
  for (Operation &op : kernel.getBody().front()) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      computations.push_back(linalgOp);
    else if (op.getNumRegions() != 0)
      ownLoops.push_back(&op); // a loop of its own (a scatter, a top-k)
  }
  KernelRange result;
  if (computations.empty() && ownLoops.size() == 1)
    return independentLoopRange(dyn_cast<scf::ForOp>(ownLoops.front()), begin,
                                end);
  if (computations.size() != 1 || !ownLoops.empty())
    return result;
  linalg::LinalgOp op = computations.front();
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  if (extents.empty() || llvm::any_of(extents, ShapedType::isDynamic))
    return result;
  uint64_t work = 1;
  for (int64_t extent : extents)
    work = llvm::SaturatingMultiply(work, static_cast<uint64_t>(extent));
  result.work = static_cast<int64_t>(
      std::min<uint64_t>(work, std::numeric_limits<int64_t>::max()));
  AffineExpr d0 = getAffineDimExpr(0, ctx);
  bool indexesOutputs =
      llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
        return llvm::is_contained(op.getMatchingIndexingMap(&init).getResults(),
                                  d0);
      });
  if (op.getIteratorTypesArray()[0] != utils::IteratorType::parallel ||
      !indexesOutputs || extents[0] < 2)
    return result;
  IRRewriter rewriter(ctx);
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToLoops(rewriter, op);
  if (failed(loops) || loops->empty())
    return op.emitOpError("cannot be lowered to loops");
  // The slice, clamped to the loop: a launch without a range passes
  // [0, INT64_MAX), and no slice reaches outside the buffers.
  auto outer = cast<scf::ForOp>(loops->front());
  rewriter.setInsertionPoint(outer);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value extent = arith::ConstantIndexOp::create(rewriter, loc, extents[0]);
  outer.getLowerBoundMutable().assign(
      arith::MaxSIOp::create(rewriter, loc, begin, zero));
  outer.getUpperBoundMutable().assign(
      arith::MinSIOp::create(rewriter, loc, end, extent));
  rewriter.eraseOp(op);
  result.range = extents[0];
  return result;
}

/// Adds `void name(void **args, i64 begin, i64 end)` calling
/// `name_impl(args[0], args[1], ..., begin, end)`.
void addPackedEntryPoint(LLVM::LLVMFuncOp impl, StringRef name) {
  OpBuilder b(impl->getContext());
  b.setInsertionPointAfter(impl);
  Location loc = impl.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  auto voidType = LLVM::LLVMVoidType::get(b.getContext());
  Type i64 = b.getI64Type();
  auto wrapper = LLVM::LLVMFuncOp::create(
      b, loc, name, LLVM::LLVMFunctionType::get(voidType, {ptrType, i64, i64}));
  Block *entry = wrapper.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> args;
  for (unsigned i = 0; i + 2 < impl.getNumArguments(); ++i) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptrType, ptrType, entry->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{int32_t(i)});
    args.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
  }
  args.push_back(entry->getArgument(1));
  args.push_back(entry->getArgument(2));
  LLVM::CallOp::create(b, loc, impl, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

struct LowerCpuKernelsPass
    : of::impl::LowerCpuKernelsPassBase<LowerCpuKernelsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The kernel module of each CPU executable, and the executable's name.
    SmallVector<std::pair<ModuleOp, StringAttr>> modules;
    // Each executable's kernels' ranges, for its launches.
    DenseMap<StringAttr, llvm::StringMap<KernelRange>> ranges;
    getOperation().walk([&](ExecutableOp exe) {
      if (ModuleOp m = exe.getKernelModule(); m && !isCudaTarget(exe))
        modules.push_back({m, exe.getSymNameAttr()});
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

    for (auto [kernels, exeName] : modules) {
      SmallVector<std::string> names;
      for (auto func : kernels.getOps<func::FuncOp>())
        names.push_back(func.getSymName().str());

      if (failed(copiesToLinalg(kernels)))
        return signalPassFailure();
      // What each kernel is compiled for, declared on the executable so the
      // verifiers can hold every launch to it.
      SmallVector<NamedAttribute> signatures;
      for (auto func : kernels.getOps<func::FuncOp>()) {
        SmallVector<Attribute> params;
        for (Type type : func.getArgumentTypes()) {
          auto memref = dyn_cast<MemRefType>(type);
          if (!memref || !memref.hasStaticShape()) {
            func.emitError("kernel argument of type ")
                << type << " is not a static memref";
            return signalPassFailure();
          }
          params.push_back(TypeAttr::get(RankedTensorType::get(
              memref.getShape(), memref.getElementType())));
        }
        ArgumentAccess access = argumentAccess(func);
        FailureOr<KernelRange> range = addIterationRange(func);
        if (failed(range))
          return signalPassFailure();
        if (range->range == 0)
          range->work = 0; // the launch runs it whole, and says nothing
        ranges[exeName][func.getSymName()] = *range;
        Builder b(ctx);
        signatures.push_back(b.getNamedAttr(
            func.getSymName(),
            b.getDictionaryAttr(
                {b.getNamedAttr("params", b.getArrayAttr(params)),
                 b.getNamedAttr("range", b.getI64IntegerAttr(range->range)),
                 b.getNamedAttr("work", b.getI64IntegerAttr(range->work)),
                 b.getNamedAttr("reads", b.getDenseI64ArrayAttr(access.reads)),
                 b.getNamedAttr("writes",
                                b.getDenseI64ArrayAttr(access.writes))})));
      }
      cast<ExecutableOp>(kernels->getParentOp())
          .setSignaturesAttr(DictionaryAttr::get(ctx, signatures));
      if (failed(runPipeline(*toLoops, kernels)))
        return signalPassFailure();
      for (auto kernel : kernels.getOps<func::FuncOp>()) {
        accumulateInRegisters(kernel);
        storeBoolsAsBytes(kernel);
        hoistInvariantReads(kernel);
      }
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

    Builder b(ctx);
    getOperation().walk([&](LaunchOp launch) {
      auto exe = ranges.find(launch.getExecutableAttr().getAttr());
      if (exe == ranges.end())
        return;
      auto kernel = exe->second.find(launch.getKernel());
      if (kernel == exe->second.end() || kernel->second.range == 0)
        return;
      launch.setRangeAttr(b.getI64IntegerAttr(kernel->second.range));
      launch.setWorkAttr(b.getI64IntegerAttr(kernel->second.work));
    });
  }
};

} // namespace
