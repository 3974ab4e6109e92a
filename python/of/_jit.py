"""Compiled functions, behind of.compile and of.nn.Graph: trace a function
into one `of` program, compile it once per input signature, run it through
the runtime.

A traced function's tensor arguments become the program's arguments (named
after the Python parameters); every parameter and buffer of the module that
the trace reads becomes an argument named by its state_dict key (marked
`of.param` when trained). With an optimizer, the program is the loss and
the pipeline adds `--of-training-step`: the plan's `<name>_train_step`
takes the batch, the parameters, the optimizer state and `lr`, and the
session keeps parameters and state across steps.
"""

import inspect
import time

import numpy as np

from . import _dtype as dt
from . import _autocast, _global, _grad_mode, _random
from ._autograd import TracedSpec, record
from ._autograd import accumulate as _autograd_accumulate
from ._autograd import gradients as _autograd_gradients
from ._tensor import _pending_calls, force_pending, output_tensor
from ._compile import compile_program, pipeline_for
from ._dist import sbp as S
from ._log import log_debug, progress
from ._ops import from_foreign
from ._program import Program, _trace, _type
from ._runtime import _C
from ._session import Runner
from ._tensor import Tensor
from .serialization import tensor_names


_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def _arguments(args):
    """The tensors of a call's arguments, nested in tuples, lists and dicts
    included, in order (each one an input of the plan), NumPy arrays and
    torch tensors made tensors (a copy) first; returns (args, tensors)."""
    tensors = []

    def walk(a):
        if not isinstance(a, (Tensor, tuple, list, dict)):
            a = from_foreign(a)  # a NumPy array or a torch tensor: copied
        if isinstance(a, Tensor):
            tensors.append(a)
            return a
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*[walk(x) for x in a])
        if isinstance(a, (tuple, list)):
            return type(a)(walk(x) for x in a)
        if isinstance(a, dict):
            return type(a)((k, walk(v)) for k, v in a.items())
        return a
    args = [walk(a) for a in args]
    return args, tensors


def _signature(args):
    """What of a call's arguments the traced program depends on: each
    tensor's type, the containers' shapes, and the other values (Python
    numbers and strings by value, other objects by identity)."""
    key = []

    def walk(a):
        if isinstance(a, Tensor):
            key.append(("T", tuple(a.shape), a.dtype.name, a._placement,
                        a._sbp and tuple(a._sbp), a.device))
        elif isinstance(a, (tuple, list)):
            key.append((type(a), len(a)))
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            key.append((type(a), tuple(a)))
            for v in a.values():
                walk(v)
        elif isinstance(a, _PLAIN):
            key.append(("V", type(a), a))
        else:
            key.append(("O", type(a), id(a)))
    for a in args:
        walk(a)
    return tuple(key)


def _optimizer_state(name):
    """Whether a training plan's input `name` is optimizer state (libofrt
    knows the names --of-training-step gives it)."""
    return _C().is_optimizer_state(name)


class _Executable:
    """One compiled signature: its runner and how its inputs bind."""

    def __init__(self, runner, data_inputs, state, train, optimizer, outputs, seed_index,
                 plan):
        self.runner = runner
        self.data_inputs = data_inputs  # input index per argument tensor (nested too)
        self.state = state              # [(input index, tensor)] module state
        self.train = train
        self.optimizer = optimizer
        self.outputs = outputs          # [(output index, placement)] results
        self.seed_index = seed_index
        self.plan = plan
        self.lr_index = runner.input_index.get("lr") if train else None
        self.seed = None
        self.traced = None  # (program, result refs): a forward's, for autograd
        # output index -> the traced result's dtype, where the plan's differs
        # (a uint8 result, which the plan computes as i32)
        self.result_dtypes = {}
        self.initialised = False
        # the module state a run replaces (parameters, optimizer-independent
        # state such as running statistics)
        updated = {o["updates"] for o in runner.outputs if o["updates"] >= 0}
        self.updated_state = [(i, t) for i, t in state if i in updated]

    def _bind_state(self):
        r = self.runner
        for index, t in self.state:
            if t._source == (r, index) or r.versions.get(index) == (id(t), t._version):
                continue
            r.set(index, self._value_for(index, t))
            r.versions[index] = (id(t), t._version)
        if self.train and not self.initialised:
            # optimizer state starts at zero (AdamW's step count too, and
            # f16's loss scale, 2^(16 + loss_scale_log2), and its count)
            for index, info in enumerate(r.inputs):
                if _optimizer_state(info["name"]):
                    r.set(index, np.zeros(info["shape"], dt.from_mlir(info["dtype"]).np))
            if getattr(self.optimizer, "_pending", None):  # load_state_dict's
                self.optimizer._load_pending(r, {id(t): r.inputs[i]["name"]
                                                 for i, t in self.state})
            self.initialised = True

    def take_optimizer_state(self, previous):
        """Continues the optimizer state of `previous`, the executable of
        another signature of the same step (a last batch of another size,
        the model moved to another device or cast): its values by name,
        cast to this plan's dtypes, and zeros for what it lacks. Parameters
        need no such care: their tensors say which session holds them."""
        r, p = self.runner, previous.runner
        for index, info in enumerate(r.inputs):
            if not _optimizer_state(info["name"]):
                continue
            np_dtype = dt.from_mlir(info["dtype"]).np
            j = p.input_index.get(info["name"])
            if j is not None and p.inputs[j]["shape"] == info["shape"]:
                value = p.input(j, dt.from_mlir(p.inputs[j]["dtype"]))
                r.set(index, value.astype(np_dtype))
            else:
                r.set(index, np.zeros(info["shape"], np_dtype))
        self.initialised = True

    def _value_for(self, index, t):
        """This rank's part of `t` as input `index` takes it: moved to the
        plan's distribution where --of-auto-parallel chose another one."""
        value = t._value()
        want = self.runner.input_dist(index)
        if t._placement is not None and want is not None and tuple(t._sbp) != want:
            value = _global.move(value, t.shape, t.dtype, t._placement, t._sbp,
                                 t._placement, list(want))
        return value

    def run(self, tensors, seed=None):
        """Runs on the arguments' tensors (_arguments' list, nested ones
        included)."""
        r = self.runner
        for a, index in zip(tensors, self.data_inputs):
            r.set(index, self._value_for(index, a))
        self._bind_state()
        if self.lr_index is not None:
            r.set(self.lr_index, np.array(self.optimizer.param_groups[0]["lr"], np.float32))
        if self.seed_index is not None:
            self.seed = seed if seed is not None else np.array(_random.seed64(), np.int64)
            r.set(self.seed_index, self.seed)
        r.run()
        for index, t in self.updated_state:
            t._version += 1
            t._source = (r, index)
            if t._placement is not None and r.input_dist(index) is not None:
                t._sbp = list(r.input_dist(index))  # as the plan holds it
            r.versions[index] = (id(t), t._version)
        if self.train:
            self.optimizer._steps += 1
            if getattr(self.optimizer, "_pending", None):
                self.optimizer._pending = {}  # taken by this step
        return [self.result(index, plc, r.output(index)) for index, plc in self.outputs]

    def result(self, index, plc, data=None):
        """Output `index` as a tensor: `data` (this rank's part), or none
        yet (a pending result, _PendingCall)."""
        r = self.runner
        info = r.outputs[index]
        shape = info["global_shape"] if plc is not None else info["shape"]
        dtype = self.result_dtypes.get(index) or dt.from_mlir(info["dtype"])
        return output_tensor(data, tuple(shape), dtype, plc, r.output_dist(index), r.device)


def _flatten(out, loss=None):
    """The tensors of a nested result (tuples, lists, dicts) in order, and
    its structure for _unflatten: a tensor is a leaf (the training step's
    `loss`, which the plan returns first, a leaf of its own); None and
    other Python values stay as they are."""
    leaves = []

    def structure(o):
        if o is loss and loss is not None:
            return ("loss",)
        if isinstance(o, Tensor):
            leaves.append(o)
            return ("tensor",)
        if isinstance(o, tuple) and hasattr(o, "_fields"):  # a namedtuple
            return ("namedtuple", type(o), [structure(x) for x in o])
        if isinstance(o, (tuple, list)):
            return (type(o).__name__, [structure(x) for x in o])
        if isinstance(o, dict):
            return ("dict", type(o), [(k, structure(v)) for k, v in o.items()])
        return ("value", o)
    return leaves, structure(out)


def _unflatten(structure, tensors, loss=None):
    kind = structure[0]
    if kind == "tensor":
        return next(tensors)
    if kind == "loss":
        return loss
    if kind == "value":
        return structure[1]
    if kind == "namedtuple":
        return structure[1](*[_unflatten(s, tensors, loss) for s in structure[2]])
    if kind == "dict":
        return structure[1]((k, _unflatten(s, tensors, loss)) for k, s in structure[2])
    items = [_unflatten(s, tensors, loss) for s in structure[1]]
    return tuple(items) if kind == "tuple" else items


def _record_call(name, executable, tensors, results):
    """Records a run of a compiled forward for the eager backward pass when
    one of its inputs (parameters included) requires gradients: the traced
    program is one op of the recorded program (_autograd.py)."""
    program = executable.traced
    inputs, positions = [], {id(t): i for i, t in enumerate(program.data_proxies)}
    for t in program.arg_tensors:
        if id(t) in positions:
            inputs.append(tensors[positions[id(t)]])
        elif t is program.seed_arg:
            inputs.append(Tensor(executable.seed, dtype=dt.int64))
        else:
            inputs.append(t)
    if not any(t.requires_grad for t in inputs):
        return
    record(TracedSpec(name, program), inputs, results, False)


class _PendingCall:
    """A call of a compiled forward (`of.compile(model)`) whose inputs
    require gradients: the standard loop's `model(x, y)`. It runs when one
    of its results is read (forward alone, then recorded for an eager
    backward), or, when `loss.backward()` on one of its results and then
    `opt.step()` follow with nothing read in between, as one compiled
    training step of the forward, the loss and the optimizer (the plan
    `of.compile(model, loss_fn, optimizer)` runs), which also returns the
    gradients, for a script that reads `.grad` after the step."""

    freed = False
    next_functions = ()

    def __init__(self, cf, entry, args, tensors):
        # a call before this one may be read later: it runs now, before
        # this one's step changes the parameters
        force_pending()
        self.cf, self.entry, self.args, self.tensors = cf, entry, list(args), tensors
        executable = entry[0]
        self.seed = np.array(_random.seed64(), np.int64) \
            if executable.seed_index is not None else None
        self.outputs = []
        for i, (index, plc) in enumerate(executable.outputs):
            t = executable.result(index, plc)
            t._pending = self
            if t.dtype.is_floating_point:
                t._grad_fn = (self, i)
            self.outputs.append(t)
        self.state = "pending"  # then "run" or "fused"
        self.loss_index = None  # loss.backward() on outputs[loss_index]
        self.grads = {}         # id(parameter) -> (parameter, its pending .grad)
        self.clip = None        # clip_grad_norm_'s max_norm on those gradients
        self.norm = None        # and its pending result
        self.fused = None       # after a fused step: (runner, its runs, the step)
        self.fused_names = None
        # the module state its run writes (batch norm's statistics): read,
        # it runs first
        self.writes = {id(t) for _, t in executable.updated_state}
        self.retain_graph = False
        self.autocast = _autocast.snapshot()
        _pending_calls.add(self)

    def name(self):
        return f"{self.cf.name}Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def params(self):
        return [t for _, t in self.entry[0].state if t.requires_grad]

    # -- reading ----------------------------------------------------------
    def value(self, t):
        """The value of pending tensor `t`: a result, a gradient or the
        clipped norm."""
        if self.fused is not None:
            runner, runs, step = self.fused
            if runner.runs != runs:
                raise RuntimeError(
                    "this gradient was computed by a fused training step (of.compile(model) "
                    "with loss.backward(); opt.step()) whose plan has run again since; read "
                    ".grad before the next step")
            if self.fused_names is None:  # the plan's name of each pending value
                bindings = step._bindings()
                self.fused_names = {id(g): "grad_" + bindings[pid][0]
                                    for pid, (_, g) in self.grads.items()}
                self.fused_names[id(self.norm)] = "grad_norm"
            j = runner.output_index[self.fused_names[id(t)]]
            t._data = runner.output(j)
            t._pending = None
            return
        self.run()
        if t._pending is self:  # a gradient or the norm
            self._backward()

    def run(self):
        """The forward alone, recorded for an eager backward."""
        if self.state != "pending":
            return
        self.state = "run"
        _pending_calls.discard(self)
        results = self.cf._run(self.entry, self.tensors, self.seed)
        for t, r in zip(self.outputs, results):
            t._data = r._data
            t._pending = None
            t._grad_fn = None
        _record_call(self.cf.name, self.entry[0], self.tensors, self.outputs)

    def _backward(self):
        """The eager backward that loss.backward() asked for (and the clip
        of clip_grad_norm_ recorded on its gradients)."""
        grads, self.grads = self.grads, {}
        pending = [g for _, g in grads.values() if g._pending is self]
        if not pending and self.norm is None:
            return
        root = self.outputs[self.loss_index]
        pairs = _autograd_gradients([root], [None], None, self.retain_graph)
        mine = {pid: g for pid, (_, g) in grads.items()}
        others = []
        for t, value in pairs:
            g = mine.get(id(t))
            if g is not None and g._pending is self:
                g._data, g._pending = value._value(), None
            elif g is None:
                others.append((t, value))
        _autograd_accumulate(others)
        if self.norm is not None:
            norm, self.norm = self.norm, None
            total = self.clip_now()  # clip_grad_norm_ on the computed gradients
            norm._data, norm._pending = total._value(), None

    # -- the loop's steps ---------------------------------------------------
    def request_backward(self, t, retain_graph):
        """loss.backward() on result `t`: gradients pending for the
        parameters (None if the backward must run now instead)."""
        if self.state != "pending" or self.loss_index is not None or retain_graph or \
                t.numel() != 1 or not t.dtype.is_floating_point or \
                not any(o is t for o in self.outputs):
            return False
        if any(a.requires_grad for a in self.tensors):
            return False
        params = self.params()
        if any(p.grad is not None for p in params):
            return False  # accumulation needs the values
        self.loss_index = next(i for i, o in enumerate(self.outputs) if o is t)
        for p in params:
            g = _pending_like(p, self)
            p.grad = g
            self.grads[id(p)] = (p, g)
        return True

    def request_clip(self, params, max_norm, clip_now):
        """clip_grad_norm_ on this call's pending gradients: the norm,
        pending (None where it must be computed now); `clip_now()` clips
        them where they are computed eagerly after all."""
        if self.state != "pending" or self.clip is not None or not self.grads:
            return None
        if {id(p) for p in params if p.grad is not None} != set(self.grads) or \
                any(p.grad is not self.grads[id(p)][1] for p in params if p.grad is not None):
            return None
        self.clip, self.clip_now = float(max_norm), clip_now
        self.norm = Tensor(None, shape=(), dtype=dt.float32)
        self.norm._pending = self
        return self.norm

    def fused_step(self, optimizer, params):
        """opt.step() on exactly this call's pending gradients: one compiled
        training step; False where it cannot be (the step then runs eagerly)."""
        if self.state != "pending" or self.loss_index is None:
            return False
        mine = self.params()
        if {id(p) for p in params} != {id(p) for p in mine} or \
                any(p.grad is not self.grads[id(p)][1] for p in mine):
            return False
        try:
            optimizer._check_one_update()
        except NotImplementedError:
            return False
        key = (id(optimizer), self.loss_index, self.clip)
        step = self.cf._fused.get(key)
        if step is None:
            step = CompiledFunction(self.cf.fn, self.cf.modules, self.cf.name, optimizer,
                                    self.cf.dump_dir, self.cf.amp,
                                    max_grad_norm=self.clip)
            step.loss_leaf, step.grads_out = self.loss_index, True
            self.cf._fused[key] = step
        optimizer._hand_over(step)
        self.state = "fused"
        _pending_calls.discard(self)
        force_pending()
        # the forward's entry keys the step's (same arguments, modules and
        # autocast state), with the optimizer's compiled-in settings
        entries = self.cf._fused_entries
        entry_key = (id(self.entry), key, tuple(optimizer._pipeline_options()))
        entry = entries.get(entry_key)
        if entry is None:
            with _autocast.restored(self.autocast):
                entry = entries[entry_key] = step._entry(self.args)
        results = step._run(entry, self.tensors, self.seed)
        loss, rest = results[0], iter(results[1:])
        for i, t in enumerate(self.outputs):
            r = loss if i == self.loss_index else next(rest)
            # the step's distribution with its data: the forward's loss is a
            # partial sum (P) over the ranks, the step's is reduced (B)
            t._data, t._sbp, t._pending, t._grad_fn = r._data, r._sbp, None, None
        runner = entry[0].runner
        self.fused = (runner, runner.runs, step)
        return True


_BLANK = None


def _pending_like(p, call):
    """A tensor of `p`'s type whose value `call` computes (a gradient of the
    fused loop: one per parameter per step, made without __init__'s
    argument handling)."""
    global _BLANK
    if _BLANK is None:
        _BLANK = dict(Tensor(np.zeros(0, np.float32)).__dict__)
    g = Tensor.__new__(Tensor)
    g.__dict__.update(_BLANK)
    g._data, g._shape, g._dtype = None, p._shape, p._dtype
    g._placement, g._sbp, g._local_device = p._placement, p._sbp, p._local_device
    g._pending = call
    return g


class CompiledFunction:
    """A function traced and compiled per input signature. Call it like the
    function; `save_plan(path)` writes the last compiled plan, and
    `save_plan(path, *example_args)` the plan for their signature."""

    def __init__(self, fn, modules, name, optimizer=None, dump_dir=None, amp=None,
                 zero=False, max_grad_norm=None, auto_parallel=False):
        self.fn = fn
        self.modules = modules  # [(prefix, Module)]
        self.name = name
        self.optimizer = optimizer
        self.dump_dir = dump_dir
        self.amp = amp
        self.zero = zero
        self.auto_parallel = auto_parallel
        self.max_grad_norm = max_grad_norm
        self.loss_only = False  # of.compile(model, loss_fn, optimizer): the loss alone
        # a fused step of the standard loop (_PendingCall): the loss is the
        # function's result `loss_leaf` (in _flatten's order), and the plan
        # also returns the gradients (grads-out)
        self.loss_leaf = None
        self.grads_out = False
        self._fused = {}  # (optimizer, loss leaf, clip) -> its CompiledFunction
        self._fused_entries = {}  # (forward entry, that key, settings) -> the step's entry
        if optimizer is not None and hasattr(optimizer, "_compiled_steps"):
            optimizer._compiled_steps.add(self)  # its state_dict reads the step's
        self._cache = {}
        self._last = None
        self.compiles = 0
        try:
            self._arg_names = [p for p in inspect.signature(fn).parameters]
        except (TypeError, ValueError):
            self._arg_names = []

    # -- pipeline --------------------------------------------------------
    def _pipeline(self, device):
        parts = [pipeline_for(device)]
        opt = self.optimizer
        if opt is not None:
            parts += opt._pipeline_options()
            if self.max_grad_norm:
                parts.append(f"max-grad-norm={float(self.max_grad_norm)!r}")
            if self.zero:
                parts.append("zero=true")
            if self.grads_out:
                parts.append("grads-out=true")
        if self.amp:
            parts.append(f"amp={self.amp}")
        if self.auto_parallel:
            parts.append("auto=true")
        return ",".join(parts)

    def _bindings(self):
        bindings = {}
        for prefix, module in self.modules:
            trainable = {id(p) for p in module.parameters() if p.requires_grad}
            for name, t in module.state_dict().items():
                full = prefix + name
                if id(t) not in bindings:
                    bindings[id(t)] = (full, id(t) in trainable)
        return bindings

    def _trace(self, args):
        train = self.optimizer is not None
        if train and hasattr(self.optimizer, "_check_one_update"):
            self.optimizer._check_one_update()
        program = Program(self.name, trace=True)
        program.train = train
        program.auto_parallel = self.auto_parallel
        program.bindings = self._bindings()
        program.weight_decays = self.optimizer._weight_decays() if train else {}
        # every tensor of the arguments (nested ones too) is an argument of
        # the program, named after its parameter (and its place inside it)
        data_args, proxies = [], []

        def proxy_of(a, name):
            if isinstance(a, Tensor):
                proxy = Tensor(shape=a.shape, dtype=a.dtype, placement=a._placement,
                               sbp=a._sbp, program=program, device=a._local_device)
                program.add_arg(proxy, name=name)
                data_args.append(name)
                proxies.append(proxy)
                return proxy
            if isinstance(a, tuple) and hasattr(a, "_fields"):
                return type(a)(*[proxy_of(x, f"{name}.{k}") for k, x in zip(a._fields, a)])
            if isinstance(a, (tuple, list)):
                return type(a)(proxy_of(x, f"{name}.{k}") for k, x in enumerate(a))
            if isinstance(a, dict):
                return type(a)((k, proxy_of(v, f"{name}.{k}")) for k, v in a.items())
            return a
        sym_args = [proxy_of(a, self._arg_names[i] if i < len(self._arg_names)
                             else f"input{i}") for i, a in enumerate(args)]
        program.data_proxies = proxies
        previous = _trace.program
        _trace.program = program
        try:
            out = self.fn(*sym_args)
        finally:
            _trace.program = previous
        return program, out, data_args

    def _result_list(self, program, out):
        """The tensors the plan returns, and how to rebuild `out` from them
        (its structure: tuples, lists, dicts, Nones and Python values as
        they are). A training step returns the loss first: the one
        loss.backward() was called on, else the scalar `out` is or ends
        with."""
        loss = None
        if self.optimizer is not None and self.loss_leaf is not None:
            loss = _flatten(out)[0][self.loss_leaf]
        elif self.optimizer is not None:
            loss = program.loss
            last = out[-1] if isinstance(out, (tuple, list)) and out else out
            if loss is None and isinstance(last, Tensor) and last._program is program and \
                    last.numel() == 1:
                loss = last
            if loss is None:
                raise RuntimeError(
                    f"{self.name}: a training step needs a scalar loss: call "
                    "loss.backward() in the traced function, or return the loss")
            if self.loss_only:
                return [loss], None
        leaves, structure = _flatten(out, loss)
        for o in leaves:
            if o._program is not program:
                raise RuntimeError(f"{self.name}: the traced function must return tensors "
                                   "computed from its inputs")
        return ([loss] if loss is not None else []) + leaves, structure

    def _compile(self, args):
        """Traces the function for `args` and compiles the program: the
        plan, its device, the traced program, the result names, the
        results' placement, the data arguments and the result layout."""
        program, out, data_args = self._trace(args)
        results, layout = self._result_list(program, out)
        plc = next((t._placement for t in program.arg_tensors if t._placement is not None),
                   None)
        refs = []
        for i, r in enumerate(results):
            ref = program.values[id(r)]
            ty = program._types[ref]
            if i == 0 and plc is not None and self.optimizer is not None:
                # the loss on every rank
                boxed = _type(r.shape, r.dtype, plc, (S.broadcast,) * plc.ndim)
                program.lines.append(f"%loss_b = of.boxing {ref} : {ty} -> {boxed}")
                ref, ty = "%loss_b", boxed
            refs.append((ref, ty))
        names = [f"out{i}" for i in range(len(refs))]
        if self.optimizer is not None:
            names = ["loss"] + names[:-1]
        attrs = [f'of.name = "{n}"' for n in names]
        # State the program writes (batch norm's running statistics): results
        # that update their arguments, so the runtime keeps them.
        arg_index = {ssa: i for i, (ssa, _, _) in enumerate(program.args)}
        for k, (buffer, value) in enumerate(program.updates):
            index = arg_index[program.values[id(buffer)]]
            ref, ty = program.values[id(value)], program._types[program.values[id(value)]]
            arg_type = program.args[index][1]
            if ty != arg_type:
                program.lines.append(f"%upd{k} = of.boxing {ref} : {ty} -> {arg_type}")
                ref = f"%upd{k}"
            refs.append((ref, arg_type))
            name = program.bindings[id(buffer)][0]
            attrs.append(f'of.name = "{name}", of.update = {index} : i64')
        program.result_refs = [ref for ref, _ in refs[:len(names)]]
        program.result_dtypes = [r.dtype for r in results]
        text = program.text(refs, attrs)
        device = program.device or "cpu"
        plan = compile_program(text, self._pipeline(device), self.name,
                               dump_dir=self.dump_dir, progress=progress)
        self.compiles += 1
        return plan, device, program, names, plc, data_args, layout

    def _build(self, args):
        start = time.perf_counter()
        plan, device, program, names, plc, data_args, layout = self._compile(args)
        entry = self.name + "_train_step" if self.optimizer is not None else self.name
        runner = Runner(plan, entry, device)
        index = runner.input_index
        data_inputs = [index[n] for n in data_args]
        state = [(index[name], t) for (name, _), t in
                 ((program.bindings[id(t)], t) for t in program.arg_tensors
                  if id(t) in program.bindings)]
        out_map = runner.output_index = {d["name"]: i for i, d in enumerate(runner.outputs)}
        outputs = [(out_map[n], plc) for n in names]
        seed_index = index.get("dropout_seed")
        log_debug(f"{self.name}: traced and compiled in {time.perf_counter() - start:.2f} s")
        executable = _Executable(runner, data_inputs, state, self.optimizer is not None,
                                 self.optimizer, outputs, seed_index, plan)
        executable.result_dtypes = {out_map[n]: d for n, d in
                                    zip(names, program.result_dtypes)
                                    if d.carrier != d.np and d.np is not None}
        if self.optimizer is None:
            executable.traced = program
        return executable, layout

    def _module_key(self):
        """What of the modules changes the traced program: train/eval modes,
        which tensors are the state and which are trained (walked without
        state_dict's names: this runs at every call)."""
        key = []
        for _, module in self.modules:
            if not hasattr(module, "_modules"):  # the optimizer's parameter holder
                key.extend((id(t), t.requires_grad, t.device, t.dtype.name)
                           for t in module.state_dict().values())
                continue
            stack = [module]
            while stack:
                m = stack.pop()
                key.append(m.training)
                for group in (m._parameters, m._buffers):
                    key.extend((id(t), t.requires_grad, t.device, t.dtype.name)
                               for t in group.values() if t is not None)
                stack.extend(c for c in reversed(m._modules.values()) if c is not None)
        return tuple(key)

    def _entry(self, args):
        # the optimizer's compiled-in settings (momentum, betas: a scheduler
        # may cycle them) are part of the key; a new executable continues the
        # optimizer state of the last one
        options = tuple(self.optimizer._pipeline_options()) if self.optimizer else ()
        # autocast regions change the traced program (its casts)
        key = (_signature(args), self._module_key(), options, _autocast.key())
        entry = self._cache.get(key)
        if entry is None:
            entry = self._build(args)
            self._cache[key] = entry
        return entry

    def executable(self, args):
        """The compiled signature `args` run (compiled now if it is new),
        without running it."""
        return self._entry(args)[0]

    def _run(self, entry, tensors, seed=None):
        """Runs compiled signature `entry` (continuing the optimizer state of
        the signature run before); its result tensors."""
        previous = self._last[0] if self._last is not None else None
        self._last = entry
        executable = entry[0]
        if executable.train and hasattr(self.optimizer, "_hand_over"):
            self.optimizer._hand_over(self)
        if executable.train and previous is not None and previous is not executable and \
                previous.initialised:
            executable.take_optimizer_state(previous)
        return executable.run(tensors, seed)

    def __call__(self, *args):
        args, tensors = _arguments(args)
        entry = self._entry(args)
        executable, layout = entry
        if executable.traced is not None and _grad_mode._mode.enabled and (
                any(t.requires_grad for _, t in executable.state) or
                any(t.requires_grad for t in tensors)):
            # the standard loop: run when a value is needed, or fused with
            # loss.backward() and opt.step() into one training step
            return _unflatten(layout, iter(_PendingCall(self, entry, args, tensors).outputs),
                              None)
        results = self._run(entry, tensors)
        loss = None
        if self.optimizer is not None:
            # of.compile(model, ..., optimizer) returns the loss; a Graph
            # returns what its build() returns
            loss, results = results[0], results[1:]
            if self.loss_only:
                return loss
        return _unflatten(layout, iter(results), loss)

    # -- plans and state ----------------------------------------------------
    def _executable(self):
        if self._last is None:
            raise RuntimeError(f"{self.name} has not been called yet, so nothing is compiled")
        return self._last[0]

    def save_plan(self, path, *example_args):
        """Writes a compiled plan (.ofp) that `of-run` executes without
        Python: the one last run, or, given example arguments, the one for
        their signature, compiled without running anything, so that a plan
        for "cuda" tensors can be made on a machine without a GPU. Its
        entry is `<name>` (`<name>_train_step` with an optimizer), its
        inputs are named after the function's parameters and the
        state_dict keys."""
        plan = self._compile(_arguments(example_args)[0])[0] if example_args else \
            self._executable().plan
        with open(path, "wb") as f:
            f.write(plan)

    def save_state(self, path, step=None):
        """Saves parameters and optimizer state as one safetensors file of
        global tensors (collective on every rank)."""
        ex = self._executable()
        ex._bind_state()
        ex.runner.session.save_state(path, step if step is not None
                                     else getattr(self.optimizer, "_steps", 0))

    def load_state(self, path):
        """Loads parameters and optimizer state saved by save_state (or by
        of-run --save-state); returns the step it was saved at."""
        ex = self._executable()
        ex._bind_state()
        step = ex.runner.session.load_state(path)
        names = tensor_names(path)
        for index, t in ex.state:
            if ex.runner.inputs[index]["name"] in names:
                t._version += 1
                t._source = (ex.runner, index)
                ex.runner.versions[index] = (id(t), t._version)
        ex.initialised = True
        if self.optimizer is not None:
            self.optimizer._steps = step
        return step


class CompiledModule(CompiledFunction):
    """of.compile(module) (torch.compile(module)): called like the module,
    its forward compiled per input signature and mode; otherwise the
    module itself, as torch.compile's OptimizedModule is: parameters(),
    state_dict(), train()/eval(), to(), its attributes. `_orig_mod` is the
    module."""

    @property
    def _orig_mod(self):
        return self.modules[0][1]

    def __getattr__(self, name):
        modules = self.__dict__.get("modules")
        if not modules:
            raise AttributeError(name)
        return getattr(modules[0][1], name)

    def train(self, mode=True):
        self._orig_mod.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, **kwargs):
        self._orig_mod.to(*args, **kwargs)
        return self

    # The module is the child `_orig_mod`, so names carry that prefix, as
    # in PyTorch (nanoGPT strips it when it loads such a checkpoint).
    _PREFIX = "_orig_mod"

    def named_modules(self, memo=None, prefix=""):
        yield prefix, self
        yield from self._orig_mod.named_modules(
            memo, prefix + ("." if prefix else "") + self._PREFIX)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._orig_mod.named_parameters(
            prefix + ("." if prefix else "") + self._PREFIX, recurse, remove_duplicate)

    def named_buffers(self, prefix=""):
        return self._orig_mod.named_buffers(prefix + ("." if prefix else "") + self._PREFIX)

    def state_dict(self, prefix=""):
        return self._orig_mod.state_dict(prefix + self._PREFIX + ".")

    def load_state_dict(self, state_dict, strict=True):
        prefix = self._PREFIX + "."
        unexpected = [k for k in state_dict if not k.startswith(prefix)]
        if strict and unexpected:
            raise KeyError(f"load_state_dict: missing keys [], unexpected keys {unexpected} "
                           f"(a compiled module's keys start with '{prefix}', as PyTorch's)")
        result = self._orig_mod.load_state_dict(
            {k[len(prefix):]: v for k, v in state_dict.items() if k.startswith(prefix)},
            strict)
        return type(result)([prefix + k for k in result.missing_keys],
                            [prefix + k for k in result.unexpected_keys] + unexpected)

    def __repr__(self):
        return f"CompiledModule({self._orig_mod!r})"

