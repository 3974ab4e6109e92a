"""of.accelerator: torch.accelerator's names, which current PyTorch scripts
use to pick a device:

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")

of's one accelerator is CUDA (of.cuda). Whether it is there is a runtime
question (libofrt loads the CUDA driver when a session starts), so
current_accelerator() answers as a CPU-only PyTorch build does where no GPU
is (None) and as a CUDA build does where one is (device(type='cuda')).
"""

import contextlib

from . import cuda
from ._dist import device as _device


def is_available():
    """Whether a GPU can run "cuda" tensors in this process."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device(type='cuda') where a GPU is, else None (the index is None, as
    in PyTorch: current_device_index() gives it)."""
    del check_available  # of's answer is always the runtime one
    return _device("cuda") if cuda.is_available() else None


def device_count():
    """How many GPUs the CUDA driver sees (0 without an accelerator)."""
    return cuda.device_count() if cuda.is_available() else 0


def _require():
    if not cuda.is_available():
        raise RuntimeError(f"no accelerator is available: {cuda.unavailable_reason()}")


def current_device_index():
    """The GPU this process's CUDA sessions use."""
    _require()
    return cuda.current_device()


def _index(device):
    if isinstance(device, int):
        return device
    device = _device(device)
    if device.type != "cuda":
        raise ValueError(f"{device} is not of's accelerator (cuda)")
    return cuda.current_device() if device.index is None else device.index


def set_device_index(device, /):
    """Accepts this process's GPU (an index, "cuda:N" or an of.device); a
    negative index is ignored, as in PyTorch. libofrt gives a process its
    GPU before any tensor is made ($OF_CUDA_DEVICE, else the local rank),
    so another one is an error, not a silent no-op."""
    index = _index(device)
    if index < 0:
        return
    _require()
    if index != cuda.current_device():
        raise RuntimeError(f"this process runs on GPU {cuda.current_device()} (chosen by "
                           f"$OF_CUDA_DEVICE or the local rank); it can not switch to {index}")


@contextlib.contextmanager
def device_index(device, /):
    """Runs the block on GPU `device` (None: no change); see set_device_index."""
    if device is not None:
        set_device_index(device)
    yield


def synchronize(device=None, /):
    """Nothing to wait for (see of.cuda.synchronize)."""
    cuda.synchronize(device)


def empty_cache():
    """Nothing to release: libofrt frees a run's device memory when it ends."""


current_device_idx = current_device_index
set_device_idx = set_device_index

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "device_count", "device_index", "empty_cache", "is_available",
           "set_device_idx", "set_device_index", "synchronize"]
