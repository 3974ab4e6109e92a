"""OF: a PyTorch-like frontend over the OF compiler.

    import of
    x = of.randn(4, 8)
    model = of.nn.Linear(8, 2)
    y = model(x)                      # eager: each op a compiled, cached plan
    step = of.compile(model, loss_fn=of.nn.MSELoss(),
                      optimizer=of.optim.AdamW(model.parameters(), lr=1e-3))
    loss = step(x, target)            # one compiled training step

Global tensors carry a placement and an SBP (`of.placement`, `of.sbp`);
`python -m of.distributed.launch --nproc N script.py` runs N ranks. See
docs/python.md.
"""

from . import _ops
from ._core import CompileError, Parameter, Size, Tensor, cache_stats
from ._dist import device, placement, sbp
from ._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64,  # noqa: A004
                     half, int, int8, int32, int64, long)
from ._ops import (add, amax, arange, cat, chunk, exp, from_numpy,  # noqa: F401
                   full, log, matmul, maximum, mean, minimum, ones, ones_like, rand,
                   randn, rsqrt, sigmoid, sqrt, sum, tanh, tensor,
                   tril, where, zeros, zeros_like)
from ._random import manual_seed
from .serialization import load, save

__version__ = "0.1.0"

from . import cuda, env, nn, optim, utils  # noqa: E402
from ._jit import compile  # noqa: E402,A004

class Generator:
    """torch.Generator's name (model code imports it for annotations); of
    has one generator, seeded by of.manual_seed, so making one raises."""

    def __init__(self, device="cpu"):
        raise NotImplementedError("torch.Generator is not supported yet: of has one random "
                                  "generator; seed it with of.manual_seed(seed)")


def no_grad():
    """A no-op context (of computes gradients only in compiled steps)."""
    import contextlib
    return contextlib.nullcontext()


# torch.* functions whose parameters are named or passed otherwise than
# the Tensor methods of the same name.
def reshape(input, shape):  # noqa: A002
    return _ops.reshape(input, shape)


def permute(input, dims):  # noqa: A002
    return _ops.permute(input, dims)


def transpose(input, dim0, dim1):  # noqa: A002
    return _ops.transpose(input, dim0, dim1)


def split(tensor, split_size_or_sections, dim=0):
    return _ops.split(tensor, split_size_or_sections, dim)


def softmax(input, dim, dtype=None):  # noqa: A002
    return nn.functional.softmax(input, dim, dtype=dtype)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):  # noqa: A002
    return input.numel()
