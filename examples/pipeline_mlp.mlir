// A three-layer MLP as two pipeline stages: layer 1 on ranks 0 and 1 (data
// parallel, rows of x split), layers 2 and 3 on ranks 2 and 3 (Megatron:
// columns then rows of the weights split). The of.boxing to @stage1 is the
// stage boundary: --of-partition turns it into sends of each stage-0 rank's
// rows and receives on both stage-1 ranks, and every other value stays on
// its stage. Run it with `of-run -n 4`.
of.placement @stage0 {device = "cpu", shape = [2], ranks = [0, 1]}
of.placement @stage1 {device = "cpu", shape = [2], ranks = [2, 3]}

func.func @main(%x: tensor<64x256xf32, #of.sbp<@stage0, [S(0)]>> {of.name = "x"},
                %w1: tensor<256x512xf32, #of.sbp<@stage0, [B]>> {of.name = "w1"},
                %w2: tensor<512x512xf32, #of.sbp<@stage1, [S(1)]>> {of.name = "w2"},
                %w3: tensor<512x128xf32, #of.sbp<@stage1, [S(0)]>> {of.name = "w3"})
    -> (tensor<64x128xf32, #of.sbp<@stage1, [B]>> {of.name = "y"}) {
  %h1 = of.matmul %x, %w1 : (tensor<64x256xf32, #of.sbp<@stage0, [S(0)]>>, tensor<256x512xf32, #of.sbp<@stage0, [B]>>) -> tensor<64x512xf32>
  %a1 = of.gelu %h1 : (tensor<64x512xf32>) -> tensor<64x512xf32>
  %s1 = of.boxing %a1 : tensor<64x512xf32> -> tensor<64x512xf32, #of.sbp<@stage1, [B]>>
  %h2 = of.matmul %s1, %w2 : (tensor<64x512xf32, #of.sbp<@stage1, [B]>>, tensor<512x512xf32, #of.sbp<@stage1, [S(1)]>>) -> tensor<64x512xf32>
  %a2 = of.gelu %h2 : (tensor<64x512xf32>) -> tensor<64x512xf32>
  %y = of.matmul %a2, %w3 : (tensor<64x512xf32>, tensor<512x128xf32, #of.sbp<@stage1, [S(0)]>>) -> tensor<64x128xf32>
  %out = of.boxing %y : tensor<64x128xf32> -> tensor<64x128xf32, #of.sbp<@stage1, [B]>>
  return %out : tensor<64x128xf32, #of.sbp<@stage1, [B]>>
}
