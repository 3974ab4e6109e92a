#!/usr/bin/env python3
"""The README's main job: compile examples/mlp.mlir for the CPU, run it with
of-run on random inputs, and check the result against NumPy.

Training on 2 ranks joins this job when SBP partitioning and autodiff land
(issues 4 and 5); until then the global program runs as one rank.
"""
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "bin"


def step(message, cmd, **kw):
    print(f"[main] {message}: {' '.join(map(str, cmd))}", flush=True)
    result = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if result.returncode != 0:
        sys.exit(f"[main] failed:\n{result.stderr}")
    return result.stdout


with tempfile.TemporaryDirectory() as tmp:
    work = pathlib.Path(tmp)
    example = ROOT / "examples" / "mlp.mlir"
    plan_text = step("compile", [TOOLS / "of-opt", "--of-pipeline=cpu", example])
    plan = work / "mlp.ofp"
    step("pack", [TOOLS / "of-translate", "--of-plan-to-binary", "-o", plan], input=plan_text)
    print(f"[main] plan: {plan.stat().st_size} bytes")
    rng = np.random.default_rng()
    x = rng.standard_normal((64, 128), dtype=np.float32)
    w = rng.standard_normal((128, 256), dtype=np.float32)
    np.save(work / "x.npy", x)
    np.save(work / "w.npy", w)
    print(step("run", [TOOLS / "of-run", plan, "--input", f"x={work / 'x.npy'}",
                       "--input", f"w={work / 'w.npy'}", "--output-dir", work / "out",
                       "--repeat", "10", "--print-timing"]), end="")
    y = np.load(work / "out" / "out0.npy")
    ref = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)
    err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    print(f"[main] relative error against NumPy (float64): {err:.2e}")
    if not err < 1e-5:
        sys.exit("[main] result does not match NumPy")
    print("[main] ok")
