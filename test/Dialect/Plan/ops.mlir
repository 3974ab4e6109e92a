// RUN: of-opt %s | of-opt | FileCheck %s
// RUN: of-opt %s -mlir-print-op-generic | of-opt | FileCheck %s

// Every step kind of a program, in both source and binary executable forms.

// CHECK-LABEL: ofrt.executable @kernels
// CHECK: func.func @k0
ofrt.executable @kernels attributes {target = "x86_64-pc-linux-gnu"} {
  builtin.module {
    func.func @k0(%a: memref<4xf32>, %b: memref<4xf32>) {
      return
    }
  }
}
// CHECK: ofrt.executable @binary attributes {{{.*}}kernels = ["k0"], object = dense<[1, 2]> : tensor<2xi8>
ofrt.executable @binary attributes {target = "x86_64-pc-linux-gnu", kernels = ["k0"], object = dense<[1, 2]> : tensor<2xi8>} {
}

// CHECK: ofrt.program "main" attributes {arena_size = 128 : i64, device = "cpu", num_events = 1 : i64, num_streams = 2 : i64, ranks = array<i64: 0>}
ofrt.program "main" attributes {arena_size = 128 : i64, device = "cpu", ranks = array<i64: 0>, num_streams = 2, num_events = 1} {
  // CHECK: ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
  ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
  // CHECK: ofrt.buffer @c constant size 16 value dense<1.000000e+00> : tensor<4xf32> : tensor<4xf32>
  ofrt.buffer @c constant size 16 value dense<1.0> : tensor<4xf32> : tensor<4xf32>
  // CHECK: ofrt.buffer @t arena offset 64 size 16 : tensor<4xf32>
  ofrt.buffer @t arena offset 64 size 16 : tensor<4xf32>
  // CHECK: ofrt.launch @kernels "k0" [@x, @t]
  ofrt.launch @kernels "k0" [@x, @t]
  // CHECK: ofrt.library "blas.gemm" [@x, @c, @t] params [1, 1, 1, 4
  ofrt.library "blas.gemm" [@x, @c, @t] params [1, 1, 1, 4, 0, 4, 1, 0, 1, 1, 0, 1]
  // CHECK: ofrt.copy @t to @x {bytes = 8 : i64, source_offset = 8 : i64}
  ofrt.copy @t to @x {bytes = 8, source_offset = 8}
  // CHECK: ofrt.event_record 0 {stream = 1 : i64}
  ofrt.event_record 0 {stream = 1}
  // CHECK: ofrt.event_wait 0
  ofrt.event_wait 0
  // CHECK: ofrt.collective all_reduce @t to @t group [0]
  ofrt.collective all_reduce @t to @t group [0]
  // CHECK: ofrt.output "y" = @t
  ofrt.output "y" = @t
}
