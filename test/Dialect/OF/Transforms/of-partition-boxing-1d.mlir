// Each 1-D boxing transition and the collectives --of-partition lowers it to.
// RUN: of-opt %s --of-partition | FileCheck %s

of.placement @p {device = "cpu", shape = [2]}

// CHECK-LABEL: func.func @p_to_b(
// CHECK: of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @p} : tensor<4x8xf32> into tensor<4x8xf32>
// CHECK-NEXT: return
func.func @p_to_b(%x: tensor<4x8xf32, #of.sbp<@p, [P]>>) -> tensor<4x8xf32, #of.sbp<@p, [B]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [P]>> -> tensor<4x8xf32, #of.sbp<@p, [B]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [B]>>
}

// CHECK-LABEL: func.func @pmax_to_b(
// CHECK: of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @p, reduce = #of<reduce max>}
// CHECK-NEXT: return
func.func @pmax_to_b(%x: tensor<4x8xf32, #of.sbp<@p, [P(max)]>>) -> tensor<4x8xf32, #of.sbp<@p, [B]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [P(max)]>> -> tensor<4x8xf32, #of.sbp<@p, [B]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [B]>>
}

// CHECK-LABEL: func.func @p_to_s1(
// CHECK: of.reduce_scatter %arg0 into %{{.*}} {axis = 0 : i64, dim = 1 : i64, placement = @p} : tensor<4x8xf32> into tensor<4x4xf32>
// CHECK-NEXT: return
func.func @p_to_s1(%x: tensor<4x8xf32, #of.sbp<@p, [P]>>) -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [P]>> -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
}

// CHECK-LABEL: func.func @s0_to_b(
// CHECK: of.all_gather %arg0 into %{{.*}} {axis = 0 : i64, dim = 0 : i64, placement = @p} : tensor<2x8xf32> into tensor<4x8xf32>
// CHECK-NEXT: return
func.func @s0_to_b(%x: tensor<4x8xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x8xf32, #of.sbp<@p, [B]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [S(0)]>> -> tensor<4x8xf32, #of.sbp<@p, [B]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [B]>>
}

// CHECK-LABEL: func.func @s0_to_s1(
// CHECK: of.all_to_all %arg0 into %{{.*}} {axis = 0 : i64, gather_dim = 0 : i64, placement = @p, scatter_dim = 1 : i64} : tensor<2x8xf32> into tensor<4x4xf32>
// CHECK-NEXT: return
func.func @s0_to_s1(%x: tensor<4x8xf32, #of.sbp<@p, [S(0)]>>) -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [S(0)]>> -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
}

// CHECK-LABEL: func.func @b_to_s1(
// CHECK: of.shard_slice %arg0 into %{{.*}} {axis = 0 : i64, dim = 1 : i64, placement = @p} : tensor<4x8xf32> into tensor<4x4xf32>
// CHECK-NEXT: return
func.func @b_to_s1(%x: tensor<4x8xf32, #of.sbp<@p, [B]>>) -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [B]>> -> tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [S(1)]>>
}

// CHECK-LABEL: func.func @b_to_p(
// CHECK: of.to_partial %arg0 into %{{.*}} {axis = 0 : i64, placement = @p} : tensor<4x8xf32> into tensor<4x8xf32>
// CHECK-NEXT: return
func.func @b_to_p(%x: tensor<4x8xf32, #of.sbp<@p, [B]>>) -> tensor<4x8xf32, #of.sbp<@p, [P]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [B]>> -> tensor<4x8xf32, #of.sbp<@p, [P]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [P]>>
}

// CHECK-LABEL: func.func @b_to_pmax(
// CHECK-NOT: = of.
// CHECK: return %arg0
func.func @b_to_pmax(%x: tensor<4x8xf32, #of.sbp<@p, [B]>>) -> tensor<4x8xf32, #of.sbp<@p, [P(max)]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [B]>> -> tensor<4x8xf32, #of.sbp<@p, [P(max)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [P(max)]>>
}

// CHECK-LABEL: func.func @s1_to_p(
// CHECK: %[[G:.*]] = of.all_gather %arg0 into %{{.*}} {axis = 0 : i64, dim = 1 : i64, placement = @p} : tensor<4x4xf32> into tensor<4x8xf32>
// CHECK: of.to_partial %[[G]] into
// CHECK-NEXT: return
func.func @s1_to_p(%x: tensor<4x8xf32, #of.sbp<@p, [S(1)]>>) -> tensor<4x8xf32, #of.sbp<@p, [P]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [S(1)]>> -> tensor<4x8xf32, #of.sbp<@p, [P]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [P]>>
}

// CHECK-LABEL: func.func @p_to_pmax(
// CHECK: of.all_reduce %arg0 into %{{.*}} {axis = 0 : i64, placement = @p}
// CHECK-NEXT: return
func.func @p_to_pmax(%x: tensor<4x8xf32, #of.sbp<@p, [P]>>) -> tensor<4x8xf32, #of.sbp<@p, [P(max)]>> {
  %y = of.boxing %x : tensor<4x8xf32, #of.sbp<@p, [P]>> -> tensor<4x8xf32, #of.sbp<@p, [P(max)]>>
  return %y : tensor<4x8xf32, #of.sbp<@p, [P(max)]>>
}
