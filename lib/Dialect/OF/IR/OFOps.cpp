//===- OFOps.cpp - Operations of the of dialect ---------------------------===//
//
// Verifiers, result-type inference, folders and canonicalization patterns of
// the of ops. Inference computes shapes and element types only: the SBP
// encoding of a result is decided by SBP propagation, never here, so every
// comparison between inferred and declared types ignores #of.sbp.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/ABI/LibraryCalls.h"
#include "OF/ABI/PlanFormat.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::of;
/// The runtime's definition of the library calls' parameters.
namespace dnn = ::of::plan;

#include "OF/Dialect/OF/IR/OFEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Non-splat constants larger than this are not folded: folding would copy
/// large weights into attributes for no run-time gain.
static constexpr int64_t kMaxFoldElements = 1024;

static RankedTensorType asTensor(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

/// A result type with `shape` and `elementType` and no encoding.
static RankedTensorType plainTensor(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// Formats a shape as `[a, b, c]` for diagnostics.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// Maps `axis` (negative counts from the end) into [0, rank), or fails with
/// a diagnostic naming `what`.
static FailureOr<int64_t> normalizeAxis(std::optional<Location> loc,
                                        StringRef what, int64_t axis,
                                        int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    (void)emitOptionalError(loc, what, " ", axis,
                            " is out of range for a rank-", rank, " tensor");
    return failure();
  }
  return normalized;
}

/// Fails unless every value in `values` has the element type of the first.
static LogicalResult verifySameElementType(std::optional<Location> loc,
                                           ArrayRef<Type> types) {
  for (Type type : types.drop_front())
    if (getElementTypeOrSelf(type) != getElementTypeOrSelf(types.front()))
      return emitOptionalError(loc, "operands have different element types ",
                               getElementTypeOrSelf(types.front()), " and ",
                               getElementTypeOrSelf(type),
                               "; convert one with of.cast");
  return success();
}

/// NumPy broadcasting of several shapes.
static FailureOr<SmallVector<int64_t>>
broadcastShapes(std::optional<Location> loc, ArrayRef<RankedTensorType> types) {
  SmallVector<int64_t> shape(types.front().getShape());
  for (RankedTensorType type : types.drop_front()) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(shape, type.getShape(), next)) {
      (void)emitOptionalError(loc, "shapes ", formatShape(shape), " and ",
                              formatShape(type.getShape()),
                              " do not broadcast");
      return failure();
    }
    shape = std::move(next);
  }
  return shape;
}

/// Checks that `values` are all non-negative (`positive` = strictly).
static LogicalResult verifyArray(std::optional<Location> loc, StringRef name,
                                 ArrayRef<int64_t> values, size_t size,
                                 bool positive) {
  if (values.size() != size)
    return emitOptionalError(loc, name, " must have ", size, " entries, got ",
                             values.size());
  for (auto [i, v] : llvm::enumerate(values))
    if (positive ? v <= 0 : v < 0)
      return emitOptionalError(loc, name, "[", i, "] = ", v, " must be ",
                               positive ? "positive" : "non-negative");
  return success();
}

LogicalResult mlir::of::verifyInferredShapes(Operation *op) {
  auto inference = cast<InferTypeOpInterface>(op);
  SmallVector<Type> inferred;
  if (failed(inference.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), inferred)))
    return failure();
  if (areCompatibleIgnoringSbp(inferred, op->getResultTypes()))
    return success();
  InFlightDiagnostic diag = op->emitOpError("result type");
  diag << (op->getNumResults() == 1 ? " " : "s ");
  llvm::interleaveComma(op->getResultTypes(), diag);
  diag << " " << (op->getNumResults() == 1 ? "does" : "do")
       << " not match the inferred ";
  llvm::interleaveComma(inferred, diag);
  return diag;
}

//===----------------------------------------------------------------------===//
// Constant folding helpers
//===----------------------------------------------------------------------===//

static bool isFoldable(Attribute attr) {
  auto elements = dyn_cast_or_null<DenseElementsAttr>(attr);
  return elements &&
         (elements.isSplat() || elements.getNumElements() <= kMaxFoldElements);
}

/// `value` widened to double (exact for every supported float type).
static double toDouble(APFloat value) {
  bool losesInfo;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

/// Evaluates `fn` in double precision and rounds back to `value`'s type.
static APFloat applyInDouble(const APFloat &value,
                             llvm::function_ref<double(double)> fn) {
  bool losesInfo;
  APFloat result(fn(toDouble(value)));
  result.convert(value.getSemantics(), APFloat::rmNearestTiesToEven,
                 &losesInfo);
  return result;
}

using OptAPFloat = std::optional<APFloat>;
using OptAPInt = std::optional<APInt>;

/// Folds a float or integer unary op on a small constant.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldUnary(Attribute operand, Type resultType,
                              FloatFn floatFn, IntFn intFn) {
  if (!isFoldable(operand))
    return {};
  Type type = stripSbp(resultType);
  if (Attribute folded = constFoldUnaryOpConditional<FloatAttr, APFloat, void>(
          {operand}, type, floatFn))
    return folded;
  return constFoldUnaryOpConditional<IntegerAttr, APInt, void>({operand}, type,
                                                               intFn);
}

/// Folds a float-only unary op, evaluating `fn` in double precision.
static OpFoldResult foldFloatUnary(Attribute operand, Type resultType,
                                   llvm::function_ref<double(double)> fn) {
  return foldUnary(
      operand, resultType,
      [&](const APFloat &v) -> OptAPFloat { return applyInDouble(v, fn); },
      [](const APInt &) -> OptAPInt { return std::nullopt; });
}

/// Folds a float or integer binary op on two small constants of equal shape.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBinary(ArrayRef<Attribute> operands, Type resultType,
                               FloatFn floatFn, IntFn intFn) {
  if (!isFoldable(operands[0]) || !isFoldable(operands[1]))
    return {};
  Type type = stripSbp(resultType);
  if (Attribute folded = constFoldBinaryOpConditional<FloatAttr, APFloat, void>(
          operands, type, floatFn))
    return folded;
  return constFoldBinaryOpConditional<IntegerAttr, APInt, void>(operands, type,
                                                                intFn);
}

//===----------------------------------------------------------------------===//
// PlacementOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t> PlacementOp::getGridShape() {
  return llvm::to_vector(llvm::map_range(
      getShape(), [](Attribute a) { return cast<IntegerAttr>(a).getInt(); }));
}

int64_t PlacementOp::getNumDevices() {
  SmallVector<int64_t> shape = getGridShape();
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

SmallVector<int64_t> PlacementOp::getRankList() {
  if (std::optional<ArrayAttr> ranks = getRanks())
    return llvm::to_vector(llvm::map_range(
        *ranks, [](Attribute a) { return cast<IntegerAttr>(a).getInt(); }));
  SmallVector<int64_t> ranks(getNumDevices());
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

LogicalResult PlacementOp::verify() {
  if (!::of::plan::isDevice(getDevice()))
    return emitOpError("device must be \"cpu\" or \"cuda\", got \"")
           << getDevice() << "\"";
  SmallVector<int64_t> shape = getGridShape();
  if (shape.empty())
    return emitOpError("shape must have at least one axis");
  int64_t devices = 1;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (size <= 0)
      return emitOpError("shape[")
             << i << "] = " << size << " must be positive";
    if (size > ::of::plan::kMaxDevices / devices)
      return emitOpError("shape ") << formatShape(shape) << " holds more than "
                                   << ::of::plan::kMaxDevices << " devices";
    devices *= size;
  }
  std::optional<ArrayAttr> ranks = getRanks();
  if (!ranks)
    return success();
  if (static_cast<int64_t>(ranks->size()) != devices)
    return emitOpError("has ")
           << ranks->size() << " ranks, but shape " << formatShape(shape)
           << " holds " << devices << " devices";
  llvm::SmallSet<int64_t, 8> seen;
  for (auto [i, rank] : llvm::enumerate(getRankList())) {
    if (rank < 0)
      return emitOpError("ranks[") << i << "] = " << rank << " is negative";
    if (!seen.insert(rank).second)
      return emitOpError("rank ") << rank << " appears more than once";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  auto value = dyn_cast<ElementsAttr>(attr);
  if (!value)
    return parser.emitError(loc, "expected a tensor value such as dense<...>");
  Type type = value.getType();
  if (succeeded(parser.parseOptionalArrow()) && parser.parseType(type))
    return failure();
  result.addAttribute(getValueAttrName(result.name), value);
  result.addTypes(type);
  return success();
}

void ConstantOp::print(OpAsmPrinter &printer) {
  printer.printOptionalAttrDict((*this)->getAttrs(), {"value"});
  printer << " ";
  printer.printAttribute(getValue());
  if (getType() != getValue().getType())
    printer << " -> " << getType();
}

LogicalResult ConstantOp::verify() {
  auto valueType = dyn_cast<RankedTensorType>(getValue().getType());
  if (!valueType)
    return emitOpError("value must be a ranked tensor, got ")
           << getValue().getType();
  if (valueType.getEncoding())
    return emitOpError("value type must not carry an encoding; write the "
                       "distribution on the result type after `->`");
  if (valueType != stripSbp(getType()))
    return emitOpError("value of type ")
           << valueType << " does not match the result type " << getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Unary elementwise ops keep the operand's shape and element type.
#define OF_SAME_TYPE_INFERENCE(OP)                                             \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    inferred.push_back(stripSbp(adaptor.getInput().getType()));                \
    return success();                                                          \
  }
OF_SAME_TYPE_INFERENCE(NegOp)
OF_SAME_TYPE_INFERENCE(ExpOp)
OF_SAME_TYPE_INFERENCE(LogOp)
OF_SAME_TYPE_INFERENCE(SqrtOp)
OF_SAME_TYPE_INFERENCE(RsqrtOp)
OF_SAME_TYPE_INFERENCE(TanhOp)
OF_SAME_TYPE_INFERENCE(SigmoidOp)
OF_SAME_TYPE_INFERENCE(ReluOp)
OF_SAME_TYPE_INFERENCE(SiluOp)
OF_SAME_TYPE_INFERENCE(ErfOp)
OF_SAME_TYPE_INFERENCE(SinOp)
OF_SAME_TYPE_INFERENCE(CosOp)
OF_SAME_TYPE_INFERENCE(GeluOp)
OF_SAME_TYPE_INFERENCE(DropoutOp)
#undef OF_SAME_TYPE_INFERENCE

/// Softmax-like ops keep the type and check their axis.
static LogicalResult inferSoftmaxLike(std::optional<Location> loc, Value input,
                                      int64_t axis,
                                      SmallVectorImpl<Type> &inferred) {
  RankedTensorType type = asTensor(input);
  if (!type)
    return emitOptionalError(loc, "input must be a ranked tensor");
  if (failed(normalizeAxis(loc, "axis", axis, type.getRank())))
    return failure();
  inferred.push_back(stripSbp(type));
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferSoftmaxLike(loc, adaptor.getInput(), adaptor.getAxis(), inferred);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferSoftmaxLike(loc, adaptor.getInput(), adaptor.getAxis(), inferred);
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      adaptor.getInput(), getType(),
      [](const APFloat &v) -> OptAPFloat { return -v; },
      [](const APInt &v) -> OptAPInt { return -v; });
}

OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      adaptor.getInput(), getType(),
      [](const APFloat &v) -> OptAPFloat {
        return v.isNegative() && !v.isNaN() ? APFloat::getZero(v.getSemantics())
                                            : v;
      },
      [](const APInt &v) -> OptAPInt {
        return v.isNegative() ? APInt::getZero(v.getBitWidth()) : v;
      });
}

OpFoldResult ExpOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::log(x); });
}
OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::sqrt(x); });
}
OpFoldResult RsqrtOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return 1.0 / std::sqrt(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::tanh(x); });
}
OpFoldResult SigmoidOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
OpFoldResult SiluOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return x / (1.0 + std::exp(-x)); });
}

OpFoldResult ErfOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::erf(x); });
}
OpFoldResult SinOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::sin(x); });
}
OpFoldResult CosOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), getType(),
                        [](double x) { return std::cos(x); });
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

/// Binary elementwise ops: same element type, NumPy-broadcast shapes.
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ArrayRef<Value> operands, Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<RankedTensorType> types;
  for (Value operand : operands) {
    RankedTensorType type = asTensor(operand);
    if (!type)
      return emitOptionalError(loc, "operands must be ranked tensors");
    types.push_back(type);
  }
  FailureOr<SmallVector<int64_t>> shape = broadcastShapes(loc, types);
  if (failed(shape))
    return failure();
  inferred.push_back(plainTensor(*shape, elementType));
  return success();
}

#define OF_BINARY_INFERENCE(OP)                                                \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();                      \
    if (failed(verifySameElementType(loc, {lhs.getType(), rhs.getType()})))    \
      return failure();                                                        \
    return inferBroadcast(loc, {lhs, rhs},                                     \
                          getElementTypeOrSelf(lhs.getType()), inferred);      \
  }
OF_BINARY_INFERENCE(AddOp)
OF_BINARY_INFERENCE(SubOp)
OF_BINARY_INFERENCE(MulOp)
OF_BINARY_INFERENCE(DivOp)
OF_BINARY_INFERENCE(PowOp)
OF_BINARY_INFERENCE(MaximumOp)
OF_BINARY_INFERENCE(MinimumOp)
#undef OF_BINARY_INFERENCE

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat { return a + b; },
      [](const APInt &a, const APInt &b) -> OptAPInt { return a + b; });
}
OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat { return a - b; },
      [](const APInt &a, const APInt &b) -> OptAPInt { return a - b; });
}
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat { return a * b; },
      [](const APInt &a, const APInt &b) -> OptAPInt { return a * b; });
}
OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat { return a / b; },
      [](const APInt &a, const APInt &b) -> OptAPInt {
        // Division by zero and INT_MIN / -1 are left to run time.
        if (b.isZero() || (a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return a.sdiv(b);
      });
}
OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat {
        double exponent = toDouble(b);
        return applyInDouble(a,
                             [=](double x) { return std::pow(x, exponent); });
      },
      [](const APInt &, const APInt &) -> OptAPInt { return std::nullopt; });
}
OpFoldResult MaximumOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat {
        return llvm::maximum(a, b);
      },
      [](const APInt &a, const APInt &b) -> OptAPInt {
        return a.sge(b) ? a : b;
      });
}
OpFoldResult MinimumOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) -> OptAPFloat {
        return llvm::minimum(a, b);
      },
      [](const APInt &a, const APInt &b) -> OptAPInt {
        return a.sle(b) ? a : b;
      });
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  if (failed(verifySameElementType(loc, {lhs.getType(), rhs.getType()})))
    return failure();
  return inferBroadcast(loc, {lhs, rhs}, IntegerType::get(context, 1),
                        inferred);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Value onTrue = adaptor.getOnTrue(), onFalse = adaptor.getOnFalse();
  if (failed(verifySameElementType(loc, {onTrue.getType(), onFalse.getType()})))
    return failure();
  return inferBroadcast(loc, {adaptor.getCondition(), onTrue, onFalse},
                        getElementTypeOrSelf(onTrue.getType()), inferred);
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape from ")
           << formatShape(getInput().getType().getShape()) << " to "
           << formatShape(getType().getShape())
           << "; of.cast only converts the element type";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  ArrayRef<int64_t> from = input.getShape(), to = result.getShape();
  if (from.size() > to.size())
    return emitOpError("cannot broadcast rank ")
           << from.size() << " to the lower rank " << to.size();
  size_t offset = to.size() - from.size();
  for (auto [i, size] : llvm::enumerate(from))
    if (size != 1 && size != to[offset + i])
      return emitOpError("cannot broadcast shape ")
             << formatShape(from) << " to " << formatShape(to) << ": dimension "
             << i << " has size " << size;
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ")
           << formatShape(input.getShape()) << " (" << input.getNumElements()
           << " elements) to " << formatShape(result.getShape()) << " ("
           << result.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto elements = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (isFoldable(elements))
      return elements.reshape(cast<ShapedType>(stripSbp(getType())));
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): only the last shape matters.
struct FoldReshapeOfReshape : public OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not an of.reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput());
    return success();
  }
};

/// x - s * embedding_grad(ids, dy), s a scalar (SGD's update of a table):
/// embedding_grad(ids, -s * dy) into x, which changes the rows the ids
/// name and materialises no gradient of the whole table.
struct SparseTableUpdate : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SubOp op,
                                PatternRewriter &rewriter) const override {
    // Before --of-propagate-sbp only: the ops made here are not distributed.
    if (getSbp(op.getType()))
      return rewriter.notifyMatchFailure(op, "distributed already");
    auto product = op.getRhs().getDefiningOp<MulOp>();
    if (!product || !product->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not x - s * g");
    for (unsigned i = 0; i < 2; ++i) {
      Value scale = product->getOperand(i);
      // The gradient, or its boxing to the table's distribution (which the
      // table added to now states).
      Value g = product->getOperand(1 - i);
      if (auto boxing = g.getDefiningOp<BoxingOp>();
          boxing && boxing->hasOneUse())
        g = boxing.getInput();
      auto grad = g.getDefiningOp<EmbeddingGradOp>();
      auto scaleType = dyn_cast<RankedTensorType>(scale.getType());
      if (!grad || grad.getTable() || !grad->hasOneUse() || !scaleType ||
          scaleType.getRank() != 0 ||
          !areCompatibleIgnoringSbp(op.getLhs().getType(), grad.getType()) ||
          !areCompatibleIgnoringSbp(op.getType(), grad.getType()))
        continue;
      Location loc = op.getLoc();
      Value dy = grad.getGrad();
      Value negated =
          NegOp::create(rewriter, loc, stripSbp(scale.getType()), scale);
      Value scaled =
          MulOp::create(rewriter, loc, stripSbp(dy.getType()), negated, dy);
      rewriter.replaceOpWithNewOp<EmbeddingGradOp>(
          op, op.getType(), grad.getIndices(), scaled, op.getLhs());
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no scalar times embedding_grad");
  }
};
/// add(concat(a0, a1, ...), concat(b0, b1, ...)) along one axis, of the
/// result's type, where every part is an all-zero constant or a value and
/// no value part of one overlaps a value part of the other: the
/// concatenation of the value parts in order, with zero blocks between.
/// The gradient of a slice is the slice's gradient padded with zero blocks,
/// so the gradient of a tensor read slice by slice (an RNN's input gates,
/// one time step each) is otherwise a sum of T padded tensors (O(T^2)
/// work); chains of such adds become one concatenation.
struct AddOfDisjointConcats : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  struct Part {
    int64_t start, size;
    Value value;
  };

  /// The value parts of `concat` along its axis (zero constants dropped).
  static void valueParts(ConcatOp concat, SmallVectorImpl<Part> &parts) {
    int64_t start = 0;
    uint64_t axis = concat.getAxis();
    for (Value input : concat.getInputs()) {
      int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(axis);
      // an all-zero constant (a splat of 0 or -0.0) contributes nothing
      if (!matchPattern(input, m_AnyZeroFloat()) &&
          !matchPattern(input, m_Zero()))
        parts.push_back({start, size, input});
      start += size;
    }
  }

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    if (getSbp(op.getType()))
      return rewriter.notifyMatchFailure(op, "distributed already");
    auto lhs = op.getLhs().getDefiningOp<ConcatOp>();
    auto rhs = op.getRhs().getDefiningOp<ConcatOp>();
    if (!lhs || !rhs || lhs.getAxis() != rhs.getAxis() ||
        lhs.getType() != op.getType() || rhs.getType() != op.getType() ||
        !lhs->hasOneUse() || !rhs->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not a sum of two concats");
    SmallVector<Part> parts;
    valueParts(lhs, parts);
    valueParts(rhs, parts);
    llvm::stable_sort(
        parts, [](const Part &a, const Part &b) { return a.start < b.start; });
    for (size_t i = 1; i < parts.size(); ++i)
      if (parts[i].start < parts[i - 1].start + parts[i - 1].size)
        return rewriter.notifyMatchFailure(op, "value parts overlap");
    auto type = cast<RankedTensorType>(op.getType());
    uint64_t axis = lhs.getAxis();
    auto zeros = [&](int64_t size) -> Value {
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = size;
      auto blockType = RankedTensorType::get(shape, type.getElementType());
      Attribute zero = rewriter.getZeroAttr(type.getElementType());
      return ConstantOp::create(rewriter, op.getLoc(), blockType,
                                DenseElementsAttr::get(blockType, zero));
    };
    SmallVector<Value> inputs;
    int64_t at = 0;
    for (const Part &part : parts) {
      if (part.start > at)
        inputs.push_back(zeros(part.start - at));
      inputs.push_back(part.value);
      at = part.start + part.size;
    }
    if (at < type.getDimSize(axis))
      inputs.push_back(zeros(type.getDimSize(axis) - at));
    rewriter.replaceOpWithNewOp<ConcatOp>(op, op.getType(), inputs, axis);
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *context) {
  patterns.add<AddOfDisjointConcats>(context);
}

void SubOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *context) {
  patterns.add<SparseTableUpdate>(context);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<FoldReshapeOfReshape>(context);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input.getRank();
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  SmallVector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    return emitOptionalError(loc, "permutation ", formatShape(perm),
                             " is not a permutation of 0..", rank - 1);
  SmallVector<int64_t> shape;
  for (int64_t dim : perm)
    shape.push_back(input.getDimSize(dim));
  inferred.push_back(plainTensor(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::equal(getPermutation(), llvm::seq<int64_t>(0, getType().getRank())))
    return getInput();
  return {};
}

namespace {
/// transpose(transpose(x, p1), p2) -> transpose(x, p1[p2[i]]).
struct ComposeTransposes : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not an of.transpose");
    ArrayRef<int64_t> first = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t dim : op.getPermutation())
      composed.push_back(first[dim]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(), inner.getInput(),
                                             composed);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes>(context);
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(adaptor.getInput());
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  size_t rank = input.getRank();
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits();
  SmallVector<int64_t> strides(rank, 1);
  if (std::optional<ArrayRef<int64_t>> given = adaptor.getStrides())
    strides.assign(given->begin(), given->end());
  if (failed(verifyArray(loc, "starts", starts, rank, /*positive=*/false)) ||
      failed(verifyArray(loc, "limits", limits, rank, /*positive=*/false)) ||
      failed(verifyArray(loc, "strides", strides, rank, /*positive=*/true)))
    return failure();
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    if (starts[i] > limits[i] || limits[i] > input.getDimSize(i))
      return emitOptionalError(loc, "slice [", starts[i], ", ", limits[i],
                               ") of dimension ", i, " is out of bounds [0, ",
                               input.getDimSize(i), "]");
    shape.push_back(llvm::divideCeil(limits[i] - starts[i], strides[i]));
  }
  inferred.push_back(plainTensor(shape, input.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  RankedTensorType first = asTensor(inputs.front());
  if (!first)
    return emitOptionalError(loc, "inputs must be ranked tensors");
  FailureOr<int64_t> axis =
      normalizeAxis(loc, "axis", adaptor.getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, value] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType type = asTensor(value);
    if (!type || type.getRank() != first.getRank())
      return emitOptionalError(loc, "input ", i + 1, " has a different rank");
    if (type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "input ", i + 1, " has element type ",
                               type.getElementType(), ", expected ",
                               first.getElementType());
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(
            loc, "input ", i + 1, " has shape ", formatShape(type.getShape()),
            ", which differs from ", formatShape(first.getShape()),
            " outside the concatenation axis");
    }
    shape[*axis] += type.getDimSize(*axis);
  }
  inferred.push_back(plainTensor(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduction(std::optional<Location> loc, Value input,
                                    ArrayRef<int64_t> axes, bool keepdims,
                                    SmallVectorImpl<Type> &inferred) {
  RankedTensorType type = asTensor(input);
  if (!type)
    return emitOptionalError(loc, "input must be a ranked tensor");
  if (axes.empty())
    return emitOptionalError(loc, "axes must name at least one dimension");
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t axis : axes) {
    FailureOr<int64_t> dim = normalizeAxis(loc, "axis", axis, type.getRank());
    if (failed(dim))
      return failure();
    if (!reduced.insert(*dim).second)
      return emitOptionalError(loc, "axis ", axis, " is reduced twice");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!reduced.contains(d))
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(plainTensor(shape, type.getElementType()));
  return success();
}

#define OF_REDUCE_INFERENCE(OP)                                                \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduction(loc, adaptor.getInput(), adaptor.getAxes(),          \
                          adaptor.getKeepdims(), inferred);                    \
  }
OF_REDUCE_INFERENCE(ReduceSumOp)
OF_REDUCE_INFERENCE(ReduceMeanOp)
OF_REDUCE_INFERENCE(ReduceMaxOp)
#undef OF_REDUCE_INFERENCE

//===----------------------------------------------------------------------===//
// Linear algebra and normalisation
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = asTensor(adaptor.getLhs());
  RankedTensorType rhs = asTensor(adaptor.getRhs());
  if (!lhs || !rhs)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2, got ranks ",
                             lhs.getRank(), " and ", rhs.getRank());
  if (failed(verifySameElementType(loc, {lhs, rhs})))
    return failure();
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  int64_t ra = a.size(), rb = b.size();
  bool ta = adaptor.getTransposeA(), tb = adaptor.getTransposeB();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return emitOptionalError(loc, "contracting dimensions differ: lhs has ", ka,
                             ", rhs has ", kb);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(a.drop_back(2), b.drop_back(2),
                                          batch))
    return emitOptionalError(loc, "batch dimensions ",
                             formatShape(a.drop_back(2)), " and ",
                             formatShape(b.drop_back(2)), " do not broadcast");
  batch.append({m, n});
  inferred.push_back(plainTensor(batch, lhs.getElementType()));
  return success();
}

/// Checks an optional affine parameter of a normalisation over the trailing
/// dimensions from `axis`.
static LogicalResult verifyNormParameter(std::optional<Location> loc,
                                         StringRef name, Value param,
                                         RankedTensorType input, int64_t axis) {
  if (!param)
    return success();
  RankedTensorType type = asTensor(param);
  ArrayRef<int64_t> expected = input.getShape().drop_front(axis);
  if (!type || type.getShape() != expected)
    return emitOptionalError(loc, name, " must have the normalised shape ",
                             formatShape(expected), ", got ", param.getType());
  if (type.getElementType() != input.getElementType())
    return emitOptionalError(loc, name, " has element type ",
                             type.getElementType(), ", expected ",
                             input.getElementType());
  return success();
}

/// Normalisations over the dimensions from `axis` on, with optional affine
/// parameters of the normalised shape.
static LogicalResult
inferNormalization(std::optional<Location> loc, Value inputValue, int64_t axis,
                   const APFloat &epsilon,
                   ArrayRef<std::pair<StringRef, Value>> params,
                   SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(inputValue);
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  FailureOr<int64_t> dim = normalizeAxis(loc, "axis", axis, input.getRank());
  if (failed(dim))
    return failure();
  for (auto [name, param] : params)
    if (failed(verifyNormParameter(loc, name, param, input, *dim)))
      return failure();
  if (epsilon.convertToDouble() <= 0)
    return emitOptionalError(loc, "epsilon must be positive");
  inferred.push_back(stripSbp(input));
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferNormalization(
      loc, adaptor.getInput(), adaptor.getAxis(), adaptor.getEpsilon(),
      {{"weight", adaptor.getWeight()}, {"bias", adaptor.getBias()}}, inferred);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferNormalization(loc, adaptor.getInput(), adaptor.getAxis(),
                            adaptor.getEpsilon(),
                            {{"weight", adaptor.getWeight()}}, inferred);
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType indices = asTensor(adaptor.getIndices());
  RankedTensorType weight = asTensor(adaptor.getWeight());
  if (!indices || !weight)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (weight.getRank() != 2)
    return emitOptionalError(loc, "weight must be a [vocab, dim] matrix, got ",
                             weight);
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(weight.getDimSize(1));
  inferred.push_back(plainTensor(shape, weight.getElementType()));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto result = cast<RankedTensorType>(getType());
  if (grad.getRank() != indices.getRank() + 1 ||
      grad.getShape().drop_back() != indices.getShape())
    return emitOpError("grad must have the indices' shape plus one dimension, "
                       "got ")
           << grad << " for indices " << indices;
  if (result.getRank() != 2 || result.getDimSize(1) != grad.getShape().back())
    return emitOpError("result must be a [vocab, ")
           << grad.getShape().back() << "] table, got " << result;
  if (result.getElementType() != grad.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from grad's "
           << grad.getElementType();
  if (Value table = getTable();
      table && !areCompatibleIgnoringSbp(table.getType(), result))
    return emitOpError("the table added to, ")
           << table.getType() << ", is not of the result's type " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutional ops
//===----------------------------------------------------------------------===//

/// Output length of a window of `kernel` taps (spaced `dilation`) sliding
/// with `stride` over `length` elements padded by `padBegin`/`padEnd`.
static int64_t windowOutputSize(int64_t length, int64_t padBegin,
                                int64_t padEnd, int64_t kernel, int64_t stride,
                                int64_t dilation) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t padded = length + padBegin + padEnd;
  return padded < span ? 0 : (padded - span) / stride + 1;
}

/// The result type of a convolution of `input` by `weight` (shapes and
/// attributes checked).
static LogicalResult
inferConv2D(std::optional<Location> loc, RankedTensorType input,
            RankedTensorType weight, Value bias, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
            int64_t groups, SmallVectorImpl<Type> &inferred) {
  if (!input || !weight)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (input.getRank() != 4 || weight.getRank() != 4)
    return emitOptionalError(loc,
                             "input must be NCHW and weight OIHW (rank 4), "
                             "got ranks ",
                             input.getRank(), " and ", weight.getRank());
  if (failed(verifySameElementType(loc, {input, weight})))
    return failure();
  if (failed(verifyArray(loc, "strides", strides, 2, true)) ||
      failed(verifyArray(loc, "padding", padding, 4, false)) ||
      failed(verifyArray(loc, "dilation", dilation, 2, true)))
    return failure();
  int64_t channels = input.getDimSize(1), outChannels = weight.getDimSize(0);
  if (groups <= 0 || channels % groups || outChannels % groups)
    return emitOptionalError(
        loc, "groups = ", groups, " must be positive and divide the input (",
        channels, ") and output (", outChannels, ") channels");
  if (weight.getDimSize(1) * groups != channels)
    return emitOptionalError(loc, "weight has ", weight.getDimSize(1),
                             " input channels per group, expected ",
                             channels / groups);
  if (bias) {
    RankedTensorType expected =
        plainTensor({outChannels}, input.getElementType());
    if (stripSbp(bias.getType()) != expected)
      return emitOptionalError(loc, "bias must be ", expected, ", got ",
                               bias.getType());
  }
  int64_t oh = windowOutputSize(input.getDimSize(2), padding[0], padding[1],
                                weight.getDimSize(2), strides[0], dilation[0]);
  int64_t ow = windowOutputSize(input.getDimSize(3), padding[2], padding[3],
                                weight.getDimSize(3), strides[1], dilation[1]);
  if (oh <= 0 || ow <= 0)
    return emitOptionalError(loc, "the kernel does not fit the padded input");
  inferred.push_back(plainTensor({input.getDimSize(0), outChannels, oh, ow},
                                 input.getElementType()));
  return success();
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferConv2D(loc, asTensor(adaptor.getInput()),
                     asTensor(adaptor.getWeight()), adaptor.getBias(),
                     adaptor.getStrides(), adaptor.getPadding(),
                     adaptor.getDilation(), adaptor.getGroups(), inferred);
}

/// The convolution gradients' check: the forward convolution of `input` by
/// `weight` with these attributes has the shape of `grad`.
template <typename Op>
static LogicalResult verifyConvGrad(Op op, RankedTensorType input,
                                    RankedTensorType weight) {
  SmallVector<Type> inferred;
  if (failed(inferConv2D(op.getLoc(), input, weight, Value(), op.getStrides(),
                         op.getPadding(), op.getDilation(), op.getGroups(),
                         inferred)))
    return failure();
  auto grad = cast<RankedTensorType>(op.getGrad().getType());
  if (cast<ShapedType>(inferred[0]).getShape() != grad.getShape() ||
      grad.getElementType() != input.getElementType())
    return op.emitOpError("grad must be the forward convolution's result ")
           << inferred[0] << ", got " << grad;
  return success();
}

LogicalResult Conv2DGradInputOp::verify() {
  return verifyConvGrad(*this, cast<RankedTensorType>(getType()),
                        cast<RankedTensorType>(getWeight().getType()));
}

LogicalResult Conv2DGradFilterOp::verify() {
  return verifyConvGrad(*this, cast<RankedTensorType>(getInput().getType()),
                        cast<RankedTensorType>(getType()));
}

static LogicalResult inferPool2D(std::optional<Location> loc, Value inputValue,
                                 ArrayRef<int64_t> kernel,
                                 std::optional<ArrayRef<int64_t>> givenStrides,
                                 ArrayRef<int64_t> padding,
                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(inputValue);
  if (!input || input.getRank() != 4)
    return emitOptionalError(loc, "input must be an NCHW (rank-4) tensor");
  ArrayRef<int64_t> strides = givenStrides ? *givenStrides : kernel;
  if (failed(verifyArray(loc, "kernel_size", kernel, 2, true)) ||
      failed(verifyArray(loc, "strides", strides, 2, true)) ||
      failed(verifyArray(loc, "padding", padding, 4, false)))
    return failure();
  int64_t oh = windowOutputSize(input.getDimSize(2), padding[0], padding[1],
                                kernel[0], strides[0], 1);
  int64_t ow = windowOutputSize(input.getDimSize(3), padding[2], padding[3],
                                kernel[1], strides[1], 1);
  if (oh <= 0 || ow <= 0)
    return emitOptionalError(loc, "the window does not fit the padded input");
  inferred.push_back(
      plainTensor({input.getDimSize(0), input.getDimSize(1), oh, ow},
                  input.getElementType()));
  return success();
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferPool2D(loc, adaptor.getInput(), adaptor.getKernelSize(),
                     adaptor.getStrides(), adaptor.getPadding(), inferred);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferPool2D(loc, adaptor.getInput(), adaptor.getKernelSize(),
                     adaptor.getStrides(), adaptor.getPadding(), inferred);
}

LogicalResult Pool2DGradOp::verify() {
  if (getKind() != "max" && getKind() != "avg")
    return emitOpError("kind must be \"max\" or \"avg\", got \"")
           << getKind() << "\"";
  SmallVector<Type> inferred;
  if (failed(inferPool2D(getLoc(), getInput(), getKernelSize(), getStrides(),
                         getPadding(), inferred)))
    return failure();
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto input = cast<RankedTensorType>(getInput().getType());
  if (cast<ShapedType>(inferred[0]).getShape() != grad.getShape() ||
      grad.getElementType() != input.getElementType())
    return emitOpError("grad must be the forward pooling's result ")
           << inferred[0] << ", got " << grad;
  if (stripSbp(getType()) != stripSbp(input))
    return emitOpError("result must have the input's type ")
           << stripSbp(input) << ", got " << getType();
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(adaptor.getInput());
  if (!input || input.getRank() < 1)
    return emitOptionalError(loc, "input must be a tensor of rank >= 1");
  int64_t n = input.getShape().back(), k = adaptor.getK();
  if (k < 0 || k > n)
    return emitOptionalError(loc, "k = ", k, " must be in [0, ", n,
                             "] (the last dimension)");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = k;
  inferred.push_back(plainTensor(shape, input.getElementType()));
  inferred.push_back(
      plainTensor(shape, IntegerType::get(input.getContext(), 64)));
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(adaptor.getInput());
  if (!input || input.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...] with rank >= 2");
  RankedTensorType channelType =
      plainTensor({input.getDimSize(1)}, input.getElementType());
  std::pair<StringRef, Value> params[] = {
      {"weight", adaptor.getWeight()},
      {"bias", adaptor.getBias()},
      {"running_mean", adaptor.getRunningMean()},
      {"running_var", adaptor.getRunningVar()}};
  for (auto [name, value] : params)
    if (stripSbp(value.getType()) != channelType)
      return emitOptionalError(loc, name, " must be ", channelType, ", got ",
                               value.getType());
  if (adaptor.getEpsilon().convertToDouble() <= 0)
    return emitOptionalError(loc, "epsilon must be positive");
  double momentum = adaptor.getMomentum().convertToDouble();
  if (momentum < 0 || momentum > 1)
    return emitOptionalError(loc, "momentum = ", momentum,
                             " must be in [0, 1]");
  inferred.append({stripSbp(input), channelType, channelType});
  return success();
}

LogicalResult
BatchNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = asTensor(adaptor.getInput());
  if (!input || input.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...] with rank >= 2");
  if (stripSbp(adaptor.getGrad().getType()) != stripSbp(input))
    return emitOptionalError(loc, "grad must have the input's type ",
                             stripSbp(input), ", got ",
                             adaptor.getGrad().getType());
  RankedTensorType channelType =
      plainTensor({input.getDimSize(1)}, input.getElementType());
  if (stripSbp(adaptor.getWeight().getType()) != channelType)
    return emitOptionalError(loc, "weight must be ", channelType, ", got ",
                             adaptor.getWeight().getType());
  if (adaptor.getEpsilon().convertToDouble() <= 0)
    return emitOptionalError(loc, "epsilon must be positive");
  inferred.append({stripSbp(input), channelType, channelType});
  return success();
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError("p = ") << p << " must be in [0, 1)";
  if (static_cast<bool>(getOffsets()) != getGlobalShape().has_value())
    return emitOpError("offsets and global_shape go together");
  if (getOffsets()) {
    auto type = cast<RankedTensorType>(getInput().getType());
    auto offsets = cast<RankedTensorType>(getOffsets().getType());
    if (offsets.getRank() != 1 || offsets.getDimSize(0) != type.getRank())
      return emitOpError("offsets must be a tensor<") << type.getRank()
                                                      << "xi64>";
    ArrayRef<int64_t> global = *getGlobalShape();
    if (static_cast<int64_t>(global.size()) != type.getRank())
      return emitOpError("global_shape must have rank ") << type.getRank();
    for (auto [g, l] : llvm::zip(global, type.getShape()))
      if (g < l)
        return emitOpError("global_shape ") << g << " is smaller than the "
                                            << "local extent " << l;
  }
  return success();
}

LogicalResult
CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType logits = asTensor(adaptor.getLogits());
  RankedTensorType labels = asTensor(adaptor.getLabels());
  if (!logits || !labels)
    return emitOptionalError(loc, "operands must be ranked tensors");
  if (logits.getRank() < 1 ||
      labels.getShape() != logits.getShape().drop_back())
    return emitOptionalError(
        loc, "labels of shape ", formatShape(labels.getShape()),
        " must have the logits' shape ", formatShape(logits.getShape()),
        " without its last (class) dimension");
  inferred.push_back(plainTensor(labels.getShape(), logits.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BoxingOp
//===----------------------------------------------------------------------===//

LogicalResult BoxingOp::verify() {
  if (stripSbp(getInput().getType()) != stripSbp(getType()))
    return emitOpError("changes the tensor from ")
           << stripSbp(getInput().getType()) << " to " << stripSbp(getType())
           << "; of.boxing changes only the distribution";
  if (!getSbp(getType()))
    return emitOpError("result must carry an #of.sbp distribution");
  return success();
}

OpFoldResult BoxingOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

namespace {
/// boxing(boxing(x)) -> boxing(x): the logical value is unchanged by either,
/// so only the final distribution matters; lowering picks the path.
struct FoldBoxingOfBoxing : public OpRewritePattern<BoxingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BoxingOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<BoxingOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not an of.boxing");
    // When something other than a boxing reads the inner result, it stays,
    // and a direct transition would add a collective where a local one
    // (B -> S is a slice) reuses it.
    if (!llvm::all_of(inner->getUsers(), llvm::IsaPred<BoxingOp>))
      return rewriter.notifyMatchFailure(op, "the inner boxing has other uses");
    rewriter.replaceOpWithNewOp<BoxingOp>(op, op.getType(), inner.getInput());
    return success();
  }
};
} // namespace

void BoxingOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<FoldBoxingOfBoxing>(context);
}

#define GET_OP_CLASSES
#include "OF/Dialect/OF/IR/OFOps.cpp.inc"

//===----------------------------------------------------------------------===//
// of.library_call
//===----------------------------------------------------------------------===//

LogicalResult LibraryCallOp::verify() {
  StringRef callee = getCallee();
  std::string_view name(callee.data(), callee.size());
  bool isConv = dnn::isConvFunction(name), isPool = dnn::isPoolFunction(name),
       isNorm = dnn::isBatchNormFunction(name);
  if (!isConv && !isPool && !isNorm)
    return emitOpError("unknown library function '")
           << callee << "' (known: " << dnn::kConvForwardFunction << ", "
           << dnn::kConvGradInputFunction << ", "
           << dnn::kConvGradFilterFunction << ", " << dnn::kPoolForwardFunction
           << ", " << dnn::kPoolGradFunction << ", "
           << dnn::kBatchNormForwardFunction << ", "
           << dnn::kBatchNormGradFunction << ")";
  ArrayRef<int64_t> params = getParams();
  size_t paramCount = isConv   ? dnn::kConvParamCount
                      : isPool ? dnn::kPoolParamCount
                               : dnn::kBatchNormParamCount;
  if (params.size() != paramCount)
    return emitOpError(callee)
           << " takes " << paramCount << " parameters, got " << params.size();
  // The operands' shapes in order, the inits' last.
  SmallVector<SmallVector<int64_t>> shapes;
  if (isNorm) {
    dnn::BatchNormGeometry g = dnn::decodeBatchNormGeometry(params.data());
    if (const char *why = dnn::checkBatchNormGeometry(g))
      return emitOpError(callee) << " parameters: " << why;
    SmallVector<int64_t> x{g.n, g.c, g.s}, c{g.c};
    if (name == dnn::kBatchNormForwardFunction)
      shapes = {x, c, c, x, c, c};
    else
      shapes = {x, x, c, c, c, x, c, c};
  } else if (isPool) {
    dnn::PoolGeometry g = dnn::decodePoolGeometry(params.data());
    if (const char *why = dnn::checkPoolGeometry(g))
      return emitOpError(callee) << " parameters: " << why;
    SmallVector<int64_t> x{g.n, g.c, g.h, g.w}, y{g.n, g.c, g.oh, g.ow};
    if (name == dnn::kPoolForwardFunction)
      shapes = {x, y};
    else
      shapes = {x, y, x};
  } else {
    dnn::ConvGeometry g = dnn::decodeConvGeometry(params.data());
    if (const char *why = dnn::checkConvGeometry(g))
      return emitOpError(callee) << " parameters: " << why;
    SmallVector<int64_t> x{g.n, g.c, g.h, g.w},
        w{g.f, g.c / g.groups, g.kh, g.kw}, y{g.n, g.f, g.oh, g.ow};
    if (name == dnn::kConvForwardFunction) {
      shapes = {x, w};
      if (getInputs().size() == 3)
        shapes.push_back({g.f});
      shapes.push_back(y);
    } else if (name == dnn::kConvGradInputFunction) {
      shapes = {y, w, x};
    } else {
      shapes = {x, y, w};
    }
  }
  size_t outputs = dnn::outputCount(name);
  if (getInits().size() != outputs)
    return emitOpError(callee)
           << " writes " << outputs << " init" << (outputs == 1 ? "" : "s")
           << ", got " << getInits().size();
  if (getNumOperands() != shapes.size())
    return emitOpError(callee) << " takes " << shapes.size() - outputs
                               << " inputs, got " << getInputs().size();
  bool tensors = isa<TensorType>(getInits()[0].getType());
  Type element = cast<ShapedType>(getInits()[0].getType()).getElementType();
  if (isNorm && !element.isF32())
    return emitOpError(callee) << " is f32 only, got " << element;
  for (auto [i, operand] : llvm::enumerate(getOperands())) {
    auto type = cast<ShapedType>(operand.getType());
    if (isa<TensorType>(type) != tensors)
      return emitOpError("operands must all be tensors or all memrefs");
    if (type.getElementType() != element || !isa<FloatType>(element))
      return emitOpError("operands must share one floating-point type");
    if (type.getShape() != ArrayRef<int64_t>(shapes[i]))
      return emitOpError("operand ")
             << i << " has shape [" << type.getShape() << "], the parameters "
             << "of " << callee << " give [" << ArrayRef(shapes[i]) << "]";
  }
  if (!tensors) {
    if (getNumResults() != 0)
      return emitOpError("on memrefs has no result");
    return success();
  }
  if (!llvm::equal(getResultTypes(), getInits().getTypes()))
    return emitOpError("on tensors has a result of each init's type");
  return success();
}

void LibraryCallOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &input : getInputsMutable())
    if (isa<MemRefType>(input.get().getType()))
      effects.emplace_back(MemoryEffects::Read::get(), &input,
                           SideEffects::DefaultResource::get());
  for (OpOperand &init : getInitsMutable())
    if (isa<MemRefType>(init.get().getType()))
      effects.emplace_back(MemoryEffects::Write::get(), &init,
                           SideEffects::DefaultResource::get());
}
