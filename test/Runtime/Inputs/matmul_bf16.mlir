func.func @main(%a: tensor<8x16xbf16> {of.name = "a"}, %b: tensor<16x4xbf16> {of.name = "b"}) -> tensor<8x4xbf16> {
  %c = of.matmul %a, %b : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  return %c : tensor<8x4xbf16>
}
