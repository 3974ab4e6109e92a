// --of-schedule-stages on its own: in a function over several placements
// (pipeline stages), the ops --of-autodiff did not mark {of.backward} (and
// that depend on none that it did) move ahead of the first backward op, so
// the forward passes of all micro-batches come first (GPipe); the marks
// are removed. A function on one placement keeps its order (its marks are
// removed too).
// RUN: of-opt --of-schedule-stages %s | FileCheck %s
// RUN: of-opt --of-schedule-stages %s | FileCheck %s --check-prefix=MARKS

// MARKS-NOT: of.backward

of.placement @s0 {device = "cpu", shape = [1], ranks = [0]}
of.placement @s1 {device = "cpu", shape = [1], ranks = [1]}

// CHECK-LABEL: func.func @two_micro_batches
// CHECK-NEXT: %[[F1:.*]] = of.tanh %arg0
// CHECK-NEXT: %[[F2:.*]] = of.tanh %arg1
// CHECK-NEXT: %[[B:.*]] = of.boxing %[[F2]]
// CHECK-NEXT: %[[G1:.*]] = of.mul %arg2, %[[F1]] :
// CHECK-NEXT: %[[G2:.*]] = of.mul %[[G1]], %[[F2]] :
// CHECK-NEXT: return %[[G2]], %[[B]]
func.func @two_micro_batches(%x1: tensor<4xf32, #of.sbp<@s0, [B]>>, %x2: tensor<4xf32, #of.sbp<@s0, [B]>>, %d: tensor<4xf32, #of.sbp<@s0, [B]>>) -> (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>) {
  %f1 = of.tanh %x1 : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %g1 = of.mul %d, %f1 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %f2 = of.tanh %x2 : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %g2 = of.mul %g1, %f2 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %b = of.boxing %f2 : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  return %g2, %b : tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>
}

// CHECK-LABEL: func.func @one_placement
// CHECK-NEXT: of.tanh %arg0
// CHECK-NEXT: of.mul %arg1, %{{.*}} :
// CHECK-NEXT: of.tanh %arg0
func.func @one_placement(%x: tensor<4xf32, #of.sbp<@s0, [B]>>, %d: tensor<4xf32, #of.sbp<@s0, [B]>>) -> (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) {
  %f1 = of.tanh %x : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %g1 = of.mul %d, %f1 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %f2 = of.tanh %x : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  return %g1, %f2 : tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>
}
