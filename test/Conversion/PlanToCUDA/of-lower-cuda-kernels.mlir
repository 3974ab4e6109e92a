// --of-lower-cuda-kernels on its own, fed the plan --of-build-plan makes
// for a GPU: the CUDA executable's kernels become gpu.binary objects for
// the chip (here PTX, format=isa, which needs no ptxas) and the executable
// records each kernel's launches (grid, block, arguments); the relu runs
// over its 64 elements in one block of 64 threads. Library steps and
// buffers are untouched.
// RUN: of-opt --of-pipeline=cuda,stop-after=plan %s | of-opt --of-lower-cuda-kernels=format=isa | FileCheck %s
// RUN: of-opt --of-pipeline=cuda,stop-after=plan %s | of-opt --of-lower-cuda-kernels="format=isa chip=sm_80" | FileCheck %s --check-prefix=SM80

// CHECK: ofrt.executable @cuda_kernels attributes {format = "ptx", launches = {[[K:k[0-9]+]] = [{args = array<i64: 0>, block = array<i64: 64, 1, 1>, function = "[[K]]_kernel", grid = array<i64: 1, 1, 1>
// CHECK: gpu.binary @[[K]]_kernel [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "{{.*}}.target sm_90a
// CHECK: ofrt.program "f" attributes {arena_size = 256 : i64, device = "cuda"
// CHECK: ofrt.library "blas.gemm"
// CHECK-NEXT: ofrt.launch @cuda_kernels "[[K]]" [@{{.*}}]
// SM80: #nvvm.target<chip = "sm_80">
func.func @f(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x16xf32> {of.name = "w"}) -> (tensor<4x16xf32> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
