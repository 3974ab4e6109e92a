"""torch.autocast for of: a context manager and decorator that runs the ops
of a region in mixed precision. It sets this thread's autocast state
(_autocast.py); the ops of PyTorch's autocast lists read it (_ops.py,
nn.functional) and cast their arguments as PyTorch's do, with casts that
are ordinary ops: eager autograd records them, and a traced function
(of.compile) contains them."""

import functools
import warnings

from .. import _autocast, cuda
from .. import _dtype as dt

__all__ = ["autocast", "is_autocast_available"]


def is_autocast_available(device_type):
    """Whether autocast runs on `device_type` here: "cpu" and "cuda"."""
    return device_type in _autocast.POLICIES


class autocast:
    """Runs the ops of a region (a `with` block, or a decorated function) in
    an op-specific dtype, as PyTorch's autocast does on `device_type`
    ("cpu" or "cuda"): matmuls, linear layers, convolutions and attention
    in `dtype` (by default bfloat16 on the CPU, float16 on CUDA), losses in
    float32 (on CUDA also softmax, norms, exp/log/pow and sums), and
    operands of different floating-point dtypes promoted as PyTorch's type
    promotion does. The state is per thread; regions nest (an inner
    `autocast(..., enabled=False)` turns it off). `cache_enabled` chooses
    whether PyTorch keeps the casts of weights for the region, not what is
    computed: of casts a weight at each use."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _autocast.check_device_type(device_type)
        self.device = str(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        if not isinstance(self.fast_dtype, dt.dtype):
            raise TypeError(f"autocast: dtype must be an of dtype (of.bfloat16, of.float16), "
                            f"not {self.fast_dtype!r}")
        self._cache_enabled = _autocast.state.cache_enabled if cache_enabled is None \
            else cache_enabled
        if enabled:
            if self.device == "cuda":
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype is dt.bfloat16 and not cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please "
                                       "switch dtype to float16.")
            elif self.fast_dtype not in (dt.bfloat16, dt.float16):
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              f"{dt.bfloat16}, {dt.float16} currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        state = _autocast.state
        self.prev_cache_enabled = state.cache_enabled
        self.prev = state.enabled[self.device]
        self.prev_fastdtype = state.dtype[self.device]
        state.enabled[self.device] = self._enabled
        state.dtype[self.device] = self.fast_dtype
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        state = _autocast.state
        state.nesting -= 1
        state.enabled[self.device] = self.prev
        state.dtype[self.device] = self.prev_fastdtype
        state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


# torch.* functions of the autocast state.

def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` (CUDA's without one, as in
    PyTorch)."""
    return _autocast.state.enabled[_autocast.check_device_type(device_type or "cuda")]


def set_autocast_enabled(device_type, enabled=None):
    """Turns autocast on or off for `device_type` (PyTorch's older
    set_autocast_enabled(enabled) is CUDA's)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _autocast.state.enabled[_autocast.check_device_type(device_type)] = bool(enabled)


def get_autocast_dtype(device_type):
    """The dtype autocast computes `device_type`'s listed ops in."""
    return _autocast.state.dtype[_autocast.check_device_type(device_type)]


def set_autocast_dtype(device_type, dtype):
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"set_autocast_dtype: {dtype!r} is not an of dtype")
    _autocast.state.dtype[_autocast.check_device_type(device_type)] = dtype


def is_autocast_cache_enabled():
    return _autocast.state.cache_enabled


def set_autocast_cache_enabled(enabled):
    """Whether PyTorch keeps the casts of weights inside a region: how it
    computes, not what; of casts a weight at each use either way."""
    _autocast.state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Nothing to clear: of keeps no casts of weights."""
