// --of-pipeline=cuda compiles every kernel of a plan for an NVIDIA GPU
// (here as PTX, which needs no ptxas; the toolkit's libdevice is linked for
// fma, floor and fabs, and f32 sqrt is sqrt.rn): an elementwise kernel over
// all its elements in 256-thread blocks, row reductions a warp per row
// (shuffles; f64 rows a thread per row), a full reduction in one block of 1024
// threads (warp shuffles and shared memory), a gradient-like sum over the
// outer axis a thread per output (its loops reordered), a few long rows a
// block per row; the scatter-add of an embedding gradient a thread per column
// and row (its column iterations proven independent, its rows dealt out); the
// matrix product stays a blas.gemm library step; the program's device is
// cuda. The plan round-trips through .ofp byte for byte (GPU modules as
// blobs, launch tables verified by the runtime's loader); where no CUDA
// driver loads, of-run says so.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,chip=sm_80,format=isa | FileCheck %s
// RUN: not of-opt %s --of-pipeline=cuda,chip=volta 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not of-opt %s --of-pipeline=cuda,format=elf 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: env CUDA_HOME=%t.no-toolkit not of-opt %s --of-pipeline=cuda,format=isa 2>&1 | FileCheck %s --check-prefix=TOOLKIT
// TOOLKIT: --of-pipeline=cuda needs the CUDA toolkit's libdevice ({{.*}}.no-toolkit/nvvm/libdevice/libdevice.10.bc does not exist)
// RUN: of-opt %s --of-pipeline=cuda,format=isa | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: FileCheck %s --check-prefix=BACK < %t.mlir
// RUN: of-translate --of-plan-to-binary %t.mlir -o %t.2.ofp
// RUN: cmp %t.ofp %t.2.ofp
// Listing needs no driver (a describing session; running does, see
// test/Runtime/cuda-executor-errors.mlir).
// RUN: env OF_CUDA_DRIVER=%t.no-libcuda.so of-run %t.ofp --list | FileCheck %s --check-prefix=LIST
// A launch table that passes a buffer the step does not have is refused:
// RUN: sed 's/args = array<i64: 0, 1, 2>, block = array<i64: 256/args = array<i64: 0, 1, 7>, block = array<i64: 256/' %t.mlir \
// RUN:   | not of-translate --of-plan-to-binary -o %t.bad.ofp 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: ofrt.executable @cuda_kernels attributes {
// CHECK-SAME: format = "ptx"
// CHECK-SAME: launches = {
// The elementwise tanh(x) + y over 1000 elements: 4 blocks of 256.
// CHECK-SAME: [[EW:k[0-9]+]] = [{args = array<i64: 0, 1, 2>, block = array<i64: 256, 1, 1>, function = "[[EW]]_kernel", grid = array<i64: 4, 1, 1>, kernel = "[[EW]]_kernel"}]
// (The launches are listed by kernel name: k0, k1, k10, ..., k2, ...)
// The sum over the outer axis of a 100x400 matrix: a thread per column.
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 2, 1, 1>
// The max of 3 rows of 5000: a block of 256 threads per row.
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 3, 1, 1>
// The embedding gradient's 48 columns times its 20 rows: 960 threads, each
// looping over the 30 positions and applying those of its own row.
// CHECK-SAME: args = array<i64: 0, 1, 2>, block = array<i64: 256, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 4, 1, 1>
// The sums of 20 rows of 64: a warp per row, 8 to a block (the last
// block's spare warps skip the row).
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "[[WARP:k[0-9]+]]_kernel", grid = array<i64: 3, 1, 1>
// f64 rows: a thread per row (warp shuffles move 32 bits).
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 16, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 1, 1, 1>
// The softmax's row reductions (8 rows of 100): a warp per row.
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 1, 1, 1>
// The full reduction: one block of 1024 threads.
// CHECK-SAME: args = array<i64: 0, 1>, block = array<i64: 1024, 1, 1>, function = "{{k[0-9]+}}_kernel", grid = array<i64: 1, 1, 1>
// CHECK-SAME: target = "nvptx64-nvidia-cuda"
// CHECK: gpu.binary @{{k[0-9]+}}_kernel [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = "
// CHECK-SAME: .target sm_80
// CHECK: shfl.sync.bfly
// The warp sums of the 20 rows of 64: the warp is block * 8 + thread / 32,
// the spare ones (past row 19) skip, lanes stride by 32 elements, five
// butterfly shuffles over the full warp, lane 0 adds into the output.
// CHECK: gpu.binary @[[WARP]]_kernel
// CHECK-SAME: .maxntid 256, 1, 1
// CHECK-SAME: shr.u64 {{[^,]*}}, {{[^,]*}}, 5;
// CHECK-SAME: mul.wide.u32 {{[^,]*}}, {{[^,]*}}, 8;
// CHECK-SAME: setp.gt.u64 {{[^,]*}}, {{[^,]*}}, 19;
// CHECK-SAME: and.b64 {{[^,]*}}, {{[^,]*}}, 31;
// CHECK-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 1, 31, -1;
// CHECK-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 2, 31, -1;
// CHECK-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 4, 31, -1;
// CHECK-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 8, 31, -1;
// CHECK-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 16, 31, -1;
// CHECK-SAME: st.global.b32
// CHECK-LABEL: ofrt.program "f" attributes {{{.*}}device = "cuda"
// CHECK: ofrt.launch @cuda_kernels "[[EW]]"
// CHECK: ofrt.library "blas.gemm"

// CHIP: chip names an NVIDIA GPU architecture such as sm_90a, not 'volta'
// FORMAT: --of-pipeline: format takes bin or isa, not 'elf'
// BACK: ofrt.executable @cuda_kernels attributes {format = "ptx", launches = {
// BACK: gpu.binary @{{k[0-9]+}}_kernel [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "
// LIST: entry f (rank 0)
// LIST-NEXT: input  x: f32 [1000]
// LIST: input  dy: f32 [30, 48]
// LIST: output dtable: f32 [20, 48]
// BAD: GPU launch 0 of kernel '{{k[0-9]+}}' passes buffer 7, but the step has 3

func.func @f(%x: tensor<1000xf32> {of.name = "x"}, %y: tensor<1000xf32> {of.name = "y"},
             %a: tensor<8x100xf32> {of.name = "a"}, %w: tensor<100x16xf32> {of.name = "w"},
             %g: tensor<100x400xf32> {of.name = "g"}, %r: tensor<3x5000xf32> {of.name = "r"},
             %ids: tensor<30xi64> {of.name = "ids"}, %dy: tensor<30x48xf32> {of.name = "dy"},
             %q: tensor<20x64xf32> {of.name = "q"}, %d: tensor<16x64xf64> {of.name = "d"})
    -> (tensor<1000xf32> {of.name = "z"}, tensor<8x100xf32> {of.name = "s"},
        tensor<f32> {of.name = "total"}, tensor<8x16xf32> {of.name = "p"},
        tensor<400xf32> {of.name = "colsum"}, tensor<3xf32> {of.name = "rowmax"},
        tensor<20x48xf32> {of.name = "dtable"}, tensor<20xf32> {of.name = "qsum"},
        tensor<16xf64> {of.name = "dsum"}) {
  %t = of.tanh %x : (tensor<1000xf32>) -> tensor<1000xf32>
  %z = of.add %t, %y : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %s = of.softmax %a {axis = 1 : i64} : (tensor<8x100xf32>) -> tensor<8x100xf32>
  %total = of.reduce_sum %z {axes = array<i64: 0>} : (tensor<1000xf32>) -> tensor<f32>
  %p = of.matmul %a, %w : (tensor<8x100xf32>, tensor<100x16xf32>) -> tensor<8x16xf32>
  %colsum = of.reduce_sum %g {axes = array<i64: 0>} : (tensor<100x400xf32>) -> tensor<400xf32>
  %rowmax = of.reduce_max %r {axes = array<i64: 1>} : (tensor<3x5000xf32>) -> tensor<3xf32>
  %dtable = of.embedding_grad %ids, %dy : (tensor<30xi64>, tensor<30x48xf32>) -> tensor<20x48xf32>
  %qsum = of.reduce_sum %q {axes = array<i64: 1>} : (tensor<20x64xf32>) -> tensor<20xf32>
  %dsum = of.reduce_sum %d {axes = array<i64: 1>} : (tensor<16x64xf64>) -> tensor<16xf64>
  return %z, %s, %total, %p, %colsum, %rowmax, %dtable, %qsum, %dsum : tensor<1000xf32>, tensor<8x100xf32>, tensor<f32>, tensor<8x16xf32>, tensor<400xf32>, tensor<3xf32>, tensor<20x48xf32>, tensor<20xf32>, tensor<16xf64>
}
