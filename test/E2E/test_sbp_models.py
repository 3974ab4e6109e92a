"""An MLP and a transformer block written once on global tensors, run on 1,
2 and 4 CPU ranks under data parallel, Megatron tensor parallel (column then
row split), a 2-D (data x tensor) hierarchy and as two pipeline stages on
disjoint ranks (each stage itself data or tensor parallel), against NumPy in
float64.

Only the arguments are annotated; --of-propagate-sbp distributes the rest.
Batches of 6 rows are uneven on 4 ranks. Tolerance: relative error 1e-5
(f32; every run, distributed or not, against the same float64 reference).
"""

import math
import shutil

import numpy as np
import pytest

from ofrun import check, compile_program
from test_sbp import run_ranks

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")

F32 = np.float32
TOL = 1e-5
erf = np.vectorize(math.erf)


def ttype(shape, sbp=None, placement="p"):
    t = "tensor<" + "".join(f"{d}x" for d in shape) + "f32"
    if sbp is not None:
        t += f", #of.sbp<@{placement}, [{', '.join(sbp)}]>"
    return t + ">"


class Model:
    """A function @main whose arguments carry the distributions of a
    parallel layout; values inside have none (propagation decides).

    `grid` is one placement's grid, or for pipelines a dict of stages
    {name: (grid, ranks)}: the model moves its activations to the next
    stage at the points where it calls next_stage(), and the layout gives
    each argument (stage, SBP) and each boundary "@<stage>" its SBP there
    (default B)."""

    def __init__(self, grid, layout):
        self.layout = layout
        self.stages = grid if isinstance(grid, dict) else None
        self.grid = list(grid.values())[0][0] if self.stages else grid
        self.stage = list(grid)[0] if self.stages else "p"
        self.args, self.lines, self.inputs = [], [], {}
        self.types = {}

    def arg(self, name, array):
        self.inputs[name] = array
        placement, sbp = self.stage, None
        if self.grid:
            sbp = self.layout.get(name, ["B"] * len(self.grid))
        if self.stages:
            placement, sbp = self.layout[name]
        ty = ttype(array.shape, sbp, placement)
        self.args.append(f'%{name}: {ty} {{of.name = "{name}"}}')
        self.types[f"%{name}"] = ty
        return f"%{name}"

    def next_stage(self, v, shape):
        """`v` moved to the next stage (unchanged without stages)."""
        if not self.stages:
            return v
        names = list(self.stages)
        self.stage = names[names.index(self.stage) + 1]
        self.grid = self.stages[self.stage][0]
        ty = ttype(shape, self.layout.get("@" + self.stage, ["B"] * len(self.grid)),
                   self.stage)
        result = f"%to_{self.stage}"
        self.lines.append(f"{result} = of.boxing {v} : {self.t(v)} -> {ty}")
        self.types[result] = ty
        return result

    def t(self, v):
        return self.types[v]

    def op(self, result, text, shape):
        ty = ttype(shape)
        self.lines.append(f"{result} = " + text.replace("$R", ty))
        self.types[result] = ty
        return result

    def text(self, out, out_shape, out_sbp, name="y"):
        header = ""
        ret, rty = out, self.t(out)
        if self.stages:
            header = "".join(
                f'of.placement @{n} {{device = "cpu", shape = {g}, ranks = {r}}}\n'
                for n, (g, r) in self.stages.items())
        elif self.grid:
            header = f'of.placement @p {{device = "cpu", shape = [{", ".join(map(str, self.grid))}]}}\n'
        if self.grid:
            rty = ttype(out_shape, out_sbp, self.stage)
            self.lines.append(f"%out = of.boxing {out} : {self.t(out)} -> {rty}")
            ret = "%out"
        body = "\n  ".join(self.lines)
        return (f"{header}func.func @main({', '.join(self.args)}) -> ({rty} {{of.name = \"{name}\"}}) {{\n"
                f"  {body}\n  return {ret} : {rty}\n}}\n")


def nproc_of(grid):
    """The ranks a layout's grid (or pipeline stages) runs on."""
    if isinstance(grid, dict):
        return max(r for _, ranks in grid.values() for r in ranks) + 1
    return math.prod(grid)


def f64(a):
    return np.asarray(a, dtype=np.float64)


# --------------------------------------------------------------------------
# MLP
# --------------------------------------------------------------------------

MLP_DIMS = [16, 32, 24, 8]
MLP_LAYOUTS = {
    # name: (grid, argument distributions, output distribution)
    "data-2": ([2], {"x": ["S(0)"]}, ["S(0)"]),
    "data-4": ([4], {"x": ["S(0)"]}, ["S(0)"]),
    "megatron-2": ([2], {"w0": ["S(1)"], "b0": ["S(0)"], "w1": ["S(0)"]}, ["B"]),
    "megatron-4": ([4], {"w0": ["S(1)"], "b0": ["S(0)"], "w1": ["S(0)"]}, ["B"]),
    "2d-2x2": ([2, 2], {"x": ["S(0)", "B"], "w0": ["B", "S(1)"], "b0": ["B", "S(0)"],
                        "w1": ["B", "S(0)"]}, ["S(0)", "B"]),
    # Pipelines: layer 0 on stage s0, layers 1 and 2 on s1.
    "stages-2": ({"s0": ([1], [0]), "s1": ([1], [1])},
                 {"x": ("s0", ["B"]), "w0": ("s0", ["B"]), "b0": ("s0", ["B"]),
                  "w1": ("s1", ["B"]), "b1": ("s1", ["B"]), "w2": ("s1", ["B"]),
                  "b2": ("s1", ["B"])}, ["B"]),
    "stages-data-2x2": ({"s0": ([2], [0, 1]), "s1": ([2], [2, 3])},
                        {"x": ("s0", ["S(0)"]), "w0": ("s0", ["B"]), "b0": ("s0", ["B"]),
                         "@s1": ["S(0)"], "w1": ("s1", ["B"]), "b1": ("s1", ["B"]),
                         "w2": ("s1", ["B"]), "b2": ("s1", ["B"])}, ["S(0)"]),
    # data parallel stage, then a Megatron stage on 3 ranks
    "stages-data-megatron": ({"s0": ([1], [3]), "s1": ([3], [0, 1, 2])},
                             {"x": ("s0", ["B"]), "w0": ("s0", ["B"]), "b0": ("s0", ["B"]),
                              "w1": ("s1", ["S(1)"]), "b1": ("s1", ["S(0)"]),
                              "w2": ("s1", ["S(0)"]), "b2": ("s1", ["B"])}, ["B"]),
}


def mlp(rng, grid, layout):
    m = Model(grid, layout)
    x = m.arg("x", rng.uniform(-1, 1, size=(6, MLP_DIMS[0])).astype(F32))
    ref, h = f64(m.inputs["x"]), x
    for i in range(3):
        w = m.arg(f"w{i}", (rng.uniform(-1, 1, size=(MLP_DIMS[i], MLP_DIMS[i + 1]))
                            / math.sqrt(MLP_DIMS[i])).astype(F32))
        b = m.arg(f"b{i}", rng.uniform(-1, 1, size=(MLP_DIMS[i + 1],)).astype(F32))
        shape = (6, MLP_DIMS[i + 1])
        mm = m.op(f"%mm{i}", f"of.matmul {h}, {w} : ({m.t(h)}, {m.t(w)}) -> $R", shape)
        h = m.op(f"%z{i}", f"of.add {mm}, {b} : ({m.t(mm)}, {m.t(b)}) -> $R", shape)
        ref = ref @ f64(m.inputs[f"w{i}"]) + f64(m.inputs[f"b{i}"])
        if i < 2:
            h = m.op(f"%h{i}", f"of.relu {h} : ({m.t(h)}) -> $R", shape)
            ref = np.maximum(ref, 0)
        if i == 0:
            h = m.next_stage(h, shape)
    return m, h, (6, MLP_DIMS[-1]), ref


def run_layout(build, layouts, layout, rng, tmp_path):
    """Builds the model once without distributions (run on 1 rank) and once
    with the layout's (run on its ranks); both must match NumPy."""
    grid, args, out_sbp = layouts[layout]
    seed = rng.integers(1 << 62)
    single, out, out_shape, ref = build(np.random.default_rng(seed), [], {})
    (tmp_path / "1").mkdir()
    one = run_ranks(compile_program(single.text(out, out_shape, None), tmp_path / "1"),
                    single.inputs, tmp_path / "1", 1)
    check(one["y"], ref, TOL, "1 rank")
    m, out, out_shape, _ = build(np.random.default_rng(seed), grid, args)
    nproc = nproc_of(grid)
    got = run_ranks(compile_program(m.text(out, out_shape, out_sbp), tmp_path), m.inputs,
                    tmp_path, nproc)
    check(got["y"], ref, TOL, f"{layout} on {nproc} ranks")


@pytest.mark.parametrize("layout", list(MLP_LAYOUTS))
def test_mlp(layout, rng, tmp_path):
    run_layout(mlp, MLP_LAYOUTS, layout, rng, tmp_path)


# --------------------------------------------------------------------------
# Transformer block
# --------------------------------------------------------------------------

T, C, H, D, FF = 6, 8, 2, 4, 16
BLOCK_LAYOUTS = {
    # tokens split (the attention gathers keys and values as it needs)
    "data-2": ([2], {"x": ["S(0)"]}, ["S(0)"]),
    "data-4": ([4], {"x": ["S(0)"]}, ["S(0)"]),
    # Megatron: heads split in attention, columns then rows in the MLP
    "megatron-2": ([2], {"wq": ["S(0)"], "wk": ["S(0)"], "wv": ["S(0)"], "wo": ["S(0)"],
                         "w1": ["S(1)"], "b1": ["S(0)"], "w2": ["S(0)"]}, ["B"]),
    "2d-2x2": ([2, 2], {"x": ["S(0)", "B"], "wq": ["B", "S(0)"], "wk": ["B", "S(0)"],
                        "wv": ["B", "S(0)"], "wo": ["B", "S(0)"], "w1": ["B", "S(1)"],
                        "b1": ["B", "S(0)"], "w2": ["B", "S(0)"]}, ["S(0)", "B"]),
    # Pipeline: attention (heads split) on ranks 0 and 1, the MLP (Megatron)
    # on ranks 2 and 3; the residual crosses the boundary split by tokens.
    "stages-megatron-2x2": (
        {"a": ([2], [0, 1]), "m": ([2], [2, 3])},
        {**{n: ("a", ["B"]) for n in ("x", "g1", "be1")},
         **{n: ("a", ["S(0)"]) for n in ("wq", "wk", "wv", "wo")},
         "@m": ["S(0)"],
         **{n: ("m", ["B"]) for n in ("g2", "be2", "b2")},
         "w1": ("m", ["S(1)"]), "b1": ("m", ["S(0)"]), "w2": ("m", ["S(0)"])}, ["B"]),
}


def layer_norm_ref(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def block(rng, grid, layout):
    m = Model(grid, layout)

    def param(name, shape, scale=1.0):
        return m.arg(name, (rng.uniform(-1, 1, size=shape) * scale).astype(F32))

    x = param("x", (T, C))
    g1, be1 = param("g1", (C,)), param("be1", (C,))
    wq, wk, wv = (param(n, (H, C, D), 1 / math.sqrt(C)) for n in ("wq", "wk", "wv"))
    wo = param("wo", (H, D, C), 1 / math.sqrt(D))
    g2, be2 = param("g2", (C,)), param("be2", (C,))
    w1, b1 = param("w1", (C, FF), 1 / math.sqrt(C)), param("b1", (FF,))
    w2, b2 = param("w2", (FF, C), 1 / math.sqrt(FF)), param("b2", (C,))
    P = {k: f64(v) for k, v in m.inputs.items()}

    n1 = m.op("%n1", f"of.layer_norm {x} weight {g1} bias {be1} : ({m.t(x)}, {m.t(g1)}, {m.t(be1)}) -> $R", (T, C))
    q = m.op("%q", f"of.matmul %n1, {wq} : ({m.t(n1)}, {m.t(wq)}) -> $R", (H, T, D))
    k = m.op("%k", f"of.matmul %n1, {wk} : ({m.t(n1)}, {m.t(wk)}) -> $R", (H, T, D))
    v = m.op("%v", f"of.matmul %n1, {wv} : ({m.t(n1)}, {m.t(wv)}) -> $R", (H, T, D))
    s = m.op("%s", f"of.matmul %q, %k {{transpose_b = true}} : ({m.t(q)}, {m.t(k)}) -> $R", (H, T, T))
    m.lines.append(f"%scale = of.constant dense<{1 / math.sqrt(D):.9e}> : tensor<f32>")
    m.types["%scale"] = "tensor<f32>"
    ss = m.op("%ss", f"of.mul %s, %scale : ({m.t(s)}, tensor<f32>) -> $R", (H, T, T))
    a = m.op("%a", f"of.softmax %ss : ({m.t(ss)}) -> $R", (H, T, T))
    o = m.op("%o", f"of.matmul %a, %v : ({m.t(a)}, {m.t(v)}) -> $R", (H, T, D))
    po = m.op("%po", f"of.matmul %o, {wo} : ({m.t(o)}, {m.t(wo)}) -> $R", (H, T, C))
    att = m.op("%att", f"of.reduce_sum %po {{axes = array<i64: 0>}} : ({m.t(po)}) -> $R", (T, C))
    r1 = m.op("%r1", f"of.add {x}, %att : ({m.t(x)}, {m.t(att)}) -> $R", (T, C))
    r1 = m.next_stage(r1, (T, C))
    n2 = m.op("%n2", f"of.layer_norm {r1} weight {g2} bias {be2} : ({m.t(r1)}, {m.t(g2)}, {m.t(be2)}) -> $R", (T, C))
    f1 = m.op("%f1", f"of.matmul %n2, {w1} : ({m.t(n2)}, {m.t(w1)}) -> $R", (T, FF))
    f2 = m.op("%f2", f"of.add %f1, {b1} : ({m.t(f1)}, {m.t(b1)}) -> $R", (T, FF))
    f3 = m.op("%f3", f"of.gelu %f2 : ({m.t(f2)}) -> $R", (T, FF))
    f4 = m.op("%f4", f"of.matmul %f3, {w2} : ({m.t(f3)}, {m.t(w2)}) -> $R", (T, C))
    f5 = m.op("%f5", f"of.add %f4, {b2} : ({m.t(f4)}, {m.t(b2)}) -> $R", (T, C))
    y = m.op("%y", f"of.add {r1}, %f5 : ({m.t(r1)}, {m.t(f5)}) -> $R", (T, C))

    # NumPy
    n1r = layer_norm_ref(P["x"], P["g1"], P["be1"])
    qr, kr, vr = (np.einsum("tc,hcd->htd", n1r, P[w]) for w in ("wq", "wk", "wv"))
    sr = np.einsum("htd,hsd->hts", qr, kr) / math.sqrt(D)
    ar = np.exp(sr - sr.max(-1, keepdims=True))
    ar /= ar.sum(-1, keepdims=True)
    attr = np.einsum("hts,hsd,hdc->tc", ar, vr, P["wo"])
    r1r = P["x"] + attr
    n2r = layer_norm_ref(r1r, P["g2"], P["be2"])
    z = n2r @ P["w1"] + P["b1"]
    gr = 0.5 * z * (1 + erf(z / math.sqrt(2)))
    ref = r1r + gr @ P["w2"] + P["b2"]
    return m, y, (T, C), ref


@pytest.mark.parametrize("layout", list(BLOCK_LAYOUTS))
def test_transformer_block(layout, rng, tmp_path):
    run_layout(block, BLOCK_LAYOUTS, layout, rng, tmp_path)
