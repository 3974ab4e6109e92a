//===- PlanToCUDA.cpp - CUDA kernels of a plan to cubins -----------------===//
//
// --of-lower-cuda-kernels compiles the kernels of a CUDA executable: each
// top-level loop nest of a kernel becomes a GPU launch, compiled by the
// upstream gpu/NVVM path to a cubin (or PTX), and the executable records
// each kernel's launches (grid, block, buffer arguments).
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
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <limits>


namespace mlir::of {
#define GEN_PASS_DEF_LOWERCUDAKERNELSPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::ofrt;

namespace {

/// Clones into `launch` the view and constant ops defined outside it that
/// its body uses, so that only the kernel function's arguments cross.
LogicalResult sinkViews(gpu::LaunchOp launch) {
  Region &body = launch.getBody();
  bool changed = true;
  while (changed) {
    changed = false;
    llvm::SetVector<Value> outside;
    getUsedValuesDefinedAbove(body, outside);
    for (Value v : outside) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue; // a function argument: a kernel argument
      if (!isViewOrConstant(def))
        return launch.emitOpError("a kernel reads a value that no GPU launch "
                                  "can rebuild: ")
               << *def;
      OpBuilder b = OpBuilder::atBlockBegin(&body.front());
      Operation *copy = b.clone(*def);
      for (auto [from, to] : llvm::zip(def->getResults(), copy->getResults()))
        replaceAllUsesInRegionWith(from, to, body);
      changed = true;
    }
  }
  return success();
}

/// The constant trip count of each dimension of `loop`, or failure.
FailureOr<SmallVector<int64_t>> tripCounts(scf::ParallelOp loop) {
  SmallVector<int64_t> counts;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return failure();
    counts.push_back(std::max<int64_t>(0, llvm::divideCeil(*u - *l, *s)));
  }
  return counts;
}

/// f32 math.sqrt as PTX's correctly rounded sqrt.rn.f32 (see its use).
/// The inline assembly has no side effects, so it moves and folds as the
/// sqrt did.
struct RoundedSqrtF32 : OpRewritePattern<math::SqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::SqrtOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    auto sqrt = LLVM::InlineAsmOp::create(
        rewriter, op.getLoc(), op.getType(), ValueRange{op.getOperand()},
        rewriter.getStringAttr("sqrt.rn.f32 $0, $1;"),
        rewriter.getStringAttr("=f,f"), /*has_side_effects=*/nullptr,
        /*is_align_stack=*/nullptr,
        LLVM::TailCallKindAttr::get(rewriter.getContext(),
                                    LLVM::TailCallKind::None),
        /*asm_dialect=*/nullptr, /*operand_attrs=*/nullptr);
    rewriter.replaceOp(op, sqrt.getResult(0));
    return success();
  }
};

/// Wraps `ops` (top-level ops of a kernel, in order) into one single-thread
/// gpu.launch placed before the first.
LogicalResult launchSequentially(ArrayRef<Operation *> ops) {
  OpBuilder b(ops.front());
  Location loc = ops.front()->getLoc();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  OpBuilder ib = OpBuilder::atBlockEnd(&launch.getBody().front());
  IRMapping map;
  for (Operation *op : ops)
    ib.clone(*op, map);
  gpu::TerminatorOp::create(ib, loc);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  return sinkViews(launch);
}

/// `op` as a linalg.generic: itself, or its generalization in its place.
FailureOr<linalg::GenericOp> asGeneric(IRRewriter &rewriter,
                                       linalg::LinalgOp op) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return generic;
  rewriter.setInsertionPoint(op);
  return linalg::generalizeNamedOp(rewriter, op);
}

/// Puts every linalg op's parallel loops outside its reduction loops.
/// convert-linalg-to-parallel-loops makes an scf.parallel of the leading
/// parallel loops only, so a reduction over an outer dimension (a gradient
/// summed over the batch, say) would otherwise run its whole nest on one
/// GPU thread; interchanged, each thread reduces one output element.
LogicalResult parallelLoopsFirst(ModuleOp kernels) {
  SmallVector<linalg::LinalgOp> ops;
  kernels.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  IRRewriter rewriter(kernels.getContext());
  for (linalg::LinalgOp op : ops) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    SmallVector<unsigned> order;
    for (auto kind :
         {utils::IteratorType::parallel, utils::IteratorType::reduction})
      for (auto [i, it] : llvm::enumerate(iterators))
        if (it == kind)
          order.push_back(i);
    if (order.size() != iterators.size())
      return op.emitOpError("has a loop that is neither parallel nor a "
                            "reduction");
    if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
      continue;
    FailureOr<linalg::GenericOp> generic = asGeneric(rewriter, op);
    if (failed(generic))
      return op.emitOpError("cannot be generalized to reorder its loops");
    if (failed(linalg::interchangeGenericOp(rewriter, *generic, order)))
      return generic->emitOpError("cannot have its loops reordered");
  }
  return success();
}

/// The gpu.all_reduce operation and the identity of a reduction body's
/// combiner, when the body is `yield combiner(x, out)` (or `(out, x)`)
/// with `out` used there alone: then each thread can fold its share of
/// the elements into a private accumulator and the block combine them.
struct Combiner {
  Operation *op;       // in the body
  unsigned outOperand; // which operand of `op` is the block's `out`
  gpu::AllReduceOperation kind;
  TypedAttr identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *c = yield.getValues()[0].getDefiningOp();
  if (!c || c->getNumOperands() != 2 || !out.hasOneUse() ||
      out.getUses().begin()->getOwner() != c)
    return std::nullopt;
  unsigned outOperand = c->getOperand(0) == out ? 0 : 1;
  Type type = out.getType();
  Builder b(op.getContext());
  auto fp = [&](bool negativeInfinity) -> TypedAttr {
    auto ft = cast<FloatType>(type);
    return b.getFloatAttr(
        ft, APFloat::getInf(ft.getFloatSemantics(), negativeInfinity));
  };
  using K = gpu::AllReduceOperation;
  if (isa<arith::AddFOp>(c))
    return Combiner{c, outOperand, K::ADD, b.getFloatAttr(type, 0.0)};
  if (isa<arith::AddIOp>(c))
    return Combiner{c, outOperand, K::ADD, b.getIntegerAttr(type, 0)};
  if (isa<arith::MaximumFOp>(c))
    return Combiner{c, outOperand, K::MAXIMUMF, fp(true)};
  if (isa<arith::MaxNumFOp>(c))
    return Combiner{c, outOperand, K::MAXNUMF, fp(true)};
  if (isa<arith::MinimumFOp>(c))
    return Combiner{c, outOperand, K::MINIMUMF, fp(false)};
  if (isa<arith::MinNumFOp>(c))
    return Combiner{c, outOperand, K::MINNUMF, fp(false)};
  return std::nullopt;
}

/// Reductions long enough to share among a block's threads, with few
/// enough outputs that a thread per output would leave the GPU idle or
/// loop long: the grad-norm sums, the losses, the softmax of a long row.
/// A block per output element (one block of 1024 threads for a full
/// reduction): each thread folds a strided share of the reduced elements
/// (consecutive threads, consecutive elements) into an accumulator, a
/// gpu.all_reduce combines the block's, and thread 0 folds the result
/// into the output.
///
/// Many rows over a contiguous reduced axis (layer norms, the softmax of
/// attention rows) take a warp per output instead, 8 to a 256-thread
/// block, combined by gpu.subgroup_reduce (warp shuffles): a thread per
/// row would read rows apart across a warp, one 32-byte sector per element.
/// Reductions over an outer axis with more outputs than reduced elements
/// keep a thread per output, whose neighbours read neighbouring elements;
/// with fewer (a bias gradient over 8192 rows of 768, say) they take a
/// block per output, whose loads are a row apart (coalescing those is not
/// built). 8- and 16-bit reductions never take a block (all_reduce
/// shuffles only 32 and 64 bits). The launch is built here; buildLaunches
/// keeps it.
constexpr int64_t kBlockReduceMinLength = 256;
constexpr int64_t kWarpReduceMinLength = 32;
constexpr int64_t kWarpSize = 32;
constexpr int64_t kWarpsPerBlock = 8;

/// Whether every input that the reduction reads along its reduced
/// dimensions has a reduced dimension innermost (the memref's unit-stride
/// dimension), so that a warp reads consecutive elements.
bool reducesInnermost(linalg::LinalgOp op, ArrayRef<unsigned> reductionDims) {
  bool any = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    bool readsReduced = llvm::any_of(
        reductionDims, [&](unsigned d) { return map.isFunctionOfDim(d); });
    if (!readsReduced)
      continue;
    auto type = dyn_cast<MemRefType>(input->get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!type || map.getNumResults() == 0 ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return false;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last || !llvm::is_contained(reductionDims, last.getPosition()))
      return false;
    any = true;
  }
  return any;
}

LogicalResult reduceInBlocks(ModuleOp kernels) {
  SmallVector<linalg::LinalgOp> ops;
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    // A kernel whose top-level ops pass values to each other runs on one
    // thread as a whole (buildLaunches): leave it be.
    bool passesValues = false;
    for (Operation &op : kernel.getBody().front().without_terminator())
      if (!isViewOrConstant(&op) && !op.use_empty())
        passesValues = true;
    if (!passesValues)
      for (auto op : kernel.getBody().front().getOps<linalg::LinalgOp>())
        ops.push_back(op);
  }
  IRRewriter rewriter(kernels.getContext());
  for (linalg::LinalgOp linalgOp : ops) {
    if (linalgOp.getNumReductionLoops() == 0 ||
        linalgOp.getNumDpsInits() != 1 || !linalgOp.hasPureBufferSemantics())
      continue;
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      continue;
    SmallVector<utils::IteratorType> iterators =
        linalgOp.getIteratorTypesArray();
    SmallVector<unsigned> parallelDims, reductionDims;
    int64_t outputs = 1, length = 1;
    for (auto [d, it] : llvm::enumerate(iterators)) {
      (it == utils::IteratorType::parallel ? parallelDims : reductionDims)
          .push_back(d);
      (it == utils::IteratorType::parallel ? outputs : length) *= ranges[d];
    }
    if (outputs == 0 || length < kWarpReduceMinLength)
      continue;
    bool perBlock = length >= kBlockReduceMinLength && outputs <= length;
    if (!perBlock && !reducesInnermost(linalgOp, reductionDims))
      continue;
    FailureOr<linalg::GenericOp> generalized = asGeneric(rewriter, linalgOp);
    if (failed(generalized))
      continue;
    linalg::GenericOp generic = *generalized;
    std::optional<Combiner> combiner = matchCombiner(generic);
    if (!combiner)
      continue;
    // Warp shuffles move 32 bits. The subgroup-reduce lowering (a warp per
    // output) packs narrower values and refuses wider ones; the all_reduce
    // lowering (a block per output) splits 64-bit values and refuses
    // narrower ones (nvvm.shfl.sync takes i32 or f32: an f16 max or an i8
    // sum over long rows failed to compile), which then take a warp per
    // row where they can.
    unsigned width = combiner->identity.getType().getIntOrFloatBitWidth();
    if (perBlock && width < 32) {
      perBlock = false;
      if (!reducesInnermost(generic, reductionDims))
        continue;
    }
    if (!perBlock && width > 32)
      continue;

    Location loc = generic.getLoc();
    OpBuilder b(generic);
    auto cst = [&](OpBuilder &at, int64_t v) {
      return arith::ConstantIndexOp::create(at, loc, v).getResult();
    };
    // Threads per output (a block's, or a warp), and outputs per block.
    int64_t lanes = perBlock ? std::min<int64_t>(outputs == 1 ? 1024 : 256,
                                                 llvm::alignTo(length, 32))
                             : kWarpSize;
    int64_t rows = perBlock ? 1 : std::min(kWarpsPerBlock, outputs);
    Value one = cst(b, 1);
    auto launch =
        gpu::LaunchOp::create(b, loc, cst(b, llvm::divideCeil(outputs, rows)),
                              one, one, cst(b, lanes * rows), one, one);
    OpBuilder ib = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value output = launch.getBlockIds().x, lane = launch.getThreadIds().x;
    OpBuilder kb = ib;
    if (!perBlock) {
      output = arith::AddIOp::create(
          ib, loc, arith::MulIOp::create(ib, loc, output, cst(ib, rows)),
          arith::DivUIOp::create(ib, loc, lane, cst(ib, kWarpSize)));
      lane = arith::RemUIOp::create(ib, loc, lane, cst(ib, kWarpSize));
      // The last block's spare warps (a whole warp takes the branch, so
      // its shuffles stay full-warp).
      if (outputs % rows) {
        Value inRange = arith::CmpIOp::create(
            ib, loc, arith::CmpIPredicate::ult, output, cst(ib, outputs));
        kb = scf::IfOp::create(ib, loc, inRange, /*withElse=*/false)
                 .getThenBodyBuilder();
      }
    }
    // Delinearises `linear` over `dims` (row-major) into `indices`.
    SmallVector<Value> indices(ranges.size());
    auto delinearize = [&](OpBuilder &at, Value linear,
                           ArrayRef<unsigned> dims) {
      for (int64_t i = dims.size() - 1; i >= 0; --i) {
        Value n = cst(at, ranges[dims[i]]);
        indices[dims[i]] =
            i == 0 ? linear : arith::RemUIOp::create(at, loc, linear, n);
        if (i > 0)
          linear = arith::DivUIOp::create(at, loc, linear, n);
      }
    };
    delinearize(kb, output, parallelDims);
    // The element of `operand` at `indices`.
    auto position = [&](OpBuilder &at, OpOperand &operand) {
      AffineMap map = generic.getMatchingIndexingMap(&operand);
      SmallVector<Value> position;
      for (unsigned r = 0; r < map.getNumResults(); ++r)
        position.push_back(affine::AffineApplyOp::create(
            at, loc, map.getSubMap({r}), indices));
      return position;
    };
    auto load = [&](OpBuilder &at, OpOperand &operand) -> Value {
      return memref::LoadOp::create(at, loc, operand.get(),
                                    position(at, operand));
    };
    Value identity =
        arith::ConstantOp::create(kb, loc, combiner->identity).getResult();
    auto loop = scf::ForOp::create(kb, loc, lane, cst(kb, length),
                                   cst(kb, lanes), ValueRange{identity});
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      delinearize(lb, loop.getInductionVar(), reductionDims);
      Block &body = generic.getRegion().front();
      IRMapping map;
      for (OpOperand *input : generic.getDpsInputOperands())
        map.map(body.getArgument(input->getOperandNumber()), load(lb, *input));
      map.map(body.getArguments().back(), loop.getRegionIterArg(0));
      for (Operation &op : body.without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(op))
          map.map(index.getResult(), indices[index.getDim()]);
        else
          lb.clone(op, map);
      }
      scf::YieldOp::create(lb, loc,
                           map.lookup(body.getTerminator()->getOperand(0)));
    }
    Value total =
        perBlock
            ? gpu::AllReduceOp::create(kb, loc, loop.getResult(0),
                                       gpu::AllReduceOperationAttr::get(
                                           kb.getContext(), combiner->kind),
                                       /*uniform=*/true)
                  .getResult()
            : gpu::SubgroupReduceOp::create(kb, loc, loop.getResult(0),
                                            combiner->kind, /*uniform=*/true)
                  .getResult();
    Value first = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, lane,
                                        cst(kb, 0));
    auto guard = scf::IfOp::create(kb, loc, first, /*withElse=*/false);
    {
      OpBuilder gb = guard.getThenBodyBuilder();
      // The output's position depends on the parallel dimensions only.
      for (unsigned d : reductionDims)
        indices[d] = cst(gb, 0);
      OpOperand &init = *generic.getDpsInitOperand(0);
      SmallVector<Value> at = position(gb, init);
      Value old = memref::LoadOp::create(gb, loc, init.get(), at);
      IRMapping map;
      Operation *c = combiner->op;
      map.map(c->getOperand(combiner->outOperand), old);
      map.map(c->getOperand(1 - combiner->outOperand), total);
      Value result = gb.clone(*c, map)->getResult(0);
      memref::StoreOp::create(gb, loc, result, init.get(), at);
    }
    gpu::TerminatorOp::create(ib, loc);
    rewriter.eraseOp(generic);
    if (failed(sinkViews(launch)))
      return failure();
  }
  return success();
}

/// Spreads the iterations of `parallel` over `blockSize`-thread blocks by a
/// linear index, delinearised row-major, in one gpu.launch.
LogicalResult launchParallel(scf::ParallelOp parallel, int64_t blockSize) {
  if (parallel.getNumResults())
    return parallel.emitOpError("with reductions is not supported in a CUDA "
                                "kernel yet");
  FailureOr<SmallVector<int64_t>> counts = tripCounts(parallel);
  if (failed(counts))
    return parallel.emitOpError("needs constant bounds in a CUDA kernel");
  int64_t total = 1;
  for (int64_t n : *counts)
    total *= n;
  if (total == 0) {
    parallel.erase();
    return success();
  }
  OpBuilder b(parallel);
  Location loc = parallel.getLoc();
  int64_t threads = std::min(blockSize, total);
  int64_t blocks = llvm::divideCeil(total, threads);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, blocks), one, one,
      arith::ConstantIndexOp::create(b, loc, threads), one, one);
  OpBuilder ib = OpBuilder::atBlockEnd(&launch.getBody().front());
  auto cst = [&](OpBuilder &at, int64_t v) {
    return arith::ConstantIndexOp::create(at, loc, v).getResult();
  };
  // id = blockIdx.x * threads + threadIdx.x, guarded by id < total.
  Value id = arith::AddIOp::create(
      ib, loc,
      arith::MulIOp::create(ib, loc, launch.getBlockIds().x, cst(ib, threads)),
      launch.getThreadIds().x);
  Value inRange = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::ult, id,
                                        cst(ib, total));
  auto guard = scf::IfOp::create(ib, loc, inRange, /*withElse=*/false);
  OpBuilder gb = guard.getThenBodyBuilder();
  IRMapping map;
  Value rest = id;
  for (int64_t d = counts->size() - 1; d >= 0; --d) {
    Value n = cst(gb, (*counts)[d]);
    Value i = d == 0 ? rest : arith::RemUIOp::create(gb, loc, rest, n);
    if (d > 0)
      rest = arith::DivUIOp::create(gb, loc, rest, n);
    Value iv = arith::AddIOp::create(
        gb, loc, parallel.getLowerBound()[d],
        arith::MulIOp::create(gb, loc, i, parallel.getStep()[d]));
    map.map(parallel.getInductionVars()[d], iv);
  }
  for (Operation &op : parallel.getBody()->without_terminator())
    gb.clone(op, map);
  gpu::TerminatorOp::create(ib, loc);
  parallel.erase();
  return sinkViews(launch);
}

/// An independent loop over columns whose body is one loop scattering
/// into rows chosen by data (an embedding gradient's
/// `for p: table[ids[p], c] += dy[p, c]`) would have a thread per column,
/// each looping over every position and waiting on each row it updates.
/// Its rows are dealt out too: thread (v, c) applies, in position order,
/// the positions whose row r has r mod S == v, so each element still gets
/// its additions in the same order, on one thread. Needs every access to
/// the written buffers to be at [r, c] (or [c, r]) for one value r that
/// the inner loop computes from buffers nothing writes.
struct ScatterRows {
  Operation *row; // defines r, in the inner loop's body
  int64_t extent; // the rows of the written buffer
};

std::optional<ScatterRows> scatterRows(scf::ForOp loop) {
  scf::ForOp inner;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(op); f && !inner)
      inner = f;
    else if (!isViewOrConstant(&op))
      return std::nullopt;
  }
  if (!inner || inner.getNumResults())
    return std::nullopt;
  SmallVector<Access> accesses;
  if (!collectAccesses(inner.getBody(), accesses))
    return std::nullopt;
  llvm::SmallDenseSet<Value> written;
  for (const Access &a : accesses)
    if (a.write)
      written.insert(rootBuffer(a.memref));
  Value iv = loop.getInductionVar(), row;
  int64_t extent = 0;
  for (const Access &a : accesses) {
    if (!written.contains(rootBuffer(a.memref)))
      continue;
    auto type = cast<MemRefType>(a.memref.getType());
    if (a.indices.size() != 2 || (a.indices[0] != iv && a.indices[1] != iv))
      return std::nullopt;
    unsigned d = a.indices[0] == iv ? 1 : 0;
    if ((row && a.indices[d] != row) || type.isDynamicDim(d))
      return std::nullopt;
    row = a.indices[d];
    extent = extent ? std::min(extent, type.getDimSize(d)) : type.getDimSize(d);
  }
  Operation *def = row ? row.getDefiningOp() : nullptr;
  if (!def || def->getBlock() != inner.getBody())
    return std::nullopt;
  // r comes from the inner loop's own computation over buffers that no
  // iteration writes.
  SmallVector<Operation *> work{def};
  llvm::SmallPtrSet<Operation *, 8> seen{def};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (op->getNumRegions())
      return std::nullopt;
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && written.contains(rootBuffer(load.getMemRef())))
      return std::nullopt;
    for (Value operand : op->getOperands())
      if (Operation *d = operand.getDefiningOp();
          d && d->getBlock() == inner.getBody() && seen.insert(d).second)
        work.push_back(d);
  }
  return ScatterRows{def, extent};
}

/// How many threads a scatter's rows are dealt out to fill: enough to
/// cover an H100/H200's SMs several times over.
constexpr int64_t kScatterThreads = 1 << 16;

/// Makes every top-level scf.for of `kernel` whose iterations are
/// independent an scf.parallel, which buildLaunches spreads over threads
/// (the columns of an embedding gradient's scatter-add, say, with its rows
/// dealt out as scatterRows says).
void parallelizeIndependentLoops(func::FuncOp kernel) {
  for (auto loop : llvm::make_early_inc_range(
           kernel.getBody().front().getOps<scf::ForOp>())) {
    if (!iterationsAreIndependent(loop))
      continue;
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    std::optional<ScatterRows> rows;
    int64_t slices = 1;
    if (lb && ub && step && *step > 0 && *ub > *lb) {
      int64_t columns = llvm::divideCeil(*ub - *lb, *step);
      if (columns < kScatterThreads && (rows = scatterRows(loop)))
        slices = std::min<int64_t>(rows->extent,
                                   llvm::divideCeil(kScatterThreads, columns));
    }
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    // The slice is the outer dimension, so a warp's threads share it (the
    // ownership test is uniform) and take consecutive columns.
    SmallVector<Value> lbs{loop.getLowerBound()}, ubs{loop.getUpperBound()},
        steps{loop.getStep()};
    if (slices > 1) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      lbs.insert(lbs.begin(), zero);
      ubs.insert(ubs.begin(), arith::ConstantIndexOp::create(b, loc, slices));
      steps.insert(steps.begin(), one);
    }
    auto parallel = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    IRMapping map;
    map.map(loop.getInductionVar(), parallel.getInductionVars().back());
    OpBuilder pb = OpBuilder::atBlockBegin(parallel.getBody());
    for (Operation &op : loop.getBody()->without_terminator())
      pb.clone(op, map);
    if (slices > 1) {
      // Everything after r in the inner loop's body runs only for the rows
      // this thread owns.
      Operation *row = map.lookup(rows->row->getResult(0)).getDefiningOp();
      OpBuilder rb(row->getContext());
      rb.setInsertionPointAfter(row);
      Value owned = arith::CmpIOp::create(
          rb, loc, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(
              rb, loc, row->getResult(0),
              arith::ConstantIndexOp::create(rb, loc, slices)),
          parallel.getInductionVars().front());
      auto guard = scf::IfOp::create(rb, loc, owned, /*withElse=*/false);
      Block *body = row->getBlock();
      Operation *yield = guard.thenBlock()->getTerminator();
      for (Operation &op : llvm::make_early_inc_range(
               llvm::make_range(std::next(guard->getIterator()),
                                body->getTerminator()->getIterator())))
        op.moveBefore(yield);
    }
    loop.erase();
  }
}

/// Turns the body of `kernel` into gpu.launches: each top-level
/// scf.parallel its own launch over all its iterations; each run of other
/// code between them (sequential loop nests, a rank-0 result) one
/// single-thread launch. If a value computed in such a run is used after
/// it, the whole kernel runs as one single-thread launch instead (correct,
/// and rare: every kernel writes its results to buffers).
LogicalResult buildLaunches(func::FuncOp kernel, int64_t blockSize) {
  parallelizeIndependentLoops(kernel);
  Block &body = kernel.getBody().front();
  SmallVector<SmallVector<Operation *>> runs(1);
  SmallVector<scf::ParallelOp> parallels;
  for (Operation &op : body.without_terminator()) {
    if (auto p = dyn_cast<scf::ParallelOp>(op)) {
      parallels.push_back(p);
      runs.emplace_back();
    } else if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      // Built by reduceInBlocks; canonicalization has since hoisted its
      // constants out of it.
      if (failed(sinkViews(launch)))
        return failure();
      runs.emplace_back();
    } else if (!isViewOrConstant(&op)) {
      runs.back().push_back(&op);
    }
  }
  // Does a value of `run` reach a top-level op outside it?
  auto escapes = [&](ArrayRef<Operation *> run) {
    llvm::SmallPtrSet<Operation *, 8> inRun(run.begin(), run.end());
    for (Operation *op : run)
      for (Operation *user : op->getUsers())
        if (!inRun.contains(body.findAncestorOpInBlock(*user)))
          return true;
    return false;
  };
  if (llvm::any_of(runs, [&](auto &run) { return escapes(run); })) {
    SmallVector<Operation *> all;
    for (Operation &op : body.without_terminator())
      if (!isViewOrConstant(&op) && !isa<gpu::LaunchOp>(op))
        all.push_back(&op);
    return all.empty() ? success() : launchSequentially(all);
  }
  for (auto &run : runs)
    if (!run.empty() && failed(launchSequentially(run)))
      return failure();
  for (scf::ParallelOp p : parallels)
    if (failed(launchParallel(p, blockSize)))
      return failure();
  // Views now live inside the launches.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isViewOrConstant(&op) && op.use_empty())
      op.erase();
  return success();
}

struct LowerCudaKernelsPass
    : of::impl::LowerCudaKernelsPassBase<LowerCudaKernelsPass> {
  using LowerCudaKernelsPassBase::LowerCudaKernelsPassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    LowerCudaKernelsPassBase::getDependentDialects(registry);
    // gpu-module-to-binary translates the kernels to LLVM IR.
    registerAllGPUToLLVMIRTranslations(registry);
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (format != "bin" && format != "isa") {
      getOperation().emitError("--of-lower-cuda-kernels: format is bin or "
                               "isa, not '")
          << format << "'";
      return signalPassFailure();
    }
    if (blockSize < 1 || blockSize > 1024) {
      getOperation().emitError("--of-lower-cuda-kernels: block-size must be "
                               "in [1, 1024]");
      return signalPassFailure();
    }
    SmallVector<ExecutableOp> executables;
    getOperation().walk([&](ExecutableOp exe) {
      if (isCudaTarget(exe) && exe.getKernelModule())
        executables.push_back(exe);
    });
    FailureOr<OpPassManager> toLoops = parsePassPipeline(
        "builtin.module(convert-linalg-to-parallel-loops, canonicalize)");
    // The CUDA toolkit (ptxas for cubins, libdevice for the math functions
    // that stay calls): $CUDA_HOME, $CUDA_PATH, or /usr/local/cuda.
    std::string toolkit;
    for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
      if (const char *v = std::getenv(var); v && *v) {
        toolkit = v;
        break;
      }
    if (toolkit.empty() &&
        (llvm::sys::fs::exists("/usr/local/cuda/bin/ptxas") ||
         llvm::sys::fs::exists(
             "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")))
      toolkit = "/usr/local/cuda";
    // Checked here so that a missing toolkit is one clear error, not the
    // NVVM serializer's.
    std::string libdevice = toolkit + "/nvvm/libdevice/libdevice.10.bc";
    if (!executables.empty() &&
        (toolkit.empty() || !llvm::sys::fs::exists(libdevice))) {
      getOperation().emitError()
          << "--of-pipeline=cuda needs the CUDA toolkit's libdevice ("
          << (toolkit.empty() ? std::string("no toolkit found: set CUDA_HOME, "
                                            "or install it in /usr/local/cuda")
                              : libdevice + " does not exist")
          << "), which the kernels' math functions link";
      return signalPassFailure();
    }
    FailureOr<OpPassManager> outline =
        parsePassPipeline("builtin.module(gpu-kernel-outlining)");
    std::string toBinaryText =
        "builtin.module(nvvm-attach-target{chip=" + chip +
        "}, gpu.module(lower-affine, expand-strided-metadata, "
        "lower-affine, convert-scf-to-cf, convert-gpu-to-nvvm{use-bare-"
        "ptr-memref-call-conv=1}, canonicalize, "
        "reconcile-unrealized-casts), "
        "gpu-module-to-binary{format=" +
        format + (toolkit.empty() ? "" : " toolkit=" + toolkit) + "})";
    FailureOr<OpPassManager> toBinary = parsePassPipeline(toBinaryText);
    if (failed(toLoops) || failed(outline) || failed(toBinary))
      return signalPassFailure();

    for (ExecutableOp exe : executables) {
      ModuleOp kernels = exe.getKernelModule();
      if (failed(copiesToLinalg(kernels)) ||
          failed(parallelLoopsFirst(kernels)) ||
          failed(reduceInBlocks(kernels)) ||
          failed(runPipeline(*toLoops, kernels)))
        return signalPassFailure();
      // exp, tanh, erf, log... as polynomials, as on the CPU. What they
      // leave (fma, floor, fabs) and sqrt become libdevice calls in
      // convert-gpu-to-nvvm (so the toolkit's libdevice is needed), exact
      // ones except sqrt: libdevice's __nv_sqrtf is sqrt.approx unless
      // NVVM reflect's __CUDA_PREC_SQRT is set, which MLIR's NVVM target
      // does not offer. f32 sqrt is therefore PTX's correctly rounded
      // sqrt.rn, as the CPU's (and nvcc's default, -prec-sqrt=true).
      RewritePatternSet math(ctx);
      populateMathPolynomialApproximationPatterns(math);
      math.add<RoundedSqrtF32>(ctx);
      if (failed(applyPatternsGreedily(kernels, std::move(math))))
        return signalPassFailure();
      SmallVector<func::FuncOp> funcs =
          llvm::to_vector(kernels.getOps<func::FuncOp>());
      for (func::FuncOp f : funcs)
        if (failed(buildLaunches(f, blockSize)))
          return signalPassFailure();
      kernels->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                       UnitAttr::get(ctx));
      // gpu.all_reduce (of reduceInBlocks) becomes warp shuffles and
      // workgroup memory once its launch is a gpu.func, gpu.subgroup_reduce
      // warp shuffles.
      if (failed(runPipeline(*outline, kernels)))
        return signalPassFailure();
      RewritePatternSet allReduce(ctx);
      populateGpuAllReducePatterns(allReduce);
      populateGpuLowerSubgroupReduceToShufflePatterns(allReduce, kWarpSize);
      if (failed(applyPatternsGreedily(kernels, std::move(allReduce))) ||
          failed(runPipeline(*toBinary, kernels)))
        return signalPassFailure();

      // Each plan kernel: its launches, in order.
      Builder b(ctx);
      SmallVector<NamedAttribute> table;
      for (func::FuncOp f : funcs) {
        SmallVector<Attribute> launches;
        for (Operation &op : f.getBody().front().without_terminator()) {
          auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
          if (!launch) {
            if (isa<arith::ConstantOp>(op))
              continue;
            op.emitOpError("is left on the host side of a CUDA kernel");
            return signalPassFailure();
          }
          auto dims = [&](gpu::KernelDim3 d) -> FailureOr<DenseI64ArrayAttr> {
            SmallVector<int64_t> v;
            for (Value x : {d.x, d.y, d.z}) {
              std::optional<int64_t> c = getConstantIntValue(x);
              if (!c)
                return failure();
              v.push_back(*c);
            }
            return b.getDenseI64ArrayAttr(v);
          };
          FailureOr<DenseI64ArrayAttr> grid =
              dims(launch.getGridSizeOperandValues());
          FailureOr<DenseI64ArrayAttr> block =
              dims(launch.getBlockSizeOperandValues());
          if (failed(grid) || failed(block)) {
            launch.emitOpError("needs constant launch dimensions");
            return signalPassFailure();
          }
          SmallVector<int64_t> args;
          for (Value v : launch.getKernelOperands()) {
            auto arg = dyn_cast<BlockArgument>(v);
            if (!arg || arg.getOwner()->getParentOp() != f) {
              launch.emitOpError("passes a value that is not one of the "
                                 "kernel's buffers");
              return signalPassFailure();
            }
            args.push_back(arg.getArgNumber());
          }
          launches.push_back(b.getDictionaryAttr(
              {b.getNamedAttr("kernel", launch.getKernelModuleName()),
               b.getNamedAttr("function", launch.getKernelName()),
               b.getNamedAttr("grid", *grid), b.getNamedAttr("block", *block),
               b.getNamedAttr("args", b.getDenseI64ArrayAttr(args))}));
        }
        table.push_back(
            b.getNamedAttr(f.getSymName(), b.getArrayAttr(launches)));
      }
      for (func::FuncOp f : funcs)
        f.erase();
      // The compile-time measurements gpu-module-to-binary records would
      // make the same program compile to different plans.
      kernels.walk([&](gpu::BinaryOp binary) {
        SmallVector<Attribute> objects;
        for (Attribute a : binary.getObjectsAttr()) {
          auto object = cast<gpu::ObjectAttr>(a);
          objects.push_back(gpu::ObjectAttr::get(
              ctx, object.getTarget(), object.getFormat(), object.getObject(),
              /*properties=*/nullptr, object.getKernels()));
        }
        binary.setObjectsAttr(b.getArrayAttr(objects));
      });
      exe.setLaunchesAttr(b.getDictionaryAttr(table));
      exe.setFormatAttr(b.getStringAttr(format == "bin" ? "cubin" : "ptx"));
    }
  }
};

} // namespace
