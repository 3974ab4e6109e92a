// On a GPU, bf16 and f16 matrix products are cuBLAS gemm steps too: 16-bit
// A and B with f32 compute. When the product's rounding from its f32
// accumulator is all that reads it, cuBLAS writes the 16-bit result itself
// (rounded once, as the kernel would) and the rounding kernel is gone;
// otherwise C is the f32 accumulator and a kernel reads it. The CPU does
// the same for bf16 (oneDNN's matmul) and keeps f16 products as generated
// kernels (oneDNN 2.6 has no f16 matmul on the CPU), and all 16-bit
// products with use-dnn=false. The runtime's plan verifier admits these
// type pairs only.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,stop-after=plan | FileCheck %s --check-prefix=CPU
// RUN: of-opt %s --of-pipeline=cpu,stop-after=plan,use-dnn=false | FileCheck %s --check-prefix=NODNN
// RUN: of-opt %s --of-pipeline=cuda,format=isa | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: sed -e 's/@buf3 arena offset 0 size 2048 : tensor<64x16xbf16>/@buf3 arena offset 0 size 2048 : tensor<64x16xf16>/' %t.mlir \
// RUN:   | not of-translate --of-plan-to-binary -o %t.bad.ofp 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: ofrt.program "bf16"
// CHECK: ofrt.buffer @[[Y:buf[0-9]+]] arena {{.*}} : tensor<64x16xbf16>
// CHECK-NEXT: ofrt.library "blas.gemm" [@arg0, @arg1, @[[Y]]] params [1, 64, 16, 32, 0, 32, 1, 0, 16, 1, 0, 16]
// CHECK-NOT: ofrt.launch
// CHECK-LABEL: ofrt.program "f16_batched"
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @{{buf[0-9]+}}] params [3, 8, 4, 5,
// CHECK-NOT: ofrt.launch
// CHECK-LABEL: ofrt.program "bf16_relu"
// CHECK: ofrt.buffer @[[ACC:buf[0-9]+]] arena {{.*}} : tensor<64x16xf32>
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @[[ACC]]]
// CHECK-NEXT: ofrt.launch @cuda_kernels "{{k[0-9]+}}" [@[[ACC]], @{{buf[0-9]+}}]

// CPU-LABEL: ofrt.program "bf16"
// CPU: ofrt.buffer @[[Y:buf[0-9]+]] arena {{.*}} : tensor<64x16xbf16>
// CPU-NEXT: ofrt.library "blas.gemm" [@arg0, @arg1, @[[Y]]] params [1, 64, 16, 32, 0, 32, 1, 0, 16, 1, 0, 16]
// CPU-NOT: ofrt.launch
// CPU-LABEL: ofrt.program "f16_batched"
// CPU-NOT: blas.gemm
// CPU: ofrt.launch
// CPU-LABEL: ofrt.program "bf16_relu"
// CPU: ofrt.buffer @[[ACC:buf[0-9]+]] arena {{.*}} : tensor<64x16xf32>
// CPU: ofrt.library "blas.gemm" [@arg0, @arg1, @[[ACC]]]
// CPU-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[ACC]], @{{buf[0-9]+}}]

// NODNN-LABEL: ofrt.program "bf16"
// NODNN-NOT: blas.gemm
// NODNN: ofrt.launch
// NODNN-LABEL: ofrt.program "f16_batched"
// NODNN-NOT: blas.gemm

// BAD: blas.gemm needs A and B of one type (f32, f64, bf16 or f16) and C of that type or, for bf16 and f16, f32; got bf16, bf16, f16

func.func @bf16(%a: tensor<64x32xbf16> {of.name = "a"}, %b: tensor<32x16xbf16> {of.name = "b"}) -> tensor<64x16xbf16> {
  %c = of.matmul %a, %b : (tensor<64x32xbf16>, tensor<32x16xbf16>) -> tensor<64x16xbf16>
  return %c : tensor<64x16xbf16>
}

func.func @f16_batched(%a: tensor<3x8x5xf16>, %b: tensor<3x5x4xf16>) -> tensor<3x8x4xf16> {
  %c = of.matmul %a, %b : (tensor<3x8x5xf16>, tensor<3x5x4xf16>) -> tensor<3x8x4xf16>
  return %c : tensor<3x8x4xf16>
}

// The rounding fuses with the relu: the kernel stays.
func.func @bf16_relu(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<64x16xbf16> {
  %c = of.matmul %a, %b : (tensor<64x32xbf16>, tensor<32x16xbf16>) -> tensor<64x16xbf16>
  %r = of.relu %c : (tensor<64x16xbf16>) -> tensor<64x16xbf16>
  return %r : tensor<64x16xbf16>
}
