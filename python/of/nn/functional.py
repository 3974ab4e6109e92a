"""of.nn.functional: PyTorch's functional API over of ops.

Every function has PyTorch's signature (parameter names, order and
defaults); an argument value of does not support raises
NotImplementedError (of._compat)."""
# ruff: noqa: A002  (PyTorch's parameter is called `input`)

import numpy as np

from .. import _dtype as dt
from .. import _ops, _random
from .._compat import inplace as _inplace
from .._compat import legacy_reduction, softmax_dim, unsupported
from .._program import tracing
from .._tensor import Tensor


def linear(input, weight, bias=None):
    x = input
    y = _ops.matmul(x, weight, transpose_b=True) if x.ndim >= 2 else \
        _ops.reshape(_ops.matmul(_ops.reshape(x, (1, -1)), weight, transpose_b=True), (-1,))
    return _ops.add(y, bias) if bias is not None else y


def relu(input, inplace=False):
    out = _ops.relu(input)
    return _inplace("relu", input, out) if inplace else out


def silu(input, inplace=False):
    out = _ops.silu(input)
    return _inplace("silu", input, out) if inplace else out


def gelu(input, approximate="none"):
    return _ops.gelu(input, approximate)


def sigmoid(input):
    return _ops.sigmoid(input)


def tanh(input):
    return _ops.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _ops.softmax(input, softmax_dim("softmax", input.ndim, dim))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _ops.log_softmax(input, softmax_dim("log_softmax", input.ndim, dim))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ops.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _ops.rms_norm(input, normalized_shape, weight, eps)


def embedding_arguments(padding_idx, max_norm, scale_grad_by_freq, sparse):
    """Refuses what embedding does not support yet (also at nn.Embedding's
    construction, so a model fails where it is built)."""
    unsupported("embedding", padding_idx=(padding_idx, None), max_norm=(max_norm, None),
                scale_grad_by_freq=(scale_grad_by_freq, False), sparse=(sparse, False))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    embedding_arguments(padding_idx, max_norm, scale_grad_by_freq, sparse)
    return _ops.embedding(input, weight)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _ops.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d_arguments(dilation, ceil_mode, return_indices):
    unsupported("max_pool2d", dilation=(dilation, 1), ceil_mode=(ceil_mode, False),
                return_indices=(return_indices, False))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    max_pool2d_arguments(dilation, ceil_mode, return_indices)
    return _ops.max_pool2d(input, kernel_size, stride, padding)


def avg_pool2d_arguments(ceil_mode, divisor_override):
    unsupported("avg_pool2d", ceil_mode=(ceil_mode, False),
                divisor_override=(divisor_override, None))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    avg_pool2d_arguments(ceil_mode, divisor_override)
    return _ops.avg_pool2d(input, kernel_size, stride, padding, count_include_pad)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    unsupported("scaled_dot_product_attention", enable_gqa=(enable_gqa, False))
    return _ops.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
                                             is_causal, scale)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Mean (or sum, or per-example) softmax cross-entropy of logits
    [N, C] (or [N, C, d...]) against class indices [N] ([N, d...]).
    Labels equal to `ignore_index` count as absent when it is not the
    default -100; with the default, an out-of-range label (-100 included)
    stops the run with the runtime's index check, never silently."""
    unsupported("cross_entropy", weight=(weight, None),
                label_smoothing=(label_smoothing, 0.0))
    reduction = legacy_reduction(size_average, reduce, reduction)
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


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    unsupported("mse_loss", weight=(weight, None))
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = _ops.sub(input, target)
    sq = _ops.mul(d, d)
    if reduction == "mean":
        return _ops.mean(sq)
    if reduction == "sum":
        return _ops.sum(sq)
    if reduction == "none":
        return sq
    raise ValueError(f"{reduction} is not a valid value for reduction")


def dropout_probability(p):
    """PyTorch's check of a dropout probability (F.dropout's and nn.Dropout's)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability p (and scales the rest by 1/(1-p)).
    In a compiled step the mask comes from a seed input that changes every
    step; in eager code from of.manual_seed's generator."""
    dropout_probability(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        raise NotImplementedError("dropout(p=1) is not supported yet (every element "
                                  "zeroed): multiply by 0 instead")
    out = _dropout(input, p)
    return _inplace("dropout", input, out) if inplace else out


def _dropout(x, p):
    program = tracing()
    if program is not None:
        seed = _dropout_seed(program)
    else:
        seed = Tensor(np.array(_random.seed64(), np.int64), dtype=dt.int64)
    return _ops.dropout_with_seed(x, seed, p)


def _dropout_seed(program):
    """The seed of the next dropout of a traced program: the step's
    `dropout_seed` input plus the dropout's ordinal."""
    if program.seed_arg is None:
        seed = Tensor(np.zeros((), np.int64), dtype=dt.int64)
        program.add_arg(seed, name="dropout_seed")
        program.seed_arg = seed
    program.dropouts += 1
    if program.dropouts == 1:
        return program.seed_arg
    return _ops.add(program.seed_arg, program.dropouts - 1)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    y, _, _ = _ops.batch_norm(input, running_mean, running_var, weight, bias, training,
                              momentum, eps)
    return y
