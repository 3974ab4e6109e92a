// REQUIRES: ptxas
// A CUDA plan runs through libofrt's CUDA executor, which loads the driver
// with dlopen when the session is made. Where there is no driver (this
// machine), of-run says so and exits non-zero; it never crashes.
// REQUIRES: libdevice
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: of-opt %s --of-pipeline=cuda | of-translate --of-plan-to-binary -o %t.d/gelu.ofp
// RUN: %npython -c "import numpy as np; np.save('%t.d/x.npy', np.ones((64, 64), np.float32))"
// RUN: env OF_CUDA_DRIVER=%t.d/no-libcuda.so not of-run %t.d/gelu.ofp --input x=%t.d/x.npy --output-dir %t.d/o 2>&1 | FileCheck %s --check-prefix=NODRIVER
// NODRIVER: of-run: error: program 'f' runs on cuda: cannot load the CUDA driver (libcuda.so.1, installed with the NVIDIA driver; $OF_CUDA_DRIVER names another):
// NODRIVER-NEXT: no-libcuda.so: {{.*}}No such file or directory
// Listing the plan needs no driver.
// RUN: env OF_CUDA_DRIVER=%t.d/no-libcuda.so of-run %t.d/gelu.ofp --list | FileCheck %s --check-prefix=LIST
// LIST: entry f (rank 0)
// LIST-NEXT: input  x: f32 [64, 64]
// LIST-NEXT: output y: f32 [64, 64]
// The toolkit's link stub is not a driver: cuInit fails, and of-run says why.
// RUN: %if cuda-stub %{ env OF_CUDA_DRIVER=%cuda_stub not of-run %t.d/gelu.ofp --input x=%t.d/x.npy --output-dir %t.d/o 2>&1 | FileCheck %s --check-prefix=STUB %}
// STUB: of-run: error: program 'f' runs on cuda: the loaded libcuda is the CUDA toolkit's link stub, not a driver: no NVIDIA driver is installed
// libofrt links no CUDA library: it loads them when a CUDA program runs.
// RUN: readelf -d %of_obj_root/lib/libofrt.so | FileCheck %s --check-prefix=DEPS --implicit-check-not=libcuda --implicit-check-not=libcublas --implicit-check-not=libnccl --implicit-check-not=libcudnn
// DEPS: (NEEDED)
// RUN: nm -D --undefined-only %of_obj_root/lib/libofrt.so | FileCheck %s --check-prefix=UNDEF --implicit-check-not=" cu" --implicit-check-not=" nccl"
// UNDEF: dlopen

func.func @f(%x: tensor<64x64xf32> {of.name = "x"}) -> (tensor<64x64xf32> {of.name = "y"}) {
  %y = of.gelu %x {approximate = "tanh"} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
