// --of-autodiff: the gradient function's signature, the backward ops of a
// few VJPs, summing over several uses, activity, and gradients boxed to
// their parameter's distribution.
// RUN: of-opt %s --split-input-file --of-autodiff | FileCheck %s

// The primal stays; @loss_grad returns the loss, then the gradient of each
// parameter in argument order, named after it. Only w is a parameter, so x
// gets no gradient and the backward of tanh feeds one matmul: x^T dY.
// CHECK-LABEL: func.func @loss(
// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x2xf32> {of.name = "w", of.param}
// CHECK-SAME: -> (tensor<f32>, tensor<8x2xf32> {of.name = "grad_w"})
// CHECK: %[[Y:.*]] = of.matmul %[[X]], %[[W]]
// CHECK: %[[T:.*]] = of.tanh %[[Y]]
// CHECK: %[[L:.*]] = of.reduce_sum %[[T]]
// CHECK: %[[ONE:.*]] = of.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SQ:.*]] = of.mul %[[T]], %[[T]]
// CHECK: %[[DTANH:.*]] = of.sub %{{.*}}, %[[SQ]]
// CHECK: %[[DT:.*]] = of.mul %{{.*}}, %[[DTANH]]
// CHECK: %[[DW:.*]] = of.matmul %[[X]], %[[DT]] {transpose_a = true}
// CHECK-NOT: of.matmul
// CHECK: return %[[L]], %[[DW]]
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {of.param, of.name = "w"}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %t = of.tanh %y : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both gradients; the exp of the
// non-parameter c is not differentiated; a parameter the loss does not
// depend on gets zeros; other results of the primal (outputs beside the
// loss) pass through after the gradients.
// CHECK-LABEL: func.func @twice_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {of.name = "grad_arg0"}, tensor<2xf32> {of.name = "grad_arg1"}, tensor<3xf32>)
// CHECK: %[[E:.*]] = of.exp %arg2
// CHECK: %[[D1:.*]] = of.mul %{{.*}}, %arg0
// CHECK: %[[D2:.*]] = of.mul %{{.*}}, %arg0
// CHECK: %[[SUM:.*]] = of.add %[[D1]], %[[D2]]
// CHECK-NOT: of.exp
// CHECK: %[[Z:.*]] = of.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[Z]], %[[E]] : tensor<f32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>
func.func @twice(%a: tensor<3xf32> {of.param}, %u: tensor<2xf32> {of.param},
                 %c: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %sq = of.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %e = of.exp %c : (tensor<3xf32>) -> tensor<3xf32>
  %p = of.mul %sq, %e : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = of.reduce_sum %p {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  return %l, %e : tensor<f32>, tensor<3xf32>
}

// -----

// Data parallel: the gradient, computed without a distribution, is boxed
// to the parameter's B (after propagation: P -> B, an all-reduce).
of.placement @mesh {device = "cpu", shape = [2]}
// CHECK-LABEL: func.func @dp_grad(
// CHECK: %[[DW:.*]] = of.matmul %arg0, %{{.*}} {transpose_a = true} : (tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[B:.*]] = of.boxing %[[DW]] : tensor<4x3xf32> -> tensor<4x3xf32, #of.sbp<@mesh, [B]>>
// CHECK: return %{{.*}}, %[[B]]
func.func @dp(%x: tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>,
              %w: tensor<4x3xf32, #of.sbp<@mesh, [B]>> {of.param})
    -> tensor<f32, #of.sbp<@mesh, [B]>> {
  %y = of.matmul %x, %w : (tensor<8x4xf32, #of.sbp<@mesh, [S(0)]>>, tensor<4x3xf32, #of.sbp<@mesh, [B]>>) -> tensor<8x3xf32>
  %s = of.reduce_mean %y {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  %l = of.boxing %s : tensor<f32> -> tensor<f32, #of.sbp<@mesh, [B]>>
  return %l : tensor<f32, #of.sbp<@mesh, [B]>>
}

// -----

// d sin(a) = cos(a) dy and d cos(b) = -sin(b) dy, each from the op's input.
// CHECK-LABEL: func.func @trig_grad(
// CHECK-SAME: %[[A:[^:]*]]: tensor<3xf32> {of.param}, %[[B:[^:]*]]: tensor<3xf32> {of.param}
// CHECK-DAG: %[[CA:.*]] = of.cos %[[A]]
// CHECK-DAG: %[[DA:.*]] = of.mul %{{.*}}, %[[CA]]
// CHECK-DAG: %[[SB:.*]] = of.sin %[[B]]
// CHECK-DAG: %[[NSB:.*]] = of.neg %[[SB]]
// CHECK-DAG: %[[DB:.*]] = of.mul %{{.*}}, %[[NSB]]
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @trig(%a: tensor<3xf32> {of.param}, %b: tensor<3xf32> {of.param}) -> tensor<f32> {
  %s = of.sin %a : (tensor<3xf32>) -> tensor<3xf32>
  %c = of.cos %b : (tensor<3xf32>) -> tensor<3xf32>
  %p = of.add %s, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = of.reduce_sum %p {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A scatter-add (of.embedding_grad into a table) is differentiable: the
// added rows' gradient gathers the result's gradient at their indices, the
// table's is the result's gradient itself; the indices get none.
// CHECK-LABEL: func.func @scatter_add_grad(
// CHECK-SAME: %[[IDS:.*]]: tensor<6xi64>, %[[ROWS:.*]]: tensor<6x4xf32> {of.name = "rows", of.param}, %[[T:.*]]: tensor<10x4xf32> {of.name = "table", of.param}
// CHECK: %[[S:.*]] = of.embedding_grad %[[IDS]], %[[ROWS]] into %[[T]]
// CHECK: %[[G:.*]] = of.add
// CHECK: %[[DROWS:.*]] = of.embedding %[[IDS]], %[[G]] : (tensor<6xi64>, tensor<10x4xf32>) -> tensor<6x4xf32>
// CHECK: return %{{.*}}, %[[DROWS]], %[[G]]
func.func @scatter_add(%ids: tensor<6xi64>, %rows: tensor<6x4xf32> {of.param, of.name = "rows"},
                       %table: tensor<10x4xf32> {of.param, of.name = "table"}) -> tensor<f32> {
  %s = of.embedding_grad %ids, %rows into %table : (tensor<6xi64>, tensor<6x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %sq = of.mul %s, %s : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  %l = of.reduce_sum %sq {axes = array<i64: 0, 1>} : (tensor<10x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
