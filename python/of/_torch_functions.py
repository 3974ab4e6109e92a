"""PyTorch's top-level math functions that of has no op of its own for,
composed of `of` ops (docs/python.md, "Math functions"), so that their
gradients are the compiler's: reductions (cumsum, prod, var/std, logsumexp,
norm, all/any), products (dot, outer, addmm, baddbmm, tensordot, einsum),
selection and construction (scatter/scatter_add, diag, select,
repeat_interleave, meshgrid, eye, linspace), integer division, rounding,
and the elementwise functions that compose exactly from exp/log/tanh/pow.
Functions that need an op of has not (asin, acos, atan, atan2, a
floating-point fmod) raise NotImplementedError. Installs the Tensor methods
of the same names."""

import builtins
import math
import os
import warnings

import numpy as np

from . import _dtype as dt
from . import _ops, _random, _runtime
from ._compat import unsupported
from ._ops import _inplace_method
from ._ops import masked_fill as _masked_fill
from ._ops import add_rows as _add_rows
from ._ops import (_along, _binary, _compare, _constant, _eager_only, _empty, _gather_rows,
                   _leaf, _norm_dim, _numel, _traced, _wrap_dim, abs, add, amax, amin, bmm,
                   cast, cat, cos, div, exp, getitem, index_select, log, matmul,
                   maximum, minimum, mul, narrow, neg, permute, pow, reshape, sign, sin, split,
                   sqrt, square, squeeze, sub, sum, tanh, unsqueeze, where)
from ._ops import broadcast_to as _ops_broadcast_to
from ._ops import mean as _ops_mean
from ._ops import transpose as _ops_transpose
from ._tensor import Tensor, _device_arg, as_tensor_like


def _and(a, b):
    return where(a, b, a)


def _or(a, b):
    return where(a, a, b)


def _zero_like(x):
    return as_tensor_like(0, x)


def _refuse_out(api, out):
    if out is not None:
        raise TypeError(f"{api}(): of does not take out= (results are new tensors)")


def _needs_op(api, what):
    raise NotImplementedError(
        f"torch.{api} is not supported yet: of has no {what} op, and no composition of its "
        f"ops computes it to PyTorch's accuracy")


# -- elementwise -----------------------------------------------------------

def reciprocal(input):  # noqa: A002
    """1 / input (integers give float32, as PyTorch's)."""
    return div(1.0 if input.dtype.is_floating_point else 1, input)


def isnan(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return _compare("ne", input, input)  # False everywhere
    return _compare("ne", input, input)


def isfinite(input):  # noqa: A002
    """x - x is 0 for finite x and NaN for infinities and NaN."""
    if not input.dtype.is_floating_point:
        return _compare("eq", input, input)
    return _compare("eq", sub(input, input), 0.0)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    close = _or(_compare("eq", input, other),
                _compare("le", abs(sub(input, other)), add(mul(abs(other), rtol), atol)))
    if equal_nan:
        close = _or(close, _and(isnan(input), isnan(other)))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """isclose everywhere, as a Python bool."""
    return bool(all(isclose(input, other, rtol, atol, equal_nan)))


def _float(api, input):
    if not input.dtype.is_floating_point:
        return cast(input, dt.float32)
    return input


def log2(input):  # noqa: A002
    """log(x) / ln 2 (a few ulps from the correctly rounded value)."""
    return div(log(_float("log2", input)), math.log(2.0))


def log10(input):  # noqa: A002
    """log(x) / ln 10 (a few ulps from the correctly rounded value)."""
    return div(log(_float("log10", input)), math.log(10.0))


def exp2(input):  # noqa: A002
    """pow(2, x): exact at integers."""
    return pow(2.0, _float("exp2", input))


def cosh(input):  # noqa: A002
    """(e^x + e^-x) / 2 (no cancellation; overflows to inf a little before
    PyTorch's, where e^|x| overflows)."""
    x = _float("cosh", input)
    return mul(add(exp(x), exp(neg(x))), 0.5)


def sinh(input):  # noqa: A002
    """2t / (1 - t^2) with t = tanh(x/2) for |x| < 1 (no cancellation near
    0), (e^x - e^-x) / 2 elsewhere; each branch sees only its own inputs,
    so neither's gradient is NaN where it is not used."""
    x = _float("sinh", input)
    small = _compare("lt", abs(x), 1.0)
    xs = where(small, x, _zero_like(x))
    t = tanh(mul(xs, 0.5))
    near = div(mul(t, 2.0), sub(1.0, square(t)))
    xl = where(small, _zero_like(x) + 1.0, x)
    far = mul(sub(exp(xl), exp(neg(xl))), 0.5)
    return where(small, near, far)


def log1p(input):  # noqa: A002
    """Kahan's log1p: with u = 1 + x rounded, log(u) * x / (u - 1) (the
    division corrects u's rounding), or x where u is 1; inf at inf."""
    x = _float("log1p", input)
    u = add(x, 1.0)
    exact = _compare("eq", u, 1.0)
    denominator = where(exact, _zero_like(x) + 1.0, sub(u, 1.0))
    ratio = div(where(exact, _zero_like(x) + 1.0, x), denominator)
    value = where(exact, x, mul(log(where(exact, _zero_like(x) + 2.0, u)), ratio))
    return where(_compare("eq", x, math.inf), x, value)


def expm1(input):  # noqa: A002
    """Kahan's expm1: with u = e^x rounded, (u - 1) * x / log(u), or x where
    u is 1, -1 where u - 1 is -1, inf where u is."""
    x = _float("expm1", input)
    u = exp(x)
    exact = _compare("eq", u, 1.0)
    low = _compare("eq", sub(u, 1.0), -1.0)
    high = _compare("eq", u, math.inf)
    plain = _or(_or(exact, low), high)
    one = _zero_like(x) + 1.0
    us = where(plain, one + 1.0, u)
    xs = where(plain, one, x)
    value = div(mul(sub(us, 1.0), xs), log(us))
    return where(exact, x, where(low, -one, where(high, u, value)))


def tan(input):  # noqa: A002
    """sin(x) / cos(x): of.sin and of.cos's (what they support, tan does)."""
    x = _float("tan", input)
    return div(sin(x), cos(x))


def asin(input):  # noqa: A002
    _needs_op("asin", "asin")


def acos(input):  # noqa: A002
    _needs_op("acos", "acos")


def atan(input):  # noqa: A002
    _needs_op("atan", "atan")


def atan2(input, other):  # noqa: A002
    _needs_op("atan2", "atan2")


# -- rounding: exact through int64 (a float's integer part, when it has
# fractional bits, is within int64's range) ----------------------------------

def _trunc(x):
    """x rounded towards 0, exactly: through int64 where |x| < 2^62 (every
    float at least that large is an integer); x itself elsewhere (and for
    infinities and NaN, whose gradient is then 1, where PyTorch's is 0)."""
    fits = _compare("lt", abs(x), 2.0 ** 62)
    inside = where(fits, x, _zero_like(x))
    return where(fits, cast(cast(inside, dt.int64), x.dtype), x)


def floor(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return input
    t = _trunc(input)
    return where(_compare("gt", t, input), sub(t, 1.0), t)


def ceil(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return input
    return neg(floor(neg(input)))


def round(input, *, decimals=0):  # noqa: A001,A002
    """Half to even, as PyTorch's; `decimals` scales by 10^decimals first,
    as PyTorch does."""
    if not input.dtype.is_floating_point:
        return input
    if decimals:
        scale = 10.0 ** decimals
        return div(round(mul(input, scale)), scale) if decimals > 0 else \
            mul(round(div(input, 10.0 ** -decimals)), 10.0 ** -decimals)
    t = _trunc(input)
    fraction = abs(sub(input, t))  # exact
    odd = _compare("ne", sub(t, mul(_trunc(mul(t, 0.5)), 2.0)), 0.0)
    up = _or(_compare("gt", fraction, 0.5), _and(_compare("eq", fraction, 0.5), odd))
    return where(up, add(t, sign(input)), t)


# -- integer division --------------------------------------------------------

def _integer_operands(api, input, other):
    a = input if isinstance(input, Tensor) else as_tensor_like(input, other)
    b = other if isinstance(other, Tensor) else as_tensor_like(other, a)
    if a.dtype.is_floating_point or b.dtype.is_floating_point:
        raise NotImplementedError(
            f"torch.{api} of floating-point tensors is not supported yet: of has no fmod op "
            f"(a - b * floor(a / b) is not PyTorch's fmod-exact result); integer tensors work")
    if a.dtype is dt.bool or b.dtype is dt.bool:
        a, b = cast(a, dt.int64), cast(b, dt.int64)
    if isinstance(input, Tensor) and not isinstance(other, Tensor):
        b = cast(b, a.dtype)
    elif isinstance(other, Tensor) and not isinstance(input, Tensor):
        a = cast(a, b.dtype)
    return a, b


def _check_divisor(api, b):
    if b._program is None and (b._value() == 0).any():
        raise RuntimeError("ZeroDivisionError")


def _signs_differ(r, b):
    """r != 0 with a sign other than b's (b nonzero)."""
    return _and(_compare("ne", r, 0), where(_compare("lt", r, 0), _compare("gt", b, 0),
                                            _compare("lt", b, 0)))


def fmod(input, other):  # noqa: A002
    """The remainder of truncated division (the dividend's sign)."""
    a, b = _integer_operands("fmod", input, other)
    _check_divisor("fmod", b)
    return sub(a, mul(_binary("div", a, b), b))


def remainder(input, other):  # noqa: A002
    """The remainder of floored division (the divisor's sign)."""
    a, b = _integer_operands("remainder", input, other)
    r = fmod(a, b)
    adjust = _signs_differ(r, b)
    return where(adjust, add(r, b), r)


def floor_divide(input, other):  # noqa: A002
    """Floored division (PyTorch's since 1.13)."""
    a, b = _integer_operands("floor_divide", input, other)
    _check_divisor("floor_divide", b)
    q = _binary("div", a, b)
    r = sub(a, mul(q, b))
    adjust = _signs_differ(r, b)
    return where(adjust, sub(q, 1), q)


# -- reductions ----------------------------------------------------------------

def _dims(x, dim):
    if dim is None:
        return list(range(x.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({_norm_dim(d, x.ndim) for d in dims}) if dims else list(range(x.ndim))


def _sum_dtype(input, dtype):
    """The dtype PyTorch's sum-like reductions compute in: `dtype`, else
    int64 for integers and bool."""
    if dtype is not None:
        return cast(input, dtype)
    if not input.dtype.is_floating_point:
        return cast(input, dt.int64)
    return input


def _along_last(x, d):
    """x with dimension d moved last, and the permutation back."""
    perm = [i for i in range(x.ndim) if i != d] + [d]
    back = [perm.index(i) for i in range(x.ndim)]
    return permute(x, perm), back


def _prefix_scan(input, dim, dtype, combine, identity):
    """Inclusive prefix `combine`s along `dim`: log2(n) steps of x combined
    with x shifted by 1, 2, 4, ... (a block of `identity` before a narrow)."""
    x = _sum_dtype(input, dtype)
    if x.ndim == 0:
        return x
    d = _wrap_dim(dim, x.ndim)
    n = x.shape[d]
    shift = 1
    while shift < n:
        block_shape = list(x.shape)
        block_shape[d] = shift
        block = broadcast_to(_zero_like(x) + identity, tuple(block_shape))
        x = combine(x, cat([block, narrow(x, d, 0, n - shift)], d))
        shift *= 2
    return x


def cumsum(input, dim, *, dtype=None):  # noqa: A002
    """Inclusive prefix sums along `dim` (_prefix_scan)."""
    return _prefix_scan(input, dim, dtype, add, 0)


def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Inclusive prefix products along `dim` (_prefix_scan), so a zero gets
    the gradient of the products it is in, without a division."""
    return _prefix_scan(input, dim, dtype, mul, 1)


def _tree_product(x, d):
    """The product along dimension d (kept, size 1): halves multiplied
    pairwise, an odd element carried."""
    while x.shape[d] > 1:
        n = x.shape[d]
        half = n // 2
        y = mul(narrow(x, d, 0, half), narrow(x, d, half, half))
        x = cat([y, narrow(x, d, n - 1, 1)], d) if n % 2 else y
    return x


def prod(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The product of the elements (along `dim`): a tree of multiplications,
    so a zero gets the gradient of the others' product, as PyTorch's."""
    x = _sum_dtype(input, dtype)
    if dim is None:
        x = reshape(x, (x.numel(),))
        if x.numel() == 0:
            return as_tensor_like(1, x) + _zero_like(x)
        return reshape(_tree_product(x, 0), ())
    if x.ndim == 0:
        return x
    d = _wrap_dim(dim, x.ndim)
    if x.shape[d] == 0:
        shape = list(x.shape)
        shape[d] = 1
        out = _constant(np.ones(shape), x.dtype, x)
    else:
        out = _tree_product(x, d)
    return out if keepdim else squeeze(out, d)


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    """Whether every element (along `dim`) is nonzero, as bool."""
    b = input if input.dtype is dt.bool else _compare("ne", input, 0)
    if b.numel() == 0:
        return _empty_reduction(b, dim, keepdim, True)
    return amin(b, dim, keepdim) if b.ndim else b


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    """Whether some element (along `dim`) is nonzero, as bool."""
    b = input if input.dtype is dt.bool else _compare("ne", input, 0)
    if b.numel() == 0:
        return _empty_reduction(b, dim, keepdim, False)
    return amax(b, dim, keepdim) if b.ndim else b


def _empty_reduction(b, dim, keepdim, value):
    axes = _dims(b, dim)
    shape = [1 if i in axes else s for i, s in enumerate(b.shape)] if keepdim else \
        [s for i, s in enumerate(b.shape) if i not in axes]
    return _constant(np.full(shape, value), dt.bool, b)


def _correction(api, dim, args, correction, keepdim, unbiased):
    """PyTorch's var/std arguments: (dim, correction, keepdim), from the
    current form or the legacy (unbiased, keepdim) positions."""
    if isinstance(dim, bool):  # var(input, unbiased)
        args, dim = (dim,) + tuple(args), None
    if len(args) > 2:
        raise TypeError(f"{api}() takes at most 4 positional arguments")
    if args:
        unbiased = args[0]
        if len(args) == 2:
            keepdim = args[1]
    if unbiased is not None:
        if correction != 1:
            raise RuntimeError(f"{api}: cannot specify both unbiased and correction")
        correction = 1 if unbiased else 0
    return dim, correction, keepdim


def var(input, dim=None, *args, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    """sum((x - mean)^2) / (N - correction) over `dim` (all by default);
    `unbiased` (and var(x, dim, unbiased, keepdim)) as PyTorch's."""
    dim, correction, keepdim = _correction("var", dim, args, correction, keepdim, unbiased)
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = _dims(input, dim)
    n = _numel([input.shape[i] for i in axes])
    mean = div(sum(input, axes, True), float(n))
    total = sum(square(sub(input, mean)), axes, keepdim)
    return div(total, float(builtins.max(n - correction, 0)))


def std(input, dim=None, *args, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    """sqrt(var(...)), with var's arguments."""
    return sqrt(var(input, dim, *args, correction=correction, keepdim=keepdim,
                    unbiased=unbiased))


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(x))) over `dim`, shifted by the (finite) maximum."""
    x = _float("logsumexp", input)
    axes = _dims(x, dim)
    if x.numel() == 0:
        return log(sum(exp(x), axes, keepdim))
    m = amax(x, axes, True)
    m = where(isfinite(m), m, _zero_like(m))
    out = add(log(sum(exp(sub(x, m)), axes, True)), m)
    return out if keepdim else reshape(out, tuple(
        s for i, s in enumerate(x.shape) if i not in axes))


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """The vector p-norm over `dim` (all by default): 'fro' and 2 the
    Euclidean, inf/-inf the largest/smallest |x|, 0 the count of nonzeros,
    otherwise sum(|x|^p)^(1/p). 'nuc' is NotImplementedError."""
    _refuse_out("norm", out)
    x = input if dtype is None else cast(input, dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {x.dtype}")
    if p == "nuc":
        raise NotImplementedError("torch.norm(p='nuc') is not supported yet: of has no "
                                  "singular value decomposition")
    if p == "fro":
        p = 2
    axes = _dims(x, dim)
    if p == math.inf:
        return amax(abs(x), axes, keepdim)
    if p == -math.inf:
        return amin(abs(x), axes, keepdim)
    if p == 0:
        return sum(cast(_compare("ne", x, 0.0), x.dtype), axes, keepdim)
    if p == 1:
        return sum(abs(x), axes, keepdim)
    if p == 2:
        return sqrt(sum(square(x), axes, keepdim))
    return pow(sum(pow(abs(x), float(p)), axes, keepdim), 1.0 / p)



# -- products --------------------------------------------------------------------

def dot(input, tensor):  # noqa: A002
    """The inner product of two vectors of the same length."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D "
                           f"tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{tensor.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {tensor.shape[0]} elements respectively")
    return sum(mul(input, tensor))


def outer(input, vec2):  # noqa: A002
    """input[i] * vec2[j]."""
    return mul(reshape(input, (input.numel(), 1)), reshape(vec2, (1, vec2.numel())))


def _scaled_sum(input, product, beta, alpha, api):
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:  # input is ignored (its NaNs too), as in PyTorch
        return add(product, mul(broadcast_to(_zero_like(product), tuple(product.shape)), 0))
    return add(input if beta == 1 else mul(input, beta), product)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2)."""
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("mat1 must be a matrix" if mat1.ndim != 2 else
                           "mat2 must be a matrix")
    return _scaled_sum(input, matmul(mat1, mat2), beta, alpha, "addmm")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * bmm(batch1, batch2)."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha, "baddbmm")


def tensordot(a, b, dims=2, out=None):
    """The sum over a's last and b's first `dims` dimensions (or the pairs
    `dims` lists): both permuted and flattened into one matmul."""
    _refuse_out("tensordot", out)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [_norm_dim(d, a.ndim) for d in da]
    db = [_norm_dim(d, b.ndim) for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in "
                               f"dim {j}")
    ka = [i for i in range(a.ndim) if i not in da]
    kb = [j for j in range(b.ndim) if j not in db]
    k = _numel([a.shape[i] for i in da])
    left = reshape(permute(a, ka + da), (_numel([a.shape[i] for i in ka]), k))
    right = reshape(permute(b, db + kb), (k, _numel([b.shape[j] for j in kb])))
    shape = tuple(a.shape[i] for i in ka) + tuple(b.shape[j] for j in kb)
    return reshape(matmul(left, right), shape)


def _diagonal_of(x, i, j):
    """x's diagonal over its dimensions i and j (equal sizes), as the last
    dimension: the two moved last, flattened, every (n+1)-th element."""
    n = x.shape[i]
    rest = [d for d in range(x.ndim) if d not in (i, j)]
    y = reshape(permute(x, rest + [i, j]), tuple(x.shape[d] for d in rest) + (n * n,))
    return getitem(y, (Ellipsis, slice(0, n * n, n + 1)))


def einsum(*args):
    """Einstein summation: each operand's repeated labels reduced to their
    diagonal, labels only one operand has and the output lacks summed, then
    the operands contracted left to right, each pair as one matmul (labels
    both have and later ones or the output need kept as batch)."""
    if not args:
        raise RuntimeError("einsum(): must specify the equation string and at least one operand")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the "
                           f"equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    # '...' becomes labels of its own (upper-case letters after those used)
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in equation]
    ell = builtins.max([op.ndim - len(t.replace("...", "")) for t, op in zip(terms, operands)
                        if "..." in t] or [0])
    ell_labels = "".join(spare[:ell][::-1])
    labels = []
    for t, op in zip(terms, operands):
        if "..." in t:
            k = op.ndim - len(t.replace("...", ""))
            t = t.replace("...", ell_labels[ell - k:])
        if len(t) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({op.ndim}) for "
                               f"operand {len(labels)}")
        labels.append(t)
    if arrow:
        out = rhs.replace("...", ell_labels)
    else:
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell_labels + "".join(sorted(c for c in counts if counts[c] == 1
                                          and c not in ell_labels))
    sizes = {}
    for t, op in zip(labels, operands):
        for c, s in zip(t, op.shape):
            if sizes.get(c, 1) != s and s != 1:
                if sizes.get(c, 1) != 1:
                    raise RuntimeError(f"einsum(): operands do not broadcast with remapped "
                                       f"shapes (original->remapped)")
            sizes[c] = builtins.max(sizes.get(c, 1), s)
    # each operand: diagonals taken, labels needed nowhere else summed
    items = []
    for n, (t, op) in enumerate(zip(labels, operands)):
        while len(set(t)) != len(t):
            c = next(c for c in t if t.count(c) > 1)
            i = t.index(c)
            j = t.index(c, i + 1)
            op = _diagonal_of(op, i, j)
            t = "".join(x for k, x in enumerate(t) if k not in (i, j)) + c
        elsewhere = set(out) | {c for m, s in enumerate(labels) if m != n for c in s}
        drop = [k for k, c in enumerate(t) if c not in elsewhere]
        if drop:
            op = sum(op, drop)
            t = "".join(c for k, c in enumerate(t) if k not in drop)
        items.append((t, op))
    t, x = items[0]
    for n in range(1, len(items)):
        u, y = items[n]
        later = set(out) | {c for s, _ in items[n + 1:] for c in s}
        batch = [c for c in t if c in u and c in later]
        contract = [c for c in t if c in u and c not in later]
        left = [c for c in t if c not in u]
        right = [c for c in u if c not in t]
        shape = lambda cs: tuple(sizes[c] for c in cs)  # noqa: E731
        xb = broadcast_to(permute(x, [t.index(c) for c in batch + left + contract]),
                          shape(batch) + tuple(x.shape[t.index(c)] for c in left)
                          + shape(contract))
        yb = broadcast_to(permute(y, [u.index(c) for c in batch + contract + right]),
                          shape(batch) + shape(contract)
                          + tuple(y.shape[u.index(c)] for c in right))
        lsz = tuple(xb.shape[len(batch):len(batch) + len(left)])
        rsz = tuple(yb.shape[len(batch) + len(contract):])
        k = _numel(shape(contract))
        xm = reshape(xb, shape(batch) + (_numel(lsz), k))
        ym = reshape(yb, shape(batch) + (k, _numel(rsz)))
        x = reshape(matmul(xm, ym), shape(batch) + lsz + rsz)
        t = "".join(batch + left + right)
    drop = [k for k, c in enumerate(t) if c not in out]
    if drop:
        x = sum(x, drop)
        t = "".join(c for c in t if c in out)
    for c in out:
        if c not in t:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                               f"equation for any input operand")
    x = permute(x, [t.index(c) for c in out]) if t != out else x
    full = tuple(sizes[c] for c in out)
    return broadcast_to(x, full) if tuple(x.shape) != full else x


# -- selection and construction ---------------------------------------------------

def _scatter_positions(api, input, dim, index, src):
    """The flat positions in `input` that index's elements write (index
    times dim's stride plus the other coordinates), and the flat `src`
    elements written (src's leading [index.shape] block)."""
    if index.dtype is not dt.int64:
        raise RuntimeError(f"{api}(): Expected dtype int64 for index")
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    d = _wrap_dim(dim, input.ndim, scalar_ok=True)
    ndim = builtins.max(input.ndim, 1)
    in_shape = tuple(input.shape) or (1,)
    idx = reshape(index, tuple(index.shape) or (1,))
    for i in range(ndim):
        if i != d and idx.shape[i] > in_shape[i]:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
        if isinstance(src, Tensor) and src.ndim and idx.shape[i] > src.shape[i]:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than src "
                               f"{list(src.shape)}")
    strides = [_numel(in_shape[i + 1:]) for i in range(ndim)]
    values = None if index._program is not None else index._value().astype(np.int64)
    if values is not None:
        bad = values[(values < -in_shape[d]) | (values >= in_shape[d])]
        if bad.size:
            raise RuntimeError(f"index {int(bad.flat[0])} is out of bounds for dimension {d} "
                               f"with size {in_shape[d]}")
    flat = mul(idx, strides[d]) if strides[d] != 1 else idx
    for i in range(ndim):
        if i != d and idx.shape[i] > 1:
            flat = add(flat, _along(idx.shape[i], i, ndim, input,
                                   np.arange(idx.shape[i]) * strides[i]))
    flat = reshape(broadcast_to(flat, tuple(idx.shape)), (idx.numel(),))
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            raise RuntimeError(f"{api}(): Expected self.dtype to be equal to src.dtype")
        s = reshape(src, tuple(src.shape) or (1,))
        s = getitem(s, tuple(slice(0, n) for n in idx.shape))
        s = reshape(s, (idx.numel(), 1))
    else:
        s = broadcast_to(reshape(as_tensor_like(src, input), (1, 1)), (idx.numel(), 1))
    return flat, s, values is not None


def _wrap_positions(flat, n, like):
    """Traced flat positions with the negative ones (counted from the end)
    made non-negative."""
    size = _constant(np.array(n), dt.int64, like)
    return where(_compare("lt", flat, 0), add(flat, size), flat)


def _hits(flat, n, like):
    """[n, writes]: whether each traced write lands on each of n positions."""
    flat = _wrap_positions(flat, n, like)
    return _compare("eq", reshape(flat, (1, flat.numel())),
                    _constant(np.arange(n).reshape(n, 1), dt.int64, like))


def _scatter(api, input, dim, index, src, accumulate):
    if accumulate and not input.dtype.is_floating_point:
        return _scatter_combine(api, input, dim, index, src, "sum", True)
    flat, s, known = _scatter_positions(api, input, dim, index, src)
    n, m = input.numel(), flat.numel()
    x = reshape(input, (n, 1))
    if m == 0:
        return input
    if accumulate:  # floating point: one scatter-add of the rows
        if known:
            flat = _constant(flat.numpy() % builtins.max(n, 1), dt.int64, input)
        else:
            flat = _wrap_positions(flat, n, input)
        return reshape(_add_rows(x, flat, s), tuple(input.shape))
    if known:  # the last write wins
        positions = flat.numpy() % builtins.max(n, 1)
        written = np.zeros(n, np.bool_)
        written[positions] = True
        source = np.zeros(n, np.int64)
        source[positions] = np.arange(m)
        new = _gather_rows(s, _constant(source, dt.int64, input))
        out = where(_constant(written.reshape(n, 1), dt.bool, input), new, x)
        return reshape(out, tuple(input.shape))
    hit = _hits(flat, n, input)  # traced index: every position against every write
    last = amax(where(hit, _constant(np.arange(m).reshape(1, m), dt.int64, input),
                      as_tensor_like(-1, flat)), 1, True)
    written = _compare("ge", last, 0)
    new = _gather_rows(s, reshape(where(written, last, _zero_like(last)), (n,)))
    return reshape(where(written, new, x), tuple(input.shape))


# reduce: (combine two values, reduce along a dimension, identity: a number, or the
# lowest ("max") or highest ("min") value of the dtype)
_COMBINE = {"amax": (maximum, amax, "max"), "amin": (minimum, amin, "min"),
            "prod": (mul, prod, 1), "sum": (add, sum, 0)}


def _scatter_combine(api, input, dim, index, src, reduce, include_self):
    """Each position combined with the writes it gets (scatter_reduce's
    'amax', 'amin', 'prod', and integer scatter-adds; with
    include_self=False a written position starts from the identity);
    eagerly one gather per repetition of a position (an identity row where
    a position has fewer writes), traced a [positions x writes] table of
    the writes or the identity, reduced along the writes."""
    combine, along, bound = _COMBINE[reduce]
    flat, s, known = _scatter_positions(api, input, dim, index, src)
    n, m = input.numel(), flat.numel()
    if m == 0:
        return input
    x = reshape(input, (n, 1))
    if not isinstance(bound, str):
        identity = bound
    elif input.dtype.is_floating_point:
        identity = float("-inf") if bound == "max" else float("inf")
    else:
        info = np.iinfo(input.dtype.np)
        identity = int(info.min if bound == "max" else info.max)
    fill = broadcast_to(as_tensor_like(identity, input), (1, 1))
    if known:
        positions = flat.numpy() % builtins.max(n, 1)
        written = np.zeros((n, 1), np.bool_)
        written[positions] = True
        out = x if include_self else where(_constant(written, dt.bool, input), fill, x)
        order = np.argsort(positions, kind="stable")
        rank = np.empty(m, np.int64)
        sorted_pos = positions[order]
        rank[order] = np.arange(m) - np.searchsorted(sorted_pos, sorted_pos, side="left")
        padded = cat([s, fill], 0)
        for j in range(int(rank.max()) + 1):
            source = np.full(n, m, np.int64)  # m: the identity row
            chosen = rank == j
            source[positions[chosen]] = np.arange(m)[chosen]
            out = combine(out, _gather_rows(padded, _constant(source, dt.int64, input)))
        return reshape(out, tuple(input.shape))
    hit = _hits(flat, n, input)
    reduced = along(where(hit, reshape(s, (1, m)), fill), 1, True)
    written = _compare("gt", sum(cast(hit, dt.int64), 1, True), 0)
    out = x if include_self else where(written, fill, x)
    return reshape(combine(out, reduced), tuple(input.shape))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """input with src's elements (or `value`) written at `index` along
    `dim` (the last of repeated positions wins); reduce='add' is
    scatter_add, 'multiply' is NotImplementedError."""
    if value is not None:
        if src is not None:
            raise TypeError("scatter() got both src and value")
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' (or value)")
    if reduce is not None and isinstance(src, Tensor):
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning, stacklevel=2)
    if reduce == "add":
        return _scatter("scatter", input, dim, index, src, True)
    unsupported("scatter", reduce=(reduce, None))
    return _scatter("scatter", input, dim, index, src, False)


def scatter_add(input, dim, index, src):  # noqa: A002
    """input with src's elements added at `index` along `dim` (repeated
    positions add up): eagerly one gather per repetition of a position,
    traced a where over every (position, write) pair."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, True)


def _index_positions(api, input, dim, index, rows):
    """index (1-D, int64) broadcast along `dim` to an index tensor of
    input's shape with `rows` at dim, as scatter takes it."""
    if index.ndim > 1:
        raise IndexError(f"{api}(): Index is supposed to be a vector")
    if index.dtype is not dt.int64:
        raise RuntimeError(f"{api}(): Expected dtype int64 for index")
    d = _wrap_dim(dim, input.ndim, scalar_ok=True)
    shape = list(input.shape) or [1]
    shape[d] = rows
    along = [1] * len(shape)
    along[d] = -1
    return d, broadcast_to(reshape(index, tuple(along)), tuple(shape))


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """input with alpha * source's slices added at `index` along dim
    (repeated indices add up)."""
    d, idx = _index_positions("index_add", input, dim, index, index.numel())
    expected = [index.numel() if i == d else n for i, n in enumerate(input.shape)]
    if list(source.shape) != expected:
        raise RuntimeError(f"index_add_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {list(input.shape)} at dimension "
                           f"{d} and source slice shape: {list(source.shape)} at dimension "
                           f"{d}.")
    src = mul(source, alpha) if alpha != 1 else source
    return _scatter("index_add", input, d, idx, src, True)


def index_copy(input, dim, index, source):  # noqa: A002
    """input with source's slices written at `index` along dim."""
    d, idx = _index_positions("index_copy", input, dim, index, index.numel())
    return _scatter("index_copy", input, d, idx, source, False)


def index_fill(input, dim, index, value):  # noqa: A002
    """input with its slices at `index` along dim set to value."""
    d, idx = _index_positions("index_fill", input, dim, index, index.numel())
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = value.item()
    return _scatter("index_fill", input, d, idx, value, False)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    dtype = dtype or input.dtype
    return _leaf(Tensor(np.full(tuple(input.shape), fill_value, dtype.np), dtype=dtype,
                        device=device or input.device), requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """A tensor like input (of's are zero-filled)."""
    return full_like(input, 0, dtype=dtype, device=device, requires_grad=requires_grad)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """input with src's elements reduced into the positions `index` names
    along dim: 'sum', 'mean' (the count includes input's element unless
    include_self=False), 'prod', 'amax', 'amin'; an untouched position keeps
    its value."""
    if reduce not in ("sum", "mean", "prod", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    if reduce in ("prod", "amax", "amin"):
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to "
                               "src.dtype")
        return _scatter_combine("scatter_reduce", input, dim, index, src, reduce,
                                include_self)
    base = input
    if not include_self:  # the written positions start from zero
        base = _scatter("scatter_reduce", input, dim, index, 0, False)
    total = _scatter("scatter_reduce", base, dim, index, src, True)
    if reduce == "sum":
        return total
    ones = broadcast_to(_zero_like(src) + 1, tuple(src.shape))
    start = broadcast_to(_zero_like(input) + (1 if include_self else 0), tuple(input.shape))
    count = _scatter("scatter_reduce", start, dim, index, ones, True)
    count = where(_compare("eq", count, 0), _zero_like(count) + 1, count)
    if not input.dtype.is_floating_point:
        return floor_divide(total, count)
    return div(total, count)


def select(input, dim, index):  # noqa: A002
    """input[..., index, ...] at dimension `dim`, which it removes."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return squeeze(narrow(input, d, index % n, 1), d)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    d = _wrap_dim(dim, input.ndim)
    if builtins.sum(split_sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(split_sizes)}")
    return tuple(split(input, list(split_sizes), d))


def diag(input, diagonal=0):  # noqa: A002
    """A vector's square matrix with it on the `diagonal`-th diagonal (a
    where with a constant mask), or a matrix's `diagonal`-th diagonal (every
    (cols+1)-th element of the flattened matrix)."""
    k = diagonal
    if input.ndim == 1:
        n = input.shape[0]
        size = n + builtins.abs(k)
        v = input if k == 0 else cat([input, broadcast_to(_zero_like(input), (builtins.abs(k),))])
        values = reshape(v, (size, 1) if k >= 0 else (1, size))
        mask = np.eye(size, k=k, dtype=np.bool_)
        return where(_constant(mask, dt.bool, input), values, _zero_like(input))
    if input.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " f"{input.ndim}D")
    rows, cols = input.shape
    length = builtins.max(builtins.min(rows + builtins.min(k, 0), cols - builtins.max(k, 0)), 0)
    if length == 0:
        return _empty((0,), input.dtype, input)
    start = k if k >= 0 else -k * cols
    flat = reshape(input, (rows * cols,))
    return getitem(flat, slice(start, start + (length - 1) * (cols + 1) + 1, cols + 1))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element (of the flattened input, or along `dim`) repeated
    `repeats` times (an int, or a tensor of one count per element: eager
    only, since the counts make the size); repeat_interleave(counts) gives
    the repeated indices."""
    if repeats is None:  # repeat_interleave(repeats)
        counts = input
        if counts._program is not None:
            _eager_only("torch.repeat_interleave", "the counts make the result's size",
                        "pass an int count")
        return _constant(np.repeat(np.arange(counts.numel()), counts._value().reshape(-1)),
                         dt.int64, counts)
    x = input if dim is not None else reshape(input, (input.numel(),))
    d = 0 if dim is None else _wrap_dim(dim, x.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        if repeats._program is not None:
            _eager_only("torch.repeat_interleave", "the count makes the result's size",
                        "pass an int count")
        repeats = int(repeats._value().reshape(()))
    if isinstance(repeats, Tensor):
        if repeats._program is not None:
            _eager_only("torch.repeat_interleave", "the counts make the result's size",
                        "pass an int count")
        counts = repeats._value().reshape(-1).astype(np.int64)
        if counts.size != x.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        out = index_select(x, d, _constant(np.repeat(np.arange(counts.size), counts),
                                          dt.int64, x))
    else:
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(x.shape)
        y = unsqueeze(x, d + 1)
        expanded = list(y.shape)
        expanded[d + 1] = repeats
        shape[d] *= repeats
        out = reshape(broadcast_to(y, tuple(expanded)), tuple(shape))
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError("allocated size does not match required size")
    return out


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: each vector broadcast along the others' dimensions
    (for indexing='xy', the first two vectors' dimensions swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                      "the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    vectors = [reshape(t, (t.numel(),)) for t in tensors]
    swap = indexing == "xy" and len(vectors) >= 2
    if swap:
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = tuple(v.shape[0] for v in vectors)
    grids = []
    for i, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[i] = shape[i]
        grids.append(broadcast_to(reshape(v, tuple(view)), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _factory(values, dtype, device, requires_grad):
    return _leaf(Tensor(np.ascontiguousarray(values.astype(dtype.np)), dtype=dtype,
                        device=_device_arg(device)), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The n x m identity (ones on the diagonal)."""
    dtype = dtype or dt.float32
    return _factory(np.eye(n, n if m is None else m), dtype, device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end (PyTorch's formula:
    from the start in the first half, from the end in the second)."""
    dtype = dtype or dt.float32
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = (float(v.item()) if isinstance(v, Tensor) else v for v in (start, end))
    # in the result's floating-point type, as PyTorch's kernel computes
    ftype = dtype.np.type if dtype in (dt.float32, dt.float64) else np.float64
    start, end = ftype(start), ftype(end)
    if steps == 1:
        values = np.array([start], ftype)
    else:
        step = np.float64((end - start) / ftype(steps - 1))
        i = np.arange(steps, dtype=np.float64)
        # each value rounded once, as PyTorch's fused multiply-add rounds it
        values = np.where(i < steps // 2, np.float64(start) + step * i,
                          np.float64(end) - step * (steps - 1 - i))
    if not dtype.is_floating_point:
        values = np.trunc(values)
    return _factory(values, dtype, device, requires_grad)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance of each row of x1 to each of x2 ([..., P, M] and
    [..., R, M] give [..., P, R]): the differences broadcast, then norm.
    `compute_mode` chooses how PyTorch computes, not what."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = sub(unsqueeze(x1, -2), unsqueeze(x2, -3))
    return norm(diff, p, -1)


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along `dim` (None: the first dimension
    of size 3, PyTorch's deprecated default)."""
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(other.shape)))
    a, b = broadcast_to(input, shape), broadcast_to(other, shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                      "The default value of dim will change to agree with that of "
                      "linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = _wrap_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    a1, a2, a3 = (narrow(a, d, i, 1) for i in range(3))
    b1, b2, b3 = (narrow(b, d, i, 1) for i in range(3))
    return cat([sub(mul(a2, b3), mul(a3, b2)), sub(mul(a3, b1), mul(a1, b3)),
                sub(mul(a1, b2), mul(a2, b1))], d)


def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """The distinct values (sorted), with the inverse indices and counts:
    NumPy's unique of the eager value (its size is data-dependent, so not
    in a compiled function); like PyTorch's, it has no gradient."""
    if input._program is not None:
        _eager_only("torch.unique", "the number of distinct values is the result's size",
                    "compute it outside the compiled function")
    values, inverse, counts = np.unique(input._value(), return_inverse=True,
                                        return_counts=True, axis=dim)
    if dim is None:
        inverse = inverse.reshape(tuple(input.shape))
    out = Tensor(np.ascontiguousarray(values), dtype=input.dtype, device=input.device)
    if not (return_inverse or return_counts):
        return out
    result = (out,)
    if return_inverse:
        result += (_constant(inverse.reshape(-1) if dim is not None else inverse, dt.int64,
                             input),)
    if return_counts:
        result += (_constant(counts, dt.int64, input),)
    return result


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value of a non-negative int vector occurs (the sum of
    `weights` there): NumPy's bincount of the eager values (the length is
    data-dependent, so not in a compiled function); no gradient."""
    if _traced(input, weights):
        _eager_only("torch.bincount", "its length is the largest value plus one",
                    "use scatter_add into a tensor of a known length")
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype is dt.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    v = input._value().astype(np.int64)
    if v.size and v.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _constant(np.bincount(v, minlength=minlength), dt.int64, input)
    w = weights._value()
    dtype = weights.dtype if weights.dtype in (dt.float32, dt.float64) else dt.float64
    return _constant(np.bincount(v, w.astype(np.float64), minlength=minlength), dtype, input)


# -- Tensor methods -------------------------------------------------------------------

# -- aliases and small compositions PyTorch programs use ---------------------

def subtract(input, other, *, alpha=1):  # noqa: A002
    return sub(input, other, alpha=alpha)


def multiply(input, other):  # noqa: A002
    return mul(input, other)


def divide(input, other, *, rounding_mode=None):  # noqa: A002
    return div(input, other, rounding_mode=rounding_mode)


def true_divide(dividend, divisor):
    return div(dividend, divisor)


def negative(input):  # noqa: A002
    return neg(input)


def _truth(x):
    """x as bool: nonzero is True (PyTorch's logical_* read their operands so)."""
    return x if x.dtype is dt.bool else _compare("ne", x, _zero_like(x))


def _logical_operand(x, like):
    return _truth(x if isinstance(x, Tensor) else as_tensor_like(x, like))


def logical_not(input):  # noqa: A002
    t = _truth(input)
    return where(t, as_tensor_like(False, t), as_tensor_like(True, t))


def logical_and(input, other):  # noqa: A002
    return _and(_truth(input), _logical_operand(other, input))


def logical_or(input, other):  # noqa: A002
    return _or(_truth(input), _logical_operand(other, input))


def logical_xor(input, other):  # noqa: A002
    b = _logical_operand(other, input)
    return where(_truth(input), logical_not(b), b)


def isinf(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return _compare("ne", input, input)  # False everywhere
    return _compare("eq", abs(input), math.inf)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by
    default the dtype's largest and smallest finite values)."""
    if not input.dtype.is_floating_point:
        return input
    info = np.finfo(input.dtype.np if input.dtype.np is not None else np.float32)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    x = where(isnan(input), as_tensor_like(nan, input), input)
    x = where(_compare("eq", input, math.inf), as_tensor_like(posinf, input), x)
    return where(_compare("eq", input, -math.inf), as_tensor_like(neginf, input), x)


def trunc(input):  # noqa: A002
    return _trunc(input) if input.dtype.is_floating_point else input


def frac(input):  # noqa: A002
    return sub(input, trunc(input))


def unbind(input, dim=0):  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def movedim(input, source, destination):  # noqa: A002
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    src = [_norm_dim(d, input.ndim) for d in src]
    dst = [_norm_dim(d, input.ndim) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    order = [None] * input.ndim
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(input.ndim) if d not in src)
    return permute(input, [o if o is not None else next(rest) for o in order])


def swapaxes(input, axis0, axis1):  # noqa: A002
    return _ops_transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):  # noqa: A002
    return _ops_transpose(input, dim0, dim1)


def broadcast_to(input, shape):  # noqa: A002
    return _ops_broadcast_to(input, shape)


def unflatten(input, dim, sizes):  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    sizes = list(sizes)
    if sizes.count(-1) == 1:
        known = _numel([s for s in sizes if s != -1])
        sizes[sizes.index(-1)] = input.shape[d] // known if known else 0
    if _numel(sizes) != input.shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({input.shape[d]}) in the input tensor")
    return reshape(input, tuple(input.shape[:d]) + tuple(sizes) + tuple(input.shape[d + 1:]))


def atleast_1d(*tensors):
    out = [reshape(t, (1,)) if t.ndim == 0 else t for t in _tensor_args(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    out = [reshape(t, (1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t
           for t in _tensor_args(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def _tensor_args(tensors):
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else list(tensors)


def hstack(tensors):
    tensors = [atleast_1d(t) for t in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t) for t in tensors], 0)


def concat(tensors, dim=0):
    return cat(tensors, dim)


def concatenate(tensors, axis=0, out=None):
    unsupported("concatenate", out=(out, None))
    return cat(tensors, axis)


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal over dim1 and dim2 (offset above it when positive), as
    the last dimension."""
    i, j = _norm_dim(dim1, input.ndim), _norm_dim(dim2, input.ndim)
    if i == j:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = input
    if offset > 0:
        x = narrow(x, j, builtins.min(offset, x.shape[j]), builtins.max(x.shape[j] - offset, 0))
    elif offset < 0:
        x = narrow(x, i, builtins.min(-offset, x.shape[i]), builtins.max(x.shape[i] + offset, 0))
    n = builtins.min(x.shape[i], x.shape[j])
    x = narrow(narrow(x, i, 0, n), j, 0, n)
    return _diagonal_of(x, i, j)


def trace(input):  # noqa: A002
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return sum(diagonal(input))


def count_nonzero(input, dim=None):  # noqa: A002
    nonzero = cast(_truth(input), dt.int64)
    return sum(nonzero) if dim is None else sum(nonzero, dim)


def var_mean(input, dim=None, *args, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    mean = _ops_mean(input) if dim is None else _ops_mean(input, dim, keepdim=keepdim)
    return var(input, dim, *args, correction=correction, keepdim=keepdim,
               unbiased=unbiased), mean


def std_mean(input, dim=None, *args, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    mean = _ops_mean(input) if dim is None else _ops_mean(input, dim, keepdim=keepdim)
    return std(input, dim, *args, correction=correction, keepdim=keepdim,
               unbiased=unbiased), mean


def mv(input, vec):  # noqa: A002
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    return reshape(matmul(input, reshape(vec, (vec.shape[0], 1))), (input.shape[0],))


def broadcast_tensors(*tensors):
    tensors = _tensor_args(tensors)
    shape = tuple(np.broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return tuple(broadcast_to(t, shape) for t in tensors)


class finfo:
    """torch.finfo: the limits of a floating-point dtype (float32 by default)."""

    def __init__(self, type=None):  # noqa: A002
        type = type or dt.float32  # noqa: A001
        if not type.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type, not {type}")
        info = np.finfo(type.np if type.np is not None else np.float32) \
            if type is not dt.bfloat16 else None
        if info is None:  # bfloat16: 8 exponent bits, 7 mantissa bits
            self.bits, self.eps, self.max = 16, 2.0 ** -7, 3.3895313892515355e38
            self.tiny, self.resolution = 1.1754943508222875e-38, 0.01
        else:
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny, self.resolution = float(info.tiny), float(info.resolution)
        self.min, self.smallest_normal, self.dtype = -self.max, self.tiny, type.name


class iinfo:
    """torch.iinfo: the limits of an integer dtype."""

    def __init__(self, type):  # noqa: A002
        if type.is_floating_point or type is dt.bool:
            raise TypeError(f"torch.iinfo() requires an integer input type, not {type}")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), \
            type.name


def get_default_dtype():
    """of's default floating-point dtype: float32 (set_default_dtype is not
    supported)."""
    return dt.float32


# -- more of torch.*: construction, random state, shape and math helpers ----

def as_tensor(data, dtype=None, device=None):
    """`data` itself when it is a tensor of that dtype and device (no copy,
    as PyTorch's), else a new tensor (of.tensor's rules)."""
    if isinstance(data, Tensor):
        out = data if dtype is None or data.dtype is dtype else cast(data, dtype)
        return out if device is None else out.to(device)
    return _ops.tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    if isinstance(obj, Tensor) and not copy:
        out = as_tensor(obj, dtype, device)
    else:
        out = _ops.tensor(obj.detach() if isinstance(obj, Tensor) else obj, dtype=dtype,
                          device=device)
    return out.requires_grad_() if requires_grad else out


def clone(input, *, memory_format=None):  # noqa: A002
    unsupported("clone", memory_format=(memory_format, None))
    return input.clone()


def detach(input):  # noqa: A002
    return input.detach()


def initial_seed():
    """The seed of of's generator (of.manual_seed's, or of.seed()'s)."""
    return _random.initial_seed()


def seed():
    """Seeds of's generator from the operating system's entropy; returns the seed."""
    value = int.from_bytes(os.urandom(8), "little") >> 1
    _random.manual_seed(value)
    return value


def get_num_threads():
    """The threads a CPU step uses (libofrt's: $OMP_NUM_THREADS, else this
    process's CPUs divided among the job's ranks on the machine)."""
    return _runtime._C().num_threads()


def set_num_threads(int):  # noqa: A002 (PyTorch's parameter name)
    """The threads CPU steps use from now on: of's kernels, oneDNN and an
    OpenMP OpenBLAS."""
    if isinstance(int, bool) or not isinstance(int, (builtins.int, np.integer)):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(int).__name__}")
    if int < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    _runtime._C().set_num_threads(builtins.int(int))


def get_rng_state():
    """of's generator state as an int64 tensor (set_rng_state takes it back)."""
    return _ops.tensor(np.array(_random.get_state(), np.uint64).view(np.int64))


def set_rng_state(new_state):
    if not isinstance(new_state, Tensor) or new_state.dtype is not dt.int64 or \
            tuple(new_state.shape) != (_random.STATE_WORDS,):
        raise RuntimeError("set_rng_state: expected the int64 tensor of.get_rng_state() "
                           f"returns (shape [{_random.STATE_WORDS}])")
    _random.set_state([int(v) for v in new_state.numpy().view(np.uint64)])


def set_default_dtype(d):
    """of's default floating-point dtype is float32; another is not supported."""
    if d is not dt.float32:
        raise NotImplementedError(f"set_default_dtype({d}) is not supported yet: of's "
                                  "default floating-point dtype is float32")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """torch.normal: samples of N(mean, std), elementwise for tensor means
    and stds (broadcast), or of `size` for numbers."""
    unsupported("normal", generator=(generator, None))
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(*[tuple(t.shape) for t in (mean, std)
                                      if isinstance(t, Tensor)])
        z = _ops.randn(*shape, dtype=like.dtype, device=like.device)
        return add(mul(z, std), mean)
    if size is None:
        raise TypeError("normal() with float mean and std needs size")
    z = _ops.randn(*size, dtype=dtype, device=device)
    out = add(mul(z, float(std)), float(mean))
    return out.requires_grad_() if requires_grad else out


def randint_like(input, low=0, high=None, *, dtype=None, device=None,  # noqa: A002
                 requires_grad=False):
    if high is None:
        low, high = 0, low
    return _ops.randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                        device=device or input.device, requires_grad=requires_grad)


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Pieces along `dim`: n nearly equal sections (the first n % size one
    larger), or cut at the given indices."""
    d = _norm_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        bounds = [k * (size // n) + builtins.min(k, size % n) for k in range(n + 1)]
    else:
        cuts = [int(i) for i in indices_or_sections]
        bounds = [0] + [builtins.min(builtins.max(c if c >= 0 else c + size, 0), size)
                        for c in cuts] + [size]
    return tuple(narrow(input, d, a, builtins.max(b - a, 0)) for a, b in
                 zip(bounds[:-1], bounds[1:]))


def column_stack(tensors):
    return cat([reshape(t, (t.numel(), 1)) if t.ndim < 2 else t for t in tensors], 1)


def dstack(tensors):
    out = []
    for t in tensors:
        if t.ndim == 0:
            t = reshape(t, (1, 1, 1))
        elif t.ndim == 1:
            t = reshape(t, (1, t.shape[0], 1))
        elif t.ndim == 2:
            t = unsqueeze(t, 2)
        out.append(t)
    return cat(out, 2)


def fliplr(input):  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _ops.flip(input, [1])


def flipud(input):  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _ops.flip(input, [0])


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    d0, d1 = (_norm_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return _ops_transpose(_ops.flip(input, [d1]), d0, d1)
    if k == 2:
        return _ops.flip(input, [d0, d1])
    if k == 3:
        return _ops.flip(_ops_transpose(input, d0, d1), [d1])
    return input


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    x = cat([t for t in (prepend, input, append) if t is not None], d) \
        if prepend is not None or append is not None else input
    for _ in range(n):
        m = x.shape[d]
        x = sub(narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1)) if x.dtype is not dt.bool \
            else _compare("ne", cast(narrow(x, d, 1, m - 1), dt.int32),
                          cast(narrow(x, d, 0, m - 1), dt.int32))
    return x


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower of the two middle values (PyTorch's median); along `dim`
    with its index. A row holding NaN gives NaN and the index of its first
    NaN, as PyTorch's: the stable sort puts NaNs last in their order, so the
    first one is where the row's non-NaN values end."""
    if dim is None:
        return squeeze(median(reshape(input, (-1,)), 0, keepdim=True).values, 0)
    d = _norm_dim(dim, input.ndim)
    values, indices = _ops.sort(input, d)
    n = input.shape[d]
    middle = _ops.full(tuple(input.shape[:d]) + (1,) + tuple(input.shape[d + 1:]),
                       (n - 1) // 2, dtype=dt.int64, device=input.device)
    if input.dtype.is_floating_point:
        nans = sum(isnan(input), d, True)  # int64 counts
        middle = where(_compare("gt", nans, 0), sub(as_tensor_like(n, nans), nans), middle)
    v = _ops.take_along_dim(values, middle, d)
    i = _ops.take_along_dim(indices, middle, d)
    if not keepdim:
        v, i = squeeze(v, d), squeeze(i, d)
    return _ops.return_types.median(v, i)


def take(input, index):  # noqa: A002
    return reshape(index_select(reshape(input, (-1,)), 0, reshape(index, (-1,))),
                   tuple(index.shape))


def argwhere(input):  # noqa: A002
    return _ops.nonzero(input)


def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    x = where(isnan(input), _zero_like(input), input)
    return sum(x, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    count = sum(cast(logical_not(isnan(input)), input.dtype), dim, keepdim)
    return div(nansum(input, dim, keepdim, dtype=dtype), count)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    exponents = np.linspace(start, end, steps)
    return _factory(np.power(base, exponents), dtype or dt.float32, device, requires_grad)


def _triangle_indices(row, col, offset, lower, dtype, device):
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return _factory(np.stack([r, c]).astype(np.int64), dtype or dt.int64, device, False)


def tril_indices(row, col, offset=0, *, dtype=dt.int64, device="cpu", layout=dt.strided):
    unsupported("tril_indices", layout=(layout, dt.strided))
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=dt.int64, device="cpu", layout=dt.strided):
    unsupported("triu_indices", layout=(layout, dt.strided))
    return _triangle_indices(row, col, offset, False, dtype, device)


def kron(input, other):  # noqa: A002
    a, b = input, other
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + tuple(a.shape))
    b = reshape(b, (1,) * (nd - b.ndim) + tuple(b.shape))
    inter_a = [s for d in a.shape for s in (d, 1)]
    inter_b = [s for d in b.shape for s in (1, d)]
    out = mul(reshape(a, tuple(inter_a)), reshape(b, tuple(inter_b)))
    return reshape(out, tuple(x * y for x, y in zip(a.shape, b.shape)))


def hypot(input, other):  # noqa: A002
    return sqrt(add(square(input), square(other)))


def deg2rad(input):  # noqa: A002
    return mul(input, math.pi / 180)


def rad2deg(input):  # noqa: A002
    return mul(input, 180 / math.pi)


def xlogy(input, other):  # noqa: A002
    """x * log(y), 0 where x is 0 (and y is not NaN), as PyTorch's."""
    x = input if isinstance(input, Tensor) else as_tensor_like(input, other)
    y = other if isinstance(other, Tensor) else as_tensor_like(other, x)
    if not x.dtype.is_floating_point:
        x = cast(x, dt.float32)
    if not y.dtype.is_floating_point:
        y = cast(y, x.dtype)
    zero = _compare("eq", x, _zero_like(x))
    safe = where(zero, as_tensor_like(1.0, y), y)
    out = mul(x, log(safe))
    return where(_and(zero, logical_not(isnan(y))), _zero_like(out), out)


def _unfold_windows(self, dimension, size, step):
    """Tensor.unfold: the windows of `size` elements every `step` along
    `dimension`, as a new last dimension (one gather of the window
    positions)."""
    d = _norm_dim(dimension, builtins.max(self.ndim, 1)) if self.ndim else 0
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    positions = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    x = self if self.ndim else reshape(self, (1,))
    picked = index_select(x, d, _constant(positions, dt.int64, x))
    shape = tuple(x.shape[:d]) + (count, size) + tuple(x.shape[d + 1:])
    y = reshape(picked, shape)
    # the window dimension goes last
    order = list(range(d + 1)) + list(range(d + 2, len(shape))) + [d + 1]
    return permute(y, order)


def _bitwise(api, logical):
    """PyTorch's bitwise_<op> for bool tensors (the logical op); integer
    bit operations have no of op yet and say so."""
    def fn(input, other):  # noqa: A002
        ops = [t for t in (input, other) if isinstance(t, Tensor)]
        if builtins.any(t.dtype is not dt.bool for t in ops) or not builtins.all(
                isinstance(t, (Tensor, bool)) for t in (input, other)):
            raise NotImplementedError(f"{api} of integer tensors is not supported yet (of has "
                                      "it for bool tensors: masks)")
        return logical(input, other)
    fn.__name__ = fn.__qualname__ = api
    return fn


bitwise_and = _bitwise("bitwise_and", logical_and)
bitwise_or = _bitwise("bitwise_or", logical_or)
bitwise_xor = _bitwise("bitwise_xor", logical_xor)


def bitwise_not(input):  # noqa: A002
    """~x: logical not of a bool tensor, -x - 1 of an integer one."""
    if input.dtype is dt.bool:
        return logical_not(input)
    if input.dtype.is_floating_point:
        raise TypeError("bitwise_not is only supported for integer and boolean tensors, not "
                        f"{input.dtype}")
    return sub(neg(input), 1)


def _augmented(op, inplace):
    """x <op>= y: in place, as PyTorch's, except on an argument of a traced
    function, which a compiled function can not write (its caller's tensor
    would not change): there x is rebound to the result, as Python does for
    a type without the in-place operator."""
    out_of_place = getattr(Tensor, f"__{op}__")

    def method(self, other):
        program = self._program
        if program is not None and builtins.any(t is self for t in program.arg_tensors):
            return out_of_place(self, other)
        return inplace(self, other)
    method.__name__ = f"__i{op}__"
    return method


def _install():
    T = Tensor
    for fn in (reciprocal, isnan, isfinite, isclose, allclose, log2, log10, exp2, cosh, sinh,
               log1p, expm1, tan, asin, acos, atan, atan2, floor, ceil, round, fmod,
               remainder, floor_divide, cumsum, all, any, var, std, logsumexp, norm, outer,
               addmm, baddbmm, scatter, scatter_add, select, split_with_sizes, diag,
               repeat_interleave, cross, unique, bincount):
        setattr(T, fn.__name__, fn)
    for fn in (subtract, multiply, divide, true_divide, negative, logical_not, logical_and,
               logical_or, logical_xor, isinf, nan_to_num, trunc, frac, unbind, movedim,
               swapaxes, unflatten, diagonal, trace, count_nonzero, mv):
        setattr(T, fn.__name__, fn)
    T.moveaxis, T.swapdims, T.fix, T.ravel = movedim, swapdims, trunc, lambda self: reshape(
        self, (-1,))
    T.broadcast_to = broadcast_to
    for fn in (tensor_split, fliplr, flipud, rot90, diff, median, argwhere, nanmean, kron,
               hypot, deg2rad, rad2deg, xlogy):
        setattr(T, fn.__name__, fn)
    T.take = lambda self, indices: take(self, indices)
    T.unfold = _unfold_windows
    T.nansum = lambda self, dim=None, keepdim=False, dtype=None: nansum(self, dim, keepdim,
                                                                         dtype=dtype)
    T.true_divide = lambda self, other: div(self, other)
    # the operators: ~, &, |, ^, //, %, and the in-place forms of every
    # binary operator (x += y writes x, as in PyTorch: views and aliases see it)
    for fn in (bitwise_and, bitwise_or, bitwise_xor, bitwise_not):
        setattr(T, fn.__name__, fn)
    T.__invert__ = bitwise_not
    T.__and__, T.__or__, T.__xor__ = bitwise_and, bitwise_or, bitwise_xor
    T.__rand__ = lambda a, b: bitwise_and(b, a)
    T.__ror__ = lambda a, b: bitwise_or(b, a)
    T.__rxor__ = lambda a, b: bitwise_xor(b, a)
    T.__floordiv__ = lambda a, b: floor_divide(a, b)
    T.__rfloordiv__ = lambda a, b: floor_divide(as_tensor_like(b, a), a)
    T.__mod__ = lambda a, b: remainder(a, b)
    T.__rmod__ = lambda a, b: remainder(as_tensor_like(b, a), a)
    for name, fn in [("floor_divide_", floor_divide), ("remainder_", remainder),
                     ("logical_and_", logical_and), ("logical_or_", logical_or),
                     ("logical_xor_", logical_xor), ("logical_not_", logical_not),
                     ("bitwise_and_", bitwise_and), ("bitwise_or_", bitwise_or),
                     ("bitwise_xor_", bitwise_xor), ("bitwise_not_", bitwise_not),
                     ("trunc_", trunc), ("frac_", frac), ("nan_to_num_", nan_to_num)]:
        setattr(T, name, _inplace_method(name, fn))
    for op, name in [("add", "add_"), ("sub", "sub_"), ("mul", "mul_"), ("truediv", "div_"),
                     ("pow", "pow_"), ("floordiv", "floor_divide_"), ("mod", "remainder_"),
                     ("and", "bitwise_and_"), ("or", "bitwise_or_"), ("xor", "bitwise_xor_")]:
        setattr(T, f"__i{op}__", _augmented(op, getattr(T, name)))
    T.maximum, T.minimum = maximum, minimum
    T.where = lambda self, condition, y: where(condition, self, y)
    T.ndimension = lambda self: self.ndim
    T.nelement = lambda self: _numel(self.shape)
    T.dot = lambda self, tensor: dot(self, tensor)
    for fn in (index_add, index_fill, scatter_reduce):
        setattr(T, fn.__name__, fn)

    # PyTorch's methods name index_copy's source tensor2, and index_copy_'s tensor
    def index_copy_method(self, dim, index, tensor2):
        return index_copy(self, dim, index, tensor2)

    def index_copy_inplace(self, dim, index, tensor):
        return index_copy(self, dim, index, tensor)
    T.index_copy = index_copy_method
    T.index_copy_ = _inplace_method("index_copy_", index_copy_inplace)
    for name, fn in [("index_add_", index_add),
                     ("index_fill_", index_fill), ("scatter_", scatter),
                     ("scatter_add_", scatter_add), ("masked_fill_", _masked_fill)]:
        setattr(T, name, _inplace_method(name, fn))

    # the methods whose keyword-only arguments are positional
    def cumsum_method(self, dim, dtype=None):
        return cumsum(self, dim, dtype=dtype)

    def cumprod_method(self, dim, dtype=None):
        return cumprod(self, dim, dtype=dtype)
    T.cumprod = cumprod_method

    def norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
        return norm(self, p, dim, keepdim, dtype=dtype)

    def round_method(self, decimals=0):
        return round(self, decimals=decimals)
    T.cumsum, T.norm, T.round = cumsum_method, norm_method, round_method

    def prod_method(self, dim=None, keepdim=False, dtype=None):
        return prod(self, dim, keepdim, dtype=dtype)
    T.prod = prod_method


_install()
