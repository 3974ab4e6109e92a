// --of-partition: local shapes, roles for uneven splits, nd boxing plans on a
// 2-D placement, and the ops whose local form differs.
// RUN: of-opt %s --split-input-file --of-partition | FileCheck %s

// 6 rows on 4 ranks: ranks 0, 1 hold 2 rows, ranks 2, 3 hold 1 (balanced),
// so two programs; the gather's result is whole on every rank.
of.placement @p4 {device = "cpu", shape = [4]}
// CHECK-LABEL: func.func @uneven(
// CHECK-SAME: %arg0: tensor<2x8xf32> {of.global = tensor<6x8xf32, #of.sbp<@p4, [S(0)]>>}
// CHECK-SAME: of.entry = "uneven", of.ranks = array<i64: 0, 1>
// CHECK: of.all_gather %arg0 into %{{.*}} : tensor<2x8xf32> into tensor<6x8xf32>
// CHECK-LABEL: func.func @uneven__role1(
// CHECK-SAME: %arg0: tensor<1x8xf32>
// CHECK-SAME: of.entry = "uneven", of.ranks = array<i64: 2, 3>
// CHECK: of.all_gather %arg0 into %{{.*}} : tensor<1x8xf32> into tensor<6x8xf32>
func.func @uneven(%x: tensor<6x8xf32, #of.sbp<@p4, [S(0)]>>) -> tensor<6x8xf32, #of.sbp<@p4, [B]>> {
  %y = of.boxing %x : tensor<6x8xf32, #of.sbp<@p4, [S(0)]>> -> tensor<6x8xf32, #of.sbp<@p4, [B]>>
  return %y : tensor<6x8xf32, #of.sbp<@p4, [B]>>
}

// -----

// On [2, 2], [S(0), S(0)] -> [B, S(0)]: axis 1's shards are cut from axis 0's,
// so it is gathered first and sliced again after axis 0's gather.
of.placement @m {device = "cpu", shape = [2, 2]}
// CHECK-LABEL: func.func @nested(
// CHECK-SAME: of.ranks = array<i64: 0, 1, 2, 3>
// CHECK: %[[A:.*]] = of.all_gather %arg0 into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<2x8xf32> into tensor<4x8xf32>
// CHECK: %[[B:.*]] = of.all_gather %[[A]] into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @m} : tensor<4x8xf32> into tensor<8x8xf32>
// CHECK: of.shard_slice %[[B]] into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<8x8xf32> into tensor<4x8xf32>
func.func @nested(%x: tensor<8x8xf32, #of.sbp<@m, [S(0), S(0)]>>) -> tensor<8x8xf32, #of.sbp<@m, [B, S(0)]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [S(0), S(0)]>> -> tensor<8x8xf32, #of.sbp<@m, [B, S(0)]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [B, S(0)]>>
}

// Only axis 0 changes and axis 1 splits another dimension: one all-reduce
// on the axis-0 sub-groups.
// CHECK-LABEL: func.func @one_axis(
// CHECK: of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @m} : tensor<8x4xf32> into tensor<8x4xf32>
// CHECK-NEXT: return
func.func @one_axis(%x: tensor<8x8xf32, #of.sbp<@m, [P, S(1)]>>) -> tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [P, S(1)]>> -> tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>>
}

// Two axes change: the cheapest sequence of single-axis steps (a search
// over the distributions in between). Here a reduce-scatter on axis 1 then
// an all-gather on axis 0, where planBoxing's fixed order (back to B from
// the last axis to the first, then to the targets) would all-reduce,
// all-gather and slice.
// CHECK-LABEL: func.func @two_axes(
// CHECK: %[[RS:.*]] = of.reduce_scatter %arg0 into %{{.*}} {axis = 1 : i64, dim = 1 : i64, placement = @m} : tensor<4x8xf32> into tensor<4x4xf32>
// CHECK: of.all_gather %[[RS]] into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @m} : tensor<4x4xf32> into tensor<8x4xf32>
// CHECK-NEXT: return
func.func @two_axes(%x: tensor<8x8xf32, #of.sbp<@m, [S(0), P]>>) -> tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [S(0), P]>> -> tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [B, S(1)]>>
}

// [P, P] -> [B, B] is the hierarchical all-reduce: reduce-scatter on the
// inner axis, all-reduce of the shard on the outer one, all-gather on the
// inner one (1.5 tensor sizes per link on 2x2, not 2).
// CHECK-LABEL: func.func @hierarchical_all_reduce(
// CHECK: %[[A:.*]] = of.reduce_scatter %arg0 into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<8x8xf32> into tensor<4x8xf32>
// CHECK: %[[B:.*]] = of.all_reduce %[[A]] into %{{.*}} {axis = 0 : i64, placement = @m} : tensor<4x8xf32> into tensor<4x8xf32>
// CHECK: of.all_gather %[[B]] into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<4x8xf32> into tensor<8x8xf32>
// CHECK-NEXT: return
func.func @hierarchical_all_reduce(%x: tensor<8x8xf32, #of.sbp<@m, [P, P]>>) -> tensor<8x8xf32, #of.sbp<@m, [B, B]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [P, P]>> -> tensor<8x8xf32, #of.sbp<@m, [B, B]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [B, B]>>
}

// [P, S(0)] -> [S(0), B]: gather the inner axis first, so that the outer
// partial sum is reduce-scattered instead of all-reduced whole and sliced.
// CHECK-LABEL: func.func @gather_then_reduce_scatter(
// CHECK: %[[G:.*]] = of.all_gather %arg0 into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<4x8xf32> into tensor<8x8xf32>
// CHECK: of.reduce_scatter %[[G]] into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @m} : tensor<8x8xf32> into tensor<4x8xf32>
// CHECK-NEXT: return
func.func @gather_then_reduce_scatter(%x: tensor<8x8xf32, #of.sbp<@m, [P, S(0)]>>) -> tensor<8x8xf32, #of.sbp<@m, [S(0), B]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [P, S(0)]>> -> tensor<8x8xf32, #of.sbp<@m, [S(0), B]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [S(0), B]>>
}

// Nothing is cheaper than planBoxing's two gathers (ties keep its plan).
// CHECK-LABEL: func.func @nested_gathers(
// CHECK: %[[I:.*]] = of.all_gather %arg0 into %{{.*}} {axis = 1 : i64, dim = 0 : i64, placement = @m} : tensor<2x8xf32> into tensor<4x8xf32>
// CHECK: of.all_gather %[[I]] into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @m} : tensor<4x8xf32> into tensor<8x8xf32>
// CHECK-NEXT: return
func.func @nested_gathers(%x: tensor<8x8xf32, #of.sbp<@m, [S(0), S(0)]>>) -> tensor<8x8xf32, #of.sbp<@m, [B, B]>> {
  %y = of.boxing %x : tensor<8x8xf32, #of.sbp<@m, [S(0), S(0)]>> -> tensor<8x8xf32, #of.sbp<@m, [B, B]>>
  return %y : tensor<8x8xf32, #of.sbp<@m, [B, B]>>
}

// A 2-D tiled matmul: [S(0), B] x [B, S(1)] -> [S(0), S(1)] runs locally.
// CHECK-LABEL: func.func @tiled(
// CHECK-SAME: %arg0: tensor<32x16xf32>
// CHECK-SAME: %arg1: tensor<16x8xf32>
// CHECK: of.matmul %arg0, %arg1 : (tensor<32x16xf32>, tensor<16x8xf32>) -> tensor<32x8xf32>
func.func @tiled(%x: tensor<64x16xf32, #of.sbp<@m, [S(0), B]>>, %w: tensor<16x16xf32, #of.sbp<@m, [B, S(1)]>>)
    -> tensor<64x16xf32, #of.sbp<@m, [S(0), S(1)]>> {
  %y = of.matmul %x, %w : (tensor<64x16xf32, #of.sbp<@m, [S(0), B]>>, tensor<16x16xf32, #of.sbp<@m, [B, S(1)]>>) -> tensor<64x16xf32, #of.sbp<@m, [S(0), S(1)]>>
  return %y : tensor<64x16xf32, #of.sbp<@m, [S(0), S(1)]>>
}

// -----

of.placement @p {device = "cpu", shape = [2]}
// A mean over a split dimension: each rank's sum divided by the global count
// (5 rows), so the partial means add up to the mean.
// CHECK-LABEL: func.func @mean(
// CHECK: %[[S:.*]] = of.reduce_sum %arg0 {axes = array<i64: 0>} : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK: %[[C:.*]] = of.constant dense<2.000000e-01> : tensor<f32>
// CHECK: of.mul %[[S]], %[[C]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @mean__role1(
// CHECK: of.reduce_sum %arg0 {axes = array<i64: 0>} : (tensor<2x4xf32>) -> tensor<4xf32>
func.func @mean(%x: tensor<5x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4xf32, #of.sbp<@p, [P]>> {
  %m = of.reduce_mean %x {axes = array<i64: 0>} : (tensor<5x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4xf32, #of.sbp<@p, [P]>>
  return %m : tensor<4xf32, #of.sbp<@p, [P]>>
}

// A slice that keeps a split dimension whole takes its local extent.
// CHECK-LABEL: func.func @slice(
// CHECK: of.slice %arg0 {limits = array<i64: 4, 3>, starts = array<i64: 0, 1>} : (tensor<4x4xf32>) -> tensor<4x2xf32>
func.func @slice(%x: tensor<8x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<8x2xf32, #of.sbp<@p, [S(0)]>> {
  %s = of.slice %x {starts = array<i64: 0, 1>, limits = array<i64: 8, 3>} : (tensor<8x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<8x2xf32, #of.sbp<@p, [S(0)]>>
  return %s : tensor<8x2xf32, #of.sbp<@p, [S(0)]>>
}

// -----

// Even splits on 1024 ranks: one program for all of them (the rank count
// does not multiply the programs).
of.placement @grid {device = "cpu", shape = [1024]}
// CHECK-LABEL: func.func @big(
// CHECK-SAME: %arg0: tensor<2x8xf32>
// CHECK-SAME: of.ranks = array<i64: 0, 1, 2,
// CHECK-NOT: func.func
func.func @big(%x: tensor<2048x8xf32, #of.sbp<@grid, [S(0)]>>) -> tensor<8xf32, #of.sbp<@grid, [B]>> {
  %s = of.reduce_sum %x {axes = array<i64: 0>} : (tensor<2048x8xf32, #of.sbp<@grid, [S(0)]>>) -> tensor<8xf32, #of.sbp<@grid, [P]>>
  %b = of.boxing %s : tensor<8xf32, #of.sbp<@grid, [P]>> -> tensor<8xf32, #of.sbp<@grid, [B]>>
  return %b : tensor<8xf32, #of.sbp<@grid, [B]>>
}

// -----

// Two-stage softmax over a split axis: local maxima and sums, all-reduced.
of.placement @p {device = "cpu", shape = [2]}
// CHECK-LABEL: func.func @softmax_split_axis(
// CHECK: %[[M:.*]] = of.reduce_max %arg0 {axes = array<i64: 1>, keepdims = true} : (tensor<4x4xf32>) -> tensor<4x1xf32>
// CHECK: %[[GM:.*]] = of.all_reduce %[[M]] into %{{.*}} {axis = 0 : i64, placement = @p, reduce = #of<reduce max>}
// CHECK: %[[X:.*]] = of.sub %arg0, %[[GM]]
// CHECK: %[[E:.*]] = of.exp %[[X]]
// CHECK: %[[S:.*]] = of.reduce_sum %[[E]] {axes = array<i64: 1>, keepdims = true}
// CHECK: %[[GS:.*]] = of.all_reduce %[[S]] into %{{.*}} {axis = 0 : i64, placement = @p}
// CHECK: of.div %[[E]], %[[GS]] : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
func.func @softmax_split_axis(%x: tensor<4x8xf32, #of.sbp<@p, [S(1)]>>) -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>> {
  %y = of.softmax %x : (tensor<4x8xf32, #of.sbp<@p, [S(1)]>>) -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
}

// -----

// Vocabulary-parallel embedding: the rank's row offset comes from a table of
// every grid position's offset, cut to its entry by a shard_slice, so the
// one program serves both ranks; indices outside its rows give zeros (P).
of.placement @p {device = "cpu", shape = [2]}
// CHECK-LABEL: func.func @vocab_parallel(
// CHECK-SAME: %arg1: tensor<5x4xf32>
// CHECK: %[[T:.*]] = of.constant dense<[0, 5]> : tensor<2xi64>
// CHECK: %[[O:.*]] = of.shard_slice %[[T]] into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @p} : tensor<2xi64> into tensor<1xi64>
// CHECK: %[[OFF:.*]] = of.reshape %[[O]] : (tensor<1xi64>) -> tensor<i64>
// CHECK: %[[SH:.*]] = of.sub %arg0, %[[OFF]]
// CHECK: of.embedding %{{.*}}, %arg1 : (tensor<3xi64>, tensor<5x4xf32>) -> tensor<3x4xf32>
// CHECK: of.select
func.func @vocab_parallel(%ids: tensor<3xi64, #of.sbp<@p, [B]>>, %w: tensor<10x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<3x4xf32, #of.sbp<@p, [P]>> {
  %e = of.embedding %ids, %w : (tensor<3xi64, #of.sbp<@p, [B]>>, tensor<10x4xf32, #of.sbp<@p, [S(0)]>>) -> tensor<3x4xf32, #of.sbp<@p, [P]>>
  return %e : tensor<3x4xf32, #of.sbp<@p, [P]>>
}

// The gradient of a vocabulary-parallel table, rows split: each rank shifts
// the indices by its first row and scatters only into its own rows (the op
// drops indices outside them), so no rank holds the whole table's gradient.
// CHECK-LABEL: func.func @vocab_parallel_grad(
// CHECK: %[[T:.*]] = of.constant dense<[0, 5]> : tensor<2xi64>
// CHECK: %[[O:.*]] = of.shard_slice %[[T]]
// CHECK: %[[OFF:.*]] = of.reshape %[[O]] : (tensor<1xi64>) -> tensor<i64>
// CHECK: %[[SH:.*]] = of.sub %arg0, %[[OFF]]
// CHECK: of.embedding_grad %[[SH]], %arg1 : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<5x4xf32>
func.func @vocab_parallel_grad(%ids: tensor<3xi64, #of.sbp<@p, [B]>>, %dy: tensor<3x4xf32, #of.sbp<@p, [B]>>) -> tensor<10x4xf32, #of.sbp<@p, [S(0)]>> {
  %g = of.embedding_grad %ids, %dy : (tensor<3xi64, #of.sbp<@p, [B]>>, tensor<3x4xf32, #of.sbp<@p, [B]>>) -> tensor<10x4xf32, #of.sbp<@p, [S(0)]>>
  return %g : tensor<10x4xf32, #of.sbp<@p, [S(0)]>>
}

// Dropout on a shard hashes the global index: its offsets and the global
// shape go with it.
// CHECK-LABEL: func.func @dropout_rows(
// CHECK: %[[R:.*]] = of.shard_slice
// CHECK: of.dropout %arg0, %arg1 offsets %{{.*}} {global_shape = array<i64: 6, 4>, p = 5.000000e-01 : f64} : (tensor<3x4xf32>, tensor<i64>, tensor<2xi64>) -> tensor<3x4xf32>
func.func @dropout_rows(%x: tensor<6x4xf32, #of.sbp<@p, [S(0)]>>, %seed: tensor<i64, #of.sbp<@p, [B]>>) -> tensor<6x4xf32, #of.sbp<@p, [S(0)]>> {
  %y = of.dropout %x, %seed {p = 0.5 : f64} : (tensor<6x4xf32, #of.sbp<@p, [S(0)]>>, tensor<i64, #of.sbp<@p, [B]>>) -> tensor<6x4xf32, #of.sbp<@p, [S(0)]>>
  return %y : tensor<6x4xf32, #of.sbp<@p, [S(0)]>>
}

// -----

// Sync batch norm: a training batch norm of a batch split over the ranks
// sums each channel on its rows, all-reduces the sums (the mean's, then the
// variance's) and normalises its rows with the whole batch's statistics;
// its gradient all-reduces the bias's and the weight's sums, so both come
// out whole (B) on every rank.
of.placement @p {device = "cpu", shape = [2]}
// CHECK-LABEL: func.func @sync_batch_norm(
// CHECK-SAME: %arg0: tensor<4x3x2x2xf32>
// CHECK: %[[S:.*]] = of.reduce_sum %arg0 {axes = array<i64: 0, 2, 3>, keepdims = true} : (tensor<4x3x2x2xf32>) -> tensor<1x3x1x1xf32>
// CHECK: of.all_reduce %[[S]]
// CHECK: of.reduce_sum {{.*}} {axes = array<i64: 0, 2, 3>, keepdims = true}
// CHECK: of.all_reduce
// CHECK: of.rsqrt
// CHECK-NOT: of.batch_norm
// CHECK-NOT: of.all_gather
// CHECK: return
func.func @sync_batch_norm(%x: tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, %g: tensor<3xf32, #of.sbp<@p, [B]>>, %b: tensor<3xf32, #of.sbp<@p, [B]>>, %rm: tensor<3xf32, #of.sbp<@p, [B]>>, %rv: tensor<3xf32, #of.sbp<@p, [B]>>) -> (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>) {
  %y, %m, %v = of.batch_norm %x, %g, %b, %rm, %rv {training = true} : (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>) -> (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>)
  return %y, %m, %v : tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>
}

// CHECK-LABEL: func.func @sync_batch_norm_grad(
// CHECK: of.reduce_sum %arg0 {axes = array<i64: 0, 2, 3>, keepdims = true}
// CHECK-COUNT-4: of.all_reduce
// CHECK-NOT: of.batch_norm_grad
// CHECK: return {{.*}} : tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>
func.func @sync_batch_norm_grad(%x: tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, %dy: tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, %g: tensor<3xf32, #of.sbp<@p, [B]>>) -> (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>) {
  %dx, %dg, %db = of.batch_norm_grad %x, %dy, %g : (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>) -> (tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>)
  return %dx, %dg, %db : tensor<8x3x2x2xf32, #of.sbp<@p, [S(0)]>>, tensor<3xf32, #of.sbp<@p, [B]>>, tensor<3xf32, #of.sbp<@p, [B]>>
}
