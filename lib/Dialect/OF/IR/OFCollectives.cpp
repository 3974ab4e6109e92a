//===- OFCollectives.cpp - Verifiers of the local collectives ------------===//
//
// The per-rank collectives and point-to-point transfers that --of-partition
// emits: their types, groups and balanced chunk sizes, and their effects.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::of;

namespace {
enum class ChunkRule { Same, Gather, Scatter, AllToAll };

/// Shared checks of the local collectives: types (tensor or memref, one
/// result of init's type on tensors, none on memrefs) and, once the group
/// size is known, that the chunk sizes are balanced chunks.
LogicalResult verifyCollectiveTypes(Operation *op, Value input, Value init) {
  auto in = cast<ShapedType>(input.getType());
  auto out = cast<ShapedType>(init.getType());
  if (isa<TensorType>(in) != isa<TensorType>(out))
    return op->emitOpError("input and init must both be tensors or memrefs");
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("input and init element types differ: ")
           << in.getElementType() << " vs " << out.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError("input and init ranks differ");
  if (isa<TensorType>(in)) {
    if (op->getNumResults() != 1 || op->getResult(0).getType() != out)
      return op->emitOpError("on tensors has one result of init's type");
  } else if (op->getNumResults() != 0) {
    return op->emitOpError("on memrefs has no result");
  }
  return success();
}

LogicalResult verifyCollectiveGroup(Operation *op,
                                    SymbolTableCollection &tables,
                                    FlatSymbolRefAttr placement, int64_t axis,
                                    Value input, Value init, ChunkRule rule,
                                    int64_t dim, int64_t dim2 = 0,
                                    ReduceKind reduce = ReduceKind::Sum) {
  auto p = tables.lookupNearestSymbolFrom<PlacementOp>(op, placement);
  if (!p)
    return op->emitOpError("refers to unknown placement ") << placement;
  SmallVector<int64_t> grid = p.getGridShape();
  if (axis < 0 || axis >= static_cast<int64_t>(grid.size()))
    return op->emitOpError("axis ")
           << axis << " is not an axis of the " << grid.size()
           << "-D placement " << placement;
  int64_t parts = grid[axis];
  ArrayRef<int64_t> in = cast<ShapedType>(input.getType()).getShape();
  ArrayRef<int64_t> out = cast<ShapedType>(init.getType()).getShape();
  int64_t rank = in.size();
  auto checkDim = [&](int64_t d) -> LogicalResult {
    if (d < 0 || d >= rank)
      return op->emitOpError("dimension ") << d << " is out of range";
    return success();
  };
  auto sameExcept = [&](int64_t a, int64_t b) {
    for (int64_t d = 0; d < rank; ++d)
      if (d != a && d != b && in[d] != out[d])
        return false;
    return true;
  };
  switch (rule) {
  case ChunkRule::Same:
    if (in != out)
      return op->emitOpError("input and init shapes differ");
    return success();
  case ChunkRule::Gather:
    if (failed(checkDim(dim)))
      return failure();
    if (!sameExcept(dim, dim) || !isChunkSize(in[dim], out[dim], parts))
      return op->emitOpError("input extent ")
             << in[dim] << " of dimension " << dim
             << " is not a balanced chunk of " << out[dim] << " over " << parts
             << " ranks";
    return success();
  case ChunkRule::Scatter:
    if (failed(checkDim(dim)))
      return failure();
    if (!sameExcept(dim, dim) || !isChunkSize(out[dim], in[dim], parts))
      return op->emitOpError("result extent ")
             << out[dim] << " of dimension " << dim
             << " is not a balanced chunk of " << in[dim] << " over " << parts
             << " ranks";
    return success();
  case ChunkRule::AllToAll:
    if (failed(checkDim(dim)) || failed(checkDim(dim2)))
      return failure();
    if (dim == dim2)
      return op->emitOpError("gather_dim and scatter_dim must differ");
    if (!sameExcept(dim, dim2) || !isChunkSize(in[dim], out[dim], parts) ||
        !isChunkSize(out[dim2], in[dim2], parts))
      return op->emitOpError("shapes are not a re-split from dimension ")
             << dim << " to " << dim2 << " over " << parts << " ranks";
    return success();
  }
  llvm_unreachable("chunk rule");
}

void collectiveEffects(
    Operation *op, Value input, OpOperand &init,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemRefType>(input.getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &op->getOpOperand(0),
                         SideEffects::DefaultResource::get());
  if (isa<MemRefType>(init.get().getType()))
    effects.emplace_back(MemoryEffects::Write::get(), &init,
                         SideEffects::DefaultResource::get());
  // Every member of the group must take part, even one that does not use
  // the result (a pipeline stage's source settling its partial sums before
  // other ranks send): the collective is never dropped or reordered.
  if (!isa<ShardSliceOp, ToPartialOp>(op))
    effects.emplace_back(MemoryEffects::Write::get(),
                         SideEffects::DefaultResource::get());
}
} // namespace

#define OF_COLLECTIVE_COMMON(Op)                                               \
  LogicalResult Op::verify() {                                                 \
    return verifyCollectiveTypes(*this, getInput(), getInit());                \
  }                                                                            \
  void Op::getEffects(                                                         \
      SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>      \
          &effects) {                                                          \
    collectiveEffects(*this, getInput(), getInitMutable(), effects);           \
  }
OF_COLLECTIVE_COMMON(AllReduceOp)
OF_COLLECTIVE_COMMON(AllGatherOp)
OF_COLLECTIVE_COMMON(ReduceScatterOp)
OF_COLLECTIVE_COMMON(AllToAllOp)
OF_COLLECTIVE_COMMON(ShardSliceOp)
OF_COLLECTIVE_COMMON(ToPartialOp)
#undef OF_COLLECTIVE_COMMON

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::Same, 0, 0,
                               getReduce());
}
LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::Gather,
                               getDim());
}
LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::Scatter,
                               getDim(), 0, getReduce());
}
LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::AllToAll,
                               getGatherDim(), getScatterDim());
}
LogicalResult ShardSliceOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::Scatter,
                               getDim());
}
LogicalResult ToPartialOp::verifySymbolUses(SymbolTableCollection &tables) {
  return verifyCollectiveGroup(*this, tables, getPlacementAttr(), getAxis(),
                               getInput(), getInit(), ChunkRule::Same, 0);
}

//===----------------------------------------------------------------------===//
// Point-to-point transfers
//===----------------------------------------------------------------------===//

LogicalResult SendOp::verify() {
  if (static_cast<int64_t>(getPeer()) < 0)
    return emitOpError("peer must be a world rank (>= 0)");
  return success();
}

LogicalResult RecvOp::verify() {
  if (static_cast<int64_t>(getPeer()) < 0)
    return emitOpError("peer must be a world rank (>= 0)");
  Type init = getInit().getType();
  if (isa<TensorType>(init)) {
    if (getNumResults() != 1 || (*this)->getResult(0).getType() != init)
      return emitOpError("on tensors has one result of init's type");
  } else if (getNumResults() != 0) {
    return emitOpError("on memrefs has no result");
  }
  return success();
}

/// A transfer talks to another rank: the write on the default resource
/// keeps it (and its place among the other transfers) through every pass.
void SendOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemRefType>(getInput().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getInputMutable(),
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

void RecvOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemRefType>(getInit().getType()))
    effects.emplace_back(MemoryEffects::Write::get(), &getInitMutable(),
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}
