// SGD's update of an embedding table touches only the rows the batch names:
// canonicalization writes w - lr * embedding_grad(ids, dy) as
// embedding_grad(ids, -lr * dy) into w, each rank scatters into its own rows
// of the row-split table, and --of-build-plan drops the copy of the table
// that bufferization made (w is updated in its input storage): no buffer
// of the table's size is left in the arena. With momentum the gradient is
// dense, as in PyTorch (an arena buffer of the rank's rows); with
// in-place=false the update goes to the arena and is copied out.
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,stop-after=plan | FileCheck %s
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,momentum=0.9,stop-after=plan | FileCheck %s --check-prefix=DENSE
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,stop-after=plan,in-place=false | FileCheck %s --check-prefix=COPY

of.placement @p {device = "cpu", shape = [2]}

// CHECK-LABEL: ofrt.program "f_train_step"
// CHECK-NOT: arena offset {{[0-9]+}} size 32000 : tensor<500x16xf32>
// CHECK: ofrt.output "w" = @arg1 {{.*}} updates = "w"
// DENSE-LABEL: ofrt.program "f_train_step"
// DENSE: arena offset {{[0-9]+}} size 32000 : tensor<500x16xf32>
// DENSE: ofrt.output "w" = @arg1
// COPY-LABEL: ofrt.program "f_train_step"
// COPY: ofrt.buffer @[[NEW:buf[0-9]+]] arena offset {{[0-9]+}} size 32000 : tensor<500x16xf32>
// COPY: ofrt.output "w" = @[[NEW]]
func.func @f(%ids: tensor<8xi64, #of.sbp<@p, [B]>> {of.name = "ids"}, %w: tensor<1000x16xf32, #of.sbp<@p, [S(0)]>> {of.name = "w", of.param}) -> (tensor<f32, #of.sbp<@p, [B]>> {of.name = "loss"}) {
  %e = of.embedding %ids, %w : (tensor<8xi64, #of.sbp<@p, [B]>>, tensor<1000x16xf32, #of.sbp<@p, [S(0)]>>) -> tensor<8x16xf32>
  %sq = of.mul %e, %e : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %l = of.reduce_sum %sq {axes = array<i64: 0, 1>} : (tensor<8x16xf32>) -> tensor<f32>
  %b = of.boxing %l : tensor<f32> -> tensor<f32, #of.sbp<@p, [B]>>
  return %b : tensor<f32, #of.sbp<@p, [B]>>
}
