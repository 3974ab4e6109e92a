// A classifier MLP to train on 2 ranks with Megatron tensor parallelism:
// the first weight split by columns, the second by rows. Compile its
// training step with `of-opt --of-pipeline=cpu,train=adamw`: --of-autodiff
// gives @loss_grad, --of-training-step @loss_train_step (AdamW), and SBP
// propagation distributes the backward pass and the optimizer like the
// forward one (the optimizer state of w1 is split like w1).
of.placement @tp {device = "cpu", shape = [2]}

func.func @loss(%x: tensor<64x32xf32, #of.sbp<@tp, [B]>> {of.name = "x"},
                %y: tensor<64xi64, #of.sbp<@tp, [B]>> {of.name = "y"},
                %w1: tensor<32x128xf32, #of.sbp<@tp, [S(1)]>> {of.name = "w1", of.param},
                %b1: tensor<128xf32, #of.sbp<@tp, [S(0)]>> {of.name = "b1", of.param},
                %w2: tensor<128x10xf32, #of.sbp<@tp, [S(0)]>> {of.name = "w2", of.param},
                %b2: tensor<10xf32, #of.sbp<@tp, [B]>> {of.name = "b2", of.param})
    -> (tensor<f32, #of.sbp<@tp, [B]>> {of.name = "loss"}) {
  %h = of.matmul %x, %w1 : (tensor<64x32xf32, #of.sbp<@tp, [B]>>, tensor<32x128xf32, #of.sbp<@tp, [S(1)]>>) -> tensor<64x128xf32>
  %hb = of.add %h, %b1 : (tensor<64x128xf32>, tensor<128xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<64x128xf32>
  %a = of.gelu %hb : (tensor<64x128xf32>) -> tensor<64x128xf32>
  %z = of.matmul %a, %w2 : (tensor<64x128xf32>, tensor<128x10xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<64x10xf32>
  %zb = of.add %z, %b2 : (tensor<64x10xf32>, tensor<10xf32, #of.sbp<@tp, [B]>>) -> tensor<64x10xf32>
  %ce = of.cross_entropy %zb, %y : (tensor<64x10xf32>, tensor<64xi64, #of.sbp<@tp, [B]>>) -> tensor<64xf32>
  %l = of.reduce_mean %ce {axes = array<i64: 0>} : (tensor<64xf32>) -> tensor<f32>
  %out = of.boxing %l : tensor<f32> -> tensor<f32, #of.sbp<@tp, [B]>>
  return %out : tensor<f32, #of.sbp<@tp, [B]>>
}
