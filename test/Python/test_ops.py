"""Every functional op and module of the of package against PyTorch CPU on
random inputs, run eagerly (each op a compiled single-op plan) and, for the
modules, also under of.compile."""

import numpy as np
import pytest

import of
import of.nn as onn
import of.nn.functional as OF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

F32 = dict(rtol=1e-5, atol=1e-5)


def pair(array):
    """The same value as an of tensor and a torch tensor."""
    array = np.ascontiguousarray(array)
    return of.from_numpy(array), torch.from_numpy(array.copy())


def check(of_value, torch_value, **tol):
    got = of_value.numpy()
    want = torch_value.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, **(tol or F32))


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary_broadcast(rng, name):
    a, ta = pair(f32(rng, 3, 1, 5))
    b, tb = pair(f32(rng, 4, 1) + (3.0 if name == "div" else 0.0))
    check(getattr(of._ops, name)(a, b), getattr(torch, name)(ta, tb))


def test_operators_and_scalars(rng):
    a, ta = pair(f32(rng, 4, 6))
    b, tb = pair(np.abs(f32(rng, 6)) + 0.5)
    check(a + b * 2.0 - 1.0, ta + tb * 2.0 - 1.0)
    check(1.0 / b, 1.0 / tb)
    check(-a, -ta)
    check(b ** 2.0, tb ** 2.0)
    check(2.0 - a, 2.0 - ta)
    check(a @ a.transpose(0, 1), ta @ ta.transpose(0, 1))
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        check(getattr(a, op)(0.25), getattr(ta, op)(0.25))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu",
                                  "silu", "erf", "sin", "cos"])
def test_unary(rng, name):
    x = f32(rng, 3, 7)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    a, ta = pair(x)
    fn = getattr(OF, name, None) or getattr(of._ops, name)
    check(fn(a), (getattr(torch, name, None) or getattr(TF, name))(ta))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(rng, approximate):
    a, ta = pair(f32(rng, 5, 8))
    check(OF.gelu(a, approximate), TF.gelu(ta, approximate=approximate))
    check(onn.GELU(approximate)(a), torch.nn.GELU(approximate)(ta))


def test_matmul_batched_and_broadcast(rng):
    a, ta = pair(f32(rng, 2, 3, 4, 5))
    b, tb = pair(f32(rng, 3, 5, 6))
    check(a @ b, ta @ tb, rtol=1e-4, atol=1e-5)
    c, tc = pair(f32(rng, 3, 6, 5))
    check(of._ops.matmul(a, c, transpose_b=True), ta @ tc.transpose(-1, -2), rtol=1e-4,
          atol=1e-5)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions(rng, dim, keepdim):
    a, ta = pair(f32(rng, 3, 4, 5))
    kw = {} if dim is None else dict(dim=dim, keepdim=keepdim)
    check(a.sum(**kw), ta.sum(**kw), rtol=1e-5, atol=1e-5)
    check(a.mean(**kw), ta.mean(**kw))
    check(a.amax(**kw), ta.amax(**kw))


def test_shape_ops(rng):
    a, ta = pair(f32(rng, 2, 3, 4))
    check(a.view(6, 4), ta.view(6, 4))
    check(a.reshape(-1, 2), ta.reshape(-1, 2))
    check(a.permute(2, 0, 1), ta.permute(2, 0, 1))
    check(a.transpose(0, 2), ta.transpose(0, 2))
    check(a.unsqueeze(1), ta.unsqueeze(1))
    check(a.unsqueeze(1).squeeze(1), ta)
    check(a.flatten(1), ta.flatten(1))
    check(a[1], ta[1])
    check(a[:, 1:3, ::2], ta[:, 1:3, ::2])
    check(a[..., -1], ta[..., -1])
    check(a[None, :, 0], ta[None, :, 0])
    for x, tx in zip(a.split(2, dim=2), ta.split(2, dim=2)):
        check(x, tx)
    for x, tx in zip(a.chunk(3, dim=1), ta.chunk(3, dim=1)):
        check(x, tx)
    b, tb = pair(f32(rng, 2, 5, 4))
    check(of.cat([a, b], dim=1), torch.cat([ta, tb], dim=1))
    c, tc = pair(f32(rng, 3, 1))
    check(c.expand(3, 4), tc.expand(3, 4))


def test_select_masked_fill_cast(rng):
    a, ta = pair(f32(rng, 4, 5))
    b, tb = pair(f32(rng, 4, 5))
    m, tm = pair(rng.random((4, 5)) < 0.5)
    check(of.where(m, a, b), torch.where(tm, ta, tb))
    check(a.masked_fill(m, -7.0), ta.masked_fill(tm, -7.0))
    check(a.to(of.float64), ta.to(torch.float64))
    check((a * 10).long(), (ta * 10).long())
    i, ti = pair(rng.integers(-5, 5, (3, 4)))
    check(i.float(), ti.float())


@pytest.mark.parametrize("dim", [0, -1])
def test_softmax(rng, dim):
    a, ta = pair(f32(rng, 4, 9))
    check(OF.softmax(a, dim), TF.softmax(ta, dim))
    check(OF.log_softmax(a, dim), TF.log_softmax(ta, dim))
    check(onn.Softmax(dim)(a), torch.nn.Softmax(dim)(ta))


def test_layer_norm_and_rms_norm(rng):
    x, tx = pair(f32(rng, 2, 5, 8))
    tm = torch.nn.LayerNorm(8)
    with torch.no_grad():
        tm.weight.copy_(torch.randn(8))
        tm.bias.copy_(torch.randn(8))
    m = onn.LayerNorm(8)
    m.load_state_dict(tm.state_dict())
    check(m(x), tm(tx))
    check(OF.layer_norm(x, (5, 8)), TF.layer_norm(tx, (5, 8)))
    tr = torch.nn.RMSNorm(8, eps=1e-6)
    with torch.no_grad():
        tr.weight.copy_(torch.randn(8))
    r = onn.RMSNorm(8, eps=1e-6)
    r.load_state_dict(tr.state_dict())
    check(r(x), tr(tx))


def test_linear_embedding(rng):
    tl = torch.nn.Linear(6, 3)
    m = onn.Linear(6, 3)
    m.load_state_dict(tl.state_dict())
    x, tx = pair(f32(rng, 4, 2, 6))
    check(m(x), tl(tx))
    te = torch.nn.Embedding(10, 4)
    e = onn.Embedding(10, 4)
    e.load_state_dict(te.state_dict())
    i, ti = pair(rng.integers(0, 10, (3, 5)))
    check(e(i), te(ti))


@pytest.mark.parametrize("stride,padding,groups,bias", [(1, 0, 1, True), (2, 1, 1, False),
                                                        (1, 1, 2, True)])
def test_conv2d(rng, stride, padding, groups, bias):
    tc = torch.nn.Conv2d(4, 6, 3, stride=stride, padding=padding, groups=groups, bias=bias)
    c = onn.Conv2d(4, 6, 3, stride=stride, padding=padding, groups=groups, bias=bias)
    c.load_state_dict(tc.state_dict())
    x, tx = pair(f32(rng, 2, 4, 9, 9))
    check(c(x), tc(tx), rtol=1e-4, atol=1e-5)


def test_pools(rng):
    x, tx = pair(f32(rng, 2, 3, 8, 8))
    check(onn.MaxPool2d(2)(x), torch.nn.MaxPool2d(2)(tx))
    check(OF.max_pool2d(x, 3, 2, 1), TF.max_pool2d(tx, 3, 2, 1))
    check(onn.AvgPool2d(2)(x), torch.nn.AvgPool2d(2)(tx))
    check(OF.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
          TF.avg_pool2d(tx, 3, 2, 1, count_include_pad=False))
    # A NaN in a window makes its maximum NaN, as PyTorch's (oneDNN's max
    # pooling would drop it: on the CPU max pooling stays generated).
    z = np.maximum(f32(rng, 1, 2, 6, 6), 0)
    z[0, 0, 1, 1] = z[0, 1, 4, 5] = np.nan
    x, tx = pair(z)
    check(OF.max_pool2d(x, 2), TF.max_pool2d(tx, 2))
    check(OF.max_pool2d(x, 3, 1, 1), TF.max_pool2d(tx, 3, 1, 1))
    assert np.isnan(OF.max_pool2d(x, 2).numpy()).sum() == 2


def test_batch_norm(rng):
    tb = torch.nn.BatchNorm2d(3)
    b = onn.BatchNorm2d(3)
    x, tx = pair(f32(rng, 4, 3, 5, 5) * 2 + 1)
    check(b(x), tb(tx), rtol=1e-4, atol=1e-5)  # training: batch statistics
    check(b.running_mean, tb.running_mean)
    check(b.running_var, tb.running_var, rtol=1e-5, atol=1e-6)
    b.eval()
    tb.eval()
    check(b(x), tb(tx), rtol=1e-4, atol=1e-5)


def test_dropout(rng):
    x = of.ones(200, 100)
    check(OF.dropout(x, 0.0), torch.ones(200, 100))
    y = OF.dropout(x, 0.25).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d = onn.Dropout(0.5)
    d.eval()
    check(d(x), torch.ones(200, 100))


@pytest.mark.parametrize("nonlinearity,param", [("linear", None), ("conv2d", None),
                                                 ("sigmoid", None), ("tanh", None),
                                                 ("relu", None), ("leaky_relu", None),
                                                 ("leaky_relu", 0.2), ("selu", None)])
def test_calculate_gain(nonlinearity, param):
    assert onn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-12)


@pytest.mark.parametrize("init", ["kaiming_normal_", "kaiming_uniform_"])
@pytest.mark.parametrize("mode,nonlinearity,a", [("fan_in", "leaky_relu", 0.0),
                                                 ("fan_out", "relu", 0.0),
                                                 ("fan_in", "leaky_relu", 0.1)])
def test_kaiming_init(init, mode, nonlinearity, a):
    """The distribution's spread as PyTorch's: the standard deviation over a
    large weight within 2% (a normal's std, or a uniform's bound / sqrt 3)."""
    of.manual_seed(0)
    w = onn.Parameter(np.zeros((256, 128, 3, 3), np.float32))
    getattr(onn.init, init)(w, a=a, mode=mode, nonlinearity=nonlinearity)
    t = torch.empty(256, 128, 3, 3)
    getattr(torch.nn.init, init)(t, a=a, mode=mode, nonlinearity=nonlinearity)
    got, want = w.numpy(), t.numpy()
    assert abs(got.std() / want.std() - 1) < 0.02, (got.std(), want.std())
    assert abs(got.mean()) < 0.01 * want.std()
    if init == "kaiming_uniform_":  # within PyTorch's bound
        fan = 128 * 9 if mode == "fan_in" else 256 * 9
        bound = torch.nn.init.calculate_gain(nonlinearity, a) * np.sqrt(3.0 / fan)
        assert np.abs(got).max() <= bound * (1 + 1e-6)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        getattr(onn.init, init)(w, mode="fan_avg")


def test_losses(rng):
    logits, tl = pair(f32(rng, 6, 5))
    labels, tlab = pair(rng.integers(0, 5, 6))
    check(OF.cross_entropy(logits, labels), TF.cross_entropy(tl, tlab))
    check(onn.CrossEntropyLoss(reduction="sum")(logits, labels),
          torch.nn.CrossEntropyLoss(reduction="sum")(tl, tlab), rtol=1e-5, atol=1e-5)
    masked = labels.numpy().copy()
    masked[::2] = -1
    m, tmask = pair(masked)
    check(OF.cross_entropy(logits, m, ignore_index=-1),
          TF.cross_entropy(tl, tmask, ignore_index=-1))
    a, ta = pair(f32(rng, 4, 3))
    b, tb = pair(f32(rng, 4, 3))
    check(onn.MSELoss()(a, b), torch.nn.MSELoss()(ta, tb))


@pytest.mark.parametrize("causal", [True, False])
def test_scaled_dot_product_attention(rng, causal):
    q, tq = pair(f32(rng, 2, 3, 6, 4))
    k, tk = pair(f32(rng, 2, 3, 6, 4))
    v, tv = pair(f32(rng, 2, 3, 6, 4))
    check(OF.scaled_dot_product_attention(q, k, v, is_causal=causal),
          TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal), rtol=1e-4, atol=1e-5)


def _mlp_pair():
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.SiLU(), torch.nn.Linear(16, 16),
                             torch.nn.ReLU(), torch.nn.Linear(16, 4))
    m = onn.Sequential(onn.Linear(8, 16), onn.SiLU(), onn.Linear(16, 16), onn.ReLU(),
                       onn.Linear(16, 4))
    m.load_state_dict(tm.state_dict())
    return m, tm


def test_sequential_and_module_list_compiled(rng):
    m, tm = _mlp_pair()
    x, tx = pair(f32(rng, 5, 8))
    check(m(x), tm(tx), rtol=1e-4, atol=1e-5)
    check(of.compile(m)(x), tm(tx), rtol=1e-4, atol=1e-5)
    layers = onn.ModuleList([onn.Linear(4, 4) for _ in range(3)])
    tlayers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])
    layers.load_state_dict(tlayers.state_dict())
    y, ty = pair(f32(rng, 2, 4))
    for layer, tlayer in zip(layers, tlayers):
        y, ty = layer(y), tlayer(ty)
    check(y, ty, rtol=1e-4, atol=1e-5)
    assert [n for n, _ in layers.named_parameters()] == [n for n, _ in tlayers.named_parameters()]


def test_factories_and_numpy():
    assert of.zeros(2, 3).numpy().tolist() == [[0.0] * 3] * 2
    assert of.ones((2,), dtype=of.int64).dtype is of.int64
    assert of.arange(5).numpy().tolist() == [0, 1, 2, 3, 4]
    assert of.arange(0, 1, 0.5).dtype is of.float32
    assert of.tensor([1, 2]).dtype is of.int64
    assert of.tensor([1.5]).dtype is of.float32
    assert of.tensor(True).dtype is of.bool
    x = of.randn(3, 4)
    assert x.shape == (3, 4) and x.size(1) == 4 and x.numel() == 12 and x.dim() == 2
    assert of.tensor([[1.0, 2.0]]).sum().item() == 3.0


def test_tensor_of_one_element_tensors():
    """torch.tensor([t, ...]) (actor_critic's torch.tensor([R])): each
    tensor's one element, the elements' dtypes promoted, as PyTorch's."""
    torch = pytest.importorskip("torch")
    for make in (lambda fw: [fw.tensor(0.5)], lambda fw: [fw.tensor(0.5, dtype=fw.float64)],
                 lambda fw: [fw.tensor(3)], lambda fw: [fw.tensor(2), 0.5],
                 lambda fw: [[fw.tensor([1.0]), 2]], lambda fw: (fw.tensor(True), False)):
        ours, theirs = of.tensor(make(of)), torch.tensor(make(torch))
        assert ours.numpy().tolist() == theirs.numpy().tolist()
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        of.tensor([of.ones(2)])


def test_errors_name_the_python_line():
    with pytest.raises(ValueError, match=r"matmul: inner dimensions differ: \[2, 3\] @ \[4, 5\]"):
        of.zeros(2, 3) @ of.zeros(4, 5)
    with pytest.raises(TypeError, match="matmul: operands have dtypes of.float32 and of.int64"):
        of.zeros(2, 2) @ of.zeros(2, 2, dtype=of.int64)
    with pytest.raises(ValueError, match="do not broadcast"):
        of.zeros(2, 3) + of.zeros(4)
    with pytest.raises(ValueError, match="invalid for input of shape"):
        of.zeros(2, 3).view(4, 2)
    with pytest.raises(IndexError, match="out of range"):
        of.zeros(2, 3)[5]


def test_runtime_errors_are_exceptions():
    with pytest.raises(RuntimeError, match="index"):
        OF.embedding(of.tensor([[1, 7]]), of.zeros(3, 2))
    with pytest.raises(TypeError, match="cannot be represented as of.int64"):
        of.tensor([1, 2]).masked_fill(of.tensor([True, False]), 0.5)
    with pytest.raises(TypeError, match="no dtype for NumPy's complex64"):
        of.from_numpy(np.zeros(2, np.complex64))
    assert (of.tensor([1, 2]) * 0.5).dtype is of.float32  # PyTorch's promotion
