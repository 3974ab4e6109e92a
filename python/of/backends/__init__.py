"""torch.backends: the switches PyTorch scripts set. `cuda.matmul.allow_tf32`
(PyTorch's default False) compiles f32 matrix products and convolutions on
a GPU with TF32 (the pipeline's `tf32` option; of has one switch for both,
so `cudnn.allow_tf32` is accepted with PyTorch's default True and convolutions
follow the matmul switch: with it off they stay full f32, more precise than
PyTorch's default). Nothing here changes CPU results. `cuda` and `cudnn`
are modules, as PyTorch's, so that `import torch.backends.cudnn as cudnn`
works. `mps` (Apple's GPUs) answers that it is not available."""

from . import cuda, cudnn, mps  # noqa: F401
