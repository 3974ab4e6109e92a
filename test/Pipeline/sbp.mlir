// Functions over several placements (pipeline stages): each op runs where its
// operands are, and a boxing between placements becomes sends and receives of
// the intersections of the source's and the target's shards.
// RUN: of-opt %s --split-input-file --of-propagate-sbp | FileCheck %s --check-prefix=PROP
// RUN: of-opt %s --split-input-file --of-propagate-sbp --of-insert-boxing --of-partition --canonicalize | FileCheck %s

of.placement @s0 {device = "cpu", shape = [2], ranks = [0, 1]}
of.placement @s1 {device = "cpu", shape = [2], ranks = [2, 3]}

// Propagation: the relu stays on @s0; the constant and the unannotated
// weight go where their users run (@s1, from the annotated bias).
// PROP-LABEL: func.func @stages(
// PROP-SAME: %arg1: tensor<8x4xf32, #of.sbp<@s1, [B]>>
// PROP: of.relu {{.*}} -> tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>
// PROP: of.constant {{.*}} -> tensor<f32, #of.sbp<@s1, [B]>>
// PROP: of.mul {{.*}} -> tensor<6x8xf32, #of.sbp<@s1, [S(1)]>>

// Rows split on @s0 to columns split on @s1: ranks 0 and 1 each send the two
// column halves of their rows, one to each of ranks 2 and 3, which receive
// them in the same order and place them. A rank holds tensor<0xf32> for a
// value of a placement it is not on.
// CHECK-LABEL: func.func @stages(
// CHECK-SAME: %arg0: tensor<3x8xf32> {of.global = tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>}
// CHECK-SAME: %arg2: tensor<0xf32> {of.global = tensor<4xf32, #of.sbp<@s1, [S(0)]>>}
// CHECK-SAME: of.ranks = array<i64: 0>
// CHECK: %[[R:.*]] = of.relu %arg0
// CHECK: %[[A:.*]] = tensor.extract_slice %[[R]][0, 0] [3, 4] [1, 1]
// CHECK: of.send %[[A]] to 2 : tensor<3x4xf32>
// CHECK: %[[B:.*]] = tensor.extract_slice %[[R]][0, 4] [3, 4] [1, 1]
// CHECK: of.send %[[B]] to 3 : tensor<3x4xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0xf32>
// CHECK: return %[[E]] : tensor<0xf32>
// CHECK-LABEL: func.func @stages__role1(
// CHECK-SAME: of.ranks = array<i64: 1>
// CHECK: of.send %{{.*}} to 2 : tensor<3x4xf32>
// CHECK: of.send %{{.*}} to 3 : tensor<3x4xf32>
// CHECK-LABEL: func.func @stages__role2(
// CHECK-SAME: %arg0: tensor<0xf32>
// CHECK-SAME: -> (tensor<6x4xf32>
// CHECK-SAME: of.ranks = array<i64: 2>
// CHECK: %[[X:.*]] = of.recv from 0 into %{{.*}} : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK: %[[I:.*]] = tensor.insert_slice %[[X]] into %{{.*}}[0, 0] [3, 4] [1, 1] : tensor<3x4xf32> into tensor<6x4xf32>
// CHECK: %[[Y:.*]] = of.recv from 1 into %{{.*}} : tensor<3x4xf32> -> tensor<3x4xf32>
// CHECK: %[[J:.*]] = tensor.insert_slice %[[Y]] into %[[I]][3, 0] [3, 4] [1, 1]
// CHECK: of.mul %[[J]]
// CHECK-LABEL: func.func @stages__role3(
// CHECK-SAME: of.ranks = array<i64: 3>
// CHECK: of.recv from 0
// CHECK: of.recv from 1
func.func @stages(%x: tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>, %w: tensor<8x4xf32>, %b: tensor<4xf32, #of.sbp<@s1, [S(0)]>>) -> tensor<6x4xf32> {
  %h = of.relu %x : (tensor<6x8xf32, #of.sbp<@s0, [S(0)]>>) -> tensor<6x8xf32>
  %m = of.boxing %h : tensor<6x8xf32> -> tensor<6x8xf32, #of.sbp<@s1, [S(1)]>>
  %c = of.constant dense<2.0> : tensor<f32>
  %s = of.mul %m, %c : (tensor<6x8xf32, #of.sbp<@s1, [S(1)]>>, tensor<f32>) -> tensor<6x8xf32>
  %y = of.matmul %s, %w : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %z = of.add %y, %b : (tensor<6x4xf32>, tensor<4xf32, #of.sbp<@s1, [S(0)]>>) -> tensor<6x4xf32>
  return %z : tensor<6x4xf32>
}

// -----

// Overlapping placements and partial values. P on @a ([0, 1]) settles with an
// all-reduce on @a first; rank 0 takes part although it sends nothing, since
// rank 1, on both placements, copies its own settled values. On the P target
// @c ([1, 0]) rank 1 (coordinate 0) holds the value and rank 0 zeros.
of.placement @a {device = "cpu", shape = [2], ranks = [0, 1]}
of.placement @b {device = "cpu", shape = [1], ranks = [1]}
of.placement @c {device = "cpu", shape = [2], ranks = [1, 0]}
// PROP-LABEL: func.func @overlap(
// CHECK-LABEL: func.func @overlap(
// CHECK-SAME: of.ranks = array<i64: 0>
// CHECK: %[[Z:.*]] = of.constant dense<0.000000e+00> : tensor<5x3xf32>
// CHECK: of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @a}
// CHECK-NOT: of.send
// CHECK: return %{{.*}}, %[[Z]] : tensor<0xf32>, tensor<5x3xf32>
// CHECK-LABEL: func.func @overlap__role1(
// CHECK-SAME: of.ranks = array<i64: 1>
// CHECK: %[[S:.*]] = of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @a}
// CHECK-NOT: of.send
// CHECK-NOT: of.recv
// CHECK: return %[[S]], %[[S]] : tensor<5x3xf32>, tensor<5x3xf32>
func.func @overlap(%x: tensor<5x3xf32, #of.sbp<@a, [P]>>) -> (tensor<5x3xf32, #of.sbp<@b, [B]>>, tensor<5x3xf32, #of.sbp<@c, [P]>>) {
  %y = of.boxing %x : tensor<5x3xf32, #of.sbp<@a, [P]>> -> tensor<5x3xf32, #of.sbp<@b, [B]>>
  %z = of.boxing %y : tensor<5x3xf32, #of.sbp<@b, [B]>> -> tensor<5x3xf32, #of.sbp<@c, [P]>>
  return %y, %z : tensor<5x3xf32, #of.sbp<@b, [B]>>, tensor<5x3xf32, #of.sbp<@c, [P]>>
}
