// Reductions of 8- and 16-bit values over long rows on a GPU. A block per
// output combines its threads with gpu.all_reduce, whose shuffles
// nvvm.shfl.sync takes only as i32 or f32 (an i8 sum or an f16 max failed
// to compile); such rows take a warp per row instead (the subgroup
// lowering packs narrow values into 32 bits), and narrow reductions over
// an outer axis a thread per output. The f16 sum widens to f32 first and
// keeps its block.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s

// CHECK-LABEL: ofrt.executable @cuda_kernels
// The i8 sum and the f16 max: 4 rows, a warp each.
// CHECK-SAME: k1 = [{args = array<i64: 0, 1>, block = array<i64: 128, 1, 1>, function = "k1_kernel", grid = array<i64: 1, 1, 1>
// CHECK-SAME: k3 = [{args = array<i64: 0, 1>, block = array<i64: 128, 1, 1>, function = "k3_kernel", grid = array<i64: 1, 1, 1>
// The f16 max over the outer axis: a thread per output.
// CHECK-SAME: k4 = [{args = array<i64: 0, 1>, block = array<i64: 4, 1, 1>, function = "k4_kernel", grid = array<i64: 1, 1, 1>
// The f16 sum (accumulated in f32): a block per output.
// CHECK-SAME: k{{[0-9]+}} = [{args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "k{{[0-9]+}}_kernel", grid = array<i64: 4, 1, 1>
// CHECK: shfl.sync.bfly.b32
func.func @r(%x: tensor<4x512xi8>, %h: tensor<4x512xf16>, %c: tensor<512x4xf16>) -> (tensor<4xi8>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %y = of.reduce_sum %x {axes = array<i64: 1>} : (tensor<4x512xi8>) -> tensor<4xi8>
  %m = of.reduce_max %h {axes = array<i64: 1>} : (tensor<4x512xf16>) -> tensor<4xf16>
  %n = of.reduce_max %c {axes = array<i64: 0>} : (tensor<512x4xf16>) -> tensor<4xf16>
  %s = of.reduce_sum %h {axes = array<i64: 1>} : (tensor<4x512xf16>) -> tensor<4xf16>
  return %y, %m, %n, %s : tensor<4xi8>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}
