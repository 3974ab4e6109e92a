// Every op's 1-D SBP signatures, as SbpOpInterface lists them (the one
// source that propagation, boxing, partitioning and the cost model read).
// "(two-stage)" marks signatures whose local form all-reduces statistics.
// RUN: of-opt %s --of-test-sbp-signatures -verify-diagnostics -o /dev/null

func.func @ops(%a: tensor<4x8xf32>, %row: tensor<8xf32>, %w: tensor<8x16xf32>,
               %bw: tensor<3x8x16xf32>, %ids: tensor<4xi64>, %table: tensor<10x8xf32>,
               %img: tensor<2x3x8x8xf32>, %k: tensor<6x3x3x3xf32>, %c: tensor<6xf32>,
               %seed: tensor<i64>, %lab: tensor<4xi64>) {
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B] [P(max) -> P(max)]}}
  %0 = of.exp %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B] [P -> P]}}
  %1 = of.neg %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(0)] [S(1), S(0) -> S(1)] [B, B -> B] [P, P -> P]}}
  %2 = of.add %a, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(0)] [S(1), S(0) -> S(1)] [B, B -> B] [P, B -> P] [B, P -> P]}}
  %3 = of.mul %a, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), S(0) -> S(0)] [S(1), S(1) -> S(1)] [B, B -> B] [P(max), P(max) -> P(max)] [P(max), B -> P(max)] [B, P(max) -> P(max)]}}
  %4 = of.maximum %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(0)] [B, S(1) -> S(1)] [S(1), S(0) -> P] [P, B -> P] [B, P -> P] [B, B -> B]}}
  %5 = of.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(1)] [B, S(2) -> S(2)] [S(1), S(1) -> P] [B, S(0) -> S(0)] [P, B -> P] [B, P -> P] [B, B -> B]}}
  %6 = of.matmul %a, %bw : (tensor<4x8xf32>, tensor<3x8x16xf32>) -> tensor<3x4x16xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> P] [B -> B] [P -> P]}}
  %7 = of.reduce_sum %a {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> P(max)] [S(1) -> S(1)] [B -> B] [P(max) -> P(max)]}}
  %8 = of.reduce_max %a {axes = array<i64: 0>, keepdims = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [B -> B] [S(1) -> S(1) (two-stage)]}}
  %9 = of.softmax %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0), S(0)] [B -> B, B]}}
  %topk:2 = of.topk %a {k = 3 : i64} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  // expected-remark@+1 {{sbp signatures: [S(0), B, B -> S(0)] [B, B, B -> B] [S(1), S(0), S(0) -> S(1) (two-stage)]}}
  %10 = of.layer_norm %a weight %row bias %row : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(0)] [B, S(1) -> S(1)] [B, B -> B] [B, S(0) -> P]}}
  %11 = of.embedding %ids, %table : (tensor<4xi64>, tensor<10x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), S(0) -> P] [B, S(1) -> S(1)] [B, B -> S(0)] [B, B -> B]}}
  %eg = of.embedding_grad %ids, %11 : (tensor<4xi64>, tensor<4x8xf32>) -> tensor<10x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B] [P(max) -> P(max)]}}
  %erf = of.erf %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // Not monotone: no P(max).
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B]}}
  %sin = of.sin %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B]}}
  %cos = of.cos %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B, B -> S(0)] [B, S(0), S(0) -> S(1)] [B, B, B -> B]}}
  %12 = of.conv2d %img, %k, %c : (tensor<2x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<2x6x6x6xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [B -> B] [P -> P] [P(max) -> P(max)]}}
  %13 = of.reshape %a : (tensor<4x8xf32>) -> tensor<4x2x4xf32>
  // expected-remark@+1 {{sbp signatures: [S(1) -> S(0)] [S(0) -> S(1)] [B -> B] [P -> P] [P(max) -> P(max)]}}
  %14 = of.transpose %a, [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [B -> B] [P -> P] [P(max) -> P(max)]}}
  %15 = of.slice %a {starts = array<i64: 0, 2>, limits = array<i64: 4, 6>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), S(0) -> S(0)] [B, B -> B] [P, P -> P] [P(max), P(max) -> P(max)]}}
  %16 = of.concat %a, %a {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  // expected-remark@+1 {{sbp signatures: [B -> S(0)] [S(0) -> S(1)] [B -> B] [P -> P] [P(max) -> P(max)]}}
  %17 = of.broadcast_to %row : (tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), S(0) -> S(0)] [B, B -> B] [S(1), B -> B (two-stage)]}}
  %18 = of.cross_entropy %a, %lab : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4xf32>
  // expected-remark@+1 {{sbp signatures: [S(0), B -> S(0)] [S(1), B -> S(1)] [B, B -> B]}}
  %19 = of.dropout %a, %seed {p = 0.5 : f64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  // expected-remark@+1 {{sbp signatures: [-> B]}}
  %20 = of.constant dense<1.0> : tensor<4xf32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> P] [S(1) -> P] [B -> B] [P -> P]}}
  %21 = of.reduce_mean %a {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  // expected-remark@+1 {{sbp signatures: [S(0) -> S(0)] [S(1) -> S(1)] [B -> B] [P(max) -> P(max)]}}
  %22 = of.max_pool2d %img {kernel_size = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  // expected-remark@+1 {{sbp signatures: [S(1), B -> S(0)] [B, S(1) -> S(1)] [S(0), S(0) -> P] [P, B -> P] [B, P -> P] [B, B -> B]}}
  %23 = of.matmul %14, %w {transpose_a = true} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return
}
