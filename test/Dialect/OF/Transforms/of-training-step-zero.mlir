// ZeRO and gradient accumulation in the training step.
//
// zero=true splits the AdamW state over the data-parallel axis, where the
// weight is B. SBP then reduce-scatters the weight gradient (P) onto the
// state's shards, updates shard-wise and all-gathers only the new weight
// (ZeRO stage 2's communication); without ZeRO the state is replicated and
// is gathered back as well (three all-gathers).
// RUN: of-opt %s --of-pipeline=cpu,train=adamw,zero=true,stop-after=partition | FileCheck %s --check-prefix=ZERO
// RUN: of-opt %s --of-pipeline=cpu,train=adamw,stop-after=partition | FileCheck %s --check-prefix=REPLICATED
// RUN: of-opt %s --of-autodiff --of-training-step="optimizer=sgd accumulate=2" | FileCheck %s --check-prefix=ACCUMULATE

// ZERO-LABEL: func.func @loss_train_step
// ZERO-SAME: %{{.*}}: tensor<128x256xf32> {of.global = tensor<256x256xf32, #of.sbp<@dp, [S(0)]>>, of.name = "adam_m_w"}
// ZERO-SAME: %{{.*}}: tensor<128x256xf32> {of.global = tensor<256x256xf32, #of.sbp<@dp, [S(0)]>>, of.name = "adam_v_w"}
// ZERO-NOT: of.all_reduce {{.*}} tensor<256x256xf32>
// ZERO: of.reduce_scatter {{.*}} : tensor<256x256xf32> into tensor<128x256xf32>
// ZERO-NOT: of.reduce_scatter
// ZERO: of.all_gather {{.*}} : tensor<128x256xf32> into tensor<256x256xf32>
// ZERO-NOT: of.all_gather
// ZERO: return

// REPLICATED-LABEL: func.func @loss_train_step
// REPLICATED-SAME: %{{.*}}: tensor<256x256xf32> {of.global = tensor<256x256xf32, #of.sbp<@dp, [B]>>, of.name = "adam_m_w"}
// REPLICATED-COUNT-3: of.all_gather {{.*}} : tensor<128x256xf32> into tensor<256x256xf32>
// REPLICATED-NOT: of.all_gather
// REPLICATED: return

// Accumulation over 2 micro-batches: x takes them stacked (its split moves
// to dimension 1); each is sliced, reshaped, boxed to x's distribution and
// differentiated; losses and gradients are averaged.
// ACCUMULATE-LABEL: func.func @loss_train_step
// ACCUMULATE-SAME: (%[[X:.*]]: tensor<2x1024x256xf32, #of.sbp<@dp, [S(1)]>> {of.name = "x"}
// ACCUMULATE: of.slice %[[X]] {limits = array<i64: 1, 1024, 256>, starts = array<i64: 0, 0, 0>}
// ACCUMULATE: call @loss_grad
// ACCUMULATE: of.slice %[[X]] {limits = array<i64: 2, 1024, 256>, starts = array<i64: 1, 0, 0>}
// ACCUMULATE: call @loss_grad
// ACCUMULATE: of.constant dense<5.000000e-01>
// ACCUMULATE: return

of.placement @dp {device = "cpu", shape = [2]}

func.func @loss(%x: tensor<1024x256xf32, #of.sbp<@dp, [S(0)]>> {of.name = "x"},
                %w: tensor<256x256xf32, #of.sbp<@dp, [B]>> {of.name = "w", of.param})
    -> (tensor<f32, #of.sbp<@dp, [B]>> {of.name = "loss"}) {
  %y = of.matmul %x, %w : (tensor<1024x256xf32, #of.sbp<@dp, [S(0)]>>, tensor<256x256xf32, #of.sbp<@dp, [B]>>) -> tensor<1024x256xf32>
  %t = of.tanh %y : (tensor<1024x256xf32>) -> tensor<1024x256xf32>
  %s = of.reduce_mean %t {axes = array<i64: 0, 1>} : (tensor<1024x256xf32>) -> tensor<f32>
  %l = of.boxing %s : tensor<f32> -> tensor<f32, #of.sbp<@dp, [B]>>
  return %l : tensor<f32, #of.sbp<@dp, [B]>>
}
