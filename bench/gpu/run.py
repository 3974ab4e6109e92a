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
        detail = (f"loss {losses[0]:.4f} -> {losses[-1]:.4f} (CPU plan {ref[-1]:.4f}), "
                  f"worst step error {worst:.1e} of the first loss, "
                  f"median step {ms[len(ms) // 2]:.2f} ms")
        # Where a step's time goes: the slowest plan steps (synchronized
        # one by one, so launch-bound steps show their latency).
        proc, _ = self.of_run_cmd(case["plan"], case["profile_args"] +
                                  ["--warmup", "3", "--repeat", "10", "--print-timing"],
                                  self.work / case["name"])
        rows = re.findall(r"^(.+?)\s+(\d+)\s+(\S+)\s+(\S+)$", proc.stdout.decode(), re.M)
        rows = sorted(((float(ms), name.strip()) for name, _, ms, _ in rows
                       if name.strip() != "step"), reverse=True)
        total = re.search(r"^total per run: (\S+) ms in steps", proc.stdout.decode(), re.M)
        if total:
            detail += (f"\n       profiled: {total.group(1)} ms in {len(rows)} steps; slowest: " +
                       ", ".join(f"{name} {ms:.3f} ms" for ms, name in rows[:6]))
        return {"status": "PASS" if worst <= case["tol"] else "FAIL", "detail": detail}

    def gemm_ms(self, case, inputs):
        args = ["--warmup", "3", "--repeat", "10", "--print-timing"]
        for name, path in inputs.items():
            args += ["--input", f"{name}={path}"]
        proc, _ = self.of_run_cmd(case["plan"], args,
                                  self.work / case["name"], timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.decode(errors="replace")[-1500:])
        text = proc.stdout.decode()
        rows = re.findall(r"^(library blas\.gemm|launch \S+)\s+\d+\s+(\S+)", text, re.M)
        gemm = [float(ms) for name, ms in rows if name.startswith("library")]
        if len(gemm) != 1:
            raise RuntimeError("not one gemm step in the timing table:\n" + text)
        # The gemm, and the gemm with the kernels after it (the rounding of
        # a bf16 product's f32 accumulator).
        return gemm[0], sum(float(ms) for _, ms in rows)

    def run_gemm(self, case):
        m, n, k = case["m"], case["n"], case["k"]
        rng = np.random.default_rng(0)
        inputs = {}
        bf16 = case["dtype"] == "bfloat16"
        values = {}
        for name, shape in case["inputs"].items():
            path = self.work / f"{case['name']}_{name}.npy"
            x = rng.standard_normal(shape, dtype=np.float32)
            if bf16:  # raw bits, rounded to nearest even
                bits = x.view(np.uint32)
                x = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            np.save(path, x)
            values[name] = bf16_bits_to_f32(x) if bf16 else x
            inputs[name] = str(path)
        try:
            gemm_ms, total_ms = self.gemm_ms(case, inputs)
        except RuntimeError as e:
            return {"status": "ERROR", "detail": str(e)}
        c = np.load(self.work / case["name"] / "c.npy")
        if bf16:
            c = bf16_bits_to_f32(c)
        ref = values["a"][:64].astype(np.float64) @ values["b"].astype(np.float64)
        err = rel_err(c[:64], ref)
        tol = 1e-2 if bf16 else 1e-4
        flop = 2.0 * m * n * k
        gemm_tf, total_tf = flop / (gemm_ms * 1e-3) / 1e12, flop / (total_ms * 1e-3) / 1e12
        result = {"status": "PASS" if err <= tol else "FAIL", "of_gemm_tflops": gemm_tf,
                  "of_tflops": total_tf, "of_ms": total_ms, "error": err}
        torch_tflops = torch_matmul_tflops(m, n, k, case["dtype"])
        detail = f"OF {total_tf:.1f} TFLOP/s ({total_ms:.3f} ms"
        if total_ms > gemm_ms * 1.001:
            detail += f"; the cuBLAS step alone {gemm_tf:.1f}"
        detail += f"), rows 0-63 error {err:.1e}"
        if torch_tflops:
            result["torch_tflops"] = torch_tflops
            detail += (f"; torch.matmul {torch_tflops:.1f} TFLOP/s; "
                       f"ratio {total_tf / torch_tflops:.3f}")
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
