// --of-auto-parallel: the exact SBP search on closed-form cases (the
// layouts an expert would write), memory budgets, user annotations as
// constraints, explanations and errors.
// RUN: of-opt %s -split-input-file --of-auto-parallel 2>/dev/null | FileCheck %s
// RUN: of-opt %s -split-input-file --of-auto-parallel --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The written layout is a fixed program: searched again, nothing is left
// to choose and the modeled step is the same.
// RUN: of-opt %s -split-input-file --of-auto-parallel --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIRST
// RUN: of-opt %s -split-input-file --of-auto-parallel 2>/dev/null | of-opt -split-input-file --of-auto-parallel --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=FED
// FIRST-COUNT-4: remark: auto-parallel on @mesh [{{[0-9x]+}}]: {{.*}}modeled step {{1.56e-03|1.97e-03|1.05e-03|8.97e-02}} s
// FED-COUNT-4: remark: auto-parallel on @mesh [{{[0-9x]+}}]: exact reductions {{.*}}modeled step {{1.56e-03|1.97e-03|1.05e-03|8.97e-02}} s {{.*}} 0 variables, 0 constraints
// RUN: of-opt %s -split-input-file --of-auto-parallel --of-propagate-sbp --of-insert-boxing --canonicalize 2>/dev/null | FileCheck %s --check-prefix=BOXING
// RUN: of-opt %s -split-input-file --of-auto-parallel=explain=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// RUN: of-opt %s -split-input-file --of-auto-parallel=solver=greedy -o /dev/null 2>&1 | FileCheck %s --check-prefix=GREEDY

// GREEDY: remark: auto-parallel on @mesh [4]: greedy,

// A two-layer MLP whose weights dominate (batch 8): Megatron's layout,
// column- then row-parallel, with one all-reduce (the P result to B).
// CHECK-LABEL: func.func @megatron
// CHECK-SAME: tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
// CHECK-SAME: tensor<1024x4096xf32, #of.sbp<@mesh, [S(1)]>>
// CHECK-SAME: tensor<4096x1024xf32, #of.sbp<@mesh, [S(0)]>>
// REMARK: remark: auto-parallel on @mesh [4]: {{cbc|exact reductions}} (optimal), modeled step
// BOXING-LABEL: func.func @megatron
// BOXING-COUNT-1: of.boxing
// BOXING-NOT: of.boxing
// BOXING: return
// EXPLAIN: remark: w1: [S(1)]; alternatives: [B] +{{.*}}; [S(0)] +{{.*}}; decided by the modeled step time
of.placement @mesh {device = "cpu", shape = [4]}
func.func @megatron(%x: tensor<8x1024xf32> {of.name = "x"},
                    %w1: tensor<1024x4096xf32> {of.name = "w1", of.param},
                    %w2: tensor<4096x1024xf32> {of.name = "w2", of.param})
    -> (tensor<8x1024xf32, #of.sbp<@mesh, [B]>> {of.name = "y"}) {
  %h = of.matmul %x, %w1 : (tensor<8x1024xf32>, tensor<1024x4096xf32>) -> tensor<8x4096xf32>
  %a = of.relu %h : (tensor<8x4096xf32>) -> tensor<8x4096xf32>
  %y = of.matmul %a, %w2 : (tensor<8x4096xf32>, tensor<4096x1024xf32>) -> tensor<8x1024xf32>
  %yb = of.boxing %y : tensor<8x1024xf32> -> tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
  return %yb : tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
}

// -----

// The same MLP with w2 annotated B by the user: a constraint the search
// keeps (and w1 is no longer column-split: its product would need an
// all-gather).
// CHECK-LABEL: func.func @annotated
// CHECK-SAME: tensor<4096x1024xf32, #of.sbp<@mesh, [B]>>
of.placement @mesh {device = "cpu", shape = [4]}
func.func @annotated(%x: tensor<8x1024xf32> {of.name = "x"},
                     %w1: tensor<1024x4096xf32> {of.name = "w1", of.param},
                     %w2: tensor<4096x1024xf32, #of.sbp<@mesh, [B]>> {of.name = "w2", of.param})
    -> (tensor<8x1024xf32, #of.sbp<@mesh, [B]>> {of.name = "y"}) {
  %h = of.matmul %x, %w1 : (tensor<8x1024xf32>, tensor<1024x4096xf32>) -> tensor<8x4096xf32>
  %y = of.matmul %h, %w2 : (tensor<8x4096xf32>, tensor<4096x1024xf32, #of.sbp<@mesh, [B]>>) -> tensor<8x1024xf32>
  %yb = of.boxing %y : tensor<8x1024xf32> -> tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
  return %yb : tensor<8x1024xf32, #of.sbp<@mesh, [B]>>
}

// -----

// A large batch and small weights: data parallelism (the batch split, the
// weights whole).
// CHECK-LABEL: func.func @data
// CHECK-SAME: tensor<8192x64xf32, #of.sbp<@mesh, [S(0)]>>
// CHECK-SAME: tensor<64x64xf32, #of.sbp<@mesh, [B]>>
// CHECK-SAME: tensor<64x64xf32, #of.sbp<@mesh, [B]>>
of.placement @mesh {device = "cpu", shape = [4]}
func.func @data(%x: tensor<8192x64xf32> {of.name = "x"},
                %w0: tensor<64x64xf32> {of.name = "w0", of.param},
                %w1: tensor<64x64xf32> {of.name = "w1", of.param}) -> (tensor<f32> {of.name = "loss"}) {
  %h0 = of.matmul %x, %w0 : (tensor<8192x64xf32>, tensor<64x64xf32>) -> tensor<8192x64xf32>
  %a0 = of.relu %h0 : (tensor<8192x64xf32>) -> tensor<8192x64xf32>
  %h1 = of.matmul %a0, %w1 : (tensor<8192x64xf32>, tensor<64x64xf32>) -> tensor<8192x64xf32>
  %s = of.reduce_sum %h1 {axes = array<i64: 0, 1>} : (tensor<8192x64xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A 2-D mesh and a batch between the two: data parallel on the axis of
// 2, Megatron on the axis of 4.
// CHECK-LABEL: func.func @dp_tp
// CHECK-SAME: tensor<2048x1024xf32, #of.sbp<@mesh, [S(0), B]>>
// CHECK-SAME: tensor<1024x4096xf32, #of.sbp<@mesh, [B, S(1)]>>
// CHECK-SAME: tensor<4096x1024xf32, #of.sbp<@mesh, [B, S(0)]>>
// REMARK: remark: auto-parallel on @mesh [2x4]: {{cbc|exact reductions}} (optimal over the kept nd signatures)
of.placement @mesh {device = "cpu", shape = [2, 4]}
func.func @dp_tp(%x: tensor<2048x1024xf32> {of.name = "x"},
                 %w0: tensor<1024x4096xf32> {of.name = "w0", of.param},
                 %w1: tensor<4096x1024xf32> {of.name = "w1", of.param}) -> (tensor<f32> {of.name = "loss"}) {
  %h0 = of.matmul %x, %w0 : (tensor<2048x1024xf32>, tensor<1024x4096xf32>) -> tensor<2048x4096xf32>
  %a0 = of.relu %h0 : (tensor<2048x4096xf32>) -> tensor<2048x4096xf32>
  %h1 = of.matmul %a0, %w1 : (tensor<2048x4096xf32>, tensor<4096x1024xf32>) -> tensor<2048x1024xf32>
  %s = of.reduce_sum %h1 {axes = array<i64: 0, 1>} : (tensor<2048x1024xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
