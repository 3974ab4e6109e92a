//===- Passes.td - OF conversion passes --------------------*- tablegen -*-===//
//
// Lowerings between dialects.
//
//===----------------------------------------------------------------------===//

#ifndef OF_CONVERSION_PASSES_TD
#define OF_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertOFToLinalgPass : Pass<"convert-of-to-linalg", "ModuleOp"> {
  let summary = "Lower a single-rank of program to linalg, tensor, arith and math";
  let description = [{
    Lowers every compute op of the `of` dialect to `linalg` on tensors (named
    ops where upstream has one: `linalg.matmul`, `linalg.batch_matmul`,
    poolings, 16-bit and grouped convolutions, `linalg.transpose`,
    `linalg.reduce`; an f32/f64 convolution becomes an im2col gather and a
    `linalg.contract` that the plan runs as one batched BLAS gemm; otherwise
    `linalg.generic`), `tensor` shape ops and `arith`/`math` scalar bodies.
    SBP encodings are dropped: the program runs as one rank, so a global
    tensor is the local one and `of.boxing` is the identity. Placements are
    erased.

    ```mlir
    %y = of.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    // becomes
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %in, %z : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    ```

    With `conv-library`, f32 and bf16 convolutions and their gradients become
    `of.library_call "dnn.conv2d"` (and `_grad_input`, `_grad_filter`)
    steps on the unpadded tensors, which the CPU runtime runs through oneDNN
    and the CUDA runtime through cuDNN; with `pool-library`, f32 and bf16
    poolings and their gradients become `"dnn.pool2d"` and
    `"dnn.pool2d_grad"` steps; with `norm-library`, f32 training batch norms
    and their gradients become `"dnn.batch_norm"` and
    `"dnn.batch_norm_grad"` steps on x collapsed to [N, C, S] (the running
    statistics' update stays generated). `--of-pipeline=cpu` and
    `--of-pipeline=cuda` set conv-library and pool-library; only the CUDA
    pipeline sets norm-library (on the CPU the generated kernels measured
    faster than oneDNN's). `dnn-library` names the library that will run
    them, which decides what it is given. `onednn` (the default): f16 convolutions are
    widened to f32 (oneDNN 2.6 has no f16 convolution on the CPU) and
    rounded once, f16 poolings stay generated, and so does max pooling's
    forward pass (oneDNN's max drops NaN, where PyTorch's and the generated
    kernel's propagate it; its gradient is a library step). `cudnn` (the
    CUDA pipeline): f16 steps as they are, max pooling's forward pass too
    (NaN propagated), and only steps padded symmetrically (cuDNN's
    descriptors pad so), the others generated, as are those with a tensor
    of 2^31 elements or more (cuDNN's descriptors take int); a training
    batch norm over one element per channel, or of a batch larger than
    880801 (where PyTorch stops using cuDNN's), stays generated too.

    Embedding and cross-entropy kernels carry an `of.index_range`
    attribute (`[operand, lo, hi]`) so that the plan checks their indices
    before the kernel reads the table. Function arguments are marked
    `bufferization.writable = false`: they are the caller's inputs.
  }];
  let options = [
    Option<"convLibrary", "conv-library", "bool", /*default=*/"false",
           "Run f32 and bf16 convolutions and their gradients as library steps "
           "(of.library_call) instead of generated code">,
    Option<"poolLibrary", "pool-library", "bool", /*default=*/"false",
           "Run f32 and bf16 poolings and their gradients as library steps "
           "(of.library_call) instead of generated code">,
    Option<"normLibrary", "norm-library", "bool", /*default=*/"false",
           "Run f32 training batch norms and their gradients as library steps "
           "(of.library_call) instead of generated code">,
    Option<"dnnLibrary", "dnn-library", "std::string", /*default=*/"\"onednn\"",
           "The library the runtime runs the dnn steps through, which decides "
           "the steps it is given: onednn (the CPU) or cudnn (a GPU: only "
           "symmetric padding, f16 as it is)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

#endif // OF_CONVERSION_PASSES_TD
