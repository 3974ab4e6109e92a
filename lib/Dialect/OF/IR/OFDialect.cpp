//===- OFDialect.cpp - The of dialect and the #of.sbp attribute -----------===//
//
// Dialect registration, the #of.sbp attribute (parser, printer, verifiers),
// and the symbol checks that tie SBP encodings to of.placement ops: every op
// of the dialect, and every func.func signature, verifies that the placements
// its tensor types name exist and have one axis per SBP entry.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/ABI/Sbp.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/Utils/SbpSyntax.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::of;

#include "OF/Dialect/OF/IR/OFDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "OF/Dialect/OF/IR/OFAttrs.cpp.inc"

//===----------------------------------------------------------------------===//
// SbpEntry
//===----------------------------------------------------------------------===//

int32_t SbpEntry::code() const {
  switch (kind) {
  case SbpKind::Split:
    return static_cast<int32_t>(dim);
  case SbpKind::Broadcast:
    return ::of::sbp::kBroadcast;
  case SbpKind::PartialSum:
    return ::of::sbp::kPartialSum;
  case SbpKind::PartialMax:
    return ::of::sbp::kPartialMax;
  }
  llvm_unreachable("unknown SbpKind");
}

SbpEntry SbpEntry::fromCode(int32_t code) {
  assert(code >= ::of::sbp::kPartialMax && "not an SBP entry code");
  if (::of::sbp::isSplit(code))
    return split(code);
  return code == ::of::sbp::kBroadcast    ? broadcast()
         : code == ::of::sbp::kPartialSum ? partialSum()
                                          : partialMax();
}

llvm::raw_ostream &mlir::of::operator<<(llvm::raw_ostream &os,
                                        const SbpEntry &entry) {
  return os << entry.str();
}

std::string SbpEntry::str() const { return ::of::sbp::text(code()); }

int64_t mlir::of::chunkSize(int64_t extent, int64_t parts, int64_t index) {
  return ::of::sbp::chunkSize(extent, parts, index);
}
int64_t mlir::of::chunkOffset(int64_t extent, int64_t parts, int64_t index) {
  return ::of::sbp::chunkOffset(extent, parts, index);
}
bool mlir::of::isChunkSize(int64_t size, int64_t extent, int64_t parts) {
  return ::of::sbp::isChunkSize(size, extent, parts);
}

//===----------------------------------------------------------------------===//
// #of.sbp
//===----------------------------------------------------------------------===//

/// Parses one entry: `S(<dim>)`, `B`, `P`, `P(sum)` or `P(max)`.
static ParseResult parseSbpEntry(AsmParser &parser, SbpEntry &entry) {
  int32_t code;
  if (of_syntax::parseSbpCode(parser, code))
    return failure();
  entry = SbpEntry::fromCode(code);
  return success();
}

Attribute SbpAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  SMLoc symbolLoc = parser.getCurrentLocation();
  StringAttr placement;
  if (failed(parser.parseOptionalSymbolName(placement))) {
    parser.emitError(
        symbolLoc,
        "expected the placement symbol (e.g. @mesh) first in #of.sbp");
    return {};
  }
  SmallVector<SbpEntry> entries;
  if (parser.parseComma() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parseSbpEntry(parser, entries.emplace_back()); }) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(symbolLoc); },
                    parser.getContext(), FlatSymbolRefAttr::get(placement),
                    entries);
}

void SbpAttr::print(AsmPrinter &printer) const {
  printer << "<" << getPlacement() << ", [";
  llvm::interleaveComma(getEntries(), printer.getStream());
  printer << "]>";
}

LogicalResult SbpAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              FlatSymbolRefAttr placement,
                              ArrayRef<SbpEntry> entries) {
  if (!placement)
    return emitError() << "#of.sbp needs a placement symbol";
  if (entries.empty())
    return emitError()
           << "#of.sbp needs one entry per placement axis, got none";
  for (const SbpEntry &entry : entries)
    if (entry.isSplit() && entry.dim < 0)
      return emitError() << "S(" << entry.dim
                         << ") splits a negative dimension";
  return success();
}

LogicalResult
SbpAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                        function_ref<InFlightDiagnostic()> emitError) const {
  for (const SbpEntry &entry : getEntries())
    if (entry.isSplit() && entry.dim >= static_cast<int64_t>(shape.size()))
      return emitError() << entry.str() << " is out of range for a rank-"
                         << shape.size() << " tensor";
  return success();
}

//===----------------------------------------------------------------------===//
// Type helpers
//===----------------------------------------------------------------------===//

bool mlir::of::hasSbpOrNoEncoding(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return !tensor || !tensor.getEncoding() || isa<SbpAttr>(tensor.getEncoding());
}

SbpAttr mlir::of::getSbp(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? dyn_cast_or_null<SbpAttr>(tensor.getEncoding()) : SbpAttr();
}

Type mlir::of::stripSbp(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !isa_and_nonnull<SbpAttr>(tensor.getEncoding()))
    return type;
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType());
}

bool mlir::of::areCompatibleIgnoringSbp(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip_equal(lhs, rhs))
    if (stripSbp(l) != stripSbp(r))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Recomputed copies
//===----------------------------------------------------------------------===//

Location mlir::of::recomputedLoc(Location loc, IntegerAttr segment) {
  MLIRContext *ctx = loc->getContext();
  NamedAttribute tag(OFDialect::RecomputeAttrHelper::getNameStr(), segment);
  return FusedLoc::get(ctx, {loc}, DictionaryAttr::get(ctx, {tag}));
}

void mlir::of::markRecomputed(Operation *root) {
  StringRef name = OFDialect::RecomputeAttrHelper::getNameStr();
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->hasTrait<OpTrait::ConstantLike>()) // nothing is computed
      return WalkResult::advance();
    Attribute segment = op->getAttr(name);
    op->getLoc()->walk([&](Location loc) {
      auto fused = dyn_cast<FusedLoc>(loc);
      auto tag = fused ? dyn_cast_or_null<DictionaryAttr>(fused.getMetadata())
                       : DictionaryAttr();
      if (!segment && tag)
        segment = tag.get(name);
      return segment ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!segment)
      return WalkResult::advance();
    op->setAttr(name, segment);
    return WalkResult::skip(); // its body is part of it
  });
}

//===----------------------------------------------------------------------===//
// Placement symbol checks
//===----------------------------------------------------------------------===//

/// Checks that every #of.sbp in `types` names an of.placement visible from
/// `op` with as many axes as the SBP has entries. With `samePlacement`, also
/// that all of them name the same placement (a compute op runs on one
/// placement; only of.boxing moves data between placements).
static LogicalResult verifySbpPlacements(Operation *op, TypeRange types,
                                         SymbolTableCollection &tables,
                                         bool samePlacement) {
  FlatSymbolRefAttr common;
  Type commonType;
  for (Type type : types) {
    SbpAttr sbp = getSbp(type);
    if (!sbp)
      continue;
    auto placement =
        tables.lookupNearestSymbolFrom<PlacementOp>(op, sbp.getPlacement());
    if (!placement)
      return op->emitOpError("#of.sbp refers to ")
             << sbp.getPlacement() << ", which is not an of.placement";
    int64_t axes = placement.getShape().size();
    if (static_cast<int64_t>(sbp.getNumAxes()) != axes)
      return op->emitOpError("#of.sbp on ")
             << sbp.getPlacement() << " has " << sbp.getNumAxes()
             << " entries, but the placement has " << axes
             << (axes == 1 ? " axis" : " axes") << " (one entry per axis)";
    if (samePlacement && common && common != sbp.getPlacement())
      return op->emitOpError("mixes placements ")
             << common << " and " << sbp.getPlacement() << " (" << commonType
             << " and " << type
             << "); move tensors between placements with of.boxing";
    common = sbp.getPlacement();
    commonType = type;
  }
  return success();
}

namespace {
/// SymbolUserOpInterface for the ops of the dialect: their operand and result
/// types refer to placements by symbol.
template <typename ConcreteOp>
struct SbpSymbolUser
    : public SymbolUserOpInterface::ExternalModel<SbpSymbolUser<ConcreteOp>,
                                                  ConcreteOp> {
  LogicalResult verifySymbolUses(Operation *op,
                                 SymbolTableCollection &tables) const {
    SmallVector<Type> types(op->getOperandTypes());
    llvm::append_range(types, op->getResultTypes());
    return verifySbpPlacements(op, types, tables,
                               /*samePlacement=*/!isa<BoxingOp>(op));
  }
};

/// The same check for func.func signatures, so that an argument passed
/// straight to func.return is checked too.
struct FuncSbpSymbolUser
    : public SymbolUserOpInterface::ExternalModel<FuncSbpSymbolUser,
                                                  func::FuncOp> {
  LogicalResult verifySymbolUses(Operation *op,
                                 SymbolTableCollection &tables) const {
    FunctionType type = cast<func::FuncOp>(op).getFunctionType();
    SmallVector<Type> types(type.getInputs());
    llvm::append_range(types, type.getResults());
    return verifySbpPlacements(op, types, tables, /*samePlacement=*/false);
  }
};

template <typename... Ops> void attachSbpSymbolUsers(MLIRContext *context) {
  (Ops::template attachInterface<SbpSymbolUser<Ops>>(*context), ...);
}
} // namespace

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

void OFDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "OF/Dialect/OF/IR/OFAttrs.cpp.inc"
      >();
}

namespace {
/// Every op of the dialect can be inlined: they are region-free tensor
/// computations (the training step calls @f_grad, which --inline folds in).
struct OFInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void OFDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "OF/Dialect/OF/IR/OFOps.cpp.inc"
      >();
  // Every op but the placement itself refers to placements through types.
  attachSbpSymbolUsers<
#define GET_OP_LIST
#include "OF/Dialect/OF/IR/OFOps.cpp.inc"
      >(getContext());
  addInterfaces<OFInlinerInterface>();
}

Operation *OFDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || stripSbp(elements.getType()) != stripSbp(type))
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

/// Checks an `of.*` attribute on a function argument (`isArg`) or result.
static LogicalResult verifyFunctionAttr(Operation *op, unsigned index,
                                        NamedAttribute attr, bool isArg) {
  StringRef kind = isArg ? "argument" : "result";
  if (attr.getName() == OFDialect::NameAttrHelper::getNameStr()) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty())
      return op->emitError("of.name of ")
             << kind << " " << index << " must be a non-empty string";
    return success();
  }
  if (isArg && attr.getName() == OFDialect::ParamAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("of.param of argument ")
             << index << " takes no value";
    return success();
  }
  if (isArg &&
      attr.getName() == OFDialect::WeightDecayAttrHelper::getNameStr()) {
    // This parameter's weight decay in --of-training-step (PyTorch's
    // parameter groups), overriding the pass option.
    auto decay = dyn_cast<FloatAttr>(attr.getValue());
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!decay || decay.getValueAsDouble() < 0 ||
        !std::isfinite(decay.getValueAsDouble()))
      return op->emitError("of.weight_decay of argument ")
             << index << " must be a non-negative finite float";
    if (func &&
        !func.getArgAttr(index, OFDialect::ParamAttrHelper::getNameStr()))
      return op->emitError("of.weight_decay of argument ")
             << index << " needs of.param (only parameters are decayed)";
    return success();
  }
  if (!isArg && attr.getName() == OFDialect::UpdateAttrHelper::getNameStr()) {
    // Set by --of-training-step: this result is the next value of the
    // argument it names (a parameter or optimizer state), which the runtime
    // keeps across steps.
    auto arg = dyn_cast<IntegerAttr>(attr.getValue());
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!arg || !func || arg.getInt() < 0 ||
        arg.getInt() >= static_cast<int64_t>(func.getNumArguments()))
      return op->emitError("of.update of result ")
             << index << " must be the index of an argument";
    Type argType = func.getArgumentTypes()[arg.getInt()];
    Type resultType = func.getResultTypes()[index];
    if (argType != resultType)
      return op->emitError("of.update: result ")
             << index << " of type " << resultType << " cannot update argument "
             << arg.getInt() << " of type " << argType;
    return success();
  }
  if (attr.getName() == OFDialect::GlobalAttrHelper::getNameStr()) {
    // Set by --of-partition: the global type (with its distribution) that
    // this local argument or result is a part of.
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
    if (!tensor || !getSbp(tensor))
      return op->emitError("of.global of ")
             << kind << " " << index
             << " must be a tensor type with an #of.sbp encoding";
    return success();
  }
  return op->emitError("unknown ")
         << kind << " attribute '" << attr.getName().getValue()
         << "'; known: of.name, of.global"
         << (isArg ? ", of.param, of.weight_decay" : ", of.update");
}

LogicalResult OFDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  return verifyFunctionAttr(op, argIndex, attr, /*isArg=*/true);
}

LogicalResult OFDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned resultIndex,
                                                     NamedAttribute attr) {
  return verifyFunctionAttr(op, resultIndex, attr, /*isArg=*/false);
}

void mlir::of::registerOFDialect(DialectRegistry &registry) {
  registry.insert<OFDialect, func::FuncDialect>();
  registry.addExtension(+[](MLIRContext *context, func::FuncDialect *) {
    func::FuncOp::attachInterface<FuncSbpSymbolUser>(*context);
  });
  registerStepBufferization(registry);
}
