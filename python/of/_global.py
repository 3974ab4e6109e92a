"""Global tensors' values in eager code: this rank's part of a logical
value, a move between placements and SBPs, and the logical value of the
parts. Each is a compiled program (an identity or an `of.boxing`) run on
NumPy arrays, so the runtime's own slicing and collectives do the work, as
in a compiled model. `Tensor.to_global` (`_ops.to_global`) is built on
these."""

from . import cuda
from ._compile import compile_program, pipeline_for
from ._dist import sbp as S
from ._program import Program, _type
from ._runtime import world
from ._session import Runner

_runners = {}


def _runner(text, device):
    runner = _runners.get(text)
    if runner is None:
        runner = Runner(compile_program(text, pipeline_for(device), "boxing"), device=device)
        _runners[text] = runner
    return runner


def _boxing_program(shape, dtype, src_plc, src_sbp, dst_plc, dst_sbp):
    program = Program("boxing")
    x = program.add_typed_arg(_type(shape, dtype, src_plc, src_sbp), src_plc)
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
        return cuda.is_available()
    return True


def move(value, shape, dtype, src_plc, src_sbp, dst_plc, dst_sbp, global_value=False):
    """This rank's part of a tensor on `dst_plc` with `dst_sbp`, from
    `value`, its part on `src_plc` with `src_sbp` (with `global_value`: the
    logical value, which each rank slices)."""
    runner = _runner(_boxing_program(shape, dtype, src_plc, src_sbp, dst_plc, dst_sbp),
                     dst_plc.type)
    runner.set(0, value, global_value=global_value)
    runner.run()
    return dtype.stored(runner.output(0))


def materialize(t):
    """Takes this rank's part of a lazy global tensor (an identity program
    on its placement, as to_global does), when it is first needed."""
    plc = t._placement
    t._data, t._logical = move(t._logical, t.shape, t.dtype, plc, t._sbp, plc, t._sbp,
                               global_value=True), None


def logical_value(t):
    """The whole value of global tensor `t` on every rank (a collective)."""
    if t._lazy():
        return t._logical
    b = (S.broadcast,) * t._placement.ndim
    if t._sbp == b:
        return t._value()
    return move(t._value(), t.shape, t.dtype, t._placement, t._sbp, t._placement, b)
