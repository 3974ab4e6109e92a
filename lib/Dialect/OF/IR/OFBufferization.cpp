//===- OFBufferization.cpp - Bufferization of the step ops ---------------===//
//
// One-shot bufferization models of the ops that the plan runs as steps
// (local collectives, point-to-point transfers, library calls).
//
//===----------------------------------------------------------------------===//

#include "OF/Dialect/OF/IR/OFOps.h"
#include "OF/Dialect/OF/IR/Sbp.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::of;

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
