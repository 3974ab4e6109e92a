// Four residual blocks, each a checkpointed segment (of.recompute = k):
// matmul up to 1024, tanh, matmul down to 256, add. Their hidden
// activations (1024 x 1024 floats) dwarf their inputs (1024 x 256).
func.func @blocks(%x: tensor<1024x256xf32>, %a0: tensor<256x1024xf32> {of.param, of.name = "a0"}, %b0: tensor<1024x256xf32> {of.param, of.name = "b0"}, %a1: tensor<256x1024xf32> {of.param, of.name = "a1"}, %b1: tensor<1024x256xf32> {of.param, of.name = "b1"}, %a2: tensor<256x1024xf32> {of.param, of.name = "a2"}, %b2: tensor<1024x256xf32> {of.param, of.name = "b2"}, %a3: tensor<256x1024xf32> {of.param, of.name = "a3"}, %b3: tensor<1024x256xf32> {of.param, of.name = "b3"}) -> tensor<f32> {
  %u0 = of.matmul %x, %a0 {of.recompute = 0 : i64} : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32>
  %t0 = of.tanh %u0 {of.recompute = 0 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v0 = of.matmul %t0, %b0 {of.recompute = 0 : i64} : (tensor<1024x1024xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %h0 = of.add %x, %v0 {of.recompute = 0 : i64} : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %u1 = of.matmul %h0, %a1 {of.recompute = 1 : i64} : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32>
  %t1 = of.tanh %u1 {of.recompute = 1 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v1 = of.matmul %t1, %b1 {of.recompute = 1 : i64} : (tensor<1024x1024xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %h1 = of.add %h0, %v1 {of.recompute = 1 : i64} : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %u2 = of.matmul %h1, %a2 {of.recompute = 2 : i64} : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32>
  %t2 = of.tanh %u2 {of.recompute = 2 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v2 = of.matmul %t2, %b2 {of.recompute = 2 : i64} : (tensor<1024x1024xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %h2 = of.add %h1, %v2 {of.recompute = 2 : i64} : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %u3 = of.matmul %h2, %a3 {of.recompute = 3 : i64} : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32>
  %t3 = of.tanh %u3 {of.recompute = 3 : i64} : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %v3 = of.matmul %t3, %b3 {of.recompute = 3 : i64} : (tensor<1024x1024xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %h3 = of.add %h2, %v3 {of.recompute = 3 : i64} : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %sq = of.mul %h3, %h3 : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %l = of.reduce_sum %sq {axes = array<i64: 0, 1>} : (tensor<1024x256xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
