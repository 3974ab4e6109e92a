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
    if torch_value is None:  # an input the function does not use: no gradient
        assert of_value is None
        return
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


# -- F.pad and the padding modules ----------------------------------------------

PAD_CASES = [
    ((2, 3, 5), (2, 1), "constant", 1.5),
    ((2, 3, 5, 4), (1, -1, 2, 0), "constant", None),
    ((2, 3, 4), (1, 1, 1, 1, -1, 2), "constant", None),
    ((2, 3, 5), (3, 4), "reflect", None),
    ((2, 3, 5, 4), (-1, 3, 2, -2), "reflect", None),
    ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 0), "reflect", None),
    ((2, 5), (4, -1), "replicate", None),
    ((2, 3, 5, 4), (2, 3, 1, 0), "replicate", None),
    ((2, 3, 3, 4), (3, -1, 1, 2), "circular", None),
    ((2, 2, 3, 4, 2), (1, 1, 0, 2, 3, 3), "circular", None),
]


@pytest.mark.parametrize("case", range(len(PAD_CASES)))
def test_pad(rng, case):
    shape, pads, mode, value = PAD_CASES[case]
    x = rng.standard_normal(shape)
    kwargs = {} if value is None else {"value": value}

    def fn(fw):
        return lambda x: fw.nn.functional.pad(x, pads, mode, **kwargs)
    compare(fn(of), fn(torch), [x], compiled=case % 3 == 0)


@pytest.mark.parametrize("name,args,shape", [
    ("ZeroPad1d", (2,), (2, 3, 4)), ("ZeroPad2d", ((1, 0, 2, 3),), (1, 2, 3, 4)),
    ("ZeroPad3d", (1,), (1, 2, 2, 3, 2)),
    ("ConstantPad1d", ((1, 2), 3.5), (3, 4)), ("ConstantPad2d", (1, -1.0), (2, 3, 4)),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 2.0), (1, 1, 2, 2, 3)),
    ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 0, 2),), (1, 2, 3, 4)),
    ("ReflectionPad3d", (1,), (1, 2, 2, 3, 2)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 4)), ("ReplicationPad2d", (2,), (2, 3, 4)),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),), (1, 1, 2, 3, 2)),
    ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 2, 2, 0),), (1, 2, 3, 4)),
    ("CircularPad3d", (1,), (1, 2, 2, 3, 2)),
])
def test_pad_modules(rng, name, args, shape):
    modules = {fw: getattr(fw.nn, name)(*args) for fw in (torch, of)}
    assert repr(modules[of]) == repr(modules[torch])
    assert modules[of].padding == modules[torch].padding
    compare(lambda x: modules[of](x), lambda x: modules[torch](x),
            [rng.standard_normal(shape)])


def test_pad_errors():
    x = of.zeros(1, 5)
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x, (5, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (6, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D"):
        F.pad(of.zeros(5), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1, 1, 1))
    with pytest.raises(RuntimeError, match="less than or equal to two times"):
        F.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)


# -- F.multi_head_attention_forward -----------------------------------------------

@pytest.mark.parametrize("case", ["self", "separate", "bias_kv_zero", "static", "unbatched"])
def test_multi_head_attention_forward(rng, case):
    """The functional form nn.MultiheadAttention runs, called directly with
    PyTorch's arguments: values and the gradients of inputs and weights."""
    L, S, N, E, H = 3, 4, 2, 8, 2
    names = ["q", "k", "v", "in_w", "in_b", "out_w", "out_b"]
    arrays = [rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E)),
              rng.standard_normal((S, N, E)), rng.standard_normal((3 * E, E)) * 0.3,
              rng.standard_normal(3 * E) * 0.1, rng.standard_normal((E, E)) * 0.3,
              rng.standard_normal(E) * 0.1]
    kwargs = dict(need_weights=True, average_attn_weights=case != "separate")
    extra = []
    if case == "separate":
        names += ["q_w", "k_w", "v_w"]
        extra = [rng.standard_normal((E, E)) * 0.3, rng.standard_normal((E, 5)) * 0.3,
                 rng.standard_normal((E, 6)) * 0.3]
        arrays[1], arrays[2] = rng.standard_normal((S, N, 5)), rng.standard_normal((S, N, 6))
        kwargs["need_weights"] = False
    elif case == "bias_kv_zero":
        names += ["bias_k", "bias_v"]
        extra = [rng.standard_normal((1, 1, E)), rng.standard_normal((1, 1, E))]
    elif case == "static":
        names += ["static_k", "static_v"]
        extra = [rng.standard_normal((N * H, 5, E // H)), rng.standard_normal((N * H, 5, E // H))]
    elif case == "unbatched":
        arrays[:3] = [a[:, 0] for a in arrays[:3]]
    arrays += extra
    mask = np.triu(np.ones((L, S), bool), 2)
    padding = np.zeros((N, S), bool)
    padding[1, 0] = True

    def fn(fw):
        def f(q, k, v, in_w, in_b, out_w, out_b, *rest):
            more = dict(zip(names[7:], rest))
            self_attention = case == "self"
            k = q if self_attention else k
            v = q if self_attention else v
            if case == "separate":
                more["use_separate_proj_weight"] = True
                more["q_proj_weight"], more["k_proj_weight"], more["v_proj_weight"] = (
                    more.pop("q_w"), more.pop("k_w"), more.pop("v_w"))
            m = fw.tensor(mask[:, :L] if self_attention else mask)
            if case == "static":
                m = None
            kp = None if case in ("unbatched", "static") else \
                fw.tensor(padding[:, :L] if self_attention else padding)
            out, w = fw.nn.functional.multi_head_attention_forward(
                q, k, v, E, H, None if case == "separate" else in_w, in_b,
                more.pop("bias_k", None), more.pop("bias_v", None), case == "bias_kv_zero",
                0.0, out_w, out_b, key_padding_mask=kp, attn_mask=m, **kwargs, **more)
            return out if w is None else out + w.sum() * 0.5
        return f
    grads = [i for i in range(len(arrays)) if not (case == "separate" and i == 3)]
    compare(fn(of), fn(torch), arrays, grads=grads, rtol=1e-9, compiled=case == "bias_kv_zero")
