//===- OFSbp.cpp - SBP signatures of every op ----------------------------===//
//
// The single source of truth for how each op of the dialect can be
// distributed (SbpOpInterface). Boxing plans and the cost model that choose
// among the signatures are in lib/Dialect/OF/Analysis.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/Sbp.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::of;

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

std::string of::str(ArrayRef<SbpEntry> sbp) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(sbp, os);
  os << "]";
  return s;
}

std::string SbpSignature::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(operands, os);
  os << (operands.empty() ? "-> " : " -> ");
  llvm::interleaveComma(results, os);
  return s;
}

SmallVector<int64_t> of::localShape(ArrayRef<int64_t> shape,
                                    ArrayRef<SbpEntry> sbp,
                                    ArrayRef<int64_t> grid,
                                    ArrayRef<int64_t> coord) {
  SmallVector<int64_t> local(shape);
  for (auto [axis, entry] : llvm::enumerate(sbp))
    if (entry.isSplit())
      local[entry.dim] =
          chunkSize(local[entry.dim], grid[axis], coord[axis]);
  return local;
}

SmallVector<int64_t> of::gridCoordinate(ArrayRef<int64_t> grid,
                                        int64_t index) {
  SmallVector<int64_t> coord(grid.size());
  for (int64_t a = static_cast<int64_t>(grid.size()) - 1; a >= 0; --a) {
    coord[a] = index % grid[a];
    index /= grid[a];
  }
  return coord;
}

bool of::isValidSbp(ArrayRef<SbpEntry> sbp, int64_t rank, size_t gridRank,
                    std::string &why) {
  if (sbp.size() != gridRank) {
    why = "has " + std::to_string(sbp.size()) + " SBP entries for a " +
          std::to_string(gridRank) + "-D placement";
    return false;
  }
  for (const SbpEntry &e : sbp)
    if (e.isSplit() && (e.dim < 0 || e.dim >= rank)) {
      why = e.str() + " splits dimension " + std::to_string(e.dim) +
            " of a rank-" + std::to_string(rank) + " tensor";
      return false;
    }
  return true;
}

static int64_t numElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasStaticShape() ? shaped.getNumElements() : 1;
}

double of::defaultSbpFlops(Operation *op) {
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = lhs.getDimSize(lhs.getRank() - (mm.getTransposeA() ? 2 : 1));
    return 2.0 * numElements(mm.getType()) * k;
  }
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    auto w = cast<RankedTensorType>(conv.getWeight().getType());
    return 2.0 * numElements(conv.getType()) * w.getDimSize(1) *
           w.getDimSize(2) * w.getDimSize(3);
  }
  // The convolution's gradients do its multiply-adds again: every element
  // of the result's gradient meets one filter's C / groups x KH x KW taps.
  if (auto dx = dyn_cast<Conv2DGradInputOp>(op)) {
    auto w = cast<RankedTensorType>(dx.getWeight().getType());
    return 2.0 * numElements(dx.getGrad().getType()) * w.getDimSize(1) *
           w.getDimSize(2) * w.getDimSize(3);
  }
  if (auto dw = dyn_cast<Conv2DGradFilterOp>(op)) {
    auto w = cast<RankedTensorType>(dw.getType());
    return 2.0 * numElements(dw.getGrad().getType()) * w.getDimSize(1) *
           w.getDimSize(2) * w.getDimSize(3);
  }
  double elements = 0;
  for (Value v : op->getOperands())
    elements = std::max<double>(elements, numElements(v.getType()));
  for (Value v : op->getResults())
    elements = std::max<double>(elements, numElements(v.getType()));
  return elements;
}

//===----------------------------------------------------------------------===//
// Signature helpers
//===----------------------------------------------------------------------===//

namespace {
using Sigs = SmallVectorImpl<SbpSignature>;
const SbpEntry kB = SbpEntry::broadcast();
const SbpEntry kP = SbpEntry::partialSum();
const SbpEntry kPMax = SbpEntry::partialMax();
SbpEntry S(int64_t d) { return SbpEntry::split(d); }

void add(Sigs &sigs, ArrayRef<SbpEntry> operands, ArrayRef<SbpEntry> results) {
  SbpSignature sig;
  sig.operands.assign(operands.begin(), operands.end());
  sig.results.assign(results.begin(), results.end());
  if (!llvm::is_contained(sigs, sig))
    sigs.push_back(std::move(sig));
}

/// Every operand and result gets `e`.
void addUniform(Operation *op, Sigs &sigs, SbpEntry e) {
  SmallVector<SbpEntry> ins(op->getNumOperands(), e);
  SmallVector<SbpEntry> outs(op->getNumResults(), e);
  add(sigs, ins, outs);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

/// The entry that operand `v` needs when a NumPy-broadcasting elementwise
/// op's result is split on dimension `k` (of `resultShape`): the aligned
/// dimension, or B when `v` lacks it or stretches it from size 1.
SbpEntry alignedSplit(Value v, ArrayRef<int64_t> resultShape, int64_t k) {
  ArrayRef<int64_t> shape = shapeOf(v);
  int64_t j = k - static_cast<int64_t>(resultShape.size() - shape.size());
  if (j < 0 || (shape[j] == 1 && resultShape[k] != 1))
    return kB;
  return S(j);
}

/// Elementwise ops with broadcasting: a split of any result dimension (the
/// operands that have it split alike, the others whole), and B.
void broadcastingSplits(Operation *op, Sigs &sigs, ValueRange operands) {
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  for (int64_t k = 0, e = out.size(); k < e; ++k) {
    SmallVector<SbpEntry> ins;
    bool anySplit = false;
    for (Value v : operands) {
      ins.push_back(alignedSplit(v, out, k));
      anySplit |= ins.back().isSplit();
    }
    if (anySplit)
      add(sigs, ins, {S(k)});
  }
  addUniform(op, sigs, kB);
}

/// Unary elementwise: S(d) on every dimension, B; P through linear ops and
/// P(max) through non-decreasing ones (f(max x) = max f(x)).
void unary(Operation *op, Sigs &sigs, bool linear, bool nonDecreasing) {
  for (int64_t d = 0, e = rankOf(op->getResult(0)); d < e; ++d)
    add(sigs, {S(d)}, {S(d)});
  addUniform(op, sigs, kB);
  if (linear)
    addUniform(op, sigs, kP);
  if (nonDecreasing)
    addUniform(op, sigs, kPMax);
}

/// Dimension maps through shape ops: P and P(max) pass, B stays B.
void passPartials(Operation *op, Sigs &sigs) {
  addUniform(op, sigs, kB);
  addUniform(op, sigs, kP);
  addUniform(op, sigs, kPMax);
}

int64_t normalize(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}
} // namespace

//===----------------------------------------------------------------------===//
// Per-op signatures
//===----------------------------------------------------------------------===//

void ConstantOp::getSbpSignatures(Sigs &sigs) { add(sigs, {}, {kB}); }

#define OF_UNARY_SBP(Op, linear, nonDecreasing)                                \
  void Op::getSbpSignatures(Sigs &sigs) {                                      \
    unary(*this, sigs, linear, nonDecreasing);                                 \
  }
OF_UNARY_SBP(NegOp, true, false)
OF_UNARY_SBP(ExpOp, false, true)
OF_UNARY_SBP(LogOp, false, false)
OF_UNARY_SBP(SqrtOp, false, false)
OF_UNARY_SBP(RsqrtOp, false, false)
OF_UNARY_SBP(TanhOp, false, true)
OF_UNARY_SBP(SigmoidOp, false, true)
OF_UNARY_SBP(ReluOp, false, true)
OF_UNARY_SBP(SiluOp, false, false)
OF_UNARY_SBP(ErfOp, false, true)
OF_UNARY_SBP(SinOp, false, false)
OF_UNARY_SBP(CosOp, false, false)
OF_UNARY_SBP(GeluOp, false, false)
#undef OF_UNARY_SBP

void CastOp::getSbpSignatures(Sigs &sigs) {
  bool floats = isa<FloatType>(mlir::getElementTypeOrSelf(getInput().getType())) &&
                isa<FloatType>(mlir::getElementTypeOrSelf(getType()));
  // Rounding to another float type commutes with max but not exactly with
  // sums, so P passes only between floats and P(max) always for floats.
  unary(*this, sigs, /*linear=*/false, /*nonDecreasing=*/floats);
}

void AddOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kP, kP}, {kP});
}
void SubOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kP, kP}, {kP});
}
void MulOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kP, kB}, {kP});
  add(sigs, {kB, kP}, {kP});
}
void DivOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kP, kB}, {kP});
}
void PowOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
}
void MaximumOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kPMax, kPMax}, {kPMax});
  add(sigs, {kPMax, kB}, {kPMax});
  add(sigs, {kB, kPMax}, {kPMax});
}
void MinimumOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
}
void CompareOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
}
void SelectOp::getSbpSignatures(Sigs &sigs) {
  broadcastingSplits(*this, sigs, getOperands());
  add(sigs, {kB, kP, kP}, {kP});
}

void BroadcastToOp::getSbpSignatures(Sigs &sigs) {
  ArrayRef<int64_t> out = getType().getShape();
  // A stretched dimension can be split too: every rank broadcasts its B
  // input to its own chunk.
  for (int64_t k = 0, e = out.size(); k < e; ++k)
    add(sigs, {alignedSplit(getInput(), out, k)}, {S(k)});
  passPartials(*this, sigs);
}

void ReshapeOp::getSbpSignatures(Sigs &sigs) {
  // A dimension that the reshape keeps whole, with the same row-major
  // prefix before it, can stay split (the local reshape is then the same
  // reinterpretation of the rows it holds).
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = getType().getShape();
  int64_t inPrefix = 1;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    int64_t outPrefix = 1;
    for (int64_t k = 0, ke = out.size(); k < ke; ++k) {
      if (outPrefix == inPrefix && out[k] == in[d] && in[d] > 1) {
        add(sigs, {S(d)}, {S(k)});
        break;
      }
      outPrefix *= out[k];
      if (outPrefix > inPrefix)
        break;
    }
    inPrefix *= in[d];
  }
  passPartials(*this, sigs);
}

void TransposeOp::getSbpSignatures(Sigs &sigs) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    add(sigs, {S(p)}, {S(i)});
  passPartials(*this, sigs);
}

void SliceOp::getSbpSignatures(Sigs &sigs) {
  ArrayRef<int64_t> in = shapeOf(getInput());
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    bool whole = getStarts()[d] == 0 && getLimits()[d] == in[d] &&
                 (!getStrides() || (*getStrides())[d] == 1);
    if (whole)
      add(sigs, {S(d)}, {S(d)});
  }
  passPartials(*this, sigs);
}

void ConcatOp::getSbpSignatures(Sigs &sigs) {
  int64_t rank = getType().getRank();
  int64_t axis = normalize(getAxis(), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      addUniform(*this, sigs, S(d));
  passPartials(*this, sigs);
}

template <typename Op>
static void reduceSignatures(Op op, Sigs &sigs, SbpEntry reducedSplit) {
  int64_t rank = rankOf(op.getInput());
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : op.getAxes())
    reduced[normalize(a, rank)] = true;
  int64_t removedBefore = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      add(sigs, {S(d)}, {reducedSplit});
      ++removedBefore;
      continue;
    }
    add(sigs, {S(d)}, {S(op.getKeepdims() ? d : d - removedBefore)});
  }
  addUniform(op, sigs, kB);
  addUniform(op, sigs, reducedSplit);
}
void ReduceSumOp::getSbpSignatures(Sigs &sigs) {
  reduceSignatures(*this, sigs, kP);
}
// A split reduced dimension gives P: --of-partition divides each rank's sum
// by the global count, so the partial means add up to the mean.
void ReduceMeanOp::getSbpSignatures(Sigs &sigs) {
  reduceSignatures(*this, sigs, kP);
}
void ReduceMaxOp::getSbpSignatures(Sigs &sigs) {
  reduceSignatures(*this, sigs, kPMax);
}

void MatmulOp::getSbpSignatures(Sigs &sigs) {
  int64_t rl = rankOf(getLhs()), rr = rankOf(getRhs());
  ArrayRef<int64_t> out = getType().getShape();
  int64_t r = out.size();
  int64_t mL = getTransposeA() ? rl - 1 : rl - 2;
  int64_t kL = getTransposeA() ? rl - 2 : rl - 1;
  int64_t kR = getTransposeB() ? rr - 1 : rr - 2;
  int64_t nR = getTransposeB() ? rr - 2 : rr - 1;
  add(sigs, {S(mL), kB}, {S(r - 2)});      // rows: data parallel
  add(sigs, {kB, S(nR)}, {S(r - 1)});      // columns: column parallel
  add(sigs, {S(kL), S(kR)}, {kP});         // contraction: row parallel
  // Batch dimensions, aligned from the right of the batch part.
  for (int64_t k = 0; k < r - 2; ++k) {
    auto batchEntry = [&](Value v, int64_t rank) {
      int64_t j = k - (r - rank);
      if (j < 0 || shapeOf(v)[j] != out[k])
        return kB;
      return S(j);
    };
    SbpEntry l = batchEntry(getLhs(), rl), rhs = batchEntry(getRhs(), rr);
    if (l.isSplit() || rhs.isSplit())
      add(sigs, {l, rhs}, {S(k)});
  }
  add(sigs, {kP, kB}, {kP});
  add(sigs, {kB, kP}, {kP});
  add(sigs, {kB, kB}, {kB});
}

template <typename Op> static void softmaxSignatures(Op op, Sigs &sigs) {
  int64_t rank = rankOf(op.getInput());
  int64_t axis = normalize(op.getAxis(), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      add(sigs, {S(d)}, {S(d)});
  addUniform(op, sigs, kB);
  // Two-stage (beyond OneFlow): each rank's max and sum of exponentials
  // over its part of the axis, all-reduced (P(max), then P).
  add(sigs, {S(axis)}, {S(axis)});
}
void SoftmaxOp::getSbpSignatures(Sigs &sigs) { softmaxSignatures(*this, sigs); }
void LogSoftmaxOp::getSbpSignatures(Sigs &sigs) {
  softmaxSignatures(*this, sigs);
}

/// Rows that a two-stage normalisation over dimensions [axis, rank)
/// all-reduces twice when its input is split on one of them.
static int64_t twoStageElements(Value input, int64_t axis,
                                const SbpSignature &sig) {
  auto type = cast<RankedTensorType>(input.getType());
  axis = axis < 0 ? axis + type.getRank() : axis;
  const SbpEntry &e = sig.operands[0];
  if (!e.isSplit() || e.dim < axis)
    return 0;
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d)
    rows *= type.getDimSize(d);
  return 2 * rows;
}
int64_t SoftmaxOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return twoStageElements(getInput(), getAxis(), sig);
}
int64_t LogSoftmaxOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return twoStageElements(getInput(), getAxis(), sig);
}
int64_t LayerNormOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return twoStageElements(getInput(), getAxis(), sig);
}
int64_t RmsNormOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return twoStageElements(getInput(), getAxis(), sig) / 2;
}

/// layer_norm / rms_norm: the input split on a dimension before the
/// normalised ones, the affine parameters whole.
static void normSignatures(Operation *op, Sigs &sigs, int64_t axis) {
  int64_t rank = rankOf(op->getOperand(0));
  axis = normalize(axis, rank);
  for (int64_t d = 0; d < axis; ++d) {
    SmallVector<SbpEntry> ins(op->getNumOperands(), kB);
    ins[0] = S(d);
    add(sigs, ins, {S(d)});
  }
  addUniform(op, sigs, kB);
  // Two-stage: a split normalised dimension (the affine parameters split
  // alike); the statistics are all-reduced.
  for (int64_t d = axis; d < rank; ++d) {
    SmallVector<SbpEntry> ins(op->getNumOperands(), S(d - axis));
    ins[0] = S(d);
    add(sigs, ins, {S(d)});
  }
}
void LayerNormOp::getSbpSignatures(Sigs &sigs) {
  normSignatures(*this, sigs, getAxis());
}
void RmsNormOp::getSbpSignatures(Sigs &sigs) {
  normSignatures(*this, sigs, getAxis());
}

void EmbeddingOp::getSbpSignatures(Sigs &sigs) {
  int64_t ri = rankOf(getIndices());
  for (int64_t d = 0; d < ri; ++d)
    add(sigs, {S(d), kB}, {S(d)});
  add(sigs, {kB, S(1)}, {S(ri)}); // the embedding dimension
  add(sigs, {kB, kB}, {kB});
  // Vocabulary parallel (Megatron): each rank looks up the indices in its
  // rows of the table and gives zeros for the others.
  add(sigs, {kB, S(0)}, {kP});
}

void EmbeddingGradOp::getSbpSignatures(Sigs &sigs) {
  int64_t ri = rankOf(getIndices());
  bool into = static_cast<bool>(getTable());
  // Positions split alike: each rank sums its positions' rows, a partial
  // sum of the whole table (not into a table, which would be added once
  // per rank).
  if (!into)
    for (int64_t d = 0; d < ri; ++d)
      add(sigs, {S(d), S(d)}, {kP});
  // The table added to is distributed as the result.
  auto sig = [&](SbpEntry ids, SbpEntry grad, SbpEntry result) {
    SmallVector<SbpEntry> ins = {ids, grad};
    if (into)
      ins.push_back(result);
    add(sigs, ins, {result});
  };
  sig(kB, S(ri), S(1)); // the embedding dimension
  // Vocabulary parallel (the lookup's rule): each rank scatters the
  // positions whose indices fall in its rows.
  sig(kB, kB, S(0));
  sig(kB, kB, kB);
}

void Conv2DOp::getSbpSignatures(Sigs &sigs) {
  bool bias = static_cast<bool>(getBias());
  SmallVector<SbpEntry> batch = {S(0), kB};
  if (bias)
    batch.push_back(kB);
  add(sigs, batch, {S(0)});
  if (getGroups() == 1) {
    SmallVector<SbpEntry> channels = {kB, S(0)};
    if (bias)
      channels.push_back(S(0));
    add(sigs, channels, {S(1)});
    if (!bias)
      add(sigs, {S(1), S(1)}, {kP}); // input channels: a contraction
  }
  addUniform(*this, sigs, kB);
}

void Conv2DGradInputOp::getSbpSignatures(Sigs &sigs) {
  add(sigs, {S(0), kB}, {S(0)}); // batch
  if (getGroups() == 1) {
    add(sigs, {S(1), S(0)}, {kP}); // output channels: a contraction
    add(sigs, {kB, S(1)}, {S(1)}); // input channels
  }
  addUniform(*this, sigs, kB);
}

void Conv2DGradFilterOp::getSbpSignatures(Sigs &sigs) {
  add(sigs, {S(0), S(0)}, {kP}); // batch: each rank's partial sum
  if (getGroups() == 1) {
    add(sigs, {kB, S(1)}, {S(0)}); // output channels
    add(sigs, {S(1), kB}, {S(1)}); // input channels
  }
  addUniform(*this, sigs, kB);
}

void Pool2DGradOp::getSbpSignatures(Sigs &sigs) {
  add(sigs, {S(0), S(0)}, {S(0)});
  add(sigs, {S(1), S(1)}, {S(1)});
  addUniform(*this, sigs, kB);
}

template <typename Op> static void poolSignatures(Op op, Sigs &sigs,
                                                  SbpEntry partial) {
  add(sigs, {S(0)}, {S(0)});
  add(sigs, {S(1)}, {S(1)});
  addUniform(op, sigs, kB);
  addUniform(op, sigs, partial);
}
void MaxPool2DOp::getSbpSignatures(Sigs &sigs) {
  poolSignatures(*this, sigs, kPMax);
}
void AvgPool2DOp::getSbpSignatures(Sigs &sigs) {
  poolSignatures(*this, sigs, kP);
}

void TopKOp::getSbpSignatures(Sigs &sigs) {
  // Rows are independent; the selected axis stays whole.
  int64_t rank = rankOf(getInput());
  for (int64_t d = 0; d + 1 < rank; ++d)
    add(sigs, {S(d)}, {S(d), S(d)});
  addUniform(*this, sigs, kB);
}

void BatchNormOp::getSbpSignatures(Sigs &sigs) {
  // Channels are independent. A batch split: in inference each rank
  // normalises its rows; in training the per-channel sums are all-reduced
  // (sync batch norm, localize), so the statistics are the whole batch's.
  add(sigs, {S(1), S(0), S(0), S(0), S(0)}, {S(1), S(0), S(0)});
  add(sigs, {S(0), kB, kB, kB, kB}, {S(0), kB, kB});
  addUniform(*this, sigs, kB);
}
/// The per-channel sums a batch-split training batch norm all-reduces:
/// the mean's and the variance's (forward), the bias's and the weight's
/// gradient (backward).
static int64_t syncBatchNormElements(Value input, const SbpSignature &sig) {
  const SbpEntry &e = sig.operands[0];
  return e.isSplit() && e.dim == 0
             ? 2 * cast<ShapedType>(input.getType()).getDimSize(1)
             : 0;
}
int64_t BatchNormOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return getTraining() ? syncBatchNormElements(getInput(), sig) : 0;
}

// The gradient of a training batch norm: channels are independent; a
// batch split all-reduces the per-channel sums (sync batch norm, as the
// forward's), so the weight and bias gradients are whole on every rank.
void BatchNormGradOp::getSbpSignatures(Sigs &sigs) {
  add(sigs, {S(1), S(1), S(0)}, {S(1), S(0), S(0)});
  add(sigs, {S(0), S(0), kB}, {S(0), kB, kB});
  addUniform(*this, sigs, kB);
}
int64_t BatchNormGradOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  return syncBatchNormElements(getInput(), sig);
}

// The mask hashes the global element index: a shard gets its offsets from
// --of-partition, so any split keeps the mask of the whole tensor.
void DropoutOp::getSbpSignatures(Sigs &sigs) {
  for (int64_t d = 0, e = rankOf(getInput()); d < e; ++d)
    add(sigs, {S(d), kB}, {S(d)});
  add(sigs, {kB, kB}, {kB});
}

void CrossEntropyOp::getSbpSignatures(Sigs &sigs) {
  int64_t rank = rankOf(getLabels());
  for (int64_t d = 0; d < rank; ++d)
    add(sigs, {S(d), S(d)}, {S(d)});
  add(sigs, {kB, kB}, {kB});
  // Vocabulary parallel: split classes; the maximum, the sum of
  // exponentials and the label's logit are all-reduced inside.
  add(sigs, {S(rank), kB}, {kB});
}
int64_t CrossEntropyOp::getSbpInternalAllReduce(const SbpSignature &sig) {
  int64_t rank = rankOf(getLabels());
  const SbpEntry &e = sig.operands[0];
  return e.isSplit() && e.dim == rank ? 3 * numElements(getLabels().getType())
                                      : 0;
}

#include "OF/Dialect/OF/IR/OFInterfaces.cpp.inc"
