"""The small Tensor methods and torch.* functions training scripts use
(new_*, type, t, narrow, clamp, abs, repeat, size, the in-place arithmetic
methods, ...) and binary ops on NumPy arrays and torch tensors, each against
PyTorch on the same NumPy inputs: values, shapes, dtypes, and the exception
types of bad arguments."""

import warnings

import numpy as np
import pytest

import of

torch = pytest.importorskip("torch")

DTYPES = [(of.float32, torch.float32), (of.float64, torch.float64),
          (of.float16, torch.float16), (of.bfloat16, torch.bfloat16),
          (of.int64, torch.int64), (of.int32, torch.int32), (of.int8, torch.int8),
          (of.bool, torch.bool)]
TORCH_DTYPE = {o: t for o, t in DTYPES}


def check(ours, theirs, rtol=0.0, atol=0.0):
    """`ours` (an of tensor) has `theirs`'s (a torch tensor's) shape, dtype
    and values."""
    assert isinstance(ours, of.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert TORCH_DTYPE[ours.dtype] == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=atol)


def pair(array):
    return of.tensor(array), torch.tensor(array)


def raises_like(of_call, torch_call):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as theirs:
        torch_call()
    with pytest.raises(type(theirs.value)):
        of_call()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def floats(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    a[0, 0], a[0, 1], a[1, 2], a[2, 3] = 0.0, -0.0, np.nan, -np.inf
    return a


# ---------------------------------------------------------------------------
# new_*, type, type_as

@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_filled(name):
    x, tx = pair(np.arange(6, dtype=np.int32).reshape(2, 3))
    for args, kwargs in [((2, 3), {}), (((2, 3),), {}), (([4],), {}), ((), {"size": (1, 2)}),
                         ((2,), {"dtype": of.float64}), ((0, 2), {})]:
        tkwargs = {k: TORCH_DTYPE[v] if k == "dtype" else v for k, v in kwargs.items()}
        ours, theirs = getattr(x, name)(*args, **kwargs), getattr(tx, name)(*args, **tkwargs)
        if name == "new_empty":  # uninitialised in PyTorch: compare the rest
            theirs = torch.zeros_like(theirs)
        check(ours, theirs)
        assert ours.device == x.device and not ours.requires_grad
    y = getattr(x.float(), name)(2, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    raises_like(lambda: getattr(x, name)(2, requires_grad=True),
                lambda: getattr(tx, name)(2, requires_grad=True))
    raises_like(lambda: getattr(x, name)(-1, 2), lambda: getattr(tx, name)(-1, 2))


def test_new_full_and_new_tensor():
    x, tx = pair(np.arange(3, dtype=np.int64))
    check(x.new_full((2, 2), 3.7), tx.new_full((2, 2), 3.7))
    check(x.new_full([3], 2, dtype=of.float32), tx.new_full([3], 2, dtype=torch.float32))
    check(x.new_full((2,), of.tensor(5)), tx.new_full((2,), torch.tensor(5)))
    raises_like(lambda: x.new_full(2, 1.0), lambda: tx.new_full(2, 1.0))
    data = [[1.5, -2.5], [3.0, 0.25]]
    check(x.new_tensor(data), tx.new_tensor(data))
    check(x.new_tensor(np.array(data), dtype=of.float64),
          tx.new_tensor(np.array(data), dtype=torch.float64))
    check(x.float().new_tensor(data, requires_grad=True),
          tx.float().new_tensor(data, requires_grad=True).detach())
    assert x.float().new_tensor(data, requires_grad=True).requires_grad
    with pytest.warns(UserWarning, match="sourceTensor.detach"):
        copy = x.new_tensor(x)
    check(copy, tx.clone())
    assert copy is not x


@pytest.mark.parametrize("ours,theirs", DTYPES, ids=[str(d) for d, _ in DTYPES])
def test_type_names(ours, theirs):
    x = of.zeros(2, dtype=ours)
    assert x.type() == torch.zeros(2, dtype=theirs).type()
    assert of.zeros(2, dtype=ours, device="cuda").type() == \
        "torch.cuda." + x.type()[len("torch."):]
    assert x.element_size() == torch.zeros(2, dtype=theirs).element_size()
    assert x.is_floating_point() == torch.zeros(2, dtype=theirs).is_floating_point()
    assert of.is_floating_point(x) == torch.is_floating_point(torch.zeros(2, dtype=theirs))
    assert x.dtype == ours and x.dtype != (of.int64 if ours is not of.int64 else of.float32)


def test_type_converts():
    a = np.array([1.7, -2.2, 0.0], np.float32)
    x, tx = pair(a)
    check(x.type(of.int32), tx.type(torch.int32))
    check(x.type("torch.DoubleTensor"), tx.type("torch.DoubleTensor"))
    check(x.type("torch.LongTensor"), tx.type("torch.LongTensor"))
    assert x.type(of.float32) is x and x.type("torch.FloatTensor") is x
    y = x.type("torch.cuda.FloatTensor")  # a move: no op runs
    assert y.device == "cuda" and y.type() == "torch.cuda.FloatTensor"
    raises_like(lambda: x.type("float"), lambda: tx.type("float"))
    raises_like(lambda: x.type("torch.NoSuchTensor"), lambda: tx.type("torch.NoSuchTensor"))
    i, ti = pair(np.array([1, 2], np.int64))
    check(x.type_as(i), tx.type_as(ti))
    check(i.type_as(x), ti.type_as(tx))


# ---------------------------------------------------------------------------
# Shapes: t, narrow, flip, expand_as, view_as, reshape_as, repeat, size

def test_t(rng):
    for shape in [(), (3,), (2, 3)]:
        x, tx = pair(rng.standard_normal(shape).astype(np.float32))
        check(x.t(), tx.t())
        check(of.t(x), torch.t(tx))
    x, tx = pair(np.zeros((2, 3, 4), np.float32))
    raises_like(lambda: x.t(), lambda: tx.t())
    raises_like(lambda: of.t(x), lambda: torch.t(tx))


def test_narrow(rng):
    x, tx = pair(rng.standard_normal((4, 5)).astype(np.float32))
    for dim, start, length in [(0, 1, 2), (1, 0, 5), (-1, -2, 2), (1, 5, 0), (0, -4, 4)]:
        check(x.narrow(dim, start, length), tx.narrow(dim, start, length))
        check(of.narrow(x, dim, start, length), torch.narrow(tx, dim, start, length))
    check(x.narrow(1, of.tensor(2), 3), tx.narrow(1, torch.tensor(2), 3))
    check(x.narrow(dim=0, start=2, length=1), tx.narrow(dim=0, start=2, length=1))
    for dim, start, length in [(0, 5, 1), (0, -5, 1), (1, 3, 3), (0, 0, -1), (2, 0, 1),
                               (-3, 0, 1)]:
        raises_like(lambda: x.narrow(dim, start, length),
                    lambda: tx.narrow(dim, start, length))
    s, ts = pair(np.float32(1.0))
    raises_like(lambda: s.narrow(0, 0, 1), lambda: ts.narrow(0, 0, 1))


def test_flip():
    x, tx = pair(np.arange(6, dtype=np.float32).reshape(1, 6))
    check(x.flip(0), tx.flip(0))
    check(of.flip(x, (0,)), torch.flip(tx, (0,)))
    check(x.flip([]), tx.flip([]))
    raises_like(lambda: x.flip((0, 0)), lambda: tx.flip((0, 0)))
    raises_like(lambda: x.flip(2), lambda: tx.flip(2))
    check(x.flip(1), tx.flip(1))
    check(x.flip((0, 1)), tx.flip((0, 1)))


def test_as_methods(rng):
    x, tx = pair(rng.standard_normal((2, 3)).astype(np.float32))
    o, to = pair(np.zeros((3, 2), np.float32))
    check(x.view_as(o), tx.view_as(to))
    check(x.reshape_as(o), tx.reshape_as(to))
    row, trow = pair(rng.standard_normal((1, 3)).astype(np.float32))
    check(row.expand_as(x), trow.expand_as(tx))
    big, tbig = pair(np.zeros((4, 2, 3), np.float32))
    check(x.expand_as(big), tx.expand_as(tbig))


def test_repeat(rng):
    x, tx = pair(rng.standard_normal((2, 3)).astype(np.float32))
    for reps in [(1, 1), (2, 1), (1, 3), (2, 2), (3, 1, 2), ((2, 2),), (0, 2)]:
        check(x.repeat(*reps), tx.repeat(*reps))
    check(x.repeat(repeats=(2, 1)), tx.repeat(repeats=(2, 1)))
    i, ti = pair(np.array([1, 2, 3], np.int64))
    check(i.repeat(2, 2), ti.repeat(2, 2))
    raises_like(lambda: x.repeat(2), lambda: tx.repeat(2))
    raises_like(lambda: x.repeat(-1, 2), lambda: tx.repeat(-1, 2))


def test_size_and_friends():
    x, tx = pair(np.zeros((2, 3, 4), np.float32))
    for d in range(-3, 3):
        assert x.size(d) == tx.size(d)
        assert x.size(dim=d) == tx.size(dim=d)
    assert tuple(x.size()) == tuple(tx.size())
    for d in (3, -4):
        raises_like(lambda: x.size(d), lambda: tx.size(d))
    raises_like(lambda: x.size("a"), lambda: tx.size("a"))
    s, ts = pair(np.float32(2.0))
    raises_like(lambda: s.size(0), lambda: ts.size(0))
    assert x.numel() == tx.numel() and of.numel(x) == torch.numel(tx)
    assert x.is_contiguous() is True and tx.is_contiguous() is True


# ---------------------------------------------------------------------------
# Elementwise: clamp, abs, square, sign, addcmul, addcdiv, lerp

def test_clamp(floats, rng):
    x, tx = pair(floats)
    for lo, hi in [(-0.5, 0.5), (None, 0.0), (0.0, None), (1.0, -1.0), (-1, 1)]:
        check(x.clamp(lo, hi), tx.clamp(lo, hi))
        check(of.clamp(x, min=lo, max=hi), torch.clamp(tx, min=lo, max=hi))
        check(x.clip(lo, hi), tx.clip(lo, hi))
    check(x.clamp_min(0.25), tx.clamp_min(0.25))
    check(x.clamp_max(0.25), tx.clamp_max(0.25))
    check(of.clamp_min(x, 0.25), torch.clamp_min(tx, 0.25))
    check(of.clamp_max(x, 0.25), torch.clamp_max(tx, 0.25))
    lo, tlo = pair(rng.standard_normal((4,)).astype(np.float32))
    check(x.clamp(min=lo), tx.clamp(min=tlo))
    check(x.clamp(lo, lo + 1), tx.clamp(tlo, tlo + 1))
    i, ti = pair(np.array([-3, 0, 7], np.int64))
    check(i.clamp(-1, 2), ti.clamp(-1, 2))
    check(i.clamp(min=0.5), ti.clamp(min=0.5))  # an integer tensor by a float: float32
    raises_like(lambda: x.clamp(), lambda: tx.clamp())
    raises_like(lambda: of.clamp(x), lambda: torch.clamp(tx))


@pytest.mark.parametrize("name", ["abs", "square", "sign"])
def test_abs_square_sign(name, floats):
    x, tx = pair(floats)
    check(getattr(x, name)(), getattr(tx, name)())
    check(getattr(of, name)(x), getattr(torch, name)(tx))
    d, td = pair(floats.astype(np.float64))
    check(getattr(d, name)(), getattr(td, name)())
    i, ti = pair(np.array([-3, 0, 7, -1], np.int32))
    check(getattr(i, name)(), getattr(ti, name)())
    b, tb = pair(np.array([True, False]))
    if name == "abs":
        raises_like(lambda: b.abs(), lambda: tb.abs())
    else:
        check(getattr(b, name)(), getattr(tb, name)())


def test_abs_of_negative_zero_is_positive():
    x = of.tensor(np.array([-0.0, -2.0], np.float32)).abs()
    assert not np.signbit(x.numpy()).any()


def test_addcmul_addcdiv(rng):
    a, b, c = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    (x, tx), (y, ty), (z, tz) = pair(a), pair(b), pair(c)
    for value in (1, 0.5, -2):
        check(x.addcmul(y, z, value=value), tx.addcmul(ty, tz, value=value), rtol=1e-6)
        check(of.addcmul(x, y, z, value=value), torch.addcmul(tx, ty, tz, value=value),
              rtol=1e-6)
        check(x.addcdiv(y, z, value=value), tx.addcdiv(ty, tz, value=value), rtol=1e-6)
        check(of.addcdiv(x, y, z, value=value), torch.addcdiv(tx, ty, tz, value=value),
              rtol=1e-6)
    row, trow = pair(b[:1])
    check(x.addcmul(row, z), tx.addcmul(trow, tz), rtol=1e-6)
    i, ti = pair(np.array([1, 2], np.int64))
    check(i.addcmul(i, i, value=3), ti.addcmul(ti, ti, value=3))
    raises_like(lambda: i.addcdiv(i, i), lambda: ti.addcdiv(ti, ti))


def test_lerp(rng):
    a, b = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    (x, tx), (y, ty) = pair(a), pair(b)
    for w in (0.0, 0.3, 0.5, 0.7, 1.0, -0.2, 1.5):
        check(x.lerp(y, w), tx.lerp(ty, w), rtol=1e-6, atol=1e-7)
        check(of.lerp(x, y, w), torch.lerp(tx, ty, w), rtol=1e-6, atol=1e-7)
    weight = rng.uniform(-0.5, 1.5, (3, 4)).astype(np.float32)
    w, tw = pair(weight)
    check(x.lerp(y, w), tx.lerp(ty, tw), rtol=1e-6, atol=1e-7)
    i, ti = pair(np.array([1, 2], np.int64))
    raises_like(lambda: i.lerp(i, 0.5), lambda: ti.lerp(ti, 0.5))


# ---------------------------------------------------------------------------
# In-place methods: each returns the tensor itself, changed

def _inplace_cases(rng):
    a = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    c = rng.uniform(0.5, 2.0, (4,)).astype(np.float32)
    n = rng.standard_normal((3, 4)).astype(np.float32)
    return [
        ("add_", a, lambda m, o: ((o(b),), {})),
        ("add_", a, lambda m, o: ((o(c),), {"alpha": -0.1})),
        ("add_", a, lambda m, o: ((2.5,), {})),
        ("sub_", a, lambda m, o: ((o(b),), {"alpha": 2})),
        ("mul_", a, lambda m, o: ((o(c),), {})),
        ("mul_", a, lambda m, o: ((3,), {})),
        ("div_", a, lambda m, o: ((o(b),), {})),
        ("pow_", a, lambda m, o: ((2,), {})),
        ("clamp_", n, lambda m, o: ((-0.5, 0.5), {})),
        ("clamp_", n, lambda m, o: ((), {"min": o(c) - 1.0})),
        ("clamp_min_", n, lambda m, o: ((0.0,), {})),
        ("clamp_max_", n, lambda m, o: ((0.0,), {})),
        ("clip_", n, lambda m, o: ((-1, 1), {})),
        ("neg_", n, lambda m, o: ((), {})),
        ("abs_", n, lambda m, o: ((), {})),
        ("square_", n, lambda m, o: ((), {})),
        ("sign_", n, lambda m, o: ((), {})),
        ("exp_", n, lambda m, o: ((), {})),
        ("log_", a, lambda m, o: ((), {})),
        ("sqrt_", a, lambda m, o: ((), {})),
        ("rsqrt_", a, lambda m, o: ((), {})),
        ("tanh_", n, lambda m, o: ((), {})),
        ("sigmoid_", n, lambda m, o: ((), {})),
        ("addcmul_", a, lambda m, o: ((o(b), o(c)), {"value": 0.5})),
        ("addcdiv_", a, lambda m, o: ((o(b), o(c)), {"value": -2})),
        ("lerp_", a, lambda m, o: ((o(b), 0.25), {})),
        ("lerp_", a, lambda m, o: ((o(b), o(c) - 1.0), {})),
    ]


def test_inplace_methods(rng):
    for name, start, args in _inplace_cases(rng):
        x, tx = pair(start.copy())
        a, kw = args(of, of.tensor)
        ta, tkw = args(torch, torch.tensor)
        before = x._version
        out = getattr(x, name)(*a, **kw)
        tout = getattr(tx, name)(*ta, **tkw)
        assert out is x, name
        assert tout is tx
        assert x._version > before, name
        check(x, tx, rtol=2e-6, atol=1e-7)


def test_inplace_errors():
    i, ti = pair(np.array([1, 5], np.int64))
    for name, args, kwargs in [("add_", (0.5,), {}), ("mul_", (1.5,), {}),
                               ("clamp_", (), {"min": 0.5}), ("exp_", (), {}),
                               ("sqrt_", (), {}), ("div_", (2,), {}),
                               ("addcdiv_", (i, i), {})]:
        targs = tuple(ti if a is i else a for a in args)
        raises_like(lambda: getattr(i, name)(*args, **kwargs),
                    lambda: getattr(ti, name)(*targs, **kwargs))
        assert i.tolist() == [1, 5]
    x, tx = pair(np.ones(3, np.float32))
    y, ty = pair(np.ones((2, 3), np.float32))
    raises_like(lambda: x.add_(y), lambda: tx.add_(ty))
    with pytest.raises(NotImplementedError, match="rounding_mode"):
        x.div_(2, rounding_mode="floor")
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_integer_division_is_true_division():
    i, ti = pair(np.array([1, 5, -7], np.int64))
    j, tj = pair(np.array([2, 2, 2], np.int32))
    check(i / 2, ti / 2)
    check(3 / i, 3 / ti, rtol=1e-6)  # PyTorch: reciprocal(i) * 3
    check(j / j, tj / tj)
    check(i.div(2), ti.div(2))
    check(i / 2.0, ti / 2.0)


def test_inplace_keeps_an_integer_tensor_integer():
    i, ti = pair(np.array([1, 5], np.int64))
    check(i.add_(i, alpha=2), ti.add_(ti, alpha=2))
    check(i.mul_(3), ti.mul_(3))
    check(i.neg_(), ti.neg_())
    check(i.clamp_(0, 100), ti.clamp_(0, 100))


def test_manual_sgd_update_through_data():
    """word_language_model's update: p.data.add_(p.grad, alpha=-lr)."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    p, tp = of.nn.Parameter(of.tensor(w)), torch.nn.Parameter(torch.tensor(w))
    p.grad, tp.grad = of.tensor(g), torch.tensor(g)
    with of.no_grad():
        p.data.add_(p.grad, alpha=-0.1)
    with torch.no_grad():
        tp.data.add_(tp.grad, alpha=-0.1)
    assert isinstance(p, of.nn.Parameter) and p.requires_grad
    check(p.detach(), tp.detach(), rtol=1e-6)


def test_inplace_in_a_compiled_function():
    def f(x):
        y = x * 2.0
        y.add_(1.0).clamp_(max=4.0)
        return y

    a = np.array([0.5, 1.0, 2.0], np.float32)
    check(of.compile(f)(of.tensor(a)), f(torch.tensor(a)))


# ---------------------------------------------------------------------------
# Binary ops on NumPy arrays and torch tensors

def test_numpy_and_torch_operands(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    x, tx = pair(a)
    check(x + b, tx + torch.tensor(b))
    check(b - x, torch.tensor(b) - tx)
    check(x * torch.tensor(b), tx * torch.tensor(b))
    check(torch.tensor(b) / x, torch.tensor(b) / tx)
    check(x < b, tx < torch.tensor(b))
    check(x == torch.tensor(b), tx == torch.tensor(b))
    check(x.add(torch.tensor(b), alpha=2), tx.add(torch.tensor(b), alpha=2), rtol=1e-6)
    check(of.maximum(x, b), torch.maximum(tx, torch.tensor(b)))
    labels = np.array([1, 0, 2], np.int64)
    i, ti = pair(labels)
    check(i == torch.tensor(labels), ti == torch.tensor(labels))
    check(i + labels, ti + torch.tensor(labels))
    # a copy: changing the array later changes nothing
    c = b.copy()
    y = x + c
    c[:] = 100
    np.testing.assert_array_equal(y.numpy(), a + b)
    # mixed dtypes promote, as for of tensors (float32 with float64: float64)
    check(x + b.astype(np.float64), tx + torch.tensor(b.astype(np.float64)))


def test_zero_dim_operands_act_as_numbers():
    x, tx = pair(np.array([1.0, 2.0], np.float32))
    i, ti = pair(np.array([1, 2], np.int64))
    b, tb = pair(np.array([True, False]))
    check(x * torch.tensor(3.0), tx * torch.tensor(3.0))
    check(x * torch.tensor(3, dtype=torch.int32), tx * torch.tensor(3, dtype=torch.int32))
    check(i + torch.tensor(1.5), ti + torch.tensor(1.5))          # the 0-d's float32
    check(i + torch.tensor(True), ti + torch.tensor(True))
    check(b + torch.tensor(2), tb + torch.tensor(2))               # the 0-d's int64
    check(i < torch.tensor(1.5), ti < torch.tensor(1.5))
    check(x * np.array(3.0, np.float64), tx * torch.tensor(3.0, dtype=torch.float32))
    check(i + np.float32(0.5), ti + np.float32(0.5))


def test_torch_operands_needing_detach_or_cpu_are_refused():
    x = of.tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"detach\(\)\.cpu\(\)"):
        x + torch.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match=r"detach\(\)\.cpu\(\)"):
        x < torch.ones(3, device="meta")
    x + torch.ones(3, requires_grad=True).detach()


def test_bfloat16_torch_operand_keeps_its_dtype():
    from of._ops import _foreign_array
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    array = _foreign_array(t)
    assert of._dtype.from_numpy(array.dtype) is of.bfloat16
    np.testing.assert_array_equal(array.astype(np.float32), [1.5, -2.0])


def test_gradients_match_pytorch():
    """The compositions differentiate as PyTorch's ops do (abs: 0 at 0;
    clamp by numbers: nothing for an input equal to a bound)."""
    a = np.array([-1.5, 0.0, 2.0, 0.3, 1.0, -1.0], np.float32)
    cases = [lambda t: t.abs(), lambda t: t.clamp(-1, 1), lambda t: t.clamp(min=0.3),
             lambda t: t.clamp_max(1.0), lambda t: t.square(),
             lambda t: (t * 2).add_(1).clamp_(max=3.5), lambda t: t.lerp(t * t, 0.7),
             lambda t: t.repeat(2, 3), lambda t: t.narrow(0, 1, 2) * 3,
             lambda t: t.addcdiv(t, t * t + 1, value=0.5), lambda t: t.sign() * t]
    for f in cases:
        x, tx = of.tensor(a).requires_grad_(), torch.tensor(a, requires_grad=True)
        f(x).sum().backward()
        f(tx).sum().backward()
        check(x.grad, tx.grad, rtol=1e-6)
