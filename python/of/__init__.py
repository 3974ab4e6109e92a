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
from ._compile import CompileError, cache_stats
from ._grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                         is_inference_mode_enabled, no_grad, set_grad_enabled)
from ._dist import device, placement, sbp
from ._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64,  # noqa: A004
                     half, int, int8, int32, int64, long, uint8)
from ._ops import (abs, add, addcdiv, addcmul, amax, amin, arange, argmax,  # noqa: F401,A004
                   argmin, argsort, bernoulli, bmm, cat, chunk, clamp, clamp_max, clamp_min,
                   clip, cos, empty, exp, flip, from_numpy, full, gather, index_select,
                   is_floating_point, lerp, log, masked_select, matmul, maximum, mean, mm,
                   minimum, multinomial, narrow, nonzero, ones, ones_like, rand, randint, randn,
                   randperm, return_types, roll, rsqrt, sigmoid, sign, sin, sort, sqrt, square,
                   stack, sum, t, take_along_dim, tanh, tensor, tile, topk, tril, triu, zeros,
                   zeros_like)
from ._random import manual_seed
from ._tensor import Parameter, Size, Tensor
from .serialization import load, save

__version__ = "0.1.0"

from . import autograd, cuda, env, nn, optim, utils  # noqa: E402
from . import _jit  # noqa: E402

class Generator:
    """torch.Generator's name (model code imports it for annotations); of
    has one generator, seeded by of.manual_seed, so making one raises."""

    def __init__(self, device="cpu"):
        raise NotImplementedError("torch.Generator is not supported yet: of has one random "
                                  "generator; seed it with of.manual_seed(seed)")


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


def compile(model, loss_fn=None, optimizer=None, dump_dir=None, amp=None, zero=False,  # noqa: A001
            max_grad_norm=None, *, auto_parallel=False, fullgraph=False, dynamic=None,
            backend="inductor", mode=None, options=None, disable=False):
    """Compiles `model` (an of.nn.Module or a function of tensors).

    Without an optimizer, the result runs the forward: `y = c(x)`. With one,
    it runs a whole training step and returns the loss: `loss = c(*inputs,
    target)` with `loss_fn(model(*inputs), target)`, or `loss = c(*inputs)`
    when the model itself returns the loss (or a tuple ending with it).
    Compiles once per input signature (shapes, dtypes, placements, SBP);
    `dump_dir` keeps the IR after every pass; `amp="bf16"` computes matmuls
    and convolutions in bfloat16, `amp="f16"` in float16 with dynamic loss
    scaling in the training step (torch.amp.GradScaler's defaults: 2^16 to
    start, halved and the step skipped when a gradient is inf or NaN,
    doubled after 2000 good steps); `zero=True` splits the optimizer state
    (ZeRO). `auto_parallel=True` (global tensors) lets the compiler choose
    every distribution (--of-auto-parallel's exact search over the cost
    model): the arguments' SBP is ignored, only their placement counts, and
    parameters take the distribution the search chose (their `sbp`
    changes after the first step; their values do not).

    torch.compile's keywords are taken with their meaning: `disable=True`
    returns `model` as it is; of always compiles the whole function (as
    `fullgraph=True`), once per input shape (so `dynamic` changes nothing
    of the result), with its own compiler whatever `backend`, `mode` and
    `options` name (they choose how PyTorch compiles, not what the model
    computes)."""
    import inspect
    if disable:
        return model
    modules = [("", model)] if isinstance(model, nn.Module) else []
    name = type(model).__name__.lower() if isinstance(model, nn.Module) else getattr(
        model, "__name__", "fn")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"
    if optimizer is not None and loss_fn is not None:
        forward = model.forward if isinstance(model, nn.Module) else model
        params = list(inspect.signature(forward).parameters)

        def step(*args):
            return loss_fn(model(*args[:-1]), args[-1])
        step.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params]
            + [inspect.Parameter("target", inspect.Parameter.POSITIONAL_ONLY)])
        fn = step
    else:
        fn = model.forward if isinstance(model, nn.Module) else model
    kind = _jit.CompiledModule if modules and optimizer is None else _jit.CompiledFunction
    compiled = kind(fn, modules, name, optimizer, dump_dir, amp, zero, max_grad_norm,
                    auto_parallel)
    compiled.loss_only = optimizer is not None
    return compiled


# Automatic mixed precision (torch.autocast, torch.amp, torch.cpu.amp).
from . import amp, cpu  # noqa: E402
from .amp import cuda_amp as _cuda_amp  # noqa: E402

cuda.amp = _cuda_amp  # torch.cuda.amp (of.cuda sits below the tensors, of.amp above)
from .amp.autocast_mode import (autocast, clear_autocast_cache,  # noqa: E402,F401
                                get_autocast_dtype, is_autocast_cache_enabled,
                                is_autocast_enabled, set_autocast_cache_enabled,
                                set_autocast_dtype, set_autocast_enabled)


# Indexing and selection (_ops.py, docs/python.md "Indexing and selection").
def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002
    """torch.max: the largest element; with `dim`, (values, indices); with a
    tensor, the elementwise maximum."""
    return _ops.tensor_max(input, dim, keepdim, other=other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002
    """torch.min: the smallest element; with `dim`, (values, indices); with a
    tensor, the elementwise minimum."""
    return _ops.tensor_min(input, dim, keepdim, other=other)


def where(condition, input=None, other=None):  # noqa: A002
    """torch.where: `input` where `condition` holds, else `other`; with the
    condition alone, the indices of its True elements (nonzero(as_tuple=True),
    eager only)."""
    if input is None and other is None:
        return _ops.nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes the condition alone, or with both input and other")
    return _ops.where(condition, input, other)


nn.functional.one_hot = _ops.one_hot  # F.one_hot (composed in _ops.py)


from ._ops import eq, ge, gt, le, lt, ne, pow  # noqa: E402,F401,A004


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    return _ops.flatten(input, start_dim, end_dim)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return _ops.randn(*input.shape, dtype=dtype or input.dtype,
                      device=device or input.device, requires_grad=requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return _ops.rand(*input.shape, dtype=dtype or input.dtype,
                     device=device or input.device, requires_grad=requires_grad)


from . import accelerator, backends, distributed, distributions, jit, onnx, sparse  # noqa: E402,F401,E501
from . import multiprocessing  # noqa: E402,F401
from ._ops import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,  # noqa: E402,F401
                   IntTensor, LongTensor)
from ._dtype import layout, sparse_coo, strided  # noqa: E402,F401
from .sparse import sparse_coo_tensor, spmm  # noqa: E402,F401

# PyTorch's math functions composed of of's ops (_torch_functions.py,
# docs/python.md "Math functions"), and the torch.* names of Tensor methods
# and nn.functional functions.
from ._torch_functions import (acos, addmm, all, allclose, any, asin, atan, atan2,  # noqa: E402,F401,A004
                               baddbmm, bincount, cdist, ceil, cosh, cross, cumprod, cumsum, diag, dot,
                               einsum, empty_like, exp2, expm1, eye, floor, floor_divide, fmod,
                               full_like, index_add, index_copy, index_fill, isclose,
                               isfinite, isnan, linspace, log1p, log2, log10, logsumexp,
                               meshgrid, norm, outer, prod, reciprocal, remainder,
                               repeat_interleave, round, scatter, scatter_add, scatter_reduce, select, sinh,
                               split_with_sizes, std, tan, tensordot, unique, var)
from ._torch_functions import (atleast_1d, atleast_2d, bitwise_and, bitwise_not,  # noqa: E402,F401
                               bitwise_or, bitwise_xor, broadcast_tensors, concat,
                               count_nonzero, diagonal, divide, finfo, frac, get_default_dtype,
                               hstack, iinfo, isinf, logical_and, logical_not, logical_or,
                               logical_xor, movedim, multiply, mv, nan_to_num, negative, std_mean,
                               subtract, swapaxes, trace, true_divide, trunc, unbind, unflatten,
                               var_mean, vstack)
from ._torch_functions import broadcast_to, concatenate, swapdims  # noqa: E402,F401
from ._torch_functions import (argwhere, as_tensor, asarray, clone, column_stack,  # noqa: E402,F401
                               deg2rad, detach, diff, dstack, fliplr, flipud, get_num_threads,
                               get_rng_state, set_num_threads,
                               hypot, initial_seed, kron, logspace, median, nanmean, nansum,
                               normal, rad2deg, randint_like, rot90, seed, set_default_dtype,
                               set_rng_state, take, tensor_split, tril_indices, triu_indices,
                               xlogy)
from ._ops import div, mul, sub  # noqa: E402,F401
moveaxis, fix = movedim, trunc


def relu(input):  # noqa: A002
    return nn.functional.relu(input)


def log_softmax(input, dim, dtype=None):  # noqa: A002
    return nn.functional.log_softmax(input, dim, dtype=dtype)


def dropout(input, p, train):  # noqa: A002
    return nn.functional.dropout(input, p, train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05,  # noqa: A002
               cudnn_enable=True):
    """F.layer_norm (`cudnn_enable` chooses how PyTorch computes, not what)."""
    return nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return nn.functional.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return nn.functional.pairwise_distance(x1, x2, p, eps, keepdim)


def erf(input):  # noqa: A002
    return _ops.erf(input)


def neg(input):  # noqa: A002
    return _ops.neg(input)


def masked_fill(input, mask, value):  # noqa: A002
    return _ops.masked_fill(input, mask, value)


def squeeze(input, dim=None):  # noqa: A002
    return _ops.squeeze(input, dim)


def unsqueeze(input, dim):  # noqa: A002
    return _ops.unsqueeze(input, dim)


Tensor.log_softmax = lambda self, dim, dtype=None: log_softmax(self, dim, dtype)
