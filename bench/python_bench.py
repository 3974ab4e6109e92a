#!/usr/bin/env python3
"""The Python frontend against PyTorch in the same run, as ratios:

- gpt: steps per second of the nanoGPT-style training loop of
  examples/python/nanogpt.py (ported to of by its imports; 2 layers, d_model
  64, 4 heads, vocabulary 64, batch 8 x 16 tokens, AdamW), driven from
  Python, three ways in of: `of.compile(model, optimizer=...)` (one plan per
  step: "of fused"), the standard loop `loss = model(x, y);
  opt.zero_grad(); loss.backward(); opt.step()` under `model =
  of.compile(model)` ("of compile loop") and without it ("of eager loop"),
  against PyTorch eager (and torch.compile where it works). Interleaved
  rounds; the figure is the median over rounds of each round's median step
  time.
- compile: seconds of the first call of of.compile (trace + compile, an
  empty plan cache) against torch.compile's first call.
- eager: latency of one small eager op (add of two 64x64 float32 tensors,
  and a 64x64 matmul) in of (a cached single-op plan) and PyTorch.

    PYTHONPATH=build/python python3 bench/python_bench.py [--steps 30] [--rounds 3]
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
os.environ.setdefault("OF_CACHE_DIR", tempfile.mkdtemp(prefix="of-bench-cache-"))
os.environ.setdefault("OF_LOG", "quiet")


def load(framework):
    sys.path.insert(0, str(ROOT / "examples" / "python"))
    from train_gpt import load_model
    return load_model(framework)


def median_step(fn, steps):
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    options = parser.parse_args()

    import torch
    import of
    torch.set_num_threads(os.cpu_count())

    tns, ons = load("torch"), load("of")
    cfg = tns["GPTConfig"]()
    torch.manual_seed(0)
    tmodel = tns["GPT"](cfg)
    omodel = ons["GPT"](ons["GPTConfig"]())
    omodel.load_state_dict(tmodel.state_dict())
    rng = np.random.default_rng(0)
    x = rng.integers(0, cfg.vocab_size, (options.batch, cfg.block_size))
    y = rng.integers(0, cfg.vocab_size, (options.batch, cfg.block_size))
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    ox, oy = of.tensor(x), of.tensor(y)

    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3)

    def torch_step(model=tmodel, opt=topt):
        _, loss = model(tx, ty)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    ostep = of.compile(omodel, optimizer=of.optim.AdamW(omodel.parameters(), lr=1e-3))
    t0 = time.perf_counter()
    ostep(ox, oy).item()
    of_compile = time.perf_counter() - t0

    def of_loop(model, opt):
        def step():
            _, loss = model(ox, oy)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.item()
        return step

    loops = {}
    for name, wrap in (("of compile loop", of.compile), ("of eager loop", lambda m: m)):
        m = ons["GPT"](ons["GPTConfig"]())
        m.load_state_dict(tmodel.state_dict())
        loops[name] = of_loop(wrap(m), of.optim.AdamW(m.parameters(), lr=1e-3))

    peers = {"pytorch eager": torch_step}
    tc_compile = None
    try:
        cmodel = tns["GPT"](cfg)
        copt = torch.optim.AdamW(cmodel.parameters(), lr=1e-3)
        compiled = torch.compile(cmodel)
        t0 = time.perf_counter()
        torch_step(compiled, copt)
        tc_compile = time.perf_counter() - t0
        peers["torch.compile"] = lambda: torch_step(compiled, copt)
    except Exception as e:  # no C compiler for inductor, etc.
        print(f"torch.compile unavailable: {type(e).__name__}: {e}".splitlines()[0])

    systems = {"of fused": lambda: ostep(ox, oy).item(), **loops, **peers}
    rounds = {name: [] for name in systems}
    for _ in range(options.rounds):
        for name, fn in systems.items():
            fn()  # warm
            rounds[name].append(median_step(fn, options.steps))
    med = {name: statistics.median(v) for name, v in rounds.items()}
    print(f"GPT training step from Python (batch {options.batch}x{cfg.block_size}, "
          f"{options.rounds} rounds x {options.steps} steps, median)")
    for name, seconds in med.items():
        print(f"  {name:16s} {seconds * 1e3:8.2f} ms/step {1 / seconds:8.1f} steps/s")
    print("time ratios:")
    for a, b in (("of fused", "pytorch eager"), ("of compile loop", "of fused"),
                 ("of compile loop", "pytorch eager"), ("of eager loop", "pytorch eager"),
                 ("of fused", "torch.compile"), ("of compile loop", "torch.compile")):
        if a in med and b in med:
            print(f"  {a} / {b}: {med[a] / med[b]:.2f}")
    print(f"first call: of.compile {of_compile:.2f} s"
          + (f", torch.compile {tc_compile:.2f} s" if tc_compile else ""))

    a64 = rng.standard_normal((64, 64)).astype(np.float32)
    oa, ta = of.from_numpy(a64), torch.from_numpy(a64)
    for label, ofn, tfn in (("add 64x64", lambda: oa + oa, lambda: ta + ta),
                            ("matmul 64x64", lambda: oa @ oa, lambda: ta @ ta)):
        ofn()
        o = median_step(ofn, 2000)
        t = median_step(tfn, 2000)
        print(f"eager {label:13s} of {o * 1e6:7.1f} us  pytorch {t * 1e6:7.1f} us  "
              f"ratio {o / t:.2f}")


if __name__ == "__main__":
    main()
