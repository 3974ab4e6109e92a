// With tf32=true (PyTorch's allow_tf32), a GPU may compute the f32 products
// of a program's gemm and convolution steps on TF32 tensor cores (inputs
// rounded to 10-bit mantissas, f32 accumulation): the program says so with
// allow_tf32, which the binary plan keeps. By default f32 products stay f32
// (cuBLAS's sgemm, cuDNN's FMA math), as the CPU's; the CPU computes them
// in f32 either way.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,format=isa,tf32=true | FileCheck %s
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s --check-prefix=DEFAULT
// RUN: of-opt %s --of-pipeline=cuda,format=isa,tf32=true | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: of-translate --of-plan-to-binary %t.mlir -o %t.again.ofp
// RUN: cmp %t.ofp %t.again.ofp
// RUN: of-opt %s --of-pipeline=cuda,format=isa | of-translate --of-plan-to-binary -o %t.default.ofp
// RUN: of-translate --of-binary-to-plan %t.default.ofp | FileCheck %s --check-prefix=DEFAULT
// RUN: not of-opt %s --of-pipeline=cuda,tf32=yes 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: ofrt.program "f" attributes {allow_tf32,
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @{{buf[0-9]+}}]
// CHECK: ofrt.library "dnn.conv2d" [@arg2, @arg3, @{{buf[0-9]+}}]
// DEFAULT: ofrt.program "f" attributes {
// DEFAULT-NOT: allow_tf32
// DEFAULT-SAME: }
// BAD: --of-pipeline: 'tf32=yes' is not a value tf32 takes

func.func @f(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
             %x: tensor<2x4x9x9xf32>, %w: tensor<8x4x3x3xf32>)
    -> (tensor<64x16xf32>, tensor<2x8x7x7xf32>) {
  %p = of.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  %y = of.conv2d %x, %w : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x7xf32>
  return %p, %y : tensor<64x16xf32>, tensor<2x8x7x7xf32>
}
