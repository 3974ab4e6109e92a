"""The rule of docs/python.md: every PyTorch name the frontend exposes does
what PyTorch does, with PyTorch's errors for bad arguments, or raises
NotImplementedError naming the API; nothing is accepted and ignored. Each
case here was once accepted and ignored, and is checked against PyTorch."""

import math

import numpy as np
import pytest

import of
import of.nn as onn

torch = pytest.importorskip("torch")


def pair_mlp(seed):
    """The same MLP in of and in PyTorch, from PyTorch's initial weights."""
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    o = onn.Sequential(onn.Linear(6, 8), onn.ReLU(), onn.Linear(8, 3))
    o.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    return o, t


def test_data_reads_and_writes_the_value(rng):
    o, t = pair_mlp(int(rng.integers(2 ** 31)))
    new = rng.standard_normal((8, 6)).astype(np.float32)
    # DLRM initialises its layers by assigning .data
    o[0].weight.data = of.tensor(new)
    t[0].weight.data = torch.from_numpy(new.copy())
    np.testing.assert_array_equal(o[0].weight.numpy(), new)
    np.testing.assert_array_equal(o[0].weight.data.numpy(), new)
    o[2].bias.data.zero_()
    t[2].bias.data.zero_()
    np.testing.assert_array_equal(o[2].bias.numpy(), 0)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(o(of.tensor(x)).numpy(), t(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        o[0].weight.data = [1.0, 2.0]
    with pytest.raises(NotImplementedError, match="keeps a tensor's shape"):
        o[0].weight.data = of.zeros(3)


def test_data_write_reaches_a_compiled_step(rng):
    """A parameter whose value a compiled training step's session holds
    takes the value assigned to .data at the next step, as in PyTorch."""
    o, t = pair_mlp(int(rng.integers(2 ** 31)))
    step = of.compile(o, loss_fn=onn.CrossEntropyLoss(),
                      optimizer=of.optim.SGD(o.parameters(), lr=0.1))
    topt = torch.optim.SGD(t.parameters(), lr=0.1)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.integers(0, 3, 4)
    new = rng.standard_normal((3, 8)).astype(np.float32)
    losses = []
    for i in range(3):
        if i == 1:
            o[2].weight.data = of.tensor(new)
            t[2].weight.data = torch.from_numpy(new.copy())
        topt.zero_grad()
        want = torch.nn.functional.cross_entropy(t(torch.from_numpy(x)), torch.from_numpy(y))
        want.backward()
        topt.step()
        losses.append((step(of.tensor(x), of.tensor(y)).item(), want.item()))
    for got, want in losses:
        assert got == pytest.approx(want, rel=1e-5), losses
    np.testing.assert_allclose(o[2].weight.numpy(), t[2].weight.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_detach_in_a_training_step_raises(rng):
    model = onn.Linear(4, 2)

    def loss_fn(out, target):
        return ((out - out.detach()) ** 2).mean() + onn.functional.mse_loss(out, target)
    step = of.compile(model, loss_fn=loss_fn, optimizer=of.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(NotImplementedError, match="detach"):
        step(of.randn(3, 4), of.randn(3, 2))


def test_graph_returns_everything_build_returns(rng):
    o, t = pair_mlp(int(rng.integers(2 ** 31)))

    class TrainGraph(onn.Graph):
        def __init__(self):
            super().__init__()
            self.model = o
            self.add_optimizer(of.optim.SGD(o.parameters(), lr=0.1))

        def build(self, x, y):
            logits = self.model(x)
            loss = onn.functional.cross_entropy(logits, y)
            loss.backward()
            return loss, {"logits": logits, "batch": x.shape[0], "extra": None}

    x = rng.standard_normal((5, 6)).astype(np.float32)
    y = rng.integers(0, 3, 5)
    want_logits = t(torch.from_numpy(x))
    want = torch.nn.functional.cross_entropy(want_logits, torch.from_numpy(y))
    loss, extra = TrainGraph()(of.tensor(x), of.tensor(y))
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)
    assert set(extra) == {"logits", "batch", "extra"}
    assert extra["batch"] == 5 and extra["extra"] is None
    # the logits of the step's forward pass, before the update
    np.testing.assert_allclose(extra["logits"].numpy(), want_logits.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_compiled_functions_keep_the_result_structure(rng):
    a, b = rng.standard_normal((2, 3)).astype(np.float32)

    def fn(u, v):
        return u + v, [u * v, None], {"sum": (u - v).sum()}
    got = of.compile(fn)(of.tensor(a), of.tensor(b))
    want = fn(torch.from_numpy(a), torch.from_numpy(b))
    assert type(got) is tuple and type(got[1]) is list and set(got[2]) == {"sum"}
    assert got[1][1] is None
    for g, w in [(got[0], want[0]), (got[1][0], want[1][0]), (got[2]["sum"], want[2]["sum"])]:
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_compiled_module_is_the_module(rng):
    """torch.compile(model) returns a module (OptimizedModule): parameters,
    state_dict, train/eval and attributes are the model's."""
    o, t = pair_mlp(int(rng.integers(2 ** 31)))
    c, tc = of.compile(o), torch.compile(t)
    # the module is the child _orig_mod, whose name prefixes the keys
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in tc.named_parameters()]
    assert list(c.state_dict()) == list(tc.state_dict())
    assert [n for n, _ in c.named_modules()] == [n for n, _ in tc.named_modules()]
    assert [p is q for p, q in zip(c.parameters(), o.parameters())] == [True] * 4
    sd = {k: v.detach().numpy() * 2 for k, v in tc.state_dict().items()}
    c.load_state_dict(sd)
    tc.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    np.testing.assert_array_equal(o[0].weight.numpy(), sd["_orig_mod.0.weight"])
    with pytest.raises(KeyError, match="unexpected keys"):
        c.load_state_dict(o.state_dict())
    assert c.eval() is c and not o.training and c.training is False
    assert c.train() is c and o.training
    assert c._orig_mod is o
    assert of.compile(o, disable=True) is o
    x = rng.standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_allclose(c(of.tensor(x)).numpy(), t(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


BAD_OPTIMIZER_ARGS = [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1e-4)), ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, nesterov=True)),
    ("AdamW", dict(lr=float("nan"))), ("AdamW", dict(lr=-1e-3)), ("AdamW", dict(eps=-1.0)),
    ("AdamW", dict(eps=float("nan"))), ("AdamW", dict(betas=(1.0, 0.999))),
    ("AdamW", dict(betas=(0.9, -0.1))), ("AdamW", dict(weight_decay=-0.01)),
]


@pytest.mark.parametrize("name,kwargs", BAD_OPTIMIZER_ARGS)
def test_optimizer_arguments_are_checked_as_pytorch(name, kwargs):
    with pytest.raises(ValueError) as want:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    with pytest.raises(ValueError) as got:
        getattr(of.optim, name)([onn.Parameter(np.zeros(2, np.float32))], **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=float("nan"))),
                                         ("SGD", dict(lr=float("inf"))),
                                         ("AdamW", dict(lr=float("inf")))])
def test_optimizer_arguments_pytorch_accepts(name, kwargs):
    """PyTorch 2.x accepts these (its check is `lr < 0`, or `not 0 <= lr`
    for AdamW), so of does too."""
    getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kwargs)
    getattr(of.optim, name)([onn.Parameter(np.zeros(2, np.float32))], **kwargs)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, maximize=True)),
                                         ("Adagrad", dict(initial_accumulator_value=0.1)),
                                         ("AdamW", dict(maximize=True))])
def test_optimizer_options_not_built_raise(name, kwargs):
    with pytest.raises(NotImplementedError, match=f"{name}\\("):
        getattr(of.optim, name)([onn.Parameter(np.zeros(2, np.float32))], **kwargs)


def both_schedulers(make):
    """The learning rates of `make(lr_scheduler, optimizer)` over 25 steps,
    in of and in PyTorch."""
    rates = []
    for framework, optim in ((of, of.optim), (torch, torch.optim)):
        p = onn.Parameter(np.zeros(2, np.float32)) if framework is of else \
            torch.nn.Parameter(torch.zeros(2))
        opt = optim.SGD([p], lr=0.5)
        sched = make(optim.lr_scheduler, opt)
        seen = []
        for _ in range(25):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        rates.append(seen)
    return rates


@pytest.mark.parametrize("make", [
    lambda L, o: L.CosineAnnealingLR(o, T_max=6, eta_min=0.01),
    lambda L, o: L.StepLR(o, step_size=4, gamma=0.5),
    lambda L, o: L.LinearLR(o, start_factor=0.25, total_iters=7),
    lambda L, o: L.LambdaLR(o, [lambda e: 0.9 ** e]),
])
def test_schedulers_follow_pytorch_past_their_horizon(make):
    got, want = both_schedulers(make)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_scheduler_arguments_are_checked_as_pytorch():
    for kwargs in (dict(start_factor=0.0), dict(start_factor=1.5), dict(end_factor=-0.1)):
        with pytest.raises(ValueError) as want:
            torch.optim.lr_scheduler.LinearLR(
                torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0), **kwargs)
        with pytest.raises(ValueError) as got:
            of.optim.lr_scheduler.LinearLR(
                of.optim.SGD([onn.Parameter(np.zeros(1, np.float32))], lr=1.0), **kwargs)
        assert str(got.value) == str(want.value)
    opt = of.optim.SGD([onn.Parameter(np.zeros(1, np.float32))], lr=1.0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        of.optim.lr_scheduler.LambdaLR(opt, [math.exp, math.exp])
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        of.optim.lr_scheduler.StepLR([], step_size=1)


def test_inplace_activations_as_pytorch(rng):
    """inplace=True writes the result into the input (eager), and in a
    traced function the input then stands for the result."""
    a = rng.standard_normal((4, 5)).astype(np.float32)
    x, tx = of.tensor(a), torch.from_numpy(a.copy())
    y = onn.functional.relu(x, inplace=True)
    ty = torch.nn.functional.relu(tx, inplace=True)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    relu = onn.ReLU(inplace=True)

    def fn(v):
        h = v * 2.0
        relu(h)  # the result is not used: h itself changed
        return h + 1.0
    np.testing.assert_allclose(of.compile(fn)(of.tensor(a)).numpy(),
                               np.maximum(a * 2.0, 0) + 1.0, rtol=1e-6)
    with pytest.raises(NotImplementedError, match=r"relu\(inplace=True\) on an input"):
        of.compile(lambda v: relu(v))(of.tensor(a))


def test_functional_defaults_as_pytorch(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    # softmax without dim: PyTorch's implicit choice (dim 1 for 2-D) and warning
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        got = onn.functional.softmax(of.tensor(a))
    with pytest.warns(UserWarning):
        want = torch.nn.functional.softmax(torch.from_numpy(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    # the legacy reduce=False of a loss means reduction="none"
    t = rng.standard_normal((3, 4)).astype(np.float32)
    with pytest.warns(UserWarning):
        got = onn.MSELoss(reduce=False)(of.tensor(a), of.tensor(t))
    np.testing.assert_allclose(got.numpy(), (a - t) ** 2, rtol=1e-6)
    with pytest.raises(NotImplementedError, match=r"max_pool2d\(ceil_mode=True\)"):
        onn.MaxPool2d(2, ceil_mode=True)


def test_no_value_silently_means_something_else():
    x = of.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.max().item() == 5.0
    # PyTorch's x.max(1) is (values, indices): x.max(1)[0] must not be a row
    values, indices = x.max(1)
    assert values.tolist() == [2.0, 5.0] and indices.tolist() == [2, 2]
    assert x.max(1)[0].tolist() == [2.0, 5.0]
    with pytest.raises(NotImplementedError, match="torch.Generator"):
        of.Generator()
    with pytest.raises(NotImplementedError, match="generator"):
        x.normal_(generator=object())
