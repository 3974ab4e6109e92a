"""Global tensors in eager code: moving a value onto a placement, between
SBPs, and back to its logical value. Each is a compiled program (an
identity or an `of.boxing`), so the runtime's own slicing and collectives
do the work, as in a compiled model."""

import numpy as np

from ._core import (Program, Runner, Tensor, _type, compile_program, pipeline_for, tracing,
                    world)
from ._dist import normalize_sbp, placement as Placement

_runners = {}


def _runner(text, device):
    runner = _runners.get(text)
    if runner is None:
        runner = Runner(compile_program(text, pipeline_for(device), "boxing"), device=device)
        _runners[text] = runner
    return runner


def _boxing_program(shape, dtype, src_plc, src_sbp, dst_plc, dst_sbp):
    program = Program("boxing")
    probe = Tensor(shape=shape, dtype=dtype, placement=src_plc, sbp=src_sbp, program=program)
    x = program.add_arg(probe)
    program.note_placement(dst_plc)
    out_type = _type(shape, dtype, dst_plc, dst_sbp)
    if src_plc == dst_plc and src_sbp == dst_sbp:
        return program.text([(x, out_type)])
    program.lines.append(f"%y = of.boxing {x} : {program._types[x]} -> {out_type}")
    return program.text([("%y", out_type)])


def runnable_here(plc):
    """Whether this process can run programs on `plc`: its job has the
    placement's ranks (one process for one rank), and a GPU if the
    placement is on GPUs."""
    size = max(plc.ranks) + 1
    if size > 1 and world()[1] != size:
        return False
    if plc.type == "cuda":
        from . import cuda
        return cuda.is_available()
    return True


def _lazy_global(logical, shape, dtype, plc, sbp):
    """A global tensor on `plc` that holds its logical value (it cannot run
    here): a compiled step's argument or module state ahead of time."""
    out = Tensor(None, shape=shape, dtype=dtype, placement=plc, sbp=sbp)
    out._logical = logical.copy()  # a snapshot, as a rank's part would be
    return out


def materialize(t):
    """Takes this rank's part of a lazy global tensor (an identity program
    on its placement, as to_global does), when it is first needed."""
    plc = t._placement
    runner = _runner(_boxing_program(t.shape, t.dtype, plc, t._sbp, plc, t._sbp), plc.type)
    runner.set(0, t._logical, global_value=True)
    runner.run()
    t._data, t._logical = runner.output(0), None


def to_global(t, plc=None, sbp=None):
    plc = plc if plc is not None else t._placement
    if plc is None:
        raise ValueError("to_global needs a placement for a local tensor")
    if not isinstance(plc, Placement):
        raise TypeError(f"to_global: {plc!r} is not an of.placement")
    if t._placement is not None and t._placement.type != plc.type and tracing() is None:
        # another kind of device: through the logical value (a collective)
        moved = to_global(Tensor(t.numpy(), dtype=t.dtype), plc,
                          sbp if sbp is not None else t._sbp)
        moved.requires_grad = t.requires_grad
        return moved
    if sbp is None:
        sbp = t._sbp if t._placement == plc else None
    if sbp is None:
        raise ValueError("to_global needs an sbp for a local tensor")
    sbp = normalize_sbp(plc, sbp, t.ndim)
    if t._placement is not None and set(t._placement.ranks) != set(plc.ranks):
        raise NotImplementedError(
            f"to_global: moving a tensor from ranks {list(t._placement.ranks)} to ranks "
            f"{list(plc.ranks)} (a pipeline stage) is not supported by the Python "
            "frontend yet, which keeps every global value on every rank of its job; "
            "write the stages as an .mlir program for of-opt and of-run "
            "(docs/getting-started.md, 'Pipeline stages')")
    program = tracing()
    if program is not None and t._program is program:
        if t._placement is None:
            raise ValueError("to_global inside a traced function works on global "
                             "values; make the inputs global")
        from ._core import OpSpec, apply1
        out = apply1(OpSpec("of.boxing {0}", "", [(t.shape, t.dtype)], sig="arrow"), [t])
        # the result type carries the distribution
        ref = program.values[id(out)]
        last = program.lines[-1]
        typed = _type(t.shape, t.dtype, plc, sbp)
        program.lines[-1] = last.replace(f"-> {_type(t.shape, t.dtype)}", f"-> {typed}")
        program._types[ref] = typed
        program.note_placement(plc)
        out._placement, out._sbp = plc, sbp
        return out
    if t._lazy() or (t._placement is None and not runnable_here(plc)):
        # Made where the placement cannot run (ahead of time): the logical
        # value, kept until a rank's part is needed.
        out = _lazy_global(t._logical if t._lazy() else t._value(), t.shape, t.dtype,
                           plc, sbp)
        out.requires_grad = t.requires_grad
        return out
    if t._placement is None:
        # the local value is the logical value: each rank keeps its part
        runner = _runner(_boxing_program(t.shape, t.dtype, plc, sbp, plc, sbp), plc.type)
        runner.set(0, t._value(), global_value=True)
    else:
        if t._placement == plc and t._sbp == sbp:
            return t
        runner = _runner(_boxing_program(t.shape, t.dtype, t._placement, t._sbp, plc, sbp),
                         plc.type)
        runner.set(0, t._value())
    runner.run()
    out = Tensor(runner.output(0), shape=t.shape, dtype=t.dtype, placement=plc, sbp=sbp)
    out.requires_grad = t.requires_grad
    return out


def logical_value(t):
    """The whole value of global tensor `t` on every rank (a collective)."""
    from ._dist import sbp as S
    if t._lazy():
        return t._logical
    b = (S.broadcast,) * t._placement.ndim
    if t._sbp == b:
        return t._value()
    runner = _runner(_boxing_program(t.shape, t.dtype, t._placement, t._sbp,
                                     t._placement, b), t._placement.type)
    runner.set(0, t._value())
    runner.run()
    return runner.output(0)


def read_input(runner, index, t):
    """This rank's part of input `index` of a session (a parameter a
    training step updated)."""
    info = runner.inputs[index]
    out = np.empty(info["shape"], dtype=t.dtype.np)
    runner.session.get_input(index, out)
    return out
