// A small convolutional classifier's training-mode forward pass and loss:
// conv -> batch norm -> relu -> max pool -> linear -> cross-entropy.
// The batch is split over two ranks; the loss is a scalar.
of.placement @dp {device = "cpu", shape = [2]}

func.func @convnet(
    %images: tensor<8x3x16x16xf32, #of.sbp<@dp, [S(0)]>> {of.name = "images"},
    %labels: tensor<8xi64, #of.sbp<@dp, [S(0)]>> {of.name = "labels"},
    %conv_w: tensor<8x3x3x3xf32> {of.name = "conv.weight", of.param},
    %conv_b: tensor<8xf32> {of.name = "conv.bias", of.param},
    %bn_g: tensor<8xf32> {of.name = "bn.weight", of.param},
    %bn_b: tensor<8xf32> {of.name = "bn.bias", of.param},
    %bn_mean: tensor<8xf32> {of.name = "bn.running_mean"},
    %bn_var: tensor<8xf32> {of.name = "bn.running_var"},
    %fc_w: tensor<512x10xf32> {of.name = "fc.weight", of.param})
    -> (tensor<f32> {of.name = "loss"}, tensor<8xf32> {of.name = "bn.running_mean"},
        tensor<8xf32> {of.name = "bn.running_var"}) {
  %c = of.conv2d %images, %conv_w, %conv_b {padding = array<i64: 1, 1, 1, 1>}
      : (tensor<8x3x16x16xf32, #of.sbp<@dp, [S(0)]>>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<8x8x16x16xf32>
  %n:3 = of.batch_norm %c, %bn_g, %bn_b, %bn_mean, %bn_var {training = true}
      : (tensor<8x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
      -> (tensor<8x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>)
  %r = of.relu %n#0 : (tensor<8x8x16x16xf32>) -> tensor<8x8x16x16xf32>
  %p = of.max_pool2d %r {kernel_size = array<i64: 2, 2>} : (tensor<8x8x16x16xf32>) -> tensor<8x8x8x8xf32>
  %flat = of.reshape %p : (tensor<8x8x8x8xf32>) -> tensor<8x512xf32>
  %logits = of.matmul %flat, %fc_w : (tensor<8x512xf32>, tensor<512x10xf32>) -> tensor<8x10xf32>
  %losses = of.cross_entropy %logits, %labels
      : (tensor<8x10xf32>, tensor<8xi64, #of.sbp<@dp, [S(0)]>>) -> tensor<8xf32>
  %loss = of.reduce_mean %losses {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %loss, %n#1, %n#2 : tensor<f32>, tensor<8xf32>, tensor<8xf32>
}
