// A 2-rank program with a broadcast input: y = x + x on both ranks.
of.placement @p {device = "cpu", shape = [2]}
func.func @main(%x: tensor<4xf32, #of.sbp<@p, [B]>> {of.name = "x"})
    -> (tensor<4xf32, #of.sbp<@p, [B]>> {of.name = "y"}) {
  %y = of.add %x, %x : (tensor<4xf32, #of.sbp<@p, [B]>>, tensor<4xf32, #of.sbp<@p, [B]>>) -> tensor<4xf32, #of.sbp<@p, [B]>>
  return %y : tensor<4xf32, #of.sbp<@p, [B]>>
}
