// --of-recompute: a checkpointed segment's values that the backward pass
// reads are computed again just before the first backward op that reads
// one, from the segment's inputs; the originals lose the mark, the copies
// keep it (so CSE leaves them) and are backward work.
// RUN: of-opt %s --split-input-file --of-autodiff --of-recompute | FileCheck %s
// Lowered, the copies' ops are marked from their locations, and CSE keeps
// them apart from the originals':
// RUN: of-opt %s --split-input-file --of-autodiff --of-recompute --convert-of-to-linalg --cse | FileCheck %s --check-prefix=LINALG

// tanh's backward reads its output; the matmul's reads x and w (inputs of
// the segment, kept), so only the tanh (and the matmul it reads) repeat.
// CHECK-LABEL: func.func @loss_grad(
// CHECK: %[[Y:.*]] = of.matmul %arg0, %arg1 :
// CHECK: %[[T:.*]] = of.tanh %[[Y]] :
// CHECK: %[[L:.*]] = of.reduce_sum %[[T]]
// CHECK: %[[Y2:.*]] = of.matmul %arg0, %arg1 {of.backward, of.recompute = 0 : i64}
// CHECK-NEXT: %[[T2:.*]] = of.tanh %[[Y2]] {of.backward, of.recompute = 0 : i64}
// CHECK-NEXT: of.mul %[[T2]], %[[T2]] {of.backward}
// CHECK-NOT: of.tanh
// CHECK: return %[[L]]
// LINALG-LABEL: func.func @loss_grad(
// LINALG: %[[Y:.*]] = linalg.contract {{.*}} ins(%arg0, %arg1
// LINALG-NOT: of.recompute
// LINALG: linalg.generic {{.*}} ins(%[[Y]] :
// LINALG: %[[Y2:.*]] = linalg.contract {{.*}} {of.recompute = 0 : i64} ins(%arg0, %arg1
// LINALG: %[[T2:.*]] = linalg.generic {{.*}} ins(%[[Y2]] : {{.*}} attrs =  {of.recompute = 0 : i64}
// LINALG: linalg.generic {{.*}} ins(%[[T2]], %[[T2]] :
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {of.param, of.name = "w"}) -> tensor<f32> {
  %y = of.matmul %x, %w {of.recompute = 0 : i64} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %t = of.tanh %y {of.recompute = 0 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Two segments: each is recomputed on its own, just before its own
// backward (the second segment's backward comes first).
// CHECK-LABEL: func.func @two_grad(
// CHECK: %[[E:.*]] = of.exp %arg0 :
// CHECK: %[[T:.*]] = of.tanh %[[E]] :
// CHECK: of.reduce_sum %[[T]]
// CHECK: %[[T2:.*]] = of.tanh %[[E]] {of.backward, of.recompute = 1 : i64}
// CHECK: of.mul %[[T2]], %[[T2]] {of.backward}
// CHECK: %[[E2:.*]] = of.exp %arg0 {of.backward, of.recompute = 0 : i64}
// CHECK: of.mul %{{.*}}, %[[E2]] {of.backward}
func.func @two(%x: tensor<3xf32> {of.param, of.name = "x"}) -> tensor<f32> {
  %e = of.exp %x {of.recompute = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  %t = of.tanh %e {of.recompute = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
