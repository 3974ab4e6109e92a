"""Placements and SBP: where a global tensor lives and how it is laid out.

    p = of.placement("cpu", ranks=[0, 1])            # 1-D: two ranks
    q = of.placement("cpu", ranks=[[0, 1], [2, 3]])  # 2-D hierarchy
    x.to_global(p, of.sbp.split(0))
    y.to_global(q, [of.sbp.split(0), of.sbp.broadcast])

The SBP list has one entry per placement axis. These become the program's
`#of.sbp<@p, [S(0), B]>` encodings; the compiler does the rest.
"""

import numpy as np


class _Sbp:
    __slots__ = ("kind", "axis")

    def __init__(self, kind, axis=None):
        self.kind = kind  # "S", "B", "P", "Pmax"
        self.axis = axis

    def mlir(self):
        if self.kind == "S":
            return f"S({self.axis})"
        return {"B": "B", "P": "P", "Pmax": "P(max)"}[self.kind]

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
    if code >= 0:
        return sbp.split(code)
    return {-1: sbp.broadcast, -2: sbp.partial_sum, -3: sbp.partial_max}[code]


class placement:
    """Devices a global tensor lives on: a device type and a grid of ranks
    (a list, or a list of lists for a 2-D hierarchy)."""

    def __init__(self, type="cpu", ranks=None):  # noqa: A002 (OneFlow's name)
        if type != "cpu":
            raise ValueError(f"of.placement: device type {type!r} is not supported by "
                             "this build (cpu); the CUDA runtime is issue 7")
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
