"""PyTorch's top-level math functions (python/of/_torch_functions.py and
the torch.* names of Tensor methods and nn.functional functions), each
against PyTorch on the same NumPy inputs: values in float64 (error
relative to the largest magnitude), dtypes and shapes, gradients of eager
backward(), a few under of.compile against eager, and the functions that
need an op of lacks raising NotImplementedError."""

import math

import numpy as np
import pytest

import of

torch = pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(26)


def rel_err(ours, theirs):
    a = np.asarray(ours.numpy() if isinstance(ours, of.Tensor) else ours, np.float64)
    b = np.asarray(theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs,
                   np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0.0
    assert np.array_equal(np.isnan(a), np.isnan(b)), (a, b)
    finite = ~np.isnan(a)
    assert np.array_equal(a[~np.isfinite(a) & finite], b[~np.isfinite(b) & finite])
    ok = np.isfinite(a) & np.isfinite(b)
    scale = max(np.abs(b[ok]).max() if ok.any() else 0.0, 1e-300)
    return float(np.abs(a[ok] - b[ok]).max() / scale) if ok.any() else 0.0


def compare(fn, *arrays, tol=1e-12, grad=True):
    """fn(module, *tensors) in of and torch on float64 copies of `arrays`:
    values, and the gradients of sum(result * w) for a random w."""
    results, gradients = [], []
    w = None
    for fw in (of, torch):
        xs = [fw.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        y = fn(fw, *xs)
        results.append(y)
        if grad and any(a.dtype.kind == "f" for a in arrays):
            if w is None:
                w = np.random.default_rng(1).standard_normal(tuple(y.shape))
            (y * fw.tensor(w)).sum().backward()
            gradients.append([x.grad for x, a in zip(xs, arrays) if a.dtype.kind == "f"])
    ours, theirs = results
    assert rel_err(ours, theirs) <= tol, rel_err(ours, theirs)
    if gradients:
        for g, h in zip(*gradients):
            assert rel_err(g, h) <= tol, rel_err(g, h)
    return ours, theirs


def f64(rng, *shape):
    return rng.standard_normal(shape)


# -- functions that are Tensor methods or nn.functional's -------------------------

def test_aliases_of_methods_and_functional(rng):
    x = f64(rng, 3, 4)
    compare(lambda m, t: m.relu(t), x)
    compare(lambda m, t: m.log_softmax(t, 1), x)
    compare(lambda m, t: t.log_softmax(0), x)
    compare(lambda m, t: m.erf(t), x)
    compare(lambda m, t: m.neg(t), x)
    compare(lambda m, t: m.masked_fill(t, t > 0, 2.5), x)
    compare(lambda m, t: m.unsqueeze(m.squeeze(m.unsqueeze(t, 1), 1), -1), x)
    compare(lambda m, t: m.layer_norm(t, (4,)), x, tol=1e-10)
    compare(lambda m, t: m.dropout(t, 0.3, False), x)
    assert tuple(of.squeeze(of.zeros(1, 3, 1), 0).shape) == (3, 1)


# -- elementwise ---------------------------------------------------------------------

def test_elementwise_compositions(rng):
    x = f64(rng, 5, 6)
    compare(lambda m, t: m.reciprocal(t), x)
    compare(lambda m, t: m.cosh(t * 3), x)
    compare(lambda m, t: m.sinh(t * 3), x, tol=1e-14)
    compare(lambda m, t: m.exp2(t * 4), x)
    compare(lambda m, t: m.log2(t.abs()), x, tol=1e-14)
    compare(lambda m, t: t.abs().log10(), x, tol=1e-14)
    compare(lambda m, t: m.log1p(t.abs()), x, tol=1e-15)
    compare(lambda m, t: m.expm1(t), x, tol=1e-15)


def test_log1p_expm1_sinh_accurate_near_zero():
    """Relative error at tiny arguments, where log(1 + x), e^x - 1 and
    (e^x - e^-x) / 2 lose every digit."""
    v = np.array([1e-300, -1e-17, 3e-12, -2e-8, 1e-5, 0.3, -0.7, 20.0, 800.0])
    for name in ("log1p", "expm1", "sinh"):
        arg = np.abs(v) if name == "log1p" else v[:-1]
        ours = getattr(of, name)(of.tensor(arg)).numpy()
        theirs = getattr(torch, name)(torch.tensor(arg)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=4e-16, atol=0, err_msg=name)
    x32 = np.array([1e-8, 1e-3, -0.5], np.float32)
    np.testing.assert_allclose(of.log1p(of.tensor(x32)).numpy(),
                               torch.log1p(torch.tensor(x32)).numpy(), rtol=3e-7)
    special = np.array([0.0, -1.0, math.inf, -math.inf, math.nan])
    for name in ("log1p", "expm1"):
        assert rel_err(getattr(of, name)(of.tensor(special)),
                       getattr(torch, name)(torch.tensor(special))) == 0


def test_predicates(rng):
    v = np.array([0.0, -1.5, math.inf, -math.inf, math.nan, 3.0])
    o, t = of.tensor(v), torch.tensor(v)
    for name in ("isnan", "isfinite"):
        assert np.array_equal(getattr(of, name)(o).numpy(), getattr(torch, name)(t).numpy())
        assert getattr(o, name)().dtype is of.bool
    i = of.tensor([1, 2])
    assert of.isfinite(i).numpy().all() and not of.isnan(i).numpy().any()
    a = f64(rng, 4)
    assert of.allclose(of.tensor(a), of.tensor(a + 1e-9)) is True
    assert of.allclose(of.tensor(a), of.tensor(a + 1e-3)) is False
    assert of.allclose(o, o, equal_nan=True) and not of.allclose(o, o)
    assert np.array_equal(of.isclose(o, o, equal_nan=True).numpy(),
                          torch.isclose(t, t, equal_nan=True).numpy())


def test_rounding():
    halves = np.arange(-6, 6) + 0.5
    v = np.concatenate([halves, [0.0, -0.0, 1.2, -1.2, 0.49999999999999994, 2.0 ** 52 + 1,
                                 -(2.0 ** 60), 1e300, math.inf, -math.inf, math.nan]])
    for name in ("floor", "ceil", "round"):
        for dtype in (np.float64, np.float32):
            with np.errstate(over="ignore"):
                ours = getattr(of, name)(of.tensor(v.astype(dtype)))
                theirs = getattr(torch, name)(torch.tensor(v.astype(dtype)))
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
    x = np.array([1.2345, -2.5678, 1234.5])
    assert rel_err(of.round(of.tensor(x), decimals=2),
                   torch.round(torch.tensor(x), decimals=2)) < 1e-15
    assert rel_err(of.tensor(x).round(decimals=-1), torch.tensor(x).round(decimals=-1)) == 0
    compare(lambda m, t: m.floor(t) + t.ceil() + t.round(), np.array([0.3, -1.7, 2.5]))
    i = of.tensor([3, -4])
    assert of.floor(i).dtype is of.int64 and np.array_equal(of.floor(i).numpy(), [3, -4])


def test_integer_division():
    a = np.array([7, -7, 7, -7, 0, 5])
    b = np.array([2, 2, -2, -2, 3, -5])
    for name in ("floor_divide", "remainder", "fmod"):
        ours = getattr(of, name)(of.tensor(a), of.tensor(b))
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert ours.dtype is of.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
        np.testing.assert_array_equal(getattr(of.tensor(a), name)(3).numpy(),
                                      getattr(torch.tensor(a), name)(3).numpy())
    with pytest.raises(RuntimeError):
        of.remainder(of.tensor(a), of.tensor(np.zeros(6, np.int64)))
    with pytest.raises(NotImplementedError, match="fmod"):
        of.remainder(of.tensor([1.5]), 1.0)


def test_missing_ops_raise():
    x = of.tensor([0.5])
    for name in ("asin", "acos", "atan"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(of, name)(x)
        with pytest.raises(NotImplementedError, match=name):
            getattr(x, name)()
    with pytest.raises(NotImplementedError, match="atan2"):
        of.atan2(x, x)


def test_tan_follows_sin_and_cos(rng):
    v = np.array([0.1, -1.2, 3.0])
    try:
        of.sin(of.tensor(v))
    except of.CompileError:
        pytest.skip("this build's compiler lacks the of.sin op its Python frontend writes")
    assert rel_err(of.tan(of.tensor(v)), torch.tan(torch.tensor(v))) < 1e-15
    compare(lambda m, t: m.tan(t), f64(rng, 3, 4), tol=1e-14)
    compare(lambda m, t: t.tan() * 2, np.array([0.5, -1.4]), tol=1e-14)


# -- reductions ------------------------------------------------------------------------

def test_cumsum_prod(rng):
    x = f64(rng, 5, 7)
    for dim in (0, 1, -1):
        compare(lambda m, t: m.cumsum(t, dim), x, tol=1e-14)
        compare(lambda m, t: m.prod(t, dim, keepdim=dim == 0), x, tol=1e-14)
    compare(lambda m, t: t.prod(), x[:2], tol=1e-14)
    z = x.copy()
    z[1, 2] = 0.0
    compare(lambda m, t: t.prod(1), z, tol=1e-14)  # the zero's gradient: the others' product
    i = np.array([[1, -2, 3], [4, 5, -6]])
    for name in ("cumsum", "prod"):
        ours, theirs = getattr(of, name)(of.tensor(i), 1), getattr(torch, name)(
            torch.tensor(i), 1)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    b = of.tensor([True, False, True])
    assert of.cumsum(b, 0).dtype is of.int64 and of.prod(b).dtype is of.int64
    assert of.cumsum(of.tensor(i), 0, dtype=of.float64).dtype is of.float64


def test_all_any(rng):
    v = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, -1.0]])
    for name in ("all", "any"):
        for args in ((), (0,), (1, True)):
            ours = getattr(of, name)(of.tensor(v), *args)
            theirs = getattr(torch, name)(torch.tensor(v), *args)
            assert ours.dtype is of.bool
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert bool(of.all(of.zeros(0))) and not bool(of.any(of.zeros(0)))
    assert bool(of.tensor([True, True]).all())


def test_var_std(rng):
    x = f64(rng, 4, 6)
    compare(lambda m, t: m.var(t), x, tol=1e-13)
    compare(lambda m, t: m.std(t, 1, keepdim=True), x, tol=1e-13)
    compare(lambda m, t: m.var(t, (0, 1), correction=0), x, tol=1e-13)
    compare(lambda m, t: t.std(0, unbiased=False), x, tol=1e-13)
    compare(lambda m, t: t.var(1, False, True), x, tol=1e-13)  # the legacy positions
    compare(lambda m, t: t.var(False), x, tol=1e-13)


def test_logsumexp_norm(rng):
    x = f64(rng, 4, 5) * 30
    compare(lambda m, t: m.logsumexp(t, 1), x, tol=1e-14)
    compare(lambda m, t: t.logsumexp((0, 1), keepdim=True), x, tol=1e-14)
    v = np.array([[-math.inf, -math.inf], [math.inf, 1.0]])
    assert rel_err(of.logsumexp(of.tensor(v), 1), torch.logsumexp(torch.tensor(v), 1)) == 0
    for p in ("fro", 2, 1, 3, 0.5, math.inf, -math.inf):
        compare(lambda m, t: m.norm(t, p), x, tol=1e-13)
        compare(lambda m, t: t.norm(p, 1, True), x, tol=1e-13)
    compare(lambda m, t: m.norm(t, 0, 0), x, tol=0, grad=False)
    with pytest.raises(NotImplementedError, match="nuc"):
        of.norm(of.tensor(x), "nuc")


# -- products ---------------------------------------------------------------------------

def test_products(rng):
    a, b = f64(rng, 5), f64(rng, 5)
    compare(lambda m, s, t: m.dot(s, t), a, b, tol=1e-14)
    compare(lambda m, s, t: m.outer(s, t), a, b[:3])
    m1, m2, c = f64(rng, 3, 4), f64(rng, 4, 2), f64(rng, 3, 2)
    compare(lambda m, x, y, z: m.addmm(z, x, y, beta=0.5, alpha=2.0), m1, m2, c, tol=1e-14)
    compare(lambda m, x, y, z: z.addmm(x, y), m1, m2, c, tol=1e-14)
    b1, b2, bc = f64(rng, 2, 3, 4), f64(rng, 2, 4, 5), f64(rng, 3, 5)
    compare(lambda m, x, y, z: m.baddbmm(z, x, y, alpha=-1), b1, b2, bc, tol=1e-14)
    nan = np.full((3, 2), math.nan)
    assert not np.isnan(of.addmm(of.tensor(nan), of.tensor(m1), of.tensor(m2),
                                 beta=0).numpy()).any()
    t1, t2 = f64(rng, 3, 4, 5), f64(rng, 4, 5, 2)
    compare(lambda m, x, y: m.tensordot(x, y), t1, t2, tol=1e-14)
    compare(lambda m, x, y: m.tensordot(x, y, dims=([1], [0])), t1, t2, tol=1e-14)
    compare(lambda m, x, y: m.tensordot(x, y, dims=([2, 0], [1, 2])), t1, f64(rng, 2, 5, 3),
            tol=1e-14)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij,ij->ij", [(1, 4), (3, 4)]),
])
def test_einsum(rng, equation, shapes):
    arrays = [f64(rng, *s) for s in shapes]
    compare(lambda m, *ts: m.einsum(equation, *ts), *arrays, tol=1e-13)
    compare(lambda m, *ts: m.einsum(equation, list(ts)), *arrays, tol=1e-13, grad=False)


# -- selection and construction ----------------------------------------------------------

def test_scatter(rng):
    x, src = f64(rng, 3, 5), f64(rng, 2, 5)
    index = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    compare(lambda m, t, s, i: m.scatter_add(t, 0, i, s), x, src, index, tol=1e-14)
    compare(lambda m, t, s, i: t.scatter_add(1, i, s), x, src, np.array([[0, 1, 1, 4, 4],
                                                                         [2, 2, 2, 0, 3]]))
    distinct = np.array([[0, 1, 2, 0, 0], [2, 0, 1, 1, 2]])
    compare(lambda m, t, s, i: m.scatter(t, 0, i, s), x, src, distinct)
    compare(lambda m, t, i: t.scatter(1, i, 2.5), x, distinct[:, :3])
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter"):
        compare(lambda m, t, s, i: m.scatter(t, 0, i, s, reduce="add"), x, src, index,
                tol=1e-14, grad=False)  # PyTorch has no derivative for scatter(reduce=)
    with pytest.raises(NotImplementedError), pytest.warns(UserWarning):
        of.scatter(of.tensor(x), 0, of.tensor(index), of.tensor(src), reduce="multiply")
    with pytest.raises(RuntimeError):
        of.scatter_add(of.tensor(x), 0, of.tensor(index + 3), of.tensor(src))
    i = np.array([[1, 2], [3, 4]])
    ours = of.scatter_add(of.zeros(5, dtype=of.int64), 0, of.tensor([1, 1, 4]),
                          of.tensor([5, 6, 7]))
    np.testing.assert_array_equal(ours.numpy(), [0, 11, 0, 0, 7])
    assert of.tensor(i).scatter(0, of.tensor([[1, 0]]), of.tensor([[9, 8]])).tolist() == \
        [[1, 8], [9, 4]]


def test_selection(rng):
    x = f64(rng, 3, 4, 5)
    compare(lambda m, t: m.select(t, 1, -1), x)
    compare(lambda m, t: t.select(0, 2), x)
    compare(lambda m, t: m.cat(m.split_with_sizes(t, [1, 3], 1), 1) * 2, x)
    compare(lambda m, t: t.split_with_sizes([2, 3], -1)[1], x)
    v, sq = f64(rng, 4), f64(rng, 4, 6)
    for k in (0, 2, -1):
        compare(lambda m, t: m.diag(t, k), v)
        compare(lambda m, t: t.diag(k), sq)
    compare(lambda m, t: m.diag(t, 7), sq, grad=False)
    compare(lambda m, t: m.repeat_interleave(t, 2), x[0])
    compare(lambda m, t: t.repeat_interleave(3, dim=1), x[0])
    compare(lambda m, t: m.repeat_interleave(t, m.tensor([1, 0, 2]), dim=0), x[:, 0])
    assert of.repeat_interleave(of.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    a, b = f64(rng, 4, 3), f64(rng, 4, 3)
    compare(lambda m, s, t: m.cross(s, t, dim=1), a, b, tol=1e-14)
    compare(lambda m, s, t: s.cross(t, -1), a, b[:1], tol=1e-14)
    with pytest.warns(UserWarning):
        of.cross(of.tensor(a), of.tensor(b))
    p, q = f64(rng, 2, 4, 3), f64(rng, 2, 5, 3)
    for pn in (2.0, 1.0, 3.0):
        compare(lambda m, s, t: m.cdist(s, t, p=pn), p, q, tol=1e-13)


def test_factories_and_grids():
    for args in ((0, 1, 5), (-3.5, 7.25, 11), (2, -2, 1), (0, 1, 0), (1e6, 1e6 + 1, 7)):
        for dtype in (of.float32, of.float64):
            tdt = torch.float32 if dtype is of.float32 else torch.float64
            ours, theirs = of.linspace(*args, dtype=dtype), torch.linspace(*args, dtype=tdt)
            assert ours.dtype is dtype
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7 if
                                       dtype is of.float32 else 1e-15)
    assert of.linspace(0, 10, 5, dtype=of.int64).tolist() == \
        torch.linspace(0, 10, 5, dtype=torch.int64).tolist()
    assert of.linspace(0, 1, 3, requires_grad=True).requires_grad
    assert np.array_equal(of.eye(3).numpy(), torch.eye(3).numpy())
    assert np.array_equal(of.eye(2, 4, dtype=of.int64).numpy(),
                          torch.eye(2, 4, dtype=torch.int64).numpy())
    a, b = np.arange(3.0), np.arange(4.0)
    for indexing in ("ij", "xy"):
        ours = of.meshgrid(of.tensor(a), of.tensor(b), indexing=indexing)
        theirs = torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    with pytest.warns(UserWarning, match="indexing"):
        of.meshgrid([of.tensor(a), of.tensor(b)])
    compare(lambda m, s, t: m.meshgrid(s, t, indexing="xy")[0] *
            m.meshgrid(s, t, indexing="xy")[1], a, b)


def test_unique_bincount():
    v = np.array([[3, 1, 2], [1, 3, 3]])
    ours = of.unique(of.tensor(v), return_inverse=True, return_counts=True)
    theirs = torch.unique(torch.tensor(v), return_inverse=True, return_counts=True)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert of.tensor(v).unique().tolist() == [1, 2, 3]
    rows = of.unique(of.tensor(np.array([[1, 2], [0, 1], [1, 2]])), dim=0)
    assert rows.tolist() == [[0, 1], [1, 2]]
    c = np.array([1, 1, 4, 0])
    assert of.bincount(of.tensor(c)).tolist() == torch.bincount(torch.tensor(c)).tolist()
    assert of.tensor(c).bincount(minlength=7).tolist() == \
        torch.bincount(torch.tensor(c), minlength=7).tolist()
    w = np.array([0.5, 1.0, 2.0, 3.0])
    ours = of.bincount(of.tensor(c), of.tensor(w))
    theirs = torch.bincount(torch.tensor(c), torch.tensor(w))
    assert ours.dtype is of.float64 and np.array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError):
        of.bincount(of.tensor([-1, 2]))


# -- under of.compile -----------------------------------------------------------------------

def test_compiled_against_eager(rng):
    def step(x, y, idx):
        a = of.einsum("bij,bjk->bik", x, y).cumsum(1)
        b = of.logsumexp(a, -1) + a.var(-1) + a.norm(dim=-1) + a.prod(-1)
        c = of.scatter_add(of.zeros(2, 6, dtype=of.float64), 1, idx, b)
        d = of.scatter(c, 1, idx[:, :1], b[:, :1] * 2)
        return d + of.floor(d) + of.expm1(d * 0.1) + of.log1p(d.abs()) + of.sinh(d * 0.1)

    x, y = of.tensor(f64(rng, 2, 3, 4)), of.tensor(f64(rng, 2, 4, 5))
    idx = of.tensor(np.array([[0, 5, 0], [3, 3, 1]]))
    compiled = of.compile(step)
    got, expected = compiled(x, y, idx), step(x, y, idx)
    assert rel_err(got, expected.numpy()) < 1e-13


def test_compiled_gradients_against_torch(rng):
    x0 = f64(rng, 3, 4)
    w = f64(rng, 4, 3)

    class Model(of.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = of.nn.Parameter(of.tensor(w))

        def forward(self, x):
            h = of.addmm(of.ones(3, 3, dtype=of.float64), x, self.w)
            return (of.logsumexp(h, 1) + h.std(1) + of.cumsum(h, 1).sum(1)).sum()

    model = Model()
    opt = of.optim.SGD(model.parameters(), lr=0.5)  # exact in float32
    step = of.compile(model, optimizer=opt)
    step(of.tensor(x0))
    tw = torch.tensor(w, requires_grad=True)
    h = torch.addmm(torch.ones(3, 3, dtype=torch.float64), torch.tensor(x0), tw)
    (torch.logsumexp(h, 1) + h.std(1) + torch.cumsum(h, 1).sum(1)).sum().backward()
    assert rel_err(model.w, tw.detach() - 0.5 * tw.grad) < 1e-13


def test_compiled_scatter_add_gradients_with_traced_indices(rng):
    """scatter_add and index_add whose indices are inputs of the compiled
    step (one scatter of rows, not a comparison of every position with
    every write): the gradients of the source and of the base against
    PyTorch, repeated indices included."""
    base0, src0 = f64(rng, 4, 6), f64(rng, 4, 9)
    index = rng.integers(0, 6, (4, 9))
    rows = np.array([2, 0, 2, 3])

    def loss(fw, base, src, idx, ridx):
        out = fw.scatter_add(base, 1, idx, src)
        out = out.index_add(0, ridx, out * 0.5)
        return (out * out).sum()

    class Model(of.nn.Module):
        def __init__(self):
            super().__init__()
            self.base = of.nn.Parameter(of.tensor(base0))
            self.src = of.nn.Parameter(of.tensor(src0))

        def forward(self, idx, ridx):
            return loss(of, self.base, self.src, idx, ridx)

    model = Model()
    run = of.compile(model)
    value = run(of.tensor(index), of.tensor(rows))
    value.backward()
    tb, ts = (torch.tensor(a, requires_grad=True) for a in (base0, src0))
    expected = loss(torch, tb, ts, torch.tensor(index), torch.tensor(rows))
    expected.backward()
    assert rel_err(value, expected.detach()) < 1e-13
    assert rel_err(model.base.grad, tb.grad) < 1e-13
    assert rel_err(model.src.grad, ts.grad) < 1e-13


def test_data_dependent_sizes_are_eager_only():
    def f(x):
        return of.unique(x)

    def g(x):
        return of.bincount(x)

    for fn in (f, g):
        with pytest.raises(NotImplementedError, match="compiled function"):
            of.compile(fn)(of.tensor([1, 2, 2]))
