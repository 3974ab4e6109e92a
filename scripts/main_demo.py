#!/usr/bin/env python3
"""The README's main job on its embedded default: compile
examples/mlp_megatron.mlir (an MLP with Megatron tensor parallelism, written
once on global tensors) for 2 CPU ranks, run it with `of-run -n 2` on random
inputs, and check the result against NumPy.

Training the small GPT on 2 ranks replaces this job when autodiff and the
optimizers land (issue 5).
"""
import math
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
    example = ROOT / "examples" / "mlp_megatron.mlir"
    explained = subprocess.run([TOOLS / "of-opt", "--of-explain-sbp", "-o", "/dev/null", example],
                               text=True, capture_output=True)
    for line in explained.stderr.splitlines():
        if "remark: chose" in line:
            print("[main] sbp:", line.split("remark: ")[1].split("; alternatives")[0])
    plan_text = step("compile", [TOOLS / "of-opt", "--of-pipeline=cpu", example])
    collectives = [l.split('"')[1] for l in plan_text.splitlines() if "ofrt.collective" in l]
    print(f"[main] collectives in the plan: {', '.join(collectives)}")
    plan = work / "mlp.ofp"
    step("pack", [TOOLS / "of-translate", "--of-plan-to-binary", "-o", plan], input=plan_text)
    print(f"[main] plan: {plan.stat().st_size} bytes")
    rng = np.random.default_rng()
    inputs = {
        "x": rng.standard_normal((32, 128), dtype=np.float32),
        "w1": (rng.standard_normal((128, 512)) / math.sqrt(128)).astype(np.float32),
        "b1": rng.standard_normal(512, dtype=np.float32),
        "w2": (rng.standard_normal((512, 128)) / math.sqrt(512)).astype(np.float32),
    }
    args = []
    for name, value in inputs.items():
        np.save(work / f"{name}.npy", value)
        args += ["--input", f"{name}={work / (name + '.npy')}"]
    print(step("run on 2 ranks", [TOOLS / "of-run", "-n", "2", plan, *args,
                                  "--output-dir", work / "out", "--repeat", "10",
                                  "--print-timing"]), end="")
    y = np.load(work / "out" / "y.npy")
    f = {k: v.astype(np.float64) for k, v in inputs.items()}
    h = f["x"] @ f["w1"] + f["b1"]
    erf = np.vectorize(math.erf)
    ref = (0.5 * h * (1 + erf(h / math.sqrt(2)))) @ f["w2"]
    err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    print(f"[main] relative error against NumPy (float64): {err:.2e}")
    if not err < 1e-5:
        sys.exit("[main] result does not match NumPy")
    print("[main] ok")
