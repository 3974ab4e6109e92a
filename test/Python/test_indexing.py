"""The indexing and selection family (argmax/argmin, max/min with dim,
amin, index_select, gather, take_along_dim, tensor and mask indexing and
assignment, masked_select, one_hot, stack, flip, where(cond)/nonzero,
randint, randperm, multinomial, topk, sort), each against PyTorch on the
same NumPy inputs: values, shapes, dtypes, ties and NaN, negative dims,
keepdim, the exception types of bad arguments, gradients of eager
backward(), and the same compositions under of.compile against eager."""

import numpy as np
import pytest

import of
import of.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [(of.float32, torch.float32), (of.float64, torch.float64),
          (of.float16, torch.float16), (of.bfloat16, torch.bfloat16),
          (of.int64, torch.int64), (of.int32, torch.int32), (of.int8, torch.int8),
          (of.bool, torch.bool)]
TORCH_DTYPE = {o: t for o, t in DTYPES}


def check(ours, theirs):
    """`ours` (an of tensor) has `theirs`'s (a torch tensor's) shape, dtype
    and values (NaN where theirs has NaN)."""
    assert isinstance(ours, of.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
    assert TORCH_DTYPE[ours.dtype] == theirs.dtype, (ours.dtype, theirs.dtype)
    t = theirs.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    np.testing.assert_array_equal(np.asarray(ours.numpy(), dtype=t.numpy().dtype), t.numpy())


def pair(array, dtype=None):
    array = np.asarray(array)
    o = of.tensor(array) if dtype is None else of.tensor(array).to(dtype)
    t = torch.tensor(array) if dtype is None else torch.tensor(array).to(TORCH_DTYPE[dtype])
    return o, t


def raises_like(of_call, torch_call):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as theirs:
        torch_call()
    with pytest.raises(type(theirs.value)):
        of_call()


def grads(fn, *arrays, weights_shape=None, rng=None):
    """The gradients of sum(fn(*inputs) * w) with respect to float64
    inputs, in of and in torch (w a fixed random weight)."""
    out = []
    w = None
    for fw in (of, torch):
        xs = [fw.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
        y = fn(fw, *xs)
        y = y[0] if isinstance(y, tuple) else y
        if w is None:
            w = (rng or np.random.default_rng(1)).standard_normal(tuple(y.shape))
        (y * fw.tensor(w)).sum().backward()
        out.append([x.grad.numpy() if fw is of else x.grad.detach().numpy() for x in xs])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.fixture
def ties():
    """Rows with repeated maxima and minima, a NaN, +-inf."""
    a = np.array([[1.0, 3.0, 3.0, -2.0, -2.0],
                  [2.0, np.nan, 5.0, np.nan, 0.0],
                  [-np.inf, 4.0, np.inf, 4.0, -np.inf],
                  [0.5, 0.5, 0.5, 0.5, 0.5]], np.float32)
    return a


# ---------------------------------------------------------------------------
# argmax, argmin, max/min(dim), amin

@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, ties, rng):
    x, tx = pair(ties)
    for dim in (None, 0, 1, -1, -2):
        for keepdim in (False, True):
            check(getattr(of, name)(x, dim, keepdim), getattr(torch, name)(tx, dim, keepdim))
            check(getattr(x, name)(dim=dim, keepdim=keepdim),
                  getattr(tx, name)(dim=dim, keepdim=keepdim))
    ints = rng.integers(-3, 3, (3, 4, 5))
    ints[0, 0, 0] = np.iinfo(np.int64).min
    i, ti = pair(ints)
    for dim in (None, 0, 2, -2):
        check(getattr(of, name)(i, dim), getattr(torch, name)(ti, dim))
    i32, ti32 = pair(ints.astype(np.int32))
    check(getattr(i32, name)(1), getattr(ti32, name)(1))
    s, ts = pair(np.float32(2.0))
    check(getattr(of, name)(s, 0), getattr(torch, name)(ts, 0))
    check(getattr(of, name)(s), getattr(torch, name)(ts))
    e, te = pair(np.zeros((0, 3), np.float32))
    check(getattr(of, name)(e, 1), getattr(torch, name)(te, 1))
    raises_like(lambda: getattr(of, name)(e, 0), lambda: getattr(torch, name)(te, 0))
    raises_like(lambda: getattr(of, name)(e), lambda: getattr(torch, name)(te))
    raises_like(lambda: getattr(of, name)(x, 2), lambda: getattr(torch, name)(tx, 2))
    raises_like(lambda: getattr(of, name)(x, (0, 1)), lambda: getattr(torch, name)(tx, (0, 1)))
    b, tb = pair(np.array([True, False]))
    raises_like(lambda: getattr(of, name)(b), lambda: getattr(torch, name)(tb))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_dim(name, ties, rng):
    x, tx = pair(ties)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            ours = getattr(of, name)(x, dim, keepdim)
            theirs = getattr(torch, name)(tx, dim, keepdim)
            assert isinstance(ours, getattr(of.return_types, name)) and isinstance(ours, tuple)
            check(ours.values, theirs.values)
            check(ours.indices, theirs.indices)
            values, indices = getattr(x, name)(dim, keepdim=keepdim)
            check(values, theirs[0])
            check(indices, theirs[1])
    check(getattr(of, name)(x), getattr(torch, name)(tx))
    check(getattr(x, name)(), getattr(tx, name)())
    ints = rng.integers(-4, 4, (3, 5))
    ints[1, 2] = np.iinfo(np.int64).min
    ints[2, 2] = np.iinfo(np.int64).max
    i, ti = pair(ints)
    for dim in (0, -1):
        ours, theirs = getattr(of, name)(i, dim), getattr(torch, name)(ti, dim)
        check(ours.values, theirs.values)
        check(ours.indices, theirs.indices)
    check(getattr(of, name)(i), getattr(torch, name)(ti))
    b, tb = pair(np.array([[True, False], [False, False]]))
    ours, theirs = getattr(of, name)(b, 1), getattr(torch, name)(tb, 1)
    check(ours.values, theirs.values)
    check(ours.indices, theirs.indices)
    check(getattr(of, name)(b), getattr(torch, name)(tb))
    s, ts = pair(np.float32(-1.5))
    check(getattr(of, name)(s, 0).values, getattr(torch, name)(ts, 0).values)
    check(getattr(of, name)(s, 0).indices, getattr(torch, name)(ts, 0).indices)
    # with a tensor: the elementwise maximum / minimum
    y, ty = pair(rng.standard_normal((4, 5)).astype(np.float32))
    check(getattr(of, name)(x, y), getattr(torch, name)(tx, ty))
    check(getattr(x, name)(y), getattr(tx, name)(ty))
    check(getattr(of, name)(x, other=y), getattr(torch, name)(tx, other=ty))
    raises_like(lambda: getattr(of, name)(x, keepdim=True),
                lambda: getattr(torch, name)(tx, keepdim=True))
    raises_like(lambda: getattr(of, name)(x, 2), lambda: getattr(torch, name)(tx, 2))
    e, te = pair(np.zeros((0, 3), np.float32))
    raises_like(lambda: getattr(of, name)(e), lambda: getattr(torch, name)(te))
    raises_like(lambda: getattr(of, name)(e, 0), lambda: getattr(torch, name)(te, 0))


def test_amin_amax(ties, rng):
    x, tx = pair(ties)
    for dim in (None, 0, -1, (0, 1)):
        for keepdim in (False, True):
            check(of.amin(x, dim, keepdim), torch.amin(tx, () if dim is None else dim, keepdim))
            check(x.amin(dim, keepdim), tx.amin(() if dim is None else dim, keepdim))
    ints = rng.integers(-5, 5, (3, 4))
    ints[0, 1], ints[2, 3] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    i, ti = pair(ints)
    check(of.amin(i, 1), torch.amin(ti, 1))
    check(of.amin(i), torch.amin(ti))
    b, tb = pair(np.array([[True, False], [True, True]]))
    check(of.amin(b, 1), torch.amin(tb, 1))
    check(of.amax(b, 1), torch.amax(tb, 1))
    check(of.amin(b), torch.amin(tb))


def test_max_min_gradients(ties):
    a = np.nan_to_num(ties[:, :4], nan=1.0, posinf=7.0, neginf=-7.0)  # ties, no NaN
    for name in ("max", "min"):
        # with dim: the gradient goes to the index returned (the first tie)
        grads(lambda fw, x: getattr(fw, name)(x, 1).values, a)
        grads(lambda fw, x: getattr(fw, name)(x, 0, keepdim=True)[0], a)
        # without: shared among the ties, as amax/amin
        grads(lambda fw, x: getattr(fw, name)(x).reshape(1), a)
    grads(lambda fw, x: fw.amin(x, 1), a)
    grads(lambda fw, x: fw.amax(x, 0), a)


# ---------------------------------------------------------------------------
# index_select, gather, take_along_dim

@pytest.mark.parametrize("dtype", [d for d, _ in DTYPES])
def test_index_select_dtypes(dtype, rng):
    a = rng.integers(-50, 50, (4, 3, 2))
    if dtype is of.int64:
        a = a * (2 ** 55) + rng.integers(-5, 5, a.shape)  # beyond float64's integers
        a[0, 0, 0], a[1, 1, 1] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    x, tx = pair(a, dtype)
    index, tindex = pair(np.array([3, 0, 3, 1]))
    for dim in (0, 2, -3):
        idx, tidx = (index, tindex) if dim != 2 else pair(np.array([1, 0, 1, 1]))
        check(of.index_select(x, dim, idx), torch.index_select(tx, dim, tidx))
    check(x[[2, 0, -1]], tx[[2, 0, -1]])
    check(of.flip(x, (0, 2)), torch.flip(tx, (0, 2)))


def test_index_select(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    x, tx = pair(a)
    i32, ti32 = pair(np.array([4, 0], np.int32))
    check(x.index_select(1, i32), tx.index_select(1, ti32))
    i0, ti0 = pair(np.array(2))
    check(of.index_select(x, 0, i0), torch.index_select(tx, 0, ti0))
    s, ts = pair(np.float32(5.0))
    check(of.index_select(s, 0, of.tensor([0])), torch.index_select(ts, 0, torch.tensor([0])))
    for bad in ([5], [-1]):
        raises_like(lambda: of.index_select(x, 1, of.tensor(bad)),
                    lambda: torch.index_select(tx, 1, torch.tensor(bad)))
    raises_like(lambda: of.index_select(x, 1, of.tensor([[0]])),
                lambda: torch.index_select(tx, 1, torch.tensor([[0]])))
    raises_like(lambda: of.index_select(x, 1, of.tensor([0.0])),
                lambda: torch.index_select(tx, 1, torch.tensor([0.0])))
    raises_like(lambda: of.index_select(x, 2, of.tensor([0])),
                lambda: torch.index_select(tx, 2, torch.tensor([0])))
    # repeated indices add up in the gradient
    grads(lambda fw, x: fw.index_select(x, 1, fw.tensor([4, 1, 4, 4])), a)
    grads(lambda fw, x: fw.index_select(x, 0, fw.tensor([3, 3, 0])), a)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_one_element_gathers_differentiate(rng, compiled):
    """A gather of one element (Categorical.log_prob of one value): its
    gradient, a one-element embedding_grad, once failed to compile."""
    a = rng.standard_normal((4,))

    def picks(fw, x):
        return (fw.gather(x, 0, fw.tensor([2])) * 3, x[fw.tensor([1])] * 5,
                fw.nn.functional.embedding(fw.tensor([[0]]), x.reshape(4, 1)) * 7,
                fw.nn.functional.embedding(fw.tensor(0), x.reshape(1, 4)[:, :1]))
    for i in range(4):
        fn = (lambda x, i=i: picks(of, x)[i])
        x, tx = of.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (of.compile(fn) if compiled else fn)(x).sum().backward()
        picks(torch, tx)[i].sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_gather(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x, tx = pair(a)
    for dim in (0, 1, 2, -1):
        shape = [2, 3, 4]
        size = a.shape[dim]
        index = rng.integers(0, size, shape)
        i, ti = pair(index)
        check(of.gather(x, dim, i), torch.gather(tx, dim, ti))
        check(x.gather(dim, i), tx.gather(dim, ti))
        grads(lambda fw, x: fw.gather(x, dim, fw.tensor(index)), a.astype(np.float64))
    i32, ti32 = pair(rng.integers(0, 4, (3, 2, 5)).astype(np.int32))
    check(of.gather(x, 1, i32), torch.gather(tx, 1, ti32))
    ints, tints = pair(rng.integers(-2 ** 62, 2 ** 62, (3, 4)))
    gi, tgi = pair(rng.integers(0, 4, (3, 6)))
    check(of.gather(ints, 1, gi), torch.gather(tints, 1, tgi))
    e, te = pair(np.zeros((3, 0), np.int64))
    check(of.gather(x[:, :, 0], 1, e), torch.gather(tx[:, :, 0], 1, te))
    bads = [(1, [[[4]]]), (1, [[[-1]]]), (1, [0, 2]), (1, np.zeros((4, 1, 1), np.int64)),
            (3, [[[0]]])]
    for dim, bad in bads:
        raises_like(lambda: of.gather(x, dim, of.tensor(bad)),
                    lambda: torch.gather(tx, dim, torch.tensor(bad)))
    raises_like(lambda: of.gather(x, 1, of.tensor([[[0.0]]])),
                lambda: torch.gather(tx, 1, torch.tensor([[[0.0]]])))
    with pytest.raises(NotImplementedError, match="sparse_grad"):
        of.gather(x, 1, of.tensor([[[0]]]), sparse_grad=True)


def test_take_along_dim(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x, tx = pair(a)
    order = np.argsort(a, axis=1)
    i, ti = pair(order)
    check(of.take_along_dim(x, i, 1), torch.take_along_dim(tx, ti, 1))
    check(x.take_along_dim(i, dim=-1), tx.take_along_dim(ti, dim=-1))
    b, tb = pair(np.array([[0, -1, 2]]))  # broadcast rows; -1 counts from the end
    check(of.take_along_dim(x, b, 1), torch.take_along_dim(tx, tb, 1))
    f, tf = pair(np.array([5, 0, 11]))
    check(of.take_along_dim(x, f), torch.take_along_dim(tx, tf))
    grads(lambda fw, x: fw.take_along_dim(x, fw.tensor([[3], [0], [3]]), 1), a)
    for args in [(np.array([-1, 0]), None), (np.array([12]), None), (np.array([0]), 1)]:
        raises_like(lambda: of.take_along_dim(x, of.tensor(args[0]), args[1]),
                    lambda: torch.take_along_dim(tx, torch.tensor(args[0]), args[1]))
    # outside [-size, size) along dim: an error (PyTorch 2.15 wraps these modulo the size)
    for bad in ([[4]], [[-5]]):
        with pytest.raises(RuntimeError, match="out of bounds"):
            of.take_along_dim(x, of.tensor(bad), 1)
    raises_like(lambda: of.take_along_dim(x, of.tensor([[0]], dtype=of.int32), 1),
                lambda: torch.take_along_dim(tx, torch.tensor([[0]], dtype=torch.int32), 1))


# ---------------------------------------------------------------------------
# x[idx], x[mask], masked_select, x[idx] = v

def test_tensor_indexing(rng):
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    x, tx = pair(a)
    idx = np.array([3, 0, -1, 3])
    i, ti = pair(idx)
    cases = [
        (lambda t, i: t[i]), (lambda t, i: t[:, i]), (lambda t, i: t[..., i + 1]),
        (lambda t, i: t[[1, 0]]), (lambda t, i: t[:, [2, -1]]),
        (lambda t, i: t[i, i]), (lambda t, i: t[i, :, i]), (lambda t, i: t[1:, i, 2]),
        (lambda t, i: t[0, :, [0, 1]]), (lambda t, i: t[[0, 1], :, 0]),
        (lambda t, i: t[[[0], [1]], [2, 0, 4]]), (lambda t, i: t[None, i]),
        (lambda t, i: t[i, None]), (lambda t, i: t[:, None, i]), (lambda t, i: t[2:, 1:4, i]),
        (lambda t, i: t[np.array([1, 2])]), (lambda t, i: t[i[2]]),
    ]
    for case in cases:
        check(case(x, i), case(tx, ti))
    mask = a[:, 0, 0] > 0
    check(x[of.tensor(mask)], tx[torch.tensor(mask)])
    check(x[x > 0.5], tx[tx > 0.5])
    check(x[:, x[0] > 0], tx[:, tx[0] > 0])
    check(x[[True, False, True, True]], tx[[True, False, True, True]])
    big = rng.integers(-2 ** 62, 2 ** 62, (4, 3))
    b, tb = pair(big)
    check(b[[2, 2, 0]], tb[[2, 2, 0]])
    check(b[b > 0], tb[tb > 0])
    raises_like(lambda: x[:, [5]], lambda: tx[:, [5]])
    raises_like(lambda: x[[-5]], lambda: tx[[-5]])
    raises_like(lambda: x[of.tensor([0.0])], lambda: tx[torch.tensor([0.0])])
    raises_like(lambda: x[of.tensor([True, False])], lambda: tx[torch.tensor([True, False])])
    raises_like(lambda: x[[0, 1], [0, 1, 2]], lambda: tx[[0, 1], [0, 1, 2]])
    raises_like(lambda: x[[0], [0], [0], [0]], lambda: tx[[0], [0], [0], [0]])
    grads(lambda fw, x: x[fw.tensor([1, 1, 3])][:, [0, 0]], a.astype(np.float64))
    grads(lambda fw, x: x[fw.tensor([0, 1]), :, fw.tensor([5, 5])], a.astype(np.float64))
    grads(lambda fw, x: x[x > 0], a.astype(np.float64))


def test_masked_select(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x, tx = pair(a)
    check(of.masked_select(x, x > 0), torch.masked_select(tx, tx > 0))
    row = np.array([True, False, True, False])
    check(x.masked_select(of.tensor(row)), tx.masked_select(torch.tensor(row)))
    i, ti = pair(rng.integers(-9, 9, (3, 4)))
    check(of.masked_select(i, i > 0), torch.masked_select(ti, ti > 0))
    raises_like(lambda: of.masked_select(x, of.tensor([1, 0, 1, 0])),
                lambda: torch.masked_select(tx, torch.tensor([1, 0, 1, 0])))
    raises_like(lambda: of.masked_select(x, of.tensor([True, False])),
                lambda: torch.masked_select(tx, torch.tensor([True, False])))
    grads(lambda fw, x: fw.masked_select(x, fw.tensor(row)), a.astype(np.float64))


def test_setitem(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    v = rng.standard_normal((4, 5)).astype(np.float32)
    writes = [
        lambda t, fw: t.__setitem__(t > 0, 0.0),
        lambda t, fw: t.__setitem__(fw.tensor([2, 0]), fw.tensor(v[:2])),
        lambda t, fw: t.__setitem__((slice(None), [1, 3]), fw.tensor(v[:, :1])),
        lambda t, fw: t.__setitem__(0, fw.tensor(v[1])),
        lambda t, fw: t.__setitem__((slice(1, None), slice(2, None)), 7.0),
        lambda t, fw: t.__setitem__(([0, 1], [4, 4]), fw.tensor([1.0, 2.0])),
        lambda t, fw: t.__setitem__(t < -0.5, fw.tensor(3.0)),
        lambda t, fw: t.__setitem__(1, fw.tensor(v[2:3])),  # a leading 1 is dropped
        lambda t, fw: t.__setitem__(Ellipsis, 2),
    ]
    for write in writes:
        x, tx = pair(a)
        write(x, of)
        write(tx, torch)
        check(x, tx)
    i, ti = pair(rng.integers(-9, 9, (3, 4)))
    i[i < 0] = 0
    ti[ti < 0] = 0
    i[:, 1] = of.tensor([1.5, 2.5, -3.5])  # cast to the tensor's dtype, as PyTorch does
    ti[:, 1] = torch.tensor([1.5, 2.5, -3.5])
    check(i, ti)
    x, tx = pair(a)
    raises_like(lambda: x.__setitem__([0, 1], of.tensor(v[:3])),
                lambda: tx.__setitem__([0, 1], torch.tensor(v[:3])))
    raises_like(lambda: x.__setitem__(of.tensor([9]), 1.0),
                lambda: tx.__setitem__(torch.tensor([9]), 1.0))
    leaf, tleaf = of.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    raises_like(lambda: leaf.__setitem__(0, 1.0), lambda: tleaf.__setitem__(0, 1.0))
    # autograd: overwritten elements get no gradient, the value gets theirs
    w = rng.standard_normal((4, 5))
    out = []
    for fw in (of, torch):
        p = fw.tensor(a.astype(np.float64), requires_grad=True)
        q = fw.tensor(v[:2].astype(np.float64), requires_grad=True)
        s = fw.tensor(np.float64(2.0), requires_grad=True)
        y = p * 1.0
        y[fw.tensor([3, 1])] = q
        y[y > 1.0] = s
        (y * fw.tensor(w)).sum().backward()
        out.append([t.grad.numpy() if fw is of else t.grad.numpy() for t in (p, q, s)])
    for o, t in zip(*out):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# one_hot, stack, flip, where(cond), nonzero

def test_one_hot(rng):
    labels = rng.integers(0, 5, (3, 4))
    i, ti = pair(labels)
    check(F.one_hot(i), TF.one_hot(ti))
    check(F.one_hot(i, 7), TF.one_hot(ti, 7))
    check(F.one_hot(i[0], num_classes=5), TF.one_hot(ti[0], num_classes=5))
    for bad, n in [([0, 2], 2), ([0, -1], 3), ([0, 1], 0), ([0, 1], -2)]:
        raises_like(lambda: F.one_hot(of.tensor(bad), n), lambda: TF.one_hot(torch.tensor(bad), n))
    raises_like(lambda: F.one_hot(of.tensor([0, 1], dtype=of.int32), 3),
                lambda: TF.one_hot(torch.tensor([0, 1], dtype=torch.int32), 3))
    raises_like(lambda: F.one_hot(of.tensor(np.zeros(0, np.int64))),
                lambda: TF.one_hot(torch.tensor(np.zeros(0, np.int64))))


def test_stack(rng):
    a, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    (x, tx), (y, ty) = pair(a), pair(b)
    for dim in (0, 1, 2, -1, -3):
        check(of.stack([x, y], dim), torch.stack([tx, ty], dim))
    check(of.stack((x,)), torch.stack((tx,)))
    check(of.stack([of.tensor(1), of.tensor(2)]), torch.stack([torch.tensor(1), torch.tensor(2)]))
    raises_like(lambda: of.stack([]), lambda: torch.stack([]))
    raises_like(lambda: of.stack([x, y[:1]]), lambda: torch.stack([tx, ty[:1]]))
    raises_like(lambda: of.stack([x, y], 3), lambda: torch.stack([tx, ty], 3))
    grads(lambda fw, p, q: fw.stack([p, q, p], 1), a, b)


def test_flip(ties, rng):
    x, tx = pair(ties)
    for dims in (0, 1, (0, 1), [-1], (), (1, 0)):
        check(x.flip(dims), tx.flip(dims))
        check(of.flip(x, dims), torch.flip(tx, (dims,) if isinstance(dims, int) else dims))
    s, ts = pair(np.float32(3.0))
    check(s.flip(0), ts.flip(0))
    raises_like(lambda: x.flip((0, 0)), lambda: tx.flip((0, 0)))
    raises_like(lambda: x.flip(2), lambda: tx.flip(2))
    grads(lambda fw, x: fw.flip(x, (0, 2)), rng.standard_normal((2, 3, 4)))


def test_where_condition_and_nonzero(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x, tx = pair(a)
    for ours, theirs in zip(of.where(x > 0), torch.where(tx > 0)):
        check(ours, theirs)
    for ours, theirs in zip(of.where(of.tensor(True)), torch.where(torch.tensor(True))):
        check(ours, theirs)
    check(of.nonzero(x > 0), torch.nonzero(tx > 0))
    check((x > 0).nonzero(), (tx > 0).nonzero())
    for ours, theirs in zip(of.nonzero(x, as_tuple=True), torch.nonzero(tx, as_tuple=True)):
        check(ours, theirs)
    check(of.where(x > 0, x, 0.0), torch.where(tx > 0, tx, 0.0))
    with pytest.raises(TypeError):
        of.where(x > 0, x)


# ---------------------------------------------------------------------------
# randint, randperm, multinomial (of's generator)

def test_randint_randperm():
    of.manual_seed(3)
    a = of.randint(5, (1000,))
    b = of.randint(-3, 2, size=(4, 250), dtype=of.int32)
    of.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), of.randint(5, (1000,)).numpy())
    assert a.dtype is of.int64 and tuple(a.shape) == (1000,)
    assert set(np.unique(a.numpy())) == set(range(5))
    assert b.dtype is of.int32 and tuple(b.shape) == (4, 250)
    assert b.numpy().min() == -3 and b.numpy().max() == 1
    f = of.randint(low=1, high=4, size=(3,), dtype=of.float32, requires_grad=True)
    assert f.dtype is of.float32 and f.requires_grad
    for args, kwargs in [((5, 2, (2,)), {}), ((0, (2,)), {}), ((5.0, (2,)), {}),
                         ((5, (2,)), {"requires_grad": True})]:
        raises_like(lambda: of.randint(*args, **kwargs), lambda: torch.randint(*args, **kwargs))
    p = of.randperm(50)
    assert p.dtype is of.int64 and sorted(p.numpy().tolist()) == list(range(50))
    assert of.randperm(6, dtype=of.float32).dtype is of.float32
    check(of.randperm(0), torch.randperm(0))
    raises_like(lambda: of.randperm(-1), lambda: torch.randperm(-1))


def test_multinomial():
    of.manual_seed(0)
    probs = np.array([0.1, 0.0, 0.6, 0.3], np.float32)
    draws = of.multinomial(of.tensor(probs), 20000, replacement=True)
    assert draws.dtype is of.int64 and tuple(draws.shape) == (20000,)
    freq = np.bincount(draws.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, probs, atol=0.02)
    rows = of.tensor(np.array([[1.0, 2.0, 0.0, 3.0], [0.0, 0.0, 5.0, 1.0]], np.float32))
    picks = rows.multinomial(2)
    assert tuple(picks.shape) == (2, 2)
    for row, p in zip(picks.numpy(), rows.numpy()):
        assert len(set(row)) == 2 and all(p[j] > 0 for j in row)
    for args in [([0.1, 0.9], 3), ([0.0, 0.0], 1), ([-1.0, 1.0], 1), ([1, 1], 1),
                 ([1.0, 1.0], 0), (np.ones((2, 2, 2)), 1), (1.0, 1)]:
        raises_like(lambda: of.multinomial(of.tensor(args[0]), args[1]),
                    lambda: torch.multinomial(torch.tensor(args[0]), args[1]))
    # without replacement past the nonzero categories: the others follow, as in PyTorch
    drawn = of.multinomial(of.tensor([0.0, 1.0, 0.0]), 3).numpy()
    assert drawn[0] == 1 and sorted(drawn) == [0, 1, 2]


# ---------------------------------------------------------------------------
# topk, sort, argsort

def test_topk(ties, rng):
    a = rng.permutation(24).reshape(4, 6).astype(np.float32) - 10  # no ties: indices agree
    x, tx = pair(a)
    for k, dim, largest in [(3, -1, True), (2, 0, False), (6, 1, False), (1, 0, True),
                            (0, 1, True)]:
        ours, theirs = of.topk(x, k, dim, largest), torch.topk(tx, k, dim, largest)
        assert isinstance(ours, of.return_types.topk)
        check(ours.values, theirs.values)
        check(ours.indices, theirs.indices)
    values, indices = x.topk(2, largest=False, sorted=False)  # sorted all the same
    check(values, torch.topk(tx, 2, largest=False).values)
    check(indices, torch.topk(tx, 2, largest=False).indices)
    i, ti = pair(a.astype(np.int64))
    check(of.topk(i, 3).indices, torch.topk(ti, 3).indices)
    check(of.topk(i, 3, largest=False).values, torch.topk(ti, 3, largest=False).values)
    # ties, NaN (larger than every number) and infinities: the values agree
    t, tt = pair(ties)
    for largest in (True, False):
        check(of.topk(t, 3, largest=largest).values, torch.topk(tt, 3, largest=largest).values)
    raises_like(lambda: of.topk(x, 7), lambda: torch.topk(tx, 7))
    raises_like(lambda: of.topk(of.tensor([True]), 1), lambda: torch.topk(torch.tensor([True]), 1))
    grads(lambda fw, x: fw.topk(x, 2, 1)[0], a.astype(np.float64))


def test_sort(ties, rng):
    t, tt = pair(ties)
    for dim in (-1, 0):
        for descending in (False, True):
            ours = of.sort(t, dim, descending, stable=True)
            theirs = torch.sort(tt, dim=dim, descending=descending, stable=True)
            assert isinstance(ours, of.return_types.sort)
            check(ours.values, theirs.values)
            check(ours.indices, theirs.indices)
            check(of.argsort(t, dim, descending, stable=True),
                  torch.argsort(tt, dim=dim, descending=descending, stable=True))
    values, indices = t.sort(descending=True)
    check(values, torch.sort(tt, descending=True).values)
    check(indices, torch.sort(tt, descending=True, stable=True).indices)
    check(t.argsort(), tt.argsort(stable=True))
    i, ti = pair(rng.integers(-3, 3, (3, 7)))
    check(of.sort(i, stable=True).indices, torch.sort(ti, stable=True).indices)
    b, tb = pair(rng.integers(0, 2, 9).astype(bool))
    check(of.sort(b, stable=True).values, torch.sort(tb, stable=True).values)
    check(of.sort(b, stable=True).indices, torch.sort(tb, stable=True).indices)
    raises_like(lambda: of.sort(t, 2), lambda: torch.sort(tt, 2))
    grads(lambda fw, x: fw.sort(x, 0)[0], rng.standard_normal((4, 3)))


def test_item_of_many_elements():
    raises_like(lambda: of.zeros(3).item(), lambda: torch.zeros(3).item())
    with pytest.raises(RuntimeError, match="a Tensor with 3 elements cannot be converted to "
                                           "Scalar"):
        of.zeros(3).item()
    assert of.tensor([[2.5]]).item() == 2.5


# ---------------------------------------------------------------------------
# Under of.compile: the same compositions, against eager

def selection(x, ids, cols):
    top = x.topk(2, dim=1)
    best = x.max(1)
    return (of.gather(x, 1, cols), x.index_select(0, ids), x.argmax(1), best.values,
            best.indices, x[ids], x[:, ids + 1], top.values, top.indices,
            of.sort(x, 0).values, F.one_hot(ids, 6), of.flip(x, 1), of.stack([x, x], 2),
            of.argmin(x), of.amin(x, 0), of.take_along_dim(x, cols, 1))


def test_compiled_against_eager(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    a[1, 3] = a[1, 0]  # a tie
    x, ids = of.tensor(a), of.tensor(np.array([3, 0, 3]))
    cols = of.tensor(rng.integers(0, 5, (4, 2)))
    compiled = of.compile(selection)
    got, expected = compiled(x, ids, cols), selection(x, ids, cols)
    for g, e in zip(got, expected):
        assert g.dtype is e.dtype and tuple(g.shape) == tuple(e.shape)
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    compiled(x, ids, cols)
    assert compiled.compiles == 1
    # an index out of range stops the compiled run (the values are not known when tracing)
    with pytest.raises(RuntimeError):
        compiled(x, of.tensor(np.array([3, 0, 6])), cols)
    with pytest.raises(RuntimeError):
        compiled(x, ids, of.tensor(np.full((4, 2), -1)))


def test_compiled_setitem_and_eager_only_ops(rng):
    x = of.tensor(rng.standard_normal((3, 4)).astype(np.float32))

    def write(x):
        y = x * 2.0
        y[:, 1] = 0.0
        y[0, [0, 2]] = of.tensor([5.0, 6.0])
        return y
    expected = write(x)
    np.testing.assert_array_equal(of.compile(write)(x).numpy(), expected.numpy())
    for fn, name in [(lambda x: x[x > 0], "x\\[mask\\]"),
                     (lambda x: of.masked_select(x, x > 0), "torch.masked_select"),
                     (lambda x: of.nonzero(x), "torch.nonzero"),
                     (lambda x: F.one_hot(x.argmax(1)), "one_hot"),
                     (lambda x: x.softmax(1).multinomial(1), "torch.multinomial")]:
        with pytest.raises(NotImplementedError, match=name):
            of.compile(fn)(x)

    def write_index(x, i):
        y = x * 1.0
        y[i] = 0.0
        return y
    with pytest.raises(NotImplementedError, match="tensor index"):
        of.compile(write_index)(x, of.tensor([1]))


def weighted_selection(fw, w, ids, cols):
    """A scalar of the selections of w, each weighted differently."""
    return (w.max(1).values.sum() + fw.gather(w, 1, cols).sum() * 2.0 + (w[ids] * 3.0).sum()
            + w.topk(2, 1).values.sum() * 5.0 + fw.sort(w, 0).values[0].sum() * 7.0
            + w.index_select(1, ids).sum() * 11.0 + fw.amin(w, 0).sum() * 13.0)


def test_compiled_gradients(rng):
    """Backward through a compiled function (--of-autodiff of the traced
    compositions) against eager of and PyTorch."""
    a = rng.standard_normal((4, 5))
    ids_, cols_ = np.array([3, 0, 3]), rng.integers(0, 5, (4, 2))
    expected = None
    for run in ("torch", "eager", "compiled"):
        fw = torch if run == "torch" else of
        w = fw.tensor(a, requires_grad=True)
        ids, cols = fw.tensor(ids_), fw.tensor(cols_)
        if run == "compiled":
            loss = of.compile(lambda w, ids, cols: weighted_selection(of, w, ids, cols))(
                w, ids, cols)
        else:
            loss = weighted_selection(fw, w, ids, cols)
        loss.backward()
        got = w.grad.numpy()
        if expected is None:
            expected = got
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_cat_of_many_tensors():
    """Eager cat of 200 small tensors: one program (a tensor.concat) with
    the values in order, and gradients to each input as PyTorch's."""
    arrays = [np.full((2, 3), i, np.float32) for i in range(200)]
    got = of.cat([of.tensor(a) for a in arrays], 0)
    np.testing.assert_array_equal(got.numpy(), np.concatenate(arrays, 0))
    xs = [of.tensor(a, requires_grad=True) for a in arrays[:50]]
    w = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
    (of.cat(xs, 0) * of.tensor(w)).sum().backward()
    for k, x in enumerate(xs):
        np.testing.assert_array_equal(x.grad.numpy(), w[2 * k:2 * k + 2])
