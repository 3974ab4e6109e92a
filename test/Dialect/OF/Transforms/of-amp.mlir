// --of-amp: an f32 matmul (or conv2d) becomes casts around a bf16 one; other ops and
// the parameters stay f32, and the gradient of a parameter comes back f32
// through the cast's gradient.
// RUN: of-opt %s --of-amp | FileCheck %s
// RUN: of-opt %s --of-amp --of-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: of-opt %s --of-amp=dtype=f16 | FileCheck %s --check-prefix=F16
// RUN: not of-opt %s --of-amp=dtype=f8 2>&1 | FileCheck %s --check-prefix=BADTYPE
// RUN: not of-opt %s --of-pipeline=cpu,amp=f32 2>&1 | FileCheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @loss
// CHECK: %[[X:.*]] = of.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[W:.*]] = of.cast %arg1 : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK: %[[P:.*]] = of.matmul %[[X]], %[[W]] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
// CHECK: %[[Y:.*]] = of.cast %[[P]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK: of.tanh %[[Y]] : (tensor<4x3xf32>) -> tensor<4x3xf32>

// GRAD-LABEL: func.func @loss_grad
// GRAD: of.matmul {{.*}} : (tensor<4x8xbf16>, tensor<4x3xbf16>) -> tensor<8x3xbf16>
// GRAD: of.cast {{.*}} : tensor<8x3xbf16> to tensor<8x3xf32>
// GRAD: return {{.*}} : tensor<f32>, tensor<8x3xf32>

// F16-LABEL: func.func @loss
// F16: of.matmul {{.*}} : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
// BADTYPE: error: --of-amp: unknown dtype 'f8' (bf16, f16)
// PIPE: --of-pipeline: amp takes bf16 or f16, not 'f32'

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x3xf32> {of.name = "w", of.param}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %t = of.tanh %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// A convolution too: bf16 operands (the bias included), the result cast
// back; its gradients are bf16 convolution gradients; every one of them
// accumulates in f32 when lowered and rounds once: in generated code
// (use-dnn=false) or in oneDNN, whose bf16 steps the CPU pipeline makes.
// RUN: of-opt %s --of-amp | FileCheck %s --check-prefix=CONV
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,amp=bf16,stop-after=linalg,use-dnn=false | FileCheck %s --check-prefix=CONVLOW
// RUN: of-opt %s --of-pipeline=cpu,train=sgd,amp=bf16,stop-after=linalg | FileCheck %s --check-prefix=CONVDNN
// CONV-LABEL: func.func @conv_loss
// CONV: %[[CX:.*]] = of.cast %arg0 : tensor<2x3x6x6xf32> to tensor<2x3x6x6xbf16>
// CONV: %[[CW:.*]] = of.cast %arg1 : tensor<4x3x3x3xf32> to tensor<4x3x3x3xbf16>
// CONV: %[[CB:.*]] = of.cast %arg2 : tensor<4xf32> to tensor<4xbf16>
// CONV: %[[C:.*]] = of.conv2d %[[CX]], %[[CW]], %[[CB]] {{.*}}-> tensor<2x4x6x6xbf16>
// CONV: of.cast %[[C]] : tensor<2x4x6x6xbf16> to tensor<2x4x6x6xf32>
// CONVLOW-LABEL: func.func @conv_loss_train_step
// CONVLOW: linalg.conv_2d_nchw_fchw {{.*}} ins({{.*}} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>) outs({{.*}} : tensor<2x4x6x6xf32>)
// CONVLOW: arith.truncf {{.*}} : f32 to bf16
// The filter gradient: bf16 operands, an f32 accumulator.
// CONVLOW: linalg.generic {{.*}} ins({{.*}} : tensor<2x3x8x8xbf16>, tensor<2x4x6x6xbf16>) outs({{.*}} : tensor<4x3x3x3xf32>)
// CONVLOW: arith.extf
// CONVLOW: arith.extf
// CONVDNN-LABEL: func.func @conv_loss_train_step
// CONVDNN: of.library_call "dnn.conv2d"({{.*}}) into {{.*}} : (tensor<2x3x6x6xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16>) into tensor<2x4x6x6xbf16>
// CONVDNN: of.library_call "dnn.conv2d_grad_filter"({{.*}}) into {{.*}} : (tensor<2x3x6x6xbf16>, tensor<2x4x6x6xbf16>) into tensor<4x3x3x3xbf16>

func.func @conv_loss(%x: tensor<2x3x6x6xf32> {of.name = "x"}, %w: tensor<4x3x3x3xf32> {of.name = "cw", of.param},
                     %b: tensor<4xf32> {of.name = "cb", of.param}) -> tensor<f32> {
  %c = of.conv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>}
      : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
  %t = of.tanh %c : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1, 2, 3>} : (tensor<2x4x6x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
