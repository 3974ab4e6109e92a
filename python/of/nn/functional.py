"""of.nn.functional: PyTorch's functional API over of ops.

Every function has PyTorch's signature (parameter names, order and
defaults); an argument value of does not support raises
NotImplementedError (of._compat)."""
# ruff: noqa: A002  (PyTorch's parameter is called `input`)

import math
import warnings

import numpy as np

from .. import _dtype as dt
from .. import _ops
from .. import _torch_functions as _tf
from .._compat import inplace as _inplace
from .._compat import legacy_reduction, softmax_dim, unsupported
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


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x (so the gradient at 0 is
    negative_slope, as PyTorch's)."""
    out = _ops.where(_ops.gt(input, 0), input, _ops.mul(input, negative_slope))
    return _inplace("leaky_relu", input, out) if inplace else out


def _eager_random(api, input):  # noqa: A002
    if input._program is not None:
        raise NotImplementedError(
            f"{api} draws its random numbers eagerly; inside a compiled function they would be "
            "drawn once, at tracing: call it outside the compiled function")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """x where x >= 0, else a x: a drawn uniformly from [lower, upper] per
    element in training, (lower + upper) / 2 otherwise (PyTorch's; the
    functional form's default is training=False)."""
    if training:
        _eager_random("rrelu(training=True)", input)
        slope = _ops.add(_ops.mul(_ops.rand(*input.shape, dtype=input.dtype,
                                            device=input.device), upper - lower), lower)
    else:
        slope = (lower + upper) / 2
    out = _ops.where(_ops.ge(input, 0), input, _ops.mul(input, slope))
    return _inplace("rrelu", input, out) if inplace else out


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with Gumbel noise g = -log(E), E ~ Exp(1);
    with `hard`, the one-hot of its largest element, whose gradient is the
    soft sample's (straight-through)."""
    del eps  # unused, as in PyTorch
    _eager_random("gumbel_softmax", logits)
    uniform = _ops.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    # E = -log(1 - U), U in [0, 1), so E > 0 and g = -log(E) is finite
    gumbels = _ops.neg(_ops.log(_ops.neg(_ops.log(_ops.sub(1.0, uniform)))))
    y_soft = softmax(_ops.div(_ops.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = _ops.argmax(y_soft, dim, keepdim=True)
    y_hard = _tf.scatter(_ops.zeros_like(y_soft), dim, index, value=1.0)
    return _ops.add(_ops.sub(y_hard, y_soft.detach()), y_soft)


# -- the activations PyTorch composes elementwise: each is a where over of ops
# whose branches give PyTorch's gradient at the kinks (its *_backward kernels'
# conditions), so eager backward and compiled steps agree with it there too.

def _float_activation(api, input):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"{api}" not implemented for \'{input.dtype}\'')
    return input


def _elu(api, input, alpha, scale, input_scale, inplace):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)), the
    negative branch taken at 0 (PyTorch's elu_backward)."""
    x = _float_activation(api, input)
    negative = _ops.mul(_tf.expm1(_ops.mul(_ops.minimum(x, 0.0), input_scale)), alpha * scale)
    out = _ops.where(_ops.gt(x, 0), _ops.mul(x, scale) if scale != 1 else x, negative)
    return _inplace(api, input, out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    return _elu("elu", input, alpha, 1.0, 1.0, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    return _elu("selu", input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _elu("celu", input, alpha, 1.0, 1.0 / alpha, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold (the
    exponential's argument is capped there, so its unused branch stays
    finite and gives no NaN gradient)."""
    x = _float_activation("softplus", input)
    bx = _ops.mul(x, beta) if beta != 1 else x
    smooth = _tf.log1p(_ops.exp(_ops.minimum(bx, float(threshold))))
    if beta != 1:
        smooth = _ops.div(smooth, beta)
    return _ops.where(_ops.gt(bx, threshold), x, smooth)


def mish(input, inplace=False):
    out = _ops.mul(input, _ops.tanh(softplus(input)))
    return _inplace("mish", input, out) if inplace else out


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) whose gradient is 0 at the bounds
    (PyTorch's hardtanh_backward)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    x = input
    out = _ops.where(_ops.le(x, min_val), min_val, _ops.where(_ops.ge(x, max_val), max_val, x))
    return _inplace("hardtanh", input, out) if inplace else out


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    x = _float_activation("hardsigmoid", input)
    middle = _ops.add(_ops.div(x, 6.0), 0.5)
    out = _ops.where(_ops.le(x, -3.0), 0.0, _ops.where(_ops.ge(x, 3.0), 1.0, middle))
    return _inplace("hardsigmoid", input, out) if inplace else out


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6; its gradient x / 3 + 1/2 inside (-3, 3), 0 at
    -3 and 1 at 3 (PyTorch's)."""
    x = _float_activation("hardswish", input)
    middle = _ops.div(_ops.mul(x, _ops.add(x, 3.0)), 6.0)
    out = _ops.where(_ops.le(x, -3.0), 0.0, _ops.where(_ops.ge(x, 3.0), x, middle))
    return _inplace("hardswish", input, out) if inplace else out


def logsigmoid(input):
    """log(sigmoid(x)): x - log1p(exp(x)) below 0, -log1p(exp(-x)) from 0
    (the gradient 1 - sigmoid(x), 1/2 at 0), each exponential's argument
    capped at 0 so neither branch overflows."""
    x = _float_activation("log_sigmoid_forward", input)
    below = _ops.sub(x, _tf.log1p(_ops.exp(_ops.minimum(x, 0.0))))
    above = _ops.neg(_tf.log1p(_ops.exp(_ops.neg(_ops.maximum(x, 0.0)))))
    return _ops.where(_ops.lt(x, 0.0), below, above)


def glu(input, dim=-1):
    """a * sigmoid(b) for the halves a, b of `dim`."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim if -input.ndim <= dim < input.ndim else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got {dim})")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = _ops.split(input, n // 2, d)
    return _ops.mul(a, _ops.sigmoid(b))


def softsign(input):
    return _ops.div(input, _ops.add(_ops.abs(input), 1.0))


def tanhshrink(input):
    return _ops.sub(input, _ops.tanh(input))


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    x = input
    return _ops.where(_ops.gt(x, lambd), _ops.sub(x, lambd),
                      _ops.where(_ops.lt(x, -lambd), _ops.add(x, lambd), 0.0))


def hardshrink(input, lambd=0.5):
    x = input
    return _ops.where(_ops.gt(_ops.abs(x), lambd), x, 0.0)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    out = _ops.where(_ops.gt(input, threshold), input, value)
    return _inplace("threshold", input, out) if inplace else out


def prelu(input, weight):
    """x where x > 0, else weight * x; weight has one element or one per
    channel (dimension 1)."""
    if weight.ndim > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    w = weight
    count = weight.numel() if hasattr(weight, "numel") else int(np.prod(weight.shape))
    if count != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if count != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {count} and channel size = {channels}.")
        w = _ops.reshape(weight, (channels,) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        w = _ops.reshape(weight, ())
    return _ops.where(_ops.gt(input, 0), input, _ops.mul(input, w))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return _ops.softmax(_ops.neg(input), softmax_dim("softmin", input.ndim, dim), dtype=dtype)


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


def _padding_index(padding_idx, rows):
    """PyTorch's check and wrap of an embedding's padding_idx (None: -1)."""
    if padding_idx is None:
        return -1
    if not -rows <= padding_idx < rows:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                           f"through {rows - 1}, but got {padding_idx}")
    return padding_idx % rows


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """The sum, mean or max of each bag's rows of `weight`: the rows of a
    2-D input [B, L], or of a 1-D input cut into bags at `offsets` (bag b
    is input[offsets[b]:offsets[b + 1]]; the last runs to the end, or to
    offsets[-1] with include_last_offset). Entries equal to padding_idx
    are left out (and not counted by the mean); an empty bag gives zeros.
    per_sample_weights (mode 'sum') scale the rows.

    Eager offsets cut the input into a [B, longest bag] table of positions
    (a gather) with a mask of the real ones; offsets traced in a compiled
    function give each position its bag by comparing it with the offsets,
    and each bag its rows by a [B, N] x [N, D] matmul (for 'max' a masked
    [B, N, D] maximum). Offsets that do not start at 0, decrease, or pass
    the input's end raise a RuntimeError; traced, they stop the run at the
    embedding's index check."""
    unsupported("embedding_bag", max_norm=(max_norm, None),
                scale_grad_by_freq=(scale_grad_by_freq, False), sparse=(sparse, False))
    if per_sample_weights is not None and \
            tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype not in (dt.int64, dt.int32):
            raise RuntimeError(f"Expected tensor for argument '{name}' to have one of the "
                               f"following scalar types: Long, Int; but got "
                               f"{_SCALAR_NAMES[t.dtype.name]} instead (while checking "
                               "arguments for embedding_bag)")
    pad = _padding_index(padding_idx, weight.shape[0])
    if input.ndim == 2:  # a bag per row (include_last_offset does not apply)
        keep = _ops.ne(input, pad) if padding_idx is not None else None
        return _bag_reduce(_ops.embedding(input, weight), keep, per_sample_weights, mode)
    if offsets._program is None and offsets._placement is None:
        return _ragged_bags(input, weight, offsets._value().astype(np.int64), mode,
                            per_sample_weights, include_last_offset, pad, padding_idx)
    return _traced_bags(input, weight, offsets, mode, per_sample_weights,
                        include_last_offset, pad, padding_idx)


def _bag_reduce(rows, keep, weights, mode):
    """The bags [B, L, D] of `rows` reduced over L: `keep` [B, L] (bool, or
    None for all) marks the entries that count, `weights` [B, L] scale
    them (mode 'sum')."""
    if mode == "max":
        if keep is None:
            return _ops.amax(rows, 1)
        top = _ops.amax(_ops.where(_ops.unsqueeze(keep, -1), rows, float("-inf")), 1)
        return _ops.where(_ops.unsqueeze(_ops.amax(keep, 1), -1), top, 0.0)
    if keep is not None:
        weights = _ops.cast(keep, rows.dtype) if weights is None else \
            _ops.where(keep, weights, 0.0)
    if weights is not None:
        rows = _ops.mul(rows, _ops.unsqueeze(_ops.cast(weights, rows.dtype), -1))
    total = _ops.sum(rows, 1)
    if mode == "sum":
        return total
    count = float(rows.shape[1]) if keep is None else \
        _ops.maximum(_ops.sum(_ops.cast(keep, rows.dtype), 1, keepdim=True), 1.0)
    return _ops.div(total, count)


def _bag_bounds(starts, count, include_last_offset):
    """Each bag's [start, end) in a 1-D input of `count` entries."""
    if include_last_offset:
        return starts[:-1], starts[1:]
    return starts, np.append(starts[1:], count)


def _ragged_bags(input, weight, offsets, mode, weights, include_last_offset, pad,
                 padding_idx):
    n = input.shape[0]
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the "
                           "mini-batch has to start from position 0. However, got "
                           f"{offsets[0]}")
    if offsets.size and offsets[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {offsets[-1]}")
    if np.any(np.diff(offsets) < 0):
        raise RuntimeError(f"embedding_bag: offsets must not decrease, got {offsets.tolist()}")
    starts, ends = _bag_bounds(offsets, n, include_last_offset)
    longest = int(max((ends - starts).max(initial=0), 1))
    step = np.arange(longest)
    real = step[None, :] < (ends - starts)[:, None]
    positions = np.where(real, starts[:, None] + step[None, :], 0).reshape(-1)
    if n == 0:  # every bag empty
        return Tensor(np.zeros((len(starts), weight.shape[1]), weight.dtype.np),
                      dtype=weight.dtype, device=weight.device)
    where = Tensor(positions, dtype=dt.int64, device=input.device)
    ids = _ops.reshape(_ops.index_select(input, 0, where), real.shape)
    keep = Tensor(real, dtype=dt.bool, device=input.device)
    if padding_idx is not None:
        keep = _ops.where(keep, _ops.ne(ids, pad), False)
    if weights is not None:
        weights = _ops.reshape(_ops.index_select(weights, 0, where), real.shape)
    return _bag_reduce(_ops.embedding(ids, weight), keep, weights, mode)


def _traced_bags(input, weight, offsets, mode, weights, include_last_offset, pad,
                 padding_idx):
    n, count = input.shape[0], offsets.shape[0]
    bags = count - 1 if include_last_offset else count
    offsets = _ops.cast(offsets, dt.int64)
    position = Tensor(np.arange(n), dtype=dt.int64, device=input.device)
    # bag[i]: the number of offsets at or before position i, less one
    bag = _ops.sub(_ops.sum(_ops.cast(_ops.le(_ops.unsqueeze(offsets, 0),
                                              _ops.unsqueeze(position, 1)), dt.int64), 1), 1)
    # offsets[0] != 0, a decrease or offsets[-1] > n: the embedding's index
    # check stops the run at a -1
    bad = _ops.add(_ops.cast(_ops.ne(_ops.narrow(offsets, 0, 0, 1), 0), dt.int64),
                   _ops.cast(_ops.gt(_ops.narrow(offsets, 0, count - 1, 1), n), dt.int64))
    if count > 1:
        steps = _ops.sub(_ops.narrow(offsets, 0, 1, count - 1),
                         _ops.narrow(offsets, 0, 0, count - 1))
        bad = _ops.add(bad, _ops.sum(_ops.cast(_ops.lt(steps, 0), dt.int64)))
    ids = _ops.where(_ops.gt(bad, 0), -1, _ops.cast(input, dt.int64))
    rows = _ops.embedding(ids, weight)
    if mode == "max":  # a [bags, n] mask of each bag's entries
        keep = _ops.eq(_ops.unsqueeze(bag, 0), Tensor(np.arange(bags).reshape(-1, 1),
                                                      dtype=dt.int64, device=input.device))
        if padding_idx is not None:
            keep = _ops.where(keep, _ops.unsqueeze(_ops.ne(ids, pad), 0), False)
        return _bag_reduce(_ops.unsqueeze(rows, 0), keep, None, mode)
    if bags == 0:
        return Tensor(np.zeros((0, weight.shape[1]), weight.dtype.np), dtype=weight.dtype,
                      device=weight.device)
    # sum and mean: the rows added into their bags (one scatter-add, whose
    # gradient gathers), positions after the last bag (include_last_offset)
    # and padding entries weighted 0 in the last bag
    counted = _ops.lt(bag, bags)
    if padding_idx is not None:
        counted = _ops.where(counted, _ops.ne(ids, pad), False)
    scale = _ops.cast(counted, weight.dtype)
    if weights is not None:
        scale = _ops.mul(scale, _ops.cast(weights, weight.dtype))
    into = _ops.minimum(bag, bags - 1)
    zeros = Tensor(np.zeros((bags, weight.shape[1]), weight.dtype.np), dtype=weight.dtype,
                   device=weight.device)
    total = _ops.add_rows(zeros, into, _ops.mul(rows, _ops.unsqueeze(scale, 1)))
    if mode == "sum":
        return total
    no_counts = Tensor(np.zeros((bags, 1), weight.dtype.np), dtype=weight.dtype,
                       device=weight.device)
    count = _ops.add_rows(no_counts, into, _ops.unsqueeze(_ops.cast(counted, weight.dtype), 1))
    return _ops.div(total, _ops.maximum(count, 1.0))


def _ntuple(value, n):
    """A convolution's int-or-tuple argument as an n-tuple (PyTorch's
    _single / _pair)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _conv_padding(padding, kernel, stride, dilation):
    """The zeros (before, after) each spatial dimension of a convolution's
    input gets: `padding` as numbers, or PyTorch's 'valid' (none) and 'same'
    (dilation * (kernel - 1) in all, the odd one after)."""
    if not isinstance(padding, str):
        return [(p, p) for p in _ntuple(padding, len(kernel))]
    if padding == "valid":
        return [(0, 0)] * len(kernel)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(dilation, kernel)]
    return [(t // 2, t - t // 2) for t in total]


def _zeros_beside(x, dim, before, after, value=0):
    """x with `before` zeros (or `value`s) ahead of and `after` behind its
    elements along `dim`; a negative count cuts that many elements
    instead."""
    cut_before, cut_after = max(-before, 0), max(-after, 0)
    if cut_before or cut_after:
        x = _ops.narrow(x, dim, cut_before, x.shape[dim] - cut_before - cut_after)
    def filled(count):
        shape = list(x.shape)
        shape[dim] = count
        return [Tensor(np.full(shape, value, x.dtype.np), dtype=x.dtype, device=x.device)] \
            if count > 0 else []
    parts = filled(before) + [x] + filled(after)
    return _ops.cat(parts, dim) if len(parts) > 1 else x


def _pad_positions(mode, n, before, after):
    """The source positions along a dimension of size n of a `mode`
    padding by (before, after), negative counts cutting: PyTorch's
    reflection about the first and last element of the whole dimension,
    replication of them, or the circular wrap of what is left after the
    cuts."""
    if mode == "circular":
        start, stop = max(-before, 0), n - max(-after, 0)
        kept = stop - start
        if max(before, 0) > kept or max(after, 0) > kept:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        return start + np.arange(-max(before, 0), kept + max(after, 0)) % kept
    i = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return np.where(i < 0, -i, np.where(i >= n, 2 * (n - 1) - i, i))  # reflect


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` = (before, after) pairs from the last
    dimension backwards; negative counts cut. "constant" concatenates
    blocks of `value` (0 by default); "reflect", "replicate" and
    "circular" gather the padded elements of each dimension (so repeated
    sources add up their gradients) and concatenate them with the kept
    ones."""
    pads = list(pad)
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pads)} and input of "
                           f"dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    x = input
    if mode == "constant":
        for k in range(len(pads) // 2):
            x = _zeros_beside(x, x.ndim - 1 - k, pads[2 * k], pads[2 * k + 1],
                              0 if value is None else value)
        return x
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    spatial = len(pads) // 2
    if spatial not in (1, 2, 3) or input.ndim not in (spatial + 1, spatial + 2):
        raise NotImplementedError(
            f"Padding size {len(pads)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for k in range(spatial):
        dim, (before, after) = x.ndim - 1 - k, pads[2 * k:2 * k + 2]
        n = x.shape[dim]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({before}, "
                               f"{after}) at dimension {dim} of input {list(x.shape)}")
        if before == 0 and after == 0:
            continue
        positions = _pad_positions(mode, n, before, after)
        # the kept run of positions is a narrow; the padded ends are gathers
        first = max(before, 0)
        kept = len(positions) - first - max(after, 0)
        parts = []
        if first:
            parts.append(_take(x, dim, positions[:first]))
        parts.append(_ops.narrow(x, dim, int(positions[first]), kept))
        if after > 0:
            parts.append(_take(x, dim, positions[first + kept:]))
        x = _ops.cat(parts, dim) if len(parts) > 1 else parts[0]
    return x


def _conv_pads(x, pads):
    """The padding `pads` ((before, after) per trailing dimension of x) as
    the symmetric part a convolution takes and the input with the rest
    added (or cut) explicitly."""
    symmetric = []
    for i, (before, after) in enumerate(pads):
        common = max(0, min(before, after))
        x = _zeros_beside(x, x.ndim - len(pads) + i, before - common, after - common)
        symmetric.append(common)
    return x, tuple(symmetric)


def _unbatched(api, input, spatial):
    """`input` with its batch dimension ([C, ...] -> [1, C, ...]) and whether
    it had none, after PyTorch's check of its rank."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) "
                           f"input to {api}, but got input of size: {list(input.shape)}")
    if input.ndim == spatial + 1:
        return _ops.unsqueeze(input, 0), True
    return input, False


def _conv_weight(api, weight, spatial):
    if weight.ndim != spatial + 2:
        raise RuntimeError(f"{api}: expected a {spatial + 2}-D weight, got "
                           f"{list(weight.shape)}")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A conv2d over a unit height: [N, C, L] as [N, C, 1, L] and the weight
    [O, C / groups, K] as [O, C / groups, 1, K]."""
    _conv_weight("conv1d", weight, 1)
    x, unbatched = _unbatched("conv1d", input, 1)
    stride, dilation = _ntuple(stride, 1), _ntuple(dilation, 1)
    pads = _conv_padding(padding, tuple(weight.shape[2:]), stride, dilation)
    x, (pad,) = _conv_pads(_ops.unsqueeze(x, 2), pads)
    y = _ops.conv2d(x, _ops.unsqueeze(weight, 2), bias, (1,) + stride, (0, pad),
                    (1,) + dilation, groups)
    y = _ops.squeeze(y, 2)
    return _ops.squeeze(y, 0) if unbatched else y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    _conv_weight("conv2d", weight, 2)
    x, unbatched = _unbatched("conv2d", input, 2)
    stride, dilation = _ntuple(stride, 2), _ntuple(dilation, 2)
    pads = _conv_padding(padding, tuple(weight.shape[2:]), stride, dilation)
    x, padding = _conv_pads(x, pads)
    y = _ops.conv2d(x, weight, bias, stride, padding, dilation, groups)
    return _ops.squeeze(y, 0) if unbatched else y


def _conv3d(x, weight, bias, stride, padding, dilation, groups):
    """A 3-D convolution of a batched input as 2-D ones: for each depth
    tap k of the kernel, the input's depth slices that tap reads (a strided
    slice of the depth axis, folded into the batch) convolved with
    weight[:, :, k], the taps' results added."""
    n, c, d, h, w = x.shape
    if padding[0]:
        x = _zeros_beside(x, 2, padding[0], padding[0])
        d += 2 * padding[0]
    kd, sd, dd = weight.shape[2], stride[0], dilation[0]
    out_d = (d - dd * (kd - 1) - 1) // sd + 1
    if out_d <= 0:
        raise RuntimeError(f"Calculated padded input size per channel: ({d} x {h} x {w}). "
                           f"Kernel size: ({kd} x {weight.shape[3]} x {weight.shape[4]}). "
                           "Kernel size can't be greater than actual input size")
    depth_major = _ops.permute(x, [0, 2, 1, 3, 4])
    total = None
    for k in range(kd):
        taps = depth_major[:, k * dd:k * dd + sd * (out_d - 1) + 1:sd]
        y = _ops.conv2d(_ops.reshape(taps, (n * out_d, c, h, w)), weight[:, :, k], None,
                        stride[1:], padding[1:], dilation[1:], groups)
        total = y if total is None else _ops.add(total, y)
    o, oh, ow = total.shape[1:]
    y = _ops.permute(_ops.reshape(total, (n, out_d, o, oh, ow)), [0, 2, 1, 3, 4])
    return _ops.add(y, _ops.reshape(bias, (1, o, 1, 1, 1))) if bias is not None else y


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    _conv_weight("conv3d", weight, 3)
    x, unbatched = _unbatched("conv3d", input, 3)
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have "
                           f"{weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           "channels instead")
    stride, dilation = _ntuple(stride, 3), _ntuple(dilation, 3)
    pads = _conv_padding(padding, tuple(weight.shape[2:]), stride, dilation)
    x, padding = _conv_pads(x, pads)
    y = _conv3d(x, weight, bias, stride, padding, dilation, groups)
    return _ops.squeeze(y, 0) if unbatched else y


def _conv_transpose(api, spatial, input, weight, bias, stride, padding, output_padding,
                    groups, dilation):
    """The transpose of a convolution (its gradient with respect to its
    input) as a convolution: the input with stride - 1 zeros between its
    elements and dilation * (kernel - 1) - padding zeros around it
    (output_padding more after, a negative count cutting), convolved at
    stride 1 with the kernel flipped and its input and output channels
    swapped within each group. 1-D goes over a unit height."""
    _conv_weight(api, weight, spatial)
    x, unbatched = _unbatched(api, input, spatial)
    if isinstance(padding, str):
        raise TypeError(f"{api}(): argument 'padding' must be a tuple of ints, not str")
    stride, padding = _ntuple(stride, spatial), _ntuple(padding, spatial)
    output_padding, dilation = _ntuple(output_padding, spatial), _ntuple(dilation, spatial)
    for op, st, dl in zip(output_padding, stride, dilation):
        if op >= st and op >= dl:
            raise RuntimeError(f"{api}: output padding must be smaller than either stride or "
                               f"dilation, but got output_padding={list(output_padding)}, "
                               f"stride={list(stride)}, dilation={list(dilation)}")
    cin, cout_g = weight.shape[0], weight.shape[1]
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {cin} channels, but got "
                           f"{x.shape[1]} channels instead")
    if cin % groups:
        raise RuntimeError(f"{api}: the weight's {cin} input channels do not divide into "
                           f"{groups} groups")
    kernel = tuple(weight.shape[2:])
    if spatial == 1:  # over a unit height
        x, weight = _ops.unsqueeze(x, 2), _ops.unsqueeze(weight, 2)
        stride, padding = (1,) + stride, (0,) + padding
        output_padding, dilation, kernel = (0,) + output_padding, (1,) + dilation, (1,) + kernel
    dims = len(kernel)
    n, c, sizes = x.shape[0], x.shape[1], tuple(x.shape[2:])
    if any(st != 1 for st in stride):  # stride - 1 zeros after each element
        x = _ops.reshape(x, (n, c) + sum(((s, 1) for s in sizes), ()))
        for i, st in enumerate(stride):
            x = _zeros_beside(x, 3 + 2 * i, 0, st - 1)
        x = _ops.reshape(x, (n, c) + tuple(s * st for s, st in zip(sizes, stride)))
    pads = [(dl * (k - 1) - p, dl * (k - 1) - p + op - (st - 1))
            for k, st, p, op, dl in zip(kernel, stride, padding, output_padding, dilation)]
    x, symmetric = _conv_pads(x, pads)
    flipped = _ops.reshape(weight, (groups, cin // groups, cout_g) + kernel)
    flipped = _ops.reshape(_ops.permute(flipped, [0, 2, 1] + list(range(3, 3 + dims))),
                           (groups * cout_g, cin // groups) + kernel)
    flipped = _ops.flip(flipped, [2 + i for i in range(dims) if kernel[i] > 1])
    if dims == 3:
        y = _conv3d(x, flipped, bias, (1, 1, 1), symmetric, dilation, groups)
    else:
        y = _ops.conv2d(x, flipped, bias, 1, symmetric, dilation, groups)
    if spatial == 1:
        y = _ops.squeeze(y, 2)
    return _ops.squeeze(y, 0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _patch_kernel(kernel_size, dtype, device):
    """The identity kernel [kh * kw, 1, kh, kw] whose convolution copies
    each window's elements into channels (unfold), and whose transposed
    convolution adds them back into place (fold)."""
    kh, kw = kernel_size
    eye = np.eye(kh * kw, dtype=dtype.np).reshape(kh * kw, 1, kh, kw)
    return Tensor(eye, dtype=dtype, device=device)


def _patch_arguments(api, kernel_size, dilation, padding, stride):
    args = [_ntuple(v, 2) for v in (kernel_size, dilation, padding, stride)]
    for name, v, least in zip(("kernel_size", "dilation", "padding", "stride"), args,
                              (1, 1, 0, 1)):
        if len(v) != 2 or any(e < least for e in v):
            raise RuntimeError(f"{api}: expected {name} to be 2 numbers of at least {least}, "
                               f"got {list(v)}")
    return args


def _sliding_blocks(sizes, kernel, dilation, padding, stride):
    """The number of windows along each spatial dimension (unfold's L
    factors)."""
    return [(s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, p, d, k, st in zip(sizes, padding, dilation, kernel, stride)]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): [N, C, H, W] -> [N, C * kh * kw,
    L], each column one window's elements channel by channel; one
    convolution of every channel (as a batch of one-channel images) with
    the identity kernel."""
    kernel, dilation, padding, stride = _patch_arguments("unfold", kernel_size, dilation,
                                                         padding, stride)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.ndim}D)")
    x, unbatched = _unbatched("unfold", input, 2)
    n, c, h, w = x.shape
    out = _sliding_blocks((h, w), kernel, dilation, padding, stride)
    if min(out) < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size "
                           f"{list(kernel)}, dilation {list(dilation)}, padding "
                           f"{list(padding)}, calculated shape of the array of sliding blocks "
                           f"as ({out[0]}, {out[1]}), but its components must be at least one.")
    cols = _ops.conv2d(_ops.reshape(x, (n * c, 1, h, w)),
                       _patch_kernel(kernel, x.dtype, x.device), None, stride, padding,
                       dilation, 1)
    y = _ops.reshape(cols, (n, c * kernel[0] * kernel[1], out[0] * out[1]))
    return _ops.squeeze(y, 0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im), unfold's adjoint: the columns'
    elements added into an [N, C, *output_size] image (overlapping windows
    sum); the transposed convolution of unfold's identity kernel."""
    kernel, dilation, padding, stride = _patch_arguments("fold", kernel_size, dilation,
                                                         padding, stride)
    size = _ntuple(output_size, 2)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors "
                           f"are supported (got {input.ndim}D)")
    x = input if input.ndim == 3 else _ops.unsqueeze(input, 0)
    n, rows, length = x.shape
    taps = kernel[0] * kernel[1]
    if rows % taps:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={rows} and "
                           f"kernel_size={tuple(kernel)}")
    blocks = _sliding_blocks(size, kernel, dilation, padding, stride)
    if min(blocks) < 1 or blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size={tuple(size)}, kernel_size={tuple(kernel)}, "
                           f"dilation={tuple(dilation)}, padding={tuple(padding)}, "
                           f"stride={tuple(stride)}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={length}.")
    c = rows // taps
    cols = _ops.reshape(x, (n * c, taps) + tuple(blocks))
    extra = [s + 2 * p - ((b - 1) * st + d * (k - 1) + 1)
             for s, p, b, st, d, k in zip(size, padding, blocks, stride, dilation, kernel)]
    y = _conv_transpose("fold", 2, cols, _patch_kernel(kernel, x.dtype, x.device), None,
                        stride, padding, extra, 1, dilation)
    y = _ops.reshape(y, (n, c) + size)
    return _ops.squeeze(y, 0) if input.ndim == 2 else y


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
    """softmax(q k^T * scale + mask) v. With dropout_p > 0 the weights are
    dropped out (the kept ones scaled by 1 / (1 - dropout_p)) before the
    product, as PyTorch's math kernel does, whether or not a module is
    training (callers pass 0.0 in eval mode). enable_gqa: key and value
    have fewer heads (dim -3), each serving query heads in turn, as
    repeat_interleave would give (here a broadcast)."""
    if enable_gqa:
        key, value = _shared_heads(query, key), _shared_heads(query, value)
    if dropout_p:
        return _attention_with_dropout(query, key, value, attn_mask, dropout_p, is_causal,
                                       scale)
    return _ops.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
                                             is_causal, scale)


def _shared_heads(query, kv):
    """kv [..., Hkv, S, E] with each head repeated for Hq / Hkv query heads."""
    if query.ndim < 3 or kv.ndim < 3:
        return kv
    hq, hkv = query.shape[-3], kv.shape[-3]
    if hq == hkv:
        return kv
    if hkv == 0 or hq % hkv:
        raise RuntimeError(f"scaled_dot_product_attention(enable_gqa=True): the query's {hq} "
                           f"heads must be a multiple of the key's and value's {hkv}")
    shape = list(kv.shape)
    repeated = _ops.broadcast_to(_ops.unsqueeze(kv, -3),
                                 shape[:-2] + [hq // hkv] + shape[-2:])
    return _ops.reshape(repeated, shape[:-3] + [hq] + shape[-2:])


@_ops.autocast_op("scaled_dot_product_attention")
def _attention_with_dropout(query, key, value, attn_mask, dropout_p, is_causal, scale):
    weights = _ops.attention_weights(query, key, attn_mask, is_causal, scale)
    return _ops.matmul(dropout(weights, dropout_p), value)


def _additive_mask(mask, name, dtype):
    """A bool mask (True: not allowed) as -inf / 0 of `dtype`; a float mask
    as it is (PyTorch's _canonical_mask)."""
    if mask is None:
        return None
    if mask.dtype is dt.bool:
        return _ops.where(mask, float("-inf"), Tensor(np.zeros((), dtype.np), dtype=dtype,
                                                      device=mask.device))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward (what
    nn.MultiheadAttention runs): time-first [L, N, E] query and [S, N, E]
    key and value (or unbatched [L, E], [S, E]) projected (self-attention,
    `query is key is value`, in one matmul), split into heads, with
    bias_k / bias_v and a zero position appended (source positions every
    mask allows), static_k / static_v ([N * heads, S, head_dim]) in place
    of the projected keys and values, attended (softmax weights computed
    and returned with need_weights, else scaled_dot_product_attention),
    joined and projected by out_proj. Bool masks are True where attention
    is not allowed; float masks are added to the scores."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but "
                             f"received {query.ndim}-D query tensor")
    batched = query.ndim == 3
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} "
                             f"`query`, expected `key` and `value` to be {query.ndim}-D but "
                             f"found {key.ndim}-D and {value.ndim}-D tensors respectively")
    if not batched:  # a batch of one: [L, E] -> [L, 1, E]
        query, key, value = (_ops.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _ops.unsqueeze(key_padding_mask, 0)
    length, n, e = query.shape
    source = key.shape[0]
    heads = num_heads
    hd = e // heads
    if e != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {e}")
    if hd * heads != e:
        raise AssertionError(f"embed_dim {e} not divisible by num_heads {heads}")
    if tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key shape {list(key.shape)} does not match value shape "
                             f"{list(value.shape)}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                           "the Transformer module method `generate_square_subsequent_mask` "
                           "to create this mask.")
    mask = _additive_mask(attn_mask, "attn_mask", query.dtype)
    if mask is not None:
        if mask.ndim == 2:
            if tuple(mask.shape) != (length, source):
                raise RuntimeError(f"The shape of the 2D attn_mask is {mask.shape}, but "
                                   f"should be {(length, source)}.")
            mask = _ops.reshape(mask, (1, 1, length, source))
        elif mask.ndim == 3:
            if tuple(mask.shape) != (n * heads, length, source):
                raise RuntimeError(f"The shape of the 3D attn_mask is {mask.shape}, but "
                                   f"should be {(n * heads, length, source)}.")
            mask = _ops.reshape(mask, (n, heads, length, source))
        else:
            raise RuntimeError(f"attn_mask's dimension {mask.ndim} is not supported")
    # the projections
    if not use_separate_proj_weight and query is key and key is value:
        q, k, v = _ops.chunk(linear(query, in_proj_weight, in_proj_bias), 3, -1)
    else:
        if use_separate_proj_weight:
            w = (q_proj_weight, k_proj_weight, v_proj_weight)
        else:
            w = _ops.chunk(in_proj_weight, 3)
        b = _ops.chunk(in_proj_bias, 3) if in_proj_bias is not None else (None,) * 3
        q, k, v = (linear(x, wi, bi) for x, wi, bi in zip((query, key, value), w, b))
    # [S, N, E] -> [N, heads, S, head_dim], or the static keys and values
    q, k, v = (_ops.permute(_ops.reshape(t, (t.shape[0], n, heads, hd)), [1, 2, 0, 3])
               for t in (q, k, v))
    extra = 0  # source positions appended: bias_k/v, then the zero one
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k, v = (_ops.cat([t, _ops.broadcast_to(_ops.reshape(b, (1, heads, 1, hd)),
                                               (n, heads, 1, hd))], 2)
                for t, b in ((k, bias_k), (v, bias_v)))
        extra += 1
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given, or neither")
    for name, static in (("static_k", static_k), ("static_v", static_v)):
        if static is not None:
            if static.shape[0] != n * heads or static.shape[2] != hd:
                raise AssertionError(f"expecting {name} of shape [{n * heads}, S, {hd}], but "
                                     f"got {list(static.shape)}")
            t = _ops.reshape(static, (n, heads, static.shape[1], hd))
            k, v = (t, v) if name == "static_k" else (k, t)
    if add_zero_attn:
        k, v = (_ops.cat([t, Tensor(np.zeros((n, heads, 1, hd), t.dtype.np), dtype=t.dtype,
                                    device=t.device)], 2) for t in (k, v))
        extra += 1
    if extra and mask is not None:
        mask = _zeros_beside(mask, 3, 0, extra)
    source = k.shape[2]
    padding = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if padding is not None:
        if tuple(padding.shape) != (n, source - extra):
            raise AssertionError(f"expecting key_padding_mask shape of {(n, source - extra)}, "
                                 f"but got {tuple(padding.shape)}")
        padding = _ops.reshape(_zeros_beside(padding, 1, 0, extra), (n, 1, 1, source))
        mask = padding if mask is None else _ops.add(mask, padding)
    p = dropout_p if training else 0.0
    if need_weights:
        weights = _ops.attention_weights(q, k, mask, scale=1.0 / math.sqrt(hd))
        if p > 0:
            weights = dropout(weights, p)
        out = _ops.matmul(weights, v)
    else:
        out = scaled_dot_product_attention(q, k, v, mask, p)
        weights = None
    # [N, heads, L, head_dim] -> [L, N, E]
    out = _ops.reshape(_ops.permute(out, [2, 0, 1, 3]), (length, n, e))
    out = linear(out, out_proj_weight, out_proj_bias)
    if weights is not None and average_attn_weights:
        weights = _ops.mean(weights, 1)
    if not batched:
        out = _ops.squeeze(out, 1)
        weights = _ops.squeeze(weights, 0) if weights is not None else None
    return out, weights


@_ops.autocast_op("cross_entropy")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits [N, C] ([C], or [N, C, d...])
    against class indices [N] ([], [N, d...]) or, for a floating-point
    target of the input's shape, class probabilities.

    Without weight and label smoothing it is one fused op per example;
    then labels equal to `ignore_index` count as absent when it is not the
    default -100, and with the default an out-of-range label (-100
    included) stops the run with the runtime's index check, never
    silently. With `weight` or `label_smoothing` > 0 it is PyTorch's
    definition composed of log_softmax and nll_loss (which masks any
    ignore_index, -100 included): (1 - eps) * nll_loss(weight) + eps / C
    * the smoothing term, -sum_c weight[c] * log_softmax[c] per element,
    zero where the target is ignored, and for the mean divided by the
    summed weights of the targets (their count without `weight`)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    class_dim = 0 if input.ndim == 1 else 1
    if tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction,
                                            label_smoothing, class_dim)
    if label_smoothing > 0.0 or weight is not None:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                               f"{label_smoothing}")
        logp = log_softmax(input, class_dim)
        nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
        if not label_smoothing > 0.0:
            return nll
        return _smoothed(logp, target, weight, ignore_index, reduction, label_smoothing,
                         class_dim, nll)
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
    return _ops.sum(ce) if reduction == "sum" else ce


def _class_weight(weight, ndim, class_dim, classes):
    """`weight` [C] shaped to broadcast along the class dimension of an
    `ndim`-D input (PyTorch's expand_weight), after its size check."""
    if weight.ndim != 1 or weight.shape[0] != classes:
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    return _ops.reshape(weight, (classes,) + (1,) * (ndim - class_dim - 1))


def _smoothed(logp, target, weight, ignore_index, reduction, eps, class_dim, nll):
    """PyTorch's cross_entropy_loss_label_smoothing from the log
    probabilities and the nll_loss term."""
    classes = logp.shape[class_dim]
    w = None if weight is None else _class_weight(weight, logp.ndim, class_dim, classes)
    smooth = _ops.neg(_ops.sum(logp if w is None else _ops.mul(logp, w), class_dim))
    valid = target != ignore_index
    smooth = _ops.where(valid, smooth, 0.0)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = _ops.sum(smooth)
    elif weight is None:
        ret = _ops.div(_ops.sum(smooth), _ops.sum(_ops.cast(valid, logp.dtype)))
    else:  # the summed weights of the targets that count, as nll_loss's mean
        counted = _ops.where(valid, target, -1)  # -1: no class
        hit = _ops.unsqueeze(counted, -1) == _ops.arange(classes, device=logp.device)
        ret = _ops.div(_ops.sum(smooth), _ops.sum(_ops.where(hit, weight, 0.0)))
    return _ops.add(_ops.mul(nll, 1.0 - eps), _ops.mul(ret, eps / classes))


def _cross_entropy_probabilities(input, target, weight, ignore_index, reduction, eps,
                                 class_dim):
    """PyTorch's cross_entropy_loss_prob_target: -sum_c weight[c] *
    target[c] * log_softmax[c] per element, the target mixed with the
    uniform distribution by label_smoothing; the mean divides by the
    number of elements (not by weights)."""
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"Expected floating point type for target with class "
                           f"probabilities, got {_SCALAR_NAMES[target.dtype.name]}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    classes = input.shape[class_dim]
    if eps > 0.0:
        if eps > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {eps}")
        target = _ops.add(_ops.mul(target, 1.0 - eps), eps / classes)
    terms = _ops.mul(log_softmax(input, class_dim), target)
    if weight is not None:
        terms = _ops.mul(terms, _class_weight(weight, input.ndim, class_dim, classes))
    loss = _ops.neg(_ops.sum(terms, class_dim))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _ops.sum(loss)
    return _ops.div(_ops.sum(loss), float(input.numel() // classes))


# PyTorch's scalar type names, for its dtype messages.
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int8": "Char",
                 "bool": "Bool", "uint8": "Byte"}


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


def _warn_broadcast(target, input):  # noqa: A002
    """PyTorch's warning for an elementwise loss whose target is not the
    input's size (they are broadcast)."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size (torch.Size({list(target.shape)})) that is "
                      f"different to the input size (torch.Size({list(input.shape)})). This "
                      "will likely lead to incorrect results due to broadcasting. Please "
                      "ensure they have the same size.", UserWarning, stacklevel=3)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|x - y|, reduced."""
    unsupported("l1_loss", weight=(weight, None))
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast(target, input)
    return _reduce(_ops.abs(_ops.sub(input, target)), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """PyTorch's: with z = |x - y|, 0.5 z^2 / beta where z < beta, else
    z - 0.5 beta (l1_loss for beta = 0); the gradient is (x - y) / beta
    inside, sign(x - y) outside, as PyTorch's."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast(target, input)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    z = _ops.abs(_ops.sub(input, target))
    loss = _ops.where(_ops.lt(z, beta), _ops.div(_ops.mul(_ops.mul(z, z), 0.5), beta),
                      _ops.sub(z, 0.5 * beta))
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """PyTorch's: with z = |x - y|, 0.5 z^2 where z < delta, else
    delta (z - 0.5 delta)."""
    unsupported("huber_loss", weight=(weight, None))
    _warn_broadcast(target, input)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    z = _ops.abs(_ops.sub(input, target))
    loss = _ops.where(_ops.lt(z, delta), _ops.mul(_ops.mul(z, z), 0.5),
                      _ops.mul(_ops.sub(z, 0.5 * delta), delta))
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None,  # noqa: A002
                                reduce=None, reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class,
    averaged over the classes, then reduced over the batch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = _ops.neg(_ops.add(_ops.mul(target, logsigmoid(input)),
                             _ops.mul(_ops.sub(1.0, target), logsigmoid(_ops.neg(input)))))
    if weight is not None:
        loss = _ops.mul(loss, weight)
    loss = _ops.div(_ops.sum(loss, input.ndim - 1), float(input.shape[-1]))
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None,  # noqa: A002
                     eps=1e-8, reduce=None, reduction="mean"):
    """exp(x) - y x (log_input), else x - y log(x + eps); with `full`, the
    Stirling term y log y - y + log(2 pi y) / 2 where y > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = _ops.sub(_ops.exp(input), _ops.mul(target, input))
    else:
        loss = _ops.sub(input, _ops.mul(target, _ops.log(_ops.add(input, eps))))
    if full:
        safe = _ops.where(_ops.gt(target, 1.0), target, _ops.ones_like(target))
        stirling = _ops.add(_ops.sub(_ops.mul(safe, _ops.log(safe)), safe),
                            _ops.mul(_ops.log(_ops.mul(safe, 2 * math.pi)), 0.5))
        loss = _ops.add(loss, _ops.where(_ops.gt(target, 1.0), stirling,
                                         _ops.zeros_like(stirling)))
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """(log(max(var, eps)) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2
    with `full`); the clamp passes gradients through, as PyTorch's (it
    clamps a copy under no_grad). `var` may lack the last dimension of a
    homoscedastic input, or have it of size 1."""
    if isinstance(var, (int, float)):
        var = _ops.full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = _ops.unsqueeze(var, -1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if var._program is None and bool(_tf.any(_ops.lt(var, 0.0))):
        raise ValueError("var has negative entry/entries")
    # max(var, eps) in value, the identity in gradient
    clamped = _ops.add(var, _ops.sub(_ops.clamp_min(var, eps), var).detach())
    loss = _ops.mul(_ops.add(_ops.log(clamped), _ops.div(_ops.square(_ops.sub(input, target)),
                                                         clamped)), 0.5)
    if full:
        loss = _ops.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta,
    the window zero-padded (size // 2 before, (size - 1) // 2 after)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    squares = _ops.square(input)
    # the channels zero-padded by size // 2 before and (size - 1) // 2 after
    padded = pad(squares, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2))
    total = None
    for offset in range(size):
        part = _ops.narrow(padded, 1, offset, channels)
        total = part if total is None else _ops.add(total, part)
    div = _ops.pow(_ops.add(_ops.mul(total, alpha / size), k), beta)
    return _ops.div(input, div)


def bilinear(input1, input2, weight, bias=None):
    """x1^T A_o x2 (+ b_o) for each output o: weight (out, in1, in2)."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    lead = tuple(input1.shape[:-1])
    x1 = _ops.reshape(input1, (-1, input1.shape[-1]))
    x2 = _ops.reshape(input2, (-1, input2.shape[-1]))
    out = _tf.einsum("bi,oij,bj->bo", x1, weight, x2)
    if bias is not None:
        out = _ops.add(out, bias)
    return _ops.reshape(out, lead + (weight.shape[0],))


def _base_coordinates(size, align_corners):
    """The normalised coordinates of `size` pixel centres (-1..1)."""
    values = np.linspace(-1.0, 1.0, size) if size > 1 else np.zeros(1)
    return values if align_corners else values * (size - 1) / size


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) of the 2-D affine maps `theta`
    (N, 2, 3) for an output of `size` (N, C, H, W): each output pixel's
    normalised (x, y, 1) times theta^T."""
    align_corners = bool(align_corners)
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D sizes, for 2D affine "
                                  f"transforms (got size {list(size)})")
    n, _, h, w = (int(s) for s in size)
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    if theta.shape[0] != n:
        raise ValueError(f"affine_grid: theta has {theta.shape[0]} matrices for a size of "
                         f"batch {n}")
    xs, ys = np.meshgrid(_base_coordinates(w, align_corners), _base_coordinates(h, align_corners))
    base = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(1, h * w, 3)
    base = Tensor(base.astype(theta.dtype.np), dtype=theta.dtype, device=theta.device)
    grid = _ops.matmul(_ops.broadcast_to(base, (n, h * w, 3)), _ops.transpose(theta, 1, 2))
    return _ops.reshape(grid, (n, h, w, 2))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros",  # noqa: A002
                align_corners=None):
    """input (N, C, H, W) sampled at grid (N, Ho, Wo, 2) (x, y in -1..1):
    bilinear (or nearest) interpolation of the pixels around each point,
    outside ones 0 (padding_mode="zeros") or the border's ("border"). The
    corners are gathered (their gradient is the scatter-add), the weights
    are differentiable in the grid, as PyTorch's."""
    unsupported("grid_sample", padding_mode=(padding_mode if padding_mode != "border" else
                                             "zeros", "zeros"))
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample(mode={mode!r}) is not supported yet: of has "
                                  "'bilinear' and 'nearest'")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise NotImplementedError("grid_sample: of supports 4-D input (N, C, H, W) with a "
                                  f"grid (N, Ho, Wo, 2), not {list(input.shape)} and "
                                  f"{list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    align_corners = bool(align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]

    def pixel(coord, size):
        if align_corners:
            return _ops.mul(_ops.add(coord, 1.0), (size - 1) / 2)
        return _ops.div(_ops.sub(_ops.mul(_ops.add(coord, 1.0), size), 1.0), 2.0)

    ix = pixel(_ops.reshape(_tf.select(grid, 3, 0), (n, ho * wo)), w)
    iy = pixel(_ops.reshape(_tf.select(grid, 3, 1), (n, ho * wo)), h)
    if padding_mode == "border":
        ix = _ops.clamp(ix, 0.0, float(w - 1))
        iy = _ops.clamp(iy, 0.0, float(h - 1))
    flat = _ops.reshape(input, (n, c, h * w))

    def corner(xc, yc):
        """The pixels at integer (float-valued) coordinates xc, yc, 0 outside."""
        inside = _tf.logical_and(_tf.logical_and(_ops.ge(xc, 0.0), _ops.le(xc, w - 1.0)),
                                 _tf.logical_and(_ops.ge(yc, 0.0), _ops.le(yc, h - 1.0)))
        xi = _ops.cast(_ops.clamp(xc, 0.0, float(w - 1)), dt.int64)
        yi = _ops.cast(_ops.clamp(yc, 0.0, float(h - 1)), dt.int64)
        index = _ops.add(_ops.mul(yi, w), xi)
        index = _ops.broadcast_to(_ops.unsqueeze(index, 1), (n, c, ho * wo))
        values = _ops.gather(flat, 2, index)
        return _ops.where(_ops.unsqueeze(inside, 1), values, _ops.zeros_like(values))

    if mode == "nearest":
        out = corner(_tf.round(ix), _tf.round(iy))
    else:
        x0, y0 = _tf.floor(ix), _tf.floor(iy)
        x1, y1 = _ops.add(x0, 1.0), _ops.add(y0, 1.0)
        wx1, wy1 = _ops.sub(ix, x0), _ops.sub(iy, y0)
        wx0, wy0 = _ops.sub(x1, ix), _ops.sub(y1, iy)
        out = None
        for xc, yc, weight in ((x0, y0, _ops.mul(wx0, wy0)), (x1, y0, _ops.mul(wx1, wy0)),
                               (x0, y1, _ops.mul(wx0, wy1)), (x1, y1, _ops.mul(wx1, wy1))):
            term = _ops.mul(corner(xc, yc), _ops.unsqueeze(weight, 1))
            out = term if out is None else _ops.add(out, term)
    return _ops.reshape(out, (n, c, ho, wo))


def channel_shuffle(input, groups):  # noqa: A002
    """(N, C, *) with C = g k: the channels read as g x k, transposed."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = _ops.reshape(input, (n, groups, c // groups) + rest)
    return _ops.reshape(_ops.transpose(x, 1, 2), (n, c) + rest)


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


_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5}


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """target * (log(target) - input) (0 where target is 0), or with
    log_target exp(target) * (target - input); 'batchmean' divides the sum
    by the batch size."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        pointwise = _ops.mul(_ops.exp(target), _ops.sub(target, input))
    else:
        positive = _ops.gt(target, 0)
        safe = _ops.where(positive, target, 1.0)
        xlogx = _ops.where(positive, _ops.mul(target, _ops.log(safe)), 0.0)
        pointwise = _ops.sub(xlogx, _ops.mul(target, input))
    if reduction == "batchmean":
        total = _ops.sum(pointwise)
        return _ops.div(total, input.shape[0]) if input.ndim else total
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                      "the support size.'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition.'mean' will be changed to "
                      "behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    return _reduce(pointwise, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {list(input1.shape)}, input2: "
                           f"{list(input2.shape)}, target: {list(target.shape)} ")
    loss = _ops.maximum(_ops.add(_ops.mul(_ops.neg(target), _ops.sub(input1, input2)),
                                 margin), 0.0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """margin - x clamped at 0 where the target is not 1, plus x where it is
    not -1 (PyTorch's formula, also for other target values)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    clamped = _ops.maximum(_ops.sub(margin, input), 0.0)
    loss = _ops.add(_ops.where(_ops.ne(target, 1), clamped, 0.0),
                    _ops.where(_ops.ne(target, -1), input, 0.0))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce(_tf.log1p(_ops.exp(_ops.mul(_ops.neg(input), target))), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where the target is 1, max(0, cos - margin) where it
    is -1; cos with 1e-12 added to each squared magnitude (PyTorch's)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss: expected 1D or 2D inputs of the same "
                           f"dimension, got {input1.ndim}D and {input2.ndim}D")
    d = input1.ndim - 1
    dot = _ops.sum(_ops.mul(input1, input2), d)
    m1 = _ops.add(_ops.sum(_ops.mul(input1, input1), d), 1e-12)
    m2 = _ops.add(_ops.sum(_ops.mul(input2, input2), d), 1e-12)
    cos = _ops.div(dot, _ops.sqrt(_ops.mul(m1, m2)))
    loss = _ops.add(_ops.where(_ops.eq(target, 1), _ops.sub(1.0, cos), 0.0),
                    _ops.where(_ops.eq(target, -1),
                               _ops.maximum(_ops.sub(cos, margin), 0.0), 0.0))
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = _ops.maximum(_ops.add(_ops.sub(d_pos, d_neg), margin), 0.0)
    return _reduce(loss, reduction)


_CTC_NEVER = -1e30  # log of "no path": finite, so gradients through it stay 0


def _lengths(what, value, n, device):
    """ctc_loss's per-sequence lengths as an int64 [n] tensor (a number or a
    0-d tensor: one sequence's, as an unbatched input's)."""
    if not isinstance(value, Tensor) and np.ndim(value) == 0:
        value = [value]
    if isinstance(value, Tensor):
        lengths = _ops.cast(value, dt.int64)
        if lengths.ndim == 0:
            lengths = _ops.reshape(lengths, (1,))
    else:
        lengths = Tensor(np.asarray(value, np.int64), dtype=dt.int64, device=device)
    if tuple(lengths.shape) != (n,):
        raise RuntimeError(f"ctc_loss: {what} must have one entry per batch element ({n}), "
                           f"got shape {list(lengths.shape)}")
    return lengths


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """torch.nn.functional.ctc_loss: minus the log of the total probability
    of the alignments of each target with its input (Graves et al.), by the
    forward recursion over time on the target with blanks between its labels
    (2S + 1 states): each state's log-probability from itself, the one
    before and, between two different labels, the one two before. `log_probs`
    [T, N, C] (or [T, C]); `targets` [N, S] padded or 1-D concatenated (eager
    only). An impossible alignment has loss inf (0 with zero_infinity),
    whose gradient is 0. 'mean' divides each loss by its target length."""
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: log_probs must be [T, N, C] or [T, C], got "
                           f"{list(log_probs.shape)}")
    unbatched = log_probs.ndim == 2
    lp = _ops.unsqueeze(log_probs, 1) if unbatched else log_probs
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"blank must be in label range, got blank={blank} with {classes} "
                           "classes")
    device = log_probs.device
    input_lengths = _lengths("input_lengths", input_lengths, n, device)
    target_lengths = _lengths("target_lengths", target_lengths, n, device)
    if unbatched and targets.ndim == 1 and n == 1:
        targets = _ops.unsqueeze(targets, 0)
    if targets.ndim == 1:  # concatenated: padded to the longest
        if targets._program is not None or target_lengths._program is not None:
            raise NotImplementedError("ctc_loss with concatenated (1-D) targets in a compiled "
                                      "function: pass them padded, [N, S]")
        lengths = target_lengths._value()
        flat = np.asarray(targets._value(), np.int64)
        if lengths.sum() != flat.size:
            raise RuntimeError(f"ctc_loss: the target lengths add up to {int(lengths.sum())}, "
                               f"but targets has {flat.size} elements")
        padded = np.full((n, max(int(lengths.max(initial=0)), 1)), blank, np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        for b, (s, length) in enumerate(zip(starts, lengths)):
            padded[b, :length] = flat[s:s + length]
        targets = Tensor(padded, dtype=dt.int64, device=device)
    labels = _ops.cast(targets, dt.int64)
    width = labels.shape[1]
    states = 2 * width + 1
    # the extended target: blank, l1, blank, l2, ..., blank
    blanks = Tensor(np.full((n, width), blank, np.int64), dtype=dt.int64, device=device)
    ext = _ops.reshape(_ops.stack([blanks, labels], 2), (n, 2 * width))
    ext = _ops.cat([ext, _ops.narrow(blanks, 1, 0, 1) if width else
                    Tensor(np.full((n, 1), blank, np.int64), dtype=dt.int64, device=device)],
                   1)
    emit = _ops.gather(lp, 2, _ops.broadcast_to(_ops.unsqueeze(ext, 0), (steps, n, states)))
    never = Tensor(np.full((n, 1), _CTC_NEVER, lp.dtype.np), dtype=lp.dtype, device=device)
    # a skip over a blank: into a label that differs from the one two before
    if states > 2:
        later = _ops.narrow(ext, 1, 2, states - 2)
        skip = _ops.where(_ops.ne(later, blank), _ops.ne(later, _ops.narrow(ext, 1, 0, states - 2)),
                          False)
    first = Tensor((np.arange(states) < 2).reshape(1, states), dtype=dt.bool, device=device)
    alpha = _ops.where(first, _tf.select(emit, 0, 0), _CTC_NEVER)
    for t in range(1, steps):
        stay = alpha
        step = _ops.cat([never, _ops.narrow(alpha, 1, 0, states - 1)], 1) if states > 1 \
            else _ops.mul(alpha, 0.0) + _CTC_NEVER
        options = [stay, step]
        if states > 2:
            jump = _ops.where(skip, _ops.narrow(alpha, 1, 0, states - 2), _CTC_NEVER)
            options.append(_ops.cat([never, never, jump], 1))
        new = _ops.add(_tf.logsumexp(_ops.stack(options, 0), 0), _tf.select(emit, 0, t))
        running = _ops.unsqueeze(_ops.gt(input_lengths, t), 1)
        alpha = _ops.where(running, new, alpha)
    # the end: the last label or the blank after it
    last = _ops.unsqueeze(_ops.mul(target_lengths, 2), 1)
    end_blank = _ops.gather(alpha, 1, last)
    end_label = _ops.where(_ops.unsqueeze(_ops.gt(target_lengths, 0), 1),
                           _ops.gather(alpha, 1, _ops.maximum(_ops.sub(last, 1), 0)),
                           _CTC_NEVER)
    total = _tf.logsumexp(_ops.cat([end_blank, end_label], 1), 1)
    loss = _ops.neg(total)
    impossible = _ops.gt(loss, -_CTC_NEVER / 10)
    loss = _ops.where(impossible, 0.0 if zero_infinity else float("inf"), loss)
    if unbatched:
        loss = _ops.squeeze(loss, 0)
    if reduction == "mean":
        lengths = _ops.maximum(_ops.cast(target_lengths, loss.dtype), 1.0)
        if unbatched:
            lengths = _ops.squeeze(lengths, 0)
        return _ops.mean(_ops.div(loss, lengths))
    return _reduce(loss, reduction)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resamples the spatial dimensions of [N, C, d...] to `size` (or the
    input's times `scale_factor`, rounded down), one dimension at a time:
    'nearest' / 'nearest-exact' gather the source element PyTorch's kernel
    picks (its float32 index arithmetic), 'linear' / 'bilinear' /
    'trilinear' gather the two neighbours and mix them with PyTorch's
    weights (align_corners both ways), 'area' is adaptive_avg_pool2d.
    The gathers' gradients add up into the sources, as PyTorch's."""
    unsupported("interpolate", antialias=(antialias, False))
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    spatial = input.ndim - 2
    shape = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * spatial
        if len(sizes) != spatial:
            raise ValueError("Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {shape} "
                             f"and output size of {size}. Please provide input tensor in (N, "
                             "C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             "format.")
        scales = [None] * spatial
    elif scale_factor is not None:
        factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else \
            [scale_factor] * spatial
        if len(factors) != spatial:
            raise ValueError("Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {shape} "
                             f"and scale_factor of shape {scale_factor}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        sizes = [int(math.floor(float(n) * f)) for n, f in zip(shape, factors)]
        scales = [None] * spatial if recompute_scale_factor else [float(f) for f in factors]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if spatial not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.ndim}D) for the modes: nearest | linear | "
                                  "bilinear | bicubic | trilinear | area | nearest-exact (got "
                                  f"{mode})")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != input.ndim:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_LINEAR_MODES[mode]}D input")
    if mode == "area":
        if spatial != 2:
            raise NotImplementedError(f"interpolate(mode='area') of a {input.ndim}-D input is "
                                      "not supported yet: of has adaptive_avg_pool2d only")
        return adaptive_avg_pool2d(input, sizes)
    if mode not in ("nearest", "nearest-exact") and mode not in _LINEAR_MODES:
        raise NotImplementedError(f"interpolate(mode={mode!r}) is not supported yet: of has "
                                  "nearest, nearest-exact, linear, bilinear, trilinear and area")
    out = input
    for d, (n, m, scale) in enumerate(zip(shape, sizes, scales)):
        if m <= 0:
            raise RuntimeError(f"Input and output sizes should be greater than 0, but got "
                               f"input ({', '.join(map(str, shape))}) and output "
                               f"({', '.join(map(str, sizes))})")
        axis = 2 + d
        if mode in _LINEAR_MODES:
            out = _linear_resample(out, axis, n, m, scale, align_corners)
        else:
            out = _take(out, axis, _nearest_source(n, m, scale, mode == "nearest-exact",
                                                   shortcuts=spatial == 2))
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated in PyTorch for interpolate, which it calls (with its warning)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use "
                  "nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use "
                  "nn.functional.interpolate(..., mode='bilinear', align_corners=True) "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _take(x, axis, positions):
    """x's elements at the NumPy `positions` along `axis`: a gather, or,
    where each element is repeated k times in order (nearest upsampling by
    an integer factor), a broadcast, whose gradient is a sum rather than a
    scatter."""
    n, m = x.shape[axis], len(positions)
    if m % n == 0 and np.array_equal(positions, np.arange(m) // (m // n)):
        if m == n:
            return x
        shape = list(x.shape)
        repeated = _ops.broadcast_to(_ops.unsqueeze(x, axis + 1),
                                     shape[:axis + 1] + [m // n] + shape[axis + 1:])
        return _ops.reshape(repeated, shape[:axis] + [m] + shape[axis + 1:])
    return _ops.index_select(x, axis, Tensor(np.ascontiguousarray(positions, np.int64),
                                             dtype=dt.int64, device=x.device))


def _source_scale(n, m, scale):
    """PyTorch's compute_scales_value: 1 / scale_factor where one was given
    (and not recomputed), else input size / output size."""
    return 1.0 / scale if scale is not None and scale > 0 else n / m


def _nearest_source(n, m, scale, exact, shortcuts):
    """The source index of each of the m outputs, in float32 as PyTorch's
    CPU kernels compute it: its 2-D 'nearest' (nearest_idx) takes index i
    for the same size and i // 2 for twice the size whatever the scale
    factor, its 1-D and 3-D ones do not. (Their backward kernels do, so
    where that matters PyTorch's 1-D and 3-D gradient is not the one of its
    forward; of's is.)"""
    i = np.arange(m)
    if not exact and shortcuts and m == n:
        return i
    if not exact and shortcuts and m == 2 * n:
        return i >> 1
    s = np.float32(_source_scale(n, m, scale))
    at = i.astype(np.float32) + np.float32(0.5) if exact else i.astype(np.float32)
    return np.minimum(np.floor(at * s).astype(np.int64), n - 1)


def _phase_resample(x, axis, n, s):
    """Linear upsampling of `axis` by the integer factor s (align_corners
    False): output k * s + r reads x at k + d_r, d_r = (r + 1/2) / s - 1/2,
    so each phase r is one weighted sum of x and x shifted by one (the
    edge element repeated, which is PyTorch's clamping of the source
    index); the phases are interleaved. Elementwise and copies only, where
    the general path gathers (and its gradient scatters)."""
    if n == 1:
        prev = following = x
    else:
        prev = _ops.cat([_ops.narrow(x, axis, 0, 1), _ops.narrow(x, axis, 0, n - 1)], axis)
        following = _ops.cat([_ops.narrow(x, axis, 1, n - 1), _ops.narrow(x, axis, n - 1, 1)],
                             axis)
    phases = []
    for r in range(s):
        d = (r + 0.5) / s - 0.5
        if d >= 0:
            phases.append(_ops.add(_ops.mul(x, 1.0 - d), _ops.mul(following, d)))
        else:
            phases.append(_ops.add(_ops.mul(prev, -d), _ops.mul(x, 1.0 + d)))
    shape = list(x.shape)
    shape[axis] = n * s
    return _ops.reshape(_ops.stack(phases, axis + 1), tuple(shape))


def _linear_resample(x, axis, n, m, scale, align_corners):
    """Linear interpolation of `axis` from n to m elements with PyTorch's
    source positions (area_pixel_compute_source_index) and weights."""
    if not align_corners and m > n and m % n == 0 and \
            _source_scale(n, m, scale) == n / m:
        return _phase_resample(x, axis, n, m // n)
    i = np.arange(m, dtype=np.float64)
    if align_corners:
        src = i * ((n - 1) / (m - 1) if m > 1 else 0.0)
    else:
        src = np.maximum((i + 0.5) * _source_scale(n, m, scale) - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    frac = np.clip(src - low, 0.0, 1.0)
    shape = [1] * x.ndim
    shape[axis] = m
    near = Tensor(np.ascontiguousarray((1.0 - frac).reshape(shape), x.dtype.np),
                  dtype=x.dtype, device=x.device)
    far = Tensor(np.ascontiguousarray(frac.reshape(shape), x.dtype.np), dtype=x.dtype,
                 device=x.device)
    return _ops.add(_ops.mul(_take(x, axis, low), near), _ops.mul(_take(x, axis, high), far))


def _pair_or_none(name, size):
    size = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
    if len(size) != 2:
        raise ValueError(f"{name}: output_size must be 2")
    return size


def _adaptive_window(api, pool, input, output_size):
    """The kernel (= stride) of the `pool` an adaptive pooling to
    `output_size` is (None keeps a dimension): H/oh x W/ow where the output
    size divides the input size; PyTorch's overlapping windows otherwise
    raise NotImplementedError."""
    h, w = input.shape[-2:]
    oh, ow = _pair_or_none(api, output_size)
    oh, ow = (h if oh is None else oh), (w if ow is None else ow)
    if oh <= 0 or ow <= 0 or h % oh or w % ow:
        raise NotImplementedError(
            f"torch.nn.functional.{api} with output size {(oh, ow)} for an input of size "
            f"{(h, w)} is not supported by of: only output sizes that divide the input size "
            f"(as {pool})")
    return (h // oh, w // ow)


def adaptive_avg_pool2d(input, output_size):
    """avg_pool2d with kernel and stride H/oh x W/ow: PyTorch's result where
    the output size divides the input size (None keeps that dimension).
    Other sizes (PyTorch's overlapping windows) raise NotImplementedError."""
    x, added = _unbatched_pool("adaptive_avg_pool2d", input, 2)
    kernel = _adaptive_window("adaptive_avg_pool2d", "avg_pool2d", x, output_size)
    y = avg_pool2d(x, kernel, kernel)
    return _ops.reshape(y, tuple(y.shape[1:])) if added else y


def _unbatched_pool(api, input, spatial):
    """(input with a batch axis, whether one was added) for a pooling of
    `spatial` dimensions, which takes (N, C, *) or (C, *)."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{api}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but "
                           f"got {list(input.shape)}")
    if input.ndim == spatial + 1:
        return _ops.reshape(input, (1,) + tuple(input.shape)), True
    return input, False


def _pool1d(api, pool2d, input, *args):
    """A 1-d pooling as the 2-d one over (N, C, 1, L)."""
    x, added = _unbatched_pool(api, input, 1)
    n, c, length = x.shape
    y = pool2d(_ops.reshape(x, (n, c, 1, length)), *args)
    y = _ops.reshape(y, (n, c, y.shape[-1]))
    return _ops.reshape(y, tuple(y.shape[1:])) if added else y


def _single(name, value):
    value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(value) != 1:
        raise ValueError(f"{name} must be an int or a 1-tuple, got {value}")
    return value[0]


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    max_pool2d_arguments(dilation, ceil_mode, return_indices)
    k = _single("kernel_size", kernel_size)
    st = k if stride is None or stride == () or stride == [] else _single("stride", stride)
    pad = _single("padding", padding)
    return _pool1d("max_pool1d", lambda x: max_pool2d(x, (1, k), (1, st), (0, pad)), input)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    avg_pool2d_arguments(ceil_mode, None)
    k = _single("kernel_size", kernel_size)
    st = k if stride is None or stride == () or stride == [] else _single("stride", stride)
    pad = _single("padding", padding)
    return _pool1d("avg_pool1d", lambda x: avg_pool2d(x, (1, k), (1, st), (0, pad),
                                                      count_include_pad=count_include_pad),
                   input)


def adaptive_avg_pool1d(input, output_size):
    size = _single("output_size", output_size)
    return _pool1d("adaptive_avg_pool1d", lambda x: adaptive_avg_pool2d(x, (1, size)), input)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """max_pool2d with kernel and stride H/oh x W/ow, where the output size
    divides the input size (PyTorch's windows are then exactly these)."""
    unsupported("adaptive_max_pool2d", return_indices=(return_indices, False))
    x, added = _unbatched_pool("adaptive_max_pool2d", input, 2)
    kernel = _adaptive_window("adaptive_max_pool2d", "max_pool2d", x, output_size)
    y = max_pool2d(x, kernel, kernel)
    return _ops.reshape(y, tuple(y.shape[1:])) if added else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    unsupported("adaptive_max_pool1d", return_indices=(return_indices, False))
    size = _single("output_size", output_size)
    return _pool1d("adaptive_max_pool1d", lambda x: adaptive_max_pool2d(x, (1, size)), input)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j goes to
    row h r + i, column w r + j."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c}"
                           f" is not divisible by {r * r}")
    k = len(lead)
    x = _ops.reshape(input, tuple(lead) + (c // (r * r), r, r, h, w))
    x = _ops.permute(x, tuple(range(k)) + tuple(k + d for d in (0, 3, 1, 4, 2)))
    return _ops.reshape(x, tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, "
                           f"but got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} and input.size(-1)={w} "
                           f"are not divisible by {r}")
    k = len(lead)
    x = _ops.reshape(input, tuple(lead) + (c, h // r, r, w // r, r))
    x = _ops.permute(x, tuple(range(k)) + tuple(k + d for d in (0, 2, 4, 1, 3)))
    return _ops.reshape(x, tuple(lead) + (c * r * r, h // r, w // r))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Each sample's channel normalised over its own spatial elements
    (biased variance): group_norm with one group per channel."""
    unsupported("instance_norm", running_mean=(running_mean, None),
                running_var=(running_var, None), use_input_stats=(use_input_stats, True))
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or more input (got {input.ndim}D input)")
    return group_norm(input, input.shape[1], weight, bias, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)."""
    unsupported("normalize", out=(out, None))
    norm = _tf.norm(input, p, dim, keepdim=True)
    return _ops.div(input, _ops.maximum(norm, eps))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim, the
    operands broadcast (PyTorch's formula since 1.12)."""
    shape = tuple(np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    a, b = _ops.broadcast_to(x1, shape), _ops.broadcast_to(x2, shape)
    na = _ops.maximum(_tf.norm(a, 2, dim, keepdim=True), eps)
    nb = _ops.maximum(_tf.norm(b, 2, dim, keepdim=True), eps)
    return _ops.sum(_ops.mul(_ops.div(a, na), _ops.div(b, nb)), dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dimension."""
    last = max(x1.ndim, x2.ndim) - 1
    return _tf.norm(_ops.add(_ops.sub(x1, x2), eps), p, max(last, 0), keepdim=keepdim)


def _channel_dropout(api, input, p, training, inplace, spatial):
    """Zeroes whole channels, as PyTorch's feature dropout: one mask element
    per (sample, channel) of an (N, C, *spatial) input, or per channel of a
    (C, *spatial) one. dropout1d takes only those two ranks; dropout2d and
    dropout3d warn on others and do what PyTorch does with them: dropout2d
    masks the first two dimensions whatever the rank (a 3-D input is
    (N, C, L), a 2-D one is masked element by element), dropout3d treats
    any rank but 5 as unbatched (the first dimension is the channel)."""
    dropout_probability(p)
    ndim, batched = input.ndim, input.ndim == spatial + 2
    if ndim not in (spatial + 1, spatial + 2):
        if spatial == 1:
            raise RuntimeError(f"{api}: Expected 2D or 3D input, but received a {ndim}D input")
        warnings.warn(f"{api}: Received a {ndim}-D input to {api}, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead.", stacklevel=3)
    if spatial == 2 and ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim.", stacklevel=3)
    # how many leading dimensions the mask has (PyTorch's unsqueeze of an
    # unbatched input, then a mask over its first two dimensions)
    lead = 2 if batched or spatial == 2 else 1
    if ndim < lead or ndim == 0:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = _ops.mul(input, 0.0)
    else:
        ones = Tensor(np.ones(tuple(input.shape[:lead]) + (1,) * (ndim - lead),
                              input.dtype.np), dtype=input.dtype)
        out = _ops.mul(input, _dropout(ones, p))
    return _inplace(api, input, out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout1d", input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout2d", input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _channel_dropout("dropout3d", input, p, training, inplace, 3)


_ALPHA_PRIME = 1.7580993408473766  # SELU's scale * alpha, the negative saturation


def _alpha_dropout(api, input, p, training, inplace, feature):
    """PyTorch's alpha dropout: dropped elements (whole channels when
    `feature`) set to SELU's negative saturation, then an affine map that
    keeps a zero-mean unit-variance input so; `keep` is 1 with probability
    1 - p."""
    dropout_probability(p)
    if not training or p == 0.0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        out = _ops.mul(input, 0.0)
    else:
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else \
            tuple(input.shape)
        ones = Tensor(np.ones(shape, input.dtype.np), dtype=input.dtype, device=input.device)
        keep = _ops.mul(_dropout(ones, p), 1.0 - p)
        a = 1.0 / math.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
        shift = _ops.add(_ops.mul(keep, _ALPHA_PRIME * a), -_ALPHA_PRIME * a * (1 - p))
        out = _ops.add(_ops.mul(input, _ops.mul(keep, a)), shift)
    return _inplace(api, input, out) if inplace else out


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


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


_dropout = _ops.random_dropout


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    y, _, _ = _ops.batch_norm(input, running_mean, running_var, weight, bias, training,
                              momentum, eps)
    return y
