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
                   full, log, matmul, maximum, mean, minimum, ones, ones_like, permute, rand,
                   randn, reshape, rsqrt, sigmoid, softmax, split, sqrt, sum, tanh, tensor,
                   transpose, tril, where, zeros, zeros_like)
from ._random import manual_seed
from .serialization import load, save

__version__ = "0.1.0"

from . import cuda, env, nn, optim, utils  # noqa: E402
from ._jit import compile  # noqa: E402,A004

Generator = None  # placeholder name some model code imports; seeding is of.manual_seed


def no_grad():
    """A no-op context (of computes gradients only in compiled steps)."""
    import contextlib
    return contextlib.nullcontext()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(x):
    return x.numel()
