#!/usr/bin/env python3
"""Training-step time and peak memory of OF's compiled training step against
peers in the same run, as ratios:

- mlp: 784-1024-1024-10, batch 128, relu, mean cross-entropy, SGD with
  momentum 0.9 (the issue's MLP);
- gpt: the small GPT of examples/gpt.py (2 layers, d_model 64, 4 heads,
  vocabulary 64, 8 sequences of 64 tokens), AdamW;
- convnet: 32 images of 64x32x32, conv 3x3 (64 -> 64, padding 1) -> batch
  norm (training) -> relu -> 2x2 max pool -> linear to 10 classes, mean
  cross-entropy, SGD (no JAX peer).

OF runs one rank: `of-run --steps N` (the first step excluded). Peers:
JAX's jit-compiled step, PyTorch eager and torch.compile (CPU, float32, the
same shapes and optimizer), each where it imports. Every system is
measured in several interleaved rounds (this machine's timings drift by
10-20 % between runs); the figure is the median over rounds of each round's
median step time.

Peak memory: the peak resident set (ru_maxrss) of a fresh process that
trains N steps: `of-run` for OF, a Python process for PyTorch (it includes
the interpreter and libtorch), and, for scale, the same Python process
after importing torch and before building anything. OF's arena (the
activations) and its state are printed from the plan.

    python3 bench/train_bench.py [--model mlp|gpt|convnet|all] [--steps 30] [--rounds 3]
                                 [--amp bf16]

With --amp bf16, OF compiles with amp=bf16 and PyTorch runs under
torch.autocast("cpu", torch.bfloat16); JAX is left out.
"""
import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import gpt  # noqa: E402

DIMS, BATCH = [784, 1024, 1024, 10], 128
GPT = gpt.Config(vocab=64, block=64, d_model=64, heads=4, layers=2, batch=8)

MLP_PROGRAM = """func.func @mlp(%x: tensor<128x784xf32> {of.name = "x"}, %y: tensor<128xi64> {of.name = "y"},
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

CONVNET_PROGRAM = """func.func @convnet(%x: tensor<32x64x32x32xf32> {of.name = "x"},
  %y: tensor<32xi64> {of.name = "y"},
  %w: tensor<64x64x3x3xf32> {of.name = "conv_w", of.param},
  %g: tensor<64xf32> {of.name = "bn_g", of.param}, %b: tensor<64xf32> {of.name = "bn_b", of.param},
  %mean: tensor<64xf32> {of.name = "bn_mean"}, %var: tensor<64xf32> {of.name = "bn_var"},
  %fc: tensor<16384x10xf32> {of.name = "fc_w", of.param})
    -> (tensor<f32> {of.name = "loss"}, tensor<64xf32> {of.name = "bn_mean"},
        tensor<64xf32> {of.name = "bn_var"}) {
  %c = of.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>}
      : (tensor<32x64x32x32xf32>, tensor<64x64x3x3xf32>) -> tensor<32x64x32x32xf32>
  %n:3 = of.batch_norm %c, %g, %b, %mean, %var {training = true}
      : (tensor<32x64x32x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<32x64x32x32xf32>, tensor<64xf32>, tensor<64xf32>)
  %r = of.relu %n#0 : (tensor<32x64x32x32xf32>) -> tensor<32x64x32x32xf32>
  %p = of.max_pool2d %r {kernel_size = array<i64: 2, 2>} : (tensor<32x64x32x32xf32>) -> tensor<32x64x16x16xf32>
  %f = of.reshape %p : (tensor<32x64x16x16xf32>) -> tensor<32x16384xf32>
  %z = of.matmul %f, %fc : (tensor<32x16384xf32>, tensor<16384x10xf32>) -> tensor<32x10xf32>
  %ce = of.cross_entropy %z, %y : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<32xf32>
  %l = of.reduce_mean %ce {axes = array<i64: 0>} : (tensor<32xf32>) -> tensor<f32>
  return %l, %n#1, %n#2 : tensor<f32>, tensor<64xf32>, tensor<64xf32>
}
"""

# The peer scripts run in fresh processes (for their own peak memory); they
# read the data from the work directory and print one JSON line.
TORCH_SCRIPT = r"""
import json, resource, sys, time
import numpy as np
import torch
torch.manual_seed(0)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model, steps, mode, work, amp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
data = np.load(f"{work}/data.npz")
params = {k[2:]: torch.tensor(data[k], requires_grad=True) for k in data.files if k.startswith("p_")}
if model == "mlp":
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    def loss_fn(x, y):
        h = x
        for i in range(3):
            h = h @ params[f"w{i}"] + params[f"b{i}"]
            if i < 2:
                h = torch.relu(h)
        return torch.nn.functional.cross_entropy(h, y)
    opt = torch.optim.SGD(params.values(), lr=0.01, momentum=0.9)
elif model == "convnet":
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    mean, var = torch.from_numpy(data["bn_mean"]), torch.from_numpy(data["bn_var"])
    F = torch.nn.functional
    def loss_fn(x, y):
        p = params
        h = F.conv2d(x, p["conv_w"], padding=1)
        h = F.batch_norm(h, mean, var, p["bn_g"], p["bn_b"], training=True)
        h = F.max_pool2d(torch.relu(h), 2)
        return F.cross_entropy(h.flatten(1) @ p["fc_w"], y)
    opt = torch.optim.SGD(params.values(), lr=0.01)
else:
    x, y = torch.from_numpy(data["idx"][0]), torch.from_numpy(data["targets"][0])
    L, H, T = int(data["layers"]), int(data["heads"]), x.shape[1]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    ln = torch.nn.functional.layer_norm
    def loss_fn(idx, targets):
        p = params
        h = p["wte"][idx] + p["wpe"]
        C = h.shape[-1]
        for l in range(L):
            q_ = lambda n: p[f"h.{l}.{n}"]
            n1 = ln(h, (C,), q_("ln_1.weight"), q_("ln_1.bias"))
            q, k, v = (torch.einsum("btc,hcd->bhtd", n1, q_(f"attn.{w}.weight")) for w in "qkv")
            s = (q @ k.transpose(-1, -2)) / (C // H) ** 0.5
            a = torch.softmax(torch.where(causal, s, torch.tensor(-1.0e9)), -1)
            r1 = h + torch.einsum("bhtd,hdc->btc", a @ v, q_("attn.c_proj.weight")) + q_("attn.c_proj.bias")
            n2 = ln(r1, (C,), q_("ln_2.weight"), q_("ln_2.bias"))
            f = torch.nn.functional.gelu(n2 @ q_("mlp.c_fc.weight") + q_("mlp.c_fc.bias"), approximate="tanh")
            h = r1 + f @ q_("mlp.c_proj.weight") + q_("mlp.c_proj.bias")
        logits = ln(h, (C,), p["ln_f.weight"], p["ln_f.bias"]) @ p["lm_head.weight"]
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    opt = torch.optim.AdamW(params.values(), lr=3e-3, weight_decay=0.01)
def step(x, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp == "bf16"):
        loss = loss_fn(x, y)
    loss.backward()
    opt.step()
    return loss
if mode == "compile":
    step = torch.compile(step)
times = []
for i in range(steps + 1):
    t = time.perf_counter()
    step(x, y)
    if i:
        times.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"ms": float(np.median(times)), "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "base_kb": base}))
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, **kw)
    if r.returncode:
        sys.exit(f"{cmd[0]} failed:\n{r.stderr.decode()[-3000:]}")
    return r.stdout


def child_peak_kb(cmd):
    """Runs cmd in a fresh wrapper process and returns (stdout, its peak RSS
    in KiB): the wrapper has no other children."""
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
               "sys.stdout.write(r.stdout.decode())\n"
               "sys.stderr.write(r.stderr.decode())\n"
               "print('RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(r.returncode)\n")
    out = run([sys.executable, "-c", wrapper, *map(str, cmd)]).decode()
    return out, int(re.search(r"^RSS_KB (\d+)", out, re.M).group(1))


def mlp_setup(rng, work):
    params = {}
    for i in range(3):
        params[f"w{i}"] = (rng.standard_normal((DIMS[i], DIMS[i + 1])) /
                           np.sqrt(DIMS[i])).astype(np.float32)
        params[f"b{i}"] = np.zeros(DIMS[i + 1], np.float32)
    data = {"x": rng.standard_normal((BATCH, DIMS[0])).astype(np.float32),
            "y": rng.integers(0, 10, size=BATCH).astype(np.int64)}
    return (MLP_PROGRAM, "cpu,train=sgd,momentum=0.9", "mlp_train_step", 0.01,
            params, {k: ("input", v) for k, v in data.items()}, data)


def gpt_setup(rng, work):
    params = gpt.init_params(GPT, rng)
    idx = rng.integers(0, GPT.vocab, size=(1, GPT.batch, GPT.block)).astype(np.int64)
    targets = rng.integers(0, GPT.vocab, size=(1, GPT.batch, GPT.block)).astype(np.int64)
    data = {"idx": idx, "targets": targets, "layers": np.array(GPT.layers),
            "heads": np.array(GPT.heads)}
    return (gpt.program(GPT), "cpu,train=adamw,weight-decay=0.01", "gpt_train_step", 3e-3,
            params, {"idx": ("batch", idx), "targets": ("batch", targets)}, data)


def convnet_setup(rng, work):
    params = {"conv_w": (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32),
              "bn_g": np.ones(64, np.float32), "bn_b": np.zeros(64, np.float32),
              "fc_w": (rng.standard_normal((16384, 10)) / 128).astype(np.float32)}
    data = {"x": rng.standard_normal((32, 64, 32, 32)).astype(np.float32),
            "y": rng.integers(0, 10, size=32).astype(np.int64),
            "bn_mean": np.zeros(64, np.float32), "bn_var": np.ones(64, np.float32)}
    return (CONVNET_PROGRAM, "cpu,train=sgd", "convnet_train_step", 0.01,
            params, {k: ("input", v) for k, v in data.items()}, data)


def of_plan(tools, program, pipeline, work):
    (work / "model.mlir").write_text(program)
    t0 = time.perf_counter()
    lowered = run([tools / "of-opt", f"--of-pipeline={pipeline}", work / "model.mlir"])
    run([tools / "of-translate", "--of-plan-to-binary", "-o", work / "model.ofp"], input=lowered)
    elapsed = time.perf_counter() - t0
    arenas = {m[0]: int(m[1]) for m in re.findall(
        rb'ofrt.program "(\w+)" attributes \{arena_size = (\d+)', lowered)}
    return work / "model.ofp", elapsed, arenas


def of_step(tools, plan, entry, lr, params, inputs, steps, work):
    cmd = [tools / "of-run", plan, "--entry", entry, "--set", f"lr={lr}",
           "--steps", str(steps + 1), "--output-dir", work / "out"]
    for k, v in params.items():
        np.save(work / f"{k}.npy", v)
        cmd += ["--input", f"{k}={work / (k + '.npy')}"]
    for k, (how, v) in inputs.items():
        np.save(work / f"{k}.npy", v)
        cmd += [f"--{how}", f"{k}={work / (k + '.npy')}"]
    out, rss = child_peak_kb(cmd)
    ms = [float(m) for m in re.findall(r"  ([\d.]+) ms$", out, re.M)][1:]
    return float(np.median(ms)), rss


def jax_step(model, params, data, steps):
    import jax
    import jax.numpy as jnp
    if model == "mlp":
        def loss(p, x, y):
            h = x
            for i in range(3):
                h = h @ p[f"w{i}"] + p[f"b{i}"]
                if i < 2:
                    h = jax.nn.relu(h)
            return jnp.mean(jax.nn.logsumexp(h, -1) - jnp.take_along_axis(h, y[:, None], -1)[:, 0])
        x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])

        @jax.jit
        def step(p, s, x, y):
            l, g = jax.value_and_grad(loss)(p, x, y)
            m = {k: 0.9 * s[k] + g[k] for k in p}
            return l, {k: p[k] - 0.01 * m[k] for k in p}, m
        state = {k: jnp.zeros_like(v) for k, v in params.items()}
    else:
        sys.path.insert(0, str(ROOT / "test" / "E2E"))
        from test_gpt_training import gpt_loss
        loss = gpt_loss(GPT)
        x, y = jnp.asarray(data["idx"][0]), jnp.asarray(data["targets"][0])

        @jax.jit
        def step(p, s, x, y):
            l, g = jax.value_and_grad(loss)(p, x, y)
            t = s["t"] + 1
            m = {k: 0.9 * s["m"][k] + 0.1 * g[k] for k in p}
            v = {k: 0.999 * s["v"][k] + 0.001 * g[k] * g[k] for k in p}
            new = {k: p[k] * (1 - 3e-3 * 0.01) - 3e-3 * (m[k] / (1 - 0.9 ** t)) /
                   (jnp.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8) for k in p}
            return l, new, {"t": t, "m": m, "v": v}
        zeros = {k: jnp.zeros_like(jnp.asarray(v)) for k, v in params.items()}
        state = {"t": jnp.float32(0), "m": zeros, "v": dict(zeros)}
    p = {k: jnp.asarray(v) for k, v in params.items()}
    l, p, state = step(p, state, x, y)
    l.block_until_ready()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        l, p, state = step(p, state, x, y)
        l.block_until_ready()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def torch_step(model, params, data, steps, mode, work, amp):
    np.savez(work / "data.npz", **{f"p_{k}": v for k, v in params.items()}, **data)
    out = run([sys.executable, "-c", TORCH_SCRIPT, model, str(steps), mode, str(work), amp])
    return json.loads(out.decode().strip().splitlines()[-1])


def bench(model, args, tools):
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        setup = {"mlp": mlp_setup, "gpt": gpt_setup, "convnet": convnet_setup}[model]
        program, pipeline, entry, lr, params, inputs, data = setup(rng, work)
        if args.amp != "none":
            pipeline += f",amp={args.amp}"
        plan, compile_s, arenas = of_plan(tools, program, pipeline, work)
        have = {}
        try:
            import jax  # noqa: F401
            if model == "convnet":
                print("convnet: no JAX comparison")
            elif args.amp == "none":
                have["JAX jit"] = lambda: jax_step(model, params, data, args.steps)
            else:
                print("AMP: no JAX comparison (the JAX step is fp32)")
        except ImportError:
            print("JAX not installed: no JAX comparison")
        try:
            import torch  # noqa: F401
            have["PyTorch eager"] = lambda: torch_step(model, params, data, args.steps, "eager", work, args.amp)
            have["torch.compile"] = lambda: torch_step(model, params, data, args.steps, "compile", work,
                                                       args.amp)
        except ImportError:
            print("PyTorch not installed: no PyTorch comparison")
        rounds = {"OF": [], **{k: [] for k in have}}
        rss = {}
        for _ in range(args.rounds):
            ms, rss["OF"] = of_step(tools, plan, entry, lr, params, inputs, args.steps, work)
            rounds["OF"].append(ms)
            for name, fn in have.items():
                result = fn()
                if isinstance(result, dict):
                    rounds[name].append(result["ms"])
                    rss[name] = result["rss_kb"]
                    rss["Python + torch imported"] = result["base_kb"]
                else:
                    rounds[name].append(result)
    state_bytes = sum(v.nbytes for v in params.values())
    print(f"== {model}{'' if args.amp == 'none' else ' AMP ' + args.amp}: OF compile {compile_s:.2f} s; parameters {state_bytes / 2**20:.1f} MiB; "
          f"OF arena (activations, gradients) {arenas[entry.encode()] / 2**20:.1f} MiB; "
          f"{args.rounds} rounds of {args.steps} steps")
    of_ms = statistics.median(rounds["OF"])
    for name, values in rounds.items():
        ms = statistics.median(values)
        ratio = "" if name == "OF" else f"   OF/peer time {of_ms / ms:.2f} (below 1: OF faster)"
        print(f"  {name:15s} step {ms:8.2f} ms  (rounds: {', '.join(f'{v:.2f}' for v in values)}){ratio}")
    for name, kb in rss.items():
        ratio = "" if name == "OF" or "imported" in name else f"   OF/peer {rss['OF'] / kb:.2f}"
        print(f"  peak RSS {name:24s} {kb / 1024:8.1f} MiB{ratio}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "gpt", "convnet", "all"], default="all")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--amp", choices=["none", "bf16"], default="none",
                    help="bf16: OF with --of-pipeline=...,amp=bf16, PyTorch under "
                         "torch.autocast(cpu, bfloat16)")
    ap.add_argument("--tools", default=str(ROOT / "build" / "bin"))
    args = ap.parse_args()
    tools = pathlib.Path(args.tools)
    for model in (["mlp", "gpt", "convnet"] if args.model == "all" else [args.model]):
        bench(model, args, tools)


if __name__ == "__main__":
    main()
