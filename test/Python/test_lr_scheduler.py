"""of.optim.lr_scheduler against torch.optim.lr_scheduler.

Each scheduler, with a few argument sets, is stepped in both frameworks past
its horizon (T_max, total_iters, restarts, total_steps); the rates
(`get_last_lr()` and every group's "lr", and the momentum or beta1 the
cycling schedulers write) must agree to rel 1e-12 at every step. The state
dict must hold what PyTorch's holds, and a scheduler saved at step k and
loaded into a fresh one (from of's state dict or from PyTorch's) must go on
with the same rates. Resuming by `last_epoch`, the deprecated
`step(epoch)`, the warnings and the argument errors (type and message) are
PyTorch's too.

Parameter groups with different rates: of's optimizers refuse them at
construction today (one compiled update), so `optimizers()` then builds
the groups with one rate and sets each group's rate afterwards, as a
scheduler does; the schedulers handle every group on its own either way.
"""

import pickle
import warnings

import numpy as np
import pytest

import of
import of.nn as onn
import of.optim.lr_scheduler  # noqa: F401

torch = pytest.importorskip("torch")

# of applies the optimizer inside the compiled step, which these tests do not
# run: the scheduler then warns (as PyTorch does) that it steps first
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of")

FRAMEWORKS = ((torch, torch.optim), (of, of.optim))
SCHEDULER_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")

# a metric with plateaus, improvements below the relative threshold and
# a worse epoch, for ReduceLROnPlateau
METRICS = [1.0, 0.9, 0.9, 0.9, 0.9, 0.89995, 0.8999, 0.95, 0.7, 0.7, 0.7, 0.7, 0.69999,
           0.6999, 0.7, 0.7, 0.5, 0.5, 0.5, 0.5, 0.4995, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
           0.5, 0.5, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]


def optimizers(kind="sgd", lrs=(0.5,)):
    """(torch's, of's) optimizer of that kind, one param group per rate."""
    made = []
    for framework, optim in FRAMEWORKS:
        if framework is torch:
            params = [torch.nn.Parameter(torch.zeros(2)) for _ in lrs]
        else:
            params = [onn.Parameter(np.zeros(2, np.float32)) for _ in lrs]
        cls = optim.SGD if kind == "sgd" else optim.AdamW
        kwargs = dict(momentum=0.9) if kind == "sgd" else {}
        groups = [{"params": [p], "lr": lr} for p, lr in zip(params, lrs)]
        made.append(cls(groups, lr=lrs[0], **kwargs))
    return made


def step(sched, opt, i, epoch=None):
    """The training loop's step i: the optimizer's (torch's; of's runs in
    the compiled step), then the scheduler's."""
    if isinstance(opt, torch.optim.Optimizer):
        opt.step()
    if isinstance(sched, (torch.optim.lr_scheduler.ReduceLROnPlateau,
                          of.optim.lr_scheduler.ReduceLROnPlateau)):
        sched.step(METRICS[i] if sched.mode == "min" else 2 - METRICS[i])
    elif epoch is None:
        sched.step()
    else:
        sched.step(epoch)


def snapshot(sched, opt):
    """The rates the scheduler reports and sets, and the momentum or beta1
    of every group."""
    seen = list(sched.get_last_lr())
    for g in opt.param_groups:
        seen.append(g["lr"])
        seen.append(g["betas"][0] if "betas" in g else g["momentum"])
    return seen


def trajectory(make, opt, steps, start=0, sched=None):
    sched = make(opt) if sched is None else sched
    seen = [snapshot(sched, opt)]
    for i in range(start, steps):
        step(sched, opt, i)
        seen.append(snapshot(sched, opt))
    return seen


def same_state(ours, theirs, where="state_dict"):
    """`ours` holds what `theirs` holds: the same keys, floats to rel 1e-12."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        assert set(ours) == set(theirs), f"{where}: {sorted(ours)} != {sorted(theirs)}"
        for k in theirs:
            same_state(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            same_state(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15), where
    else:
        assert ours == theirs and type(ours) is type(theirs), f"{where}: {ours!r} != {theirs!r}"


def cyclic_scale(x):
    return 0.5 ** x


class Halving:
    """A callable object: its attributes are saved in the state dict."""

    def __init__(self):
        self.rate = 0.5

    def __call__(self, epoch):
        return self.rate ** (epoch // 3)


# (id, make(lr_scheduler module, optimizer), steps, optimizer kind, rates)
CASES = [
    ("StepLR", lambda L, o: L.StepLR(o, step_size=3, gamma=0.5), 20, "sgd", (0.5,)),
    ("StepLR-groups", lambda L, o: L.StepLR(o, 4), 20, "adamw", (0.5, 0.2)),
    ("MultiStepLR", lambda L, o: L.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3), 15, "sgd",
     (0.5, 0.2)),
    ("ConstantLR", lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=4), 10, "sgd",
     (0.5,)),
    ("ConstantLR-default", lambda L, o: L.ConstantLR(o), 10, "sgd", (0.5, 0.2)),
    ("LinearLR", lambda L, o: L.LinearLR(o, 0.25, 0.9, total_iters=6), 12, "sgd", (0.5, 0.2)),
    ("LinearLR-default", lambda L, o: L.LinearLR(o), 10, "adamw", (0.5,)),
    ("ExponentialLR", lambda L, o: L.ExponentialLR(o, gamma=0.8), 12, "sgd", (0.5, 0.2)),
    ("PolynomialLR", lambda L, o: L.PolynomialLR(o, total_iters=6, power=2.0), 12, "sgd",
     (0.5, 0.2)),
    ("PolynomialLR-default", lambda L, o: L.PolynomialLR(o), 10, "sgd", (0.5,)),
    ("LambdaLR", lambda L, o: L.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]), 12,
     "sgd", (0.5, 0.2)),
    ("LambdaLR-object", lambda L, o: L.LambdaLR(o, Halving()), 12, "sgd", (0.5,)),
    ("MultiplicativeLR", lambda L, o: L.MultiplicativeLR(o, lambda e: 0.95), 12, "sgd",
     (0.5, 0.2)),
    ("MultiplicativeLR-list", lambda L, o: L.MultiplicativeLR(
        o, [lambda e: 0.9, lambda e: 1.0 if e < 4 else 0.5]), 10, "sgd", (0.5, 0.2)),
    ("CosineAnnealingLR", lambda L, o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01), 25,
     "sgd", (0.5, 0.2)),
    ("CosineAnnealingWarmRestarts", lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3), 20,
     "sgd", (0.5,)),
    ("CosineAnnealingWarmRestarts-mult", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=2, T_mult=2, eta_min=0.05), 32, "sgd", (0.5, 0.2)),
    ("OneCycleLR-cos", lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=20), 20, "sgd",
     (0.5,)),
    ("OneCycleLR-linear", lambda L, o: L.OneCycleLR(
        o, max_lr=[1.0, 0.4], epochs=3, steps_per_epoch=5, pct_start=0.4,
        anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0), 15, "sgd",
     (0.5, 0.2)),
    ("OneCycleLR-three-phase", lambda L, o: L.OneCycleLR(
        o, max_lr=0.8, total_steps=25, three_phase=True, base_momentum=[0.8, 0.7],
        max_momentum=0.9), 25, "sgd", (0.5, 0.2)),
    ("OneCycleLR-betas", lambda L, o: L.OneCycleLR(o, max_lr=2e-3, total_steps=16), 16, "adamw",
     (1e-3,)),
    ("OneCycleLR-no-momentum", lambda L, o: L.OneCycleLR(
        o, max_lr=0.1, total_steps=12, cycle_momentum=False, three_phase=True,
        anneal_strategy="linear"), 12, "adamw", (1e-3,)),
    ("CyclicLR", lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4), 20,
     "sgd", (0.5,)),
    ("CyclicLR-triangular2", lambda L, o: L.CyclicLR(
        o, [0.01, 0.02], [0.1, 0.3], step_size_up=3, step_size_down=5, mode="triangular2"),
     30, "sgd", (0.5, 0.2)),
    ("CyclicLR-exp-range-betas", lambda L, o: L.CyclicLR(
        o, 1e-4, 1e-3, step_size_up=2, mode="exp_range", gamma=0.9), 16, "adamw", (1e-3,)),
    ("CyclicLR-scale-fn", lambda L, o: L.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, scale_fn=cyclic_scale, scale_mode="iterations",
        cycle_momentum=False), 12, "sgd", (0.5,)),
    ("SequentialLR", lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, 0.1, total_iters=4), L.ExponentialLR(o, 0.9)], milestones=[4]), 15,
     "sgd", (0.5, 0.2)),
    ("SequentialLR-three", lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, 0.5, total_iters=5), L.CosineAnnealingLR(o, T_max=6),
            L.StepLR(o, 2, 0.5)], milestones=[3, 10]), 20, "sgd", (0.5,)),
    ("ChainedScheduler", lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, 0.5, total_iters=3), L.ExponentialLR(o, 0.9)]), 12, "sgd",
     (0.5, 0.2)),
    ("ChainedScheduler-optimizer", lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, 0.2, total_iters=4), L.CosineAnnealingLR(o, 8, 0.01)], optimizer=o), 20,
     "sgd", (0.5,)),
    ("ReduceLROnPlateau", lambda L, o: L.ReduceLROnPlateau(o, patience=2), 40, "sgd",
     (0.5, 0.2)),
    ("ReduceLROnPlateau-max-abs", lambda L, o: L.ReduceLROnPlateau(
        o, mode="max", factor=0.5, patience=1, threshold=0.01, threshold_mode="abs"), 40, "sgd",
     (0.5,)),
    ("ReduceLROnPlateau-max-rel-cooldown", lambda L, o: L.ReduceLROnPlateau(
        o, mode="max", factor=0.5, patience=0, cooldown=3, threshold=1e-3), 40, "sgd", (0.5,)),
    ("ReduceLROnPlateau-min-abs-minlr", lambda L, o: L.ReduceLROnPlateau(
        o, factor=0.3, patience=1, threshold=1e-3, threshold_mode="abs", min_lr=[0.05, 0.1]),
     40, "adamw", (0.5, 0.2)),
    ("ReduceLROnPlateau-eps", lambda L, o: L.ReduceLROnPlateau(
        o, factor=0.5, patience=0, min_lr=0.1, eps=0.03), 40, "sgd", (0.5,)),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,make,steps,kind,lrs", CASES, ids=IDS)
def test_rates_follow_pytorch(name, make, steps, kind, lrs):
    """Every step's rates (and momenta), past the horizon; the scheduler's
    keys in the param groups and `base_lrs` after construction."""
    topt, oopt = optimizers(kind, lrs)
    tsched, osched = make(torch.optim.lr_scheduler, topt), make(of.optim.lr_scheduler, oopt)
    for tg, og in zip(topt.param_groups, oopt.param_groups):
        for key in SCHEDULER_KEYS:
            if key in tg:
                assert og[key] == pytest.approx(tg[key], rel=1e-12), key
    if hasattr(tsched, "base_lrs"):
        assert osched.base_lrs == pytest.approx(tsched.base_lrs, rel=1e-12)
    want = trajectory(None, topt, steps, sched=tsched)
    got = trajectory(None, oopt, steps, sched=osched)
    assert np.array(got) == pytest.approx(np.array(want), rel=1e-12, abs=1e-15)
    assert all(type(x) is float or type(x) is int for x in osched.get_last_lr())


@pytest.mark.parametrize("name,make,steps,kind,lrs", CASES, ids=IDS)
def test_state_dict_round_trip(name, make, steps, kind, lrs):
    """At step k the state dict holds PyTorch's content and pickles; a
    fresh scheduler loading it (of's, or PyTorch's), with the optimizer's
    groups restored, goes on as the uninterrupted one."""
    k = steps // 2
    topt, oopt = optimizers(kind, lrs)
    tsched, osched = make(torch.optim.lr_scheduler, topt), make(of.optim.lr_scheduler, oopt)
    want = trajectory(None, topt, steps, sched=tsched)
    topt, oopt = optimizers(kind, lrs)
    tsched, osched = make(torch.optim.lr_scheduler, topt), make(of.optim.lr_scheduler, oopt)
    for i in range(k):
        step(tsched, topt, i)
        step(osched, oopt, i)
    saved = osched.state_dict()
    same_state(saved, tsched.state_dict())
    saved = pickle.loads(pickle.dumps(saved))
    for source in (saved, tsched.state_dict()):
        _, fresh_opt = optimizers(kind, lrs)
        fresh = make(of.optim.lr_scheduler, fresh_opt)
        fresh_opt.load_state_dict(oopt.state_dict())  # the rates are the optimizer's state
        fresh.load_state_dict(source)
        got = trajectory(None, fresh_opt, steps, start=k, sched=fresh)
        assert np.array(got) == pytest.approx(np.array(want[k:]), rel=1e-12, abs=1e-15)


def test_lambda_state_keeps_callable_objects_only():
    _, opt = optimizers("sgd", (0.5, 0.2))
    scale = Halving()
    sched = of.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, scale])
    assert sched.state_dict()["lr_lambdas"] == [None, {"rate": 0.5}]
    state = sched.state_dict()
    state["lr_lambdas"][1] = {"rate": 0.25}
    fresh = Halving()
    of.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, fresh]).load_state_dict(state)
    assert fresh.rate == 0.25 and "lr_lambdas" in state


RESUMABLE = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 6, 9], gamma=0.5)),
    ("ConstantLR", dict(factor=0.5, total_iters=6)),
    ("LinearLR", dict(start_factor=0.2, total_iters=8)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("PolynomialLR", dict(total_iters=8, power=1.5)),
    ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("CosineAnnealingLR", dict(T_max=6, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False)),
]


@pytest.mark.parametrize("name,kwargs", RESUMABLE, ids=[r[0] for r in RESUMABLE])
def test_last_epoch_resumes_as_pytorch(name, kwargs):
    """`last_epoch=k` on groups that hold "initial_lr" (a checkpoint's)."""
    topt, oopt = optimizers("sgd", (0.5, 0.2))
    for tg, og in zip(topt.param_groups, oopt.param_groups):
        tg["initial_lr"] = og["initial_lr"] = tg["lr"] * 2
    rates = []
    for (framework, optim), opt in zip(FRAMEWORKS, (topt, oopt)):
        sched = getattr(optim.lr_scheduler, name)(opt, last_epoch=4, **kwargs)
        rates.append(trajectory(None, opt, 20, start=5, sched=sched))
        assert sched.last_epoch == 20  # the constructor steps to epoch 5
    assert np.array(rates[1]) == pytest.approx(np.array(rates[0]), rel=1e-12, abs=1e-15)


def test_resuming_without_initial_lr_raises_as_pytorch():
    topt, oopt = optimizers("sgd", (0.5,))
    with pytest.raises(KeyError) as want:
        torch.optim.lr_scheduler.StepLR(topt, 2, last_epoch=3)
    with pytest.raises(KeyError) as got:
        of.optim.lr_scheduler.StepLR(oopt, 2, last_epoch=3)
    assert str(got.value) == str(want.value)
    assert "param_groups[0]" in str(got.value)


def test_initial_lr_is_the_schedulers():
    """The initial rate is the group's rate when the first scheduler is
    made, with the optimizers as constructed."""
    seen = []
    for framework, optim in FRAMEWORKS:
        p = torch.nn.Parameter(torch.zeros(2)) if framework is torch else \
            onn.Parameter(np.zeros(2, np.float32))
        opt = optim.SGD([p], lr=0.5, momentum=0.9)
        opt.param_groups[0]["lr"] = 0.1
        sched = optim.lr_scheduler.StepLR(opt, 2)
        cyclic = optim.lr_scheduler.CyclicLR(optim.SGD([p], lr=0.5, momentum=0.9), 0.01, 0.1)
        seen.append((sched.base_lrs, opt.param_groups[0]["initial_lr"],
                     cyclic.optimizer.param_groups[0]["initial_lr"]))
    assert seen[1] == seen[0]


EPOCH_CASES = [
    lambda L, o: L.StepLR(o, 3, 0.5),
    lambda L, o: L.MultiStepLR(o, [2, 4, 4, 9], 0.5),
    lambda L, o: L.ConstantLR(o, 0.5, total_iters=4),
    lambda L, o: L.LinearLR(o, 0.2, 0.8, total_iters=6),
    lambda L, o: L.ExponentialLR(o, 0.8),
    lambda L, o: L.PolynomialLR(o, 6, 2.0),
    lambda L, o: L.CosineAnnealingLR(o, 5, 0.01),
    lambda L, o: L.LambdaLR(o, lambda e: 0.9 ** e),
    lambda L, o: L.MultiplicativeLR(o, lambda e: 0.9),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, 2, 2, 0.01),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, 3),
]


@pytest.mark.parametrize("make", EPOCH_CASES)
def test_step_with_epoch_as_pytorch(make):
    """The deprecated `step(epoch)`: the closed form where there is one,
    with PyTorch's deprecation warning (CosineAnnealingWarmRestarts takes
    fractional epochs without one)."""
    epochs = [1, 2, 5, 3, 8, 20, 0, 7, 2.5, 11.25, 6]
    seen = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers("sgd", (0.5, 0.2))):
        sched = make(optim.lr_scheduler, opt)
        rates, messages = [], []
        for i, epoch in enumerate(epochs):
            if isinstance(sched, optim.lr_scheduler.CosineAnnealingWarmRestarts) or \
                    isinstance(epoch, int):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    step(sched, opt, i, epoch=epoch)
                messages += [str(w.message) for w in caught
                             if not str(w.message).startswith("Detected call")]
                rates.append(snapshot(sched, opt) + [sched.last_epoch])
        seen.append((rates, messages))
    (want, want_warnings), (got, got_warnings) = seen
    assert np.array(got) == pytest.approx(np.array(want), rel=1e-12, abs=1e-15)
    assert got_warnings == want_warnings


def test_reduce_lr_on_plateau_with_epoch_and_tensor_metric():
    seen = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers("sgd", (0.5,))):
        sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step"):
            sched.step(framework.tensor(1.0), epoch=5)
        sched.step(framework.tensor(2.0))
        seen.append((sched.last_epoch, sched.get_last_lr(), sched.best))
    assert seen[1] == seen[0]


def test_custom_scheduler_subclass():
    """A training script's own warmup schedule on LRScheduler (and on
    PyTorch's former name _LRScheduler)."""
    rates = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers("adamw", (1e-3, 2e-3))):
        for base in (optim.lr_scheduler.LRScheduler, optim.lr_scheduler._LRScheduler):
            class Warmup(base):
                def __init__(self, optimizer, warmup, last_epoch=-1):
                    self.warmup = warmup
                    super().__init__(optimizer, last_epoch)

                def get_lr(self):
                    return [b * min(1.0, (self.last_epoch + 1) / self.warmup)
                            for b in self.base_lrs]
            rates.append(trajectory(lambda o: Warmup(o, 5), opt, 10))
    assert np.array(rates[2:]) == pytest.approx(np.array(rates[:2]), rel=1e-12)


def test_warnings_as_pytorch():
    """get_lr() outside step() points at get_last_lr(); stepping the
    schedule before the optimizer (in of: before the compiled step) warns."""
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers()):
        sched = optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
            sched.get_lr()
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` "
                                             r"before `optimizer.step\(\)`"):
            sched.step()


def test_no_order_warning_after_the_training_step():
    """The optimizer counts its steps (`_steps`: the eager step's and the
    compiled training step's runs); after one, stepping the schedule is in
    PyTorch's order."""
    _, opt = optimizers()
    sched = of.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_one_cycle_past_total_steps_raises_as_pytorch():
    errors = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers()):
        sched = optim.lr_scheduler.OneCycleLR(opt, 1.0, total_steps=6)
        for i in range(6):
            step(sched, opt, i)  # the 6th reaches total_steps, as PyTorch allows
        with pytest.raises(ValueError) as e:
            step(sched, opt, 6)
        errors.append(str(e.value))
    assert errors[1] == errors[0] == "Tried to step 7 times. The specified number of total " \
                                     "steps is 6"


def _other(L, o):
    """A scheduler of another optimizer of the same framework."""
    other = of.optim.SGD([onn.Parameter(np.zeros(1, np.float32))], lr=0.1) \
        if L is of.optim.lr_scheduler else \
        torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    return L.StepLR(other, 2)


def _f(e):
    return 1.0


ERRORS = [
    lambda L, o: L.StepLR([], 1),
    lambda L, o: L.ConstantLR(o, factor=1.5),
    lambda L, o: L.ConstantLR(o, factor=-0.1),
    lambda L, o: L.LinearLR(o, start_factor=0.0),
    lambda L, o: L.LinearLR(o, start_factor=1.5),
    lambda L, o: L.LinearLR(o, end_factor=-0.1),
    lambda L, o: L.LambdaLR(o, [_f, _f, _f]),
    lambda L, o: L.MultiplicativeLR(o, 0.5),
    lambda L, o: L.MultiplicativeLR(o, [_f]),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2.5),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"),
    lambda L, o: L.OneCycleLR(o, 1.0),
    lambda L, o: L.OneCycleLR(o, 1.0, epochs=2),
    lambda L, o: L.OneCycleLR(o, 1.0, total_steps=0),
    lambda L, o: L.OneCycleLR(o, 1.0, total_steps=2.5),
    lambda L, o: L.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=3),
    lambda L, o: L.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=1.5),
    lambda L, o: L.OneCycleLR(o, 1.0, 10, pct_start=1.5),
    lambda L, o: L.OneCycleLR(o, 1.0, 10, pct_start=1),
    lambda L, o: L.OneCycleLR(o, 1.0, 10, anneal_strategy="exp"),
    lambda L, o: L.OneCycleLR(o, [1.0, 2.0, 3.0], 10),
    lambda L, o: L.OneCycleLR(o, 1.0, 10, base_momentum=[0.8]),
    lambda L, o: L.OneCycleLR([], 1.0, 10),
    lambda L, o: L.CyclicLR(o, 0.01, 0.1, mode="cosine"),
    lambda L, o: L.CyclicLR(o, [0.01], 0.1),
    lambda L, o: L.CyclicLR(o, 0.01, [0.1, 0.2, 0.3]),
    lambda L, o: L.ReduceLROnPlateau(o, factor=1.0),
    lambda L, o: L.ReduceLROnPlateau(o, mode="avg"),
    lambda L, o: L.ReduceLROnPlateau(o, threshold_mode="pct"),
    lambda L, o: L.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda L, o: L.ReduceLROnPlateau([], 1.0),
    lambda L, o: L.SequentialLR(o, [], []),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], [1, 2]),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], [2]),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), object()], [2]),
    lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2), _other(L, o)], [2]),
    lambda L, o: L.ChainedScheduler([]),
    lambda L, o: L.ChainedScheduler([L.StepLR(o, 2), L.ReduceLROnPlateau(o)]),
    lambda L, o: L.ChainedScheduler([L.StepLR(o, 2), 3]),
    lambda L, o: L.ChainedScheduler([L.StepLR(o, 2), _other(L, o)]),
]


@pytest.mark.parametrize("make", ERRORS)
def test_argument_errors_as_pytorch(make):
    """The same exception type and message (up to the optimizers' reprs,
    which differ between the frameworks)."""
    raised = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers("sgd", (0.5, 0.2))):
        with pytest.raises(Exception) as e:
            make(optim.lr_scheduler, opt)
        raised.append((type(e.value).__name__, str(e.value).split(" has SGD")[0]
                       .split(" has <of.")[0]))
    assert raised[1] == raised[0]


def test_reduce_lr_on_plateau_groups_changed_raises_as_pytorch():
    messages = []
    for (framework, optim), opt in zip(FRAMEWORKS, optimizers("sgd", (0.5, 0.2))):
        sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
        opt.param_groups.append(dict(opt.param_groups[1], params=[]))
        sched.step(1.0)
        with pytest.raises(RuntimeError) as e:
            sched.step(2.0)
        messages.append(str(e.value))
    assert messages[1] == messages[0]


def test_signatures_are_pytorchs():
    import inspect
    for name in torch.optim.lr_scheduler.__all__:
        ours = getattr(of.optim.lr_scheduler, name)
        theirs = getattr(torch.optim.lr_scheduler, name)
        assert list(inspect.signature(ours).parameters) == \
            list(inspect.signature(theirs).parameters), name
        for method in ("step", "get_last_lr", "state_dict", "load_state_dict"):
            assert list(inspect.signature(getattr(ours, method)).parameters) == \
                list(inspect.signature(getattr(theirs, method)).parameters), (name, method)


def _train(framework, make, kind, init, grads):
    """The parameters after the eager loop (gradients set, optimizer.step(),
    scheduler.step()) with one param group per parameter, rates 0.1, 0.03."""
    optim = torch.optim if framework is torch else of.optim
    params = [torch.nn.Parameter(torch.from_numpy(a.copy())) if framework is torch else
              onn.Parameter(a.copy()) for a in init]
    cls, kwargs = (optim.SGD, dict(momentum=0.9)) if kind == "sgd" else (optim.AdamW, {})
    opt = cls([{"params": [p], "lr": lr} for p, lr in zip(params, (0.1, 0.03))], lr=0.1,
              **kwargs)
    sched = make(optim.lr_scheduler, opt)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.from_numpy(g.copy()) if framework is torch else of.tensor(g)
        opt.step()
        sched.step()
    return [p.detach().numpy() if framework is torch else p.numpy() for p in params]


def _both_trained(rng, make, kind):
    init = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
    grads = [[rng.standard_normal(3).astype(np.float32) for _ in range(2)] for _ in range(6)]
    return [_train(framework, make, kind, init, grads) for framework in (torch, of)]


def test_group_rates_reach_the_update(rng):
    """The optimizer's eager step reads each group's rate as the
    scheduler sets it (groups of different rates, per-group lambdas)."""
    want, got = _both_trained(rng, lambda L, o: L.LambdaLR(
        o, [lambda e: 0.5 ** e, lambda e: 1.0 + e]), "sgd")
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_cycled_momentum_reaches_the_update(rng, kind):
    want, got = _both_trained(rng, lambda L, o: L.OneCycleLR(o, [0.5, 0.2], total_steps=8),
                              kind)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
