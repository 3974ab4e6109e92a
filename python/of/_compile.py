"""Compiling programs into plans: `compile_program` runs the compiler (of._C)
under an `--of-pipeline`, caches the plan in memory and on disk (keyed by a
hash of the compiler build, the pipeline and the program text), and turns
the compiler's diagnostics into a CompileError that points at the Python
lines."""

import hashlib
import linecache
import os
import threading
import time

from . import cuda
from ._log import log_debug
from ._runtime import _C


class CompileError(RuntimeError):
    """A program the compiler rejected; the message points at the Python
    line that created the offending op."""


def _format_diagnostics(diags, source_name):
    lines = []
    for d in diags:
        where = f"{d['file']}:{d['line']}" if d["file"] else source_name
        lines.append(f"{where}: {d['severity']}: {d['message']}")
        if d["file"] and d["line"] and os.path.exists(d["file"]):
            text = linecache.getline(d["file"], d["line"]).rstrip()
            if text:
                lines.append("    " + text.strip())
        for n in d["notes"]:
            where = f"{n['file']}:{n['line']}" if n["file"] else source_name
            lines.append(f"{where}: note: {n['message']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Compile cache: in memory, and on disk keyed by a hash of the program.

class _CacheStats:
    def __init__(self):
        self.compiles = 0
        self.memory_hits = 0
        self.disk_hits = 0
        self.compile_seconds = 0.0


cache_stats = _CacheStats()
_memory_cache = {}
_cache_lock = threading.Lock()


def _cache_dir():
    if os.environ.get("OF_CACHE_DIR") == "":
        return None  # disabled
    root = os.environ.get("OF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "of")
    return root


def _compiler_id():
    """Identifies the compiler build, so a rebuilt _C never reuses plans of
    an older one."""
    path = _C().__file__
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def pipeline_for(dev):
    """The --of-pipeline that compiles programs on device `dev`: "cpu", or
    "cuda" for the GPU of.cuda.chip() names."""
    if dev == "cuda":
        from . import backends  # torch.backends.cuda.matmul.allow_tf32
        tf32 = ",tf32=true" if backends.cuda.matmul.allow_tf32 else ""
        return f"cuda,chip={cuda.chip()}{tf32}"
    return "cpu"


def compile_program(text, pipeline, source_name="<of program>", dump_dir=None,
                    progress=None):
    """Plan bytes for `text` under `--of-pipeline=<pipeline>`, from the
    memory cache, the disk cache or the compiler."""
    key = hashlib.sha256(
        f"{_compiler_id()}\n{pipeline}\n{text}".encode()).hexdigest()
    with _cache_lock:
        plan = _memory_cache.get(key)
    if plan is not None and not dump_dir:
        cache_stats.memory_hits += 1
        return plan
    plan = None  # with dump_dir, always compile (that writes the stages)
    directory = _cache_dir()
    path = os.path.join(directory, key[:2], key + ".ofp") if directory else None
    if path and not dump_dir and os.path.exists(path):
        with open(path, "rb") as f:
            plan = f.read()
        try:  # a damaged cache entry is recompiled, not trusted
            _C().Plan(plan)
        except _C().Error as e:
            log_debug(f"discarding the damaged cached plan {path}: {e}")
            plan = None
            try:
                os.unlink(path)
            except OSError:
                pass
        if plan is not None:
            cache_stats.disk_hits += 1
            log_debug(f"plan {key[:12]} from the disk cache ({len(plan)} bytes)")
    if plan is None:
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            with open(os.path.join(dump_dir, "input.mlir"), "w") as f:
                f.write(text)
        if progress:
            progress(f"compiling {source_name} ({pipeline})")
        log_debug(f"compiling {source_name}: --of-pipeline={pipeline}, "
                  f"{text.count(chr(10))} lines")
        start = time.perf_counter()
        result = _C().compile(text, source_name, pipeline, dump_dir or "")
        seconds = time.perf_counter() - start
        cache_stats.compiles += 1
        cache_stats.compile_seconds += seconds
        for name, secs in result["passes"]:
            log_debug(f"  pass {name}: {secs * 1000:.1f} ms")
        if not result["success"]:
            raise CompileError(_format_diagnostics(result["diagnostics"], source_name)
                               or f"{source_name}: the compiler failed without a message")
        plan = result["plan"]
        log_debug(f"compiled {source_name} in {seconds:.2f} s ({len(plan)} bytes)")
        if progress:
            progress(f"compiled {source_name} in {seconds:.1f} s")
        if dump_dir:
            with open(os.path.join(dump_dir, "plan.ofp"), "wb") as f:
                f.write(plan)
        if path:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.tmp.{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(plan)
                os.replace(tmp, path)
            except OSError as e:  # a read-only cache only costs recompiles
                log_debug(f"cannot write the plan cache {path}: {e}")
    with _cache_lock:
        _memory_cache[key] = plan
    return plan

