// A training step's state updates are written straight into the state's
// input buffers: the update kernel's output is the input, and the output
// step's source is the input itself (the runtime copies nothing). An
// optimizer's parameter kernel reads the new momentum (moments) from the
// state's buffer the momentum kernel has just written. With in-place=false,
// and where a step that can fail (a collective) follows the update, the
// update goes to the arena and is copied out as before.
// RUN: of-opt %s --split-input-file --of-pipeline=cpu,train=sgd,momentum=0.9,zero=true,stop-after=plan | FileCheck %s
// RUN: of-opt %s --split-input-file --of-pipeline=cpu,train=sgd,momentum=0.9,stop-after=plan,in-place=false | FileCheck %s --check-prefix=COPY
// RUN: of-opt %s --split-input-file --of-pipeline=cpu,train=adamw,stop-after=plan | FileCheck %s --check-prefix=ADAM

// CHECK-LABEL: ofrt.program "loss_train_step"
// CHECK: ofrt.buffer @[[W:arg[0-9]+]] input binding "w"
// CHECK: ofrt.buffer @[[M:arg[0-9]+]] input binding "momentum_w"
// CHECK: ofrt.library "blas.gemm"
// CHECK: ofrt.library "blas.gemm" {{.*}}, @[[G:buf[0-9]+]]]
// The momentum kernel writes the momentum, then the parameter kernel
// writes w from it.
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[M]], @[[G]]]
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[W]], @{{arg[0-9]+}}, @[[M]]]
// CHECK-NEXT: ofrt.output "loss"
// CHECK-NEXT: ofrt.output "w" = @[[W]] {updates = "w"}
// CHECK-NEXT: ofrt.output "momentum_w" = @[[M]] {updates = "momentum_w"}

// AdamW: the moments' kernels write the moments in place; the parameter's
// kernel reads the new ones there. The step count's kernel moves past the
// bias corrections' kernels, which read the old count.
// ADAM-LABEL: ofrt.program "loss_train_step"
// ADAM-DAG: ofrt.buffer @[[AW:arg[0-9]+]] input binding "w"
// ADAM-DAG: ofrt.buffer @[[AM:arg[0-9]+]] input binding "adam_m_w"
// ADAM-DAG: ofrt.buffer @[[AV:arg[0-9]+]] input binding "adam_v_w"
// ADAM-DAG: ofrt.buffer @[[AS:arg[0-9]+]] input binding "adam_step"
// ADAM: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[AM]], @{{buf[0-9]+}}]
// ADAM-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[AV]], @{{buf[0-9]+}}]
// ADAM-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[AW]], {{.*}}@[[AM]], {{.*}}@[[AV]], {{.*}}]
// ADAM-NEXT: ofrt.output "loss"
// ADAM-NEXT: ofrt.output "w" = @[[AW]] {updates = "w"}
// ADAM-NEXT: ofrt.output "adam_m_w" = @[[AM]] {updates = "adam_m_w"}
// ADAM-NEXT: ofrt.output "adam_v_w" = @[[AV]] {updates = "adam_v_w"}
// ADAM-NEXT: ofrt.output "adam_step" = @[[AS]] {updates = "adam_step"}

// COPY-LABEL: ofrt.program "loss_train_step"
// COPY: ofrt.output "w" = @buf{{[0-9]+}} {updates = "w"}
// COPY: ofrt.output "momentum_w" = @buf{{[0-9]+}} {updates = "momentum_w"}

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x3xf32> {of.name = "w", of.param}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %t = of.tanh %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ZeRO on 2 ranks: the new momentum shard is followed by the parameter's
// all-gather, which can fail, so it is written to the arena and copied
// when the run has succeeded; the parameter's kernel reads it there.
// CHECK-LABEL: ofrt.program "loss_train_step"
// CHECK: ofrt.buffer @[[M:arg[0-9]+]] input binding "momentum_w"
// CHECK: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[M]], @{{buf[0-9]+}}, @[[NEWM:buf[0-9]+]]]
// CHECK: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@{{buf[0-9]+}}, @{{arg[0-9]+}}, @[[NEWM]]]
// CHECK-NEXT: ofrt.collective all_gather
// CHECK: ofrt.output "momentum_w" = @[[NEWM]] {{.*}}updates = "momentum_w"

of.placement @dp {device = "cpu", shape = [2]}
func.func @loss(%x: tensor<4x8xf32, #of.sbp<@dp, [S(0)]>> {of.name = "x"}, %w: tensor<8x4xf32, #of.sbp<@dp, [B]>> {of.name = "w", of.param}) -> tensor<f32, #of.sbp<@dp, [B]>> {
  %y = of.matmul %x, %w : (tensor<4x8xf32, #of.sbp<@dp, [S(0)]>>, tensor<8x4xf32, #of.sbp<@dp, [B]>>) -> tensor<4x4xf32, #of.sbp<@dp, [S(0)]>>
  %t = of.tanh %y : (tensor<4x4xf32, #of.sbp<@dp, [S(0)]>>) -> tensor<4x4xf32, #of.sbp<@dp, [S(0)]>>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x4xf32, #of.sbp<@dp, [S(0)]>>) -> tensor<f32, #of.sbp<@dp, [P]>>
  %lb = of.boxing %l : tensor<f32, #of.sbp<@dp, [P]>> -> tensor<f32, #of.sbp<@dp, [B]>>
  return %lb : tensor<f32, #of.sbp<@dp, [B]>>
}

// -----

// An embedding table, which gathers read with loads inside their kernels
// (and whose gradient a scatter accumulates), is updated in place too.
// ADAM-LABEL: ofrt.program "emb_train_step"
// ADAM-DAG: ofrt.buffer @[[T:arg[0-9]+]] input binding "table"
// ADAM-DAG: ofrt.buffer @[[H:arg[0-9]+]] input binding "head"
// ADAM: ofrt.output "table" = @[[T]] {updates = "table"}
// ADAM-NEXT: ofrt.output "head" = @[[H]] {updates = "head"}
func.func @emb(%ids: tensor<4xi64> {of.name = "ids"}, %table: tensor<8x3xf32> {of.name = "table", of.param},
               %head: tensor<3x8xf32> {of.name = "head", of.param}) -> tensor<f32> {
  %e = of.embedding %ids, %table : (tensor<4xi64>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %y = of.matmul %e, %head : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  %t = of.tanh %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
