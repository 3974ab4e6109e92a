#!/usr/bin/env python3
"""An attack on OF's tools, as an untrusting user would make it, with counts.

  attack.py [--tools DIR] [--seed N] [--budget-seconds S] [--only CATEGORY]
            [--out DIR] [--ci] [--max-cases N]

Categories (each runs in a child process of this script, with a deadline):

  of-opt       text mutants of the .mlir files under test/ (a line deleted or
               duplicated, an integer set to 0/-1/2^31/2^40/2^62, an element
               type swapped, an SBP entry changed, a bracket dropped, deep
               nesting, truncation, ...) and generated extremes (huge
               placements and shapes, long op chains, deep brackets) through
               `of-opt --of-pipeline=cpu` (sometimes parse only or another
               pipeline), and what of-opt accepts through
               `of-translate --of-plan-to-binary`.
  plans        compiled plans with bytes changed and the header's FNV-1a
               checksum recomputed (metadata, blobs, the embedded kernel
               ELF, header fields), and plan texts edited and re-translated;
               each run with `of-run --list` and on the original inputs.
  npy          bad .npy inputs and --set values against of-run.
  checkpoints  checkpoints written by `of-run --save-state`, damaged, loaded
               with --load-state.
  mpi          multi-rank faults (needs mpirun): wrong rank counts, a rank
               killed or hanging, ranks given different inputs or plans.
  python       bad arguments to the `of` frontend, each in a subprocess,
               against what PyTorch does with the same call.

The table has a row per category; plans has three: plans:bytes (metadata,
header, non-code blobs and the kernel ELF's headers, relocations, dynamic
section and symbols), plans:code (the kernel's machine code and constants:
native code, so a crash or a wrong result there is expected without plan
signatures) and plans:text (the plan's text edited: steps deleted, swapped
or duplicated, integers changed; a legitimate edit changes the results, so
its silent-wrong cases need triage).

Each case ends as one of: clean (a non-zero exit with an error message, or a
Python exception), accepted (exit 0, and where there is a reference the
right result), crash (a signal, or a crash report: assertion, LLVM ERROR,
stack dump, the loader's or malloc's complaints, or a non-zero exit without
any message), hang (past the timeout), silent-wrong (exit 0 with a result
that differs from the reference, or accepting what the reference rejects).
Every non-clean case is saved under --out as a folder with the inputs, the
tool output and a `repro.sh` that reruns it (tools from $OF_TOOLS_DIR).

--ci: exit 1 if a crash or hang was found (silent-wrong cases are printed
for triage but do not fail), printing each reproducer. The seed is
--seed, else $OF_TEST_SEED, else 1.
"""

import argparse
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent.parent
CATEGORIES = ["of-opt", "plans", "npy", "checkpoints", "mpi", "python"]
# Shares of the budget. The categories with a fixed list of cases run
# first; what they leave goes to the mutation categories (last of-opt).
SHARES = {"python": 0.06, "npy": 0.04, "mpi": 0.12, "checkpoints": 0.14, "plans": 0.30,
          "of-opt": 0.34}
ORDER = list(SHARES)
STATUSES = ["clean", "accepted", "crash", "hang", "silent-wrong"]
SEVERITY = {"accepted": 0, "clean": 1, "silent-wrong": 2, "hang": 3, "crash": 4}
TOOL_TIMEOUT = 20.0
MEMORY_LIMIT = 6 << 30  # address space of a tool process

CRASH_MARKERS = [
    "PLEASE submit a bug report", "Assertion `", "Assertion failed", "LLVM ERROR",
    "Stack dump", "UNREACHABLE", "Inconsistency detected by ld.so",
    "terminate called", "double free", "free(): ", "malloc(): ", "corrupted size",
    "AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:",
    "stack smashing", "Segmentation fault", "Bus error", "Illegal instruction",
    "Floating point exception", "core dumped", "std::bad_alloc",
]


# --------------------------------------------------------------------------
# Running tools and recording cases

# The worker's temporary folder (tools get it as TMPDIR, so that what they
# or mpirun leave behind goes with it) and its running child (killed when
# the worker is told to stop).
WORK_TMP = None
CURRENT_CHILD = None


def _limiter(memory):
    def limit():
        os.setsid()
        try:
            if memory:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
            resource.setrlimit(resource.RLIMIT_CPU, (300, 300))
        except (ValueError, OSError):
            pass
    return limit


class Result:
    def __init__(self, cmd, rc, out, timed_out, seconds, timeout=TOOL_TIMEOUT):
        self.cmd, self.rc, self.out = cmd, rc, out
        self.timed_out, self.seconds, self.timeout = timed_out, seconds, timeout


def run(cmd, cwd=None, timeout=TOOL_TIMEOUT, env=None, stdin_data=None,
        stdout_path=None, memory=MEMORY_LIMIT, kill_leftovers=False):
    """Runs cmd in its own session with a memory limit; kills the whole
    session at the timeout (and after the exit with kill_leftovers: the
    ranks of an mpirun job). stdout goes to stdout_path if given (else into
    the result with stderr)."""
    global CURRENT_CHILD
    full_env = dict(os.environ)
    full_env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                     "MKL_NUM_THREADS": "1", "DNNL_VERBOSE": "0"})
    if WORK_TMP:
        full_env["TMPDIR"] = WORK_TMP
    if env:
        full_env.update(env)
    start = time.monotonic()
    out_file = open(stdout_path, "wb") if stdout_path else None
    proc = subprocess.Popen(
        [str(c) for c in cmd], cwd=cwd, env=full_env,
        stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
        stdout=out_file if out_file else subprocess.PIPE,
        stderr=subprocess.PIPE if out_file else subprocess.STDOUT,
        preexec_fn=_limiter(memory))
    CURRENT_CHILD = proc.pid
    timed_out = False
    try:
        out, err = proc.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    if kill_leftovers:
        _kill_group(proc.pid)
    CURRENT_CHILD = None
    if out_file:
        out_file.close()
        out = err
    text = (out or b"").decode("utf-8", "replace")
    if len(text) > 20000:
        text = text[:10000] + "\n[...]\n" + text[-10000:]
    if cwd:
        _kill_strays(cwd)
    return Result(cmd, proc.returncode, text, timed_out, time.monotonic() - start, timeout)


def _kill_strays(cwd):
    """Kills the processes still working in `cwd`, a case folder of this
    run's own temporary folder: ranks that mpirun started in sessions of
    their own and left behind."""
    cwd = os.path.realpath(cwd)
    if not WORK_TMP or not cwd.startswith(os.path.realpath(WORK_TMP) + os.sep):
        return
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == cwd:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def classify(res, expect_failure_message=True):
    """(status, diagnosis) of one tool run, before any result check."""
    if res.timed_out:
        return "hang", f"no exit within {res.timeout:.0f} s"
    if res.rc is not None and res.rc < 0:
        return "crash", f"killed by signal {signal.Signals(-res.rc).name}"
    for marker in CRASH_MARKERS:
        if marker in res.out:
            line = next((l for l in res.out.splitlines() if marker in l), marker)
            return "crash", f"crash report: {line.strip()[:200]}"
    if res.rc == 0:
        return "accepted", ""
    if "error" in res.out.lower():
        line = next((l for l in res.out.splitlines() if "error" in l.lower()), "")
        return "clean", line.strip()[:200]
    if res.out.strip():
        line = res.out.strip().splitlines()[0]
        return "clean", f"(no 'error' in the message) {line.strip()[:200]}"
    if expect_failure_message:
        return "crash", f"exit code {res.rc} without an error message"
    return "clean", f"exit code {res.rc}"


def worst(*pairs):
    return max(pairs, key=lambda p: SEVERITY[p[0]])


class Recorder:
    """Counts the cases of one category and saves the non-clean ones."""

    def __init__(self, category, out_dir, tools, budget, max_cases):
        self.category = category
        self.out_dir = Path(out_dir) / category
        self.tools = str(tools)
        self.rows = {}  # row of the table (the category, or category:kind) -> counts
        self.tried = 0
        self.findings = []
        self.deadline = time.monotonic() + budget
        self.max_cases = max_cases

    def seen(self, data):
        """True if these mutant bytes were tried before (not counted again)."""
        import hashlib
        if not hasattr(self, "_seen"):
            self._seen = set()
        key = hashlib.sha1(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")).digest()
        if key in self._seen:
            return True
        self._seen.add(key)
        return False

    def more(self):
        return time.monotonic() < self.deadline and (
            not self.max_cases or self.tried < self.max_cases)

    def record(self, name, status, diagnosis, case_dir=None, runs=(), note="", keep=False,
               row=None):
        """Counts a case under `row` (default: the category). keep: save a
        reproducer for a clean case too (a valid input refused)."""
        self.tried += 1
        counts = self.rows.setdefault(row or self.category, {s: 0 for s in STATUSES})
        counts[status] += 1
        self.out_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir.parent / f"{self.category}.log", "a") as log:
            log.write(f"{self.tried}\t{status}\t{name}\t{diagnosis}\n")
        if status in ("clean", "accepted") and not keep:
            return
        dest = self.out_dir / f"{self.tried:04d}-{_slug(name)}"
        if dest.exists():
            shutil.rmtree(dest)
        if case_dir and Path(case_dir).is_dir():
            shutil.copytree(case_dir, dest, symlinks=True,
                            ignore=shutil.ignore_patterns("out*", "*.tmp.*"))
        else:
            dest.mkdir(parents=True)
        lines = ["#!/bin/sh", f"# {self.category}: {name}", f"# {status}: {diagnosis}"]
        if note:
            lines += [f"# {l}" for l in note.splitlines()]
        lines += ['cd "$(dirname "$0")"', f'T="${{OF_TOOLS_DIR:-{self.tools}}}"']
        log = []
        for res in runs:
            lines.append(self._shell(res.cmd, case_dir))
            log.append(f"$ {self._shell(res.cmd, case_dir)}\n"
                       f"[exit {res.rc}{', timed out' if res.timed_out else ''}, "
                       f"{res.seconds:.1f} s]\n{res.out}\n")
        (dest / "repro.sh").write_text("\n".join(lines) + "\n")
        (dest / "repro.sh").chmod(0o755)
        (dest / "output.txt").write_text("\n".join(log))
        self.findings.append({"name": name, "status": status, "diagnosis": diagnosis,
                              "repro": str(dest / "repro.sh"), "row": row or self.category})

    def _shell(self, cmd, case_dir):
        words = []
        for c in cmd:
            c = str(c)
            if c.startswith(self.tools + "/"):
                words.append('"$T"/' + shlex.quote(c[len(self.tools) + 1:]))
                continue
            if case_dir:
                c = c.replace(str(case_dir) + "/", "./").replace(str(case_dir), ".")
            words.append(shlex.quote(c))
        return " ".join(words)

    def summary(self):
        rows = self.rows or {self.category: {s: 0 for s in STATUSES}}
        return {"category": self.category, "tried": self.tried,
                "rows": {r: dict(c, tried=sum(c.values())) for r, c in sorted(rows.items())},
                "findings": self.findings}


def _slug(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:60].strip("-") or "case"


def fresh_dir(root, name):
    path = Path(root) / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# --------------------------------------------------------------------------
# Programs and plans

SMALL = """func.func @main(%x: tensor<4x8xf32> {of.name = "x"}, %w: tensor<8x16xf32> {of.name = "w"}) -> (tensor<4x16xf32> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = of.relu %y : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = of.exp %r : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %e : tensor<4x16xf32>
}
"""

SCALARS = """func.func @f(%n: tensor<i64> {of.name = "n"}, %s: tensor<f32> {of.name = "s"})
    -> (tensor<i64> {of.name = "n2"}, tensor<f32> {of.name = "s2"}) {
  %a = of.add %n, %n : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %b = of.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %a, %b : tensor<i64>, tensor<f32>
}
"""

SOFTMAX = """func.func @main(%x: tensor<6x10xf32> {of.name = "x"}, %b: tensor<10xf32> {of.name = "b"}) -> (tensor<6x10xf32> {of.name = "p"}, tensor<6xf32> {of.name = "s"}) {
  %a = of.add %x, %b : (tensor<6x10xf32>, tensor<10xf32>) -> tensor<6x10xf32>
  %p = of.softmax %a {axis = 1 : i64} : (tensor<6x10xf32>) -> tensor<6x10xf32>
  %s = of.reduce_sum %p {axes = array<i64: 1>} : (tensor<6x10xf32>) -> tensor<6xf32>
  return %p, %s : tensor<6x10xf32>, tensor<6xf32>
}
"""

# loss = mean(cross_entropy(relu(x w0 + b0) w1 + b1, y)), trained with AdamW.
MLP = """func.func @mlp(%x: tensor<6x12xf32> {of.name = "x"}, %y: tensor<6xi64> {of.name = "y"}, %w0: tensor<12x16xf32> {of.name = "w0", of.param}, %b0: tensor<16xf32> {of.name = "b0", of.param}, %w1: tensor<16x5xf32> {of.name = "w1", of.param}, %b1: tensor<5xf32> {of.name = "b1", of.param}) -> (tensor<f32> {of.name = "loss"}) {
  %m0 = of.matmul %x, %w0 : (tensor<6x12xf32>, tensor<12x16xf32>) -> tensor<6x16xf32>
  %a0 = of.add %m0, %b0 : (tensor<6x16xf32>, tensor<16xf32>) -> tensor<6x16xf32>
  %r0 = of.relu %a0 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %m1 = of.matmul %r0, %w1 : (tensor<6x16xf32>, tensor<16x5xf32>) -> tensor<6x5xf32>
  %a1 = of.add %m1, %b1 : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %ce = of.cross_entropy %a1, %y : (tensor<6x5xf32>, tensor<6xi64>) -> tensor<6xf32>
  %l = of.reduce_mean %ce {axes = array<i64: 0>} : (tensor<6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
"""

# Two ranks: x split by rows, w broadcast; y split by rows.
TWO_RANKS = """of.placement @p {device = "cpu", shape = [2]}
func.func @main(%x: tensor<4x8xf32, #of.sbp<@p, [S(0)]>> {of.name = "x"}, %w: tensor<8x6xf32, #of.sbp<@p, [B]>> {of.name = "w"}) -> (tensor<4x6xf32, #of.sbp<@p, [S(0)]>> {of.name = "y"}) {
  %y = of.matmul %x, %w : (tensor<4x8xf32, #of.sbp<@p, [S(0)]>>, tensor<8x6xf32, #of.sbp<@p, [B]>>) -> tensor<4x6xf32, #of.sbp<@p, [S(0)]>>
  return %y : tensor<4x6xf32, #of.sbp<@p, [S(0)]>>
}
"""

BROADCAST2 = """of.placement @p {device = "cpu", shape = [2]}
func.func @main(%x: tensor<4xf32, #of.sbp<@p, [B]>> {of.name = "x"})
    -> (tensor<4xf32, #of.sbp<@p, [B]>> {of.name = "y"}) {
  %y = of.add %x, %x : (tensor<4xf32, #of.sbp<@p, [B]>>, tensor<4xf32, #of.sbp<@p, [B]>>) -> tensor<4xf32, #of.sbp<@p, [B]>>
  return %y : tensor<4xf32, #of.sbp<@p, [B]>>
}
"""


class Tools:
    def __init__(self, directory):
        self.dir = str(Path(directory).resolve())

    def __getattr__(self, name):
        return os.path.join(self.dir, name.replace("_", "-"))


def compile_plan(tools, mlir_text, directory, name, pipeline="cpu"):
    directory = Path(directory)
    src = directory / f"{name}.mlir"
    src.write_text(mlir_text)
    lowered = directory / f"{name}.plan.mlir"
    res = run([tools.of_opt, src, f"--of-pipeline={pipeline}"], stdout_path=lowered,
              timeout=120)
    if res.rc != 0:
        raise RuntimeError(f"compiling {name}: {res.out}")
    plan = directory / f"{name}.ofp"
    res = run([tools.of_translate, "--of-plan-to-binary", lowered, "-o", plan], timeout=60)
    if res.rc != 0:
        raise RuntimeError(f"translating {name}: {res.out}")
    return plan


def load_outputs(directory):
    import numpy as np
    directory = Path(directory)
    if not directory.is_dir():
        return {}
    outs = {}
    for p in sorted(directory.glob("*.npy")):
        try:
            outs[p.stem] = np.load(p, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - an unreadable output is a finding
            outs[p.stem] = f"unreadable: {e}"
    return outs


def same_outputs(a, b, renamed_ok=False):
    """'' if the two {name: array} maps are equal (bit for bit, NaN equal to
    NaN), else what differs. renamed_ok: outputs renamed or left out (names
    are data of a plan) are not a difference if every value is one of b's."""
    import numpy as np
    if renamed_ok and sorted(a) != sorted(b):
        rest = [v for v in b.values()]
        for k, x in a.items():
            match = next((i for i, y in enumerate(rest) if not same_outputs({"v": x}, {"v": y})), None)
            if match is None:
                return f"output {k} (renamed) matches no original output"
            rest.pop(match)
        return ""
    if sorted(a) != sorted(b):
        return f"outputs {sorted(a)} instead of {sorted(b)}"
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, str) or isinstance(y, str):
            return f"output {k}: {x if isinstance(x, str) else y}"
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"output {k}: {x.dtype}{list(x.shape)} instead of {y.dtype}{list(y.shape)}"
        if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            diff = np.argwhere(~((x == y) | ((x != x) & (y != y))))
            return f"output {k} differs at {len(diff)} of {x.size} elements (first {diff[0].tolist()})"
    return ""


# --------------------------------------------------------------------------
# a. of-opt mutants

INTERESTING_INTS = ["0", "-1", "1", "2147483648", "4294967296", "1099511627776",
                    "4611686018427387904", "9223372036854775807", "18446744073709551616"]
ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i64", "i32", "i8", "i1", "index", "ui8",
                 "i7", "f8E4M3FN", "complex<f32>", "none", "tensor<2xf32>"]
TYPE_RE = re.compile(r"(?<![\w.])(f32|f16|bf16|f64|i64|i32|i8|i1|index)(?![\w])")
SBP_RE = re.compile(r"S\((-?\d+)\)|(?<=[\[, ])(B|P|P\(max\))(?=[\],])")
SSA_RE = re.compile(r"%[A-Za-z_0-9]+")
OF_OP_RE = re.compile(r"\bof\.([a-z_0-9]+)\b")
OF_OPS = ["add", "mul", "sub", "div", "matmul", "relu", "exp", "softmax", "reduce_sum",
          "reduce_mean", "boxing", "transpose", "reshape", "constant", "cross_entropy",
          "broadcast", "concat", "slice", "conv2d", "layer_norm", "gelu", "send", "recv",
          "all_reduce", "embedding", "placement", "sbp", "nonexistent"]
SEED_DIRS = ["Dialect", "Conversion", "Pipeline", "Target", "Tools/Inputs",
             "Runtime", "Runtime/Inputs", "E2E"]
PIPELINES = [["--of-pipeline=cpu"]] * 6 + [[], ["--of-pipeline=cpu,train=adamw"],
                                           ["--of-pipeline=cpu,train=sgd,momentum=0.9"],
                                           ["--of-pipeline=cpu,stop-after=sbp"],
                                           ["--of-pipeline=cpu,amp=bf16"],
                                           ["--canonicalize", "--cse"],
                                           ["--of-pipeline=cuda,stop-after=plan"]]


def mlir_seeds(root):
    """The chunks (split at `// -----`) of the .mlir files under test/, with
    comment lines removed: the seeds of the mutants."""
    seeds = []
    test = Path(root) / "test"
    files = sorted({p for d in SEED_DIRS for p in (test / d).rglob("*.mlir")})
    for path in files:
        text = path.read_text(errors="replace")
        for i, chunk in enumerate(re.split(r"^// -----\s*$", text, flags=re.M)):
            lines = [l for l in chunk.splitlines()
                     if not l.lstrip().startswith("//") and l.strip()]
            if lines:
                seeds.append((f"{path.relative_to(test)}#{i}", "\n".join(lines) + "\n"))
    return seeds


def _int_spans(text):
    spans = []
    for m in re.finditer(r"-?\d+", text):
        a, b = m.span()
        prev = text[a - 1] if a else " "
        nxt = text[b] if b < len(text) else " "
        if prev in "%@#_.^\"" or nxt in "._" or nxt == "e" and text[b:b + 2] != "e ":
            continue
        if (prev.isalpha() and prev not in "xi") or (nxt.isalpha() and nxt != "x"):
            continue
        if prev == "i":  # i32 in a type: the width
            continue
        spans.append((a, b))
    return spans


def mutate_mlir(rng, text):
    """One text mutation; returns (kind, new text)."""
    if not text:  # an earlier mutation deleted everything
        return "append a brace", "{"
    lines = text.splitlines(keepends=True)
    kind = rng.choice(["delete-line", "duplicate-line", "swap-lines", "integer",
                       "integer", "integer", "type", "type", "sbp", "sbp",
                       "drop-bracket", "truncate", "ssa", "op-name", "nest",
                       "attribute", "bytes", "placement-shape"])
    if kind == "delete-line" and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
        return kind, "".join(lines)
    if kind == "duplicate-line":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return kind, "".join(lines)
    if kind == "swap-lines" and len(lines) > 2:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
        return kind, "".join(lines)
    if kind == "integer":
        spans = _int_spans(text)
        if spans:
            a, b = rng.choice(spans)
            value = rng.choice(INTERESTING_INTS + [str(int(text[a:b]) + rng.choice([-1, 1]))])
            return f"integer {text[a:b]}->{value}", text[:a] + value + text[b:]
    if kind == "type":
        ms = list(TYPE_RE.finditer(text))
        if ms:
            m = rng.choice(ms)
            if rng.random() < 0.5:  # every occurrence of the type
                new = rng.choice(ELEMENT_TYPES)
                return f"type all {m.group(1)}->{new}", TYPE_RE.sub(
                    lambda x: new if x.group(1) == m.group(1) else x.group(1), text)
            new = rng.choice(ELEMENT_TYPES)
            return f"type {m.group(1)}->{new}", text[:m.start()] + new + text[m.end():]
    if kind == "sbp":
        ms = list(SBP_RE.finditer(text))
        if ms:
            m = rng.choice(ms)
            new = rng.choice(["S(7)", "S(-1)", "S(2147483648)", "S(1)", "S(0)", "B", "P",
                              "P(max)", "P(min)", "S(0), S(0)", "", "S(9223372036854775807)"])
            return f"sbp {m.group(0)}->{new}", text[:m.start()] + new + text[m.end():]
    if kind == "drop-bracket":
        pos = [i for i, c in enumerate(text) if c in "}){]>(<["]
        if pos:
            i = rng.choice(pos)
            return f"drop {text[i]!r}", text[:i] + text[i + 1:]
    if kind == "truncate" and len(text) > 2:
        i = rng.randrange(1, len(text))
        return f"truncate at {i}", text[:i]
    if kind == "ssa":
        names = sorted(set(SSA_RE.findall(text)))
        if len(names) > 1:
            a, b = rng.sample(names, 2)
            ms = [m for m in SSA_RE.finditer(text) if m.group(0) == a]
            m = rng.choice(ms)
            return f"ssa {a}->{b}", text[:m.start()] + b + text[m.end():]
    if kind == "op-name":
        ms = list(OF_OP_RE.finditer(text))
        if ms:
            m = rng.choice(ms)
            new = rng.choice(OF_OPS)
            return f"op of.{m.group(1)}->of.{new}", text[:m.start()] + "of." + new + text[m.end():]
    if kind == "nest":
        depth = rng.choice([100, 999, 1001, 3000])
        wrap = rng.choice(["module {", "builtin.module {"])
        return f"nest {depth} modules", wrap * depth + "\n" + text + "}" * depth + "\n"
    if kind == "attribute":
        ms = list(re.finditer(r"\{[^{}\n]*\}", text))
        if ms:
            m = rng.choice(ms)
            new = rng.choice(["{}", "{of.name = \"\"}", "{axes = array<i64: 0, 0>}",
                              "{axis = 99 : i64}", "{axes = array<i64: -9>}",
                              "{of.param, of.param}", "{device = \"tpu\", shape = [2]}",
                              "{device = \"cpu\", shape = [2], ranks = [0, 0]}",
                              "{device = \"cpu\", shape = [3], ranks = [0, 1]}",
                              "{of.name = \"" + "x" * 5000 + "\"}"])
            return f"attribute {m.group(0)[:40]}->{new[:40]}", text[:m.start()] + new + text[m.end():]
    if kind == "bytes":
        i = rng.randrange(len(text))
        junk = rng.choice(["\x00", "\xff", "\u202e", "\ud7ff", "\t", "\\", "\"", "#", "^bb0:"])
        return f"insert {junk!r} at {i}", text[:i] + junk + text[i:]
    if kind == "placement-shape":
        ms = list(re.finditer(r"shape = \[[^\]]*\]", text))
        if ms:
            m = rng.choice(ms)
            new = rng.choice(["shape = [1099511627776]", "shape = [4294967296, 4294967296]",
                              "shape = [0]", "shape = [-2]", "shape = []",
                              "shape = [65536, 65536]", "shape = [2, 2, 2, 2, 2, 2, 2, 2, 2]"])
            return f"placement {m.group(0)}->{new}", text[:m.start()] + new + text[m.end():]
    # Fallback: delete a random span.
    a = rng.randrange(len(text))
    b = min(len(text), a + rng.randrange(1, 40))
    return f"delete chars [{a}, {b})", text[:a] + text[b:]


def generated_mlir(rng):
    """Extreme programs written from scratch: (kind, text)."""
    kind = rng.choice(["chain", "brackets", "tuple", "huge-tensor", "huge-placement",
                       "many-args", "deep-regions"])
    if kind == "chain":
        n = rng.choice([500, 2000, 4000])
        body = "".join(f"  %v{i + 1} = of.{rng.choice(['relu', 'exp', 'neg', 'tanh'])} %v{i} : "
                       f"(tensor<8xf32>) -> tensor<8xf32>\n" for i in range(n))
        return f"chain of {n} elementwise ops", (
            "func.func @main(%v0: tensor<8xf32>) -> tensor<8xf32> {\n" + body +
            f"  return %v{n} : tensor<8xf32>\n}}\n")
    if kind == "brackets":
        n = rng.choice([999, 1000, 1001, 20000])
        o, c = rng.choice([("[", "]"), ("(", ")"), ("{", "}"), ("<", ">")])
        if o == "[":
            return f"{n} nested [", f"func.func private @f() attributes {{a = {'[' * n}1{']' * n}}}\n"
        if o == "(":
            return f"{n} nested (", ("func.func private @f() attributes {a = affine_map<(d0) -> "
                                     f"({'(' * n}d0{')' * n})>}}\n")
        if o == "{":
            return f"{n} nested {{", f"func.func private @f() attributes {{a = {'{b = ' * n}1{'}' * n}}}\n"
        return f"{n} nested <", f"func.func private @f(%a: {'tuple<' * n}f32{'>' * n})\n"
    if kind == "tuple":
        n = rng.choice([500, 999])
        return f"{n} nested tuple types through a pipeline", (
            f"func.func @f(%a: {'tuple<' * n}f32{'>' * n}) {{\n  return\n}}\n")
    if kind == "huge-tensor":
        d = rng.choice(["4611686018427387904", "2147483648x2147483648", "9223372036854775807",
                        "4294967296x4294967296x4", "1099511627776x1099511627776",
                        "65536x65536x65536", "0x0", "0"])
        t = f"tensor<{d}xf32>"
        return f"tensor {t}", (
            f"func.func @main(%x: {t}) -> {t} {{\n  %y = of.relu %x : ({t}) -> {t}\n"
            f"  return %y : {t}\n}}\n")
    if kind == "huge-placement":
        shape = rng.choice(["[1099511627776]", "[4294967296, 4294967296]", "[1048577]",
                            "[1048576]", "[65536, 65536]", "[3037000500, 3037000500]"])
        t = "tensor<4xf32, #of.sbp<@p, [B]>>"
        if shape.count(",") == 1:
            t = "tensor<4xf32, #of.sbp<@p, [B, B]>>"
        return f"placement shape {shape}", (
            f'of.placement @p {{device = "cpu", shape = {shape}}}\n'
            f"func.func @main(%x: {t}) -> {t} {{\n  %y = of.add %x, %x : ({t}, {t}) -> {t}\n"
            f"  return %y : {t}\n}}\n")
    if kind == "many-args":
        n = rng.choice([2000, 10000])
        args = ", ".join(f"%a{i}: tensor<2xf32>" for i in range(n))
        return f"{n} arguments", f"func.func @main({args}) -> tensor<2xf32> {{\n  return %a0 : tensor<2xf32>\n}}\n"
    n = rng.choice([200, 999, 2000])
    inner = "%c = arith.constant 1.0 : f32\n"
    for _ in range(n):
        inner = f"scf.execute_region {{\n{inner}scf.yield\n}}\n"
    return f"{n} nested regions", f"func.func @main() {{\n{inner}return\n}}\n"


def attack_of_opt(rec, tools, rng, work):
    seeds = mlir_seeds(SOURCE_ROOT)
    by_file = {}
    for seed_name, text in seeds:  # a file, then a chunk: invalid.mlir counts once
        by_file.setdefault(seed_name.split("#")[0], []).append((seed_name, text))
    files = sorted(by_file)
    while rec.more():
        case = fresh_dir(work, "case")
        if rng.random() < 0.12:
            kind, text = generated_mlir(rng)
            name = f"generated {kind}"
        else:
            seed_name, text = rng.choice(by_file[rng.choice(files)])
            kinds = []
            for _ in range(rng.choice([1, 1, 1, 2, 3])):
                kind, text = mutate_mlir(rng, text)
                kinds.append(kind)
            name = f"{seed_name}: {'; '.join(kinds)}"
        options = rng.choice(PIPELINES)
        if rec.seen(" ".join(options) + "\n" + text):
            continue
        out = case / "out.mlir"
        (case / "input.mlir").write_bytes(text.encode("utf-8", "surrogatepass"))
        res = run([tools.of_opt, case / "input.mlir", *options, "-o", out], cwd=case)
        status, why = classify(res)
        runs = [res]
        if status == "accepted" and options and options[0].startswith("--of-pipeline=cpu") \
                and "stop-after" not in options[0] and rng.random() < 0.5:
            res2 = run([tools.of_translate, "--of-plan-to-binary", out, "-o", case / "p.ofp"],
                       cwd=case)
            runs.append(res2)
            status, why = worst((status, why), classify(res2))
        if out.exists():
            out.unlink()  # the reproducer makes it again
        rec.record(name, status, why, case, runs)


# --------------------------------------------------------------------------
# b. corrupt plans

def read_header(data):
    fields = struct.unpack_from("<8sIIQQQQQQ", data, 0)
    keys = ["magic", "version", "headerSize", "metadataOffset", "metadataSize",
            "blobsOffset", "blobsSize", "fileSize", "checksum"]
    return dict(zip(keys, fields))


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def fix_checksum(data):
    """Sets the header's checksum (and keeps fileSize as the header says)."""
    h = read_header(data)
    size = len(data)
    start = h["headerSize"] if 0 < h["headerSize"] <= size else 64
    end = min(h["fileSize"], size) if h["fileSize"] >= start else size
    struct.pack_into("<Q", data, 56, fnv1a(data[start:end]))
    return data


def elf_regions(data, base):
    """Byte ranges [a, b) of the ELF at `base`: header, program headers,
    section headers, dynamic section, .dynsym/.dynstr, text."""
    regions = {"elf-header": (base, base + 64)}
    try:
        (e_phoff, e_shoff) = struct.unpack_from("<QQ", data, base + 32)
        e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx = struct.unpack_from(
            "<HHHHH", data, base + 54)
        regions["elf-phdrs"] = (base + e_phoff, base + e_phoff + e_phentsize * e_phnum)
        regions["elf-shdrs"] = (base + e_shoff, base + e_shoff + e_shentsize * e_shnum)
        for i in range(e_phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
                "<IIQQQQ", data, base + e_phoff + i * e_phentsize)
            if p_type == 2:  # PT_DYNAMIC
                regions["elf-dynamic"] = (base + p_offset, base + p_offset + p_filesz)
        names_off = None
        if e_shstrndx < e_shnum:
            names_off = struct.unpack_from("<Q", data, base + e_shoff + e_shstrndx * e_shentsize + 24)[0]
        for i in range(e_shnum):
            sh = struct.unpack_from("<IIQQQQ", data, base + e_shoff + i * e_shentsize)
            sh_name, sh_type, _, _, sh_offset, sh_size = sh
            if names_off is None:
                continue
            end = data.index(b"\0", base + names_off + sh_name)
            sname = bytes(data[base + names_off + sh_name:end]).decode("latin-1")
            key = {".text": "elf-text", ".dynsym": "elf-dynsym", ".dynstr": "elf-dynstr",
                   ".rela.dyn": "elf-rela", ".rela.plt": "elf-rela", ".rodata": "elf-rodata",
                   ".gnu.hash": "elf-hash", ".hash": "elf-hash"}.get(sname)
            if key and sh_size and sh_type != 8:
                regions[key] = (base + sh_offset, base + sh_offset + sh_size)
    except (struct.error, ValueError, IndexError):
        pass
    return {k: (a, b) for k, (a, b) in regions.items() if 0 <= a < b <= len(data)}


INTERESTING_WORDS = [0, 1, 2, 3, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000,
                     0xFFFFFFFF, 0xFFFFFFFE, 64, 4096]


def mutate_plan(rng, plan, other, strategy):
    """(description, bytes) of one mutant of `plan` with the checksum fixed."""
    data = bytearray(plan)
    h = read_header(data)
    meta = (h["metadataOffset"], h["metadataOffset"] + h["metadataSize"])
    blobs = (h["blobsOffset"], h["blobsOffset"] + h["blobsSize"])
    elf = data.find(b"\x7fELF", blobs[0])
    regions = elf_regions(data, elf) if elf >= 0 else {}

    def flip(lo, hi, n):
        where = []
        for _ in range(n):
            i = rng.randrange(lo, hi)
            data[i] ^= 1 << rng.randrange(8)
            where.append(i)
        return f"bits flipped at {where}"

    def word(lo, hi, size):
        i = rng.randrange(lo, max(lo + 1, hi - size + 1)) & ~(size - 1)
        i = max(i, lo)
        old = int.from_bytes(data[i:i + size], "little")
        if rng.random() < 0.4:
            new = (old + rng.choice([-1, 1, -8, 8, 64, 4096])) % (1 << (8 * size))
        else:
            new = rng.choice(INTERESTING_WORDS + [(1 << (8 * size)) - 1]) % (1 << (8 * size))
        data[i:i + size] = new.to_bytes(size, "little")
        return f"u{8 * size} at {i}: {old:#x} -> {new:#x}"

    if strategy == "metadata-bits":
        what = flip(*meta, rng.choice([1, 1, 2, 4]))
    elif strategy == "metadata-word":
        what = word(*meta, rng.choice([4, 4, 8, 2, 1]))
    elif strategy == "metadata-swap":
        a, b = meta
        n = rng.choice([4, 8, 16])
        i, j = rng.randrange(a, b - n), rng.randrange(a, b - n)
        data[i:i + n], data[j:j + n] = data[j:j + n], data[i:i + n]
        what = f"{n} bytes at {i} and {j} swapped"
    elif strategy == "metadata-splice":
        oh = read_header(other)
        om = other[oh["metadataOffset"]:oh["metadataOffset"] + oh["metadataSize"]]
        n = rng.randrange(4, 64)
        i = rng.randrange(*meta)
        j = rng.randrange(0, max(1, len(om) - n))
        chunk = om[j:j + n]
        data[i:i + len(chunk)] = chunk
        data = data[:len(plan)]
        what = f"{len(chunk)} bytes of another plan's metadata at {i}"
    elif strategy.startswith("elf-") and strategy in regions:
        a, b = regions[strategy]
        if strategy in ("elf-dynamic", "elf-rela", "elf-phdrs", "elf-shdrs", "elf-header",
                        "elf-dynsym") and rng.random() < 0.6:
            what = strategy + " " + word(a, b, rng.choice([8, 4, 2]))
        elif strategy == "elf-dynstr" and rng.random() < 0.5:
            names = [m for m in re.finditer(rb"[a-z_][a-z_0-9]{2,}", bytes(data[a:b]))]
            if names:
                m = rng.choice(names)
                new = rng.choice([b"system", b"abort", b"dlopen", b"fopen", b"exit",
                                  b"getenv", b"malloc", b"printf"])
                new = (new + b"\0" * len(m.group(0)))[:len(m.group(0))]
                data[a + m.start():a + m.end()] = new
                shown = new.rstrip(bytes(1)).decode()
                what = f"dynstr {m.group(0).decode()} -> {shown}"
            else:
                what = strategy + " " + flip(a, b, 1)
        else:
            what = strategy + " " + flip(a, b, rng.choice([1, 2, 8]))
    elif strategy == "elf-any" and elf >= 0:
        what = "elf " + flip(elf, blobs[1], rng.choice([1, 4, 16]))
    elif strategy == "blob-bits":
        # Constants and other blobs, not the kernel object (elf-*).
        end = elf if elf >= 0 else blobs[1]
        if end - blobs[0] >= 1:
            what = "blobs " + flip(blobs[0], end, rng.choice([1, 4]))
        else:
            what = "metadata " + flip(*meta, 1)
    elif strategy == "header":
        field = rng.choice(["metadataOffset", "metadataSize", "blobsOffset", "blobsSize",
                            "headerSize"])
        off = {"headerSize": 12, "metadataOffset": 16, "metadataSize": 24,
               "blobsOffset": 32, "blobsSize": 40}[field]
        size = 4 if field == "headerSize" else 8
        old = int.from_bytes(data[off:off + size], "little")
        new = rng.choice([0, 1, 63, 64, 65, old - 1, old + 1, old + 64, old - 64, len(data),
                          len(data) + 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1, 2 ** 64 - 64]) \
            % (1 << (8 * size))
        data[off:off + size] = new.to_bytes(size, "little")
        what = f"header {field} {old} -> {new}"
    elif strategy == "resize":
        # Truncate or extend the file and make the header agree.
        if rng.random() < 0.5:
            cut = rng.randrange(64, len(data))
            data = data[:cut]
            what = f"truncated to {cut} bytes, sizes fixed"
        else:
            extra = rng.choice([1, 64, 4096])
            data += bytes(extra)
            what = f"{extra} zero bytes appended, sizes fixed"
        struct.pack_into("<Q", data, 48, len(data))
        if blobs[0] <= len(data):
            struct.pack_into("<Q", data, 40, len(data) - blobs[0])
    else:
        what = flip(64, len(data), 1)
    return f"{strategy}: {what}", bytes(fix_checksum(data))


PLAN_STRATEGIES = (["metadata-bits"] * 4 + ["metadata-word"] * 6 + ["metadata-swap", "metadata-splice",
                   "blob-bits", "header", "header", "resize", "elf-header", "elf-phdrs",
                   "elf-shdrs", "elf-dynamic", "elf-dynamic", "elf-dynsym", "elf-dynstr",
                   "elf-rela", "elf-hash", "elf-any", "elf-text", "plan-text", "plan-text",
                   "plan-text", "plan-text"])


def mutate_plan_text(rng, text):
    """A semantic edit of the ofrt text of a plan (of-translate
    --of-binary-to-plan), translated back."""
    lines = text.splitlines(keepends=True)
    kind = rng.choice(["integer", "integer", "integer", "delete", "duplicate", "swap", "name"])
    if kind == "integer":
        spans = _int_spans(text)
        if spans:
            a, b = rng.choice(spans)
            value = rng.choice(["0", "1", "-1", "3", "4096", "2147483648", "3221225472",
                                "9223372036854775807", str(int(text[a:b]) * 2),
                                str(max(0, int(text[a:b]) - 1)), str(int(text[a:b]) + 1)])
            return f"plan-text integer {text[a:b]} -> {value}", text[:a] + value + text[b:]
    if kind == "delete" and len(lines) > 2:
        i = rng.randrange(len(lines))
        return f"plan-text line {i + 1} deleted", "".join(lines[:i] + lines[i + 1:])
    if kind == "duplicate":
        i = rng.randrange(len(lines))
        return f"plan-text line {i + 1} duplicated", "".join(lines[:i + 1] + lines[i:])
    if kind == "swap" and len(lines) > 2:
        i = rng.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        return f"plan-text lines {i + 1}, {i + 2} swapped", "".join(lines)
    names = sorted(set(re.findall(r'"([A-Za-z_][\w.]*)"', text)))
    if len(names) > 1:
        a, b = rng.sample(names, 2)
        return f"plan-text name {a} -> {b}", text.replace(f'"{a}"', f'"{b}"', 1)
    return "plan-text unchanged", text


def plan_programs(tools, work, rng):
    """[(name, plan path, {input: array}, run options, baseline outputs)]."""
    import numpy as np
    programs = []
    for name, text, inputs, extra in [
        ("small", SMALL, {"x": rng_array(rng, (4, 8)), "w": rng_array(rng, (8, 16))}, []),
        ("softmax", SOFTMAX, {"x": rng_array(rng, (6, 10)), "b": rng_array(rng, (10,))}, []),
        ("scalars", SCALARS, {}, ["--set", "n=21", "--set", "s=1.25"]),
    ]:
        d = fresh_dir(work, f"prog-{name}")
        plan = compile_plan(tools, text, d, name)
        args = list(extra)
        for k, v in inputs.items():
            np.save(d / f"{k}.npy", v)
            args += ["--input", f"{k}={k}.npy"]
        res = run([tools.of_run, plan, *args, "--output-dir", d / "out"], cwd=d)
        if res.rc != 0:
            raise RuntimeError(f"baseline run of {name}: {res.out}")
        programs.append((name, d, plan.read_bytes(), args, load_outputs(d / "out")))
    return programs


def rng_array(rng, shape, dtype="float32"):
    import numpy as np
    g = np.random.default_rng(rng.randrange(1 << 30))
    return g.standard_normal(shape).astype(dtype)


def attack_plans(rec, tools, rng, work):
    programs = plan_programs(tools, work, rng)
    texts = {}
    for name, d, plan, _, _ in programs:
        res = run([tools.of_translate, "--of-binary-to-plan", d / f"{name}.ofp"],
                  stdout_path=d / f"{name}.ofrt.mlir")
        texts[name] = (d / f"{name}.ofrt.mlir").read_text() if res.rc == 0 else None
    while rec.more():
        name, d, plan, args, baseline = rng.choice(programs)
        other = rng.choice([p for p in programs if p[0] != name])[2]
        strategy = rng.choice(PLAN_STRATEGIES)
        case = fresh_dir(work, "case")
        for f in d.glob("*.npy"):
            shutil.copy(f, case / f.name)
        runs = []
        if strategy == "plan-text":
            if not texts[name]:
                continue
            what, text = mutate_plan_text(rng, texts[name])
            if rec.seen(text):
                continue
            (case / "plan.mlir").write_text(text)
            res = run([tools.of_translate, "--of-plan-to-binary", case / "plan.mlir",
                       "-o", case / "p.ofp"], cwd=case)
            runs.append(res)
            status = classify(res)
            if status[0] != "accepted":
                rec.record(f"{name} {what}", *status, case, runs, row="plans:text")
                continue
        else:
            what, mutant = mutate_plan(rng, plan, other, strategy)
            if rec.seen(mutant):
                continue
            (case / "p.ofp").write_bytes(mutant)
        res = run([tools.of_run, case / "p.ofp", "--list"], cwd=case)
        runs.append(res)
        status = classify(res)
        res = run([tools.of_run, case / "p.ofp", *args, "--output-dir", case / "out"], cwd=case)
        runs.append(res)
        run_status = classify(res)
        if run_status[0] == "accepted":
            diff = same_outputs(load_outputs(case / "out"), baseline, renamed_ok=True)
            if diff:
                run_status = ("silent-wrong", f"exit 0 and {diff}")
        status = worst(status, run_status)
        row = ("plans:code" if strategy in ("elf-text", "elf-any", "elf-rodata") else
               "plans:text" if strategy == "plan-text" else "plans:bytes")
        rec.record(f"{name} {what}", *status, case, runs, row=row)


# --------------------------------------------------------------------------
# c. bad .npy inputs and --set values

def npy_bytes(header, data=b"", version=(1, 0), pad=True):
    if isinstance(header, dict):
        header = repr(header)
    h = header.encode("latin-1") if isinstance(header, str) else header
    if version[0] == 1:
        pre = 10
    else:
        pre = 12
    if pad:
        total = pre + len(h) + 1
        h += b" " * ((64 - total % 64) % 64) + b"\n"
    length = struct.pack("<H", len(h)) if version[0] == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + length + h + data


def npy_cases(x):
    """(name, bytes or a special marker) of bad files for input x (f32 4x8)."""
    import numpy as np
    raw = x.tobytes()
    good = {"descr": "<f4", "fortran_order": False, "shape": (4, 8)}

    def hdr(**kw):
        d = dict(good)
        d.update(kw)
        return d
    cases = [
        ("empty", b""),
        ("magic-only", b"\x93NUMPY"),
        ("truncated-header", npy_bytes(good, raw)[:20]),
        ("header-len-huge", b"\x93NUMPY\x01\x00\xff\xff" + b"{" * 100),
        ("v2-header-len-huge", b"\x93NUMPY\x02\x00\xff\xff\xff\xff" + b"{" * 100),
        ("version-9", npy_bytes(good, raw, version=(9, 0))),
        ("version-2", npy_bytes(good, raw, version=(2, 0))),
        ("version-3", npy_bytes(good, raw, version=(3, 0))),
        ("no-newline", npy_bytes(repr(good), raw, pad=False)),
        ("truncated-data", npy_bytes(good, raw[:-1])),
        ("trailing-data", npy_bytes(good, raw + b"\0")),
        ("dtype-f8", npy_bytes(hdr(descr="<f8"), raw * 2)),
        ("dtype-i4", npy_bytes(hdr(descr="<i4"), raw)),
        ("dtype-f2", npy_bytes(hdr(descr="<f2"), raw[:64])),
        ("dtype-object", npy_bytes(hdr(descr="|O"), raw)),
        ("dtype-struct", npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4, 8), }", raw)),
        ("dtype-garbage", npy_bytes(hdr(descr="<f4\x00"), raw)),
        ("dtype-unaligned-size", npy_bytes(hdr(descr="<V3"), raw)),
        ("big-endian", npy_bytes(hdr(descr=">f4"), x.byteswap().tobytes())),
        ("fortran-order", npy_bytes(hdr(fortran_order=True), np.asfortranarray(x).tobytes("F"))),
        ("shape-8x4", npy_bytes(hdr(shape=(8, 4)), raw)),
        ("shape-32", npy_bytes(hdr(shape=(32,)), raw)),
        ("shape-4x8x1", npy_bytes(hdr(shape=(4, 8, 1)), raw)),
        ("shape-scalar", npy_bytes(hdr(shape=()), raw[:4])),
        ("shape-negative", npy_bytes(hdr(shape=(-4, -8)), raw)),
        ("shape-huge", npy_bytes(hdr(shape=(2 ** 62, 2 ** 62)), raw)),
        ("shape-wraps-to-32", npy_bytes(hdr(shape=(2 ** 62 + 8, 4)), raw)),
        ("shape-wraps-to-4x8", npy_bytes(hdr(shape=(4 + 2 ** 64, 8)), raw)),
        ("shape-int64-max", npy_bytes(hdr(shape=(2 ** 63 - 1,)), raw)),
        ("shape-float", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4.0, 8), }", raw)),
        ("shape-list", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [4, 8], }", raw)),
        ("shape-many-dims", npy_bytes(hdr(shape=(1,) * 100 + (4, 8)), raw)),
        ("fortran-order-string", npy_bytes("{'descr': '<f4', 'fortran_order': 'False', 'shape': (4, 8), }", raw)),
        ("duplicate-key", npy_bytes("{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", raw)),
        ("missing-key", npy_bytes("{'descr': '<f4', 'shape': (4, 8), }", raw)),
        ("header-not-dict", npy_bytes("[1, 2, 3]", raw)),
        ("header-nested", npy_bytes("{'descr': " + "(" * 5000 + ")" * 5000 + ", 'fortran_order': False, 'shape': (4, 8), }", raw)),
        ("header-non-ascii", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), 'é': 1}".encode("utf-8"), raw)),
        ("header-nul", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }\x00", raw)),
        ("nan-inf-data", npy_bytes(good, np.array([[np.nan, np.inf, -np.inf, 1e38] * 2] * 4, np.float32).tobytes())),
        ("subnormal-data", npy_bytes(good, np.full((4, 8), 1e-45, np.float32).tobytes())),
    ]
    return cases


SPECIAL_FILES = ["directory", "fifo", "/dev/zero", "/dev/null", "symlink-loop", "dangling-link",
                 "unreadable"]


def strict_set(value, dtype):
    """The value a strict reader would take from --set NAME=value, or None
    where it must refuse: an i64 is an integer (written as one, or as a
    number with an integral value) within range; an f32 a number (decimal
    or hexadecimal) that does not overflow f32."""
    import numpy as np
    value = value.strip()
    if not value:
        return None
    try:
        v = float(value)
    except ValueError:
        try:
            v = float.fromhex(value)
        except ValueError:
            v = None
    if dtype == "i64":
        try:
            i = int(value, 10)
        except ValueError:
            if v is None or v != v or v in (float("inf"), float("-inf")) or v != int(v):
                return None
            i = int(v)
        return i if -2 ** 63 <= i < 2 ** 63 else None
    if v is None:
        return None
    with np.errstate(over="ignore"):
        f = np.float32(v)
    if not np.isfinite(f) and np.isfinite(v):
        return None
    return float(f)


SET_CASES = [("n", v) for v in ["3.7", "1e30", "nan", "inf", "0x10", "", " 1", "1_000", "+5",
                                "9223372036854775807", "9223372036854775808",
                                "-9223372036854775809", "1e3", "007", "1 2", "٣", "-0"]] + \
            [("s", v) for v in ["nan", "inf", "-inf", "1e39", "1e-50", "0x1p3", "", "1,5",
                                "1.5f", "3.4028235e38", "-0.0", "1e", "infinity", "NaN"]]


def attack_npy(rec, tools, rng, work):
    import numpy as np
    progs = {}
    for name, text in [("small", SMALL), ("scalars", SCALARS)]:
        d = fresh_dir(work, f"prog-{name}")
        progs[name] = compile_plan(tools, text, d, name)
    x = rng_array(rng, (4, 8))
    w = rng_array(rng, (8, 16))
    files = npy_cases(x) + [(s, None) for s in SPECIAL_FILES]
    for name, content in files:
        if not rec.more():
            break
        case = fresh_dir(work, "case")
        shutil.copy(progs["small"], case / "p.ofp")
        np.save(case / "w.npy", w)
        target = case / "x.npy"
        if content is not None:
            target.write_bytes(content)
        elif name == "directory":
            target.mkdir()
        elif name == "fifo":
            os.mkfifo(target)
        elif name.startswith("/dev/"):
            target = Path(name)
        elif name == "symlink-loop":
            os.symlink("x.npy", target)
        elif name == "dangling-link":
            os.symlink("nowhere.npy", target)
        elif name == "unreadable":
            np.save(target, x)
            target.chmod(0)
        res = run([tools.of_run, case / "p.ofp", "--input", f"x={target}", "--input", "w=w.npy",
                   "--output-dir", case / "out"], cwd=case, timeout=15)
        status = classify(res)
        if status[0] == "accepted":
            try:
                ref_x = (np.load(target, allow_pickle=False)
                         if content is not None or name == "unreadable" else None)
            except Exception as e:  # noqa: BLE001
                ref_x = f"numpy rejects it: {e}"
            if isinstance(ref_x, str) or ref_x is None:
                status = ("silent-wrong", f"of-run accepts the file; {ref_x}")
            elif ref_x.shape != (4, 8) or ref_x.dtype != np.float32:
                status = ("silent-wrong", f"of-run accepts {ref_x.dtype} {list(ref_x.shape)} for f32 [4, 8]")
            else:
                want = np.exp(np.maximum(ref_x.astype(np.float64) @ w.astype(np.float64), 0))
                got = load_outputs(case / "out").get("y")
                with np.errstate(invalid="ignore"):
                    ok = isinstance(got, np.ndarray) and got.shape == want.shape and np.allclose(
                        got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
                if not ok:
                    status = ("silent-wrong", "exit 0 and y differs from NumPy's exp(relu(x @ w))")
        if name == "unreadable":
            target.chmod(0o644)
        if name == "fifo" or name.startswith("/dev/"):
            if name == "fifo":
                target.unlink()
        rec.record(f"input x: {name}", *status, case, [res])

    for var, value in SET_CASES:
        if not rec.more():
            break
        case = fresh_dir(work, "case")
        shutil.copy(progs["scalars"], case / "p.ofp")
        other = ("s", "1.5") if var == "n" else ("n", "4")
        res = run([tools.of_run, case / "p.ofp", "--set", f"{var}={value}", "--set",
                   f"{other[0]}={other[1]}", "--output-dir", case / "out"], cwd=case)
        status = classify(res)
        want = strict_set(value, "i64" if var == "n" else "f32")
        plain = r"[+-]?[0-9]+" if var == "n" else r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
        if status[0] == "clean" and want is not None and re.fullmatch(plain, value):
            rec.record(f"--set {var}={value}", "clean", f"refuses a valid value: {status[1]}",
                       case, [res], keep=True)
            continue
        if status[0] == "accepted":
            out = load_outputs(case / "out").get(var + "2")
            if want is None:
                status = ("silent-wrong", f"--set {var}={value!r} accepted (read as {out!r}); a strict parse refuses it")
            else:
                ok = isinstance(out, np.ndarray) and (
                    (np.isnan(out) and want != want) if var == "s" and want != want else
                    (out == np.array(2 * want).astype(out.dtype)))
                if not ok:
                    status = ("silent-wrong", f"--set {var}={value!r}: got {out!r}, want 2 * {want!r}")
        rec.record(f"--set {var}={value}", *status, case, [res])

    # --set on a tensor, unknown names, malformed options.
    for args in (["--set", "x=1"], ["--set", "nosuch=1"], ["--set", "x"], ["--set", "=1"],
                 ["--input", "x"], ["--input", "=x.npy"], ["--input", "x=x.npy", "--input", "x=x.npy"],
                 ["--input", "x=x.npy", "--set", "x=2"]):
        if not rec.more():
            break
        case = fresh_dir(work, "case")
        shutil.copy(progs["small"], case / "p.ofp")
        np.save(case / "x.npy", x)
        np.save(case / "w.npy", w)
        full = args + (["--input", "w=w.npy"] if "w=w.npy" not in args else [])
        res = run([tools.of_run, case / "p.ofp", *full, "--output-dir", case / "out"], cwd=case)
        status = classify(res)
        if status[0] == "accepted" and args.count("--input") + args.count("--set") > 1:
            status = ("silent-wrong", "an input given twice is accepted (which one is used?)")
        rec.record("options " + " ".join(args), *status, case, [res])


# --------------------------------------------------------------------------
# d. corrupt checkpoints

def st_parse(data):
    n = struct.unpack_from("<Q", data, 0)[0]
    return n, json.loads(data[8:8 + n]), data[8 + n:]


def st_build(header, body, pad=True):
    h = json.dumps(header, separators=(",", ":")).encode() if not isinstance(header, bytes) else header
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + body


def mutate_checkpoint(rng, data):
    n, header, body = st_parse(data)
    names = [k for k in header if k != "__metadata__"]
    kind = rng.choice(["dtype", "shape", "offsets", "offsets", "remove", "add", "rename",
                       "step", "step", "metadata", "json", "header-len", "truncate",
                       "trailing", "data-bits", "duplicate-key", "deep-json", "header-type"])
    h = json.loads(json.dumps(header))
    t = rng.choice(names)
    if kind == "dtype":
        new = rng.choice(["F16", "F64", "BF16", "I64", "I32", "BOOL", "U8", "F8_E4M3", "XX", "", 7])
        old = h[t]["dtype"]
        h[t]["dtype"] = new
        return f"{t} dtype {old} -> {new}", st_build(h, body)
    if kind == "shape":
        old = h[t]["shape"]
        new = rng.choice([old[::-1], [int(__import__('math').prod(old))], [0], [-1] + old[1:],
                          [2 ** 62, 2 ** 62] if len(old) else [2 ** 62], [2 ** 64 + x for x in old],
                          old + [1], [1] + old, [], [x * 2 for x in old], ["4"] + old[1:]])
        h[t]["shape"] = new
        return f"{t} shape {old} -> {new}", st_build(h, body)
    if kind == "offsets":
        old = list(h[t]["data_offsets"])
        a, b = old
        new = rng.choice([[b, a], [a + 4, b + 4], [a - 4, b - 4], [a, b + 4], [a, b - 4],
                          [0, b - a], [a, 2 ** 64 - 1], [2 ** 63, 2 ** 63 + b - a], [-4, b],
                          [a + 1, b + 1], [a, a]])
        h[t]["data_offsets"] = new
        return f"{t} data_offsets {old} -> {new}", st_build(h, body)
    if kind == "remove":
        del h[t]
        return f"tensor {t} removed", st_build(h, body)
    if kind == "add":
        end = len(body)
        h["zz_extra"] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
        return "an extra tensor zz_extra", st_build(h, body + b"\0\0\0\0")
    if kind == "rename":
        new = rng.choice(["", t + "_", t.upper(), "__metadata__x", "a" * 4000, "w0\u0000"])
        h[new] = h.pop(t)
        return f"tensor {t} renamed {new[:20]!r}", st_build(h, body)
    if kind in ("step", "metadata"):
        meta = h.setdefault("__metadata__", {})
        if kind == "step":
            new = rng.choice(["-1", "1e3", "abc", "", "9223372036854775807", "9223372036854775808",
                              "18446744073709551616", " 2", "2.5", "0x10", 3, None, "02"])
            old = meta.get("of.step")
            if new is None:
                meta.pop("of.step", None)
            else:
                meta["of.step"] = new
            return f"of.step {old!r} -> {new!r}", st_build(h, body)
        new = rng.choice([{"x": 1}, [], "str", None, {"of.step": {"a": 1}}])
        h["__metadata__"] = new
        return f"__metadata__ -> {new!r}", st_build(h, body)
    if kind == "json":
        raw = json.dumps(header).encode()
        i = rng.randrange(len(raw))
        mutated = raw[:i] + rng.choice([b"", b"{", b"}", b"\"", b",", b"\xff", b"\x00"]) + raw[i + 1:]
        return f"header JSON byte {i} changed", st_build(mutated, body)
    if kind == "header-len":
        new = rng.choice([0, 1, n - 1, n + 1, n + 8, len(data), len(data) - 8, 2 ** 63, 2 ** 64 - 1,
                          100 * 2 ** 20])
        return f"header length {n} -> {new}", struct.pack("<Q", new) + data[8:]
    if kind == "truncate":
        cut = rng.randrange(0, len(data))
        return f"truncated to {cut} bytes", data[:cut]
    if kind == "trailing":
        return "8 trailing bytes", data + b"\0" * 8
    if kind == "data-bits":
        d = bytearray(data)
        i = rng.randrange(8 + n, len(d))
        d[i] ^= 0x40
        return f"data byte {i} changed (legitimately different values)", bytes(d)
    if kind == "duplicate-key":
        raw = json.dumps(header)
        entry = json.dumps({t: header[t]})[1:-1]
        raw = "{" + entry + "," + raw[1:]
        return f"tensor {t} listed twice", st_build(raw.encode(), body)
    if kind == "deep-json":
        deep = b"[" * 100000 + b"]" * 100000
        raw = json.dumps(header).encode()[:-1] + b',"deep":' + deep + b"}"
        return "a 100000-deep JSON array in the header", st_build(raw, body)
    new = rng.choice([[], "x", 1, None, {"dtype": "F32"}])
    h[t] = new
    return f"tensor {t} entry -> {new!r}", st_build(h, body)


def safetensors_verdict(path, original_specs):
    """(ok, why) of the `safetensors` package reading the file, and whether
    the tensors' names, dtypes and shapes are the original's."""
    try:
        from safetensors import safe_open
    except ImportError:
        return None, "safetensors is not installed"
    try:
        specs = {}
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata()
            for k in f.keys():
                a = f.get_tensor(k)
                specs[k] = (str(a.dtype), list(a.shape))
    except Exception as e:  # noqa: BLE001
        return False, f"safetensors rejects it: {str(e)[:150]}"
    if specs != original_specs:
        return True, "safetensors reads other tensors: " + ", ".join(
            f"{k}: {original_specs.get(k)} -> {specs.get(k)}" for k in sorted(set(specs) | set(original_specs))
            if specs.get(k) != original_specs.get(k))
    step = (meta or {}).get("of.step")
    if step is None or not re.fullmatch(r"\s*[0-9]+\s*", step) or int(step) >= 2 ** 63:
        return True, f"of.step is {step!r}"
    return True, ""


def attack_checkpoints(rec, tools, rng, work):
    import numpy as np
    d = fresh_dir(work, "prog-mlp")
    plan = compile_plan(tools, MLP, d, "mlp", pipeline="cpu,train=adamw")
    g = np.random.default_rng(rng.randrange(1 << 30))
    arrays = {"w0": (12, 16), "b0": (16,), "w1": (16, 5), "b1": (5,)}
    args = ["--entry", "mlp_train_step", "--set", "lr=0.01"]
    for k, shape in arrays.items():
        np.save(d / f"{k}.npy", (g.standard_normal(shape) * 0.3).astype(np.float32))
    np.save(d / "bx.npy", g.standard_normal((2, 6, 12)).astype(np.float32))
    np.save(d / "by.npy", g.integers(0, 5, (2, 6)).astype(np.int64))
    batches = ["--batch", "x=bx.npy", "--batch", "y=by.npy"]
    init = [a for k in arrays for a in ("--input", f"{k}={k}.npy")]
    res = run([tools.of_run, plan, *args, "--steps", "2", *init, *batches, "--save-state",
               "ck.safetensors", "--output-dir", "out0"], cwd=d, timeout=60)
    if res.rc != 0:
        raise RuntimeError(f"training for the checkpoint: {res.out}")
    ckpt = (d / "ck.safetensors").read_bytes()
    resume = [*args, "--steps", "1", *batches, "--load-state", "ck.safetensors"]
    res = run([tools.of_run, plan, *resume, "--output-dir", "base"], cwd=d, timeout=60)
    if res.rc != 0:
        raise RuntimeError(f"resuming the checkpoint: {res.out}")
    baseline = load_outputs(d / "base")
    from safetensors import safe_open
    with safe_open(str(d / "ck.safetensors"), framework="numpy") as f:
        original_specs = {k: (str(f.get_tensor(k).dtype), list(f.get_tensor(k).shape)) for k in f.keys()}
    while rec.more():
        case = fresh_dir(work, "case")
        for f in ("mlp.ofp", "bx.npy", "by.npy"):
            shutil.copy(d / f, case / f)
        what, data = mutate_checkpoint(rng, ckpt)
        if rec.seen(data):
            continue
        (case / "ck.safetensors").write_bytes(data)
        res = run([tools.of_run, "mlp.ofp", *resume, "--output-dir", case / "out"], cwd=case,
                  timeout=30)
        status = classify(res)
        if status[0] == "accepted":
            ok, why = safetensors_verdict(case / "ck.safetensors", original_specs)
            if ok is False:
                status = ("silent-wrong", f"of-run loads it; {why}")
            elif what == "an extra tensor zz_extra":
                pass  # by design: an entry loads the tensors it takes
            elif why and "legitimately" not in what:
                status = ("silent-wrong", f"of-run loads it; {why}")
            elif "legitimately" not in what and "of.step" not in what:
                diff = same_outputs(load_outputs(case / "out"), baseline)
                if diff:
                    status = ("silent-wrong", f"exit 0 and {diff}")
        rec.record(f"checkpoint {what}", *status, case, [res])


# --------------------------------------------------------------------------
# e. multi-rank faults

def mpirun_prefix():
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader",
           "--mca", "pml", "ob1"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def attack_mpi(rec, tools, rng, work):
    import numpy as np
    if shutil.which("mpirun") is None:
        print("mpi: mpirun is not installed; skipped", file=sys.stderr)
        return
    d = fresh_dir(work, "prog-mpi")
    two = compile_plan(tools, TWO_RANKS, d, "two")
    b2 = compile_plan(tools, BROADCAST2, d, "b2")
    b2mul = compile_plan(tools, BROADCAST2.replace("of.add", "of.mul"), d, "b2mul")
    one = compile_plan(tools, SMALL, d, "one")
    x = rng_array(rng, (4, 8))
    w = rng_array(rng, (8, 6))
    np.save(d / "x.npy", x)
    np.save(d / "x2.npy", x + 1)
    np.save(d / "w.npy", w)
    np.save(d / "w2.npy", w * 2)
    np.save(d / "w16.npy", rng_array(rng, (8, 16)))
    np.save(d / "a.npy", np.ones(4, np.float32))
    np.save(d / "b.npy", np.full(4, 2, np.float32))
    want = x.astype(np.float64) @ w.astype(np.float64)
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    inputs = ["--input", "x=x.npy", "--input", "w=w.npy"]

    def mpmd(plan_a, args_a, plan_b, args_b):
        return mpirun_prefix() + ["-n", "1", tools.of_run, plan_a, *args_a, "--timeout", "10",
                                  ":", "-n", "1", tools.of_run, plan_b, *args_b,
                                  "--timeout", "10"]

    scenarios = [
        ("2-rank plan on 2 ranks", [tools.of_run, "-n", "2", "two.ofp", *inputs], {}, "ok"),
        ("2-rank plan on 1 rank", [tools.of_run, "two.ofp", *inputs], {}, "fail"),
        ("2-rank plan with -n 1", [tools.of_run, "-n", "1", "two.ofp", *inputs], {}, "fail"),
        ("2-rank plan with -n 3", [tools.of_run, "-n", "3", "two.ofp", *inputs], {}, "fail"),
        ("1-rank plan with -n 2", [tools.of_run, "-n", "2", "one.ofp", "--input", "x=x.npy",
                                   "--input", "w=w16.npy"], {}, "either"),
        ("rank 1 hangs, --timeout 3", [tools.of_run, "-n", "2", "two.ofp", *inputs,
                                       "--timeout", "3"], {"OF_TEST_FAULT": "hang:1:3"}, "fail"),
        ("rank 1 killed mid-run, --timeout 3", [tools.of_run, "-n", "2", "two.ofp", *inputs,
                                                "--timeout", "3"], {"OF_TEST_FAULT": "kill:1:3"}, "fail"),
        ("rank 0 exits mid-run", [tools.of_run, "-n", "2", "two.ofp", *inputs, "--timeout", "3"],
         {"OF_TEST_FAULT": "exit:0:3"}, "fail"),
        ("MPMD: B input differs", mpmd("b2.ofp", ["--input", "x=a.npy", "--output-dir", "out"],
                                       "b2.ofp", ["--input", "x=b.npy", "--output-dir", "out"]), env, "fail"),
        ("MPMD: plans differ", mpmd("b2.ofp", ["--input", "x=a.npy", "--output-dir", "out"],
                                    "b2mul.ofp", ["--input", "x=a.npy", "--output-dir", "out"]), env, "fail"),
        ("MPMD: unrelated plans", mpmd("two.ofp", [*inputs, "--output-dir", "out"],
                                       "b2.ofp", ["--input", "x=a.npy", "--output-dir", "out"]), env, "fail"),
        ("MPMD: S(0) input file differs", mpmd("two.ofp", [*inputs, "--output-dir", "out"],
                                               "two.ofp", ["--input", "x=x2.npy", "--input", "w=w.npy",
                                                           "--output-dir", "out"]), env, "either"),
        ("MPMD: B weight differs", mpmd("two.ofp", [*inputs, "--output-dir", "out"],
                                        "two.ofp", ["--input", "x=x.npy", "--input", "w=w2.npy",
                                                    "--output-dir", "out"]), env, "fail"),
        ("MPMD: entry differs", mpmd("two.ofp", [*inputs, "--output-dir", "out"],
                                     "two.ofp", [*inputs, "--entry", "nosuch", "--output-dir", "out"]),
         env, "fail"),
        ("MPMD: one rank --list", mpmd("two.ofp", [*inputs, "--output-dir", "out"],
                                       "two.ofp", ["--list"]), env, "fail"),
    ]
    for name, cmd, extra_env, expect in scenarios:
        if not rec.more():
            break
        case = fresh_dir(work, "case")
        for f in d.glob("*.ofp"):
            shutil.copy(f, case / f.name)
        for f in d.glob("*.npy"):
            shutil.copy(f, case / f.name)
        if "--output-dir" not in cmd and "--list" not in cmd:
            cmd = cmd + ["--output-dir", "out"]
        res = run(cmd, cwd=case, timeout=30, env=extra_env, kill_leftovers=True)
        status = classify(res)
        if status[0] == "crash" and extra_env.get("OF_TEST_FAULT", "").startswith(("kill", "exit")) \
                and res.rc and res.rc > 0 and "of-run" in res.out:
            # The killed rank's own death is what mpirun reports.
            status = ("clean", "the job ends with the killed rank's report")
        if status[0] == "clean" and res.seconds > 30:
            status = ("hang", f"failed only after {res.seconds:.0f} s")
        if status[0] == "accepted":
            if expect == "fail":
                status = ("silent-wrong", "exit 0 where the ranks disagree or the rank count is wrong")
            elif "two.ofp" in cmd and "x=x2.npy" not in cmd:
                got = load_outputs(case / "out").get("y")
                if not (isinstance(got, np.ndarray) and got.shape == want.shape
                        and np.allclose(got, want, rtol=1e-4, atol=1e-5)):
                    status = ("silent-wrong", "exit 0 and y differs from x @ w")
        rec.record(name, *status, case, [res])


# --------------------------------------------------------------------------
# f. Python bad input

PY_CASES = [
    # (name, code; T is `of` or `torch`; the last expression's value is `r`)
    ("zeros negative dim", "r = T.zeros(-1)"),
    ("zeros huge", "r = T.zeros(2 ** 62)"),
    ("matmul shape mismatch", "r = T.ones(2, 3) @ T.ones(4, 5)"),
    ("view wrong numel", "r = T.ones(3).view(4)"),
    ("reshape wrong numel", "r = T.ones(3).reshape(2, 2)"),
    ("index out of range", "r = T.ones(2, 3)[5]"),
    ("column index out of range", "r = T.ones(2, 3)[:, 7]"),
    ("negative index out of range", "r = T.ones(2, 3)[-3]"),
    ("tensor index out of range", "r = T.ones(4)[T.tensor([1, 9])]"),
    ("index_select out of range", "r = T.ones(3).index_select(0, T.tensor([5]))"),
    ("embedding index out of range", "r = T.nn.functional.embedding(T.tensor([10]), T.ones(4, 3))"),
    ("embedding negative index", "r = T.nn.Embedding(4, 3)(T.tensor([-5]))"),
    ("cross_entropy class out of range", "r = T.nn.functional.cross_entropy(T.ones(2, 3), T.tensor([0, 5]))"),
    ("gather out of range", "r = T.gather(T.ones(2, 3), 1, T.tensor([[5]]))"),
    ("one_hot out of range", "r = T.nn.functional.one_hot(T.tensor([5]), 3)"),
    ("SGD lr nan", "r = T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=float('nan'))"),
    ("SGD lr negative", "r = T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=-1.0)"),
    ("SGD momentum negative", "r = T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=0.1, momentum=-1)"),
    ("Adam lr inf", "r = T.optim.Adam([T.nn.Parameter(T.ones(2))], lr=float('inf'))"),
    ("AdamW beta > 1", "r = T.optim.AdamW([T.nn.Parameter(T.ones(2))], betas=(1.5, 0.9))"),
    ("AdamW eps negative", "r = T.optim.AdamW([T.nn.Parameter(T.ones(2))], eps=-1e-8)"),
    ("AdamW weight_decay negative", "r = T.optim.AdamW([T.nn.Parameter(T.ones(2))], weight_decay=-0.1)"),
    ("optimizer empty params", "r = T.optim.SGD([], lr=0.1)"),
    ("Linear negative features", "r = T.nn.Linear(-1, 3)"),
    ("Linear input mismatch", "r = T.nn.Linear(3, 4)(T.ones(2, 5))"),
    ("Conv2d channel mismatch", "r = T.nn.Conv2d(3, 4, 3)(T.ones(1, 2, 8, 8))"),
    ("Conv2d kernel larger than input", "r = T.nn.Conv2d(1, 1, 9)(T.ones(1, 1, 4, 4))"),
    ("Conv2d stride 0", "r = T.nn.Conv2d(1, 1, 3, stride=0)(T.ones(1, 1, 8, 8))"),
    ("MaxPool2d kernel 0", "r = T.nn.MaxPool2d(0)(T.ones(1, 1, 4, 4))"),
    ("sum dim out of range", "r = T.ones(2, 3).sum(dim=5)"),
    ("transpose dim out of range", "r = T.ones(2, 3).transpose(0, 4)"),
    ("permute repeated dim", "r = T.ones(2, 3).permute(0, 0)"),
    ("unsqueeze dim out of range", "r = T.ones(2, 3).unsqueeze(5)"),
    ("softmax dim out of range", "r = T.ones(2, 3).softmax(dim=3)"),
    ("cat shape mismatch", "r = T.cat([T.ones(2, 3), T.ones(3, 2)])"),
    ("add broadcast mismatch", "r = T.ones(2, 3) + T.ones(4, 3)"),
    ("expand wrong size", "r = T.ones(2, 3).expand(4, 3)"),
    ("ragged tensor", "r = T.tensor([[1, 2], [3]])"),
    ("split size 0", "r = T.split(T.ones(4), 0)"),
    ("dropout p > 1", "r = T.nn.functional.dropout(T.ones(3), p=1.5)"),
    ("layer_norm shape mismatch", "r = T.nn.functional.layer_norm(T.ones(2, 3), (4,))"),
    ("mse_loss shape mismatch", "r = T.nn.functional.mse_loss(T.ones(2, 3), T.ones(3, 2))"),
    ("arange step 0", "r = T.arange(0, 10, 0)"),
    ("masked_fill mask mismatch", "r = T.ones(3).masked_fill(T.ones(4).bool(), 0.0)"),
    ("boolean mask mismatch", "r = T.ones(3)[T.tensor([True, False])]"),
    ("load_state_dict shape mismatch", "m = T.nn.Linear(2, 3)\nr = m.load_state_dict({'weight': T.ones(9), 'bias': T.ones(3)})"),
    ("device cuda:99", "r = T.ones(2).to('cuda:99') + T.ones(2)"),
    ("bad dtype string", "r = T.ones(2, dtype='float32')"),
    ("clip_grad_norm nan", "p = T.nn.Parameter(T.ones(2)); p.grad = T.ones(2)\nr = T.nn.utils.clip_grad_norm_([p], max_norm=float('nan'), error_if_nonfinite=True)"),
    ("StepLR step_size 0", "o = T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=0.1)\nr = T.optim.lr_scheduler.StepLR(o, step_size=0)"),
    ("backward non-scalar", "x = T.ones(3, requires_grad=True)\nr = (x * 2).backward()"),
    ("topk k too large", "r = T.ones(3).topk(5)"),
    # of only: must raise (no PyTorch counterpart).
    ("of: to_global ranks beyond the world", "OF_ONLY\nr = T.ones(4).to_global(T.placement('cpu', ranks=[0, 5]), T.sbp.split(0))\nr.numpy()"),
    ("of: split axis out of range", "OF_ONLY\nr = T.ones(4).to_global(T.placement('cpu', ranks=[0]), T.sbp.split(3))"),
    ("of: split negative axis", "OF_ONLY\nr = T.sbp.split(-7)"),
    ("of: placement on an unknown device", "OF_ONLY\nr = T.placement('tpu', ranks=[0])"),
    ("of: placement with repeated ranks", "OF_ONLY\nr = T.ones(4).to_global(T.placement('cpu', ranks=[0, 0]), T.sbp.broadcast)"),
    ("of: compile and call with a wrong shape", "OF_ONLY\nm = T.compile(T.nn.Linear(3, 2))\nm(T.ones(1, 3))\nr = m(T.ones(1, 4))"),
]

# One case in a fresh namespace: the value `r` it leaves (shape and the
# first 64 elements), or the exception it raised. Shared by the scripts below.
PY_EVALUATE = r'''
import json, sys


def evaluate(T, code):
    out = {}
    try:
        env = {"T": T}
        exec(code.replace("OF_ONLY\n", ""), env)
        r = env.get("r")
        value = None
        if hasattr(r, "detach") and hasattr(r, "shape"):
            a = r.detach().numpy() if hasattr(r.detach(), "numpy") else r.numpy()
            value = {"shape": list(a.shape), "data": [float(v) if v == v else "nan" for v in a.reshape(-1)[:64].tolist()]}
        elif isinstance(r, (tuple, list)) and r and all(hasattr(t, "shape") for t in r):
            value = {"shapes": [list(t.shape) for t in r]}
        out["value"] = value
    except BaseException as e:
        out["raised"] = f"{type(e).__name__}: {str(e)[:200]}"
    return out
'''

# A reproducer: runner.py torch|of CODE.
PY_RUNNER = PY_EVALUATE + r'''
if sys.argv[1] == "torch":
    import torch as T
else:
    import of as T
print("RESULT " + json.dumps(evaluate(T, sys.argv[2])))
'''

PY_TORCH_BATCH = PY_EVALUATE + r'''
import torch as T
cases = json.loads(sys.stdin.read())
print("RESULT " + json.dumps({name: evaluate(T, code) for name, code in cases}))
'''


def same_value(a, b):
    if a is None or b is None or "data" not in a or "data" not in b:
        return a == b
    if a["shape"] != b["shape"] or len(a["data"]) != len(b["data"]):
        return False
    for x, y in zip(a["data"], b["data"]):
        if x == "nan" or y == "nan":
            if x != y:
                return False
        elif abs(x - y) > 1e-5 * max(1.0, abs(x), abs(y)):
            return False
    return True


PY_OF_BATCH = PY_EVALUATE + r'''
import of as T
cases = json.loads(sys.stdin.read())
for name, code in cases:
    print("START " + json.dumps(name), flush=True)
    print("RESULT " + json.dumps([name, evaluate(T, code)]), flush=True)
'''


def attack_python(rec, tools, rng, work, python_path):
    """The cases run in one `of` process, each in a fresh namespace; where
    the process dies or stalls, the case it was in is run again alone (the
    reproducer) and the batch goes on after it."""
    env = {"OF_TOOLS_DIR": tools.dir, "CUDA_VISIBLE_DEVICES": ""}
    if python_path:
        env["PYTHONPATH"] = python_path
    torch_cases = [(n, c) for n, c in PY_CASES if not c.startswith("OF_ONLY")]
    res = run([sys.executable, "-c", PY_TORCH_BATCH], cwd=work, timeout=120, memory=None,
              stdin_data=json.dumps(torch_cases).encode(), env={"CUDA_VISIBLE_DEVICES": ""})
    torch_results = {}
    for line in res.out.splitlines():
        if line.startswith("RESULT "):
            torch_results = json.loads(line[7:])
    if not torch_results:
        print(f"python: no PyTorch reference ({res.out[-300:]})", file=sys.stderr)
    codes = dict(PY_CASES)
    pending = [n for n, _ in PY_CASES]
    results = {}  # name -> (result dict or None, Result of the lone run or None)
    while pending and rec.more():
        batch = [(n, codes[n]) for n in pending]
        res = run([sys.executable, "-c", PY_OF_BATCH], cwd=work, env=env, memory=16 << 30,
                  timeout=60 + 5 * len(batch), stdin_data=json.dumps(batch).encode())
        started = None
        for line in res.out.splitlines():
            if line.startswith("START "):
                started = json.loads(line[6:])
            elif line.startswith("RESULT "):
                name, out = json.loads(line[7:])
                results[name] = (out, None)
                started = None
        done = set(results)
        if started is None and not res.timed_out and res.rc == 0:
            pending = [n for n in pending if n not in done]
            break
        # The batch died or stalled: in `started`, or before the first case.
        culprit = started or next((n for n in pending if n not in done), None)
        if culprit is None:
            break
        case = fresh_dir(work, "lone")
        (case / "runner.py").write_text(PY_RUNNER)
        lone = run([sys.executable, "runner.py", "of", codes[culprit]], cwd=case, timeout=60,
                   env=env, memory=16 << 30)
        result = None
        for line in lone.out.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[7:])
        results[culprit] = (result, lone)
        pending = [n for n in pending if n not in results]

    for name, code in PY_CASES:
        if name not in results:
            continue
        result, lone = results[name]
        case = fresh_dir(work, "case")
        (case / "case.py").write_text(
            "import of as T\n" + code.replace("OF_ONLY\n", "") + "\nprint('returned', type(r).__name__)\n")
        shown = ([sys.executable, "case.py"] if not python_path else
                 ["env", f"PYTHONPATH={python_path}", sys.executable, "case.py"])
        display = Result(shown, lone.rc if lone else 0, lone.out if lone else json.dumps(result),
                         lone.timed_out if lone else False, lone.seconds if lone else 0.0, 60)
        if lone and lone.timed_out:
            status = ("hang", "no return within 60 s")
        elif result is None:
            status = classify(lone) if lone else ("crash", "no result")
            if status[0] in ("clean", "accepted"):
                status = ("crash", f"the process ended without a result (exit {lone.rc if lone else '?'})")
        elif "raised" in result:
            status = ("clean", result["raised"])
            if result["raised"].startswith(("SystemError", "MemoryError", "RecursionError")):
                status = ("crash", result["raised"])
        else:
            ref = torch_results.get(name)
            if code.startswith("OF_ONLY"):
                status = ("silent-wrong", "returns without an error")
            elif ref is None:
                status = ("accepted", "")
            elif "raised" in ref:
                status = ("silent-wrong", f"returns; PyTorch raises {ref['raised']}")
            elif not same_value(ref.get("value"), result.get("value")):
                status = ("silent-wrong", f"returns {json.dumps(result.get('value'))[:120]}; "
                                          f"PyTorch returns {json.dumps(ref.get('value'))[:120]}")
            else:
                status = ("accepted", "")
        note = ""
        if status[0] != "clean" and name in torch_results:
            note = f"PyTorch: {json.dumps(torch_results[name])[:300]}"
        rec.record(f"python {name}", *status, case, [display], note)


# --------------------------------------------------------------------------
# Driver

def worker(args):
    try:
        if os.nice(0) < 10:
            os.nice(10 - os.nice(0))
    except OSError:
        pass
    seed = args.seed
    rng = random.Random(f"{seed}:{args.worker}")
    tools = Tools(args.tools)
    rec = Recorder(args.worker, args.out, tools.dir, args.budget_seconds, args.max_cases)
    error = None
    global WORK_TMP

    def stop(signum, frame):
        if CURRENT_CHILD:
            _kill_group(CURRENT_CHILD)
        raise SystemExit(f"stopped by signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    with tempfile.TemporaryDirectory(prefix=f"of-attack-{args.worker}-") as work:
        WORK_TMP = work
        try:
            if args.worker == "of-opt":
                attack_of_opt(rec, tools, rng, work)
            elif args.worker == "plans":
                attack_plans(rec, tools, rng, work)
            elif args.worker == "npy":
                attack_npy(rec, tools, rng, work)
            elif args.worker == "checkpoints":
                attack_checkpoints(rec, tools, rng, work)
            elif args.worker == "mpi":
                attack_mpi(rec, tools, rng, work)
            elif args.worker == "python":
                attack_python(rec, tools, rng, work, args.python_path)
        except Exception:  # noqa: BLE001 - reported as the category's failure
            import traceback
            error = traceback.format_exc()
        finally:
            for p in Path(work).rglob("*"):  # make chmod-0 leftovers removable
                try:
                    if not p.is_symlink():
                        p.chmod(0o755 if p.is_dir() else 0o644)
                except OSError:
                    pass
    summary = rec.summary()
    summary["error"] = error
    Path(args.result).write_text(json.dumps(summary))
    return 0


def run_worker(cmd, timeout):
    """Runs a category's worker; past the timeout, asks it to stop (it kills
    its running tool) and then kills it."""
    start = time.monotonic()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, _ = proc.communicate()
    return Result(cmd, proc.returncode, out.decode("utf-8", "replace"), timed_out,
                  time.monotonic() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", default=os.environ.get("OF_TOOLS_DIR") or str(SOURCE_ROOT / "build" / "bin"),
                        help="folder of of-opt, of-translate, of-run (default $OF_TOOLS_DIR or build/bin)")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("OF_TEST_SEED", "1")),
                        help="random seed (default $OF_TEST_SEED or 1)")
    parser.add_argument("--budget-seconds", type=float, default=540,
                        help="total time for the cases (split among the categories)")
    parser.add_argument("--only", choices=CATEGORIES, action="append",
                        help="run only this category (may be repeated)")
    parser.add_argument("--out", help="folder for the reproducers (default: a temporary folder, "
                        "kept only if something was found)")
    parser.add_argument("--max-cases", type=int, default=0, help="stop each category after N cases")
    parser.add_argument("--python-path", default=os.environ.get("OF_PYTHON_PATH"),
                        help="PYTHONPATH for `import of` (default: the tools' ../python)")
    parser.add_argument("--ci", action="store_true",
                        help="exit 1 if any crash or hang was found")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.tools = str(Path(args.tools).resolve())
    if args.python_path is None:
        candidate = Path(args.tools).parent / "python"
        args.python_path = str(candidate) if (candidate / "of").is_dir() else None
    if args.worker:
        return worker(args)

    for t in ("of-opt", "of-translate", "of-run"):
        if not os.access(os.path.join(args.tools, t), os.X_OK):
            print(f"attack.py: error: {t} not found in {args.tools} (see --tools)", file=sys.stderr)
            return 2
    categories = [c for c in ORDER if c in (args.only or CATEGORIES)]
    run_start = time.monotonic()
    keep_out = args.out is not None
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="of-attack-out-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"attack.py: seed {args.seed}, tools {args.tools}, budget {args.budget_seconds:.0f} s, "
          f"reproducers in {out}", flush=True)
    summaries = []
    for i, cat in enumerate(categories):
        left = max(5.0, args.budget_seconds - (time.monotonic() - run_start))
        budget = left * SHARES[cat] / sum(SHARES[c] for c in categories[i:])
        result = out / f".{cat}.json"
        cmd = [sys.executable, __file__, "--worker", cat, "--result", result, "--tools", args.tools,
               "--seed", str(args.seed), "--budget-seconds", str(budget), "--out", out,
               "--max-cases", str(args.max_cases)]
        if args.python_path:
            cmd += ["--python-path", args.python_path]
        start = time.monotonic()
        # The worker stops starting cases at its budget; a case may take a
        # tool timeout more, and setting up (compiling plans) some more.
        res = run_worker(cmd, timeout=budget + 150)
        if res.out.strip():
            print(res.out.rstrip(), flush=True)
        if res.timed_out or not result.exists():
            summaries.append({"category": cat, "tried": 0,
                              "rows": {cat: dict({s: 0 for s in STATUSES}, tried=0)},
                              "findings": [], "error": f"the worker did not finish "
                              f"(exit {res.rc}, timed out: {res.timed_out})"})
        else:
            summaries.append(json.loads(result.read_text()))
            result.unlink()
        s = summaries[-1]
        print(f"  {cat}: {s['tried']} cases in {time.monotonic() - start:.0f} s", flush=True)

    print()
    header = f"{'category':<16} {'tried':>6} " + " ".join(f"{s:>12}" for s in STATUSES)
    print(header)
    print("-" * len(header))
    totals = {s: 0 for s in STATUSES + ["tried"]}
    for s in summaries:
        for row, counts in s["rows"].items():
            print(f"{row:<16} {counts['tried']:>6} " + " ".join(f"{counts[k]:>12}" for k in STATUSES))
            for k in totals:
                totals[k] += counts[k]
    print(f"{'total':<16} {totals['tried']:>6} " + " ".join(f"{totals[k]:>12}" for k in STATUSES))
    failed = False
    for s in summaries:
        if s.get("error"):
            print(f"\n{s['category']}: the category failed:\n{s['error']}")
            failed = True
        for f in s["findings"]:
            print(f"\n[{f['row']}] {f['status']}: {f['name']}\n    {f['diagnosis']}\n    {f['repro']}")
    found = [f for s in summaries for f in s["findings"] if f["status"] in ("crash", "hang")]
    if args.ci:
        for f in found:
            repro = Path(f["repro"])
            print(f"\n==== {f['status']}: {f['name']}\n{repro.read_text()}")
            src = repro.parent / "input.mlir"
            if src.exists() and src.stat().st_size < 4000:
                print(f"---- {src.name}\n{src.read_text(errors='replace')}")
    if not keep_out and not any(s["findings"] for s in summaries):
        shutil.rmtree(out, ignore_errors=True)
    if args.ci and (found or failed):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
