"""Helpers for the end-to-end tests: compile an OF program with of-opt and
of-translate, run it with of-run, and compare the outputs with NumPy.

The tools are taken from $OF_TOOLS_DIR (default /work/main/build/bin).
"""

import math
import os
import subprocess
from pathlib import Path

import numpy as np

TOOLS_DIR = Path(os.environ.get("OF_TOOLS_DIR", "/work/main/build/bin"))


def tool(name):
    path = TOOLS_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"{path} not found (set OF_TOOLS_DIR)")
    return str(path)


def _run(cmd, stdin=None, timeout=300):
    proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise ToolError(cmd, proc.returncode, proc.stderr.decode(errors="replace"))
    return proc.stdout


class ToolError(RuntimeError):
    def __init__(self, cmd, rc, stderr):
        self.cmd, self.rc, self.stderr = cmd, rc, stderr
        super().__init__(f"{Path(cmd[0]).name} failed (rc={rc}):\n{stderr}")


def compile_program(mlir, tmp_path, pipeline="cpu"):
    """Compiles MLIR text to tmp_path/prog.ofp; returns the plan's path."""
    tmp_path = Path(tmp_path)
    src = tmp_path / "prog.mlir"
    src.write_text(mlir)
    lowered = _run([tool("of-opt"), f"--of-pipeline={pipeline}", str(src)])
    (tmp_path / "prog.lowered.mlir").write_bytes(lowered)
    plan = tmp_path / "prog.ofp"
    _run([tool("of-translate"), "--of-plan-to-binary", "-o", str(plan)],
         stdin=lowered)
    return plan


def run_plan(plan, inputs, tmp_path, nproc=1, entry=None):
    """Runs a compiled plan's entry (default: of-run's) on named NumPy inputs
    (global arrays; with nproc > 1 on that many ranks through `of-run -n`);
    returns {name: array}."""
    tmp_path = Path(tmp_path)
    cmd = [tool("of-run")] + (["-n", str(nproc)] if nproc > 1 else []) + [str(plan)]
    if entry:
        cmd += ["--entry", entry]
    for name, array in inputs.items():
        path = tmp_path / f"in_{name}.npy"
        np.save(path, np.asarray(array, order="C"))
        cmd += ["--input", f"{name}={path}"]
    out_dir = tmp_path / "out"
    cmd += ["--output-dir", str(out_dir)]
    _run(cmd)
    return {p.stem: np.load(p) for p in sorted(out_dir.glob("*.npy"))}


def run_mlir(mlir, inputs, tmp_path, pipeline="cpu", nproc=1, entry=None):
    """Compiles and runs `mlir` on `inputs` (on `nproc` ranks); returns the
    outputs by name."""
    return run_plan(compile_program(mlir, tmp_path, pipeline), inputs, tmp_path,
                    nproc, entry)


def splitmix_keep(seed, n, prob):
    """The dropout mask rule of OFToLinalg.cpp's DropoutLowering:
    z = splitmix64(seed + i); keep iff (z >> 40) >= ceil(p * 2^24)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(n, dtype=np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)) >= np.uint64(math.ceil(prob * 2 ** 24))


def rel_err(y, ref, scale=None):
    """||y - ref|| / ||ref|| (or / ||scale||) in float64 (absolute error
    when that norm is 0)."""
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    num = np.linalg.norm((y - ref).ravel())
    den = np.linalg.norm(np.asarray(ref if scale is None else scale, np.float64).ravel())
    return num / den if den > 0 else num


def check(y, ref, tol, name="output", scale=None):
    """Asserts shape equality and ||y - ref|| / ||ref|| <= tol; exact
    equality when tol is 0 (integer and boolean results). With `scale`,
    the error is relative to ||scale|| instead: for a sum whose terms
    cancel, the sum of their magnitudes, the scale of its rounding."""
    ref = np.asarray(ref)
    assert y.shape == ref.shape, f"{name}: shape {y.shape} != {ref.shape}"
    if tol == 0:
        mismatch = np.count_nonzero(y != ref)
        assert mismatch == 0, (f"{name}: {mismatch} of {y.size} elements differ"
                               f"\n got {y.ravel()[:16]}\n ref {ref.ravel()[:16]}")
        return
    assert np.all(np.isfinite(y)), f"{name}: non-finite values"
    err = rel_err(y, ref, scale)
    assert err <= tol, f"{name}: relative error {err:.3e} > {tol:.0e}"


def bf16_bits_to_f32(bits):
    """bf16 as of-run writes it (raw '<u2' bits) to float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def mlir_type(array_or_shape, dtype=None):
    """tensor<2x3xf32> for an array (or a shape and an element type)."""
    if dtype is None:
        shape, dtype = array_or_shape.shape, array_or_shape.dtype
    else:
        shape = array_or_shape
    if isinstance(dtype, str):
        return "tensor<" + "".join(f"{d}x" for d in shape) + f"{dtype}>"
    et = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
          np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
          np.dtype(np.bool_): "i1"}[np.dtype(dtype)]
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{et}>"


class Program:
    """Builds a one-function OF program (@main) from named inputs, op lines
    and named outputs, each output with its NumPy reference and tolerance.

        p = Program()
        x = p.input("x", array)                 # "%x"
        p.op(f"%y = of.exp {x} : ({p.t(x)}) -> {p.t(x)}")
        p.output("y", "%y", p.t(x), ref=np.exp(array), tol=1e-5)
    """

    def __init__(self, header="", nproc=1):
        self.header = header
        self.nproc = nproc  # ranks of the header's placement
        self.args, self.lines, self.results = [], [], []
        self.inputs, self.refs, self.tols, self.scales = {}, {}, {}, {}
        self.types = {}

    def input(self, name, array, type=None):
        self.inputs[name] = array
        ssa = f"%{name}"
        self.types[ssa] = type or mlir_type(array)
        self.args.append(f"{ssa}: {self.types[ssa]} {{of.name = \"{name}\"}}")
        return ssa

    def t(self, ssa):
        return self.types[ssa]

    def op(self, line, result_types=None):
        """Adds an op line; `result_types` ({ssa: type}) records the types of
        the values it defines for later t() calls."""
        self.lines.append(line)
        for ssa, ty in (result_types or {}).items():
            self.types[ssa] = ty

    def output(self, name, ssa, type, ref, tol, scale=None):
        """A result `name` checked against `ref` within `tol` (see check,
        also for `scale`)."""
        self.results.append((ssa, type, name))
        self.refs[name] = ref
        self.tols[name] = tol
        if scale is not None:
            self.scales[name] = scale

    def text(self):
        results = ", ".join(f"{ty} {{of.name = \"{n}\"}}"
                            for _, ty, n in self.results)
        body = "\n".join("  " + l for l in self.lines)
        rets = ", ".join(s for s, _, _ in self.results)
        rtypes = ", ".join(ty for _, ty, _ in self.results)
        return (f"{self.header}\nfunc.func @main({', '.join(self.args)}) -> ({results}) {{\n"
                f"{body}\n  return {rets} : {rtypes}\n}}\n")

    def run(self, tmp_path, pipeline="cpu"):
        return run_mlir(self.text(), self.inputs, tmp_path, pipeline, self.nproc)
