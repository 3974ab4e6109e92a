// --of-training-step: the step's signature (primal arguments, optimizer
// state, lr), results marked of.update, and the plan's outputs that update
// inputs.
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: of-opt %s --of-autodiff --of-training-step=optimizer=adamw | FileCheck %s --check-prefix=ADAM
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,momentum=0.9,stop-after=plan | FileCheck %s --check-prefix=PLAN
// RUN: not of-opt %s --of-training-step=optimizer=lion 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not of-opt %s --of-training-step="optimizer=sgd nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd momentum=0.9 dampening=0.5" | FileCheck %s --check-prefix=DAMP
// RUN: of-opt %s --of-autodiff --of-training-step=optimizer=adagrad | FileCheck %s --check-prefix=ADAGRAD
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=rmsprop momentum=0.5 centered=true" | FileCheck %s --check-prefix=RMS
// RUN: of-opt %s --of-autodiff --of-training-step=optimizer=adadelta | FileCheck %s --check-prefix=ADADELTA
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd grads-out=true max-grad-norm=1.0" | FileCheck %s --check-prefix=GRADS
// A plan whose output updates an input it does not have is refused when
// the session is made, with the names:
// RUN: of-opt %s --of-pipeline=cpu,train=sgd | sed 's/updates = "w"/updates = "nope"/' \
// RUN:   | of-translate --of-plan-to-binary -o %t.ofp
// RUN: not of-run %t.ofp --entry loss_train_step --output-dir %t.out 2>&1 | FileCheck %s --check-prefix=RT
// RT: output 'w' updates input 'nope', which the program does not have

// SGD-LABEL: func.func @loss_train_step(
// SGD-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {of.name = "x"}, %[[W:[^:]*]]: tensor<8x2xf32> {of.name = "w", of.param},
// SGD-SAME: %[[M:[^:]*]]: tensor<8x2xf32> {of.name = "momentum_w"}, %[[LR:[^:]*]]: tensor<f32> {of.name = "lr"})
// SGD-SAME: -> (tensor<f32> {of.name = "loss"}, tensor<8x2xf32> {of.name = "w", of.update = 1 : i64}, tensor<8x2xf32> {of.name = "momentum_w", of.update = 2 : i64})
// SGD: %[[G:.*]]:2 = call @loss_grad(%[[X]], %[[W]])
// SGD: %[[MM:.*]] = of.mul %[[M]], %{{.*}}
// SGD: %[[BUF:.*]] = of.add %[[MM]], %[[G]]#1
// SGD: %[[STEP:.*]] = of.mul %[[LR]], %[[BUF]]
// SGD: %[[NEW:.*]] = of.sub %[[W]], %[[STEP]]
// SGD: return %[[G]]#0, %[[NEW]], %[[BUF]]

// ADAM-LABEL: func.func @loss_train_step(
// ADAM-SAME: {of.name = "adam_m_w"}, %{{.*}}: tensor<8x2xf32> {of.name = "adam_v_w"}, %{{.*}}: tensor<f32> {of.name = "adam_step"}, %{{.*}}: tensor<f32> {of.name = "lr"})
// ADAM-SAME: {of.name = "adam_step", of.update = 4 : i64})
// ADAM: of.pow

// PLAN-LABEL: ofrt.program "loss_train_step"
// PLAN: ofrt.output "w" = @{{.*}} {updates = "w"}
// PLAN: ofrt.output "momentum_w" = @{{.*}} {updates = "momentum_w"}

// BAD: unknown optimizer 'lion' (sgd, adam, adamw, adamax, nadam, radam, adagrad, rmsprop, adadelta)
// NESTEROV: nesterov needs a momentum and zero dampening

// With dampening, the step count tells the first step (whose buffer is the
// gradient itself, as PyTorch's).
// DAMP-LABEL: func.func @loss_train_step(
// DAMP-SAME: {of.name = "momentum_w"}, %{{.*}}: tensor<f32> {of.name = "sgd_step"}, %{{.*}}: tensor<f32> {of.name = "lr"})
// DAMP: of.compare eq
// DAMP: of.select

// ADAGRAD-LABEL: func.func @loss_train_step(
// ADAGRAD-SAME: {of.name = "adagrad_sum_w"}, %{{.*}}: tensor<f32> {of.name = "adagrad_step"}, %{{.*}}: tensor<f32> {of.name = "lr"})
// ADAGRAD: of.sqrt

// RMS-LABEL: func.func @loss_train_step(
// RMS-SAME: {of.name = "rmsprop_square_avg_w"}, %{{.*}}: tensor<8x2xf32> {of.name = "momentum_w"}, %{{.*}}: tensor<8x2xf32> {of.name = "rmsprop_grad_avg_w"}, %{{.*}}: tensor<f32> {of.name = "lr"})

// grads-out: each gradient (clipped) and the norm before clipping, after
// the loss, before the updates.
// GRADS-LABEL: func.func @loss_train_step(
// GRADS-SAME: -> (tensor<f32> {of.name = "loss"}, tensor<8x2xf32> {of.name = "grad_w"}, tensor<f32> {of.name = "grad_norm"}, tensor<8x2xf32> {of.name = "w", of.update = 1 : i64})
// GRADS: %[[NORM:.*]] = of.sqrt
// GRADS: %[[FACTOR:.*]] = of.minimum
// GRADS: %[[CLIPPED:.*]] = of.mul %{{.*}}#1, %[[FACTOR]]
// GRADS: return %{{.*}}#0, %[[CLIPPED]], %[[NORM]], %{{.*}} :

// ADADELTA-LABEL: func.func @loss_train_step(
// ADADELTA-SAME: {of.name = "adadelta_square_avg_w"}, %{{.*}}: tensor<8x2xf32> {of.name = "adadelta_acc_delta_w"}, %{{.*}}: tensor<f32> {of.name = "lr"})

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x2xf32> {of.param, of.name = "w"}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %t = of.tanh %y : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
