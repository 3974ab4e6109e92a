// RUN: of-opt --of-pipeline=cpu,stop-after=plan %s | FileCheck %s
// RUN: of-opt --of-pipeline=cpu,stop-after=plan,use-blas=false %s | FileCheck %s --check-prefix=NOBLAS

// Matrix products become "blas.gemm" library calls whose params
// [batch, m, n, k, a_b, a_m, a_k, b_b, b_k, b_n, c_b, c_m] are read off the
// contraction's indexing maps; the zero fill of the output is dropped, since
// the call overwrites it.

// CHECK-LABEL: ofrt.program "plain"
// CHECK-NOT: ofrt.launch
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @[[C:.*]]] params [1, 16, 64, 32, 0, 32, 1, 0, 64, 1, 0, 64]
// CHECK-NEXT: ofrt.output "out0" = @[[C]]
// NOBLAS-LABEL: ofrt.program "plain"
// NOBLAS-NOT: blas.gemm
// NOBLAS: ofrt.launch
func.func @plain(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %y = of.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// transpose_b reads B with (n, k) strides (32, 1): BLAS's transposed B.
// CHECK-LABEL: ofrt.program "transposed"
// CHECK: ofrt.library "blas.gemm" {{.*}} params [1, 16, 64, 32, 0, 32, 1, 0, 1, 32, 0, 64]
func.func @transposed(%a: tensor<16x32xf32>, %b: tensor<64x32xf32>) -> tensor<16x64xf32> {
  %y = of.matmul %a, %b {transpose_b = true} : (tensor<16x32xf32>, tensor<64x32xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// A batched activation times a weight is one [8*16, 32] x [32, 64] product.
// CHECK-LABEL: ofrt.program "flattened"
// CHECK: ofrt.library "blas.gemm" {{.*}} params [1, 128, 64, 32, 0, 32, 1, 0, 64, 1, 0, 64]
func.func @flattened(%a: tensor<8x16x32xf32>, %b: tensor<32x64xf32>) -> tensor<8x16x64xf32> {
  %y = of.matmul %a, %b : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
  return %y : tensor<8x16x64xf32>
}

// Equal batch dims collapse into one batch of 2*4 products.
// CHECK-LABEL: ofrt.program "batched"
// CHECK: ofrt.library "blas.gemm" {{.*}} params [8, 16, 16, 8, 128, 8, 1, 128, 1, 8, 256, 16]
func.func @batched(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32> {
  %y = of.matmul %q, %k {transpose_b = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  return %y : tensor<2x4x16x16xf32>
}

// Integer products have no BLAS: a generated kernel.
// CHECK-LABEL: ofrt.program "integer"
// CHECK-NOT: blas.gemm
// CHECK: ofrt.launch
func.func @integer(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>) -> tensor<4x4xi32> {
  %y = of.matmul %a, %b : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
  return %y : tensor<4x4xi32>
}

// Two batch dimensions that do not merge, one broadcast by each operand
// (attention's per-head projections): B's batch loop over the 8 rows of x
// (w's stride 0) inside an outer loop over the 4 heads (x's stride 0):
// params [.., outer_batch, a_outer, b_outer, c_outer].
// CHECK-LABEL: ofrt.program "two_batches"
// CHECK-NOT: ofrt.launch
// CHECK: ofrt.library "blas.gemm" [@arg0, @arg1, @{{.*}}] params [8, 64, 16, 32, 2048, 32, 1, 0, 16, 1, 4096, 16, 4, 0, 512, 1024]
func.func @two_batches(%x: tensor<8x1x64x32xf32>, %w: tensor<4x32x16xf32>) -> tensor<8x4x64x16xf32> {
  %y = of.matmul %x, %w : (tensor<8x1x64x32xf32>, tensor<4x32x16xf32>) -> tensor<8x4x64x16xf32>
  return %y : tensor<8x4x64x16xf32>
}

// A product of a slice at an offset (a micro-batch of stacked inputs, as
// accumulate=K makes them) reads a contiguous copy of the slice, so that
// it is a gemm rather than generated loops.
// CHECK-LABEL: ofrt.program "slice_at_offset"
// CHECK: ofrt.copy @arg0 to @[[T:.*]] {bytes = 2048 : i64, source_offset = 2048 : i64}
// CHECK: ofrt.library "blas.gemm" [@[[T]], @arg1, @{{.*}}] params [1, 16, 64, 32, 0, 32, 1, 0, 64, 1, 0, 64]
// CHECK-NOT: ofrt.launch
func.func @slice_at_offset(%x: tensor<2x16x32xf32>, %b: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %s = of.slice %x {starts = array<i64: 1, 0, 0>, limits = array<i64: 2, 16, 32>} : (tensor<2x16x32xf32>) -> tensor<1x16x32xf32>
  %a = of.reshape %s : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
  %y = of.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// A strided slice too (one feature's rows of a [B, F, D] tensor, as DLRM's
// interaction gradient gives them): a copied-out operand (a copy kernel
// gathers the rows) and a gemm, not a generated product over the whole
// [B, F, D] buffer.
// CHECK-LABEL: ofrt.program "strided_slice"
// CHECK: ofrt.launch @cpu_kernels "[[COPY:k[0-9]+]]" [@arg1, @[[T:buf[0-9]+]]]
// CHECK: ofrt.library "blas.gemm" [@arg0, @[[T]], @{{.*}}]
// CHECK-NOT: ofrt.launch
func.func @strided_slice(%m: tensor<16x64xf32>, %g: tensor<16x5x32xf32>) -> tensor<64x32xf32> {
  %s = of.slice %g {starts = array<i64: 0, 3, 0>, limits = array<i64: 16, 4, 32>} : (tensor<16x5x32xf32>) -> tensor<16x1x32xf32>
  %b = of.reshape %s : (tensor<16x1x32xf32>) -> tensor<16x32xf32>
  %y = of.matmul %m, %b {transpose_a = true} : (tensor<16x64xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
