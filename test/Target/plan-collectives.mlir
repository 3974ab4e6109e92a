// The plan-format fields of multi-rank plans survive text -> binary -> text:
// every collective kind with its mesh, axis, shape, dim and dim2, the
// distributions of inputs and outputs, and the world size. Binary -> text
// -> binary is the identity, and the text is a fixed point.
// RUN: of-translate --of-plan-to-binary %s -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: of-translate --of-plan-to-binary %t.mlir -o %t.again.ofp
// RUN: cmp %t.ofp %t.again.ofp
// RUN: of-translate --of-binary-to-plan %t.again.ofp | diff %t.mlir -
// The runtime reads the world size (the largest rank + 1) and the inputs'
// distributions.
// RUN: of-run %t.ofp --list --rank 1 | FileCheck %s --check-prefix=LIST
// LIST: entry main (rank 1)
// LIST-NEXT: input  x: f32 [2, 6] (part of f32 [4, 6] over mesh [2] ranks [0, 1] as [S(0)])
// LIST: output ag: f32 [4, 6] (part of f32 [4, 6] over mesh [2] ranks [0, 1] as [B])
// LIST: output tp: f32 [2, 6] (part of f32 [2, 6] over mesh [2] ranks [0, 1] as [P])
// LIST: entry grid (rank 1)
// LIST-NEXT: input  y: i64 [2, 3] (part of i64 [4, 6] over mesh [2, 2] ranks [0, 1, 2, 3] as [S(0), S(1)])
// LIST: output m: i64 [2, 3] (part of i64 [2, 6] over mesh [2, 2] ranks [0, 1, 2, 3] as [P(max), S(1)])
// RUN: not of-run %t.ofp --output-dir %t.out 2>&1 | FileCheck %s --check-prefix=WORLD
// WORLD: of-run: error: the plan is compiled for 4 ranks but 1 is running (run it with -n 4)

// CHECK-LABEL: ofrt.program "main" attributes {{.*}}ranks = array<i64: 0>
// CHECK: ofrt.buffer @x input binding "x" size 48 {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>} : tensor<2x6xf32>
// CHECK: ofrt.collective all_reduce @x to @ar group [0, 1] reduce max {shape = array<i64: 2, 6>}
// CHECK: ofrt.collective all_gather @x to @ag group [0, 1] {mesh = array<i64: 2>, shape = array<i64: 4, 6>}
// CHECK: ofrt.collective reduce_scatter @x to @rs group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
// CHECK: ofrt.collective all_to_all @x to @a2a group [0, 1] {dim2 = 1 : i64, shape = array<i64: 4, 6>}
// CHECK: ofrt.collective broadcast @x to @bc group [0, 1] {shape = array<i64: 2, 6>}
// CHECK: ofrt.collective slice @x to @sl group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
// CHECK: ofrt.collective to_partial @x to @tp group [0, 1] reduce max {shape = array<i64: 2, 6>}
// CHECK: ofrt.collective send @x to @sr group [0, 1] {peer = 1 : i64}
// CHECK: ofrt.output "ag" = @ag {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [B]>}
// CHECK: ofrt.output "tp" = @tp {dist = #ofrt.dist<global_shape = [2, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [P]>}
// CHECK-LABEL: ofrt.program "main" attributes {{.*}}ranks = array<i64: 1>
// CHECK: ofrt.collective recv @x to @sr group [0, 1] {peer = 0 : i64}
// CHECK-LABEL: ofrt.program "grid" attributes {{.*}}ranks = array<i64: 0, 1, 2, 3>
// CHECK: ofrt.collective all_reduce @y to @r group [0, 1, 2, 3] reduce max {axis = 1 : i64, mesh = array<i64: 2, 2>, shape = array<i64: 2, 3>}
// CHECK: ofrt.collective reduce_scatter @y to @s group [0, 1, 2, 3] {mesh = array<i64: 2, 2>, shape = array<i64: 2, 3>}
// CHECK: ofrt.output "m" = @y {dist = #ofrt.dist<global_shape = [2, 6], mesh = [2, 2], mesh_ranks = [0, 1, 2, 3], sbp = [P(max), S(1)]>}

module {
  ofrt.program "main" attributes {arena_size = 640 : i64, device = "cpu", ranks = array<i64: 0>} {
    ofrt.buffer @x input binding "x" size 48 {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>} : tensor<2x6xf32>
    ofrt.buffer @ar arena offset 0 size 48 : tensor<2x6xf32>
    ofrt.buffer @ag arena offset 64 size 96 : tensor<4x6xf32>
    ofrt.buffer @rs arena offset 192 size 24 : tensor<2x3xf32>
    ofrt.buffer @a2a arena offset 256 size 48 : tensor<4x3xf32>
    ofrt.buffer @bc arena offset 320 size 48 : tensor<2x6xf32>
    ofrt.buffer @sl arena offset 384 size 24 : tensor<2x3xf32>
    ofrt.buffer @tp arena offset 448 size 48 : tensor<2x6xf32>
    ofrt.buffer @sr arena offset 512 size 48 : tensor<2x6xf32>
    ofrt.collective all_reduce @x to @ar group [0, 1] reduce max {shape = array<i64: 2, 6>}
    ofrt.collective all_gather @x to @ag group [0, 1] {mesh = array<i64: 2>, shape = array<i64: 4, 6>}
    ofrt.collective reduce_scatter @x to @rs group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
    ofrt.collective all_to_all @x to @a2a group [0, 1] {dim2 = 1 : i64, shape = array<i64: 4, 6>}
    ofrt.collective broadcast @x to @bc group [0, 1] {shape = array<i64: 2, 6>}
    ofrt.collective slice @x to @sl group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
    ofrt.collective to_partial @x to @tp group [0, 1] reduce max {shape = array<i64: 2, 6>}
    ofrt.collective send @x to @sr group [0, 1] {peer = 1 : i64}
    ofrt.output "ag" = @ag {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [B]>}
    ofrt.output "tp" = @tp {dist = #ofrt.dist<global_shape = [2, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [P]>}
  }
  ofrt.program "main" attributes {arena_size = 640 : i64, device = "cpu", ranks = array<i64: 1>} {
    ofrt.buffer @x input binding "x" size 48 {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>} : tensor<2x6xf32>
    ofrt.buffer @ar arena offset 0 size 48 : tensor<2x6xf32>
    ofrt.buffer @ag arena offset 64 size 96 : tensor<4x6xf32>
    ofrt.buffer @rs arena offset 192 size 24 : tensor<2x3xf32>
    ofrt.buffer @a2a arena offset 256 size 48 : tensor<4x3xf32>
    ofrt.buffer @bc arena offset 320 size 48 : tensor<2x6xf32>
    ofrt.buffer @sl arena offset 384 size 24 : tensor<2x3xf32>
    ofrt.buffer @tp arena offset 448 size 48 : tensor<2x6xf32>
    ofrt.buffer @sr arena offset 512 size 48 : tensor<2x6xf32>
    ofrt.collective all_reduce @x to @ar group [0, 1] reduce max {shape = array<i64: 2, 6>}
    ofrt.collective all_gather @x to @ag group [0, 1] {mesh = array<i64: 2>, shape = array<i64: 4, 6>}
    ofrt.collective reduce_scatter @x to @rs group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
    ofrt.collective all_to_all @x to @a2a group [0, 1] {dim2 = 1 : i64, shape = array<i64: 4, 6>}
    ofrt.collective broadcast @x to @bc group [0, 1] {shape = array<i64: 2, 6>}
    ofrt.collective slice @x to @sl group [0, 1] {dim = 1 : i64, shape = array<i64: 2, 6>}
    ofrt.collective to_partial @x to @tp group [0, 1] reduce max {shape = array<i64: 2, 6>}
    ofrt.collective recv @x to @sr group [0, 1] {peer = 0 : i64}
    ofrt.output "ag" = @ag {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [B]>}
    ofrt.output "tp" = @tp {dist = #ofrt.dist<global_shape = [2, 6], mesh = [2], mesh_ranks = [0, 1], sbp = [P]>}
  }
  ofrt.program "grid" attributes {arena_size = 128 : i64, device = "cpu", ranks = array<i64: 0, 1, 2, 3>} {
    ofrt.buffer @y input binding "y" size 48 {dist = #ofrt.dist<global_shape = [4, 6], mesh = [2, 2], mesh_ranks = [0, 1, 2, 3], sbp = [S(0), S(1)]>} : tensor<2x3xi64>
    ofrt.buffer @r arena offset 0 size 48 : tensor<2x3xi64>
    ofrt.buffer @s arena offset 64 size 24 : tensor<1x3xi64>
    ofrt.collective all_reduce @y to @r group [0, 1, 2, 3] reduce max {axis = 1 : i64, mesh = array<i64: 2, 2>, shape = array<i64: 2, 3>}
    ofrt.collective reduce_scatter @y to @s group [0, 1, 2, 3] {mesh = array<i64: 2, 2>, shape = array<i64: 2, 3>}
    ofrt.output "m" = @y {dist = #ofrt.dist<global_shape = [2, 6], mesh = [2, 2], mesh_ranks = [0, 1, 2, 3], sbp = [P(max), S(1)]>}
  }
}
