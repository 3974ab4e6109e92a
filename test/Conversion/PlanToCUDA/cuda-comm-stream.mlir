// On a GPU, collectives that communicate run on a second stream. The
// gradients of a data-parallel MLP: --of-early-boxing puts each gradient's
// boxing right after the gradient, so w2's all-reduce is issued as soon as
// its product is computed, on stream 1, after stream 1 waited for what
// stream 0 did (event 4); stream 0 goes on with the backward pass (k12)
// and waits for stream 1 (event 7, recorded after the last collective,
// covering the earlier ones) only before it uses what the collectives
// wrote. The plan verifier checks that no two steps of different streams
// that the events leave unordered share memory (StreamOrder.h); the plan
// round-trips through .ofp, whose loader checks the same.
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda,format=isa,autodiff=true | FileCheck %s
// RUN: of-opt %s --of-pipeline=cuda,format=isa,autodiff=true | of-translate --of-plan-to-binary -o %t.ofp
// RUN: env OF_CUDA_DRIVER=%t.no-libcuda.so of-run %t.ofp --list --entry loss_grad | FileCheck %s --check-prefix=LIST
// The CPU plan keeps one stream (its executor runs steps in order).
// RUN: sed 's/"cuda"/"cpu"/' %s | of-opt --of-pipeline=cpu,autodiff=true | FileCheck %s --check-prefix=CPU
// The boxing moves at the tensor level:
// RUN: of-opt %s --of-pipeline=cuda,autodiff=true,stop-after=sbp | of-opt --of-early-boxing | FileCheck %s --check-prefix=EARLY

of.placement @dp {device = "cuda", shape = [2]}

func.func @loss(%x: tensor<8x16xf32, #of.sbp<@dp, [S(0)]>> {of.name = "x"},
                %w1: tensor<16x32xf32, #of.sbp<@dp, [B]>> {of.name = "w1", of.param},
                %w2: tensor<32x4xf32, #of.sbp<@dp, [B]>> {of.name = "w2", of.param})
    -> (tensor<f32, #of.sbp<@dp, [B]>> {of.name = "loss"}) {
  %h = of.matmul %x, %w1 : (tensor<8x16xf32, #of.sbp<@dp, [S(0)]>>, tensor<16x32xf32, #of.sbp<@dp, [B]>>) -> tensor<8x32xf32>
  %a = of.tanh %h : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = of.matmul %a, %w2 : (tensor<8x32xf32>, tensor<32x4xf32, #of.sbp<@dp, [B]>>) -> tensor<8x4xf32>
  %s = of.reduce_sum %z {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  %l = of.boxing %s : tensor<f32> -> tensor<f32, #of.sbp<@dp, [B]>>
  return %l : tensor<f32, #of.sbp<@dp, [B]>>
}

// CHECK-LABEL: ofrt.program "loss_grad"
// CHECK-SAME: num_events = 8 : i64, num_streams = 2 : i64
// CHECK: ofrt.library "blas.gemm" [@{{buf[0-9]+}}, @{{buf[0-9]+}}, @[[GW2:buf[0-9]+]]] params [1, 32, 4, 4,
// CHECK-NEXT: ofrt.event_record 4{{$}}
// CHECK-NEXT: ofrt.event_wait 4 {stream = 1 : i64}
// CHECK-NEXT: ofrt.collective all_reduce @[[GW2]] to @[[RW2:buf[0-9]+]] group [0, 1] {{.*}}stream = 1 : i64}
// CHECK-NEXT: ofrt.event_record 5 {stream = 1 : i64}
// CHECK-NEXT: ofrt.launch @cuda_kernels
// CHECK-NEXT: ofrt.event_record 6{{$}}
// CHECK-NEXT: ofrt.event_wait 6 {stream = 1 : i64}
// CHECK-NEXT: ofrt.collective all_gather {{.*}}stream = 1 : i64}
// CHECK-NEXT: ofrt.event_record 7 {stream = 1 : i64}
// CHECK-NEXT: ofrt.event_wait 7{{$}}
// CHECK: ofrt.output "grad_w2" = @[[RW2]]

// LIST: entry loss_grad (rank 0)
// LIST: output grad_w2: f32 [32, 4]

// CPU-LABEL: ofrt.program "loss_grad"
// CPU-NOT: num_streams
// CPU-NOT: event_
// CPU: ofrt.collective all_reduce
// CPU-NOT: event_
// CPU: ofrt.output "grad_w2"

// EARLY-LABEL: func.func @loss_grad
// EARLY: %[[G:[0-9]+]] = of.matmul %{{[0-9]+}}, %{{[0-9]+}} {transpose_a = true} : {{.*}} -> tensor<32x4xf32
// EARLY-NEXT: of.boxing %[[G]]
