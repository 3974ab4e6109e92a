// Each plan step keeps the source location of the op it was compiled from
// (its origin), through the binary plan, so that an error of the step names
// the line of the program that made it. The plan ops carry it as
// loc("ofrt.origin"(SOURCE)); plan text keeps it with --mlir-print-debuginfo.
// RUN: rm -rf %t && mkdir -p %t
// RUN: of-opt %s --of-pipeline=cpu --mlir-print-debuginfo | of-translate --of-plan-to-binary -o %t/o.ofp
// RUN: of-translate --of-binary-to-plan --mlir-print-debuginfo %t/o.ofp -o %t/o.mlir
// RUN: FileCheck %s < %t/o.mlir
// Binary -> text -> binary is still the identity, origins included.
// RUN: of-translate --of-plan-to-binary %t/o.mlir -o %t/again.ofp
// RUN: cmp %t/o.ofp %t/again.ofp
//
// A run that fails names the step and where it comes from.
// RUN: %npython -c "import numpy as np; np.save('%t/ids.npy', np.array([[1, 2, 3], [4, 20, 5]], np.int64)); np.save('%t/table.npy', np.ones((16, 4), np.float32)); np.save('%t/x.npy', np.zeros((2, 3, 4), np.float32))"
// RUN: not of-run %t/o.ofp --input ids=%t/ids.npy --input table=%t/table.npy --input x=%t/x.npy --output-dir %t/out 2>&1 | FileCheck %s --check-prefix=RANGE
//
// Plan text without debug info has no origins: the error names the step.
// RUN: of-opt %s --of-pipeline=cpu | of-translate --of-plan-to-binary -o %t/plain.ofp
// RUN: not of-run %t/plain.ofp --input ids=%t/ids.npy --input table=%t/table.npy --input x=%t/x.npy --output-dir %t/out 2>&1 | FileCheck %s --check-prefix=PLAIN
// PLAIN: of-run: error: index 20 out of range [0, 16) in input 'ids' at element 4 [program 'main' step 0 (library check.index_range)]

// The gather's index check and the gather itself come from the embedding;
// the kernel of the add and the tanh fused from both (the ops of its body
// keep the locations of the ops they came from; the fused op has the
// tanh's). The gather stays a kernel of its own: fused, it lost its index
// check.
// CHECK: ofrt.library "check.index_range" [@arg0] params [0, 16] loc([[EMB:#loc[0-9]+]])
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@arg0, @[[E:buf[0-9]+]], @arg1] {{.*}} loc([[EMB]])
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[E]], @arg2] {{.*}} loc([[TANH:#loc[0-9]+]])
// CHECK-DAG: [[EMB]] = loc("ofrt.origin"([[EMBSRC:#loc[0-9]*]]))
// CHECK-DAG: [[TANH]] = loc("ofrt.origin"([[TANHSRC:#loc[0-9]*]]))
// CHECK-DAG: [[EMBSRC]] = loc("{{.*}}step-origins.mlir:[[# @LINE + 9]]:8")
// CHECK-DAG: [[TANHSRC]] = loc("{{.*}}step-origins.mlir:[[# @LINE + 9]]:8, {{.*}}step-origins.mlir:[[# @LINE + 10]]:8")

func.func @main(%ids: tensor<2x3xi64> {of.name = "ids"},
                %table: tensor<16x4xf32> {of.name = "table"},
                %x: tensor<2x3x4xf32> {of.name = "x"})
    -> (tensor<2x3x4xf32> {of.name = "e"}) {
// RANGE: of-run: error: index 20 out of range [0, 16) in input 'ids' at element 4
// RANGE-SAME: [program 'main' step 0 (library check.index_range, from {{.*}}step-origins.mlir:[[# @LINE + 1]]:8)]
  %e = of.embedding %ids, %table : (tensor<2x3xi64>, tensor<16x4xf32>) -> tensor<2x3x4xf32>
  %s = of.add %e, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %t = of.tanh %s : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %t : tensor<2x3x4xf32>
}
