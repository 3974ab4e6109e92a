func.func @main(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x16xf32> {of.name = "w"}) -> (tensor<4x16xf32> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = of.exp %r : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %e : tensor<4x16xf32>
}
