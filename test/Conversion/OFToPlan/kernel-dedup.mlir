// RUN: of-opt --of-pipeline=cpu,stop-after=plan,fuse=false %s | FileCheck %s

// Kernels are deduplicated across steps and entries: in @layers the inner
// transpose pair folds away, leaving transpose, exp, exp, transpose: the two
// exps (in place on the same 8x16 buffer) share k1. @other's transpose and
// exp are @layers' k0 and k1 again; only its slice+tanh is new (k3). Four
// kernels for seven launches.

// CHECK: ofrt.executable @cpu_kernels
// CHECK-COUNT-4: func.func @k{{[0-9]+}}(
// CHECK-NOT: func.func @k
// CHECK: ofrt.program "layers"
// CHECK: ofrt.launch @cpu_kernels "k0" [@arg0, @buf1]
// CHECK-NEXT: ofrt.launch @cpu_kernels "k1" [@buf1]
// CHECK-NEXT: ofrt.launch @cpu_kernels "k1" [@buf1]
// CHECK-NEXT: ofrt.launch @cpu_kernels "k2" [@buf1, @buf2]
// CHECK: ofrt.program "other"
// CHECK: ofrt.launch @cpu_kernels "k0" [@arg0, @buf1]
// CHECK-NEXT: ofrt.launch @cpu_kernels "k1" [@buf1]
// CHECK-NEXT: ofrt.launch @cpu_kernels "k3" [@buf1, @buf2]
func.func @layers(%x: tensor<16x8xf32> {of.name = "x"}) -> (tensor<16x8xf32> {of.name = "y"}) {
  %v0 = of.transpose %x, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %w0 = of.exp %v0 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %v1 = of.transpose %w0, [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %w1 = of.transpose %v1, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %e1 = of.exp %w1 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = of.transpose %e1, [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

func.func @other(%x: tensor<16x8xf32> {of.name = "x"}) -> (tensor<4x4xf32> {of.name = "y"}) {
  %v0 = of.transpose %x, [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %w0 = of.exp %v0 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = of.slice %w0 {starts = array<i64: 0, 0>, limits = array<i64: 4, 4>} : (tensor<8x16xf32>) -> tensor<4x4xf32>
  %t = of.tanh %s : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %t : tensor<4x4xf32>
}
