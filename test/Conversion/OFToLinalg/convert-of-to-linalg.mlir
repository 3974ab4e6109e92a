// --convert-of-to-linalg on its own: a matmul becomes a zero-filled
// linalg.contract, a broadcasting add and a relu elementwise
// linalg.generics (the bias read through a projected map), a sum a
// zero-filled linalg.reduce over the reduced axis; arguments are marked
// read-only for bufferization.
// RUN: of-opt --convert-of-to-linalg %s | FileCheck %s

// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32> {bufferization.writable = false}
// CHECK-NOT: of.
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: %[[P:.*]] = linalg.contract indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]] ins(%[[X]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[Z]] : tensor<4x16xf32>)
// CHECK: %[[A:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[P]], %{{.*}} : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[A]] : tensor<4x16xf32>)
// CHECK: arith.maximumf
// CHECK: %[[I:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[S:.*]] = linalg.reduce ins(%[[R]] : tensor<4x16xf32>) outs(%[[I]] : tensor<4xf32>) dimensions = [1]
// CHECK: arith.addf
// CHECK: return %[[R]], %[[S]]
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = of.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = of.relu %z : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = of.reduce_sum %r {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4xf32>
  return %r, %s : tensor<4x16xf32>, tensor<4xf32>
}

// sin and cos are math.sin and math.cos in elementwise generics.
// CHECK-LABEL: func.func @trig(
// CHECK: linalg.generic
// CHECK: math.sin
// CHECK: linalg.generic
// CHECK: math.cos
func.func @trig(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = of.sin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = of.cos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %c : tensor<4x8xf32>, tensor<4x8xf32>
}
