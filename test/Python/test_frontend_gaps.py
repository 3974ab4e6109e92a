"""Frontend gaps of issue 26 closed by composing existing of ops, each
against PyTorch (float64): values, and the gradients loss.backward() gives,
eagerly and under of.compile.

- F.cross_entropy / nn.CrossEntropyLoss with weight, label_smoothing and
  class-probability targets (PyTorch's cross_entropy_loss_label_smoothing
  and cross_entropy_loss_prob_target);
- F.pad (constant, reflect, replicate, circular; negative pads) and the
  padding modules;
- F.multi_head_attention_forward;
- of.sin / of.cos as a constant fold (eager, no gradient), and
  pytorch/examples' word_language_model Transformer variant;
- tril/triu, roll, tile, bmm, einsum.
"""

import numpy as np
import pytest

import of
import of.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RTOL = 1e-10


def close(of_value, torch_value, rtol=RTOL):
    t = torch_value.detach().numpy() if hasattr(torch_value, "detach") else \
        np.asarray(torch_value)
    o = of_value.numpy() if hasattr(of_value, "numpy") else np.asarray(of_value)
    assert o.shape == t.shape, (o.shape, t.shape)
    scale = max(np.abs(t).max(initial=0.0), 1e-30)
    assert np.abs(o - t).max(initial=0.0) <= rtol * scale, (o, t)


def compare(fn_of, fn_torch, arrays, grads=None, compiled=False, rtol=RTOL, consts=()):
    """fn(*tensors, *consts) in both frameworks from the same float64
    arrays; the value and, for the arrays listed in `grads` (all by
    default), the gradients of (value * r).sum() with a fixed random r."""
    grads = range(len(arrays)) if grads is None else grads
    results = {}
    for fw in (torch, of):
        xs = [fw.tensor(a, requires_grad=(i in grads)) if a.dtype.kind == "f"
              else fw.tensor(a) for i, a in enumerate(arrays)]
        fn = fn_torch if fw is torch else fn_of
        if fw is of and compiled:
            fn = of.compile(fn)
        y = fn(*xs, *consts)
        r = np.linspace(0.5, 1.5, max(int(np.prod(tuple(y.shape))), 1)).reshape(tuple(y.shape))
        (y * fw.tensor(r)).sum().backward()
        results[fw] = [y] + [xs[i].grad for i in grads]
    for o, t in zip(results[of], results[torch]):
        close(o, t, rtol)


# -- cross_entropy ----------------------------------------------------------------

CE_CASES = [
    # (input shape, weight, ignore, label_smoothing, reduction)
    ((6, 5), False, None, 0.1, "mean"),
    ((6, 5), True, None, 0.0, "mean"),
    ((6, 5), True, None, 0.2, "mean"),
    ((6, 5), True, 2, 0.3, "mean"),
    ((6, 5), True, -100, 0.3, "sum"),
    ((6, 5), False, 1, 0.25, "none"),
    ((4, 5, 3), True, 0, 0.1, "mean"),
    ((4, 5, 3, 2), False, None, 0.4, "sum"),
    ((5,), True, None, 0.15, "none"),
]


@pytest.mark.parametrize("case", range(len(CE_CASES)))
def test_cross_entropy_weight_label_smoothing(rng, case):
    shape, weighted, ignore, eps, reduction = CE_CASES[case]
    x = rng.standard_normal(shape)
    classes = shape[0] if len(shape) == 1 else shape[1]
    t = rng.integers(0, classes, (shape[0],) + shape[2:]) if len(shape) > 1 else \
        np.array(rng.integers(0, classes))
    kwargs = dict(label_smoothing=eps, reduction=reduction)
    if ignore is not None:
        kwargs["ignore_index"] = ignore
        if t.ndim:
            t.flat[::3] = ignore  # some targets ignored (-100 too: PyTorch masks it)
    arrays = [x, t]
    if weighted:
        arrays.append(rng.random(classes) + 0.5)

    def fn(fw):
        def f(x, t, w=None):
            return fw.nn.functional.cross_entropy(x, t, weight=w, **kwargs)
        return f
    compare(fn(of), fn(torch), arrays, grads=[0])  # PyTorch: no gradient of weight


def test_cross_entropy_probabilities(rng):
    x = rng.standard_normal((4, 5, 3))
    p = rng.random((4, 5, 3))
    p /= p.sum(1, keepdims=True)
    w = rng.random(5) + 0.5
    for kwargs in (dict(), dict(label_smoothing=0.2, reduction="sum"),
                   dict(reduction="none")):
        def fn(fw):
            return lambda x, p, w: fw.nn.functional.cross_entropy(x, p, weight=w, **kwargs)
        compare(fn(of), fn(torch), [x, p, w], grads=[0, 1])


def test_cross_entropy_loss_module_compiled(rng):
    """nn.CrossEntropyLoss(weight, label_smoothing) under of.compile: values
    and gradients against PyTorch's."""
    x = rng.standard_normal((8, 6))
    t = rng.integers(0, 6, 8)
    t[[1, 5]] = 3
    w = rng.random(6) + 0.5
    crit = {fw: fw.nn.CrossEntropyLoss(weight=fw.tensor(w), ignore_index=3,
                                        label_smoothing=0.15) for fw in (torch, of)}
    assert "weight" in crit[of].state_dict()
    compare(lambda x, t: crit[of](x, t), lambda x, t: crit[torch](x, t), [x, t], grads=[0],
            compiled=True)


def test_cross_entropy_errors(rng):
    x = of.tensor(rng.standard_normal((3, 4)))
    t = of.tensor(np.array([0, 1, 2]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        F.cross_entropy(x, t, weight=of.tensor(np.ones(3)), label_smoothing=0.1)
