//===- Autodiff.cpp - Reverse-mode differentiation of global programs -----===//
//
// --of-autodiff: for each function with {of.param} arguments and a scalar
// loss as its first result, adds @<name>_grad returning the loss, one
// gradient per parameter, then the function's other results in order:
// outputs (logits a caller wants beside the loss) and state updates (marked
// `of.update`, e.g. batch norm's running statistics). The
// backward ops come from each op's GradientOpInterface; activity analysis keeps
// the work to the ops on a path from a parameter to the loss. Runs before SBP
// propagation (see the brief's autodiff contract), on inlined, single-block
// functions.
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/Analysis/Placement.h"
#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::of {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "OF/Dialect/OF/Transforms/Passes.h.inc"
} // namespace mlir::of

using namespace mlir;
using namespace mlir::of;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

bool hasParams(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, OFDialect::ParamAttrHelper::getNameStr()))
      return true;
  return false;
}

/// The name a gradient result takes: grad_<the parameter's of.name>, or
/// grad_arg<i> for an unnamed parameter (the runtime's default name).
std::string gradientName(func::FuncOp func, unsigned arg) {
  if (auto name = func.getArgAttrOfType<StringAttr>(
          arg, OFDialect::NameAttrHelper::getNameStr()))
    return "grad_" + name.getValue().str();
  return "grad_arg" + std::to_string(arg);
}

/// Builds `grad` (a clone of the primal function) into the gradient
/// function.
class GradientBuilder {
public:
  GradientBuilder(func::FuncOp grad, bool seedArgument)
      : grad(grad), seedArgument(seedArgument) {}

  LogicalResult build() {
    Block &body = grad.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);
    findActiveValues(body, loss);

    OpBuilder b(ret);
    // The loss's cotangent: the argument loss_seed, or 1.
    if (seedArgument) {
      Type type = grad.getResultTypes()[0];
      if (failed(
              grad.insertArgument(grad.getNumArguments(), type,
                                  b.getDictionaryAttr(b.getNamedAttr(
                                      OFDialect::NameAttrHelper::getNameStr(),
                                      b.getStringAttr("loss_seed"))),
                                  grad.getLoc())))
        return grad.emitError("--of-autodiff: cannot add loss_seed");
      cotangents[loss] = grad.getArguments().back();
    } else {
      Type lossType = stripSbp(loss.getType());
      cotangents[loss] = ConstantOp::create(
          b, ret.getLoc(),
          DenseElementsAttr::get(
              cast<ShapedType>(lossType),
              b.getFloatAttr(getElementTypeOrSelf(lossType), 1.0)));
    }

    // The forward ops, before the backward ones go in after them.
    SmallVector<Operation *> forward = llvm::map_to_vector(
        body.without_terminator(), [](Operation &op) { return &op; });
    for (Operation *op : llvm::reverse(forward))
      if (failed(differentiate(*op, b)))
        return failure();
    // In a pipeline, --of-schedule-stages moves forward work ahead of what
    // the backward pass added here (marked `of.backward`).
    FailureOr<FuncPlacements> placements = collectPlacements(grad);
    if (failed(placements))
      return failure();
    // So does --of-recompute, to find where a segment's values are read.
    bool recomputes = llvm::any_of(forward, [](Operation *op) {
      return op->hasAttr(OFDialect::RecomputeAttrHelper::getNameStr());
    });
    if (placements->list.size() > 1 || recomputes) {
      llvm::SmallPtrSet<Operation *, 32> primal(forward.begin(), forward.end());
      // Constants are not marked: canonicalization merges equal ones and
      // hoists them, and a marked one would hold back forward users.
      for (Operation &op : body.without_terminator())
        if (!primal.contains(&op) && &op != ret.getOperation() &&
            !op.hasTrait<OpTrait::ConstantLike>())
          op.setAttr(OFDialect::BackwardAttrHelper::getNameStr(),
                     b.getUnitAttr());
    }

    // The loss, then each parameter's gradient with its parameter's type.
    SmallVector<Value> results = {loss};
    SmallVector<DictionaryAttr> resultAttrs = {grad.getResultAttrDict(0)};
    for (BlockArgument arg : grad.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!grad.getArgAttr(i, OFDialect::ParamAttrHelper::getNameStr()))
        continue;
      Value g = cotangents.lookup(arg);
      Location loc = grad.getLoc();
      if (!g) // the loss does not depend on it
        g = ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(
                cast<ShapedType>(stripSbp(arg.getType())),
                b.getFloatAttr(getElementTypeOrSelf(arg.getType()), 0.0)));
      if (g.getType() != arg.getType())
        g = BoxingOp::create(b, loc, arg.getType(), g);
      results.push_back(g);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(OFDialect::NameAttrHelper::getNameStr(),
                         b.getStringAttr(gradientName(grad, i)))));
    }
    // The function's other results (outputs, and state updates marked
    // of.update) pass through, after the gradients, in order.
    for (unsigned r = 1; r < ret.getNumOperands(); ++r) {
      results.push_back(ret.getOperand(r));
      resultAttrs.push_back(grad.getResultAttrDict(r));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    grad.setType(FunctionType::get(grad.getContext(), grad.getArgumentTypes(),
                                   ValueRange(results).getTypes()));
    grad.setAllResultAttrs(resultAttrs);

    // Forward values only the dropped results needed, and backward values
    // of inactive operands.
    SmallVector<Operation *> all = llvm::map_to_vector(
        body.without_terminator(), [](Operation &op) { return &op; });
    for (Operation *op : llvm::reverse(all))
      if (isOpTriviallyDead(op))
        op->erase();
    return success();
  }

private:
  /// A value is active when it depends on a parameter and the loss depends
  /// on it; only active values get gradients.
  void findActiveValues(Block &body, Value loss) {
    llvm::DenseSet<Value> varied, useful;
    for (BlockArgument arg : body.getArguments())
      if (grad.getArgAttr(arg.getArgNumber(),
                          OFDialect::ParamAttrHelper::getNameStr()))
        varied.insert(arg);
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return varied.contains(v); }))
        for (Value r : op.getResults())
          if (isFloatTensor(r.getType()))
            varied.insert(r);
    useful.insert(loss);
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return useful.contains(v); }))
        for (Value v : op.getOperands())
          if (isFloatTensor(v.getType()))
            useful.insert(v);
    for (Value v : varied)
      if (useful.contains(v))
        active.insert(v);
  }

  LogicalResult differentiate(Operation &op, OpBuilder &b) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op.getResults()) {
      resultGrads.push_back(cotangents.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any || llvm::none_of(op.getOperands(),
                              [&](Value v) { return active.contains(v); }))
      return success();
    auto iface = dyn_cast<GradientOpInterface>(op);
    if (!iface)
      return op.emitOpError("is on the path from a parameter to the loss but "
                            "has no gradient (GradientOpInterface)");
    SmallVector<Value> operandGrads;
    if (failed(iface.buildVjp(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op.getNumOperands())
      return op.emitOpError("gave ")
             << operandGrads.size() << " operand gradients for "
             << op.getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op.getOperands(), operandGrads)) {
      if (!g || !active.contains(operand))
        continue;
      Value &sum = cotangents[operand];
      sum = sum ? Value(AddOp::create(b, op.getLoc(), sum, g)) : g;
    }
    return success();
  }

  func::FuncOp grad;
  bool seedArgument;
  llvm::DenseSet<Value> active;
  DenseMap<Value, Value> cotangents;
};

struct AutodiffPass : of::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> primals;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && hasParams(func))
        primals.push_back(func);
    for (func::FuncOp primal : primals)
      if (failed(differentiate(primal, symbols)))
        return signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp primal, SymbolTable &symbols) {
    FunctionType type = primal.getFunctionType();
    auto loss = type.getNumResults()
                    ? dyn_cast<RankedTensorType>(type.getResult(0))
                    : RankedTensorType();
    if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType()))
      return primal.emitError("--of-autodiff: the first result of a function "
                              "with of.param arguments must be the scalar "
                              "loss (a rank-0 float tensor), got ")
             << (type.getNumResults() ? type.getResult(0) : Type());
    for (unsigned i = 0; i < primal.getNumArguments(); ++i)
      if (primal.getArgAttr(i, OFDialect::ParamAttrHelper::getNameStr()) &&
          !isFloatTensor(primal.getArgument(i).getType()))
        return primal.emitError("--of-autodiff: parameter ")
               << i << " must be a float tensor, got "
               << primal.getArgument(i).getType();
    if (!llvm::hasSingleElement(primal.getBody()))
      return primal.emitError("--of-autodiff needs a single-block function");
    std::string name = (primal.getSymName() + "_grad").str();
    if (symbols.lookup(name))
      return primal.emitError("--of-autodiff: @") << name << " exists already";
    for (Operation &op : primal.front())
      if (isa<func::CallOp>(op))
        return op.emitError("--of-autodiff needs inlined calls (run --inline "
                            "first, as --of-pipeline does)");

    auto grad = cast<func::FuncOp>(primal->clone());
    grad.setSymName(name);
    symbols.insert(grad, std::next(Block::iterator(primal)));
    if (failed(GradientBuilder(grad, seedArgument).build())) {
      grad.erase();
      return failure();
    }
    return success();
  }
};

} // namespace
