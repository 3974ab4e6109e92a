// A two-rank CUDA program: Megatron's MLP (w1 split by columns, w2 by rows)
// on a cuda placement compiles to the same collective steps as on the CPU
// (the partial sums' all_reduce), now run by the CUDA executor through
// NCCL; the plan round-trips through .ofp, and every rank's program lists
// without a driver. Running it needs a GPU per rank (cuda-gpus-2): there
// the result is compared with the CPU plan's on 2 ranks.
// REQUIRES: numpy, mpirun
// REQUIRES: libdevice
// RUN: rm -rf %t && mkdir -p %t
// RUN: of-opt %s --of-pipeline=cuda,format=isa | FileCheck %s
// RUN: of-opt %s --of-pipeline=cuda,format=isa | of-translate --of-plan-to-binary -o %t/cuda.ofp
// RUN: of-translate --of-binary-to-plan %t/cuda.ofp | of-translate --of-plan-to-binary -o %t/cuda.2.ofp
// RUN: cmp %t/cuda.ofp %t/cuda.2.ofp
// RUN: env OF_CUDA_DRIVER=%t/no-libcuda.so of-run %t/cuda.ofp --list | FileCheck %s --check-prefix=LIST
// RUN: %npython -c "import numpy as np; r = np.random.default_rng(0); [np.save('%t/' + n + '.npy', r.standard_normal(s).astype(np.float32)) for n, s in [('x', (32, 128)), ('w1', (128, 512)), ('b1', (512,)), ('w2', (512, 128))]]"
// RUN: env OF_CUDA_DRIVER=%t/no-libcuda.so not of-run -n 2 %t/cuda.ofp --input x=%t/x.npy --input w1=%t/w1.npy --input b1=%t/b1.npy --input w2=%t/w2.npy --output-dir %t/o 2>&1 | FileCheck %s --check-prefix=NODRIVER
// RUN: %if cuda-gpus-2 %{ sed 's/"cuda"/"cpu"/' %s | of-opt --of-pipeline=cpu | of-translate --of-plan-to-binary -o %t/cpu.ofp %}
// RUN: %if cuda-gpus-2 %{ of-run -n 2 %t/cpu.ofp --input x=%t/x.npy --input w1=%t/w1.npy --input b1=%t/b1.npy --input w2=%t/w2.npy --output-dir %t/cpu %}
// RUN: %if cuda-gpus-2 %{ of-run -n 2 %t/cuda.ofp --input x=%t/x.npy --input w1=%t/w1.npy --input b1=%t/b1.npy --input w2=%t/w2.npy --output-dir %t/gpu %}
// RUN: %if cuda-gpus-2 %{ %npython -c "import numpy as np; a, b = np.load('%t/cpu/y.npy'), np.load('%t/gpu/y.npy'); assert np.allclose(a, b, rtol=1e-3, atol=1e-3), abs(a - b).max(); print('y matches')" | FileCheck %s --check-prefix=RUN2 %}

of.placement @tp {device = "cuda", shape = [2]}

func.func @main(%x: tensor<32x128xf32, #of.sbp<@tp, [B]>> {of.name = "x"},
                %w1: tensor<128x512xf32, #of.sbp<@tp, [S(1)]>> {of.name = "w1"},
                %b1: tensor<512xf32, #of.sbp<@tp, [S(0)]>> {of.name = "b1"},
                %w2: tensor<512x128xf32, #of.sbp<@tp, [S(0)]>> {of.name = "w2"})
    -> (tensor<32x128xf32, #of.sbp<@tp, [B]>> {of.name = "y"}) {
  %h = of.matmul %x, %w1 : (tensor<32x128xf32, #of.sbp<@tp, [B]>>, tensor<128x512xf32, #of.sbp<@tp, [S(1)]>>) -> tensor<32x512xf32>
  %hb = of.add %h, %b1 : (tensor<32x512xf32>, tensor<512xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<32x512xf32>
  %a = of.gelu %hb : (tensor<32x512xf32>) -> tensor<32x512xf32>
  %y = of.matmul %a, %w2 : (tensor<32x512xf32>, tensor<512x128xf32, #of.sbp<@tp, [S(0)]>>) -> tensor<32x128xf32>
  %out = of.boxing %y : tensor<32x128xf32> -> tensor<32x128xf32, #of.sbp<@tp, [B]>>
  return %out : tensor<32x128xf32, #of.sbp<@tp, [B]>>
}

// CHECK: ofrt.program "main"
// CHECK-SAME: device = "cuda"
// CHECK: ofrt.library "blas.gemm"
// CHECK: ofrt.launch @cuda_kernels
// CHECK: ofrt.library "blas.gemm"
// CHECK: ofrt.collective all_reduce {{.*}} group [0, 1]

// LIST: entry main (rank 0)
// LIST: input  w1: f32 [128, 256] (part of f32 [128, 512] over mesh [2] ranks [0, 1] as [S(1)])
// LIST: output y: f32 [32, 128] (part of f32 [32, 128] over mesh [2] ranks [0, 1] as [B])

// NODRIVER: cannot load the CUDA driver
// RUN2: y matches
