// --of-propagate-sbp: distributions from annotations, cheapest signature per op.
// RUN: of-opt %s --of-propagate-sbp | FileCheck %s
// RUN: of-opt %s --of-propagate-sbp | of-opt --of-propagate-sbp | FileCheck %s --check-prefix=STABLE

of.placement @p {device = "cpu", shape = [2]}
of.placement @m {device = "cpu", shape = [2, 2]}

// Data parallel: unannotated weights are broadcast, the batch stays split.
// CHECK-LABEL: func.func @data_parallel(
// CHECK-SAME: %arg1: tensor<16x32xf32, #of.sbp<@p, [B]>>
// CHECK-SAME: -> tensor<8x32xf32, #of.sbp<@p, [S(0)]>>
// CHECK: of.matmul {{.*}}of.operand_sbp = [#of.sbp<@p, [S(0)]>, #of.sbp<@p, [B]>], of.result_sbp = [#of.sbp<@p, [S(0)]>]
// CHECK: of.add {{.*}} -> tensor<8x32xf32, #of.sbp<@p, [S(0)]>>
// CHECK: of.relu {{.*}} -> tensor<8x32xf32, #of.sbp<@p, [S(0)]>>
// STABLE-LABEL: func.func @data_parallel(
// STABLE-SAME: -> tensor<8x32xf32, #of.sbp<@p, [S(0)]>>
func.func @data_parallel(%x: tensor<8x16xf32, #of.sbp<@p, [S(0)]>>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %h = of.matmul %x, %w : (tensor<8x16xf32, #of.sbp<@p, [S(0)]>>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = of.add %h, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = of.relu %a : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// Megatron: column-parallel then row-parallel gives P, boxed to B at the end.
// CHECK-LABEL: func.func @megatron(
// CHECK: of.matmul {{.*}} -> tensor<8x64xf32, #of.sbp<@p, [S(1)]>>
// CHECK: of.gelu {{.*}} -> tensor<8x64xf32, #of.sbp<@p, [S(1)]>>
// CHECK: of.matmul {{.*}} -> tensor<8x16xf32, #of.sbp<@p, [P]>>
// CHECK: of.boxing %{{.*}} : tensor<8x16xf32, #of.sbp<@p, [P]>> -> tensor<8x16xf32, #of.sbp<@p, [B]>>
func.func @megatron(%x: tensor<8x16xf32, #of.sbp<@p, [B]>>, %w1: tensor<16x64xf32, #of.sbp<@p, [S(1)]>>, %w2: tensor<64x16xf32, #of.sbp<@p, [S(0)]>>) -> tensor<8x16xf32, #of.sbp<@p, [B]>> {
  %h = of.matmul %x, %w1 : (tensor<8x16xf32, #of.sbp<@p, [B]>>, tensor<16x64xf32, #of.sbp<@p, [S(1)]>>) -> tensor<8x64xf32>
  %g = of.gelu %h : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = of.matmul %g, %w2 : (tensor<8x64xf32>, tensor<64x16xf32, #of.sbp<@p, [S(0)]>>) -> tensor<8x16xf32>
  %o = of.boxing %y : tensor<8x16xf32> -> tensor<8x16xf32, #of.sbp<@p, [B]>>
  return %o : tensor<8x16xf32, #of.sbp<@p, [B]>>
}

// 2-D: the product rule tiles the matmul; softmax cannot split its axis, so
// axis 1 re-splits the rows (an all-to-all is cheaper than a gather).
// CHECK-LABEL: func.func @two_d(
// CHECK: of.matmul {{.*}} -> tensor<8x32xf32, #of.sbp<@m, [S(0), S(1)]>>
// CHECK: of.softmax {{.*}}of.operand_sbp = [#of.sbp<@m, [S(0), S(0)]>]{{.*}} -> tensor<8x32xf32, #of.sbp<@m, [S(0), S(0)]>>
func.func @two_d(%x: tensor<8x16xf32, #of.sbp<@m, [S(0), B]>>, %w: tensor<16x32xf32, #of.sbp<@m, [B, S(1)]>>) -> tensor<8x32xf32> {
  %h = of.matmul %x, %w : (tensor<8x16xf32, #of.sbp<@m, [S(0), B]>>, tensor<16x32xf32, #of.sbp<@m, [B, S(1)]>>) -> tensor<8x32xf32>
  %s = of.softmax %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}

// A sum over the split dimension is partial.
// CHECK-LABEL: func.func @sum_rows(
// CHECK-SAME: -> tensor<16xf32, #of.sbp<@p, [P]>>
func.func @sum_rows(%x: tensor<8x16xf32, #of.sbp<@p, [S(0)]>>) -> tensor<16xf32> {
  %s = of.reduce_sum %x {axes = array<i64: 0>} : (tensor<8x16xf32, #of.sbp<@p, [S(0)]>>) -> tensor<16xf32>
  return %s : tensor<16xf32>
}
