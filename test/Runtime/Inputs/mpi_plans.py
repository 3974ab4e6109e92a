"""Multi-rank plans for the MPI tests of of-run, checked against NumPy.

  mpi_plans.py run CASE DIR [-n N] [of-run options...]
      writes DIR/CASE.mlir (ofrt text, one program per role: ranks whose
      programs are the same text share one), translates it with
      of-translate, writes the global inputs as .npy, runs of-run -n N
      (default: the plan's world size) and checks every output against
      NumPy. Prints "CASE: N outputs match" and exits 0, or prints what
      differs and exits 1.
  mpi_plans.py exec CASE DIR [of-run options...]
      writes the plan and inputs, runs of-run PLAN --input ... --output-dir
      DIR/out with the options as given (no -n added), forwards its output
      and exits with its exit code.
  mpi_plans.py write CASE DIR
      only writes DIR/CASE.mlir, DIR/CASE.ofp and the inputs (and prints the
      of-run arguments that bind them).

The plans are hand-built ofrt: input buffers with distributions, arena
buffers, collectives, copies and outputs; no kernels. Each rank's part of
every result is made visible: a result that every rank holds whole is copied
into a [1, ...] buffer (a [1, 1, ...] one on a 2-d mesh) that is output
S(0) over the ranks, so the gathered output stacks every rank's copy; a
chunked result is output with the S distribution it has. The expected values
come from NumPy directly (np.split, sums, maxima), not from a second
implementation of the runtime.
"""
import os
import subprocess
import sys
import time

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
          "i64": np.int64, "i32": np.int32}
MLIR_TYPES = {"f32": "f32", "f64": "f64", "f16": "f16", "i64": "i64",
              "i32": "i32"}


def chunk(e, p, k):
    return e // p + (1 if k < e % p else 0)


def offset(e, p, k):
    return k * (e // p) + min(k, e % p)


def split(x, p, axis):
    """The balanced chunks of x along axis (what member k of p holds)."""
    e = x.shape[axis]
    return [np.take(x, range(offset(e, p, k), offset(e, p, k) + chunk(e, p, k)),
                    axis=axis) for k in range(p)]


def grid(mesh, index):
    coords = []
    for extent in reversed(mesh):
        coords.append(index % extent)
        index //= extent
    return list(reversed(coords))


def local_shape(global_shape, mesh, sbp, member):
    shape = list(global_shape)
    coords = grid(mesh, member)
    for axis, entry in enumerate(sbp):
        if entry >= 0:
            shape[entry] = chunk(shape[entry], mesh[axis], coords[axis])
    return shape


def ints(values):
    return ", ".join(str(v) for v in values)


def tensor(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + MLIR_TYPES[dtype] + ">"


S, B, P, PMAX = 0, -1, -2, -3


class Dist:
    def __init__(self, global_shape, mesh, mesh_ranks, sbp):
        self.global_shape, self.mesh = list(global_shape), list(mesh)
        self.mesh_ranks, self.sbp = list(mesh_ranks), list(sbp)

    def local(self, rank):
        return local_shape(self.global_shape, self.mesh, self.sbp,
                           self.mesh_ranks.index(rank))

    def attr(self):
        sbp = ", ".join(f"S({e})" if e >= 0 else {B: "B", P: "P", PMAX: "P(max)"}[e]
                        for e in self.sbp)
        return ("#ofrt.dist<global_shape = [" + ints(self.global_shape) +
                "], mesh = [" + ints(self.mesh) +
                "], mesh_ranks = [" + ints(self.mesh_ranks) +
                "], sbp = [" + sbp + "]>")


class Program:
    """The program one rank runs; `rank` and `world` describe that rank."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.lines, self.arena = [], 0
        self.shapes, self.offsets = {}, {}

    def input(self, name, dtype, dist):
        shape = dist.local(self.rank)
        size = int(np.prod(shape)) * np.dtype(DTYPES[dtype]).itemsize
        self.lines.append(f'ofrt.buffer @{name} input binding "{name}" size '
                          f'{size} {{dist = {dist.attr()}}} : '
                          f'{tensor(shape, dtype)}')
        self.shapes[name] = (shape, dtype)
        return name

    def buffer(self, name, dtype, shape, at=None):
        """An arena buffer (at `at`, an existing buffer's offset, to alias)."""
        size = int(np.prod(shape)) * np.dtype(DTYPES[dtype]).itemsize
        if at is None:
            place = self.arena
            self.arena += (size + 63) // 64 * 64 or 64
        else:
            place = self.offsets[at]
        self.offsets[name] = place
        self.lines.append(f"ofrt.buffer @{name} arena offset {place} size "
                          f"{size} : {tensor(shape, dtype)}")
        self.shapes[name] = (list(shape), dtype)
        return name

    def collective(self, kind, src, dst, group, mesh=None, axis=0, shape=None,
                   dim=0, dim2=0, reduce="sum", peer=None):
        attrs = []
        if peer is not None:
            attrs.append(f"peer = {peer} : i64")
        if mesh is not None:
            attrs.append(f"mesh = array<i64: {ints(mesh)}>")
        if axis:
            attrs.append(f"axis = {axis} : i64")
        if shape is not None:
            attrs.append(f"shape = array<i64: {ints(shape)}>")
        if dim:
            attrs.append(f"dim = {dim} : i64")
        if dim2:
            attrs.append(f"dim2 = {dim2} : i64")
        text = (f'ofrt.collective {kind} @{src} to @{dst} group '
                f'[{ints(group)}]')
        if reduce != "sum":
            text += f" reduce {reduce}"
        if attrs:
            text += " {" + ", ".join(attrs) + "}"
        self.lines.append(text)

    def copy(self, src, dst):
        shape, dtype = self.shapes[src]
        size = int(np.prod(shape)) * np.dtype(DTYPES[dtype]).itemsize
        self.lines.append(f"ofrt.copy @{src} to @{dst} {{bytes = {size} : i64}}")

    def output(self, name, buffer, dist=None):
        text = f'ofrt.output "{name}" = @{buffer}'
        if dist is not None:
            text += f" {{dist = {dist.attr()}}}"
        self.lines.append(text)

    def stacked(self, name, buffer, mesh=None, ranks=None):
        """Outputs `buffer` (the same shape on every rank) so that the
        gathered output stacks every rank's value: [p, ...] over a 1-d mesh,
        [m0, m1, ...] over a 2-d one."""
        shape, dtype = self.shapes[buffer]
        ranks = ranks if ranks is not None else list(range(self.world))
        mesh = mesh if mesh is not None else [len(ranks)]
        lead = [1] * len(mesh)
        alias = self.buffer(f"{buffer}_stacked", dtype, lead + shape)
        self.copy(buffer, alias)
        self.output(name, alias,
                    Dist(mesh + shape, mesh, ranks, list(range(len(mesh)))))

    def text(self, ranks):
        body = "\n".join("    " + line for line in self.lines)
        return (f'  ofrt.program "main" attributes {{arena_size = '
                f'{max(self.arena, 64)} : i64, device = "cpu", ranks = '
                f'array<i64: {ints(ranks)}>}} {{\n{body}\n  }}\n')


def plan_text(world, build):
    """Builds every rank's program and merges ranks with the same text."""
    roles = {}
    for rank in range(world):
        program = Program(rank, world)
        build(program)
        key = (tuple(program.lines), program.arena)
        roles.setdefault(key, (program, []))[1].append(rank)
    return "module {\n" + "".join(
        program.text(ranks) for program, ranks in roles.values()) + "}\n", \
        len(roles)


#===------------------------------------------------------------------------===#
# The cases: each returns (world, build, inputs, expected outputs)
#===------------------------------------------------------------------------===#

def rng(seed):
    return np.random.default_rng(seed)


def case_kinds2():
    """Every kind on 2 ranks, even chunks, f32 and i64, dim 0 and dim 1."""
    r = rng(1)
    x = r.standard_normal((4, 6)).astype(np.float32)
    y = r.integers(-1000, 1000, (4, 6)).astype(np.int64)
    z = r.standard_normal(3).astype(np.float32)
    w = r.standard_normal(3).astype(np.float32)
    h = r.standard_normal((4, 6)).astype(np.float16)
    n = r.integers(-2**31, 2**31 - 1, (4, 6)).astype(np.int32)
    g = [0, 1]
    xs, ys = split(x, 2, 0), split(y, 2, 1)
    hs, ns = split(h, 2, 0), split(n, 2, 0)

    def build(p):
        k = p.rank
        p.input("x", "f32", Dist([4, 6], [2], g, [0]))
        p.input("y", "i64", Dist([4, 6], [2], g, [1]))
        p.input("z", "f32", Dist([3], [2], g, [B]))
        p.input("w", "f32", Dist([3], [2], g, [P]))
        p.input("h", "f16", Dist([4, 6], [2], g, [0]))
        p.input("n", "i32", Dist([4, 6], [2], g, [0]))
        # f16 reduces through MPI user operations (f32 arithmetic, rounded);
        # i32 sums wrap.
        p.buffer("hsum", "f16", [2, 6])
        p.collective("all_reduce", "h", "hsum", g, shape=[2, 6])
        p.stacked("all_reduce_f16", "hsum")
        p.buffer("hmax", "f16", [2, 6])
        p.collective("all_reduce", "h", "hmax", g, shape=[2, 6], reduce="max")
        p.stacked("all_reduce_max_f16", "hmax")
        p.buffer("nrs", "i32", [2, 3])
        p.collective("reduce_scatter", "n", "nrs", g, shape=[2, 6], dim=1)
        p.output("reduce_scatter_i32", "nrs", Dist([2, 6], [2], g, [1]))
        p.buffer("ar", "f32", [2, 6])
        p.collective("all_reduce", "x", "ar", g, shape=[2, 6])
        p.stacked("all_reduce_sum", "ar")
        p.buffer("armax", "i64", [4, 3])
        p.collective("all_reduce", "y", "armax", g, reduce="max",
                     shape=[4, 3])
        p.stacked("all_reduce_max_i64", "armax")
        p.buffer("ag0", "f32", [4, 6])
        p.collective("all_gather", "x", "ag0", g, shape=[4, 6], dim=0)
        p.stacked("all_gather_dim0", "ag0")
        p.buffer("ag1", "i64", [4, 6])
        p.collective("all_gather", "y", "ag1", g, shape=[4, 6], dim=1)
        p.stacked("all_gather_dim1_i64", "ag1")
        p.buffer("rs1", "f32", [2, 3])
        p.collective("reduce_scatter", "x", "rs1", g, shape=[2, 6], dim=1)
        p.output("reduce_scatter_dim1", "rs1", Dist([2, 6], [2], g, [1]))
        p.buffer("rs0", "i64", [2, 3])
        p.collective("reduce_scatter", "y", "rs0", g, shape=[4, 3], dim=0,
                     reduce="max")
        p.output("reduce_scatter_max_i64", "rs0", Dist([4, 3], [2], g, [0]))
        p.buffer("a2a", "f32", [4, 3])
        p.collective("all_to_all", "x", "a2a", g, shape=[4, 6], dim=0, dim2=1)
        p.output("all_to_all_s0_s1", "a2a", Dist([4, 6], [2], g, [1]))
        p.buffer("a2a_i", "i64", [2, 6])
        p.collective("all_to_all", "y", "a2a_i", g, shape=[4, 6], dim=1,
                     dim2=0)
        p.output("all_to_all_s1_s0_i64", "a2a_i", Dist([4, 6], [2], g, [0]))
        p.buffer("bc", "f32", [2, 6])
        p.collective("broadcast", "x", "bc", g, shape=[2, 6])
        p.stacked("broadcast", "bc")
        p.buffer("sl", "f32", [2, 3])
        p.collective("slice", "x", "sl", g, shape=[2, 6], dim=1)
        p.output("slice_dim1", "sl", Dist([2, 6], [2], g, [1]))
        p.buffer("tp", "f32", [2, 6])
        p.collective("to_partial", "x", "tp", g, shape=[2, 6])
        p.stacked("to_partial", "tp")
        p.buffer("tpmax", "f32", [2, 6])
        p.collective("to_partial", "x", "tpmax", g, shape=[2, 6],
                     reduce="max")
        p.stacked("to_partial_max", "tpmax")
        p.buffer("sr", "f32", [2, 6])
        if k == 0:
            # A send writes nothing: rank 0's sr holds its own x (an
            # unwritten arena buffer would not verify).
            p.copy("x", "sr")
            p.collective("send", "x", "sr", g, peer=1)
        else:
            p.collective("recv", "x", "sr", g, peer=0)
        p.stacked("send_recv", "sr")
        # Inputs: S gathered back, B and P as every rank holds them, and P
        # gathered (summed).
        p.output("input_s0", "x", Dist([4, 6], [2], g, [0]))
        p.stacked("input_b", "z")
        p.stacked("input_p", "w")
        p.output("input_p_summed", "w", Dist([3], [2], g, [P]))
        p.output("input_b_gathered", "z", Dist([3], [2], g, [B]))

    ninf = np.full((2, 6), -np.inf, np.float32)
    with np.errstate(over="ignore"):
        wrapped = (ns[0].astype(np.int64) + ns[1]).astype(np.int32)
    expected = {
        "all_reduce_f16": np.stack([hs[0] + hs[1]] * 2),
        "all_reduce_max_f16": np.stack([np.maximum(hs[0], hs[1])] * 2),
        "reduce_scatter_i32": wrapped,
        "all_reduce_sum": np.stack([xs[0] + xs[1]] * 2),
        "all_reduce_max_i64": np.stack([np.maximum(ys[0], ys[1])] * 2),
        "all_gather_dim0": np.stack([x, x]),
        "all_gather_dim1_i64": np.stack([y, y]),
        "reduce_scatter_dim1": xs[0] + xs[1],
        "reduce_scatter_max_i64": np.maximum(ys[0], ys[1]),
        "all_to_all_s0_s1": x,
        "all_to_all_s1_s0_i64": y,
        "broadcast": np.stack([xs[0], xs[0]]),
        "slice_dim1": np.concatenate([xs[0][:, :3], xs[1][:, 3:]], axis=1),
        "to_partial": np.stack([xs[0], np.zeros_like(xs[0])]),
        "to_partial_max": np.stack([xs[0], ninf]),
        "send_recv": np.stack([xs[0], xs[0]]),
        "input_s0": x,
        "input_b": np.stack([z, z]),
        "input_p": np.stack([w, np.zeros_like(w)]),
        "input_p_summed": w,
        "input_b_gathered": z,
    }
    return 2, build, {"x": x, "y": y, "z": z, "w": w, "h": h, "n": n}, \
        expected


def case_uneven4():
    """4 ranks with uneven chunks (7 rows, 5 and 6 columns, an empty chunk),
    hence one program per role; dim != 0 and a 3-d all_to_all."""
    r = rng(2)
    x = r.standard_normal((7, 5)).astype(np.float32)
    y = r.integers(-50, 50, (3, 6)).astype(np.int64)
    z = r.standard_normal((4, 7, 3)).astype(np.float32)
    u = r.standard_normal((3, 5, 6)).astype(np.float32)
    pv = r.standard_normal((3, 2)).astype(np.float32)
    q = r.standard_normal(5).astype(np.float32)
    g = [0, 1, 2, 3]

    def build(p):
        k = p.rank
        p.input("x", "f32", Dist([7, 5], [4], g, [0]))
        p.input("y", "i64", Dist([3, 6], [4], g, [1]))
        p.input("z", "f32", Dist([4, 7, 3], [4], g, [0]))
        p.input("u", "f32", Dist([3, 5, 6], [4], g, [1]))
        p.input("pv", "f32", Dist([3, 2], [4], g, [P]))
        p.input("q", "f32", Dist([5], [4], g, [PMAX]))
        p.buffer("ag0", "f32", [7, 5])
        p.collective("all_gather", "x", "ag0", g, shape=[7, 5], dim=0)
        p.stacked("all_gather_7_rows", "ag0")
        p.buffer("ag1", "i64", [3, 6])
        p.collective("all_gather", "y", "ag1", g, shape=[3, 6], dim=1)
        p.stacked("all_gather_6_cols_i64", "ag1")
        # z's part is [1, 7, 3]; viewed as [7, 3] (the same bytes).
        p.buffer("zl", "f32", [7, 3])
        p.copy("z", "zl")
        p.buffer("rs0", "f32", [chunk(7, 4, k), 3])
        p.collective("reduce_scatter", "zl", "rs0", g, shape=[7, 3], dim=0)
        p.output("reduce_scatter_7_rows", "rs0", Dist([7, 3], [4], g, [0]))
        p.buffer("rs1", "f32", [7, chunk(3, 4, k)])
        p.collective("reduce_scatter", "zl", "rs1", g, shape=[7, 3], dim=1)
        p.output("reduce_scatter_3_cols", "rs1", Dist([7, 3], [4], g, [1]))
        p.buffer("a2a", "f32", [7, chunk(5, 4, k)])
        p.collective("all_to_all", "x", "a2a", g, shape=[7, 5], dim=0, dim2=1)
        p.output("all_to_all_s0_s1", "a2a", Dist([7, 5], [4], g, [1]))
        p.buffer("a2a_i", "i64", [chunk(3, 4, k), 6])
        p.collective("all_to_all", "y", "a2a_i", g, shape=[3, 6], dim=1,
                     dim2=0)
        p.output("all_to_all_s1_s0_i64", "a2a_i", Dist([3, 6], [4], g, [0]))
        p.buffer("a2a3", "f32", [3, 5, chunk(6, 4, k)])
        p.collective("all_to_all", "u", "a2a3", g, shape=[3, 5, 6], dim=1,
                     dim2=2)
        p.output("all_to_all_3d_s1_s2", "a2a3", Dist([3, 5, 6], [4], g, [2]))
        p.buffer("ar", "f32", [7, 3])
        p.collective("all_reduce", "zl", "ar", g, shape=[7, 3])
        p.stacked("all_reduce_sum", "ar")
        p.buffer("armax", "f32", [7, 3])
        p.collective("all_reduce", "zl", "armax", g, shape=[7, 3],
                     reduce="max")
        p.stacked("all_reduce_max", "armax")
        p.buffer("sl", "f32", [chunk(7, 4, k), 5])
        p.collective("slice", "ag0", "sl", g, shape=[7, 5], dim=0)
        p.output("slice_7_rows", "sl", Dist([7, 5], [4], g, [0]))
        p.buffer("bc", "f32", [7, 3])
        p.collective("broadcast", "zl", "bc", g, shape=[7, 3])
        p.stacked("broadcast", "bc")
        p.buffer("psum", "f32", [3, 2])
        p.collective("all_reduce", "pv", "psum", g, shape=[3, 2])
        p.stacked("input_p_all_reduced", "psum")
        p.buffer("pmax", "f32", [5])
        p.collective("all_reduce", "q", "pmax", g, shape=[5], reduce="max")
        p.stacked("input_pmax_all_reduced", "pmax")
        p.output("input_pmax_gathered", "q", Dist([5], [4], g, [PMAX]))
        p.output("output_b", "ag0", Dist([7, 5], [4], g, [B]))
        p.buffer("tp", "f32", [7, 5])
        p.collective("to_partial", "ag0", "tp", g, shape=[7, 5])
        p.output("output_p", "tp", Dist([7, 5], [4], g, [P]))

    zs = z.reshape(4, 7, 3)
    total = zs.sum(0)
    expected = {
        "all_gather_7_rows": np.stack([x] * 4),
        "all_gather_6_cols_i64": np.stack([y] * 4),
        "reduce_scatter_7_rows": total,
        "reduce_scatter_3_cols": total,
        "all_to_all_s0_s1": x,
        "all_to_all_s1_s0_i64": y,
        "all_to_all_3d_s1_s2": u,
        "all_reduce_sum": np.stack([total] * 4),
        "all_reduce_max": np.stack([zs.max(0)] * 4),
        "slice_7_rows": x,
        "broadcast": np.stack([zs[0]] * 4),
        "input_p_all_reduced": np.stack([pv] * 4),
        "input_pmax_all_reduced": np.stack([q] * 4),
        "input_pmax_gathered": q,
        "output_b": x,
        "output_p": x,
    }
    return 4, build, {"x": x, "y": y, "z": z, "u": u, "pv": pv, "q": q}, \
        expected


def case_mesh2x2():
    """A [2, 2] mesh: collectives along axis 0 and along axis 1."""
    r = rng(3)
    x = r.standard_normal((4, 6)).astype(np.float32)
    y = r.integers(-9, 9, (4, 6)).astype(np.int64)
    g = [0, 1, 2, 3]
    m = [2, 2]
    # Rank (i, j) holds block [i, j] of the [S(0), S(1)] layout.
    blocks = [[x[2 * i:2 * i + 2, 3 * j:3 * j + 3] for j in range(2)]
              for i in range(2)]
    yb = [[y[2 * i:2 * i + 2, 3 * j:3 * j + 3] for j in range(2)]
          for i in range(2)]

    def build(p):
        p.input("x", "f32", Dist([4, 6], m, g, [0, 1]))
        p.input("y", "i64", Dist([4, 6], m, g, [0, 1]))
        p.buffer("ag_axis0", "f32", [4, 3])
        p.collective("all_gather", "x", "ag_axis0", g, mesh=m, axis=0,
                     shape=[4, 3], dim=0)
        p.output("all_gather_axis0", "ag_axis0", Dist([4, 6], m, g, [B, 1]))
        p.stacked("all_gather_axis0_stacked", "ag_axis0", mesh=m)
        p.buffer("ag_axis1", "f32", [2, 6])
        p.collective("all_gather", "x", "ag_axis1", g, mesh=m, axis=1,
                     shape=[2, 6], dim=1)
        p.output("all_gather_axis1", "ag_axis1", Dist([4, 6], m, g, [0, B]))
        p.buffer("ar_axis0", "i64", [2, 3])
        p.collective("all_reduce", "y", "ar_axis0", g, mesh=m, axis=0,
                     shape=[2, 3])
        p.stacked("all_reduce_axis0_i64", "ar_axis0", mesh=m)
        p.buffer("rs_axis1", "f32", [1, 3])
        p.collective("reduce_scatter", "x", "rs_axis1", g, mesh=m, axis=1,
                     shape=[2, 3], dim=0)
        p.stacked("reduce_scatter_axis1", "rs_axis1", mesh=m)
        p.buffer("a2a_axis1", "f32", [1, 6])
        p.collective("all_to_all", "x", "a2a_axis1", g, mesh=m, axis=1,
                     shape=[2, 6], dim=1, dim2=0)
        p.output("all_to_all_axis1", "a2a_axis1", Dist([4, 6], m, g, [0, 0]))
        p.buffer("bc_axis0", "f32", [2, 3])
        p.collective("broadcast", "x", "bc_axis0", g, mesh=m, axis=0,
                     shape=[2, 3])
        p.stacked("broadcast_axis0", "bc_axis0", mesh=m)
        p.buffer("tp_axis1", "f32", [2, 3])
        p.collective("to_partial", "x", "tp_axis1", g, mesh=m, axis=1,
                     shape=[2, 3])
        p.output("to_partial_axis1", "tp_axis1", Dist([4, 3], m, g, [0, P]))

    def each(f):
        return np.stack([np.stack([f(i, j) for j in range(2)])
                         for i in range(2)])

    expected = {
        "all_gather_axis0": x,
        "all_gather_axis0_stacked": each(lambda i, j: x[:, 3 * j:3 * j + 3]),
        "all_gather_axis1": x,
        "all_reduce_axis0_i64": each(lambda i, j: yb[0][j] + yb[1][j]),
        "reduce_scatter_axis1":
            each(lambda i, j: (blocks[i][0] + blocks[i][1])[j:j + 1]),
        "all_to_all_axis1": x,
        "broadcast_axis0": each(lambda i, j: blocks[0][j]),
        "to_partial_axis1": np.concatenate([blocks[0][0], blocks[1][0]]),
    }
    return 4, build, {"x": x, "y": y}, expected


def case_pipe2():
    """Rank 0 sends an f64 tensor to rank 1, which returns it doubled by
    an all_reduce of the two copies (programs differ per rank)."""
    r = rng(4)
    a = r.standard_normal((5, 3))
    g = [0, 1]

    def build(p):
        p.input("a", "f64", Dist([5, 3], [2], g, [B]))
        p.buffer("got", "f64", [5, 3])
        if p.rank == 0:
            p.copy("a", "got")
            p.collective("send", "a", "got", g, peer=1)
        else:
            p.collective("recv", "a", "got", g, peer=0)
        p.buffer("sum", "f64", [5, 3])
        p.collective("all_reduce", "got", "sum", g, shape=[5, 3])
        p.output("doubled", "sum", Dist([5, 3], [2], g, [B]))

    return 2, build, {"a": a}, {"doubled": 2 * a}


def case_roles4():
    """6 rows on 4 ranks (2, 2, 1, 1): two programs, each run by two ranks."""
    r = rng(5)
    x = r.standard_normal((6, 4)).astype(np.float32)
    v = r.integers(-99, 99, (4, 6, 2)).astype(np.int64)
    g = [0, 1, 2, 3]

    def build(p):
        k = p.rank
        p.input("x", "f32", Dist([6, 4], [4], g, [0]))
        p.input("v", "i64", Dist([4, 6, 2], [4], g, [0]))
        p.buffer("ag", "f32", [6, 4])
        p.collective("all_gather", "x", "ag", g, shape=[6, 4], dim=0)
        p.stacked("all_gather", "ag")
        p.buffer("vl", "i64", [6, 2])
        p.copy("v", "vl")
        p.buffer("rs", "i64", [chunk(6, 4, k), 2])
        p.collective("reduce_scatter", "vl", "rs", g, shape=[6, 2], dim=0)
        p.output("reduce_scatter", "rs", Dist([6, 2], [4], g, [0]))
        p.buffer("a2a", "f32", [6, 1])
        p.collective("all_to_all", "x", "a2a", g, shape=[6, 4], dim=0, dim2=1)
        p.output("all_to_all", "a2a", Dist([6, 4], [4], g, [1]))

    return 4, build, {"x": x, "v": v}, {
        "all_gather": np.stack([x] * 4), "reduce_scatter": v.sum(0),
        "all_to_all": x}


CASES = {"kinds2": case_kinds2, "roles4": case_roles4, "uneven4": case_uneven4,
         "mesh2x2": case_mesh2x2, "pipe2": case_pipe2}


def write(case, directory):
    world, build, inputs, expected = CASES[case]()
    text, roles = plan_text(world, build)
    os.makedirs(directory, exist_ok=True)
    mlir = os.path.join(directory, f"{case}.mlir")
    with open(mlir, "w") as f:
        f.write(text)
    plan = os.path.join(directory, f"{case}.ofp")
    subprocess.run(["of-translate", "--of-plan-to-binary", mlir, "-o", plan],
                   check=True)
    args = []
    for name, array in inputs.items():
        path = os.path.join(directory, f"in_{name}.npy")
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    return world, plan, args, expected, roles


def main(argv):
    mode, case, directory = argv[1], argv[2], argv[3]
    world, plan, args, expected, roles = write(case, directory)
    if mode == "write":
        print(" ".join(args))
        return 0
    extra = argv[4:]
    if mode == "exec":
        proc = subprocess.run(["of-run", plan] + args + ["--output-dir",
                              os.path.join(directory, "out")] + extra,
                              timeout=300)
        return proc.returncode
    nproc = str(world)
    if extra[:1] == ["-n"]:
        nproc, extra = extra[1], extra[2:]
    out = os.path.join(directory, "out")
    start = time.time()
    proc = subprocess.run(["of-run", "-n", nproc, plan] + args +
                          ["--output-dir", out] + extra,
                          capture_output=True, text=True, timeout=300)
    elapsed = time.time() - start
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        print(f"{case}: of-run failed with exit code {proc.returncode}")
        return 1
    bad = 0
    for name, ref in expected.items():
        path = os.path.join(out, f"{name}.npy")
        if not os.path.exists(path):
            print(f"{name}: missing")
            bad += 1
            continue
        got = np.load(path)
        ref = np.asarray(ref)
        if got.shape != ref.shape or got.dtype != ref.dtype:
            print(f"{name}: {got.dtype} {got.shape}, expected {ref.dtype} "
                  f"{ref.shape}")
            bad += 1
        elif np.issubdtype(ref.dtype, np.integer):
            if not np.array_equal(got, ref):
                print(f"{name}: differs\n got {got.ravel()[:12]}\n ref "
                      f"{ref.ravel()[:12]}")
                bad += 1
        elif not np.allclose(got, ref, rtol=1e-6, atol=1e-6):
            print(f"{name}: differs (max error "
                  f"{np.max(np.abs(got - ref))})\n got {got.ravel()[:12]}\n"
                  f" ref {ref.ravel()[:12]}")
            bad += 1
    if bad:
        return 1
    print(f"{case}: {len(expected)} outputs match on {nproc} ranks "
          f"({roles} program{'s' if roles > 1 else ''}, {elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
