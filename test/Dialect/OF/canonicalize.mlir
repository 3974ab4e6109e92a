// RUN: of-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = of.transpose %[[X]], [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = of.transpose %x, [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = of.transpose %0, [2, 0, 1] : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  %2 = of.transpose %1, [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %2 : tensor<4x2x3xf32>
}

// -----

// Inverse permutations cancel.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: of.transpose
// CHECK: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = of.transpose %x, [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = of.transpose %0, [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[R:.*]] = of.reshape %[[X]] : (tensor<4x6xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<4x6xf32>) -> tensor<3x8xf32> {
  %0 = of.reshape %x : (tensor<4x6xf32>) -> tensor<24xf32>
  %1 = of.reshape %0 : (tensor<24xf32>) -> tensor<2x12xf32>
  %2 = of.reshape %1 : (tensor<2x12xf32>) -> tensor<3x8xf32>
  return %2 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = of.reshape %x : (tensor<4x6xf32>) -> tensor<24xf32>
  %1 = of.reshape %0 : (tensor<24xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK-NOT: of.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = of.broadcast_to %x : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = of.cast %x : tensor<4x6xf32> to tensor<4x6xf32>
  %2 = of.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 6>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = of.concat %x {axis = 1} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %4 = of.transpose %x, [0, 1] : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// A broadcast that really broadcasts stays.
// CHECK-LABEL: func.func @real_broadcast
// CHECK: of.broadcast_to
func.func @real_broadcast(%x: tensor<1x6xf32>) -> tensor<4x6xf32> {
  %0 = of.broadcast_to %x : (tensor<1x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

of.placement @row {device = "cpu", shape = [2]}

// boxing(boxing(x)) keeps only the final distribution; a boxing back to the
// source's distribution disappears.
// CHECK-LABEL: func.func @boxing_chain
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32, #of.sbp<@row, [P]>>)
// CHECK: %[[B:.*]] = of.boxing %[[X]] : tensor<8xf32, #of.sbp<@row, [P]>> -> tensor<8xf32, #of.sbp<@row, [S(0)]>>
// CHECK-NEXT: return %[[X]], %[[B]]
func.func @boxing_chain(%x: tensor<8xf32, #of.sbp<@row, [P]>>)
    -> (tensor<8xf32, #of.sbp<@row, [P]>>, tensor<8xf32, #of.sbp<@row, [S(0)]>>) {
  %0 = of.boxing %x : tensor<8xf32, #of.sbp<@row, [P]>> -> tensor<8xf32, #of.sbp<@row, [B]>>
  %1 = of.boxing %0 : tensor<8xf32, #of.sbp<@row, [B]>> -> tensor<8xf32, #of.sbp<@row, [P]>>
  %2 = of.boxing %0 : tensor<8xf32, #of.sbp<@row, [B]>> -> tensor<8xf32, #of.sbp<@row, [S(0)]>>
  return %1, %2 : tensor<8xf32, #of.sbp<@row, [P]>>, tensor<8xf32, #of.sbp<@row, [S(0)]>>
}

// -----

// sin and cos of constants fold.
// CHECK-LABEL: func.func @fold_trig
// CHECK-DAG: of.constant dense<[0.000000e+00, 0.841470957]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[1.000000e+00, 0.540302277]> : tensor<2xf32>
// CHECK-NOT: of.sin
// CHECK-NOT: of.cos
func.func @fold_trig() -> (tensor<2xf32>, tensor<2xf32>) {
  %a = of.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %s = of.sin %a : (tensor<2xf32>) -> tensor<2xf32>
  %c = of.cos %a : (tensor<2xf32>) -> tensor<2xf32>
  return %s, %c : tensor<2xf32>, tensor<2xf32>
}

// Constant folding of small elementwise ops.
// CHECK-LABEL: func.func @fold_elementwise
// CHECK-DAG: of.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[-1.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[3.000000e+00, 8.000000e+00]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[1.000000e+00, 4.000000e+00]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[2.71828175, 7.3890562]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[1.000000e+00, 1.41421354]> : tensor<2xf32>
// CHECK-DAG: of.constant dense<[3, -2]> : tensor<2xi32>
// CHECK-NOT: of.add
// CHECK-NOT: of.exp
func.func @fold_elementwise() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
                                  tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>) {
  %a = of.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = of.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %m = of.constant dense<[-1.0, 2.0]> : tensor<2xf32>
  %0 = of.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = of.neg %a : (tensor<2xf32>) -> tensor<2xf32>
  %2 = of.mul %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = of.relu %m : (tensor<2xf32>) -> tensor<2xf32>
  %4 = of.pow %a, %m : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %5 = of.exp %a : (tensor<2xf32>) -> tensor<2xf32>
  %6 = of.sqrt %a : (tensor<2xf32>) -> tensor<2xf32>
  %i = of.constant dense<[7, -5]> : tensor<2xi32>
  %j = of.constant dense<2> : tensor<2xi32>
  %7 = of.div %i, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
                                          tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi32>
}

// -----

// Integer division by zero is left to run time; splats fold without limit.
// CHECK-LABEL: func.func @no_fold_div_by_zero
// CHECK-DAG: of.div
// CHECK-DAG: %[[S:.*]] = of.constant dense<5.000000e+00> : tensor<4096xf32>
// CHECK-NOT: of.add
// CHECK: return %{{.*}}, %[[S]]
func.func @no_fold_div_by_zero() -> (tensor<2xi32>, tensor<4096xf32>) {
  %i = of.constant dense<[7, -5]> : tensor<2xi32>
  %z = of.constant dense<0> : tensor<2xi32>
  %0 = of.div %i, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %s = of.constant dense<2.0> : tensor<4096xf32>
  %t = of.constant dense<3.0> : tensor<4096xf32>
  %1 = of.add %s, %t : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
  return %0, %1 : tensor<2xi32>, tensor<4096xf32>
}

// -----

of.placement @row {device = "cpu", shape = [2]}

// A folded result keeps its distribution.
// CHECK-LABEL: func.func @fold_keeps_sbp
// CHECK: of.constant dense<2.000000e+00> : tensor<4xf32> -> tensor<4xf32, #of.sbp<@row, [B]>>
func.func @fold_keeps_sbp() -> tensor<4xf32, #of.sbp<@row, [B]>> {
  %a = of.constant dense<1.0> : tensor<4xf32> -> tensor<4xf32, #of.sbp<@row, [B]>>
  %0 = of.add %a, %a : (tensor<4xf32, #of.sbp<@row, [B]>>, tensor<4xf32, #of.sbp<@row, [B]>>) -> tensor<4xf32, #of.sbp<@row, [B]>>
  return %0 : tensor<4xf32, #of.sbp<@row, [B]>>
}

// -----

// Broadcasting operands of different shapes are not folded.
// CHECK-LABEL: func.func @no_fold_broadcast
// CHECK: of.add
func.func @no_fold_broadcast() -> tensor<2x2xf32> {
  %a = of.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = of.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = of.add %a, %b : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// A reshape of a small constant folds into the constant.
// CHECK-LABEL: func.func @fold_reshape_constant
// CHECK: of.constant dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi64>
func.func @fold_reshape_constant() -> tensor<2x2xi64> {
  %a = of.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = of.reshape %a : (tensor<4xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// Integer neg and relu fold too.
// CHECK-LABEL: func.func @fold_integer_unary
// CHECK-DAG: of.constant dense<[3, -4]> : tensor<2xi32>
// CHECK-DAG: of.constant dense<[0, 4]> : tensor<2xi32>
// CHECK-NOT: of.neg
// CHECK-NOT: of.relu
func.func @fold_integer_unary() -> (tensor<2xi32>, tensor<2xi32>) {
  %i = of.constant dense<[-3, 4]> : tensor<2xi32>
  %0 = of.neg %i : (tensor<2xi32>) -> tensor<2xi32>
  %1 = of.relu %i : (tensor<2xi32>) -> tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

of.placement @row {device = "cpu", shape = [2]}

// When an op other than a boxing reads the middle of a chain, the chain
// stays: its B is made anyway, and B -> S(0) is a local slice where P ->
// S(0) would be a second collective.
// CHECK-LABEL: func.func @boxing_chain_shared
// CHECK: %[[B:.*]] = of.boxing %{{.*}} : tensor<8xf32, #of.sbp<@row, [P]>> -> tensor<8xf32, #of.sbp<@row, [B]>>
// CHECK: of.exp %[[B]]
// CHECK: of.boxing %[[B]] : tensor<8xf32, #of.sbp<@row, [B]>> -> tensor<8xf32, #of.sbp<@row, [S(0)]>>
func.func @boxing_chain_shared(%x: tensor<8xf32, #of.sbp<@row, [P]>>)
    -> (tensor<8xf32, #of.sbp<@row, [B]>>, tensor<8xf32, #of.sbp<@row, [S(0)]>>) {
  %0 = of.boxing %x : tensor<8xf32, #of.sbp<@row, [P]>> -> tensor<8xf32, #of.sbp<@row, [B]>>
  %1 = of.exp %0 : (tensor<8xf32, #of.sbp<@row, [B]>>) -> tensor<8xf32, #of.sbp<@row, [B]>>
  %2 = of.boxing %0 : tensor<8xf32, #of.sbp<@row, [B]>> -> tensor<8xf32, #of.sbp<@row, [S(0)]>>
  return %1, %2 : tensor<8xf32, #of.sbp<@row, [B]>>, tensor<8xf32, #of.sbp<@row, [S(0)]>>
}

// -----

// SGD's update of a table, x - s * embedding_grad(ids, dy), touches only the
// rows the ids name: embedding_grad(ids, -s * dy) into x. Through the
// gradient's boxing to the table's distribution too.
// CHECK-LABEL: func.func @sparse_table_update
// CHECK-SAME: (%[[IDS:.*]]: tensor<6xi64>, %[[DY:.*]]: tensor<6x4xf32>, %[[W:.*]]: tensor<10x4xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[N:.*]] = of.neg %[[S]] : (tensor<f32>) -> tensor<f32>
// CHECK: %[[SDY:.*]] = of.mul %[[N]], %[[DY]] : (tensor<f32>, tensor<6x4xf32>) -> tensor<6x4xf32>
// CHECK: %[[R:.*]] = of.embedding_grad %[[IDS]], %[[SDY]] into %[[W]] : (tensor<6xi64>, tensor<6x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
// CHECK-NOT: of.sub
// CHECK: return %[[R]]
func.func @sparse_table_update(%ids: tensor<6xi64>, %dy: tensor<6x4xf32>, %w: tensor<10x4xf32>, %s: tensor<f32>) -> tensor<10x4xf32> {
  %g = of.embedding_grad %ids, %dy : (tensor<6xi64>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %u = of.mul %s, %g : (tensor<f32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %r = of.sub %w, %u : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}

// CHECK-LABEL: func.func @sparse_table_update_boxed
// CHECK: of.embedding_grad %{{.*}}, %{{.*}} into %arg2
// CHECK-NOT: of.sub
of.placement @p {device = "cpu", shape = [2]}
func.func @sparse_table_update_boxed(%ids: tensor<6xi64, #of.sbp<@p, [B]>>, %dy: tensor<6x4xf32>, %w: tensor<10x4xf32, #of.sbp<@p, [S(0)]>>, %s: tensor<f32, #of.sbp<@p, [B]>>) -> tensor<10x4xf32> {
  %g = of.embedding_grad %ids, %dy : (tensor<6xi64, #of.sbp<@p, [B]>>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %b = of.boxing %g : tensor<10x4xf32> -> tensor<10x4xf32, #of.sbp<@p, [S(0)]>>
  %u = of.mul %s, %b : (tensor<f32, #of.sbp<@p, [B]>>, tensor<10x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<10x4xf32>
  %r = of.sub %w, %u : (tensor<10x4xf32, #of.sbp<@p, [S(0)]>>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}

// The dense gradient is kept where something else reads it (momentum,
// weight decay: a dense update), or where the factor is not a scalar.
// CHECK-LABEL: func.func @dense_table_update
// CHECK: of.embedding_grad %arg0, %arg1 :
// CHECK-NOT: into
// CHECK: of.sub
// CHECK: of.embedding_grad %arg0, %arg1 :
// CHECK-NOT: into
// CHECK: of.sub
func.func @dense_table_update(%ids: tensor<6xi64>, %dy: tensor<6x4xf32>, %w: tensor<10x4xf32>, %s: tensor<f32>, %v: tensor<10x4xf32>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>) {
  %g = of.embedding_grad %ids, %dy : (tensor<6xi64>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %u = of.mul %s, %g : (tensor<f32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %r = of.sub %w, %u : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %g2 = of.embedding_grad %ids, %dy : (tensor<6xi64>, tensor<6x4xf32>) -> tensor<10x4xf32>
  %u2 = of.mul %v, %g2 : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %r2 = of.sub %w, %u2 : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r, %g, %r2 : tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>
}

// -----

// The gradients of disjoint slices, each padded with zero blocks, summed:
// one concatenation of the slices' gradients (zero blocks only in the gaps).
// CHECK-LABEL: func.func @disjoint_slice_grads
// CHECK-SAME: %[[A:.*]]: tensor<1x4xf32>, %[[B:.*]]: tensor<2x4xf32>, %[[C:.*]]: tensor<1x4xf32>
// CHECK: %[[Z:.*]] = of.constant dense<0.000000e+00> : tensor<1x4xf32>
// CHECK: %[[R:.*]] = of.concat %[[A]], %[[Z]], %[[B]], %[[C]] {axis = 0 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
// CHECK-NOT: of.add
// CHECK: return %[[R]]
func.func @disjoint_slice_grads(%a: tensor<1x4xf32>, %b: tensor<2x4xf32>, %c: tensor<1x4xf32>) -> tensor<5x4xf32> {
  %z1 = of.constant dense<0.0> : tensor<1x4xf32>
  %z2 = of.constant dense<0.0> : tensor<2x4xf32>
  %z3 = of.constant dense<0.0> : tensor<3x4xf32>
  %z4 = of.constant dense<0.0> : tensor<4x4xf32>
  %ga = of.concat %a, %z4 {axis = 0 : i64} : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<5x4xf32>
  %gb = of.concat %z2, %b, %z1 {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
  %gc = of.concat %z4, %c {axis = 0 : i64} : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
  %s1 = of.add %ga, %gb : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %s2 = of.add %s1, %gc : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  return %s2 : tensor<5x4xf32>
}

// -----

// Overlapping value parts are added as they are.
// CHECK-LABEL: func.func @overlapping_slice_grads
// CHECK: of.add
func.func @overlapping_slice_grads(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %z = of.constant dense<0.0> : tensor<1x4xf32>
  %ga = of.concat %a, %z {axis = 0 : i64} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  %gb = of.concat %z, %b {axis = 0 : i64} : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %s = of.add %ga, %gb : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}
