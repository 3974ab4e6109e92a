"""of.cuda: whether this process can run "cuda" tensors, asked the way
libofrt asks when a session starts (it loads libcuda.so.1, or
$OF_CUDA_DRIVER, and calls cuInit and cuDeviceGetCount), and which GPU
architecture the frontend compiles for.

    device = "cuda" if of.cuda.is_available() else "cpu"
    model.to(device)

The first of these calls initialises the CUDA driver in this process
(cuInit), after which a fork() must not use CUDA; start other processes
with exec (subprocess, the launcher) instead.
"""

import os
import re

from . import _random
from ._dist import device as _device, process_gpu
from ._runtime import _C, cuda_device_count as device_count

# `amp` (torch.cuda.amp: autocast, GradScaler) is of.amp.cuda_amp, set by the
# package's __init__: of.amp works on tensors, whose module imports this one.

# What --of-pipeline=cuda builds when no GPU says otherwise: the H100/H200.
DEFAULT_CHIP = "sm_90a"


def is_available():
    return device_count() > 0


def is_bf16_supported(including_emulation=True):
    """Whether this process's GPU computes in bfloat16: CUDA is available and
    the GPU's compute capability is 8.0 or later, PyTorch's test. (With
    `including_emulation` PyTorch also counts older GPUs, where it can store
    bfloat16 tensors; of does not claim bfloat16 kernels for those.)"""
    return is_available() and get_device_capability() >= (8, 0)


def unavailable_reason():
    """Why "cuda" tensors cannot run here (None when they can)."""
    try:
        return None if _C().cuda_device_count() > 0 else "the CUDA driver sees no device"
    except _C().Error as e:
        return str(e)


def current_device():
    """The GPU this process's CUDA sessions use ($OF_CUDA_DEVICE, else the
    local rank)."""
    return process_gpu()


def get_device_capability(index=None):
    """(major, minor) of GPU `index` (this process's by default)."""
    return tuple(_C().cuda_device_capability(process_gpu() if index is None else index))


def chip():
    """The GPU architecture that "cuda" programs are compiled for: $OF_CUDA_CHIP
    (sm_80, sm_90a, ...), else this process's GPU (9.0 is sm_90a, whose
    kernels are the pipeline's default; others sm_XY), else sm_90a: plans
    compiled where no GPU is (save_plan) are for an H100/H200."""
    name = os.environ.get("OF_CUDA_CHIP")
    if name:
        if not re.fullmatch(r"sm_\d+a?", name):
            raise ValueError(f"OF_CUDA_CHIP={name!r} is not a GPU architecture "
                             "(sm_80, sm_90a, sm_100, ...)")
        return name
    if not is_available():
        return DEFAULT_CHIP
    major, minor = get_device_capability()
    return DEFAULT_CHIP if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def synchronize(device=None):
    """Nothing to wait for: every eager op and compiled step returns when its
    GPU work is done (a libofrt run synchronizes its streams before it
    returns), so timing code written for PyTorch measures the same."""


def set_device(device):
    """Checks that `device` (an index, "cuda:N" or an of.device) is this
    process's GPU: libofrt gives a process one ($OF_CUDA_DEVICE, else the
    local rank), chosen before any tensor is made."""
    _device(device)


def manual_seed(seed):
    """Seeds of's one generator (the CPU's and the GPU's are the same)."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed
