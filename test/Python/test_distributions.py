"""of.distributions against torch.distributions: Categorical's normalised
parameters, log_prob, entropy and their gradients, its shapes, samples
(frequencies, shapes, dtype), validation errors and repr; float64 in both,
eagerly and (what needs no values) under of.compile."""

import re

import numpy as np
import pytest

import of

torch = pytest.importorskip("torch")


def close(o, t, tol=1e-12):
    o, t = o.detach().numpy(), t.detach().numpy()
    assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, t.shape, o.dtype, t.dtype)
    np.testing.assert_allclose(o, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("param", ["probs", "logits"])
@pytest.mark.parametrize("shape", [(4,), (2, 3, 5)], ids=str)
def test_categorical(rng, param, shape):
    raw = rng.random(shape) + 0.1 if param == "probs" else rng.standard_normal(shape) * 3
    value = rng.integers(0, shape[-1], shape[:-1])
    results = {}
    for fw in (torch, of):
        x = fw.tensor(raw, requires_grad=True)
        d = fw.distributions.Categorical(**{param: x})
        lp = d.log_prob(fw.tensor(value))
        h = d.entropy()
        (lp.sum() * 2 + h.sum()).backward()
        results[fw] = (d, lp, h, x.grad)
    (od, olp, oh, og), (td, tlp, th, tg) = results[of], results[torch]
    for name in ("probs", "logits"):
        close(getattr(od, name), getattr(td, name))
    close(olp, tlp)
    close(oh, th)
    close(og, tg)
    assert tuple(od.batch_shape) == tuple(td.batch_shape)
    assert tuple(od.event_shape) == tuple(td.event_shape) == ()
    assert tuple(od.param_shape) == tuple(td.param_shape)
    close(od.mode, td.mode)
    close(od.enumerate_support(), td.enumerate_support())
    close(od.enumerate_support(expand=False), td.enumerate_support(expand=False))
    assert np.isnan(od.mean.numpy()).all() and tuple(od.variance.shape) == tuple(td.variance.shape)
    assert repr(od) == repr(td)
    # log_prob of values broadcast against the batch
    close(od.log_prob(of.tensor(value[..., :1] if value.ndim else value)),
          td.log_prob(torch.tensor(value[..., :1] if value.ndim else value)))


def test_categorical_sample(rng):
    """Samples: shape sample_shape + batch_shape, int64, the frequencies of
    the probabilities (a chi-square bound), reproducible by of.manual_seed."""
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    d = of.distributions.Categorical(of.tensor(probs))
    of.manual_seed(1)
    s = d.sample((4000,))
    assert tuple(s.shape) == (4000, 2) and s.dtype is of.int64
    counts = np.stack([np.bincount(s.numpy()[:, i], minlength=3) for i in range(2)])
    assert counts[1, 1] == 0
    expected = probs * 4000
    chi2 = ((counts - expected) ** 2 / np.where(expected > 0, expected, 1)).sum()
    assert chi2 < 25  # 4 degrees of freedom: p < 1e-4
    assert tuple(d.sample().shape) == (2,)
    of.manual_seed(1)
    assert (d.sample((4000,)).numpy() == s.numpy()).all()
    assert not d.sample().requires_grad


def test_categorical_in_compiled_function(rng):
    logits = rng.standard_normal((3, 4))
    value = rng.integers(0, 4, 3)

    def f(fw):
        def run(x, v):
            d = fw.distributions.Categorical(logits=x)
            return d.log_prob(v) + d.entropy()
        return run
    got = of.compile(f(of))(of.tensor(logits), of.tensor(value))
    close(got, f(torch)(torch.tensor(logits), torch.tensor(value)))


def test_categorical_errors():
    C = of.distributions.Categorical
    with pytest.raises(ValueError, match=re.escape(
            "Either `probs` or `logits` must be specified, but not both.")):
        C()
    with pytest.raises(ValueError, match=re.escape(
            "Either `probs` or `logits` must be specified, but not both.")):
        C(of.ones(2), of.ones(2))
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional"):
        C(of.tensor(1.0))
    with pytest.raises(ValueError, match=re.escape(
            "Expected parameter probs (Tensor of shape (2,)) of distribution "
            "Categorical(probs: torch.Size([2])) to satisfy the constraint Simplex(), but "
            "found invalid values:")):
        C(of.tensor([0.5, -0.1]))
    C(of.tensor([0.5, -0.1]), validate_args=False)  # not checked
    d = C(of.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match=re.escape(
            "Expected value argument (Tensor of shape ()) to be within the support "
            "(IntegerInterval(lower_bound=0, upper_bound=1)) of the distribution "
            "Categorical(probs: torch.Size([2])), but found invalid values:")):
        d.log_prob(of.tensor(3))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        d.log_prob(1)
    with pytest.raises(ValueError, match="Value is not broadcastable"):
        C(of.ones(3, 2)).log_prob(of.zeros(4, dtype=of.int64))
    with pytest.raises(NotImplementedError, match="torch.multinomial in a compiled function"):
        of.compile(lambda x: C(logits=x).sample())(of.zeros(2))
