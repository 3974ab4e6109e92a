// Dynamic loss scaling (f16 mixed precision): --of-autodiff=seed-argument
// gives the gradient function the loss's cotangent as its last argument;
// the training step seeds it with 2^(16 + loss_scale_log2), divides the
// gradients by the scale, tests them for inf/NaN (x * 0 == 0 of their sum
// of squares), keeps the old parameters and AdamW state (the step count
// too) when they are not finite, and updates the scale's state.
// RUN: of-opt %s --of-autodiff=seed-argument=true | FileCheck %s --check-prefix=SEED
// RUN: of-opt %s --of-amp=dtype=f16 --of-autodiff=seed-argument=true --of-training-step="optimizer=adamw loss-scaling=true loss-scale-window=3" --inline --canonicalize | FileCheck %s
// RUN: not of-opt %s --of-autodiff --of-training-step="loss-scaling=true" 2>&1 | FileCheck %s --check-prefix=NOSEED
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,amp=f16,loss-scale-log2=8,stop-after=sbp | FileCheck %s --check-prefix=PIPE
// RUN: not of-opt %s --of-pipeline=cpu,train=sgd,amp=f16,loss-scale-window=0 2>&1 | FileCheck %s --check-prefix=BADWINDOW

// SEED-LABEL: func.func @loss_grad
// SEED-SAME: %[[SEED:[^:]*]]: tensor<f32> {of.name = "loss_seed"}
// SEED: %[[R:.*]] = of.reshape %[[SEED]] : (tensor<f32>) -> tensor<1x1xf32>
// SEED: of.broadcast_to %[[R]]

// CHECK-LABEL: func.func @loss_train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x3xf32> {of.name = "w", of.param}
// CHECK-SAME: %[[M:[^:]*]]: tensor<8x3xf32> {of.name = "adam_m_w"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<8x3xf32> {of.name = "adam_v_w"}
// CHECK-SAME: %[[STEP:[^:]*]]: tensor<f32> {of.name = "adam_step"}
// CHECK-SAME: %[[LOG2:[^:]*]]: tensor<f32> {of.name = "loss_scale_log2"}
// CHECK-SAME: %[[GOOD:[^:]*]]: tensor<f32> {of.name = "loss_scale_good_steps"}
// CHECK-SAME: {of.name = "lr"}
// CHECK-DAG: %[[WINDOW:.*]] = of.constant dense<3.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = of.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ONE:.*]] = of.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[TWO:.*]] = of.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[INIT:.*]] = of.constant dense<1.600000e+01> : tensor<f32>
// CHECK: %[[E:.*]] = of.add %[[LOG2]], %[[INIT]]
// CHECK: %[[SCALE:.*]] = of.pow %[[TWO]], %[[E]]
// CHECK: of.matmul {{.*}} : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
// The backward pass starts from the scale.
// CHECK: %[[SR:.*]] = of.reshape %[[SCALE]] : (tensor<f32>) -> tensor<1x1xf32>
// CHECK: of.broadcast_to %[[SR]]
// CHECK: %[[G16:.*]] = of.matmul {{.*}} {transpose_a = true} : (tensor<4x8xf16>, tensor<4x3xf16>) -> tensor<8x3xf16>
// CHECK: %[[G32:.*]] = of.cast %[[G16]] : tensor<8x3xf16> to tensor<8x3xf32>
// CHECK: %[[INV:.*]] = of.div %[[ONE]], %[[SCALE]]
// CHECK: %[[G:.*]] = of.mul %[[G32]], %[[INV]]
// CHECK: %[[SQ:.*]] = of.mul %[[G]], %[[G]]
// CHECK: %[[SUM:.*]] = of.reduce_sum %[[SQ]]
// CHECK: %[[TIMES0:.*]] = of.mul %[[SUM]], %[[ZERO]]
// CHECK: %[[FINITE:.*]] = of.compare eq, %[[TIMES0]], %[[ZERO]]
// CHECK: %[[NEXTSTEP:.*]] = of.add %[[STEP]], %[[ONE]]
// CHECK: %[[NEWW:.*]] = of.sub %[[W]],
// CHECK: %[[KEEPW:.*]] = of.select %[[FINITE]], %[[NEWW]], %[[W]]
// CHECK: %[[KEEPM:.*]] = of.select %[[FINITE]], %{{.*}}, %[[M]]
// CHECK: %[[KEEPV:.*]] = of.select %[[FINITE]], %{{.*}}, %[[V]]
// CHECK: %[[KEEPSTEP:.*]] = of.select %[[FINITE]], %[[NEXTSTEP]], %[[STEP]]
// Good steps count up to the window, where the scale doubles; a bad step
// halves it and restarts the count.
// CHECK: %[[GOOD1:.*]] = of.add %[[GOOD]], %[[ONE]]
// CHECK: %[[GROW:.*]] = of.compare ge, %[[GOOD1]], %[[WINDOW]]
// CHECK: %[[DOWN:.*]] = of.sub %[[LOG2]], %[[ONE]]
// CHECK: %[[UP:.*]] = of.add %[[LOG2]], %[[ONE]]
// CHECK: %[[MAYBEUP:.*]] = of.select %[[GROW]], %[[UP]], %[[LOG2]]
// CHECK: %[[NEWLOG2:.*]] = of.select %[[FINITE]], %[[MAYBEUP]], %[[DOWN]]
// CHECK: %[[COUNT:.*]] = of.select %[[GROW]], %[[ZERO]], %[[GOOD1]]
// CHECK: %[[NEWGOOD:.*]] = of.select %[[FINITE]], %[[COUNT]], %[[ZERO]]
// CHECK: return %{{.*}}, %[[KEEPW]], %[[KEEPM]], %[[KEEPV]], %[[KEEPSTEP]], %[[NEWLOG2]], %[[NEWGOOD]]

// NOSEED: error: --of-training-step: loss-scaling needs @loss_grad to take the loss's cotangent (--of-autodiff=seed-argument=true)

// PIPE-LABEL: func.func @loss_train_step
// PIPE-SAME: {of.name = "loss_scale_log2"}
// PIPE: of.constant dense<8.000000e+00>
// PIPE: of.matmul {{.*}}xf16>

// BADWINDOW: --of-pipeline: loss-scale-window takes a positive integer, not '0'

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x3xf32> {of.name = "w", of.param}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %t = of.tanh %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
