// RUN: of-opt --of-pipeline=cpu --split-input-file %s | FileCheck %s

// How --of-lower-cpu-kernels shapes the generated loops for LLVM's
// vectoriser.

// A bool buffer is read as bytes compared with zero: LLVM vectorises i1
// loads one mask register per element (a masked softmax's select ran 4x
// slower than a mul over the same floats).
// CHECK-LABEL: llvm.func internal @k0_impl
// CHECK-NOT: -> i1
// CHECK: %[[BYTE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK: %[[BIT:.*]] = llvm.icmp "ne" %[[BYTE]], %{{.*}} : i8
// CHECK: llvm.select %[[BIT]], %{{.*}}, %{{.*}} : i1, f32
func.func @masked(%m: tensor<4x8xi1> {of.name = "mask"}, %x: tensor<2x4x8xf32> {of.name = "x"}) -> tensor<2x4x8xf32> {
  %ninf = of.constant dense<-1.0e9> : tensor<f32>
  %y = of.select %m, %x, %ninf : (tensor<4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
