"""Eager autograd (torch.autograd's engine; `of.autograd` is its public
face): what eager ops record, and the backward pass.

An eager op whose inputs require gradients (while gradients are enabled)
records a `Node`: its op (the same `OpSpec` the op ran) and where each
operand came from: the output of an earlier node, a leaf that requires
gradients, or a value that needs none. The values are kept as they were
when the op ran (eager values are replaced, never written in place, so
keeping the array keeps the value).

`backward` replays the recorded ops that lead to the roots as one `of`
function whose leaves are `{of.param}` arguments and whose result is the
scalar to differentiate (the root itself, or the sum of each root times
its gradient), and compiles it with `--of-autodiff`: the gradients come
from each op's `GradientOpInterface`, the one definition the compiled
training step uses too, and no formula is written here. One plan per
recorded program text, cached as eager ops' are: a training loop of fixed
shapes compiles its backward pass once. The plan recomputes the forward
values it needs (the eager ones are not fed back), as activation
checkpointing does.
"""

import itertools
import re
import weakref

import numpy as np

from . import _dtype as dt
from ._compat import unsupported
from ._compile import compile_program, pipeline_for
from ._grad_mode import check_inplace_leaf, is_grad_enabled, no_grad
from ._program import OpSpec, Program, _type, _write_op, tracing
from ._session import Runner
from ._tensor import Tensor, output_tensor

_sequence = itertools.count()


class Node:
    """A recorded op (the `grad_fn` of its floating-point results)."""

    __slots__ = ("seq", "spec", "inputs", "freed", "observers", "__weakref__")

    def __init__(self, spec, inputs):
        self.seq = next(_sequence)
        self.spec = spec
        # per operand: ("n", node, index) an earlier node's result,
        # ("l", tensor, value) a leaf that requires gradients, ("c", tensor,
        # value) a value that needs none, ("k", tensor, value) a Python
        # number the op embedded as a constant
        self.inputs = inputs
        self.freed = False
        # result index -> [weakref to a tensor holding it] whose gradient a
        # backward delivers (retain_grad, hooks on non-leaf tensors)
        self.observers = None

    def name(self):
        op = self.spec.fmt.split()[0].split(".")[-1]
        return "".join(w.capitalize() for w in op.split("_")) + "Backward0"

    @property
    def next_functions(self):
        if self.inputs is None:
            return ()
        return tuple((ref[1], ref[2]) if ref[0] == "n" else (None, 0) for ref in self.inputs)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


_SSA = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")


class TracedSpec:
    """A compiled function's traced program (`of.compile(module)`'s
    forward) as one recorded op: replayed by inlining its ops under fresh
    names, its arguments replaced by the operands."""

    def __init__(self, name, program):
        self.fmt = f"of.{name}"
        self.program = program

    def write(self, program, operands):
        inner = self.program
        mapping = {ssa: op for (ssa, _, _), op in zip(inner.args, operands)}
        prefix = program.fresh("f")[1:] + "_"

        def rename(m):
            return mapping.get(m.group(0)) or f"%{prefix}{m.group(1)}"
        program.lines += [_SSA.sub(rename, line) for line in inner.lines]
        program.placements.update(inner.placements)
        if inner.device is not None:
            program.note_device(inner.device, "a compiled function's program")
        refs = []
        for r in inner.result_refs:
            ref = _SSA.sub(rename, r)
            program._types[ref] = inner._types[r]
            refs.append(ref)
        return refs


def _write(program, spec, operands):
    if isinstance(spec, TracedSpec):
        return spec.write(program, operands)
    return _write_op(program, spec, operands, None)


def observe(t):
    """Asks backward for the gradient of recorded result `t` (retain_grad,
    a hook on a non-leaf tensor)."""
    node, i = t._grad_fn
    if node.observers is None:
        node.observers = {}
    refs = node.observers.setdefault(i, [])
    if not any(r() is t for r in refs):
        refs.append(weakref.ref(t))


def record(spec, inputs, outs, scalar_mix):
    """Records op `spec`, which ran on `inputs` and gave `outs`, when an
    input requires gradients; its floating-point results then do."""
    refs = []
    for t in inputs:
        if t._grad_fn is not None:
            refs.append(("n",) + t._grad_fn)
        elif scalar_mix and t._placement is None:
            refs.append(("k", t, t._value()))
        else:
            refs.append(("l" if t._requires_grad else "c", t, t._value()))
    node = Node(spec, refs)
    for i, o in enumerate(outs):
        if o._dtype.is_floating_point:
            o._grad_fn = (node, i)


_SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def _nodes(roots):
    """The nodes the roots depend on, in the order they ran, and whether a
    custom Function's node is among them (where the walk stops: its results
    are the program's leaves, see _segmented)."""
    seen, stack = {}, [t._grad_fn[0] for t in roots if t._grad_fn is not None]
    custom = False
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        if node.freed:
            raise RuntimeError(_SECOND_BACKWARD)
        if isinstance(node, FunctionNode):
            custom = True
            continue
        seen[id(node)] = node
        for ref in node.inputs:
            if ref[0] == "n":
                stack.append(ref[1])
    return sorted(seen.values(), key=lambda n: n.seq), custom


_runners = {}
_RUNNER_LIMIT = 64


def _runner(text, device):
    runner = _runners.pop(text, None)  # re-inserted: the most recent last
    if runner is None:
        plan = compile_program(text, pipeline_for(device) + ",autodiff=true", "backward")
        runner = Runner(plan, "autograd_grad", device)
        if len(_runners) >= _RUNNER_LIMIT:
            _runners.pop(next(iter(_runners)))
    _runners[text] = runner
    return runner


def _check_root(t, grad, i):
    if t._grad_fn is None and not t._requires_grad:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                           "a grad_fn")
    if grad is None:
        if t.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not t._dtype.is_floating_point:
            raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                               f"but got {t._dtype}")
        return None
    if not isinstance(grad, Tensor):
        raise TypeError(f"gradient must be a Tensor or None, not {type(grad).__name__}")
    if tuple(grad.shape) != tuple(t.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{_size_text(grad.shape)} and output[{i}] has a shape of {_size_text(t.shape)}.")
    if grad.dtype != t.dtype:
        raise RuntimeError(f"gradient {i} is {grad.dtype} but its output is {t.dtype}")
    return grad


def _size_text(shape):
    return "torch.Size([" + ", ".join(str(d) for d in shape) + "])"


def gradients(roots, grads, wrt=None, retain_graph=False, _segment=None):
    """The gradients of sum(root * grad) over the roots (a root without a
    grad: itself, of one element) with respect to `wrt` (tensors; None:
    every leaf that requires gradients), as [(tensor, gradient)] with one
    entry per tensor in `wrt` order (None for one nothing depends on).
    The gradient of a recorded result (not a leaf) is that of a zero added
    to it where it was computed. Frees the recorded graph unless
    `retain_graph`. With `_segment` (a pass of _segmented: a dict the pass
    adds its nodes to), the results of custom Functions are leaves: their
    gradients come back with their proxies."""
    for t in roots:  # results of compiled forwards not run yet run now
        if t._pending is not None:
            t._value()
    grads = [_check_root(t, g, i) for i, (t, g) in enumerate(zip(roots, grads))]
    probes = {}
    if wrt is not None:
        for t in wrt:
            if t._grad_fn is not None:
                probes[(id(t._grad_fn[0]), t._grad_fn[1])] = t
            elif not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    nodes, custom = _nodes(roots)
    if _segment is not None:
        _segment.update((id(n), n) for n in nodes)
    elif custom:
        return _segmented(roots, grads, wrt, retain_graph)
    # results whose gradient is asked for (retain_grad, hooks): observed like
    # differentiated results, through a zero added where they are computed
    observed = {}
    if wrt is None:
        for node in nodes:
            for i, refs in (node.observers or {}).items():
                alive = [t for t in (r() for r in refs)
                         if t is not None and t._grad_fn == (node, i)]
                if alive:
                    observed[(id(node), i)] = alive
                    probes.setdefault((id(node), i), alive[0])

    program = Program("autograd")
    ssa, values, params = {}, [], []
    wrt_ids = None if wrt is None else {id(t) for t in wrt}

    def argument(t, value, param):
        ref = program.add_arg(t, param=param)
        values.append(value)
        if param:
            params.append(t)
        return ref

    def leaf(kind, t, value):
        key = (id(t), id(value))
        if key not in ssa:
            param = kind == "l" and (wrt_ids is None or id(t) in wrt_ids)
            ssa[key] = argument(t, value, param)
        return ssa[key]

    for node in nodes:
        operands = []
        for ref in node.inputs:
            if ref[0] == "n" and isinstance(ref[1], FunctionNode):
                proxy = ref[1].proxies[ref[2]]
                operands.append(leaf("l", proxy, proxy._value()))
            elif ref[0] == "n":
                operands.append(ssa[(id(ref[1]), ref[2])])
            elif ref[0] == "k":
                operands.append(program.constant(ref[2], ref[1]._dtype))
            else:
                operands.append(leaf(*ref))
        for i, r in enumerate(_write(program, node.spec, operands)):
            t = probes.get((id(node), i))
            if t is not None:  # r + 0, the zero a parameter
                zero = argument(t, np.zeros(t.shape, t._dtype.np), True)
                r = _write_op(program, OpSpec("of.add {0}, {1}", "", [(t.shape, t._dtype)]),
                              [r, zero], None)[0]
            ssa[(id(node), i)] = r

    def root_ref(t):
        if t._grad_fn is not None and isinstance(t._grad_fn[0], FunctionNode):
            proxy = t._grad_fn[0].proxies[t._grad_fn[1]]
            return leaf("l", proxy, proxy._value())
        if t._grad_fn is not None:
            return ssa[(id(t._grad_fn[0]), t._grad_fn[1])]
        return leaf("l", t, t._value())

    terms = []
    for t, g in zip(roots, grads):
        ref = root_ref(t)
        if g is None and not t.shape:
            terms.append((ref, t._dtype))
            continue
        if g is not None:
            gref = argument(g, g._value(), False)
            ref = _write_op(program, OpSpec("of.mul {0}, {1}", "", [(t.shape, t._dtype)]),
                            [ref, gref], None)[0]
        axes = ", ".join(str(a) for a in range(len(t.shape)))
        ref = _write_op(program, OpSpec("of.reduce_sum {0}", f"axes = array<i64: {axes}>",
                                        [((), t._dtype)]), [ref], None)[0]
        terms.append((ref, t._dtype))
    loss, dtype = terms[0]
    for ref, d in terms[1:]:
        if d != dtype:
            raise RuntimeError(f"backward of outputs of different dtypes ({dtype}, {d})")
        loss = _write_op(program, OpSpec("of.add {0}, {1}", "", [((), dtype)]),
                         [loss, ref], None)[0]

    if not params:  # nothing differentiated is used (autograd.grad's unused inputs)
        if wrt is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not "
                               "have a grad_fn")
        _free(nodes, retain_graph)
        return [(t, None) for t in wrt]
    if program.placements and any(t._placement is None and not t._device_neutral()
                                  for t in program.arg_tensors):
        raise ValueError("backward through ops that mix global and local tensors")
    text = program.text([(loss, _type((), dtype))])
    runner = _runner(text, program.device or "cpu")
    for i, v in enumerate(values):
        runner.set(i, v)
    runner.run()

    by_tensor = {}
    for k, t in enumerate(params):
        g = output_tensor(runner.output(k + 1), t.shape, t._dtype, t._placement,
                          runner.output_dist(k + 1), runner.device)
        if id(t) in by_tensor:  # a leaf read at two versions
            prev = by_tensor[id(t)][1]
            g = Tensor(prev._value() + g._value(), shape=t.shape, dtype=t._dtype,
                       placement=t._placement, sbp=prev._sbp,
                       device=None if t._placement is not None else runner.device)
        by_tensor[id(t)] = (t, g)

    _free(nodes, retain_graph)
    if wrt is None:
        for tensors in observed.values():  # the others holding that result
            g = by_tensor.get(id(tensors[0]), (None, None))[1]
            for t in tensors[1:]:
                by_tensor[id(t)] = (t, g)
        return list(by_tensor.values())
    return [(t, by_tensor.get(id(t), (t, None))[1]) for t in wrt]


def _free(nodes, retain_graph):
    if not retain_graph:
        for node in nodes:
            node.freed = True
            node.inputs = None


def accumulate(pairs):
    """Adds each gradient to its leaf's `.grad` (after the leaf's hooks),
    as PyTorch's AccumulateGrad does; a non-leaf's gradient goes to its
    hooks, and to its `.grad` if it retains it."""
    for t, g in pairs:
        if g is None:
            continue
        leaf = t._grad_fn is None
        for hook in t._grad_hooks or ():
            out = hook(g)
            if out is not None and not leaf:
                raise NotImplementedError(
                    "a hook on a non-leaf tensor that returns a new gradient: of computes "
                    "the backward pass as one program, so the gradients before this tensor "
                    "are computed already; return None (observe), or hook the leaves")
            if out is not None:
                g = out
        if not leaf and not t._retains_grad:
            continue
        if t.grad is None:
            t.grad = g
        else:
            t.grad._set_value(t.grad._value() + g._value())


# --------------------------------------------------------------------------
# torch.autograd's functions.

def _as_list(x, what):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return list(x)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, not "
                    f"{type(x).__name__}")


def _grad_list(grads, n):
    if grads is None:
        return [None] * n
    grads = [grads] if isinstance(grads, Tensor) else list(grads)
    if len(grads) != n:
        raise RuntimeError(f"got {len(grads)} tensors and {n} gradients")
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulates into the `.grad` of the leaves (or of `inputs`) the
    gradient of the sum of `tensors` weighted by `grad_tensors`."""
    unsupported("torch.autograd.backward", create_graph=(create_graph, False),
                grad_variables=(grad_variables, None))
    roots = _as_list(tensors, "tensors")
    wrt = None if inputs is None else _as_list(inputs, "inputs")
    if wrt is not None and not wrt:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if len(roots) == 1 and roots[0]._pending is not None and grad_tensors is None and \
            wrt is None and roots[0]._pending.request_backward(roots[0], bool(retain_graph)):
        return  # pending with its compiled forward (the standard loop under of.compile)
    pairs = gradients(roots, _grad_list(grad_tensors, len(roots)), wrt,
                      bool(retain_graph))
    accumulate(pairs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The gradients of the sum of `outputs` weighted by `grad_outputs`
    with respect to `inputs` (a tuple), without touching any `.grad`."""
    unsupported("torch.autograd.grad", create_graph=(create_graph, False),
                is_grads_batched=(is_grads_batched, False))
    roots = _as_list(outputs, "outputs")
    wrt = _as_list(inputs, "inputs")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    allow_unused = bool(allow_unused) or materialize_grads
    pairs = gradients(roots, _grad_list(grad_outputs, len(roots)), wrt,
                            bool(retain_graph))
    result = []
    for i, (t, g) in enumerate(pairs):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = Tensor(np.zeros(t.shape, t._dtype.np), dtype=t._dtype,
                           placement=t._placement, sbp=t._sbp,
                           device=None if t._placement is not None else t.device)
        result.append(g)
    return tuple(result)


class FunctionCtx:
    """The `ctx` of a custom Function: what forward saves for backward."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()
        self.non_differentiable = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        raise NotImplementedError("ctx.mark_dirty (a custom Function that changes its inputs "
                                  "in place) is not supported: return new tensors")


def _sum(a, b):
    """a + b of two gradients (None: nothing yet)."""
    if a is None:
        return b
    return Tensor(a._value() + b._value(), dtype=b._dtype, device=b._local_device)


class FunctionNode:
    """The recorded call of a custom Function (the `grad_fn` of its
    floating-point results): its backward is the user's Python, so a
    backward through it is differentiated in segments (_segmented)."""

    def __init__(self, function, ctx, args, outputs, outs):
        self.seq = next(_sequence)
        self.function, self.ctx, self.args = function, ctx, args
        # every result of forward (backward takes a gradient for each), and
        # which of them are `outputs`, the differentiable ones
        self.outs = [(tuple(o.shape), o._dtype, o._local_device) if isinstance(o, Tensor)
                     else None for o in outs]
        self.positions = [next(i for i, o in enumerate(outs) if o is r) for r in outputs]
        # per result: a leaf holding its value, which the programs of the
        # ops that use it read; their gradient with respect to it is the
        # result's gradient
        self.proxies = []
        for i, o in enumerate(outputs):
            proxy = Tensor(o._value(), dtype=o._dtype, device=o._local_device)
            proxy._requires_grad = True
            proxy._proxy_of = (self, i)
            self.proxies.append(proxy)
        self.freed = False
        self.observers = None

    def name(self):
        return f"{self.function.__name__}Backward"

    @property
    def next_functions(self):
        return tuple((a._grad_fn[0], a._grad_fn[1]) if isinstance(a, Tensor) and
                     a._grad_fn is not None else (None, 0) for a in self.args)

    def __repr__(self):
        return f"<torch.autograd.function.{self.name()} object at {id(self):#x}>"

    def run_backward(self, grads):
        """The user's backward on the results' gradients (zeros for a result
        nothing used, unless the ctx asked otherwise): one gradient or None
        per forward argument."""
        if self.freed:
            raise RuntimeError(_SECOND_BACKWARD)
        every = [None] * len(self.outs)
        for position, g in zip(self.positions, grads):
            every[position] = g
        if self.ctx.materialize_grads:  # zeros for the others, as PyTorch's
            every = [g if g is not None or out is None else
                     Tensor(np.zeros(out[0], out[1].np), dtype=out[1], device=out[2])
                     for g, out in zip(every, self.outs)]
        with no_grad():
            out = self.function.backward(self.ctx, *every)
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != len(self.args):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {len(self.args)}, got {len(out)})")
        checked = []
        for i, (a, g) in enumerate(zip(self.args, out)):
            if g is not None and isinstance(a, Tensor):
                if not isinstance(g, Tensor):
                    raise TypeError(f"function {self.name()} returned a gradient of type "
                                    f"{type(g).__name__} at index {i}, not a Tensor or None")
                g = _sum_to(g, tuple(a.shape), self.name(), i)
            checked.append(g)
        return checked


def _sum_to(g, shape, name, i):
    """A custom backward's gradient summed down to its input's shape, where
    the input's shape broadcasts to it (PyTorch's validate_outputs)."""
    have = tuple(g.shape)
    if have == shape:
        return g
    lead = len(have) - len(shape)
    if lead < 0 or any(s not in (1, h) for s, h in zip(shape, have[lead:])):
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                           f"{list(have)} but expected shape compatible with {list(shape)}")
    value = g._value().sum(axis=tuple(range(lead)))
    value = value.sum(axis=tuple(d for d, s in enumerate(shape) if s == 1 and value.shape[d] != 1),
                      keepdims=True).reshape(shape)
    return Tensor(np.ascontiguousarray(value), dtype=g._dtype, device=g._local_device)


def _segmented(roots, grads, wrt, retain_graph):
    """`gradients` through custom Functions. A compiled pass differentiates
    the recorded ops from the roots to the leaves and to the custom
    Functions' results; then the custom Function that ran last among those
    waiting gets its results' gradients (complete: only what ran after it
    uses them), runs its backward, and its arguments' gradients are the
    roots of the next pass; until none waits. Leaves' gradients add up
    over the passes."""
    if wrt is not None and any(t._grad_fn is not None for t in wrt):
        raise NotImplementedError("torch.autograd.grad with respect to a non-leaf tensor "
                                  "through a custom autograd.Function: ask for the leaves")
    waiting = {}  # id(FunctionNode) -> (node, [gradient per result])
    found = {}    # id(tensor) -> (tensor, gradient)
    # the passes keep the graph (a value before a custom Function may be
    # used after it too, and reached again); freed at the end
    touched = {}

    def run(pass_roots, pass_grads):
        collect(gradients(pass_roots, pass_grads, None, True, _segment=touched))

    def deliver(node, i, g):
        entry = waiting.setdefault(id(node), (node, [None] * len(node.proxies)))
        entry[1][i] = _sum(entry[1][i], g)

    def collect(pairs):
        for t, g in pairs:
            if g is None:
                continue
            owner = getattr(t, "_proxy_of", None)
            if owner is not None:
                deliver(owner[0], owner[1], g)
            else:
                found[id(t)] = (t, _sum(found.get(id(t), (t, None))[1], g))

    run(roots, grads)
    while waiting:
        node, outs = waiting.pop(max(waiting, key=lambda k: waiting[k][0].seq))
        for i, refs in (node.observers or {}).items():  # retain_grad, hooks
            for t in (r() for r in refs):
                if t is not None and t._grad_fn == (node, i) and outs[i] is not None:
                    found[id(t)] = (t, outs[i])
        arg_grads = node.run_backward(outs)
        if not retain_graph:
            node.freed = True
        next_roots, next_grads = [], []
        for a, g in zip(node.args, arg_grads):
            if g is None or not isinstance(a, Tensor) or \
                    (a._grad_fn is None and not a._requires_grad):
                continue
            if a._grad_fn is None:  # a leaf
                collect([(a, g)])
            elif isinstance(a._grad_fn[0], FunctionNode):  # another custom result
                deliver(a._grad_fn[0], a._grad_fn[1], g)
            else:
                next_roots.append(a)
                next_grads.append(g)
        if next_roots:
            run(next_roots, next_grads)
    _free(list(touched.values()), retain_graph)
    if wrt is None:
        return list(found.values())
    return [(t, found.get(id(t), (t, None))[1]) for t in wrt]


def _no_setup_context(ctx, inputs, output):
    raise NotImplementedError("setup_context is not overridden")


class Function:
    """torch.autograd.Function: a forward (of ops or any Python) and its
    backward in Python. `apply` runs forward without recording; its
    floating-point results record one node whose backward is this class's.
    Eager only when gradients flow: a compiled training step differentiates
    with the ops' own gradients, so there it is refused."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    setup_context = staticmethod(_no_setup_context)

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        wants_grad = is_grad_enabled() and any(needs)
        program = tracing()
        # a traced training step differentiates its ops, which would ignore
        # this backward (traced values carry no requires_grad to tell)
        if program is not None and program.train and \
                any(isinstance(a, Tensor) and a._program is not None for a in args):
            raise NotImplementedError(
                f"custom autograd.Function {cls.__name__} in a compiled training step: its "
                "Python backward cannot run inside the plan; run this model eagerly "
                "(without of.compile), or write its forward with of ops and drop the "
                "custom backward")
        ctx = FunctionCtx(needs)
        with no_grad():
            if cls.setup_context is not _no_setup_context:  # the forward takes no ctx
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if not wants_grad or program is not None:
            return out
        single = not isinstance(out, tuple)
        outs = [out] if single else list(out)
        results = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and o._dtype.is_floating_point and \
                    id(o) not in ctx.non_differentiable:
                if any(o is a for a in args):  # an argument returned: a new tensor
                    o = outs[i] = o._detached(alias=False)
                results.append(o)
        if results:
            node = FunctionNode(cls, ctx, args, results, outs)
            for k, o in enumerate(results):
                o._grad_fn = (node, k)
        return outs[0] if single else tuple(outs)


def once_differentiable(fn):
    """torch.autograd.function.once_differentiable: of's backward never
    records, so the backward is as it is."""
    return fn


# --------------------------------------------------------------------------
# The Tensor methods that record or differentiate.

def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """In a traced training step: marks the loss its gradients are of.
    Eager: accumulates the gradient into the leaves' `.grad`
    (torch.autograd.backward)."""
    program = self._program
    if program is not None:
        if not program.trace or not program.train:
            raise RuntimeError(
                "loss.backward() in a compiled function without an optimizer: pass the "
                "optimizer to of.compile(..., optimizer=...) or Graph.add_optimizer(), or "
                "run the loop eagerly")
        unsupported("Tensor.backward in a compiled training step", gradient=(gradient, None),
                    create_graph=(create_graph, False), inputs=(inputs, None))
        if self.numel() != 1 or self.dtype not in (dt.float32, dt.float64):
            raise RuntimeError("backward() needs a scalar floating-point loss, not "
                               f"shape {list(self.shape)} {self.dtype}")
        program.loss = self
        return
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _record_identity(src, out):
    """Records `out` as a copy of `src` (clone, copy_) when gradients flow
    through it."""
    if src.requires_grad and is_grad_enabled():
        record(OpSpec("of.reshape {0}", "", [(tuple(src.shape), src.dtype)]), [src], [out],
               False)


def _clone(self):
    if self._program is not None:
        return self
    if self._lazy():
        out = Tensor(None, shape=self.shape, dtype=self.dtype, placement=self._placement,
                     sbp=self._sbp)
        out._logical = self._logical.copy()
        return out
    out = Tensor(self._value().copy(), placement=self._placement, sbp=self._sbp,
                 device=self._local_device)
    _record_identity(self, out)
    return out


def _copy_(self, src, non_blocking=False):
    """Copies `src` (a tensor, or a NumPy array) into this tensor; the
    gradient flows to `src` as in PyTorch."""
    tracked = isinstance(src, Tensor) and src.requires_grad and is_grad_enabled()
    if tracked:
        check_inplace_leaf(self, "copy_")
    data = src.numpy() if isinstance(src, Tensor) else np.asarray(src)
    if tuple(data.shape) != tuple(self._shape):
        raise ValueError(f"copy_: shape {list(data.shape)} into {list(self._shape)}")
    self._inplace(data)
    if tracked:
        _record_identity(src, self)
    return self


def _retain_grad(self):
    """Keeps the gradient of this non-leaf tensor in its `.grad` after
    backward (a leaf keeps its own anyway)."""
    if self._pending is not None:
        self._value()  # a compiled forward's result: run, then recorded
    if self._grad_fn is None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return
    self._retains_grad = True
    observe(self)


def _register_hook(self, hook):
    """Calls `hook(grad)` with this tensor's gradient in every backward: on
    a leaf before it accumulates (a result replaces it), on a non-leaf
    tensor as an observer (it must return None); returns a handle whose
    remove() takes it away."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                           "gradient")
    if self._pending is not None:
        self._value()
    if self._grad_hooks is None:
        self._grad_hooks = []
    self._grad_hooks.append(hook)
    if self._grad_fn is not None:
        observe(self)
    return _HookHandle(self._grad_hooks, hook)


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


Tensor.retain_grad = _retain_grad
Tensor.register_hook = _register_hook
Tensor.retains_grad = property(lambda self: self._grad_fn is not None and
                               self._retains_grad)
Tensor.backward = _backward
Tensor.clone = _clone
Tensor.copy_ = _copy_
