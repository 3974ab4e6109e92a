//===- LibraryCalls.cpp - Steps that a library runs -----------------------===//
//
// --of-select-library-calls: convolutions, poolings and batch norms as
// of.library_call steps for the runtime's dnn library (oneDNN on the CPU,
// cuDNN on a GPU), before --convert-of-to-linalg lowers the rest. One
// pattern per op family (the pass options conv-library, pool-library and
// norm-library add them); DnnLibrary says what each library takes, and
// each pattern's match failures say why an op stays generated.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "OF/ABI/LibraryCalls.h"
#include "OF/Dialect/OF/IR/OFDialect.h"
#include "OF/Dialect/OF/IR/OFOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include <cmath>

namespace mlir::of {
#define GEN_PASS_DEF_SELECTLIBRARYCALLSPASS
#include "OF/Conversion/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;
using namespace mlir::of::linalg_lowering;

namespace {

/// What the library that runs the dnn steps (the pass's dnn-library) takes,
/// which the convolution and pooling patterns share.
struct DnnLibrary {
  explicit DnnLibrary(const SelectLibraryCallsPassOptions &options)
      : cudnn(options.dnnLibrary == "cudnn") {}
  /// cuDNN: descriptors pad symmetrically and take int extents; f16 steps
  /// run as they are; max pooling propagates NaN. oneDNN: none of these.
  bool cudnn;

  /// Why `op`, with these padding and tensor types, is not a step of this
  /// library (the pattern's failure message), or null.
  const char *refuses(ArrayRef<int64_t> padding,
                      ArrayRef<RankedTensorType> tensors) const {
    if (!cudnn)
      return nullptr;
    if (padding[0] != padding[1] || padding[2] != padding[3])
      return "cuDNN pads symmetrically; this padding is not";
    for (RankedTensorType type : tensors)
      if (type.getNumElements() > std::numeric_limits<int32_t>::max())
        return "cuDNN's descriptors take int: a tensor has 2^31 elements or "
               "more";
    return nullptr;
  }
};

/// The base of the library patterns: with the library that will run the
/// step. A pattern reads its op's operands through an adaptor.
template <typename OpTy> struct DnnLibraryPattern : OpRewritePattern<OpTy> {
  DnnLibraryPattern(MLIRContext *ctx,
                    const SelectLibraryCallsPassOptions &options)
      : OpRewritePattern<OpTy>(ctx), library(options) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const final {
    return matchAndRewrite(op, typename OpTy::Adaptor(op), rewriter);
  }
  virtual LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                        PatternRewriter &rewriter) const = 0;
  DnnLibrary library;
};

/// A convolution or one of its gradients as an of.library_call that the
/// plan runs through the runtime's convolution library (oneDNN on the CPU):
/// added, ahead of the generated forms, when the pass runs with
/// conv-library. f32 and bf16 (which accumulates in f32 and rounds once, as
/// the generated form does; a bias is added before that rounding). Debian's
/// oneDNN 2.6 has no f16 convolution on the CPU, so an f16 one is the f32
/// library convolution of its operands widened, rounded once: the
/// generated form's arithmetic (f32 accumulation, one rounding); cuDNN has
/// them (dnn-library=cudnn), with the same arithmetic. oneDNN has
/// no f64 convolution. Measured with bench/cpu_bench.py on 8x64x28x28, 3x3
/// -> 64 (see docs/performance.md): oneDNN at 1.6-1.8 ms, the im2col gemm
/// at 5-12 ms.
template <typename OpTy> struct ConvLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    if (!et.isF32() && !et.isBF16() && !et.isF16())
      return rewriter.notifyMatchFailure(
          op, "library convolutions are f32, bf16 or f16");
    // The operands and result, and which of them are x, w and y.
    SmallVector<Value> inputs;
    StringRef callee;
    RankedTensorType x, w, y;
    auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
    if constexpr (std::is_same_v<OpTy, Conv2DOp>) {
      callee = ::of::plan::kConvForwardFunction;
      inputs = {adaptor.getInput(), adaptor.getWeight()};
      if (adaptor.getBias())
        inputs.push_back(adaptor.getBias());
      x = typeOf(adaptor.getInput()), w = typeOf(adaptor.getWeight()), y = type;
    } else if constexpr (std::is_same_v<OpTy, Conv2DGradInputOp>) {
      callee = ::of::plan::kConvGradInputFunction;
      inputs = {adaptor.getGrad(), adaptor.getWeight()};
      x = type, w = typeOf(adaptor.getWeight()), y = typeOf(adaptor.getGrad());
    } else {
      callee = ::of::plan::kConvGradFilterFunction;
      inputs = {adaptor.getInput(), adaptor.getGrad()};
      x = typeOf(adaptor.getInput()), w = type, y = typeOf(adaptor.getGrad());
    }
    ArrayRef<int64_t> strides = op.getStrides(), padding = op.getPadding(),
                      dilation = op.getDilation();
    if (const char *why = library.refuses(padding, {x, w, y}))
      return rewriter.notifyMatchFailure(op, why);
    SmallVector<int64_t> params{
        x.getDimSize(0), x.getDimSize(1), x.getDimSize(2), x.getDimSize(3),
        w.getDimSize(0), w.getDimSize(2), w.getDimSize(3), y.getDimSize(2),
        y.getDimSize(3), strides[0],      strides[1],      dilation[0],
        dilation[1],     padding[0],      padding[1],      padding[2],
        padding[3],      op.getGroups()};
    Location loc = op.getLoc();
    RankedTensorType callType = type;
    if (et.isF16() && !library.cudnn) {
      callType = accumulatorType(type);
      for (Value &input : inputs) {
        auto inType = cast<RankedTensorType>(input.getType());
        input = elementwise(
            rewriter, loc, accumulatorType(inType), input,
            [&](OpBuilder &b, Location l, ValueRange args) -> Value {
              return arith::ExtFOp::create(b, l, b.getF32Type(), args[0]);
            });
      }
    }
    auto call = LibraryCallOp::create(rewriter, loc, TypeRange{callType},
                                      rewriter.getStringAttr(callee), inputs,
                                      emptyTensor(rewriter, loc, callType),
                                      rewriter.getDenseI64ArrayAttr(params));
    rewriter.replaceOp(
        op, roundFromAccumulator(rewriter, loc, type, call->getResult(0)));
    return success();
  }
};

/// A pooling or a pooling gradient as an of.library_call (oneDNN on the
/// CPU, cuDNN on a GPU): added, ahead of the generated forms, when the pass
/// runs with pool-library. f32 and bf16, and f16 on cuDNN (oneDNN 2.6 has
/// no f16 pooling on the CPU); other types, geometries the library call
/// does not take (checkPoolGeometry: padding as large as the window), max
/// pooling's forward pass on oneDNN (whose max drops NaN) and its gradient
/// on cuDNN (whose choice among tied elements is not documented) stay
/// generated. Measured with bench/train_bench.py --model convnet
/// (docs/performance.md).
template <typename OpTy> struct PoolLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = localType(op.getType());
    Type et = type.getElementType();
    if (!et.isF32() && !et.isBF16() && !(et.isF16() && library.cudnn))
      return rewriter.notifyMatchFailure(
          op, "library poolings are f32 or bf16 (and f16 on cuDNN)");
    if (std::is_same_v<OpTy, MaxPool2DOp> && !library.cudnn)
      return rewriter.notifyMatchFailure(
          op, "oneDNN's max pooling drops NaN; the generated kernel "
              "propagates it, as PyTorch");
    if constexpr (std::is_same_v<OpTy, Pool2DGradOp>)
      if (op.getKind() == "max" && library.cudnn)
        return rewriter.notifyMatchFailure(
            op, "which element of a tied window cuDNN's max gradient picks "
                "is not documented; the generated kernel picks the first, "
                "as PyTorch");
    ArrayRef<int64_t> padding = op.getPadding(), kernel = op.getKernelSize();
    SmallVector<int64_t> strides = poolStrides(op);
    // Where the windows tile the input, the generated gradient (a parallel
    // map over dx) measured faster than oneDNN's on 32x64x32x32 with 2x2
    // windows: max forward + gradient 2.8 ms against 5.0
    // (bench/cpu_bench.py --only pool; oneDNN's max gradient recomputes the
    // forward pass for its workspace), the average's gradient 0.60-0.62 ms
    // against 0.95-0.98 (of-run --repeat 20 --print-timing).
    if constexpr (std::is_same_v<OpTy, Pool2DGradOp>)
      if (!library.cudnn &&
          windowsTile(kernel, strides, padding,
                      cast<RankedTensorType>(adaptor.getInput().getType()),
                      cast<RankedTensorType>(adaptor.getGrad().getType())))
        return rewriter.notifyMatchFailure(
            op, "the generated gradient of windows that tile the input is "
                "faster than oneDNN's");
    ::of::plan::PoolMode mode;
    SmallVector<Value> inputs{adaptor.getInput()};
    StringRef callee = ::of::plan::kPoolForwardFunction;
    RankedTensorType x = cast<RankedTensorType>(adaptor.getInput().getType()),
                     y = type;
    auto avgMode = [](bool includePad) {
      return includePad ? ::of::plan::PoolMode::AvgIncludePad
                        : ::of::plan::PoolMode::AvgExcludePad;
    };
    if constexpr (std::is_same_v<OpTy, MaxPool2DOp>) {
      mode = ::of::plan::PoolMode::Max;
    } else if constexpr (std::is_same_v<OpTy, AvgPool2DOp>) {
      mode = avgMode(op.getCountIncludePad());
    } else {
      mode = op.getKind() == "max" ? ::of::plan::PoolMode::Max
                                   : avgMode(op.getCountIncludePad());
      inputs.push_back(adaptor.getGrad());
      callee = ::of::plan::kPoolGradFunction;
      y = cast<RankedTensorType>(adaptor.getGrad().getType());
    }
    if (const char *why = library.refuses(padding, {x, y}))
      return rewriter.notifyMatchFailure(op, why);
    SmallVector<int64_t> params{
        x.getDimSize(0), x.getDimSize(1), x.getDimSize(2),
        x.getDimSize(3), kernel[0],       kernel[1],
        y.getDimSize(2), y.getDimSize(3), strides[0],
        strides[1],      padding[0],      padding[1],
        padding[2],      padding[3],      static_cast<int64_t>(mode)};
    if (const char *why = ::of::plan::checkPoolGeometry(
            ::of::plan::decodePoolGeometry(params.data())))
      return rewriter.notifyMatchFailure(op, why);
    Location loc = op.getLoc();
    auto call = LibraryCallOp::create(rewriter, loc, TypeRange{type},
                                      rewriter.getStringAttr(callee), inputs,
                                      emptyTensor(rewriter, loc, type),
                                      rewriter.getDenseI64ArrayAttr(params));
    rewriter.replaceOp(op, call->getResult(0));
    return success();
  }
};

/// `v` reshaped between [N, C, ...] and [N, C, S] (`to`, either way): the
/// extents after the channels collapsed into S, or a unit S added to
/// [N, C]; which is all a batch norm needs.
Value reshapeForBatchNorm(OpBuilder &b, Location loc, Value v,
                          RankedTensorType to) {
  auto from = cast<RankedTensorType>(v.getType());
  int64_t low = std::min(from.getRank(), to.getRank()),
          high = std::max(from.getRank(), to.getRank());
  if (low == high)
    return v;
  // Over the dimensions of the higher-ranked side.
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  if (low == 3) {
    groups = {{0}, {1}, {}};
    for (int64_t d = 2; d < high; ++d)
      groups[2].push_back(d);
  }
  if (to.getRank() > from.getRank())
    return tensor::ExpandShapeOp::create(b, loc, to, v, groups);
  return tensor::CollapseShapeOp::create(b, loc, to, v, groups);
}

/// A training batch norm, or its gradients, as an of.library_call
/// (`dnn.batch_norm`, `dnn.batch_norm_grad`: oneDNN on the CPU, cuDNN on a
/// GPU), on x collapsed to [N, C, S]: added, ahead of the generated forms,
/// when the pass runs with norm-library. f32 only: both libraries keep the
/// statistics, scale and shift in f32, which for bf16 and f16 data would
/// make the step mix types. The running statistics' update stays generated
/// (a [C] kernel). The gradient's statistics are x's, computed by generated
/// reductions, as the generated gradient does. Inference batch norms stay
/// generated: one elementwise kernel, which fuses with its neighbours.
template <typename OpTy>
struct BatchNormLibraryLowering : DnnLibraryPattern<OpTy> {
  using DnnLibraryPattern<OpTy>::DnnLibraryPattern;
  using DnnLibraryPattern<OpTy>::library;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                PatternRewriter &rewriter) const override {
    constexpr bool forward = std::is_same_v<OpTy, BatchNormOp>;
    RankedTensorType type = localType(op->getResult(0).getType());
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(
          op, "library batch norms are f32: the libraries keep statistics, "
              "scale and shift in f32");
    if constexpr (forward)
      if (!op.getTraining())
        return rewriter.notifyMatchFailure(
            op, "an inference batch norm is one generated elementwise kernel");
    if (const char *why = library.refuses({0, 0, 0, 0}, {type}))
      return rewriter.notifyMatchFailure(op, why);
    // The geometry from the shape, checked before any IR is made: an empty
    // tensor, say, stays generated.
    int64_t n = type.getDimSize(0), c = type.getDimSize(1);
    int64_t s = n * c ? type.getNumElements() / (n * c) : 0;
    SmallVector<int64_t> params{
        n, c, s,
        ::of::plan::encodeBatchNormEpsilon(op.getEpsilon().convertToDouble())};
    if (const char *why = ::of::plan::checkBatchNormGeometry(
            ::of::plan::decodeBatchNormGeometry(params.data())))
      return rewriter.notifyMatchFailure(op, why);
    if (library.cudnn && forward && n * s < 2)
      return rewriter.notifyMatchFailure(
          op, "the cuDNN step takes the biased variance from cuDNN's "
              "unbiased one, which one element per channel cannot give");
    // PyTorch keeps cuDNN's training batch norm to batches of at most
    // 880801 (cuDNN 7 returned NOT_SUPPORTED above; PyTorch #32763); not
    // yet tried on cuDNN 9.
    if (library.cudnn && n > 880801)
      return rewriter.notifyMatchFailure(
          op, "cuDNN's training batch norm is kept to batches of at most "
              "880801, as PyTorch keeps it");
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto x3Type = RankedTensorType::get({n, c, s}, type.getElementType());
    Value x3 = reshapeForBatchNorm(rewriter, loc, x, x3Type);
    auto channelType = RankedTensorType::get({c}, type.getElementType());
    SmallVector<Value> inputs{x3};
    StringRef callee = ::of::plan::kBatchNormForwardFunction;
    if constexpr (forward) {
      inputs.append({adaptor.getWeight(), adaptor.getBias()});
    } else {
      callee = ::of::plan::kBatchNormGradFunction;
      auto [mean, var] = batchStatistics(rewriter, loc, x);
      inputs.append(
          {reshapeForBatchNorm(rewriter, loc, adaptor.getGrad(), x3Type),
           adaptor.getWeight(), mean, var});
    }
    SmallVector<Type> types{x3Type, channelType, channelType};
    SmallVector<Value> inits;
    for (Type t : types)
      inits.push_back(emptyTensor(rewriter, loc, cast<RankedTensorType>(t)));
    auto call = LibraryCallOp::create(
        rewriter, loc, types, rewriter.getStringAttr(callee), inputs, inits,
        rewriter.getDenseI64ArrayAttr(params));
    Value first = reshapeForBatchNorm(rewriter, loc, call->getResult(0), type);
    if constexpr (forward) {
      auto [newMean, newVar] = runningStatistics(
          rewriter, loc, op, adaptor, call->getResult(1), call->getResult(2));
      rewriter.replaceOp(op, {first, newMean, newVar});
    } else {
      rewriter.replaceOp(op, {first, call->getResult(1), call->getResult(2)});
    }
    return success();
  }
};

/// The table: which ops the options give to the library.
void populateLibraryCallsPatterns(
    RewritePatternSet &patterns, const SelectLibraryCallsPassOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  if (options.convLibrary)
    patterns.add<ConvLibraryLowering<Conv2DOp>,
                 ConvLibraryLowering<Conv2DGradInputOp>,
                 ConvLibraryLowering<Conv2DGradFilterOp>>(ctx, options);
  if (options.poolLibrary)
    patterns
        .add<PoolLibraryLowering<MaxPool2DOp>, PoolLibraryLowering<AvgPool2DOp>,
             PoolLibraryLowering<Pool2DGradOp>>(ctx, options);
  if (options.normLibrary)
    patterns.add<BatchNormLibraryLowering<BatchNormOp>,
                 BatchNormLibraryLowering<BatchNormGradOp>>(ctx, options);
}

struct SelectLibraryCallsPass
    : mlir::of::impl::SelectLibraryCallsPassBase<SelectLibraryCallsPass> {
  using SelectLibraryCallsPassBase::SelectLibraryCallsPassBase;
  void runOnOperation() override {
    if (dnnLibrary != "onednn" && dnnLibrary != "cudnn") {
      getOperation().emitError("--of-select-library-calls: dnn-library must "
                               "be onednn or cudnn, got '")
          << dnnLibrary << "'";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateLibraryCallsPatterns(
        patterns, {convLibrary, poolLibrary, normLibrary, dnnLibrary});
    // One walk: no folding or dead-code removal of the ops it leaves.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
