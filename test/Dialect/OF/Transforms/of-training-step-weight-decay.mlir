// A parameter's own of.weight_decay overrides --of-training-step's
// weight-decay (PyTorch's parameter groups: biases without decay).
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd weight-decay=0.5" | FileCheck %s
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamw weight-decay=0.5" | FileCheck %s --check-prefix=ADAM
// Adam's (L2) decay is added to the gradient before the moments, and the
// parameter is not decayed itself.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adam weight-decay=0.5" | FileCheck %s --check-prefix=L2
// AMSGrad: the second moment's running maximum is state, and the update
// divides by it.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamw amsgrad=true" | FileCheck %s --check-prefix=AMS
// Adamax keeps the infinity norm (a running maximum) instead of the second
// moment; NAdam keeps the product of its momentum coefficients, a scalar.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=adamax" | FileCheck %s --check-prefix=ADAMAX
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=nadam" | FileCheck %s --check-prefix=NADAM

// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x2xf32> {of.name = "w", of.param}, %[[B:[^:]*]]: tensor<2xf32> {of.name = "b", of.param, of.weight_decay = 0.000000e+00 : f64}
// CHECK: %[[HALF:.*]] = of.constant dense<5.000000e-01> : tensor<f32>
// CHECK: of.mul %[[W]], %[[HALF]]
// CHECK-NOT: of.mul %[[B]],

// ADAM-LABEL: func.func @loss_train_step(
// ADAM-SAME: %[[W:[^:]*]]: tensor<8x2xf32> {of.name = "w", of.param}, %[[B:[^:]*]]: tensor<2xf32> {of.name = "b", of.param, of.weight_decay = 0.000000e+00 : f64}
// ADAM: of.mul %[[W]], %{{.*}} : (tensor<8x2xf32>, tensor<f32>)
// ADAM-NOT: of.mul %[[B]],

// L2-LABEL: func.func @loss_train_step(
// L2-SAME: %[[W:[^:]*]]: tensor<8x2xf32> {of.name = "w", of.param}, %[[B:[^:]*]]: tensor<2xf32> {of.name = "b", of.param, of.weight_decay = 0.000000e+00 : f64}
// L2-SAME: %[[M:[^:]*]]: tensor<8x2xf32> {of.name = "adam_m_w"}
// L2: %[[GRADS:.*]]:3 = call @loss_grad(
// L2: %[[HALF:.*]] = of.constant dense<5.000000e-01> : tensor<f32>
// L2: %[[DECAY:.*]] = of.mul %[[W]], %[[HALF]]
// L2: %[[G:.*]] = of.add %[[GRADS]]#1, %[[DECAY]]
// L2: %[[G1:.*]] = of.mul %[[G]], %{{.*}}
// L2: %[[M1:.*]] = of.mul %[[M]], %{{.*}}
// L2: of.add %[[M1]], %[[G1]]
// L2: of.sub %[[W]], %{{.*}} : (tensor<8x2xf32>, tensor<8x2xf32>)
// L2-NOT: of.mul %[[B]],
// L2-NOT: of.mul %[[W]],

// AMS-LABEL: func.func @loss_train_step(
// AMS-SAME: %[[V:[^:]*]]: tensor<8x2xf32> {of.name = "adam_v_w"}
// AMS-SAME: %[[VMAX:[^:]*]]: tensor<8x2xf32> {of.name = "adam_vmax_w"}
// AMS-SAME: tensor<8x2xf32> {of.name = "adam_vmax_w", of.update = {{[0-9]+}} : i64}
// AMS: %[[MAX:.*]] = of.maximum %[[VMAX]], %{{.*}} : (tensor<8x2xf32>, tensor<8x2xf32>)
// AMS: %[[VHAT:.*]] = of.div %[[MAX]], %{{.*}} : (tensor<8x2xf32>, tensor<f32>)
// AMS: of.sqrt %[[VHAT]]

// ADAMAX-LABEL: func.func @loss_train_step(
// ADAMAX-SAME: {of.name = "adam_m_w"}
// ADAMAX-SAME: %[[INF:[^:]*]]: tensor<8x2xf32> {of.name = "adamax_inf_w"}
// ADAMAX-NOT: adam_v_
// ADAMAX: of.maximum %{{.*}}, %{{.*}} : (tensor<8x2xf32>, tensor<8x2xf32>)

// NADAM-LABEL: func.func @loss_train_step(
// NADAM-SAME: {of.name = "adam_v_w"}
// NADAM-SAME: tensor<f32> {of.name = "adam_step"}, %{{[^:]*}}: tensor<f32> {of.name = "nadam_mu_product"}
// NADAM-SAME: tensor<f32> {of.name = "nadam_mu_product", of.update = {{[0-9]+}} : i64}

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x2xf32> {of.param, of.name = "w"},
                %b: tensor<2xf32> {of.param, of.name = "b", of.weight_decay = 0.0 : f64}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %z = of.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %t = of.tanh %z : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
