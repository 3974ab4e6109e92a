"""The optimizer base class (torch.optim.Optimizer's interface): parameter
groups and their hyperparameters, which a compiled training step reads,
and the eager `step()` of the standard loop.

The update itself is the compiler's (`--of-training-step`), never written
here: `step()` runs, per parameter group, a compiled training step of
sum(p * p.grad) over the group's parameters that have a gradient, whose
gradient with respect to p is p.grad itself. The step's session keeps the
parameters and the optimizer state (momentum, Adam's moments and step)
between calls, as a compiled training step of the model does; the
learning rate is read from the group at every call."""

import collections
import weakref

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor, force_pending


class _GroupParams:
    """The parameters of one group that have gradients, as the module a
    compiled update reads: named `p<index>` by their index in the
    optimizer (state_dict's numbering)."""

    training = True

    def __init__(self):
        self.named = []

    def parameters(self):
        return (t for _, t in self.named)

    def state_dict(self):
        return collections.OrderedDict(self.named)

    def modules(self):
        return [self]


class _GroupView:
    """One parameter group as the optimizer of a compiled update."""

    def __init__(self, optimizer, group):
        self.optimizer, self.group = optimizer, group
        self._steps = 0

    @property
    def param_groups(self):
        return [self.group]

    def _pipeline_options(self):
        return self.optimizer._pipeline_options(self.group)

    def _weight_decays(self):
        return {}


class Optimizer:
    # per parameter: PyTorch's state_dict key of each compiled state name's
    # prefix (of.ABI StateNames.h), set by the optimizers
    _STATE_NAMES = {}
    # PyTorch's state has a per-parameter "step" that the compiled update
    # does not need: counted here
    _COUNTS_STEPS = False

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.param_groups = []
        self._steps = 0
        self._updaters = {}      # group index -> CompiledFunction
        self._pending = {}       # (parameter index, state key) -> value (load_state_dict)
        # compiled training steps of a model using it (_jit), weakly
        self._compiled_steps = weakref.WeakSet()
        self._counts = collections.Counter()  # parameter index -> updates
        # the update that ran last (a compiled step, or the per-group ones:
        # self._updaters): it holds the optimizer state
        self._last_update = None
        for g in (params if isinstance(params[0], dict) else [{"params": params}]):
            self.add_param_group(g)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _weight_decays(self):
        """id(parameter) -> its group's weight decay, when groups differ
        (a compiled training step of a model: one update for every
        parameter, each with its group's decay)."""
        decays = {g["weight_decay"] for g in self.param_groups}
        if len(decays) <= 1:
            return {}
        return {id(p): float(g["weight_decay"]) for g in self.param_groups
                for p in g["params"]}

    def _check_one_update(self):
        """A compiled training step of a model updates every parameter with
        one set of hyperparameters (groups may differ in weight decay)."""
        keys = [k for k in self.defaults if k != "weight_decay"]
        for g in self.param_groups[1:]:
            for k in keys:
                if g[k] != self.param_groups[0][k]:
                    raise NotImplementedError(
                        f"{type(self).__name__}: parameter groups with different '{k}' in a "
                        "compiled training step (of.compile(model, loss_fn, optimizer)) are "
                        "not supported yet (groups may differ in weight_decay only); the "
                        "eager loop (loss.backward(); optimizer.step()) takes them")

    def _pipeline_options(self, group=None):
        raise NotImplementedError

    # -- the eager loop ------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                _zero_grad(p, set_to_none)

    def _index(self):
        return {id(p): i for i, p in enumerate(p for g in self.param_groups
                                               for p in g["params"])}

    def step(self, closure=None):
        """Updates every parameter that has a gradient, group by group, with
        the group's hyperparameters (PyTorch's torch.optim semantics)."""
        loss = None
        if closure is not None:
            from .._grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        from .._grad_mode import no_grad
        with_grads = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        calls = {id(p.grad._pending): p.grad._pending for p in with_grads}
        if len(calls) == 1 and None not in calls.values():
            call = next(iter(calls.values()))
            if call.fused_step(self, with_grads):  # the whole step in one plan
                index = self._index()
                for p in with_grads:
                    self._counts[index[id(p)]] += 1
                return loss
        force_pending()  # before the parameters change
        index = self._index()
        with no_grad():
            for gi, group in enumerate(self.param_groups):
                items = [(f"p{index[id(p)]}", p) for p in group["params"]
                         if p.grad is not None]
                if items:
                    self._update(gi, group, items, index)
        self._pending = {}  # loaded state: taken by each group's first update
        self._steps += 1
        return loss

    def _hand_over(self, target):
        """Before compiled update `target` runs: if another update ran last
        (the eager per-group updates, or another compiled step), its state
        becomes `target`'s (through load_state_dict's pending state)."""
        last = self._last_update
        if last is None or last is target:
            self._last_update = target
            return
        state = self.state_dict()["state"]  # the last update's
        self._last_update = target
        self._pending = self._pending_from(state)
        _restart([target] if not isinstance(target, dict) else target.values())

    def _updater(self, gi, group):
        cf = self._updaters.get(gi)
        if cf is None:
            from .._jit import CompiledFunction
            holder = _GroupParams()

            def update(*grads):
                total = None
                for (_, p), g in zip(holder.named, grads):
                    term = (p * g).sum()
                    total = term if total is None else total + term
                return total
            cf = CompiledFunction(update, [("", holder)], f"{type(self).__name__.lower()}_update",
                                  _GroupView(self, group))
            cf.loss_only = True
            cf.holder = holder
            self._updaters[gi] = cf
        return cf

    def _update(self, gi, group, items, index):
        cf = self._updater(gi, group)
        self._hand_over(self._updaters)
        cf.holder.named = items
        grads = []
        for _, p in items:
            g = p.grad
            if tuple(g.shape) != tuple(p.shape) or g.dtype != p.dtype:
                raise RuntimeError(f"{type(self).__name__}.step: the gradient of a parameter of "
                                   f"shape {list(p.shape)} {p.dtype} is {list(g.shape)} "
                                   f"{g.dtype}")
            grads.append(g)
        for _, p in items:
            self._counts[index[id(p)]] += 1
        executable = cf.executable(grads)
        if self._pending and not executable.initialised:
            self._load_pending(executable.runner, {id(p): name for name, p in items})
            executable.initialised = True
        cf(*grads)

    # -- state ---------------------------------------------------------------
    def _sources(self):
        """(runner, id(parameter) -> its name in the runner's plan) of the
        update that ran last: the eager per-group updates or a compiled
        training step."""
        last = self._last_update
        updaters = self._updaters.values() if last is None or last is self._updaters else ()
        for cf in updaters:
            if cf._last is not None:
                yield cf._last[0].runner, {id(p): name for name, p in cf.holder.named}
        steps = self._compiled_steps if last is None else \
            [last] if last is not self._updaters else ()
        for cf in steps:
            if cf._last is not None:
                yield cf._last[0].runner, {i: name for i, (name, _) in cf._bindings().items()}

    @staticmethod
    def _state_name(prefix, param_name):
        """A per-parameter kind's name (`momentum_<p>`), or a scalar's."""
        return prefix + param_name if prefix.endswith("_") else prefix

    def _load_pending(self, runner, names):
        """Sets the loaded state (load_state_dict) of the parameters `names`
        (id -> name in the plan) as the inputs of a new update's `runner`."""
        index = self._index()
        for p_id, pname in names.items():
            i = index.get(p_id)
            for prefix, key in self._STATE_NAMES.items():
                value = self._pending.get((i, key))
                j = runner.input_index.get(self._state_name(prefix, pname))
                if value is None or j is None:
                    continue
                info = runner.inputs[j]
                runner.set(j, np.asarray(value, dt.from_mlir(info["dtype"]).np)
                           .reshape(info["shape"]))

    def state_dict(self):
        """PyTorch's layout: `state` (per parameter index, e.g.
        momentum_buffer, or step/exp_avg/exp_avg_sq) and `param_groups`
        (hyperparameters and parameter indices)."""
        index = self._index()
        values = dict(self._pending)
        for runner, names in self._sources():
            for p_id, pname in names.items():
                i = index.get(p_id)
                for prefix, key in self._STATE_NAMES.items():
                    j = runner.input_index.get(self._state_name(prefix, pname))
                    if i is not None and j is not None:
                        info = runner.inputs[j]
                        values[(i, key)] = runner.input(j, dt.from_mlir(info["dtype"]))
        if self._COUNTS_STEPS:
            for i, count in self._counts.items():
                values[(i, "step")] = count
        state = {}
        for (i, key), value in sorted(values.items()):
            if key.startswith("_"):
                continue  # of's own (SGD's sgd_step)
            value = np.array(value, np.float32) if key == "step" else np.array(value)
            state.setdefault(i, {})[key] = Tensor(value)
        groups = []
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = [index[id(p)] for p in g["params"]]
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v
        self._pending = self._pending_from(state_dict["state"])
        self._counts = collections.Counter()
        if self._COUNTS_STEPS:
            for i, entry in state_dict["state"].items():
                step = entry.get("step")
                if step is not None:
                    self._counts[int(i)] = int(step.item() if isinstance(step, Tensor)
                                               else step)
        # the next step starts from the loaded state
        self._updaters = {}
        self._last_update = None
        _restart(self._compiled_steps)

    def _pending_from(self, state):
        """(parameter index, key) -> value of a state in PyTorch's layout,
        for the next update to start from (SGD's buffer marked started
        where one is given)."""
        pending = {}
        for i, entry in state.items():
            for key in self._STATE_NAMES.values():
                value = entry.get(key)
                if value is not None:
                    pending[(int(i), key)] = value.numpy() if isinstance(value, Tensor) \
                        else np.asarray(value)
            if entry.get("momentum_buffer") is not None and \
                    "_started" in self._STATE_NAMES.values():
                pending[(int(i), "_started")] = np.float32(1)
        return pending

    @property
    def state(self):
        """torch.optim's `state`: parameter -> its state (the values the
        last update left; `state_dict()['state']` by parameter)."""
        params = [p for g in self.param_groups for p in g["params"]]
        state = collections.defaultdict(dict)
        for i, entry in self.state_dict()["state"].items():
            state[params[i]] = entry
        return state


def _restart(compiled):
    """Each signature of the compiled updates `compiled` takes the pending
    state at its next run instead of continuing its own."""
    for cf in compiled:
        for executable, _ in cf._cache.values():
            executable.initialised = False


def _zero_grad(p, set_to_none):
    if p.grad is None:
        return
    if set_to_none:
        p.grad = None
    elif p.grad._pending is not None and p.grad._placement is None:
        g = p.grad  # not computed yet: zeros, without computing it
        g._pending = None
        g._data = np.zeros(g._shape, g._dtype.np)
    else:
        p.grad._set_value(np.zeros_like(p.grad._value()))
        p.grad._grad_fn = None
