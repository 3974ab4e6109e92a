"""Gradients of whole models through --of-autodiff and SBP: the MLP and the
transformer block of test_sbp_models.py, made into a loss
sum(model(x) * r), differentiated with respect to every weight and bias,
compiled and run on 1 rank and on 2 and 4 ranks under data parallel,
Megatron tensor parallel and a 2-D hierarchy (batches of 6 rows are uneven
on 4 ranks), against JAX's autograd in float64.

The backward program is a global program like the forward one: SBP
propagation distributes it, so data-parallel weight gradients come out as
partial sums and their boxing to the parameters' B is an all-reduce (the
lit test Pipeline/autodiff-sbp.mlir shows the collectives). Tolerance:
relative error 1e-5 (f32 programs against a float64 reference); for the
loss, a sum whose terms may cancel, 1e-5 of the sum of the terms' sizes.
"""

import math
import shutil

import numpy as np
import pytest

from ofrun import check, compile_program
from test_sbp import run_ranks
from test_sbp_models import BLOCK_LAYOUTS, MLP_LAYOUTS, block, mlp, nproc_of, ttype

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="mpirun (Open MPI) is not installed")
TOL = 1e-5


def as_loss(m, out, out_shape, rng):
    """Turns a built model into @main returning loss = sum(out * r), with
    every argument but x a parameter."""
    r = rng.uniform(-1, 1, size=out_shape).astype(np.float32)
    m.inputs["r"] = r
    m.args = [a.replace('{of.name = "', '{of.param, of.name = "') if not a.startswith("%x:")
              else a for a in m.args]
    rt = ttype(out_shape)
    m.args.append(f'%r: {rt} {{of.name = "r"}}')
    m.types["%r"] = rt
    axes = ", ".join(map(str, range(len(out_shape))))
    m.op("%wl", f"of.mul {out}, %r : ({m.t(out)}, {rt}) -> $R", out_shape)
    m.op("%ls", f"of.reduce_sum %wl {{axes = array<i64: {axes}>}} : ({rt}) -> $R", ())
    return m.text("%ls", (), ["B"] * len(m.grid) if m.grid else None, name="loss")


def mlp_jax(p):
    h = p["x"]
    for i in range(3):
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        if i < 2:
            h = jax.nn.relu(h)
    return h


def layer_norm(x, w, b, eps=1e-5):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * w + b


def block_jax(p):
    d = p["wq"].shape[-1]
    n1 = layer_norm(p["x"], p["g1"], p["be1"])
    q, k, v = (jnp.einsum("tc,hcd->htd", n1, p[w]) for w in ("wq", "wk", "wv"))
    a = jax.nn.softmax(jnp.einsum("htd,hsd->hts", q, k) / math.sqrt(d), axis=-1)
    r1 = p["x"] + jnp.einsum("hts,hsd,hdc->tc", a, v, p["wo"])
    z = layer_norm(r1, p["g2"], p["be2"]) @ p["w1"] + p["b1"]
    return r1 + jax.nn.gelu(z, approximate=False) @ p["w2"] + p["b2"]


def run_grads(build, ref_fn, layouts, layout, rng, tmp_path):
    grid, args, _ = layouts[layout]
    seed = rng.integers(1 << 62)
    m, out, out_shape, _ = build(np.random.default_rng(seed), grid, args)
    text = as_loss(m, out, out_shape, rng)
    plan = compile_program(text, tmp_path, pipeline="cpu,autodiff=true")
    nproc = nproc_of(grid)
    got = run_ranks(plan, m.inputs, tmp_path, nproc, entry="main_grad")

    params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in m.inputs.items()
              if k not in ("x", "r")}
    x = jnp.asarray(m.inputs["x"], dtype=jnp.float64)
    r = jnp.asarray(m.inputs["r"], dtype=jnp.float64)
    loss, grads = jax.value_and_grad(
        lambda p: jnp.sum(ref_fn({**p, "x": x}) * r))(params)
    # The loss sums terms of both signs, which may cancel: float32 rounding
    # is relative to the size of the terms, not of their sum.
    terms = float(jnp.sum(jnp.abs(ref_fn({**params, "x": x}) * r)))
    err = abs(float(got["loss"]) - float(loss)) / terms
    assert err <= TOL, f"loss, {layout} on {nproc} ranks: error {err:.3e} of the terms' size"
    for k in params:
        check(got[f"grad_{k}"], np.asarray(grads[k]), TOL,
              f"grad_{k}, {layout} on {nproc} ranks")


ONE_RANK = {"1-rank": ([], {}, None)}


@pytest.mark.parametrize("layout", list(ONE_RANK) + list(MLP_LAYOUTS))
def test_mlp_gradients(layout, rng, tmp_path):
    run_grads(mlp, mlp_jax, {**ONE_RANK, **MLP_LAYOUTS}, layout, rng, tmp_path)


@pytest.mark.parametrize("layout", list(ONE_RANK) + list(BLOCK_LAYOUTS))
def test_transformer_block_gradients(layout, rng, tmp_path):
    run_grads(block, block_jax, {**ONE_RANK, **BLOCK_LAYOUTS}, layout, rng, tmp_path)
