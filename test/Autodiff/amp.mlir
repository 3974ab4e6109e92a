// --of-amp: an f32 matmul becomes casts around a bf16 matmul; other ops and
// the parameters stay f32, and the gradient of a parameter comes back f32
// through the cast's gradient.
// RUN: of-opt %s --of-amp | FileCheck %s
// RUN: of-opt %s --of-amp --of-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not of-opt %s --of-amp=dtype=f16 2>&1 | FileCheck %s --check-prefix=F16
// RUN: not of-opt %s --of-pipeline=cpu,amp=f16 2>&1 | FileCheck %s --check-prefix=PIPE

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

// F16: error: --of-amp: dtype f16 needs dynamic loss scaling, which is not implemented yet; use dtype=bf16
// PIPE: --of-pipeline: amp takes bf16, not 'f16'

func.func @loss(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x3xf32> {of.name = "w", of.param}) -> tensor<f32> {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %t = of.tanh %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = of.reduce_sum %t {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
