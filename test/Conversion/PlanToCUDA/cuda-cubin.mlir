// REQUIRES: ptxas
// With the CUDA toolkit's ptxas, --of-pipeline=cuda writes cubins (ELF) for
// sm_90a by default: every kernel of whole training steps compiles, the
// small GPT's (AdamW; also Megatron-parallel in bf16 AMP) and the conv
// net's (conv, batch norm, pooling and their gradients).
// REQUIRES: libdevice
// RUN: of-opt %s --of-pipeline=cuda | FileCheck %s
// RUN: %python %of_src_root/examples/gpt.py | of-opt --of-pipeline=cuda,train=adamw | FileCheck %s --check-prefix=GPT
// RUN: %python %of_src_root/examples/gpt.py --layout megatron-2 --device cuda | of-opt --of-pipeline=cuda,train=adamw,amp=bf16 | FileCheck %s --check-prefix=GPT
// RUN: sed 's/device = "cpu"/device = "cuda"/' %of_src_root/examples/convnet.mlir | of-opt --of-pipeline=cuda,train=sgd | FileCheck %s --check-prefix=GPT
// The GPT step's plan, cubins included, round-trips through .ofp:
// RUN: %python %of_src_root/examples/gpt.py | of-opt --of-pipeline=cuda,train=adamw | of-translate --of-plan-to-binary -o %t.ofp
// RUN: of-translate --of-binary-to-plan %t.ofp | of-translate --of-plan-to-binary -o %t.2.ofp
// RUN: cmp %t.ofp %t.2.ofp

// CHECK: ofrt.executable @cuda_kernels attributes {format = "cubin", launches = {k0 = [{args = array<i64: 0, 1>, block = array<i64: 256, 1, 1>, function = "k0_kernel", grid = array<i64: 16, 1, 1>, kernel = "k0_kernel"}]}, target = "nvptx64-nvidia-cuda"}
// CHECK: gpu.binary @k0_kernel [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF

// GPT: ofrt.executable @cuda_kernels attributes {format = "cubin"
// GPT: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF
// GPT: ofrt.program "{{.*}}_train_step" attributes {{{.*}}device = "cuda"

func.func @f(%x: tensor<64x64xf32> {of.name = "x"}) -> (tensor<64x64xf32> {of.name = "y"}) {
  %y = of.gelu %x {approximate = "tanh"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
