"""Tensors: a value on this process (eager), this rank's part of a global
tensor (with its placement and SBP), or a value of a traced program
(symbolic). The methods that are operations (operators, reshapes, casts,
`.to`, `.to_global`) are `_ops`', installed on Tensor there. A value that a
session holds (a parameter a compiled step trained) is read from it when
needed; a global tensor made ahead of time takes its part when first used
(`_global`)."""

import warnings
import weakref

import numpy as np

from . import _dtype as dt
from . import _global, _random
from ._compat import unsupported
from ._dist import CPU, device, sbp


def _device_arg(value):
    """A `device=` argument (None: the CPU) as an of.device."""
    if value is None:
        return CPU
    if type(value) is device:
        return value
    if isinstance(value, Tensor):
        return value.device
    return device(value)


# Calls of compiled forwards not run yet (_jit._PendingCall): they run
# before a tensor's value changes, since they read the values of now.
_pending_calls = weakref.WeakSet()


def force_pending(writing=None):
    """Runs the pending calls (those whose run writes tensor `writing`, if
    given: its value is about to be read)."""
    for call in list(_pending_calls):
        if writing is None or id(writing) in call.writes:
            call.run()


class Size(tuple):
    def numel(self):
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"of.Size({list(self)})"


class _TensorType(type):
    """Tensor's class: `of.Tensor(2, 3)`, `of.Tensor([1, 2])` and
    `of.Tensor()` are PyTorch's legacy constructor (a float32 tensor of
    that size, or of that data; `_legacy_new`, which _ops installs), while
    of's own code makes tensors from a NumPy array or None."""

    def __call__(cls, *args, **kwargs):
        if cls is Tensor and (not args and not kwargs or args and not isinstance(
                args[0], (np.ndarray, np.generic, type(None)))):
            return cls._legacy_new(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class Tensor(metaclass=_TensorType):
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
        # autograd (of.autograd): a leaf's flag, a recorded op's result
        # (node, index), the hooks on a leaf's gradient, and for `.data`
        # the tensor whose value this one is
        self._requires_grad = False
        self._grad_fn = None
        self._grad_hooks = None
        self._retains_grad = False
        self._alias = None
        self._pending = None  # the _PendingCall that computes this value
        self._grad = None

    # -- value --------------------------------------------------------------
    def _value(self):
        """This rank's part, pulled from a session if one holds a newer value."""
        if self._program is not None:
            raise RuntimeError(
                "this tensor is a value of a traced program and has no data yet; "
                "return it from the compiled function to get its value")
        if self._alias is not None:
            return self._alias._value()
        if self._pending is not None:
            self._pending.value(self)
        if _pending_calls:  # module state a pending call writes: it runs first
            force_pending(writing=self)
        if self._source is not None:
            self._pull()
        if self._data is None and self._logical is not None:
            _global.materialize(self)
        return self._data

    def _pull(self):
        runner, index = self._source
        self._source = None
        self._data = runner.input(index, self._dtype)

    def _set_value(self, data):
        if self._alias is not None:
            self._alias._set_value(data)
            return
        if _pending_calls:  # they read the value before this write
            force_pending()
        self._data = data
        self._pending = None
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

    @property
    def is_xpu(self):
        """False: of runs on CPUs and CUDA GPUs (scripts test it beside is_cuda)."""
        return False

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

    def numpy(self, force=False):
        """The logical value as a NumPy array (for a global tensor: gathered
        on every rank, a collective call). It never shares memory with the
        tensor's device copy, so `force` (PyTorch's: copy where it would
        not) changes nothing."""
        if self._placement is not None:
            return _global.logical_value(self)
        return self._value()

    def to_local(self):
        if self._placement is None:
            return self
        return Tensor(self._value(), device=self._placement.type)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
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

    def __format__(self, spec):
        """A one-element tensor formats as its number (f"{loss:.4f}"), as
        in PyTorch; others as their repr."""
        if self.numel() == 1 and self._program is None and not self._shape:
            return format(self.item(), spec)
        return object.__format__(self, spec) if not spec else format(repr(self), spec)

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

    # -- autograd (of.autograd) --------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad or self._grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach().")
            return self
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can "
                               "require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient backward accumulated (leaves, and non-leaf tensors
        that retain theirs); PyTorch's warning for another non-leaf's."""
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead.", UserWarning,
                stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def grad_fn(self):
        """The recorded op that computed this tensor (None for a leaf)."""
        return None if self._grad_fn is None else self._grad_fn[0]

    def detach(self):
        """This value without its autograd history. In a traced training
        step there is no stop-gradient op yet, so it is refused there."""
        if self._program is not None:
            if self._program.train:
                raise NotImplementedError(
                    "Tensor.detach() in a compiled training step: of has no stop-gradient "
                    "op yet, so the gradient would flow through it; compute the detached "
                    "value outside the step and pass it in as an input")
            return self
        return self._detached(alias=False)

    def detach_(self):
        if self._program is not None:
            raise NotImplementedError("Tensor.detach_() of a value of a traced program")
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _detached(self, alias):
        if self._lazy():
            out = Tensor(None, shape=self.shape, dtype=self.dtype, placement=self._placement,
                         sbp=self._sbp)
            out._logical = self._logical
        else:
            out = Tensor(self._value(), shape=self.shape, dtype=self.dtype,
                         placement=self._placement, sbp=self._sbp, device=self._local_device)
        if alias:
            out._alias = self
        return out

    @property
    def data(self):
        """The tensor's value outside autograd (PyTorch's `.data`): a tensor
        without history whose in-place writes change this tensor."""
        if self._program is not None:
            return self.detach()
        return self._detached(alias=True)

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

    def contiguous(self):
        return self

    # -- in-place initialisers (eager) -------------------------------------
    def _inplace(self, data):
        """Writes `data` into this tensor: a value that depends on nothing
        (an initialiser, run under no_grad in PyTorch's nn.init)."""
        if self._program is not None:
            raise RuntimeError("in-place initialisation of a traced value")
        if self._placement is not None:
            raise RuntimeError("initialise tensors before to_global()")
        self._set_value(np.ascontiguousarray(data.astype(self._dtype.np)).reshape(self._shape))
        self._grad_fn = None  # a recorded result now holds a constant
        return self

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        unsupported("Tensor.normal_", generator=(generator, None))
        return self._inplace(_random.normal(self._shape, mean, std))

    def uniform_(self, a=0.0, b=1.0):
        return self._inplace(_random.uniform(self._shape, a, b))

    def fill_(self, value):
        return self._inplace(np.full(self._shape, value))

    def zero_(self):
        return self.fill_(0)


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


def output_tensor(data, shape, dtype, plc, dist, device):
    """A plan's output as a tensor: `data` is this rank's part (None: not
    computed yet) of the global tensor of `shape` on `plc` with the output's
    distribution `dist` (all B where the plan gives none), or, without a
    placement, the local tensor on `device`. A uint8 result, computed as
    i32, is narrowed modulo 256 (PyTorch's wraparound)."""
    if data is not None:
        data = dtype.stored(data)
    if plc is not None:
        return Tensor(data, shape=shape, dtype=dtype, placement=plc,
                      sbp=dist or (sbp.broadcast,) * plc.ndim)
    return Tensor(data, shape=shape, dtype=dtype, device=device)


# --------------------------------------------------------------------------
# Converting Python values.

def as_tensor_like(value, like):
    """`value` (a Python number) as a 0-d tensor of `like`'s dtype; a value
    that dtype cannot hold (0.5 as an integer) is an error, not a silent
    truncation."""
    if isinstance(value, Tensor):
        return value
    if like.dtype is dt.uint8 and isinstance(value, int) and not isinstance(value, bool):
        value %= 256  # PyTorch casts a number to the tensor's uint8: -1 is 255
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

