// --of-build-plan on its own, fed the bufferized program the CPU pipeline
// leaves: arguments become input buffers bound by their of.name, the
// product a blas.gemm library step (or, with use-blas=false, a generated
// kernel), the relu a kernel that writes in place, results named outputs;
// the arena holds the one intermediate.
// RUN: of-opt --of-pipeline=cpu,stop-after=bufferize %s | of-opt --of-build-plan | FileCheck %s
// RUN: of-opt --of-pipeline=cpu,stop-after=bufferize %s | of-opt --of-build-plan=use-blas=false | FileCheck %s --check-prefix=NOBLAS

// CHECK: ofrt.executable @cpu_kernels attributes {target = "{{.*}}"}
// CHECK: func.func @[[RELU:k[0-9]+]](%arg0: memref<4x16xf32>)
// CHECK: arith.maximumf
// CHECK: ofrt.program "f" attributes {arena_size = 256 : i64, device = "cpu", ranks = array<i64: 0>}
// CHECK-NEXT: ofrt.buffer @[[X:.*]] input binding "x" size 128 : tensor<4x8xf32>
// CHECK-NEXT: ofrt.buffer @[[W:.*]] input binding "w" size 512 : tensor<8x16xf32>
// CHECK-NEXT: ofrt.buffer @[[Y:.*]] arena offset 0 size 256 : tensor<4x16xf32>
// CHECK-NEXT: ofrt.library "blas.gemm" [@[[X]], @[[W]], @[[Y]]]
// CHECK-NEXT: ofrt.launch @cpu_kernels "[[RELU]]" [@[[Y]]]
// CHECK-NEXT: ofrt.output "y" = @[[Y]]

// NOBLAS-NOT: blas.gemm
// NOBLAS: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@{{.*}}, @{{.*}}, @{{.*}}]
// NOBLAS-NOT: blas.gemm
func.func @f(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x16xf32> {of.name = "w"}) -> (tensor<4x16xf32> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
