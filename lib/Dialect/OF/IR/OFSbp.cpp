//===- OFSbp.cpp - SBP signatures of every op, boxing plans, costs --------===//
//
// The single source of truth for how each op of the dialect can be
// distributed (SbpOpInterface), the per-axis collective sequence of a
// distribution change (planBoxing), and the alpha-beta cost model.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/Sbp.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
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
  // Positions split alike: each rank sums its positions' rows, a partial
  // sum of the whole table.
  for (int64_t d = 0; d < ri; ++d)
    add(sigs, {S(d), S(d)}, {kP});
  add(sigs, {kB, S(ri)}, {S(1)}); // the embedding dimension
  add(sigs, {kB, kB}, {kB});
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

void BatchNormOp::getSbpSignatures(Sigs &sigs) {
  // Channels are independent; a batch split needs the batch statistics of
  // every rank in training (sync batch norm), so only inference has it.
  add(sigs, {S(1), S(0), S(0), S(0), S(0)}, {S(1), S(0), S(0)});
  if (!getTraining())
    add(sigs, {S(0), kB, kB, kB, kB}, {S(0), kB, kB});
  addUniform(*this, sigs, kB);
}

// The gradient of a training batch norm: channels are independent, the
// batch statistics need the whole batch (as the forward's).
void BatchNormGradOp::getSbpSignatures(Sigs &sigs) {
  add(sigs, {S(1), S(1), S(0)}, {S(1), S(0), S(0)});
  addUniform(*this, sigs, kB);
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

//===----------------------------------------------------------------------===//
// Boxing plans
//===----------------------------------------------------------------------===//

std::string BoxingStep::str() const {
  static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "shard_slice", "to_partial"};
  std::string s = names[kind];
  s += "(axis " + std::to_string(axis);
  if (kind == AllGather || kind == ReduceScatter || kind == Slice)
    s += ", dim " + std::to_string(dim);
  if (kind == AllToAll)
    s += ", dim " + std::to_string(dim) + " -> " + std::to_string(dim2);
  if (max)
    s += ", max";
  return s + ")";
}

SmallVector<BoxingStep> of::planBoxing(ArrayRef<SbpEntry> from,
                                       ArrayRef<SbpEntry> to,
                                       ArrayRef<int64_t> grid) {
  SmallVector<BoxingStep> steps;
  size_t n = from.size();
  SmallVector<bool> changed(n);
  for (size_t a = 0; a < n; ++a)
    changed[a] = from[a] != to[a] && grid[a] > 1;
  // An unchanged split whose dimension an earlier changed axis also splits
  // must be undone and redone: its shards are cut from the earlier axis's.
  for (size_t b = 0; b < n; ++b) {
    if (changed[b] || !from[b].isSplit() || grid[b] == 1)
      continue;
    for (size_t a = 0; a < b; ++a)
      if (changed[a] && ((from[a].isSplit() && from[a].dim == from[b].dim) ||
                         (to[a].isSplit() && to[a].dim == from[b].dim)))
        changed[b] = true;
  }
  NdSbp cur(from);
  auto emit = [&](BoxingStep::Kind kind, unsigned axis, SbpEntry target,
                  int64_t dim = 0, int64_t dim2 = 0, bool max = false) {
    BoxingStep step{kind, axis, dim, dim2, max, cur, cur};
    step.after[axis] = target;
    cur[axis] = target;
    steps.push_back(std::move(step));
  };
  auto toBroadcast = [&](unsigned a) {
    SbpEntry e = cur[a];
    if (e.isSplit())
      emit(BoxingStep::AllGather, a, kB, e.dim);
    else if (e.isPartial())
      emit(BoxingStep::AllReduce, a, kB, 0, 0,
           e.kind == SbpKind::PartialMax);
  };
  auto fromBroadcast = [&](unsigned a, SbpEntry target) {
    if (target.isSplit())
      emit(BoxingStep::Slice, a, target, target.dim);
    else if (target.kind == SbpKind::PartialSum)
      emit(BoxingStep::ToPartial, a, target);
    else
      cur[a] = target; // B -> P(max): every member already holds the max
  };

  unsigned numChanged = llvm::count(changed, true);
  if (numChanged == 1) {
    unsigned a = llvm::find(changed, true) - changed.begin();
    SbpEntry f = from[a], t = to[a];
    if (f.isPartial() && t.isSplit()) {
      emit(BoxingStep::ReduceScatter, a, t, t.dim, 0,
           f.kind == SbpKind::PartialMax);
      return steps;
    }
    if (f.isSplit() && t.isSplit()) {
      emit(BoxingStep::AllToAll, a, t, f.dim, t.dim);
      return steps;
    }
  }
  for (int64_t a = static_cast<int64_t>(n) - 1; a >= 0; --a)
    if (changed[a])
      toBroadcast(a);
  for (size_t a = 0; a < n; ++a)
    if (changed[a])
      fromBroadcast(a, to[a]);
  // Axes of size 1 (and B -> P(max)) take their target without a step.
  if (!steps.empty())
    steps.back().after.assign(to.begin(), to.end());
  return steps;
}

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

bool CostModel::preset(StringRef name, CostModel &out, std::string &error) {
  // mpi-shm's link is what bench/collective_bench measured for Open MPI
  // over shared memory on the 2-core development VM (all-reduce and
  // all-gather of 2 MiB: ~2.3 GB/s; 8 B: ~1 us); its compute figures and
  // the GPU presets are orders of magnitude. A machine file gives the
  // figures of another machine.
  if (name == "mpi-shm" || name.empty()) {
    out.axes = {{1.0e-6, 2.3e9}};
    out.flopsPerSecond = 5.0e10;
    out.memoryBandwidth = 1.0e10;
  } else if (name == "nvlink") {
    out.axes = {{5.0e-6, 3.0e11}};
    out.flopsPerSecond = 5.0e14;
    out.memoryBandwidth = 3.0e12;
  } else if (name == "infiniband") {
    out.axes = {{5.0e-6, 3.0e11}, {1.0e-5, 2.5e10}};
    out.flopsPerSecond = 5.0e14;
    out.memoryBandwidth = 3.0e12;
  } else {
    error = "unknown interconnect '" + name.str() +
            "' (expected mpi-shm, nvlink or infiniband)";
    return false;
  }
  return true;
}

bool CostModel::readMachineFile(StringRef path, CostModel &out,
                                std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read machine file '" + path.str() +
            "': " + buffer.getError().message();
    return false;
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = "machine file '" + path.str() +
            "' is not JSON: " + llvm::toString(json.takeError());
    return false;
  }
  const llvm::json::Object *root = json->getAsObject();
  if (!root) {
    error = "machine file '" + path.str() + "' must hold a JSON object";
    return false;
  }
  auto positive = [&](const llvm::json::Object &o, StringRef key,
                      double &field) {
    if (const llvm::json::Value *v = o.get(key)) {
      std::optional<double> d = v->getAsNumber();
      if (!d || *d <= 0) {
        error = "machine file '" + path.str() + "': '" + key.str() +
                "' must be a positive number";
        return false;
      }
      field = *d;
    }
    return true;
  };
  if (!positive(*root, "flops", out.flopsPerSecond) ||
      !positive(*root, "memory_bandwidth", out.memoryBandwidth))
    return false;
  if (const llvm::json::Value *axes = root->get("axes")) {
    const llvm::json::Array *list = axes->getAsArray();
    if (!list || list->empty()) {
      error = "machine file '" + path.str() +
              "': 'axes' must be a non-empty array";
      return false;
    }
    SmallVector<LinkCost, 2> links;
    for (const llvm::json::Value &v : *list) {
      const llvm::json::Object *o = v.getAsObject();
      if (!o) {
        error = "machine file '" + path.str() +
                "': each entry of 'axes' must be an object";
        return false;
      }
      LinkCost link = out.axis(links.size());
      if (!positive(*o, "latency", link.latency) ||
          !positive(*o, "bandwidth", link.bandwidth))
        return false;
      links.push_back(link);
    }
    out.axes = std::move(links);
  }
  return true;
}

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double CostModel::stepCost(const BoxingStep &step, ArrayRef<int64_t> shape,
                           int64_t elementBytes, ArrayRef<int64_t> grid) const {
  SmallVector<int64_t> zero(grid.size(), 0);
  double p = grid[step.axis];
  double before =
      product(localShape(shape, step.before, grid, zero)) * elementBytes;
  double after =
      product(localShape(shape, step.after, grid, zero)) * elementBytes;
  LinkCost link = axis(step.axis);
  switch (step.kind) {
  case BoxingStep::AllReduce: // ring: reduce-scatter + all-gather
    return 2 * (p - 1) * link.latency +
           2 * (p - 1) / p * before / link.bandwidth;
  case BoxingStep::AllGather:
    return (p - 1) * link.latency + (p - 1) / p * after / link.bandwidth;
  case BoxingStep::ReduceScatter:
  case BoxingStep::AllToAll:
    return (p - 1) * link.latency + (p - 1) / p * before / link.bandwidth;
  case BoxingStep::Slice:
    return after / memoryBandwidth;
  case BoxingStep::ToPartial:
    return before / memoryBandwidth;
  }
  llvm_unreachable("unknown boxing step");
}

double CostModel::boxingCost(ArrayRef<int64_t> shape, int64_t elementBytes,
                             ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
                             ArrayRef<int64_t> grid) const {
  double seconds = 0;
  for (const BoxingStep &step :
       cheapestBoxing(from, to, grid, shape, elementBytes, *this))
    seconds += stepCost(step, shape, elementBytes, grid);
  return seconds;
}

SmallVector<BoxingStep>
of::cheapestBoxing(ArrayRef<SbpEntry> from, ArrayRef<SbpEntry> to,
                   ArrayRef<int64_t> grid, ArrayRef<int64_t> shape,
                   int64_t elementBytes, const CostModel &model) {
  SmallVector<BoxingStep> fixed = planBoxing(from, to, grid);
  size_t n = grid.size();
  // One step is already direct; the search is for hierarchies (and small
  // ones: (rank + 3)^axes states).
  if (fixed.size() < 2 || n > 3)
    return fixed;
  auto total = [&](ArrayRef<BoxingStep> steps) {
    double seconds = 0;
    for (const BoxingStep &step : steps)
      seconds += model.stepCost(step, shape, elementBytes, grid);
    return seconds;
  };

  // The entries each axis may pass through: B, every split, and the
  // partial kinds it starts or ends with. An axis of size 1 moves nothing
  // and takes its target at once.
  int64_t rank = shape.size();
  SmallVector<SmallVector<SbpEntry>> options(n);
  NdSbp start(from.begin(), from.end());
  for (size_t a = 0; a < n; ++a) {
    if (grid[a] == 1) {
      start[a] = to[a];
      options[a] = {to[a]};
      continue;
    }
    options[a].push_back(kB);
    for (int64_t d = 0; d < rank; ++d)
      options[a].push_back(SbpEntry::split(d));
    for (SbpEntry e : {from[a], to[a]})
      if (e.isPartial() && !llvm::is_contained(options[a], e))
        options[a].push_back(e);
  }
  // Every valid combination is a state, found by a linear search (there
  // are a few dozen).
  SmallVector<NdSbp> states;
  std::string why;
  std::function<void(NdSbp &, size_t)> enumerate = [&](NdSbp &cur, size_t a) {
    if (a == n) {
      if (isValidSbp(cur, rank, n, why))
        states.push_back(cur);
      return;
    }
    for (SbpEntry e : options[a]) {
      cur[a] = e;
      enumerate(cur, a + 1);
    }
  };
  NdSbp scratch(n, kB);
  enumerate(scratch, 0);
  auto indexOf = [&](ArrayRef<SbpEntry> sbp) -> int64_t {
    auto it = llvm::find_if(
        states, [&](const NdSbp &s) { return ArrayRef<SbpEntry>(s) == sbp; });
    return it == states.end() ? -1 : it - states.begin();
  };
  int64_t source = indexOf(start), target = indexOf(to);
  if (source < 0 || target < 0)
    return fixed;

  // The single-axis step from `cur` that sets axis `a` to `e`, if legal.
  auto edge = [&](const NdSbp &cur, unsigned a,
                  SbpEntry e) -> std::optional<BoxingStep> {
    SbpEntry f = cur[a];
    for (size_t b = a + 1; b < n; ++b)
      if (grid[b] > 1 && cur[b].isSplit() &&
          ((f.isSplit() && f.dim == cur[b].dim) ||
           (e.isSplit() && e.dim == cur[b].dim)))
        return std::nullopt;
    BoxingStep step{BoxingStep::AllReduce, a, 0, 0, false, cur, cur};
    step.after[a] = e;
    if (f.isPartial() && e.isBroadcast()) {
      step.max = f.kind == SbpKind::PartialMax;
    } else if (f.isPartial() && e.isSplit()) {
      step.kind = BoxingStep::ReduceScatter;
      step.dim = e.dim;
      step.max = f.kind == SbpKind::PartialMax;
    } else if (f.isSplit() && e.isBroadcast()) {
      step.kind = BoxingStep::AllGather;
      step.dim = f.dim;
    } else if (f.isSplit() && e.isSplit()) {
      step.kind = BoxingStep::AllToAll;
      step.dim = f.dim;
      step.dim2 = e.dim;
    } else if (f.isBroadcast() && e.isSplit()) {
      step.kind = BoxingStep::Slice;
      step.dim = e.dim;
    } else if (f.isBroadcast() && e.kind == SbpKind::PartialSum) {
      step.kind = BoxingStep::ToPartial;
    } else {
      return std::nullopt; // through B (B -> P(max) is planBoxing's)
    }
    return step;
  };

  // Dijkstra over the states (a few dozen): O(V^2) with edges on demand.
  size_t v = states.size();
  SmallVector<double> dist(v, std::numeric_limits<double>::infinity());
  SmallVector<int64_t> prev(v, -1);
  SmallVector<std::optional<BoxingStep>> via(v);
  SmallVector<bool> done(v, false);
  dist[source] = 0;
  for (size_t round = 0; round < v; ++round) {
    int64_t u = -1;
    for (size_t i = 0; i < v; ++i)
      if (!done[i] && (u < 0 || dist[i] < dist[u]))
        u = i;
    if (u < 0 || std::isinf(dist[u]) || u == target)
      break;
    done[u] = true;
    for (unsigned a = 0; a < n; ++a)
      for (SbpEntry e : options[a]) {
        if (e == states[u][a])
          continue;
        std::optional<BoxingStep> step = edge(states[u], a, e);
        if (!step)
          continue;
        int64_t w = indexOf(step->after);
        if (w < 0 || done[w])
          continue;
        double d = dist[u] + model.stepCost(*step, shape, elementBytes, grid);
        if (d < dist[w]) {
          dist[w] = d;
          prev[w] = u;
          via[w] = step;
        }
      }
  }
  // Keep planBoxing's plan unless the search's is cheaper by more than
  // rounding.
  if (std::isinf(dist[target]) || !(dist[target] < total(fixed) * (1 - 1e-9)))
    return fixed;
  SmallVector<BoxingStep> steps;
  for (int64_t w = target; w != source; w = prev[w])
    steps.push_back(*via[w]);
  std::reverse(steps.begin(), steps.end());
  return steps;
}

double CostModel::computeCost(Operation *op, ArrayRef<SbpSignature> perAxis,
                              ArrayRef<int64_t> grid) const {
  double divisor = 1;
  for (auto [axis, sig] : llvm::enumerate(perAxis)) {
    auto isSplit = [](const SbpEntry &e) { return e.isSplit(); };
    if (llvm::any_of(sig.operands, isSplit) || llvm::any_of(sig.results, isSplit))
      divisor *= grid[axis];
  }
  double flops = 0;
  if (auto sbp = dyn_cast<SbpOpInterface>(op))
    flops = sbp.getSbpFlops();
  SmallVector<int64_t> zero(grid.size(), 0);
  double bytes = 0;
  auto addBytes = [&](Value v, unsigned index, bool operand) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return;
    NdSbp nd;
    for (const SbpSignature &sig : perAxis)
      nd.push_back(operand ? sig.operands[index] : sig.results[index]);
    int64_t elementBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    bytes += product(localShape(type.getShape(), nd, grid, zero)) *
             elementBytes;
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    addBytes(v, i, true);
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    addBytes(v, i, false);
  double seconds = flops / divisor / flopsPerSecond + bytes / memoryBandwidth;
  // Collectives inside the op's local form (two-stage normalisations).
  if (auto sbp = dyn_cast<SbpOpInterface>(op)) {
    int64_t elementBytes = 4;
    if (auto t = dyn_cast<ShapedType>(op->getResult(0).getType()))
      elementBytes = std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    for (auto [axis, sig] : llvm::enumerate(perAxis)) {
      double p = grid[axis];
      if (int64_t n = sbp.getSbpInternalAllReduce(sig); n && p > 1) {
        LinkCost link = this->axis(axis);
        seconds += 2 * (p - 1) * link.latency +
                   2 * (p - 1) / p * n * elementBytes / link.bandwidth;
      }
    }
  }
  return seconds;
}

//===----------------------------------------------------------------------===//
// Local collectives
//===----------------------------------------------------------------------===//

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
                                    StringRef reduce = "sum") {
  auto p = tables.lookupNearestSymbolFrom<PlacementOp>(op, placement);
  if (!p)
    return op->emitOpError("refers to unknown placement ") << placement;
  SmallVector<int64_t> grid = p.getGridShape();
  if (axis < 0 || axis >= static_cast<int64_t>(grid.size()))
    return op->emitOpError("axis ")
           << axis << " is not an axis of the " << grid.size()
           << "-D placement " << placement;
  if (reduce != "sum" && reduce != "max")
    return op->emitOpError("reduce must be \"sum\" or \"max\", not \"")
           << reduce << "\"";
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
             << " is not a balanced chunk of " << out[dim] << " over "
             << parts << " ranks";
    return success();
  case ChunkRule::Scatter:
    if (failed(checkDim(dim)))
      return failure();
    if (!sameExcept(dim, dim) || !isChunkSize(out[dim], in[dim], parts))
      return op->emitOpError("result extent ")
             << out[dim] << " of dimension " << dim
             << " is not a balanced chunk of " << in[dim] << " over "
             << parts << " ranks";
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
    collectiveEffects(*this, getInput(), getInitMutable(), effects);        \
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
LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &tables) {
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

namespace {
/// One-shot bufferization of the destination-style ops that the plan runs as
/// steps (the local collectives, of.library_call): the same op on the
/// buffers of its operands, whose inits (the last operands) its results
/// then are. Inits are only written, so a tensor.empty init needs no copy. A
/// step reads and writes whole dense buffers, so an operand whose buffer is
/// a strided view (a slice of a larger buffer) goes through a fresh buffer:
/// copied in for an input, copied back for an init.
template <typename Op>
struct StepBufferization
    : bufferization::DstBufferizableOpInterfaceExternalModel<
          StepBufferization<Op>, Op> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const bufferization::AnalysisState &) const {
    return !cast<DestinationStyleOpInterface>(op).isDpsInit(&operand);
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto dps = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> buffers;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    unsigned firstInit = op->getNumOperands() - dps.getNumDpsInits();
    // What each result becomes: its init's buffer, or a fresh one.
    SmallVector<Value> results(ArrayRef<Value>(buffers).drop_front(firstInit));
    for (auto [i, buffer] : llvm::enumerate(buffers)) {
      auto type = cast<MemRefType>(buffer.getType());
      // Inits that are one tensor (a CSE'd tensor.empty: several results
      // of a library call that nothing reads) get buffers of their own.
      bool shared =
          i >= firstInit && llvm::is_contained(op->getOperands().take_front(i),
                                               op->getOperand(i));
      if (type.getLayout().isIdentity() && !shared)
        continue;
      auto dense =
          MemRefType::get(type.getShape(), type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
      FailureOr<Value> fresh = options.createAlloc(rewriter, loc, dense, {});
      if (failed(fresh))
        return failure();
      if (i < firstInit &&
          failed(options.createMemCpy(rewriter, loc, buffer, *fresh)))
        return failure();
      if (shared)
        results[i - firstInit] = *fresh;
      buffer = *fresh;
    }
    OperationState bufferized(loc, op->getName());
    bufferized.addOperands(buffers);
    bufferized.addAttributes(op->getAttrs());
    rewriter.create(bufferized);
    // A strided init gets the dense buffer's contents back.
    for (auto [result, used] : llvm::zip_equal(
             results, ArrayRef<Value>(buffers).drop_front(firstInit)))
      if (used != result &&
          failed(options.createMemCpy(rewriter, loc, used, result)))
        return failure();
    bufferization::replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

/// of.send reads its whole input and defines nothing; a strided view goes
/// through a dense copy, as for the other steps.
struct SendBufferization
    : bufferization::BufferizableOpInterface::ExternalModel<SendBufferization,
                                                            SendOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const bufferization::AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const bufferization::AnalysisState &) const {
    return false;
  }
  bufferization::AliasingValueList
  getAliasingValues(Operation *, OpOperand &,
                    const bufferization::AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto send = cast<SendOp>(op);
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, send.getInput(), options, state);
    if (failed(buffer))
      return failure();
    rewriter.setInsertionPoint(op);
    Value source = *buffer;
    auto type = cast<MemRefType>(source.getType());
    if (!type.getLayout().isIdentity()) {
      auto dense =
          MemRefType::get(type.getShape(), type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
      FailureOr<Value> fresh =
          options.createAlloc(rewriter, op->getLoc(), dense, {});
      if (failed(fresh) ||
          failed(options.createMemCpy(rewriter, op->getLoc(), source, *fresh)))
        return failure();
      source = *fresh;
    }
    rewriter.modifyOpInPlace(op,
                             [&] { send.getInputMutable().assign(source); });
    return success();
  }
};
} // namespace

void of::registerStepBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OFDialect *) {
    AllReduceOp::attachInterface<StepBufferization<AllReduceOp>>(*ctx);
    AllGatherOp::attachInterface<StepBufferization<AllGatherOp>>(*ctx);
    ReduceScatterOp::attachInterface<StepBufferization<ReduceScatterOp>>(*ctx);
    AllToAllOp::attachInterface<StepBufferization<AllToAllOp>>(*ctx);
    ShardSliceOp::attachInterface<StepBufferization<ShardSliceOp>>(*ctx);
    ToPartialOp::attachInterface<StepBufferization<ToPartialOp>>(*ctx);
    LibraryCallOp::attachInterface<StepBufferization<LibraryCallOp>>(*ctx);
    RecvOp::attachInterface<StepBufferization<RecvOp>>(*ctx);
    SendOp::attachInterface<SendBufferization>(*ctx);
  });
}

#include "OF/Dialect/OF/IR/OFInterfaces.cpp.inc"
