"""of.cuda: whether this process can run "cuda" tensors, asked the way
libofrt asks when a session starts (it loads libcuda.so.1, or
$OF_CUDA_DRIVER, and calls cuInit and cuDeviceGetCount).

    device = "cuda" if of.cuda.is_available() else "cpu"
    model.to(device)
"""

from ._core import _C
from ._dist import process_gpu


def device_count():
    """The CUDA devices the driver sees: 0 without a usable driver."""
    try:
        return _C().cuda_device_count()
    except _C().Error:
        return 0


def is_available():
    return device_count() > 0


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
