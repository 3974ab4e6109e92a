"""Devices, placements and SBP: where a tensor lives and how a global one
is laid out.

    p = of.placement("cpu", ranks=[0, 1])            # 1-D: two ranks
    q = of.placement("cpu", ranks=[[0, 1], [2, 3]])  # 2-D hierarchy
    g = of.placement("cuda", ranks=[0, 1])           # a GPU per rank
    x.to_global(p, of.sbp.split(0))
    y.to_global(q, [of.sbp.split(0), of.sbp.broadcast])

The SBP list has one entry per placement axis. These become the program's
`#of.sbp<@p, [S(0), B]>` encodings; the compiler does the rest.
"""

import os

import numpy as np

from ._runtime import _C, cuda_device_count

DEVICE_TYPES = ("cpu", "cuda")


def process_gpu():
    """The GPU that this process's CUDA sessions use, as libofrt picks it:
    $OF_CUDA_DEVICE, else the launcher's local rank (else 0) modulo the
    GPUs the driver sees."""
    text = os.environ.get("OF_CUDA_DEVICE")
    if text:
        if not text.isdigit():
            raise ValueError(f"OF_CUDA_DEVICE={text!r} is not a device ordinal")
        return int(text)
    local = 0
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                "LOCAL_RANK"):
        text = os.environ.get(var)
        if text:
            local = int(text) if text.isdigit() else 0
            break
    count = cuda_device_count() if local else 0
    return local % count if count else local


class device(str):
    """A device kind: "cpu" or "cuda", a string with PyTorch's `.type` and
    `.index`. A local tensor's device says which pipeline compiles the ops
    on it: a "cuda" tensor's run on this process's GPU, which libofrt picks
    (`process_gpu()`), so "cuda:N" (or N) is accepted only when it names
    that one."""

    def __new__(cls, value="cpu"):
        if isinstance(value, device):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            value = f"cuda:{value}"  # an index is a GPU's, as in PyTorch
        text = str(value)
        kind, colon, index = text.partition(":")
        if kind not in DEVICE_TYPES or (colon and (kind == "cpu" or not index.isdigit())):
            raise ValueError(f"of.device: {value!r} is not a device; this build knows "
                             f"'cpu' and 'cuda' (or 'cuda:N')")
        if colon and int(index) != process_gpu():
            raise ValueError(
                f"of.device: {value!r}: this process runs its GPU work on GPU "
                f"{process_gpu()} (libofrt picks $OF_CUDA_DEVICE, else the local rank); "
                f"set OF_CUDA_DEVICE={index} before starting it to use GPU {index}")
        return _KINDS[kind] if kind in _KINDS else super().__new__(cls, kind)

    @property
    def type(self):
        return str(self)

    @property
    def index(self):
        return process_gpu() if self == "cuda" else None

    def __repr__(self):
        return f"device(type={str(self)!r})"


_KINDS = {}
_KINDS.update((kind, device(kind)) for kind in DEVICE_TYPES)
CPU = _KINDS["cpu"]


class _Sbp:
    __slots__ = ("kind", "axis")

    def __init__(self, kind, axis=None):
        self.kind = kind  # "S", "B", "P", "Pmax"
        self.axis = axis

    def code(self):
        """The entry's code in a plan distribution (OF/ABI/Sbp.h)."""
        if self.kind == "S":
            return self.axis
        c = _C()
        return {"B": c.SBP_BROADCAST, "P": c.SBP_PARTIAL_SUM, "Pmax": c.SBP_PARTIAL_MAX}[self.kind]

    def mlir(self):
        """The entry as #of.sbp writes it (the compiler's printer)."""
        return _C().sbp_text(self.code())

    def __eq__(self, other):
        return isinstance(other, _Sbp) and (self.kind, self.axis) == (other.kind, other.axis)

    def __hash__(self):
        return hash((self.kind, self.axis))

    def __repr__(self):
        if self.kind == "S":
            return f"of.sbp.split({self.axis})"
        return {"B": "of.sbp.broadcast", "P": "of.sbp.partial_sum",
                "Pmax": "of.sbp.partial_max"}[self.kind]


class sbp:
    """of.sbp.split(d), of.sbp.broadcast, of.sbp.partial_sum."""
    broadcast = _Sbp("B")
    partial_sum = _Sbp("P")
    partial_max = _Sbp("Pmax")

    @staticmethod
    def split(dim):
        if not isinstance(dim, int) or dim < 0:
            raise ValueError(f"of.sbp.split takes a non-negative dimension, not {dim!r}")
        return _Sbp("S", dim)


def _sbp_from_runtime(code):
    """The entry of a runtime distribution's SBP code (OF/ABI/Sbp.h)."""
    if code >= 0:
        return sbp.split(code)
    return {s.code(): s for s in (sbp.broadcast, sbp.partial_sum, sbp.partial_max)}[code]


class placement:
    """Devices a global tensor lives on: a device type and a grid of ranks
    (a list, or a list of lists for a 2-D hierarchy)."""

    def __init__(self, type="cpu", ranks=None):  # noqa: A002 (OneFlow's name)
        if type not in DEVICE_TYPES:
            raise ValueError(f"of.placement: device type {type!r} is not supported by "
                             f"this build (it knows {', '.join(DEVICE_TYPES)})")
        if ranks is None:
            raise ValueError("of.placement needs ranks, e.g. ranks=[0, 1]")
        grid = np.array(ranks)
        if grid.dtype.kind not in "iu" or grid.ndim not in (1, 2) or grid.size == 0:
            raise ValueError(f"of.placement: ranks must be a non-empty list or list of "
                             f"lists of integers, not {ranks!r}")
        flat = [int(r) for r in grid.reshape(-1)]
        if len(set(flat)) != len(flat) or min(flat) < 0:
            raise ValueError(f"of.placement: ranks must be distinct and non-negative: {ranks!r}")
        self.type = type
        self.hierarchy = tuple(int(d) for d in grid.shape)
        self.ranks = tuple(flat)

    @property
    def ndim(self):
        return len(self.hierarchy)

    def symbol(self):
        """The placement's symbol in a program: unique per grid."""
        dims = "x".join(map(str, self.hierarchy))
        if self.ranks == tuple(range(len(self.ranks))):
            return f"p{dims}"
        return f"p{dims}_" + "_".join(map(str, self.ranks))

    def mlir(self):
        attrs = f'device = "{self.type}", shape = [{", ".join(map(str, self.hierarchy))}]'
        if self.ranks != tuple(range(len(self.ranks))):
            attrs += f', ranks = [{", ".join(map(str, self.ranks))}]'
        return f"of.placement @{self.symbol()} {{{attrs}}}"

    def __eq__(self, other):
        return (isinstance(other, placement) and self.type == other.type
                and self.hierarchy == other.hierarchy and self.ranks == other.ranks)

    def __hash__(self):
        return hash((self.type, self.hierarchy, self.ranks))

    def __repr__(self):
        grid = np.array(self.ranks).reshape(self.hierarchy).tolist()
        return f"of.placement(type={self.type!r}, ranks={grid})"


def normalize_sbp(plc, value, ndim):
    """The SBP list of a tensor of rank `ndim` on `plc`, checked."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) != plc.ndim:
        raise ValueError(f"the placement {plc} has {plc.ndim} axes, so the SBP needs "
                         f"{plc.ndim} entries, not {len(items)} ({items})")
    for s in items:
        if not isinstance(s, _Sbp):
            raise TypeError(f"an SBP entry must be of.sbp.split(d), of.sbp.broadcast or "
                            f"of.sbp.partial_sum, not {s!r}")
        if s.kind == "S" and s.axis >= ndim:
            raise ValueError(f"{s} splits dimension {s.axis} of a tensor of rank {ndim}")
    return tuple(items)
