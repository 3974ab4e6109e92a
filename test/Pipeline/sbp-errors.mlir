// Bad distributions get one clear error naming the op and the distributions.
// RUN: of-opt %s --split-input-file --of-propagate-sbp --of-insert-boxing --of-partition -verify-diagnostics

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{S(1) is out of range for a rank-1 tensor}}
func.func @split_past_rank(%x: tensor<4xf32, #of.sbp<@p, [S(1)]>>) {
  return
}

// -----

of.placement @m {device = "cpu", shape = [2, 2]}
// expected-error@+1 {{#of.sbp on @m has 1 entries, but the placement has 2 axes (one entry per axis)}}
func.func @wrong_length(%x: tensor<4xf32, #of.sbp<@m, [S(0)]>>) {
  return
}

// -----

of.placement @a {device = "cpu", shape = [2]}
of.placement @b {device = "cpu", shape = [2]}
func.func @two_placements(%x: tensor<4xf32, #of.sbp<@a, [S(0)]>>, %y: tensor<4xf32, #of.sbp<@b, [B]>>) -> tensor<4xf32> {
  // expected-error@+1 {{'of.add' op mixes placements @a and @b ('tensor<4xf32, #of.sbp<@a, [S(0)]>>' and 'tensor<4xf32, #of.sbp<@b, [B]>>'); move tensors between placements with of.boxing}}
  %z = of.add %x, %y : (tensor<4xf32, #of.sbp<@a, [S(0)]>>, tensor<4xf32, #of.sbp<@b, [B]>>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

of.placement @p {device = "cpu", shape = [2]}
func.func @unconstrained_boxing(%x: tensor<4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4xf32> {
  // expected-error@+1 {{'of.boxing' op result must carry an #of.sbp distribution}}
  %y = of.boxing %x : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

