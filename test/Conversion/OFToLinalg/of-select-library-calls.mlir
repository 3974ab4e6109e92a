// --of-select-library-calls on its own: with conv-library an f32
// convolution becomes an of.library_call "dnn.conv2d" with its 18-integer
// geometry, the rest of the program (the relu) stays for the lowering; an
// f64 convolution stays (no library takes it); without the option nothing
// changes. With dnn-library=cudnn, a convolution padded asymmetrically
// stays (cuDNN's descriptors pad symmetrically). With pool-library, an
// average pooling becomes "dnn.pool2d"; a max pooling's forward pass stays
// on oneDNN (its max drops NaN) and goes to cuDNN.
// RUN: of-opt --of-select-library-calls=conv-library=true %s | FileCheck %s --check-prefix=CONV
// RUN: of-opt --of-select-library-calls %s | FileCheck %s --check-prefix=NONE
// RUN: of-opt --of-select-library-calls="conv-library=true dnn-library=cudnn" %s | FileCheck %s --check-prefix=CUDNN
// RUN: of-opt --of-select-library-calls=pool-library=true %s | FileCheck %s --check-prefix=POOL
// RUN: of-opt --of-select-library-calls="pool-library=true dnn-library=cudnn" %s | FileCheck %s --check-prefix=POOLCUDNN
// RUN: not of-opt --of-select-library-calls="dnn-library=mkl" %s 2>&1 | FileCheck %s --check-prefix=BADLIB

// CONV-LABEL: func.func @conv
// CONV: %[[C:.*]] = of.library_call "dnn.conv2d"(%arg0, %arg1) into %{{.*}} {params = array<i64: 1, 2, 6, 6, 4, 3, 3, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1>}
// CONV: of.relu %[[C]]
// NONE-LABEL: func.func @conv
// NONE-NOT: of.library_call
// NONE: of.conv2d
// CUDNN-LABEL: func.func @conv
// CUDNN: of.library_call "dnn.conv2d"
func.func @conv(%x: tensor<1x2x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = of.conv2d %x, %w : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  %r = of.relu %y : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// CONV-LABEL: func.func @f64_stays
// CONV-NOT: of.library_call
// CONV: of.conv2d
func.func @f64_stays(%x: tensor<1x2x6x6xf64>, %w: tensor<4x2x3x3xf64>) -> tensor<1x4x4x4xf64> {
  %y = of.conv2d %x, %w : (tensor<1x2x6x6xf64>, tensor<4x2x3x3xf64>) -> tensor<1x4x4x4xf64>
  return %y : tensor<1x4x4x4xf64>
}

// CONV-LABEL: func.func @asymmetric
// CONV: of.library_call "dnn.conv2d"
// CUDNN-LABEL: func.func @asymmetric
// CUDNN-NOT: of.library_call
// CUDNN: of.conv2d
func.func @asymmetric(%x: tensor<1x2x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %y = of.conv2d %x, %w {padding = array<i64: 1, 0, 1, 0>} : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %y : tensor<1x4x5x5xf32>
}

// POOL-LABEL: func.func @pools
// POOL: of.max_pool2d
// POOL: of.library_call "dnn.pool2d"
// POOL-NOT: of.avg_pool2d
// POOLCUDNN-LABEL: func.func @pools
// POOLCUDNN-NOT: of.max_pool2d
// POOLCUDNN-NOT: of.avg_pool2d
// POOLCUDNN-COUNT-2: of.library_call "dnn.pool2d"
func.func @pools(%x: tensor<1x2x8x8xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %m = of.max_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  %a = of.avg_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  return %m, %a : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// BADLIB: --of-select-library-calls: dnn-library must be onednn or cudnn, got 'mkl'
