#!/usr/bin/env python3
"""The README's main job on its embedded default:

1. compile examples/mlp_megatron.mlir (an MLP with Megatron tensor
   parallelism, written once on global tensors) for 2 CPU ranks, run it
   with `of-run -n 2` on random inputs and check it against NumPy;
2. compile the training step (forward, backward, gradient boxing, AdamW) of
   the small GPT of examples/gpt.py (2 layers, d_model 64, 4 heads,
   character-level) for 2 ranks with Megatron tensor parallelism, train it
   with `of-run -n 2 --steps` on the GNU GPL v3 text that Debian's
   base-files package installs (/usr/share/common-licenses/GPL-3), showing
   a progress bar with the loss and tokens/s, saving a safetensors
   checkpoint every 100 steps;
3. load the checkpoint (global tensors) into a 1-rank sampling plan
   through libofrt's C API (ctypes) and print a sample.

Two ranks leave no room for data x tensor parallelism with both axes
above 1; the 2-D layout runs on 4 ranks in test/E2E/test_gpt_training.py.
Set OF_MAIN_STEPS to change the number of training steps (default 600).
"""
import ctypes
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOLS = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "bin"
sys.path.insert(0, str(ROOT / "examples"))
import gpt  # noqa: E402

CORPORA = [pathlib.Path("/usr/share/common-licenses/GPL-3"),
           pathlib.Path("/usr/share/common-licenses/Apache-2.0")]
STEPS = int(os.environ.get("OF_MAIN_STEPS", "600"))


def step(message, cmd, **kw):
    print(f"[main] {message}: {' '.join(map(str, cmd))}", flush=True)
    result = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if result.returncode != 0:
        sys.exit(f"[main] failed:\n{result.stderr}")
    return result.stdout


class Runtime:
    """The few calls of libofrt's C API (include/OF/Runtime/ofrt.h) that
    sampling needs, through ctypes."""

    def __init__(self, library):
        lib = self.lib = ctypes.CDLL(str(library))
        P, c = ctypes.c_void_p, ctypes
        lib.ofrt_error_message.restype = c.c_char_p
        lib.ofrt_error_message.argtypes = [P]
        lib.ofrt_error_free.argtypes = [P]
        for name, args in {
                "ofrt_plan_open_file": [c.c_char_p, c.POINTER(P)],
                "ofrt_session_create": [P, c.c_char_p, c.c_int, c.POINTER(P)],
                "ofrt_session_load_state": [P, c.c_char_p, c.POINTER(c.c_int64)],
                "ofrt_session_set_input": [P, c.c_size_t, P, c.c_size_t],
                "ofrt_session_run": [P],
                "ofrt_session_get_output": [P, c.c_size_t, P, c.c_size_t]}.items():
            getattr(lib, name).restype = P
            getattr(lib, name).argtypes = args
        for name in ("ofrt_session_find_input", "ofrt_session_find_output"):
            getattr(lib, name).restype = c.c_int64
            getattr(lib, name).argtypes = [P, c.c_char_p]

    def check(self, err):
        if err:
            message = self.lib.ofrt_error_message(err).decode()
            self.lib.ofrt_error_free(err)
            sys.exit(f"[main] libofrt: {message}")

    def session(self, plan_path, checkpoint):
        plan, session, step = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int64()
        self.check(self.lib.ofrt_plan_open_file(str(plan_path).encode(), ctypes.byref(plan)))
        self.check(self.lib.ofrt_session_create(plan, None, 0, ctypes.byref(session)))
        self.check(self.lib.ofrt_session_load_state(session, str(checkpoint).encode(),
                                                    ctypes.byref(step)))
        return session, step.value

    def run(self, session, inputs, output, out):
        for name, array in inputs.items():
            index = self.lib.ofrt_session_find_input(session, name.encode())
            self.check(self.lib.ofrt_session_set_input(session, index, array.ctypes.data,
                                                       array.nbytes))
        self.check(self.lib.ofrt_session_run(session))
        index = self.lib.ofrt_session_find_output(session, output.encode())
        self.check(self.lib.ofrt_session_get_output(session, index, out.ctypes.data, out.nbytes))
        return out


def compile_plan(source_text, name, pipeline, work):
    src = work / f"{name}.mlir"
    src.write_text(source_text)
    plan_text = step(f"compile {name}", [TOOLS / "of-opt", f"--of-pipeline={pipeline}", src])
    plan = work / f"{name}.ofp"
    step(f"pack {name}", [TOOLS / "of-translate", "--of-plan-to-binary", "-o", plan],
         input=plan_text)
    return plan


def progress(done, total, loss, tokens_per_s, width=30):
    filled = int(width * done / total)
    return (f"[main] [{'#' * filled}{'.' * (width - filled)}] {done}/{total}  "
            f"loss {loss:.4f}  {tokens_per_s / 1e3:.1f}k tokens/s")


def train_gpt(work, rng):
    corpus_path = next((p for p in CORPORA if p.is_file()), None)
    if corpus_path is None:
        sys.exit("[main] no corpus: " + " and ".join(map(str, CORPORA)) +
                 " are missing (Debian's base-files package installs them)")
    text = corpus_path.read_text(encoding="utf-8", errors="replace")
    chars = sorted(set(text))
    encode = {ch: i for i, ch in enumerate(chars)}
    data = np.array([encode[ch] for ch in text], dtype=np.int64)
    cfg = gpt.Config(vocab=len(chars), block=64, d_model=64, heads=4, layers=2, batch=8)
    print(f"[main] corpus {corpus_path}: {len(text)} characters, vocabulary {len(chars)}")
    print(f"[main] GPT: {cfg.layers} layers, d_model {cfg.d_model}, {cfg.heads} heads, "
          f"context {cfg.block}, batch {cfg.batch}; Megatron tensor parallel on 2 ranks")

    mesh, layout = gpt.LAYOUTS["megatron-2"]
    plan = compile_plan(gpt.program(cfg, mesh, layout), "gpt_train",
                        "cpu,train=adamw,weight-decay=0.01,max-grad-norm=1.0", work)
    # One batch of random windows per step; targets are the next characters.
    starts = rng.integers(0, len(data) - cfg.block - 1, size=(STEPS, cfg.batch))
    windows = data[starts[..., None] + np.arange(cfg.block + 1)]
    np.save(work / "idx.npy", windows[..., :-1])
    np.save(work / "targets.npy", windows[..., 1:])
    args = []
    for name, value in gpt.init_params(cfg, rng).items():
        np.save(work / f"{name}.npy", value)
        args += ["--input", f"{name}={work / (name + '.npy')}"]
    checkpoint = work / "gpt.safetensors"
    cmd = [TOOLS / "of-run", "-n", "2", plan, "--entry", "gpt_train_step", *args,
           "--batch", f"idx={work / 'idx.npy'}", "--batch", f"targets={work / 'targets.npy'}",
           "--set", "lr=0.003", "--steps", str(STEPS), "--save-state", checkpoint,
           "--save-every", "100", "--output-dir", work / "trained"]
    print(f"[main] train on 2 ranks: {' '.join(map(str, cmd[:4]))} ... "
          f"--steps {STEPS} --save-state {checkpoint.name} --save-every 100", flush=True)
    tty = sys.stdout.isatty()
    losses, tokens_per_step = [], cfg.batch * cfg.block
    start = time.monotonic()
    with subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE) as proc:
        for line in proc.stdout:
            if not line.startswith("step "):
                print("[main]", line, end="")
                continue
            losses.append(float(line.split("loss")[1].split()[0]))
            done = len(losses)
            rate = done * tokens_per_step / (time.monotonic() - start)
            if tty:
                print("\r" + progress(done, STEPS, losses[-1], rate), end="", flush=True)
            elif done == 1 or done % 50 == 0 or done == STEPS:
                print(progress(done, STEPS, losses[-1], rate), flush=True)
    if tty:
        print()
    if proc.returncode != 0 or len(losses) != STEPS:
        sys.exit("[main] training failed")
    elapsed = time.monotonic() - start
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    print(f"[main] loss {first:.3f} -> {last:.3f} (mean of the first and last 10 steps); "
          f"{STEPS * tokens_per_step / elapsed / 1e3:.1f}k tokens/s over {elapsed:.1f} s "
          f"including start-up")
    print(f"[main] checkpoint: {checkpoint.name}, {checkpoint.stat().st_size} bytes")
    if not last < 0.75 * first:
        sys.exit("[main] the loss did not fall by a quarter")

    # Sampling: the same weights in a 1-rank forward plan that returns logits.
    sampler_cfg = gpt.Config(vocab=cfg.vocab, block=cfg.block, d_model=cfg.d_model,
                             heads=cfg.heads, layers=cfg.layers, batch=1)
    sampler = compile_plan(gpt.program(sampler_cfg, output="logits"), "gpt_sample", "cpu",
                           work)
    runtime = Runtime(TOOLS.parent / "lib" / "libofrt.so")
    session, trained_steps = runtime.session(sampler, checkpoint)
    prompt_at = int(rng.integers(0, len(data) - cfg.block))
    context = list(data[prompt_at:prompt_at + cfg.block])
    logits = np.zeros((1, cfg.block, cfg.vocab), np.float32)
    generated = []
    for _ in range(240):
        idx = np.array([context[-cfg.block:]], dtype=np.int64)
        runtime.run(session, {"idx": idx}, "logits", logits)
        z = logits[0, -1].astype(np.float64) / 0.8  # temperature 0.8
        p = np.exp(z - z.max())
        token = int(rng.choice(cfg.vocab, p=p / p.sum()))
        context.append(token)
        generated.append(chars[token])
    prompt = "".join(chars[t] for t in data[prompt_at:prompt_at + cfg.block])
    print(f"[main] sample after {trained_steps} steps (prompt: the {cfg.block} characters "
          f"before the arrow):")
    print(prompt + " --> " + "".join(generated))


with tempfile.TemporaryDirectory() as tmp:
    work = pathlib.Path(tmp)
    example = ROOT / "examples" / "mlp_megatron.mlir"
    explained = subprocess.run([TOOLS / "of-opt", "--of-explain-sbp", "-o", "/dev/null", example],
                               text=True, capture_output=True)
    for line in explained.stderr.splitlines():
        if "remark: chose" in line:
            print("[main] sbp:", line.split("remark: ")[1].split("; alternatives")[0])
    plan_text = step("compile", [TOOLS / "of-opt", "--of-pipeline=cpu", example])
    # `ofrt.collective <kind> @src to @dst group [...]`
    collectives = [l.split("ofrt.collective", 1)[1].split()[0]
                   for l in plan_text.splitlines() if "ofrt.collective" in l]
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

    train_gpt(work, rng)
