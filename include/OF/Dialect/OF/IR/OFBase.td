//===- OFBase.td - The of dialect and its shared constraints -*- tablegen -*-===//
//
// Defines the `of` dialect (global programs whose tensors carry SBP
// distributions) and the type constraints that every op of the dialect shares.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFBASE_TD
#define OF_DIALECT_OF_IR_OFBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def OF_Dialect : Dialect {
  let name = "of";
  let cppNamespace = "::mlir::of";
  let summary = "Global tensor programs with SBP distributions over device placements";
  let description = [{
    The `of` dialect describes a deep learning program written once against
    *global* (logical) tensors. Every tensor may carry, as the `encoding` of its
    ranked tensor type, an `#of.sbp` distribution over an `of.placement` of
    devices. A tensor without an encoding has no distribution yet; SBP
    propagation or the auto-parallel search gives it one. A change of
    distribution is always an explicit `of.boxing` op.

    ```mlir
    of.placement @mesh {device = "cpu", shape = [2, 2]}

    func.func @mlp(%x: tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>,
                   %w: tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>)
        -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>> {
      %y = of.matmul %x, %w : (tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>,
                               tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>)
                              -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
      return %y : tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
    }
    ```

    Shapes are static: OF compiles one program per input signature and plans
    every buffer of it ahead of time, so a dynamic dimension has no meaning in
    a global program.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  // `of.name` and `of.param` on function arguments and results.
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  // The dialect's discardable attributes, each with a generated helper
  // (OFDialect::NameAttrHelper::getNameStr() is "of.name"): the one
  // spelling of each name in C++.
  let discardableAttrs = (ins
    // Function arguments and results: the state name a plan binds.
    "::mlir::StringAttr":$name,
    // Function arguments: a trainable parameter.
    "::mlir::UnitAttr":$param,
    // Function arguments: this parameter's own weight decay.
    "::mlir::FloatAttr":$weight_decay,
    // Function results (--of-training-step): the argument this result is
    // the next value of.
    "::mlir::IntegerAttr":$update,
    // Local function arguments and results (--of-partition): the global
    // type this local value is a part of.
    "::mlir::TypeAttr":$global,
    // Per-rank functions (--of-partition): the global function they come
    // from and the world ranks that run them.
    "::mlir::StringAttr":$entry,
    "::mlir::DenseI64ArrayAttr":$ranks,
    // Fusible linalg ops (--of-to-linalg): [operand, lo, hi], the range of
    // indices a gather or one-hot reads.
    "::mlir::DenseI64ArrayAttr":$index_range,
    // Ops between --of-propagate-sbp and --of-insert-boxing: the chosen
    // signature.
    "::mlir::ArrayAttr":$operand_sbp,
    "::mlir::ArrayAttr":$result_sbp,
    // Ops of the backward pass (--of-autodiff until --of-schedule-stages).
    "::mlir::UnitAttr":$backward,
    // Forward ops of a recomputed segment (the frontend's checkpoint): the
    // segment's number. --of-recompute computes the values the backward
    // pass reads again there, and marks those copies.
    "::mlir::IntegerAttr":$recompute,
    // Ops that take micro-batch i of a stacked data argument
    // (--of-training-step with accumulate > 1 over several placements,
    // until --of-schedule-stages).
    "::mlir::IntegerAttr":$micro_batch
  );
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class OF_Op<string mnemonic, list<Trait> traits = []>
    : Op<OF_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// A tensor of an OF program: ranked, static shape, and an encoding that is
// either absent or an `#of.sbp` distribution.
class OF_TensorOf<list<Type> allowedTypes, string desc>
    : Type<And<[TensorOf<allowedTypes>.predicate,
                CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).hasStaticShape()">,
                CPred<"::mlir::of::hasSbpOrNoEncoding($_self)">]>,
           "statically shaped tensor of " # desc # " values without an encoding or with an #of.sbp encoding",
           "::mlir::TensorType">;

def OF_AnyTensor : OF_TensorOf<[F16, BF16, F32, F64, I1, I8, I32, I64], "any">;
def OF_FloatTensor : OF_TensorOf<[F16, BF16, F32, F64], "floating-point">;
def OF_NumericTensor : OF_TensorOf<[F16, BF16, F32, F64, I8, I32, I64], "numeric">;
def OF_IndexTensor : OF_TensorOf<[I32, I64], "i32 or i64">;
def OF_BoolTensor : OF_TensorOf<[I1], "i1">;
def OF_SeedTensor : Type<And<[OF_TensorOf<[I64], "i64">.predicate,
                              CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 0">]>,
                         "0-d tensor<i64> seed", "::mlir::TensorType">;

#endif // OF_DIALECT_OF_IR_OFBASE_TD
