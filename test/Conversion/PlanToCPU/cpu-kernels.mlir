// RUN: of-opt --of-pipeline=cpu --split-input-file %s | FileCheck %s

// How --of-lower-cpu-kernels shapes the generated loops for LLVM's
// vectoriser.

// A bool buffer is read as bytes compared with zero: LLVM vectorises i1
// loads one mask register per element (a masked softmax's select ran 4x
// slower than a mul over the same floats).
// CHECK-LABEL: llvm.func internal @k0_impl
// CHECK-NOT: -> i1
// CHECK: %[[BYTE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK: %[[BIT:.*]] = llvm.icmp "ne" %[[BYTE]], %{{.*}} : i8
// CHECK: llvm.select %[[BIT]], %{{.*}}, %{{.*}} : i1, f32
func.func @masked(%m: tensor<4x8xi1> {of.name = "mask"}, %x: tensor<2x4x8xf32> {of.name = "x"}) -> tensor<2x4x8xf32> {
  %ninf = of.constant dense<-1.0e9> : tensor<f32>
  %y = of.select %m, %x, %ninf : (tensor<4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Every kernel is `void kN(void **args, i64 begin, i64 end)`. A kernel whose
// first loop is parallel and indexes its output runs the slice [begin, end)
// of that loop (clamped to the loop, so [0, INT64_MAX) runs it whole), and its launch records the loop's extent (range) and the
// kernel's innermost iterations (work), so the runtime may split the range
// among threads (the reduction's initial fill too). A reduction over the
// first dimension has no range: its iterations all write the same outputs.
// CHECK-LABEL: {{^}}// -{{-+$}}
// CHECK: llvm.func internal @k0_impl(
// CHECK-SAME: %[[BEGIN:[a-z0-9]+]]: i64, %[[END:[a-z0-9]+]]: i64)
// CHECK: %[[FROM:.*]] = llvm.intr.smax(%[[BEGIN]], %{{.*}}) : (i64, i64) -> i64
// CHECK: %[[TO:.*]] = llvm.intr.smin(%[[END]], %{{.*}}) : (i64, i64) -> i64
// CHECK: llvm.br ^{{.*}}(%[[FROM]] : i64)
// CHECK: llvm.icmp "slt" %{{.*}}, %[[TO]] : i64
// CHECK: llvm.func @k0(%[[ARGS:.*]]: !llvm.ptr, %[[B:.*]]: i64, %[[E:.*]]: i64)
// CHECK: llvm.call @k0_impl(%{{.*}}, %{{.*}}, %[[B]], %[[E]])
// CHECK: ofrt.launch @cpu_kernels "[[EXP:k[0-9]+]]" [@arg0, @buf{{[0-9]+}}] {range = 6 : i64, work = 120 : i64}
// CHECK-NEXT: ofrt.launch @cpu_kernels "k{{[0-9]+}}" [@buf{{[0-9]+}}] {range = 4 : i64, work = 20 : i64}
// CHECK-NEXT: ofrt.launch @cpu_kernels "k{{[0-9]+}}" [@buf{{[0-9]+}}, @buf{{[0-9]+}}]{{$}}
func.func @ranges(%x: tensor<6x4x5xf32> {of.name = "x"}) -> (tensor<6x4x5xf32>, tensor<4x5xf32>) {
  %e = of.exp %x : (tensor<6x4x5xf32>) -> tensor<6x4x5xf32>
  %s = of.reduce_sum %e {axes = array<i64: 0>} : (tensor<6x4x5xf32>) -> tensor<4x5xf32>
  return %e, %s : tensor<6x4x5xf32>, tensor<4x5xf32>
}

// -----

// A reduction's innermost loop carries its accumulator in a register: the
// output element is loaded once before the loop and stored once after it,
// and the combiner is `reassoc`, so LLVM vectorises the sum.
// CHECK-LABEL: {{^}}// -{{-+$}}
// CHECK: llvm.func internal @k1_impl(
// CHECK: %[[INIT:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NEXT: llvm.br ^[[LOOP:bb[0-9]+]](%{{.*}}, %[[INIT]] : i64, f32)
// CHECK: ^[[LOOP]](%{{.*}}: i64, %[[ACC:.*]]: f32):
// CHECK-NOT: llvm.store
// CHECK: %[[SUM:.*]] = llvm.fadd %{{.*}}, %[[ACC]] {fastmathFlags = #llvm.fastmath<reassoc>} : f32
// CHECK-NOT: llvm.store
// CHECK: llvm.br ^[[LOOP]](%{{.*}}, %[[SUM]] : i64, f32)
// CHECK: llvm.store %[[ACC]], %{{.*}} : f32, !llvm.ptr
func.func @rows(%x: tensor<6x40xf32> {of.name = "x"}) -> tensor<6xf32> {
  %s = of.reduce_sum %x {axes = array<i64: 1>} : (tensor<6x40xf32>) -> tensor<6xf32>
  return %s : tensor<6xf32>
}

// -----

// A batch norm's per-channel values leave the spatial loops: the loads of
// the statistics and parameters (buffers the kernel only reads) and the
// rsqrt of the variance are computed once per channel, before the loop
// over rows; the innermost loop loads only x and stores y.
// CHECK-LABEL: {{^}}// -{{-+$}}
// CHECK: llvm.func internal @k0_impl(
// CHECK: llvm.intr.sqrt
// CHECK-NEXT: llvm.fdiv
// CHECK-NEXT: llvm.br ^[[ROWS:bb[0-9]+]](
// CHECK: ^[[ROWS]](
// CHECK-NOT: llvm.intr.sqrt
// CHECK: ^[[INNER:bb[0-9]+]]:
// CHECK-NOT: llvm.intr.sqrt
// CHECK: llvm.load
// CHECK-NOT: llvm.load
// CHECK: llvm.store
// CHECK: llvm.return
func.func @norm(%x: tensor<2x3x4x5xf32> {of.name = "x"}, %w: tensor<3xf32> {of.name = "w"}, %b: tensor<3xf32> {of.name = "b"}, %m: tensor<3xf32> {of.name = "m"}, %v: tensor<3xf32> {of.name = "v"}) -> tensor<2x3x4x5xf32> {
  %y:3 = of.batch_norm %x, %w, %b, %m, %v : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y#0 : tensor<2x3x4x5xf32>
}

// -----

// A buffer the kernel writes is read where it is: relu in place, one
// parameter read and written, keeps its load in the loop.
// CHECK-LABEL: {{^}}// -{{-+$}}
// CHECK: llvm.func internal @k{{[0-9]+}}_impl(
// CHECK: ^[[LOOP:bb[0-9]+]](%{{.*}}: i64):
// CHECK: llvm.cond_br
// CHECK: llvm.load
// CHECK: llvm.store
// CHECK: llvm.br ^[[LOOP]]
func.func @in_place(%x: tensor<4x16xf32> {of.name = "x"}, %w: tensor<16x16xf32> {of.name = "w"}) -> tensor<4x16xf32> {
  %y = of.matmul %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
