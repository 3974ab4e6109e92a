// A plan runs on one kind of device: a placement of another kind is an
// error, not a stage that silently runs on the plan's devices.
// RUN: of-opt %s --of-pipeline=cpu -verify-diagnostics

of.placement @s0 {device = "cpu", shape = [1], ranks = [0]}
// expected-error@+1 {{placement @s1 is on 'cuda' devices, but this plan is built for 'cpu' (--of-pipeline=cpu); a plan runs on one kind of device}}
of.placement @s1 {device = "cuda", shape = [1], ranks = [1]}
func.func @main(%x: tensor<4xf32, #of.sbp<@s0, [B]>>) -> tensor<4xf32, #of.sbp<@s1, [B]>> {
  %y = of.boxing %x : tensor<4xf32, #of.sbp<@s0, [B]>> -> tensor<4xf32, #of.sbp<@s1, [B]>>
  return %y : tensor<4xf32, #of.sbp<@s1, [B]>>
}
