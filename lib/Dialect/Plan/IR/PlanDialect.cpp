//===- PlanDialect.cpp - The ofrt (plan) dialect --------------------------===//
//
// Implements the ofrt dialect's ops and verifiers. The verifiers check what
// the runtime would otherwise find out only at load time (buffer references,
// arena bounds, sizes), so a bad plan is caught where it is produced.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/Plan/IR/PlanDialect.h"
#include "OF/ABI/Sbp.h"
#include "OF/ABI/StreamOrder.h"
#include "OF/Dialect/Utils/SbpSyntax.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ofrt;

#include "OF/Dialect/Plan/IR/PlanDialect.cpp.inc"
#include "OF/Dialect/Plan/IR/PlanEnums.cpp.inc"

static ParseResult parseExtents(AsmParser &parser,
                                SmallVector<int64_t> &extents);
static void printExtents(AsmPrinter &printer, ArrayRef<int64_t> extents);
static ParseResult parseSbpCodes(AsmParser &parser,
                                 SmallVector<int32_t> &codes);
static void printSbpCodes(AsmPrinter &printer, ArrayRef<int32_t> codes);

#define GET_ATTRDEF_CLASSES
#include "OF/Dialect/Plan/IR/PlanAttrs.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "OF/Dialect/Plan/IR/PlanOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "OF/Dialect/Plan/IR/PlanAttrs.cpp.inc"
      >();
}

static constexpr llvm::StringLiteral kOriginMarker = "ofrt.origin";

Location mlir::ofrt::markOrigin(Location source) {
  return NameLoc::get(StringAttr::get(source->getContext(), kOriginMarker),
                      source);
}

LocationAttr mlir::ofrt::getOrigin(Location loc) {
  auto marked = dyn_cast<NameLoc>(loc);
  if (!marked || marked.getName() != kOriginMarker)
    return {};
  return marked.getChildLoc();
}

std::string mlir::ofrt::describeOrigin(LocationAttr origin) {
  if (!origin)
    return "";
  constexpr size_t kMaxPositions = 4;
  SmallVector<std::string> positions;
  bool more = false;
  auto add = [&](std::string text) {
    if (llvm::is_contained(positions, text))
      return;
    if (positions.size() == kMaxPositions)
      more = true;
    else
      positions.push_back(std::move(text));
  };
  origin.walk([&](Location loc) {
    if (auto file = dyn_cast<FileLineColLoc>(loc))
      add((file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
           Twine(file.getColumn()))
              .str());
    else if (auto name = dyn_cast<NameLoc>(loc);
             name && isa<UnknownLoc>(name.getChildLoc()))
      add(name.getName().str());
    return WalkResult::advance();
  });
  std::string text = llvm::join(positions, ", ");
  if (more)
    text += ", ...";
  return text;
}

int64_t mlir::ofrt::getElementByteSize(Type type) {
  if (type.isInteger(1))
    return 1;
  if (type.isF32() || type.isF64() || type.isF16() || type.isBF16() ||
      type.isInteger(8) || type.isInteger(32) || type.isInteger(64))
    return type.getIntOrFloatBitWidth() / 8;
  return 0;
}

//===----------------------------------------------------------------------===//
// #ofrt.dist
//===----------------------------------------------------------------------===//

/// `[e0, e1, ...]` (possibly empty).
static ParseResult parseExtents(AsmParser &parser,
                                SmallVector<int64_t> &extents) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                        [&]() -> ParseResult {
                                          int64_t value;
                                          if (parser.parseInteger(value))
                                            return failure();
                                          extents.push_back(value);
                                          return success();
                                        });
}
static void printExtents(AsmPrinter &printer, ArrayRef<int64_t> extents) {
  printer << '[';
  llvm::interleaveComma(extents, printer);
  printer << ']';
}

/// `[S(0), B, P, P(max)]`: the entries as #of.sbp writes them, read into
/// their codes (OF/ABI/Sbp.h).
static ParseResult parseSbpCodes(AsmParser &parser,
                                 SmallVector<int32_t> &codes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int32_t code;
        if (of_syntax::parseSbpCode(parser, code))
          return failure();
        codes.push_back(code);
        return success();
      });
}
static void printSbpCodes(AsmPrinter &printer, ArrayRef<int32_t> codes) {
  printer << '[';
  llvm::interleaveComma(codes, printer, [&](int32_t code) {
    of_syntax::printSbpCode(printer, code);
  });
  printer << ']';
}

LogicalResult DistAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> globalShape,
                               ArrayRef<int64_t> mesh,
                               ArrayRef<int64_t> meshRanks,
                               ArrayRef<int32_t> sbp) {
  if (llvm::any_of(globalShape, [](int64_t d) { return d < 0; }))
    return emitError() << "dist global_shape has a negative extent";
  if (mesh.empty())
    return emitError() << "dist mesh must not be empty";
  int64_t positions = 1;
  for (int64_t extent : mesh) {
    if (extent < 1)
      return emitError() << "dist mesh extents must be at least 1";
    positions *= extent;
  }
  if (positions != static_cast<int64_t>(meshRanks.size()))
    return emitError() << "dist mesh has " << positions
                       << " positions, but mesh_ranks lists "
                       << meshRanks.size() << " ranks";
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t rank : meshRanks)
    if (rank < 0 || !seen.insert(rank).second)
      return emitError() << "dist mesh_ranks must be distinct, non-negative "
                            "ranks";
  if (sbp.size() != mesh.size())
    return emitError() << "dist has " << sbp.size() << " sbp entries for a "
                       << mesh.size() << "-axis mesh (one per axis)";
  bool sum = false, max = false;
  for (int32_t code : sbp) {
    if (!::of::sbp::isValid(code, globalShape.size()))
      return emitError() << "dist sbp entry " << ::of::sbp::text(code)
                         << " is invalid for a " << globalShape.size()
                         << "-d global tensor";
    sum |= code == ::of::sbp::kPartialSum;
    max |= code == ::of::sbp::kPartialMax;
  }
  if (sum && max)
    return emitError() << "dist mixes P (sum) and P(max)";
  return success();
}

/// Checks that a `dist` (whose form its attribute verifier checked) fits
/// `op`'s local tensor `local`. That it gives each rank exactly `local`'s
/// shape is checked by the plan loader, which of-translate
/// --of-plan-to-binary runs on what it writes.
static LogicalResult verifyDist(Operation *op, DistAttr dist,
                                RankedTensorType local) {
  // A program of ranks outside mesh_ranks (another pipeline stage's
  // value) holds an empty tensor<0xT> in its place.
  bool absent = local.getRank() == 1 && local.getDimSize(0) == 0;
  if (static_cast<int64_t>(dist.getGlobalShape().size()) != local.getRank() &&
      !absent)
    return op->emitOpError("dist global_shape has rank ")
           << dist.getGlobalShape().size() << ", but the local tensor " << local
           << " has rank " << local.getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// ExecutableOp
//===----------------------------------------------------------------------===//

ModuleOp ExecutableOp::getKernelModule() {
  if (getBody().empty())
    return nullptr;
  for (Operation &op : getBody().front())
    if (auto module = dyn_cast<ModuleOp>(op))
      return module;
  return nullptr;
}

DictionaryAttr ExecutableOp::getKernelSignature(StringRef name) {
  DictionaryAttr signatures = getSignaturesAttr();
  return signatures ? signatures.getAs<DictionaryAttr>(name) : nullptr;
}

/// Whether `indices` increase and index a list of `size`.
static bool increasingIndices(ArrayRef<int64_t> indices, size_t size) {
  for (auto [i, index] : llvm::enumerate(indices))
    if (index < 0 || index >= static_cast<int64_t>(size) ||
        (i > 0 && index <= indices[i - 1]))
      return false;
  return true;
}

namespace {
/// A well-formed kernel signature, unpacked.
struct KernelSignature {
  ArrayAttr params;
  int64_t range, work;
  ArrayRef<int64_t> reads, writes;
};
} // namespace

static std::optional<KernelSignature>
unpackSignature(DictionaryAttr signature) {
  if (!signature || signature.size() != 5)
    return std::nullopt;
  auto params = signature.getAs<ArrayAttr>("params");
  auto range = signature.getAs<IntegerAttr>("range");
  auto work = signature.getAs<IntegerAttr>("work");
  auto reads = signature.getAs<DenseI64ArrayAttr>("reads");
  auto writes = signature.getAs<DenseI64ArrayAttr>("writes");
  if (!params || !range || !work || !reads || !writes || range.getInt() < 0 ||
      work.getInt() < 0 || !increasingIndices(reads, params.size()) ||
      !increasingIndices(writes, params.size()))
    return std::nullopt;
  for (Attribute param : params) {
    auto type = dyn_cast<TypeAttr>(param);
    auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
    if (!tensor || !tensor.hasStaticShape())
      return std::nullopt;
  }
  return KernelSignature{params, range.getInt(), work.getInt(),
                         reads.asArrayRef(), writes.asArrayRef()};
}

LogicalResult ExecutableOp::verify() {
  if (DictionaryAttr signatures = getSignaturesAttr())
    for (NamedAttribute kernel : signatures)
      if (!unpackSignature(dyn_cast<DictionaryAttr>(kernel.getValue())))
        return emitOpError("signature of kernel '")
               << kernel.getName().getValue()
               << "' needs params (static tensor types), range and work "
                  "(non-negative integers), reads and writes (increasing "
                  "parameter indices) and nothing else, got "
               << kernel.getValue();
  bool hasSource = !getBody().empty() && !getBody().front().empty();
  if (hasSource == static_cast<bool>(getObject()))
    return emitOpError("needs exactly one of a kernel module (source form) "
                       "or an `object` (binary form)");
  if (hasSource && !getKernelModule())
    return emitOpError("body must hold a builtin.module of kernels");
  if (getObject() && !getKernels())
    return emitOpError("binary form must list its `kernels`");
  if (DictionaryAttr launches = getLaunchesAttr()) {
    for (NamedAttribute kernel : launches) {
      auto list = dyn_cast<ArrayAttr>(kernel.getValue());
      if (!list) // empty: a kernel with nothing to do
        return emitOpError("launches of kernel '")
               << kernel.getName().getValue() << "' must be an array";
      for (Attribute launch : list) {
        auto d = dyn_cast<DictionaryAttr>(launch);
        auto name = d ? d.getAs<StringAttr>("kernel") : nullptr;
        auto function = d ? d.getAs<StringAttr>("function") : nullptr;
        auto grid = d ? d.getAs<DenseI64ArrayAttr>("grid") : nullptr;
        auto block = d ? d.getAs<DenseI64ArrayAttr>("block") : nullptr;
        auto args = d ? d.getAs<DenseI64ArrayAttr>("args") : nullptr;
        if (!name || !function || !grid || !block || !args ||
            grid.size() != 3 || block.size() != 3)
          return emitOpError("a launch of kernel '")
                 << kernel.getName().getValue()
                 << "' needs kernel and function (strings), grid and block "
                    "(3 x i64) and args (i64 array), got "
                 << launch;
        for (int64_t v :
             llvm::concat<const int64_t>(grid.asArrayRef(), block.asArrayRef()))
          if (v < 1)
            return emitOpError("launch dimensions must be positive, got ")
                   << launch;
        for (int64_t a : args.asArrayRef())
          if (a < 0)
            return emitOpError("launch argument indices must be "
                               "non-negative, got ")
                   << launch;
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

/// Returns the buffer that `ref` names in `program`, or emits an error on
/// `user`.
static BufferOp lookupBuffer(ProgramOp program, Operation *user,
                             Attribute ref) {
  auto symbol = dyn_cast<FlatSymbolRefAttr>(ref);
  if (!symbol) {
    user->emitOpError("expects flat buffer references, got ") << ref;
    return nullptr;
  }
  auto buffer = SymbolTable::lookupSymbolIn(program, symbol.getAttr());
  auto result = dyn_cast_or_null<BufferOp>(buffer);
  if (!result)
    user->emitOpError("references unknown buffer ") << symbol;
  return result;
}

/// A launch of a kernel whose executable declares signatures passes what
/// the kernel was compiled for: as many buffers, each of the parameter's
/// element type and element count (a buffer may be a reshaped view), and
/// the kernel's range and work.
static LogicalResult verifyAgainstSignature(LaunchOp launch, ExecutableOp exe) {
  if (!exe.getSignaturesAttr())
    return success();
  auto signature = unpackSignature(exe.getKernelSignature(launch.getKernel()));
  if (!signature)
    return launch.emitOpError("launches kernel '")
           << launch.getKernel() << "', which executable @" << exe.getSymName()
           << " declares no signature for";
  auto [params, range, work, reads, writes] = *signature;
  ArrayRef<Attribute> buffers = launch.getBuffers().getValue();
  if (buffers.size() != params.size())
    return launch.emitOpError("passes ")
           << buffers.size() << " buffers to kernel '" << launch.getKernel()
           << "', which takes " << params.size();
  auto program = launch->getParentOfType<ProgramOp>();
  for (auto [i, ref, param] : llvm::enumerate(buffers, params)) {
    BufferOp buffer = lookupBuffer(program, launch, ref);
    if (!buffer)
      return failure();
    auto want = cast<RankedTensorType>(cast<TypeAttr>(param).getValue());
    auto have = dyn_cast<ShapedType>(buffer.getType());
    if (!have || !have.hasStaticShape() ||
        have.getElementType() != want.getElementType() ||
        have.getNumElements() != want.getNumElements())
      return launch.emitOpError("argument ")
             << i << " of kernel '" << launch.getKernel() << "' is @"
             << buffer.getSymName() << " (" << buffer.getType()
             << "), but the kernel was compiled for " << want;
    if (buffer.getKind() == BufferKind::Constant &&
        llvm::is_contained(writes, static_cast<int64_t>(i)))
      return launch.emitOpError("kernel '")
             << launch.getKernel() << "' writes its argument " << i
             << ", the constant @" << buffer.getSymName();
  }
  if (launch.getRange() != range || launch.getWork() != work)
    return launch.emitOpError("launches kernel '")
           << launch.getKernel() << "' with range " << launch.getRange()
           << " and work " << launch.getWork() << ", but it was compiled for "
           << "range " << range << " and work " << work;
  return success();
}

LogicalResult ProgramOp::verify() {
  const int64_t arenaSize = getArenaSize();
  const int64_t numStreams = getNumStreams();
  const int64_t numEvents = getNumEvents();
  if (arenaSize < 0)
    return emitOpError("arena_size must be non-negative");
  if (numStreams < 1)
    return emitOpError("needs at least one stream");
  if (static_cast<uint64_t>(numStreams) > of::plan::kMaxStreams)
    return emitOpError("has ") << numStreams << " streams; at most "
                               << of::plan::kMaxStreams << " are allowed";
  if (numEvents < 0 || static_cast<uint64_t>(numEvents) > of::plan::kMaxEvents)
    return emitOpError("has ") << numEvents << " events; at most "
                               << of::plan::kMaxEvents << " are allowed";
  auto module = (*this)->getParentOfType<ModuleOp>();
  llvm::SmallDenseSet<int64_t> recorded;
  for (Operation &op : getBody().front()) {
    auto checkStream = [&](int64_t stream) -> LogicalResult {
      if (stream < 0 || stream >= numStreams)
        return op.emitOpError("stream ")
               << stream << " is outside the program's " << getNumStreams()
               << " stream(s)";
      return success();
    };
    auto checkBuffers = [&](ArrayRef<Attribute> refs) -> LogicalResult {
      for (Attribute ref : refs)
        if (!lookupBuffer(*this, &op, ref))
          return failure();
      return success();
    };
    auto checkEvent = [&](int64_t event) -> LogicalResult {
      if (event < 0 || event >= numEvents)
        return op.emitOpError("event ") << event << " is outside the program's "
                                        << getNumEvents() << " event(s)";
      return success();
    };
    LogicalResult result =
        TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](BufferOp buffer) -> LogicalResult {
              if (buffer.getKind() == BufferKind::Arena && buffer.getOffset() &&
                  static_cast<int64_t>(*buffer.getOffset() + buffer.getSize()) >
                      arenaSize)
                return buffer.emitOpError("bytes [")
                       << *buffer.getOffset() << ", "
                       << *buffer.getOffset() + buffer.getSize()
                       << ") exceed the arena of " << getArenaSize()
                       << " bytes";
              return success();
            })
            .Case([&](LaunchOp launch) -> LogicalResult {
              if (failed(checkStream(launch.getStream())) ||
                  failed(checkBuffers(launch.getBuffers().getValue())))
                return failure();
              auto exe = module ? module.lookupSymbol<ExecutableOp>(
                                      launch.getExecutableAttr())
                                : nullptr;
              if (!exe)
                return launch.emitOpError("references unknown executable ")
                       << launch.getExecutableAttr();
              return verifyAgainstSignature(launch, exe);
            })
            .Case([&](LibraryCallOp call) -> LogicalResult {
              if (failed(checkStream(call.getStream())))
                return failure();
              return checkBuffers(call.getBuffers().getValue());
            })
            .Case([&](CopyOp copy) -> LogicalResult {
              if (failed(checkStream(copy.getStream())))
                return failure();
              BufferOp src = lookupBuffer(*this, copy, copy.getSourceAttr());
              BufferOp dst = lookupBuffer(*this, copy, copy.getTargetAttr());
              if (!src || !dst)
                return failure();
              int64_t bytes = copy.getBytes();
              int64_t srcOffset = copy.getSourceOffset();
              int64_t dstOffset = copy.getTargetOffset();
              if (bytes < 0 || srcOffset < 0 || dstOffset < 0 ||
                  srcOffset + bytes > static_cast<int64_t>(src.getSize()) ||
                  dstOffset + bytes > static_cast<int64_t>(dst.getSize()))
                return copy.emitOpError("copies outside its buffers");
              return success();
            })
            .Case([&](CollectiveOp coll) -> LogicalResult {
              if (failed(checkStream(coll.getStream())))
                return failure();
              if (!lookupBuffer(*this, coll, coll.getSourceAttr()) ||
                  !lookupBuffer(*this, coll, coll.getTargetAttr()))
                return failure();
              return success();
            })
            .Case([&](EventRecordOp record) -> LogicalResult {
              if (failed(checkStream(record.getStream())) ||
                  failed(checkEvent(record.getEvent())))
                return failure();
              recorded.insert(record.getEvent());
              return success();
            })
            .Case([&](EventWaitOp wait) -> LogicalResult {
              if (failed(checkStream(wait.getStream())) ||
                  failed(checkEvent(wait.getEvent())))
                return failure();
              if (!recorded.contains(wait.getEvent()))
                return wait.emitOpError("waits on event ")
                       << wait.getEvent()
                       << ", which no earlier step records (it would hang)";
              return success();
            })
            .Case([&](OutputOp output) -> LogicalResult {
              if (failed(checkStream(output.getStream())))
                return failure();
              BufferOp buffer =
                  lookupBuffer(*this, output, output.getBufferAttr());
              if (!buffer)
                return failure();
              if (DistAttr dist = output.getDistAttr())
                if (auto type = dyn_cast<RankedTensorType>(buffer.getType()))
                  return verifyDist(output, dist, type);
              return success();
            })
            .Default([&](Operation *other) -> LogicalResult {
              return other->emitOpError("is not a step of an ofrt.program");
            });
    if (failed(result))
      return failure();
  }
  return verifyStreamOrder();
}

LogicalResult ProgramOp::verifyStreamOrder() {
  if (getNumStreams() < 2)
    return success();
  // Every buffer outside the arena is a memory space of its own.
  DenseMap<Operation *, uint64_t> spaces;
  auto useOf = [&](Operation *step, Attribute ref) {
    BufferOp buffer = lookupBuffer(*this, step, ref);
    of::plan::MemoryUse use;
    if (buffer.getKind() == BufferKind::Arena && buffer.getOffset()) {
      use.begin = *buffer.getOffset();
    } else {
      use.space = spaces.try_emplace(buffer, spaces.size() + 1).first->second;
    }
    use.end = use.begin + buffer.getSize();
    return use;
  };
  of::plan::StreamOrder order(getNumStreams());
  SmallVector<std::pair<Operation *, int64_t>> steps; // with their stream
  for (Operation &op : getBody().front()) {
    if (isa<BufferOp>(op))
      continue;
    steps.push_back({&op, 0});
    std::vector<of::plan::MemoryUse> uses;
    int64_t &stream = steps.back().second;
    auto addAll = [&](ArrayRef<Attribute> refs) {
      for (Attribute ref : refs)
        uses.push_back(useOf(&op, ref));
    };
    if (auto record = dyn_cast<EventRecordOp>(op)) {
      stream = record.getStream();
      order.addRecord(stream, record.getEvent());
      continue;
    }
    if (auto wait = dyn_cast<EventWaitOp>(op)) {
      stream = wait.getStream();
      order.addWait(stream, wait.getEvent());
      continue;
    }
    if (auto launch = dyn_cast<LaunchOp>(op)) {
      stream = launch.getStream();
      addAll(launch.getBuffers().getValue());
    } else if (auto call = dyn_cast<LibraryCallOp>(op)) {
      stream = call.getStream();
      addAll(call.getBuffers().getValue());
    } else if (auto copy = dyn_cast<CopyOp>(op)) {
      stream = copy.getStream();
      addAll({copy.getSourceAttr(), copy.getTargetAttr()});
    } else if (auto coll = dyn_cast<CollectiveOp>(op)) {
      stream = coll.getStream();
      addAll({coll.getSourceAttr(), coll.getTargetAttr()});
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      stream = output.getStream();
      addAll({output.getBufferAttr()});
    }
    llvm::erase_if(uses, [](const of::plan::MemoryUse &use) {
      return use.begin == use.end;
    });
    int64_t other = order.addStep(stream, std::move(uses));
    if (other >= 0)
      return op.emitOpError("on stream ")
             << stream << " uses memory that step " << other << " ("
             << steps[other].first->getName() << " on stream "
             << steps[other].second
             << ") also uses, and no event orders the two: they may run at "
                "the same time";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

LogicalResult BufferOp::verify() {
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("type must be a statically shaped tensor, got ")
           << getType();
  int64_t elementSize = getElementByteSize(type.getElementType());
  if (elementSize == 0)
    return emitOpError("element type ")
           << type.getElementType() << " has no runtime representation";
  if (static_cast<int64_t>(getSize()) != type.getNumElements() * elementSize)
    return emitOpError("size ")
           << getSize() << " does not match " << type << " ("
           << type.getNumElements() * elementSize << " bytes)";
  switch (getKind()) {
  case BufferKind::Arena:
    if (!getOffset() || static_cast<int64_t>(*getOffset()) < 0)
      return emitOpError("an arena buffer needs a non-negative offset");
    if (getBinding() || getValue())
      return emitOpError("an arena buffer has no binding or value");
    break;
  case BufferKind::Input:
    if (!getBinding() || getBinding()->empty())
      return emitOpError("an input buffer needs a binding name");
    if (getOffset() || getValue())
      return emitOpError("an input buffer has no offset or value");
    break;
  case BufferKind::Constant:
    if (!getValue())
      return emitOpError("a constant buffer needs a value");
    if (getOffset() || getBinding())
      return emitOpError("a constant buffer has no offset or binding");
    if (cast<ShapedType>(getValue()->getType()).getNumElements() !=
            type.getNumElements() ||
        cast<ShapedType>(getValue()->getType()).getElementType() !=
            type.getElementType())
      return emitOpError("value type ")
             << getValue()->getType() << " does not match " << type;
    break;
  }
  if (DistAttr dist = getDistAttr()) {
    if (getKind() != BufferKind::Input)
      return emitOpError("only an input buffer has a dist");
    return verifyDist(*this, dist, type);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CollectiveOp
//===----------------------------------------------------------------------===//

LogicalResult CollectiveOp::verify() {
  ArrayRef<int64_t> group = getGroup();
  if (group.empty())
    return emitOpError("group must not be empty");
  llvm::SmallDenseSet<int64_t> members;
  for (int64_t rank : group)
    if (rank < 0 || !members.insert(rank).second)
      return emitOpError("group must list distinct, non-negative ranks");
  CollectiveKind kind = getKind();
  if (kind == CollectiveKind::Send || kind == CollectiveKind::Recv) {
    if (group.size() < 2)
      return emitOpError(stringifyCollectiveKind(kind))
             << " needs a group of two ranks";
    int64_t peer = static_cast<int64_t>(getPeer());
    if (!members.contains(peer))
      return emitOpError("peer ") << peer << " is not in the group";
    return success();
  }
  SmallVector<int64_t> mesh =
      getMesh() ? SmallVector<int64_t>(*getMesh())
                : SmallVector<int64_t>{static_cast<int64_t>(group.size())};
  int64_t positions = 1;
  for (int64_t extent : mesh) {
    if (extent < 1)
      return emitOpError("mesh extents must be at least 1");
    positions *= extent;
  }
  if (mesh.empty() || positions != static_cast<int64_t>(group.size()))
    return emitOpError("mesh has ")
           << positions << " positions, but the group has " << group.size()
           << " ranks";
  // (The I64Attr getters are unsigned; the values are signed.)
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t dim = static_cast<int64_t>(getDim());
  int64_t dim2 = static_cast<int64_t>(getDim2());
  if (axis < 0 || axis >= static_cast<int64_t>(mesh.size()))
    return emitOpError("axis ")
           << axis << " is outside the " << mesh.size() << "-axis mesh";
  if (kind == CollectiveKind::AllToAll && !getShape())
    return emitOpError("all_to_all needs a shape");
  if (std::optional<ArrayRef<int64_t>> shape = getShape()) {
    if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
      return emitOpError("shape has a negative extent");
    int64_t rank = shape->size();
    bool splits = kind == CollectiveKind::AllGather ||
                  kind == CollectiveKind::ReduceScatter ||
                  kind == CollectiveKind::AllToAll ||
                  kind == CollectiveKind::Slice;
    if (splits && rank > 0 && (dim < 0 || dim >= rank))
      return emitOpError("dim ") << dim << " is outside the shape";
    if (kind == CollectiveKind::AllToAll && rank > 0) {
      if (dim2 < 0 || dim2 >= rank)
        return emitOpError("dim2 ") << dim2 << " is outside the shape";
      if (dim2 == dim && mesh[axis] > 1)
        return emitOpError("all_to_all needs dim != dim2");
    }
  }
  return success();
}

#define GET_OP_CLASSES
#include "OF/Dialect/Plan/IR/PlanOps.cpp.inc"
