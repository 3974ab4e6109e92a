#!/usr/bin/env python3
"""Measures this machine's figures for the SBP cost model and writes them as
a machine file (CostModel::readMachineFile's JSON), which
`--of-auto-parallel`, `--of-propagate-sbp` and the pipeline
(`machine-file=`) read:

- axes[0]: the latency and bandwidth of an all-reduce over `--ranks` CPU
  ranks as the runtime does it (of-run plans of one P -> B boxing at 8 B
  and at `--bytes`; ring model: t = 2(p-1) alpha + 2(p-1)/p bytes/beta);
- flops: a [n, n] x [n, n] f32 matmul on one rank (2 n^3 / t);
- memory_bandwidth: an elementwise add of two large f32 tensors on one
  rank (3 x bytes / t).

Each figure is the median over `--rounds` of (time of of-run --steps K+N
minus --steps K) / N, so process start-up and plan loading cancel.

    python3 scripts/calibrate_cost_model.py --ranks 2 -o machine.json
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = pathlib.Path(os.environ.get("OF_TOOLS_DIR", ROOT / "build" / "bin"))


def tool(name):
    path = TOOLS / name
    if not path.exists():
        sys.exit(f"calibrate: {path} not found (build first, or set OF_TOOLS_DIR)")
    return str(path)


def plan(text, tmp, name):
    src = tmp / f"{name}.mlir"
    src.write_text(text)
    lowered = subprocess.run([tool("of-opt"), str(src), "--of-pipeline=cpu"],
                             check=True, stdout=subprocess.PIPE).stdout
    out = tmp / f"{name}.ofp"
    subprocess.run([tool("of-translate"), "--of-plan-to-binary", "-o", str(out)],
                   input=lowered, check=True)
    return out


def per_step(plan_path, inputs, ranks, steps, rounds, tmp):
    """Seconds per step of `plan_path` (median over rounds)."""
    args = []
    for name, value in inputs.items():
        path = tmp / f"{plan_path.stem}-{name}.npy"
        np.save(path, value)
        args += ["--input", f"{name}={path}"]

    def run(n):
        cmd = ([tool("of-run"), "-n", str(ranks)] if ranks > 1 else [tool("of-run")]) + [
            str(plan_path), "--steps", str(n), "--output-dir", str(tmp / "out"), *args]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t
    times = [(run(steps + 2) - run(2)) / steps for _ in range(rounds)]
    t = statistics.median(times)
    if t <= 0:
        sys.exit(f"calibrate: {plan_path.stem} measured no time over {steps} steps (noise "
                 f"larger than the work): raise --steps or quiet the machine")
    return t


def allreduce_program(elements, ranks):
    t = f"tensor<{elements}xf32"
    return (f'of.placement @p {{device = "cpu", shape = [{ranks}]}}\n'
            f"func.func @ar(%x: {t}, #of.sbp<@p, [P]>> {{of.name = \"x\"}}) -> {t}, #of.sbp<@p, [B]>> {{\n"
            f"  %y = of.boxing %x : {t}, #of.sbp<@p, [P]>> -> {t}, #of.sbp<@p, [B]>>\n"
            f"  return %y : {t}, #of.sbp<@p, [B]>>\n}}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--bytes", type=int, default=8 << 20,
                        help="all-reduce and add size for the bandwidths (default 8 MiB)")
    parser.add_argument("--gemm", type=int, default=1024, help="matmul size n")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-o", "--output", required=True, help="machine file to write")
    options = parser.parse_args()
    if options.ranks < 2:
        sys.exit("calibrate: --ranks must be at least 2 (the links are between ranks)")
    p = options.ranks
    with tempfile.TemporaryDirectory(prefix="of-calibrate-") as d:
        tmp = pathlib.Path(d)
        small = plan(allreduce_program(2, p), tmp, "ar-small")
        # a tiny step: many of them, so that they outweigh start-up noise
        t_small = per_step(small, {"x": np.ones(2, np.float32)}, p, options.steps * 200,
                           options.rounds, tmp)
        alpha = t_small / (2 * (p - 1))
        n = options.bytes // 4
        big = plan(allreduce_program(n, p), tmp, "ar-big")
        t_big = per_step(big, {"x": np.ones(n, np.float32)}, p, options.steps,
                         options.rounds, tmp)
        beta = 2 * (p - 1) / p * options.bytes / max(t_big - 2 * (p - 1) * alpha, 1e-9)
        g = options.gemm
        gemm = plan(f"func.func @mm(%a: tensor<{g}x{g}xf32> {{of.name = \"a\"}}, "
                    f"%b: tensor<{g}x{g}xf32> {{of.name = \"b\"}}) -> tensor<{g}x{g}xf32> {{\n"
                    f"  %c = of.matmul %a, %b : (tensor<{g}x{g}xf32>, tensor<{g}x{g}xf32>) "
                    f"-> tensor<{g}x{g}xf32>\n  return %c : tensor<{g}x{g}xf32>\n}}\n", tmp, "mm")
        a = np.random.default_rng(0).standard_normal((g, g)).astype(np.float32)
        flops = 2 * g ** 3 / per_step(gemm, {"a": a, "b": a}, 1, options.steps,
                                      options.rounds, tmp)
        t = f"tensor<{n}xf32>"
        add = plan(f"func.func @add(%a: {t} {{of.name = \"a\"}}, %b: {t} {{of.name = \"b\"}}) "
                   f"-> {t} {{\n  %c = of.add %a, %b : ({t}, {t}) -> {t}\n  return %c : {t}\n}}\n",
                   tmp, "add")
        v = np.ones(n, np.float32)
        bandwidth = 3 * options.bytes / per_step(add, {"a": v, "b": v}, 1, options.steps,
                                                 options.rounds, tmp)
    machine = {"flops": flops, "memory_bandwidth": bandwidth,
               "axes": [{"latency": alpha, "bandwidth": beta}]}
    pathlib.Path(options.output).write_text(json.dumps(machine, indent=2) + "\n")
    print(f"all-reduce over {p} ranks: latency {alpha * 1e6:.2f} us per step, bandwidth "
          f"{beta / 1e9:.2f} GB/s; matmul {flops / 1e9:.1f} GFLOP/s; memory "
          f"{bandwidth / 1e9:.1f} GB/s -> {options.output}")


if __name__ == "__main__":
    main()
