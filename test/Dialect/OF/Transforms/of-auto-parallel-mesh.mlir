// --of-auto-parallel=factorize=true: the search also chooses the mesh. On
// nodes of 8 GPUs (the h100-cluster preset: NVLink within a node,
// InfiniBand between), 16 devices in a line are costed as [16] and every
// grid [a, 16/a], each axis with the link of its span; the cheapest grid
// becomes the placement's shape and the annotations follow it.
// RUN: of-opt %s --of-auto-parallel="factorize=true interconnect=h100-cluster" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: not of-opt %s --of-auto-parallel="factorize=true cluster=maybe" 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: error: --of-auto-parallel: cluster takes on, off or auto, not 'maybe'

// CHECK: remark: auto-parallel mesh: [16] {{.*}} s; [2x8] {{.*}} s; [4x4] {{.*}} s; [8x2] {{.*}} s; chose [4x4]
// CHECK: of.placement @mesh {device = "cpu", shape = [4, 4]}
// Megatron within a node (the axis of 4 GPUs on NVLink):
// CHECK: func.func @mlp(%arg0: tensor<2048x1024xf32, #of.sbp<@mesh, [B, B]>> {of.name = "x"}, %arg1: tensor<1024x4096xf32, #of.sbp<@mesh, [B, S(1)]>> {of.name = "w0", of.param}, %arg2: tensor<4096x1024xf32, #of.sbp<@mesh, [B, S(0)]>> {of.name = "w1", of.param})
// CHECK-SAME: -> (tensor<f32, #of.sbp<@mesh, [B, B]>> {of.name = "loss"})
of.placement @mesh {device = "cpu", shape = [16]}
func.func @mlp(%x: tensor<2048x1024xf32> {of.name = "x"},
               %w0: tensor<1024x4096xf32> {of.name = "w0", of.param},
               %w1: tensor<4096x1024xf32> {of.name = "w1", of.param})
    -> (tensor<f32, #of.sbp<@mesh, [B]>> {of.name = "loss"}) {
  %h0 = of.matmul %x, %w0 : (tensor<2048x1024xf32>, tensor<1024x4096xf32>) -> tensor<2048x4096xf32>
  %a0 = of.relu %h0 : (tensor<2048x4096xf32>) -> tensor<2048x4096xf32>
  %h1 = of.matmul %a0, %w1 : (tensor<2048x4096xf32>, tensor<4096x1024xf32>) -> tensor<2048x1024xf32>
  %s = of.reduce_sum %h1 {axes = array<i64: 0, 1>} : (tensor<2048x1024xf32>) -> tensor<f32>
  %l = of.boxing %s : tensor<f32> -> tensor<f32, #of.sbp<@mesh, [B]>>
  return %l : tensor<f32, #of.sbp<@mesh, [B]>>
}

