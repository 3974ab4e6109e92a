// A function's own state updates (results after the loss marked of.update,
// here batch norm's running statistics) pass through --of-autodiff after
// the gradients and become updates of the training step; with gradient
// accumulation each micro-batch reads the state the previous one wrote.
// RUN: of-opt %s --of-autodiff --of-training-step=optimizer=sgd | FileCheck %s
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd accumulate=2" | FileCheck %s --check-prefix=ACC
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,stop-after=plan | FileCheck %s --check-prefix=PLAN
// A placed function's unannotated parameter is B, so its update (computed
// P from data-parallel gradients) comes back B through a boxing:
// RUN: of-opt %of_src_root/examples/convnet.mlir --of-pipeline=cpu,train=sgd,stop-after=sbp | FileCheck %s --check-prefix=CONV
// CONV-LABEL: func.func @convnet_train_step(
// CONV-SAME: tensor<8x3x3x3xf32, #of.sbp<@dp, [B]>> {of.name = "conv.weight", of.update = 2 : i64}

// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {of.name = "grad_g"}, tensor<3xf32> {of.name = "grad_b"}, tensor<3xf32> {of.name = "bn.running_mean", of.update = 3 : i64}, tensor<3xf32> {of.name = "bn.running_var", of.update = 4 : i64})
// CHECK: %{{.*}}, %[[M:.*]], %[[V:.*]] = of.batch_norm
// The gradient of a training batch norm is one op (a library step on a GPU).
// CHECK: of.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x3x2x2xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[V]] :
// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: -> (tensor<f32> {of.name = "loss"}, tensor<3xf32> {of.name = "g", of.update = 1 : i64}, tensor<3xf32> {of.name = "b", of.update = 2 : i64}, tensor<3xf32> {of.name = "bn.running_mean", of.update = 3 : i64}, tensor<3xf32> {of.name = "bn.running_var", of.update = 4 : i64})
// CHECK: %[[C:.*]]:5 = call @loss_grad(
// CHECK: return %[[C]]#0, %{{.*}}, %{{.*}}, %[[C]]#3, %[[C]]#4

// The state arguments are not stacked; the second call reads the first's.
// ACC-LABEL: func.func @loss_train_step(
// ACC-SAME: %{{[^:]*}}: tensor<2x4x3x2x2xf32> {of.name = "x"}, %{{[^:]*}}: tensor<3xf32> {of.name = "g", of.param}, %{{[^:]*}}: tensor<3xf32> {of.name = "b", of.param}, %[[RM:[^:]*]]: tensor<3xf32> {of.name = "bn.running_mean"}, %[[RV:[^:]*]]: tensor<3xf32> {of.name = "bn.running_var"}
// ACC: %[[C0:.*]]:5 = call @loss_grad(%{{.*}}, %{{.*}}, %{{.*}}, %[[RM]], %[[RV]])
// ACC: %[[C1:.*]]:5 = call @loss_grad(%{{.*}}, %{{.*}}, %{{.*}}, %[[C0]]#3, %[[C0]]#4)
// ACC: return {{.*}}, %[[C1]]#3, %[[C1]]#4

// PLAN-LABEL: ofrt.program "loss_train_step"
// PLAN: ofrt.output "bn.running_mean" = @{{.*}} {updates = "bn.running_mean"}
// PLAN: ofrt.output "bn.running_var" = @{{.*}} {updates = "bn.running_var"}

func.func @loss(%x: tensor<4x3x2x2xf32> {of.name = "x"},
                %g: tensor<3xf32> {of.param, of.name = "g"},
                %b: tensor<3xf32> {of.param, of.name = "b"},
                %rm: tensor<3xf32> {of.name = "bn.running_mean"},
                %rv: tensor<3xf32> {of.name = "bn.running_var"})
    -> (tensor<f32>, tensor<3xf32> {of.name = "bn.running_mean", of.update = 3 : i64},
        tensor<3xf32> {of.name = "bn.running_var", of.update = 4 : i64}) {
  %y, %m, %v = of.batch_norm %x, %g, %b, %rm, %rv {training = true}
      : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  %sq = of.mul %y, %y : (tensor<4x3x2x2xf32>, tensor<4x3x2x2xf32>) -> tensor<4x3x2x2xf32>
  %l = of.reduce_mean %sq {axes = array<i64: 0, 1, 2, 3>} : (tensor<4x3x2x2xf32>) -> tensor<f32>
  return %l, %m, %v : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
