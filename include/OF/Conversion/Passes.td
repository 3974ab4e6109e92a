//===- Passes.td - OF conversion passes --------------------*- tablegen -*-===//
//
// Lowerings between dialects.
//
//===----------------------------------------------------------------------===//

#ifndef OF_CONVERSION_PASSES_TD
#define OF_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def SelectLibraryCallsPass : Pass<"of-select-library-calls", "ModuleOp"> {
  let summary = "Choose the ops that a library (oneDNN, cuDNN) runs as plan steps";
  let description = [{
    Runs before `--convert-of-to-linalg`: every op that the library of the
    target runs (and that it can run, see below) becomes an
    `of.library_call` step, which the lowering keeps and the plan runs
    through the runtime's library; the others stay for the lowering to
    generate. The choice, op by op (LibraryCalls.cpp, one pattern each):

    | op | option | step | stays generated |
    | --- | --- | --- | --- |
    | `of.conv2d`, `_grad_input`, `_grad_filter` | `conv-library` | `dnn.conv2d`, `dnn.conv2d_grad_input`, `dnn.conv2d_grad_filter` | f64; on cuDNN asymmetric padding |
    | `of.max_pool2d`, `of.avg_pool2d`, `of.pool2d_grad` | `pool-library` | `dnn.pool2d`, `dnn.pool2d_grad` | f16 on oneDNN; max forward on oneDNN; max gradient on cuDNN; oneDNN gradients of windows that tile the input |
    | `of.batch_norm` (training), `of.batch_norm_grad` | `norm-library` | `dnn.batch_norm`, `dnn.batch_norm_grad` | not f32; inference |

    ```mlir
    %y = of.conv2d %x, %w : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>)
        -> tensor<1x4x4x4xf32>
    // becomes, with conv-library
    %e = tensor.empty() : tensor<1x4x4x4xf32>
    %y = of.library_call "dnn.conv2d"(%x, %w) into %e
        {params = array<i64: 1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1>}
        : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) into tensor<1x4x4x4xf32>
        -> tensor<1x4x4x4xf32>
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
    "::mlir::arith::ArithDialect"
  ];
}

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

    Ops that `--of-select-library-calls` made `of.library_call`s stay as
    they are.

    Embedding and cross-entropy kernels carry an `of.index_range`
    attribute (`[operand, lo, hi]`) so that the plan checks their indices
    before the kernel reads the table. Function arguments are marked
    `bufferization.writable = false`: they are the caller's inputs.

    An embedding gradient (a scatter-add of rows) loops over the columns
    outermost, each column's loop over the positions independent of the
    others (what a GPU runs in parallel); with `row-scatters` (the CPU
    pipeline's choice) over the positions outermost and each row's
    columns inside, so that one thread reads the gradient and writes the
    table contiguously.
  }];
  let options = [
    Option<"rowScatters", "row-scatters", "bool", /*default=*/"false",
           "scatter embedding gradients row by row (positions outermost)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

def BuildPlanPass : Pass<"of-build-plan", "ModuleOp"> {
  let summary = "Turn bufferized functions into ofrt programs with a static arena";
  let description = [{
    Takes a module of bufferized functions (memrefs with static shapes, as
    one-shot bufferization leaves them) and builds one `ofrt.program` per
    public function, for rank 0 on the CPU:

    - every `memref.alloc` becomes an `arena` buffer, every
      `memref.get_global` a `constant` buffer, every argument an `input`
      buffer named by its `of.name` (else `argN`);
    - view ops (reshape, subview, ...) are not steps: a step reads the root
      buffer and the view is rebuilt inside its kernel;
    - `linalg.contract` ops that are matrix products with a BLAS layout
      (and whose output was just zero-filled) become `blas.gemm` library
      calls; whole-buffer `memref.copy` ops become copy steps; every other
      op becomes a kernel in the `@cpu_kernels` executable;
    - a liveness analysis over the steps places the arena buffers (greedy
      by size, best-fit gap, 64-byte aligned); an elementwise kernel writes
      in place over an input that dies at it;
    - returned buffers become `ofrt.output` steps named by the result's
      `of.name` (else `outN`);
    - on a GPU (`comm-stream`), collectives that communicate run on stream
      1, each moved up to the last step that uses one of its buffers (in
      their order); stream 1 waits for stream 0 before each, and a step of
      stream 0 that uses a collective's buffers waits for it; those buffers
      stay alive until then.

    ```mlir
    func.func @f(%x: memref<4xf32> {of.name = "x"}) -> memref<4xf32> {
      %a = memref.alloc() : memref<4xf32>
      linalg.generic ... ins(%x) outs(%a)
      return %a : memref<4xf32>
    }
    // becomes
    ofrt.executable @cpu_kernels {target = "..."} {
      module { func.func @k0(%x: memref<4xf32>, %a: memref<4xf32>) {...} }
    }
    ofrt.program "f" {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
      ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
      ofrt.buffer @b0 arena offset 0 size 16 : tensor<4xf32>
      ofrt.launch @cpu_kernels "k0" [@x, @b0]
      ofrt.output "out0" = @b0
    }
    ```
  }];
  let options = [
    Option<"inPlace", "in-place", "bool", "true",
           "Let elementwise kernels overwrite an input buffer that dies at them">,
    Option<"useBlas", "use-blas", "bool", "true",
           "Call BLAS for matrix products with a BLAS layout">,
    Option<"useDnn", "use-dnn", "bool", "true",
           "On the CPU, bf16 matrix products (into bf16 or f32) become "
           "gemm steps too, which the runtime runs on oneDNN">,
    Option<"commStream", "comm-stream", "bool", "true",
           "On a GPU, run the collectives that communicate on a second "
           "stream, each as early as its buffers allow, ordered with the "
           "compute stream by events (gradient all-reduces overlap the "
           "rest of the backward pass)">,
    Option<"allowTf32", "allow-tf32", "bool", "false",
           "Let a GPU compute f32 products (gemms, convolutions) on TF32 "
           "tensor cores (inputs rounded to 10-bit mantissas, f32 "
           "accumulation), as PyTorch's allow_tf32; the CPU computes them "
           "in f32">,
    Option<"target", "target", "std::string", "\"\"",
           "Target triple of the CPU kernels (default: the host's)">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "Device of the programs: cpu, or cuda (kernels in a "
           "@cuda_kernels executable for --of-lower-cuda-kernels)">
  ];
  let dependentDialects = ["::mlir::ofrt::PlanDialect", "::mlir::func::FuncDialect"];
}

def LowerCpuKernelsPass : Pass<"of-lower-cpu-kernels", "ModuleOp"> {
  let summary = "Lower the kernels of CPU executables to the LLVM dialect";
  let description = [{
    Lowers each kernel module inside an `ofrt.executable` from linalg/memref
    to the LLVM dialect: linalg to loops, math functions to polynomial
    approximations (so loops vectorise), memrefs with the bare-pointer
    calling convention, and adds for each kernel `kN` the packed entry point
    `void kN(void **args, int64_t begin, int64_t end)` that the runtime
    calls. A kernel whose first loop is parallel and indexes every output
    runs the iterations [begin, end) of that loop, and its launches get
    `range` (the loop's extent) and `work` (innermost iterations), so the
    runtime may split the range among threads. A reduction's innermost loop
    carries its accumulator as an iter_arg with a `reassoc` combiner (LLVM
    vectorises it), and bool buffers are read and written as bytes.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::vector::VectorDialect",
    "::mlir::linalg::LinalgDialect"
  ];
}

def LowerCudaKernelsPass : Pass<"of-lower-cuda-kernels", "ModuleOp"> {
  let summary = "Compile the kernels of CUDA executables to cubins (or PTX)";
  let description = [{
    Compiles each kernel module of an `ofrt.executable` whose target is
    `nvptx64-nvidia-cuda` (as `--of-build-plan{device=cuda}` makes it) for
    an NVIDIA GPU:

    - every linalg op's parallel loops are put outside its reductions;
    - a reduction of at least 256 elements per output, with no more outputs
      than that, becomes a block per output (1024 threads for a full
      reduction): strided partial folds, then `gpu.all_reduce`;
    - linalg becomes loops: parallel dimensions `scf.parallel`, reduction
      dimensions `scf.for` inside; a top-level `scf.for` whose iterations
      provably touch disjoint slices of what they write (the embedding
      gradient's columns) becomes an `scf.parallel`;
    - every top-level loop nest of a kernel becomes one `gpu.launch`: an
      `scf.parallel`'s iterations are spread over 256-thread blocks by a
      linear index, delinearised row-major (so consecutive threads touch
      consecutive elements of the innermost dimension); any other
      sequential nest runs on one thread. The views a loop reads (reshape,
      subview) are rebuilt inside the launch, so every kernel argument is a
      whole plan buffer passed as a bare pointer;
    - `gpu-kernel-outlining`, `gpu.all_reduce` lowered to shuffles and
      workgroup memory, `nvvm-attach-target{chip}`,
      `convert-gpu-to-nvvm` (bare pointers) and `gpu-module-to-binary`:
      a cubin per launch (`format=bin`, with the CUDA toolkit's ptxas), or
      PTX (`format=isa`) that the driver compiles when it loads it.

    Each kernel `kN` of the plan then is an ordered array of GPU launches,
    recorded in the executable's `launches` dictionary (each launch: the
    `gpu.binary` name and its function, `grid` and `block` dimensions, and `args`, the plan
    launch's buffer indices in the GPU kernel's parameter order); the
    executable's body keeps the `gpu.binary` ops.

    ```mlir
    // A plan kernel y = tanh(x) + z over 1000 elements, k0(%x, %z, %y),
    // becomes one launch of 4 blocks of 256 threads:
    ofrt.executable @cuda_kernels attributes {format = "cubin",
        launches = {k0 = [{args = array<i64: 0, 1, 2>, block = array<i64: 256, 1, 1>,
                           function = "k0_kernel", grid = array<i64: 4, 1, 1>,
                           kernel = "k0_kernel"} ] },
        target = "nvptx64-nvidia-cuda"} {
      builtin.module attributes {gpu.container_module} {
        gpu.binary @k0_kernel [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF...">]
      }
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90a\"",
           "GPU architecture to compile for (sm_80, sm_90a, ...)">,
    Option<"format", "format", "std::string", "\"bin\"",
           "bin (cubin, needs ptxas) or isa (PTX, compiled by the driver)">,
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block of a parallel loop nest">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::index::IndexDialect",
    "::mlir::linalg::LinalgDialect"
  ];
}

#endif // OF_CONVERSION_PASSES_TD
