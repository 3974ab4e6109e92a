// f32 sqrt on a GPU is PTX's correctly rounded sqrt.rn.f32, as the CPU's
// (libdevice's __nv_sqrtf would be sqrt.approx: MLIR's NVVM target cannot
// set NVVM reflect's __CUDA_PREC_SQRT); f64 sqrt is libdevice's, sqrt.rn.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s

// CHECK-LABEL: ofrt.executable @cuda_kernels
// CHECK-NOT: sqrt.approx
// CHECK: sqrt.rn.f32
// CHECK-NOT: sqrt.approx
// CHECK: sqrt.rn.f64
// CHECK-NOT: sqrt.approx
// CHECK: ofrt.program
func.func @s(%x: tensor<1024xf32>, %d: tensor<1024xf64>) -> (tensor<1024xf32>, tensor<1024xf64>) {
  %y = of.sqrt %x : (tensor<1024xf32>) -> tensor<1024xf32>
  %z = of.sqrt %d : (tensor<1024xf64>) -> tensor<1024xf64>
  return %y, %z : tensor<1024xf32>, tensor<1024xf64>
}
