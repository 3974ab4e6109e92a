of.placement @p {device = "cpu", shape = [2]}

func.func @f(%x: tensor<4xf32, #of.sbp<@p, [Q]>>) {
  return
}
