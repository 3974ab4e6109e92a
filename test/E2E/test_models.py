"""Whole models end to end against NumPy in float64.

Tolerance 1e-4 relative: each model chains 10-30 float32 ops (matmuls with
up to 512-term dot products, layer/batch norms, softmax, polynomial
exp/tanh/erf approximations), and the float32 rounding errors of the stages
compound; 1e-4 is ~10x what these models show in practice and still far
below any real bug (a wrong index or mask gives errors of order 1).
"""

import math
from pathlib import Path

import numpy as np

from ofrun import Program, check, run_mlir
from test_ops import conv2d_ref, layer_norm_ref, nonzero, pool_ref, softmax_ref

TOL = 1e-4
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
F32 = np.float32


def f64(a):
    return np.asarray(a, dtype=np.float64)


def test_mlp_3_layers(rng, tmp_path):
    dims = [32, 64, 48, 10]
    p = Program()
    x = p.input("x", nonzero(rng, (8, dims[0])))
    h = x
    ref = f64(p.inputs["x"])
    for i in range(3):
        # Scaled like a real init, so activations stay O(1).
        w = p.input(f"w{i}", (nonzero(rng, (dims[i], dims[i + 1])) / math.sqrt(dims[i])).astype(F32))
        b = p.input(f"b{i}", nonzero(rng, (dims[i + 1],)))
        ty = f"tensor<8x{dims[i + 1]}xf32>"
        p.op(f"%mm{i} = of.matmul {h}, {w} : ({p.t(h)}, {p.t(w)}) -> {ty}")
        p.op(f"%z{i} = of.add %mm{i}, {b} : ({ty}, {p.t(b)}) -> {ty}", {f"%z{i}": ty})
        ref = ref @ f64(p.inputs[f"w{i}"]) + f64(p.inputs[f"b{i}"])
        h = f"%z{i}"
        if i < 2:
            p.op(f"%h{i} = of.relu %z{i} : ({ty}) -> {ty}", {f"%h{i}": ty})
            h = f"%h{i}"
            ref = np.maximum(ref, 0)
    p.output("y", h, "tensor<8x10xf32>", ref, TOL)
    out = p.run(tmp_path)
    check(out["y"], ref, TOL, "y")


def test_example_mlp(rng, tmp_path):
    x = nonzero(rng, (64, 128))
    w = (nonzero(rng, (128, 256)) / math.sqrt(128)).astype(F32)
    # The example's placement is a [2, 2] mesh: four ranks.
    out = run_mlir((EXAMPLES / "mlp.mlir").read_text(), {"x": x, "w": w}, tmp_path, nproc=4)
    (name,) = out
    check(out[name], np.maximum(f64(x) @ f64(w), 0), TOL, name)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def test_example_gpt_block(rng, tmp_path):
    B, T, D, H = 2, 16, 64, 4
    hd = D // H
    inp = {
        "x": nonzero(rng, (B, T, D)),
        "causal_mask": np.tril(np.ones((T, T), dtype=np.bool_)),
        "ln1.weight": nonzero(rng, (D,)),
        "ln1.bias": nonzero(rng, (D,)),
        "attn.qkv.weight": (nonzero(rng, (D, 3 * D)) / math.sqrt(D)).astype(F32),
        "attn.proj.weight": (nonzero(rng, (D, D)) / math.sqrt(D)).astype(F32),
        "ln2.weight": nonzero(rng, (D,)),
        "ln2.bias": nonzero(rng, (D,)),
        "mlp.fc.weight": (nonzero(rng, (D, 4 * D)) / math.sqrt(D)).astype(F32),
        "mlp.proj.weight": (nonzero(rng, (4 * D, D)) / math.sqrt(4 * D)).astype(F32),
    }
    g = {k: f64(v) for k, v in inp.items()}
    x = g["x"]
    h = layer_norm_ref(x, -1, g["ln1.weight"], g["ln1.bias"])
    qkv = h @ g["attn.qkv.weight"]
    q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, H, hd).transpose(0, 2, 1, 3)
               for i in range(3))
    scores = (q @ k.transpose(0, 1, 3, 2)) * 0.25
    scores = np.where(inp["causal_mask"], scores, -1e9)
    ctx = softmax_ref(scores, -1) @ v
    attn = ctx.transpose(0, 2, 1, 3).reshape(B, T, D) @ g["attn.proj.weight"]
    r1 = x + attn
    h2 = layer_norm_ref(r1, -1, g["ln2.weight"], g["ln2.bias"])
    y = r1 + gelu_tanh(h2 @ g["mlp.fc.weight"]) @ g["mlp.proj.weight"]

    out = run_mlir((EXAMPLES / "gpt_block.mlir").read_text(), inp, tmp_path, nproc=2)
    check(out["y"], y, TOL, "y")


def test_example_convnet(rng, tmp_path):
    inp = {
        "images": nonzero(rng, (8, 3, 16, 16)),
        "labels": rng.integers(0, 10, size=(8,), dtype=np.int64),
        "conv.weight": (nonzero(rng, (8, 3, 3, 3)) / math.sqrt(27)).astype(F32),
        "conv.bias": nonzero(rng, (8,)),
        "bn.weight": nonzero(rng, (8,)),
        "bn.bias": nonzero(rng, (8,)),
        "bn.running_mean": nonzero(rng, (8,)),
        "bn.running_var": rng.uniform(0.5, 2, size=(8,)).astype(F32),
        "fc.weight": (nonzero(rng, (512, 10)) / math.sqrt(512)).astype(F32),
    }
    g = {k: f64(v) for k, v in inp.items()}
    c = conv2d_ref(g["images"], g["conv.weight"], g["conv.bias"], padding=(1, 1, 1, 1))
    mean = c.mean(axis=(0, 2, 3))
    var = c.var(axis=(0, 2, 3))
    ch = lambda t: t[None, :, None, None]  # noqa: E731
    n = ch(g["bn.weight"]) * (c - ch(mean)) / np.sqrt(ch(var) + 1e-5) + ch(g["bn.bias"])
    pooled = pool_ref(np.maximum(n, 0), (2, 2), mode="max")
    logits = pooled.reshape(8, 512) @ g["fc.weight"]
    m = logits.max(-1)
    lse = np.log(np.exp(logits - m[:, None]).sum(-1)) + m
    loss = (lse - logits[np.arange(8), inp["labels"]]).mean()
    count = c.size // 8
    new_mean = 0.9 * g["bn.running_mean"] + 0.1 * mean
    new_var = 0.9 * g["bn.running_var"] + 0.1 * var * count / (count - 1)

    out = run_mlir((EXAMPLES / "convnet.mlir").read_text(), inp, tmp_path, nproc=2)
    check(out["loss"], loss, TOL, "loss")
    check(out["bn.running_mean"], new_mean, TOL, "bn.running_mean")
    check(out["bn.running_var"], new_var, TOL, "bn.running_var")
