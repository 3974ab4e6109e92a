// The convolution's gradients cost their multiply-adds (2 x the result
// gradient's elements x C / groups x KH x KW), as the convolution does:
// here 2 x (2 x 64 x 8 x 8) x 64 x 3 x 3 = 9.44e6 flops, at 1e9 flops/s
// 9.44e-3 s on the whole batch and 4.72e-3 s on each rank's half (the
// memory traffic is free on this machine). Counted as elements, the
// duplicated computation looked as cheap as the split one.
// RUN: echo '{"flops": 1e9, "memory_bandwidth": 1e30, "axes": [{"latency": 1e-6, "bandwidth": 1e10}]}' > %t.json
// RUN: of-opt %s --of-explain-sbp=machine-file=%t.json 2>&1 | FileCheck %s

of.placement @p {device = "cpu", shape = [2]}

// CHECK: remark: chose [S(0)], [S(0)] -> [P] at 4.72e-03 s
// CHECK-SAME: [B], [B] -> [B] at 9.4{{[0-9]}}e-03 s
func.func @filter(%x: tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>, %dy: tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>) -> tensor<64x64x3x3xf32> {
  %dw = of.conv2d_grad_filter %x, %dy {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>, tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>) -> tensor<64x64x3x3xf32>
  return %dw : tensor<64x64x3x3xf32>
}

// CHECK: remark: chose [S(0)], [B] -> [S(0)] at 4.72e-03 s
// CHECK-SAME: [B], [B] -> [B] at 9.4{{[0-9]}}e-03 s
func.func @input(%dy: tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>, %w: tensor<64x64x3x3xf32, #of.sbp<@p, [B]>>) -> tensor<2x64x8x8xf32> {
  %dx = of.conv2d_grad_input %dy, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x64x8x8xf32, #of.sbp<@p, [S(0)]>>, tensor<64x64x3x3xf32, #of.sbp<@p, [B]>>) -> tensor<2x64x8x8xf32>
  return %dx : tensor<2x64x8x8xf32>
}
