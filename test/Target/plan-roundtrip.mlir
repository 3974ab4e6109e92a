// RUN: of-opt --of-pipeline=cpu %s | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// Binary -> text -> binary is the identity, byte for byte.
// RUN: of-translate --of-plan-to-binary %t.mlir -o %t.again.ofp
// RUN: cmp %t.ofp %t.again.ofp
// And the text form is a fixed point.
// RUN: of-translate --of-binary-to-plan %t.again.ofp | diff %t.mlir -

// CHECK: ofrt.executable @cpu_kernels attributes {format = "elf-shared-object", kernels = ["[[K:k[0-9]+]]"], object = dense_resource<kernels_cpu_kernels> : tensor<{{[0-9]+}}xi8>, signatures = {[[K]] = {params = [tensor<4x16xf32>], range = 4 : i64, reads = array<i64: 0>, work = 64 : i64, writes = array<i64: 0>}}
// CHECK: ofrt.program "main" attributes {arena_size = 256 : i64, device = "cpu", ranks = array<i64: 0>}
// CHECK-DAG: ofrt.buffer @arg0 input binding "x" size 128 : tensor<4x8xf32>
// CHECK-DAG: ofrt.buffer @[[W:.*]] constant size 512 value dense<{{.*}}> : tensor<8x16xf32> : tensor<8x16xf32>
// CHECK-DAG: ofrt.buffer @[[M:.*]] constant size 64 value dense<{{\[\[}}true, false, true, true
// CHECK: ofrt.library "blas.gemm" [@arg0, @[[W]], @[[Y:.*]]] params
// CHECK: ofrt.launch @cpu_kernels "[[K]]"
// CHECK: ofrt.output "y" = @[[Y]]
// CHECK: ofrt.output "mask" = @[[M]]
// CHECK: dialect_resources
// CHECK-NEXT: builtin
// CHECK-NEXT: kernels_cpu_kernels: "0x40000000

func.func @main(%x: tensor<4x8xf32> {of.name = "x"})
    -> (tensor<4x16xf32> {of.name = "y"}, tensor<4x16xi1> {of.name = "mask"}) {
  %w = of.constant dense<0.5> : tensor<8x16xf32>
  %m = of.constant dense<[[true, false, true, true, false, false, true, false, true, false, true, true, false, false, true, false],
                          [true, true, true, true, true, true, true, true, false, false, false, false, false, false, false, false],
                          [true, false, true, false, true, false, true, false, true, false, true, false, true, false, true, false],
                          [false, false, false, false, false, false, false, false, true, true, true, true, true, true, true, true]]> : tensor<4x16xi1>
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r, %m : tensor<4x16xf32>, tensor<4x16xi1>
}
