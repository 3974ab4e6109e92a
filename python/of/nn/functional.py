"""of.nn.functional: PyTorch's functional API over of ops."""

from .. import _dtype as dt
from .. import _ops
from .._core import Tensor, tracing
from .._ops import (avg_pool2d, conv2d, embedding, gelu, layer_norm, log_softmax,  # noqa: F401
                    max_pool2d, relu, rms_norm, scaled_dot_product_attention, sigmoid, silu,
                    softmax, tanh)


def linear(x, weight, bias=None):
    y = _ops.matmul(x, weight, transpose_b=True) if x.ndim >= 2 else \
        _ops.reshape(_ops.matmul(_ops.reshape(x, (1, -1)), weight, transpose_b=True), (-1,))
    return _ops.add(y, bias) if bias is not None else y


def cross_entropy(input, target, ignore_index=-100, reduction="mean"):  # noqa: A002
    """Mean (or sum, or per-example) softmax cross-entropy of logits
    [N, C] (or [N, C, d...]) against class indices [N] ([N, d...]).
    Labels equal to `ignore_index` count as absent when it is not the
    default -100; with the default, an out-of-range label (-100 included)
    stops the run with the runtime's index check, never silently."""
    if input.ndim > 2:  # [N, C, d...] -> [N * d..., C], as PyTorch
        perm = [0] + list(range(2, input.ndim)) + [1]
        input = _ops.reshape(_ops.permute(input, perm), (-1, input.shape[1]))
        target = _ops.reshape(target, (-1,))
    if tuple(target.shape) != tuple(input.shape[:-1]):
        raise ValueError(f"cross_entropy: target {list(target.shape)} does not match "
                         f"input {list(input.shape)}")
    if ignore_index != -100:
        valid = target != ignore_index
        safe = _ops.where(valid, target, 0)
        ce = _ops.cross_entropy_per_example(input, safe)
        weight = _ops.cast(valid, input.dtype)
        ce = _ops.mul(ce, weight)
        if reduction == "mean":
            return _ops.div(_ops.sum(ce), _ops.maximum(_ops.sum(weight), 1.0))
    else:
        ce = _ops.cross_entropy_per_example(input, target)
        if reduction == "mean":
            return _ops.mean(ce)
    if reduction == "sum":
        return _ops.sum(ce)
    if reduction == "none":
        return ce
    raise ValueError(f"cross_entropy: reduction is 'mean', 'sum' or 'none', not {reduction!r}")


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    d = _ops.sub(input, target)
    sq = _ops.mul(d, d)
    if reduction == "mean":
        return _ops.mean(sq)
    if reduction == "sum":
        return _ops.sum(sq)
    return sq


def dropout(x, p=0.5, training=True):
    """Zeroes elements with probability p (and scales the rest by 1/(1-p)).
    In a compiled step the mask comes from a seed input that changes every
    step; in eager code from of.manual_seed's generator."""
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), not {p}")
    program = tracing()
    if program is not None:
        from .. import _jit
        seed = _jit.dropout_seed(program)
    else:
        from .. import _random
        import numpy as np
        seed = Tensor(np.array(_random.seed64(), np.int64), dtype=dt.int64)
    return _ops.dropout_with_seed(x, seed, p)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    y, _, _ = _ops.batch_norm(x, running_mean, running_var, weight, bias, training,
                              momentum, eps)
    return y
