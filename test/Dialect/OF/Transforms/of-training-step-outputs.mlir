// --of-training-step: a function's results beside the loss that are not
// state updates (logits a caller reads, as an nn.Graph returning
// (loss, logits) does) come back from the step after the loss, with their
// names; with gradient accumulation they are refused, naming the result.
// RUN: of-opt %s --of-autodiff --of-training-step=optimizer=sgd | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,train=sgd | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-run %t.ofp --entry loss_train_step --list | FileCheck %s --check-prefix=LIST
// RUN: not of-opt %s --of-autodiff --of-training-step="optimizer=sgd accumulate=2" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ACC

// CHECK-LABEL: func.func @loss_train_step(
// CHECK-SAME: -> (tensor<f32> {of.name = "loss"}, tensor<4x2xf32> {of.name = "logits"}, tensor<8x2xf32> {of.name = "w", of.update = 1 : i64})
// CHECK: %[[G:.*]]:3 = call @loss_grad(
// CHECK: return %[[G]]#0, %[[G]]#2, %{{.*}} :
// LIST: output loss: f32 []
// LIST-NEXT: output logits: f32 [4, 2]
// ACC: error: --of-training-step accumulate=2: result 1 is an output beside the loss, which gradient accumulation does not return
func.func @loss(%x: tensor<4x8xf32> {of.name = "x"},
                %w: tensor<8x2xf32> {of.param, of.name = "w"})
    -> (tensor<f32> {of.name = "loss"}, tensor<4x2xf32> {of.name = "logits"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %t = of.tanh %y : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<4x2xf32>
}
