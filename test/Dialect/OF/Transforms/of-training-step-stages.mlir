// --of-training-step over pipeline stages: the step's scalars (lr, Adam's
// step count) live with the loss on @s1; the update of a parameter on @s0
// takes them through a boxing to @s0, and with clipping every stage's sum
// of squared gradients comes to @s1 before the norm, whose factor goes back.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamw max-grad-norm=1.0" | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,train=adamw,max-grad-norm=1.0,stop-after=partition | FileCheck %s --check-prefix=PART
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,accumulate=2,stop-after=partition | FileCheck %s --check-prefix=SCHED
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,accumulate=4,schedule=1f1b,stop-after=partition | FileCheck %s --check-prefix=ONEF
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,accumulate=4,schedule=1f1b,stop-after=partition | FileCheck %s --check-prefix=COMP
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd accumulate=2" | FileCheck %s --check-prefix=MARK
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamw max-grad-norm=1.0 accumulate=2" | FileCheck %s --check-prefix=ACCUM

// Micro-batches' gradients summed (a sum's type has no placement yet):
// @s0's squared norm still moves to @s1, where the scalars are.
// ACCUM-LABEL: func.func @two_stages_train_step(
// ACCUM: call @two_stages_grad(
// ACCUM: call @two_stages_grad(
// ACCUM: %[[SQ:.*]] = of.reduce_sum {{.*}} : (tensor<8x8xf32>) -> tensor<f32>
// ACCUM-NEXT: of.boxing %[[SQ]] : tensor<f32> -> tensor<f32, #of.sbp<@s1, [B]>>
// ACCUM: of.sqrt

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
// --of-training-step marks what takes micro-batch i of the stacked data
// (for --of-schedule-stages=1f1b).
// MARK-LABEL: func.func @two_stages_train_step(
// MARK: of.slice %arg0 {limits = array<i64: 1, 6, 8>, of.micro_batch = 0 : i64
// MARK: of.slice %arg0 {limits = array<i64: 2, 6, 8>, of.micro_batch = 1 : i64
// With 4 micro-batches and schedule=1f1b, each rank's compute is 1F1B:
// rank 0 (stage 0 of 2) runs the forwards of micro-batches 0 and 1, then
// backward 0, forward 2, backward 1, forward 3, backwards 2 and 3 (the
// weight gradient matmul {transpose_a} after each received gradient), so
// it holds at most two micro-batches' activations; rank 1 alternates from
// the start. A transfer takes place when what it moves is ready in the
// ideal timeline: activations 0 and 1 go before gradient 0 comes back.
// COMP-LABEL: func.func @two_stages_train_step(
// COMP: of.matmul %{{[0-9]+}}, %arg1 :
// COMP: of.matmul %{{[0-9]+}}, %arg1 :
// COMP: of.matmul %{{.*}} {transpose_a = true}
// COMP: of.matmul %{{[0-9]+}}, %arg1 :
// COMP: of.matmul %{{.*}} {transpose_a = true}
// COMP: of.matmul %{{[0-9]+}}, %arg1 :
// COMP: of.matmul %{{.*}} {transpose_a = true}
// COMP: of.matmul %{{.*}} {transpose_a = true}
// ONEF-LABEL: func.func @two_stages_train_step(
// ONEF-SAME: of.ranks = array<i64: 0>
// ONEF: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF-NOT: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 1 : tensor<6x8xf32>
// ONEF: of.recv from 1 into %{{.*}} : tensor<6x8xf32>
// ONEF-LABEL: func.func @two_stages_train_step__role1(
// ONEF: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF-NOT: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF-NOT: of.send %{{.*}} to 0 : tensor<6x8xf32>
// ONEF: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF-NOT: of.recv from 0 into %{{.*}} : tensor<6x8xf32>
// ONEF: of.send %{{.*}} to 0 : tensor<6x8xf32>
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
