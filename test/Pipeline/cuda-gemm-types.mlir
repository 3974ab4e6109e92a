// On a GPU, bf16 and f16 matrix products are cuBLAS gemm steps too: 16-bit
// A and B, accumulated into an f32 C (the contraction's accumulator), then
// rounded once by a kernel. The CPU keeps them as generated kernels
// (OpenBLAS has no such gemm). The runtime's plan verifier admits these
// type pairs only.
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,stop-after=plan | FileCheck %s --check-prefix=CPU
// RUN: of-opt %s --of-pipeline=cuda,format=isa | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: sed -e 's/@buf2 arena offset 0 size 4096 : tensor<64x16xf32>/@buf2 arena offset 0 size 4096 : tensor<64x16xi32>/' %t.mlir \
// RUN:   | not of-translate --of-plan-to-binary -o %t.bad.ofp 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: ofrt.program "bf16"
// CHECK: ofrt.buffer @[[C:buf[0-9]+]] arena {{.*}} : tensor<64x16xf32>
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @[[C]]] params [1, 64, 16, 32, 0, 32, 1, 0, 16, 1, 0, 16]
// CHECK-NEXT: ofrt.launch @cuda_kernels "{{k[0-9]+}}" [@[[C]], @{{buf[0-9]+}}]
// CHECK-LABEL: ofrt.program "f16_batched"
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @{{buf[0-9]+}}] params [3, 8, 4, 5,

// CPU-LABEL: ofrt.program "bf16"
// CPU-NOT: blas.gemm
// CPU: ofrt.launch
// CPU-LABEL: ofrt.program "f16_batched"
// CPU-NOT: blas.gemm

// BAD: blas.gemm needs A and B of one type (f32, f64, bf16 or f16) and C of that type or, for bf16 and f16, f32; got bf16, bf16, i32

func.func @bf16(%a: tensor<64x32xbf16> {of.name = "a"}, %b: tensor<32x16xbf16> {of.name = "b"}) -> tensor<64x16xbf16> {
  %c = of.matmul %a, %b : (tensor<64x32xbf16>, tensor<32x16xbf16>) -> tensor<64x16xbf16>
  return %c : tensor<64x16xbf16>
}

func.func @f16_batched(%a: tensor<3x8x5xf16>, %b: tensor<3x5x4xf16>) -> tensor<3x8x4xf16> {
  %c = of.matmul %a, %b : (tensor<3x8x5xf16>, tensor<3x5x4xf16>) -> tensor<3x8x4xf16>
  return %c : tensor<3x8x4xf16>
}
