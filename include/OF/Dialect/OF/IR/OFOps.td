//===- OFOps.td - Operations of the of dialect -------------*- tablegen -*-===//
//
// The ops of global `of` programs. Result shapes and element types are
// inferred where they are a function of the operands and attributes; result
// encodings (SBP) are never inferred here: they are the business of SBP
// propagation, so inferred types are compared with the declared ones ignoring
// the #of.sbp encoding.
//
//===----------------------------------------------------------------------===//

#ifndef OF_DIALECT_OF_IR_OFOPS_TD
#define OF_DIALECT_OF_IR_OFOPS_TD

include "OF/Dialect/OF/IR/OFBase.td"
include "OF/Dialect/OF/IR/OFAttrs.td"
include "OF/Dialect/OF/IR/OFInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Result shapes and element types are inferred; encodings are left to SBP
// propagation, so compatibility ignores them. OF_VerifyInferredShapes runs
// first and reports a bad operand or a mismatching result type as one
// diagnostic (the interface's own verifier would add "failed to infer").
def OF_VerifyInferredShapes : NativeOpTrait<"VerifyInferredShapes"> {
  let cppNamespace = "::mlir::of";
}
def OF_InferShapes : TraitList<!listconcat([OF_VerifyInferredShapes],
    InferTypeOpAdaptorBase<[{
  static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
    return ::mlir::of::areCompatibleIgnoringSbp(l, r);
  }
}]>.traits)>;

// Ops whose gradient --of-autodiff can build (OFGradients.cpp).
defvar OF_Grad = DeclareOpInterfaceMethods<OF_GradientOpInterface>;

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

def OF_PlacementOp : OF_Op<"placement", [Symbol]> {
  let summary = "A named grid of devices that SBP distributions refer to";
  let description = [{
    Declares a placement: `shape` is the (possibly multi-dimensional) grid of
    devices, `ranks` lists the process ranks in row-major order over it. When
    `ranks` is absent the placement covers ranks `0 .. product(shape) - 1`.

    ```mlir
    of.placement @mesh {device = "cpu", shape = [2, 2]}               // ranks 0..3
    of.placement @stage1 {device = "cuda", shape = [4], ranks = [4, 5, 6, 7]}
    ```

    A device sits at grid coordinate `c`; its rank is
    `ranks[linearize(c, shape)]`.
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrAttr:$device,
    I64ArrayAttr:$shape,
    OptionalAttr<I64ArrayAttr>:$ranks);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The grid shape, one entry per placement axis.
    ::llvm::SmallVector<int64_t> getGridShape();
    /// The ranks in row-major order over the grid (explicit or 0..N-1).
    ::llvm::SmallVector<int64_t> getRankList();
    /// The number of devices of the placement.
    int64_t getNumDevices();
  }];
}

//===----------------------------------------------------------------------===//
// Constants and elementwise ops
//===----------------------------------------------------------------------===//

def OF_ConstantOp : OF_Op<"constant", [ConstantLike, Pure, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "A constant global tensor";
  let description = [{
    The value's type is the result's without an encoding. When the result
    carries a distribution it follows `->`:

    ```mlir
    %c = of.constant dense<1.0> : tensor<4xf32>
    %d = of.constant dense<0.5> : tensor<4xf32> -> tensor<4xf32, #of.sbp<@mesh, [B]>>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs OF_AnyTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasFolder = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
      build($_builder, $_state, value.getType(), value);
    }]>];
}

class OF_UnaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : OF_Op<mnemonic, !listconcat([Pure, OF_InferShapes, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>], traits)> {
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def OF_NegOp : OF_UnaryOp<"neg", OF_NumericTensor> {
  let summary = "Elementwise negation: `-x`";
}
def OF_ExpOp : OF_UnaryOp<"exp", OF_FloatTensor> {
  let summary = "Elementwise exponential: `e^x`";
}
def OF_LogOp : OF_UnaryOp<"log", OF_FloatTensor> {
  let summary = "Elementwise natural logarithm";
}
def OF_SqrtOp : OF_UnaryOp<"sqrt", OF_FloatTensor> {
  let summary = "Elementwise square root";
}
def OF_RsqrtOp : OF_UnaryOp<"rsqrt", OF_FloatTensor> {
  let summary = "Elementwise reciprocal square root: `1 / sqrt(x)`";
}
def OF_TanhOp : OF_UnaryOp<"tanh", OF_FloatTensor> {
  let summary = "Elementwise hyperbolic tangent";
}
def OF_SigmoidOp : OF_UnaryOp<"sigmoid", OF_FloatTensor> {
  let summary = "Elementwise logistic sigmoid: `1 / (1 + e^-x)`";
}
def OF_ReluOp : OF_UnaryOp<"relu", OF_NumericTensor> {
  let summary = "Elementwise rectifier: `max(x, 0)`";
}
def OF_SiluOp : OF_UnaryOp<"silu", OF_FloatTensor> {
  let summary = "Elementwise SiLU (swish): `x * sigmoid(x)`";
}
def OF_ErfOp : OF_UnaryOp<"erf", OF_FloatTensor> {
  let summary = "Elementwise Gauss error function";
}
def OF_SinOp : OF_UnaryOp<"sin", OF_FloatTensor> {
  let summary = "Elementwise sine (of radians)";
}
def OF_CosOp : OF_UnaryOp<"cos", OF_FloatTensor> {
  let summary = "Elementwise cosine (of radians)";
}
def OF_GeluOp : OF_Op<"gelu", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Elementwise GELU, exact or with the tanh approximation";
  let description = [{
    `approximate = "none"` (the default) computes `x * Phi(x)` with the normal
    CDF; `approximate = "tanh"` computes
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, as GPT-2 does. The
    names follow `torch.nn.GELU(approximate=...)`.
  }];
  let arguments = (ins OF_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class OF_BinaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : OF_Op<mnemonic, !listconcat([Pure, OF_InferShapes, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>], traits)> {
  let description = [{
    Operands broadcast as in NumPy: shapes are aligned at the trailing
    dimension, and a dimension of size 1 stretches to the other's size. Both
    operands have the same element type.
  }];
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def OF_AddOp : OF_BinaryOp<"add", OF_NumericTensor, [Commutative]> {
  let summary = "Elementwise addition with broadcasting";
  // The sum of two concatenations whose non-zero parts do not overlap (the
  // gradients of disjoint slices, e.g. an RNN's time steps) becomes one
  // concatenation of those parts.
  let hasCanonicalizer = 1;
}
def OF_SubOp : OF_BinaryOp<"sub", OF_NumericTensor> {
  let summary = "Elementwise subtraction with broadcasting";
  // x - s * embedding_grad(ids, dy) (SGD's update of a table) becomes
  // embedding_grad(ids, -s * dy) into x: the touched rows only.
  let hasCanonicalizer = 1;
}
def OF_MulOp : OF_BinaryOp<"mul", OF_NumericTensor, [Commutative]> {
  let summary = "Elementwise multiplication with broadcasting";
}
def OF_DivOp : OF_BinaryOp<"div", OF_NumericTensor> {
  let summary = "Elementwise division with broadcasting (integers round toward zero)";
}
def OF_PowOp : OF_BinaryOp<"pow", OF_FloatTensor> {
  let summary = "Elementwise power `lhs ^ rhs` with broadcasting";
}
def OF_MaximumOp : OF_BinaryOp<"maximum", OF_NumericTensor, [Commutative]> {
  let summary = "Elementwise maximum with broadcasting";
}
def OF_MinimumOp : OF_BinaryOp<"minimum", OF_NumericTensor, [Commutative]> {
  let summary = "Elementwise minimum with broadcasting";
}

def OF_CompareOp : OF_Op<"compare", [Pure, OF_InferShapes,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Elementwise comparison with broadcasting, giving i1";
  let description = [{
    ```mlir
    %m = of.compare lt, %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins OF_CompareDirection:$direction,
                       OF_NumericTensor:$lhs, OF_NumericTensor:$rhs);
  let results = (outs OF_BoolTensor:$result);
  let assemblyFormat = "$direction `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def OF_SelectOp : OF_Op<"select", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Elementwise `condition ? on_true : on_false` with broadcasting";
  let arguments = (ins OF_BoolTensor:$condition, OF_AnyTensor:$on_true,
                       OF_AnyTensor:$on_false);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)";
}

def OF_CastOp : OF_Op<"cast", [Pure, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Elementwise conversion of the element type";
  let description = [{
    Converts between f64, f32, bf16, f16, i64, i32, i8 and i1. Float to
    integer rounds toward zero; to i1 tests `!= 0`; from i1 gives 0 or 1.

    ```mlir
    %h = of.cast %x : tensor<4xf32> to tensor<4xbf16>
    ```
  }];
  let arguments = (ins OF_AnyTensor:$input);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def OF_BroadcastToOp : OF_Op<"broadcast_to", [Pure, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Broadcast a tensor to the result's shape (NumPy rules)";
  let description = [{
    ```mlir
    %b = of.broadcast_to %x : (tensor<1x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins OF_AnyTensor:$input);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def OF_ReshapeOp : OF_Op<"reshape", [Pure, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Reinterpret a tensor (row-major) with the result's shape";
  let arguments = (ins OF_AnyTensor:$input);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def OF_TransposeOp : OF_Op<"transpose", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Permute the dimensions: result dim i is input dim permutation[i]";
  let arguments = (ins OF_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input `,` $permutation attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def OF_SliceOp : OF_Op<"slice", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["localize"]>]> {
  let summary = "Strided slice `input[starts : limits : strides]`";
  let description = [{
    One entry per dimension; `strides` defaults to all ones. Result dimension
    `i` has `ceil((limits[i] - starts[i]) / strides[i])` elements.

    ```mlir
    %s = of.slice %x {starts = array<i64: 0, 2>, limits = array<i64: 4, 8>}
        : (tensor<4x8xf32>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins OF_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def OF_ConcatOp : OF_Op<"concat", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Concatenate tensors along `axis`";
  let arguments = (ins Variadic<OF_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class OF_ReduceOp<string mnemonic, Type tensorType,
                  list<string> sbpMethods = []>
    : OF_Op<mnemonic, [Pure, OF_InferShapes, OF_Grad,
                       DeclareOpInterfaceMethods<OF_SbpOpInterface, sbpMethods>]> {
  let description = [{
    Reduces over `axes` (negative axes count from the end). With
    `keepdims = true` the reduced dimensions stay with size 1.

    ```mlir
    %s = of.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = false}
        : (tensor<4x8xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def OF_ReduceSumOp : OF_ReduceOp<"reduce_sum", OF_NumericTensor> {
  let summary = "Sum over axes";
}
def OF_ReduceMeanOp : OF_ReduceOp<"reduce_mean", OF_FloatTensor, ["localize"]> {
  let summary = "Arithmetic mean over axes";
}
def OF_ReduceMaxOp : OF_ReduceOp<"reduce_max", OF_NumericTensor> {
  let summary = "Maximum over axes";
}

//===----------------------------------------------------------------------===//
// Linear algebra and normalisation
//===----------------------------------------------------------------------===//

def OF_MatmulOp : OF_Op<"matmul", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Matrix product, batched over leading dimensions";
  let description = [{
    Both operands have rank >= 2. The last two dimensions are the matrices
    (transposed first where `transpose_a` / `transpose_b` is set); the
    leading (batch) dimensions broadcast as in NumPy, so
    `tensor<8x16x32xf32> x tensor<32x64xf32> -> tensor<8x16x64xf32>`.

    ```mlir
    %y = of.matmul %x, %w {transpose_b = true}
        : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins OF_NumericTensor:$lhs, OF_NumericTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs OF_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class OF_SoftmaxLikeOp<string mnemonic>
    : OF_Op<mnemonic, [Pure, OF_InferShapes,
        OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let arguments = (ins OF_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def OF_SoftmaxOp : OF_SoftmaxLikeOp<"softmax"> {
  let summary = "Softmax along `axis` (negative counts from the end)";
}
def OF_LogSoftmaxOp : OF_SoftmaxLikeOp<"log_softmax"> {
  let summary = "Log-softmax along `axis` (negative counts from the end)";
}

def OF_TopKOp : OF_Op<"topk", [Pure, OF_InferShapes, OF_Grad,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "The k largest (or smallest) elements of each last-axis row";
  let description = [{
    `values[..., j]` is the j-th largest element of `input[..., :]` (the
    j-th smallest with `largest = false`) and `indices[..., j]` its
    position: in order, ties by the lower position first, NaN larger than
    every number (so first when largest, last when smallest), as
    `torch.topk`. `0 <= k <=` the last dimension. The gradient of `values`
    is added at the positions `indices` names (a scatter of rows).

    ```mlir
    %v, %i = of.topk %x {k = 3 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs OF_FloatTensor:$values, TensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def OF_LayerNormOp : OF_Op<"layer_norm", [Pure, OF_InferShapes,
    AttrSizedOperandSegments,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let summary = "Layer normalisation over the dimensions from `axis` on";
  let description = [{
    Normalises over dimensions `[axis, rank)` (`axis` may be negative), then
    scales by `weight` and shifts by `bias` when given; both have the shape
    of the normalised dimensions.

    ```mlir
    %y = of.layer_norm %x weight %g bias %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input,
                       Optional<OF_FloatTensor>:$weight,
                       Optional<OF_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def OF_RmsNormOp : OF_Op<"rms_norm", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let summary = "RMS normalisation over the dimensions from `axis` on";
  let description = [{
    `y = x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * weight`.
  }];
  let arguments = (ins OF_FloatTensor:$input,
                       Optional<OF_FloatTensor>:$weight,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
}

def OF_EmbeddingOp : OF_Op<"embedding", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["localize"]>]> {
  let summary = "Gather rows of a `[vocab, dim]` table by integer indices";
  let description = [{
    The result has shape `indices.shape + [dim]`. An index outside
    `[0, vocab)` is an error at run time.

    ```mlir
    %e = of.embedding %ids, %table : (tensor<4x16xi64>, tensor<1000x64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins OF_IndexTensor:$indices, OF_FloatTensor:$weight);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$indices `,` $weight attr-dict `:` functional-type(operands, results)";
}

def OF_EmbeddingGradOp : OF_Op<"embedding_grad", [Pure, OF_Grad,
    DeclareOpInterfaceMethods<OF_SbpOpInterface, ["localize"]>]> {
  let summary = "Gradient of `of.embedding` with respect to its table";
  let description = [{
    Sums the rows of `grad` into the rows of a `[vocab, dim]` table that
    their indices name: `result[v, :] = sum of grad[p, :] over the
    positions p with indices[p] == v` (zero for a row no index names).
    `grad` has shape `indices.shape + [dim]`; the result's first dimension
    is the vocabulary size. An index outside `[0, vocab)` contributes
    nothing: the forward `of.embedding` of the same indices has already
    rejected it, and a rank that holds a slice of the vocabulary uses this
    to keep only the rows it owns: with the result split by rows (`S(0)`,
    the gradient of a vocabulary-parallel table) each rank shifts the
    indices by its first row and scatters into its rows alone, so no rank
    holds a gradient of the whole table.

    With `into %table` the rows are added to `table` instead of zeros:
    `result = table + embedding_grad(indices, grad)`, touching only the
    rows the indices name. Canonicalization writes SGD's update of a table,
    `w - s * embedding_grad(ids, dy)` for a scalar `s`, so: the sparse
    update, with no gradient of the whole table.

    As a scatter-add (the frontend's `scatter_add` and `index_add` of
    floating-point values) it is differentiable: the gradient of `grad` is
    the `of.embedding` of the result's gradient at the same indices, that
    of `table` the result's gradient itself.

    ```mlir
    %dw = of.embedding_grad %ids, %dy : (tensor<4x16xi64>, tensor<4x16x64xf32>) -> tensor<1000x64xf32>
    %w2 = of.embedding_grad %ids, %sdy into %w : (tensor<4x16xi64>, tensor<4x16x64xf32>, tensor<1000x64xf32>) -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins OF_IndexTensor:$indices, OF_FloatTensor:$grad,
                       Optional<OF_FloatTensor>:$table);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$indices `,` $grad (`into` $table^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolutional ops (NCHW)
//===----------------------------------------------------------------------===//

def OF_Conv2DOp : OF_Op<"conv2d", [Pure, OF_InferShapes, OF_Grad,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "2-D convolution, NCHW input and OIHW weight";
  let description = [{
    `input : [N, C, H, W]`, `weight : [O, C / groups, KH, KW]`, optional
    `bias : [O]`. `padding` is `[top, bottom, left, right]`. The output is
    `[N, O, OH, OW]` with
    `OH = (H + top + bottom - dilation[0] * (KH - 1) - 1) / strides[0] + 1`
    (and likewise for `OW`).

    ```mlir
    %y = of.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
        : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_FloatTensor:$weight,
                       Optional<OF_FloatTensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

class OF_Pool2DOp<string mnemonic, dag extraArgs = (ins)>
    : OF_Op<mnemonic, [Pure, OF_InferShapes, OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let description = [{
    NCHW pooling over `kernel_size` windows. `strides` defaults to
    `kernel_size`; `padding` is `[top, bottom, left, right]`. Output sizes
    round down, as PyTorch's `ceil_mode=False`.
  }];
  let arguments = !con((ins OF_FloatTensor:$input,
                            DenseI64ArrayAttr:$kernel_size,
                            OptionalAttr<DenseI64ArrayAttr>:$strides,
                            DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding),
                       extraArgs);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def OF_MaxPool2DOp : OF_Pool2DOp<"max_pool2d"> {
  let summary = "2-D max pooling (padding counts as -inf)";
}
def OF_AvgPool2DOp : OF_Pool2DOp<"avg_pool2d",
    (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)> {
  let summary = "2-D average pooling";
}

def OF_Conv2DGradInputOp : OF_Op<"conv2d_grad_input", [Pure,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Gradient of `of.conv2d` with respect to its input";
  let description = [{
    Given the gradient `grad : [N, O, OH, OW]` of a convolution's result and
    its `weight : [O, C / groups, KH, KW]`, returns the gradient of its
    input, of the result type `[N, C, H, W]` (a transposed convolution;
    the result type fixes H and W, which a strided convolution's output
    does not determine). The attributes are the forward convolution's.

    ```mlir
    %dx = of.conv2d_grad_input %dy, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
        : (tensor<8x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$grad, OF_FloatTensor:$weight,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def OF_Conv2DGradFilterOp : OF_Op<"conv2d_grad_filter", [Pure,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Gradient of `of.conv2d` with respect to its weight";
  let description = [{
    Given a convolution's `input : [N, C, H, W]` and the gradient
    `grad : [N, O, OH, OW]` of its result, returns the gradient of its
    weight, of the result type `[O, C / groups, KH, KW]`. The attributes
    are the forward convolution's.

    ```mlir
    %dw = of.conv2d_grad_filter %x, %dy {padding = array<i64: 1, 1, 1, 1>}
        : (tensor<8x3x32x32xf32>, tensor<8x16x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_FloatTensor:$grad,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def OF_Pool2DGradOp : OF_Op<"pool2d_grad", [Pure,
    DeclareOpInterfaceMethods<OF_SbpOpInterface>]> {
  let summary = "Gradient of `of.max_pool2d` or `of.avg_pool2d` with respect to its input";
  let description = [{
    Given a pooling's `input : [N, C, H, W]` and the gradient
    `grad : [N, C, OH, OW]` of its result, returns the gradient of its input
    (the input's shape). `kind` is `"max"` (each window's gradient goes to
    the first of its largest elements, in row-major window order, as
    PyTorch) or `"avg"` (spread evenly over the window, divided by the
    forward's count). The other attributes are the forward pooling's.

    ```mlir
    %dx = of.pool2d_grad %x, %dy {kind = "max", kernel_size = array<i64: 2, 2>}
        : (tensor<8x16x32x32xf32>, tensor<8x16x16x16xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_FloatTensor:$grad,
                       StrAttr:$kind,
                       DenseI64ArrayAttr:$kernel_size,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<BoolAttr, "true">:$count_include_pad);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def OF_BatchNormOp : OF_Op<"batch_norm", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let summary = "Batch normalisation over dimension 1, with running statistics";
  let description = [{
    `input : [N, C, ...]`; `weight`, `bias`, `running_mean`, `running_var`
    are `[C]`. With `training = true` the op normalises with the batch
    statistics and returns running statistics updated with `momentum`
    (`new = (1 - momentum) * old + momentum * batch`, the variance unbiased,
    as PyTorch); with `training = false` it normalises with the running
    statistics and returns them unchanged. Its batch split over ranks
    (`S(0)`) in training, each rank sums its part of every channel and the
    sums are all-reduced (sync batch norm): the statistics are the whole
    batch's, as on one device.

    ```mlir
    %y, %m, %v = of.batch_norm %x, %g, %b, %rm, %rv {training = true}
        : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_FloatTensor:$weight,
                       OF_FloatTensor:$bias, OF_FloatTensor:$running_mean,
                       OF_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$training);
  let results = (outs OF_FloatTensor:$result, OF_FloatTensor:$new_running_mean,
                      OF_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` $running_mean `,` $running_var attr-dict
    `:` functional-type(operands, results)
  }];
}

def OF_BatchNormGradOp : OF_Op<"batch_norm_grad", [Pure, OF_InferShapes,
    DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let summary = "Gradients of a training `of.batch_norm` with respect to its input, weight and bias";
  let description = [{
    Given the input `input : [N, C, ...]` of a training `of.batch_norm`,
    the gradient `grad` of its result and its `weight : [C]`, returns the
    gradients of the input (the dependence of the batch statistics on it
    included), of the weight and of the bias. The statistics are the
    input's, recomputed (mean and biased variance over every dimension but
    1); `epsilon` is the forward's.

    ```mlir
    %dx, %dg, %db = of.batch_norm_grad %x, %dy, %g {epsilon = 1.0e-05 : f64}
        : (tensor<8x16x4x4xf32>, tensor<8x16x4x4xf32>, tensor<16xf32>)
        -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_FloatTensor:$grad,
                       OF_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs OF_FloatTensor:$input_grad, OF_FloatTensor:$weight_grad,
                      OF_FloatTensor:$bias_grad);
  let assemblyFormat = "$input `,` $grad `,` $weight attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

def OF_DropoutOp : OF_Op<"dropout", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["localize"]>]> {
  let summary = "Zero elements with probability `p`, scale the rest by 1/(1-p)";
  let description = [{
    The mask is a pure function of `seed` and the element's global index, so
    the op is deterministic, has no hidden state, and its gradient can
    recompute the same mask from the same seed. Element `i` (row-major) is
    kept when `splitmix64(seed + i) >> 40 >= ceil(p * 2^24)`, with
    `splitmix64(z)`: `z += 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) *
    0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
    z ^ (z >> 31)` (wrapping 64-bit arithmetic).

    ```mlir
    %y = of.dropout %x, %seed {p = 1.0e-01 : f64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
    ```

    On one shard of a split tensor (after `--of-partition`), `offsets`
    (`tensor<rank x i64>`) is where the shard starts in the global tensor
    and `global_shape` the global shape, so that the index `i` and thus the
    mask are the global ones.
  }];
  let arguments = (ins OF_FloatTensor:$input, OF_SeedTensor:$seed,
                       Optional<OF_TensorOf<[I64], "i64">>:$offsets,
                       F64Attr:$p, OptionalAttr<DenseI64ArrayAttr>:$global_shape);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $seed (`offsets` $offsets^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def OF_CrossEntropyOp : OF_Op<"cross_entropy", [Pure, OF_InferShapes,
    OF_Grad, DeclareOpInterfaceMethods<OF_SbpOpInterface, ["getSbpInternalAllReduce", "localize"]>]> {
  let summary = "Per-example softmax cross-entropy with integer labels";
  let description = [{
    `logits : [..., C]`, `labels : [...]` (class indices). The result has the
    labels' shape: `loss[i] = logsumexp(logits[i, :]) - logits[i, labels[i]]`.
    The mean loss is `of.reduce_mean` of it.

    ```mlir
    %l = of.cross_entropy %logits, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins OF_FloatTensor:$logits, OF_IndexTensor:$labels);
  let results = (outs OF_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Distribution
//===----------------------------------------------------------------------===//

def OF_BoxingOp : OF_Op<"boxing", [Pure, OF_Grad]> {
  let summary = "Convert a tensor to another SBP distribution";
  let description = [{
    The logical value is unchanged; only its distribution (and possibly its
    placement) changes. On a source without a distribution it is a
    constraint, as `to_global`: whatever distribution propagation picks for
    the source, the result has the target's.

    ```mlir
    %b = of.boxing %p : tensor<64x256xf32, #of.sbp<@mesh, [P]>>
                     -> tensor<64x256xf32, #of.sbp<@mesh, [B]>>
    ```
  }];
  let arguments = (ins OF_AnyTensor:$input);
  let results = (outs OF_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Local collectives (the per-rank programs that --of-partition produces)
//===----------------------------------------------------------------------===//

// A collective of a partitioned program: every rank of the placement runs it
// on its local tensors, among the ranks that share its coordinates on every
// placement axis but `axis` (ordered by their coordinate on it). Chunks are
// balanced splits (the first e % p members hold one more), and each rank
// computes its own chunk from its coordinate, so one program serves every
// rank whose local shapes are the same. In destination style: `init` is the
// result's storage, so the ops bufferize like linalg ops and then become
// `ofrt.collective` steps. Upstream `shard` collectives are not used: their
// gathers require even splits and they have no max all-reduce to P(max)'s B.
def OF_TensorOrMemRef : AnyTypeOf<[AnyRankedTensor, AnyMemRef]>;

class OF_CollectiveOp<string mnemonic, dag extraArgs = (ins)>
    : OF_Op<mnemonic, [DestinationStyleOpInterface,
                       DeclareOpInterfaceMethods<SymbolUserOpInterface>,
                       DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let arguments = !con((ins OF_TensorOrMemRef:$input,
                            OF_TensorOrMemRef:$init,
                            FlatSymbolRefAttr:$placement, I64Attr:$axis),
                       extraArgs);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input `into` $init attr-dict `:` type($input) `into` type($init)
    (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
}

def OF_AllReduceOp : OF_CollectiveOp<"all_reduce",
    (ins DefaultValuedAttr<OF_ReduceKindAttr, "::mlir::of::ReduceKind::Sum">:$reduce)> {
  let summary = "Sum (or max) of the members' tensors, on every member (P to B)";
  let description = [{
    ```mlir
    %e = tensor.empty() : tensor<4x8xf32>
    %b = of.all_reduce %p into %e {placement = @mesh, axis = 0 : i64}
        : tensor<4x8xf32> into tensor<4x8xf32> -> tensor<4x8xf32>
    ```
  }];
}

def OF_AllGatherOp : OF_CollectiveOp<"all_gather", (ins I64Attr:$dim)> {
  let summary = "Concatenate the members' chunks along `dim` (S(dim) to B)";
}

def OF_ReduceScatterOp : OF_CollectiveOp<"reduce_scatter",
    (ins I64Attr:$dim, DefaultValuedAttr<OF_ReduceKindAttr, "::mlir::of::ReduceKind::Sum">:$reduce)> {
  let summary = "This member's chunk along `dim` of the members' sum (P to S(dim))";
}

def OF_AllToAllOp : OF_CollectiveOp<"all_to_all",
    (ins I64Attr:$gather_dim, I64Attr:$scatter_dim)> {
  let summary = "Re-split from `gather_dim` to `scatter_dim` (S(i) to S(j))";
  let description = [{
    The input is this member's chunk along `gather_dim` of a tensor that is
    whole along `scatter_dim`; the result is whole along `gather_dim` and
    this member's chunk along `scatter_dim`.
  }];
}

def OF_ShardSliceOp : OF_CollectiveOp<"shard_slice", (ins I64Attr:$dim)> {
  let summary = "This member's chunk along `dim`, without communication (B to S(dim))";
}

def OF_ToPartialOp : OF_CollectiveOp<"to_partial"> {
  let summary = "The value on the member with coordinate 0, zeros elsewhere (B to P)";
}

// Point-to-point transfers between placements (pipeline stages): a boxing
// from one placement to another becomes, on each rank, the sends of the
// slices it holds that another rank needs and the receives of the slices it
// needs, in one order that every rank follows (so blocking transfers cannot
// deadlock). `peer` is a world rank. Both have a communication effect, so
// nothing removes or reorders them.
def OF_SendOp : OF_Op<"send",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Send a whole local tensor to world rank `peer`";
  let description = [{
    ```mlir
    of.send %slice to 1 : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins OF_TensorOrMemRef:$input, I64Attr:$peer);
  let assemblyFormat = "$input `to` $peer attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def OF_RecvOp : OF_Op<"recv", [DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Receive a whole tensor from world rank `peer` into `init`";
  let description = [{
    In destination style, as the collectives: `init` is the result's
    storage and is only written.

    ```mlir
    %e = tensor.empty() : tensor<2x8xf32>
    %r = of.recv from 0 into %e : tensor<2x8xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins OF_TensorOrMemRef:$init, I64Attr:$peer);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `from` $peer `into` $init attr-dict `:` type($init) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
}

//===----------------------------------------------------------------------===//
// Library calls (steps the runtime runs through a library)
//===----------------------------------------------------------------------===//

def OF_LibraryCallOp : OF_Op<"library_call", [DestinationStyleOpInterface,
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "A computation the runtime runs through a library, in destination style";
  let description = [{
    Lowering's form of an op that the plan runs as an `ofrt.library_call`
    step rather than as a generated kernel: convolutions and poolings
    (oneDNN on the CPU, cuDNN on a GPU; `--convert-of-to-linalg` with
    `conv-library=true`, `pool-library=true`), and training batch
    normalizations (`norm-library=true`). `callee` names the
    library function and `params` its parameters, laid out as
    `include/OF/ABI/LibraryCalls.h` says (the runtime checks them with
    the same code). Like the local collectives it works on tensors (with
    a result per init, stored in it) and, after one-shot bufferization, on
    memrefs (no result); `inits` are only written. The plan builder turns it
    into the step on its buffers, in operand order (inputs, then inits).

    Functions and buffers:
    - `dnn.conv2d` `(x, w[, bias]) into y`: y = conv(x, w) (+ bias per
      output channel).
    - `dnn.conv2d_grad_input` `(dy, w) into dx`.
    - `dnn.conv2d_grad_filter` `(x, dy) into dw`.

    Parameters: `[N, C, H, W, F, KH, KW, OH, OW, stride_h, stride_w,
    dilation_h, dilation_w, pad_top, pad_bottom, pad_left, pad_right,
    groups]`. x is `[N, C, H, W]`, w `[F, C / groups, KH, KW]`, y `[N, F, OH,
    OW]`, all of one floating-point type.

    - `dnn.pool2d` `(x) into y`: y = pool(x).
    - `dnn.pool2d_grad` `(x, dy) into dx`: the gradient of the pooling of x.

    Parameters: `[N, C, H, W, KH, KW, OH, OW, stride_h, stride_w, pad_top,
    pad_bottom, pad_left, pad_right, mode]`, mode 0 for max (a gradient goes
    to each window's first largest element), 1 for the mean over the window
    counting padding, 2 for the mean over its elements inside x. x (and dx)
    is `[N, C, H, W]`, y (and dy) `[N, C, OH, OW]`.

    - `dnn.batch_norm` `(x, scale, shift) into y, mean, var`: a training
      batch normalization; mean and var are the batch's mean and biased
      variance per channel.
    - `dnn.batch_norm_grad` `(x, dy, scale, mean, var) into dx, dscale,
      dshift`: its gradients, given the statistics of x.

    Parameters: `[N, C, S, epsilon]`, epsilon as the bits of an f64. x (y,
    dy, dx) is `[N, C, S]` (the extents after the channels collapsed), the
    others `[C]`; f32 only (the libraries keep statistics in f32).

    ```mlir
    %e = tensor.empty() : tensor<2x8x6x6xf32>
    %y = of.library_call "dnn.conv2d"(%x, %w) into %e
        {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>}
        : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) into tensor<2x8x6x6xf32>
        -> tensor<2x8x6x6xf32>
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<OF_TensorOrMemRef>:$inputs,
                       Variadic<OF_TensorOrMemRef>:$inits,
                       DenseI64ArrayAttr:$params);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $callee `(` $inputs `)` `into` $inits attr-dict `:`
    `(` type($inputs) `)` `into` type($inits) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getInitsMutable(); }
  }];
}

#endif // OF_DIALECT_OF_IR_OFOPS_TD
