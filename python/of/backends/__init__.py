"""torch.backends: the switches PyTorch scripts set. `cuda.matmul.allow_tf32`
(PyTorch's default False) compiles f32 matrix products and convolutions on
a GPU with TF32 (the pipeline's `tf32` option; of has one switch for both,
so `cudnn.allow_tf32` is accepted with PyTorch's default True and convolutions
follow the matmul switch: with it off they stay full f32, more precise than
PyTorch's default). Nothing here changes CPU results."""

import types

cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False))
cudnn = types.SimpleNamespace(allow_tf32=True, benchmark=False, deterministic=False,
                              enabled=True)
