#!/usr/bin/env python3
"""Runs the bundle of bench/gpu/prepare.py on a CUDA GPU: every plan with
of-run, compared with its reference, then the benchmarks against PyTorch
on the same GPU in the same run. Prints one table; writes results.json to
$OUT (or the temporary folder of the outputs) after every case.

    python3 bench/gpu/run.py BUNDLE [--only SUBSTRING] [--no-bench]
                             [--deadline SECONDS]

The device time is scarce, so the cases run in order of what they tell:
the main pipeline's op groups, the MLP, GPT, convnet and Python-frontend
training steps first, then the GEMM benchmarks (then the same GEMM plans
with OF_GEMM_LIBRARY=cublaslt), the GPT-2 124M benchmark, the small GPT
benchmarks, the GPT-2 124M plan with cuBLASLt gemms, and last the same op
groups compiled with fuse=false and use-blas=false, and the convnet step
with use-dnn=false. Past the
deadline (default 300 s after the start) the remaining cases are listed
as SKIP, and each command is given at most the time left.

Started by bench/gpu/run.sh, which sets up the bundle's libraries.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np


# The end-to-end tests' measures of error (the repository travels with the
# bundle; ofrun needs NumPy alone).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "E2E"))
from ofrun import bf16_bits_to_f32, rel_err  # noqa: E402


class DeadlineReached(Exception):
    """A case reached the deadline while running: it is listed as SKIP."""


class Runner:
    def __init__(self, bundle, work, deadline_at=math.inf):
        self.bundle, self.work = Path(bundle).resolve(), Path(work)
        self.of_run = self.bundle / "bin" / "of-run"
        self.deadline_at = deadline_at

    def time_left(self):
        return self.deadline_at - time.time()

    def capped(self, timeout):
        """`timeout`, or the time left before the deadline if less; past
        the deadline, DeadlineReached."""
        left = self.time_left()
        if left < 2:
            raise DeadlineReached()
        return min(timeout, left)

    def run_capped(self, cmd, timeout, **kw):
        """subprocess.run within `timeout` and the deadline: a command that
        the deadline cut short raises DeadlineReached, not TimeoutExpired."""
        limit = self.capped(timeout)
        try:
            return subprocess.run(cmd, capture_output=True, timeout=limit, **kw)
        except subprocess.TimeoutExpired:
            if limit < timeout:
                raise DeadlineReached()
            raise

    def of_run_cmd(self, plan, args, out_dir, env=None, timeout=120):
        cmd = [str(self.of_run), str(self.bundle / plan)] + args + ["--output-dir", str(out_dir)]
        start = time.time()
        proc = self.run_capped(cmd, timeout, cwd=self.bundle,
                               env={**os.environ, **(env or {})})
        return proc, time.time() - start

    def run_outputs(self, case):
        out = self.work / case["name"]
        # Three runs: the first goes step by step, the second records the
        # CUDA graphs and the third replays them; the outputs are the last
        # run's, so the graphs' results are what is checked.
        args = ["--repeat", "3"]
        for name, path in case["inputs"].items():
            args += ["--input", f"{name}={path}"]
        proc, seconds = self.of_run_cmd(case["plan"], args, out)
        if proc.returncode != 0:
            first = proc.stderr.decode(errors="replace")[-1200:]
            if "OF_CUDA_SYNC=1" not in first:
                return {"status": "ERROR", "detail": first}
            # An asynchronous failure, found at synchronization: the run
            # again, synchronized after every step, names the step.
            try:
                again, _ = self.of_run_cmd(case["plan"], args, out,
                                           env={"OF_CUDA_SYNC": "1"})
                rerun = again.stderr.decode(errors="replace")[-800:]
            except (DeadlineReached, subprocess.TimeoutExpired):
                rerun = "(no time left to rerun it)"
            return {"status": "ERROR", "detail": first + "\n[OF_CUDA_SYNC=1] " + rerun}
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

    def run_comm_check(self, case):
        """ofrt-comm-check --backend nccl: its summary line, or its failures."""
        proc = self.run_capped([str(self.bundle / "bin" / "ofrt-comm-check"), "--backend", "nccl"],
                               120)
        text = (proc.stdout + proc.stderr).decode(errors="replace")
        summary = [l for l in text.splitlines() if l.startswith("comm-check")]
        failures = [l for l in text.splitlines() if l.startswith("FAIL")]
        if proc.returncode == 0 and summary:
            return {"status": "PASS", "detail": summary[-1]}
        return {"status": "FAIL" if proc.returncode == 1 else "ERROR",
                "detail": "; ".join(failures[:3] + summary)[-1500:] or text[-1500:]}

    def run_train(self, case):
        state = self.work / (case["name"] + ".safetensors")
        proc, seconds = self.of_run_cmd(case["plan"], case["args"] + ["--save-state", str(state)],
                                        self.work / case["name"])
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
        # The trained state: written outputs and the saved checkpoint both
        # match the CPU plan's.
        try:
            from safetensors.numpy import load_file
            saved = load_file(str(state))
        except Exception as e:
            saved = None
            detail += f"; checkpoint unreadable: {type(e).__name__}: {e}"
            worst = math.inf
        state_err = 0.0
        for name, path in case["trained"].items():
            ref_value = np.load(self.bundle / path)
            got = np.load(self.work / case["name"] / f"{name}.npy")
            state_err = max(state_err, rel_err(got, ref_value))
            if saved is not None:
                if name not in saved:
                    detail += f"; {name} is not in the checkpoint"
                    worst = math.inf
                    continue
                state_err = max(state_err, rel_err(saved[name], ref_value))
        detail += f"; trained state ({len(case['trained'])} tensors, outputs and checkpoint) error {state_err:.1e}"
        # 1e-3, as test_gpt_training's trained parameters: AdamW's second
        # moments of tiny gradients differ by more than the losses do.
        if state_err > 1e-3:
            worst = math.inf
        detail += self.profile(case["plan"], case["profile_args"], case["name"])
        return {"status": "PASS" if worst <= case["tol"] else "FAIL", "detail": detail}

    def profile(self, plan, args, name, warmup=3, repeat=10, env=None):
        """Where a run's time goes: the slowest plan steps, and the time by
        kind of step (each step synchronized, so launch-bound steps show
        their latency)."""
        proc, _ = self.of_run_cmd(plan, args + ["--warmup", str(warmup), "--repeat",
                                                str(repeat), "--print-timing"],
                                  self.work / name, env=env, timeout=600)
        rows = re.findall(r"^(.+?)\s+(\d+)\s+(\S+)\s+(\S+)$", proc.stdout.decode(), re.M)
        rows = sorted(((float(ms), n.strip()) for n, _, ms, _ in rows if n.strip() != "step"),
                      reverse=True)
        total = re.search(r"^total per run: (\S+) ms in steps", proc.stdout.decode(), re.M)
        if not total:
            return "\n       (no profile: " + proc.stderr.decode(errors="replace")[-300:] + ")"
        kinds = {}
        for ms, n in rows:
            kind = n.split()[0] + (" " + n.split()[1] if n.startswith("library") else "")
            kinds[kind] = kinds.get(kind, 0.0) + ms
        return (f"\n       profiled: {total.group(1)} ms in {len(rows)} steps (" +
                ", ".join(f"{k} {v:.2f}" for k, v in sorted(kinds.items(), key=lambda x: -x[1])) +
                "); slowest: " + ", ".join(f"{n} {ms:.3f}" for ms, n in rows[:6]))

    def run_gpt_bench(self, case):
        steps, warmup = case.get("steps", 20), case.get("warmup", 5)
        graph_modes = case.get("graph_modes", ["1", "0"])
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
        import gpt
        cfg = gpt.Config(**case["config"])
        rng = np.random.default_rng(1)
        params = gpt.init_params(cfg, rng)
        seq = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.block + 1))
        idx, targets = seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)
        folder = self.work / (case["name"] + "-in")
        folder.mkdir(parents=True, exist_ok=True)
        args = ["--entry", "gpt_train_step", "--set", f"lr={case['lr']}"]
        for name, value in params.items():
            np.save(folder / f"{name}.npy", value)
            args += ["--input", f"{name}={folder / f'{name}.npy'}"]
        profile_args = list(args)
        args += ["--steps", str(steps)]
        for name, value in {"idx": idx, "targets": targets}.items():
            np.save(folder / f"{name}.npy", value[None])
            args += ["--batch", f"{name}={folder / f'{name}.npy'}"]
            np.save(folder / f"{name}0.npy", value)
            profile_args += ["--input", f"{name}={folder / f'{name}0.npy'}"]
        timed = {}
        for graphs in graph_modes:  # with CUDA graphs (the default) and without
            proc, _ = self.of_run_cmd(case["plan"], args, self.work / case["name"],
                                      env={**case.get("env", {}), "OF_CUDA_GRAPHS": graphs},
                                      timeout=600)
            if proc.returncode != 0:
                return {"status": "ERROR",
                        "detail": proc.stderr.decode(errors="replace")[-1500:]}
            lines = re.findall(r"^step \d+/\d+  loss (\S+)  (\S+) ms", proc.stdout.decode(),
                               re.M)
            ms = sorted(float(t) for _, t in lines[warmup:])
            timed[graphs] = ([float(l) for l, _ in lines], ms[len(ms) // 2])
        losses, of_ms = timed["1"]
        if "0" in timed and timed["0"][0] != losses:
            return {"status": "FAIL", "detail": f"the losses with and without CUDA graphs "
                                                f"differ: {losses[:3]} vs {timed['0'][0][:3]}"}
        tokens = cfg.batch * cfg.block
        result = {"of_ms": of_ms, "of_tokens_per_s": tokens / of_ms * 1e3}
        detail = f"OF {of_ms:.2f} ms/step ({tokens / of_ms * 1e3:,.0f} tokens/s"
        if "0" in timed:
            result["of_ms_no_graphs"] = timed["0"][1]
            detail += f"; without CUDA graphs {timed['0'][1]:.2f} ms"
        detail += ")"
        # Model FLOPs utilization: 6 N per token (forward and backward) plus
        # attention's 12 L d T, against the H200's dense bf16 peak (989
        # TFLOP/s spec; the issue measured ~790).
        flops = None
        if case.get("mfu"):
            n_params = sum(v.size for v in params.values())
            flops = tokens * (6 * n_params + 12 * cfg.layers * cfg.d_model * cfg.block)
            result["of_mfu"] = flops / (of_ms / 1e3) / 989e12
            detail += f"; MFU {result['of_mfu']:.1%} ({n_params / 1e6:.0f}M parameters)"
        status = "PASS"
        # A variant of a plan already timed against the peers (its gemms
        # through cuBLASLt) runs OF only.
        for mode in ("eager", "compile") if case.get("peers", True) else ():
            if mode == "compile" and self.time_left() < 120:
                # torch.compile of a forward and backward pass takes a minute
                # or more; past the deadline it would lose the table.
                detail += f"; torch compile skipped ({self.time_left():.0f} s left)"
                continue
            try:
                first, peer_ms = time_torch_gpt(cfg, params, idx, targets, case["lr"], mode,
                                                case["amp"], steps)
            except Exception as e:  # a peer that cannot run is reported, not fatal
                detail += f"; torch {mode}: {type(e).__name__}: {str(e)[:200]}"
                continue
            result[f"torch_{mode}_ms"] = peer_ms
            detail += f"; torch {mode} {peer_ms:.2f} ms (OF/torch time {of_ms / peer_ms:.2f}x"
            if flops:
                detail += f", MFU {flops / (peer_ms / 1e3) / 989e12:.1%}"
            detail += ")"
            if mode == "eager":
                # The peer computes the same model: the first losses agree.
                err = abs(losses[0] - first) / abs(first)
                tol = 2e-2 if case["amp"] else 1e-4
                detail += f"; first loss {losses[0]:.5f} vs torch {first:.5f}"
                if err > tol:
                    status = "FAIL"
                    detail += f" (error {err:.1e} > {tol:.0e})"
        detail += self.profile(case["plan"], profile_args, case["name"],
                               *((1, 3) if "steps" in case else ()), env=case.get("env"))
        result.update(status=status, detail=detail)
        return result

    def gemm_ms(self, case, inputs):
        args = ["--warmup", "3", "--repeat", "10", "--print-timing"]
        for name, path in inputs.items():
            args += ["--input", f"{name}={path}"]
        proc, _ = self.of_run_cmd(case["plan"], args, self.work / case["name"],
                                  env=case.get("env"), timeout=300)
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
        # TF32 rounds the inputs to 10-bit mantissas, as bf16 does to 7.
        tol = 1e-2 if bf16 or case.get("tf32") else 1e-4
        flop = 2.0 * m * n * k
        gemm_tf, total_tf = flop / (gemm_ms * 1e-3) / 1e12, flop / (total_ms * 1e-3) / 1e12
        result = {"status": "PASS" if err <= tol else "FAIL", "of_gemm_tflops": gemm_tf,
                  "of_tflops": total_tf, "of_ms": total_ms, "error": err}
        torch_tflops = torch_matmul_tflops(m, n, k, case["dtype"], tf32=case.get("tf32", False))
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


def gpt_torch_step(cfg, params, lr, mode, amp, dev="cuda"):
    """A PyTorch training step of examples/gpt.py's model (the JAX model of
    test/E2E/test_gpt_training.py), AdamW(weight_decay=0.01) after
    clip_grad_norm_(1.0): mode "eager" or "compile"; amp "bf16" runs the
    forward and backward under bf16 autocast. Returns step(idx, targets)
    -> loss tensor."""
    import torch
    import torch.nn.functional as F
    p = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in params.items()}
    T = cfg.block
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=dev))

    def ln(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def loss_fn(idx, targets):
        h = p["wte"][idx] + p["wpe"]
        for l in range(cfg.layers):
            q_ = lambda n: p[f"h.{l}.{n}"]
            n1 = ln(h, q_("ln_1.weight"), q_("ln_1.bias"))
            q, k, v = (torch.einsum("btc,hcd->bhtd", n1, q_(f"attn.{w}.weight")) for w in "qkv")
            s = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(cfg.head_dim)
            a = torch.softmax(torch.where(causal, s, torch.tensor(-1.0e9, device=dev, dtype=s.dtype)), -1)
            o = torch.einsum("bhts,bhsd->bhtd", a, v)
            r1 = h + torch.einsum("bhtd,hdc->btc", o, q_("attn.c_proj.weight")) + q_("attn.c_proj.bias")
            n2 = ln(r1, q_("ln_2.weight"), q_("ln_2.bias"))
            f = F.gelu(n2 @ q_("mlp.c_fc.weight") + q_("mlp.c_fc.bias"), approximate="tanh")
            h = r1 + f @ q_("mlp.c_proj.weight") + q_("mlp.c_proj.bias")
        logits = ln(h, p["ln_f.weight"], p["ln_f.bias"]) @ p["lm_head.weight"]
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))

    if mode == "compile":
        loss_fn = torch.compile(loss_fn)
    opt = torch.optim.AdamW(list(p.values()), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)

    def step(idx, targets):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp == "bf16"):
            loss = loss_fn(idx, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()
        return loss
    return step


def time_torch_gpt(cfg, params, idx, targets, lr, mode, amp, steps):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 products as OF's
    torch.backends.cudnn.allow_tf32 = False
    step = gpt_torch_step(cfg, params, lr, mode, amp)
    i, t = torch.tensor(idx, device="cuda"), torch.tensor(targets, device="cuda")
    first = float(step(i, t).detach())
    for _ in range(4):
        step(i, t)
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step(i, t)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return first, sorted(times)[len(times) // 2]


def torch_matmul_tflops(m, n, k, dtype, reps=10, tf32=False):
    try:
        import torch
    except ImportError:
        return None
    torch.backends.cuda.matmul.allow_tf32 = tf32  # as OF's f32 gemm
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


def priority(case):
    """The order cases run in (see the module's docstring)."""
    name, kind = case["name"], case["kind"]
    if "fusefalse" in name or "use-blasfalse" in name or "use-dnnfalse" in name:
        return 4
    if kind == "gemm":
        # the same plans with OF_GEMM_LIBRARY=cublaslt after the others
        return 1.5 if "cublaslt" in name else 1
    if kind == "gpt_bench":
        return (3.5 if "cublaslt" in name else 2) if "124m" in name else 3
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("--only", default="")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--deadline", type=float, default=300,
                        help="seconds after the start past which cases are skipped")
    args = parser.parse_args()
    manifest = json.loads((Path(args.bundle) / "manifest.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="of-gpu-"))
    out = Path(os.environ.get("OUT") or work)  # results.json: $OUT, else beside the outputs
    start = time.time()
    runner = Runner(args.bundle, work, deadline_at=start + args.deadline)
    try:
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        print(f"device: {smi.stdout.strip() or smi.stderr.strip()}", flush=True)
    except FileNotFoundError:
        print("device: no nvidia-smi on this machine", flush=True)
    results = []
    # Cases prepare.py could not build for this device (they need more
    # ranks, say) are listed, not dropped.
    cases = [{**c, "kind": "skipped"} for c in manifest.get("skipped", [])]
    cases += sorted(manifest["cases"], key=priority)
    for case in cases:
        if args.only not in case["name"]:
            continue
        if args.no_bench and case["kind"] in ("gemm", "gpt_bench"):
            r = {"status": "SKIP", "detail": "--no-bench"}
        elif case["kind"] == "skipped":
            r = {"status": "SKIP", "detail": case.get("reason", "not prepared")}
        elif runner.time_left() <= 0:
            r = {"status": "SKIP", "detail": f"past the {args.deadline:.0f} s deadline"}
        else:
            try:
                if case["kind"] == "compile-error":
                    r = {"status": "FAIL", "detail": "did not compile: " + case["error"][-300:]}
                else:
                    r = getattr(runner, f"run_{case['kind']}")(case)
            except DeadlineReached:
                r = {"status": "SKIP",
                     "detail": f"reached the {args.deadline:.0f} s deadline while running"}
            except subprocess.TimeoutExpired as e:
                r = {"status": "ERROR", "detail": f"timed out after {e.timeout:.0f} s"}
            except Exception:  # one case's failure is a row, not the end of the table
                r = {"status": "ERROR", "detail": traceback.format_exc()[-1200:]}
        r["name"] = case["name"]
        results.append(r)
        detail = str(r["detail"]).replace("\n", "\n" + " " * 7)
        print(f"{r['status']:5}  {case['name']:42} {detail}", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    counts = {s: sum(r["status"] == s for r in results) for s in ("PASS", "FAIL", "ERROR", "SKIP")}
    print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors, "
          f"{counts['SKIP']} skipped ({time.time() - start:.0f} s)")
    print(f"results: {out / 'results.json'}")
    return 0 if counts["FAIL"] == 0 and counts["ERROR"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
