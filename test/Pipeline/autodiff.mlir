// Gradients through a pipeline stage boundary: the boxing that moves the
// activations from @s0 to @s1 sends their gradient back from @s1 to @s0 (B
// there, as the activations have no distribution yet; boxing it to what its
// user takes folds into one boxing), and the constant that both stages'
// tanh gradients share (1 - t^2) gets a copy on each stage.
// RUN: of-opt %s --of-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: of-opt %s --of-pipeline=cpu,autodiff=true,stop-after=sbp | FileCheck %s --check-prefix=SBP
// RUN: of-opt %s --of-pipeline=cpu,autodiff=true,stop-after=partition | FileCheck %s --check-prefix=PART

of.placement @s0 {device = "cpu", shape = [2], ranks = [0, 1]}
of.placement @s1 {device = "cpu", shape = [1], ranks = [2]}

// GRAD-LABEL: func.func @two_stages_grad(
// GRAD: %[[DH:.*]] = of.matmul %{{.*}}, %arg2 {of.backward, transpose_b = true}
// GRAD: of.boxing %[[DH]] {of.backward} : tensor<6x8xf32> -> tensor<6x8xf32, #of.sbp<@s0, [B]>>

// SBP-LABEL: func.func @two_stages_grad(
// SBP-DAG: of.constant dense<1.000000e+00> : tensor<f32> -> tensor<f32, #of.sbp<@s0, [B]>>
// SBP-DAG: of.constant dense<1.000000e+00> : tensor<f32> -> tensor<f32, #of.sbp<@s1, [B]>>

// Each rank of @s0 sends its rows of the activations once (on the 1-rank
// @s1 every distribution is B), and rank 2 sends each its rows of the
// gradient back.
// PART-LABEL: func.func @two_stages_grad(
// PART-SAME: of.ranks = array<i64: 0>
// PART: of.send %{{.*}} to 2 : tensor<3x8xf32>
// PART-NOT: of.send
// PART: of.recv from 2 into %{{.*}} : tensor<3x8xf32>
// PART-LABEL: func.func @two_stages_grad__role2(
// PART-SAME: of.ranks = array<i64: 2>
// PART: of.recv from 0 into %{{.*}} : tensor<3x8xf32>
// PART: of.recv from 1 into %{{.*}} : tensor<3x8xf32>
// PART-NOT: of.recv
// PART: of.send %{{.*}} to 0 : tensor<3x8xf32>
// PART: of.send %{{.*}} to 1 : tensor<3x8xf32>
func.func @two_stages(%x: tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>,
                      %w1: tensor<8x8xf32, #of.sbp<@s0, [B]>> {of.param},
                      %w2: tensor<8x4xf32, #of.sbp<@s1, [B]>> {of.param})
    -> tensor<f32, #of.sbp<@s1, [B]>> {
  %h = of.matmul %x, %w1 : (tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>, tensor<8x8xf32, #of.sbp<@s0, [B]>>) -> tensor<6x8xf32>
  %t = of.tanh %h : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %m = of.boxing %t : tensor<6x8xf32> -> tensor<6x8xf32, #of.sbp<@s1, [B]>>
  %y = of.matmul %m, %w2 : (tensor<6x8xf32, #of.sbp<@s1, [B]>>, tensor<8x4xf32, #of.sbp<@s1, [B]>>) -> tensor<6x4xf32>
  %u = of.tanh %y : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %l = of.reduce_sum %u {axes = array<i64: 0, 1>} : (tensor<6x4xf32>) -> tensor<f32>
  %lb = of.boxing %l : tensor<f32> -> tensor<f32, #of.sbp<@s1, [B]>>
  return %lb : tensor<f32, #of.sbp<@s1, [B]>>
}
