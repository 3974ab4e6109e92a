// RUN: of-opt %s -split-input-file -verify-diagnostics
// The form of multi-rank plans: collectives' meshes, axes and dimensions,
// and the `dist` of inputs and outputs. (Whether the buffers fit what a
// collective or a distribution gives each rank is the plan loader's check,
// which of-translate --of-plan-to-binary runs; see test/Runtime.)

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1, 2, 3>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{mesh has 6 positions, but the group has 4 ranks}}
  ofrt.collective all_reduce @a to @a group [0, 1, 2, 3] {mesh = array<i64: 2, 3>}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1, 2, 3>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{axis 2 is outside the 2-axis mesh}}
  ofrt.collective all_reduce @a to @a group [0, 1, 2, 3] {mesh = array<i64: 2, 2>, axis = 2 : i64}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{dim 1 is outside the shape}}
  ofrt.collective all_gather @a to @a group [0, 1] {shape = array<i64: 4>, dim = 1 : i64}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<2x2xf32>
  // expected-error@+1 {{all_to_all needs dim != dim2}}
  ofrt.collective all_to_all @a to @a group [0, 1] {shape = array<i64: 2, 2>}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{all_to_all needs a shape}}
  ofrt.collective all_to_all @a to @a group [0, 1]
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{group must list distinct, non-negative ranks}}
  ofrt.collective all_reduce @a to @a group [0, 0]
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{peer 3 is not in the group}}
  ofrt.collective send @a to @a group [0, 1] {peer = 3 : i64}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  // expected-error@+1 {{dist has 2 sbp entries for a 1-axis mesh (one per axis)}}
  ofrt.buffer @x input binding "x" size 8 {dist = #ofrt.dist<global_shape = [4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0), B]>} : tensor<2xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  // expected-error@+1 {{dist mesh has 2 positions, but mesh_ranks lists 3 ranks}}
  ofrt.buffer @x input binding "x" size 8 {dist = #ofrt.dist<global_shape = [4], mesh = [2], mesh_ranks = [0, 1, 2], sbp = [S(0)]>} : tensor<2xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  // expected-error@+1 {{dist sbp entry S(1) is invalid for a 1-d global tensor}}
  ofrt.buffer @x input binding "x" size 8 {dist = #ofrt.dist<global_shape = [4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(1)]>} : tensor<2xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  // expected-error@+1 {{unknown SBP entry 'Q'; expected S(<dim>), B, P or P(max)}}
  ofrt.buffer @x input binding "x" size 8 {dist = #ofrt.dist<global_shape = [4], mesh = [2], mesh_ranks = [0, 1], sbp = [Q]>} : tensor<2xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  // expected-error@+1 {{only an input buffer has a dist}}
  ofrt.buffer @t arena offset 0 size 8 {dist = #ofrt.dist<global_shape = [4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>} : tensor<2xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
  ofrt.buffer @t arena offset 0 size 8 : tensor<2xf32>
  // expected-error@+1 {{dist mixes P (sum) and P(max)}}
  ofrt.output "t" = @t {dist = #ofrt.dist<global_shape = [2], mesh = [1, 2], mesh_ranks = [0, 1], sbp = [P, P(max)]>}
}
