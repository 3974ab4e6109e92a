// The backward program is distributed like the forward one: under data
// parallelism (x split by rows, w broadcast) the weight gradient x^T dY
// contracts the split dimension, so propagation gives it P, and its boxing
// to the parameter's B becomes an all-reduce after partitioning.
// RUN: of-opt %s --of-pipeline=cpu,autodiff=true,stop-after=sbp | FileCheck %s --check-prefix=SBP
// RUN: of-opt %s --of-pipeline=cpu,autodiff=true,stop-after=partition | FileCheck %s --check-prefix=PART

of.placement @mesh {device = "cpu", shape = [2]}

// SBP-LABEL: func.func @dp_grad(
// SBP: %[[DW:.*]] = of.matmul %arg0, %{{.*}} {transpose_a = true} : (tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>, tensor<8x3xf32, #of.sbp<@mesh, [S(0)]>>) -> tensor<4x3xf32, #of.sbp<@mesh, [P]>>
// SBP: %[[B:.*]] = of.boxing %[[DW]] : tensor<4x3xf32, #of.sbp<@mesh, [P]>> -> tensor<4x3xf32, #of.sbp<@mesh, [B]>>
// SBP: return %{{.*}}, %[[B]]

// PART-LABEL: func.func @dp_grad
// PART-SAME: of.entry = "dp_grad"
// PART: %[[DW:.*]] = of.matmul %arg0, %{{.*}} {transpose_a = true} : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// PART: %[[AR:.*]] = of.all_reduce %[[DW]]
// PART: return %{{.*}}, %[[AR]]
func.func @dp(%x: tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>,
              %w: tensor<4x3xf32, #of.sbp<@mesh, [B]>> {of.param})
    -> tensor<f32, #of.sbp<@mesh, [B]>> {
  %y = of.matmul %x, %w : (tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>, tensor<4x3xf32, #of.sbp<@mesh, [B]>>) -> tensor<8x3xf32>
  %t = of.tanh %y : (tensor<8x3xf32>) -> tensor<8x3xf32>
  %s = of.reduce_mean %t {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  %l = of.boxing %s : tensor<f32> -> tensor<f32, #of.sbp<@mesh, [B]>>
  return %l : tensor<f32, #of.sbp<@mesh, [B]>>
}
