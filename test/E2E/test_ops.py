"""Every compute op of the `of` dialect, compiled for the CPU, run by of-run
and compared with NumPy in float64.

Ops are grouped into a few programs with many outputs (each of-translate
compiles a kernel library, which dominates the run time); each output is one
test, under each CPU pipeline: the default, without fusion, without
in-place updates, and without libraries (`nolib`: generated code instead of
OpenBLAS gemm and oneDNN convolution steps). Errors are relative,
||y - ref|| / ||ref||, except for sums and means of signed terms, which
can cancel: there the error is relative to the sum of the magnitudes
(OF_TEST_SEED=7676 sums the 60 terms of g_reduce's input to 2.6e-5 of
that, and float32 rounding was then 4.2e-4 of the result).

Tolerances:
  - f32 elementwise ops (and shape ops, which only move data): 1e-5;
  - f32 reductions, normalisations, softmax, matmul, conv, pooling: 1e-5
    (the reductions here are at most a few hundred terms long, so float32
    accumulation stays well inside it);
  - integer and boolean results: exact;
  - bf16 results: 1e-2 (bf16 has an 8-bit significand, relative rounding
    error 2^-9 ~ 2e-3 per element); f16: 5e-3; f64: 1e-12.
"""

import math

import numpy as np
import pytest

from conftest import CUDA_DEVICES, SEED, skip_without_cuda
from ofrun import (Program, bf16_bits_to_f32, check, compile_program, mlir_type,
                   splitmix_keep)

F32 = np.float32
EW = 1e-5      # f32 elementwise
RED = 1e-5     # f32 reductions / normalisations / contractions
EXACT = 0
BF16 = 1e-2


def nonzero(rng, shape, lo=0.25, hi=2.0, dtype=F32):
    """Uniform magnitudes in [lo, hi) with random signs: never zero."""
    mag = rng.uniform(lo, hi, size=shape)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (mag * sign).astype(dtype)


def positive(rng, shape, lo=0.25, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(F32)


def f64(a):
    return np.asarray(a, dtype=np.float64)


def t(shape, et="f32"):
    return mlir_type(shape, et)


# --------------------------------------------------------------------------
# Program groups
# --------------------------------------------------------------------------

def g_unary(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (3, 5)))
    q = p.input("q", positive(rng, (3, 5)))
    xs, qs = f64(p.inputs["x"]), f64(p.inputs["q"])
    ty = p.t(x)
    erf = np.vectorize(math.erf)
    cases = {
        "neg": (x, "of.neg", -xs),
        "exp": (x, "of.exp", np.exp(xs)),
        "log": (q, "of.log", np.log(qs)),
        "sqrt": (q, "of.sqrt", np.sqrt(qs)),
        "rsqrt": (q, "of.rsqrt", 1 / np.sqrt(qs)),
        "tanh": (x, "of.tanh", np.tanh(xs)),
        "sigmoid": (x, "of.sigmoid", 1 / (1 + np.exp(-xs))),
        "relu": (x, "of.relu", np.maximum(xs, 0)),
        "silu": (x, "of.silu", xs / (1 + np.exp(-xs))),
        "erf": (x, "of.erf", erf(xs)),
        "sin": (x, "of.sin", np.sin(xs)),
        "cos": (x, "of.cos", np.cos(xs)),
        "gelu_none": (x, "of.gelu", xs * 0.5 * (1 + erf(xs / math.sqrt(2)))),
        "gelu_tanh": (x, 'of.gelu|{approximate = "tanh"}',
                      0.5 * xs * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                              (xs + 0.044715 * xs ** 3)))),
    }
    for name, (arg, op, ref) in cases.items():
        mnemonic, _, attrs = op.partition("|")
        attrs = " " + attrs if attrs else ""
        p.op(f"%{name} = {mnemonic} {arg}{attrs} : ({ty}) -> {ty}")
        p.output(name, f"%{name}", ty, ref, EW)
    # Integer neg and relu.
    i = p.input("i", rng.integers(-50, 50, size=(7,), dtype=np.int32))
    for name, ref in (("neg", -p.inputs["i"]),
                      ("relu", np.maximum(p.inputs["i"], 0))):
        p.op(f"%{name}_i32 = of.{name} {i} : ({p.t(i)}) -> {p.t(i)}")
        p.output(f"{name}_i32", f"%{name}_i32", p.t(i), ref, EXACT)
    return p


# Broadcast cases: (lhs shape, rhs shape).
BCAST = {
    "same": ((3, 4), (3, 4)),
    "row": ((3, 4), (4,)),
    "outer": ((2, 1, 4), (3, 1)),
    "scalar": ((3, 4), ()),
    "scalar_lhs": ((), (2, 3)),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.divide, "pow": np.power, "maximum": np.maximum,
    "minimum": np.minimum,
}


def g_binary(rng):
    p = Program()
    for case, (ls, rs) in BCAST.items():
        a = p.input(f"a_{case}", nonzero(rng, ls))
        b = p.input(f"b_{case}", nonzero(rng, rs))
        # pow needs a positive base.
        ap = p.input(f"ap_{case}", positive(rng, ls))
        out = np.broadcast_shapes(ls, rs)
        for name, fn in BINARY.items():
            lhs = ap if name == "pow" else a
            ref = fn(f64(p.inputs[lhs[1:]]), f64(p.inputs[b[1:]]))
            r = f"%{name}_{case}"
            p.op(f"{r} = of.{name} {lhs}, {b} : ({p.t(lhs)}, {p.t(b)}) -> {t(out)}")
            p.output(f"{name}_{case}", r, t(out), ref, EW)
    # Integers: division rounds toward zero.
    ia = p.input("ia", rng.integers(-100, 100, size=(3, 4), dtype=np.int32))
    ib_vals = rng.integers(1, 9, size=(4,), dtype=np.int32) * rng.choice([-1, 1], size=4).astype(np.int32)
    ib = p.input("ib", ib_vals)
    A, B = p.inputs["ia"].astype(np.int64), ib_vals.astype(np.int64)
    irefs = {"add": A + B, "sub": A - B, "mul": A * B,
             "div": np.trunc(A / B).astype(np.int64),
             "maximum": np.maximum(A, B), "minimum": np.minimum(A, B)}
    for name, ref in irefs.items():
        r = f"%{name}_i32"
        p.op(f"{r} = of.{name} {ia}, {ib} : ({p.t(ia)}, {p.t(ib)}) -> {t((3, 4), 'i32')}")
        p.output(f"{name}_i32", r, t((3, 4), "i32"), ref.astype(np.int32), EXACT)
    return p


DIRECTIONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
              "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def g_compare(rng):
    p = Program()
    # Small integers as floats, so that ties (eq, le, ge) occur.
    a = p.input("a", rng.integers(-3, 4, size=(3, 4)).astype(F32))
    b = p.input("b", rng.integers(-3, 4, size=(4,)).astype(F32))
    ia = p.input("ia", rng.integers(-3, 4, size=(2, 3), dtype=np.int64))
    ib = p.input("ib", rng.integers(-3, 4, size=(), dtype=np.int64))
    for d, fn in DIRECTIONS.items():
        p.op(f"%{d} = of.compare {d}, {a}, {b} : ({p.t(a)}, {p.t(b)}) -> {t((3, 4), 'i1')}")
        p.output(f"{d}_f32", f"%{d}", t((3, 4), "i1"),
                 fn(p.inputs["a"], p.inputs["b"]), EXACT)
        p.op(f"%{d}_i = of.compare {d}, {ia}, {ib} : ({p.t(ia)}, {p.t(ib)}) -> {t((2, 3), 'i1')}")
        p.output(f"{d}_i64", f"%{d}_i", t((2, 3), "i1"),
                 fn(p.inputs["ia"], p.inputs["ib"]), EXACT)
    # select on a computed condition, with broadcasting of the branches.
    x = p.input("x", nonzero(rng, (3, 4)))
    y = p.input("y", nonzero(rng, (4,)))
    p.op(f"%sel = of.select %lt, {x}, {y} : ({t((3, 4), 'i1')}, {p.t(x)}, {p.t(y)}) -> {p.t(x)}")
    p.output("select_computed", "%sel", p.t(x),
             np.where(p.inputs["a"] < p.inputs["b"], p.inputs["x"], p.inputs["y"]), EXACT)
    # select on an i1 program input, broadcast condition, i32 branches.
    c = p.input("c", rng.integers(0, 2, size=(3, 1)).astype(np.bool_))
    u = p.input("u", rng.integers(-9, 9, size=(3, 4), dtype=np.int32))
    v = p.input("v", rng.integers(-9, 9, size=(), dtype=np.int32))
    p.op(f"%sel2 = of.select {c}, {u}, {v} : ({p.t(c)}, {p.t(u)}, {p.t(v)}) -> {p.t(u)}")
    p.output("select_input_i32", "%sel2", p.t(u),
             np.where(p.inputs["c"], p.inputs["u"], p.inputs["v"]), EXACT)
    return p


def g_cast(rng):
    p = Program()
    x = p.input("x", (rng.uniform(-100, 100, size=(3, 5))).astype(F32))
    xv = p.inputs["x"]
    i = p.input("i", rng.integers(-1000, 1000, size=(6,), dtype=np.int32))
    l = p.input("l", rng.integers(-1000, 1000, size=(6,), dtype=np.int64))
    z = p.input("z", rng.integers(-2, 3, size=(6,)).astype(F32))  # with zeros
    bo = p.input("bo", rng.integers(0, 2, size=(6,)).astype(np.bool_))
    tx = p.t(x)

    def cast(name, src, dst_type, ref, tol):
        p.op(f"%{name} = of.cast {src} : {p.t(src)} to {dst_type}",
             {f"%{name}": dst_type})
        p.output(name, f"%{name}", dst_type, ref, tol)

    cast("f32_i32", x, t((3, 5), "i32"), np.trunc(xv).astype(np.int32), EXACT)
    cast("f32_i64", x, t((3, 5), "i64"), np.trunc(xv).astype(np.int64), EXACT)
    cast("i32_f32", i, t((6,)), p.inputs["i"].astype(F32), EXACT)
    cast("i64_f32", l, t((6,)), p.inputs["l"].astype(F32), EXACT)
    cast("i32_i64", i, t((6,), "i64"), p.inputs["i"].astype(np.int64), EXACT)
    cast("i64_i32", l, t((6,), "i32"), p.inputs["l"].astype(np.int32), EXACT)
    # f32 -> bf16 -> f32 (round to nearest even: within 2^-9 relative).
    p.op(f"%bf = of.cast {x} : {tx} to {t((3, 5), 'bf16')}", {"%bf": t((3, 5), "bf16")})
    cast("bf16_f32", "%bf", tx, xv, BF16)
    p.output("bf16", "%bf", t((3, 5), "bf16"), xv, BF16)
    cast("f32_i1", z, t((6,), "i1"), p.inputs["z"] != 0, EXACT)
    cast("i32_i1", i, t((6,), "i1"), p.inputs["i"] != 0, EXACT)
    cast("i1_f32", bo, t((6,)), p.inputs["bo"].astype(F32), EXACT)
    cast("i1_i32", bo, t((6,), "i32"), p.inputs["bo"].astype(np.int32), EXACT)
    cast("i1_i64", bo, t((6,), "i64"), p.inputs["bo"].astype(np.int64), EXACT)
    return p


def g_shape(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (2, 3, 4)))
    xv = p.inputs["x"]
    r = p.input("r", nonzero(rng, (1, 4)))
    s = p.input("s", nonzero(rng, (1, 1)))

    def op(name, line, ty, ref):
        p.op(f"%{name} = {line} -> {ty}", {f"%{name}": ty})
        p.output(name, f"%{name}", ty, ref, EXACT)

    op("broadcast_to", f"of.broadcast_to {r} : ({p.t(r)})", t((2, 3, 4)),
       np.broadcast_to(p.inputs["r"], (2, 3, 4)))
    op("reshape", f"of.reshape {x} : ({p.t(x)})", t((4, 6)), xv.reshape(4, 6))
    op("reshape_1d", f"of.reshape {x} : ({p.t(x)})", t((24,)), xv.reshape(24))
    op("reshape_0d", f"of.reshape {s} : ({p.t(s)})", t(()), p.inputs["s"].reshape(()))
    p.op(f"%r0 = of.reshape {s} : ({p.t(s)}) -> {t(())}")
    op("reshape_from_0d", f"of.reshape %r0 : ({t(())})", t((1, 1, 1)),
       p.inputs["s"].reshape(1, 1, 1))
    op("transpose", f"of.transpose {x}, [2, 0, 1] : ({p.t(x)})", t((4, 2, 3)),
       xv.transpose(2, 0, 1))
    op("transpose_2d", f"of.transpose {r}, [1, 0] : ({p.t(r)})", t((4, 1)),
       p.inputs["r"].T)
    op("slice", f"of.slice {x} {{starts = array<i64: 0, 1, 0>, limits = array<i64: 2, 3, 4>}} : ({p.t(x)})",
       t((2, 2, 4)), xv[0:2, 1:3, 0:4])
    op("slice_strided",
       f"of.slice {x} {{starts = array<i64: 1, 0, 1>, limits = array<i64: 2, 3, 4>, strides = array<i64: 1, 2, 2>}} : ({p.t(x)})",
       t((1, 2, 2)), xv[1:2, 0:3:2, 1:4:2])
    y = p.input("y", nonzero(rng, (2, 1, 4)))
    w = p.input("w", nonzero(rng, (2, 2, 4)))
    op("concat", f"of.concat {x}, {y}, {w} {{axis = 1 : i64}} : ({p.t(x)}, {p.t(y)}, {p.t(w)})",
       t((2, 6, 4)), np.concatenate([xv, p.inputs["y"], p.inputs["w"]], axis=1))
    op("concat_neg_axis", f"of.concat {x}, {x} {{axis = -1 : i64}} : ({p.t(x)}, {p.t(x)})",
       t((2, 3, 8)), np.concatenate([xv, xv], axis=-1))
    ii = p.input("ii", rng.integers(-9, 9, size=(2, 3), dtype=np.int64))
    op("transpose_i64", f"of.transpose {ii}, [1, 0] : ({p.t(ii)})", t((3, 2), "i64"),
       p.inputs["ii"].T)
    return p


REDUCE_AXES = {"a1": [1], "a02": [0, 2], "neg1": [-1], "all": [0, 1, 2]}
REDUCE_OPS = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max}


def g_reduce(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (3, 4, 5)))
    xv = f64(p.inputs["x"])
    for op, fn in REDUCE_OPS.items():
        for an, axes in REDUCE_AXES.items():
            for keep in (False, True):
                ref = fn(xv, axis=tuple(axes), keepdims=keep)
                name = f"{op}_{an}_{'keep' if keep else 'drop'}"
                ax = ", ".join(map(str, axes))
                ty = t(ref.shape)
                p.op(f"%{name} = of.{op} {x} {{axes = array<i64: {ax}>, keepdims = {str(keep).lower()}}} : ({p.t(x)}) -> {ty}")
                # A sum of signed terms can cancel to near 0 (the 60 terms of
                # "all": 0.4% of draws beyond 1e-5 relative in float32), so
                # sums and means are measured on the sum of magnitudes.
                scale = None if op == "reduce_max" else fn(np.abs(xv), axis=tuple(axes),
                                                            keepdims=keep)
                p.output(name, f"%{name}", ty, ref, RED, scale)
    i = p.input("i", rng.integers(-50, 50, size=(3, 4), dtype=np.int32))
    for op, fn in (("reduce_sum", np.sum), ("reduce_max", np.max)):
        ref = fn(p.inputs["i"], axis=1).astype(np.int32)
        p.op(f"%{op}_i32 = of.{op} {i} {{axes = array<i64: 1>}} : ({p.t(i)}) -> {t((3,), 'i32')}")
        p.output(f"{op}_i32", f"%{op}_i32", t((3,), "i32"), ref, EXACT)
    return p


def g_matmul(rng):
    p = Program()

    def mm(name, ashape, bshape, ta=False, tb=False, dtype=F32):
        if dtype == F32:
            av, bv = nonzero(rng, ashape), nonzero(rng, bshape)
        else:
            av = rng.integers(-20, 20, size=ashape, dtype=dtype)
            bv = rng.integers(-20, 20, size=bshape, dtype=dtype)
        a = p.input(f"a_{name}", av)
        b = p.input(f"b_{name}", bv)
        A = np.swapaxes(av, -1, -2) if ta else av
        B = np.swapaxes(bv, -1, -2) if tb else bv
        if dtype == F32:
            ref, tol = np.matmul(f64(A), f64(B)), RED
        else:
            ref, tol = np.matmul(A.astype(np.int64), B.astype(np.int64)).astype(dtype), EXACT
        attrs = []
        if ta:
            attrs.append("transpose_a = true")
        if tb:
            attrs.append("transpose_b = true")
        attr = f" {{{', '.join(attrs)}}}" if attrs else ""
        ty = mlir_type(ref.shape, dtype)
        p.op(f"%{name} = of.matmul {a}, {b}{attr} : ({p.t(a)}, {p.t(b)}) -> {ty}")
        p.output(name, f"%{name}", ty, ref, tol)

    mm("mm2d", (5, 7), (7, 6))
    mm("transpose_a", (7, 5), (7, 6), ta=True)
    mm("transpose_b", (5, 7), (6, 7), tb=True)
    mm("transpose_ab", (7, 5), (6, 7), ta=True, tb=True)
    mm("batched3d_2d", (2, 5, 7), (7, 6))
    mm("batched3d_2d_tb", (2, 5, 7), (6, 7), tb=True)
    mm("batched3d_3d", (3, 5, 7), (3, 7, 6))
    mm("batched4d", (2, 3, 5, 7), (2, 3, 7, 6))
    mm("batched4d_ta", (2, 3, 7, 5), (2, 3, 7, 6), ta=True)
    mm("bcast_batch", (2, 1, 5, 7), (1, 3, 7, 6))
    mm("bcast_2d_3d", (5, 7), (3, 7, 6))
    mm("vec_rows", (1, 7), (7, 1))
    mm("outer_k1", (5, 1), (1, 6))
    mm("row_m1_ta", (7, 1), (7, 6), ta=True)
    mm("col_n1_tb", (5, 7), (1, 7), tb=True)
    mm("unit_batch", (1, 5, 7), (1, 7, 6))
    mm("batched3d_2d_ta", (2, 7, 5), (7, 6), ta=True)
    mm("long_k", (3, 300), (300, 4))
    mm("int32", (4, 5), (5, 3), dtype=np.int32)
    mm("int32_batched", (2, 4, 5), (2, 5, 3), dtype=np.int32)

    # bf16 products (f32 accumulation, one rounding of the result) in the
    # layouts above: on a CPU without bf16 kernels, oneDNN's f32 matmul of
    # widened copies, its strided result rounded back element by element.
    def mm_bf16(name, ashape, bshape, ta=False, tb=False):
        av, bv = nonzero(rng, ashape), nonzero(rng, bshape)
        a, b = p.input(f"a_{name}_bf16", av), p.input(f"b_{name}_bf16", bv)
        A = np.swapaxes(round_bf16(av), -1, -2) if ta else round_bf16(av)
        B = np.swapaxes(round_bf16(bv), -1, -2) if tb else round_bf16(bv)
        ref = np.matmul(f64(A), f64(B))
        attrs = [k for k, on in (("transpose_a = true", ta), ("transpose_b = true", tb)) if on]
        attr = f" {{{', '.join(attrs)}}}" if attrs else ""
        at, bt = mlir_type(ashape, "bf16"), mlir_type(bshape, "bf16")
        rt = mlir_type(ref.shape, "bf16")
        p.op(f"%{name}_a16 = of.cast {a} : {p.t(a)} to {at}")
        p.op(f"%{name}_b16 = of.cast {b} : {p.t(b)} to {bt}")
        p.op(f"%{name}_16 = of.matmul %{name}_a16, %{name}_b16{attr} : ({at}, {bt}) -> {rt}")
        p.op(f"%{name}_bf16 = of.cast %{name}_16 : {rt} to {mlir_type(ref.shape, F32)}")
        p.output(f"{name}_bf16", f"%{name}_bf16", mlir_type(ref.shape, F32), ref, BF16)

    mm_bf16("mm2d", (5, 7), (7, 6))
    mm_bf16("transpose_ab", (7, 5), (6, 7), ta=True, tb=True)
    mm_bf16("batched3d_2d_tb", (2, 5, 7), (6, 7), tb=True)
    mm_bf16("batched4d_ta", (2, 3, 7, 5), (2, 3, 7, 6), ta=True)
    mm_bf16("bcast_batch", (2, 1, 5, 7), (1, 3, 7, 6))
    mm_bf16("long_k", (3, 300), (300, 4))
    return p


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def g_softmax(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (2, 3, 5), hi=4.0))
    xv = f64(p.inputs["x"])
    for axis in (-1, 1, 0):
        sm = softmax_ref(xv, axis)
        for op, ref in (("softmax", sm), ("log_softmax", np.log(sm))):
            name = f"{op}_{'m' + str(-axis) if axis < 0 else axis}"
            p.op(f"%{name} = of.{op} {x} {{axis = {axis} : i64}} : ({p.t(x)}) -> {p.t(x)}")
            p.output(name, f"%{name}", p.t(x), ref, RED)
    # Rows of 40 (on a GPU a warp per row: lanes stride over the row and
    # combine by shuffles; 11 rows leave the second block 5 spare warps).
    w = p.input("w", nonzero(rng, (11, 40), hi=4.0))
    wv = f64(p.inputs["w"])
    sm = softmax_ref(wv, -1)
    for op, ref in (("softmax", sm), ("log_softmax", np.log(sm))):
        p.op(f"%{op}_rows = of.{op} {w} {{axis = -1 : i64}} : ({p.t(w)}) -> {p.t(w)}")
        p.output(f"{op}_rows", f"%{op}_rows", p.t(w), ref, RED)
    return p


def layer_norm_ref(x, axis, w=None, b=None, eps=1e-5):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def g_norm(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (2, 3, 8)))
    xv = f64(p.inputs["x"])
    g = p.input("g", nonzero(rng, (8,)))
    b = p.input("b", nonzero(rng, (8,)))
    g2 = p.input("g2", nonzero(rng, (3, 8)))
    b2 = p.input("b2", nonzero(rng, (3, 8)))
    G, Bv, G2, B2 = (f64(p.inputs[k]) for k in ("g", "b", "g2", "b2"))
    tx = p.t(x)
    p.op(f"%ln = of.layer_norm {x} weight {g} bias {b} {{axis = -1 : i64, epsilon = 1.0e-05 : f64}} : ({tx}, {p.t(g)}, {p.t(b)}) -> {tx}")
    p.output("layer_norm_wb", "%ln", tx, layer_norm_ref(xv, -1, G, Bv), RED)
    p.op(f"%ln0 = of.layer_norm {x} : ({tx}) -> {tx}")
    p.output("layer_norm_plain", "%ln0", tx, layer_norm_ref(xv, -1), RED)
    p.op(f"%lnw = of.layer_norm {x} weight {g} : ({tx}, {p.t(g)}) -> {tx}")
    p.output("layer_norm_w", "%lnw", tx, layer_norm_ref(xv, -1, G), RED)
    p.op(f"%ln2 = of.layer_norm {x} weight {g2} bias {b2} {{axis = -2 : i64, epsilon = 1.0e-03 : f64}} : ({tx}, {p.t(g2)}, {p.t(b2)}) -> {tx}")
    p.output("layer_norm_axis_m2", "%ln2", tx, layer_norm_ref(xv, -2, G2, B2, 1e-3), RED)
    p.op(f"%ln3 = of.layer_norm {x} {{axis = 1 : i64}} : ({tx}) -> {tx}")
    p.output("layer_norm_axis1_plain", "%ln3", tx, layer_norm_ref(xv, 1), RED)

    def rms(x, axis, w=None, eps=1e-6):
        axes = tuple(range(axis % x.ndim, x.ndim))
        y = x / np.sqrt((x ** 2).mean(axis=axes, keepdims=True) + eps)
        return y * w if w is not None else y

    p.op(f"%rms = of.rms_norm {x} weight {g} : ({tx}, {p.t(g)}) -> {tx}")
    p.output("rms_norm_w", "%rms", tx, rms(xv, -1, G), RED)
    p.op(f"%rms0 = of.rms_norm {x} : ({tx}) -> {tx}")
    p.output("rms_norm_plain", "%rms0", tx, rms(xv, -1), RED)
    p.op(f"%rms2 = of.rms_norm {x} weight {g2} {{axis = -2 : i64, epsilon = 1.0e-04 : f64}} : ({tx}, {p.t(g2)}) -> {tx}")
    p.output("rms_norm_axis_m2", "%rms2", tx, rms(xv, -2, G2, 1e-4), RED)
    return p


def g_gather(rng):
    p = Program()
    table = p.input("table", nonzero(rng, (10, 4)))
    for dt in (np.int32, np.int64):
        name = f"embedding_{np.dtype(dt).name}"
        ids = p.input(f"ids_{np.dtype(dt).name}", rng.integers(0, 10, size=(2, 3), dtype=dt))
        ty = t((2, 3, 4))
        p.op(f"%{name} = of.embedding {ids}, {table} : ({p.t(ids)}, {p.t(table)}) -> {ty}")
        p.output(name, f"%{name}", ty, p.inputs["table"][p.inputs[ids[1:]]], EXACT)
    # embedding_grad: rows summed by index (repeats included); an index
    # outside [0, vocab) contributes nothing.
    ids = rng.integers(0, 10, size=(2, 5), dtype=np.int64)
    ids[0, :3] = 4
    ids[1, 0], ids[1, 1] = -1, 10
    ids = p.input("eg_ids", ids)
    grad = p.input("eg_grad", nonzero(rng, (2, 5, 4)))
    ref = np.zeros((10, 4))
    for i, row in zip(p.inputs["eg_ids"].ravel(), f64(p.inputs["eg_grad"]).reshape(-1, 4)):
        if 0 <= i < 10:
            ref[i] += row
    p.op(f"%eg = of.embedding_grad {ids}, {grad} : ({p.t(ids)}, {p.t(grad)}) -> {t((10, 4))}")
    p.output("embedding_grad", "%eg", t((10, 4)), ref, EW)
    logits = p.input("logits", nonzero(rng, (2, 3, 7), hi=3.0))
    lv = f64(p.inputs["logits"])
    lse = np.log(np.exp(lv - lv.max(-1, keepdims=True)).sum(-1)) + lv.max(-1)
    for dt in (np.int64, np.int32):
        labels = p.input(f"labels_{np.dtype(dt).name}", rng.integers(0, 7, size=(2, 3), dtype=dt))
        lab = p.inputs[labels[1:]]
        ref = lse - np.take_along_axis(lv, lab[..., None].astype(np.int64), -1)[..., 0]
        name = f"cross_entropy_{np.dtype(dt).name}"
        p.op(f"%{name} = of.cross_entropy {logits}, {labels} : ({p.t(logits)}, {p.t(labels)}) -> {t((2, 3))}")
        p.output(name, f"%{name}", t((2, 3)), ref, RED)
    return p


def g_threads(rng):
    """Kernels big enough that the CPU runtime splits their outermost
    parallel loop among threads (at least 16K innermost iterations a
    thread), over extents that no thread count divides evenly: every slice
    boundary must compute exactly what one thread would. Tolerances as for
    the same ops elsewhere (EW, RED)."""
    p = Program()
    x = p.input("x", nonzero(rng, (7, 96, 64), hi=2.0))
    X = f64(p.inputs["x"])
    tx = p.t(x)
    p.op(f"%e = of.exp {x} : ({tx}) -> {tx}")
    p.op(f"%em = of.mul %e, {x} : ({tx}, {tx}) -> {tx}")
    p.output("exp_mul", "%em", tx, np.exp(X) * X, EW)
    p.op(f"%tr = of.transpose {x}, [2, 0, 1] : ({tx}) -> {t((64, 7, 96))}")
    p.output("transpose", "%tr", t((64, 7, 96)), X.transpose(2, 0, 1), EW)
    p.op(f"%mid = of.reduce_sum {x} {{axes = array<i64: 1>}} : ({tx}) -> {t((7, 64))}")
    p.output("reduce_middle", "%mid", t((7, 64)), X.sum(1), RED)
    p.op(f"%last = of.reduce_max {x} {{axes = array<i64: 2>}} : ({tx}) -> {t((7, 96))}")
    p.output("reduce_max_last", "%last", t((7, 96)), X.max(2), EW)
    s = p.input("s", nonzero(rng, (13, 48, 64), hi=4.0))
    S = f64(p.inputs["s"])
    ts = p.t(s)
    p.op(f"%sm = of.softmax {s} {{axis = -1 : i64}} : ({ts}) -> {ts}")
    p.output("softmax", "%sm", ts, softmax_ref(S, -1), RED)
    n = p.input("n", nonzero(rng, (9, 40, 128)))
    N = f64(p.inputs["n"])
    tn = p.t(n)
    p.op(f"%ln = of.layer_norm {n} {{axis = -1 : i64}} : ({tn}) -> {tn}")
    p.output("layer_norm", "%ln", tn, layer_norm_ref(N, -1), RED)
    return p


def g_long_reduce(rng):
    """Reductions long enough that a GPU shares each among a block's threads
    (a full sum, long rows, an outer axis), and short ones over an outer
    axis (a thread per output). Tolerance RED: the float32 sums here run
    over up to 10^5 positive terms, in a tree on a GPU and a sum over
    several axes one axis at a time on a CPU (the total of 10^5 terms as one
    sequential loop reached 1.15e-5 in a full ctest run; in stages, 1e-8 to 4e-7
    over eight seeds)."""
    p = Program()
    big = p.input("big", positive(rng, (100, 1000)))
    B = f64(p.inputs["big"])
    tb = p.t(big)
    p.op(f"%total = of.reduce_sum {big} {{axes = array<i64: 0, 1>}} : ({tb}) -> {t(())}")
    p.output("total", "%total", t(()), B.sum(), RED)
    p.op(f"%colsum = of.reduce_sum {big} {{axes = array<i64: 0>}} : ({tb}) -> {t((1000,))}")
    p.output("colsum", "%colsum", t((1000,)), B.sum(0), RED)
    rows = p.input("rows", nonzero(rng, (3, 5000), hi=4.0))
    R = f64(p.inputs["rows"])
    tr = p.t(rows)
    for op, ref in (("reduce_max", R.max(1)), ("reduce_mean", R.mean(1))):
        p.op(f"%{op} = of.{op} {rows} {{axes = array<i64: 1>}} : ({tr}) -> {t((3,))}")
        p.output(f"{op}_rows", f"%{op}", t((3,)), ref, RED if op == "reduce_mean" else EW)
    p.op(f"%sm = of.softmax {rows} : ({tr}) -> {tr}")
    p.output("softmax_rows", "%sm", tr, softmax_ref(R, -1), RED)
    p.op(f"%ln = of.layer_norm {rows} : ({tr}) -> {tr}")
    p.output("layer_norm_rows", "%ln", tr, layer_norm_ref(R, -1), RED)
    labels = p.input("labels", rng.integers(0, 5000, size=(3,), dtype=np.int64))
    lse = np.log(np.exp(R - R.max(-1, keepdims=True)).sum(-1)) + R.max(-1)
    p.op(f"%ce = of.cross_entropy {rows}, {labels} : ({tr}, {p.t(labels)}) -> {t((3,))}")
    p.output("cross_entropy_rows", "%ce", t((3,)),
             lse - R[np.arange(3), p.inputs["labels"]], RED)
    # Middle axes of a 3-D tensor, and a short outer axis.
    cube = p.input("cube", nonzero(rng, (6, 300, 7)))
    C = f64(p.inputs["cube"])
    p.op(f"%mid = of.reduce_sum {cube} {{axes = array<i64: 0, 1>}} : ({p.t(cube)}) -> {t((7,))}")
    p.output("sum_axes_01", "%mid", t((7,)), C.sum((0, 1)), RED)
    p.op(f"%outer = of.reduce_max {cube} {{axes = array<i64: 0>}} : ({p.t(cube)}) -> {t((300, 7))}")
    p.output("max_axis_0", "%outer", t((300, 7)), C.max(0), EW)
    return p


def conv2d_ref(x, w, b=None, strides=(1, 1), padding=(0, 0, 0, 0),
               dilation=(1, 1), groups=1):
    x = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[1]), (padding[2], padding[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                hs, ws = i * dilation[0], j * dilation[1]
                patch = xg[:, :, hs:hs + strides[0] * (oh - 1) + 1:strides[0],
                           ws:ws + strides[1] * (ow - 1) + 1:strides[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wg[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def conv2d_grads_ref(x, w, dy, strides=(1, 1), padding=(0, 0, 0, 0),
                     dilation=(1, 1), groups=1):
    """The gradients (dx, dw) of conv2d_ref's sum(conv * dy): the same
    windows, read backwards."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[1]), (padding[2], padding[3])))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    o, cg, kh, kw = w.shape
    oh, ow = dy.shape[2:]
    og = o // groups
    for g in range(groups):
        cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
        for i in range(kh):
            for j in range(kw):
                hs, ws = i * dilation[0], j * dilation[1]
                window = (slice(None), cs, slice(hs, hs + strides[0] * (oh - 1) + 1, strides[0]),
                          slice(ws, ws + strides[1] * (ow - 1) + 1, strides[1]))
                dxp[window] += np.einsum("nohw,oc->nchw", dy[:, os_], w[os_, :, i, j])
                dw[os_, :, i, j] = np.einsum("nchw,nohw->oc", xp[window], dy[:, os_])
    h, wd = x.shape[2:]
    return dxp[:, :, padding[0]:padding[0] + h, padding[2]:padding[2] + wd], dw


CONV_CASES = {
    "plain": dict(x=(1, 2, 5, 5), w=(3, 2, 3, 3)),
    "strided_padded_bias": dict(x=(2, 3, 6, 7), w=(4, 3, 3, 3), bias=True,
                                strides=(2, 2), padding=(1, 1, 1, 1)),
    "asym_pad_stride": dict(x=(1, 2, 6, 6), w=(2, 2, 2, 3), strides=(1, 2),
                            padding=(0, 1, 2, 1)),
    "dilation": dict(x=(1, 2, 7, 7), w=(3, 2, 3, 3), dilation=(2, 2)),
    "groups2_bias": dict(x=(2, 4, 5, 5), w=(6, 2, 3, 3), bias=True, groups=2,
                         padding=(1, 1, 1, 1)),
}


def g_conv(rng):
    """Convolutions and their gradients (oneDNN steps on the CPU), in f32
    and, from inputs rounded to bf16 and f16, in bf16 and f16 (f32
    accumulation, one rounding of the result; an f16 convolution is the
    f32 library one of its widened operands)."""
    p = Program()
    for name, c in CONV_CASES.items():
        x = p.input(f"x_{name}", nonzero(rng, c["x"]))
        w = p.input(f"w_{name}", nonzero(rng, c["w"]))
        kw = {k: c[k] for k in ("strides", "padding", "dilation", "groups") if k in c}
        yshape = conv2d_ref(f64(p.inputs[x[1:]]), f64(p.inputs[w[1:]]), **kw).shape
        dy = p.input(f"dy_{name}", nonzero(rng, yshape))
        b = p.input(f"b_{name}", nonzero(rng, (c["w"][0],))) if c.get("bias") else None
        attrs = []
        for k in ("strides", "padding", "dilation"):
            if k in c:
                attrs.append(f"{k} = array<i64: {', '.join(map(str, c[k]))}>")
        if "groups" in c:
            attrs.append(f"groups = {c['groups']} : i64")
        attr = f" {{{', '.join(attrs)}}}" if attrs else ""
        for et, rounded, tol in (("f32", lambda a: a, RED), ("bf16", round_bf16, BF16),
                                 ("f16", lambda a: a.astype(np.float16).astype(np.float32), F16)):
            X, W, DY = (f64(rounded(p.inputs[v[1:]])) for v in (x, w, dy))
            B = f64(rounded(p.inputs[b[1:]])) if b else None
            ref = conv2d_ref(X, W, B, **kw)
            dx_ref, dw_ref = conv2d_grads_ref(X, W, DY, **kw)
            args = []
            for v in (x, w, dy) + ((b,) if b else ()):
                if et == "f32":
                    args.append(v)
                    continue
                vt = p.t(v).replace("f32", et)
                p.op(f"%{v[1:]}_{et} = of.cast {v} : {p.t(v)} to {vt}")
                args.append(f"%{v[1:]}_{et}")
            cx, cw, cdy = args[:3]
            ty = lambda shape: t(shape, et)
            xt, wt, yt = ty(c["x"]), ty(c["w"]), ty(yshape)
            fwd = [cx, cw] + args[3:]
            ftypes = [xt, wt] + ([ty((c["w"][0],))] if b else [])
            lines = {
                "conv": (f"of.conv2d {', '.join(fwd)}{attr} : ({', '.join(ftypes)}) -> {yt}", yshape, ref),
                "conv_dx": (f"of.conv2d_grad_input {cdy}, {cw}{attr} : ({yt}, {wt}) -> {xt}", c["x"], dx_ref),
                "conv_dw": (f"of.conv2d_grad_filter {cx}, {cdy}{attr} : ({xt}, {yt}) -> {wt}", c["w"], dw_ref),
            }
            for op, (line, shape, want) in lines.items():
                r = f"%{op}_{name}_{et}"
                p.op(f"{r} = {line}")
                if et != "f32":
                    p.op(f"{r}_f32 = of.cast {r} : {ty(shape)} to {t(shape)}")
                    r += "_f32"
                label = f"{op}_{name}" + ("" if et == "f32" else f"_{et}")
                p.output(label, r, t(shape), want, tol)
    return p


def pool_ref(x, kernel, strides=None, padding=(0, 0, 0, 0), mode="max",
             count_include_pad=True):
    strides = strides or kernel
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[1]), (padding[2], padding[3])),
                constant_values=fill)
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), (padding[0], padding[1]),
                                    (padding[2], padding[3])))
    n, c, h, w = xp.shape
    oh = (h - kernel[0]) // strides[0] + 1
    ow = (w - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * strides[0], j * strides[1]
            win = xp[:, :, hs:hs + kernel[0], ws:ws + kernel[1]]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = (kernel[0] * kernel[1] if count_include_pad else
                       ones[:, :, hs:hs + kernel[0], ws:ws + kernel[1]].sum(axis=(2, 3)))
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


POOL_CASES = {
    "max_k2": dict(mode="max", kernel=(2, 2)),
    "max_k3_s2_p1": dict(mode="max", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
    "max_asym": dict(mode="max", kernel=(2, 3), strides=(1, 2), padding=(0, 1, 1, 0)),
    "avg_k2": dict(mode="avg", kernel=(2, 2)),
    "avg_pad_include": dict(mode="avg", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1),
                            count_include_pad=True),
    "avg_pad_exclude": dict(mode="avg", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1),
                            count_include_pad=False),
    "avg_asym_exclude": dict(mode="avg", kernel=(2, 3), strides=(1, 2), padding=(1, 0, 0, 2),
                             count_include_pad=False),
}


def g_pool(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (2, 3, 7, 6)))
    xv = f64(p.inputs["x"])
    for name, c in POOL_CASES.items():
        kw = {k: c[k] for k in ("kernel", "strides", "padding", "count_include_pad") if k in c}
        ref = pool_ref(xv, mode=c["mode"], **kw)
        attrs = [f"kernel_size = array<i64: {', '.join(map(str, c['kernel']))}>"]
        for k in ("strides", "padding"):
            if k in c:
                attrs.append(f"{k} = array<i64: {', '.join(map(str, c[k]))}>")
        if "count_include_pad" in c:
            attrs.append(f"count_include_pad = {str(c['count_include_pad']).lower()}")
        ty = t(ref.shape)
        op = "max_pool2d" if c["mode"] == "max" else "avg_pool2d"
        p.op(f"%{name} = of.{op} {x} {{{', '.join(attrs)}}} : ({p.t(x)}) -> {ty}")
        p.output(name, f"%{name}", ty, ref, EXACT if c["mode"] == "max" else RED)
    return p


def g_batch_norm(rng):
    p = Program()
    C = 3
    x = p.input("x", nonzero(rng, (4, C, 3, 2)))
    g = p.input("g", nonzero(rng, (C,)))
    b = p.input("b", nonzero(rng, (C,)))
    rm = p.input("rm", nonzero(rng, (C,)))
    rv = p.input("rv", positive(rng, (C,)))
    X, G, B, RM, RV = (f64(p.inputs[k]) for k in ("x", "g", "b", "rm", "rv"))
    ch = lambda v: v[None, :, None, None]  # noqa: E731
    tx, tc = p.t(x), p.t(g)
    for training in (True, False):
        eps, mom = (1e-5, 0.1) if training else (1e-3, 0.3)
        if training:
            mean = X.mean(axis=(0, 2, 3))
            var = X.var(axis=(0, 2, 3))
            n = X.size // C
            y = (X - ch(mean)) / np.sqrt(ch(var) + eps) * ch(G) + ch(B)
            nm = (1 - mom) * RM + mom * mean
            nv = (1 - mom) * RV + mom * var * n / (n - 1)
        else:
            y = (X - ch(RM)) / np.sqrt(ch(RV) + eps) * ch(G) + ch(B)
            nm, nv = RM, RV
        s = "train" if training else "eval"
        p.op(f"%y_{s}, %m_{s}, %v_{s} = of.batch_norm {x}, {g}, {b}, {rm}, {rv} "
             f"{{training = {str(training).lower()}, epsilon = {eps:e} : f64, momentum = {mom:e} : f64}} "
             f": ({tx}, {tc}, {tc}, {tc}, {tc}) -> ({tx}, {tc}, {tc})")
        p.output(f"batch_norm_{s}_y", f"%y_{s}", tx, y, RED)
        p.output(f"batch_norm_{s}_mean", f"%m_{s}", tc, nm, RED)
        p.output(f"batch_norm_{s}_var", f"%v_{s}", tc, nv, RED)
    # The training gradient (of.batch_norm_grad, which --of-autodiff builds;
    # a cuDNN step on a GPU): with xhat the normalised x over m elements per
    # channel, db = sum(dy), dg = sum(dy * xhat), dx = g * rstd * (dy - (db +
    # xhat * dg) / m).
    dy = p.input("dy", nonzero(rng, (4, C, 3, 2)))
    DY = f64(p.inputs["dy"])
    eps, m = 1e-3, X.size // C
    mean, var = X.mean(axis=(0, 2, 3)), X.var(axis=(0, 2, 3))
    rstd = 1 / np.sqrt(var + eps)
    xhat = (X - ch(mean)) * ch(rstd)
    db, dg = DY.sum(axis=(0, 2, 3)), (DY * xhat).sum(axis=(0, 2, 3))
    dx = ch(G * rstd) * (DY - (ch(db) + xhat * ch(dg)) / m)
    p.op(f"%dx, %dg, %db = of.batch_norm_grad {x}, {dy}, {g} {{epsilon = {eps:e} : f64}} "
         f": ({tx}, {tx}, {tc}) -> ({tx}, {tc}, {tc})")
    p.output("batch_norm_grad_x", "%dx", tx, dx, RED)
    p.output("batch_norm_grad_weight", "%dg", tc, dg, RED)
    p.output("batch_norm_grad_bias", "%db", tc, db, RED)
    return p


def g_dropout(rng):
    p = Program()
    x = p.input("x", nonzero(rng, (4, 5, 6)))
    seed = p.input("seed", np.array(rng.integers(0, 2 ** 62), dtype=np.int64))
    xv = f64(p.inputs["x"])
    sv = int(p.inputs["seed"])
    for prob, name in ((0.1, "p01"), (0.5, "p05"), (0.0, "p0")):
        keep = splitmix_keep(sv, xv.size, prob).reshape(xv.shape)
        ref = np.where(keep, xv / (1 - prob), 0.0)
        p.op(f"%{name} = of.dropout {x}, {seed} {{p = {prob:e} : f64}} : ({p.t(x)}, {p.t(seed)}) -> {p.t(x)}")
        p.output(f"dropout_{name}", f"%{name}", p.t(x), ref, EW)
    return p


def g_boxing_constant(rng):
    # A real two-rank program: x arrives split, is gathered, and the
    # constants are broadcast.
    p = Program(header='of.placement @mesh {device = "cpu", shape = [2]}', nproc=2)
    sp = "#of.sbp<@mesh, [S(0)]>"
    bc = "#of.sbp<@mesh, [B]>"
    xv = nonzero(rng, (4, 3))
    x = p.input("x", xv, type=f"tensor<4x3xf32, {sp}>")
    p.op(f"%bx = of.boxing {x} : tensor<4x3xf32, {sp}> -> tensor<4x3xf32, {bc}>")
    p.output("boxing", "%bx", f"tensor<4x3xf32, {bc}>", xv, EXACT)
    cv = nonzero(rng, (4, 3))
    lit = "[" + ", ".join("[" + ", ".join(f"{v:.9e}" for v in row) + "]" for row in cv) + "]"
    p.op(f"%c = of.constant dense<{lit}> : tensor<4x3xf32>")
    p.output("constant", "%c", "tensor<4x3xf32>", cv, EXACT)
    p.op("%cs = of.constant dense<2.5> : tensor<4x3xf32> -> tensor<4x3xf32, #of.sbp<@mesh, [B]>>")
    p.op(f"%sum = of.add %bx, %cs : (tensor<4x3xf32, {bc}>, tensor<4x3xf32, {bc}>) -> tensor<4x3xf32, {bc}>")
    p.output("boxing_plus_splat", "%sum", f"tensor<4x3xf32, {bc}>", f64(xv) + 2.5, EW)
    ci = p.input("ci", rng.integers(-5, 5, size=(3,), dtype=np.int32))
    p.op("%k = of.constant dense<[7, -3, 11]> : tensor<3xi32>")
    p.op(f"%ksum = of.add {ci}, %k : ({p.t(ci)}, tensor<3xi32>) -> tensor<3xi32>")
    p.output("constant_i32_add", "%ksum", "tensor<3xi32>",
             p.inputs["ci"] + np.array([7, -3, 11], dtype=np.int32), EXACT)
    return p


def g_aliasing(rng):
    """Outputs that alias inputs, each other or views, and elementwise chains
    where writing in place (or fusing) would clobber a value still needed."""
    p = Program()
    x = p.input("x", nonzero(rng, (4, 4)))
    p.input("unused", nonzero(rng, (3,)))
    xv = f64(p.inputs["x"])
    tx = p.t(x)
    p.output("identity", x, tx, p.inputs["x"], EXACT)
    p.op(f"%a = of.exp {x} : ({tx}) -> {tx}")
    p.op(f"%b = of.neg %a : ({tx}) -> {tx}")
    p.op(f"%c = of.add %a, %a : ({tx}, {tx}) -> {tx}")
    p.op(f"%at = of.transpose %a, [1, 0] : ({tx}) -> {tx}")
    p.op(f"%d = of.sub %a, %at : ({tx}, {tx}) -> {tx}")
    p.op(f"%e = of.mul %d, %b : ({tx}, {tx}) -> {tx}")
    p.op(f"%s = of.slice %e {{starts = array<i64: 1, 0>, limits = array<i64: 4, 4>, strides = array<i64: 2, 3>}} : ({tx}) -> {t((2, 2))}")
    p.op(f"%r = of.reshape %c : ({tx}) -> {t((2, 8))}")
    a = np.exp(xv)
    d = a - a.T
    e = d * -a
    p.output("exp", "%a", tx, a, EW)
    p.output("neg", "%b", tx, -a, EW)
    p.output("neg_again", "%b", tx, -a, EW)
    p.output("double", "%c", tx, 2 * a, EW)
    p.output("antisym", "%d", tx, d, EW)
    p.output("chain", "%e", tx, e, EW)
    p.output("strided_view", "%s", t((2, 2)), e[1:4:2, 0:4:3], EW)
    p.output("reshaped", "%r", t((2, 8)), (2 * a).reshape(2, 8), EW)
    return p


F16 = 5e-3    # f16: 11-bit significand, 2^-11 ~ 5e-4 per element
F64 = 1e-12   # f64 (libm and exact arithmetic, no f32 approximations)


def round_bf16(a):
    """float32 -> bf16 (round to nearest even, as arith.truncf) -> float32."""
    bits = np.asarray(a, dtype=F32).view(np.uint32)
    bits = (bits + (((bits >> 16) & 1) + 0x7FFF)) & 0xFFFF0000
    return bits.astype(np.uint32).view(F32)


def g_lowp(rng):
    """bf16 and f16 kernels (computed in f32, rounded per op) and f64 ones."""
    p = Program()
    x = p.input("x", nonzero(rng, (4, 8)))
    w = p.input("w", nonzero(rng, (8, 3)))
    # References from the inputs rounded to each type, so that the
    # tolerance measures the kernels and not the (cancellation-amplified)
    # rounding of the inputs.
    refs_of = {}
    for et, rounded in (("bf16", round_bf16), ("f16", lambda a: a.astype(np.float16))):
        X, W = f64(rounded(p.inputs["x"])), f64(rounded(p.inputs["w"]))
        refs_of[et] = {
            "exp": np.exp(X), "add": X + X[0], "relu": np.maximum(X, 0),
            "matmul": X @ W, "reduce_sum": X.sum(1), "softmax": softmax_ref(X, -1),
            "layer_norm": layer_norm_ref(X, -1)}
    for et, tol in (("bf16", BF16), ("f16", F16)):
        xt, wt = t((4, 8), et), t((8, 3), et)
        refs = refs_of[et]
        p.op(f"%x_{et} = of.cast {x} : {p.t(x)} to {xt}")
        p.op(f"%w_{et} = of.cast {w} : {p.t(w)} to {wt}")
        p.op(f"%row_{et} = of.slice %x_{et} {{starts = array<i64: 0, 0>, limits = array<i64: 1, 8>}} : ({xt}) -> {t((1, 8), et)}")
        lines = {
            "exp": (f"of.exp %x_{et} : ({xt})", xt),
            "add": (f"of.add %x_{et}, %row_{et} : ({xt}, {t((1, 8), et)})", xt),
            "relu": (f"of.relu %x_{et} : ({xt})", xt),
            "matmul": (f"of.matmul %x_{et}, %w_{et} : ({xt}, {wt})", t((4, 3), et)),
            "reduce_sum": (f"of.reduce_sum %x_{et} {{axes = array<i64: 1>}} : ({xt})", t((4,), et)),
            "softmax": (f"of.softmax %x_{et} : ({xt})", xt),
            "layer_norm": (f"of.layer_norm %x_{et} : ({xt})", xt),
        }
        for name, (line, rty) in lines.items():
            r = f"%{name}_{et}"
            f32ty = rty.replace(et, "f32")
            p.op(f"{r} = {line} -> {rty}")
            p.op(f"{r}_f32 = of.cast {r} : {rty} to {f32ty}")
            p.output(f"{name}_{et}", f"{r}_f32", f32ty, refs[name], tol)
    # A long bf16 row: a bf16 accumulator would stall near 2^9.
    lg = p.input("long", positive(rng, (2, 2048)))
    p.op(f"%long_bf16 = of.cast {lg} : {p.t(lg)} to {t((2, 2048), 'bf16')}")
    p.op(f"%lsum = of.reduce_mean %long_bf16 {{axes = array<i64: 1>}} : ({t((2, 2048), 'bf16')}) -> {t((2,), 'bf16')}")
    p.op(f"%lsum_f32 = of.cast %lsum : {t((2,), 'bf16')} to {t((2,))}")
    p.output("reduce_mean_long_bf16", "%lsum_f32", t((2,)),
             f64(round_bf16(p.inputs["long"])).mean(1), BF16)
    # A bf16 program input and output (raw bits in .npy).
    bits = (p.inputs["x"].view(np.uint32) >> 16).astype(np.uint16)
    xb = p.input("xb", bits, type=t((4, 8), "bf16"))
    p.op(f"%nb = of.neg {xb} : ({t((4, 8), 'bf16')}) -> {t((4, 8), 'bf16')}")
    p.output("neg_bf16_io", "%nb", t((4, 8), "bf16"), -f64(bf16_bits_to_f32(bits)), EXACT)
    # f64.
    xd = p.input("xd", nonzero(rng, (4, 8), dtype=np.float64))
    wd = p.input("wd", nonzero(rng, (8, 3), dtype=np.float64))
    XD, WD = p.inputs["xd"], p.inputs["wd"]
    erf = np.vectorize(math.erf)
    td = p.t(xd)
    f64_lines = {
        "exp": (f"of.exp {xd} : ({td})", td, np.exp(XD)),
        "tanh": (f"of.tanh {xd} : ({td})", td, np.tanh(XD)),
        "gelu": (f"of.gelu {xd} : ({td})", td, XD * 0.5 * (1 + erf(XD / math.sqrt(2)))),
        "matmul": (f"of.matmul {xd}, {wd} : ({td}, {p.t(wd)})", t((4, 3), "f64"), XD @ WD),
        "log_softmax": (f"of.log_softmax {xd} : ({td})", td, np.log(softmax_ref(XD, -1))),
        "layer_norm": (f"of.layer_norm {xd} : ({td})", td, layer_norm_ref(XD, -1)),
        "reduce_mean": (f"of.reduce_mean {xd} {{axes = array<i64: 0>}} : ({td})", t((8,), "f64"), XD.mean(0)),
    }
    for name, (line, rty, ref) in f64_lines.items():
        p.op(f"%{name}_f64 = {line} -> {rty}")
        p.output(f"{name}_f64", f"%{name}_f64", rty, ref, F64)
    return p


GROUPS = {
    "unary": g_unary, "binary": g_binary, "compare_select": g_compare,
    "cast": g_cast, "shape": g_shape, "reduce": g_reduce, "matmul": g_matmul,
    "softmax": g_softmax, "norm": g_norm, "gather": g_gather, "conv": g_conv,
    "pool": g_pool, "batch_norm": g_batch_norm, "dropout": g_dropout,
    "boxing_constant": g_boxing_constant, "aliasing": g_aliasing,
    "lowp": g_lowp, "long_reduce": g_long_reduce, "threads": g_threads,
}

# Each group also runs with the pipeline's optimisations off one at a time,
# so that a wrong fusion, BLAS call or in-place reuse shows as a difference.
# "cuda" runs where a CUDA device is (else each case is skipped).
PIPELINES = {"default": "cpu", "nofuse": "cpu,fuse=false",
             "nolib": "cpu,use-blas=false,use-dnn=false", "noinplace": "cpu,in-place=false",
             "cuda": "cuda"}


def _build(name):
    rng = np.random.default_rng([SEED] + list(name.encode()))
    return GROUPS[name](rng)


PROGRAMS = {name: _build(name) for name in GROUPS}
CASES = [(pl, g, out) for pl in PIPELINES for g, prog in PROGRAMS.items()
         for out in prog.refs]


@pytest.fixture(scope="session")
def group_outputs(tmp_path_factory):
    """Compiles and runs each (pipeline, group) once; returns the outputs or
    the error. Where a pipeline's plans cannot run (cuda without a device),
    only compiles, to PTX (no CUDA toolkit needed; test/Pipeline compiles
    cubins where ptxas is): the outputs are then None."""
    cache = {}

    def get(pipeline, name):
        key = (pipeline, name)
        if key not in cache:
            tmp = tmp_path_factory.mktemp(f"{pipeline}-{name}")
            try:
                if PIPELINES[pipeline].startswith("cuda") and not CUDA_DEVICES:
                    compile_program(PROGRAMS[name].text(), tmp,
                                    PIPELINES[pipeline] + ",format=isa")
                    cache[key] = None
                else:
                    cache[key] = PROGRAMS[name].run(tmp, PIPELINES[pipeline])
            except Exception as e:  # reported by every test of the group
                cache[key] = e
        return cache[key]
    return get


@pytest.mark.parametrize("pipeline,group,output", CASES,
                         ids=[f"{pl}-{g}-{o}" for pl, g, o in CASES])
def test_op(pipeline, group, output, group_outputs):
    print(f"OF_TEST_SEED={SEED}")
    if PIPELINES[pipeline].startswith("cuda") and PROGRAMS[group].nproc > 1:
        pytest.skip("a GPU program of several ranks needs NCCL, which the "
                    "runtime does not have yet")
    outs = group_outputs(pipeline, group)
    if isinstance(outs, Exception):
        raise outs
    if outs is None:
        skip_without_cuda()
    prog = PROGRAMS[group]
    y = outs[output]
    ref = prog.refs[output]
    ty = next(ty for _, ty, n in prog.results if n == output)
    if "xbf16>" in ty or ty == "tensor<bf16>":
        assert y.dtype == np.uint16, y.dtype
        y = bf16_bits_to_f32(y)
    elif np.asarray(ref).dtype.kind in "biu":
        assert y.dtype == np.asarray(ref).dtype, f"dtype {y.dtype} != {np.asarray(ref).dtype}"
    check(y, ref, prog.tols[output], output, prog.scales.get(output))
