// --of-insert-boxing on fully annotated programs: the cheapest signature
// that produces the annotated results, with operands boxed to it.
// RUN: of-opt %s --of-insert-boxing | FileCheck %s

of.placement @p {device = "cpu", shape = [2]}
// Two row-split matrices: the row-parallel signature needs the weight whole.
// CHECK-LABEL: func.func @rows(
// CHECK: %[[W:.*]] = of.boxing %arg1 : tensor<4x4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4x4xf32, #of.sbp<@p, [B]>>
// CHECK: of.matmul %arg0, %[[W]] : (tensor<4x4xf32, #of.sbp<@p, [S(0)]>>, tensor<4x4xf32, #of.sbp<@p, [B]>>) -> tensor<4x4xf32, #of.sbp<@p, [S(0)]>>
func.func @rows(%x: tensor<4x4xf32, #of.sbp<@p, [S(0)]>>, %w: tensor<4x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [S(0)]>> {
  %y = of.matmul %x, %w : (tensor<4x4xf32, #of.sbp<@p, [S(0)]>>, tensor<4x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [S(0)]>>
  return %y : tensor<4x4xf32, #of.sbp<@p, [S(0)]>>
}

// A result annotated B after a contraction split: the op produces P and a
// boxing after it makes the annotation true.
// CHECK-LABEL: func.func @partial_result(
// CHECK: %[[Y:.*]] = of.matmul %arg0, %arg1 : {{.*}} -> tensor<4x4xf32, #of.sbp<@p, [P]>>
// CHECK: %[[B:.*]] = of.boxing %[[Y]] : tensor<4x4xf32, #of.sbp<@p, [P]>> -> tensor<4x4xf32, #of.sbp<@p, [B]>>
// CHECK: of.relu %[[B]]
func.func @partial_result(%x: tensor<4x8xf32, #of.sbp<@p, [S(1)]>>, %w: tensor<8x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [B]>> {
  %y = of.matmul %x, %w : (tensor<4x8xf32, #of.sbp<@p, [S(1)]>>, tensor<8x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [B]>>
  %r = of.relu %y : (tensor<4x4xf32, #of.sbp<@p, [B]>>) -> tensor<4x4xf32, #of.sbp<@p, [B]>>
  return %r : tensor<4x4xf32, #of.sbp<@p, [B]>>
}
