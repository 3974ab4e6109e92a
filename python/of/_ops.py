"""The operations on tensors: each checks its operands, infers its result
shape (so mistakes are reported at the Python line that made them) and
writes one or a few `of` ops through `_apply.apply`; the Tensor methods and
operators that are operations (installed on Tensor here); moves between
devices and placements; factories."""

import functools
import math
import warnings

import numpy as np

from . import _compat
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
    """PyTorch's rule: an integer tensor with a Python float (or a NumPy
    floating-point scalar) computes in the default float type."""
    if isinstance(scalar, (float, np.floating)) and not t.dtype.is_floating_point:
        return cast(t, dt.float32)
    return t


def _kind(dtype):
    """PyTorch's categories of dtypes: bool < integer < floating point."""
    return 2 if dtype.is_floating_point else 0 if dtype is dt.bool else 1


def _foreign_array(value):
    """`value` as a NumPy array where it is one or a torch.Tensor (on the
    CPU, without autograd), else None. torch is recognised by duck typing,
    so it is never imported here."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tensor) or type(value).__module__.split(".")[0] != "torch" or \
            not all(hasattr(value, a) for a in ("detach", "numpy", "requires_grad", "device")):
        return None
    if value.requires_grad:
        raise TypeError("an of op got a torch.Tensor that requires grad: pass "
                        "t.detach().cpu() (of copies its value) or an of tensor")
    if value.device.type != "cpu":
        raise TypeError(f"an of op got a torch.Tensor on {value.device}: pass "
                        "t.detach().cpu() (of copies its value) or an of tensor")
    if str(value.dtype) == "torch.bfloat16":  # NumPy has no bfloat16 of torch's
        return value.float().numpy().astype(dt.bfloat16.np)
    return value.numpy()


def _foreign_operands(a, b):
    """The operands of a binary op, NumPy arrays and torch tensors among
    them made of tensors: a copy with its dtype, on the other operand's
    device. A 0-d one is a number, as a Python number is; where its kind
    (bool < integer < floating point) is above the other operand's, the
    other is first cast to its dtype (PyTorch's rule for 0-d tensors)."""
    ops = [a, b]
    for i in (0, 1):
        array = _foreign_array(ops[i])
        if array is None:
            continue
        dtype, other = dt.from_numpy(array.dtype), ops[1 - i]
        if array.ndim == 0:
            if isinstance(other, Tensor) and _kind(dtype) > _kind(other.dtype):
                ops[1 - i] = cast(other, dtype)
            ops[i] = float(array) if dtype.is_floating_point else \
                bool(array) if dtype is dt.bool else int(array)
        else:
            local = isinstance(other, Tensor) and other._placement is None
            ops[i] = Tensor(np.array(array, copy=True, order="C"), dtype=dtype,
                            device=other._local_device if local else None)
    return ops


def _binary(name, a, b):
    a, b = _foreign_operands(a, b)
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
    """True division, as PyTorch's: integer (and bool) operands divide in
    float32."""
    unsupported("div", rounding_mode=(rounding_mode, None))
    a, b = _foreign_operands(input, other)
    if not any(v.dtype.is_floating_point if isinstance(v, Tensor) else
               isinstance(v, (float, np.floating)) for v in (a, b)):
        a, b = (cast(v, dt.float32) if isinstance(v, Tensor) else v for v in (a, b))
    return _binary("div", a, b)


def pow(input, exponent):  # noqa: A001
    return _binary("pow", input, exponent)


def maximum(input, other):
    return _binary("maximum", input, other)


def minimum(input, other):
    return _binary("minimum", input, other)


def _compare(direction, a, b):
    a, b = _foreign_operands(a, b)
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
# The small methods and torch.* functions training scripts use, with
# PyTorch's signatures, results and errors, composed of the ops above.

# PyTorch's names of the scalar types (in its messages) and tensor types
# (Tensor.type()).
_SCALAR_NAMES = {dt.float32: "Float", dt.float64: "Double", dt.float16: "Half",
                 dt.bfloat16: "BFloat16", dt.int64: "Long", dt.int32: "Int", dt.int8: "Char",
                 dt.bool: "Bool"}
_TYPE_NAMES = {d: n + "Tensor" for d, n in _SCALAR_NAMES.items()}
_BY_TYPE_NAME = {n: d for d, n in _TYPE_NAMES.items()}


def _wrap_dim(dim, ndim, scalar_ok=False):
    """PyTorch's reading of a dimension index (negative from the end), with
    its errors; `scalar_ok` lets a 0-d tensor be indexed as if 1-d."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer, Tensor)):
        raise TypeError(f"a dimension must be an int, not {type(dim).__name__}")
    dim = int(dim)
    if ndim == 0 and not scalar_ok:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _tensor_size(self, dim=None):
    """Tensor.size(): the shape, or the size of dimension `dim` (negative
    from the end)."""
    return self.shape if dim is None else self.shape[_wrap_dim(dim, self.ndim)]


def _element_size(self):
    return self.dtype.itemsize


def is_floating_point(input):  # noqa: A002
    return input.dtype.is_floating_point


def _is_contiguous(self):
    """True: every of tensor is dense in row-major order (PyTorch's
    `memory_format=` is not taken, as nowhere in of)."""
    return True


def _tensor_type(self, dtype=None):
    """Tensor.type(): PyTorch's name of the tensor's type ('torch.FloatTensor',
    'torch.cuda.LongTensor', ...: the strings scripts written for PyTorch
    compare against); with a dtype or such a name, the tensor converted to
    it (moved too where the name says 'cuda.' or not)."""
    cuda = self.device == "cuda"
    if dtype is None:
        return "torch." + ("cuda." if cuda else "") + _TYPE_NAMES[self.dtype]
    if isinstance(dtype, dt.dtype):
        return cast(self, dtype)
    if not isinstance(dtype, str):
        raise TypeError(f"type(): dtype must be an of dtype or a type name such as "
                        f"'torch.FloatTensor', not {type(dtype).__name__}")
    name = dtype[len("torch."):] if dtype.startswith("torch.") else ""
    on_cuda = name.startswith("cuda.")
    target = _BY_TYPE_NAME.get(name[len("cuda."):] if on_cuda else name)
    if target is None:
        raise ValueError(f"invalid type: {dtype!r}")
    return to(self, "cuda" if on_cuda else "cpu", target)


def _type_as(self, tensor):
    return cast(self, tensor.dtype)


def _new_size(size, more):
    """The size a new_* method got: one sequence, or the dimensions as
    arguments."""
    shape = _shape_arg((size,) + more)
    if any(d < 0 for d in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def _new_filled(self, shape, fill, dtype, device, requires_grad):
    dtype = self.dtype if dtype is None else dtype
    dev = self.device if device is None else _device_arg(device)
    out = Tensor(np.full(shape, fill, dtype.np), dtype=dtype, device=dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _new_zeros(self, size, *more, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros with this tensor's dtype and device (by default)."""
    return _new_filled(self, _new_size(size, more), 0, dtype, device,
                       requires_grad)


def _new_ones(self, size, *more, dtype=None, device=None, requires_grad=False):
    return _new_filled(self, _new_size(size, more), 1, dtype, device,
                       requires_grad)


def _new_empty(self, size, *more, dtype=None, device=None, requires_grad=False):
    """Uninitialised memory in PyTorch; here zeros (one of its values)."""
    return _new_filled(self, _new_size(size, more), 0, dtype, device,
                       requires_grad)


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, "
                        f"not {type(size).__name__}")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _new_filled(self, _new_size(size, ()), fill_value, dtype, device,
                       requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of `data` (nested lists, a NumPy array, a tensor) with this
    tensor's dtype and device (by default)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = data.numpy()
    dtype = self.dtype if dtype is None else dtype
    array = np.array(data)
    out = Tensor(_c_order(array.astype(dtype.np)), dtype=dtype,
                 device=self.device if device is None else _device_arg(device))
    if requires_grad:
        out.requires_grad_(True)
    return out


def t(input):  # noqa: A002
    """The transpose of a matrix; a tensor of rank 0 or 1 as it is."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def narrow(input, dim, start, length):  # noqa: A002
    """`length` elements of dimension `dim` from `start` (negative: from the
    end)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start, length = int(start), int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    if length == 0 and input._program is None and input._placement is None:
        shape = tuple(0 if i == d else s for i, s in enumerate(input.shape))
        return Tensor(np.zeros(shape, input.dtype.np), dtype=input.dtype,
                      device=input.device)  # (of.slice does not compile empty results)
    starts = [start if i == d else 0 for i in range(input.ndim)]
    limits = [start + length if i == d else s for i, s in enumerate(input.shape)]
    return slice_(input, starts, limits)


def flip(input, dims):  # noqa: A002
    """Reverses `dims`: only where they have at most one element, as
    of.slice takes positive strides only and of has no gather of every
    dtype."""
    dims = [dims] if isinstance(dims, (int, np.integer)) else list(dims)
    axes = [_wrap_dim(d, input.ndim, scalar_ok=True) for d in dims]
    for i, a in enumerate(axes):
        if a in axes[:i]:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    if all(input.ndim == 0 or input.shape[a] <= 1 for a in axes):
        return input
    raise NotImplementedError(
        "torch.flip is not supported yet: of.slice takes positive strides only and of has "
        "no gather of every dtype; reverse the data before making the tensor (np.flip)")


def clamp(input, min=None, max=None):  # noqa: A001,A002
    """min(max(input, min), max), with PyTorch's promotion of an integer
    tensor clamped by a float; a NaN stays NaN. The bound is the left
    operand, which of.maximum/minimum give the gradient of ties: as in
    PyTorch, an input equal to a bound gets none."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = maximum(min, out)
    if max is not None:
        out = minimum(max, out)
    return out


def clamp_min(input, min):  # noqa: A001,A002
    return maximum(min, input)


def clamp_max(input, max):  # noqa: A001,A002
    return minimum(max, input)


def clip(input, min=None, max=None):  # noqa: A001,A002
    """torch.clip: clamp's other name."""
    return clamp(input, min, max)


def square(input):  # noqa: A002
    """input * input; a bool tensor squares as int64, as in PyTorch."""
    if input.dtype is dt.bool:
        input = cast(input, dt.int64)
    return mul(input, input)


def sign(input):  # noqa: A002
    """-1, 0 or 1 in the input's dtype: (input > 0) - (input < 0), so NaN
    gives 0 as PyTorch's does; a bool tensor is its own sign."""
    if input.dtype is dt.bool:
        return input
    return sub(cast(_compare("gt", input, 0), input.dtype),
               cast(_compare("lt", input, 0), input.dtype))


def abs(input):  # noqa: A001,A002
    """input * sign(input): PyTorch's value and gradient (0 at 0); + 0.0
    makes abs(-0.0) +0.0 as there."""
    if input.dtype is dt.bool:
        raise NotImplementedError("torch.abs is not implemented for bool tensors (in "
                                  "PyTorch neither); convert with .long() first")
    out = mul(input, sign(input))
    return add(out, 0.0) if input.dtype.is_floating_point else out


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value * tensor1 * tensor2, in PyTorch's order."""
    scaled = tensor1 if value == 1 else mul(tensor1, value)
    return add(input, mul(scaled, tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value * tensor1 / tensor2, in PyTorch's order."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    scaled = tensor1 if value == 1 else mul(tensor1, value)
    return add(input, div(scaled, tensor2))


def lerp(input, end, weight):  # noqa: A002
    """input + weight * (end - input), computed as PyTorch does: from `end`
    (end - (end - input) * (1 - weight)) where |weight| >= 0.5."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"torch.lerp is not implemented for {input.dtype} tensors "
                                  "(in PyTorch neither); convert with .float() first")
    diff = sub(end, input)
    if isinstance(weight, Tensor):
        small = _compare("lt", abs(weight), 0.5)
        return where(small, add(input, mul(weight, diff)), sub(end, mul(diff, sub(1, weight))))
    # the weight as the kernel sees it (in float32 for float32, float16 and bfloat16)
    w = float(np.float64(weight).astype(np.float64 if input.dtype is dt.float64 else np.float32))
    if -0.5 < w < 0.5:
        return add(input, mul(diff, w))
    return sub(end, mul(diff, 1.0 - w))


def _expand_as(self, other):
    return broadcast_to(self, other.shape)


def _view_as(self, other):
    return reshape(self, other.shape)


def _reshape_as(self, other):
    return reshape(self, other.shape)


def _repeat(self, repeats, *more):
    """Tensor.repeat: the tensor tiled `repeats` times along each dimension
    (leading ones added), as a broadcast between interleaved unit
    dimensions and a reshape."""
    reps = _shape_arg((repeats,) + more)
    if len(reps) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than "
                           "number of dimensions of tensor")
    shape = (1,) * (len(reps) - self.ndim) + tuple(self.shape)
    result = [r * s for r, s in zip(reps, shape)]
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(result)}: {result}")
    interleaved = tuple(d for s in shape for d in (1, s))
    tiled = tuple(d for r, s in zip(reps, shape) for d in (r, s))
    return reshape(broadcast_to(reshape(self, interleaved), tiled), tuple(result))


def _write_inplace(api, self, out):
    """`out`, the result an in-place method computed out of place, written
    into `self` (returned), with PyTorch's checks: the result keeps self's
    shape, and self's dtype can hold it (an integer tensor cannot take a
    floating-point result)."""
    if out is self:
        return self
    if tuple(out.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(out.shape)}")
    if out.dtype is not self.dtype:
        if _kind(out.dtype) > _kind(self.dtype):
            raise RuntimeError(f"result type {_SCALAR_NAMES[out.dtype]} can't be cast to "
                               f"the desired output type {_SCALAR_NAMES[self.dtype]}")
        out = cast(out, self.dtype)
    if self._placement is not None and (out._placement, out._sbp) != (self._placement,
                                                                       self._sbp):
        out = to_global(out, self._placement, self._sbp)
    return _compat.inplace(api, self, out)


def _inplace_method(name, fn, float_result=False):
    """Tensor.<name>: `fn` computed out of place, then written into the
    tensor. `float_result`: fn's result is floating point whatever the
    input (PyTorch's exp, sqrt, ...), so an integer tensor is refused."""
    api = f"Tensor.{name}"

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if float_result and not self.dtype.is_floating_point:
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{_SCALAR_NAMES[self.dtype]}")
        return _write_inplace(api, self, fn(self, *args, **kwargs))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: {fn.__name__} written into this tensor, which is returned."
    return method


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
    T.type_as = _type_as
    T.type = _tensor_type

    T.size = _tensor_size
    T.element_size = _element_size
    T.is_floating_point = is_floating_point
    T.is_contiguous = _is_contiguous
    T.new_zeros, T.new_ones, T.new_empty = _new_zeros, _new_ones, _new_empty
    T.new_full, T.new_tensor = _new_full, _new_tensor
    T.t, T.narrow, T.flip = t, narrow, flip
    T.expand_as, T.view_as, T.reshape_as, T.repeat = _expand_as, _view_as, _reshape_as, _repeat
    T.clamp, T.clamp_min, T.clamp_max, T.clip = clamp, clamp_min, clamp_max, clip
    T.abs, T.square, T.sign = abs, square, sign
    T.addcmul, T.addcdiv, T.lerp = addcmul, addcdiv, lerp
    for name, fn in [("add_", add), ("sub_", sub), ("mul_", mul), ("div_", div),
                     ("pow_", pow), ("clamp_", clamp), ("clamp_min_", clamp_min),
                     ("clamp_max_", clamp_max), ("clip_", clip), ("neg_", neg),
                     ("abs_", abs), ("square_", square), ("sign_", sign),
                     ("addcmul_", addcmul), ("addcdiv_", addcdiv), ("lerp_", lerp)]:
        setattr(T, name, _inplace_method(name, fn))
    for name, fn in [("exp_", exp), ("log_", log), ("sqrt_", sqrt), ("rsqrt_", rsqrt),
                     ("tanh_", tanh), ("sigmoid_", sigmoid)]:
        setattr(T, name, _inplace_method(name, fn, float_result=True))



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


def _leaf(t, requires_grad):
    """A factory's result, a leaf that requires gradients if asked."""
    return t.requires_grad_() if requires_grad else t


def zeros(*size, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.float32
    return _leaf(Tensor(np.zeros(_shape_arg(size), dtype.np), dtype=dtype, device=device),
                 requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.float32
    return _leaf(Tensor(np.ones(_shape_arg(size), dtype.np), dtype=dtype, device=device),
                 requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.default_for(fill_value)
    return _leaf(Tensor(np.full(_shape_arg((size,)), fill_value, dtype.np), dtype=dtype,
                        device=device), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.float32
    return _leaf(Tensor(_random.normal(_shape_arg(size)).astype(dtype.np), dtype=dtype,
                        device=device), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    dtype = dtype or dt.float32
    return _leaf(Tensor(_random.uniform(_shape_arg(size)).astype(dtype.np), dtype=dtype,
                        device=device), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, int) for v in (start, end, step)) else dt.float32
    return _leaf(Tensor(values.astype(dtype.np), dtype=dtype, device=device), requires_grad)


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
