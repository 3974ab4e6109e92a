// REQUIRES: libdevice
// RUN: of-opt --of-pipeline=cpu,stop-after=linalg %s | FileCheck %s --check-prefix=LINALG
// RUN: of-opt --of-pipeline=cpu,stop-after=plan %s | FileCheck %s
// RUN: of-opt --of-pipeline=cpu,stop-after=plan,use-dnn=false %s | FileCheck %s --check-prefix=NODNN
// RUN: of-opt --of-pipeline=cuda,stop-after=plan %s | FileCheck %s --check-prefix=CUDA
// RUN: of-opt --of-pipeline=cuda,stop-after=plan,use-dnn=false %s | FileCheck %s --check-prefix=NODNN

// Poolings and their gradients are dnn library steps (oneDNN on the CPU,
// cuDNN on a GPU) on the unpadded tensors: params [N, C, H, W, KH, KW, OH,
// OW, sh, sw, pad_top, pad_bottom, pad_left, pad_right, mode], mode 0 max,
// 1 average counting padding, 2 average not counting it. The gradient's
// buffers are [x, dy, dx]. On the CPU, max pooling's forward pass stays
// generated: oneDNN's max drops NaN, which PyTorch and the generated kernel
// propagate (cuDNN's is told to propagate it); on a GPU its gradient does. On a GPU, poolings padded
// asymmetrically stay generated (cuDNN's descriptor pads symmetrically);
// use-dnn=false keeps every pooling generated.

// LINALG-LABEL: func.func @max
// LINALG-NOT: dnn.pool2d
// LINALG: linalg.pooling_nchw_max
// CHECK-LABEL: ofrt.program "max"
// CHECK-NOT: dnn.pool2d
// CHECK: ofrt.launch
// CHECK-NOT: dnn.pool2d
// CHECK: ofrt.output
// CUDA-LABEL: ofrt.program "max"
// CUDA-NOT: ofrt.launch
// CUDA: ofrt.library "dnn.pool2d" [@arg0, @{{.*}}] params [2, 3, 9, 9, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 0]
// NODNN-LABEL: ofrt.program "max"
// NODNN-NOT: dnn.pool2d
// NODNN: ofrt.launch
func.func @max(%x: tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32> {
  %y = of.max_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32>
  return %y : tensor<2x3x5x5xf32>
}

// LINALG-LABEL: func.func @avg
// LINALG: of.library_call "dnn.pool2d"(%arg0) into %{{.*}} {params = array<i64: 1, 2, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 1>}
// CHECK-LABEL: ofrt.program "avg"
// CHECK-DAG: ofrt.library "dnn.pool2d" [@arg0, @{{.*}}] params [1, 2, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 1]
// CHECK-DAG: ofrt.library "dnn.pool2d" [@arg0, @{{.*}}] params [1, 2, 6, 6, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 2]
// CUDA-LABEL: ofrt.program "avg"
// CUDA-COUNT-2: ofrt.library "dnn.pool2d"
// NODNN-LABEL: ofrt.program "avg"
// NODNN-NOT: dnn.pool2d
func.func @avg(%x: tensor<1x2x6x6xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>) {
  %a = of.avg_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %b = of.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  return %a, %b : tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>
}

// On the CPU a gradient whose windows tile the input (2x2, stride 2) stays
// generated, a parallel map over dx that measured faster than oneDNN's
// (whose max gradient recomputes the forward pass); an overlapping one is a
// library step.
// CHECK-LABEL: ofrt.program "gradients"
// CHECK-NOT: params [2, 3, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0,
// CHECK: ofrt.library "dnn.pool2d_grad" [@arg0, @arg2, @{{.*}}] params [2, 3, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 0]
// CHECK-NOT: params [2, 3, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0,
// CHECK: ofrt.output
// On a GPU the max gradient stays generated: which element of a tied window
// cuDNN's picks is not documented (the generated kernel picks the first, as
// PyTorch).
// CUDA-LABEL: ofrt.program "gradients"
// CUDA-NOT: params [2, 3, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 0]
// CUDA: ofrt.library "dnn.pool2d_grad" [@arg0, @arg1, @{{.*}}] params [2, 3, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 1]
// CUDA-NOT: params [2, 3, 8, 8, 2, 2, 4, 4, 2, 2, 0, 0, 0, 0, 0]
// CUDA-NOT: params [2, 3, 8, 8, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 0]
// CUDA: ofrt.output
// NODNN-LABEL: ofrt.program "gradients"
// NODNN-NOT: dnn.pool2d
// The generated gradient of tiling windows reads dy (and the choice) at
// affine indices over dx seen as [N, C, OH, KH, OW, KW]; an overlapping
// one gathers.
// LINALG-LABEL: func.func @gradients
// LINALG: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg1, %{{.*}} : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>) outs(%{{.*}} : tensor<2x3x4x2x4x2xf32>)
// LINALG: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x3x4x2x4x2xf32> into tensor<2x3x8x8xf32>
func.func @gradients(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x3x4x4xf32>, %dy2: tensor<2x3x8x8xf32>) -> (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) {
  %a = of.pool2d_grad %x, %dy {kind = "max", kernel_size = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x8x8xf32>
  %b = of.pool2d_grad %x, %dy {kind = "avg", kernel_size = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x8x8xf32>
  %c = of.pool2d_grad %x, %dy2 {kind = "max", kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  return %a, %b, %c : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>
}

// bf16 is a library step on both; f16 only on a GPU (oneDNN 2.6 has no f16
// pooling on the CPU) and f64 on neither.
// CHECK-LABEL: ofrt.program "types"
// CHECK: ofrt.library "dnn.pool2d" [@arg0, @{{.*}}]
// CHECK-NOT: ofrt.library
// CHECK: ofrt.output
// CUDA-LABEL: ofrt.program "types"
// CUDA-COUNT-2: ofrt.library "dnn.pool2d"
// CUDA-NOT: ofrt.library
// CUDA: ofrt.output
func.func @types(%x: tensor<1x1x4x4xbf16>, %h: tensor<1x1x4x4xf16>, %d: tensor<1x1x4x4xf64>) -> (tensor<1x1x2x2xbf16>, tensor<1x1x2x2xf16>, tensor<1x1x2x2xf64>) {
  %a = of.avg_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<1x1x4x4xbf16>) -> tensor<1x1x2x2xbf16>
  %b = of.avg_pool2d %h {kernel_size = array<i64: 2, 2>} : (tensor<1x1x4x4xf16>) -> tensor<1x1x2x2xf16>
  %c = of.avg_pool2d %d {kernel_size = array<i64: 2, 2>} : (tensor<1x1x4x4xf64>) -> tensor<1x1x2x2xf64>
  return %a, %b, %c : tensor<1x1x2x2xbf16>, tensor<1x1x2x2xf16>, tensor<1x1x2x2xf64>
}

// Padded on one side only: a library step on the CPU, generated on a GPU.
// CHECK-LABEL: ofrt.program "asymmetric"
// CHECK: ofrt.library "dnn.pool2d" [@arg0, @{{.*}}] params [1, 1, 4, 4, 2, 2, 4, 4, 1, 1, 0, 1, 0, 1, 1]
// CUDA-LABEL: ofrt.program "asymmetric"
// CUDA-NOT: dnn.pool2d
// CUDA: ofrt.launch @cuda_kernels
// CUDA-NOT: dnn.pool2d
// CUDA: ofrt.output
func.func @asymmetric(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %y = of.avg_pool2d %x {kernel_size = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// A library the pass does not know is an error.
// RUN: not of-opt --of-select-library-calls="pool-library=true dnn-library=mkl" %s 2>&1 | FileCheck %s --check-prefix=BADLIB
// BADLIB: dnn-library must be onednn or cudnn, got 'mkl'
