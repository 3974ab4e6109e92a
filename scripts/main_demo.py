#!/usr/bin/env python3
"""The README's main job on its embedded default: compile
examples/mlp_megatron.mlir (an MLP with Megatron tensor parallelism, written
once on global tensors) for 2 CPU ranks, run it with `of-run -n 2` on random
inputs and check the result against NumPy; then compile the training step
of examples/mlp_train.mlir (the same parallelism, AdamW) and train it for
40 steps on 2 ranks on a synthetic classification set (labels from a random
teacher network), printing each step's loss.

Training the small GPT on a text corpus replaces the synthetic set when
per-step data feeding lands (issue 5).
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

    # Training on 2 ranks.
    example = ROOT / "examples" / "mlp_train.mlir"
    pipeline = "--of-pipeline=cpu,train=adamw,max-grad-norm=1.0"
    plan_text = step("compile the training step", [TOOLS / "of-opt", pipeline, example])
    plan = work / "train.ofp"
    step("pack", [TOOLS / "of-translate", "--of-plan-to-binary", "-o", plan], input=plan_text)
    teacher = rng.standard_normal((32, 10))
    data = {"x": rng.standard_normal((64, 32), dtype=np.float32)}
    data["y"] = np.argmax(data["x"] @ teacher, axis=1).astype(np.int64)
    data.update({
        "w1": (rng.standard_normal((32, 128)) / math.sqrt(32)).astype(np.float32),
        "b1": np.zeros(128, np.float32),
        "w2": (rng.standard_normal((128, 10)) / math.sqrt(128)).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    })
    args = []
    for name, value in data.items():
        np.save(work / f"{name}.npy", value)
        args += ["--input", f"{name}={work / (name + '.npy')}"]
    cmd = [TOOLS / "of-run", "-n", "2", plan, "--entry", "loss_train_step", *args,
           "--set", "lr=0.01", "--steps", "40", "--output-dir", work / "trained"]
    print(f"[main] train on 2 ranks: {' '.join(map(str, cmd))}", flush=True)
    losses = []
    with subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE) as proc:
        for line in proc.stdout:
            print("[main]", line, end="", flush=True)
            if line.startswith("step "):
                losses.append(float(line.split("loss")[1].split()[0]))
    if proc.returncode != 0 or len(losses) != 40:
        sys.exit("[main] training failed")
    print(f"[main] loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    if not losses[-1] < 0.5 * losses[0]:
        sys.exit("[main] the loss did not fall by half")
    print("[main] ok")
