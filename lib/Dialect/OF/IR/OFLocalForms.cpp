//===- OFLocalForms.cpp - The per-rank forms of ops ------------------------===//
//
// SbpOpInterface::localize for the ops whose per-rank form is not the op on
// local tensors, next to their signatures (OFSbp.cpp): --of-partition
// gives every value its local type and calls these. The forms follow the
// signatures that allow them: a normalisation over a split axis (softmax,
// log-softmax, layer and RMS norm) computes local statistics and
// all-reduces them (the two-stage form); an embedding whose table rows are
// split looks up its own rows (vocabulary parallelism), a cross-entropy
// whose classes are split combines local maxima, sums and the label's
// logit; a dropout of a split tensor draws its shard's part of the global
// mask; a mean over a split axis divides by the global count; a slice
// takes split dimensions whole.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/LocalForms.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::of;

//===----------------------------------------------------------------------===//
// LocalizeContext
//===----------------------------------------------------------------------===//

bool LocalizeContext::isSplitOn(Value v, int64_t dim) const {
  return !axesSplitting(v, dim, dim).empty();
}

SmallVector<unsigned> LocalizeContext::axesSplitting(Value v, int64_t first,
                                                     int64_t last) const {
  SmallVector<unsigned> axes;
  RankedTensorType type = globalType(v);
  SbpAttr sbp = type ? getSbp(type) : SbpAttr();
  if (!sbp)
    return axes;
  for (auto [a, e] : llvm::enumerate(sbp.getEntries()))
    if (e.isSplit() && e.dim >= first && e.dim <= last)
      axes.push_back(a);
  return axes;
}

void LocalizeContext::replace(Operation *op, Value local) {
  replace(op, ValueRange{local});
}

void LocalizeContext::replace(Operation *op, ValueRange locals) {
  for (auto [result, local] : llvm::zip_equal(op->getResults(), locals)) {
    global[local] = global.lookup(result);
    result.replaceAllUsesWith(local);
  }
  op->erase();
}

Value LocalizeContext::allReduceOver(OpBuilder &b, Location loc, Value v,
                                     RankedTensorType type,
                                     ArrayRef<unsigned> axes, bool max) const {
  for (unsigned a : axes) {
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                         type.getElementType());
    v = AllReduceOp::create(
            b, loc, TypeRange{type}, v, init, placement, b.getI64IntegerAttr(a),
            ReduceKindAttr::get(b.getContext(),
                                max ? ReduceKind::Max : ReduceKind::Sum))
            ->getResult(0);
  }
  return v;
}

Value LocalizeContext::shardOffset(OpBuilder &b, Location loc,
                                   RankedTensorType globalType, int64_t dim,
                                   Type elementType) const {
  ArrayRef<SbpEntry> sbp = getSbp(globalType).getEntries();
  int64_t n = 1;
  for (int64_t extent : grid)
    n *= extent;
  SmallVector<APInt> offsets;
  unsigned width = elementType.getIntOrFloatBitWidth();
  for (int64_t pos = 0; pos < n; ++pos) {
    SmallVector<int64_t> coord = gridCoordinate(grid, pos);
    int64_t extent = globalType.getDimSize(dim), offset = 0;
    for (auto [a, e] : llvm::enumerate(sbp))
      if (e.isSplit() && e.dim == dim) {
        offset += chunkOffset(extent, grid[a], coord[a]);
        extent = chunkSize(extent, grid[a], coord[a]);
      }
    offsets.push_back(APInt(width, offset, /*isSigned=*/true));
  }
  auto tableType = RankedTensorType::get(grid, elementType);
  Value v = ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(tableType, offsets)));
  SmallVector<int64_t> shape(grid);
  for (unsigned a = 0; a < grid.size(); ++a) {
    shape[a] = 1;
    auto type = RankedTensorType::get(shape, elementType);
    Value init = tensor::EmptyOp::create(b, loc, shape, elementType);
    v = ShardSliceOp::create(b, loc, TypeRange{type}, v, init, placement,
                             b.getI64IntegerAttr(a), b.getI64IntegerAttr(a))
            ->getResult(0);
  }
  return ReshapeOp::create(b, loc, RankedTensorType::get({}, elementType), v);
}

//===----------------------------------------------------------------------===//
// The forms
//===----------------------------------------------------------------------===//

namespace {

/// A scalar constant of `elementType`.
Value scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          type, b.getFloatAttr(elementType, value))));
}

/// The two-stage form of a normalisation whose normalised dimensions
/// [axis, last] are split over the placement axes `axes`: local statistics,
/// all-reduced (max then sum for softmax; sums for the norms), then the
/// elementwise rest on the local part. The op is replaced.
void expandTwoStage(Operation *op, ArrayRef<unsigned> axes, int64_t axis,
                    int64_t last, RankedTensorType inGlobal,
                    LocalizeContext &context) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  SmallVector<int64_t> reducedShape(xt.getShape());
  SmallVector<int64_t> dims;
  double count = 1;
  for (int64_t d = axis; d <= last; ++d) {
    reducedShape[d] = 1;
    dims.push_back(d);
    count *= inGlobal.getDimSize(d);
  }
  auto rt = RankedTensorType::get(reducedShape, et);
  DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(dims);
  BoolAttr keep = b.getBoolAttr(true);
  auto allReduce = [&](Value v, bool max) {
    return context.allReduceOver(b, loc, v, rt, axes, max);
  };
  auto sumOf = [&](Value v) {
    return allReduce(ReduceSumOp::create(b, loc, rt, v, axesAttr, keep), false);
  };
  Value y;
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
    Value m = allReduce(ReduceMaxOp::create(b, loc, rt, x, axesAttr, keep), true);
    Value xm = SubOp::create(b, loc, xt, x, m);
    Value e = ExpOp::create(b, loc, xt, xm);
    Value s = sumOf(e);
    y = isa<SoftmaxOp>(op)
            ? DivOp::create(b, loc, xt, e, s).getResult()
            : SubOp::create(b, loc, xt, xm, LogOp::create(b, loc, rt, s))
                  .getResult();
  } else {
    Value inv = scalar(b, loc, et, 1.0 / count);
    double epsilon = op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble();
    Value centred = x;
    if (isa<LayerNormOp>(op)) {
      Value mean = MulOp::create(b, loc, rt, sumOf(x), inv);
      centred = SubOp::create(b, loc, xt, x, mean);
    }
    Value sq = MulOp::create(b, loc, xt, centred, centred);
    Value var = MulOp::create(b, loc, rt, sumOf(sq), inv);
    Value r = RsqrtOp::create(
        b, loc, rt, AddOp::create(b, loc, rt, var, scalar(b, loc, et, epsilon)));
    y = MulOp::create(b, loc, xt, centred, r);
    Value weight, bias;
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      weight = ln.getWeight();
      bias = ln.getBias();
    } else {
      weight = cast<RmsNormOp>(op).getWeight();
    }
    if (weight)
      y = MulOp::create(b, loc, xt, y, weight);
    if (bias)
      y = AddOp::create(b, loc, xt, y, bias);
  }
  context.replace(op, y);
}

/// Sync batch norm: a training batch norm (or its gradient) whose batch is
/// split over the placement axes `axes`. Each rank sums its part of every
/// channel, the sums are all-reduced, and the rest is elementwise on the
/// local part: the statistics (and the weight and bias gradients) are the
/// whole batch's. The op is replaced by the ops that compute it.
struct SyncBatchNorm {
  OpBuilder b;
  Location loc;
  LocalizeContext &context;
  SmallVector<unsigned> axes;
  RankedTensorType xt, rt, ct; // the local input, [1, C, 1...], [C]
  Type et;
  DenseI64ArrayAttr dims; // every dimension but the channels
  double count;           // elements per channel, all ranks together

  /// The form for `op` (a training batch norm or its gradient), or none
  /// when its batch is not split.
  static std::optional<SyncBatchNorm> of(Operation *op,
                                         LocalizeContext &context) {
    Value input = op->getOperand(0);
    SmallVector<unsigned> axes = context.axesSplitting(input, 0, 0);
    if (axes.empty())
      return std::nullopt;
    return SyncBatchNorm(op, std::move(axes), context.globalType(input),
                         context);
  }

  SyncBatchNorm(Operation *op, SmallVector<unsigned> axes,
                RankedTensorType inGlobal, LocalizeContext &context)
      : b(op), loc(op->getLoc()), context(context), axes(std::move(axes)) {
    xt = cast<RankedTensorType>(op->getOperand(0).getType());
    et = xt.getElementType();
    SmallVector<int64_t> reduced(xt.getRank(), 1), all;
    reduced[1] = xt.getDimSize(1);
    count = 1;
    for (int64_t d = 0; d < xt.getRank(); ++d)
      if (d != 1) {
        all.push_back(d);
        count *= inGlobal.getDimSize(d);
      }
    rt = RankedTensorType::get(reduced, et);
    ct = RankedTensorType::get({xt.getDimSize(1)}, et);
    dims = b.getDenseI64ArrayAttr(all);
  }
  /// The whole batch's per-channel sum of `v`, [1, C, 1...].
  Value sum(Value v) {
    Value local = ReduceSumOp::create(b, loc, rt, v, dims, b.getBoolAttr(true));
    return context.allReduceOver(b, loc, local, rt, axes, /*max=*/false);
  }
  Value mean(Value v) {
    return MulOp::create(b, loc, rt, sum(v), k(1 / count));
  }
  Value k(double value) { return scalar(b, loc, et, value); }
  Value channels(Value perChannel) { // [C] -> [1, C, 1...]
    return ReshapeOp::create(b, loc, rt, perChannel);
  }
  Value flat(Value v) { return ReshapeOp::create(b, loc, ct, v); }
  /// The batch's statistics: the mean and biased variance per channel,
  /// x - mean, and 1 / sqrt(variance + epsilon).
  struct Statistics {
    Value mean, var, centred, rstd;
  };
  Statistics normalise(Value x, double epsilon) {
    Statistics st;
    st.mean = mean(x);
    st.centred = SubOp::create(b, loc, xt, x, st.mean);
    st.var = mean(MulOp::create(b, loc, xt, st.centred, st.centred));
    st.rstd = RsqrtOp::create(b, loc, rt,
                              AddOp::create(b, loc, rt, st.var, k(epsilon)));
    return st;
  }
};

LogicalResult localizeBatchNorm(BatchNormOp bn, LocalizeContext &context) {
  std::optional<SyncBatchNorm> sync = SyncBatchNorm::of(bn, context);
  if (!bn.getTraining() || !sync)
    return success();
  SyncBatchNorm &s = *sync;
  OpBuilder &b = s.b;
  Location loc = s.loc;
  SyncBatchNorm::Statistics st =
      s.normalise(bn.getInput(), bn.getEpsilon().convertToDouble());
  Value y = MulOp::create(b, loc, s.xt, st.centred, st.rstd);
  y = MulOp::create(b, loc, s.xt, y, s.channels(bn.getWeight()));
  y = AddOp::create(b, loc, s.xt, y, s.channels(bn.getBias()));
  // Running statistics as the op's lowering: the variance unbiased.
  double momentum = bn.getMomentum().convertToDouble();
  double unbias = s.count > 1 ? s.count / (s.count - 1) : 1.0;
  auto update = [&](Value old, Value batch, double scale) {
    Value kept = MulOp::create(b, loc, s.ct, old, s.k(1 - momentum));
    Value added =
        MulOp::create(b, loc, s.ct, s.flat(batch), s.k(momentum * scale));
    return AddOp::create(b, loc, s.ct, kept, added).getResult();
  };
  context.replace(bn, ValueRange{y, update(bn.getRunningMean(), st.mean, 1.0),
                                 update(bn.getRunningVar(), st.var, unbias)});
  return success();
}

LogicalResult localizeBatchNormGrad(BatchNormGradOp g,
                                    LocalizeContext &context) {
  std::optional<SyncBatchNorm> sync = SyncBatchNorm::of(g, context);
  if (!sync)
    return success();
  SyncBatchNorm &s = *sync;
  OpBuilder &b = s.b;
  Location loc = s.loc;
  SyncBatchNorm::Statistics st =
      s.normalise(g.getInput(), g.getEpsilon().convertToDouble());
  Value dy = g.getGrad();
  Value xhat = MulOp::create(b, loc, s.xt, st.centred, st.rstd);
  Value db = s.sum(dy);
  Value dw = s.sum(MulOp::create(b, loc, s.xt, dy, xhat));
  // dx = w r (dy - db / n - xhat dw / n)
  Value inner = SubOp::create(
      b, loc, s.xt,
      SubOp::create(b, loc, s.xt, dy,
                    MulOp::create(b, loc, s.rt, db, s.k(1 / s.count))),
      MulOp::create(b, loc, s.xt, xhat,
                    MulOp::create(b, loc, s.rt, dw, s.k(1 / s.count))));
  Value scale = MulOp::create(b, loc, s.rt, s.channels(g.getWeight()), st.rstd);
  Value dx = MulOp::create(b, loc, s.xt, inner, scale);
  context.replace(g, ValueRange{dx, s.flat(dw), s.flat(db)});
  return success();
}

/// Vocabulary-parallel embedding: the table's rows are split, so each rank
/// shifts the indices by its offset, looks up the ones inside its rows and
/// gives zeros for the others; the results add up to the lookup (P).
void vocabParallelEmbedding(EmbeddingOp emb, RankedTensorType weightGlobal,
                            LocalizeContext &context) {
  OpBuilder b(emb);
  Location loc = emb.getLoc();
  Value ids = emb.getIndices();
  auto idsType = cast<RankedTensorType>(ids.getType());
  Type it = idsType.getElementType();
  auto localWeight = cast<RankedTensorType>(emb.getWeight().getType());
  auto resultType = cast<RankedTensorType>(emb.getType());
  auto boolType = RankedTensorType::get(idsType.getShape(), b.getI1Type());
  auto intScalar = [&](int64_t v) {
    auto t = RankedTensorType::get({}, it);
    return ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(
            t, APInt(it.getIntOrFloatBitWidth(), v, /*isSigned=*/true))));
  };
  Value offset = context.shardOffset(b, loc, weightGlobal, 0, it);
  Value shifted = SubOp::create(b, loc, idsType, ids, offset);
  Value lo = CompareOp::create(b, loc, boolType, CompareDirection::ge, shifted,
                               intScalar(0));
  Value hi = CompareOp::create(b, loc, boolType, CompareDirection::lt, shifted,
                               intScalar(localWeight.getDimSize(0)));
  Value inside = SelectOp::create(b, loc, boolType, lo, hi, lo); // lo && hi
  Value safe = SelectOp::create(b, loc, idsType, inside, shifted, intScalar(0));
  Value rows = EmbeddingOp::create(b, loc, resultType, safe, emb.getWeight());
  SmallVector<int64_t> maskShape(idsType.getShape());
  maskShape.push_back(1);
  Value mask = ReshapeOp::create(
      b, loc, RankedTensorType::get(maskShape, b.getI1Type()), inside);
  Value zero = scalar(b, loc, resultType.getElementType(), 0.0);
  Value y = SelectOp::create(b, loc, resultType, mask, rows, zero);
  context.replace(emb, y);
}

/// Vocabulary-parallel cross-entropy: the classes are split over `axes`.
/// loss = log(sum exp(x - m)) + m - x[label] with m the global maximum; each
/// of m, the sum and the label's logit (found by the rank that holds it,
/// zeros elsewhere) is all-reduced, so every rank ends with the whole loss.
void vocabParallelCrossEntropy(CrossEntropyOp ce, RankedTensorType logitsGlobal,
                               ArrayRef<unsigned> axes,
                               LocalizeContext &context) {
  OpBuilder b(ce);
  Location loc = ce.getLoc();
  Value x = ce.getLogits(), labels = ce.getLabels();
  auto xt = cast<RankedTensorType>(x.getType());
  auto lt = cast<RankedTensorType>(labels.getType());
  Type et = xt.getElementType(), it = lt.getElementType();
  int64_t last = xt.getRank() - 1, classes = xt.getDimSize(last);
  SmallVector<int64_t> keptShape(xt.getShape());
  keptShape[last] = 1;
  auto kt = RankedTensorType::get(keptShape, et);
  DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr({last});
  BoolAttr keep = b.getBoolAttr(true);
  auto allReduce = [&](Value v, bool max) {
    return context.allReduceOver(b, loc, v, kt, axes, max);
  };
  Value m = allReduce(ReduceMaxOp::create(b, loc, kt, x, axesAttr, keep), true);
  Value e = ExpOp::create(b, loc, xt, SubOp::create(b, loc, xt, x, m));
  Value s = allReduce(ReduceSumOp::create(b, loc, kt, e, axesAttr, keep), false);
  // The label's logit: classes offset..offset+C_local-1 live here.
  SmallVector<APInt> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(APInt(it.getIntOrFloatBitWidth(), c));
  auto iotaType = RankedTensorType::get({classes}, it);
  Value local = ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(iotaType, iota)));
  Value offset = context.shardOffset(b, loc, logitsGlobal, last, it);
  Value ids = AddOp::create(b, loc, iotaType, local, offset);
  SmallVector<int64_t> labelShape(lt.getShape());
  labelShape.push_back(1);
  Value label = ReshapeOp::create(b, loc, RankedTensorType::get(labelShape, it),
                                  labels);
  auto maskType = RankedTensorType::get(xt.getShape(), b.getI1Type());
  Value hit = CompareOp::create(b, loc, maskType, CompareDirection::eq, ids, label);
  Value picked = SelectOp::create(b, loc, xt, hit, x, scalar(b, loc, et, 0.0));
  Value target =
      allReduce(ReduceSumOp::create(b, loc, kt, picked, axesAttr, keep), false);
  Value loss = SubOp::create(
      b, loc, kt, AddOp::create(b, loc, kt, LogOp::create(b, loc, kt, s), m),
      target);
  Value y = ReshapeOp::create(b, loc, ce.getType(), loss);
  context.replace(ce, y);
}

/// The normalisations: two-stage where the input's distribution splits a
/// normalised dimension ([axis, last]).
LogicalResult localizeNormalisation(Operation *op, int64_t axis,
                                    bool normalisesTail,
                                    LocalizeContext &context) {
  Value input = op->getOperand(0);
  RankedTensorType inGlobal = context.globalType(input);
  int64_t rank = inGlobal.getRank();
  axis = axis < 0 ? axis + rank : axis;
  int64_t last = normalisesTail ? rank - 1 : axis;
  SmallVector<unsigned> axes = context.axesSplitting(input, axis, last);
  if (!axes.empty())
    expandTwoStage(op, axes, axis, last, inGlobal, context);
  return success();
}

} // namespace

LogicalResult SoftmaxOp::localize(LocalizeContext &context) {
  return localizeNormalisation(*this, static_cast<int64_t>(getAxis()), false,
                               context);
}
LogicalResult LogSoftmaxOp::localize(LocalizeContext &context) {
  return localizeNormalisation(*this, static_cast<int64_t>(getAxis()), false,
                               context);
}
LogicalResult LayerNormOp::localize(LocalizeContext &context) {
  return localizeNormalisation(*this, static_cast<int64_t>(getAxis()), true,
                               context);
}
LogicalResult RmsNormOp::localize(LocalizeContext &context) {
  return localizeNormalisation(*this, static_cast<int64_t>(getAxis()), true,
                               context);
}

LogicalResult BatchNormOp::localize(LocalizeContext &context) {
  return localizeBatchNorm(*this, context);
}
LogicalResult BatchNormGradOp::localize(LocalizeContext &context) {
  return localizeBatchNormGrad(*this, context);
}

LogicalResult EmbeddingOp::localize(LocalizeContext &context) {
  if (context.isSplitOn(getWeight(), 0))
    vocabParallelEmbedding(*this, context.globalType(getWeight()), context);
  return success();
}

LogicalResult EmbeddingGradOp::localize(LocalizeContext &context) {
  // Rows split: the indices shifted by this rank's first row; the op
  // drops those outside [0, local rows), which other ranks own.
  if (!context.isSplitOn(getResult(), 0))
    return success();
  OpBuilder b(*this);
  Value ids = getIndices();
  auto idsType = cast<RankedTensorType>(ids.getType());
  Value offset = context.shardOffset(b, getLoc(), context.globalType(getResult()),
                                     0, idsType.getElementType());
  getIndicesMutable().assign(SubOp::create(b, getLoc(), idsType, ids, offset));
  return success();
}

LogicalResult CrossEntropyOp::localize(LocalizeContext &context) {
  RankedTensorType logits = context.globalType(getLogits());
  int64_t last = logits.getRank() - 1;
  SmallVector<unsigned> axes = context.axesSplitting(getLogits(), last, last);
  if (!axes.empty())
    vocabParallelCrossEntropy(*this, logits, axes, context);
  return success();
}

LogicalResult SliceOp::localize(LocalizeContext &context) {
  // Split dimensions are sliced whole (the signature says so): their limit
  // is the local extent.
  SmallVector<int64_t> limits(getLimits());
  auto localIn = cast<RankedTensorType>(getInput().getType());
  for (int64_t d = 0, e = limits.size(); d < e; ++d)
    if (context.isSplitOn(getInput(), d))
      limits[d] = localIn.getDimSize(d);
  setLimits(limits);
  return success();
}

LogicalResult DropoutOp::localize(LocalizeContext &context) {
  RankedTensorType in = context.globalType(getInput());
  bool split = llvm::any_of(getSbp(in).getEntries(),
                            [](const SbpEntry &e) { return e.isSplit(); });
  if (!split)
    return success();
  // This shard's offsets in the global tensor, one per dimension.
  OpBuilder b(*this);
  Location loc = getLoc();
  Type i64 = b.getI64Type();
  auto one = RankedTensorType::get({1}, i64);
  SmallVector<Value> parts;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    Value off;
    if (context.isSplitOn(getInput(), d))
      off = ReshapeOp::create(b, loc, one,
                              context.shardOffset(b, loc, in, d, i64));
    else
      off = ConstantOp::create(
          b, loc,
          cast<ElementsAttr>(DenseElementsAttr::get(one, APInt(64, 0))));
    parts.push_back(off);
  }
  Value offsets =
      parts.size() == 1
          ? parts.front()
          : ConcatOp::create(b, loc, RankedTensorType::get({in.getRank()}, i64),
                             parts, b.getI64IntegerAttr(0))
                .getResult();
  getOffsetsMutable().assign(offsets);
  setGlobalShape(in.getShape());
  return success();
}

LogicalResult ReduceMeanOp::localize(LocalizeContext &context) {
  RankedTensorType in = context.globalType(getInput());
  int64_t rank = in.getRank();
  bool splitReduced = false;
  double count = 1;
  for (int64_t a : getAxes()) {
    int64_t d = a < 0 ? a + rank : a;
    splitReduced |= context.isSplitOn(getInput(), d);
    count *= in.getDimSize(d);
  }
  if (!splitReduced)
    return success();
  // Each rank's sum over its rows divided by the global count: the partial
  // means add up to the mean.
  OpBuilder b(*this);
  auto type = cast<RankedTensorType>(getType());
  Value sum = ReduceSumOp::create(b, getLoc(), type, getInput(), getAxesAttr(),
                                  getKeepdimsAttr());
  Value scaled = MulOp::create(
      b, getLoc(), type, sum,
      scalar(b, getLoc(), type.getElementType(), 1.0 / count));
  context.replace(*this, scaled);
  return success();
}
