//===- OFToPlan.cpp - Bufferized functions to ofrt programs ---------------===//
//
// Implements --of-build-plan: turns each public bufferized function into an
// ofrt.program (buffers, steps, a static arena) and outlines its compute ops
// into kernels of one executable (@cpu_kernels, or @cuda_kernels with
// device=cuda). Assumes static shapes, identity-layout
// function boundaries and no calls (the pipeline inlines first).
//
//===----------------------------------------------------------------------===//

#include "OF/ABI/LibraryCalls.h"
#include "OF/ABI/PlanFormat.h"
#include "OF/Conversion/OFToPlan/ArenaPlanner.h"
#include "OF/Conversion/Passes.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/Plan/IR/PlanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::of {
#define GEN_PASS_DEF_BUILDPLANPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::ofrt;

namespace {

/// A buffer of the program: the value that owns memory (an alloc, an
/// argument or a global's get), before any view.
struct Root {
  BufferKind kind;
  Value value;
  MemRefType type;
  std::string symbol;
  std::string binding; // inputs
  ofrt::DistAttr dist; // inputs of multi-rank programs
  Attribute constant;  // constants
  int64_t first = -1, last = -1;
};

struct Step {
  enum Kind {
    Launch,
    Library,
    Copy,
    Output,
    Collective,
    EventRecord,
    EventWait
  } kind;
  std::string name;              // kernel, library function, output name
  SmallVector<unsigned> buffers; // root indices
  SmallVector<int64_t> params;   // library params
  int64_t srcOffset = 0, dstOffset = 0, bytes = 0; // copies
  // Collectives: the kind, the placement's grid and ranks, and the full
  // local shape with the gathered/scattered dims.
  ofrt::CollectiveKind collective = ofrt::CollectiveKind::AllReduce;
  ofrt::ReduceKind reduce = ofrt::ReduceKind::Sum;
  SmallVector<int64_t> mesh, group, shape;
  int64_t axis = 0, dim = 0, dim2 = 0;
  int64_t peer = -1;   // send/recv: the other world rank
  ofrt::DistAttr dist; // outputs of multi-rank programs
  std::string updates; // outputs: the input this one replaces after a run
  bool dead = false;
  int64_t stream = 0;
  int64_t event = -1; // EventRecord, EventWait
  /// A collective on the communication stream: the position of the step
  /// after which the compute stream has waited for it (-1: the run's end).
  int64_t joinedAt = -1;
  /// The location of the op the step was made for (null: none).
  LocationAttr origin;
  /// The outlined kernel of a launch.
  func::FuncOp kernel;
  /// In-place candidates of an elementwise kernel: (input root, output root).
  SmallVector<std::pair<unsigned, unsigned>> inPlace;
};

/// Follows view ops (reshape, subview, ...) back to the value owning memory.
Value traceRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether a memref type is row-major contiguous; sets its element offset.
bool isContiguous(MemRefType type, int64_t &offset) {
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return false;
  int64_t expected = 1;
  for (int64_t i = type.getRank() - 1; i >= 0; --i) {
    if (type.getDimSize(i) != 1 && strides[i] != expected)
      return false;
    expected *= type.getDimSize(i);
  }
  return true;
}

int64_t byteSize(MemRefType type) {
  return type.getNumElements() * getElementByteSize(type.getElementType());
}

/// The kernels of an executable, deduplicated: a kernel outlined with the
/// same signature and body (up to locations) as an earlier one is that
/// one. Layers of a model, and the forward that a training step repeats,
/// outline the same kernels many times; compiling each once keeps the
/// LLVM work proportional to the distinct kernels (a 2-layer GPT's plan
/// with its forward, gradient and training-step entries: 119 distinct
/// kernels out of 584).
class KernelTable {
public:
  explicit KernelTable(ModuleOp kernels) : kernels(kernels) {}

  ModuleOp module() const { return kernels; }
  /// The name for the next new kernel.
  std::string nextName() const { return "k" + std::to_string(counter); }
  /// Takes `kernel`, just outlined under nextName(), or erases it and
  /// returns the equal kernel outlined before. Counts a use either way.
  func::FuncOp intern(func::FuncOp kernel) {
    size_t hash = hashOf(kernel);
    for (func::FuncOp known : byHash[hash])
      if (known.getFunctionType() == kernel.getFunctionType() &&
          OperationEquivalence::isRegionEquivalentTo(
              &known.getBody(), &kernel.getBody(),
              OperationEquivalence::IgnoreLocations)) {
        kernel.erase();
        ++uses[known];
        return known;
      }
    byHash[hash].push_back(kernel);
    ++uses[kernel];
    ++counter;
    return kernel;
  }
  /// Drops a use of `kernel` (a step that turned out dead); the last use
  /// erases it.
  void release(func::FuncOp kernel) {
    if (--uses[kernel] != 0)
      return;
    uses.erase(kernel);
    auto &bucket = byHash[hashOf(kernel)];
    llvm::erase(bucket, kernel);
    kernel.erase();
  }

private:
  static size_t hashOf(func::FuncOp kernel) {
    llvm::hash_code hash = hash_value(kernel.getFunctionType());
    kernel.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(hash,
                                OperationEquivalence::computeHash(
                                    op, OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::IgnoreLocations));
    });
    return hash;
  }

  ModuleOp kernels;
  unsigned counter = 0;
  DenseMap<size_t, SmallVector<func::FuncOp, 1>> byHash;
  DenseMap<Operation *, unsigned> uses;
};

class ProgramBuilder {
public:
  ProgramBuilder(func::FuncOp func, KernelTable &kernels, SymbolTable &symbols,
                 bool inPlace, bool useBlas, bool useDnn, bool commStream,
                 StringRef device)
      : func(func), kernels(kernels), symbols(symbols), inPlace(inPlace),
        useBlas(useBlas), useDnn(useDnn), commStream(commStream),
        device(device) {}

  LogicalResult build(OpBuilder &planBuilder);

private:
  /// Puts the collectives that communicate on stream 1, each as early as
  /// the buffers it uses allow, with the events that order the streams.
  void scheduleCommunication();
  LogicalResult visit(Operation *op);
  LogicalResult visitCollective(Operation *op);
  /// Whether `v` is the whole of its root buffer, contiguous: what library
  /// calls, collectives and transfers work on.
  bool isWholeBuffer(Value v) {
    auto type = cast<MemRefType>(v.getType());
    int64_t offset;
    return isContiguous(type, offset) && offset == 0 &&
           byteSize(type) == byteSize(roots[rootOf(v)].type);
  }
  LogicalResult visitTransfer(Operation *op);
  LogicalResult visitLibraryCall(mlir::of::LibraryCallOp op);
  /// The `dist` of a multi-rank program's input or output, from the
  /// `of.global` type that --of-partition put on it (null without one).
  ofrt::DistAttr distribution(TypeAttr global);
  unsigned rootOf(Value value);
  LogicalResult outline(Operation *op, Step &step);
  std::optional<SmallVector<int64_t>> gemmParams(linalg::ContractOp op);
  bool foldRoundingIntoGemm(linalg::GenericOp op);
  static Location sourceOf(Operation *op);
  /// Records that a step reads `root`.
  void read(unsigned root) {
    auto it = pendingZero.find(root);
    if (it != pendingZero.end())
      it->second.read = true;
  }
  /// Records that a step (may) write `root`: it is no longer known zero.
  void write(unsigned root) { pendingZero.erase(root); }
  /// Records the reads and writes of a launched op: a destination-style op
  /// writes its inits and reads the rest; any other op may write anything.
  void access(Operation *op, const Step &step);

  func::FuncOp func;
  KernelTable &kernels;
  SymbolTable &symbols;
  bool inPlace, useBlas, useDnn, commStream;
  /// "cpu" or "cuda": the programs' device and their executable.
  StringRef device;

  std::vector<Root> roots;
  DenseMap<Value, unsigned> rootIndex;
  llvm::StringMap<unsigned> globalRoots;
  std::vector<Step> steps;
  /// Roots known to hold zeros, with the step that zeroed them (a zero fill,
  /// or a copy of zeros; CSE merges equal fills, so bufferization copies
  /// one zeroed buffer into several matmul outputs) and whether anything
  /// read the zeros since. A gemm (beta = 0) on such a root makes that
  /// step unnecessary when nothing read it.
  struct ZeroedBy {
    size_t step;
    bool read = false;
  };
  DenseMap<unsigned, ZeroedBy> pendingZero;
};

unsigned ProgramBuilder::rootOf(Value value) {
  return rootIndex.lookup(traceRoot(value));
}

/// `root` and every view of it.
SmallVector<Value> aliasesOf(Value root) {
  SmallVector<Value> aliases = {root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == aliases[i])
        llvm::append_range(aliases, user->getResults());
  return aliases;
}

/// A training step's update of its state written straight into the state's
/// input buffer: for a result marked `of.update = a` whose buffer is last
/// written by an elementwise kernel K (its whole init, identity indexing),
/// K writes argument `a` instead when that is safe, after moving K past
/// later readers of `a` where nothing between depends on it; the ops after
/// K that read the new value (an optimizer's moments, read by its parameter
/// kernel) then read it from `a`. Safe means nothing after K uses argument
/// `a`'s old value and K reads it only at the index it writes, ops after K
/// only read the result's buffer, and nothing after K can fail (no
/// collective, no index check, no library call): a run that fails then
/// stops before any state has changed. The output step then copies nothing
/// (its source is the input's storage), saving a copy of every updated
/// parameter and optimizer state per step. Bufferization keeps the
/// caller's arguments read-only (`bufferization.writable = false`) because
/// its analysis cannot see the runtime's state; this is that one case,
/// decided on the bufferized program.
///
/// The other form: the result starts as a copy of the argument
/// (`memref.copy`) that kernels after it change in part (SGD's sparse
/// update of a table, an of.embedding_grad into it, scatters only the rows
/// the batch names). The copy goes and those kernels change the argument,
/// when nothing after the copy reads the argument itself, nothing before
/// it touches the result, and nothing after it can fail.
static bool updateCopyInPlace(Block &body, func::ReturnOp ret, Value result,
                              BlockArgument arg,
                              function_ref<bool(Operation &)> canFail) {
  SmallVector<memref::CopyOp> copies;
  for (Operation *user : result.getUsers())
    if (auto c = dyn_cast<memref::CopyOp>(user); c && c.getTarget() == result)
      copies.push_back(c);
  if (copies.size() != 1)
    return false;
  memref::CopyOp copy = copies.front();
  if (copy.getSource() != arg || copy->getBlock() != &body)
    return false;
  for (Value alias : aliasesOf(result))
    for (Operation *user : alias.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || top->isBeforeInBlock(copy))
        return false;
    }
  for (Value alias : aliasesOf(arg))
    for (Operation *user : alias.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || (top != copy && !top->isBeforeInBlock(copy) &&
                   !isa<ViewLikeOpInterface>(top)))
        return false;
    }
  for (Operation *op = copy->getNextNode(); op != ret; op = op->getNextNode())
    if (canFail(*op))
      return false;
  Operation *alloc = result.getDefiningOp();
  copy->erase();
  result.replaceAllUsesWith(arg);
  alloc->erase();
  return true;
}

void writeUpdatesInPlace(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto canFail = [](Operation &op) {
    return op.hasAttr(
               mlir::of::OFDialect::IndexRangeAttrHelper::getNameStr()) ||
           isa<mlir::of::AllReduceOp, mlir::of::AllGatherOp,
               mlir::of::ReduceScatterOp, mlir::of::AllToAllOp,
               mlir::of::SendOp, mlir::of::RecvOp, mlir::of::LibraryCallOp>(op);
  };
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    auto target = func.getResultAttrOfType<IntegerAttr>(
        i, mlir::of::OFDialect::UpdateAttrHelper::getNameStr());
    if (!target)
      continue;
    Value result = ret.getOperand(i);
    BlockArgument arg = body.getArgument(target.getInt());
    if (result.getType() != arg.getType() ||
        !result.getDefiningOp<memref::AllocOp>() ||
        llvm::count(ret.getOperands(), result) != 1)
      continue;
    if (updateCopyInPlace(body, ret, result, arg, canFail))
      continue;
    // K: the last op that writes the result's buffer. Ops after it may
    // only read that buffer, directly (AdamW's parameter kernel reads the
    // new moments): they will read the argument, which then holds the same.
    Operation *writer = nullptr;
    bool ok = true;
    for (Value alias : aliasesOf(result))
      for (OpOperand &use : alias.getUses()) {
        Operation *user = use.getOwner();
        // Loads and stores inside a kernel's body (an embedding gradient's
        // scatter) are that kernel's; they must come before K (below).
        if (user->getBlock() != &body)
          continue;
        if (user == ret.getOperation()) {
          ok &= alias == result;
          continue;
        }
        auto dps = dyn_cast<DestinationStyleOpInterface>(user);
        if (alias == result && dps && dps.isDpsInit(&use) &&
            (!writer || writer->isBeforeInBlock(user)))
          writer = user;
      }
    auto kernel = dyn_cast_or_null<linalg::GenericOp>(writer);
    if (!ok || !kernel || kernel.getNumDpsInits() != 1 ||
        kernel.getNumLoops() != kernel.getNumParallelLoops() ||
        kernel.getDpsInitOperand(0)->get() != result ||
        !kernel.getMatchingIndexingMap(kernel.getDpsInitOperand(0))
             .isIdentity())
      continue;
    SmallVector<OpOperand *> laterReads;
    for (Value alias : aliasesOf(result))
      for (OpOperand &use : alias.getUses()) {
        Operation *user = use.getOwner();
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top) {
          ok = false;
          continue;
        }
        if (top == ret.getOperation() || user == kernel.getOperation() ||
            isa<ViewLikeOpInterface, memref::DeallocOp>(user) ||
            top->isBeforeInBlock(kernel))
          continue;
        auto dps = dyn_cast<DestinationStyleOpInterface>(user);
        if (user == top && alias == result && dps && dps.isDpsInput(&use))
          laterReads.push_back(&use);
        else
          ok = false;
      }
    if (!ok)
      continue;
    // Ops after K that read the argument (SGD's parameter kernel reads
    // the old momentum when fusion recomputes the new one in it): K moves
    // after the last of them when nothing in between touches K's output or
    // writes what K reads.
    // A kernel that gathers from the argument (an embedding table) reads it
    // with loads inside its body: the kernel is the reader.
    Operation *lastReader = nullptr;
    for (Value alias : aliasesOf(arg))
      for (Operation *user : alias.getUsers()) {
        user = body.findAncestorOpInBlock(*user);
        if (user && !isa<ViewLikeOpInterface>(user) &&
            kernel->isBeforeInBlock(user) && user != ret.getOperation() &&
            (!lastReader || lastReader->isBeforeInBlock(user)))
          lastReader = user;
      }
    // K goes after `anchor`: the last later reader of the argument, or
    // where it is.
    Operation *anchor = lastReader ? lastReader : kernel.getOperation();
    if (lastReader) {
      SmallVector<Value> kernelReads;
      for (OpOperand *input : kernel.getDpsInputOperands())
        kernelReads.push_back(traceRoot(input->get()));
      kernel->walk([&](memref::LoadOp load) {
        kernelReads.push_back(traceRoot(load.getMemRef()));
      });
      for (Operation *op = kernel->getNextNode(); ok; op = op->getNextNode()) {
        if (isa<ViewLikeOpInterface, memref::AllocOp>(op) ||
            isMemoryEffectFree(op)) {
          if (op == lastReader)
            break;
          continue;
        }
        auto dps = dyn_cast<DestinationStyleOpInterface>(op);
        ok = dps && dps.hasPureBufferSemantics();
        for (OpOperand &operand : op->getOpOperands()) {
          if (!ok || !isa<MemRefType>(operand.get().getType()))
            continue;
          Value root = traceRoot(operand.get());
          ok = root != result && !(dps.isDpsInit(&operand) &&
                                   llvm::is_contained(kernelReads, root));
        }
        // Loads and stores inside its body (gathers, scatters) count too.
        op->walk([&](Operation *inner) {
          if (auto load = dyn_cast<memref::LoadOp>(inner))
            ok &= traceRoot(load.getMemRef()) != result;
          if (auto store = dyn_cast<memref::StoreOp>(inner)) {
            Value root = traceRoot(store.getMemRef());
            ok &= root != result && !llvm::is_contained(kernelReads, root);
          }
        });
        if (op == lastReader)
          break;
      }
    }
    // The argument: read up to the anchor, or by K at the index K writes.
    for (Value alias : aliasesOf(arg))
      for (OpOperand &use : alias.getUses()) {
        Operation *user = use.getOwner();
        if (isa<ViewLikeOpInterface>(user) && user->getBlock() == &body)
          continue;
        if (user->getBlock() != &body) {
          // A load inside a kernel's body: that kernel reads the argument
          // (K itself may not, at an index other than the one it writes).
          Operation *reader = body.findAncestorOpInBlock(*user);
          ok &= reader && reader != kernel.getOperation() &&
                (reader == anchor || reader->isBeforeInBlock(anchor));
          continue;
        }
        if (user == ret.getOperation()) {
          ok = false;
          continue;
        }
        if (user == kernel.getOperation()) {
          ok &= alias == arg && kernel.isDpsInput(&use) &&
                kernel.getMatchingIndexingMap(&use).isIdentity();
          continue;
        }
        ok &= user == anchor || user->isBeforeInBlock(anchor);
      }
    for (Operation *op = anchor->getNextNode(); ok && op != ret;
         op = op->getNextNode())
      ok = !canFail(*op);
    if (!ok)
      continue;
    if (lastReader)
      kernel->moveAfter(lastReader);
    kernel.getDpsInitOperand(0)->set(arg);
    for (OpOperand *use : laterReads)
      use->set(arg);
    ret.setOperand(i, arg);
  }
}

LogicalResult ProgramBuilder::build(OpBuilder &planBuilder) {
  Location loc = func.getLoc();
  Block &body = func.getBody().front();
  // The CPU session reads a state's new value from its input storage; the
  // CUDA session's device copies of state would need the same care, not
  // yet run on a GPU.
  if (inPlace && device == StringRef(::of::plan::kDeviceCpu))
    writeUpdatesInPlace(func);

  // Inputs, named by of.name or argN.
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return func.emitError("argument ")
             << arg.getArgNumber() << " has type " << arg.getType()
             << "; the plan needs statically shaped identity-layout memrefs";
    Root root{BufferKind::Input, arg, type};
    root.symbol = "arg" + std::to_string(arg.getArgNumber());
    auto name = func.getArgAttrOfType<StringAttr>(
        arg.getArgNumber(), mlir::of::OFDialect::NameAttrHelper::getNameStr());
    root.binding = name ? name.str() : root.symbol;
    root.dist = distribution(func.getArgAttrOfType<TypeAttr>(
        arg.getArgNumber(),
        mlir::of::OFDialect::GlobalAttrHelper::getNameStr()));
    rootIndex[arg] = roots.size();
    roots.push_back(root);
  }

  // An output is its root buffer, with the root's shape: a returned view
  // that is not the whole of its root, or has another shape (a reshape), is
  // copied out first.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    auto type = cast<MemRefType>(v.getType());
    int64_t offset;
    Value root = traceRoot(v);
    if (root == v ||
        (isContiguous(type, offset) && offset == 0 &&
         cast<MemRefType>(root.getType()).getShape() == type.getShape()))
      continue;
    auto copyType = MemRefType::get(type.getShape(), type.getElementType());
    Value copy = memref::AllocOp::create(b, loc, copyType);
    memref::CopyOp::create(b, loc, v, copy);
    operand.set(copy);
  }

  // A collective works on whole buffers: a view operand (a slice, a
  // strided subview) goes through a contiguous copy.
  auto isWhole = [&](Value v) {
    auto type = cast<MemRefType>(v.getType());
    Value root = traceRoot(v);
    int64_t offset;
    return root == v || (isContiguous(type, offset) && offset == 0 &&
                         cast<MemRefType>(root.getType()).getNumElements() ==
                             type.getNumElements());
  };
  SmallVector<Operation *> collectives;
  body.walk([&](Operation *op) {
    if (isa<mlir::of::AllReduceOp, mlir::of::AllGatherOp,
            mlir::of::ReduceScatterOp, mlir::of::AllToAllOp,
            mlir::of::ShardSliceOp, mlir::of::ToPartialOp, mlir::of::SendOp,
            mlir::of::RecvOp>(op))
      collectives.push_back(op);
  });
  for (Operation *op : collectives) {
    OpBuilder cb(op);
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value v = op->getOperand(i);
      if (isWhole(v))
        continue;
      auto type = cast<MemRefType>(v.getType());
      Value tmp = memref::AllocOp::create(
          cb, op->getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()));
      bool written = isa<mlir::of::RecvOp>(op) ? i == 0 : i == 1;
      if (!written) {
        memref::CopyOp::create(cb, op->getLoc(), v, tmp);
      } else {
        OpBuilder after(op->getContext());
        after.setInsertionPointAfter(op);
        memref::CopyOp::create(after, op->getLoc(), tmp, v);
      }
      op->setOperand(i, tmp);
    }
  }

  // A gemm step reads its operands from the start of their buffers: a
  // product whose A or B is a view at an offset (a micro-batch's slice of
  // stacked inputs, one feature's rows of an interaction's [B, F, D]
  // gradient) reads a contiguous copy, when that makes it a gemm
  // (generated loops are two orders of magnitude slower: DLRM's bag
  // gradients took 20 ms each at batch 256).
  if (useBlas) {
    SmallVector<linalg::ContractOp> contracts;
    body.walk([&](linalg::ContractOp op) { contracts.push_back(op); });
    for (linalg::ContractOp contract : contracts) {
      if (gemmParams(contract))
        continue;
      SmallVector<std::pair<unsigned, Value>> replaced;
      SmallVector<Operation *> added;
      for (unsigned i = 0; i < 2; ++i) {
        Value v = contract->getOperand(i);
        auto type = cast<MemRefType>(v.getType());
        int64_t offset;
        if (traceRoot(v) == v || (isContiguous(type, offset) && offset == 0))
          continue;
        OpBuilder cb(contract);
        auto copy = memref::AllocOp::create(
            cb, contract.getLoc(),
            MemRefType::get(type.getShape(), type.getElementType()));
        added.push_back(copy);
        added.push_back(memref::CopyOp::create(cb, contract.getLoc(), v, copy));
        contract->setOperand(i, copy);
        replaced.push_back({i, v});
      }
      if (replaced.empty() || gemmParams(contract))
        continue;
      for (auto [i, v] : replaced)
        contract->setOperand(i, v);
      for (Operation *op : llvm::reverse(added))
        op->erase();
    }
  }

  for (Operation &op : body.without_terminator()) {
    size_t first = steps.size();
    if (failed(visit(&op)))
      return failure();
    for (size_t i = first; i < steps.size(); ++i)
      if (!steps[i].origin)
        steps[i].origin = sourceOf(&op);
  }

  // Outputs.
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Step step{Step::Output};
    auto name = func.getResultAttrOfType<StringAttr>(
        i, mlir::of::OFDialect::NameAttrHelper::getNameStr());
    step.name = name ? name.str() : "out" + std::to_string(i);
    step.buffers.push_back(rootOf(v));
    step.dist = distribution(func.getResultAttrOfType<TypeAttr>(
        i, mlir::of::OFDialect::GlobalAttrHelper::getNameStr()));
    if (auto arg = func.getResultAttrOfType<IntegerAttr>(
            i, mlir::of::OFDialect::UpdateAttrHelper::getNameStr()))
      step.updates =
          roots[rootIndex.lookup(body.getArgument(arg.getInt()))].binding;
    steps.push_back(step);
  }

  if (device == StringRef(::of::plan::kDeviceCuda) && commStream)
    scheduleCommunication();

  // Liveness over the live steps; outputs stay alive to the end.
  int64_t index = 0;
  for (Step &step : steps) {
    if (step.dead)
      continue;
    for (unsigned r : step.buffers) {
      if (roots[r].first < 0)
        roots[r].first = index;
      roots[r].last = index;
    }
    ++index;
  }
  int64_t end = index;
  for (Step &step : steps)
    if (step.kind == Step::Output)
      roots[step.buffers[0]].last = end;
  // A collective on the communication stream may still use its buffers
  // until the compute stream waits for it: no other buffer shares their
  // memory before then.
  for (Step &step : steps)
    if (step.stream != 0)
      for (unsigned r : step.buffers)
        roots[r].last =
            std::max(roots[r].last, step.joinedAt >= 0 ? step.joinedAt : end);

  // In place: an elementwise kernel's output takes the slot of an input
  // that dies at it. Groups of roots share one placement.
  std::vector<unsigned> group(roots.size());
  std::iota(group.begin(), group.end(), 0);
  std::function<unsigned(unsigned)> find = [&](unsigned r) {
    return group[r] == r ? r : group[r] = find(group[r]);
  };
  std::vector<int64_t> groupFirst, groupLast;
  for (const Root &r : roots) {
    groupFirst.push_back(r.first);
    groupLast.push_back(r.last);
  }
  if (inPlace) {
    index = 0;
    for (Step &step : steps) {
      if (step.dead)
        continue;
      for (auto [in, out] : step.inPlace) {
        unsigned gin = find(in), gout = find(out);
        if (gin == gout || groupLast[gin] != index ||
            roots[out].first != index || find(out) != out)
          continue;
        group[gout] = gin;
        groupLast[gin] = std::max(groupLast[gin], groupLast[gout]);
        break;
      }
      ++index;
    }
  }

  // Place the arena groups.
  std::vector<ArenaRequest> requests;
  DenseMap<unsigned, size_t> requestOf;
  for (unsigned r = 0; r < roots.size(); ++r) {
    if (roots[r].kind != BufferKind::Arena || roots[r].first < 0 ||
        find(r) != r)
      continue;
    uint64_t bytes = 0;
    for (unsigned m = 0; m < roots.size(); ++m)
      if (find(m) == r)
        bytes = std::max<uint64_t>(bytes, byteSize(roots[m].type));
    requestOf[r] = requests.size();
    requests.push_back({bytes, groupFirst[r], groupLast[r]});
  }
  ArenaPlan arena = planArena(requests);

  // Emit the program.
  MLIRContext *ctx = func.getContext();
  auto entry = func->getAttrOfType<StringAttr>(
      mlir::of::OFDialect::EntryAttrHelper::getNameStr());
  auto ranks = func->getAttrOfType<DenseI64ArrayAttr>(
      mlir::of::OFDialect::RanksAttrHelper::getNameStr());
  int64_t numStreams = 1, numEvents = 0;
  for (const Step &step : steps) {
    numStreams = std::max(numStreams, step.stream + 1);
    numEvents = std::max(numEvents, step.event + 1);
  }
  auto program = ProgramOp::create(
      planBuilder, loc,
      entry ? entry : planBuilder.getStringAttr(func.getSymName()),
      ranks ? ranks : planBuilder.getDenseI64ArrayAttr({0}),
      planBuilder.getStringAttr(device),
      planBuilder.getI64IntegerAttr(arena.size),
      numStreams > 1 ? planBuilder.getI64IntegerAttr(numStreams)
                     : IntegerAttr(),
      numEvents > 0 ? planBuilder.getI64IntegerAttr(numEvents) : IntegerAttr());
  Block *block = new Block();
  program.getBody().push_back(block);
  OpBuilder pb = OpBuilder::atBlockEnd(block);
  auto tensorType = [](MemRefType t) {
    return RankedTensorType::get(t.getShape(), t.getElementType());
  };
  SmallVector<FlatSymbolRefAttr> refs;
  for (unsigned r = 0; r < roots.size(); ++r) {
    Root &root = roots[r];
    refs.push_back(FlatSymbolRefAttr::get(ctx, root.symbol));
    if (root.kind == BufferKind::Arena && root.first < 0)
      continue; // never used
    IntegerAttr offset;
    if (root.kind == BufferKind::Arena)
      offset = pb.getI64IntegerAttr(arena.offsets[requestOf.lookup(find(r))]);
    BufferOp::create(pb, loc, pb.getStringAttr(root.symbol),
                     BufferKindAttr::get(ctx, root.kind), offset,
                     root.kind == BufferKind::Input
                         ? pb.getStringAttr(root.binding)
                         : StringAttr(),
                     pb.getI64IntegerAttr(byteSize(root.type)),
                     cast_or_null<ElementsAttr>(root.constant),
                     TypeAttr::get(tensorType(root.type)), root.dist);
  }
  auto bufferRefs = [&](const Step &step) {
    SmallVector<Attribute> attrs;
    for (unsigned r : step.buffers)
      attrs.push_back(refs[r]);
    return pb.getArrayAttr(attrs);
  };
  for (const Step &step : steps) {
    if (step.dead)
      continue;
    // Each step's op carries its source location, marked as its origin.
    Location at = step.origin ? markOrigin(step.origin) : func.getLoc();
    switch (step.kind) {
    case Step::Launch:
      LaunchOp::create(pb, at,
                       FlatSymbolRefAttr::get(
                           ctx, device == StringRef(::of::plan::kDeviceCuda)
                                    ? "cuda_kernels"
                                    : "cpu_kernels"),
                       pb.getStringAttr(step.name), bufferRefs(step));
      break;
    case Step::Library:
      LibraryCallOp::create(pb, at, pb.getStringAttr(step.name),
                            bufferRefs(step),
                            pb.getDenseI64ArrayAttr(step.params));
      break;
    case Step::Copy:
      CopyOp::create(pb, at, refs[step.buffers[0]], refs[step.buffers[1]],
                     pb.getI64IntegerAttr(step.srcOffset),
                     pb.getI64IntegerAttr(step.dstOffset),
                     pb.getI64IntegerAttr(step.bytes));
      break;
    case Step::Output:
      OutputOp::create(
          pb, at, pb.getStringAttr(step.name), refs[step.buffers[0]],
          pb.getI64IntegerAttr(0), step.dist,
          step.updates.empty() ? StringAttr() : pb.getStringAttr(step.updates));
      break;
    case Step::Collective:
      CollectiveOp::create(
          pb, at, CollectiveKindAttr::get(pb.getContext(), step.collective),
          refs[step.buffers[0]], refs[step.buffers[1]],
          pb.getDenseI64ArrayAttr(step.group),
          ReduceKindAttr::get(pb.getContext(), step.reduce),
          pb.getI64IntegerAttr(step.peer), pb.getI64IntegerAttr(step.stream),
          step.mesh.empty() ? DenseI64ArrayAttr()
                            : pb.getDenseI64ArrayAttr(step.mesh),
          pb.getI64IntegerAttr(step.axis),
          step.collective == CollectiveKind::Send ||
                  step.collective == CollectiveKind::Recv
              ? DenseI64ArrayAttr()
              : pb.getDenseI64ArrayAttr(step.shape),
          pb.getI64IntegerAttr(step.dim), pb.getI64IntegerAttr(step.dim2));
      break;
    case Step::EventRecord:
      EventRecordOp::create(pb, at, pb.getI64IntegerAttr(step.event),
                            pb.getI64IntegerAttr(step.stream));
      break;
    case Step::EventWait:
      EventWaitOp::create(pb, at, pb.getI64IntegerAttr(step.event),
                          pb.getI64IntegerAttr(step.stream));
      break;
    }
  }
  return success();
}

/// The source of the steps made for `op`: the locations of the ops in its
/// body, in order, then its own. A fused kernel's body holds the ops of
/// every op fused into it, while the fused op has only the last one's
/// location.
Location ProgramBuilder::sourceOf(Operation *op) {
  SmallVector<Location> locations;
  for (Region &region : op->getRegions())
    region.walk(
        [&](Operation *inner) { locations.push_back(inner->getLoc()); });
  locations.push_back(op->getLoc());
  return FusedLoc::get(op->getContext(), locations);
}

/// Whether `step` communicates (a local slice or to_partial does not).
static bool communicates(const Step &step) {
  return step.kind == Step::Collective &&
         step.collective != CollectiveKind::Slice &&
         step.collective != CollectiveKind::ToPartial;
}

void ProgramBuilder::scheduleCommunication() {
  llvm::erase_if(steps, [](const Step &step) { return step.dead; });
  // Each communicating collective moves up to the last step that uses one
  // of its buffers (the gradient it reduces was just computed), keeping
  // the collectives in their order (every rank runs them in one order).
  auto touches = [](const Step &a, const Step &b) {
    for (unsigned r : a.buffers)
      if (llvm::is_contained(b.buffers, r))
        return true;
    return false;
  };
  bool any = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!communicates(steps[i]))
      continue;
    any = true;
    size_t j = i;
    while (j > 0 && steps[j - 1].kind != Step::Collective &&
           !touches(steps[j - 1], steps[i]))
      --j;
    std::rotate(steps.begin() + j, steps.begin() + i, steps.begin() + i + 1);
  }
  if (!any)
    return;

  // Stream 1 runs them. Before each, stream 1 waits for everything stream 0
  // did so far (its inputs, and the last readers of the memory it will
  // write); a step of stream 0 that uses a collective's buffers first
  // waits for stream 1 to have finished that collective (stream 1 runs in
  // order, so the latest such collective covers the earlier ones).
  std::vector<Step> scheduled;
  int64_t events = 0;
  bool computedSinceHandOff = true;
  // For each root, the latest collective (its index in `scheduled`) on
  // stream 1 that uses it, and the event recorded after it.
  DenseMap<unsigned, std::pair<size_t, int64_t>> pending;
  size_t joined = 0; // collectives before this index are waited for
  std::vector<size_t> collectives;
  for (Step &step : steps) {
    if (communicates(step)) {
      if (computedSinceHandOff) {
        Step record{Step::EventRecord};
        record.event = events++;
        Step wait{Step::EventWait};
        wait.event = record.event;
        wait.stream = 1;
        scheduled.push_back(record);
        scheduled.push_back(wait);
        computedSinceHandOff = false;
      }
      step.stream = 1;
      size_t at = scheduled.size();
      scheduled.push_back(step);
      collectives.push_back(at);
      Step record{Step::EventRecord};
      record.event = events++;
      record.stream = 1;
      scheduled.push_back(record);
      for (unsigned r : step.buffers)
        pending[r] = {at, record.event};
      continue;
    }
    // A step of stream 0 (local collectives included).
    std::optional<std::pair<size_t, int64_t>> latest;
    for (unsigned r : step.buffers) {
      auto it = pending.find(r);
      if (it != pending.end() && it->second.first >= joined &&
          (!latest || it->second.first > latest->first))
        latest = it->second;
    }
    if (latest) {
      Step wait{Step::EventWait};
      wait.event = latest->second;
      scheduled.push_back(wait);
      for (size_t at : collectives)
        if (at >= joined && at <= latest->first)
          scheduled[at].joinedAt = scheduled.size() - 1;
      joined = latest->first + 1;
    }
    scheduled.push_back(step);
    computedSinceHandOff = true;
  }
  steps = std::move(scheduled);
}

LogicalResult ProgramBuilder::visit(Operation *op) {
  // Memory owners.
  if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
    auto type = cast<MemRefType>(op->getResult(0).getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return op->emitError("the plan needs static identity-layout allocations");
    Root root{BufferKind::Arena, op->getResult(0), type};
    root.symbol = "buf" + std::to_string(roots.size());
    rootIndex[op->getResult(0)] = roots.size();
    roots.push_back(root);
    return success();
  }
  if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
    auto global = symbols.lookup<memref::GlobalOp>(get.getName());
    if (!global || !global.getInitialValue() || !global.getConstant())
      return op->emitError("only constant globals with a value are supported");
    auto it = globalRoots.find(get.getName());
    if (it != globalRoots.end()) {
      rootIndex[get.getResult()] = it->second;
      return success();
    }
    Root root{BufferKind::Constant, get.getResult(), get.getType()};
    root.symbol = "cst" + std::to_string(roots.size());
    auto value = cast<ElementsAttr>(*global.getInitialValue());
    // The plan stores constants as tensors of the buffer's shape.
    auto type = RankedTensorType::get(get.getType().getShape(),
                                      get.getType().getElementType());
    if (auto dense = dyn_cast<DenseElementsAttr>(value))
      root.constant = dense.reshape(type);
    else
      root.constant = value;
    globalRoots[get.getName()] = roots.size();
    rootIndex[get.getResult()] = roots.size();
    roots.push_back(root);
    return success();
  }
  if (isa<ViewLikeOpInterface, memref::DeallocOp>(op))
    return success();
  if (isa<func::CallOp>(op))
    return op->emitError("the plan builder needs inlined calls");
  // Pure scalar ops are cloned into the kernels that use them.
  if (isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
      llvm::none_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>) &&
      llvm::none_of(op->getResultTypes(), llvm::IsaPred<MemRefType>))
    return success();

  // Matrix products with a BLAS layout, on a zero-filled output.
  if (auto contract = dyn_cast<linalg::ContractOp>(op); contract && useBlas) {
    if (auto params = gemmParams(contract)) {
      Value out = contract.getOutputs()[0];
      unsigned c = rootOf(out);
      auto zeroed = pendingZero.find(c);
      if (traceRoot(out) == out && zeroed != pendingZero.end()) {
        // BLAS overwrites C (beta = 0): zeroing C first is not needed.
        if (!zeroed->second.read) {
          Step &dead = steps[zeroed->second.step];
          dead.dead = true;
          if (dead.kernel)
            kernels.release(dead.kernel);
        }
        Step step{Step::Library};
        step.name = ::of::plan::kGemmFunction;
        for (Value v : contract->getOperands())
          step.buffers.push_back(rootOf(v));
        read(step.buffers[0]);
        read(step.buffers[1]);
        write(step.buffers[2]);
        step.params = *params;
        steps.push_back(step);
        return success();
      }
    }
  }

  if (auto call = dyn_cast<mlir::of::LibraryCallOp>(op))
    return visitLibraryCall(call);

  // Local collectives of partitioned programs.
  if (isa<mlir::of::AllReduceOp, mlir::of::AllGatherOp,
          mlir::of::ReduceScatterOp, mlir::of::AllToAllOp,
          mlir::of::ShardSliceOp, mlir::of::ToPartialOp>(op))
    return visitCollective(op);
  if (isa<mlir::of::SendOp, mlir::of::RecvOp>(op))
    return visitTransfer(op);

  // Whole contiguous copies are memcpys.
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto srcType = cast<MemRefType>(copy.getSource().getType());
    auto dstType = cast<MemRefType>(copy.getTarget().getType());
    int64_t srcOffset, dstOffset;
    if (isContiguous(srcType, srcOffset) && isContiguous(dstType, dstOffset)) {
      int64_t elementSize = getElementByteSize(srcType.getElementType());
      Step step{Step::Copy};
      step.buffers = {rootOf(copy.getSource()), rootOf(copy.getTarget())};
      step.srcOffset = srcOffset * elementSize;
      step.dstOffset = dstOffset * elementSize;
      step.bytes = byteSize(srcType);
      bool copiesZeros = pendingZero.count(step.buffers[0]) &&
                         step.srcOffset == 0 && step.dstOffset == 0 &&
                         step.bytes == byteSize(roots[step.buffers[1]].type);
      read(step.buffers[0]);
      write(step.buffers[1]);
      if (copiesZeros)
        pendingZero[step.buffers[1]] = {steps.size()};
      steps.push_back(step);
      return success();
    }
  }

  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    if (foldRoundingIntoGemm(generic))
      return success();

  Step step{Step::Launch};
  if (failed(outline(op, step)))
    return failure();

  // Indices that a gather reads are checked before the kernel runs.
  if (auto range = op->getAttrOfType<DenseI64ArrayAttr>(
          mlir::of::OFDialect::IndexRangeAttrHelper::getNameStr())) {
    Value indices = op->getOperand(range[0]);
    Step check{Step::Library};
    check.name = ::of::plan::kIndexRangeFunction;
    check.buffers.push_back(rootOf(indices));
    check.params = {range[1], range[2]};
    read(check.buffers[0]);
    steps.push_back(check);
  }

  access(op, step);
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value out = fill.getOutputs()[0];
    if (traceRoot(out) == out &&
        (matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
         matchPattern(fill.getInputs()[0], m_Zero())))
      pendingZero[rootOf(out)] = {steps.size()};
  }
  steps.push_back(step);
  return success();
}

void ProgramBuilder::access(Operation *op, const Step &step) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(op);
  if (!dps) {
    for (unsigned r : step.buffers) {
      read(r);
      write(r);
    }
    return;
  }
  for (unsigned r : step.buffers)
    read(r);
  for (Value init : dps.getDpsInits())
    if (isa<MemRefType>(init.getType()))
      write(rootOf(init));
}

/// The rounding of a 16-bit product from its f32 accumulator (the kernel
/// right after its gemm step, `y = truncf(c)` over the whole buffer) is
/// left to the library (cuBLAS on a GPU, oneDNN on the CPU): the gemm
/// writes y in the 16-bit type, rounded once from its f32 compute, which
/// is the same result. Only when nothing else uses the accumulator.
bool ProgramBuilder::foldRoundingIntoGemm(linalg::GenericOp op) {
  if (steps.empty())
    return false;
  Step &gemm = steps.back();
  if (gemm.kind != Step::Library || gemm.name != ::of::plan::kGemmFunction ||
      gemm.dead || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1)
    return false;
  Value in = op.getDpsInputOperand(0)->get();
  Value out = op.getDpsInitOperand(0)->get();
  auto inType = dyn_cast<MemRefType>(in.getType());
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!inType || !outType || traceRoot(in) != in || traceRoot(out) != out ||
      rootOf(in) != gemm.buffers[2] || !inType.getElementType().isF32() ||
      inType.getShape() != outType.getShape())
    return false;
  Type low = roots[gemm.buffers[0]].type.getElementType();
  if (!(low.isBF16() || low.isF16()) || outType.getElementType() != low ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = op.getRegion().front();
  auto trunc = dyn_cast<arith::TruncFOp>(&body.front());
  if (!trunc || body.getOperations().size() != 2 ||
      trunc.getIn() != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != trunc.getResult())
    return false;
  // The accumulator's other users only fill it, write it (the gemm) or
  // free it.
  for (Operation *user : in.getUsers()) {
    if (user == op || isa<memref::DeallocOp>(user))
      continue;
    auto writer = dyn_cast<DestinationStyleOpInterface>(user);
    if (!writer || !isa<linalg::ContractOp, linalg::FillOp>(user) ||
        writer.getNumDpsInits() != 1 || writer.getDpsInits()[0] != in ||
        llvm::is_contained(writer.getDpsInputs(), in))
      return false;
  }
  gemm.buffers[2] = rootOf(out);
  write(gemm.buffers[2]);
  return true;
}

/// BLAS parameters of a contraction, when it is C[b] = A[b] x B[b] over
/// contiguous operands with at most one batch dimension.
std::optional<SmallVector<int64_t>>
ProgramBuilder::gemmParams(linalg::ContractOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  // f32 and f64 everywhere; on a GPU also bf16 and f16 operands (cuBLAS's
  // tensor-core products), on the CPU bf16 ones (oneDNN's matmul), into C
  // of their type or f32.
  SmallVector<Type> types;
  for (Value v : op->getOperands())
    if (auto type = dyn_cast<MemRefType>(v.getType()))
      types.push_back(type.getElementType());
  if (types.size() != 3 || types[0] != types[1])
    return std::nullopt;
  bool half = (device == StringRef(::of::plan::kDeviceCuda) &&
               (types[0].isBF16() || types[0].isF16())) ||
              (device == StringRef(::of::plan::kDeviceCpu) && useDnn &&
               types[0].isBF16());
  if (!(types[0].isF32() || types[0].isF64() || half) ||
      !(types[2] == types[0] || (half && types[2].isF32())))
    return std::nullopt;
  SmallVector<SmallVector<int64_t>> strides(3);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto type = cast<MemRefType>(v.getType());
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides[i], offset)) || offset != 0 ||
        llvm::any_of(strides[i], ShapedType::isDynamic))
      return std::nullopt;
    for (AffineExpr e : maps[i].getResults())
      if (!isa<AffineDimExpr>(e))
        return std::nullopt;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto strideOf = [&](unsigned operand, unsigned dim) -> int64_t {
    for (auto [pos, e] : llvm::enumerate(maps[operand].getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == dim)
        return strides[operand][pos];
    return 0;
  };
  auto uses = [&](unsigned operand, unsigned dim) {
    return maps[operand].isFunctionOfDim(dim);
  };
  // Classify the loops: k is read by A and B, not C; m-like dims by A and
  // C; n-like by B and C; batch dims by C and both or neither operand. Of
  // several m-like (n-like) dims, the one with C's smallest stride is m
  // (n) and the others are batch dims that B (A) broadcasts over, stride
  // 0. At most two batch dims: BLAS's batch loop and an outer loop.
  SmallVector<unsigned> ms, ns, ks, batches;
  for (unsigned d = 0; d < maps[0].getNumDims(); ++d) {
    bool a = uses(0, d), bb = uses(1, d), c = uses(2, d);
    if (a && bb && !c)
      ks.push_back(d);
    else if (a && !bb && c)
      ms.push_back(d);
    else if (!a && bb && c)
      ns.push_back(d);
    else if (c)
      batches.push_back(d);
    else
      return std::nullopt;
  }
  if (ks.size() != 1 || ms.empty() || ns.empty())
    return std::nullopt;
  auto pickInner = [&](SmallVector<unsigned> &dims) {
    unsigned inner = *llvm::min_element(dims, [&](unsigned x, unsigned y) {
      return strideOf(2, x) < strideOf(2, y);
    });
    for (unsigned d : dims)
      if (d != inner)
        batches.push_back(d);
    return static_cast<int64_t>(inner);
  };
  int64_t kDim = ks.front(), mDim = pickInner(ms), nDim = pickInner(ns);
  if (batches.size() > 2)
    return std::nullopt;
  int64_t bDim = batches.size() > 0 ? int64_t(batches[0]) : -1;
  int64_t outerDim = batches.size() > 1 ? int64_t(batches[1]) : -1;
  if (mDim < 0 || nDim < 0 || kDim < 0)
    return std::nullopt;
  int64_t m = ranges[mDim], n = ranges[nDim], k = ranges[kDim];
  int64_t batch = bDim >= 0 ? ranges[bDim] : 1;
  auto bs = [&](unsigned operand) {
    return bDim >= 0 ? strideOf(operand, bDim) : 0;
  };
  int64_t am = strideOf(0, mDim), ak = strideOf(0, kDim);
  int64_t bk = strideOf(1, kDim), bn = strideOf(1, nDim);
  int64_t cm = strideOf(2, mDim), cn = strideOf(2, nDim);
  // A unit dimension's stride is free; give BLAS the leading dimension it
  // wants.
  if (m == 1)
    am = ak == 1 ? std::max<int64_t>(k, 1) : 1;
  if (k == 1 && ak != 1)
    ak = std::max<int64_t>(m, 1);
  if (k == 1)
    bk = bn == 1 ? std::max<int64_t>(n, 1) : 1;
  if (n == 1 && bn != 1)
    bn = std::max<int64_t>(k, 1);
  if (n == 1)
    cn = 1;
  if (m == 1)
    cm = std::max<int64_t>(n, 1);
  if (cn != 1 || !(ak == 1 || am == 1) || !(bn == 1 || bk == 1))
    return std::nullopt;
  SmallVector<int64_t> params = {batch, m,     n,  k,  bs(0), am,
                                 ak,    bs(1), bk, bn, bs(2), cm};
  if (outerDim >= 0) {
    params.push_back(ranges[outerDim]);
    for (unsigned operand = 0; operand < 3; ++operand)
      params.push_back(strideOf(operand, outerDim));
  }
  return params;
}

/// Whether `load`, moved to `kernel`'s place, reads what it reads where it
/// is: both in one block, and every operation between them writes nothing.
static bool readsTheSameInside(Operation *load, Operation *kernel) {
  Operation *anchor = load->getBlock()->findAncestorOpInBlock(*kernel);
  if (!anchor || !load->isBeforeInBlock(anchor))
    return false;
  for (Operation *o = load->getNextNode(); o != anchor; o = o->getNextNode()) {
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
        getEffectsRecursively(o);
    if (!effects || llvm::any_of(*effects, [](auto &effect) {
          return isa<MemoryEffects::Write, MemoryEffects::Free>(
              effect.getEffect());
        }))
      return false;
  }
  return true;
}

/// Outlines `op` into a kernel function taking the root buffers it reads or
/// writes; view ops, scalar constants and scalar loads it depends on are
/// cloned into it.
LogicalResult ProgramBuilder::outline(Operation *op, Step &step) {
  // Values the kernel needs from outside, and the roots behind them.
  llvm::SetVector<Value> external;
  for (Value v : op->getOperands())
    external.insert(v);
  getUsedValuesDefinedAbove(op->getRegions(), external);
  llvm::SetVector<Value> rootValues;
  llvm::SetVector<Operation *> toClone;
  std::function<LogicalResult(Value)> collect = [&](Value v) -> LogicalResult {
    if (rootIndex.count(v)) {
      rootValues.insert(v);
      return success();
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      return op->emitError("kernel operand is a block argument that is not a "
                           "buffer of the program");
    bool isView = isa<ViewLikeOpInterface>(def);
    bool isScalar =
        isMemoryEffectFree(def) &&
        llvm::none_of(def->getResultTypes(), llvm::IsaPred<MemRefType>);
    // A scalar load before the kernel (a gather's index, left outside when
    // canonicalisation removed a one-iteration loop) moves into it: it reads
    // the same value there when nothing in between writes memory.
    if (isa<memref::LoadOp>(def) && !readsTheSameInside(def, op))
      return op->emitError("kernel operand loaded before a write that may "
                           "change it, which the plan builder cannot move");
    isScalar = isScalar || isa<memref::LoadOp>(def);
    if (!isView && !isScalar)
      return op->emitError("kernel operand defined by '")
             << def->getName() << "', which the plan builder cannot rebuild";
    llvm::SetVector<Value> deps(def->getOperands().begin(),
                                def->getOperands().end());
    getUsedValuesDefinedAbove(def->getRegions(), deps);
    for (Value dep : deps)
      if (failed(collect(dep)))
        return failure();
    toClone.insert(def);
    return success();
  };
  for (Value v : external)
    if (failed(collect(v)))
      return failure();

  SmallVector<Type> argTypes;
  for (Value v : rootValues) {
    argTypes.push_back(v.getType());
    step.buffers.push_back(rootIndex.lookup(v));
  }
  OpBuilder kb = OpBuilder::atBlockEnd(kernels.module().getBody());
  auto kernel = func::FuncOp::create(kb, op->getLoc(), kernels.nextName(),
                                     kb.getFunctionType(argTypes, {}));
  Block *entry = kernel.addEntryBlock();
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(rootValues, entry->getArguments()))
    mapping.map(v, arg);
  kb.setInsertionPointToStart(entry);
  // `toClone` is in dependency order (post-order of the walk above).
  for (Operation *def : toClone)
    kb.clone(*def, mapping);
  Operation *cloned = kb.clone(*op, mapping);
  cloned->removeAttr(mlir::of::OFDialect::IndexRangeAttrHelper::getNameStr());
  func::ReturnOp::create(kb, op->getLoc());
  step.kernel = kernels.intern(kernel);
  step.name = step.kernel.getSymName().str();

  // An elementwise generic may write in place over an input read at the
  // same index, when the input root is used by this op exactly once.
  if (auto generic = dyn_cast<linalg::GenericOp>(op);
      generic && generic.getNumLoops() == generic.getNumParallelLoops() &&
      generic.getNumDpsInits() == 1) {
    OpOperand *init = generic.getDpsInitOperand(0);
    Value outValue = init->get();
    if (traceRoot(outValue) == outValue &&
        generic.getMatchingIndexingMap(init).isIdentity() &&
        roots[rootOf(outValue)].kind == BufferKind::Arena) {
      for (OpOperand *input : generic.getDpsInputOperands()) {
        Value in = input->get();
        if (traceRoot(in) != in || in.getType() != outValue.getType() ||
            !generic.getMatchingIndexingMap(input).isIdentity())
          continue;
        unsigned r = rootOf(in);
        if (roots[r].kind != BufferKind::Arena)
          continue;
        unsigned usesOfRoot = llvm::count_if(external, [&](Value v) {
          return isa<MemRefType>(v.getType()) && rootOf(v) == r;
        });
        if (usesOfRoot == 1)
          step.inPlace.push_back({r, rootOf(outValue)});
      }
    }
  }
  return success();
}

ofrt::DistAttr ProgramBuilder::distribution(TypeAttr global) {
  if (!global)
    return nullptr;
  auto type = cast<RankedTensorType>(global.getValue());
  auto sbp = cast<mlir::of::SbpAttr>(type.getEncoding());
  auto placement =
      symbols.lookup<mlir::of::PlacementOp>(sbp.getPlacement().getValue());
  if (!placement)
    return nullptr;
  SmallVector<int32_t> codes;
  for (const mlir::of::SbpEntry &e : sbp.getEntries())
    codes.push_back(e.code());
  return ofrt::DistAttr::get(func.getContext(), type.getShape(),
                             placement.getGridShape(), placement.getRankList(),
                             codes);
}

/// A library computation (a oneDNN convolution) on whole buffers, which
/// its bufferization guarantees: the step's buffers are its operands'.
LogicalResult ProgramBuilder::visitLibraryCall(mlir::of::LibraryCallOp op) {
  Step step{Step::Library};
  step.name = op.getCallee().str();
  for (Value v : op->getOperands()) {
    if (!isWholeBuffer(v))
      return op.emitError("a library call needs whole contiguous buffers");
    step.buffers.push_back(rootOf(v));
  }
  for (auto [i, buffer] : llvm::enumerate(step.buffers)) {
    if (i < op.getInputs().size())
      read(buffer);
    else
      write(buffer);
  }
  step.params = llvm::to_vector(op.getParams());
  steps.push_back(step);
  return success();
}

LogicalResult ProgramBuilder::visitCollective(Operation *op) {
  Value in = op->getOperand(0), out = op->getOperand(1);
  for (Value v : {in, out})
    if (!isWholeBuffer(v))
      return op->emitError("a collective needs whole contiguous buffers");
  auto placementRef = op->getAttrOfType<FlatSymbolRefAttr>("placement");
  auto placement =
      symbols.lookup<mlir::of::PlacementOp>(placementRef.getValue());
  if (!placement)
    return op->emitError("unknown placement ") << placementRef;
  Step step{Step::Collective};
  step.collective =
      TypeSwitch<Operation *, CollectiveKind>(op)
          .Case([](mlir::of::AllReduceOp) { return CollectiveKind::AllReduce; })
          .Case([](mlir::of::AllGatherOp) { return CollectiveKind::AllGather; })
          .Case([](mlir::of::ReduceScatterOp) {
            return CollectiveKind::ReduceScatter;
          })
          .Case([](mlir::of::AllToAllOp) { return CollectiveKind::AllToAll; })
          .Case([](mlir::of::ShardSliceOp) { return CollectiveKind::Slice; })
          .Case([](mlir::of::ToPartialOp) { return CollectiveKind::ToPartial; })
          .Default([](Operation *) -> CollectiveKind {
            llvm_unreachable("visitCollective takes the local collectives");
          });
  step.buffers = {rootOf(in), rootOf(out)};
  step.mesh = placement.getGridShape();
  step.group = placement.getRankList();
  step.axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  mlir::of::ReduceKind reduce = mlir::of::ReduceKind::Sum;
  if (auto allReduce = dyn_cast<mlir::of::AllReduceOp>(op))
    reduce = allReduce.getReduce();
  else if (auto scatter = dyn_cast<mlir::of::ReduceScatterOp>(op))
    reduce = scatter.getReduce();
  step.reduce =
      reduce == mlir::of::ReduceKind::Max ? ReduceKind::Max : ReduceKind::Sum;
  ArrayRef<int64_t> inShape = cast<MemRefType>(in.getType()).getShape();
  ArrayRef<int64_t> outShape = cast<MemRefType>(out.getType()).getShape();
  step.shape.assign(inShape.begin(), inShape.end());
  if (auto gather = dyn_cast<mlir::of::AllGatherOp>(op)) {
    step.shape.assign(outShape.begin(), outShape.end());
    step.dim = gather.getDim();
  } else if (auto scatter = dyn_cast<mlir::of::ReduceScatterOp>(op)) {
    step.dim = scatter.getDim();
  } else if (auto slice = dyn_cast<mlir::of::ShardSliceOp>(op)) {
    step.dim = slice.getDim();
  } else if (auto a2a = dyn_cast<mlir::of::AllToAllOp>(op)) {
    step.dim = a2a.getGatherDim();
    step.dim2 = a2a.getScatterDim();
    step.shape[step.dim] = outShape[step.dim];
  }
  read(step.buffers[0]);
  write(step.buffers[1]);
  steps.push_back(step);
  return success();
}

/// A send or receive of a whole buffer between this program's rank and
/// `peer` (a pipeline stage's boundary): the runtime's point-to-point step,
/// whose group is the two ranks. --of-partition gives every rank that
/// transfers a program of its own, so the program has one rank.
LogicalResult ProgramBuilder::visitTransfer(Operation *op) {
  Value v = op->getOperand(0);
  if (!isWholeBuffer(v))
    return op->emitError("a transfer needs a whole contiguous buffer");
  auto ranks = func->getAttrOfType<DenseI64ArrayAttr>(
      mlir::of::OFDialect::RanksAttrHelper::getNameStr());
  int64_t peer = op->getAttrOfType<IntegerAttr>("peer").getInt();
  if (!ranks || ranks.size() != 1)
    return op->emitError("a transfer needs a program of one rank "
                         "(of.ranks = [r]); this one has ")
           << (ranks ? ranks.size() : 0);
  if (ranks[0] == peer)
    return op->emitError("rank ") << peer << " would transfer to itself";
  Step step{Step::Collective};
  step.collective =
      isa<mlir::of::SendOp>(op) ? CollectiveKind::Send : CollectiveKind::Recv;
  step.buffers = {rootOf(v), rootOf(v)};
  step.group = {std::min(ranks[0], peer), std::max(ranks[0], peer)};
  step.peer = peer;
  if (isa<mlir::of::SendOp>(op))
    read(step.buffers[0]);
  else
    write(step.buffers[0]);
  steps.push_back(step);
  return success();
}

struct BuildPlanPass : mlir::of::impl::BuildPlanPassBase<BuildPlanPass> {
  using BuildPlanPassBase::BuildPlanPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    if (!::of::plan::isDevice(device)) {
      module.emitError("--of-build-plan: device is cpu or cuda, not '")
          << device << "'";
      return signalPassFailure();
    }
    // A plan runs on one kind of device: a placement of another kind (a
    // pipeline stage on GPUs in a CPU plan) would silently run here.
    for (auto placement : module.getOps<mlir::of::PlacementOp>())
      if (placement.getDevice() != device) {
        placement.emitError("placement @")
            << placement.getSymName() << " is on '" << placement.getDevice()
            << "' devices, but this plan is built for '" << device
            << "' (--of-pipeline=" << device
            << "); a plan runs on one kind of device";
        return signalPassFailure();
      }
    bool cuda = device == StringRef(::of::plan::kDeviceCuda);
    std::string triple = cuda             ? "nvptx64-nvidia-cuda"
                         : target.empty() ? llvm::sys::getDefaultTargetTriple()
                                          : target.getValue();
    auto executable = ExecutableOp::create(
        b, module.getLoc(),
        b.getStringAttr(cuda ? "cuda_kernels" : "cpu_kernels"),
        b.getStringAttr(triple), StringAttr(), ArrayAttr(), ElementsAttr(),
        DictionaryAttr(), DictionaryAttr());
    Block *exeBlock = new Block();
    executable.getBody().push_back(exeBlock);
    OpBuilder eb = OpBuilder::atBlockEnd(exeBlock);
    auto kernels = ModuleOp::create(eb, module.getLoc());

    KernelTable kernelTable(kernels);
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        funcs.push_back(func);
    if (funcs.empty()) {
      module.emitError("no public function to build a plan for");
      return signalPassFailure();
    }
    for (func::FuncOp func : funcs) {
      ProgramBuilder builder(func, kernelTable, symbols, inPlace, useBlas,
                             useDnn, commStream, device);
      if (failed(builder.build(b)))
        return signalPassFailure();
    }
    if (allowTf32)
      for (auto program : module.getOps<ProgramOp>())
        program.setAllowTf32(true);
    // What remains of the bufferized program is now in the plan.
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<func::FuncOp, memref::GlobalOp, mlir::of::PlacementOp>(op))
        op.erase();
  }
};

} // namespace
