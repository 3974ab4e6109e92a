// --of-schedule-stages on its own. schedule=gpipe (the default): in a
// function over several placements (pipeline stages), the ops
// --of-autodiff did not mark {of.backward} (and that depend on none that
// it did) move ahead of the first backward op, so the forward passes of all
// micro-batches come first; the marks are removed. A function on one
// placement keeps its order (its marks are removed too). schedule=1f1b:
// see @four_micro_batches; without micro-batch marks it is GPipe's order.
// RUN: of-opt --of-schedule-stages %s | FileCheck %s
// RUN: of-opt --of-schedule-stages %s | FileCheck %s --check-prefix=MARKS
// RUN: of-opt --of-schedule-stages=schedule=1f1b %s | FileCheck %s --check-prefix=ONEF
// RUN: of-opt --of-schedule-stages=schedule=1f1b %s | FileCheck %s --check-prefix=ONEF-MARKS
// RUN: not of-opt --of-schedule-stages=schedule=zigzag %s 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: --of-schedule-stages: schedule is gpipe or 1f1b, not 'zigzag'

// MARKS-NOT: of.backward

of.placement @s0 {device = "cpu", shape = [1], ranks = [0]}
of.placement @s1 {device = "cpu", shape = [1], ranks = [1]}

// CHECK-LABEL: func.func @two_micro_batches
// ONEF-LABEL: func.func @two_micro_batches
// ONEF-NEXT: of.tanh %arg0
// ONEF-NEXT: of.tanh %arg1
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

// schedule=1f1b: four micro-batches (marked by --of-training-step) over
// two stages. Stage s0 runs F0 F1 B0 F2 B1 F3 B2 B3 (two forwards before
// its first backward), s1 F0 B0 F1 B1 F2 B2 F3 B3; the transfers come when
// what they move is ready in the ideal timeline (a forward takes 1, a
// backward 2; a_i: s0 -> s1 activations, g_i: s1 -> s0 gradients), at one
// place in the one order that both stages follow.
// ONEF-LABEL: func.func @four_micro_batches
// ONEF-NEXT: %[[F0:.*]] = of.tanh %arg0 :
// ONEF-NEXT: %[[A0:.*]] = of.boxing %[[F0]]
// ONEF-NEXT: %[[H0:.*]] = of.tanh %[[A0]]
// ONEF-NEXT: %[[F1:.*]] = of.tanh %arg1 :
// ONEF-NEXT: %[[A1:.*]] = of.boxing %[[F1]]
// ONEF-NEXT: %[[G0:.*]] = of.mul %[[H0]], %[[H0]]
// ONEF-NEXT: %[[GB0:.*]] = of.boxing %[[G0]]
// ONEF-NEXT: %[[D0:.*]] = of.mul %[[GB0]], %[[F0]]
// ONEF-NEXT: %[[H1:.*]] = of.tanh %[[A1]]
// ONEF-NEXT: %[[G1:.*]] = of.mul %[[H1]], %[[H1]]
// ONEF-NEXT: %[[F2:.*]] = of.tanh %arg2 :
// ONEF-NEXT: %[[GB1:.*]] = of.boxing %[[G1]]
// ONEF-NEXT: %[[A2:.*]] = of.boxing %[[F2]]
// ONEF-NEXT: %[[D1:.*]] = of.mul %[[GB1]], %[[F1]]
// ONEF-NEXT: %[[H2:.*]] = of.tanh %[[A2]]
// ONEF-NEXT: %[[G2:.*]] = of.mul %[[H2]], %[[H2]]
// ONEF-NEXT: %[[F3:.*]] = of.tanh %arg3 :
// ONEF-NEXT: %[[GB2:.*]] = of.boxing %[[G2]]
// ONEF-NEXT: %[[A3:.*]] = of.boxing %[[F3]]
// ONEF-NEXT: %[[D2:.*]] = of.mul %[[GB2]], %[[F2]]
// ONEF-NEXT: %[[H3:.*]] = of.tanh %[[A3]]
// ONEF-NEXT: %[[G3:.*]] = of.mul %[[H3]], %[[H3]]
// ONEF-NEXT: %[[GB3:.*]] = of.boxing %[[G3]]
// ONEF-NEXT: %[[D3:.*]] = of.mul %[[GB3]], %[[F3]]
// ONEF-NEXT: return %[[D0]], %[[D1]], %[[D2]], %[[D3]]
// GPipe (the default) runs the four forwards first.
// CHECK-LABEL: func.func @four_micro_batches
// CHECK-NOT: of.mul
// CHECK: of.tanh %arg3
// CHECK: of.mul
// MARKS-NOT: of.micro_batch
// ONEF-MARKS-NOT: of.backward
// ONEF-MARKS-NOT: of.micro_batch
func.func @four_micro_batches(%x0: tensor<4xf32, #of.sbp<@s0, [B]>>, %x1: tensor<4xf32, #of.sbp<@s0, [B]>>, %x2: tensor<4xf32, #of.sbp<@s0, [B]>>, %x3: tensor<4xf32, #of.sbp<@s0, [B]>>)
    -> (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) {
  %f0 = of.tanh %x0 {of.micro_batch = 0 : i64} : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %a0 = of.boxing %f0 : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %h0 = of.tanh %a0 : (tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %g0 = of.mul %h0, %h0 {of.backward} : (tensor<4xf32, #of.sbp<@s1, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %gb0 = of.boxing %g0 {of.backward} : tensor<4xf32, #of.sbp<@s1, [B]>> -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %d0 = of.mul %gb0, %f0 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %f1 = of.tanh %x1 {of.micro_batch = 1 : i64} : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %a1 = of.boxing %f1 : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %h1 = of.tanh %a1 : (tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %g1 = of.mul %h1, %h1 {of.backward} : (tensor<4xf32, #of.sbp<@s1, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %gb1 = of.boxing %g1 {of.backward} : tensor<4xf32, #of.sbp<@s1, [B]>> -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %d1 = of.mul %gb1, %f1 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %f2 = of.tanh %x2 {of.micro_batch = 2 : i64} : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %a2 = of.boxing %f2 : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %h2 = of.tanh %a2 : (tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %g2 = of.mul %h2, %h2 {of.backward} : (tensor<4xf32, #of.sbp<@s1, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %gb2 = of.boxing %g2 {of.backward} : tensor<4xf32, #of.sbp<@s1, [B]>> -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %d2 = of.mul %gb2, %f2 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %f3 = of.tanh %x3 {of.micro_batch = 3 : i64} : (tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %a3 = of.boxing %f3 : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %h3 = of.tanh %a3 : (tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %g3 = of.mul %h3, %h3 {of.backward} : (tensor<4xf32, #of.sbp<@s1, [B]>>, tensor<4xf32, #of.sbp<@s1, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>>
  %gb3 = of.boxing %g3 {of.backward} : tensor<4xf32, #of.sbp<@s1, [B]>> -> tensor<4xf32, #of.sbp<@s0, [B]>>
  %d3 = of.mul %gb3, %f3 {of.backward} : (tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s0, [B]>>
  return %d0, %d1, %d2, %d3 : tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>, tensor<4xf32, #of.sbp<@s0, [B]>>
}
