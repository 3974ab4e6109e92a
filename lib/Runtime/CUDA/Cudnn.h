//===- Cudnn.h - Convolution and pooling steps on a GPU through cuDNN -----===//
//
// The CUDA executor runs the plan's dnn library calls (LibraryCalls.h:
// dnn.conv2d, dnn.conv2d_grad_input, dnn.conv2d_grad_filter, dnn.pool2d,
// dnn.pool2d_grad) through cuDNN 9's descriptor API, loaded with dlopen
// (libcudnn.so.9, or $OF_CUDNN_LIBRARY) at the first such step, as the CPU
// executor runs them through oneDNN. One set of descriptors per distinct
// geometry, direction and type, made when the step is checked, so a
// geometry cuDNN rejects fails the session's preparation, not a run.
//
// Convolutions: one algorithm each (cuDNN's heuristics, the first whose
// workspace fits 256 MiB). f32 convolutions use FMA math (no TF32 unless
// the program allows it, so results agree with the CPU's to f32
// rounding); bf16 and f16 use tensor cores with f32 accumulation. A bias
// is added with cudnnAddTensor.
//
// Poolings: max pooling propagates NaN, as PyTorch's (a window of -inf
// alone is reported to give -FLT_MAX rather than -inf); a gradient
// recomputes the forward pooling into the stream's workspace, since
// cudnnPoolingBackward takes the forward output. Output extents are
// checked against cuDNN's at preparation. The CUDA pipeline gives it no
// max gradient (which tied element cuDNN picks is not documented; the step
// runs one all the same).
//
// cuDNN's descriptors pad symmetrically: the CUDA pipeline keeps other
// convolutions as im2col gemms and other poolings as generated kernels,
// and this module refuses them.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_CUDNN_H
#define OF_LIB_RUNTIME_CUDNN_H

#include "Session/Executor.h"
#include "Session/Status.h"

#include <memory>

namespace of::rt {

class CudnnSteps {
public:
  CudnnSteps();
  ~CudnnSteps();
  CudnnSteps(const CudnnSteps &) = delete;
  CudnnSteps &operator=(const CudnnSteps &) = delete;

  /// Makes what `step` (a Conv, Pool or BatchNorm step) needs, unless a step of
  /// the same geometry, direction and type did; workspaces come from `device`.
  Status prepare(const PreparedStep &step, Executor &device);
  /// Enqueues the Conv, Pool or BatchNorm `step`, which `prepare` accepted, on
  /// `stream` (a CUstream).
  Status run(const PreparedStep &step, void *stream);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_CUDNN_H
