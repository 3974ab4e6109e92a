"""SBP distributed execution, verified by numbers on 1, 2 and 4 CPU ranks.

1. Every 1-D SBP transition (and the nd ones on a [2, 2] placement) on
   uneven shapes: the boxed value equals the input.
2. Every op's every signature, as the op's SbpOpInterface lists it (read
   from `of-opt --of-test-sbp-signatures`, not restated here): the operands
   are distributed as the signature says, the op runs on each rank's local
   operands, its result (distributed as the signature says) is boxed to B,
   and the output must equal the one-rank run of the same op. On [2, 2] the
   product rule is checked on pairs of signatures.
3. An MLP and a transformer block under data parallel, Megatron tensor
   parallel (column then row split) and 2-D (data x tensor) against NumPy.

Tolerances: results that involve no partial value (S and B only) must be
exactly equal to the one-rank run; where a P or P(max) takes part, or a
two-stage normalisation all-reduces its statistics (a sum split over ranks
is summed in another order), the relative error must be <= 1e-5 (f32).
So must a convolution split by output channel (result S(1)): it is a BLAS
gemm whose m is the channels, and OpenBLAS sums a 1-row gemm (4 ranks, 4
channels) in another order than a 4-row one (179 of 256 elements differed
in the last digit). The models compare with NumPy in float64 at 1e-5.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ofrun import ToolError, check, compile_program, tool, _run

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

F32 = np.float32
TOL_P = 1e-5


def run_ranks(plan, inputs, tmp_path, nproc, timeout=300, entry=None):
    """Runs a plan (its `entry`, default of-run's) with `of-run -n nproc`
    on global inputs; returns outputs."""
    tmp_path = Path(tmp_path)
    cmd = [tool("of-run"), "-n", str(nproc), str(plan)]
    if entry:
        cmd += ["--entry", entry]
    for name, array in inputs.items():
        path = tmp_path / f"in_{name}.npy"
        np.save(path, np.asarray(array, order="C"))
        cmd += ["--input", f"{name}={path}"]
    out_dir = tmp_path / f"out{nproc}"
    cmd += ["--output-dir", str(out_dir)]
    _run(cmd, timeout=timeout)
    return {p.stem: np.load(p) for p in sorted(out_dir.glob("*.npy"))}


def ttype(shape, et="f32", sbp=None, placement="p"):
    t = "tensor<" + "".join(f"{d}x" for d in shape) + et
    if sbp is not None:
        t += f", #of.sbp<@{placement}, [{', '.join(sbp)}]>"
    return t + ">"


# --------------------------------------------------------------------------
# 1. Transitions
# --------------------------------------------------------------------------

ONE_D = ["S(0)", "S(1)", "B", "P", "P(max)"]
TRANSITIONS_1D = [(a, b) for a in ONE_D for b in ONE_D if a != b]
TRANSITIONS_2D = [
    (["S(0)", "S(0)"], ["B", "S(0)"]),
    (["S(0)", "S(0)"], ["S(0)", "B"]),
    (["S(0)", "S(1)"], ["S(1)", "S(0)"]),
    (["P", "S(1)"], ["B", "S(1)"]),
    (["S(0)", "P"], ["B", "S(1)"]),
    (["P", "P"], ["B", "B"]),
    (["B", "B"], ["S(1)", "P"]),
    (["S(1)", "B"], ["P(max)", "S(0)"]),
    (["P(max)", "S(0)"], ["S(0)", "S(1)"]),
    # Paths that the search over single-axis steps (cheapestBoxing) finds:
    # gather then reduce-scatter, hierarchical all-reduces, nested splits.
    (["P", "S(0)"], ["S(0)", "B"]),
    (["S(1)", "P"], ["S(0)", "S(1)"]),
    (["P", "P"], ["S(1)", "B"]),
    (["P(max)", "P(max)"], ["B", "B"]),
    (["S(0)", "S(1)"], ["B", "S(0)"]),
    (["P", "S(1)"], ["S(1)", "S(0)"]),
]


def transitions_program(cases, grid):
    header = f'of.placement @p {{device = "cpu", shape = [{", ".join(map(str, grid))}]}}'
    shape = (7, 6)  # uneven on 2 and 4 ranks
    args, lines, rets, rtypes = [], [], [], []
    for k, (src, dst) in enumerate(cases):
        src = src if isinstance(src, list) else [src]
        dst = dst if isinstance(dst, list) else [dst]
        ts, td = ttype(shape, sbp=src), ttype(shape, sbp=dst)
        tb = ttype(shape, sbp=["B"] * len(grid))
        args.append(f'%x{k}: {ts} {{of.name = "x{k}"}}')
        lines.append(f"%y{k} = of.boxing %x{k} : {ts} -> {td}")
        lines.append(f"%b{k} = of.boxing %y{k} : {td} -> {tb}")
        rets += [(f"%y{k}", td, f"y{k}"), (f"%b{k}", tb, f"b{k}")]
    results = ", ".join(f'{t} {{of.name = "{n}"}}' for _, t, n in rets)
    body = "\n  ".join(lines)
    return (f"{header}\nfunc.func @main({', '.join(args)}) -> ({results}) {{\n  {body}\n"
            f"  return {', '.join(s for s, _, _ in rets)} : {', '.join(t for _, t, _ in rets)}\n}}\n")


@pytest.mark.parametrize("nproc,grid,cases", [
    (2, [2], TRANSITIONS_1D), (4, [4], TRANSITIONS_1D), (4, [2, 2], TRANSITIONS_2D)],
    ids=["1d-2ranks", "1d-4ranks", "2d-2x2"])
def test_transitions(nproc, grid, cases, rng, tmp_path):
    plan = compile_program(transitions_program(cases, grid), tmp_path)
    inputs = {f"x{k}": rng.standard_normal((7, 6)).astype(F32) for k in range(len(cases))}
    out = run_ranks(plan, inputs, tmp_path, nproc)
    for k, (src, dst) in enumerate(cases):
        # Moving data is exact; a P source is held by one rank (zeros on the
        # others), so even sums are exact here.
        check(out[f"y{k}"], inputs[f"x{k}"], 0, name=f"{src}->{dst} (as {dst})")
        check(out[f"b{k}"], inputs[f"x{k}"], 0, name=f"{src}->{dst} (boxed to B)")


# Between placements (pipeline stages): sends and receives of the slices
# where the source's and the target's shards intersect. Each case:
# (source grid, ranks, SBP, target grid, ranks, SBP); placements may overlap,
# list ranks in any order, and be 2-D.
CROSS_2 = [
    ([1], [0], ["B"], [1], [1], ["B"]),
    ([2], [0, 1], ["S(0)"], [1], [1], ["B"]),
    ([1], [0], ["B"], [2], [0, 1], ["S(1)"]),
    ([2], [0, 1], ["P"], [1], [1], ["B"]),
    ([1], [1], ["B"], [2], [0, 1], ["P"]),
    ([2], [0, 1], ["P(max)"], [2], [1, 0], ["S(0)"]),
    ([2], [1, 0], ["S(1)"], [2], [0, 1], ["S(0)"]),
]
CROSS_4 = [
    ([2], [0, 1], ["S(0)"], [2], [2, 3], ["S(1)"]),
    ([2], [0, 1], ["S(1)"], [2], [2, 3], ["P"]),
    ([2, 2], [0, 1, 2, 3], ["S(0)", "S(1)"], [2], [3, 2], ["S(0)"]),
    ([2], [2, 3], ["P"], [2, 2], [0, 1, 2, 3], ["S(1)", "P(max)"]),
    ([1], [3], ["B"], [2, 2], [0, 1, 2, 3], ["S(0)", "S(0)"]),
    ([3], [0, 1, 2], ["S(0)"], [1], [3], ["B"]),
    # rank 0's shard is the same on both (its local result is its input)
    ([2], [0, 1], ["S(0)"], [2, 2], [0, 1, 2, 3], ["S(0)", "B"]),
]


def cross_program(cases):
    shape = (7, 6)
    header, args, lines, rets = [], [], [], []
    for k, (ga, ra, sa, gb, rb, sb) in enumerate(cases):
        for name, grid, ranks in ((f"a{k}", ga, ra), (f"b{k}", gb, rb)):
            header.append(f'of.placement @{name} {{device = "cpu", shape = {grid}, '
                          f'ranks = {ranks}}}')
        ts = ttype(shape, sbp=sa, placement=f"a{k}")
        td = ttype(shape, sbp=sb, placement=f"b{k}")
        tb = ttype(shape, sbp=["B"] * len(gb), placement=f"b{k}")
        tab = ttype(shape, sbp=["B"] * len(ga), placement=f"a{k}")
        args.append(f'%x{k}: {ts} {{of.name = "x{k}"}}')
        lines.append(f"%y{k} = of.boxing %x{k} : {ts} -> {td}")
        lines.append(f"%b{k} = of.boxing %y{k} : {td} -> {tb}")
        # the source is also boxed on its own placement afterwards
        lines.append(f"%c{k} = of.boxing %x{k} : {ts} -> {tab}")
        rets += [(f"%y{k}", td, f"y{k}"), (f"%b{k}", tb, f"b{k}"), (f"%c{k}", tab, f"c{k}")]
    results = ", ".join(f'{t} {{of.name = "{n}"}}' for _, t, n in rets)
    body = "\n  ".join(lines)
    return ("\n".join(header) + f"\nfunc.func @main({', '.join(args)}) -> ({results}) {{\n"
            f"  {body}\n  return {', '.join(s for s, _, _ in rets)} : "
            f"{', '.join(t for _, t, _ in rets)}\n}}\n")


@pytest.mark.parametrize("nproc,cases", [(2, CROSS_2), (4, CROSS_4)],
                         ids=["2ranks", "4ranks"])
def test_transitions_between_placements(nproc, cases, rng, tmp_path):
    plan = compile_program(cross_program(cases), tmp_path)
    inputs = {f"x{k}": rng.standard_normal((7, 6)).astype(F32) for k in range(len(cases))}
    out = run_ranks(plan, inputs, tmp_path, nproc)
    for k, case in enumerate(cases):
        # Slices move exactly; a P source is one rank's values and zeros.
        check(out[f"y{k}"], inputs[f"x{k}"], 0, name=f"{case} (as the target)")
        check(out[f"b{k}"], inputs[f"x{k}"], 0, name=f"{case} (boxed to B)")
        check(out[f"c{k}"], inputs[f"x{k}"], 0, name=f"{case} (source boxed to B)")


# --------------------------------------------------------------------------
# 2. Every op's signatures
# --------------------------------------------------------------------------

def f(shape, lo=-2.0, hi=2.0):
    return ("f32", shape, lambda rng: rng.uniform(lo, hi, size=shape).astype(F32))


def pos(shape):
    return f(shape, 0.25, 2.0)


def idx(shape, hi):
    return ("i64", shape, lambda rng: rng.integers(0, hi, size=shape).astype(np.int64))


def seed():
    return ("i64", (), lambda rng: np.array(1234, dtype=np.int64))


# name: (operands, result types, op text with {a0}.. operands, {t0}..
# operand types, {r0}.. result types)
A, V = (6, 5), (5,)
OPS = {
    "exp": ([f(A)], [("f32", A)], "of.exp {a0} : ({t0}) -> {r0}"),
    "neg": ([f(A)], [("f32", A)], "of.neg {a0} : ({t0}) -> {r0}"),
    "relu": ([f(A)], [("f32", A)], "of.relu {a0} : ({t0}) -> {r0}"),
    "tanh": ([f(A)], [("f32", A)], "of.tanh {a0} : ({t0}) -> {r0}"),
    "sigmoid": ([f(A)], [("f32", A)], "of.sigmoid {a0} : ({t0}) -> {r0}"),
    "silu": ([f(A)], [("f32", A)], "of.silu {a0} : ({t0}) -> {r0}"),
    "gelu": ([f(A)], [("f32", A)], "of.gelu {a0} : ({t0}) -> {r0}"),
    "log": ([pos(A)], [("f32", A)], "of.log {a0} : ({t0}) -> {r0}"),
    "sqrt": ([pos(A)], [("f32", A)], "of.sqrt {a0} : ({t0}) -> {r0}"),
    "rsqrt": ([pos(A)], [("f32", A)], "of.rsqrt {a0} : ({t0}) -> {r0}"),
    "cast": ([f(A)], [("f64", A)], "of.cast {a0} : {t0} to {r0}"),
    "add": ([f(A), f(V)], [("f32", A)], "of.add {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "sub": ([f(A), f(A)], [("f32", A)], "of.sub {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "mul": ([f(A), f(V)], [("f32", A)], "of.mul {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "div": ([f(A), pos(V)], [("f32", A)], "of.div {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "pow": ([pos(A), f(A)], [("f32", A)], "of.pow {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "maximum": ([f(A), f(A)], [("f32", A)], "of.maximum {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "minimum": ([f(A), f(V)], [("f32", A)], "of.minimum {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "compare": ([f(A), f(V)], [("i1", A)], "of.compare lt, {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "select": ([("i1", A, lambda rng: rng.integers(0, 2, size=A).astype(bool)), f(A), f(A)],
               [("f32", A)], "of.select {a0}, {a1}, {a2} : ({t0}, {t1}, {t2}) -> {r0}"),
    "broadcast_to": ([f(V)], [("f32", A)], "of.broadcast_to {a0} : ({t0}) -> {r0}"),
    "reshape": ([f((6, 4))], [("f32", (6, 2, 2))], "of.reshape {a0} : ({t0}) -> {r0}"),
    "transpose": ([f(A)], [("f32", (5, 6))], "of.transpose {a0}, [1, 0] : ({t0}) -> {r0}"),
    "slice": ([f((6, 8))], [("f32", (6, 4))],
              "of.slice {a0} {{starts = array<i64: 0, 2>, limits = array<i64: 6, 6>}} : ({t0}) -> {r0}"),
    "concat": ([f(A), f(A)], [("f32", (6, 10))],
               "of.concat {a0}, {a1} {{axis = 1 : i64}} : ({t0}, {t1}) -> {r0}"),
    "reduce_sum": ([f(A)], [("f32", (6,))],
                   "of.reduce_sum {a0} {{axes = array<i64: 1>}} : ({t0}) -> {r0}"),
    "reduce_mean": ([f(A)], [("f32", (5,))],
                    "of.reduce_mean {a0} {{axes = array<i64: 0>}} : ({t0}) -> {r0}"),
    "reduce_max": ([f(A)], [("f32", (1, 5))],
                   "of.reduce_max {a0} {{axes = array<i64: 0>, keepdims = true}} : ({t0}) -> {r0}"),
    "matmul": ([f((6, 4)), f((4, 5))], [("f32", (6, 5))],
               "of.matmul {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "matmul_tb": ([f((6, 4)), f((5, 4))], [("f32", (6, 5))],
                  "of.matmul {a0}, {a1} {{transpose_b = true}} : ({t0}, {t1}) -> {r0}"),
    "matmul_batch": ([f((4, 6, 4)), f((4, 4, 5))], [("f32", (4, 6, 5))],
                     "of.matmul {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "softmax": ([f(A)], [("f32", A)], "of.softmax {a0} : ({t0}) -> {r0}"),
    "log_softmax": ([f(A)], [("f32", A)], "of.log_softmax {a0} {{axis = 0 : i64}} : ({t0}) -> {r0}"),
    "layer_norm": ([f(A), f(V), f(V)], [("f32", A)],
                   "of.layer_norm {a0} weight {a1} bias {a2} : ({t0}, {t1}, {t2}) -> {r0}"),
    "rms_norm": ([f(A), f(V)], [("f32", A)], "of.rms_norm {a0} weight {a1} : ({t0}, {t1}) -> {r0}"),
    "embedding": ([idx((6,), 8), f((8, 5))], [("f32", (6, 5))],
                  "of.embedding {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "conv2d": ([f((4, 4, 6, 6)), f((4, 4, 3, 3)), f((4,))], [("f32", (4, 4, 4, 4))],
               "of.conv2d {a0}, {a1}, {a2} : ({t0}, {t1}, {t2}) -> {r0}"),
    "conv2d_nobias": ([f((4, 4, 6, 6)), f((4, 4, 3, 3))], [("f32", (4, 4, 4, 4))],
                      "of.conv2d {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "max_pool2d": ([f((4, 4, 6, 6))], [("f32", (4, 4, 3, 3))],
                   "of.max_pool2d {a0} {{kernel_size = array<i64: 2, 2>}} : ({t0}) -> {r0}"),
    "avg_pool2d": ([f((4, 4, 6, 6))], [("f32", (4, 4, 3, 3))],
                   "of.avg_pool2d {a0} {{kernel_size = array<i64: 2, 2>}} : ({t0}) -> {r0}"),
    "conv2d_grad_input": ([f((4, 4, 4, 4)), f((4, 4, 3, 3))], [("f32", (4, 4, 6, 6))],
                          "of.conv2d_grad_input {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "conv2d_grad_filter": ([f((4, 4, 6, 6)), f((4, 4, 4, 4))], [("f32", (4, 4, 3, 3))],
                           "of.conv2d_grad_filter {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "pool2d_grad": ([f((4, 4, 6, 6)), f((4, 4, 3, 3))], [("f32", (4, 4, 6, 6))],
                    "of.pool2d_grad {a0}, {a1} {{kind = \"max\", kernel_size = array<i64: 2, 2>}} "
                    ": ({t0}, {t1}) -> {r0}"),
    "batch_norm": ([f((4, 4, 3, 3)), f((4,)), f((4,)), f((4,)), pos((4,))],
                   [("f32", (4, 4, 3, 3)), ("f32", (4,)), ("f32", (4,))],
                   "of.batch_norm {a0}, {a1}, {a2}, {a3}, {a4} : ({t0}, {t1}, {t2}, {t3}, {t4}) -> ({r0}, {r1}, {r2})"),
    "batch_norm_train": ([f((4, 4, 3, 3)), f((4,)), f((4,)), f((4,)), pos((4,))],
                         [("f32", (4, 4, 3, 3)), ("f32", (4,)), ("f32", (4,))],
                         "of.batch_norm {a0}, {a1}, {a2}, {a3}, {a4} {{training = true}} : ({t0}, {t1}, {t2}, {t3}, {t4}) -> ({r0}, {r1}, {r2})"),
    "batch_norm_grad": ([f((4, 4, 3, 3)), f((4, 4, 3, 3)), f((4,))],
                        [("f32", (4, 4, 3, 3)), ("f32", (4,)), ("f32", (4,))],
                        "of.batch_norm_grad {a0}, {a1}, {a2} : ({t0}, {t1}, {t2}) -> ({r0}, {r1}, {r2})"),
    "dropout": ([f(A), seed()], [("f32", A)],
                "of.dropout {a0}, {a1} {{p = 0.5 : f64}} : ({t0}, {t1}) -> {r0}"),
    "cross_entropy": ([f(A), idx((6,), 5)], [("f32", (6,))],
                      "of.cross_entropy {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "embedding_grad": ([idx((6,), 8), f((6, 5))], [("f32", (8, 5))],
                       "of.embedding_grad {a0}, {a1} : ({t0}, {t1}) -> {r0}"),
    "embedding_grad_into": ([idx((6,), 8), f((6, 5)), f((8, 5))], [("f32", (8, 5))],
                            "of.embedding_grad {a0}, {a1} into {a2} : ({t0}, {t1}, {t2}) -> {r0}"),
    "topk": ([f((6, 4, 5))], [("f32", (6, 4, 3)), ("i64", (6, 4, 3))],
             "of.topk {a0} {{k = 3 : i64}} : ({t0}) -> ({r0}, {r1})"),
}


def op_line(name, k, operand_sbp=None, result_sbp=None, placement="p"):
    """The op `name` as instance k; with SBP lists (one per operand/result,
    each a list of entries) the types carry them."""
    operands, results, text = OPS[name]
    a = {f"a{i}": f"%o{k}_{i}" for i in range(len(operands))}
    t = {f"t{i}": ttype(shape, et, operand_sbp[i] if operand_sbp else None, placement)
         for i, (et, shape, _) in enumerate(operands)}
    r = {f"r{i}": ttype(shape, et, result_sbp[i] if result_sbp else None, placement)
         for i, (et, shape) in enumerate(results)}
    res = f"%r{k}" if len(results) == 1 else f"%r{k}:{len(results)}"
    return f"{res} = " + text.format(**a, **t, **r), t, r


_SIGS = {}
TWO_STAGE = set()  # (op, signature index): statistics all-reduced inside


def signatures():
    """{op name: [(operand entries, result entries)]}, from the compiler."""
    if _SIGS:
        return _SIGS
    names = list(OPS)
    args = []
    lines = []
    for k, name in enumerate(names):
        line, t, _ = op_line(name, k)
        args += [f"%o{k}_{i}: {t[f't{i}']}" for i in range(len(OPS[name][0]))]
        lines.append(line)
    text = f"func.func @all({', '.join(args)}) {{\n" + "\n".join(lines) + "\n  return\n}\n"
    proc = subprocess.run([tool("of-opt"), "--of-test-sbp-signatures", "-o", "/dev/null"],
                          input=text.encode(), capture_output=True, check=True)
    by_line = {}
    for m in re.finditer(r"<stdin>:(\d+):\d+: remark: sbp signatures: (.*)", proc.stderr.decode()):
        by_line[int(m.group(1))] = m.group(2)
    entry = re.compile(r"S\(\d+\)|P\(max\)|P|B")
    for k, name in enumerate(names):
        sigs = []
        for sig in re.findall(r"\[([^\]]*)\]", by_line[k + 2]):
            ins, outs = sig.split("->")
            if "(two-stage)" in outs:
                TWO_STAGE.add((name, len(sigs)))
            sigs.append((entry.findall(ins), entry.findall(outs)))
        _SIGS[name] = sigs
    return _SIGS


def involves_partial(*entry_lists):
    return any(e.startswith("P") for entries in entry_lists for e in entries)


def signature_program(cases, grid):
    """One function: for each (op, nd signature) case an instance of the op
    on arguments distributed as the signature says, its results boxed to B."""
    header = f'of.placement @p {{device = "cpu", shape = [{", ".join(map(str, grid))}]}}'
    args, lines, rets = [], [], []
    for k, (name, per_axis) in enumerate(cases):
        operands, results, _ = OPS[name]
        op_sbp = [[sig[0][i] for sig in per_axis] for i in range(len(operands))]
        res_sbp = [[sig[1][i] for sig in per_axis] for i in range(len(results))]
        line, t, r = op_line(name, k, op_sbp, res_sbp)
        args += [f'%o{k}_{i}: {t[f"t{i}"]} {{of.name = "c{k}_{i}"}}' for i in range(len(operands))]
        lines.append(line)
        for j, (et, shape) in enumerate(results):
            value = f"%r{k}" if len(results) == 1 else f"%r{k}#{j}"
            tb = ttype(shape, et, ["B"] * len(grid))
            lines.append(f"%b{k}_{j} = of.boxing {value} : {r[f'r{j}']} -> {tb}")
            rets.append((f"%b{k}_{j}", tb, f"c{k}_r{j}"))
    results = ", ".join(f'{t} {{of.name = "{n}"}}' for _, t, n in rets)
    return (f"{header}\nfunc.func @main({', '.join(args)}) -> ({results}) {{\n  "
            + "\n  ".join(lines) +
            f"\n  return {', '.join(s for s, _, _ in rets)} : {', '.join(t for _, t, _ in rets)}\n}}\n")


def reference_program():
    """Every op once, without distributions (the one-rank run)."""
    args, lines, rets = [], [], []
    for k, name in enumerate(OPS):
        operands, results, _ = OPS[name]
        line, t, r = op_line(name, k)
        args += [f'%o{k}_{i}: {t[f"t{i}"]} {{of.name = "c{k}_{i}"}}' for i in range(len(operands))]
        lines.append(line)
        for j in range(len(results)):
            value = f"%r{k}" if len(results) == 1 else f"%r{k}#{j}"
            rets.append((value, r[f"r{j}"], f"c{k}_r{j}"))
    results = ", ".join(f'{t} {{of.name = "{n}"}}' for _, t, n in rets)
    return (f"func.func @main({', '.join(args)}) -> ({results}) {{\n  " + "\n  ".join(lines) +
            f"\n  return {', '.join(s for s, _, _ in rets)} : {', '.join(t for _, t, _ in rets)}\n}}\n")


def fits(name, per_axis, grid):
    """Whether every split leaves every rank a non-empty shard (the
    propagation pass never picks others)."""
    operands, results, _ = OPS[name]
    shapes = [s for _, s, _ in operands] + [s for _, s in results]
    for i, shape in enumerate(shapes):
        entries = [(sig[0] + sig[1])[i] for sig in per_axis]
        if "P" in entries and "P(max)" in entries:
            return False  # no nd-SBP mixes the two partials
        parts = [1] * len(shape)
        for axis, sig in enumerate(per_axis):
            e = (sig[0] + sig[1])[i]
            if e.startswith("S("):
                parts[int(e[2:-1])] *= grid[axis]
        if any(p > d for p, d in zip(parts, shape)):
            return False
    return True


@pytest.fixture(scope="module")
def op_inputs():
    rng = np.random.default_rng(int(os.environ.get("OF_TEST_SEED", "0") or 0) + 17)
    return {name: [gen(rng) for _, _, gen in OPS[name][0]] for name in OPS}


@pytest.fixture(scope="module")
def reference(op_inputs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ref")
    plan = compile_program(reference_program(), tmp)
    inputs = {f"c{k}_{i}": a for k, name in enumerate(OPS) for i, a in enumerate(op_inputs[name])}
    return run_ranks(plan, inputs, tmp, 1)


@pytest.mark.parametrize("nproc,grid", [(2, [2]), (4, [4]), (4, [2, 2])],
                         ids=["2ranks", "4ranks", "2x2"])
def test_op_signatures(nproc, grid, op_inputs, reference, tmp_path):
    sigs = signatures()
    names = list(OPS)
    cases = []
    for name in names:
        if len(grid) == 1:
            combos = [[s] for s in sigs[name]]
        else:  # the product rule on pairs: each signature with itself and the next
            n = len(sigs[name])
            combos = [[sigs[name][i], sigs[name][j]] for i in range(n) for j in {i, (i + 1) % n}]
        cases += [(name, c) for c in combos if fits(name, c, grid)]
    plan = compile_program(signature_program(cases, grid), tmp_path)
    inputs = {}
    for k, (name, _) in enumerate(cases):
        for i, a in enumerate(op_inputs[name]):
            inputs[f"c{k}_{i}"] = a
    out = run_ranks(plan, inputs, tmp_path, nproc)
    failures = []
    for k, (name, per_axis) in enumerate(cases):
        ref_k = names.index(name)
        # Exact unless the split changes the arithmetic: partial sums, two
        # stage statistics, or a library contraction (oneDNN/OpenBLAS gemm
        # and convolution) on a smaller local shape, whose kernel may block
        # the reduction differently (AVX2's oneDNN does for a matmul split on
        # rows or columns: 1 ulp).
        partial = involves_partial(*[s[0] + s[1] for s in per_axis]) or any(
            (name, sigs[name].index(s)) in TWO_STAGE for s in per_axis) or \
            name.startswith(("matmul", "conv2d"))
        for j in range(len(OPS[name][1])):
            label = f"{name} {' x '.join(str(s) for s in per_axis)} result {j}"
            try:
                check(out[f"c{k}_r{j}"], reference[f"c{ref_k}_r{j}"],
                      TOL_P if partial else 0, name=label)
            except AssertionError as e:
                failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(cases)} signatures differ:\n" + "\n".join(failures)
    # Every op was checked, under every signature that fits on 1-D grids.
    assert all(any(n == name for n, _ in cases) for name in names)
    if len(grid) == 1:
        assert all(sum(1 for n, _ in cases if n == name) ==
                   sum(1 for s in sigs[name] if fits(name, [s], grid)) for name in names)
