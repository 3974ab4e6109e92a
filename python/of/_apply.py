"""apply: the one path of every op. While a function is traced (`of.compile`,
`of.nn.Graph`) the op is written into the traced program; otherwise (eager)
the op alone is a program, compiled once per signature (shapes, dtypes,
SBP, attributes), cached with its session, and run at once. Eager and
compiled code therefore run the same kernels. An eager op on tensors that
require gradients is recorded for the backward pass (_autograd.py)."""

from . import _grad_mode
from ._autograd import record
from ._compile import CompileError, compile_program, pipeline_for
from ._program import Program, _trace, _write_op, user_frame
from ._session import Runner
from ._tensor import Tensor, output_tensor


def _common_placement(inputs):
    plc, globals_, locals_ = None, [], []
    for t in inputs:
        (globals_ if t._placement is not None else locals_).append(t)
    for t in globals_:
        if plc is None:
            plc = t._placement
        elif t._placement != plc:
            raise ValueError(f"operands are on different placements: {plc} and "
                             f"{t._placement}; move one with .to_global(placement, sbp)")
    if globals_ and locals_:
        bad = locals_[0]
        if bad.numel() == 1 and bad._program is None and bad.ndim == 0:
            return plc, True  # a Python scalar: a constant inside the program
        raise ValueError("an op mixes a global tensor and a local tensor (shape "
                         f"{list(bad.shape)}); make the local one global with "
                         ".to_global(placement, sbp)")
    return plc, False


def _operand(program, t):
    """The SSA name of tensor `t` in `program`, capturing it if needed."""
    ssa = program.values.get(id(t))
    if ssa is not None:
        return ssa
    if t._program is not None and t._program is not program:
        raise RuntimeError("a value of another traced program is used here")
    if program.trace:
        ssa = program.capture(t)
        if ssa is not None:
            return ssa
        # a tensor made during tracing (a factory result): a constant
        if t._placement is not None:
            raise ValueError("a global tensor made inside a traced function cannot be "
                             "embedded; pass it as an argument")
        if not t._device_neutral():
            program.note_device(t.device, f"a tensor of shape {list(t.shape)} that the "
                                          "traced function makes or closes over")
        ssa = program.constant(t._value(), t.dtype)
        program.values[id(t)] = ssa
        program.keep.append(t)
        return ssa
    raise AssertionError("eager operands are arguments")


def apply(spec, inputs):
    """Runs (eager) or records (tracing) one op; returns its result tensors."""
    program = _trace.program
    if program is not None:
        operands = [_operand(program, t) for t in inputs]
        refs = _write_op(program, spec, operands, user_frame())
        outs = []
        for ref, (shape, dtype) in zip(refs, spec.outs):
            t = Tensor(shape=shape, dtype=dtype, program=program)
            program.values[id(t)] = ref
            program.keep.append(t)
            outs.append(t)
        return outs
    return _eager(spec, inputs)


_eager_runners = {}
# Sessions kept (each holds its arena; plans stay cached). A GPU session
# also holds its executor's streams, cuBLAS handle and workspaces.
_EAGER_CACHE_LIMIT = {"cpu": 1024, "cuda": 64}


def _evict_eager(dev):
    """Drops the oldest eager session on `dev` when `dev` has its limit."""
    same = [k for k, r in _eager_runners.items() if r.device == dev]
    if len(same) >= _EAGER_CACHE_LIMIT[dev]:
        _eager_runners.pop(same[0])


def _eager_key(spec, inputs, scalar_mix):
    key = [spec.fmt, spec.attrs, spec.sig, tuple(spec.outs)]
    for t in inputs:
        if scalar_mix and t._placement is None:  # embedded as a constant
            key.append(("c", t._dtype.name, t._value().tobytes()))
        else:
            key.append((t._shape, t._dtype.name, t._placement, t._sbp,
                        t._local_device if t._placement is None else None))
    return tuple(key)


def _eager(spec, inputs):
    plc, scalar_mix = _common_placement(inputs)
    key = _eager_key(spec, inputs, scalar_mix)
    runner = _eager_runners.get(key)
    if runner is None:
        program = Program("op")
        operands = []
        for t in inputs:
            if scalar_mix and t._placement is None:
                operands.append(program.constant(t._value(), t.dtype))
            else:
                operands.append(program.add_arg(t))
        refs = _write_op(program, spec, operands, None)
        text = program.text([(r, program._types[r]) for r in refs])
        try:
            plan = compile_program(text, pipeline_for(program.device), "eager op")
        except CompileError as e:
            file, line = user_frame()
            raise CompileError(f"{file}:{line}: {spec.fmt.split()[0]}: {e}") from None
        runner = Runner(plan, device=program.device or "cpu")
        _evict_eager(runner.device)
        _eager_runners[key] = runner
    arg_index = 0
    for t in inputs:
        if scalar_mix and t._placement is None:
            continue
        runner.set(arg_index, t._value())
        arg_index += 1
    runner.run()
    outs = [output_tensor(runner.output(i), shape, dtype, plc, runner.output_dist(i),
                          runner.device)
            for i, (shape, dtype) in enumerate(spec.outs)]
    if _grad_mode._mode.enabled and any(t._requires_grad or t._grad_fn is not None
                                        for t in inputs):
        record(spec, inputs, outs, scalar_mix)
    return outs


def apply1(spec, inputs):
    return apply(spec, inputs)[0]
