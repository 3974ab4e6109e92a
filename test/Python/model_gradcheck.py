"""Whole-model gradient check against PyTorch in float64 (the golden-state
tests of llm.c, PyTorch's gradcheck for whole training steps).

`check_model` builds one model twice from a model file written against
PyTorch (torch in float64, and of with the same float32 weights), runs
`steps` compiled training steps of of and the same steps of torch.optim on
the float64 copy, and compares, per parameter tensor and step, the update
(weights after minus before, which is -lr times the gradient for plain SGD)
by its largest element error relative to the largest element of the
reference's update (beyond the float32 spacing of the weight, which bounds
what a float32 update can resolve); then the batch-norm running statistics
after the last step. Each reference step starts from the tested weights
(and its own optimizer state, momentum included): a float32 trajectory
leaves the float64 one at every kink only one of them crosses (below), and
after a few steps that chaos, not the step, would dominate the difference.

Kinks. ReLU's gradient jumps at 0 and max pooling's where two elements of
a window tie, so where the float64 run passes within float32's rounding
(about 1e-6 of the values' scale after a dozen layers) of a kink, float32
may land on the other side, PyTorch's own float32 step as much as of's
(torchvision's ResNet-18 without its max pool and layer4, batch 16 at
32x32: PyTorch float32 is 3.6e-2 off float64 in layer1.0.conv2.weight;
the whole ResNet-18 at 64x64 on oneDNN's AVX kernels: of is 3.9e-2 off in
layer3.1.conv2.weight, from one ReLU input 1.2e-6 from 0). Such a flip is
not an error of the compiler, and leaving it to chance makes the check
flaky. So where a step is off by more than `tol`, the check looks for the
flips that explain it: the inputs of the reference's ReLU and MaxPool2d
calls that lie within `kink_margin` (relative to their standard deviation)
of a kink are candidates, ranked by the gradient a flip would move over its
distance from the kink; each of the first `kink_candidates` is replayed in
float64 with its element moved to the other side (a ReLU input x becomes
-x; a window's runner-up becomes its maximum), and the flips whose effects
together fit the difference are chosen (least squares over the effects,
then one flip at a time; up to `max_flips`). The step is then replayed with
those flips together and passes only if that replay agrees within `tol`
everywhere; each flip used is reported with its distance from the kink,
and the reference goes on from the flipped step (so later steps are not
charged for it). A wrong gradient is not explained by moving a few elements
that lie within 1e-5 of their kinks: that changes no value by more than
1e-5 and reroutes the gradient of those elements only.

The peer. Some steps are off in float32 with no flip the search finds
(ResNet-50 at OF_TEST_SEED=3950325419453167792: one channel of
layer3.0.bn1's gradient 2% off, its float64 ReLU inputs all 1.5e-2 of a
std or more from 0; of in float64 agrees within 1e-8). Where a step is
still off after the flips, PyTorch's own float32 step from the same
weights and optimizer state (the reference's, in float32) is taken too: a
tensor passes if it is within PEER_FACTOR times that step's error of
float64 (PyTorch's float32 was 2.85e-3 off there, as far as of), the
report names the tensors so calibrated, and the reference goes on with
the float32 step's optimizer state. A wrong gradient still fails: the peer
is then within `tol`.
"""

import copy
import dataclasses

import numpy as np
import torch
import torch.nn.functional as F

import of


@dataclasses.dataclass
class Flip:
    call: int  # the index of the ReLU/MaxPool2d call in the forward pass
    module: str
    index: tuple  # the element of the call's input that moves
    delta: float  # added to it
    margin: float  # its distance from the kink, relative to the input's std

    def __str__(self):
        return (f"{self.module} (call {self.call}) input{list(self.index)} moved across "
                f"its kink, {self.margin:.1e} of the input's std from it")


@dataclasses.dataclass
class StepReport:
    step: int
    loss: float
    reference_loss: float
    errors: dict  # parameter name -> relative update error
    flips: list
    # parameter name -> PyTorch float32's error from the same state, for the
    # tensors off by more than tol after the flips (see "The peer")
    peer: dict = dataclasses.field(default_factory=dict)

    @property
    def worst(self):
        name = max(self.errors, key=self.errors.get)
        return name, self.errors[name]


class _Kinks:
    """Hooks on the reference's ReLU and MaxPool2d modules: they record each
    call's input and the gradient of its output (when `recording`), and add
    the deltas of the flips applied to that call to its input."""

    def __init__(self, model):
        self.calls = []
        self.flips = {}
        self.recording = False
        self._count = 0
        self._handles = []
        for name, module in model.named_modules():
            if isinstance(module, (torch.nn.ReLU, torch.nn.MaxPool2d)):
                self._handles += [
                    module.register_forward_pre_hook(self._before(name)),
                    module.register_forward_hook(self._after)]

    def remove(self):
        for handle in self._handles:
            handle.remove()

    def start(self, flips, recording):
        self.calls, self._count, self.recording = [], 0, recording
        self.flips = {}
        for f in flips:
            self.flips.setdefault(f.call, []).append(f)

    def _before(self, name):
        def hook(module, args):
            call = self._count
            self._count += 1
            x = args[0]
            if self.recording:
                self.calls.append({"call": call, "name": name, "module": module,
                                   "input": x.detach().clone(), "grad": None})
            if call not in self.flips:
                return None
            delta = torch.zeros_like(x)
            for f in self.flips[call]:
                delta[f.index] = f.delta
            return (x + delta,) + tuple(args[1:])
        return hook

    def _after(self, module, args, output):
        if self.recording and output.requires_grad:
            record = self.calls[-1]
            output.register_hook(lambda g: record.__setitem__("grad", g.detach().clone()))


def _relu_candidates(record, margin):
    """(impact, flip) for each input within `margin` of 0: the impact is the
    gradient that the flip lets through or stops."""
    x, grad = record["input"], record["grad"]
    scale = float(x.std())
    distance = x.abs().flatten() / scale
    near = torch.nonzero(distance < margin).flatten().tolist()
    return [(abs(float(grad.flatten()[e])),
             Flip(record["call"], record["name"],
                  tuple(int(i) for i in np.unravel_index(e, x.shape)),
                  float(-2 * x.flatten()[e]), float(distance[e]))) for e in near]


def _maxpool_candidates(record, margin):
    """(impact, flip) for each window whose two largest elements differ by
    less than `margin` (and more than 0: exact ties go to the first element
    on both sides); the impact is the window's gradient, which the flip
    moves to the runner-up."""
    module, x, grad = record["module"], record["input"], record["grad"]
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    (kh, kw), (sh, sw), (ph, pw) = (pair(module.kernel_size),
                                    pair(module.stride or module.kernel_size),
                                    pair(module.padding))
    if module.dilation not in (1, (1, 1)) or module.ceil_mode:
        raise NotImplementedError("the kink search handles max pools without dilation "
                                  "or ceil_mode")
    n, c, h, w = x.shape
    padded = F.pad(x, (pw, pw, ph, ph), value=float("-inf"))
    windows = F.unfold(padded.reshape(n * c, 1, h + 2 * ph, w + 2 * pw), (kh, kw),
                       stride=(sh, sw))  # [n*c, kh*kw, L]
    top = torch.topk(windows, 2, dim=1)
    gap = (top.values[:, 0] - top.values[:, 1]) / float(x.std())  # [n*c, L]
    ow = (w + 2 * pw - kw) // sw + 1
    found = []
    for plane, window in torch.nonzero((gap < margin) & (gap > 0)).tolist():
        offset = int(top.indices[plane, 1, window])
        oh_, ow_ = divmod(window, ow)
        i, j = oh_ * sh - ph + offset // kw, ow_ * sw - pw + offset % kw
        value = top.values[plane, :, window]
        found.append((abs(float(grad.reshape(n * c, -1)[plane, window])),
                      Flip(record["call"], record["name"], (plane // c, plane % c, i, j),
                           float(2 * (value[0] - value[1])), float(gap[plane, window]))))
    return found


def _candidates(calls, margin, limit):
    """The `limit` flips within `margin` of their kinks that are most likely
    to matter: by the gradient they would move over their distance from the
    kink (float32 rounding crosses a near kink more often, and a flip that
    moves more gradient changes more)."""
    found = []
    for record in calls:
        if record["grad"] is None:
            continue
        if isinstance(record["module"], torch.nn.ReLU):
            found += _relu_candidates(record, margin)
        else:
            found += _maxpool_candidates(record, margin)
    found.sort(key=lambda t: -t[0] / max(t[1].margin, 1e-12))
    return [flip for _, flip in found[:limit]]


def _ulp(values):
    """The spacing of float32 at each value: the tested side stores its
    weights in float32, so an update is known to one unit in the last place
    of the weight (rounding the weight before and after the step, half a
    unit each)."""
    return np.spacing(np.abs(values).astype(np.float32)).astype(np.float64)


# A tensor whose true update is 0 (a convolution's bias before a batch norm,
# whose mean the norm takes away) has rounding noise on both sides and
# nothing to be relative to: its errors are measured against this fraction
# of the model's largest update instead.
ZERO_UPDATE_SCALE = 1e-3
# A tensor as far off as PyTorch's own float32 step from the same state
# (times this) is float32's conditioning, not the compiler's error.
PEER_FACTOR = 2.0


class _Layout:
    """Parameter tensors as one flat float64 vector, in a fixed order."""

    def __init__(self, named):
        self.names = list(named)
        sizes = [named[k].size for k in self.names]
        self.starts = np.cumsum([0] + sizes[:-1])

    def flat(self, named):
        return np.concatenate([np.ravel(named[k]) for k in self.names]).astype(np.float64)

    def tensor_max(self, values):
        return np.maximum.reduceat(values, self.starts)


def _update_errors(layout, want, got, ulp):
    """Per tensor: the largest error of the tested update `got` beyond the
    float32 spacing `ulp` of its weights, relative to the largest update (of
    either side, and at least ZERO_UPDATE_SCALE of the model's largest)."""
    floor = ZERO_UPDATE_SCALE * np.abs(want).max()
    scale = np.maximum(np.maximum(layout.tensor_max(np.abs(want)),
                                  layout.tensor_max(np.abs(got))), floor)
    off = layout.tensor_max(np.maximum(np.abs(want - got) - ulp, 0))
    rel = np.where(scale > 0, off / np.where(scale > 0, scale, 1), 0)
    return dict(zip(layout.names, rel.tolist()))


def _explain(replay, layout, before, base, got, ulp, candidates, tol, max_flips):
    """The flips (of `candidates`) that bring the reference's update (`base`
    after the step, `before` it) to the tested one (`got`), and the replay
    with them, or ([], None). Each candidate's effect on the parameters is
    measured by one float64 replay. Flips of different elements add up to
    first order, so the set is the least-squares combination of the effects
    that fits the difference (a flip that happened gets a weight near 1,
    one that did not near 0; several are found together, where one alone
    may fit worse than none), then adjusted one flip at a time while that
    lowers the worst error, and finally replayed whole: the replay is what
    the step is judged on."""
    if not candidates:
        return [], None
    effects = np.stack([(layout.flat(replay([c])[2]) - base).astype(np.float32)
                        for c in candidates], axis=1)
    want = base - before
    # minimum-norm least squares: candidates without effect, or with the
    # same effect, leave the system singular, and get weight 0 or share it
    weights = np.linalg.lstsq(effects.astype(np.float64), got - want, rcond=None)[0]
    chosen = {i for i, w in enumerate(weights) if w > 0.5}

    def worst(flips):
        total = effects[:, sorted(flips)].sum(axis=1) if flips else 0
        return max(_update_errors(layout, want + total, got, ulp).values())
    error = worst(chosen)
    while error > tol:  # toggle the flip that helps most, while one does
        trials = [(worst(chosen ^ {i}), i) for i in range(len(candidates))
                  if i in chosen or len(chosen) < max_flips]
        best, i = min(trials)
        if best >= error:
            break
        chosen ^= {i}
        error = best
    flips = [candidates[i] for i in sorted(chosen)]
    return (flips, replay(flips)) if flips else ([], None)


def _with_parameters(model, params):
    """A copy of `model` holding `params` (name -> array) as its parameters."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(torch.from_numpy(params[k]))
    return model


def _numpy(named):
    return {k: v.detach().numpy().astype(np.float64).copy() for k, v in named}


def _torch_optimizer(params, optimizer):
    kind, hyper = optimizer
    return {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[kind](params, **hyper)


def _of_optimizer(params, optimizer):
    kind, hyper = optimizer
    return {"sgd": of.optim.SGD, "adamw": of.optim.AdamW}[kind](params, **hyper)


class _OfSubject:
    """The model under test: of, compiled (a training step per call)."""

    def __init__(self, build, initial, optimizer, loss, device):
        self.model = build("of")
        self.model.load_state_dict(initial)
        if device != "cpu":
            self.model = self.model.to(device)
        self.model.train()
        self.device = device
        opt = _of_optimizer(self.model.parameters(), optimizer)
        self.step_fn = of.compile(self.model, optimizer=opt, loss_fn=(
            of.nn.CrossEntropyLoss() if loss == "cross_entropy" else None))

    def step(self, inputs, target):
        args = [of.tensor(np.asarray(a)) for a in inputs] + [of.tensor(np.asarray(target))]
        if self.device != "cpu":
            args = [a.to(self.device) for a in args]
        return float(self.step_fn(*args).item())

    def parameters(self):
        return {k: v.numpy().astype(np.float64) for k, v in self.model.named_parameters()}

    def buffers(self):
        return {k: v.numpy().astype(np.float64) for k, v in self.model.named_buffers()}


class _TorchSubject:
    """PyTorch in float32 from the same weights: the peer whose distance
    from float64 calibrates the tolerance (subject="torch")."""

    def __init__(self, build, initial, optimizer, loss, device):
        self.model = build("torch").train()
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in initial.items()})
        self.opt = _torch_optimizer(self.model.parameters(), optimizer)
        self.loss = loss

    def step(self, inputs, target):
        xs = [torch.from_numpy(np.asarray(a)) for a in inputs]
        self.opt.zero_grad()
        value = _loss(self.model, xs, torch.from_numpy(np.asarray(target)), self.loss)
        value.backward()
        self.opt.step()
        return float(value.detach())

    def parameters(self):
        return _numpy(self.model.named_parameters())

    def buffers(self):
        return _numpy(self.model.named_buffers())


def _float32_step(state, batch, optimizer, loss, layout):
    """PyTorch's float32 step from the float64 `state` (model, optimizer
    state): its optimizer state (in float64) and its parameters' update."""
    def cast(state_dict, dtype):
        state_dict = copy.deepcopy(state_dict)
        for entry in state_dict["state"].values():
            for k, v in entry.items():
                if torch.is_tensor(v) and v.is_floating_point():
                    entry[k] = v.to(dtype)
        return state_dict

    model = copy.deepcopy(state[0]).float()
    before = layout.flat(_numpy(model.named_parameters()))
    opt = _torch_optimizer(model.parameters(), optimizer)
    opt.load_state_dict(cast(state[1], torch.float32))
    xs = [torch.from_numpy(np.asarray(a)) for a in batch[0]]
    xs = [a.float() if a.is_floating_point() else a for a in xs]
    opt.zero_grad()
    _loss(model, xs, torch.from_numpy(np.asarray(batch[1])), loss).backward()
    opt.step()
    update = layout.flat(_numpy(model.named_parameters())) - before
    return cast(opt.state_dict(), torch.float64), update


def _loss(model, inputs, target, loss):
    if loss == "cross_entropy":
        return F.cross_entropy(model(*inputs), target)
    return model(*inputs, target)[-1]


def check_model(build, batches, *, optimizer, loss="cross_entropy", tol=1e-4,
                kink_margin=1e-5, kink_candidates=16, max_flips=6, seed=0, device="cpu",
                subject="of", tested_optimizer=None):
    """Trains `len(batches)` steps of the model `build(framework)` (framework
    "torch" or "of" gives the model written against that one) under
    of.compile (or, with subject="torch", PyTorch in float32) and under
    PyTorch float64 from the same weights, with `optimizer` = ("sgd" |
    "adamw", hyperparameters). `batches` is a list of (inputs, target)
    pairs of NumPy arrays; `loss` is "cross_entropy" (the model returns
    logits) or None (it returns a tuple ending with the loss, given
    (inputs..., target)). `tested_optimizer` (default `optimizer`) is the
    tested side's. Returns (step reports, state errors), which
    `assert_close` checks against `tol`."""
    torch.manual_seed(seed)
    reference = build("torch")
    initial = {k: v.detach().numpy().copy() for k, v in reference.state_dict().items()}
    reference = reference.double().train()
    tested = {"of": _OfSubject, "torch": _TorchSubject}[subject](
        build, initial, tested_optimizer or optimizer, loss, device)

    def reference_step(state, batch, flips, recording=False):
        """One float64 step from `state` (model, optimizer state) with
        `flips`: the new state, the loss, the new parameters and, when
        `recording`, the inputs of the ReLU and max-pool calls."""
        m = copy.deepcopy(state[0])
        o = _torch_optimizer(m.parameters(), optimizer)
        o.load_state_dict(copy.deepcopy(state[1]))  # step() updates it in place
        hooks = _Kinks(m)
        hooks.start(flips, recording)
        xs = [torch.from_numpy(np.asarray(a)) for a in batch[0]]
        xs = [a.double() if a.is_floating_point() else a for a in xs]
        o.zero_grad()
        value = _loss(m, xs, torch.from_numpy(np.asarray(batch[1])), loss)
        value.backward()
        o.step()
        hooks.remove()
        return (m, copy.deepcopy(o.state_dict())), float(value.detach()), \
            _numpy(m.named_parameters()), hooks.calls

    state = (reference, copy.deepcopy(_torch_optimizer(reference.parameters(),
                                                       optimizer).state_dict()))
    layout = _Layout(_numpy(reference.named_parameters()))
    reports = []
    for s, batch in enumerate(batches):
        # Each step starts from the tested weights (in float64) and the
        # reference's own optimizer state: float32 and float64 trajectories
        # part at every kink one of them crosses and the other does not, so
        # after a few steps their weights differ by far more than rounding
        # (PyTorch's float32 as much as of's), and a whole-trajectory
        # comparison would charge that chaos to the step that shows it.
        weights = tested.parameters()
        state = (_with_parameters(state[0], weights), state[1])
        before = layout.flat(weights)
        tested_loss = tested.step(*batch)
        got = layout.flat(tested.parameters()) - before
        new, ref_loss, after, calls = reference_step(state, batch, [], recording=True)
        after = layout.flat(after)
        ulp = _ulp(after)
        errors = _update_errors(layout, after - before, got, ulp)
        flips = []
        if max(errors.values()) > tol:
            flips, replayed = _explain(
                lambda f: reference_step(state, batch, f), layout, before, after, got, ulp,
                _candidates(calls, kink_margin, kink_candidates), tol, max_flips)
            if replayed:
                new, ref_loss, after = replayed[0], replayed[1], layout.flat(replayed[2])
                errors = _update_errors(layout, after - before, got, _ulp(after))
        peer = {}
        if max(errors.values()) > tol:
            peer_state, peer_update = _float32_step(state, batch, optimizer, loss, layout)
            peer_errors = _update_errors(layout, after - before, peer_update, _ulp(after))
            peer = {k: peer_errors[k] for k, e in errors.items() if e > tol}
            new = (new[0], peer_state)
        reports.append(StepReport(s, tested_loss, ref_loss, errors, flips, peer))
        state = new
    # The batch-norm running statistics after the last step.
    state_errors = {}
    ref_buffers = _numpy(state[0].named_buffers())
    for k, v in tested.buffers().items():
        if k in ref_buffers and not k.endswith("num_batches_tracked"):
            want = ref_buffers[k]
            state_errors[k] = float(np.abs(v - want).max() / max(np.abs(want).max(), 1e-30))
    return reports, state_errors


def assert_close(reports, state_errors, tol=1e-4, label=""):
    """Fails with the worst tensors of the first step off by more than `tol`
    (and, where PyTorch's float32 step from the same state was taken, by
    more than PEER_FACTOR times its error); prints one line per step (the
    flips and the peer's errors that explained a step included)."""
    for r in reports:
        name, worst = r.worst
        print(f"{label} step {r.step}: loss {r.loss:.7f} (float64 {r.reference_loss:.7f}), "
              f"worst update error {worst:.1e} in {name}")
        for f in r.flips:
            print(f"    explained by a float32 kink flip: {f}")
        for k, e in r.peer.items():
            print(f"    {k}: {r.errors[k]:.1e}, PyTorch float32 from the same state {e:.1e}")
        bad = sorted(((e, k) for k, e in r.errors.items()
                      if e > max(tol, PEER_FACTOR * r.peer.get(k, 0.0))), reverse=True)
        assert not bad, (f"{label} step {r.step}: {len(bad)} of {len(r.errors)} parameter "
                         f"updates off by more than {tol}: " +
                         ", ".join(f"{k} {e:.1e}" for e, k in bad[:6]))
    bad = sorted(((e, k) for k, e in state_errors.items() if e > tol), reverse=True)
    assert not bad, (f"{label} state after {len(reports)} steps off by more than {tol}: " +
                     ", ".join(f"{k} {e:.1e}" for e, k in bad[:6]))
