//===- Partition.cpp - Global programs to per-rank programs ---------------===//
//
// --of-partition: after --of-insert-boxing every op's operands and results
// form a legal signature, so each op computes its local results from its
// local operands; only the types change (and a few ops whose local form
// differs). Ranks are grouped into roles by their local shapes, one function
// per role; boxings become the per-axis collectives of planBoxing.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"
#include "OF/Transforms/Passes.h"
#include "SbpSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::of {
#define GEN_PASS_DEF_PARTITIONPASS
#include "OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

using Mesh = FuncPlacement;

RankedTensorType localType(RankedTensorType global, ArrayRef<int64_t> grid,
                           ArrayRef<int64_t> coord) {
  SbpAttr sbp = getSbp(global);
  SmallVector<int64_t> shape =
      sbp ? localShape(global.getShape(), sbp.getEntries(), grid, coord)
          : SmallVector<int64_t>(global.getShape());
  return RankedTensorType::get(shape, global.getElementType());
}

/// Checks that every op's operand and result distributions form one of its
/// nd signatures, so that computing it locally is right.
LogicalResult checkSignatures(func::FuncOp func, const Mesh &mesh) {
  auto result = func.walk([&](Operation *op) -> WalkResult {
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp) {
      if (isa<BoxingOp, func::ReturnOp, func::FuncOp>(op))
        return WalkResult::advance();
      op->emitError("op has no SBP signatures and cannot be partitioned");
      return WalkResult::interrupt();
    }
    SmallVector<SbpSignature> sigs;
    sbpOp.getSbpSignatures(sigs);
    auto entry = [&](Type t, unsigned axis) -> std::optional<SbpEntry> {
      SbpAttr sbp = getSbp(t);
      if (!sbp)
        return std::nullopt;
      return sbp.getEntries()[axis];
    };
    for (unsigned a = 0; a < mesh.grid.size(); ++a) {
      bool legal = llvm::any_of(sigs, [&](const SbpSignature &sig) {
        for (auto [i, v] : llvm::enumerate(op->getOperands()))
          if (entry(v.getType(), a) != sig.operands[i])
            return false;
        for (auto [i, v] : llvm::enumerate(op->getResults()))
          if (entry(v.getType(), a) != sig.results[i])
            return false;
        return true;
      });
      if (!legal) {
        std::string have;
        for (auto [i, v] : llvm::enumerate(op->getOperands())) {
          SbpAttr sbp = getSbp(v.getType());
          have += (i ? ", " : "") + (sbp ? str(sbp.getEntries()) : "none");
        }
        have += " -> ";
        for (auto [i, v] : llvm::enumerate(op->getResults())) {
          SbpAttr sbp = getSbp(v.getType());
          have += (i ? ", " : "") + (sbp ? str(sbp.getEntries()) : "none");
        }
        op->emitError("distributions ")
            << have << " are not a signature of the op on placement axis "
            << a << "; run --of-insert-boxing first";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// The local shapes a rank at `coord` sees: every value and every boxing
/// step. Ranks with equal keys run the same program.
SmallVector<int64_t> roleKey(func::FuncOp func, const Mesh &mesh,
                             const CostModel &model, ArrayRef<int64_t> coord) {
  SmallVector<int64_t> key;
  auto addType = [&](Type t) {
    if (auto rt = dyn_cast<RankedTensorType>(t))
      llvm::append_range(key, localType(rt, mesh.grid, coord).getShape());
  };
  for (Type t : func.getArgumentTypes())
    addType(t);
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      addType(t);
    if (auto boxing = dyn_cast<BoxingOp>(op)) {
      auto from = cast<RankedTensorType>(boxing.getInput().getType());
      auto to = cast<RankedTensorType>(boxing.getType());
      for (const BoxingStep &step : cheapestBoxing(
               getSbp(from).getEntries(), getSbp(to).getEntries(), mesh.grid,
               from.getShape(), elementBytes(from), model))
        llvm::append_range(key, localShape(from.getShape(), step.after,
                                           mesh.grid, coord));
    }
  });
  return key;
}

/// A scalar constant of `elementType`.
Value scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          type, b.getFloatAttr(elementType, value))));
}

/// `v` (of type `type`) all-reduced over each placement axis in `axes`.
Value allReduceOver(OpBuilder &b, Location loc, Value v,
                    RankedTensorType type, ArrayRef<unsigned> axes,
                    FlatSymbolRefAttr placement, bool max) {
  for (unsigned a : axes) {
    Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                         type.getElementType());
    v = AllReduceOp::create(b, loc, TypeRange{type}, v, init, placement,
                            b.getI64IntegerAttr(a),
                            b.getStringAttr(max ? "max" : "sum"))
            ->getResult(0);
  }
  return v;
}

/// The two-stage form of a normalisation whose normalised dimensions
/// [axis, last] are split over the placement axes `axes`: local statistics,
/// all-reduced (max then sum for softmax; sums for the norms), then the
/// elementwise rest on the local part. The op is replaced.
LogicalResult expandTwoStage(Operation *op, ArrayRef<unsigned> axes,
                             int64_t axis, int64_t last,
                             RankedTensorType inGlobal,
                             DenseMap<Value, RankedTensorType> &global,
                             FlatSymbolRefAttr placement) {
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
    return allReduceOver(b, loc, v, rt, axes, placement, max);
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
  global[y] = global.lookup(op->getResult(0));
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return success();
}

/// This rank's offset into dimension `dim` of a tensor of global type
/// `global`, as a 0-d tensor of `elementType`: a constant table with every
/// grid position's offset, cut down to this rank's entry by one shard_slice
/// per placement axis, so the program stays the same on every rank.
Value shardOffset(OpBuilder &b, Location loc, RankedTensorType global,
                  int64_t dim, const Mesh &mesh, Type elementType) {
  ArrayRef<SbpEntry> sbp = getSbp(global).getEntries();
  int64_t n = mesh.ranks.size();
  SmallVector<APInt> offsets;
  unsigned width = elementType.getIntOrFloatBitWidth();
  for (int64_t pos = 0; pos < n; ++pos) {
    SmallVector<int64_t> coord = gridCoordinate(mesh.grid, pos);
    int64_t extent = global.getDimSize(dim), offset = 0;
    for (auto [a, e] : llvm::enumerate(sbp))
      if (e.isSplit() && e.dim == dim) {
        offset += chunkOffset(extent, mesh.grid[a], coord[a]);
        extent = chunkSize(extent, mesh.grid[a], coord[a]);
      }
    offsets.push_back(APInt(width, offset, /*isSigned=*/true));
  }
  auto tableType = RankedTensorType::get(mesh.grid, elementType);
  Value v = ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(tableType, offsets)));
  SmallVector<int64_t> shape(mesh.grid);
  for (unsigned a = 0; a < mesh.grid.size(); ++a) {
    shape[a] = 1;
    auto type = RankedTensorType::get(shape, elementType);
    Value init = tensor::EmptyOp::create(b, loc, shape, elementType);
    v = ShardSliceOp::create(b, loc, TypeRange{type}, v, init, mesh.ref,
                             b.getI64IntegerAttr(a), b.getI64IntegerAttr(a))
            ->getResult(0);
  }
  return ReshapeOp::create(b, loc, RankedTensorType::get({}, elementType), v);
}

/// Vocabulary-parallel embedding: the table's rows are split, so each rank
/// shifts the indices by its offset, looks up the ones inside its rows and
/// gives zeros for the others; the results add up to the lookup (P).
void vocabParallelEmbedding(EmbeddingOp emb, RankedTensorType weightGlobal,
                            const Mesh &mesh,
                            DenseMap<Value, RankedTensorType> &global) {
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
  Value offset = shardOffset(b, loc, weightGlobal, 0, mesh, it);
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
  global[y] = global.lookup(emb.getResult());
  emb.getResult().replaceAllUsesWith(y);
  emb.erase();
}

/// Vocabulary-parallel cross-entropy: the classes are split over `axes`.
/// loss = log(sum exp(x - m)) + m - x[label] with m the global maximum; each
/// of m, the sum and the label's logit (found by the rank that holds it,
/// zeros elsewhere) is all-reduced, so every rank ends with the whole loss.
void vocabParallelCrossEntropy(CrossEntropyOp ce, RankedTensorType logitsGlobal,
                               ArrayRef<unsigned> axes, const Mesh &mesh,
                               DenseMap<Value, RankedTensorType> &global) {
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
    return allReduceOver(b, loc, v, kt, axes, mesh.ref, max);
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
  Value offset = shardOffset(b, loc, logitsGlobal, last, mesh, it);
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
  global[y] = global.lookup(ce.getResult());
  ce.getResult().replaceAllUsesWith(y);
  ce.erase();
}

/// Rewrites `func` (global, with encodings) into the program of the rank at
/// `coord`.
LogicalResult localize(func::FuncOp func, const Mesh &mesh,
                       const CostModel &model, ArrayRef<int64_t> coord) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  Block &body = func.getBody().front();
  DenseMap<Value, RankedTensorType> global;
  auto globalOf = [&](Value v) { return global.lookup(v); };
  auto retype = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return;
    global[v] = t;
    v.setType(localType(t, mesh.grid, coord));
  };

  for (BlockArgument arg : body.getArguments()) {
    if (isa<RankedTensorType>(arg.getType()) && getSbp(arg.getType()))
      func.setArgAttr(arg.getArgNumber(), "of.global",
                      TypeAttr::get(arg.getType()));
    retype(arg);
  }
  SmallVector<Type> globalResults(func.getResultTypes());

  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto boxing = dyn_cast<BoxingOp>(op)) {
      auto from = globalOf(boxing.getInput());
      auto to = cast<RankedTensorType>(boxing.getType());
      if (!from || !getSbp(from) || !getSbp(to))
        return boxing.emitError("boxing between values without "
                                "distributions cannot be partitioned");
      Value cur = boxing.getInput();
      b.setInsertionPoint(boxing);
      for (const BoxingStep &step : cheapestBoxing(
               getSbp(from).getEntries(), getSbp(to).getEntries(), mesh.grid,
               from.getShape(), elementBytes(from), model)) {
        auto outType = RankedTensorType::get(
            localShape(from.getShape(), step.after, mesh.grid, coord),
            from.getElementType());
        Location loc = boxing.getLoc();
        Value init = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                             outType.getElementType());
        IntegerAttr axis = b.getI64IntegerAttr(step.axis);
        StringAttr reduce = b.getStringAttr(step.max ? "max" : "sum");
        Operation *coll = nullptr;
        switch (step.kind) {
        case BoxingStep::AllReduce:
          coll = AllReduceOp::create(b, loc, TypeRange{outType}, cur, init,
                                     mesh.ref, axis, reduce);
          break;
        case BoxingStep::AllGather:
          coll = AllGatherOp::create(b, loc, TypeRange{outType}, cur, init,
                                     mesh.ref, axis,
                                     b.getI64IntegerAttr(step.dim));
          break;
        case BoxingStep::ReduceScatter:
          coll = ReduceScatterOp::create(b, loc, TypeRange{outType}, cur,
                                         init, mesh.ref, axis,
                                         b.getI64IntegerAttr(step.dim), reduce);
          break;
        case BoxingStep::AllToAll:
          coll = AllToAllOp::create(b, loc, TypeRange{outType}, cur, init,
                                    mesh.ref, axis,
                                    b.getI64IntegerAttr(step.dim),
                                    b.getI64IntegerAttr(step.dim2));
          break;
        case BoxingStep::Slice:
          coll = ShardSliceOp::create(b, loc, TypeRange{outType}, cur, init,
                                      mesh.ref, axis,
                                      b.getI64IntegerAttr(step.dim));
          break;
        case BoxingStep::ToPartial:
          coll = ToPartialOp::create(b, loc, TypeRange{outType}, cur, init,
                                     mesh.ref, axis);
          break;
        }
        cur = coll->getResult(0);
      }
      if (cur != boxing.getInput())
        global[cur] = to;
      boxing.getResult().replaceAllUsesWith(cur);
      boxing.erase();
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;

    // Operands' global distributions decide the local form of a few ops.
    auto splitOn = [&](Value v, int64_t dim) {
      RankedTensorType g = globalOf(v);
      SbpAttr sbp = g ? getSbp(g) : SbpAttr();
      return sbp && llvm::any_of(sbp.getEntries(), [&](const SbpEntry &e) {
               return e.isSplit() && e.dim == dim;
             });
    };
    for (Value r : op.getResults())
      retype(r);

    if (auto slice = dyn_cast<SliceOp>(op)) {
      // Split dimensions are sliced whole (the signature says so): their
      // limit is the local extent.
      SmallVector<int64_t> limits(slice.getLimits());
      auto localIn = cast<RankedTensorType>(slice.getInput().getType());
      for (int64_t d = 0, e = limits.size(); d < e; ++d)
        if (splitOn(slice.getInput(), d))
          limits[d] = localIn.getDimSize(d);
      slice.setLimits(limits);
      continue;
    }
    if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(op)) {
      Value input = op.getOperand(0);
      RankedTensorType inGlobal = globalOf(input);
      int64_t rank = inGlobal.getRank();
      int64_t axis = op.getAttrOfType<IntegerAttr>("axis").getInt();
      axis = axis < 0 ? axis + rank : axis;
      bool normalisesTail = isa<LayerNormOp, RmsNormOp>(op);
      int64_t last = normalisesTail ? rank - 1 : axis;
      // The placement axes that split a normalised dimension.
      SmallVector<unsigned> axes;
      for (auto [a, e] : llvm::enumerate(getSbp(inGlobal).getEntries()))
        if (e.isSplit() && e.dim >= axis && e.dim <= last)
          axes.push_back(a);
      if (axes.empty())
        continue;
      if (failed(expandTwoStage(&op, axes, axis, last, inGlobal, global,
                                mesh.ref)))
        return failure();
      continue;
    }
    if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      if (splitOn(emb.getWeight(), 0))
        vocabParallelEmbedding(emb, globalOf(emb.getWeight()), mesh, global);
      continue;
    }
    if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
      RankedTensorType logits = globalOf(ce.getLogits());
      SmallVector<unsigned> axes;
      for (auto [a, e] : llvm::enumerate(getSbp(logits).getEntries()))
        if (e.isSplit() && e.dim == logits.getRank() - 1)
          axes.push_back(a);
      if (!axes.empty())
        vocabParallelCrossEntropy(ce, logits, axes, mesh, global);
      continue;
    }
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      RankedTensorType in = globalOf(dropout.getInput());
      bool split = llvm::any_of(getSbp(in).getEntries(),
                                [](const SbpEntry &e) { return e.isSplit(); });
      if (!split)
        continue;
      // This shard's offsets in the global tensor, one per dimension.
      b.setInsertionPoint(dropout);
      Location loc = dropout.getLoc();
      Type i64 = b.getI64Type();
      auto one = RankedTensorType::get({1}, i64);
      SmallVector<Value> parts;
      for (int64_t d = 0; d < in.getRank(); ++d) {
        Value off;
        if (splitOn(dropout.getInput(), d))
          off = ReshapeOp::create(b, loc, one,
                                  shardOffset(b, loc, in, d, mesh, i64));
        else
          off = ConstantOp::create(
              b, loc, cast<ElementsAttr>(DenseElementsAttr::get(
                          one, APInt(64, 0))));
        parts.push_back(off);
      }
      Value offsets =
          parts.size() == 1
              ? parts.front()
              : ConcatOp::create(b, loc,
                                 RankedTensorType::get({in.getRank()}, i64),
                                 parts, b.getI64IntegerAttr(0))
                    .getResult();
      dropout.getOffsetsMutable().assign(offsets);
      dropout.setGlobalShape(in.getShape());
      continue;
    }
    if (auto mean = dyn_cast<ReduceMeanOp>(op)) {
      auto in = globalOf(mean.getInput());
      int64_t rank = in.getRank();
      bool splitReduced = false;
      double count = 1;
      for (int64_t a : mean.getAxes()) {
        int64_t d = a < 0 ? a + rank : a;
        splitReduced |= splitOn(mean.getInput(), d);
        count *= in.getDimSize(d);
      }
      if (!splitReduced)
        continue;
      // Each rank's sum over its rows divided by the global count: the
      // partial means add up to the mean.
      b.setInsertionPoint(mean);
      auto type = cast<RankedTensorType>(mean.getType());
      Value sum = ReduceSumOp::create(b, mean.getLoc(), type, mean.getInput(),
                                      mean.getAxesAttr(), mean.getKeepdimsAttr());
      auto scalar = RankedTensorType::get({}, type.getElementType());
      Value scale = ConstantOp::create(
          b, mean.getLoc(),
          cast<ElementsAttr>(DenseElementsAttr::get(
              scalar, b.getFloatAttr(type.getElementType(), 1.0 / count))));
      Value scaled = MulOp::create(b, mean.getLoc(), type, sum, scale);
      global[scaled] = globalOf(mean.getResult());
      mean.getResult().replaceAllUsesWith(scaled);
      mean.erase();
      continue;
    }
  }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, t] : llvm::enumerate(globalResults))
    if (getSbp(t))
      func.setResultAttr(i, "of.global", TypeAttr::get(t));
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                 ret.getOperandTypes()));
  return success();
}

struct PartitionPass : of::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool ok;
    CostModel model = makeCostModel(interconnect, machineFile, module, ok);
    if (!ok)
      return signalPassFailure();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal())
        continue;
      FailureOr<std::optional<Mesh>> found = findPlacement(func);
      if (failed(found))
        return signalPassFailure();
      if (!*found)
        continue;
      const Mesh &mesh = **found;
      if (!func.getBody().hasOneBlock() || failed(checkSignatures(func, mesh)))
        return signalPassFailure();

      // Roles: grid positions with the same local shapes everywhere.
      int64_t n = mesh.ranks.size();
      llvm::MapVector<SmallVector<int64_t>, SmallVector<int64_t>> roles;
      for (int64_t pos = 0; pos < n; ++pos)
        roles[roleKey(func, mesh, model, gridCoordinate(mesh.grid, pos))]
            .push_back(pos);

      OpBuilder b(func);
      b.setInsertionPointAfter(func);
      StringAttr entry = func.getSymNameAttr();
      unsigned index = 0;
      SmallVector<std::pair<func::FuncOp, int64_t>> programs;
      for (auto &[key, positions] : roles) {
        func::FuncOp program = func;
        if (index > 0) {
          program = cast<func::FuncOp>(b.clone(*func));
          program.setSymName((entry.getValue() + "__role" +
                              std::to_string(index)).str());
        }
        SmallVector<int64_t> ranks;
        for (int64_t pos : positions)
          ranks.push_back(mesh.ranks[pos]);
        program->setAttr("of.entry", entry);
        program->setAttr("of.ranks", b.getDenseI64ArrayAttr(ranks));
        programs.push_back({program, positions.front()});
        ++index;
      }
      // Clones first (they copy the global form), then the original.
      for (auto &[program, pos] : llvm::reverse(programs))
        if (failed(
                localize(program, mesh, model, gridCoordinate(mesh.grid, pos))))
          return signalPassFailure();
    }
  }
};

} // namespace
