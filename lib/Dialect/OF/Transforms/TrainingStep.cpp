//===- TrainingStep.cpp - Gradients plus the optimizer as one step --------===//
//
// --of-training-step: from @f and its @f_grad (--of-autodiff), builds
// @f_train_step = gradients, optional global-norm clipping and an SGD or
// AdamW update, returning the loss and the new parameters and optimizer
// state marked `of.update`, so the runtime keeps them across steps. The
// optimizer is written with of ops, so SBP distributes it like the rest
// (state has its parameter's distribution).
//
//===----------------------------------------------------------------------===//

#include "OF/ABI/StateNames.h"
#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

namespace mlir::of {
#define GEN_PASS_DEF_TRAININGSTEPPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

/// A new argument of the step: its type and name.
struct StateArg {
  Type type;
  std::string name;
};

/// Builds the arithmetic of the update with of ops at one insertion point.
struct UpdateBuilder {
  OpBuilder &b;
  Location loc;

  Value scalar(Type elementType, double v) {
    auto type = RankedTensorType::get({}, elementType);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
  }
  Value scalarLike(Value like, double v) {
    return scalar(getElementTypeOrSelf(like.getType()), v);
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value scale(Value x, double c) { return mul(x, scalarLike(x, c)); }
  /// `v` as the element type of `like` (the learning rate is f32).
  Value castLike(Value v, Value like) {
    return castTo(v, getElementTypeOrSelf(like.getType()));
  }
  /// `v` with element type `et`.
  Value castTo(Value v, Type et) {
    if (getElementTypeOrSelf(v.getType()) == et)
      return v;
    auto type = cast<RankedTensorType>(stripSbp(v.getType()));
    return CastOp::create(b, loc, RankedTensorType::get(type.getShape(), et),
                          v);
  }
  /// `v` with the type `type` (boxing to its distribution where it has
  /// none yet).
  Value as(Value v, Type type) {
    return v.getType() == type ? v : BoxingOp::create(b, loc, type, v);
  }
  /// `condition ? onTrue : onFalse`, of `onFalse`'s shape and element type
  /// (`condition` a scalar).
  Value select(Value condition, Value onTrue, Value onFalse) {
    return SelectOp::create(b, loc, stripSbp(onFalse.getType()), condition,
                            onTrue, onFalse);
  }
  /// The scalar i1 `x dir y`.
  Value compare(CompareDirection dir, Value x, Value y) {
    return CompareOp::create(b, loc, RankedTensorType::get({}, b.getI1Type()),
                             dir, x, y);
  }
  /// The sum of the squares of every element of `v`, a scalar.
  Value sumOfSquares(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    auto axes = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    Value sq = mul(v, v);
    return axes.empty() ? sq : ReduceSumOp::create(b, loc, sq, axes, false);
  }
};

/// `type` with K stacked on a new leading axis; a split moves with its
/// dimension.
FailureOr<Type> stackedType(Type type, int64_t k) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return failure();
  SmallVector<int64_t> shape = {k};
  llvm::append_range(shape, ranked.getShape());
  Attribute encoding = ranked.getEncoding();
  if (auto sbp = dyn_cast_or_null<SbpAttr>(encoding)) {
    SmallVector<SbpEntry> entries(sbp.getEntries());
    for (SbpEntry &e : entries)
      if (e.isSplit())
        e.dim += 1;
    encoding = SbpAttr::get(type.getContext(), sbp.getPlacement(), entries);
  }
  return Type(RankedTensorType::get(shape, ranked.getElementType(), encoding));
}

/// ZeRO: the type of a parameter's optimizer state, split on every mesh axis
/// where the parameter is broadcast, along a dimension that no other axis
/// splits and that has at least as many elements as the axis has members
/// (so no rank holds an empty shard). A parameter without a distribution
/// counts as B everywhere on the function's placement.
Type zeroSharded(Type paramType,
                 const std::optional<FuncPlacement> &placement) {
  auto ranked = dyn_cast<RankedTensorType>(paramType);
  if (!ranked || !placement || ranked.getRank() == 0)
    return paramType;
  MLIRContext *ctx = paramType.getContext();
  SmallVector<SbpEntry> entries(placement->grid.size(), SbpEntry::broadcast());
  if (auto sbp = dyn_cast_or_null<SbpAttr>(ranked.getEncoding()))
    entries.assign(sbp.getEntries().begin(), sbp.getEntries().end());
  for (auto [axis, entry] : llvm::enumerate(entries)) {
    if (!entry.isBroadcast())
      continue;
    for (int64_t d = 0; d < ranked.getRank(); ++d) {
      bool taken = llvm::any_of(entries, [&](const SbpEntry &e) {
        return e.isSplit() && e.dim == d;
      });
      if (!taken && ranked.getDimSize(d) >= placement->grid[axis]) {
        entry = SbpEntry::split(d);
        break;
      }
    }
  }
  return RankedTensorType::get(ranked.getShape(), ranked.getElementType(),
                               SbpAttr::get(ctx, placement->ref, entries));
}

struct TrainingStepPass
    : mlir::of::impl::TrainingStepPassBase<TrainingStepPass> {
  using TrainingStepPassBase::TrainingStepPassBase;

  void runOnOperation() override {
    if (!llvm::is_contained({"sgd", "adam", "adamw", "adamax", "nadam", "radam",
                             "adagrad", "rmsprop", "adadelta"},
                            optimizer)) {
      getOperation().emitError("--of-training-step: unknown optimizer '")
          << optimizer
          << "' (sgd, adam, adamw, adamax, nadam, radam, adagrad, rmsprop, "
             "adadelta)";
      return signalPassFailure();
    }
    if (nesterov && (momentum <= 0.0 || dampening != 0.0)) {
      getOperation().emitError("--of-training-step: nesterov needs a momentum "
                               "and zero dampening");
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<std::pair<func::FuncOp, func::FuncOp>> work;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto grad =
              symbols.lookup<func::FuncOp>((func.getSymName() + "_grad").str());
          grad &&
          llvm::any_of(llvm::seq(func.getNumArguments()), [&](unsigned i) {
            return func.getArgAttr(i, OFDialect::ParamAttrHelper::getNameStr());
          }))
        work.push_back({func, grad});
    for (auto [primal, grad] : work)
      if (failed(buildStep(primal, grad, symbols)))
        return signalPassFailure();
  }

  LogicalResult buildStep(func::FuncOp primal, func::FuncOp grad,
                          SymbolTable &symbols) {
    std::string name = (primal.getSymName() + "_train_step").str();
    if (symbols.lookup(name))
      return primal.emitError("--of-training-step: @")
             << name << " exists already";
    FailureOr<FuncPlacements> found = collectPlacements(primal);
    if (failed(found))
      return failure();
    const FuncPlacements &placements = *found;
    MLIRContext *ctx = primal.getContext();
    // Scalars of the step (the learning rate, Adam's step count, the loss
    // scale): B on the loss's placement (a pipeline's last stage), or the
    // function's first. Each parameter's update takes them, and its
    // contribution to the gradient norm gives them, through boxings to
    // and from its own placement (pipeline stages).
    const FuncPlacement *home = nullptr;
    if (!placements.list.empty()) {
      home = placements.of(primal.getResultTypes().front());
      if (!home)
        home = &placements.list.front();
    }
    auto placed = [&](Type type) -> std::optional<FuncPlacement> {
      if (const FuncPlacement *p = placements.of(type))
        return *p;
      return home ? std::optional<FuncPlacement>(*home) : std::nullopt;
    };
    Type scalarType = RankedTensorType::get({}, Float32Type::get(ctx));
    if (home)
      scalarType = RankedTensorType::get(
          {}, Float32Type::get(ctx),
          SbpAttr::get(
              ctx, home->ref,
              SmallVector<SbpEntry>(home->grid.size(), SbpEntry::broadcast())));

    SmallVector<unsigned> params;
    for (unsigned i = 0; i < primal.getNumArguments(); ++i)
      if (primal.getArgAttr(i, OFDialect::ParamAttrHelper::getNameStr()))
        params.push_back(i);
    auto paramName = [&](unsigned i) {
      auto n = primal.getArgAttrOfType<StringAttr>(
          i, OFDialect::NameAttrHelper::getNameStr());
      return n ? n.str() : "arg" + std::to_string(i);
    };

    // The optimizer's state, per parameter and kind.
    namespace names = ::of::state;
    // Adam and AdamW differ only in their weight decay: Adam's is L2 (added
    // to the gradient), AdamW's decoupled (applied to the parameter).
    bool adam = optimizer == "adamw" || optimizer == "adam",
         adamax = optimizer == "adamax", nadam = optimizer == "nadam",
         radam = optimizer == "radam",
         // the optimizers with Adam's first moment and step count
        adamFamily = adam || adamax || nadam || radam,
         adagrad = optimizer == "adagrad", rmsprop = optimizer == "rmsprop",
         adadelta = optimizer == "adadelta";
    SmallVector<StringRef> kinds;
    if (adamax)
      kinds = {names::kAdamFirstMoment, names::kAdamaxInfNorm};
    else if (adamFamily)
      kinds = {names::kAdamFirstMoment, names::kAdamSecondMoment};
    if (adam && amsgrad)
      kinds.push_back(names::kAdamMaxSecondMoment);
    else if (adagrad)
      kinds = {names::kAdagradSum};
    else if (adadelta)
      kinds = {names::kAdadeltaSquareAvg, names::kAdadeltaAccDelta};
    else if (rmsprop)
      kinds = {names::kRmspropSquareAvg};
    if ((rmsprop || optimizer == "sgd") && momentum != 0.0)
      kinds.push_back(names::kMomentum);
    if (rmsprop && centered)
      kinds.push_back(names::kRmspropGradAvg);
    auto kindIndex = [&](StringRef kind) -> unsigned {
      return llvm::find(kinds, kind) - kinds.begin();
    };
    SmallVector<StateArg> state;
    for (StringRef kind : kinds)
      for (unsigned p : params)
        state.push_back({zero
                             ? zeroSharded(primal.getArgumentTypes()[p],
                                           placed(primal.getArgumentTypes()[p]))
                             : primal.getArgumentTypes()[p],
                         kind.str() + paramName(p)});
    // Scalars of the state, each at its index in `state`.
    std::optional<unsigned> countState, scaleLog2State, goodStepsState,
        muProductState;
    if (adamFamily) {
      countState = state.size();
      state.push_back({scalarType, std::string(names::kAdamStep)});
    } else if (adagrad) {
      countState = state.size(); // the step count, for lr-decay
      state.push_back({scalarType, std::string(names::kAdagradStep)});
    }
    if (nadam) { // NAdam's product of its momentum coefficients
      muProductState = state.size();
      state.push_back({scalarType, std::string(names::kNadamMuProduct)});
    }
    // SGD with dampening: the step count tells the first step, whose
    // buffer is the gradient itself.
    std::optional<unsigned> sgdStepState;
    if (optimizer == "sgd" && momentum != 0.0 && dampening != 0.0) {
      sgdStepState = state.size();
      state.push_back({scalarType, std::string(names::kSgdStep)});
    }
    // Dynamic loss scaling: the backward pass takes the loss's cotangent as
    // the argument loss_seed.
    bool seeded = grad.getNumArguments() == primal.getNumArguments() + 1;
    if (lossScaling && !seeded)
      return primal.emitError("--of-training-step: loss-scaling needs @")
             << grad.getSymName()
             << " to take the loss's cotangent (--of-autodiff="
                "seed-argument=true)";
    if (lossScaling) {
      scaleLog2State = state.size();
      state.push_back({scalarType, std::string(::of::state::kLossScaleLog2)});
      goodStepsState = state.size();
      state.push_back(
          {scalarType, std::string(::of::state::kLossScaleGoodSteps)});
    }

    // Signature: primal arguments (data ones stacked with accumulation),
    // state, lr.
    if (accumulate == 0)
      return primal.emitError("--of-training-step: accumulate must be >= 1");
    unsigned numPrimal = primal.getNumArguments();
    SmallVector<bool> isParam(numPrimal, false);
    for (unsigned p : params)
      isParam[p] = true;
    // The primal's own state updates (results marked of.update: batch
    // norm's running statistics): arguments that are state, not data, and
    // come back from @<name>_grad after the gradients.
    // Its other results are outputs (values the caller reads beside the
    // loss, e.g. logits), returned after the loss. Both come back from
    // @<name>_grad after the gradients, in the primal's order: auxIndex
    // is each one's position there.
    SmallVector<std::pair<unsigned, std::string>> auxUpdates;
    SmallVector<unsigned> auxUpdateIndex, outputIndex;
    for (unsigned r = 1; r < primal.getNumResults(); ++r) {
      if (auto target = primal.getResultAttrOfType<IntegerAttr>(
              r, OFDialect::UpdateAttrHelper::getNameStr())) {
        auto n = primal.getResultAttrOfType<StringAttr>(
            r, OFDialect::NameAttrHelper::getNameStr());
        unsigned a = target.getInt();
        auxUpdates.push_back({a, n ? n.str() : paramName(a)});
        auxUpdateIndex.push_back(r - 1);
        isParam[a] = true; // not stacked by accumulation
      } else {
        outputIndex.push_back(r - 1);
      }
    }
    if (!outputIndex.empty() && accumulate > 1)
      return primal.emitError("--of-training-step accumulate=")
             << static_cast<int64_t>(accumulate) << ": result "
             << outputIndex.front() + 1
             << " is an output beside the loss, which gradient accumulation "
                "does not return (each micro-batch has its own)";
    SmallVector<Type> argTypes;
    for (unsigned i = 0; i < numPrimal; ++i) {
      Type type = primal.getArgumentTypes()[i];
      if (accumulate > 1 && !isParam[i]) {
        FailureOr<Type> stacked = stackedType(type, accumulate);
        if (failed(stacked))
          return primal.emitError("--of-training-step: accumulate needs "
                                  "ranked tensor arguments, argument ")
                 << i << " is " << type;
        type = *stacked;
      }
      argTypes.push_back(type);
    }
    for (const StateArg &s : state)
      argTypes.push_back(s.type);
    argTypes.push_back(scalarType);
    SmallVector<DictionaryAttr> argAttrs;
    primal.getAllArgAttrs(argAttrs);
    OpBuilder attrs(ctx);
    auto named = [&](StringRef n) {
      return attrs.getDictionaryAttr(attrs.getNamedAttr(
          OFDialect::NameAttrHelper::getNameStr(), attrs.getStringAttr(n)));
    };
    for (const StateArg &s : state)
      argAttrs.push_back(named(s.name));
    argAttrs.push_back(named("lr"));

    OpBuilder top(primal);
    top.setInsertionPointAfter(grad);
    auto step = func::FuncOp::create(top, primal.getLoc(), name,
                                     FunctionType::get(ctx, argTypes, {}));
    step.setAllArgAttrs(argAttrs);
    Block *body = step.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockEnd(body);
    Location loc = primal.getLoc();
    UpdateBuilder u{b, loc};
    // Between the step's placement and a parameter's (pipeline stages):
    // `here` takes a scalar of the step (made once per value and
    // placement) to where `like` lives, `toHome` a scalar computed where
    // `like` lives to the step's placement; both as B.
    auto scalarOn = [&](Value v, const FuncPlacement &p) {
      auto type = cast<RankedTensorType>(stripSbp(v.getType()));
      return RankedTensorType::get(
          type.getShape(), type.getElementType(),
          SbpAttr::get(
              ctx, p.ref,
              SmallVector<SbpEntry>(p.grid.size(), SbpEntry::broadcast())));
    };
    DenseMap<std::pair<Value, Attribute>, Value> moved;
    auto here = [&](Value v, Value like) -> Value {
      const FuncPlacement *to = placements.of(like.getType());
      if (!home || !to || to == home)
        return v;
      Value &m = moved[{v, to->ref}];
      if (!m)
        m = BoxingOp::create(b, loc, scalarOn(v, *to), v);
      return m;
    };
    auto toHome = [&](Value v, Value like) -> Value {
      const FuncPlacement *from = placements.of(like.getType());
      if (!home || !from || from == home)
        return v;
      return BoxingOp::create(b, loc, scalarOn(v, *home), v);
    };

    auto stateArgAt = [&](unsigned index) {
      return body->getArgument(numPrimal + index);
    };
    Value lr = body->getArgument(argTypes.size() - 1);
    // The loss's cotangent: the loss scale 2^(loss-scale-log2 +
    // loss_scale_log2) when scaling, else 1.
    Value seed, scale;
    if (seeded) {
      Type seedType = grad.getArgumentTypes().back();
      if (lossScaling) {
        Value exponent =
            u.add(stateArgAt(*scaleLog2State), u.scalarLike(lr, lossScaleLog2));
        scale = PowOp::create(b, loc, u.scalarLike(lr, 2.0), exponent);
        seed = u.castTo(scale, getElementTypeOrSelf(seedType));
      } else {
        seed = u.scalar(getElementTypeOrSelf(seedType), 1.0);
      }
      seed = u.as(seed, seedType);
    }

    // The gradients, averaged over the micro-batches: micro-batch i of a
    // data argument is its slice [i] along the stacking axis.
    // Micro-batches update the state in turn: each call reads the state
    // the previous one returned.
    Value loss;
    SmallVector<Value> grads;
    DenseMap<unsigned, Value> currentState;
    SmallVector<Value> auxValues;
    for (unsigned micro = 0; micro < accumulate; ++micro) {
      SmallVector<Value> callArgs;
      for (unsigned i = 0; i < numPrimal; ++i) {
        Value arg = body->getArgument(i);
        if (Value current = currentState.lookup(i)) {
          callArgs.push_back(current);
          continue;
        }
        if (accumulate == 1 || isParam[i]) {
          callArgs.push_back(arg);
          continue;
        }
        auto stacked = cast<RankedTensorType>(stripSbp(arg.getType()));
        SmallVector<int64_t> starts(stacked.getRank(), 0);
        SmallVector<int64_t> limits(stacked.getShape());
        starts[0] = micro;
        limits[0] = micro + 1;
        Value slice = SliceOp::create(b, loc, arg, starts, limits, nullptr);
        auto original = cast<RankedTensorType>(primal.getArgumentTypes()[i]);
        Value piece =
            ReshapeOp::create(b, loc,
                              RankedTensorType::get(original.getShape(),
                                                    original.getElementType()),
                              slice);
        Value taken = u.as(piece, original);
        // In a pipeline, --of-schedule-stages=1f1b tells the micro-batches
        // apart from what depends on these marks.
        if (placements.list.size() > 1)
          for (Value v : {slice, piece, taken})
            v.getDefiningOp()->setAttr(
                OFDialect::MicroBatchAttrHelper::getNameStr(),
                b.getI64IntegerAttr(micro));
        callArgs.push_back(taken);
      }
      if (seed)
        callArgs.push_back(seed);
      auto call = func::CallOp::create(b, loc, grad, callArgs);
      loss = micro ? u.add(loss, call.getResult(0)) : call.getResult(0);
      ValueRange callGrads =
          ValueRange(call.getResults()).slice(1, params.size());
      for (auto [k, g] : llvm::enumerate(callGrads)) {
        if (micro)
          grads[k] = u.add(grads[k], g);
        else
          grads.push_back(g);
      }
      auxValues = llvm::to_vector(
          ValueRange(call.getResults()).drop_front(1 + params.size()));
      for (auto [j, aux] : llvm::enumerate(auxUpdates))
        currentState[aux.first] = auxValues[auxUpdateIndex[j]];
    }
    if (accumulate > 1) {
      loss = u.scale(loss, 1.0 / accumulate);
      for (Value &g : grads)
        g = u.scale(g, 1.0 / accumulate);
    }
    auto stateArg = [&](unsigned kindIndex, unsigned paramIndex) {
      return stateArgAt(kindIndex * params.size() + paramIndex);
    };
    // Where each gradient lives: its parameter's placement (a sum of
    // micro-batches' gradients has a type without one until propagation).
    auto paramOf = [&](unsigned k) { return body->getArgument(params[k]); };
    // Scaled gradients back to their true size.
    if (scale) {
      Value inverse = u.div(u.scalarLike(lr, 1.0), scale);
      for (auto [k, g] : llvm::enumerate(grads))
        g = u.mul(g, u.castLike(here(inverse, paramOf(k)), g));
    }

    // The sum of the squares of every gradient: for clipping, and with loss
    // scaling to tell whether all are finite (x * 0 == 0 fails for inf and
    // NaN, and a non-finite element makes the sum non-finite).
    Value total, finite;
    if (maxGradNorm > 0.0 || lossScaling)
      for (auto [k, g] : llvm::enumerate(grads)) {
        Value sq = toHome(u.castLike(u.sumOfSquares(g), lr), paramOf(k));
        total = total ? u.add(total, sq) : sq;
      }
    if (lossScaling)
      finite = u.compare(CompareDirection::eq,
                         u.mul(total, u.scalarLike(total, 0.0)),
                         u.scalarLike(total, 0.0));

    // Clipping by the global norm over every parameter's gradient.
    Value norm;
    if (maxGradNorm > 0.0) {
      norm = SqrtOp::create(b, loc, total);
      Value factor =
          MinimumOp::create(b, loc, u.scalarLike(norm, 1.0),
                            u.div(u.scalarLike(norm, maxGradNorm),
                                  u.add(norm, u.scalarLike(norm, 1e-6))));
      for (auto [k, g] : llvm::enumerate(grads))
        g = u.mul(g, u.castLike(here(factor, paramOf(k)), g));
    }

    SmallVector<Value> results = {loss};
    SmallVector<DictionaryAttr> resultAttrs = {attrs.getDictionaryAttr(
        attrs.getNamedAttr(OFDialect::NameAttrHelper::getNameStr(),
                           attrs.getStringAttr("loss")))};
    for (unsigned j : outputIndex) {
      results.push_back(auxValues[j]);
      resultAttrs.push_back(primal.getResultAttrDict(j + 1));
    }
    if (gradsOut) {
      for (auto [k, p] : llvm::enumerate(params)) {
        results.push_back(u.as(grads[k], argTypes[p]));
        resultAttrs.push_back(named("grad_" + paramName(p)));
      }
      if (norm) {
        results.push_back(norm);
        resultAttrs.push_back(named("grad_norm"));
      }
    }
    auto update = [&](Value v, unsigned argIndex, StringRef outName) {
      Type type = argTypes[argIndex];
      results.push_back(u.as(v, type));
      resultAttrs.push_back(attrs.getDictionaryAttr(
          {attrs.getNamedAttr(OFDialect::NameAttrHelper::getNameStr(),
                              attrs.getStringAttr(outName)),
           attrs.getNamedAttr(OFDialect::UpdateAttrHelper::getNameStr(),
                              attrs.getI64IntegerAttr(argIndex))}));
    };

    Value stepCount, bias1, bias2, decayedLr, firstStep;
    // NAdam's momentum coefficients of this step and the next, and their
    // running products; RAdam's rectification (0 while the variance is not
    // yet tractable) and whether it applies.
    Value mu, muNext, muProduct, muProductNext, rect, rectified;
    if (sgdStepState) {
      stepCount = u.add(stateArgAt(*sgdStepState), u.scalarLike(lr, 1.0));
      firstStep = u.compare(CompareDirection::eq, stateArgAt(*sgdStepState),
                            u.scalarLike(lr, 0.0));
    }
    if (adagrad) {
      // lr / (1 + (t - 1) lr_decay)
      stepCount = u.add(stateArgAt(*countState), u.scalarLike(lr, 1.0));
      decayedLr = u.div(lr, u.add(u.scalarLike(lr, 1.0),
                                  u.scale(stateArgAt(*countState), lrDecay)));
    }
    if (adamFamily) {
      stepCount = u.add(stateArgAt(*countState), u.scalarLike(lr, 1.0));
      // 1 - beta^t, in f64 as PyTorch computes it: in f32 it cancels
      // (1 - 0.999f is 4.7e-5 off 1e-3, and Adam's steps with it).
      auto correction = [&](double beta) {
        Value t = u.castTo(stepCount, b.getF64Type());
        Value power = PowOp::create(b, loc, u.scalarLike(t, beta), t);
        return u.castLike(u.sub(u.scalarLike(t, 1.0), power), lr);
      };
      bias1 = correction(beta1);
      bias2 = correction(beta2);
    }
    if (nadam) {
      // mu_t = beta1 (1 - 0.96^(t psi) / 2), the product of mu_1..mu_t (the
      // state starts at 0, read as the empty product 1), in f64 as PyTorch's
      // Python floats.
      Value t = u.castTo(stepCount, b.getF64Type());
      auto coefficient = [&](Value step) {
        Value power = PowOp::create(b, loc, u.scalarLike(step, 0.96),
                                    u.scale(step, momentumDecay));
        return u.scale(u.sub(u.scalarLike(step, 1.0), u.scale(power, 0.5)),
                       beta1);
      };
      mu = coefficient(t);
      muNext = coefficient(u.add(t, u.scalarLike(t, 1.0)));
      Value old = u.castTo(stateArgAt(*muProductState), b.getF64Type());
      Value first = u.compare(CompareDirection::eq, stateArgAt(*countState),
                              u.scalarLike(lr, 0.0));
      muProduct = u.mul(u.select(first, u.scalarLike(old, 1.0), old), mu);
      muProductNext = u.mul(muProduct, muNext);
    }
    if (radam) {
      // rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t); the rectified update
      // where rho_t > 5 (PyTorch's), in f64.
      Value t = u.castTo(stepCount, b.getF64Type());
      double rhoInf = 2 / (1 - beta2) - 1;
      Value power = PowOp::create(b, loc, u.scalarLike(t, beta2), t);
      Value rho = u.sub(u.scalarLike(t, rhoInf),
                        u.div(u.mul(u.scale(t, 2.0), power),
                              u.sub(u.scalarLike(t, 1.0), power)));
      rectified = u.compare(CompareDirection::gt, rho, u.scalarLike(rho, 5.0));
      Value ratio = u.div(u.mul(u.mul(u.sub(rho, u.scalarLike(rho, 4.0)),
                                      u.sub(rho, u.scalarLike(rho, 2.0))),
                                u.scalarLike(rho, rhoInf)),
                          u.scale(rho, (rhoInf - 4) * (rhoInf - 2)));
      // (the square root of a negative ratio is never selected)
      rect = u.castLike(u.select(rectified, SqrtOp::create(b, loc, ratio),
                                 u.scalarLike(rho, 0.0)),
                        lr);
    }

    // With loss scaling, a step whose gradients are not finite keeps the
    // old parameters and optimizer state.
    auto keep = [&](Value next, Value old) {
      return finite ? u.select(here(finite, old), next, old) : next;
    };
    SmallVector<Value> newState(state.size());
    for (auto [k, p] : llvm::enumerate(params)) {
      Value param = body->getArgument(p);
      Value g = grads[k];
      Value lrp = u.castLike(here(lr, param), param);
      Value next;
      // A parameter's own `of.weight_decay` (PyTorch's parameter groups:
      // no decay for biases and norms) overrides the pass option.
      double weightDecay = this->weightDecay;
      if (auto own = primal.getArgAttrOfType<FloatAttr>(
              p, OFDialect::WeightDecayAttrHelper::getNameStr()))
        weightDecay = own.getValueAsDouble();
      if (adam) {
        bool l2 = optimizer == "adam";
        if (l2 && weightDecay != 0.0)
          g = u.add(g, u.scale(param, weightDecay));
        Value m = u.add(u.scale(stateArg(0, k), beta1), u.scale(g, 1 - beta1));
        Value v = u.add(u.scale(stateArg(1, k), beta2),
                        u.scale(u.mul(g, g), 1 - beta2));
        Value mhat = u.div(m, u.castLike(here(bias1, param), param));
        // AMSGrad divides by the largest second moment so far (PyTorch's
        // max_exp_avg_sq), bias-corrected as the second moment is.
        Value vmax = v;
        if (amsgrad) {
          vmax = MaximumOp::create(
              b, loc, stateArg(kindIndex(names::kAdamMaxSecondMoment), k), v);
          newState[kindIndex(names::kAdamMaxSecondMoment) * params.size() + k] = vmax;
        }
        Value vhat = u.div(vmax, u.castLike(here(bias2, param), param));
        Value decayed = param;
        if (!l2 && weightDecay != 0.0)
          decayed = u.mul(param, u.sub(u.scalarLike(param, 1.0),
                                       u.scale(lrp, weightDecay)));
        Value denom =
            u.add(SqrtOp::create(b, loc, vhat), u.scalarLike(param, epsilon));
        next = u.sub(decayed, u.mul(lrp, u.div(mhat, denom)));
        newState[k] = m;
        newState[params.size() + k] = v;
      } else if (adamax || nadam || radam) {
        // Adamax, NAdam, RAdam: L2 weight decay, Adam's first moment
        if (weightDecay != 0.0)
          g = u.add(g, u.scale(param, weightDecay));
        Value m = u.add(u.scale(stateArg(0, k), beta1), u.scale(g, 1 - beta1));
        newState[k] = m;
        Value eps = u.scalarLike(param, epsilon);
        if (adamax) {
          // u = max(beta2 u, |g| + eps); p -= lr / (1 - beta1^t) m / u
          Value absG = MaximumOp::create(b, loc, g, NegOp::create(b, loc, g));
          Value inf = MaximumOp::create(b, loc, u.scale(stateArg(1, k), beta2),
                                        u.add(absG, eps));
          newState[params.size() + k] = inf;
          Value clr = u.div(lrp, u.castLike(here(bias1, param), param));
          next = u.sub(param, u.mul(clr, u.div(m, inf)));
        } else {
          Value v = u.add(u.scale(stateArg(1, k), beta2),
                          u.scale(u.mul(g, g), 1 - beta2));
          newState[params.size() + k] = v;
          if (nadam) {
            // p -= lr (1 - mu) / (1 - prod) g / d + lr mu' / (1 - prod') m / d
            Value denom = u.add(
                SqrtOp::create(b, loc,
                               u.div(v, u.castLike(here(bias2, param), param))),
                eps);
            auto factor = [&](Value numerator, Value product) {
              Value one = u.scalarLike(product, 1.0);
              return u.castLike(
                  here(u.div(numerator, u.sub(one, product)), param), param);
            };
            Value gradPart =
                u.mul(factor(u.sub(u.scalarLike(mu, 1.0), mu), muProduct),
                      u.div(g, denom));
            Value momentumPart =
                u.mul(factor(muNext, muProductNext), u.div(m, denom));
            next = u.sub(param, u.mul(lrp, u.add(gradPart, momentumPart)));
          } else {
            // RAdam: p -= lr mhat (rect sqrt(1 - beta2^t) / (sqrt(v) + eps)),
            // or lr mhat while the variance is not tractable
            Value mhat = u.div(m, u.castLike(here(bias1, param), param));
            Value adaptive = u.div(
                SqrtOp::create(b, loc, u.castLike(here(bias2, param), param)),
                u.add(SqrtOp::create(b, loc, v), eps));
            Value scaled =
                u.mul(u.castLike(here(rect, param), param), adaptive);
            // (the select's branches have the parameter's shape: rect is 0
            // where it is not rectified, so 0 * scaled + 1 is finite)
            Value ones = u.add(u.scale(scaled, 0.0), u.scalarLike(param, 1.0));
            Value factor = u.select(here(rectified, param), scaled, ones);
            next = u.sub(param, u.mul(lrp, u.mul(mhat, factor)));
          }
        }
      } else {
        if (weightDecay != 0.0)
          g = u.add(g, u.scale(param, weightDecay));
        auto kept = [&](StringRef kind, Value v) {
          newState[kindIndex(kind) * params.size() + k] = v;
          return v;
        };
        auto old = [&](StringRef kind) { return stateArg(kindIndex(kind), k); };
        auto average = [&](Value avg, Value v, double decay) {
          return u.add(u.scale(avg, decay), u.scale(v, 1 - decay));
        };
        Value eps = u.scalarLike(param, epsilon);
        if (adagrad) {
          Value sum = kept(names::kAdagradSum,
                           u.add(old(names::kAdagradSum), u.mul(g, g)));
          Value clr = u.castLike(here(decayedLr, param), param);
          next = u.sub(
              param,
              u.mul(clr, u.div(g, u.add(SqrtOp::create(b, loc, sum), eps))));
        } else if (adadelta) {
          Value sq =
              kept(names::kAdadeltaSquareAvg,
                   average(old(names::kAdadeltaSquareAvg), u.mul(g, g), rho));
          Value acc = old(names::kAdadeltaAccDelta);
          Value delta = u.mul(u.div(SqrtOp::create(b, loc, u.add(acc, eps)),
                                    SqrtOp::create(b, loc, u.add(sq, eps))),
                              g);
          kept(names::kAdadeltaAccDelta,
               average(acc, u.mul(delta, delta), rho));
          next = u.sub(param, u.mul(lrp, delta));
        } else if (rmsprop) {
          Value sq =
              kept(names::kRmspropSquareAvg,
                   average(old(names::kRmspropSquareAvg), u.mul(g, g), alpha));
          Value avg;
          if (centered) {
            Value ga = kept(names::kRmspropGradAvg,
                            average(old(names::kRmspropGradAvg), g, alpha));
            avg = SqrtOp::create(b, loc, u.sub(sq, u.mul(ga, ga)));
          } else {
            avg = SqrtOp::create(b, loc, sq);
          }
          Value step = u.div(g, u.add(avg, eps));
          if (momentum != 0.0)
            step = kept(names::kMomentum,
                        u.add(u.scale(old(names::kMomentum), momentum), step));
          next = u.sub(param, u.mul(lrp, step));
        } else {
          if (momentum != 0.0) {
            // PyTorch's buffer is g at the first step, then momentum buf +
            // (1 - dampening) g.
            Value buf = old(names::kMomentum);
            Value damped = g;
            if (dampening != 0.0)
              damped = u.select(here(firstStep, param), g,
                                u.scale(g, 1 - dampening));
            buf = kept(names::kMomentum, u.add(u.scale(buf, momentum), damped));
            g = nesterov ? u.add(g, u.scale(buf, momentum)) : buf;
          }
          next = u.sub(param, u.mul(lrp, g));
        }
      }
      update(keep(next, param), p, paramName(p));
    }
    if (countState)
      newState[*countState] = stepCount;
    if (muProductState)
      newState[*muProductState] = u.castLike(muProduct, lr);
    if (sgdStepState)
      newState[*sgdStepState] = stepCount;
    for (auto [i, s] : llvm::enumerate(state))
      if (newState[i])
        newState[i] = keep(newState[i], stateArgAt(i));
    if (lossScaling) {
      // After a step with non-finite gradients the scale halves; after
      // loss-scale-window good steps in a row it doubles.
      Value log2 = stateArgAt(*scaleLog2State);
      Value good = u.add(stateArgAt(*goodStepsState), u.scalarLike(lr, 1.0));
      Value grow = u.compare(CompareDirection::ge, good,
                             u.scalarLike(lr, lossScaleWindow));
      Value zero = u.scalarLike(lr, 0.0), one = u.scalarLike(lr, 1.0);
      newState[*scaleLog2State] = u.select(
          finite, u.select(grow, u.add(log2, one), log2), u.sub(log2, one));
      newState[*goodStepsState] =
          u.select(finite, u.select(grow, zero, good), zero);
    }
    for (auto [i, s] : llvm::enumerate(state))
      update(newState[i], numPrimal + i, s.name);
    for (auto [j, aux] : llvm::enumerate(auxUpdates))
      update(auxValues[auxUpdateIndex[j]], aux.first, aux.second);

    func::ReturnOp::create(b, loc, results);
    step.setType(
        FunctionType::get(ctx, argTypes, ValueRange(results).getTypes()));
    step.setAllResultAttrs(resultAttrs);
    symbols.insert(step);
    return success();
  }
};

} // namespace
