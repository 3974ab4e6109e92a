// --of-lower-cpu-kernels on its own, fed the plan --of-build-plan makes:
// each kernel of the CPU executable becomes an LLVM function with the
// packed signature kN(void **args, int64_t begin, int64_t end) around its
// body (kN_impl), and each launch gets the range it splits over threads
// and the work per index; library steps and buffers are untouched. The
// executable declares what each kernel was compiled for: its parameters,
// range and work, and the parameters it writes (relu in place: its one).
// RUN: of-opt --of-pipeline=cpu,stop-after=plan %s | of-opt --of-lower-cpu-kernels | FileCheck %s

// CHECK: ofrt.executable @cpu_kernels attributes {signatures = {[[K:k[0-9]+]] = {params = [tensor<4x16xf32>], range = 4 : i64, reads = array<i64: 0>, work = 64 : i64, writes = array<i64: 0>}}
// CHECK: llvm.func internal @[[K]]_impl(
// CHECK: llvm.func @[[K]](%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-NOT: func.func
// CHECK: ofrt.program "f"
// CHECK: ofrt.library "blas.gemm"
// CHECK-NEXT: ofrt.launch @cpu_kernels "[[K]]" [@{{.*}}] {range = 4 : i64, work = 64 : i64}
func.func @f(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x16xf32> {of.name = "w"}) -> (tensor<4x16xf32> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
