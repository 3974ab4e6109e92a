// RUN: of-opt --of-pipeline=cpu,stop-after=fusion %s | FileCheck %s

// An elementwise producer that only a reduction reads fuses into it: the
// variance of a batch norm's gradient statistics reads x and the mean, not
// a squared-deviation tensor, and dweight = sum(dy * xhat) reads x and dy.
// CHECK-LABEL: func.func @only_read_by_reductions
// CHECK-NOT: linalg.reduce
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0 : tensor<4x3x5x6xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %{{.*}} : tensor<4x3x5x6xf32>, tensor<3xf32>)
// CHECK-NEXT: ^bb0
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1, %{{.*}}, %{{.*}} : tensor<4x3x5x6xf32>, tensor<4x3x5x6xf32>, tensor<3xf32>, tensor<3xf32>)
func.func @only_read_by_reductions(%x: tensor<4x3x5x6xf32>, %dy: tensor<4x3x5x6xf32>, %g: tensor<3xf32>)
    -> (tensor<4x3x5x6xf32>, tensor<3xf32>, tensor<3xf32>) {
  %r:3 = of.batch_norm_grad %x, %dy, %g : (tensor<4x3x5x6xf32>, tensor<4x3x5x6xf32>, tensor<3xf32>) -> (tensor<4x3x5x6xf32>, tensor<3xf32>, tensor<3xf32>)
  return %r#0, %r#1, %r#2 : tensor<4x3x5x6xf32>, tensor<3xf32>, tensor<3xf32>
}

// A transcendental producer kept for another user is not recomputed in the
// reduction: the sum reads the exp's result. (Cheap arithmetic is: the
// batch norm's mean, divided by the count, is recomputed above.)
// CHECK-LABEL: func.func @kept
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<6x40xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<6x40xf32>)
// CHECK-NOT: math.exp
// CHECK: return %[[E]]
func.func @kept(%x: tensor<6x40xf32>) -> (tensor<6x40xf32>, tensor<6xf32>) {
  %e = of.exp %x : (tensor<6x40xf32>) -> tensor<6x40xf32>
  %s = of.reduce_sum %e {axes = array<i64: 1>} : (tensor<6x40xf32>) -> tensor<6xf32>
  return %e, %s : tensor<6x40xf32>, tensor<6xf32>
}
