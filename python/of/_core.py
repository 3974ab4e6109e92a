"""Tensors, the program builder, the compile cache and the runtime sessions.

Every operation on tensors goes through one path, `apply`: it writes the
`of` dialect op into a program. While a model is traced (`of.compile`,
`of.nn.Graph`) the program is the traced function; otherwise (eager) the
program is that one op, compiled once per signature (shapes, dtypes, SBP,
attributes), cached, and run through libofrt at once. Eager and compiled
code therefore run the same kernels.
"""

import hashlib
import linecache
import os
import sys
import threading
import time

import numpy as np

from . import _dtype as dt
from ._dist import CPU, _sbp_from_runtime, device, normalize_sbp, placement, sbp

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LOG = os.environ.get("OF_LOG", "").lower()


def _C():
    from . import _C as module  # the extension; imported on first use
    return module


def log_debug(message):
    if _LOG == "debug":
        print(f"[of] {message}", file=sys.stderr, flush=True)


class CompileError(RuntimeError):
    """A program the compiler rejected; the message points at the Python
    line that created the offending op."""


# --------------------------------------------------------------------------
# Source locations: the first frame outside the of package.

def user_frame():
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


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
        from . import cuda
        return f"cuda,chip={cuda.chip()}"
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


# --------------------------------------------------------------------------
# Runtime: plans, sessions, the MPI world.

_world = None


def world():
    """(rank, size) of this process: MPI's when an MPI launcher started it."""
    global _world
    if _world is None:
        C = _C()
        if C.mpi_launched():
            _world = (C.comm_rank(), C.comm_size())
            import atexit
            atexit.register(C.comm_finalize)
        else:
            _world = (0, 1)
    return _world


class Runner:
    """An entry of a plan as a session of this rank, with its inputs' and
    outputs' descriptions."""

    def __init__(self, plan_bytes, entry="", device="cpu"):
        C = _C()
        self.device = device  # what the plan was compiled for
        self.plan = C.Plan(plan_bytes)
        distributed = self.plan.world_size > 1
        if distributed:
            rank, size = world()
            if size != self.plan.world_size:
                raise RuntimeError(
                    f"the program is placed on {self.plan.world_size} ranks but this job "
                    f"has {size}; start it with `python -m of.distributed.launch "
                    f"--nproc {self.plan.world_size} ...`")
        self.session = C.Session(self.plan, entry, distributed, 0)
        self.inputs = self.session.inputs()
        self.outputs = self.session.outputs()
        self.input_index = {d["name"]: i for i, d in enumerate(self.inputs)}
        self.versions = {}  # input index -> (id, version) last set

        self._out_np = [(tuple(d["shape"]), dt.from_mlir(d["dtype"]).np)
                        for d in self.outputs]

    def set(self, index, array, global_value=False):
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self.session.set_input(index, array, global_value)

    def run(self):
        self.session.run()

    def output(self, index):
        shape, np_dtype = self._out_np[index]
        out = np.empty(shape, dtype=np_dtype)
        self.session.get_output(index, out)
        return out

    def output_dist(self, index):
        d = self.outputs[index]
        if "sbp" not in d:
            return None
        return tuple(_sbp_from_runtime(c) for c in d["sbp"])


# --------------------------------------------------------------------------
# Programs.

def _type(shape, dtype, plc=None, sbp_list=None):
    t = "tensor<" + "".join(f"{d}x" for d in shape) + dtype.mlir
    if plc is not None:
        t += f", #of.sbp<@{plc.symbol()}, [{', '.join(s.mlir() for s in sbp_list)}]>"
    return t + ">"


def float_text(v):
    """A finite float as an MLIR float literal (which needs a '.'),
    exact to the last bit."""
    text = repr(float(v))
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}"
    return text if "." in text else text + ".0"


def _float_literal(v, dtype):
    v = float(v)
    if np.isfinite(v):
        return float_text(v)
    bits = {"f32": ("<f4", 8), "f64": ("<f8", 16), "f16": ("<f2", 4)}
    if dtype.mlir == "bf16":
        raw = np.array([v], "<f4").view("<u4")[0] >> 16
        return f"0x{int(raw):04X}"
    code, width = bits[dtype.mlir]
    raw = np.array([v], code).view(f"<u{code[-1]}")[0]
    return f"0x{int(raw):0{width}X}"


class Program:
    """An `of` function being written: arguments, ops, results."""

    def __init__(self, name, trace=False):
        self.name = name
        self.trace = trace
        self.args = []       # (ssa, type, attrs)
        self.arg_tensors = []  # the tensor each argument is bound to
        self.lines = []
        self.placements = {}
        self.device = None   # the device its tensors are on: its pipeline
        self.values = {}     # id(tensor) -> ssa, for tensors of this program
        self.keep = []       # tensors whose ids are keys of values
        self.counter = 0
        self.seed_arg = None
        self.dropouts = 0
        self.loss = None
        self.updates = []    # (state tensor, its new value) written by the program
        self.train = False   # traced as a training step (gradients of the loss)
        self._types = {}     # ssa -> type text

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def note_placement(self, plc):
        if plc is not None:
            self.placements[plc.symbol()] = plc
            self.note_device(plc.type, f"the placement {plc}")

    def note_device(self, dev, what):
        """Records that `what` is on `dev`: a program (a plan) runs on one
        kind of device."""
        if self.device is None:
            self.device = device(dev)
        elif dev != self.device:
            raise ValueError(
                f"{what} is on '{dev}' but other tensors of this "
                f"{'traced function' if self.trace else 'op'} are on '{self.device}'; "
                f"a program runs on one kind of device: move the tensors (and the model) "
                f"with .to('{self.device}') or .to('{dev}')")

    def add_arg(self, tensor, name=None, param=False, weight_decay=None):
        ssa = self.fresh("a")
        self.note_placement(tensor._placement)
        if tensor._placement is None and not tensor._device_neutral():
            self.note_device(tensor._local_device,
                             f"'{name}'" if name else f"a tensor of shape {list(tensor.shape)}")
        attrs = []
        if name is not None:
            attrs.append(f'of.name = "{name}"')
        if param:
            attrs.append("of.param")
        if weight_decay is not None:
            attrs.append(f"of.weight_decay = {float_text(weight_decay)} : f64")
        ty = _type(tensor.shape, tensor.dtype, tensor._placement, tensor._sbp)
        self.args.append((ssa, ty, attrs))
        self._types[ssa] = ty
        self.arg_tensors.append(tensor)
        self.values[id(tensor)] = ssa
        self.keep.append(tensor)
        return ssa

    def constant(self, array, dtype):
        """A constant op for `array` (any size)."""
        array = np.asarray(array)
        ssa = self.fresh("c")
        if dtype is dt.bool:
            as_i8 = self.constant(array.astype(np.int8), dt.int8)
            zero = self.constant(np.zeros((), np.int8), dt.int8)
            self.lines.append(
                f"{ssa} = of.compare ne, {as_i8}, {zero} : ({_type(array.shape, dt.int8)}, "
                f"{_type((), dt.int8)}) -> {_type(array.shape, dt.bool)}")
            self._types[ssa] = _type(array.shape, dt.bool)
            return ssa
        ty = _type(array.shape, dtype)
        if array.size == 1:
            v = array.reshape(-1)[0]
            lit = _float_literal(v, dtype) if dtype.is_floating_point else str(int(v))
        else:
            raw = np.ascontiguousarray(array.astype(dtype.np)).tobytes()
            lit = f'"0x{raw.hex().upper()}"'
        self.lines.append(f"{ssa} = of.constant dense<{lit}> : {ty}")
        self._types[ssa] = ty
        return ssa

    def text(self, results, result_attrs=None):
        """The function returning `results` [(ssa, type)]; `result_attrs`
        gives each result's attribute text (None for none)."""
        header = "".join(p.mlir() + "\n" for p in self.placements.values())
        args = ", ".join(
            f"{ssa}: {ty}" + (f" {{{', '.join(attrs)}}}" if attrs else "")
            for ssa, ty, attrs in self.args)
        result_attrs = result_attrs or [None] * len(results)
        rtypes = ", ".join(
            ty + (f" {{{a}}}" if a else "")
            for (_, ty), a in zip(results, result_attrs))
        body = "\n  ".join(self.lines)
        ret = ", ".join(ssa for ssa, _ in results)
        rts = ", ".join(ty for _, ty in results)
        return (f"{header}func.func @{self.name}({args}) -> ({rtypes}) {{\n  {body}\n"
                f"  return {ret} : {rts}\n}}\n")


class _TraceState(threading.local):
    def __init__(self):
        self.program = None


_trace = _TraceState()


def tracing():
    return _trace.program


# --------------------------------------------------------------------------
# Tensors.

def _device_arg(value):
    """A `device=` argument (None: the CPU) as an of.device."""
    if value is None:
        return CPU
    if type(value) is device:
        return value
    if isinstance(value, Tensor):
        return value.device
    return device(value)


class Size(tuple):
    def numel(self):
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"of.Size({list(self)})"


class Tensor:
    """A tensor: a value (eager) or a value of a traced program (symbolic).
    Global tensors also have a placement and an SBP list; their value here
    is this rank's part (`to_local()`); `.numpy()` is the logical value."""

    __array_priority__ = 1000  # NumPy defers binary operators to Tensor

    def __init__(self, data=None, *, shape=None, dtype=None, placement=None,
                 sbp=None, program=None, device=None):
        self._data = data
        self._shape = Size(shape if shape is not None else data.shape)
        self._dtype = dtype if dtype is not None else dt.from_numpy(data.dtype)
        self._placement = placement
        self._sbp = sbp
        self._program = program  # set for symbolic tensors
        # a local tensor's device (a global one's is its placement's)
        self._local_device = _device_arg(device)
        self._source = None      # (Runner, input index) holding a newer value
        # A global tensor made where its placement cannot run (a plan
        # compiled for more ranks than this job, or for GPUs where none is:
        # ahead of time) keeps its logical value instead of this rank's
        # part, which it takes when first needed (_global.materialize).
        self._logical = None
        self._version = 0
        self.requires_grad = False
        self.grad = None

    # -- value --------------------------------------------------------------
    def _value(self):
        """This rank's part, pulled from a session if one holds a newer value."""
        if self._program is not None:
            raise RuntimeError(
                "this tensor is a value of a traced program and has no data yet; "
                "return it from the compiled function to get its value")
        if self._source is not None:
            self._pull()
        if self._data is None and self._logical is not None:
            from . import _global
            _global.materialize(self)
        return self._data

    def _pull(self):
        runner, index = self._source
        self._source = None
        from . import _global
        self._data = _global.read_input(runner, index, self)

    def _set_value(self, data):
        self._data = data
        self._source = None
        self._logical = None
        self._version += 1

    def _take_global(self, g):
        """Becomes global tensor `g` (its part, or its logical value if it
        is lazy), in place: a module's state made global keeps its
        identity."""
        if g is self:  # to_global had nothing to do
            return
        if g._source is not None:
            g._pull()
        self._data, self._logical = g._data, g._logical
        self._placement, self._sbp = g._placement, g._sbp
        self._source = None
        self._version += 1

    def _lazy(self):
        return self._data is None and self._logical is not None

    @property
    def is_global(self):
        return self._placement is not None

    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        return self._shape if dim is None else self._shape[dim]

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def numel(self):
        return self._shape.numel()

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    @property
    def device(self):
        """"cpu" or "cuda" (an of.device): where the ops on this tensor run.
        A global tensor's is its placement's type."""
        if self._placement is not None:
            return device(self._placement.type)
        if self._program is not None and self._program.device is not None:
            return self._program.device  # a traced value: its program's
        return self._local_device

    @property
    def is_cuda(self):
        return self.device == "cuda"

    def _device_neutral(self):
        """A 0-d local CPU tensor (a Python number made a tensor) goes with
        tensors of any device, as in PyTorch."""
        return self._placement is None and self._local_device == "cpu" and \
            not self._shape

    @property
    def placement(self):
        return self._placement

    @property
    def sbp(self):
        return self._sbp

    @property
    def is_leaf(self):
        return True

    def numpy(self, force=False):
        """The logical value as a NumPy array (for a global tensor: gathered
        on every rank, a collective call). It never shares memory with the
        tensor's device copy, so `force` (PyTorch's: copy where it would
        not) changes nothing."""
        if self._placement is not None:
            from . import _global
            return _global.logical_value(self)
        return self._value()

    def to_local(self):
        if self._placement is None:
            return self
        return Tensor(self._value(), device=self._placement.type)

    def to_global(self, placement=None, sbp=None):
        from . import _global
        return _global.to_global(self, placement, sbp)

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor of one element, not shape {list(self.shape)}")
        return self.numpy().reshape(-1)[0].item()

    def tolist(self):
        return self.numpy().tolist()

    def __repr__(self):
        if self._program is not None:
            return f"tensor(<traced>, shape={list(self.shape)}, dtype={self.dtype})"
        # A global tensor shows this rank's part: printing must not be a
        # collective (one rank printing would wait for the others). One made
        # ahead of time shows its logical value.
        data = self._logical if self._lazy() else self._value()
        value = np.array2string(np.asarray(data, dtype=np.float64)
                                if self.dtype is dt.bfloat16 else data,
                                separator=", ", prefix="tensor(")
        extra = "" if self.dtype in (dt.float32, dt.int64) else f", dtype={self.dtype}"
        if self._placement is not None:
            what = "logical value" if self._lazy() else "local part"
            return (f"tensor(<global, shape={list(self.shape)}>, placement={self._placement}, "
                    f"sbp={list(self._sbp)}{extra}, {what}=\n{value})")
        if self._local_device != "cpu":
            extra += f", device='{self._local_device}'"
        return f"tensor({value}{extra})"

    def __bool__(self):
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        return int(self.item())

    def __hash__(self):
        return id(self)

    # -- autograd placeholders ---------------------------------------------
    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def detach(self):
        if self._program is not None and self._program.train:
            raise NotImplementedError(
                "Tensor.detach() in a compiled training step: of has no stop-gradient op "
                "yet, so the gradient would flow through it; compute the detached value "
                "outside the step and pass it in as an input")
        return self  # eager tensors carry no autograd history yet

    @property
    def data(self):
        """The tensor's value outside autograd (PyTorch's `.data`): writes
        to it in place change this tensor. Eager tensors carry no autograd
        history yet, so it is the tensor itself."""
        return self.detach()

    @data.setter
    def data(self, value):
        """Replaces the value (PyTorch's `x.data = y`), also where a compiled
        step's session holds it: the next step runs on the new value."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._program is not None or value._program is not None:
            raise RuntimeError("cannot assign .data of or from a value of a traced program")
        if tuple(value.shape) != tuple(self._shape) or value.dtype != self._dtype:
            raise NotImplementedError(
                f"assigning .data of shape {list(value.shape)} {value.dtype} to a tensor of "
                f"shape {list(self._shape)} {self._dtype}: of keeps a tensor's shape and "
                "dtype; assign a new tensor (module.weight = nn.Parameter(value)) instead")
        if (value._placement, value._sbp) != (self._placement, self._sbp) or \
                value.device != self.device:
            raise NotImplementedError(
                f".data = a tensor on {value._placement or value.device} "
                f"{value._sbp or ''} for a tensor on {self._placement or self.device} "
                f"{self._sbp or ''}: move it first (.to(...) or .to_global(...))")
        self._set_value(np.array(value._value(), copy=True))

    def backward(self):
        program = self._program
        if program is None or not program.trace:
            raise RuntimeError(
                "of computes gradients in compiled training steps: call loss.backward() "
                "inside of.nn.Graph.build() (with an optimizer added) or use "
                "of.compile(model, loss_fn=..., optimizer=...)")
        if self.numel() != 1 or self.dtype not in (dt.float32, dt.float64):
            raise RuntimeError("backward() needs a scalar floating-point loss, not "
                               f"shape {list(self.shape)} {self.dtype}")
        program.loss = self

    def contiguous(self):
        return self

    def clone(self):
        if self._program is not None:
            return self
        if self._lazy():
            out = Tensor(None, shape=self.shape, dtype=self.dtype, placement=self._placement,
                         sbp=self._sbp)
            out._logical = self._logical.copy()
            return out
        return Tensor(self._value().copy(), placement=self._placement, sbp=self._sbp,
                      device=self._local_device)

    # -- in-place initialisers (eager) -------------------------------------
    def _inplace(self, data):
        if self._program is not None:
            raise RuntimeError("in-place initialisation of a traced value")
        if self._placement is not None:
            raise RuntimeError("initialise tensors before to_global()")
        self._set_value(np.ascontiguousarray(data.astype(self._dtype.np)).reshape(self._shape))
        return self

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        from ._compat import unsupported
        unsupported("Tensor.normal_", generator=(generator, None))
        from . import _random
        return self._inplace(_random.normal(self._shape, mean, std))

    def uniform_(self, a=0.0, b=1.0):
        from . import _random
        return self._inplace(_random.uniform(self._shape, a, b))

    def fill_(self, value):
        return self._inplace(np.full(self._shape, value))

    def zero_(self):
        return self.fill_(0)

    def copy_(self, src):
        src = src.numpy() if isinstance(src, Tensor) else np.asarray(src)
        if tuple(src.shape) != tuple(self._shape):
            raise ValueError(f"copy_: shape {list(src.shape)} into {list(self._shape)}")
        return self._inplace(src)


class Parameter(Tensor):
    """A tensor that is a module's parameter (trained by the optimizer)."""

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor) and data._lazy():  # made ahead of time
            Tensor.__init__(self, None, shape=data.shape, dtype=data.dtype,
                            placement=data._placement, sbp=data._sbp)
            self._logical = data._logical
        elif isinstance(data, Tensor):
            Tensor.__init__(self, data._value(), placement=data._placement, sbp=data._sbp,
                            device=data._local_device)
        else:
            Tensor.__init__(self, _c_order(np.asarray(data)))
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)


# --------------------------------------------------------------------------
# Converting Python values.

def as_tensor_like(value, like):
    """`value` (a Python number) as a 0-d tensor of `like`'s dtype; a value
    that dtype cannot hold (0.5 as an integer) is an error, not a silent
    truncation."""
    if isinstance(value, Tensor):
        return value
    array = np.array(value, dtype=like.dtype.np)
    if not like.dtype.is_floating_point and array.item() != value:
        raise TypeError(f"{value!r} cannot be represented as {like.dtype}; convert the "
                        f"tensor first (.float())")
    return Tensor(array, dtype=like.dtype,
                  device=like._local_device if like._placement is None else None)


def to_tensor(value, dtype=None):
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    if dtype is None:
        if array.dtype == np.float64 and not isinstance(value, np.ndarray):
            dtype = dt.float32  # Python floats are float32, as in PyTorch
        elif array.dtype.kind == "i" and not isinstance(value, np.ndarray):
            dtype = dt.int64
        else:
            dtype = dt.from_numpy(array.dtype)
    return Tensor(_c_order(array.astype(dtype.np)), dtype=dtype)


def _c_order(array):
    """`array` C-contiguous, keeping its rank (np.ascontiguousarray makes a
    0-d array 1-d)."""
    return np.ascontiguousarray(array).reshape(array.shape)


# --------------------------------------------------------------------------
# apply: the one path of every op.

class OpSpec:
    """One op: `fmt` is its text with {0}, {1}, ... for the operands,
    `attrs` its attribute dictionary text (may be empty), `outs` the result
    (shape, dtype) pairs, and `sig` the type syntax: "functional"
    (`(operands) -> results`), "cast" (`T to R`) or "arrow" (`T -> R`)."""

    __slots__ = ("fmt", "attrs", "outs", "sig")

    def __init__(self, fmt, attrs, outs, sig="functional"):
        self.fmt = fmt
        self.attrs = attrs
        self.outs = outs
        self.sig = sig


def _common_placement(inputs):
    plc, globals_, locals_ = None, [], []
    for t in inputs:
        (globals_ if t._placement is not None else locals_).append(t)
    for t in globals_:
        if plc is None:
            plc = t._placement
        elif t._placement != plc:
            raise ValueError(f"operands are on different placements: {plc} and "
                             f"{t._placement}; move one with .to_global(placement, sbp)")
    if globals_ and locals_:
        bad = locals_[0]
        if bad.numel() == 1 and bad._program is None and bad.ndim == 0:
            return plc, True  # a Python scalar: a constant inside the program
        raise ValueError("an op mixes a global tensor and a local tensor (shape "
                         f"{list(bad.shape)}); make the local one global with "
                         ".to_global(placement, sbp)")
    return plc, False


def _write_op(program, spec, operands, loc):
    names = [program.fresh() for _ in spec.outs]
    if len(names) == 1:
        lhs = names[0]
        refs = names
    else:
        base = program.fresh()
        lhs = f"{base}:{len(names)}"
        refs = [f"{base}#{i}" for i in range(len(names))]
    text = spec.fmt.format(*operands)
    if spec.attrs:
        text += " {" + spec.attrs + "}"
    out_types = [_type(s, d) for s, d in spec.outs]
    if spec.sig == "cast":
        text += f" : {program._types[operands[0]]} to {out_types[0]}"
    elif spec.sig == "arrow":
        text += f" : {program._types[operands[0]]} -> {out_types[0]}"
    else:
        ins = ", ".join(program._types[o] for o in operands)
        outs = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
        text += f" : ({ins}) -> {outs}"
    if loc is not None:
        text += f' loc("{loc[0]}":{loc[1]}:1)'
    program.lines.append(f"{lhs} = {text}")
    for r, t in zip(refs, out_types):
        program._types[r] = t
    return refs


def _operand(program, t):
    """The SSA name of tensor `t` in `program`, capturing it if needed."""
    ssa = program.values.get(id(t))
    if ssa is not None:
        return ssa
    if t._program is not None and t._program is not program:
        raise RuntimeError("a value of another traced program is used here")
    if program.trace:
        from . import _jit
        ssa = _jit.capture(program, t)
        if ssa is not None:
            return ssa
        # a tensor made during tracing (a factory result): a constant
        if t._placement is not None:
            raise ValueError("a global tensor made inside a traced function cannot be "
                             "embedded; pass it as an argument")
        if not t._device_neutral():
            program.note_device(t.device, f"a tensor of shape {list(t.shape)} that the "
                                          "traced function makes or closes over")
        ssa = program.constant(t._value(), t.dtype)
        program.values[id(t)] = ssa
        program.keep.append(t)
        return ssa
    raise AssertionError("eager operands are arguments")


def apply(spec, inputs):
    """Runs (eager) or records (tracing) one op; returns its result tensors."""
    program = _trace.program
    if program is not None:
        operands = [_operand(program, t) for t in inputs]
        refs = _write_op(program, spec, operands, user_frame())
        outs = []
        for ref, (shape, dtype) in zip(refs, spec.outs):
            t = Tensor(shape=shape, dtype=dtype, program=program)
            program.values[id(t)] = ref
            program.keep.append(t)
            outs.append(t)
        return outs
    return _eager(spec, inputs)


_eager_runners = {}
# Sessions kept (each holds its arena; plans stay cached). A GPU session
# also holds its executor's streams, cuBLAS handle and workspaces.
_EAGER_CACHE_LIMIT = {"cpu": 1024, "cuda": 64}


def _evict_eager(dev):
    """Drops the oldest eager session on `dev` when `dev` has its limit."""
    same = [k for k, r in _eager_runners.items() if r.device == dev]
    if len(same) >= _EAGER_CACHE_LIMIT[dev]:
        _eager_runners.pop(same[0])


def _eager_key(spec, inputs, scalar_mix):
    key = [spec.fmt, spec.attrs, spec.sig, tuple(spec.outs)]
    for t in inputs:
        if scalar_mix and t._placement is None:  # embedded as a constant
            key.append(("c", t._dtype.name, t._value().tobytes()))
        else:
            key.append((t._shape, t._dtype.name, t._placement, t._sbp,
                        t._local_device if t._placement is None else None))
    return tuple(key)


def _eager(spec, inputs):
    plc, scalar_mix = _common_placement(inputs)
    key = _eager_key(spec, inputs, scalar_mix)
    runner = _eager_runners.get(key)
    if runner is None:
        program = Program("op")
        operands = []
        for t in inputs:
            if scalar_mix and t._placement is None:
                operands.append(program.constant(t._value(), t.dtype))
            else:
                operands.append(program.add_arg(t))
        refs = _write_op(program, spec, operands, None)
        text = program.text([(r, program._types[r]) for r in refs])
        try:
            plan = compile_program(text, pipeline_for(program.device), "eager op")
        except CompileError as e:
            file, line = user_frame()
            raise CompileError(f"{file}:{line}: {spec.fmt.split()[0]}: {e}") from None
        runner = Runner(plan, device=program.device or "cpu")
        _evict_eager(runner.device)
        _eager_runners[key] = runner
    arg_index = 0
    for t in inputs:
        if scalar_mix and t._placement is None:
            continue
        runner.set(arg_index, t._value())
        arg_index += 1
    runner.run()
    outs = []
    for i, (shape, dtype) in enumerate(spec.outs):
        data = runner.output(i)
        if plc is not None:
            outs.append(Tensor(data, shape=shape, dtype=dtype, placement=plc,
                               sbp=runner.output_dist(i) or (sbp.broadcast,) * plc.ndim))
        else:
            outs.append(Tensor(data, dtype=dtype, device=runner.device))
    return outs


def apply1(spec, inputs):
    return apply(spec, inputs)[0]
