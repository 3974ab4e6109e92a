func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = of.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32, #of.sbp<@nowhere, [B]>>
  return %x : tensor<4xf32>
}
