//===- Partition.cpp - Global programs to per-rank programs ---------------===//
//
// --of-partition: after --of-insert-boxing every op's operands and results
// form a legal signature, so each op computes its local results from its
// local operands; only the types change (and a few ops whose local form
// differs). Ranks are grouped into roles by their local shapes, one function
// per role; boxings become the per-axis collectives of planBoxing.
//
// A function over several placements (pipeline stages) gives each rank the
// ops of the placements it belongs to; a value of another placement is an
// empty tensor<0xT> there. A boxing between placements becomes sends and
// receives of the intersections of the source's and the target's shards
// (planTransfers), in one order that every rank follows.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/CostModel.h"
#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/LocalForms.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::of {
#define GEN_PASS_DEF_PARTITIONPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
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

/// The type a rank that is not on a value's placement holds in its place.
RankedTensorType absentType(RankedTensorType global) {
  return RankedTensorType::get({0}, global.getElementType());
}

/// The placement an op runs on: that of its (distributed) results.
const Mesh *placementOf(Operation *op, const FuncPlacements &placements) {
  for (Type t : op->getResultTypes())
    if (const Mesh *p = placements.of(t))
      return p;
  return nullptr;
}

/// The local type of a value of type `t` on world rank `rank`.
Type localTypeOn(Type t, const FuncPlacements &placements, int64_t rank) {
  auto rt = dyn_cast<RankedTensorType>(t);
  const Mesh *p = rt ? placements.of(rt) : nullptr;
  if (!p)
    return t;
  std::optional<SmallVector<int64_t>> coord = p->coordinateOf(rank);
  return coord ? localType(rt, p->grid, *coord) : absentType(rt);
}

/// Checks that every op's operand and result distributions form one of its
/// nd signatures, so that computing it locally is right.
LogicalResult checkSignatures(func::FuncOp func,
                              const FuncPlacements &placements) {
  auto result = func.walk([&](Operation *op) -> WalkResult {
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp) {
      if (isa<BoxingOp, func::ReturnOp, func::FuncOp>(op))
        return WalkResult::advance();
      op->emitError("op has no SBP signatures and cannot be partitioned");
      return WalkResult::interrupt();
    }
    const Mesh *mesh = placementOf(op, placements);
    if (!mesh) {
      op->emitError("op has no distributed result; run --of-propagate-sbp "
                    "first");
      return WalkResult::interrupt();
    }
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (SbpAttr sbp = getSbp(v.getType());
          sbp && sbp.getPlacement() != mesh->ref) {
        op->emitError("operand ")
            << i << " is on placement " << sbp.getPlacement()
            << " but the op runs on " << mesh->ref
            << "; run --of-insert-boxing first";
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
    for (unsigned a = 0; a < mesh->grid.size(); ++a) {
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

//===----------------------------------------------------------------------===//
// Boxing between placements
//===----------------------------------------------------------------------===//

/// A box of a global tensor: offsets and sizes per dimension.
struct Box {
  SmallVector<int64_t> offsets, sizes;
  bool operator==(const Box &o) const {
    return offsets == o.offsets && sizes == o.sizes;
  }
};

/// The part of a tensor of global `shape` that grid coordinate `coord`
/// holds under `nd`; a partial axis holds the whole extent (of addends).
Box boxOf(ArrayRef<int64_t> shape, ArrayRef<SbpEntry> nd,
          ArrayRef<int64_t> grid, ArrayRef<int64_t> coord) {
  Box box{SmallVector<int64_t>(shape.size(), 0), SmallVector<int64_t>(shape)};
  for (auto [a, e] : llvm::enumerate(nd))
    if (e.isSplit()) {
      int64_t extent = box.sizes[e.dim];
      box.offsets[e.dim] += chunkOffset(extent, grid[a], coord[a]);
      box.sizes[e.dim] = chunkSize(extent, grid[a], coord[a]);
    }
  return box;
}

/// The intersection of two boxes, or nullopt when it is empty. (A box of a
/// 0-d tensor is the whole scalar.)
std::optional<Box> intersect(const Box &x, const Box &y) {
  Box out;
  for (size_t d = 0; d < x.sizes.size(); ++d) {
    int64_t lo = std::max(x.offsets[d], y.offsets[d]);
    int64_t hi = std::min(x.offsets[d] + x.sizes[d], y.offsets[d] + y.sizes[d]);
    if (hi <= lo)
      return std::nullopt;
    out.offsets.push_back(lo);
    out.sizes.push_back(hi - lo);
  }
  return out;
}

/// One slice that moves from world rank `src` to `dst` (the same rank: a
/// local copy).
struct Transfer {
  int64_t src, dst;
  Box box;
};

/// How a boxing from `from` (distribution `fromNd`) to another placement
/// `to` (`toNd`) moves the data. The source first settles its partial axes
/// on its own placement (to `settled`, P and P(max) become B), so every
/// source rank holds plain values. Then each target rank that needs values
/// (all of them, except a P target's ranks off coordinate 0 on a P axis,
/// which hold zeros) receives, for each distinct source shard, the part it
/// overlaps, from a rank holding that shard: itself if it can, otherwise
/// the replicas take turns. A P(max) target axis gets the values on every
/// rank (max of equal values). The transfers are ordered by target rank
/// position, then source shard; every rank performs its own in this one
/// order, so blocking sends and receives cannot deadlock.
struct TransferPlan {
  NdSbp settled;
  SmallVector<Transfer> transfers;
  SmallVector<int64_t> zeroRanks;
};

TransferPlan planTransfers(ArrayRef<int64_t> shape, const Mesh &from,
                           ArrayRef<SbpEntry> fromNd, const Mesh &to,
                           ArrayRef<SbpEntry> toNd) {
  TransferPlan plan;
  plan.settled = of::settled(fromNd);
  // Distinct source shards, each with the ranks that hold it.
  SmallVector<std::pair<Box, SmallVector<int64_t>>> shards;
  for (auto [pos, rank] : llvm::enumerate(from.ranks)) {
    Box box =
        boxOf(shape, plan.settled, from.grid, gridCoordinate(from.grid, pos));
    auto it = llvm::find_if(shards, [&](auto &s) { return s.first == box; });
    if (it == shards.end())
      shards.push_back({box, {rank}});
    else
      it->second.push_back(rank);
  }
  for (auto [pos, rank] : llvm::enumerate(to.ranks)) {
    SmallVector<int64_t> coord = gridCoordinate(to.grid, pos);
    bool zero = false;
    for (auto [a, e] : llvm::enumerate(toNd))
      zero |= e.kind == SbpKind::PartialSum && coord[a] != 0;
    if (zero) {
      plan.zeroRanks.push_back(rank);
      continue;
    }
    Box need = boxOf(shape, toNd, to.grid, coord);
    for (auto &[box, holders] : shards) {
      std::optional<Box> part = intersect(need, box);
      if (!part)
        continue;
      int64_t src = llvm::is_contained(holders, rank)
                        ? rank
                        : holders[pos % holders.size()];
      plan.transfers.push_back({src, rank, *part});
    }
  }
  return plan;
}

/// The local shapes a rank sees: every value and every boxing step, and
/// the transfers it takes part in. Ranks with equal keys run the same
/// program.
SmallVector<int64_t> roleKey(func::FuncOp func,
                             const FuncPlacements &placements,
                             const CostModel &model, int64_t rank) {
  SmallVector<int64_t> key;
  // Which placements the rank is on (an absent value and an empty shard
  // have the same shape).
  for (const Mesh &p : placements.list)
    key.push_back(p.coordinateOf(rank).has_value());
  auto addType = [&](Type t) {
    if (auto rt = dyn_cast<RankedTensorType>(t)) {
      auto local = cast<RankedTensorType>(localTypeOn(rt, placements, rank));
      key.push_back(local.getRank());
      llvm::append_range(key, local.getShape());
    }
  };
  // Boxing steps on `mesh` from `fromNd` to `toNd` as this rank runs them.
  auto addSteps = [&](RankedTensorType from, ArrayRef<SbpEntry> fromNd,
                      ArrayRef<SbpEntry> toNd, const Mesh &mesh) {
    std::optional<SmallVector<int64_t>> coord = mesh.coordinateOf(rank);
    if (!coord)
      return;
    for (const BoxingStep &step :
         cheapestBoxing(fromNd, toNd, mesh.grid, from.getShape(),
                        elementBytes(from), model))
      llvm::append_range(
          key, localShape(from.getShape(), step.after, mesh.grid, *coord));
  };
  for (Type t : func.getArgumentTypes())
    addType(t);
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      addType(t);
    auto boxing = dyn_cast<BoxingOp>(op);
    if (!boxing)
      return;
    auto from = cast<RankedTensorType>(boxing.getInput().getType());
    auto to = cast<RankedTensorType>(boxing.getType());
    const Mesh *src = placements.of(from), *dst = placements.of(to);
    if (!src || !dst)
      return;
    if (src == dst) {
      addSteps(from, getSbp(from).getEntries(), getSbp(to).getEntries(), *src);
      return;
    }
    TransferPlan plan =
        planTransfers(from.getShape(), *src, getSbp(from).getEntries(), *dst,
                      getSbp(to).getEntries());
    addSteps(from, getSbp(from).getEntries(), plan.settled, *src);
    key.push_back(llvm::is_contained(plan.zeroRanks, rank));
    // A transfer names its peer as a world rank, so a rank that transfers
    // runs a program of its own.
    for (const Transfer &t : plan.transfers) {
      if (t.src != rank && t.dst != rank)
        continue;
      key.push_back(rank);
      key.append({t.src == rank ? t.dst : -1, t.dst == rank ? t.src : -1});
      llvm::append_range(key, t.box.offsets);
      llvm::append_range(key, t.box.sizes);
    }
  });
  return key;
}

/// `cur` (this rank's part of a value of global type `from`, distributed as
/// `fromNd` on `mesh`, where this rank is at `coord`) boxed to `toNd`: the
/// collectives of cheapestBoxing. Maps each new value to its global type.
Value emitBoxingSteps(OpBuilder &b, Location loc, Value cur,
                      RankedTensorType from, ArrayRef<SbpEntry> fromNd,
                      ArrayRef<SbpEntry> toNd, const Mesh &mesh,
                      ArrayRef<int64_t> coord, const CostModel &model,
                      DenseMap<Value, RankedTensorType> &global) {
  for (const BoxingStep &step :
       cheapestBoxing(fromNd, toNd, mesh.grid, from.getShape(),
                      elementBytes(from), model)) {
    auto outType = RankedTensorType::get(
        localShape(from.getShape(), step.after, mesh.grid, coord),
        from.getElementType());
    Value init = tensor::EmptyOp::create(b, loc, outType.getShape(),
                                         outType.getElementType());
    IntegerAttr axis = b.getI64IntegerAttr(step.axis);
    auto reduce = ReduceKindAttr::get(
        b.getContext(), step.max ? ReduceKind::Max : ReduceKind::Sum);
    Operation *coll = nullptr;
    switch (step.kind) {
    case BoxingStep::AllReduce:
      coll = AllReduceOp::create(b, loc, TypeRange{outType}, cur, init,
                                 mesh.ref, axis, reduce);
      break;
    case BoxingStep::AllGather:
      coll = AllGatherOp::create(b, loc, TypeRange{outType}, cur, init,
                                 mesh.ref, axis, b.getI64IntegerAttr(step.dim));
      break;
    case BoxingStep::ReduceScatter:
      coll = ReduceScatterOp::create(b, loc, TypeRange{outType}, cur, init,
                                     mesh.ref, axis,
                                     b.getI64IntegerAttr(step.dim), reduce);
      break;
    case BoxingStep::AllToAll:
      coll = AllToAllOp::create(b, loc, TypeRange{outType}, cur, init, mesh.ref,
                                axis, b.getI64IntegerAttr(step.dim),
                                b.getI64IntegerAttr(step.dim2));
      break;
    case BoxingStep::Slice:
      coll =
          ShardSliceOp::create(b, loc, TypeRange{outType}, cur, init, mesh.ref,
                               axis, b.getI64IntegerAttr(step.dim));
      break;
    case BoxingStep::ToPartial:
      coll = ToPartialOp::create(b, loc, TypeRange{outType}, cur, init,
                                 mesh.ref, axis);
      break;
    }
    cur = coll->getResult(0);
    global[cur] = RankedTensorType::get(
        from.getShape(), from.getElementType(),
        SbpAttr::get(b.getContext(), mesh.ref, step.after));
  }
  return cur;
}

/// The local form on world rank `rank` of a boxing between placements:
/// the source settles its partial axes, then this rank's transfers of
/// planTransfers in their order: a send of each slice it gives, a receive
/// of each slice it gets (inserted at its place in the local result), a
/// copy where it gives to itself. Returns the local result (null when the
/// rank is not on the target placement).
Value localizeTransfer(OpBuilder &b, BoxingOp boxing, RankedTensorType from,
                       const Mesh &src, const Mesh &dst, int64_t rank,
                       const CostModel &model,
                       DenseMap<Value, RankedTensorType> &global) {
  Location loc = boxing.getLoc();
  auto to = cast<RankedTensorType>(boxing.getType());
  ArrayRef<SbpEntry> fromNd = getSbp(from).getEntries();
  ArrayRef<SbpEntry> toNd = getSbp(to).getEntries();
  TransferPlan plan = planTransfers(from.getShape(), src, fromNd, dst, toNd);
  Value source;
  Box sourceBox;
  if (std::optional<SmallVector<int64_t>> coord = src.coordinateOf(rank)) {
    source = emitBoxingSteps(b, loc, boxing.getInput(), from, fromNd,
                             plan.settled, src, *coord, model, global);
    sourceBox = boxOf(from.getShape(), plan.settled, src.grid, *coord);
  }
  // The local result: zeros on a P target's ranks off coordinate 0, else
  // filled by the transfers (created at the first one that does not cover
  // it whole).
  Value result;
  Box resultBox;
  RankedTensorType resultType;
  std::optional<SmallVector<int64_t>> dstCoord = dst.coordinateOf(rank);
  if (dstCoord) {
    resultType = localType(to, dst.grid, *dstCoord);
    if (llvm::is_contained(plan.zeroRanks, rank))
      result = ConstantOp::create(
          b, loc, cast<ElementsAttr>(b.getZeroAttr(resultType)));
    resultBox = boxOf(to.getShape(), toNd, dst.grid, *dstCoord);
  }
  auto emptyResult = [&] {
    return tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                   resultType.getElementType());
  };
  MLIRContext *ctx = b.getContext();
  auto relative = [&](const Box &box, const Box &within) {
    SmallVector<int64_t> offsets;
    for (auto [o, w] : llvm::zip(box.offsets, within.offsets))
      offsets.push_back(o - w);
    return getAsIndexOpFoldResult(ctx, offsets);
  };
  auto sizes = [&](const Box &box) {
    return getAsIndexOpFoldResult(ctx, box.sizes);
  };
  auto ones = [&](const Box &box) {
    return getAsIndexOpFoldResult(ctx,
                                  SmallVector<int64_t>(box.sizes.size(), 1));
  };
  auto whole = [&](const Box &box, Value v) {
    return box.sizes == cast<RankedTensorType>(v.getType()).getShape();
  };
  Type et = from.getElementType();
  for (const Transfer &t : plan.transfers) {
    if (t.src != rank && t.dst != rank)
      continue;
    Value piece;
    if (t.src == rank) {
      piece = source;
      if (!whole(t.box, source))
        piece = tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get(t.box.sizes, et), source,
            relative(t.box, sourceBox), sizes(t.box), ones(t.box));
      if (t.dst != rank) {
        SendOp::create(b, loc, piece, t.dst);
        continue;
      }
    } else {
      Value init = tensor::EmptyOp::create(b, loc, t.box.sizes, et);
      piece = RecvOp::create(b, loc, TypeRange{init.getType()}, init, t.src)
                  ->getResult(0);
    }
    if (t.box.sizes == resultType.getShape()) {
      result = piece;
      continue;
    }
    if (!result)
      result = emptyResult();
    result = tensor::InsertSliceOp::create(b, loc, piece, result,
                                           relative(t.box, resultBox),
                                           sizes(t.box), ones(t.box));
  }
  if (dstCoord && !result) // nothing to receive: an empty tensor
    result = emptyResult();
  return result;
}

/// Rewrites `func` (global, with encodings) into the program of world rank
/// `rank`: the ops of the placements it belongs to, on local types.
LogicalResult localize(func::FuncOp func, const FuncPlacements &placements,
                       const CostModel &model, int64_t rank) {
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
    v.setType(localTypeOn(t, placements, rank));
  };

  for (BlockArgument arg : body.getArguments()) {
    if (isa<RankedTensorType>(arg.getType()) && getSbp(arg.getType()))
      func.setArgAttr(arg.getArgNumber(),
                      OFDialect::GlobalAttrHelper::getNameStr(),
                      TypeAttr::get(arg.getType()));
    retype(arg);
  }
  SmallVector<Type> globalResults(func.getResultTypes());
  // Ops of placements this rank is not on; erased at the end.
  SmallVector<Operation *> elsewhere;
  // Boxings whose local result is their input, folded at the end.
  SmallVector<Operation *> aliases;

  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (auto boxing = dyn_cast<BoxingOp>(op)) {
      auto from = globalOf(boxing.getInput());
      auto to = cast<RankedTensorType>(boxing.getType());
      if (!from || !getSbp(from) || !getSbp(to))
        return boxing.emitError("boxing between values without "
                                "distributions cannot be partitioned");
      const Mesh *src = placements.of(from), *dst = placements.of(to);
      b.setInsertionPoint(boxing);
      Value cur;
      if (src != dst) {
        cur =
            localizeTransfer(b, boxing, from, *src, *dst, rank, model, global);
        if (!cur) { // this rank is not on the target placement
          retype(boxing.getResult());
          elsewhere.push_back(boxing);
          continue;
        }
      } else {
        std::optional<SmallVector<int64_t>> coord = src->coordinateOf(rank);
        if (!coord) {
          retype(boxing.getResult());
          elsewhere.push_back(boxing);
          continue;
        }
        cur =
            emitBoxingSteps(b, boxing.getLoc(), boxing.getInput(), from,
                            getSbp(from).getEntries(), getSbp(to).getEntries(),
                            *src, *coord, model, global);
      }
      // The boxing's result is another value than its input (perhaps on
      // another placement) even where this rank's data is the same: an
      // alias keeps their global types apart until the end.
      if (cur == boxing.getInput() && from != to) {
        cur = UnrealizedConversionCastOp::create(b, boxing.getLoc(),
                                                 cur.getType(), cur)
                  .getResult(0);
        aliases.push_back(cur.getDefiningOp());
      }
      global[cur] = to;
      boxing.getResult().replaceAllUsesWith(cur);
      boxing.erase();
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;

    const Mesh *where = placementOf(&op, placements);
    if (!where)
      return op.emitError("op has no distributed result and cannot be "
                          "partitioned");
    const Mesh &mesh = *where;
    for (Value r : op.getResults())
      retype(r);
    if (!mesh.coordinateOf(rank)) {
      elsewhere.push_back(&op);
      continue;
    }

    // The op's per-rank form (the ops' own, OFLocalForms.cpp).
    if (auto sbpOp = dyn_cast<SbpOpInterface>(op)) {
      LocalizeContext context(global, mesh.ref, mesh.grid);
      if (failed(sbpOp.localize(context)))
        return failure();
    }
  }

  for (Operation *alias : aliases) {
    alias->getResult(0).replaceAllUsesWith(alias->getOperand(0));
    alias->erase();
  }
  // Results computed elsewhere are empty here; then the ops of other
  // placements go, users first.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  for (OpOperand &operand : ret->getOpOperands())
    if (Operation *def = operand.get().getDefiningOp();
        def && llvm::is_contained(elsewhere, def)) {
      auto type = cast<RankedTensorType>(operand.get().getType());
      operand.set(tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                          type.getElementType()));
    }
  for (Operation *op : llvm::reverse(elsewhere)) {
    if (!op->use_empty())
      return op->emitError("a value of a placement that rank ")
             << rank << " is not on is used there";
    op->erase();
  }
  for (auto [i, t] : llvm::enumerate(globalResults))
    if (getSbp(t))
      func.setResultAttr(i, OFDialect::GlobalAttrHelper::getNameStr(),
                         TypeAttr::get(t));
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
      FailureOr<FuncPlacements> found = collectPlacements(func);
      if (failed(found))
        return signalPassFailure();
      if (found->list.empty())
        continue;
      const FuncPlacements &placements = *found;
      if (!func.getBody().hasOneBlock() ||
          failed(checkSignatures(func, placements)))
        return signalPassFailure();

      // Every rank of every placement, in order of first appearance.
      // (A set for membership: a search of the list made 2^16 ranks take
      // 3 s and 2^20 minutes.)
      SmallVector<int64_t> worldRanks;
      llvm::DenseSet<int64_t> seen;
      for (const Mesh &p : placements.list)
        for (int64_t r : p.ranks)
          if (seen.insert(r).second)
            worldRanks.push_back(r);
      // Roles: ranks with the same local shapes and transfers everywhere.
      llvm::MapVector<SmallVector<int64_t>, SmallVector<int64_t>> roles;
      for (int64_t r : worldRanks)
        roles[roleKey(func, placements, model, r)].push_back(r);

      OpBuilder b(func);
      b.setInsertionPointAfter(func);
      StringAttr entry = func.getSymNameAttr();
      unsigned index = 0;
      SmallVector<std::pair<func::FuncOp, int64_t>> programs;
      for (auto &[key, ranks] : roles) {
        func::FuncOp program = func;
        if (index > 0) {
          program = cast<func::FuncOp>(b.clone(*func));
          program.setSymName((entry.getValue() + "__role" +
                              std::to_string(index)).str());
        }
        program->setAttr(OFDialect::EntryAttrHelper::getNameStr(), entry);
        program->setAttr(OFDialect::RanksAttrHelper::getNameStr(),
                         b.getDenseI64ArrayAttr(ranks));
        programs.push_back({program, ranks.front()});
        ++index;
      }
      // Clones first (they copy the global form), then the original.
      for (auto &[program, rank] : llvm::reverse(programs))
        if (failed(localize(program, placements, model, rank)))
          return signalPassFailure();
    }
  }
};

} // namespace
