#!/usr/bin/env python3
"""Runs the bundle of bench/gpu/prepare.py on a CUDA GPU: every plan with
of-run, compared with its reference, then the benchmarks against PyTorch
on the same GPU in the same run. Prints one table; writes results.json to
$OUT (or the current folder).

    python3 bench/gpu/run.py BUNDLE [--only SUBSTRING] [--no-bench]

Started by bench/gpu/run.sh, which sets up the bundle's libraries.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def rel_err(y, ref):
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    num = np.linalg.norm((y - ref).ravel())
    den = np.linalg.norm(ref.ravel())
    return num / den if den > 0 else num


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class Runner:
    def __init__(self, bundle, work):
        self.bundle, self.work = Path(bundle).resolve(), Path(work)
        self.of_run = self.bundle / "bin" / "of-run"

    def of_run_cmd(self, plan, args, out_dir, env=None, timeout=120):
        cmd = [str(self.of_run), str(self.bundle / plan)] + args + ["--output-dir", str(out_dir)]
        start = time.time()
        proc = subprocess.run(cmd, capture_output=True, cwd=self.bundle, timeout=timeout,
                              env={**os.environ, **(env or {})})
        return proc, time.time() - start

    def run_outputs(self, case):
        out = self.work / case["name"]
        args = []
        for name, path in case["inputs"].items():
            args += ["--input", f"{name}={path}"]
        proc, seconds = self.of_run_cmd(case["plan"], args, out)
        if proc.returncode != 0:
            # An asynchronous failure: find its step.
            again, _ = self.of_run_cmd(case["plan"], args, out, env={"OF_CUDA_SYNC": "1"})
            return {"status": "ERROR", "detail": (proc.stderr + b"\n[OF_CUDA_SYNC=1] " +
                                                 again.stderr).decode(errors="replace")[-1500:]}
        worst, failures = 0.0, []
        for name, spec in case["outputs"].items():
            ref = np.load(self.bundle / spec["ref"])
            path = out / f"{name}.npy"
            if not path.exists():
                failures.append(f"{name}: missing")
                continue
            y = np.load(path)
            if spec["bf16"]:
                y = bf16_bits_to_f32(y)
            if y.shape != ref.shape:
                failures.append(f"{name}: shape {y.shape} != {ref.shape}")
                continue
            if spec["tol"] == 0:
                bad = int(np.count_nonzero(y != ref))
                if bad:
                    failures.append(f"{name}: {bad} of {y.size} differ")
                continue
            if not np.all(np.isfinite(y)):
                failures.append(f"{name}: non-finite")
                continue
            err = rel_err(y, ref)
            worst = max(worst, err)
            if err > spec["tol"]:
                failures.append(f"{name}: error {err:.2e} > {spec['tol']:.0e}")
        n = len(case["outputs"])
        return {"status": "FAIL" if failures else "PASS",
                "detail": f"{n - len(failures)}/{n} outputs, worst {worst:.1e}, {seconds:.2f} s"
                          + ("; " + "; ".join(failures[:6]) if failures else "")}

    def run_train(self, case):
        proc, seconds = self.of_run_cmd(case["plan"], case["args"], self.work / case["name"])
        if proc.returncode != 0:
            return {"status": "ERROR", "detail": proc.stderr.decode(errors="replace")[-1500:]}
        text = proc.stdout.decode()
        steps = re.findall(r"^step \d+/\d+  loss (\S+)  (\S+) ms", text, re.M)
        losses = [float(l) for l, _ in steps]
        ref = case["losses"]
        if len(losses) != len(ref):
            return {"status": "FAIL", "detail": f"{len(losses)} steps of {len(ref)}:\n{text[-800:]}"}
        worst = max(abs(g - r) / abs(ref[0]) for g, r in zip(losses, ref))
        ms = sorted(float(t) for _, t in steps[1:])
        return {"status": "PASS" if worst <= case["tol"] else "FAIL",
                "detail": f"loss {losses[0]:.4f} -> {losses[-1]:.4f} (CPU plan {ref[-1]:.4f}), "
                          f"worst step error {worst:.1e} of the first loss, "
                          f"median step {ms[len(ms) // 2]:.2f} ms"}

    def gemm_ms(self, case, inputs, repeat):
        args = []
        for name, path in inputs.items():
            args += ["--input", f"{name}={path}"]
        proc, _ = self.of_run_cmd(case["plan"], args + ["--repeat", str(repeat), "--print-timing"],
                                  self.work / case["name"], timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.decode(errors="replace")[-1500:])
        row = re.search(r"^library blas\.gemm\s+(\d+)\s+(\S+)", proc.stdout.decode(), re.M)
        if not row:
            raise RuntimeError("no gemm step in the timing table:\n" + proc.stdout.decode())
        return float(row.group(2))

    def run_gemm(self, case):
        m, n, k = case["m"], case["n"], case["k"]
        rng = np.random.default_rng(0)
        inputs = {}
        for name, shape in case["inputs"].items():
            path = self.work / f"{case['name']}_{name}.npy"
            np.save(path, rng.standard_normal(shape, dtype=np.float32))
            inputs[name] = str(path)
        try:
            # The first run pays for cuBLAS's set-up: take the difference.
            one = self.gemm_ms(case, inputs, 1)
            many = self.gemm_ms(case, inputs, 11)
        except RuntimeError as e:
            return {"status": "ERROR", "detail": str(e)}
        ms = (11 * many - one) / 10
        a, b = np.load(inputs["a"]), np.load(inputs["b"])
        c = np.load(self.work / case["name"] / "c.npy")
        err = rel_err(c[:64], a[:64].astype(np.float64) @ b.astype(np.float64))
        ours = 2.0 * m * n * k / (ms * 1e-3) / 1e12
        result = {"status": "PASS" if err <= 1e-4 else "FAIL",
                  "of_tflops": ours, "of_ms": ms, "error": err}
        torch_tflops = torch_matmul_tflops(m, n, k, case["dtype"])
        detail = f"OF {ours:.1f} TFLOP/s ({ms:.2f} ms), rows 0-63 error {err:.1e}"
        if torch_tflops:
            result["torch_tflops"] = torch_tflops
            detail += f"; torch.matmul {torch_tflops:.1f} TFLOP/s; ratio {ours / torch_tflops:.3f}"
        result["detail"] = detail
        return result


def torch_matmul_tflops(m, n, k, dtype, reps=10):
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False  # as OF's f32 gemm
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    for _ in range(3):
        torch.matmul(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        torch.matmul(a, b)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / reps
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--only", default="")
    parser.add_argument("--no-bench", action="store_true")
    args = parser.parse_args()
    manifest = json.loads((Path(args.bundle) / "manifest.json").read_text())
    out = Path(os.environ.get("OUT", "."))
    work = Path(tempfile.mkdtemp(prefix="of-gpu-"))
    runner = Runner(args.bundle, work)
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        print(f"device: {smi.stdout.strip() or smi.stderr.strip()}", flush=True)
    except FileNotFoundError:
        print("device: no nvidia-smi on this machine", flush=True)
    results = []
    start = time.time()
    for case in manifest["cases"]:
        if args.only not in case["name"]:
            continue
        if args.no_bench and case["kind"] == "gemm":
            continue
        try:
            if case["kind"] == "compile-error":
                r = {"status": "FAIL", "detail": "did not compile: " + case["error"][-300:]}
            else:
                r = getattr(runner, f"run_{case['kind']}")(case)
        except subprocess.TimeoutExpired as e:
            r = {"status": "ERROR", "detail": f"timed out after {e.timeout} s"}
        r["name"] = case["name"]
        results.append(r)
        print(f"{r['status']:5}  {case['name']:42} {r['detail']}", flush=True)
    counts = {s: sum(r["status"] == s for r in results) for s in ("PASS", "FAIL", "ERROR")}
    print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors "
          f"({time.time() - start:.0f} s)")
    (out / "results.json").write_text(json.dumps(results, indent=1))
    return 0 if counts["PASS"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
