"""The activations, normalisations, poolings, shuffles, channel dropouts,
losses, distances, index updates and initialisers of of.nn that PyTorch
programs use beside the big modules (ELU/SELU/CELU, Softplus, Mish,
Hardswish/Hardsigmoid/Hardtanh/ReLU6, LogSigmoid, GLU, PReLU, the shrinks,
BatchNorm1d/3d, SyncBatchNorm, InstanceNorm1d/2d/3d, the 1-d and adaptive
max poolings, PixelShuffle, Dropout1d/2d/3d, KLDiv/MarginRanking/
HingeEmbedding/SoftMargin/CosineEmbedding/TripletMargin losses, normalize,
cosine_similarity, pairwise_distance, index_add/index_copy/index_fill and
the in-place scatter methods, xavier_normal_/trunc_normal_/orthogonal_),
each against PyTorch: values and eager gradients in float64 (the kinks
included: PyTorch's gradient there is its *_backward kernel's choice),
modules from the same weights, a compiled training step, and PyTorch's
errors."""

import numpy as np
import pytest

import of
import of.nn as onn
import of.nn.functional as OF

from test_torch_functions import compare

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(27)


def F(fw):
    return fw.nn.functional


# points where the activations below change branch, and values around them
KINKS = np.array([-25.0, -4.0, -3.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0, 4.0, 25.0])


def with_kinks(rng, n=40):
    return np.concatenate([KINKS, 3 * rng.standard_normal(n)])


@pytest.mark.parametrize("name,kwargs", [
    ("elu", {}), ("elu", {"alpha": 0.4}), ("selu", {}), ("celu", {"alpha": 2.0}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}), ("mish", {}),
    ("hardtanh", {}), ("hardtanh", {"min_val": -3.0, "max_val": 0.5}), ("relu6", {}),
    ("hardsigmoid", {}), ("hardswish", {}), ("logsigmoid", {}), ("softsign", {}),
    ("tanhshrink", {}), ("softshrink", {}), ("softshrink", {"lambd": 1.0}),
    ("hardshrink", {}), ("threshold", {"threshold": 0.5, "value": -2.0}),
])
def test_activation_values_and_gradients(rng, name, kwargs):
    x = with_kinks(rng)
    # PyTorch's hardsigmoid_backward multiplies by 1.0f / 6.0f, a float32
    # constant, in float64 too
    tol = 1e-7 if name == "hardsigmoid" else 1e-12
    compare(lambda m, t: getattr(F(m), name)(t, **kwargs), x, tol=tol)


def test_glu_prelu_softmin(rng):
    compare(lambda m, t: F(m).glu(t), rng.standard_normal((3, 8)))
    compare(lambda m, t: F(m).glu(t, 0), rng.standard_normal((4, 5, 2)))
    x = np.concatenate([KINKS[:12].reshape(2, 3, 2), rng.standard_normal((2, 3, 2))])
    compare(lambda m, t, w: F(m).prelu(t, w), x, np.array([0.1, -0.3, 0.5]))
    compare(lambda m, t, w: F(m).prelu(t, w), x, np.array([0.25]))
    compare(lambda m, t: F(m).softmin(t, 1), rng.standard_normal((3, 5)))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        OF.glu(of.zeros(3, 5))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        OF.prelu(of.zeros(2, 3), of.ones(2))


@pytest.mark.parametrize("module,args", [
    ("ELU", (0.7,)), ("SELU", ()), ("CELU", (1.5,)), ("Softplus", (1.5, 10.0)), ("Mish", ()),
    ("Hardswish", ()), ("Hardsigmoid", ()), ("Hardtanh", (-2.0, 2.0)), ("ReLU6", ()),
    ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Softshrink", (0.3,)),
    ("Hardshrink", (0.3,)), ("Threshold", (0.1, 20.0)), ("GLU", ()), ("Softmin", (1,)),
    ("LogSoftmax", (1,)),
])
def test_activation_modules(rng, module, args):
    x = rng.standard_normal((4, 6)) * 3
    compare(lambda m, t: getattr(m.nn, module)(*args)(t), x,
            tol=1e-7 if module == "Hardsigmoid" else 1e-12)


def test_inplace_activations_write_their_input(rng):
    x = with_kinks(rng)
    for module in ("ReLU6", "Hardswish", "ELU", "SELU", "Mish", "Hardsigmoid"):
        ours, theirs = of.tensor(x), torch.tensor(x)
        getattr(onn, module)(inplace=True)(ours)
        getattr(torch.nn, module)(inplace=True)(theirs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15,
                                   err_msg=module)


def test_prelu_module_learns_its_slope(rng):
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    om, tm = onn.PReLU(3), torch.nn.PReLU(3)
    assert [tuple(p.shape) for p in om.parameters()] == [(3,)]
    for fw, m in ((of, om), (torch, tm)):
        t = fw.tensor(x)
        (m(t) * fw.tensor(np.arange(60.0, dtype=np.float32).reshape(5, 3, 4))).sum().backward()
    np.testing.assert_allclose(om.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-5)


# -- normalisation ---------------------------------------------------------------------

@pytest.mark.parametrize("module,shape", [
    ("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm3d", (2, 3, 2, 3, 2)),
    ("SyncBatchNorm", (4, 3, 2, 2)),
])
def test_batch_norms_match_pytorch(rng, module, shape):
    x = rng.standard_normal(shape) * 2 + 1
    om, tm = getattr(onn, module)(3, momentum=0.3), getattr(torch.nn, module)(3, momentum=0.3)
    tm.double()
    for p, q in ((om.weight, tm.weight), (om.bias, tm.bias)):
        value = rng.standard_normal(3)
        p.data = of.tensor(value.astype(np.float32))
        q.data = torch.tensor(value)
    w = rng.standard_normal(shape)
    results = []
    for fw, m in ((of, om), (torch, tm)):
        t = fw.tensor(x.astype(np.float32) if fw is of else x, requires_grad=True)
        y = m(t)
        (y * fw.tensor(w.astype(np.float32) if fw is of else w)).sum().backward()
        results.append((y, t.grad, m.weight.grad, m.bias.grad, m.running_mean, m.running_var))
    for ours, theirs in zip(*results):
        theirs = theirs.detach().numpy()
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-4,
                                   atol=1e-5 * np.abs(theirs).max())
    assert int(om.num_batches_tracked.item()) == 1
    om.eval(), tm.eval()
    np.testing.assert_allclose(om(of.tensor(x.astype(np.float32))).numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_batch_norm_input_ranks():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        onn.BatchNorm1d(3)(of.zeros(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        onn.BatchNorm3d(3)(of.zeros(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        onn.BatchNorm2d(3)(of.zeros(2, 3, 4))


def test_convert_sync_batchnorm_keeps_the_parameters():
    model = onn.Sequential(onn.Conv2d(3, 4, 3), onn.BatchNorm2d(4), onn.ReLU())
    weight = model[1].weight
    converted = onn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], onn.SyncBatchNorm)
    assert converted[1].weight is weight
    assert [type(m).__name__ for m in converted] == ["Conv2d", "SyncBatchNorm", "ReLU"]
    converted[2] = onn.Identity()  # Sequential's __setitem__ keeps the order
    assert [type(m).__name__ for m in converted] == ["Conv2d", "SyncBatchNorm", "Identity"]
    assert list(converted.state_dict()) == list(
        torch.nn.SyncBatchNorm.convert_sync_batchnorm(
            torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                torch.nn.ReLU())).state_dict())


@pytest.mark.parametrize("module,shape,affine", [
    ("InstanceNorm1d", (3, 4, 7), False), ("InstanceNorm1d", (4, 7), True),
    ("InstanceNorm2d", (2, 4, 3, 5), True), ("InstanceNorm3d", (2, 4, 2, 3, 2), False),
])
def test_instance_norms_match_pytorch(rng, module, shape, affine):
    x = rng.standard_normal(shape) * 3 - 1

    def fn(m, t):
        mod = getattr(m.nn, module)(4, affine=affine).double()
        if affine:  # not PyTorch's ones and zeros
            mod.weight.data = m.tensor(np.linspace(0.5, 2.0, 4))
            mod.bias.data = m.tensor(np.linspace(-1.0, 1.0, 4))
        return mod(t)
    compare(fn, x, tol=1e-10)
    compare(lambda m, t: F(m).instance_norm(t, eps=1e-3), rng.standard_normal((2, 3, 6)),
            tol=1e-10)


def test_instance_norm_refuses_running_statistics():
    with pytest.raises(NotImplementedError, match="track_running_stats"):
        onn.InstanceNorm2d(3, track_running_stats=True)


# -- pooling and shuffles --------------------------------------------------------------

def test_one_dimensional_and_adaptive_poolings(rng):
    x = rng.standard_normal((2, 3, 12))
    compare(lambda m, t: F(m).max_pool1d(t, 3), x)
    compare(lambda m, t: F(m).max_pool1d(t, 3, 2, 1), x)
    compare(lambda m, t: F(m).avg_pool1d(t, 4, 2, 1), x)
    compare(lambda m, t: F(m).avg_pool1d(t, 4, 2, 1, count_include_pad=False), x)
    compare(lambda m, t: F(m).adaptive_avg_pool1d(t, 4), x)
    compare(lambda m, t: F(m).adaptive_max_pool1d(t, 3), x)
    compare(lambda m, t: m.nn.MaxPool1d(2)(t), x[0])  # unbatched
    compare(lambda m, t: m.nn.AvgPool1d(3)(t), x)
    compare(lambda m, t: m.nn.AdaptiveAvgPool1d(6)(t), x)
    y = rng.standard_normal((2, 3, 8, 6))
    compare(lambda m, t: F(m).adaptive_max_pool2d(t, (4, 3)), y)
    compare(lambda m, t: m.nn.AdaptiveMaxPool2d((None, 2))(t), y)
    compare(lambda m, t: m.nn.AdaptiveMaxPool2d(2)(t), y[0])
    with pytest.raises(NotImplementedError, match="divide the input size"):
        OF.adaptive_max_pool2d(of.zeros(1, 1, 5, 5), 2)


def test_pixel_shuffle_and_unshuffle(rng):
    x = rng.standard_normal((2, 8, 3, 5))
    compare(lambda m, t: F(m).pixel_shuffle(t, 2), x)
    compare(lambda m, t: m.nn.PixelShuffle(2)(t), x[0])
    compare(lambda m, t: F(m).pixel_unshuffle(t, 3), rng.standard_normal((1, 2, 6, 9)))
    compare(lambda m, t: m.nn.PixelUnshuffle(2)(m.nn.PixelShuffle(2)(t)), x)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        OF.pixel_shuffle(of.zeros(1, 6, 2, 2), 2)


def test_channel_dropout_zeroes_whole_channels():
    of.manual_seed(3)
    x = of.ones(64, 8, 3, 3)
    y = OF.dropout2d(x, 0.25).numpy()
    per_channel = y.reshape(64, 8, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 1 / 0.75).all(-1))
    dropped = float((per_channel == 0).all(-1).mean())
    assert 0.15 < dropped < 0.35, dropped
    assert OF.dropout2d(x, 0.25, training=False) is x
    y1 = onn.Dropout1d(0.5)(of.ones(32, 4, 5)).numpy()
    assert np.all((y1 == 0).all(-1) | (y1 == 2).all(-1))
    y3 = onn.Dropout3d(0.5)(of.ones(4, 2, 2, 2))  # unbatched (C, D, H, W)
    assert tuple(y3.shape) == (4, 2, 2, 2)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        OF.dropout1d(of.ones(2, 3, 4, 5), 0.5)


def test_channel_dropout_of_other_ranks_as_pytorch():
    """dropout2d/3d of ranks they were not made for warn and mask what
    PyTorch's feature dropout masks: dropout2d the first two dimensions (a
    2-D input, as pytorch/examples mnist_rnn passes, element by element; a
    3-D one per (N, C)), dropout3d the first of an unbatched input."""
    of.manual_seed(5)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = OF.dropout2d(of.ones(64, 32), 0.5).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    assert not ((y == 0).all(1) | (y == 2).all(1)).all()  # not whole rows
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y = OF.dropout2d(of.ones(16, 8, 5), 0.5).numpy()
    assert np.all((y == 0).all(-1) | (y == 2).all(-1))
    assert len({tuple(row) for row in (y[..., 0] == 0)}) > 1  # masks differ by sample
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        y = OF.dropout3d(of.ones(16, 4, 5), 0.5).numpy()
    assert np.all((y == 0).all((1, 2)) | (y == 2).all((1, 2)))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"), \
            pytest.warns(UserWarning, match="Received a 1-D input"):
        OF.dropout2d(of.ones(3), 0.5)


# -- losses and distances --------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pairwise_losses(rng, reduction):
    a, b = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    sign = np.where(rng.standard_normal(6) > 0, 1.0, -1.0)
    compare(lambda m, x, y, t: F(m).margin_ranking_loss(x[:, 0], y[:, 0], t, 0.3,
                                                        reduction=reduction), a, b, sign,
            grad=True)
    compare(lambda m, x, t: F(m).hinge_embedding_loss(x[:, 0], t, 0.7, reduction=reduction),
            a, sign)
    # PyTorch's soft_margin_loss has no gradient for its target
    compare(lambda m, x: F(m).soft_margin_loss(x[:, 0], m.tensor(sign), reduction=reduction),
            a)
    compare(lambda m, x, y, t: F(m).cosine_embedding_loss(x, y, t, 0.1, reduction=reduction),
            a, b, sign)
    compare(lambda m, x, y, z: F(m).triplet_margin_loss(x, y, z, reduction=reduction), a, b,
            rng.standard_normal((6, 5)))
    compare(lambda m, x, y, z: F(m).triplet_margin_loss(x, y, z, 0.5, 1, swap=True,
                                                        reduction=reduction), a, b,
            rng.standard_normal((6, 5)))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(rng, reduction, log_target):
    logp = np.log(np.abs(rng.standard_normal((4, 5))) + 0.1)
    target = rng.random((4, 5)) + 0.05
    if log_target:
        target = np.log(target)
    with pytest.warns(UserWarning, match="batchmean") if reduction == "mean" else _nothing():
        compare(lambda m, x, t: F(m).kl_div(x, t, reduction=reduction, log_target=log_target),
                logp, target)
    compare(lambda m, x, t: m.nn.KLDivLoss(reduction="sum", log_target=log_target)(x, t),
            logp, target)
    if not log_target:
        # xlogy's zeros: no loss where the target is 0 (the gradient of the
        # input only: PyTorch's of the target is NaN there)
        target[0, :2] = 0.0
        compare(lambda m, x: F(m).kl_div(x, m.tensor(target), reduction="sum"), logp)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_loss_modules(rng):
    a, b, c = (rng.standard_normal((5, 4)) for _ in range(3))
    sign = np.where(rng.standard_normal(5) > 0, 1.0, -1.0)
    compare(lambda m, x, y, t: m.nn.MarginRankingLoss(0.2)(x[:, 0], y[:, 0], t), a, b, sign)
    compare(lambda m, x, t: m.nn.HingeEmbeddingLoss(2.0)(x[:, 0], t), a, sign)
    compare(lambda m, x: m.nn.SoftMarginLoss()(x[:, 0], m.tensor(sign)), a)
    compare(lambda m, x, y, t: m.nn.CosineEmbeddingLoss(0.3)(x, y, t), a, b, sign)
    compare(lambda m, x, y, z: m.nn.TripletMarginLoss(margin=2.0, p=3.0)(x, y, z), a, b, c)


def test_distances_and_normalize(rng):
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    compare(lambda m, x: F(m).normalize(x), a)
    compare(lambda m, x: F(m).normalize(x, 1.0, 0), a)
    compare(lambda m, x, y: F(m).cosine_similarity(x, y), a, b)
    compare(lambda m, x, y: F(m).cosine_similarity(x, y[:1], dim=-1), a, b)
    compare(lambda m, x, y: F(m).pairwise_distance(x, y), a, b)
    compare(lambda m, x, y: F(m).pairwise_distance(x, y, 1.0, keepdim=True), a, b)
    compare(lambda m, x, y: m.nn.CosineSimilarity(0)(x, y), a, b)
    compare(lambda m, x, y: m.nn.PairwiseDistance(3.0)(x, y), a, b)
    np.testing.assert_allclose(OF.normalize(of.zeros(2, 3)).numpy(), np.zeros((2, 3)))


# -- index updates, in-place methods, *_like -------------------------------------------

def test_index_add_copy_fill(rng):
    x = rng.standard_normal((5, 3))
    idx = np.array([4, 0, 4, 2])
    src = rng.standard_normal((4, 3))
    compare(lambda m, t, s: m.index_add(t, 0, m.tensor(idx), s, alpha=2.0), x, src)
    compare(lambda m, t, s: t.index_add(1, m.tensor(np.array([2, 2])), s), x,
            rng.standard_normal((5, 2)))
    uniq = np.array([4, 0, 2])
    compare(lambda m, t, s: m.index_copy(t, 0, m.tensor(uniq), s[:3]), x, src)
    compare(lambda m, t: m.index_fill(t, 1, m.tensor(np.array([0, 2])), -1.5), x)
    compare(lambda m, t: t.index_fill(0, m.tensor(np.array([1])), m.tensor(2.5)), x)
    with pytest.raises(RuntimeError, match="same slice shapes"):
        of.index_add(of.zeros(5, 3), 0, of.tensor([0, 1]), of.zeros(3, 3))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        of.index_fill(of.zeros(5, 3), 0, of.tensor([[0]]), 1.0)


def test_inplace_index_and_scatter_methods(rng):
    x = rng.standard_normal((4, 3))
    index = np.array([[0, 1, 2], [3, 0, 1]])
    src = rng.standard_normal((2, 3))
    mask = x > 0
    for name, args in [
        ("index_add_", lambda m: (0, m.tensor(np.array([1, 1])), m.tensor(src))),
        ("index_copy_", lambda m: (0, m.tensor(np.array([3, 1])), m.tensor(src))),
        ("index_fill_", lambda m: (1, m.tensor(np.array([2])), 7.0)),
        ("scatter_", lambda m: (0, m.tensor(index), m.tensor(src))),
        ("scatter_add_", lambda m: (0, m.tensor(index), m.tensor(src))),
        ("masked_fill_", lambda m: (m.tensor(mask), -3.0)),
    ]:
        ours, theirs = of.tensor(x), torch.tensor(x)
        assert getattr(ours, name)(*args(of)) is ours
        getattr(theirs, name)(*args(torch))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)


def test_full_and_empty_like():
    x = of.zeros(2, 3, dtype=of.int64)
    y = of.full_like(x, 4)
    assert y.dtype == of.int64 and tuple(y.shape) == (2, 3) and (y.numpy() == 4).all()
    z = of.full_like(x, 0.5, dtype=of.float32, requires_grad=True)
    assert z.requires_grad and z.dtype == of.float32
    assert tuple(of.empty_like(x).shape) == (2, 3)


# -- initialisers -------------------------------------------------------------------------

def test_initialisers():
    of.manual_seed(0)
    w = of.zeros(6, 4, 2)
    onn.init.orthogonal_(w, gain=2.0)
    flat = w.numpy().reshape(6, 8)
    np.testing.assert_allclose(flat @ flat.T, 4 * np.eye(6), atol=1e-5)
    wide = of.zeros(3, 7)
    onn.init.orthogonal_(wide)
    np.testing.assert_allclose(wide.numpy() @ wide.numpy().T, np.eye(3), atol=1e-5)
    t = of.zeros(20000)
    onn.init.trunc_normal_(t, mean=1.0, std=2.0, a=0.0, b=3.0)
    v = t.numpy()
    assert v.min() >= 0.0 and v.max() <= 3.0
    # the mean of Normal(1, 2) truncated to [0, 3] is 1 + 2 (phi(-1/2) - phi(1)) /
    # (Phi(1) - Phi(-1/2)) = 1.4133
    assert abs(v.mean() - 1.4133) < 0.03, v.mean()
    x = of.zeros(300, 200)
    onn.init.xavier_normal_(x, gain=0.5)
    assert abs(x.numpy().std() - 0.5 * np.sqrt(2 / 500)) < 0.002
    with pytest.raises(ValueError, match="2 or more dimensions"):
        onn.init.orthogonal_(of.zeros(3))


# -- compiled ---------------------------------------------------------------------------

def _net(fw):
    nn = fw.nn
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Mish(), nn.Linear(8, 8),
                         nn.PReLU(8), nn.GLU(), nn.Hardswish(), nn.Linear(4, 3),
                         nn.LogSoftmax(1))


def test_new_modules_in_a_compiled_training_step(rng):
    tm, om = _net(torch), _net(of)
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    batches = [(rng.standard_normal((10, 6)).astype(np.float32), rng.integers(0, 3, 10))
               for _ in range(3)]
    losses = {}
    for fw, model in ((torch, tm), (of, om)):
        opt = fw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        run = of.compile(model) if fw is of else model
        losses[fw.__name__] = []
        for x, y in batches:
            loss = fw.nn.functional.nll_loss(run(fw.tensor(x)), fw.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[fw.__name__].append(loss.item())
    np.testing.assert_allclose(losses["of"], losses["torch"], rtol=1e-5)
    for (name, o), t in zip(om.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


# -- the rest of the PyTorch names docs/pytorch-coverage.md lists -------------------------

def test_small_tensor_members(rng):
    x = rng.standard_normal((2, 3, 4))
    ours, theirs = of.tensor(x), torch.tensor(x)
    np.testing.assert_array_equal(ours.mT.numpy(), theirs.mT.numpy())
    assert ours.contiguous().shape == ours.shape and ours.is_xpu is False
    assert of.is_tensor(ours) and not of.is_tensor(x)
    for name in ("cos_", "sin_"):
        o, t = of.tensor(x), torch.tensor(x)
        assert getattr(o, name)() is o
        getattr(t, name)()
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)
    o = of.tensor(x)
    assert o.fill_(2.5) is o and (o.numpy() == 2.5).all()
    o.uniform_(-1.0, 3.0)
    assert o.numpy().min() >= -1.0 and o.numpy().max() < 3.0 and o.numpy().std() > 0.5
    y = of.tensor(x, requires_grad=True) * 2
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad
    r = of.rand_like(of.zeros(1000, dtype=of.float64))
    assert r.dtype == of.float64 and 0.0 <= r.numpy().min() and r.numpy().max() < 1.0


def test_initialiser_fills():
    t = of.zeros(3, 4)
    assert onn.init.constant_(t, 0.5) is t and (t.numpy() == 0.5).all()
    assert (onn.init.ones_(t).numpy() == 1.0).all()
    onn.init.uniform_(t, -2.0, -1.0)
    assert t.numpy().min() >= -2.0 and t.numpy().max() < -1.0


def test_module_containers_and_bases(rng):
    d = onn.ModuleDict({"a": onn.Linear(2, 3), "b": onn.Tanh()})
    assert list(d.keys()) == ["a", "b"] and isinstance(d["b"], onn.Tanh)
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    assert issubclass(onn.LSTM, onn.RNNBase) and issubclass(onn.GRUCell, onn.RNNCellBase)
    x = rng.standard_normal((2, 12, 5))
    compare(lambda m, t: m.nn.Unflatten(1, (3, 4))(t), x)
    compare(lambda m, t: m.nn.Unflatten(-1, (5, 1))(t), x)
    compare(lambda m, t: m.nn.AdaptiveMaxPool1d(4)(t), rng.standard_normal((2, 3, 8)))
    compare(lambda m, t: m.nn.functional.group_norm(t, 3), x)
    of.manual_seed(5)
    for y in (onn.Dropout2d(0.5)(of.ones(16, 4, 2, 2)), OF.dropout1d(of.ones(16, 4, 3), 0.5),
              OF.dropout3d(of.ones(16, 4, 2, 1, 2), 0.5)):
        per_channel = y.numpy().reshape(16, 4, -1)
        assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))


def test_sampler_base_and_custom_function_forward():
    class Evens(of.utils.data.Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

        def __len__(self):
            return (self.n + 1) // 2

    data = of.utils.data.TensorDataset(of.arange(10))
    loader = of.utils.data.DataLoader(data, batch_size=2, sampler=Evens(10))
    assert [b[0].tolist() for b in loader] == [[0, 2], [4, 6], [8]]

    class Square(of.autograd.Function):  # custom Functions: test_custom_function.py
        @staticmethod
        def forward(ctx, x):
            return x * x

    assert Square.apply(of.full((2,), 3.0)).tolist() == [9.0, 9.0]


def test_autocast_cache_switches():
    assert of.is_autocast_cache_enabled() == torch.is_autocast_cache_enabled()
    of.set_autocast_cache_enabled(False)
    try:
        assert not of.is_autocast_cache_enabled()
    finally:
        of.set_autocast_cache_enabled(True)
    assert of.is_autocast_cache_enabled()
    of.clear_autocast_cache()  # nothing cached: of casts inside the compiled program


def test_cumprod(rng):
    x = rng.standard_normal((3, 7))
    x[1, 2] = 0.0  # a zero's gradient is the product of the others it meets
    x[2, [1, 4]] = 0.0
    compare(lambda m, t: m.cumprod(t, 1), x)
    compare(lambda m, t: t.cumprod(0), x)
    compare(lambda m, t: m.cumprod(t, -1, dtype=m.float64), x[0].astype(np.float32),
            tol=1e-6)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(rng, reduce, include_self):
    x = rng.standard_normal((4, 5))
    index = np.array([[0, 1, 0, 3, 3], [0, 0, 2, 3, 1]])
    compare(lambda m, t, s: m.scatter_reduce(t, 0, m.tensor(index), s, reduce,
                                             include_self=include_self), x,
            rng.standard_normal((2, 5)))
    ints = rng.integers(-9, 9, (4, 5))
    ours = of.tensor(ints).scatter_reduce(0, of.tensor(index), of.tensor(ints[:2] * 3), reduce,
                                          include_self=include_self)
    theirs = torch.tensor(ints).scatter_reduce(0, torch.tensor(index),
                                               torch.tensor(ints[:2] * 3), reduce,
                                               include_self=include_self)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # traced indices (of.compile's inputs): the same values
    compiled = of.compile(lambda t, i, s: of.scatter_reduce(t, 0, i, s, reduce,
                                                          include_self=include_self))
    fx, fs = rng.standard_normal((4, 5)), rng.standard_normal((2, 5))
    np.testing.assert_allclose(
        compiled(of.tensor(fx), of.tensor(index), of.tensor(fs)).numpy(),
        torch.tensor(fx).scatter_reduce(0, torch.tensor(index), torch.tensor(fs), reduce,
                                        include_self=include_self).numpy(), rtol=1e-12)


# -- containers of parameters, padding, identity initialisers --------------------------

def test_parameter_list_and_dict_as_pytorch(rng):
    w = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    for mod in (torch, of):
        class Net(mod.nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = mod.nn.ParameterList([mod.nn.Parameter(mod.tensor(w[0])),
                                                mod.tensor(w[1])])
                self.ws.append(mod.nn.Parameter(mod.tensor(w[2])))
                self.named = mod.nn.ParameterDict({"a": mod.nn.Parameter(mod.tensor(w[0]))})
                self.named["b"] = mod.tensor(w[1])

            def forward(self, x):
                for p in self.ws:
                    x = x @ p.t() @ p
                return (x.sum(0, keepdim=True) * self.named["a"] + self.named["b"]).sum()

        net = Net()
        names = [n for n, _ in net.named_parameters()]
        assert names == ["ws.0", "ws.1", "ws.2", "named.a", "named.b"], (mod, names)
        assert list(net.state_dict()) == names
        assert len(net.ws) == 3 and isinstance(net.ws[1], mod.nn.Parameter)
        assert len(net.ws[1:]) == 2 and net.ws[-1] is net.ws[2]
        assert list(net.named.keys()) == ["a", "b"] and "a" in net.named
        assert isinstance(net.named["b"], mod.nn.Parameter)
        loss = net(mod.ones(4, 3))
        loss.backward()
        assert net.ws[1].grad is not None and net.named["b"].grad is not None
        popped = net.named.pop("b")
        assert tuple(popped.shape) == (2, 3) and list(net.named.keys()) == ["a"]
        assert [n for n, _ in net.named_parameters()][-1] == "named.a"
        with pytest.raises(IndexError):
            net.ws[3]


@pytest.mark.parametrize("batch_first,side", [(False, "right"), (True, "right"),
                                              (True, "left")])
def test_pad_sequence(rng, batch_first, side):
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1, 4)]
    o = of.nn.utils.rnn.pad_sequence([of.tensor(s) for s in seqs], batch_first, -1.0, side)
    t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0,
                                        side)
    np.testing.assert_array_equal(o.numpy(), t.numpy())
    if side == "right":
        back = of.nn.utils.rnn.unpad_sequence(o, of.tensor([3, 1, 4]), batch_first)
        for b, s in zip(back, seqs):
            np.testing.assert_array_equal(b.numpy(), s)


def test_eye_and_dirac_init():
    for shape, groups in [((4, 4, 3), 1), ((4, 2, 3, 3), 2), ((2, 3, 1, 3, 3), 1)]:
        o, t = of.empty(*shape), torch.empty(*shape)
        of.nn.init.dirac_(o, groups)
        torch.nn.init.dirac_(t, groups)
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    o, t = of.empty(3, 5), torch.empty(3, 5)
    of.nn.init.eye_(o)
    torch.nn.init.eye_(t)
    np.testing.assert_array_equal(o.numpy(), t.numpy())


def _pack_both(x, lengths, enforce_sorted):
    return [mod.nn.utils.rnn.pack_padded_sequence(mod.tensor(x), lengths, batch_first=True,
                                                  enforce_sorted=enforce_sorted)
            for mod in (torch, of)]


def test_packed_sequences_as_pytorch(rng):
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    for lengths, enforce_sorted in [([5, 4, 2, 1], True), ([3, 5, 1, 4], False)]:
        t, o = _pack_both(x, lengths, enforce_sorted)
        for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
            a, b = getattr(o, name), getattr(t, name)
            assert (a is None) == (b is None), name
            if b is not None:
                np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        for total in (None, 7):
            (po, lo), (pt, lt) = (mod.nn.utils.rnn.pad_packed_sequence(
                p, batch_first=True, padding_value=-2.0, total_length=total)
                for mod, p in ((of, o), (torch, t)))
            np.testing.assert_array_equal(po.numpy(), pt.numpy())
            np.testing.assert_array_equal(lo.numpy(), lt.numpy())
    seqs = [x[0, :2], x[1], x[2, :4]]
    po = of.nn.utils.rnn.pack_sequence([of.tensor(s) for s in seqs], enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs],
                                          enforce_sorted=False)
    np.testing.assert_array_equal(po.data.numpy(), pt.data.numpy())
    for a, b in zip(of.nn.utils.rnn.unpack_sequence(po), seqs):
        np.testing.assert_array_equal(a.numpy(), b)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        of.nn.utils.rnn.pack_padded_sequence(of.tensor(x), [3, 5, 1, 4], batch_first=True)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_take_packed_sequences(rng, kind):
    """A packed batch through 2 bidirectional layers, with an initial
    state: the padded outputs, the final states (in the batch's order) and
    every gradient, against PyTorch."""
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    lengths = [3, 5, 1, 4]
    h0 = rng.standard_normal((4, 4, 6)).astype(np.float32)
    tm = getattr(torch.nn, kind)(3, 6, num_layers=2, bidirectional=True, batch_first=True)
    om = getattr(of.nn, kind)(3, 6, num_layers=2, bidirectional=True, batch_first=True)
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    results = []
    for mod, m in ((torch, tm), (of, om)):
        xt = mod.tensor(x, requires_grad=True)
        packed = mod.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=True,
                                                       enforce_sorted=False)
        hx = (mod.tensor(h0), mod.tensor(h0 * 0.5)) if kind == "LSTM" else mod.tensor(h0)
        out, h = m(packed, hx)
        assert isinstance(out, mod.nn.utils.rnn.PackedSequence)
        padded, _ = mod.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        states = h if isinstance(h, tuple) else (h,)
        (padded.square().sum() + sum(s.square().sum() for s in states)).backward()
        results.append([padded.detach().numpy()] + [s.detach().numpy() for s in states] +
                       [xt.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
    for k, (a, b) in enumerate(zip(results[1], results[0])):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=str(k))


def _functional(m):
    return m.nn.functional


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_more_losses_as_pytorch(rng, reduction):
    """MultiLabelSoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss: values and
    gradients in float64 against PyTorch."""
    x = rng.standard_normal((4, 5))
    y = (rng.random((4, 5)) > 0.5).astype(np.float64)
    w = rng.random(5)
    counts = rng.integers(0, 5, (4, 5))  # int: PyTorch's target gradient at 0 is NaN
    var = rng.random((4, 5)) + 0.1
    var[0, 0] = 1e-9  # below eps: clamped in value, gradient passed through
    compare(lambda m, a, b: _functional(m).multilabel_soft_margin_loss(
        a, b, reduction=reduction), x, y)
    compare(lambda m, a, b, c: m.nn.MultiLabelSoftMarginLoss(
        weight=c, reduction=reduction)(a, b), x, y, w)
    for log_input in (True, False):
        for full in (False, True):
            compare(lambda m, a, b: m.nn.PoissonNLLLoss(log_input, full, reduction=reduction)(
                a if log_input else a.abs() + 0.1, b.double()), x, counts)
    compare(lambda m, a, b: _functional(m).poisson_nll_loss(a, b.double(), reduction=reduction),
            x, counts)
    for full in (False, True):
        compare(lambda m, a, b, v: m.nn.GaussianNLLLoss(full=full, reduction=reduction)(
            a, b, v), x, y, var)
    compare(lambda m, a, b, v: _functional(m).gaussian_nll_loss(a, b, v[:, 0],
                                                                reduction=reduction),
            x, y, var)
    with pytest.raises(ValueError, match="negative"):
        of.nn.functional.gaussian_nll_loss(of.ones(2), of.ones(2), -of.ones(2))


def test_more_layers_as_pytorch(rng):
    x = rng.standard_normal((2, 6, 4, 3))
    compare(lambda m, a: m.nn.Softmax2d()(a), x)
    compare(lambda m, a: m.nn.ChannelShuffle(3)(a), x)
    compare(lambda m, a: _functional(m).channel_shuffle(a, 2), x)
    for size in (1, 2, 3, 5):
        compare(lambda m, a: m.nn.LocalResponseNorm(size, alpha=0.1, beta=0.75, k=2.0)(a), x)
        compare(lambda m, a: _functional(m).local_response_norm(a, size), x[:, :, :, 0])
    a1, a2 = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 5))
    w, b = rng.standard_normal((6, 4, 5)), rng.standard_normal(6)
    compare(lambda m, p, q, r, s: _functional(m).bilinear(p, q, r, s), a1, a2, w, b)
    layer = of.nn.Bilinear(4, 5, 6)
    assert tuple(layer.weight.shape) == (6, 4, 5) and tuple(layer.bias.shape) == (6,)
    assert float(layer.weight.abs().max()) <= 0.5  # uniform(+-1/sqrt(4))
    with pytest.raises(ValueError, match="3D or 4D"):
        of.nn.Softmax2d()(of.ones(2, 2))
    with pytest.raises(RuntimeError, match="divisible by groups"):
        of.nn.ChannelShuffle(4)(of.ones(1, 6, 2))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode,padding_mode", [("bilinear", "zeros"), ("bilinear", "border"),
                                               ("nearest", "zeros"), ("nearest", "border")])
def test_affine_grid_and_grid_sample(rng, align_corners, mode, padding_mode):
    """A spatial transformer's sampling (PyTorch's STN tutorial): affine_grid
    of a rotation-and-shift, grid_sample of the input there; values and the
    gradients of the input and (bilinear) the affine matrices, in float64."""
    x = rng.standard_normal((2, 3, 5, 6))
    theta = rng.standard_normal((2, 2, 3)) * 0.7
    results = []
    for mod in (torch, of):
        xt, th = mod.tensor(x, requires_grad=True), mod.tensor(theta, requires_grad=True)
        grid = mod.nn.functional.affine_grid(th, (2, 3, 4, 7), align_corners=align_corners)
        y = mod.nn.functional.grid_sample(xt, grid, mode=mode, padding_mode=padding_mode,
                                          align_corners=align_corners)
        w = np.random.default_rng(1).standard_normal(tuple(y.shape))
        (y * mod.tensor(w)).sum().backward()
        results.append([grid.detach().numpy(), y.detach().numpy(), xt.grad.numpy()] +
                       ([th.grad.numpy()] if mode == "bilinear" else []))
    for k, (a, b) in enumerate(zip(results[1], results[0])):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9, err_msg=str(k))
    with pytest.raises(NotImplementedError, match="padding_mode='reflection'"):
        of.nn.functional.grid_sample(of.ones(1, 1, 2, 2), of.zeros(1, 1, 1, 2),
                                     padding_mode="reflection")


def test_rrelu_as_pytorch(rng):
    x = rng.standard_normal((50, 40)).astype(np.float32)
    for lower, upper in [(1 / 8, 1 / 3), (0.1, 0.2)]:
        o = of.nn.functional.rrelu(of.tensor(x), lower, upper)  # training=False: the mean slope
        t = torch.nn.functional.rrelu(torch.tensor(x), lower, upper)
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
        m = of.nn.RReLU(lower, upper)
        y = m(of.tensor(x)).numpy()
        negative = x < 0
        slopes = y[negative] / x[negative]
        assert slopes.min() >= lower - 1e-6 and slopes.max() <= upper + 1e-6
        assert slopes.std() > 0.2 * (upper - lower) / np.sqrt(12)  # drawn per element
        np.testing.assert_array_equal(y[~negative], x[~negative])
        m.eval()
        np.testing.assert_allclose(m(of.tensor(x)).numpy(), t.numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="compiled function"):
        of.compile(lambda v: of.nn.functional.rrelu(v, training=True))(of.tensor(x))


def test_gumbel_softmax():
    """Soft samples sum to 1; hard ones are one-hot at the soft sample's
    largest element with the soft sample's gradient (straight-through): the
    same noise (same seed) gives the same gradient."""
    logits = np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32)
    w = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    grads, samples = [], []
    for hard in (False, True):
        of.manual_seed(11)
        x = of.tensor(logits, requires_grad=True)
        y = of.nn.functional.gumbel_softmax(x, tau=0.5, hard=hard)
        (y * of.tensor(w)).sum().backward()
        grads.append(x.grad.numpy())
        samples.append(y.detach().numpy())
    soft, hard = samples
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-5)
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    np.testing.assert_array_equal(hard.argmax(-1), soft.argmax(-1))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    t = torch.nn.functional.gumbel_softmax(torch.tensor(logits), hard=True)
    assert tuple(t.shape) == hard.shape
