#!/usr/bin/env python3
"""Training-step time of an MLP (784-1024-1024-10, batch 128, relu, mean
cross-entropy, SGD with momentum): OF's compiled step (of-run --steps, one
rank) against JAX's jit-compiled step (CPU, float32) in the same run, as a
ratio. PyTorch is the issue's peer; it is used too when `import torch`
works (it is not installed on the development machines).

    python3 bench/train_bench.py [--steps 30] [--tools build/bin]
"""
import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIMS, BATCH = [784, 1024, 1024, 10], 128

PROGRAM = """func.func @mlp(%x: tensor<128x784xf32> {of.name = "x"}, %y: tensor<128xi64> {of.name = "y"},
  %w0: tensor<784x1024xf32> {of.name = "w0", of.param}, %b0: tensor<1024xf32> {of.name = "b0", of.param},
  %w1: tensor<1024x1024xf32> {of.name = "w1", of.param}, %b1: tensor<1024xf32> {of.name = "b1", of.param},
  %w2: tensor<1024x10xf32> {of.name = "w2", of.param}, %b2: tensor<10xf32> {of.name = "b2", of.param})
    -> (tensor<f32> {of.name = "loss"}) {
  %m0 = of.matmul %x, %w0 : (tensor<128x784xf32>, tensor<784x1024xf32>) -> tensor<128x1024xf32>
  %a0 = of.add %m0, %b0 : (tensor<128x1024xf32>, tensor<1024xf32>) -> tensor<128x1024xf32>
  %r0 = of.relu %a0 : (tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %m1 = of.matmul %r0, %w1 : (tensor<128x1024xf32>, tensor<1024x1024xf32>) -> tensor<128x1024xf32>
  %a1 = of.add %m1, %b1 : (tensor<128x1024xf32>, tensor<1024xf32>) -> tensor<128x1024xf32>
  %r1 = of.relu %a1 : (tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %m2 = of.matmul %r1, %w2 : (tensor<128x1024xf32>, tensor<1024x10xf32>) -> tensor<128x10xf32>
  %a2 = of.add %m2, %b2 : (tensor<128x10xf32>, tensor<10xf32>) -> tensor<128x10xf32>
  %ce = of.cross_entropy %a2, %y : (tensor<128x10xf32>, tensor<128xi64>) -> tensor<128xf32>
  %l = of.reduce_mean %ce {axes = array<i64: 0>} : (tensor<128xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, **kw)
    if r.returncode:
        sys.exit(f"{cmd[0]} failed:\n{r.stderr.decode()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--tools", default=str(ROOT / "build" / "bin"))
    args = ap.parse_args()
    tools = pathlib.Path(args.tools)
    rng = np.random.default_rng(0)
    params = {}
    for i in range(3):
        params[f"w{i}"] = (rng.standard_normal((DIMS[i], DIMS[i + 1])) /
                           np.sqrt(DIMS[i])).astype(np.float32)
        params[f"b{i}"] = np.zeros(DIMS[i + 1], np.float32)
    x = rng.standard_normal((BATCH, DIMS[0])).astype(np.float32)
    y = rng.integers(0, 10, size=BATCH).astype(np.int64)

    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        (work / "mlp.mlir").write_text(PROGRAM)
        t0 = time.perf_counter()
        lowered = run([tools / "of-opt", "--of-pipeline=cpu,train=sgd,momentum=0.9",
                       work / "mlp.mlir"])
        run([tools / "of-translate", "--of-plan-to-binary", "-o", work / "mlp.ofp"],
            input=lowered)
        compile_s = time.perf_counter() - t0
        cmd = [tools / "of-run", work / "mlp.ofp", "--entry", "mlp_train_step",
               "--set", "lr=0.01", "--steps", str(args.steps), "--output-dir", work / "out"]
        for k, v in {**params, "x": x, "y": y}.items():
            np.save(work / f"{k}.npy", v)
            cmd += ["--input", f"{k}={work / (k + '.npy')}"]
        out = run(cmd).decode()
        ms = [float(m) for m in re.findall(r"  ([\d.]+) ms$", out, re.M)][1:]
        of_ms = float(np.median(ms))

    print(f"OF   compile {compile_s:.2f} s; step median {of_ms:.2f} ms "
          f"(of-run --steps {args.steps}, first step excluded)")
    peers = {}
    try:
        import jax
        import jax.numpy as jnp

        def loss(p, x, y):
            h = x
            for i in range(3):
                h = h @ p[f"w{i}"] + p[f"b{i}"]
                if i < 2:
                    h = jax.nn.relu(h)
            return jnp.mean(jax.nn.logsumexp(h, -1) - jnp.take_along_axis(h, y[:, None], -1)[:, 0])

        @jax.jit
        def step(p, m, x, y):
            l, g = jax.value_and_grad(loss)(p, x, y)
            m = {k: 0.9 * m[k] + g[k] for k in p}
            return l, {k: p[k] - 0.01 * m[k] for k in p}, m

        p = {k: jnp.asarray(v) for k, v in params.items()}
        m = {k: jnp.zeros_like(v) for k, v in p.items()}
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        l, p, m = step(p, m, xj, yj)
        l.block_until_ready()
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            l, p, m = step(p, m, xj, yj)
            l.block_until_ready()
            times.append((time.perf_counter() - t) * 1e3)
        peers["JAX jit (CPU)"] = float(np.median(times))
    except ImportError:
        print("JAX not installed: no JAX comparison")
    try:
        import torch
        net = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                  torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                  torch.nn.Linear(1024, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        times = []
        for i in range(args.steps + 1):
            t = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xt), yt).backward()
            opt.step()
            if i:
                times.append((time.perf_counter() - t) * 1e3)
        peers["PyTorch eager"] = float(np.median(times))
    except ImportError:
        print("PyTorch not installed: no PyTorch comparison")
    for name, peer_ms in peers.items():
        print(f"{name:14s} step median {peer_ms:.2f} ms; OF/peer time ratio "
              f"{of_ms / peer_ms:.2f} (below 1: OF faster)")


if __name__ == "__main__":
    main()
