#!/usr/bin/env python3
"""Builds the bundle that bench/gpu/run.sh runs on a GPU machine.

The GPU machine has no MLIR, MPI or OpenBLAS, so everything that needs
them happens here:

  * of-run, libofrt and the shared libraries libofrt links that a CUDA
    image may lack (ldd's view) are copied; the libraries libofrt loads
    with dlopen for CPU steps (OpenBLAS, oneDNN, MPI) are not needed
    there, and the CUDA ones (driver, cuBLAS, cuDNN, NCCL) are the
    machine's;
  * every test program is compiled with --of-pipeline=cuda into a plan:
    - the op groups of test/E2E/test_ops.py, with their inputs and NumPy
      float64 references and tolerances;
    - a 3-layer MLP forward (784-1024-1024-10, batch 128) against NumPy;
    - the small GPT's AdamW training step (examples/gpt.py, 1 rank) run for
      a few steps here from the CPU plan, whose per-step losses the GPU
      plan must reproduce;
    - the convnet's SGD step likewise (cuDNN's steps in a model);
    - an MLP and nanoGPT written with the Python frontend (of.nn on
      "cuda" tensors), their training steps compiled ahead of time by
      save_plan, likewise;
  * benchmark plans (GEMMs, a larger GPT's training step in f32 and bf16
    AMP) whose inputs run.py draws on the GPU machine, since they are too
    large to carry.

    python3 bench/gpu/prepare.py [--tools build/bin] [--out build/gpu-bundle]

then on the GPU machine: bash bench/gpu/run.sh build/gpu-bundle
(the device tool carries build/gpu-bundle; it stays under 64 MiB).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261204

# The E2E helpers draw their inputs from OF_TEST_SEED when imported.
os.environ.setdefault("OF_TEST_SEED", str(SEED))
sys.path.insert(0, str(ROOT / "test" / "E2E"))
sys.path.insert(0, str(ROOT / "examples"))

GPT_STEPS = 10
GPT_PIPELINE = "train=adamw,weight-decay=0.01,max-grad-norm=1.0"
GPT_LR = 3e-3


def run(cmd, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"prepare: {' '.join(map(str, cmd))} failed "
                 f"(rc={proc.returncode}):\n{proc.stderr.decode(errors='replace')}")
    return proc.stdout


class Bundle:
    def __init__(self, tools, out):
        self.tools, self.out = Path(tools), Path(out)
        self.cases = []
        self.skipped = []  # cases not built for the device, and why

    def compile(self, mlir, name, pipeline):
        """MLIR text -> out/plans/<name>.ofp; returns the path relative to
        the bundle."""
        plans = self.out / "plans"
        plans.mkdir(parents=True, exist_ok=True)
        src = plans / f"{name}.mlir"
        src.write_text(mlir)
        lowered = run([self.tools / "of-opt", f"--of-pipeline={pipeline}", src])
        plan = plans / f"{name}.ofp"
        run([self.tools / "of-translate", "--of-plan-to-binary", "-o", plan], input=lowered)
        src.unlink()
        return str(plan.relative_to(self.out))

    def save(self, case, name, array):
        folder = self.out / "data" / case
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.npy"
        np.save(path, np.asarray(array, order="C"))
        return str(path.relative_to(self.out))

    def copy_runtime(self):
        for sub in ("bin", "lib"):
            (self.out / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.tools / "of-run", self.out / "bin" / "of-run")
        shutil.copy2(self.tools / "ofrt-comm-check", self.out / "bin" / "ofrt-comm-check")
        libofrt = (self.tools / ".." / "lib" / "libofrt.so").resolve()
        shutil.copy2(libofrt, self.out / "lib" / "libofrt.so")
        # The non-glibc libraries the runtime needs (ldd's view), except
        # the C++ runtime, which the CUDA image has in a newer version.
        listing = run(["ldd", libofrt]).decode()
        for line in listing.splitlines():
            m = re.match(r"\s*(\S+) => (\S+)", line)
            if not m or m.group(1).startswith(("libc.", "libm.", "libstdc++", "libgcc_s",
                                               "ld-linux", "libofrt")):
                continue
            dst = self.out / "lib" / m.group(1)
            with open(m.group(2), "rb") as src, open(str(dst) + ".gz", "wb") as gz:
                subprocess.run(["gzip", "-4", "-c"], stdin=src, stdout=gz, check=True)

    def write_manifest(self):
        (self.out / "manifest.json").write_text(json.dumps(
            {"seed": SEED, "cases": self.cases, "skipped": self.skipped}, indent=1))


def add_op_groups(bundle, pipelines):
    import test_ops
    from ofrun import bf16_bits_to_f32  # noqa: F401 (run.py has its own)
    for pipeline in pipelines:
        for group, prog in test_ops.PROGRAMS.items():
            if prog.nproc > 1:  # a GPU machine here has one GPU and no MPI
                bundle.skipped.append({
                    "name": f"ops-{pipeline.replace(',', '-').replace('=', '')}-{group}",
                    "reason": f"needs {prog.nproc} ranks (one GPU and no MPI there)"})
                continue
            case = f"ops-{pipeline.replace(',', '-').replace('=', '')}-{group}"
            try:
                plan = bundle.compile(prog.text(), case, pipeline)
            except SystemExit as e:
                print(f"  {case}: does not compile for the GPU:\n{e}", file=sys.stderr)
                bundle.cases.append({"name": case, "kind": "compile-error",
                                     "error": str(e)[-2000:]})
                continue
            outputs = {}
            for ssa, ty, name in prog.results:
                ref = np.asarray(prog.refs[name])
                outputs[name] = {"ref": bundle.save(case, f"ref_{name}", ref),
                                 "tol": prog.tols[name],
                                 "bf16": "xbf16>" in ty or ty == "tensor<bf16>"}
            bundle.cases.append({
                "name": case, "kind": "outputs", "plan": plan,
                "inputs": {n: bundle.save(case, f"in_{n}", a) for n, a in prog.inputs.items()},
                "outputs": outputs})


def add_mlp(bundle, rng):
    from ofrun import Program
    from test_ops import nonzero
    dims, batch = [784, 1024, 1024, 10], 128
    p = Program()
    h = p.input("x", nonzero(rng, (batch, dims[0])))
    ref = p.inputs["x"].astype(np.float64)
    for i in range(3):
        w = p.input(f"w{i}", (rng.standard_normal((dims[i], dims[i + 1])) /
                              np.sqrt(dims[i])).astype(np.float32))
        b = p.input(f"b{i}", rng.standard_normal(dims[i + 1]).astype(np.float32))
        ty = f"tensor<{batch}x{dims[i + 1]}xf32>"
        p.op(f"%mm{i} = of.matmul {h}, {w} : ({p.t(h)}, {p.t(w)}) -> {ty}")
        p.op(f"%z{i} = of.add %mm{i}, {b} : ({ty}, {p.t(b)}) -> {ty}", {f"%z{i}": ty})
        ref = ref @ p.inputs[f"w{i}"].astype(np.float64) + p.inputs[f"b{i}"]
        h = f"%z{i}"
        if i < 2:
            p.op(f"%h{i} = of.relu %z{i} : ({ty}) -> {ty}", {f"%h{i}": ty})
            h, ref = f"%h{i}", np.maximum(ref, 0)
    p.output("y", h, f"tensor<{batch}x10xf32>", ref, 1e-4)
    case = "mlp-forward"
    bundle.cases.append({
        "name": case, "kind": "outputs", "plan": bundle.compile(p.text(), case, "cuda"),
        "inputs": {n: bundle.save(case, f"in_{n}", a) for n, a in p.inputs.items()},
        "outputs": {"y": {"ref": bundle.save(case, "ref_y", ref), "tol": 1e-4, "bf16": False}}})


def cpu_reference(bundle, case, cpu_plan, args, steps):
    """Runs a training plan on the CPU (then drops it from the bundle): its
    losses, and the trained state (parameters, optimizer state) saved into
    the bundle, which the GPU must reach too."""
    out = bundle.out / "cpu-out"
    stdout = run([bundle.tools.resolve() / "of-run", cpu_plan] + args + ["--output-dir", out],
                 cwd=bundle.out).decode()
    trained = {f.stem: bundle.save(case, "trained_" + f.stem, np.load(f))
               for f in sorted(out.glob("*.npy")) if f.stem != "loss"}
    shutil.rmtree(out)
    (bundle.out / cpu_plan).unlink()
    losses = [float(v) for v in re.findall(r"^step \d+/\d+  loss (\S+)", stdout, re.M)]
    assert len(losses) == steps, stdout
    return losses, trained


def add_gpt_training(bundle, rng):
    """The 1-rank GPT training step: the CPU plan's losses are the
    reference for the CUDA plan's."""
    import gpt
    cfg = gpt.Config()
    text = gpt.program(cfg, *gpt.LAYOUTS["1-rank"])
    case = "gpt-train"
    cuda_plan = bundle.compile(text, case, "cuda," + GPT_PIPELINE)
    cpu_plan = bundle.compile(text, case + "-cpu", "cpu," + GPT_PIPELINE)
    args = ["--entry", "gpt_train_step", "--steps", str(GPT_STEPS), "--set", f"lr={GPT_LR}"]
    idx = rng.integers(0, cfg.vocab, size=(4, cfg.batch, cfg.block), dtype=np.int64)
    targets = np.roll(idx, -1, axis=2)
    args += ["--batch", "idx=" + bundle.save(case, "idx", idx),
             "--batch", "targets=" + bundle.save(case, "targets", targets)]
    params = []
    for name, value in gpt.init_params(cfg, rng).items():
        params += ["--input", f"{name}=" + bundle.save(case, name, value)]
    args += params
    # One batch, for timing the step as repeated runs (--warmup, --repeat).
    profile = ["--entry", "gpt_train_step", "--set", f"lr={GPT_LR}",
               "--input", "idx=" + bundle.save(case, "idx0", idx[0]),
               "--input", "targets=" + bundle.save(case, "targets0", targets[0])] + params
    losses, trained = cpu_reference(bundle, case, cpu_plan, args, GPT_STEPS)
    bundle.cases.append({"name": case, "kind": "train", "plan": cuda_plan, "args": args,
                         "profile_args": profile, "losses": losses, "tol": 1e-4,
                         "trained": trained})


CONVNET_STEPS = 6


def add_convnet_training(bundle, rng):
    """bench/train_bench.py's convnet (conv 3x3 -> batch norm -> relu -> max
    pool -> linear, SGD) for a few steps: cuDNN's convolution, batch-norm
    and pooling steps in a model, the CPU plan's losses and trained state
    the reference. cuDNN may pick Winograd or FFT convolutions, whose f32
    results differ from a direct sum by more than cuBLAS's do: 1e-3."""
    sys.path.insert(0, str(ROOT / "bench"))
    import train_bench
    program, _, entry, _, params, inputs, _ = train_bench.convnet_setup(rng, None)
    # The benchmark's 0.01 overshoots at first (the loss goes 3 -> 30), which
    # would magnify rounding differences; at 0.001 the loss falls smoothly.
    lr = 1e-3
    case = "convnet-train"
    cuda_plan = bundle.compile(program, case, "cuda,train=sgd")
    # The same step with every convolution, pooling and batch norm
    # generated: its step time against the cuDNN plan's says what the
    # library steps are worth on the GPU.
    generated_plan = bundle.compile(program, case + "-use-dnnfalse", "cuda,train=sgd,use-dnn=false")
    cpu_plan = bundle.compile(program, case + "-cpu", "cpu,train=sgd")
    args = ["--entry", entry, "--set", f"lr={lr}"]
    for name, value in params.items():
        args += ["--input", f"{name}=" + bundle.save(case, name, value)]
    for name, (how, value) in inputs.items():
        args += [f"--{how}", f"{name}=" + bundle.save(case, name, value)]
    losses, trained = cpu_reference(bundle, case, cpu_plan,
                                    args + ["--steps", str(CONVNET_STEPS)], CONVNET_STEPS)
    for name, plan in ((case, cuda_plan), (case + "-use-dnnfalse", generated_plan)):
        bundle.cases.append({"name": name, "kind": "train", "plan": plan,
                             "args": args + ["--steps", str(CONVNET_STEPS)], "profile_args": args,
                             "losses": losses, "tol": 1e-3, "trained": trained})


PYTHON_STEPS = 6


def add_python_frontend_training(bundle, rng):
    """Models written with the Python frontend, moved to "cuda" and their
    AdamW steps compiled by `save_plan(path, *example_args)` (no GPU needed
    to compile; the GPU machine has no MLIR to JIT with): the frontend's
    cuda path. The same models' CPU plans, run here, are the references.
    An MLP through of.compile's loss_fn, and examples/python/nanogpt.py's
    GPT (attention, weight tying, two parameter groups) as ported code."""
    sys.path.insert(0, str((bundle.tools / ".." / "python").resolve()))
    sys.path.insert(0, str(ROOT / "examples" / "python"))
    os.environ.setdefault("OF_LOG", "quiet")
    import of
    from train_gpt import load_model
    of.manual_seed(SEED)
    mlp = of.nn.Sequential(of.nn.Linear(64, 256), of.nn.GELU(), of.nn.LayerNorm(256),
                           of.nn.Linear(256, 10))
    step = of.compile(mlp, loss_fn=of.nn.CrossEntropyLoss(),
                      optimizer=of.optim.AdamW(mlp.parameters(), lr=1e-3))
    x = rng.standard_normal((4, 32, 64)).astype(np.float32)
    y = rng.integers(0, 10, (4, 32))
    frontend_case(bundle, "python-frontend-mlp", mlp, step, "sequential_train_step",
                  {"x": x, "target": y}, tol=1e-4)
    ns = load_model("of")
    cfg = ns["GPTConfig"]()
    gpt = ns["GPT"](cfg)
    step = of.compile(gpt, optimizer=gpt.configure_optimizers(0.1, 1e-3, (0.9, 0.95)))
    idx = rng.integers(0, cfg.vocab_size, (4, 4, cfg.block_size))
    frontend_case(bundle, "python-frontend-nanogpt", gpt, step, "gpt_train_step",
                  {"idx": idx, "targets": np.roll(idx, -1, axis=2)}, tol=1e-4)


def frontend_case(bundle, case, model, step, entry, batches, tol):
    """A "train" case of a frontend step: `batches` maps each data input to
    its values along a leading batch axis."""
    import of
    plans = bundle.out / "plans"
    plans.mkdir(parents=True, exist_ok=True)
    for device, name in (("cpu", case + "-cpu"), ("cuda", case)):
        model.to(device)
        step.save_plan(str(plans / f"{name}.ofp"),
                       *[of.tensor(v[0], device=device) for v in batches.values()])
    params, seen = [], set()
    for name, value in model.state_dict().items():
        if id(value) not in seen:  # a tied tensor is the input of its first name
            seen.add(id(value))
            params += ["--input", f"{name}=" + bundle.save(case, name, value.numpy())]
    common = ["--entry", entry, "--set", "lr=1e-3"] + params
    args, profile = list(common), list(common)
    for name, values in batches.items():
        args += ["--batch", f"{name}=" + bundle.save(case, name, values)]
        profile += ["--input", f"{name}=" + bundle.save(case, name + "0", values[0])]
    args += ["--steps", str(PYTHON_STEPS)]
    losses, trained = cpu_reference(bundle, case, f"plans/{case}-cpu.ofp", args, PYTHON_STEPS)
    bundle.cases.append({"name": case, "kind": "train", "plan": f"plans/{case}.ofp",
                         "args": args, "profile_args": profile, "losses": losses, "tol": tol,
                         "trained": trained})


# The GPT of the training-step benchmark (examples/gpt.py's model), with
# PyTorch eager and torch.compile on the same GPU as peers (run.py).
GPT_BENCH = dict(vocab=1024, block=256, d_model=256, heads=8, layers=4, batch=8)


# GPT-2 124M's shape (12 layers, d 768, 12 heads, 1024 tokens, GPT-2's
# vocabulary), batch 8, bf16: the benchmark. examples/gpt.py does
# not tie the output head to the token embedding, so the model has 163M
# parameters (PyTorch's peer is the same model). Fewer timed steps, with
# CUDA graphs only, to stay within the GPU machine's time.
GPT2_124M = dict(vocab=50257, block=1024, d_model=768, heads=12, layers=12, batch=8)


def add_gpt_benchmark(bundle):
    import gpt
    cfg = gpt.Config(**GPT_BENCH)
    text = gpt.program(cfg, *gpt.LAYOUTS["1-rank"])
    for amp in ("", ",amp=bf16"):
        case = "gpt-step" + amp.replace(",amp=", "-")
        bundle.cases.append({
            "name": case, "kind": "gpt_bench", "config": GPT_BENCH, "lr": GPT_LR,
            "amp": amp.replace(",amp=", ""),
            "plan": bundle.compile(text, case, "cuda," + GPT_PIPELINE + amp)})
    text = gpt.program(gpt.Config(**GPT2_124M), *gpt.LAYOUTS["1-rank"])
    case = "gpt2-124m-bf16"
    plan = bundle.compile(text, case, "cuda," + GPT_PIPELINE + ",amp=bf16")
    # The same plan with its gemms through cuBLASLt, late (see the GEMMs).
    for suffix, env in (("", {}), ("-cublaslt", {"OF_GEMM_LIBRARY": "cublaslt"})):
        bundle.cases.append({
            "name": case + suffix, "kind": "gpt_bench", "config": GPT2_124M, "lr": GPT_LR,
            "amp": "bf16", "steps": 8, "warmup": 3, "graph_modes": ["1"], "mfu": True,
            "plan": plan, "env": env, "peers": not env})


def add_gemm_benchmarks(bundle):
    # (element type, n, TF32 tensor cores for f32: --of-pipeline=...,tf32=true)
    for et, n, tf32 in (("f32", 4096, False), ("f32", 8192, False), ("f32", 8192, True),
                        ("bf16", 4096, False), ("bf16", 8192, False)):
        ty = f"tensor<{n}x{n}x{et}>"
        mlir = (f'func.func @main(%a: {ty} {{of.name = "a"}}, %b: {ty} {{of.name = "b"}}) '
                f'-> ({ty} {{of.name = "c"}}) {{\n'
                f"  %c = of.matmul %a, %b : ({ty}, {ty}) -> {ty}\n"
                f"  return %c : {ty}\n}}\n")
        case = f"gemm-{'tf32' if tf32 else et}-{n}"
        np_dtype = {"f32": "float32", "bf16": "bfloat16"}[et]
        pipeline = "cuda,tf32=true" if tf32 else "cuda"
        plan = bundle.compile(mlir, case, pipeline)
        # Each plan twice: its gemm step through cuBLAS (the default), and
        # through cuBLASLt with its heuristic's algorithm (OF_GEMM_LIBRARY),
        # to measure which is faster before changing the default.
        for suffix, env in (("", {}), ("-cublaslt", {"OF_GEMM_LIBRARY": "cublaslt"})):
            bundle.cases.append({
                "name": case + suffix, "kind": "gemm", "plan": plan, "env": env,
                "m": n, "n": n, "k": n, "dtype": np_dtype, "tf32": tf32,
                "inputs": {"a": [n, n], "b": [n, n]}})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", default=ROOT / "build" / "bin", type=Path)
    parser.add_argument("--out", default=ROOT / "build" / "gpu-bundle", type=Path)
    parser.add_argument("--pipelines", default="cuda,cuda;fuse=false,cuda;use-blas=false",
                        help="the op groups' pipelines, comma-separated, ';' for ','")
    args = parser.parse_args()
    start = time.time()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    bundle = Bundle(args.tools, args.out)
    bundle.copy_runtime()
    # NCCL on one rank: every communicator operation and the device copies
    # of plan collectives (test/Runtime/comm-check.cpp).
    bundle.cases.append({"name": "nccl communicator (1 rank)", "kind": "comm_check"})
    rng = np.random.default_rng(SEED)
    steps = [("op groups", lambda: add_op_groups(
                 bundle, [p.replace(";", ",") for p in args.pipelines.split(",")])),
             ("MLP forward", lambda: add_mlp(bundle, rng)),
             ("GPT training step (and its CPU reference)", lambda: add_gpt_training(bundle, rng)),
             ("convnet training step (and its CPU reference)",
              lambda: add_convnet_training(bundle, rng)),
             ("Python frontend training step (and its CPU reference)",
              lambda: add_python_frontend_training(bundle, rng)),
             ("GEMM benchmarks", lambda: add_gemm_benchmarks(bundle)),
             ("GPT training-step benchmarks", lambda: add_gpt_benchmark(bundle))]
    for i, (what, fn) in enumerate(steps, 1):
        print(f"[{i}/{len(steps)}] {what} ({time.time() - start:.0f} s)", flush=True)
        fn()
    bundle.write_manifest()
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"bundle {args.out}: {len(bundle.cases)} cases, {size / 2**20:.1f} MiB, "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
