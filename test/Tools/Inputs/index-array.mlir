func.func @f(%x: tensor<8x4xf32>) -> tensor<8x2xf32> {
  %s = of.slice %x {starts = array< index : 0, 1>, limits = array<i64: 8, 3>} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}
