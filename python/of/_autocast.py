"""The autocast state (torch.autocast's, per thread) and PyTorch's autocast
op lists, read by the ops in _ops.py and nn.functional; the context
manager that sets the state is of.amp.autocast.

PyTorch's autocast (aten/src/ATen/autocast_mode.cpp) gives each listed op
a policy per device type:

- lower_precision_fp: the floating-point tensor arguments on that device,
  float64 ones aside, are cast to the region's dtype (bfloat16 or float16)
  and the op runs there: matmul, linear, conv2d, scaled_dot_product_attention.
- fp32: the same arguments are cast to float32: the losses on both devices;
  on CUDA also exp, log, rsqrt, pow (and square, which PyTorch computes as
  pow), layer_norm and rms_norm.
- fp32_set_opt_dtype: the op's `dtype=` becomes float32 where the caller
  left it None and the first argument is eligible: softmax, log_softmax and
  sum on CUDA.

The op itself then runs with autocast off (PyTorch excludes its autocast
dispatch keys inside the kernel), so the ops an of op is composed of do not
apply the policies again (`suspended`). Ops outside the lists run in the
dtype of their inputs. The lists hold the ops of PyTorch's lists that of
has; they were read from PyTorch 2.x by running each op under autocast (on
FakeTensors for CUDA), with the results test_amp.py checks on the CPU.

Mixed floating-point operands, which the policies make (a bfloat16 matmul
result added to a float32 residual), follow PyTorch's type promotion inside
an autocast region (_ops.promoted); outside one, of keeps refusing mixed
dtypes."""

import contextlib
import threading

from . import _dtype as dt

LOWER = "lower_precision_fp"
FP32 = "fp32"
FP32_DTYPE = "fp32_set_opt_dtype"

_LOWER_OPS = ("matmul", "linear", "conv2d", "scaled_dot_product_attention")
_LOSSES = ("cross_entropy", "nll_loss", "mse_loss")

POLICIES = {
    "cpu": {**{op: LOWER for op in _LOWER_OPS}, **{op: FP32 for op in _LOSSES}},
    "cuda": {**{op: LOWER for op in _LOWER_OPS}, **{op: FP32 for op in _LOSSES},
             **{op: FP32 for op in ("exp", "log", "rsqrt", "pow", "square",
                                    "layer_norm", "rms_norm")},
             **{op: FP32_DTYPE for op in ("softmax", "log_softmax", "sum")}},
}

# The region's dtype where autocast(dtype=None) does not say (PyTorch's
# torch.get_autocast_dtype defaults).
DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}


class _State(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.suspended = 0  # inside an op that applied its policy


state = _State()


def check_device_type(device_type):
    """`device_type` ("cpu" or "cuda"), or PyTorch's error for a device it
    does not know; one PyTorch knows but of does not run is
    NotImplementedError."""
    if device_type in state.enabled:
        return device_type
    if device_type in _TORCH_DEVICE_TYPES:
        raise NotImplementedError(
            f"autocast on device_type '{device_type}' is not supported: of runs ops on "
            "'cpu' and 'cuda'")
    raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: "
                       f"{device_type}")


_TORCH_DEVICE_TYPES = ("ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                       "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                       "privateuseone")


def is_enabled(device_type):
    return state.enabled[device_type]


def any_enabled():
    return state.enabled["cpu"] or state.enabled["cuda"]


def policy(op, device_type):
    """The policy of `op` for tensors on `device_type` now (None: the op
    runs as it is)."""
    if state.suspended or not state.enabled.get(device_type, False):
        return None
    return POLICIES[device_type].get(op)


def fast_dtype(device_type):
    return state.dtype[device_type]


def key():
    """What of the state changes a traced program: part of a compiled
    function's cache key, so that a function traced inside a region is not
    reused outside it (or in one of another dtype)."""
    return tuple((d, state.enabled[d], state.dtype[d].name) for d in sorted(state.enabled)
                 if state.enabled[d])


def snapshot():
    """The state (enabled devices and dtypes) as it is now."""
    return dict(state.enabled), dict(state.dtype)


@contextlib.contextmanager
def restored(saved):
    """The state `snapshot()` returned, for the duration (a pending call of
    a compiled forward traced for a fused step outside its region)."""
    previous = snapshot()
    state.enabled, state.dtype = dict(saved[0]), dict(saved[1])
    try:
        yield
    finally:
        state.enabled, state.dtype = previous


@contextlib.contextmanager
def suspended():
    """The ops of an op that applied its policy run without the policies
    (type promotion stays, as in PyTorch)."""
    state.suspended += 1
    try:
        yield
    finally:
        state.suspended -= 1
