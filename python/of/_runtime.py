"""The binding to the runtime: the extension of._C (the compiler and
libofrt), loaded on first use, and what this process asks it once: its
place in an MPI job and the CUDA devices the driver sees. Sessions of plans
are `_session.Runner`."""


def _C():
    from . import _C as module  # the extension; imported on first use
    return module


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


_cuda_count = None


def cuda_device_count():
    """The CUDA devices the driver sees: 0 without a usable driver. (libofrt
    loads and initialises the driver once per process, so the answer does
    not change: it is asked once.)"""
    global _cuda_count
    if _cuda_count is None:
        try:
            _cuda_count = _C().cuda_device_count()
        except _C().Error:
            _cuda_count = 0
    return _cuda_count
