//===- OFGradients.cpp - Vector-Jacobian products of the of ops ----------===//
//
// GradientOpInterface for every differentiable op: the gradient of each
// operand from the gradients of the results, written with of ops on global
// tensors. --of-autodiff (lib/Dialect/OF/Transforms/Autodiff.cpp) drives it; SBP
// propagation later gives these backward ops their signatures, so a
// data-parallel weight gradient comes out P and is all-reduced by boxing.
//
// Conventions: gradients carry no #of.sbp encoding (SBP is propagation's
// business); an operand that is not differentiable (integer indices, a
// seed, a condition, running statistics) gets a null gradient; integer
// results have no gradient, so their ops give null gradients too.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::of;

namespace {

using Grads = SmallVectorImpl<Value>;

RankedTensorType plainType(Value v) {
  return cast<RankedTensorType>(stripSbp(v.getType()));
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(plainType(v).getElementType());
}

/// A splat constant of `shape` (rank 0: a scalar that broadcasts anywhere).
Value splat(OpBuilder &b, Location loc, Type elementType, double value,
            ArrayRef<int64_t> shape = {}) {
  auto type = RankedTensorType::get(shape, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(b.getFloatAttr(elementType, value))
                          : Attribute(b.getIntegerAttr(
                                elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
}

Value scalarLike(OpBuilder &b, Location loc, Value like, double value) {
  return splat(b, loc, plainType(like).getElementType(), value);
}

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
Value div(OpBuilder &b, Location loc, Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
Value mulScalar(OpBuilder &b, Location loc, Value x, double c) {
  return mul(b, loc, x, scalarLike(b, loc, x, c));
}

Value reshape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  RankedTensorType type = plainType(x);
  if (type.getShape() == shape)
    return x;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x);
}

/// `grad` (of a NumPy-broadcast result's shape) summed down to `shape`: the
/// gradient of an operand that was broadcast.
Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> from = plainType(grad).getShape();
  if (from == shape)
    return grad;
  int64_t lead = from.size() - shape.size();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d)
    if (d < lead || (shape[d - lead] == 1 && from[d] != 1))
      axes.push_back(d);
  Value summed = grad;
  if (!axes.empty())
    summed = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/false);
  return reshape(b, loc, summed, shape);
}

/// `axis` counted from the front (negative counts from the end). The
/// getters of I64Attr axes return them as unsigned, so take them signed.
int64_t normalizedAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Normalised, sorted reduction axes.
SmallVector<int64_t> normalizedAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes)
    out.push_back(normalizedAxis(a, rank));
  llvm::sort(out);
  return out;
}

/// `v`, the result of reducing a tensor of `shape` over `axes` (with or
/// without keepdims), broadcast back to `shape`.
Value expandReduced(OpBuilder &b, Location loc, Value v,
                    ArrayRef<int64_t> shape, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes)
    kept[a] = 1;
  Value r = reshape(b, loc, v, kept);
  if (ArrayRef<int64_t>(kept) == shape)
    return r;
  return BroadcastToOp::create(
      b, loc, RankedTensorType::get(shape, plainType(v).getElementType()), r);
}

Value meanKeep(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes) {
  return ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
}
Value sumKeep(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes) {
  return ReduceSumOp::create(b, loc, x, axes, /*keepdims=*/true);
}

Value compare(OpBuilder &b, Location loc, CompareDirection d, Value x,
              Value y) {
  return CompareOp::create(b, loc, d, x, y);
}

/// `cond ? g : 0` and `cond ? 0 : g`, broadcast to the result's shape.
Value maskedBy(OpBuilder &b, Location loc, Value cond, Value g, bool onTrue) {
  Value zero = scalarLike(b, loc, g, 0);
  return onTrue ? SelectOp::create(b, loc, cond, g, zero)
                : SelectOp::create(b, loc, cond, zero, g);
}

/// The gradient of a normalisation `xhat = (x - mean) * rstd` (the mean
/// subtracted when `centred`) through to x, given `dxhat`: with m() the mean
/// over the normalised axes,
/// `dx = rstd * (dxhat - m(dxhat) - xhat * m(dxhat * xhat))` (centred) or
/// `dx = rstd * (dxhat - xhat * m(dxhat * xhat))` (RMS norm).
Value normInputGrad(OpBuilder &b, Location loc, Value dxhat, Value xhat,
                    Value rstd, ArrayRef<int64_t> axes, bool centred) {
  Value proj =
      mul(b, loc, xhat, meanKeep(b, loc, mul(b, loc, dxhat, xhat), axes));
  Value inner = sub(b, loc, dxhat, proj);
  if (centred)
    inner = sub(b, loc, inner, meanKeep(b, loc, dxhat, axes));
  return mul(b, loc, rstd, inner);
}

/// The statistics of a centred normalisation over `axes`, recomputed for
/// the backward pass (cheap next to keeping them alive): returns
/// {xhat = (x - mean) * rstd, rstd = rsqrt(var + eps)}, variance biased.
std::pair<Value, Value> standardize(OpBuilder &b, Location loc, Value x,
                                    ArrayRef<int64_t> axes, double eps) {
  Value centred = sub(b, loc, x, meanKeep(b, loc, x, axes));
  Value var = meanKeep(b, loc, mul(b, loc, centred, centred), axes);
  Value rstd =
      RsqrtOp::create(b, loc, add(b, loc, var, scalarLike(b, loc, x, eps)));
  return {mul(b, loc, centred, rstd), rstd};
}

/// Pushes a null gradient for every operand (an op on integers).
LogicalResult noGradients(Operation *op, Grads &grads) {
  grads.append(op->getNumOperands(), Value());
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Unary float ops: dx = g * f'(x), with f'(x) written from x or y = f(x).
#define OF_UNARY_VJP(OP, BODY)                                                 \
  LogicalResult OP::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,        \
                             Grads &grads) {                                   \
    Value g = resultGrads[0];                                                  \
    if (!g || !isFloatTensor(getInput()))                                      \
      return noGradients(*this, grads);                                        \
    Location loc = getLoc();                                                   \
    Value x = getInput(), y = getResult();                                     \
    (void)x;                                                                   \
    (void)y;                                                                   \
    grads.push_back(BODY);                                                     \
    return success();                                                          \
  }

OF_UNARY_VJP(NegOp, NegOp::create(b, loc, g))
OF_UNARY_VJP(ExpOp, mul(b, loc, g, y))
OF_UNARY_VJP(LogOp, div(b, loc, g, x))
OF_UNARY_VJP(SqrtOp, div(b, loc, g, mulScalar(b, loc, y, 2.0)))
OF_UNARY_VJP(RsqrtOp,
             mul(b, loc, g,
                 mulScalar(b, loc, mul(b, loc, mul(b, loc, y, y), y), -0.5)))
OF_UNARY_VJP(TanhOp,
             mul(b, loc, g,
                 sub(b, loc, scalarLike(b, loc, y, 1), mul(b, loc, y, y))))
OF_UNARY_VJP(SigmoidOp,
             mul(b, loc, g,
                 mul(b, loc, y, sub(b, loc, scalarLike(b, loc, y, 1), y))))
OF_UNARY_VJP(ReluOp, maskedBy(b, loc,
                              compare(b, loc, CompareDirection::gt, x,
                                      scalarLike(b, loc, x, 0)),
                              g, /*onTrue=*/true))
// d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2).
OF_UNARY_VJP(ErfOp,
             mul(b, loc, g,
                 mulScalar(b, loc,
                           ExpOp::create(b, loc,
                                         NegOp::create(b, loc,
                                                       mul(b, loc, x, x))),
                           2.0 / std::sqrt(M_PI))))
// d/dx sin(x) = cos(x); d/dx cos(x) = -sin(x).
OF_UNARY_VJP(SinOp, mul(b, loc, g, CosOp::create(b, loc, x)))
OF_UNARY_VJP(CosOp,
             mul(b, loc, g, NegOp::create(b, loc, SinOp::create(b, loc, x))))
#undef OF_UNARY_VJP

LogicalResult SiluOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                               Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  // d/dx x s(x) = s (1 + x (1 - s)).
  Location loc = getLoc();
  Value x = getInput();
  Value s = SigmoidOp::create(b, loc, x);
  Value one = scalarLike(b, loc, x, 1);
  Value d =
      mul(b, loc, s, add(b, loc, one, mul(b, loc, x, sub(b, loc, one, s))));
  grads.push_back(mul(b, loc, resultGrads[0], d));
  return success();
}

LogicalResult GeluOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                               Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  Location loc = getLoc();
  Value x = getInput();
  Value one = scalarLike(b, loc, x, 1);
  Value d;
  if (getApproximate() == "tanh") {
    // y = x/2 (1 + t), t = tanh(c (x + k x^3)):
    // y' = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 k x^2).
    double c = std::sqrt(2.0 / M_PI), k = 0.044715;
    Value x2 = mul(b, loc, x, x);
    Value u = mulScalar(
        b, loc, add(b, loc, x, mulScalar(b, loc, mul(b, loc, x2, x), k)), c);
    Value t = TanhOp::create(b, loc, u);
    Value du =
        mulScalar(b, loc, add(b, loc, one, mulScalar(b, loc, x2, 3 * k)), c);
    Value left = mulScalar(b, loc, add(b, loc, one, t), 0.5);
    Value right = mul(b, loc, mulScalar(b, loc, x, 0.5),
                      mul(b, loc, sub(b, loc, one, mul(b, loc, t, t)), du));
    d = add(b, loc, left, right);
  } else {
    // y = x Phi(x): y' = Phi(x) + x phi(x).
    Value phiCdf = mulScalar(
        b, loc,
        add(b, loc, one,
            ErfOp::create(b, loc, mulScalar(b, loc, x, 1.0 / std::sqrt(2.0)))),
        0.5);
    Value pdf = mulScalar(
        b, loc,
        ExpOp::create(b, loc, mulScalar(b, loc, mul(b, loc, x, x), -0.5)),
        1.0 / std::sqrt(2.0 * M_PI));
    d = add(b, loc, phiCdf, mul(b, loc, x, pdf));
  }
  grads.push_back(mul(b, loc, resultGrads[0], d));
  return success();
}

/// Binary float ops: the gradients of both operands at the result's shape,
/// then summed down to each operand's (broadcast) shape.
#define OF_BINARY_VJP(OP, LHS_GRAD, RHS_GRAD)                                  \
  LogicalResult OP::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,        \
                             Grads &grads) {                                   \
    Value g = resultGrads[0];                                                  \
    if (!g || !isFloatTensor(getLhs()))                                        \
      return noGradients(*this, grads);                                        \
    Location loc = getLoc();                                                   \
    Value l = getLhs(), r = getRhs(), y = getResult();                         \
    (void)y;                                                                   \
    grads.push_back(sumToShape(b, loc, LHS_GRAD, plainType(l).getShape()));    \
    grads.push_back(sumToShape(b, loc, RHS_GRAD, plainType(r).getShape()));    \
    return success();                                                          \
  }

OF_BINARY_VJP(AddOp, g, g)
OF_BINARY_VJP(SubOp, g, NegOp::create(b, loc, g))
OF_BINARY_VJP(MulOp, mul(b, loc, g, r), mul(b, loc, g, l))
OF_BINARY_VJP(DivOp, div(b, loc, g, r),
              NegOp::create(b, loc, div(b, loc, mul(b, loc, g, y), r)))
// d/dl l^r = r l^(r-1); d/dr l^r = l^r log(l).
OF_BINARY_VJP(PowOp,
              mul(b, loc, g,
                  mul(b, loc, r,
                      PowOp::create(b, loc, l,
                                    sub(b, loc, r, scalarLike(b, loc, r, 1))))),
              mul(b, loc, g, mul(b, loc, y, LogOp::create(b, loc, l))))
// Ties go to the left operand.
OF_BINARY_VJP(MaximumOp,
              maskedBy(b, loc, compare(b, loc, CompareDirection::ge, l, r), g,
                       true),
              maskedBy(b, loc, compare(b, loc, CompareDirection::ge, l, r), g,
                       false))
OF_BINARY_VJP(MinimumOp,
              maskedBy(b, loc, compare(b, loc, CompareDirection::le, l, r), g,
                       true),
              maskedBy(b, loc, compare(b, loc, CompareDirection::le, l, r), g,
                       false))
#undef OF_BINARY_VJP

LogicalResult SelectOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 Grads &grads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getOnTrue()))
    return noGradients(*this, grads);
  Location loc = getLoc();
  Value c = getCondition();
  grads.push_back(Value());
  grads.push_back(sumToShape(b, loc, maskedBy(b, loc, c, g, true),
                             plainType(getOnTrue()).getShape()));
  grads.push_back(sumToShape(b, loc, maskedBy(b, loc, c, g, false),
                             plainType(getOnFalse()).getShape()));
  return success();
}

LogicalResult CastOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                               Grads &grads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()) || !isFloatTensor(getResult()))
    return noGradients(*this, grads);
  grads.push_back(CastOp::create(b, getLoc(), plainType(getInput()), g));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      Grads &grads) {
  if (!resultGrads[0] || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  grads.push_back(sumToShape(b, getLoc(), resultGrads[0],
                             plainType(getInput()).getShape()));
  return success();
}

LogicalResult ReshapeOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  Grads &grads) {
  if (!resultGrads[0] || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  grads.push_back(
      reshape(b, getLoc(), resultGrads[0], plainType(getInput()).getShape()));
  return success();
}

LogicalResult TransposeOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  if (!resultGrads[0] || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads.push_back(TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                Grads &grads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  Location loc = getLoc();
  RankedTensorType in = plainType(getInput());
  Type et = in.getElementType();
  Value padded = g;
  // A strided dimension first spreads its n elements stride apart, with
  // zeros between: [n] -> [n, 1] ++ zeros [n, s - 1] -> [n, s] -> [n s],
  // cut to the (n - 1) s + 1 elements from the first to the last.
  if (std::optional<ArrayRef<int64_t>> strides = getStrides()) {
    for (auto [d, stride] : llvm::enumerate(*strides)) {
      SmallVector<int64_t> shape(plainType(padded).getShape());
      int64_t n = shape[d];
      if (stride == 1 || n == 0)
        continue;
      SmallVector<int64_t> column(shape);
      column.insert(column.begin() + d + 1, 1);
      Value expanded =
          ReshapeOp::create(b, loc, RankedTensorType::get(column, et), padded);
      column[d + 1] = stride - 1;
      Value spread = ConcatOp::create(
          b, loc, ValueRange{expanded, splat(b, loc, et, 0, column)},
          static_cast<uint64_t>(d + 1));
      SmallVector<int64_t> flat(shape);
      flat[d] = n * stride;
      Value dilated =
          ReshapeOp::create(b, loc, RankedTensorType::get(flat, et), spread);
      SmallVector<int64_t> starts(flat.size(), 0), limits(flat);
      limits[d] = (n - 1) * stride + 1;
      padded = SliceOp::create(b, loc, dilated, starts, limits, nullptr);
    }
  }
  // Pad the gradient with zeros back to the input's shape, one dimension
  // at a time, by concatenating zero blocks before and after it.
  for (int64_t d = 0; d < in.getRank(); ++d) {
    SmallVector<int64_t> shape(plainType(padded).getShape());
    int64_t before = getStarts()[d];
    int64_t after = in.getDimSize(d) - before - shape[d];
    if (before == 0 && after == 0)
      continue;
    SmallVector<Value> parts;
    if (before > 0) {
      shape[d] = before;
      parts.push_back(splat(b, loc, et, 0, shape));
    }
    parts.push_back(padded);
    if (after > 0) {
      shape[d] = after;
      parts.push_back(splat(b, loc, et, 0, shape));
    }
    padded = ConcatOp::create(b, loc, parts, static_cast<uint64_t>(d));
  }
  grads.push_back(padded);
  return success();
}

LogicalResult ConcatOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 Grads &grads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getResult()))
    return noGradients(*this, grads);
  Location loc = getLoc();
  RankedTensorType out = plainType(getResult());
  int64_t axis = normalizedAxis(getAxis(), out.getRank());
  int64_t offset = 0;
  for (Value input : getInputs()) {
    SmallVector<int64_t> starts(out.getRank(), 0);
    SmallVector<int64_t> limits(out.getShape());
    int64_t extent = plainType(input).getDimSize(axis);
    starts[axis] = offset;
    limits[axis] = offset + extent;
    offset += extent;
    grads.push_back(SliceOp::create(b, loc, g, starts, limits, nullptr));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  if (!resultGrads[0] || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  RankedTensorType in = plainType(getInput());
  grads.push_back(expandReduced(b, getLoc(), resultGrads[0], in.getShape(),
                                normalizedAxes(getAxes(), in.getRank())));
  return success();
}

LogicalResult ReduceMeanOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  Location loc = getLoc();
  RankedTensorType in = plainType(getInput());
  SmallVector<int64_t> axes = normalizedAxes(getAxes(), in.getRank());
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in.getDimSize(a);
  Value g = mulScalar(b, loc, resultGrads[0], 1.0 / static_cast<double>(count));
  grads.push_back(expandReduced(b, loc, g, in.getShape(), axes));
  return success();
}

LogicalResult ReduceMaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  if (!resultGrads[0] || !isFloatTensor(getInput()))
    return noGradients(*this, grads);
  // The gradient is shared equally among the elements equal to the maximum.
  Location loc = getLoc();
  Value x = getInput();
  RankedTensorType in = plainType(x);
  SmallVector<int64_t> axes = normalizedAxes(getAxes(), in.getRank());
  Value max = expandReduced(b, loc, getResult(), in.getShape(), axes);
  Value hit =
      CastOp::create(b, loc, in, compare(b, loc, CompareDirection::eq, x, max));
  Value share = div(b, loc, hit, sumKeep(b, loc, hit, axes));
  Value g = expandReduced(b, loc, resultGrads[0], in.getShape(), axes);
  grads.push_back(mul(b, loc, g, share));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and normalisation
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 Grads &grads) {
  Value g = resultGrads[0];
  if (!g || !isFloatTensor(getLhs()))
    return noGradients(*this, grads);
  Location loc = getLoc();
  Value a = getLhs(), w = getRhs();
  bool ta = getTransposeA(), tb = getTransposeB();
  RankedTensorType aType = plainType(a), wType = plainType(w),
                   gType = plainType(g);

  // With op(A) the product's left matrix (A or its transpose) and op(B) its
  // right one: d op(A) = dY op(B)^T and d op(B) = op(A)^T dY.
  Value da = ta ? MatmulOp::create(b, loc, w, g, /*transpose_a=*/tb, true)
                : MatmulOp::create(b, loc, g, w, false, /*transpose_b=*/!tb);
  grads.push_back(sumToShape(b, loc, da, aType.getShape()));

  Value dw;
  if (wType.getRank() == 2 && aType.getRank() > 2 && !ta) {
    // A batched activation times a weight matrix: fold the batch into the
    // rows, so the weight gradient is one matrix product, not a batched
    // product and a sum over the batch.
    int64_t k = aType.getShape().back();
    int64_t rows = aType.getNumElements() / k;
    int64_t n = gType.getShape().back();
    Value a2 = reshape(b, loc, a, {rows, k});
    Value g2 = reshape(b, loc, g, {rows, n});
    dw = tb ? MatmulOp::create(b, loc, g2, a2, true, false)
            : MatmulOp::create(b, loc, a2, g2, true, false);
  } else {
    dw = tb ? MatmulOp::create(b, loc, g, a, true, /*transpose_b=*/ta)
            : MatmulOp::create(b, loc, a, g, /*transpose_a=*/!ta, false);
  }
  grads.push_back(sumToShape(b, loc, dw, wType.getShape()));
  return success();
}

LogicalResult SoftmaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  // dx = y (g - sum(g y)).
  Location loc = getLoc();
  Value y = getResult(), g = resultGrads[0];
  int64_t rank = plainType(y).getRank();
  int64_t axis = normalizedAxis(getAxis(), rank);
  Value dot = sumKeep(b, loc, mul(b, loc, g, y), {axis});
  grads.push_back(mul(b, loc, y, sub(b, loc, g, dot)));
  return success();
}

LogicalResult LogSoftmaxOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  // dx = g - softmax(x) sum(g).
  Location loc = getLoc();
  Value y = getResult(), g = resultGrads[0];
  int64_t rank = plainType(y).getRank();
  int64_t axis = normalizedAxis(getAxis(), rank);
  Value total = sumKeep(b, loc, g, {axis});
  grads.push_back(sub(b, loc, g, mul(b, loc, ExpOp::create(b, loc, y), total)));
  return success();
}

/// The gradients of a layer or RMS norm `y = xhat * weight + bias` over the
/// trailing dimensions from `axis` on: x's (through the statistics), then
/// weight's and bias's where the op has them.
static void normGradients(OpBuilder &b, Location loc, Value g, Value x,
                          Value weight, Value bias, int64_t axis, double eps,
                          bool centred, Grads &grads) {
  int64_t rank = plainType(x).getRank();
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(normalizedAxis(axis, rank), rank));
  Value xhat, rstd;
  if (centred) {
    std::tie(xhat, rstd) = standardize(b, loc, x, axes, eps);
  } else {
    rstd =
        RsqrtOp::create(b, loc,
                        add(b, loc, meanKeep(b, loc, mul(b, loc, x, x), axes),
                            scalarLike(b, loc, x, eps)));
    xhat = mul(b, loc, x, rstd);
  }
  Value dxhat = weight ? mul(b, loc, g, weight) : g;
  grads.push_back(normInputGrad(b, loc, dxhat, xhat, rstd, axes, centred));
  if (weight)
    grads.push_back(
        sumToShape(b, loc, mul(b, loc, g, xhat), plainType(weight).getShape()));
  if (bias)
    grads.push_back(sumToShape(b, loc, g, plainType(bias).getShape()));
}

LogicalResult LayerNormOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  normGradients(b, getLoc(), resultGrads[0], getInput(), getWeight(), getBias(),
                getAxis(), getEpsilon().convertToDouble(),
                /*centred=*/true, grads);
  return success();
}

LogicalResult RmsNormOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  normGradients(b, getLoc(), resultGrads[0], getInput(), getWeight(), Value(),
                getAxis(), getEpsilon().convertToDouble(),
                /*centred=*/false, grads);
  return success();
}

LogicalResult EmbeddingOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  grads.push_back(Value());
  grads.push_back(EmbeddingGradOp::create(b, getLoc(), plainType(getWeight()),
                                          getIndices(), resultGrads[0],
                                          /*table=*/Value()));
  return success();
}

/// The gradient of the selected values added at their positions: each
/// row's indices offset by the row's start in the flattened input, one
/// scatter of one-element rows into a zero [rows * n, 1] table.
LogicalResult TopKOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                               Grads &grads) {
  Value g = resultGrads[0];
  if (!g)
    return noGradients(*this, grads);
  Location loc = getLoc();
  RankedTensorType in = plainType(getInput());
  int64_t n = in.getShape().back(), k = getK();
  int64_t rows = n ? in.getNumElements() / n : 0;
  Type i64 = b.getI64Type();
  SmallVector<int64_t> starts;
  for (int64_t r = 0; r < rows; ++r)
    starts.push_back(r * n);
  auto startsType = RankedTensorType::get({rows, 1}, i64);
  Value offsets = ConstantOp::create(
      b, loc, startsType, DenseElementsAttr::get(startsType, ArrayRef(starts)));
  Value indices = ReshapeOp::create(
      b, loc, RankedTensorType::get({rows, k}, i64), getIndices());
  Value flat = ReshapeOp::create(
      b, loc, RankedTensorType::get({rows * k}, i64),
      AddOp::create(b, loc, RankedTensorType::get({rows, k}, i64), indices,
                    offsets));
  Value column = ReshapeOp::create(
      b, loc, RankedTensorType::get({rows * k, 1}, in.getElementType()), g);
  Value scattered = EmbeddingGradOp::create(
      b, loc, RankedTensorType::get({rows * n, 1}, in.getElementType()), flat,
      column, /*table=*/Value());
  grads.push_back(ReshapeOp::create(b, loc, in, scattered));
  return success();
}

LogicalResult EmbeddingGradOp::buildVjp(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        Grads &grads) {
  Value g = resultGrads[0];
  if (!g)
    return noGradients(*this, grads);
  grads.push_back(Value());
  grads.push_back(
      EmbeddingOp::create(b, getLoc(), plainType(getGrad()), getIndices(), g));
  if (getTable())
    grads.push_back(g);
  return success();
}

LogicalResult Conv2DOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 Grads &grads) {
  Value g = resultGrads[0];
  if (!g)
    return noGradients(*this, grads);
  Location loc = getLoc();
  grads.push_back(Conv2DGradInputOp::create(
      b, loc, plainType(getInput()), g, getWeight(), getStrides(), getPadding(),
      getDilation(), getGroups()));
  grads.push_back(Conv2DGradFilterOp::create(
      b, loc, plainType(getWeight()), getInput(), g, getStrides(), getPadding(),
      getDilation(), getGroups()));
  if (getBias())
    grads.push_back(ReduceSumOp::create(b, loc, g, {0, 2, 3}, false));
  return success();
}

template <typename Op>
static LogicalResult poolVjp(Op op, OpBuilder &b, ArrayRef<Value> resultGrads,
                             Grads &grads, StringRef kind,
                             bool countIncludePad) {
  if (!resultGrads[0])
    return noGradients(op, grads);
  grads.push_back(Pool2DGradOp::create(
      b, op.getLoc(), plainType(op.getInput()), op.getInput(), resultGrads[0],
      b.getStringAttr(kind), op.getKernelSizeAttr(), op.getStridesAttr(),
      op.getPaddingAttr(), b.getBoolAttr(countIncludePad)));
  return success();
}

LogicalResult MaxPool2DOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  return poolVjp(*this, b, resultGrads, grads, "max", true);
}

LogicalResult AvgPool2DOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  return poolVjp(*this, b, resultGrads, grads, "avg", getCountIncludePad());
}

LogicalResult BatchNormOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    Grads &grads) {
  Value g = resultGrads[0];
  if (!g)
    return noGradients(*this, grads);
  Location loc = getLoc();
  Value x = getInput();
  RankedTensorType in = plainType(x);
  int64_t rank = in.getRank(), channels = in.getDimSize(1);
  SmallVector<int64_t> axes = {0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  // [C] parameters as [1, C, 1, ...] so they broadcast over dimension 1.
  SmallVector<int64_t> perChannel(rank, 1);
  perChannel[1] = channels;
  auto asChannels = [&](Value v) { return reshape(b, loc, v, perChannel); };
  Value eps = scalarLike(b, loc, x, getEpsilon().convertToDouble());
  Value w = asChannels(getWeight());
  if (getTraining()) {
    // Normalised with the batch statistics, which depend on x: one op, which
    // lowering runs through the dnn library or generates.
    auto grad =
        BatchNormGradOp::create(b, loc, x, g, getWeight(), getEpsilonAttr());
    grads.append({grad.getInputGrad(), grad.getWeightGrad(), grad.getBiasGrad(),
                  Value(), Value()});
    return success();
  }
  // Normalised with the running statistics, constants here.
  Value rstd =
      RsqrtOp::create(b, loc, add(b, loc, asChannels(getRunningVar()), eps));
  Value xhat = mul(b, loc, sub(b, loc, x, asChannels(getRunningMean())), rstd);
  Value dx = mul(b, loc, g, mul(b, loc, w, rstd));
  auto perChannelSum = [&](Value v) {
    return ReduceSumOp::create(b, loc, v, axes, /*keepdims=*/false);
  };
  grads.push_back(dx);
  grads.push_back(perChannelSum(mul(b, loc, g, xhat)));
  grads.push_back(perChannelSum(g));
  grads.push_back(Value()); // running statistics: state, not parameters
  grads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Training ops and distribution
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  Grads &grads) {
  if (!resultGrads[0])
    return noGradients(*this, grads);
  // The mask is a function of the seed and the global index, so the same
  // dropout of the gradient applies the same mask and scale.
  grads.push_back(DropoutOp::create(b, getLoc(), resultGrads[0], getSeed(),
                                    getOffsets(), getPAttr(),
                                    getGlobalShapeAttr()));
  grads.push_back(Value());
  if (getOffsets())
    grads.push_back(Value());
  return success();
}

LogicalResult CrossEntropyOp::buildVjp(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       Grads &grads) {
  Value g = resultGrads[0];
  if (!g)
    return noGradients(*this, grads);
  // dlogits = (softmax(logits) - onehot(labels)) * g[..., None], with the
  // one-hot row built by comparing the labels with 0..C-1.
  Location loc = getLoc();
  Value logits = getLogits(), labels = getLabels();
  RankedTensorType lt = plainType(logits), labelType = plainType(labels);
  int64_t classes = lt.getShape().back();
  SmallVector<int64_t> column(labelType.getShape());
  column.push_back(1);
  Type indexType = labelType.getElementType();
  SmallVector<Attribute> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(b.getIntegerAttr(indexType, c));
  Value classIds = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({classes}, indexType),
                             iota));
  Value onehot =
      CastOp::create(b, loc, lt,
                     compare(b, loc, CompareDirection::eq,
                             reshape(b, loc, labels, column), classIds));
  Value probs = SoftmaxOp::create(b, loc, logits, b.getI64IntegerAttr(-1));
  grads.push_back(
      mul(b, loc, sub(b, loc, probs, onehot), reshape(b, loc, g, column)));
  grads.push_back(Value());
  return success();
}

namespace {
/// The placement of `v`: of its type, else of the nearest distributed value
/// it is computed from (before propagation most values have none).
FlatSymbolRefAttr placementOf(Value v) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (SbpAttr sbp = getSbp(cur.getType()))
      return sbp.getPlacement();
    if (Operation *def = cur.getDefiningOp(); def && seen.insert(def).second)
      llvm::append_range(work, llvm::reverse(def->getOperands()));
  }
  return nullptr;
}
} // namespace

LogicalResult BoxingOp::buildVjp(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 Grads &grads) {
  // The logical value is unchanged, so is its gradient; its distribution is
  // propagation's choice. Only its placement is not: a boxing from another
  // placement (a pipeline stage's boundary) sends the gradient back there,
  // distributed as the source was (a partial source's gradient is B: every
  // addend's gradient is the whole gradient).
  Value g = resultGrads[0];
  SbpAttr to = getSbp(getType());
  SbpAttr from = getSbp(getInput().getType());
  FlatSymbolRefAttr source =
      from ? from.getPlacement() : placementOf(getInput());
  if (!to || !source || source == to.getPlacement()) {
    grads.push_back(g);
    return success();
  }
  SmallVector<SbpEntry> nd;
  if (from) {
    for (SbpEntry e : from.getEntries())
      nd.push_back(e.isPartial() ? SbpEntry::broadcast() : e);
  } else {
    auto placement =
        SymbolTable::lookupNearestSymbolFrom<PlacementOp>(*this, source);
    if (!placement)
      return emitOpError("refers to unknown placement ") << source;
    nd.assign(placement.getGridShape().size(), SbpEntry::broadcast());
  }
  auto type = cast<RankedTensorType>(stripSbp(getInput().getType()));
  auto target = RankedTensorType::get(type.getShape(), type.getElementType(),
                                      SbpAttr::get(getContext(), source, nd));
  grads.push_back(BoxingOp::create(b, getLoc(), target, g));
  return success();
}
