// RUN: of-opt --of-pipeline=cpu,stop-after=plan,fuse=false %s | FileCheck %s
// RUN: of-opt --of-pipeline=cpu,stop-after=plan,fuse=false,in-place=false %s | FileCheck %s

// Static memory planning: a chain of 8 transposes, each followed by an exp,
// all of 64x64xf32 (16 KiB). Liveness lets the short-lived buffers share one
// slot, so the arena holds 2 buffers (32 KiB), not 16.

// CHECK: ofrt.program "chain" attributes {arena_size = 32768 : i64
// CHECK-COUNT-16: ofrt.launch
// CHECK: ofrt.output "y"
func.func @chain(%x: tensor<64x64xf32> {of.name = "x"}) -> (tensor<64x64xf32> {of.name = "y"}) {
  %v0 = of.transpose %x, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w0 = of.exp %v0 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v1 = of.transpose %w0, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w1 = of.exp %v1 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v2 = of.transpose %w1, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w2 = of.exp %v2 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v3 = of.transpose %w2, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w3 = of.exp %v3 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v4 = of.transpose %w3, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w4 = of.exp %v4 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v5 = of.transpose %w4, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w5 = of.exp %v5 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v6 = of.transpose %w5, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w6 = of.exp %v6 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %v7 = of.transpose %w6, [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w7 = of.exp %v7 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %w7 : tensor<64x64xf32>
}
