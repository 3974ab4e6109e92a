// of.topk: per row, each element compared with the worst of the k kept
// (slot k - 1) and, when it beats it, inserted: the slots it beats move
// down one, from the last up (an scf.while); a slot index of -1 marks a
// vacant slot. Run against PyTorch's topk (NaN,
// infinities, ties, both directions) by test/Python/test_indexing.py.
// RUN: of-opt %s --convert-of-to-linalg | FileCheck %s
// CHECK-LABEL: func.func @topk
// CHECK: %[[VACANT:.*]] = arith.constant -1 : i64
// CHECK: linalg.fill ins(%[[VACANT]] : i64)
// CHECK: %[[LAST:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[R:[a-z0-9_]+]] =
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK: tensor.extract %{{.*}}[%[[R]], %[[J]]] : tensor<6x10xf32>
// CHECK: tensor.extract %{{.*}}[%[[R]], %[[LAST]]] : tensor<6x3xf32>
// CHECK: arith.cmpf ogt
// CHECK: scf.if
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: tensor.insert
// CHECK: tensor.expand_shape {{.*}} into tensor<2x3x3xf32>
func.func @topk(%x: tensor<2x3x10xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x3xi64>) {
  %v, %i = of.topk %x {k = 3 : i64} : (tensor<2x3x10xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x3xi64>)
  return %v, %i : tensor<2x3x3xf32>, tensor<2x3x3xi64>
}
