// A two-layer MLP with Megatron tensor parallelism on 2 ranks: the first
// weight is split by columns, the second by rows. Only the arguments and the
// result are annotated; --of-propagate-sbp finds that the hidden layer stays
// split (S(1)), the second matmul gives partial sums (P), and the final
// boxing to B is one all-reduce.
of.placement @tp {device = "cpu", shape = [2]}

func.func @main(%x: tensor<32x128xf32, #of.sbp<@tp, [B]>> {of.name = "x"},
                %w1: tensor<128x512xf32, #of.sbp<@tp, [S(1)]>> {of.name = "w1"},
                %b1: tensor<512xf32, #of.sbp<@tp, [S(0)]>> {of.name = "b1"},
                %w2: tensor<512x128xf32, #of.sbp<@tp, [S(0)]>> {of.name = "w2"})
    -> (tensor<32x128xf32, #of.sbp<@tp, [B]>> {of.name = "y"}) {
  %h = of.matmul %x, %w1 : (tensor<32x128xf32, #of.sbp<@tp, [B]>>, tensor<128x512xf32, #of.sbp<@tp, [S(1)]>>) -> tensor<32x512xf32>
  %hb = of.add %h, %b1 : (tensor<32x512xf32>, tensor<512xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<32x512xf32>
  %a = of.gelu %hb : (tensor<32x512xf32>) -> tensor<32x512xf32>
  %y = of.matmul %a, %w2 : (tensor<32x512xf32>, tensor<512x128xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<32x128xf32>
  %out = of.boxing %y : tensor<32x128xf32> -> tensor<32x128xf32, #of.sbp<@tp, [B]>>
  return %out : tensor<32x128xf32, #of.sbp<@tp, [B]>>
}
