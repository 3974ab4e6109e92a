#!/usr/bin/env python3
"""SBP benchmarks: partition compile time against the rank count, and MLP
forward weak scaling from 1 to 2 ranks.

  python3 bench/sbp_bench.py [--tools build/bin] [--repeat 30]

1. Compile time of the SBP stages (`--of-pipeline=cpu,stop-after=partition`)
   and of the whole pipeline up to the plan (`stop-after=plan`, which
   includes bufferization and the plan builder but not the kernel compiler)
   for an MLP 784-1024-1024-10 under data parallel and Megatron tensor
   parallel on placements of 1, 8 and 1024 ranks, and an uneven batch on
   1024 ranks. The peer is the same program on 1 rank: the ratio must stay
   near 1 (ranks with the same role share one program), and the number of
   programs is printed.
2. MLP forward (784-1024-1024-10, relu, data parallel, 128 rows per rank)
   per-run time with `of-run --repeat N --print-timing` on 1 rank (batch 128)
   and 2 ranks (batch 256), OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 per
   rank so the two runs use one core per rank; weak-scaling efficiency = t1 / t2. NumPy's forward
   of batch 128 on one BLAS thread is printed as the single-process peer.
3. A pipeline stage boundary: a tensor of 64 KiB and 4 MiB moved from a
   stage on rank 0 to a stage on rank 1 (`of.boxing` between placements,
   compiled to a send and a receive step), per-run time of those steps from
   `of-run -n 2 --print-timing` on rank 0 (the sender, whose send waits
   for rank 1 to post its receive between runs). The peer, in the same run,
   is MPI_Send / MPI_Recv of the same bytes (`collective_bench --only
   send/recv`, one way = half its ping-pong).
4. A pipelined training step: an MLP of 4 layers 2048 x 2048 (SGD), batch
   512 as 4 micro-batches (`accumulate=4`), as two stages on 2 ranks (the
   first two layers, then the rest) against the same step on 1 rank, one
   thread per rank (OMP_NUM_THREADS=1), per-run time of `of-run --repeat`.
   --of-schedule-stages runs the 4 forward passes before the backward
   passes, so the stages overlap (GPipe); the ideal speedup on 2 ranks is
   2 * 4 / (4 + 1) = 1.6.
"""
import argparse
import os
import pathlib
import re
import subprocess
import tempfile
import time

# One BLAS thread for NumPy too (read when NumPy loads OpenBLAS), so the
# single-process peer uses one core like each rank.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIMS = [784, 1024, 1024, 10]


def mlp_text(batch, ranks, layout):
    """The MLP on a placement of `ranks` devices (None: no distribution)."""
    def t(shape, sbp=None):
        s = "tensor<" + "".join(f"{d}x" for d in shape) + "f32"
        return s + (f", #of.sbp<@p, [{sbp}]>>" if sbp and ranks else ">")

    sbp = {"data": {"x": "S(0)"},
           "megatron": {"w0": "S(1)", "b0": "S(0)", "w1": "S(0)"}}[layout]
    args, lines = [], []
    x = "%x"
    args.append(f'%x: {t((batch, DIMS[0]), sbp.get("x", "B"))} {{of.name = "x"}}')
    h = x
    htype = t((batch, DIMS[0]), sbp.get("x", "B"))
    for i in range(3):
        w, b = f"w{i}", f"b{i}"
        wt = t((DIMS[i], DIMS[i + 1]), sbp.get(w, "B"))
        bt = t((DIMS[i + 1],), sbp.get(b, "B"))
        args += [f'%{w}: {wt} {{of.name = "{w}"}}', f'%{b}: {bt} {{of.name = "{b}"}}']
        ot = t((batch, DIMS[i + 1]))
        lines.append(f"%m{i} = of.matmul {h}, %{w} : ({htype}, {wt}) -> {ot}")
        lines.append(f"%a{i} = of.add %m{i}, %{b} : ({ot}, {bt}) -> {ot}")
        h, htype = f"%a{i}", ot
        if i < 2:
            lines.append(f"%r{i} = of.relu {h} : ({ot}) -> {ot}")
            h = f"%r{i}"
    out = t((batch, DIMS[-1]), "S(0)" if layout == "data" else "B")
    if ranks:
        lines.append(f"%y = of.boxing {h} : {htype} -> {out}")
        h = "%y"
    header = f'of.placement @p {{device = "cpu", shape = [{ranks}]}}\n' if ranks else ""
    return (f"{header}func.func @main({', '.join(args)}) -> ({out} {{of.name = \"y\"}}) {{\n  "
            + "\n  ".join(lines) + f"\n  return {h} : {out}\n}}\n")


def timed(cmd, stdin=None, repeat=3):
    best = float("inf")
    out = b""
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, input=stdin, capture_output=True)
        best = min(best, time.perf_counter() - start)
        if proc.returncode:
            raise SystemExit(f"{cmd[0]} failed:\n{proc.stderr.decode()}")
        out = proc.stdout
    return best, out


def compile_times(tools, tmp):
    print("== partition compile time (best of 3, seconds) ==")
    print(f"{'program':<28}{'ranks':>6}{'sbp+partition':>15}{'to plan':>10}{'programs':>10}"
          f"{'vs 1 rank':>11}")
    base = {}
    for layout, batch in [("data", 8192), ("megatron", 8192), ("data-uneven", 2000)]:
        kind = layout.split("-")[0]
        for ranks in ([1, 8, 1024] if layout != "data-uneven" else [1, 1024]):
            src = pathlib.Path(tmp) / f"{layout}-{ranks}.mlir"
            src.write_text(mlp_text(batch, ranks, kind))
            t_part, out = timed([f"{tools}/of-opt", "--of-pipeline=cpu,stop-after=partition", str(src)])
            t_plan, plan = timed([f"{tools}/of-opt", "--of-pipeline=cpu,stop-after=plan", str(src)])
            programs = plan.decode().count("ofrt.program")
            base.setdefault(layout, t_plan)
            print(f"{layout + f' (batch {batch})':<28}{ranks:>6}{t_part:>15.3f}{t_plan:>10.3f}"
                  f"{programs:>10}{t_plan / base[layout]:>10.2f}x")


def compile_plan(tools, tmp, name, text, pipeline="cpu"):
    """`text` compiled with --of-pipeline=`pipeline` to tmp/name.ofp."""
    src = pathlib.Path(tmp) / f"{name}.mlir"
    src.write_text(text)
    lowered = subprocess.run([f"{tools}/of-opt", f"--of-pipeline={pipeline}", str(src)],
                             capture_output=True, check=True).stdout
    plan = pathlib.Path(tmp) / f"{name}.ofp"
    subprocess.run([f"{tools}/of-translate", "--of-plan-to-binary", "-o", str(plan)],
                   input=lowered, check=True)
    return plan


def run_time(tools, plan, inputs, nproc, repeat, tmp, extra=()):
    """Per-run wall ms and collective ms of `plan` (`of-run -n nproc --repeat
    repeat` plus `extra` options) on `inputs`, one thread per rank."""
    stem = pathlib.Path(plan).stem
    cmd = [f"{tools}/of-run", "-n", str(nproc), str(plan), *extra, "--repeat", str(repeat),
           "--print-timing", "--output-dir", str(pathlib.Path(tmp) / f"out-{stem}")]
    for name, a in inputs.items():
        path = pathlib.Path(tmp) / f"{name}-{stem}.npy"
        np.save(path, a)
        cmd += ["--input", f"{name}={path}"]
    # One thread per rank for OpenBLAS and for libgomp (kernels, oneDNN):
    # otherwise one rank would use both cores and two ranks one each.
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, env=env)
    if proc.returncode:
        raise SystemExit(f"of-run failed:\n{proc.stderr.decode()}")
    text = proc.stdout.decode() + proc.stderr.decode()
    m = re.search(r"total per run: ([0-9.]+) ms in steps, ([0-9.]+) ms wall", text)
    c = re.search(r"collectives per run: ([0-9.]+) ms", text)
    return float(m.group(2)), float(c.group(1)) if c else 0.0


def weak_scaling(tools, repeat, tmp):
    print(f"\n== MLP forward weak scaling, 128 rows per rank, 1 BLAS thread per rank "
          f"({repeat} runs) ==")
    rng = np.random.default_rng(0)
    params = {}
    for i in range(3):
        params[f"w{i}"] = (rng.standard_normal((DIMS[i], DIMS[i + 1])) / np.sqrt(DIMS[i])).astype(np.float32)
        params[f"b{i}"] = rng.standard_normal(DIMS[i + 1]).astype(np.float32)
    times = {}
    for nproc in (1, 2):
        batch = 128 * nproc
        plan = compile_plan(tools, tmp, f"weak-{nproc}",
                            mlp_text(batch, nproc if nproc > 1 else None, "data"))
        inputs = dict(params, x=rng.standard_normal((batch, DIMS[0])).astype(np.float32))
        times[nproc] = run_time(tools, plan, inputs, nproc, repeat, tmp)
    x = rng.standard_normal((128, DIMS[0])).astype(np.float32)
    start = time.perf_counter()
    for _ in range(repeat):
        h = x
        for i in range(3):
            h = h @ params[f"w{i}"] + params[f"b{i}"]
            if i < 2:
                h = np.maximum(h, 0)
    numpy_ms = (time.perf_counter() - start) / repeat * 1e3
    t1, t2 = times[1][0], times[2][0]
    print(f"{'ranks':<8}{'batch':>7}{'ms/run':>10}{'collectives ms':>16}")
    for n in (1, 2):
        print(f"{n:<8}{128 * n:>7}{times[n][0]:>10.3f}{times[n][1]:>16.3f}")
    print(f"weak-scaling efficiency 1 -> 2 ranks: {t1 / t2:.2f} (t1 / t2)")
    print(f"NumPy forward, batch 128, 1 BLAS thread: {numpy_ms:.3f} ms "
          f"(NumPy time / OF 1-rank time: {numpy_ms / t1:.2f})")


def boundary_text(rows):
    """x (rows x 1024 f32) on stage @a (rank 0), moved to @b (rank 1)."""
    ta = f"tensor<{rows}x1024xf32, #of.sbp<@a, [B]>>"
    tb = f"tensor<{rows}x1024xf32, #of.sbp<@b, [B]>>"
    return ('of.placement @a {device = "cpu", shape = [1], ranks = [0]}\n'
            'of.placement @b {device = "cpu", shape = [1], ranks = [1]}\n'
            f'func.func @main(%x: {ta} {{of.name = "x"}}) -> ({tb} {{of.name = "y"}}) {{\n'
            f"  %y = of.boxing %x : {ta} -> {tb}\n  return %y : {tb}\n}}\n")


def mpirun_prefix(n):
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun", *root, "--oversubscribe", "-n", str(n)]


def boundary(tools, repeat, tmp):
    print(f"\n== pipeline stage boundary, rank 0 -> rank 1 ({repeat} runs) ==")
    bench = pathlib.Path(tools).parent / "bench" / "collective_bench"
    if not bench.exists():  # not in the default build (EXCLUDE_FROM_ALL)
        print(f"(building {bench.name})")
        subprocess.run(["cmake", "--build", str(pathlib.Path(tools).parent),
                        "--target", "collective_bench"], check=True,
                       capture_output=True)
    print(f"{'bytes':>9}{'OF send+recv ms':>17}{'MPI one-way ms':>16}{'OF / MPI':>10}"
          f"{'OF GB/s':>9}")
    rng = np.random.default_rng(0)
    for rows in (16, 1024):
        plan = compile_plan(tools, tmp, f"boundary-{rows}", boundary_text(rows))
        x = rng.standard_normal((rows, 1024)).astype(np.float32)
        _, coll_ms = run_time(tools, plan, {"x": x}, 2, repeat, tmp)
        nbytes = x.nbytes
        proc = subprocess.run(mpirun_prefix(2) + [str(bench), "--only", "send/recv",
                                                  "--max-bytes", str(nbytes)],
                              capture_output=True)
        if proc.returncode:
            raise SystemExit(f"collective_bench failed:\n{proc.stderr.decode()}")
        row = proc.stdout.decode().strip().splitlines()[-1].split()
        mpi_ms = float(row[4]) / 2 / 1e3  # MPI us per round trip
        print(f"{nbytes:>9}{coll_ms:>17.3f}{mpi_ms:>16.3f}{coll_ms / mpi_ms:>10.2f}"
              f"{nbytes / coll_ms / 1e6:>9.2f}")


PIPE_DIMS = [2048, 2048, 2048, 2048, 2048]


def pipeline_step_text(stages, micro=128, k=4):
    """The MLP's loss on micro-batches of `micro` rows; with `stages`, layers
    0-1 on rank 0 and 2-3 on rank 1."""
    def t(shape, et="f32", stage=None):
        s = "tensor<" + "".join(f"{d}x" for d in shape) + et
        return s + (f", #of.sbp<@{stage}, [B]>>" if stage else ">")
    st = (lambda i: "s0" if i < 2 else "s1") if stages else (lambda i: None)
    args = [f'%x: {t((micro, PIPE_DIMS[0]), stage=st(0))} {{of.name = "x"}}',
            f'%y: {t((micro,), "i64", st(3))} {{of.name = "y"}}']
    lines, h, ht = [], "%x", t((micro, PIPE_DIMS[0]), stage=st(0))
    for i in range(4):
        wt = t((PIPE_DIMS[i], PIPE_DIMS[i + 1]), stage=st(i))
        args.append(f'%w{i}: {wt} {{of.name = "w{i}", of.param}}')
        if stages and i == 2:
            moved = t((micro, PIPE_DIMS[2]), stage="s1")
            lines.append(f"%to1 = of.boxing {h} : {ht} -> {moved}")
            h, ht = "%to1", moved
        ot = t((micro, PIPE_DIMS[i + 1]))
        lines.append(f"%m{i} = of.matmul {h}, %w{i} : ({ht}, {wt}) -> {ot}")
        h, ht = f"%m{i}", ot
        if i < 3:
            lines.append(f"%r{i} = of.relu {h} : ({ot}) -> {ot}")
            h = f"%r{i}"
    lt = t((), stage=st(3))
    lines.append(f"%ce = of.cross_entropy {h}, %y : ({ht}, {t((micro,), 'i64', st(3))}) "
                 f"-> tensor<{micro}xf32>")
    lines.append(f"%l = of.reduce_mean %ce {{axes = array<i64: 0>}} : "
                 f"(tensor<{micro}xf32>) -> tensor<f32>")
    ret = "%l"
    if stages:
        lines.append(f"%lb = of.boxing %l : tensor<f32> -> {lt}")
        ret = "%lb"
    header = ('of.placement @s0 {device = "cpu", shape = [1], ranks = [0]}\n'
              'of.placement @s1 {device = "cpu", shape = [1], ranks = [1]}\n'
              if stages else "")
    return (f"{header}func.func @mlp({', '.join(args)}) -> ({lt} {{of.name = \"loss\"}}) {{\n  "
            + "\n  ".join(lines) + f"\n  return {ret} : {lt}\n}}\n")


def pipeline_training(tools, repeat, tmp):
    k, micro = 4, 128
    print(f"\n== pipelined training step, MLP {'-'.join(map(str, PIPE_DIMS))}, batch "
          f"{k * micro} as {k} micro-batches, 1 thread per rank ({repeat} runs) ==")
    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal((k, micro, PIPE_DIMS[0])).astype(np.float32),
            "y": rng.integers(0, PIPE_DIMS[-1], size=(k, micro)).astype(np.int64)}
    for i in range(4):
        data[f"w{i}"] = (rng.standard_normal((PIPE_DIMS[i], PIPE_DIMS[i + 1]))
                         / np.sqrt(PIPE_DIMS[i])).astype(np.float32)
    times = {}
    for nproc in (1, 2):
        plan = compile_plan(tools, tmp, f"pipe-train-{nproc}",
                            pipeline_step_text(nproc == 2, micro, k),
                            f"cpu,train=sgd,accumulate={k}")
        times[nproc], _ = run_time(tools, plan, data, nproc, repeat, tmp,
                                   ["--entry", "mlp_train_step", "--set", "lr=0.01",
                                    "--warmup", "2"])
    print(f"{'ranks':<8}{'ms/step':>10}")
    for n in (1, 2):
        print(f"{n:<8}{times[n]:>10.2f}")
    print(f"speedup of 2 stages over 1 rank: {times[1] / times[2]:.2f} (ideal 1.6)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default=str(ROOT / "build" / "bin"))
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        compile_times(args.tools, tmp)
        weak_scaling(args.tools, args.repeat, tmp)
        boundary(args.tools, args.repeat, tmp)
        pipeline_training(args.tools, args.repeat, tmp)


if __name__ == "__main__":
    main()
