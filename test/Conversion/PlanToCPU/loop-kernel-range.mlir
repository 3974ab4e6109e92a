// A kernel that is one scf.for whose iterations are independent (of.topk's
// rows: every store at [row, ...]) gets that loop as its range, so the
// runtime runs slices of its rows on its threads; its work is the rows
// times the trip count of the loop over each row. A scatter whose rows are
// chosen by data (an embedding gradient, positions outermost on the CPU)
// runs whole (range 0).
// RUN: of-opt %s --of-pipeline=cpu | FileCheck %s
// CHECK-DAG: {params = [tensor<3x2x7xf32>, tensor<6x3xf32>, tensor<6x3xi64>], range = 6 : i64, reads = array<i64: 0, 1, 2>, work = 42 : i64, writes = array<i64: 1, 2>}
// CHECK-DAG: {params = [tensor<5xi64>, tensor<5x4xf32>, tensor<9x4xf32>], range = 0 : i64, reads = array<i64: 0, 1, 2>, work = 0 : i64, writes = array<i64: 2>}
func.func @f(%x: tensor<3x2x7xf32> {of.name = "x"}, %ids: tensor<5xi64> {of.name = "ids"},
             %dy: tensor<5x4xf32> {of.name = "dy"}) -> (tensor<3x2x3xf32>, tensor<3x2x3xi64>, tensor<9x4xf32>) {
  %v, %i = of.topk %x {k = 3 : i64} : (tensor<3x2x7xf32>) -> (tensor<3x2x3xf32>, tensor<3x2x3xi64>)
  %g = of.embedding_grad %ids, %dy : (tensor<5xi64>, tensor<5x4xf32>) -> tensor<9x4xf32>
  return %v, %i, %g : tensor<3x2x3xf32>, tensor<3x2x3xi64>, tensor<9x4xf32>
}
