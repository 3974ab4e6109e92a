// RUN: of-opt %s --of-partition -verify-diagnostics

// Partitioning a program whose distributions are not a signature of an op
// (here a matmul of two row-split matrices) names the op and them.
of.placement @p {device = "cpu", shape = [2]}
func.func @not_a_signature(%x: tensor<4x4xf32, #of.sbp<@p, [S(0)]>>, %w: tensor<4x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [S(0)]>> {
  // expected-error@+1 {{distributions [S(0)], [S(0)] -> [S(0)] are not a signature of the op on placement axis 0; run --of-insert-boxing first}}
  %y = of.matmul %x, %w : (tensor<4x4xf32, #of.sbp<@p, [S(0)]>>, tensor<4x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@p, [S(0)]>>
  return %y : tensor<4x4xf32, #of.sbp<@p, [S(0)]>>
}
