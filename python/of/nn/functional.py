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


@_ops.autocast_op("linear")
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
    return _ops.softmax(input, softmax_dim("softmax", input.ndim, dim), dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _ops.log_softmax(input, softmax_dim("log_softmax", input.ndim, dim), dtype=dtype)


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


@_ops.autocast_op("cross_entropy")
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


# PyTorch's scalar type names, for its dtype messages.
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int8": "Char",
                 "bool": "Bool"}


@_ops.autocast_op("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities [N, C] ([C], or
    [N, C, d...]) at class indices [N] ([], [N, d...]): -weight[t] *
    input[n, t], over the targets that are not `ignore_index`; the mean
    divides by the sum of their weights (NaN when every target is
    ignored, as PyTorch). The element is picked by comparing the target
    with the class indices, so input[n, t] is exact and its gradient is a
    one-hot; the weights are gathered with an embedding, whose runtime
    index check stops a target out of [0, C) (PyTorch's IndexError) with a
    RuntimeError naming the Python line."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype is not dt.int64:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_SCALAR_NAMES[target.dtype.name]}")
    shape = tuple(target.shape)
    if input.ndim == 1:
        if target.ndim > 1 or (target.ndim == 1 and shape[0] != 1):
            raise ValueError("For 1D input, 1D target must have size 1, but got target "
                             f"size: {shape[0] if target.ndim == 1 else list(shape)}")
        shape = ()
    else:
        batch = shape[0] if target.ndim else 0
        if batch != input.shape[0]:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({batch}).")
        expected = (input.shape[0],) + tuple(input.shape[2:])
        if input.ndim == 2 and target.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if shape != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(shape)}")
    classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    if weight is not None:
        if tuple(weight.shape) != (classes,):
            raise RuntimeError(f"weight tensor should be defined either for all {classes} "
                               "classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {_SCALAR_NAMES[input.dtype.name]} but "
                               f"found {_SCALAR_NAMES[weight.dtype.name]}")
    x = input
    if x.ndim > 2:  # [N, C, d...] -> [N * d..., C], as cross_entropy
        x = _ops.permute(x, [0] + list(range(2, x.ndim)) + [1])
    x = _ops.reshape(x, (-1, classes))
    t = _ops.reshape(target, (-1,))
    valid = t != ignore_index
    safe = _ops.where(valid, t, 0)
    if weight is not None:
        w = _ops.reshape(_ops.embedding(safe, _ops.reshape(weight, (classes, 1))), (-1,))
    else:
        # Weights of 1 gathered from a [C, 2] table of rows (1, 0): the
        # gather of a splat table folds to a constant in a compiled program,
        # and the index check of its targets would go with it.
        table = np.zeros((classes, 2), x.dtype.np)
        table[:, 0] = 1
        rows = _ops.embedding(safe, Tensor(table, dtype=x.dtype, device=x.device))
        w = _ops.reshape(_ops.narrow(rows, 1, 0, 1), (-1,))
    w = _ops.where(valid, w, 0.0)
    hit = _ops.unsqueeze(safe, -1) == _ops.arange(classes, device=x.device)
    picked = _ops.sum(_ops.where(hit, x, 0.0), -1)
    loss = _ops.where(valid, _ops.mul(_ops.neg(picked), w), 0.0)
    if reduction == "none":
        return _ops.reshape(loss, shape)
    if reduction == "sum":
        return _ops.sum(loss)
    return _ops.div(_ops.sum(loss), _ops.sum(w))


@_ops.autocast_op("mse_loss")
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


def _reduce(loss, reduction):
    """A per-element loss reduced as PyTorch's losses do ("none", "mean",
    "sum")."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _same_size(what, target, input):  # noqa: A002
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(what.format(list(target.shape), list(input.shape)))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log(x) + (1 - t) log(1 - x)) with each log clamped at -100, as
    PyTorch's. PyTorch (on CPU) rejects an input outside [0, 1]; of does not
    read the values, and such an input gives NaN."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_size("Using a target size (torch.Size({})) that is different to the input size "
               "(torch.Size({})) is deprecated. Please ensure they have the same size.",
               target, input)
    log_x = _ops.clamp(_ops.log(input), min=-100.0)
    log_1mx = _ops.clamp(_ops.log(_ops.sub(1.0, input)), min=-100.0)
    loss = _ops.neg(_ops.add(_ops.mul(target, log_x),
                             _ops.mul(_ops.sub(1.0, target), log_1mx)))
    if weight is not None:
        loss = _ops.mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(x), t) in PyTorch's stable form:
    (1 - t) x + (1 + (pos_weight - 1) t) (log(1 + exp(-|x|)) + max(-x, 0))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_size("Target size (torch.Size({})) must be the same as input size "
               "(torch.Size({}))", target, input)
    softplus_neg = _ops.add(_ops.log(_ops.add(_ops.exp(_ops.neg(_ops.abs(input))), 1.0)),
                            _ops.relu(_ops.neg(input)))
    if pos_weight is not None:
        softplus_neg = _ops.mul(softplus_neg,
                                _ops.add(_ops.mul(_ops.sub(pos_weight, 1.0), target), 1.0))
    loss = _ops.add(_ops.mul(_ops.sub(1.0, target), input), softplus_neg)
    if weight is not None:
        loss = _ops.mul(loss, weight)
    return _reduce(loss, reduction)


def _pair_or_none(name, size):
    size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
    if len(size) != 2:
        raise ValueError(f"{name}: output_size must be 2")
    return size


def adaptive_avg_pool2d(input, output_size):
    """avg_pool2d with kernel and stride H/oh x W/ow: PyTorch's result where
    the output size divides the input size (None keeps that dimension).
    Other sizes (PyTorch's overlapping windows) raise NotImplementedError."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = _pair_or_none("adaptive_avg_pool2d", output_size)
    oh, ow = (h if oh is None else oh), (w if ow is None else ow)
    if oh <= 0 or ow <= 0 or h % oh or w % ow:
        raise NotImplementedError(
            f"torch.nn.functional.adaptive_avg_pool2d with output size {(oh, ow)} for an input "
            f"of size {(h, w)} is not supported by of: only output sizes that divide the "
            "input size (as avg_pool2d)")
    kernel = (h // oh, w // ow)
    if input.ndim == 3:
        x = _ops.reshape(input, (1,) + tuple(input.shape))
        return _ops.reshape(avg_pool2d(x, kernel, kernel), (input.shape[0], oh, ow))
    return avg_pool2d(input, kernel, kernel)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalises each group of num_groups channels' elements of every
    sample (biased variance), then scales and shifts per channel."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    x = _ops.reshape(input, (n, num_groups, -1))
    centred = _ops.sub(x, _ops.mean(x, -1, keepdim=True))
    var = _ops.mean(_ops.mul(centred, centred), -1, keepdim=True)
    y = _ops.reshape(_ops.mul(centred, _ops.rsqrt(_ops.add(var, eps))), tuple(input.shape))
    channel = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = _ops.mul(y, _ops.reshape(weight, channel))
    if bias is not None:
        y = _ops.add(y, _ops.reshape(bias, channel))
    return y


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
