// The gradient of a one-row gather (of.embedding_grad of one index):
// canonicalisation removes its one-iteration loop and leaves the index load
// and the bounds test before the kernel's scf.if. --of-build-plan moves the
// load into the kernel (nothing between them writes memory), which then
// reads the index buffer itself (test_indexing.py's one-element gathers
// run it).
// RUN: of-opt --of-pipeline=cpu,stop-after=bufferize %s | FileCheck %s --check-prefix=BUFFERIZED
// BUFFERIZED: memref.load %arg0
// BUFFERIZED: scf.if
// RUN: of-opt --of-pipeline=cpu,stop-after=bufferize %s | of-opt --of-build-plan | FileCheck %s
// CHECK: func.func @[[K:k[0-9]+]](%arg0: memref<1xi64>, %arg1: memref<1x1xf32>, %arg2: memref<5x1xf32>)
// CHECK: memref.load %arg0
// CHECK: scf.if
func.func @main(%i: tensor<1xi64> {of.name = "i"}, %dy: tensor<1x1xf32> {of.name = "dy"}) -> tensor<5x1xf32> {
  %g = of.embedding_grad %i, %dy : (tensor<1xi64>, tensor<1x1xf32>) -> tensor<5x1xf32>
  return %g : tensor<5x1xf32>
}

// A one-row gradient of a wider table (the CPU scatters row by row): the
// one-position loop folds away and the loop over the row's columns, with
// the index load and bounds test inside it, is one kernel; no load is left
// outside to become a kernel of its own (which would write nothing).
// CHECK: func.func @[[K2:k[0-9]+]](%{{.*}}: memref<1x40xf32>
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<1xi64>
// CHECK: scf.if
// CHECK-NOT: func.func @k{{[0-9]+}}(%arg0: memref<1xi64>)
// CHECK: ofrt.program "wide"
// CHECK-NOT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@arg0]
// CHECK: ofrt.launch @cpu_kernels "[[K2]]"
func.func @wide(%i: tensor<1xi64> {of.name = "i"}, %dy: tensor<1x40xf32> {of.name = "dy"}) -> tensor<3x40xf32> {
  %g = of.embedding_grad %i, %dy : (tensor<1xi64>, tensor<1x40xf32>) -> tensor<3x40xf32>
  return %g : tensor<3x40xf32>
}
