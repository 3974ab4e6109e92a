// Ops written in the generic form, with the attribute names outside tests
// rely on (ARCHITECTURE.md), both as properties and as a plain dictionary.
// RUN: of-opt %s | FileCheck %s

of.placement @row {device = "cpu", shape = [2]}

// CHECK-LABEL: func.func @generic
func.func @generic(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %g: tensor<8xf32>) {
  // CHECK: of.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %0 = "of.reduce_sum"(%x) {axes = array<i64: 1>, keepdims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  // CHECK: of.reduce_mean %{{.*}} {axes = array<i64: -1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = "of.reduce_mean"(%x) <{axes = array<i64: -1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: of.reduce_max %{{.*}} {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  %2 = "of.reduce_max"(%x) {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  // CHECK: of.matmul %{{.*}}, %{{.*}} {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %3 = "of.matmul"(%x, %w) {transpose_a = false, transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: of.softmax %{{.*}} {axis = -2 : i64}
  %4 = "of.softmax"(%x) {axis = -2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.log_softmax %{{.*}} : (tensor<4x8xf32>)
  %5 = "of.log_softmax"(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: of.layer_norm %{{.*}} weight %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %6 = "of.layer_norm"(%x, %g) {axis = -1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: of.boxing %{{.*}} : tensor<4x8xf32> -> tensor<4x8xf32, #of.sbp<@row, [S(0)]>>
  %7 = "of.boxing"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32, #of.sbp<@row, [S(0)]>>
  return
}
