// One pre-norm GPT block (causal self-attention + GELU MLP), data parallel on
// two ranks. Only the boundary is annotated: the input and the result are
// split along the batch; the values inside have no distribution yet (SBP
// propagation will give them one), and the final of.boxing is the constraint
// that ties the result back to the annotated signature.
of.placement @dp {device = "cpu", shape = [2]}

func.func @gpt_block(
    %x: tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>> {of.name = "x"},
    %mask: tensor<16x16xi1> {of.name = "causal_mask"},
    %ln1_g: tensor<64xf32> {of.name = "ln1.weight", of.param},
    %ln1_b: tensor<64xf32> {of.name = "ln1.bias", of.param},
    %w_qkv: tensor<64x192xf32> {of.name = "attn.qkv.weight", of.param},
    %w_o: tensor<64x64xf32> {of.name = "attn.proj.weight", of.param},
    %ln2_g: tensor<64xf32> {of.name = "ln2.weight", of.param},
    %ln2_b: tensor<64xf32> {of.name = "ln2.bias", of.param},
    %w_fc: tensor<64x256xf32> {of.name = "mlp.fc.weight", of.param},
    %w_proj: tensor<256x64xf32> {of.name = "mlp.proj.weight", of.param})
    -> (tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>> {of.name = "y"}) {
  // Attention.
  %h = of.layer_norm %x weight %ln1_g bias %ln1_b
      : (tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %qkv = of.matmul %h, %w_qkv : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %q = of.slice %qkv {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 16, 64>}
      : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %k = of.slice %qkv {starts = array<i64: 0, 0, 64>, limits = array<i64: 2, 16, 128>}
      : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %v = of.slice %qkv {starts = array<i64: 0, 0, 128>, limits = array<i64: 2, 16, 192>}
      : (tensor<2x16x192xf32>) -> tensor<2x16x64xf32>
  %q4 = of.reshape %q : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %k4 = of.reshape %k : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %v4 = of.reshape %v : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %qh = of.transpose %q4, [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %kh = of.transpose %k4, [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %vh = of.transpose %v4, [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %scores = of.matmul %qh, %kh {transpose_b = true}
      : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %scale = of.constant dense<0.25> : tensor<f32>
  %scaled = of.mul %scores, %scale : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %neg_inf = of.constant dense<-1.0e9> : tensor<f32>
  %masked = of.select %mask, %scaled, %neg_inf
      : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %probs = of.softmax %masked {axis = -1} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %ctx = of.matmul %probs, %vh : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %ctx_t = of.transpose %ctx, [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %ctx2 = of.reshape %ctx_t : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %attn = of.matmul %ctx2, %w_o : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %r1 = of.add %x, %attn : (tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // MLP.
  %h2 = of.layer_norm %r1 weight %ln2_g bias %ln2_b
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %fc = of.matmul %h2, %w_fc : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %act = of.gelu %fc {approximate = "tanh"} : (tensor<2x16x256xf32>) -> tensor<2x16x256xf32>
  %mlp = of.matmul %act, %w_proj : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %r2 = of.add %r1, %mlp : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %y = of.boxing %r2 : tensor<2x16x64xf32> -> tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>>
  return %y : tensor<2x16x64xf32, #of.sbp<@dp, [S(0)]>>
}
