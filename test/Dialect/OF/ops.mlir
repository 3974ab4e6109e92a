// RUN: of-opt %s | FileCheck %s
// Round trip: the printed form parses back to the same module.
// RUN: of-opt %s | of-opt | FileCheck %s
// Printing is a fixed point: print(parse(print(x))) == print(x).
// RUN: of-opt %s -o %t.1.mlir && of-opt %t.1.mlir -o %t.2.mlir && diff %t.1.mlir %t.2.mlir
// The generic form round-trips too.
// RUN: of-opt %s --mlir-print-op-generic | of-opt | FileCheck %s

// CHECK: of.placement @mesh {device = "cpu", shape = [2, 2]}
of.placement @mesh {device = "cpu", shape = [2, 2]}               // ranks 0..3, row-major
// CHECK: of.placement @stage1 {device = "cuda", ranks = [4, 5, 6, 7], shape = [4]}
of.placement @stage1 {device = "cuda", shape = [4], ranks = [4, 5, 6, 7]}
// CHECK: of.placement @row {device = "cpu", shape = [2]}
of.placement @row {device = "cpu", shape = [2]}

// The brief's example, exactly as written there.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>
// CHECK-SAME: tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>
// CHECK: of.matmul %{{.*}}, %{{.*}} : (tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>, tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>) -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
func.func @mlp(%x: tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>,
               %w: tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>)
    -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>> {
  %y = of.matmul %x, %w : (tensor<64x128xf32, #of.sbp<@mesh, [S(0), B]>>,
                           tensor<128x256xf32, #of.sbp<@mesh, [B, S(1)]>>)
                          -> tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
  return %y : tensor<64x256xf32, #of.sbp<@mesh, [S(0), S(1)]>>
}

// Every kind of SBP entry; P(sum) is a synonym of P.
// CHECK-LABEL: func.func @sbp_entries
// CHECK-SAME: #of.sbp<@row, [P]>
// CHECK-SAME: #of.sbp<@row, [P(max)]>
// CHECK-SAME: #of.sbp<@mesh, [S(1), S(0)]>
// CHECK-SAME: #of.sbp<@mesh, [P, B]>
// CHECK-SAME: #of.sbp<@row, [P]>
func.func @sbp_entries(%a: tensor<4x4xf32, #of.sbp<@row, [P]>>,
                       %b: tensor<4x4xf32, #of.sbp<@row, [P(max)]>>,
                       %c: tensor<4x4xf32, #of.sbp<@mesh, [S(1), S(0)]>>,
                       %d: tensor<4x4xf32, #of.sbp<@mesh, [P, B]>>,
                       %e: tensor<4x4xf32, #of.sbp<@row, [P(sum)]>>) {
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %i: tensor<4x8xi32>) {
  // CHECK: of.neg %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = of.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.neg %{{.*}} : (tensor<4x8xi32>) -> tensor<4x8xi32>
  %1 = of.neg %i : (tensor<4x8xi32>) -> tensor<4x8xi32>
  // CHECK: of.exp
  %2 = of.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.log
  %3 = of.log %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.sqrt
  %4 = of.sqrt %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.rsqrt
  %5 = of.rsqrt %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.tanh
  %6 = of.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.sigmoid
  %7 = of.sigmoid %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.relu
  %8 = of.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.gelu %{{.*}} : (tensor<4x8xf32>)
  %9 = of.gelu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.gelu %{{.*}} {approximate = "tanh"}
  %10 = of.gelu %x {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.silu
  %11 = of.silu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.sin %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sin = of.sin %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.cos %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %cos = of.cos %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %12 = of.add %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: of.sub
  %13 = of.sub %v, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.mul
  %14 = of.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.div
  %15 = of.div %i, %i : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  // CHECK: of.pow
  %16 = of.pow %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: of.maximum
  %17 = of.maximum %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: of.minimum
  %18 = of.minimum %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[M:.*]] = of.compare lt, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %19 = of.compare lt, %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: of.select %[[M]], %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %20 = of.select %19, %x, %v : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: of.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %21 = of.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: of.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xf16>
  %22 = of.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
  // CHECK: of.cast %{{.*}} : tensor<4x8xi32> to tensor<4x8xi64>
  %23 = of.cast %i : tensor<4x8xi32> to tensor<4x8xi64>
  // CHECK: of.cast %{{.*}} : tensor<4x8xi1> to tensor<4x8xf32>
  %24 = of.cast %19 : tensor<4x8xi1> to tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xf32>, tensor<4xf32, #of.sbp<@row, [B]>>) {
  // CHECK: of.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = of.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: of.constant dense<5.000000e-01> : tensor<4xf32> -> tensor<4xf32, #of.sbp<@row, [B]>>
  %1 = of.constant dense<0.5> : tensor<4xf32> -> tensor<4xf32, #of.sbp<@row, [B]>>
  return %0, %1 : tensor<2xf32>, tensor<4xf32, #of.sbp<@row, [B]>>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<1x8xf32>, %y: tensor<4x6xf32>) {
  // CHECK: of.broadcast_to %{{.*}} : (tensor<1x8xf32>) -> tensor<3x4x8xf32>
  %0 = of.broadcast_to %x : (tensor<1x8xf32>) -> tensor<3x4x8xf32>
  // CHECK: of.reshape %{{.*}} : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %1 = of.reshape %y : (tensor<4x6xf32>) -> tensor<2x12xf32>
  // CHECK: of.transpose %{{.*}}, [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %2 = of.transpose %y, [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  // CHECK: of.slice %{{.*}} {limits = array<i64: 4, 6>, starts = array<i64: 1, 0>, strides = array<i64: 2, 3>} : (tensor<4x6xf32>) -> tensor<2x2xf32>
  %3 = of.slice %y {starts = array<i64: 1, 0>, limits = array<i64: 4, 6>, strides = array<i64: 2, 3>} : (tensor<4x6xf32>) -> tensor<2x2xf32>
  // CHECK: of.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %4 = of.concat %y, %y {axis = 0} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  // CHECK: of.concat %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x12xf32>
  %5 = of.concat %y, %y {axis = -1} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x12xf32>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8x16xf32>) {
  // CHECK: of.reduce_sum %{{.*}} {axes = array<i64: 1>} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
  %0 = of.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x8x16xf32>) -> tensor<4x16xf32>
  // CHECK: of.reduce_mean %{{.*}} {axes = array<i64: 0, -1>, keepdims = true} : (tensor<4x8x16xf32>) -> tensor<1x8x1xf32>
  %1 = of.reduce_mean %x {axes = array<i64: 0, -1>, keepdims = true} : (tensor<4x8x16xf32>) -> tensor<1x8x1xf32>
  // CHECK: of.reduce_max %{{.*}} {axes = array<i64: 0, 1, 2>} : (tensor<4x8x16xf32>) -> tensor<f32>
  %2 = of.reduce_max %x {axes = array<i64: 0, 1, 2>} : (tensor<4x8x16xf32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<16x32xf32>, %b: tensor<64x32xf32>, %q: tensor<2x4x16x8xf32>,
                  %k: tensor<2x4x16x8xf32>, %t: tensor<8x16x32xf32>, %w: tensor<32x64xf32>) {
  // CHECK: of.matmul %{{.*}}, %{{.*}} {transpose_b = true} : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  %0 = of.matmul %a, %b {transpose_b = true} : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  // CHECK: of.matmul %{{.*}}, %{{.*}} {transpose_a = true} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  %1 = of.matmul %a, %a {transpose_a = true} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  // Batched attention scores q @ k^T.
  // CHECK: of.matmul {{.*}} -> tensor<2x4x16x16xf32>
  %2 = of.matmul %q, %k {transpose_b = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  // Batch dims broadcast: [8,16,32] x [32,64].
  // CHECK: of.matmul {{.*}} -> tensor<8x16x64xf32>
  %3 = of.matmul %t, %w : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
  // CHECK: of.softmax %{{.*}} : (tensor<2x4x16x16xf32>)
  %4 = of.softmax %2 : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: of.log_softmax %{{.*}} {axis = 0 : i64}
  %5 = of.log_softmax %a {axis = 0} : (tensor<16x32xf32>) -> tensor<16x32xf32>
  return
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<4x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %g2: tensor<8x32xf32>) {
  // CHECK: of.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %0 = of.layer_norm %x weight %g bias %b : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  // CHECK: of.layer_norm %{{.*}} weight %{{.*}} {axis = 1 : i64, epsilon = 9.9999999999999995E-7 : f64}
  %1 = of.layer_norm %x weight %g2 {axis = 1, epsilon = 1.0e-6} : (tensor<4x8x32xf32>, tensor<8x32xf32>) -> tensor<4x8x32xf32>
  // CHECK: of.layer_norm %{{.*}} : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %2 = of.layer_norm %x : (tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  // CHECK: of.rms_norm %{{.*}} weight %{{.*}} : (tensor<4x8x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %3 = of.rms_norm %x weight %g : (tensor<4x8x32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  return
}

// CHECK-LABEL: func.func @embedding_and_loss
func.func @embedding_and_loss(%ids: tensor<4x16xi64>, %table: tensor<1000x64xf32>,
                              %logits: tensor<8x10xf32>, %labels: tensor<8xi32>,
                              %seed: tensor<i64>) {
  // CHECK: of.embedding %{{.*}}, %{{.*}} : (tensor<4x16xi64>, tensor<1000x64xf32>) -> tensor<4x16x64xf32>
  %0 = of.embedding %ids, %table : (tensor<4x16xi64>, tensor<1000x64xf32>) -> tensor<4x16x64xf32>
  // CHECK: of.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<8xf32>
  %1 = of.cross_entropy %logits, %labels : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<8xf32>
  // CHECK: of.dropout %{{.*}}, %{{.*}} {p = 1.000000e-01 : f64} : (tensor<4x16x64xf32>, tensor<i64>) -> tensor<4x16x64xf32>
  %2 = of.dropout %0, %seed {p = 0.1} : (tensor<4x16x64xf32>, tensor<i64>) -> tensor<4x16x64xf32>
  // CHECK: of.embedding_grad %{{.*}}, %{{.*}} : (tensor<4x16xi64>, tensor<4x16x64xf32>) -> tensor<1000x64xf32>
  %3 = of.embedding_grad %ids, %0 : (tensor<4x16xi64>, tensor<4x16x64xf32>) -> tensor<1000x64xf32>
  // CHECK: of.embedding_grad %{{.*}}, %{{.*}} into %{{.*}} : (tensor<4x16xi64>, tensor<4x16x64xf32>, tensor<1000x64xf32>) -> tensor<1000x64xf32>
  %4 = of.embedding_grad %ids, %0 into %table : (tensor<4x16xi64>, tensor<4x16x64xf32>, tensor<1000x64xf32>) -> tensor<1000x64xf32>
  // CHECK: of.topk %{{.*}} {k = 5 : i64, largest = false} : (tensor<8x10xf32>) -> (tensor<8x5xf32>, tensor<8x5xi64>)
  %5:2 = of.topk %logits {k = 5 : i64, largest = false} : (tensor<8x10xf32>) -> (tensor<8x5xf32>, tensor<8x5xi64>)
  return
}

// CHECK-LABEL: func.func @convolution
func.func @convolution(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
                       %dw: tensor<16x1x3x3xf32>, %y: tensor<8x16x16x16xf32>,
                       %c: tensor<16xf32>) {
  // CHECK: of.conv2d %{{.*}}, %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
  %0 = of.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
  // Depthwise, dilated, no bias.
  // CHECK: of.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>, groups = 16 : i64} : (tensor<8x16x16x16xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x12x12xf32>
  %1 = of.conv2d %y, %dw {groups = 16, dilation = array<i64: 2, 2>} : (tensor<8x16x16x16xf32>, tensor<16x1x3x3xf32>) -> tensor<8x16x12x12xf32>
  // CHECK: of.max_pool2d %{{.*}} {kernel_size = array<i64: 2, 2>} : (tensor<8x16x16x16xf32>) -> tensor<8x16x8x8xf32>
  %2 = of.max_pool2d %y {kernel_size = array<i64: 2, 2>} : (tensor<8x16x16x16xf32>) -> tensor<8x16x8x8xf32>
  // CHECK: of.avg_pool2d %{{.*}} {count_include_pad = false, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  %3 = of.avg_pool2d %y {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32>
  // CHECK: of.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {training = true} : (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %4:3 = of.batch_norm %y, %c, %c, %c, %c {training = true} : (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  // The gradients --of-autodiff builds for them.
  // CHECK: of.conv2d_grad_input %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
  %5 = of.conv2d_grad_input %0, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<8x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
  // CHECK: of.conv2d_grad_filter %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<8x3x32x32xf32>, tensor<8x16x16x16xf32>) -> tensor<16x3x3x3xf32>
  %6 = of.conv2d_grad_filter %x, %0 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<8x3x32x32xf32>, tensor<8x16x16x16xf32>) -> tensor<16x3x3x3xf32>
  // CHECK: of.pool2d_grad %{{.*}}, %{{.*}} {kernel_size = array<i64: 2, 2>, kind = "max"} : (tensor<8x16x16x16xf32>, tensor<8x16x8x8xf32>) -> tensor<8x16x16x16xf32>
  %7 = of.pool2d_grad %y, %2 {kind = "max", kernel_size = array<i64: 2, 2>} : (tensor<8x16x16x16xf32>, tensor<8x16x8x8xf32>) -> tensor<8x16x16x16xf32>
  // CHECK: of.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<8x16x16x16xf32>, tensor<8x16x16x16xf32>, tensor<16xf32>) -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %8:3 = of.batch_norm_grad %y, %4#0, %c {epsilon = 1.0e-3 : f64} : (tensor<8x16x16x16xf32>, tensor<8x16x16x16xf32>, tensor<16xf32>) -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// A change of distribution and of placement.
// CHECK-LABEL: func.func @boxing
func.func @boxing(%p: tensor<64x256xf32, #of.sbp<@mesh, [P, S(1)]>>, %u: tensor<8x4xf32>)
    -> tensor<8x4xf32, #of.sbp<@stage1, [S(0)]>> {
  // CHECK: of.boxing %{{.*}} : tensor<64x256xf32, #of.sbp<@mesh, [P, S(1)]>> -> tensor<64x256xf32, #of.sbp<@mesh, [B, B]>>
  %0 = of.boxing %p : tensor<64x256xf32, #of.sbp<@mesh, [P, S(1)]>> -> tensor<64x256xf32, #of.sbp<@mesh, [B, B]>>
  // A constraint on a tensor with no distribution yet.
  // CHECK: of.boxing %{{.*}} : tensor<8x4xf32> -> tensor<8x4xf32, #of.sbp<@row, [S(0)]>>
  %1 = of.boxing %u : tensor<8x4xf32> -> tensor<8x4xf32, #of.sbp<@row, [S(0)]>>
  // CHECK: of.boxing %{{.*}} : tensor<8x4xf32, #of.sbp<@row, [S(0)]>> -> tensor<8x4xf32, #of.sbp<@stage1, [S(0)]>>
  %2 = of.boxing %1 : tensor<8x4xf32, #of.sbp<@row, [S(0)]>> -> tensor<8x4xf32, #of.sbp<@stage1, [S(0)]>>
  return %2 : tensor<8x4xf32, #of.sbp<@stage1, [S(0)]>>
}

// Argument and result names, parameters.
// CHECK-LABEL: func.func @named
// CHECK-SAME: {of.name = "x"}
// CHECK-SAME: {of.name = "w", of.param}
// CHECK-SAME: {of.name = "y"}
func.func @named(%x: tensor<4xf32> {of.name = "x"}, %w: tensor<4xf32> {of.name = "w", of.param})
    -> (tensor<4xf32> {of.name = "y"}) {
  %0 = of.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Library calls, on tensors and on memrefs.
// CHECK-LABEL: func.func @library
// CHECK: of.library_call "dnn.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) into %{{.*}} {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
// CHECK: of.library_call "dnn.conv2d_grad_input"(%{{.*}}, %{{.*}}) into %{{.*}} {params = {{.*}}} : (memref<2x8x6x6xf32>, memref<8x4x3x3xf32>) into memref<2x4x8x8xf32>{{$}}
// Several inits: a result per init.
// CHECK: of.library_call "dnn.batch_norm"(%{{.*}}, %{{.*}}, %{{.*}}) into %{{.*}}, %{{.*}}, %{{.*}} {params = array<i64: 2, 8, 36, 4532020583610935537>} : (tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>) into tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>
func.func @library(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>, %e: tensor<2x8x6x6xf32>,
                   %dy: memref<2x8x6x6xf32>, %wm: memref<8x4x3x3xf32>, %dx: memref<2x4x8x8xf32>) -> tensor<2x8x6x6xf32> {
  %y = of.library_call "dnn.conv2d"(%x, %w, %b) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  of.library_call "dnn.conv2d_grad_input"(%dy, %wm) into %dx {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (memref<2x8x6x6xf32>, memref<8x4x3x3xf32>) into memref<2x4x8x8xf32>
  %x3 = tensor.empty() : tensor<2x8x36xf32>
  %c = tensor.empty() : tensor<8xf32>
  %n:3 = of.library_call "dnn.batch_norm"(%x3, %b, %b) into %x3, %c, %c {params = array<i64: 2, 8, 36, 4532020583610935537>} : (tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>) into tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<2x8x6x6xf32>
}
