//===- CudnnConvolutions.h - Convolution steps on a GPU through cuDNN -----===//
//
// The CUDA executor runs the plan's convolution library calls
// (LibraryCalls.h: dnn.conv2d, dnn.conv2d_grad_input,
// dnn.conv2d_grad_filter) through cuDNN 9's convolution API, loaded with
// dlopen (libcudnn.so.9, or $OF_CUDNN_LIBRARY) at the first such step, as
// the CPU executor runs them through oneDNN. One set of descriptors and one
// algorithm per distinct geometry, direction and type, chosen when the step
// is checked (cuDNN's heuristics, the first algorithm whose workspace fits
// 256 MiB), so a geometry cuDNN rejects fails the session's preparation,
// not a run. f32 convolutions use FMA math (no TF32, so results agree with
// the CPU's to f32 rounding); bf16 and f16 use tensor cores with f32
// accumulation. A bias is added with cudnnAddTensor. cuDNN's descriptor
// pads symmetrically: the CUDA pipeline keeps other convolutions as
// im2col gemms, and this module refuses them.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_CUDNNCONVOLUTIONS_H
#define OF_LIB_RUNTIME_CUDNNCONVOLUTIONS_H

#include "Executor.h"
#include "Status.h"

#include <memory>

namespace of::rt {

class CudnnConvolutions {
public:
  CudnnConvolutions();
  ~CudnnConvolutions();
  CudnnConvolutions(const CudnnConvolutions &) = delete;
  CudnnConvolutions &operator=(const CudnnConvolutions &) = delete;

  /// Makes what `step` (a Conv step) needs, unless a step of the same
  /// geometry, direction and type did; workspaces come from `device`.
  Status prepare(const PreparedStep &step, Executor &device);
  /// Enqueues the Conv `step`, which `prepare` accepted, on `stream` (a
  /// CUstream).
  Status run(const PreparedStep &step, void *stream);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace of::rt

#endif // OF_LIB_RUNTIME_CUDNNCONVOLUTIONS_H
