"""Conv3d, ConvTranspose3d, Unfold/Fold, AlphaDropout/FeatureAlphaDropout,
bernoulli and CTCLoss against PyTorch: values and eager gradients in float64 over
strides, dilations, paddings and groups, modules from the same weights, a
compiled training step, the random ones by their distribution, and
PyTorch's errors."""

import numpy as np
import pytest

import of
import of.nn as onn
import of.nn.functional as OF

from test_torch_functions import compare

torch = pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(31)


def F(fw):
    return fw.nn.functional


@pytest.mark.parametrize("shape,weight,kwargs", [
    ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), {}),
    ((2, 4, 7, 6, 5), (6, 2, 2, 3, 1), {"stride": (2, 1, 2), "padding": (1, 0, 2),
                                        "groups": 2}),
    ((1, 2, 9, 8, 8), (3, 2, 3, 2, 3), {"dilation": (2, 1, 2), "padding": 1, "stride": 3}),
    ((3, 5, 6, 6), (2, 3, 2, 2, 2), {"padding": "same"}),  # unbatched
    ((1, 2, 4, 5, 6), (2, 2, 3, 3, 3), {"padding": "valid"}),
])
def test_conv3d(rng, shape, weight, kwargs):
    x, w, b = rng.standard_normal(shape), rng.standard_normal(weight), \
        rng.standard_normal(weight[0])
    compare(lambda m, t, k, c: F(m).conv3d(t, k, c, **kwargs), x, w, b, tol=1e-12)
    compare(lambda m, t, k: F(m).conv3d(t, k, **kwargs), x, w, tol=1e-12)


@pytest.mark.parametrize("shape,weight,kwargs", [
    ((2, 3, 3, 4, 5), (3, 2, 3, 3, 3), {}),
    ((1, 4, 3, 3, 4), (4, 3, 2, 3, 2), {"stride": (2, 1, 3), "padding": (1, 0, 1),
                                        "output_padding": (1, 0, 2), "groups": 2}),
    ((2, 2, 4, 3, 3), (2, 2, 2, 2, 3), {"dilation": 2, "stride": 2, "output_padding": 1}),
    ((2, 3, 3, 3), (2, 3, 2, 2, 2), {"stride": 2}),  # unbatched
])
def test_conv_transpose3d(rng, shape, weight, kwargs):
    x, w = rng.standard_normal(shape), rng.standard_normal(weight)
    b = rng.standard_normal(weight[1] * kwargs.get("groups", 1))
    compare(lambda m, t, k, c: F(m).conv_transpose3d(t, k, c, **kwargs), x, w, b, tol=1e-12)


def test_conv3d_modules_match_pytorch(rng):
    for tm, om, shape in (
            (torch.nn.Conv3d(4, 6, 3, stride=2, padding=1, groups=2),
             onn.Conv3d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 7, 7, 7)),
            (torch.nn.ConvTranspose3d(4, 2, (2, 3, 3), stride=2, padding=(0, 1, 1)),
             onn.ConvTranspose3d(4, 2, (2, 3, 3), stride=2, padding=(0, 1, 1)),
             (2, 4, 3, 4, 4))):
        assert repr(om) == repr(tm)
        assert [tuple(p.shape) for p in om.parameters()] == \
            [tuple(p.shape) for p in tm.parameters()]
        om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(om(of.tensor(x)).numpy(),
                                   tm(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    out = onn.ConvTranspose3d(2, 2, 3, stride=2)(of.ones(1, 2, 3, 3, 3), output_size=(8, 7, 8))
    assert tuple(out.shape) == (1, 2, 8, 7, 8)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        OF.conv3d(of.ones(1, 1, 2, 5, 5), of.ones(1, 1, 3, 3, 3))
    with pytest.raises(RuntimeError, match="expected a 5-D weight"):
        OF.conv3d(of.ones(1, 1, 4, 5, 5), of.ones(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3"):
        OF.conv3d(of.ones(1, 3, 4, 5, 5), of.ones(2, 2, 1, 1, 1), groups=2)


@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 6, 7), {"kernel_size": 3}),
    ((1, 2, 9, 8), {"kernel_size": (2, 3), "stride": (2, 1), "padding": (1, 2),
                    "dilation": (2, 1)}),
    ((3, 5, 5), {"kernel_size": 2, "stride": 2}),  # unbatched
])
def test_unfold_and_fold(rng, shape, kwargs):
    x = rng.standard_normal(shape)
    compare(lambda m, t: F(m).unfold(t, **kwargs), x, tol=1e-12)
    cols = torch.nn.functional.unfold(torch.tensor(x), **kwargs).numpy()
    size = shape[-2:]
    # fold of unfold: each element times the number of windows covering it
    compare(lambda m, t: F(m).fold(t, size, **kwargs), rng.standard_normal(cols.shape),
            tol=1e-12)
    tm, om = torch.nn.Fold(size, **kwargs), onn.Fold(size, **kwargs)
    assert repr(om) == repr(tm)
    assert repr(onn.Unfold(**kwargs)) == repr(torch.nn.Unfold(**kwargs))


def test_unfold_fold_errors():
    with pytest.raises(RuntimeError, match="must be at least one"):
        OF.unfold(of.ones(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="Only 3D or 4D input"):
        OF.unfold(of.ones(2, 2), 1)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        OF.fold(of.ones(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="match the calculated number of sliding blocks"):
        OF.fold(of.ones(1, 4, 5), (3, 3), 2)


def test_unfold_in_a_compiled_training_step(rng):
    """A patch embedding written with Unfold (as some vision transformers
    do), trained under of.compile against PyTorch from the same weights."""
    def net(fw):
        fw.manual_seed(0)
        return fw.nn.Sequential(fw.nn.Unfold(4, stride=4), fw.nn.Flatten(),
                                fw.nn.Linear(3 * 16 * 4, 5))
    tm, om = net(torch), net(of)
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    batches = [(rng.standard_normal((6, 3, 8, 8)).astype(np.float32), rng.integers(0, 5, 6))
               for _ in range(3)]
    losses = {}
    for fw, model in ((torch, tm), (of, om)):
        opt = fw.optim.SGD(model.parameters(), lr=0.1)
        run = of.compile(model) if fw is of else model
        losses[fw.__name__] = []
        for x, y in batches:
            loss = fw.nn.functional.cross_entropy(run(fw.tensor(x)), fw.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[fw.__name__].append(loss.item())
    np.testing.assert_allclose(losses["of"], losses["torch"], rtol=1e-5)


def test_alpha_dropout_keeps_the_moments():
    of.manual_seed(5)
    x = of.randn(400, 500)
    y = OF.alpha_dropout(x, 0.2, training=True).numpy()
    # a standard normal input keeps zero mean and unit variance (the point of
    # alpha dropout); the dropped elements all hold one value
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02, (y.mean(), y.std())
    a = 1 / np.sqrt((1.7580993408473766 ** 2 * 0.2 + 1) * 0.8)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.2
    frac = float(np.isclose(y, dropped, atol=1e-6).mean())
    assert 0.18 < frac < 0.22, frac
    assert OF.alpha_dropout(x, 0.2) is x  # training=False by default, as PyTorch's
    m = onn.AlphaDropout(0.3)
    m.eval()
    assert m(x) is x
    f = OF.feature_alpha_dropout(of.randn(64, 16, 5), 0.5, training=True).numpy()
    dropped = -1.7580993408473766 / np.sqrt((1.7580993408473766 ** 2 * 0.5 + 1) * 0.5) * 0.5
    whole = np.isclose(f, dropped, atol=1e-6).all(-1)
    assert 0.4 < whole.mean() < 0.6
    assert not np.isclose(f, dropped, atol=1e-6)[~whole].any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        onn.AlphaDropout(1.5)


def test_bernoulli():
    of.manual_seed(1)
    p = np.linspace(0, 1, 11).reshape(11, 1).repeat(2000, 1).astype(np.float32)
    draws = of.bernoulli(of.tensor(p))
    assert draws.dtype == of.float32
    d = draws.numpy()
    assert set(np.unique(d)) <= {0.0, 1.0}
    np.testing.assert_allclose(d.mean(1), p[:, 0], atol=0.04)
    assert d[0].sum() == 0 and d[-1].sum() == 2000
    e = of.zeros(100, 100).bernoulli(0.3).numpy()
    assert abs(e.mean() - 0.3) < 0.03 and set(np.unique(e)) == {0.0, 1.0}
    t = of.empty(50, 50).bernoulli_(0.7)
    assert abs(t.numpy().mean() - 0.7) < 0.05
    t.bernoulli_(of.tensor([0.0, 1.0] * 25))
    assert (t.numpy()[:, 0::2] == 0).all() and (t.numpy()[:, 1::2] == 1).all()
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        of.bernoulli(of.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        of.bernoulli(of.tensor([1, 0]))

    def masked(x):  # a number p in a compiled function: drawn every step
        return x * of.bernoulli(x, 0.5)
    run = of.compile(masked)
    a, b = run(of.ones(4000)).numpy(), run(of.ones(4000)).numpy()
    assert set(np.unique(a)) == {0.0, 1.0} and 0.45 < a.mean() < 0.55
    assert (a != b).any()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss(rng, reduction):
    """Values and gradients against PyTorch in float64: padded targets with
    repeated labels (the skip over a blank forbidden), an empty target,
    shorter inputs, and one impossible alignment (its loss inf, 0 with
    zero_infinity, as PyTorch's)."""
    steps, n, classes = 12, 4, 5
    logits = rng.standard_normal((steps, n, classes))
    targets = np.array([[1, 2, 2, 3], [4, 4, 4, 0], [3, 0, 0, 0], [1, 2, 3, 4]])
    target_lengths = np.array([4, 3, 0, 4])
    input_lengths = np.array([12, 9, 5, 12])

    def fn(m, x, tg, il, tl):
        return F(m).ctc_loss(x.log_softmax(2), tg, il, tl, reduction=reduction)
    compare(fn, logits, targets, input_lengths, target_lengths, tol=1e-10)
    # concatenated targets, eagerly
    flat = np.concatenate([t[:k] for t, k in zip(targets, target_lengths)])
    ours = OF.ctc_loss(of.tensor(logits).log_softmax(2), of.tensor(flat), input_lengths,
                       target_lengths, blank=0, reduction=reduction)
    theirs = torch.nn.functional.ctc_loss(torch.tensor(logits).log_softmax(2),
                                          torch.tensor(flat), tuple(input_lengths),
                                          tuple(target_lengths), blank=0, reduction=reduction)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    # one unbatched sequence, its lengths 0-d tensors (as PyTorch takes them)
    ours = OF.ctc_loss(of.tensor(logits[:, 0]).log_softmax(1), of.tensor(targets[0]),
                       of.tensor(12), of.tensor(4), reduction=reduction)
    theirs = torch.nn.functional.ctc_loss(torch.tensor(logits[:, 0]).log_softmax(1),
                                          torch.tensor(targets[0]), torch.tensor(12),
                                          torch.tensor(4), reduction=reduction)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    # an alignment that cannot fit: 3 repeated labels need 5 steps
    short = np.array([4, 4, 4, 4])
    for zero in (False, True):
        ours = OF.ctc_loss(of.tensor(logits).log_softmax(2), of.tensor(targets), short,
                           target_lengths, reduction="none", zero_infinity=zero).numpy()
        theirs = torch.nn.functional.ctc_loss(
            torch.tensor(logits).log_softmax(2), torch.tensor(targets), torch.tensor(short),
            torch.tensor(target_lengths), reduction="none", zero_infinity=zero).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_ctc_loss_module_in_a_compiled_training_step(rng):
    """A small CTC model (a GRU over features, a linear head) trained under
    of.compile against PyTorch from the same weights."""
    def net(fw):
        fw.manual_seed(0)

        class Net(fw.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = fw.nn.GRU(6, 8)
                self.head = fw.nn.Linear(8, 5)

            def forward(self, x):
                return self.head(self.rnn(x)[0]).log_softmax(2)
        return Net()
    tm, om = net(torch), net(of)
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    targets = rng.integers(1, 5, (3, 4))
    tl, il = np.array([4, 2, 3]), np.array([10, 10, 8])
    batches = [rng.standard_normal((10, 3, 6)).astype(np.float32) for _ in range(3)]
    losses = {}
    for fw, model in ((torch, tm), (of, om)):
        opt = fw.optim.SGD(model.parameters(), lr=0.1)
        run = of.compile(model) if fw is of else model
        crit = fw.nn.CTCLoss()
        losses[fw.__name__] = []
        for x in batches:
            loss = crit(run(fw.tensor(x)), fw.tensor(targets), fw.tensor(il), fw.tensor(tl))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[fw.__name__].append(loss.item())
    np.testing.assert_allclose(losses["of"], losses["torch"], rtol=1e-4)
