// RUN: of-opt --of-pipeline=cuda,stop-after=linalg %s | FileCheck %s --check-prefix=CUDA
// RUN: of-opt --of-pipeline=cpu,stop-after=linalg %s | FileCheck %s --check-prefix=CPU
// RUN: of-opt --of-pipeline=cuda,stop-after=linalg,use-dnn=false %s | FileCheck %s --check-prefix=CPU
// A plan whose batch norm's statistics nothing reads: each init its own
// buffer, though the tensor.empty inits are one after CSE.
// RUN: of-opt --of-select-library-calls=norm-library=true --convert-of-to-linalg --canonicalize --cse \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --canonicalize --cse --of-build-plan \
// RUN:   --of-lower-cpu-kernels %s \
// RUN:   | tee %t.plan | FileCheck %s --check-prefix=PLAN
// The plan loader refuses a step that uses a buffer twice:
// RUN: of-translate --of-plan-to-binary %t.plan -o %t.ofp

// Training batch norms and their gradients are cuDNN steps on a GPU, on x
// collapsed to [N, C, S]: params [N, C, S, the bits of epsilon as an f64]
// (4532020583610935537 is 1e-5, 4562254508917369340 is 1e-3). The forward
// step's buffers are [x, scale, shift, y, mean, var] (the batch's mean and
// biased variance); the running statistics' update stays generated. The
// gradient's are [x, dy, scale, mean, var, dx, dscale, dshift], its mean
// and var generated reductions of x. On the CPU (oneDNN's plain-layout
// batch norm is slower than the generated kernels, bench/cpu_bench.py
// --only norm) and with use-dnn=false both stay generated.

// CUDA-LABEL: func.func @train
// CUDA: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<4x3x5x5xf32> into tensor<4x3x25xf32>
// CUDA: %[[N:.*]]:3 = of.library_call "dnn.batch_norm"(%[[X]], %arg1, %arg2) into %{{.*}}, %{{.*}}, %{{.*}} {params = array<i64: 4, 3, 25, 4532020583610935537>}
// CUDA: tensor.expand_shape %[[N]]#0 {{\[}}[0], [1], [2, 3]]
// CUDA: linalg.generic {{.*}} ins(%arg3, %[[N]]#1 :
// CUDA: linalg.generic {{.*}} ins(%arg4, %[[N]]#2 :
// CPU-LABEL: func.func @train
// CPU-NOT: library_call
// CPU: return
func.func @train(%x: tensor<4x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y:3 = of.batch_norm %x, %g, %b, %m, %v {training = true} : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y#0, %y#1, %y#2 : tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>
}

// A [N, C] input gains a unit S.
// CUDA-LABEL: func.func @grad
// CUDA: tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [6, 3, 1] : tensor<6x3xf32> into tensor<6x3x1xf32>
// CUDA: %[[G:.*]]:3 = of.library_call "dnn.batch_norm_grad"(%{{.*}}, %{{.*}}, %arg2, %{{.*}}, %{{.*}}) into %{{.*}}, %{{.*}}, %{{.*}} {params = array<i64: 6, 3, 1, 4562254508917369340>} : (tensor<6x3x1xf32>, tensor<6x3x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) into tensor<6x3x1xf32>, tensor<3xf32>, tensor<3xf32>
// CUDA: tensor.collapse_shape %[[G]]#0
// CUDA: return %{{.*}}, %[[G]]#1, %[[G]]#2
// CPU-LABEL: func.func @grad
// CPU-NOT: library_call
// CPU: return
// PLAN-LABEL: ofrt.program "grad"
// PLAN: ofrt.library "dnn.batch_norm_grad" [@arg0, @arg1, @arg2, @[[M:buf[0-9]+]], @[[V:buf[0-9]+]], @[[DX:buf[0-9]+]], @[[DW:buf[0-9]+]], @[[DB:buf[0-9]+]]]
func.func @grad(%x: tensor<6x3xf32>, %dy: tensor<6x3xf32>, %g: tensor<3xf32>) -> (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %r:3 = of.batch_norm_grad %x, %dy, %g {epsilon = 1.0e-03 : f64} : (tensor<6x3xf32>, tensor<6x3xf32>, tensor<3xf32>) -> (tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %r#0, %r#1, %r#2 : tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// Only y is read: mean and var still get buffers of their own.
// PLAN-LABEL: ofrt.program "only_y"
// PLAN: ofrt.library "dnn.batch_norm" [@arg0, @arg1, @arg2, @[[Y:buf[0-9]+]], @[[MEAN:buf[0-9]+]], @[[VAR:buf[0-9]+]]]
// CUDA-LABEL: func.func @only_y
// CUDA: of.library_call "dnn.batch_norm"
func.func @only_y(%x: tensor<4x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<4x3x5x5xf32> {
  %y:3 = of.batch_norm %x, %g, %b, %m, %v {training = true} : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y#0 : tensor<4x3x5x5xf32>
}

// Inference, and types the libraries' f32 statistics do not fit, stay
// generated.
// CUDA-LABEL: func.func @generated
// CUDA-NOT: library_call
// CUDA: return
func.func @generated(%x: tensor<4x3x5x5xf32>, %c: tensor<3xf32>, %xd: tensor<4x3x5x5xf64>, %cd: tensor<3xf64>, %xb: tensor<4x3x5x5xbf16>, %cb: tensor<3xbf16>)
    -> (tensor<4x3x5x5xf32>, tensor<4x3x5x5xf64>, tensor<4x3x5x5xbf16>, tensor<4x3x5x5xf64>) {
  %a:3 = of.batch_norm %x, %c, %c, %c, %c : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %d:3 = of.batch_norm %xd, %cd, %cd, %cd, %cd {training = true} : (tensor<4x3x5x5xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) -> (tensor<4x3x5x5xf64>, tensor<3xf64>, tensor<3xf64>)
  %e:3 = of.batch_norm %xb, %cb, %cb, %cb, %cb {training = true} : (tensor<4x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<4x3x5x5xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  %f:3 = of.batch_norm_grad %xd, %xd, %cd : (tensor<4x3x5x5xf64>, tensor<4x3x5x5xf64>, tensor<3xf64>) -> (tensor<4x3x5x5xf64>, tensor<3xf64>, tensor<3xf64>)
  return %a#0, %d#0, %e#0, %f#0 : tensor<4x3x5x5xf32>, tensor<4x3x5x5xf64>, tensor<4x3x5x5xbf16>, tensor<4x3x5x5xf64>
}

// One element per channel: the forward step would need cuDNN's unbiased
// variance of one element, so it stays generated; the gradient does not
// need it. Empty tensors stay generated (and compile: no division by a
// zero extent).
// CUDA-LABEL: func.func @one
// CUDA-NOT: library_call "dnn.batch_norm"(
// CUDA: of.library_call "dnn.batch_norm_grad"({{.*}}params = array<i64: 1, 3, 1,
// CUDA-NOT: library_call
// CUDA: return
// CPU-LABEL: func.func @one
// CPU-NOT: library_call
// CPU: return
func.func @one(%x: tensor<1x3xf32>, %c: tensor<3xf32>) -> (tensor<1x3xf32>, tensor<3xf32>, tensor<1x3xf32>) {
  %y:3 = of.batch_norm %x, %c, %c, %c, %c {training = true} : (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %g:3 = of.batch_norm_grad %x, %x, %c : (tensor<1x3xf32>, tensor<1x3xf32>, tensor<3xf32>) -> (tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y#0, %y#1, %g#0 : tensor<1x3xf32>, tensor<3xf32>, tensor<1x3xf32>
}

// CUDA-LABEL: func.func @empty
// CUDA-NOT: library_call
// CUDA: return
// CPU-LABEL: func.func @empty
// CPU: return
func.func @empty(%x: tensor<0x3x4x4xf32>, %c: tensor<3xf32>, %z: tensor<2x0x3xf32>, %e: tensor<0xf32>)
    -> (tensor<0x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x0x3xf32>, tensor<0xf32>) {
  %y:3 = of.batch_norm %x, %c, %c, %c, %c {training = true} : (tensor<0x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<0x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  %g:3 = of.batch_norm_grad %x, %x, %c : (tensor<0x3x4x4xf32>, tensor<0x3x4x4xf32>, tensor<3xf32>) -> (tensor<0x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  %n:3 = of.batch_norm %z, %e, %e, %e, %e {training = true} : (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>)
  %h:3 = of.batch_norm_grad %z, %n#0, %e : (tensor<2x0x3xf32>, tensor<2x0x3xf32>, tensor<0xf32>) -> (tensor<2x0x3xf32>, tensor<0xf32>, tensor<0xf32>)
  return %g#0, %g#1, %y#1, %h#0, %h#1 : tensor<0x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x0x3xf32>, tensor<0xf32>
}
