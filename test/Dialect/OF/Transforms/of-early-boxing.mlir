// --of-early-boxing on its own: each of.boxing moves to right after the op
// that defines its operand (a boxing of an argument to the start of the
// body), so that on a GPU the collective it becomes overlaps the work that
// follows; boxings of one value keep their order.
// RUN: of-opt --of-early-boxing %s | FileCheck %s

of.placement @p {device = "cpu", shape = [2]}

// CHECK-LABEL: func.func @after_producer
// CHECK: %[[Y:.*]] = of.matmul
// CHECK-NEXT: %[[B:.*]] = of.boxing %[[Y]] : tensor<4x6xf32, #of.sbp<@p, [P]>> -> tensor<4x6xf32, #of.sbp<@p, [B]>>
// CHECK-NEXT: %[[T:.*]] = of.tanh
// CHECK-NEXT: %[[E:.*]] = of.exp %[[T]]
// CHECK-NEXT: of.add %[[B]], %[[E]]
func.func @after_producer(%x: tensor<4x8xf32, #of.sbp<@p, [S(1)]>>, %w: tensor<8x6xf32, #of.sbp<@p, [S(0)]>>, %v: tensor<4x6xf32, #of.sbp<@p, [B]>>) -> (tensor<4x6xf32, #of.sbp<@p, [B]>>) {
  %y = of.matmul %x, %w : (tensor<4x8xf32, #of.sbp<@p, [S(1)]>>, tensor<8x6xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x6xf32, #of.sbp<@p, [P]>>
  %t = of.tanh %v : (tensor<4x6xf32, #of.sbp<@p, [B]>>) -> tensor<4x6xf32, #of.sbp<@p, [B]>>
  %e = of.exp %t : (tensor<4x6xf32, #of.sbp<@p, [B]>>) -> tensor<4x6xf32, #of.sbp<@p, [B]>>
  %b = of.boxing %y : tensor<4x6xf32, #of.sbp<@p, [P]>> -> tensor<4x6xf32, #of.sbp<@p, [B]>>
  %s = of.add %b, %e : (tensor<4x6xf32, #of.sbp<@p, [B]>>, tensor<4x6xf32, #of.sbp<@p, [B]>>) -> tensor<4x6xf32, #of.sbp<@p, [B]>>
  return %s : tensor<4x6xf32, #of.sbp<@p, [B]>>
}

// CHECK-LABEL: func.func @argument_first
// CHECK-NEXT: %[[B0:.*]] = of.boxing %arg0 : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32, #of.sbp<@p, [B]>>
// CHECK-NEXT: %[[B1:.*]] = of.boxing %arg0 : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32, #of.sbp<@p, [P]>>
// CHECK-NEXT: of.tanh %arg1
func.func @argument_first(%a: tensor<4xf32, #of.sbp<@p, [S(0)]>>, %c: tensor<4xf32, #of.sbp<@p, [B]>>) -> (tensor<4xf32, #of.sbp<@p, [B]>>, tensor<4xf32, #of.sbp<@p, [P]>>) {
  %t = of.tanh %c : (tensor<4xf32, #of.sbp<@p, [B]>>) -> tensor<4xf32, #of.sbp<@p, [B]>>
  %b0 = of.boxing %a : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32, #of.sbp<@p, [B]>>
  %s = of.add %b0, %t : (tensor<4xf32, #of.sbp<@p, [B]>>, tensor<4xf32, #of.sbp<@p, [B]>>) -> tensor<4xf32, #of.sbp<@p, [B]>>
  %b1 = of.boxing %a : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32, #of.sbp<@p, [P]>>
  return %s, %b1 : tensor<4xf32, #of.sbp<@p, [B]>>, tensor<4xf32, #of.sbp<@p, [P]>>
}
