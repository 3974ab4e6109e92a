//===- OFInterfaces.td - Interfaces of the of dialect ------*- tablegen -*-===//
//
// SbpOpInterface: the one place where an op says how it can be distributed.
// SBP propagation, boxing insertion, partitioning, the cost model (and the
// auto-parallel search of a later issue) all read it; the dialect reference
// lists each op's signatures from the same code (`--of-test-sbp-signatures`).
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFINTERFACES_TD
#define OF_DIALECT_OF_IR_OFINTERFACES_TD

include "mlir/IR/OpBase.td"

def OF_SbpOpInterface : OpInterface<"SbpOpInterface"> {
  let cppNamespace = "::mlir::of";
  let description = [{
    An op's legal SBP signatures over one placement axis (1-D): for each
    signature one `SbpEntry` per operand and per result, meaning "if the
    operands are laid out like this on the axis, computing the op on every
    device's local operands gives its local results laid out like that".
    On a hierarchy (nd-SBP) a signature is one 1-D signature per axis (the
    product rule), each axis applied to the shards the previous axes left.

    Signatures are a function of the op's global types and attributes only.
    The compute cost of a signature is derived from `getSbpFlops` (the op's
    floating-point work on its global shapes): a signature that splits any
    operand or result on an axis divides the work by that axis's size.
  }];
  let methods = [
    InterfaceMethod<
      "Appends the op's legal 1-D SBP signatures, most preferred first.",
      "void", "getSbpSignatures",
      (ins "::llvm::SmallVectorImpl<::mlir::of::SbpSignature> &":$signatures)>,
    InterfaceMethod<
      "Floating-point operations of the op on its global shapes.",
      "double", "getSbpFlops", (ins), "",
      [{ return ::mlir::of::defaultSbpFlops($_op); }]>,
    InterfaceMethod<
      [{Elements the op's local form all-reduces across the axis under a
        1-D signature (the two-stage forms, e.g. softmax over a split axis
        reduces its maxima and sums); 0 for signatures computed locally.}],
      "int64_t", "getSbpInternalAllReduce",
      (ins "const ::mlir::of::SbpSignature &":$signature), "",
      [{ return 0; }]>,
    InterfaceMethod<
      [{Rewrites the op into its per-rank form where that is not the op
        itself on local tensors (its operands and results already have their
        local types; `context` gives their global types and the placement):
        a softmax over a split axis becomes local statistics, all-reduced,
        and so on (OF/Dialect/OF/IR/LocalForms.h). The default keeps the op.
        --of-partition calls it on every op of a partitioned function.}],
      "::mlir::LogicalResult", "localize",
      (ins "::mlir::of::LocalizeContext &":$context), "",
      [{ return ::mlir::success(); }]>,
  ];
}

def OF_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::of";
  let description = [{
    Reverse-mode differentiation of one op (its vector-Jacobian product),
    written with `of` ops so that the backward program is a global program
    like the forward one: SBP propagation gives the backward ops signatures
    and boxing like any other, and the lowering needs nothing new.

    `--of-autodiff` calls `buildVjp` once per op on the path from a
    parameter to the loss, in reverse program order, with the builder
    placed after every forward op.
  }];
  let methods = [
    InterfaceMethod<
      [{Builds the gradients of the op's operands from the gradients of its
        results (`resultGrads`: one per result, null where a result has
        none). Appends one value per operand to `operandGrads`, each of its
        operand's shape and element type without an encoding, or null for an
        operand that is not differentiable (integer indices, a seed, a
        condition). Fails with a diagnostic on the op when its gradient
        cannot be expressed (the message says why).}],
      "::llvm::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // OF_DIALECT_OF_IR_OFINTERFACES_TD
