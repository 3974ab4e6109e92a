// A two-layer MLP on a 2x2 device mesh: the batch is split over mesh axis 0,
// the hidden features over axis 1 (Megatron-style tensor parallelism).
of.placement @mesh {device = "cpu", shape = [2, 2]}               // ranks 0..3, row-major

func.func @mlp(%x: tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>> {of.name = "x"},
               %w: tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>> {of.name = "w"})
    -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>> {
  %y = of.matmul %x, %w : (tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>,
                           tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>)
                          -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
  %r = of.relu %y : (tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>) -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
  return %r : tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
}
