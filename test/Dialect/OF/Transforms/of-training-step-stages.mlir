// --of-training-step over pipeline stages: the step's scalars (lr, Adam's
// step count) live with the loss on @s1; the update of a parameter on @s0
// takes them through a boxing to @s0, and with clipping every stage's sum
// of squared gradients comes to @s1 before the norm, whose factor goes back.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamw max-grad-norm=1.0" | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,train=adamw,max-grad-norm=1.0,stop-after=partition | FileCheck %s --check-prefix=PART
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,accumulate=2,stop-after=partition | FileCheck %s --check-prefix=SCHED

of.placement @s0 {device = "cpu", shape = [1], ranks = [0]}
of.placement @s1 {device = "cpu", shape = [1], ranks = [1]}

// CHECK-LABEL: func.func @two_stages_train_step(
// CHECK-SAME: %{{.*}}: tensor<f32, #of.sbp<@s1, [B]>> {of.name = "adam_step"}, %[[LR:[^:]*]]: tensor<f32, #of.sbp<@s1, [B]>> {of.name = "lr"})
// CHECK: %[[G:.*]]:3 = call @two_stages_grad(
// The squared norm of w1's gradient (on @s0) moves to @s1.
// CHECK: %[[SQ:.*]] = of.reduce_sum
// CHECK: of.boxing %[[SQ]] : tensor<f32> -> tensor<f32, #of.sbp<@s1, [B]>>
// CHECK: %[[NORM:.*]] = of.sqrt
// CHECK: %[[F:.*]] = of.minimum
// CHECK: of.boxing %[[F]] : tensor<f32> -> tensor<f32, #of.sbp<@s0, [B]>>
// CHECK: of.boxing %[[LR]] : tensor<f32, #of.sbp<@s1, [B]>> -> tensor<f32, #of.sbp<@s0, [B]>>

// Rank 0 receives the clipping factor, the learning rate and Adam's bias
// corrections; rank 1 sends them, and gets rank 0's squared norm.
// PART-LABEL: func.func @two_stages_train_step(
// PART-SAME: of.ranks = array<i64: 0>
// PART: of.send %{{.*}} to 1 : tensor<f32>
// PART: of.recv from 1
// PART-LABEL: func.func @two_stages_train_step__role1(
// PART-SAME: of.ranks = array<i64: 1>
// PART: of.recv from 0 into %{{.*}} : tensor<f32>
// PART: of.send %{{.*}} to 0 : tensor<f32>
// With 2 micro-batches, --of-schedule-stages runs both forward passes
// first (GPipe): rank 0 sends both micro-batches' activations before it
// receives a gradient, and rank 1 receives both before it sends one back.
// SCHED-LABEL: func.func @two_stages_train_step(
// SCHED-SAME: of.ranks = array<i64: 0>
// SCHED: of.send %{{.*}} to 1 : tensor<6x8xf32>
// SCHED-NOT: of.recv
// SCHED: of.send %{{.*}} to 1 : tensor<6x8xf32>
// SCHED: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// SCHED: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// SCHED-LABEL: func.func @two_stages_train_step__role1(
// SCHED: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// SCHED-NOT: of.send
// SCHED: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// SCHED: of.send %{{.*}} to 0 : tensor<6x8xf32>
// SCHED: of.send %{{.*}} to 0 : tensor<6x8xf32>
func.func @two_stages(%x: tensor<6x8xf32, #of.sbp<@s0, [B]>>,
                      %w1: tensor<8x8xf32, #of.sbp<@s0, [B]>> {of.param},
                      %w2: tensor<8x4xf32, #of.sbp<@s1, [B]>> {of.param})
    -> tensor<f32, #of.sbp<@s1, [B]>> {
  %h = of.matmul %x, %w1 : (tensor<6x8xf32, #of.sbp<@s0, [B]>>, tensor<8x8xf32, #of.sbp<@s0, [B]>>) -> tensor<6x8xf32>
  %t = of.tanh %h : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %m = of.boxing %t : tensor<6x8xf32> -> tensor<6x8xf32, #of.sbp<@s1, [B]>>
  %y = of.matmul %m, %w2 : (tensor<6x8xf32, #of.sbp<@s1, [B]>>, tensor<8x4xf32, #of.sbp<@s1, [B]>>) -> tensor<6x4xf32>
  %u = of.tanh %y : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %l = of.reduce_sum %u {axes = array<i64: 0, 1>} : (tensor<6x4xf32>) -> tensor<f32>
  %lb = of.boxing %l : tensor<f32> -> tensor<f32, #of.sbp<@s1, [B]>>
  return %lb : tensor<f32, #of.sbp<@s1, [B]>>
}
