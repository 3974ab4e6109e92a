// REQUIRES: libdevice
// RUN: of-opt --of-pipeline=cpu,stop-after=linalg %s | FileCheck %s --check-prefix=LINALG
// RUN: of-opt --of-pipeline=cpu,stop-after=plan %s | FileCheck %s
// RUN: of-opt --of-pipeline=cpu,stop-after=plan,use-dnn=false %s | FileCheck %s --check-prefix=NODNN
// RUN: of-opt --of-pipeline=cuda,stop-after=plan %s | FileCheck %s --check-prefix=CUDA
// RUN: of-opt --of-pipeline=cuda,stop-after=plan,use-dnn=false %s | FileCheck %s --check-prefix=NODNN

// On the CPU, f32 convolutions and their gradients are oneDNN library steps
// on the unpadded tensors: params [N, C, H, W, F, KH, KW, OH, OW, sh, sw,
// dh, dw, pad_top, pad_bottom, pad_left, pad_right, groups]. The bias is
// the step's third buffer. On a GPU they are the same steps, which the
// CUDA executor runs through cuDNN, except where the padding is not
// symmetric (cuDNN's descriptor pads symmetrically: @asymmetric stays an
// im2col gemm there). use-dnn=false keeps the im2col gemm everywhere.

// LINALG-LABEL: func.func @forward
// LINALG-NOT: tensor.pad
// LINALG: of.library_call "dnn.conv2d"(%arg0, %arg1, %arg2) into %{{.*}} {params = array<i64: 2, 4, 9, 9, 8, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 1, 2>}
// CHECK-LABEL: ofrt.program "forward"
// CHECK-NOT: ofrt.launch
// CHECK: ofrt.library "dnn.conv2d" [@arg0, @arg1, @arg2, @[[Y:.*]]] params [2, 4, 9, 9, 8, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 1, 2]
// CHECK-NEXT: ofrt.output "out0" = @[[Y]]
// CUDA-LABEL: ofrt.program "forward"
// CUDA-NOT: ofrt.launch
// CUDA: ofrt.library "dnn.conv2d" [@arg0, @arg1, @arg2, @{{.*}}] params [2, 4, 9, 9, 8, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1, 1, 2]
// NODNN-LABEL: ofrt.program "forward"
// NODNN-NOT: dnn.conv2d
// NODNN: ofrt.launch
func.func @forward(%x: tensor<2x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x5x5xf32> {
  %y = of.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<2x8x5x5xf32>
  return %y : tensor<2x8x5x5xf32>
}

// CHECK-LABEL: ofrt.program "gradients"
// CHECK-DAG: ofrt.library "dnn.conv2d_grad_input" [@arg0, @arg1, @{{.*}}] params [2, 4, 6, 6, 8, 3, 3, 6, 6, 1, 1, 2, 2, 2, 2, 2, 2, 1]
// CHECK-DAG: ofrt.library "dnn.conv2d_grad_filter" [@arg2, @arg0, @{{.*}}] params [2, 4, 6, 6, 8, 3, 3, 6, 6, 1, 1, 2, 2, 2, 2, 2, 2, 1]
// CUDA-LABEL: ofrt.program "gradients"
// CUDA-DAG: ofrt.library "dnn.conv2d_grad_input" [@arg0, @arg1, @{{.*}}] params [2, 4, 6, 6, 8, 3, 3, 6, 6, 1, 1, 2, 2, 2, 2, 2, 2, 1]
// CUDA-DAG: ofrt.library "dnn.conv2d_grad_filter" [@arg2, @arg0, @{{.*}}] params [2, 4, 6, 6, 8, 3, 3, 6, 6, 1, 1, 2, 2, 2, 2, 2, 2, 1]
// NODNN-LABEL: ofrt.program "gradients"
// NODNN-NOT: dnn.conv2d
func.func @gradients(%dy: tensor<2x8x6x6xf32>, %w: tensor<8x4x3x3xf32>, %x: tensor<2x4x6x6xf32>) -> (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>) {
  %dx = of.conv2d_grad_input %dy, %w {padding = array<i64: 2, 2, 2, 2>, dilation = array<i64: 2, 2>} : (tensor<2x8x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<2x4x6x6xf32>
  %dw = of.conv2d_grad_filter %x, %dy {padding = array<i64: 2, 2, 2, 2>, dilation = array<i64: 2, 2>} : (tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<8x4x3x3xf32>
  return %dx, %dw : tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>
}

// A strided slice of the input is copied into a dense buffer for the step.
// CHECK-LABEL: ofrt.program "sliced"
// CHECK: ofrt.launch
// CHECK: ofrt.library "dnn.conv2d" [@[[DENSE:buf[0-9]+]], @arg1, @{{.*}}]
func.func @sliced(%x: tensor<4x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %s = of.slice %x {starts = array<i64: 0, 0, 0, 0>, limits = array<i64: 4, 4, 8, 8>, strides = array<i64: 2, 1, 1, 1>} : (tensor<4x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %y = of.conv2d %s, %w : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// bf16 too (oneDNN accumulates in f32 and rounds once). Debian's oneDNN 2.6
// has no f16 CPU convolution: an f16 one widens its operands, runs the f32
// library convolution and rounds the result once, the generated form's
// arithmetic (f32 accumulation, one rounding).
// CHECK-LABEL: ofrt.program "bf16"
// CHECK: ofrt.library "dnn.conv2d" [@arg0, @arg1, @{{.*}}] params [1, 2, 5, 5, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1]
func.func @bf16(%x: tensor<1x2x5x5xbf16>, %w: tensor<2x2x3x3xbf16>) -> tensor<1x2x3x3xbf16> {
  %y = of.conv2d %x, %w : (tensor<1x2x5x5xbf16>, tensor<2x2x3x3xbf16>) -> tensor<1x2x3x3xbf16>
  return %y : tensor<1x2x3x3xbf16>
}

// cuDNN has f16 convolutions (f32 accumulation, one rounding): on the GPU
// the step runs on the f16 buffers themselves.
// CUDA-LABEL: ofrt.program "half"
// CUDA-NOT: ofrt.launch
// CUDA: ofrt.library "dnn.conv2d" [@arg0, @arg1, @[[Y16:buf[0-9]+]]] params [1, 2, 5, 5, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1]
// CUDA-NEXT: ofrt.output "out0" = @[[Y16]]
// CHECK-LABEL: ofrt.program "half"
// CHECK: ofrt.buffer @[[X32:buf[0-9]+]] arena {{.*}} : tensor<1x2x5x5xf32>
// CHECK: ofrt.buffer @[[W32:buf[0-9]+]] arena {{.*}} : tensor<2x2x3x3xf32>
// CHECK: ofrt.buffer @[[Y32:buf[0-9]+]] arena {{.*}} : tensor<1x2x3x3xf32>
// CHECK: ofrt.buffer @[[Y:buf[0-9]+]] arena {{.*}} : tensor<1x2x3x3xf16>
// CHECK: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@arg0, @[[X32]]]
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@arg1, @[[W32]]]
// CHECK-NEXT: ofrt.library "dnn.conv2d" [@[[X32]], @[[W32]], @[[Y32]]]
// CHECK-NEXT: ofrt.launch @cpu_kernels "{{k[0-9]+}}" [@[[Y32]], @[[Y]]]
// CHECK-NEXT: ofrt.output "out0" = @[[Y]]
func.func @half(%x: tensor<1x2x5x5xf16>, %w: tensor<2x2x3x3xf16>) -> tensor<1x2x3x3xf16> {
  %y = of.conv2d %x, %w : (tensor<1x2x5x5xf16>, tensor<2x2x3x3xf16>) -> tensor<1x2x3x3xf16>
  return %y : tensor<1x2x3x3xf16>
}

// Padded on one side only: a library step on the CPU, generated on a GPU.
// CHECK-LABEL: ofrt.program "asymmetric"
// CHECK: ofrt.library "dnn.conv2d" [@arg0, @arg1, @{{.*}}] params [1, 2, 4, 4, 2, 2, 2, 4, 4, 1, 1, 1, 1, 0, 1, 0, 1, 1]
// CUDA-LABEL: ofrt.program "asymmetric"
// CUDA-NOT: dnn.conv2d
// CUDA: ofrt.launch @cuda_kernels
// CUDA-NOT: dnn.conv2d
// CUDA: ofrt.output
func.func @asymmetric(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  %y = of.conv2d %x, %w {padding = array<i64: 0, 1, 0, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
