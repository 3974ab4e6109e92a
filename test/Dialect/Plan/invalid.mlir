// RUN: of-opt %s -split-input-file -verify-diagnostics

ofrt.program "main" attributes {arena_size = 32 : i64, device = "cpu", ranks = array<i64: 0>} {
  // expected-error@+1 {{bytes [32, 48) exceed the arena of 32 bytes}}
  ofrt.buffer @t arena offset 32 size 16 : tensor<4xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  // expected-error@+1 {{size 12 does not match 'tensor<4xf32>' (16 bytes)}}
  ofrt.buffer @t arena offset 0 size 12 : tensor<4xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  // expected-error@+1 {{an input buffer needs a binding name}}
  ofrt.buffer @x input size 16 : tensor<4xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  // expected-error@+1 {{a constant buffer needs a value}}
  ofrt.buffer @c constant size 16 : tensor<4xf32>
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @t arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{references unknown buffer @nope}}
  ofrt.output "y" = @nope
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @t arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{references unknown executable @kernels}}
  ofrt.launch @kernels "k0" [@t]
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>, num_events = 1} {
  // expected-error@+1 {{waits on event 0, which no earlier step records (it would hang)}}
  ofrt.event_wait 0
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @t arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{stream 1 is outside the program's 1 stream(s)}}
  ofrt.output "y" = @t {stream = 1}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  ofrt.buffer @b arena offset 16 size 16 : tensor<4xf32>
  // expected-error@+1 {{copies outside its buffers}}
  ofrt.copy @a to @b {bytes = 16, target_offset = 4}
}

// -----

ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @a arena offset 0 size 16 : tensor<4xf32>
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, slice, to_partial]}}
  ofrt.collective gossip @a to @a group [0]
}

// -----

// expected-error@+1 {{needs exactly one of a kernel module (source form) or an `object` (binary form)}}
ofrt.executable @k attributes {target = "x86_64-pc-linux-gnu"} {
}

// -----

// A collective on stream 1 writes @r; the output on stream 0 reads it
// without waiting for stream 1.
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cuda", ranks = array<i64: 0, 1>, num_streams = 2, num_events = 1} {
  ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
  ofrt.buffer @r arena offset 0 size 16 : tensor<4xf32>
  ofrt.event_record 0
  ofrt.event_wait 0 {stream = 1}
  ofrt.collective all_reduce @x to @r group [0, 1] {shape = array<i64: 4>, stream = 1}
  // expected-error@+1 {{on stream 0 uses memory that step 2 (ofrt.collective on stream 1) also uses, and no event orders the two: they may run at the same time}}
  ofrt.output "r" = @r
}

// -----

// Distinct arena buffers that share bytes race too: @t is written on
// stream 0 while the collective may still write @r.
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cuda", ranks = array<i64: 0, 1>, num_streams = 2, num_events = 2} {
  ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
  ofrt.buffer @r arena offset 0 size 16 : tensor<4xf32>
  ofrt.buffer @t arena offset 8 size 16 : tensor<4xf32>
  ofrt.event_record 0
  ofrt.event_wait 0 {stream = 1}
  ofrt.collective all_reduce @x to @r group [0, 1] {shape = array<i64: 4>, stream = 1}
  ofrt.event_record 1 {stream = 1}
  // expected-error@+1 {{on stream 0 uses memory that step 2 (ofrt.collective on stream 1) also uses}}
  ofrt.copy @x to @t {bytes = 16 : i64}
  ofrt.event_wait 1
  ofrt.output "r" = @r
}

// -----

// A launch is held to the signature its kernel was compiled for.
ofrt.executable @cpu attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0"], object = dense<0> : tensor<4xi8>, signatures = {k0 = {params = [tensor<4x4xf32>, tensor<16xf32>], range = 4 : i64, work = 16 : i64, reads = array<i64: 0>, writes = array<i64: 1>}}} {
}
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @x input binding "x" size 64 : tensor<16xf32>
  ofrt.buffer @y arena offset 0 size 32 : tensor<8xf32>
  // expected-error@+1 {{argument 1 of kernel 'k0' is @y ('tensor<8xf32>'), but the kernel was compiled for 'tensor<16xf32>'}}
  ofrt.launch @cpu "k0" [@x, @y] {range = 4 : i64, work = 16 : i64}
}

// -----

ofrt.executable @cpu attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0"], object = dense<0> : tensor<4xi8>, signatures = {k0 = {params = [tensor<4x4xf32>, tensor<16xf32>], range = 4 : i64, work = 16 : i64, reads = array<i64: 0>, writes = array<i64: 1>}}} {
}
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @x input binding "x" size 64 : tensor<16xf32>
  ofrt.buffer @y arena offset 0 size 64 : tensor<16xf32>
  // expected-error@+1 {{launches kernel 'k0' with range 1 and work 16, but it was compiled for range 4 and work 16}}
  ofrt.launch @cpu "k0" [@x, @y] {range = 1 : i64, work = 16 : i64}
}

// -----

ofrt.executable @cpu attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0"], object = dense<0> : tensor<4xi8>, signatures = {k0 = {params = [tensor<4x4xf32>, tensor<16xf32>], range = 4 : i64, work = 16 : i64, reads = array<i64: 0>, writes = array<i64: 1>}}} {
}
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @x input binding "x" size 64 : tensor<16xf32>
  ofrt.buffer @c constant size 64 value dense<1.0> : tensor<16xf32> : tensor<16xf32>
  // expected-error@+1 {{kernel 'k0' writes its argument 1, the constant @c}}
  ofrt.launch @cpu "k0" [@x, @c] {range = 4 : i64, work = 16 : i64}
}

// -----

ofrt.executable @cpu attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0", "k1"], object = dense<0> : tensor<4xi8>, signatures = {k0 = {params = [tensor<16xf32>], range = 0 : i64, work = 0 : i64, reads = array<i64>, writes = array<i64: 0>}}} {
}
ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
  ofrt.buffer @x arena offset 0 size 64 : tensor<16xf32>
  // expected-error@+1 {{launches kernel 'k1', which executable @cpu declares no signature for}}
  ofrt.launch @cpu "k1" [@x]
}

// -----

// expected-error@+1 {{signature of kernel 'k0' needs params (static tensor types), range and work (non-negative integers), reads and writes (increasing parameter indices) and nothing else}}
ofrt.executable @cpu attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0"], object = dense<0> : tensor<4xi8>, signatures = {k0 = {params = [tensor<16xf32>], range = 0 : i64, work = 0 : i64, reads = array<i64>, writes = array<i64: 1>}}} {
}
