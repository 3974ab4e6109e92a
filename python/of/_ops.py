"""The operations on tensors: each checks its operands, infers its result
shape (so mistakes are reported at the Python line that made them) and
writes one or a few `of` ops through `_apply.apply`; the Tensor methods and
operators that are operations (installed on Tensor here); moves between
devices and placements; factories."""

import math

import numpy as np

from . import _dtype as dt
from . import _global, _random
from ._apply import apply, apply1
from ._compat import unsupported
from ._dist import device, normalize_sbp, placement as Placement
from ._program import OpSpec, _type, float_text, tracing
from ._tensor import Size, Tensor, _c_order, _device_arg, as_tensor_like, to_tensor


def _arr(values):
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">" if len(values) else \
        "array<i64>"


def _norm_dim(dim, ndim, what="dim"):
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"{what} {dim} is out of range for a tensor of rank {ndim}")
    return dim % ndim if ndim else 0


def _check_same_dtype(a, b, op):
    if a.dtype is not b.dtype:
        raise TypeError(f"{op}: operands have dtypes {a.dtype} and {b.dtype}; "
                        f"convert one with .to({a.dtype})")


def _broadcast(a, b, op):
    if a.shape == b.shape:
        return tuple(a.shape)
    try:
        return tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except ValueError:
        raise ValueError(f"{op}: shapes {list(a.shape)} and {list(b.shape)} do not "
                         "broadcast") from None


def _promote_for_float_scalar(t, scalar):
    """PyTorch's rule: an integer tensor with a Python float computes in the
    default float type."""
    if isinstance(scalar, float) and not t.dtype.is_floating_point:
        return cast(t, dt.float32)
    return t


def _binary(name, a, b):
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _promote_for_float_scalar(a, b)
    elif isinstance(b, Tensor) and not isinstance(a, Tensor):
        b = _promote_for_float_scalar(b, a)
    if not isinstance(a, Tensor):
        a = as_tensor_like(a, b)
    if not isinstance(b, Tensor):
        b = as_tensor_like(b, a)
    _check_same_dtype(a, b, name)
    shape = _broadcast(a, b, name)
    return apply1(OpSpec(f"of.{name} {{0}}, {{1}}", "", [(shape, a.dtype)]), [a, b])


# PyTorch's parameter names (input, other, ...), so keywords work as there.



def _scaled(other, alpha):
    return other if alpha == 1 else _binary("mul", other, alpha)


def add(input, other, *, alpha=1):
    return _binary("add", input, _scaled(other, alpha))


def sub(input, other, *, alpha=1):
    return _binary("sub", input, _scaled(other, alpha))


def mul(input, other):
    return _binary("mul", input, other)


def div(input, other, *, rounding_mode=None):
    unsupported("div", rounding_mode=(rounding_mode, None))
    return _binary("div", input, other)


def pow(input, exponent):  # noqa: A001
    return _binary("pow", input, exponent)


def maximum(input, other):
    return _binary("maximum", input, other)


def minimum(input, other):
    return _binary("minimum", input, other)


def _compare(direction, a, b):
    if not isinstance(b, Tensor):
        b = as_tensor_like(b, a)
    if not isinstance(a, Tensor):
        a = as_tensor_like(a, b)
    _check_same_dtype(a, b, direction)
    shape = _broadcast(a, b, direction)
    return apply1(OpSpec(f"of.compare {direction}, {{0}}, {{1}}", "", [(shape, dt.bool)]),
                  [a, b])


def _unary(name, x, attrs=""):
    if not x.dtype.is_floating_point and name not in ("neg",):
        raise TypeError(f"{name} needs a floating-point tensor, not {x.dtype}")
    return apply1(OpSpec(f"of.{name} {{0}}", attrs, [(x.shape, x.dtype)]), [x])


def neg(x):
    return _unary("neg", x)


def exp(input):
    return _unary("exp", input)


def log(input):
    return _unary("log", input)


def sqrt(input):
    return _unary("sqrt", input)


def rsqrt(input):
    return _unary("rsqrt", input)


def tanh(input):
    return _unary("tanh", input)


def sigmoid(input):
    return _unary("sigmoid", input)


def erf(x):
    return _unary("erf", x)


def relu(x):
    return _unary("relu", x)


def silu(x):
    return _unary("silu", x)


def gelu(x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate is 'none' or 'tanh', not {approximate!r}")
    return _unary("gelu", x, f'approximate = "{approximate}"')


def cast(x, dtype):
    if x.dtype is dtype:
        return x
    return apply1(OpSpec("of.cast {0}", "", [(x.shape, dtype)], sig="cast"), [x])


def where(condition, input, other):
    x, y = input, other
    if not isinstance(x, Tensor):
        x = as_tensor_like(x, y)
    if not isinstance(y, Tensor):
        y = as_tensor_like(y, x)
    _check_same_dtype(x, y, "where")
    if condition.dtype is not dt.bool:
        raise TypeError(f"where: the condition must be bool, not {condition.dtype}")
    shape = tuple(np.broadcast_shapes(tuple(condition.shape), tuple(x.shape), tuple(y.shape)))
    return apply1(OpSpec("of.select {0}, {1}, {2}", "", [(shape, x.dtype)]),
                  [condition, x, y])


def masked_fill(x, mask, value):
    return where(mask, as_tensor_like(value, x), x)


def matmul(input, other, *, transpose_a=False, transpose_b=False):
    """PyTorch's matmul; `transpose_a`/`transpose_b` (of's) use an operand
    transposed in its last two dimensions without moving it."""
    a, b = input, other
    _check_same_dtype(a, b, "matmul")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul: operands need rank >= 2, not {list(a.shape)} and "
                         f"{list(b.shape)} (reshape vectors to matrices)")
    m, k = (a.shape[-1], a.shape[-2]) if transpose_a else (a.shape[-2], a.shape[-1])
    k2, n = (b.shape[-1], b.shape[-2]) if transpose_b else (b.shape[-2], b.shape[-1])
    if k != k2:
        raise ValueError(f"matmul: inner dimensions differ: {list(a.shape)} @ "
                         f"{list(b.shape)}" + (" (b transposed)" if transpose_b else ""))
    try:
        batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of {list(a.shape)} and "
                         f"{list(b.shape)} do not broadcast") from None
    attrs = []
    if transpose_a:
        attrs.append("transpose_a = true")
    if transpose_b:
        attrs.append("transpose_b = true")
    return apply1(OpSpec("of.matmul {0}, {1}", ", ".join(attrs),
                         [(tuple(batch) + (m, n), a.dtype)]), [a, b])


def _axes(x, dim):
    if dim is None:
        return list(range(x.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({_norm_dim(d, x.ndim) for d in dims})


def _reduce(name, x, dim=None, keepdim=False):
    axes = _axes(x, dim)
    if not axes:
        return x
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdim else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    attrs = f"axes = {_arr(axes)}" + (", keepdims = true" if keepdim else "")
    return apply1(OpSpec(f"of.{name} {{0}}", attrs, [(shape, x.dtype)]), [x])


def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001
    """PyTorch's sum: with `dtype`, the input is cast to it first."""
    return _reduce("reduce_sum", input if dtype is None else cast(input, dtype), dim, keepdim)


def mean(input, dim=None, keepdim=False, dtype=None):
    return _reduce("reduce_mean", input if dtype is None else cast(input, dtype), dim,
                   keepdim)


def amax(input, dim=None, keepdim=False):
    """The largest elements over `dim` (all dimensions for None or ())."""
    return _reduce("reduce_max", input, None if dim == () else dim, keepdim)


def _tensor_max(self, dim=None, keepdim=False):
    """Tensor.max(): the largest element; max(dim) would be PyTorch's
    (values, indices), which needs an argmax of has not yet."""
    if dim is not None:
        raise NotImplementedError(
            "Tensor.max(dim) returns (values, indices) in PyTorch; of has no argmax yet: "
            "use x.amax(dim, keepdim) for the values")
    return amax(self, None, keepdim)


def reshape(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: only one dimension can be -1: {shape}")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or x.numel() % known:
            raise ValueError(f"reshape: shape {shape} is invalid for {x.numel()} elements")
        shape[shape.index(-1)] = x.numel() // known
    if int(np.prod(shape, dtype=np.int64)) != x.numel():
        raise ValueError(f"reshape: shape {shape} is invalid for input of shape "
                         f"{list(x.shape)} ({x.numel()} elements)")
    if tuple(shape) == tuple(x.shape):
        return x
    return apply1(OpSpec("of.reshape {0}", "", [(tuple(shape), x.dtype)]), [x])


def permute(x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    perm = [_norm_dim(d, x.ndim) for d in dims]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"permute: {list(dims)} is not a permutation of {x.ndim} dims")
    if perm == list(range(x.ndim)):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return apply1(OpSpec("of.transpose {0}, [" + ", ".join(map(str, perm)) + "]", "",
                         [(shape, x.dtype)]), [x])


def transpose(x, dim0, dim1):
    perm = list(range(x.ndim))
    a, b = _norm_dim(dim0, x.ndim), _norm_dim(dim1, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


def unsqueeze(x, dim):
    dim = _norm_dim(dim, x.ndim + 1)
    return reshape(x, tuple(x.shape[:dim]) + (1,) + tuple(x.shape[dim:]))


def squeeze(x, dim=None):
    if dim is None:
        return reshape(x, tuple(d for d in x.shape if d != 1))
    dim = _norm_dim(dim, x.ndim)
    if x.shape[dim] != 1:
        return x
    return reshape(x, tuple(x.shape[:dim]) + tuple(x.shape[dim + 1:]))


def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, (1,))
    s, e = _norm_dim(start_dim, x.ndim), _norm_dim(end_dim, x.ndim)
    inner = int(np.prod(x.shape[s:e + 1], dtype=np.int64))
    return reshape(x, tuple(x.shape[:s]) + (inner,) + tuple(x.shape[e + 1:]))


def broadcast_to(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: {list(shape)} has fewer dims than {list(x.shape)}")
    shape = tuple(x.shape[i - lead] if s == -1 else int(s) for i, s in enumerate(shape))
    try:
        if tuple(np.broadcast_shapes(tuple(x.shape), shape)) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"expand: {list(x.shape)} cannot broadcast to {list(shape)}") from None
    if shape == tuple(x.shape):
        return x
    return apply1(OpSpec("of.broadcast_to {0}", "", [(shape, x.dtype)]), [x])


def slice_(x, starts, limits, strides=None):
    strides = strides or [1] * x.ndim
    shape = tuple(max(0, -(-(l - s) // st)) for s, l, st in zip(starts, limits, strides))
    if shape == tuple(x.shape):
        return x
    attrs = f"starts = {_arr(starts)}, limits = {_arr(limits)}"
    if any(st != 1 for st in strides):
        attrs += f", strides = {_arr(strides)}"
    return apply1(OpSpec("of.slice {0}", attrs, [(shape, x.dtype)]), [x])


def getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(isinstance(i, (Tensor, list, np.ndarray)) for i in index):
        raise IndexError("indexing with tensors or lists is not supported; use "
                         "of.nn.functional.embedding for gathers")
    if index.count(Ellipsis) > 1:
        raise IndexError("an index can only have one ellipsis")
    used = len([i for i in index if i is not None and i is not Ellipsis])
    if used > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
    if Ellipsis in index:
        e = index.index(Ellipsis)
        index = index[:e] + (slice(None),) * (x.ndim - used) + index[e + 1:]
    else:
        index = index + (slice(None),) * (x.ndim - used)
    starts, limits, strides, out_shape = [], [], [], []
    dim = 0
    for i in index:
        if i is None:
            out_shape.append(1)
            continue
        size = x.shape[dim]
        if isinstance(i, slice):
            s, l, st = i.indices(size)
            if st <= 0:
                raise IndexError("negative slice steps are not supported")
            starts.append(s)
            limits.append(max(l, s))
            strides.append(st)
            out_shape.append(max(0, -(-(max(l, s) - s) // st)))
        else:
            i = int(i)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of range for dimension {dim} of size {size}")
            i %= size
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        dim += 1
    y = slice_(x, starts, limits, strides)
    return reshape(y, tuple(out_shape))


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat needs at least one tensor")
    first = tensors[0]
    d = _norm_dim(dim, first.ndim)
    for t in tensors[1:]:
        _check_same_dtype(first, t, "cat")
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(
                zip(t.shape, first.shape)) if i != d):
            raise ValueError(f"cat: shapes {list(first.shape)} and {list(t.shape)} differ "
                             f"outside dimension {d}")
    if len(tensors) == 1:
        return first
    shape = list(first.shape)
    shape[d] = builtins_sum(t.shape[d] for t in tensors)
    fmt = "of.concat " + ", ".join("{%d}" % i for i in range(len(tensors)))
    return apply1(OpSpec(fmt, f"axis = {d} : i64", [(tuple(shape), first.dtype)]), tensors)


builtins_sum = __builtins__["sum"] if isinstance(__builtins__, dict) else __builtins__.sum


def split(x, split_size_or_sections, dim=0):
    d = _norm_dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        sizes = [split_size_or_sections] * (size // split_size_or_sections)
        if size % split_size_or_sections:
            sizes.append(size % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
        if builtins_sum(sizes) != size:
            raise ValueError(f"split: sections {sizes} do not add up to {size}")
    out, start = [], 0
    for s in sizes:
        starts = [0] * x.ndim
        limits = list(x.shape)
        starts[d], limits[d] = start, start + s
        out.append(slice_(x, starts, limits))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    size = input.shape[_norm_dim(dim, input.ndim)]
    return split(input, -(-size // chunks), dim)


def softmax(x, dim=-1):
    d = _norm_dim(dim, x.ndim)
    return apply1(OpSpec("of.softmax {0}", f"axis = {d} : i64", [(x.shape, x.dtype)]), [x])


def log_softmax(x, dim=-1):
    d = _norm_dim(dim, x.ndim)
    return apply1(OpSpec("of.log_softmax {0}", f"axis = {d} : i64", [(x.shape, x.dtype)]), [x])


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise ValueError(f"layer_norm: input {list(x.shape)} does not end with the "
                         f"normalized shape {list(ns)}")
    fmt, ins = "of.layer_norm {0}", [x]
    if weight is not None:
        fmt += " weight {%d}" % len(ins)
        ins.append(weight)
    if bias is not None:
        fmt += " bias {%d}" % len(ins)
        ins.append(bias)
    return apply1(OpSpec(fmt, f"axis = {x.ndim - len(ns)} : i64, epsilon = {float_text(eps)} : f64",
                         [(x.shape, x.dtype)]), ins)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if eps is None:
        eps = float(np.finfo(np.float32).eps)  # PyTorch's default for float32
    fmt, ins = "of.rms_norm {0}", [x]
    if weight is not None:
        fmt += " weight {1}"
        ins.append(weight)
    return apply1(OpSpec(fmt, f"axis = {x.ndim - len(ns)} : i64, epsilon = {float_text(eps)} : f64",
                         [(x.shape, x.dtype)]), ins)


def embedding(indices, weight):
    if indices.dtype not in (dt.int64, dt.int32):
        raise TypeError(f"embedding: indices must be int64 or int32, not {indices.dtype}")
    shape = tuple(indices.shape) + (weight.shape[-1],)
    return apply1(OpSpec("of.embedding {0}, {1}", "", [(shape, weight.dtype)]),
                  [indices, weight])


def cross_entropy_per_example(logits, labels):
    return apply1(OpSpec("of.cross_entropy {0}, {1}", "", [(tuple(labels.shape), logits.dtype)]),
                  [logits, labels])


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    if isinstance(padding, str):
        raise ValueError("conv2d: give padding as numbers, not a string")
    st, dl = pair(stride), pair(dilation)
    ph, pw = pair(padding)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"conv2d: input and weight must be 4-D (NCHW, OIHW), not "
                         f"{list(x.shape)} and {list(weight.shape)}")
    n, c, h, w = x.shape
    o, ci, kh, kw = weight.shape
    if c != ci * groups:
        raise ValueError(f"conv2d: the input has {c} channels, the weight expects "
                         f"{ci} x {groups} groups")
    oh = (h + 2 * ph - dl[0] * (kh - 1) - 1) // st[0] + 1
    ow = (w + 2 * pw - dl[1] * (kw - 1) - 1) // st[1] + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(f"conv2d: the kernel {kh}x{kw} does not fit the padded input {h}x{w}")
    attrs = (f"strides = {_arr(st)}, padding = {_arr((ph, ph, pw, pw))}, "
             f"dilation = {_arr(dl)}, groups = {groups} : i64")
    fmt, ins = "of.conv2d {0}, {1}", [x, weight]
    if bias is not None:
        fmt += ", {2}"
        ins.append(bias)
    return apply1(OpSpec(fmt, attrs, [((n, o, oh, ow), x.dtype)]), ins)


def _pool(name, x, kernel_size, stride, padding, extra=""):
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    k = pair(kernel_size)
    st = pair(stride) if stride is not None else k
    ph, pw = pair(padding)
    n, c, h, w = x.shape
    oh = (h + 2 * ph - k[0]) // st[0] + 1
    ow = (w + 2 * pw - k[1]) // st[1] + 1
    attrs = f"kernel_size = {_arr(k)}, strides = {_arr(st)}, padding = {_arr((ph, ph, pw, pw))}"
    return apply1(OpSpec(f"of.{name} {{0}}", attrs + extra, [((n, c, oh, ow), x.dtype)]), [x])


def max_pool2d(x, kernel_size, stride=None, padding=0):
    return _pool("max_pool2d", x, kernel_size, stride, padding)


def avg_pool2d(x, kernel_size, stride=None, padding=0, count_include_pad=True):
    return _pool("avg_pool2d", x, kernel_size, stride, padding,
                 f", count_include_pad = {'true' if count_include_pad else 'false'}")


def batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps):
    c = x.shape[1]
    attrs = (f"epsilon = {float_text(eps)} : f64, momentum = {float_text(momentum)} : f64, "
             f"training = {'true' if training else 'false'}")
    return apply(OpSpec("of.batch_norm {0}, {1}, {2}, {3}, {4}", attrs,
                        [(x.shape, x.dtype), ((c,), x.dtype), ((c,), x.dtype)]),
                 [x, weight, bias, running_mean, running_var])


def dropout_with_seed(x, seed, p):
    return apply1(OpSpec("of.dropout {0}, {1}", f"p = {float_text(p)} : f64",
                         [(x.shape, x.dtype)]), [x, seed])


# --------------------------------------------------------------------------
# Tensor methods and operators.

def _install():
    T = Tensor
    T.__add__ = lambda a, b: add(a, b)
    T.__radd__ = lambda a, b: add(b, a)
    T.__sub__ = lambda a, b: sub(a, b)
    T.__rsub__ = lambda a, b: sub(b, a)
    T.__mul__ = lambda a, b: mul(a, b)
    T.__rmul__ = lambda a, b: mul(b, a)
    T.__truediv__ = lambda a, b: div(a, b)
    T.__rtruediv__ = lambda a, b: div(b, a)
    T.__pow__ = lambda a, b: pow(a, b)
    T.__rpow__ = lambda a, b: pow(b, a)
    T.__neg__ = lambda a: neg(a)
    T.__matmul__ = lambda a, b: matmul(a, b)
    T.__eq__ = lambda a, b: _compare("eq", a, b)
    T.__ne__ = lambda a, b: _compare("ne", a, b)
    T.__lt__ = lambda a, b: _compare("lt", a, b)
    T.__le__ = lambda a, b: _compare("le", a, b)
    T.__gt__ = lambda a, b: _compare("gt", a, b)
    T.__ge__ = lambda a, b: _compare("ge", a, b)
    T.__getitem__ = getitem
    T.add, T.sub, T.mul, T.div, T.pow = add, sub, mul, div, pow
    T.matmul = matmul
    T.exp, T.log, T.sqrt, T.rsqrt, T.tanh, T.sigmoid = exp, log, sqrt, rsqrt, tanh, sigmoid
    T.relu, T.neg, T.erf = relu, neg, erf
    T.sum, T.mean, T.amax = sum, mean, amax
    T.max = _tensor_max
    T.reshape = reshape
    T.view = reshape
    T.permute = permute
    T.transpose = transpose
    T.unsqueeze = unsqueeze
    T.squeeze = squeeze
    T.flatten = flatten
    T.expand = broadcast_to
    T.split = lambda self, split_size, dim=0: split(self, split_size, dim)
    T.chunk = chunk
    T.softmax = lambda x, dim=-1: softmax(x, dim)
    T.masked_fill = masked_fill
    T.T = property(lambda x: permute(x, list(range(x.ndim))[::-1]))
    T.mT = property(lambda x: transpose(x, -2, -1))

    T.to = to
    T.to_global = to_global
    T.cuda = lambda x, device=None, non_blocking=False: to(
        x, "cuda" if device is None else device)
    T.cpu = lambda x: to(x, "cpu")
    T.float = lambda x: cast(x, dt.float32)
    T.double = lambda x: cast(x, dt.float64)
    T.half = lambda x: cast(x, dt.float16)
    T.bfloat16 = lambda x: cast(x, dt.bfloat16)
    T.long = lambda x: cast(x, dt.int64)
    T.int = lambda x: cast(x, dt.int32)
    T.bool = lambda x: cast(x, dt.bool)
    T.type_as = lambda x, tensor: cast(x, tensor.dtype)



# --------------------------------------------------------------------------
# Moves between devices and placements.

def to_arguments(args, kwargs, what):
    """(device or None, dtype or None) of the arguments of a `.to(...)`:
    a dtype, a device (a string, an of.device or a GPU index), a tensor
    (its device and dtype), or the keywords device= and dtype=."""
    target, dev = kwargs.get("dtype"), kwargs.get("device")
    for a in args:
        if isinstance(a, dt.dtype):
            target = a
        elif isinstance(a, Tensor):
            target, dev = a.dtype, a.device
        elif isinstance(a, (str, int)) and not isinstance(a, bool):
            dev = a
        elif a is not None:
            raise TypeError(f"{what}: {a!r} is neither a dtype, a device nor a tensor")
    return (device(dev) if dev is not None else None), target


def to(x, *args, **kwargs):
    """x.to(dtype), x.to(device), x.to(device, dtype), x.to(other) (other's
    device and dtype), or the keywords device= and dtype=."""
    dev, target = to_arguments(args, kwargs, ".to")
    cast_needed = target is not None and target is not x.dtype
    if dev is None:
        return cast(x, target) if cast_needed else x
    # Values are on the host, so a move costs nothing: cast on the CPU side.
    if cast_needed and dev == "cpu":
        return cast(_to_device(x, dev), target)
    return _to_device(cast(x, target) if cast_needed else x, dev)


def _to_device(x, dev):
    if x._program is not None and x._placement is None:
        # A traced value: the program's one device must be `dev`.
        x._program.note_device(dev, f".to('{dev}') of a traced value")
        return x
    if x.device == dev:
        return x
    if x._placement is not None:
        raise ValueError(f".to('{dev}'): a global tensor is on its placement's devices "
                         f"({x._placement}); move it with .to_global(of.placement('{dev}', "
                         "ranks=...), sbp)")
    moved = Tensor(x._value().copy(), dtype=x.dtype, device=dev)
    moved.requires_grad = x.requires_grad
    return moved


def _lazy_global(logical, shape, dtype, plc, sbp):
    """A global tensor on `plc` that holds its logical value (it cannot run
    here): a compiled step's argument or module state ahead of time."""
    out = Tensor(None, shape=shape, dtype=dtype, placement=plc, sbp=sbp)
    out._logical = logical.copy()  # a snapshot, as a rank's part would be
    return out


def to_global(t, placement=None, sbp=None):
    """Tensor.to_global: `t` on `placement` with `sbp` (by default its own).
    A local tensor's value is taken as the logical value; a global one is
    converted between SBPs (a collective on its ranks)."""
    plc = placement if placement is not None else t._placement
    if plc is None:
        raise ValueError("to_global needs a placement for a local tensor")
    if not isinstance(plc, Placement):
        raise TypeError(f"to_global: {plc!r} is not an of.placement")
    if t._placement is not None and t._placement.type != plc.type and tracing() is None:
        # another kind of device: through the logical value (a collective)
        moved = to_global(Tensor(t.numpy(), dtype=t.dtype), plc,
                          sbp if sbp is not None else t._sbp)
        moved.requires_grad = t.requires_grad
        return moved
    if sbp is None:
        sbp = t._sbp if t._placement == plc else None
    if sbp is None:
        raise ValueError("to_global needs an sbp for a local tensor")
    sbp = normalize_sbp(plc, sbp, t.ndim)
    if t._placement is not None and set(t._placement.ranks) != set(plc.ranks):
        raise NotImplementedError(
            f"to_global: moving a tensor from ranks {list(t._placement.ranks)} to ranks "
            f"{list(plc.ranks)} (a pipeline stage) is not supported by the Python "
            "frontend yet, which keeps every global value on every rank of its job; "
            "write the stages as an .mlir program for of-opt and of-run "
            "(docs/getting-started.md, 'Pipeline stages')")
    program = tracing()
    if program is not None and t._program is program:
        if t._placement is None:
            raise ValueError("to_global inside a traced function works on global "
                             "values; make the inputs global")
        out = apply1(OpSpec("of.boxing {0}", "", [(t.shape, t.dtype)], sig="arrow"), [t])
        # the result type carries the distribution
        ref = program.values[id(out)]
        last = program.lines[-1]
        typed = _type(t.shape, t.dtype, plc, sbp)
        program.lines[-1] = last.replace(f"-> {_type(t.shape, t.dtype)}", f"-> {typed}")
        program._types[ref] = typed
        program.note_placement(plc)
        out._placement, out._sbp = plc, sbp
        return out
    if t._lazy() or (t._placement is None and not _global.runnable_here(plc)):
        # Made where the placement cannot run (ahead of time): the logical
        # value, kept until a rank's part is needed.
        out = _lazy_global(t._logical if t._lazy() else t._value(), t.shape, t.dtype,
                           plc, sbp)
        out.requires_grad = t.requires_grad
        return out
    if t._placement is None:
        # the local value is the logical value: each rank keeps its part
        data = _global.move(t._value(), t.shape, t.dtype, plc, sbp, plc, sbp,
                            global_value=True)
    else:
        if t._placement == plc and t._sbp == sbp:
            return t
        data = _global.move(t._value(), t.shape, t.dtype, t._placement, t._sbp, plc, sbp)
    out = Tensor(data, shape=t.shape, dtype=t.dtype, placement=plc, sbp=sbp)
    out.requires_grad = t.requires_grad
    return out


# --------------------------------------------------------------------------
# Factories.

def _shape_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def tensor(data, dtype=None, requires_grad=False, *, device=None):
    if isinstance(data, Tensor):
        data = data.numpy()
    array = np.array(data)
    if dtype is None and not isinstance(data, (np.ndarray, np.generic)):
        # PyTorch's defaults for Python values
        dtype = {"f": dt.float32, "i": dt.int64, "u": dt.int64, "b": dt.bool}.get(
            array.dtype.kind)
    t = to_tensor(array, dtype)
    t._local_device = _device_arg(device)
    t.requires_grad = requires_grad
    return t


def from_numpy(ndarray):
    array = ndarray
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy takes a NumPy array, not {type(array).__name__}")
    return Tensor(_c_order(array), dtype=dt.from_numpy(array.dtype))


def zeros(*size, dtype=None, device=None):
    dtype = dtype or dt.float32
    return Tensor(np.zeros(_shape_arg(size), dtype.np), dtype=dtype, device=device)


def ones(*size, dtype=None, device=None):
    dtype = dtype or dt.float32
    return Tensor(np.ones(_shape_arg(size), dtype.np), dtype=dtype, device=device)


def full(size, fill_value, *, dtype=None, device=None):
    dtype = dtype or dt.default_for(fill_value)
    return Tensor(np.full(_shape_arg((size,)), fill_value, dtype.np), dtype=dtype,
                  device=device)


def zeros_like(input, *, dtype=None, device=None):
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def ones_like(input, *, dtype=None, device=None):
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn(*size, dtype=None, device=None):
    dtype = dtype or dt.float32
    return Tensor(_random.normal(_shape_arg(size)).astype(dtype.np), dtype=dtype,
                  device=device)


def rand(*size, dtype=None, device=None):
    dtype = dtype or dt.float32
    return Tensor(_random.uniform(_shape_arg(size)).astype(dtype.np), dtype=dtype,
                  device=device)


def arange(start, end=None, step=1, dtype=None, device=None):
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, int) for v in (start, end, step)) else dt.float32
    return Tensor(values.astype(dtype.np), dtype=dtype, device=device)


def tril(input, diagonal=0):
    return Tensor(np.tril(input.numpy(), diagonal), dtype=input.dtype, device=input.device)


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None):
    """softmax(q k^T * scale [+ causal mask]) v over the last two dims."""
    if dropout_p:
        raise NotImplementedError("scaled_dot_product_attention: dropout_p > 0 is not "
                                  "supported; apply of.nn.Dropout to the weights instead")
    s = matmul(q, k, transpose_b=True)
    s = mul(s, float(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])))
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        mask = Tensor(np.tril(np.ones((L, S), np.bool_)), dtype=dt.bool, device=q.device)
        s = where(mask, s, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is dt.bool:
            s = where(attn_mask, s, float("-inf"))
        else:
            s = add(s, attn_mask)
    return matmul(softmax(s, -1), v)


_install()
