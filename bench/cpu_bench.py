#!/usr/bin/env python3
"""CPU benchmarks of OF plans against peers measured in the same run.

  python3 bench/cpu_bench.py [--tools build/bin] [--repeat 50]

Each case is compiled with `of-opt --of-pipeline=cpu | of-translate
--of-plan-to-binary`, run with `of-run --repeat N --print-timing` (time per
run inside the runtime, plan loading excluded), and compared with NumPy
(and PyTorch CPU when it is installed) on the same inputs. Ratios > 1 mean
OF is faster. GEMM is also reported in GFLOP/s against NumPy's OpenBLAS and
against the machine's nominal fp32 peak (--peak-gflops, default 225 for the
2-core AVX-512 development machines).
"""
import argparse
import math
import ctypes
import ctypes.util
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def avx512():
    flags = pathlib.Path("/proc/cpuinfo").read_text().split()
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))


def openblas():
    """The OpenBLAS libofrt loads (Debian's), through ctypes, or None: with
    the kernels libofrt chooses (OPENBLAS_CORETYPE=SkylakeX while it loads,
    on an AVX-512 CPU, unless the variable is set; see CpuExecutor.cpp)."""
    name = ctypes.util.find_library("openblas")
    if not name:
        return None
    force = "OPENBLAS_CORETYPE" not in os.environ and avx512()
    if force:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    try:
        lib = ctypes.CDLL(name)
    finally:
        if force:
            del os.environ["OPENBLAS_CORETYPE"]
    lib.cblas_sgemm.restype = None
    return lib


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed:\n{r.stderr}")
    return r


def compile_plan(tools, mlir, workdir, name, pipeline="cpu"):
    src = workdir / f"{name}.mlir"
    src.write_text(mlir)
    t0 = time.perf_counter()
    plan = run([tools / "of-opt", f"--of-pipeline={pipeline}", src]).stdout
    t1 = time.perf_counter()
    ofp = workdir / f"{name}.ofp"
    run([tools / "of-translate", "--of-plan-to-binary", "-o", ofp], input=plan)
    t2 = time.perf_counter()
    return ofp, t1 - t0, t2 - t1


def of_time(tools, ofp, inputs, workdir, repeat, nproc=1, env=None):
    args = [tools / "of-run"] + (["-n", str(nproc)] if nproc > 1 else []) + [
        ofp, "--output-dir", workdir / "out", "--repeat", str(repeat), "--print-timing"]
    for k, v in inputs.items():
        path = workdir / f"in_{k.replace('/', '_')}.npy"
        np.save(path, v)
        args += ["--input", f"{k}={path}"]
    out = run(args, env=env).stdout
    m = re.search(r"total per run: ([0-9.]+) ms in steps", out)
    steps = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 5 and p[0] in ("library", "launch"):
            steps[" ".join(p[:2])] = float(p[-2])
    return float(m.group(1)) / 1e3, steps


def peer_time(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default=os.environ.get("OF_TOOLS_DIR", ROOT / "build" / "bin"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--peak-gflops", type=float, default=225.0)
    sections = ["gemm", "fused", "softmax", "mlp", "conv", "pool", "norm", "block", "example"]
    ap.add_argument("--only", action="append", choices=sections,
                    help="run only this section (repeatable); default: all")
    args = ap.parse_args()
    selected = lambda section: not args.only or section in args.only
    tools = pathlib.Path(args.tools)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)

        if selected("gemm"):
            # GEMM.
            def matmul_program(m_, n_, k_):
                return f"""func.func @main(%a: tensor<{m_}x{k_}xf32> {{of.name = "a"}}, %b: tensor<{k_}x{n_}xf32> {{of.name = "b"}}) -> tensor<{m_}x{n_}xf32> {{
  %c = of.matmul %a, %b : (tensor<{m_}x{k_}xf32>, tensor<{k_}x{n_}xf32>) -> tensor<{m_}x{n_}xf32>
  return %c : tensor<{m_}x{n_}xf32>
}}"""

            n = 1024
            mlir = matmul_program(n, n, n)
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            ofp, _, _ = compile_plan(tools, mlir, work, "gemm")
            t_of, _ = of_time(tools, ofp, {"a": a, "b": b}, work, args.repeat)
            t_np = peer_time(lambda: a @ b, args.repeat)
            flops = 2 * n**3
            blas = openblas()
            if blas:
                c = np.empty((n, n), dtype=np.float32)
                ptr = lambda m: m.ctypes.data_as(ctypes.POINTER(ctypes.c_float))

                def direct():
                    # cblas_sgemm(RowMajor=101, NoTrans=111, NoTrans, M, N, K, 1, A, K, B, N, 0, C, N)
                    blas.cblas_sgemm(101, 111, 111, n, n, n, ctypes.c_float(1.0), ptr(a), n,
                                     ptr(b), n, ctypes.c_float(0.0), ptr(c), n)

                t_direct = peer_time(direct, args.repeat)
                rows.append((f"gemm {n}^3 f32", t_of, "OpenBLAS direct", t_direct,
                             f"{flops / t_direct / 1e9:.1f} GFLOP/s"))
            # libofrt runs f32 gemm steps on oneDNN; OF_CPU_GEMM=openblas
            # makes it use OpenBLAS, the other candidate.
            t_of_blas, _ = of_time(tools, ofp, {"a": a, "b": b}, work, args.repeat,
                                   env={**os.environ, "OF_CPU_GEMM": "openblas"})
            rows.append((f"gemm {n}^3 f32", t_of, "OF on OpenBLAS", t_of_blas,
                         "OF's gemm steps on oneDNN matmul vs on OpenBLAS"))
            rows.append((f"gemm {n}^3 f32", t_of, "numpy(OpenBLAS)", t_np,
                         f"OF {flops / t_of / 1e9:.1f} GFLOP/s, numpy {flops / t_np / 1e9:.1f}, "
                         f"{100 * flops / t_of / 1e9 / args.peak_gflops:.0f}% of {args.peak_gflops:.0f} peak"))

            # The transformer block's gemm shapes (M x N x K), OF's steps on
            # oneDNN and on OpenBLAS (of-run's per-step time, so without
            # the output copy) and PyTorch's matmul (MKL).
            for m_, n_, k_ in [(1024, 768, 256), (1024, 1024, 256), (1024, 256, 1024), (1024, 256, 256)]:
                mlir = matmul_program(m_, n_, k_)
                ga = rng.standard_normal((m_, k_), dtype=np.float32)
                gb = rng.standard_normal((k_, n_), dtype=np.float32)
                ofp, _, _ = compile_plan(tools, mlir, work, "gemm_shape")
                step = lambda steps: steps["library blas.gemm"] / 1e3
                t_dnn = step(of_time(tools, ofp, {"a": ga, "b": gb}, work, args.repeat)[1])
                t_blas = step(of_time(tools, ofp, {"a": ga, "b": gb}, work, args.repeat,
                                      env={**os.environ, "OF_CPU_GEMM": "openblas"})[1])
                label = f"gemm {m_}x{n_}x{k_} f32"
                gf = 2 * m_ * n_ * k_ / 1e9
                rows.append((label, t_dnn, "OF on OpenBLAS", t_blas,
                             f"step time; oneDNN {gf / t_dnn:.0f} GFLOP/s, OpenBLAS {gf / t_blas:.0f}"))
                if HAVE_TORCH:
                    import torch
                    ta, tb = torch.from_numpy(ga), torch.from_numpy(gb)
                    rows.append((label, t_dnn, "torch(MKL)", peer_time(lambda: ta @ tb, args.repeat), ""))

        if selected("fused"):
            # Fused elementwise chain: gelu(x * y + x), 4M elements.
            shape = "2048x2048xf32"
            mlir = f"""func.func @main(%x: tensor<{shape}> {{of.name = "x"}}, %y: tensor<{shape}> {{of.name = "y"}}) -> tensor<{shape}> {{
      %m = of.mul %x, %y : (tensor<{shape}>, tensor<{shape}>) -> tensor<{shape}>
      %s = of.add %m, %x : (tensor<{shape}>, tensor<{shape}>) -> tensor<{shape}>
      %g = of.gelu %s {{approximate = "tanh"}} : (tensor<{shape}>) -> tensor<{shape}>
      return %g : tensor<{shape}>
    }}"""
            x = rng.standard_normal((2048, 2048), dtype=np.float32)
            y = rng.standard_normal((2048, 2048), dtype=np.float32)
            ofp, _, _ = compile_plan(tools, mlir, work, "ew")

            def np_gelu():
                s = x * y + x
                return 0.5 * s * (1 + np.tanh(np.float32(0.7978845608) * (s + np.float32(0.044715) * s * s * s)))

            t_of, _ = of_time(tools, ofp, {"x": x, "y": y}, work, args.repeat)
            rows.append(("fused mul+add+gelu 4M f32", t_of, "numpy", peer_time(np_gelu, args.repeat), ""))

        if selected("softmax"):
            # Softmax over rows.
            shape = "1024x1024xf32"
            mlir = f"""func.func @main(%x: tensor<{shape}> {{of.name = "x"}}) -> tensor<{shape}> {{
      %s = of.softmax %x {{axis = -1}} : (tensor<{shape}>) -> tensor<{shape}>
      return %s : tensor<{shape}>
    }}"""
            x = rng.standard_normal((1024, 1024), dtype=np.float32)
            ofp, _, _ = compile_plan(tools, mlir, work, "softmax")

            def np_softmax():
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)

            t_of, _ = of_time(tools, ofp, {"x": x}, work, args.repeat)
            rows.append(("softmax 1024x1024 f32", t_of, "numpy", peer_time(np_softmax, args.repeat), ""))

        if selected("mlp"):
            # MLP forward: 3 layers with bias and relu.
            bsz, d, h = 256, 512, 1024
            mlir = f"""func.func @main(%x: tensor<{bsz}x{d}xf32> {{of.name = "x"}},
        %w1: tensor<{d}x{h}xf32> {{of.name = "w1"}}, %b1: tensor<{h}xf32> {{of.name = "b1"}},
        %w2: tensor<{h}x{h}xf32> {{of.name = "w2"}}, %b2: tensor<{h}xf32> {{of.name = "b2"}},
        %w3: tensor<{h}x{d}xf32> {{of.name = "w3"}}, %b3: tensor<{d}xf32> {{of.name = "b3"}}) -> tensor<{bsz}x{d}xf32> {{
      %y1 = of.matmul %x, %w1 : (tensor<{bsz}x{d}xf32>, tensor<{d}x{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %z1 = of.add %y1, %b1 : (tensor<{bsz}x{h}xf32>, tensor<{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %r1 = of.relu %z1 : (tensor<{bsz}x{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %y2 = of.matmul %r1, %w2 : (tensor<{bsz}x{h}xf32>, tensor<{h}x{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %z2 = of.add %y2, %b2 : (tensor<{bsz}x{h}xf32>, tensor<{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %r2 = of.relu %z2 : (tensor<{bsz}x{h}xf32>) -> tensor<{bsz}x{h}xf32>
      %y3 = of.matmul %r2, %w3 : (tensor<{bsz}x{h}xf32>, tensor<{h}x{d}xf32>) -> tensor<{bsz}x{d}xf32>
      %z3 = of.add %y3, %b3 : (tensor<{bsz}x{d}xf32>, tensor<{d}xf32>) -> tensor<{bsz}x{d}xf32>
      return %z3 : tensor<{bsz}x{d}xf32>
    }}"""
            p = {"x": rng.standard_normal((bsz, d), dtype=np.float32)}
            for i, (fi, fo) in enumerate([(d, h), (h, h), (h, d)], 1):
                p[f"w{i}"] = (rng.standard_normal((fi, fo)) / np.sqrt(fi)).astype(np.float32)
                p[f"b{i}"] = rng.standard_normal(fo, dtype=np.float32)
            ofp, _, _ = compile_plan(tools, mlir, work, "mlp")

            def np_mlp():
                r = np.maximum(p["x"] @ p["w1"] + p["b1"], 0)
                r = np.maximum(r @ p["w2"] + p["b2"], 0)
                return r @ p["w3"] + p["b3"]

            t_of, _ = of_time(tools, ofp, p, work, args.repeat)
            rows.append((f"MLP fwd {bsz}x{d}-{h}-{h}-{d}", t_of, "numpy", peer_time(np_mlp, args.repeat), ""))
            if HAVE_TORCH:
                import torch
                tp = {k: torch.from_numpy(v) for k, v in p.items()}

                def torch_mlp():
                    with torch.no_grad():
                        r = torch.relu(tp["x"] @ tp["w1"] + tp["b1"])
                        r = torch.relu(r @ tp["w2"] + tp["b2"])
                        return r @ tp["w3"] + tp["b3"]

                rows.append((f"MLP fwd {bsz}x{d}-{h}-{h}-{d}", t_of, "torch", peer_time(torch_mlp, args.repeat), ""))

        if selected("conv"):
            # conv2d: a ResNet stage's 3x3 convolution, forward and both
            # gradients. OF runs them as oneDNN steps (blocked layouts, with
            # reorders from and to the plan's NCHW buffers); use-dnn=false
            # compiles the forward to an im2col gather and one batched OpenBLAS
            # gemm (the choice this row records). PyTorch's CPU convolution is
            # oneDNN's too (mkldnn), a newer build than Debian's libdnnl 2.6.
            n, c, hw, k = 8, 64, 28, 64
            xt, wt, bt = f"{n}x{c}x{hw}x{hw}xf32", f"{k}x{c}x3x3xf32", f"{k}xf32"
            pad = "padding = array<i64: 1, 1, 1, 1>"
            mlir = f"""func.func @main(%x: tensor<{xt}> {{of.name = "x"}}, %w: tensor<{wt}> {{of.name = "w"}}, %b: tensor<{bt}> {{of.name = "b"}}) -> tensor<{xt}> {{
      %y = of.conv2d %x, %w, %b {{{pad}}} : (tensor<{xt}>, tensor<{wt}>, tensor<{bt}>) -> tensor<{xt}>
      return %y : tensor<{xt}>
    }}"""
            grad_mlir = f"""func.func @main(%x: tensor<{xt}> {{of.name = "x"}}, %w: tensor<{wt}> {{of.name = "w"}}, %dy: tensor<{xt}> {{of.name = "dy"}}) -> (tensor<{xt}>, tensor<{wt}>) {{
      %dx = of.conv2d_grad_input %dy, %w {{{pad}}} : (tensor<{xt}>, tensor<{wt}>) -> tensor<{xt}>
      %dw = of.conv2d_grad_filter %x, %dy {{{pad}}} : (tensor<{xt}>, tensor<{xt}>) -> tensor<{wt}>
      return %dx, %dw : tensor<{xt}>, tensor<{wt}>
    }}"""
            cx = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
            cw = (rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
            cb = rng.standard_normal(k, dtype=np.float32)
            cdy = rng.standard_normal((n, k, hw, hw), dtype=np.float32)
            flops = 2 * n * k * hw * hw * c * 9
            conv_in = {"x": cx, "w": cw, "b": cb}
            ofp, _, _ = compile_plan(tools, mlir, work, "conv")
            t_of, _ = of_time(tools, ofp, conv_in, work, args.repeat)
            ofp, _, _ = compile_plan(tools, mlir, work, "conv_gemm", "cpu,use-dnn=false")
            t_gemm, _ = of_time(tools, ofp, conv_in, work, args.repeat)
            ofp, _, _ = compile_plan(tools, grad_mlir, work, "conv_grad")
            t_grad, _ = of_time(tools, ofp, {"x": cx, "w": cw, "dy": cdy}, work, args.repeat)
            label = f"conv2d {n}x{c}x{hw}x{hw} k3 ->{k}"
            rows.append((label, t_of, "OF im2col gemm", t_gemm,
                         f"oneDNN {flops / t_of / 1e9:.1f} GFLOP/s, im2col {flops / t_gemm / 1e9:.1f}"))
            if HAVE_TORCH:
                import torch
                tx, tw, tb, tdy = (torch.from_numpy(v) for v in (cx, cw, cb, cdy))

                def torch_conv():
                    with torch.no_grad():
                        return torch.nn.functional.conv2d(tx, tw, tb, padding=1)

                t_torch = peer_time(torch_conv, args.repeat)
                rows.append((label, t_of, "torch(oneDNN)", t_torch,
                             f"OF {flops / t_of / 1e9:.1f} GFLOP/s, torch {flops / t_torch / 1e9:.1f}; "
                             f"mkldnn {torch.backends.mkldnn.is_available()}"))

                def torch_conv_grads():
                    # Both gradients of a bias-free convolution: the op that
                    # PyTorch's autograd calls for a convolution's backward.
                    return torch.ops.aten.convolution_backward(
                        tdy, tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                        [True, True, False])

                t_torch_grad = peer_time(torch_conv_grads, args.repeat)
                rows.append((label + " dx+dw", t_grad, "torch(oneDNN)", t_torch_grad,
                             f"OF {2 * flops / t_grad / 1e9:.1f} GFLOP/s, torch {2 * flops / t_torch_grad / 1e9:.1f}"))

            # The same convolution in bf16 (f32 accumulation, one rounding):
            # oneDNN against the generated loops (use-dnn=false) and PyTorch.
            bt16 = lambda a: (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)
            xt16, wt16 = xt.replace("f32", "bf16"), wt.replace("f32", "bf16")
            mlir16 = f"""func.func @main(%x: tensor<{xt16}> {{of.name = "x"}}, %w: tensor<{wt16}> {{of.name = "w"}}) -> tensor<{xt16}> {{
      %y = of.conv2d %x, %w {{{pad}}} : (tensor<{xt16}>, tensor<{wt16}>) -> tensor<{xt16}>
      return %y : tensor<{xt16}>
    }}"""
            in16 = {"x": bt16(cx), "w": bt16(cw)}
            ofp, _, _ = compile_plan(tools, mlir16, work, "conv_bf16")
            t_of16, _ = of_time(tools, ofp, in16, work, args.repeat)
            ofp, _, _ = compile_plan(tools, mlir16, work, "conv_bf16_loops", "cpu,use-dnn=false")
            t_loops16, _ = of_time(tools, ofp, in16, work, 2)
            rows.append((label + " bf16", t_of16, "OF loops", t_loops16, ""))
            if HAVE_TORCH:
                tx16, tw16 = tx.to(torch.bfloat16), tw.to(torch.bfloat16)

                def torch_conv16():
                    with torch.no_grad():
                        return torch.nn.functional.conv2d(tx16, tw16, padding=1)

                rows.append((label + " bf16", t_of16, "torch(oneDNN)", peer_time(torch_conv16, args.repeat),
                             f"OF {flops / t_of16 / 1e9:.1f} GFLOP/s"))

        def library_against_generated(mlir, name, ins, label):
            """Times `mlir` as --of-pipeline=cpu compiles it and with every
            dnn step generated (use-dnn=false); adds the row, with the
            library steps' times, and returns OF's time."""
            ofp, _, _ = compile_plan(tools, mlir, work, name)
            t_of, steps = of_time(tools, ofp, ins, work, args.repeat)
            ofp, _, _ = compile_plan(tools, mlir, work, name + "_loops", "cpu,use-dnn=false")
            t_loops, _ = of_time(tools, ofp, ins, work, args.repeat)
            rows.append((label, t_of, "OF generated", t_loops,
                         ", ".join(f"{k} {v:.2f} ms" for k, v in steps.items()
                                   if k.startswith("library"))))
            return t_of

        if selected("pool"):
            # Pooling as a training step needs it: the forward pass and the
            # input's gradient, on the convnet's activations (32x64x32x32).
            # OF: max pooling's forward pass is a generated kernel (oneDNN's
            # max drops NaN), and so is the gradient of these 2x2 windows,
            # which tile the input (a map over dx; oneDNN's recomputes the
            # forward pass for its workspace); average pooling both ways on
            # oneDNN. Against the same plan with use-dnn=false (all
            # generated) and PyTorch's forward + backward (autograd, which
            # keeps the max's indices from the forward pass).
            n, c, hw = 32, 64, 32
            xt = f"{n}x{c}x{hw}x{hw}xf32"
            px = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
            for kind, attrs, oh, torch_args in [
                    ("max", "kernel_size = array<i64: 2, 2>", hw // 2, ("max", 2, 2, 0)),
                    ("avg", "kernel_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, "
                            "padding = array<i64: 1, 1, 1, 1>, count_include_pad = false", hw,
                     ("avg", 3, 1, 1))]:
                yt = f"{n}x{c}x{oh}x{oh}xf32"
                op = "of.max_pool2d" if kind == "max" else "of.avg_pool2d"
                mlir = f"""func.func @main(%x: tensor<{xt}> {{of.name = "x"}}, %dy: tensor<{yt}> {{of.name = "dy"}}) -> (tensor<{yt}>, tensor<{xt}>) {{
      %y = {op} %x {{{attrs}}} : (tensor<{xt}>) -> tensor<{yt}>
      %dx = of.pool2d_grad %x, %dy {{kind = "{kind}", {attrs}}} : (tensor<{xt}>, tensor<{yt}>) -> tensor<{xt}>
      return %y, %dx : tensor<{yt}>, tensor<{xt}>
    }}"""
                pdy = rng.standard_normal((n, c, oh, oh), dtype=np.float32)
                ins = {"x": px, "dy": pdy}
                label = f"{kind}_pool2d {n}x{c}x{hw}x{hw} fwd+grad"
                t_of = library_against_generated(mlir, f"pool_{kind}", ins, label)
                if HAVE_TORCH:
                    import torch
                    tx, tdy = torch.from_numpy(px), torch.from_numpy(pdy)
                    what, k_, s_, p_ = torch_args

                    def torch_pool():
                        x_ = tx.detach().requires_grad_()
                        if what == "max":
                            y_ = torch.nn.functional.max_pool2d(x_, k_, s_, p_)
                        else:
                            y_ = torch.nn.functional.avg_pool2d(x_, k_, s_, p_,
                                                                count_include_pad=False)
                        y_.backward(tdy)
                        return x_.grad

                    rows.append((label, t_of, "torch", peer_time(torch_pool, args.repeat), ""))

        if selected("norm"):
            # A training batch norm as a training step needs it: the forward
            # pass (y and the running statistics) and the gradients of x,
            # weight and bias, on the convnet's activations (32x64x32x32).
            # OF: oneDNN steps (the gradient's statistics of x generated);
            # against the same plan with use-dnn=false (all generated) and
            # PyTorch's forward + backward (autograd, which keeps the
            # forward's statistics).
            n, c, hw = 32, 64, 32
            xt, ct = f"{n}x{c}x{hw}x{hw}xf32", f"{c}xf32"
            mlir = f"""func.func @main(%x: tensor<{xt}> {{of.name = "x"}}, %dy: tensor<{xt}> {{of.name = "dy"}},
        %g: tensor<{ct}> {{of.name = "g"}}, %b: tensor<{ct}> {{of.name = "b"}},
        %m: tensor<{ct}> {{of.name = "m"}}, %v: tensor<{ct}> {{of.name = "v"}})
        -> (tensor<{xt}>, tensor<{ct}>, tensor<{ct}>, tensor<{xt}>, tensor<{ct}>, tensor<{ct}>) {{
      %y:3 = of.batch_norm %x, %g, %b, %m, %v {{training = true}} : (tensor<{xt}>, tensor<{ct}>, tensor<{ct}>, tensor<{ct}>, tensor<{ct}>) -> (tensor<{xt}>, tensor<{ct}>, tensor<{ct}>)
      %d:3 = of.batch_norm_grad %x, %dy, %g : (tensor<{xt}>, tensor<{xt}>, tensor<{ct}>) -> (tensor<{xt}>, tensor<{ct}>, tensor<{ct}>)
      return %y#0, %y#1, %y#2, %d#0, %d#1, %d#2 : tensor<{xt}>, tensor<{ct}>, tensor<{ct}>, tensor<{xt}>, tensor<{ct}>, tensor<{ct}>
    }}"""
            bx = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
            bdy = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
            ins = {"x": bx, "dy": bdy, "g": rng.standard_normal(c, dtype=np.float32),
                   "b": rng.standard_normal(c, dtype=np.float32),
                   "m": np.zeros(c, np.float32), "v": np.ones(c, np.float32)}
            label = f"batch_norm {n}x{c}x{hw}x{hw} fwd+grad"
            t_of = library_against_generated(mlir, "batch_norm", ins, label)
            if HAVE_TORCH:
                import torch
                tx, tdy = torch.from_numpy(bx), torch.from_numpy(bdy)
                tg, tb = torch.from_numpy(ins["g"]), torch.from_numpy(ins["b"])
                tm, tv = torch.zeros(c), torch.ones(c)

                def torch_norm():
                    x_ = tx.detach().requires_grad_()
                    g_, b_ = tg.detach().requires_grad_(), tb.detach().requires_grad_()
                    y_ = torch.nn.functional.batch_norm(x_, tm, tv, g_, b_, training=True)
                    y_.backward(tdy)
                    return x_.grad

                rows.append((label, t_of, "torch", peer_time(torch_norm, args.repeat), ""))

        if selected("block"):
            # A pre-norm GPT block forward (the op sequence of
            # examples/gpt_block.mlir) at a size where the work is not all
            # overhead, one rank, against PyTorch eager on the same weights;
            # the outputs must agree.
            B, T, C, H = 8, 128, 256, 4
            D = C // H
            f = lambda *s: "tensor<" + "x".join(map(str, s)) + "xf32>"
            blk = f"""func.func @main(%x: {f(B, T, C)} {{of.name = "x"}}, %mask: tensor<{T}x{T}xi1> {{of.name = "mask"}},
        %g1: {f(C)} {{of.name = "g1"}}, %b1: {f(C)} {{of.name = "b1"}}, %wqkv: {f(C, 3 * C)} {{of.name = "wqkv"}},
        %wo: {f(C, C)} {{of.name = "wo"}}, %g2: {f(C)} {{of.name = "g2"}}, %b2: {f(C)} {{of.name = "b2"}},
        %wfc: {f(C, 4 * C)} {{of.name = "wfc"}}, %wp: {f(4 * C, C)} {{of.name = "wp"}}) -> {f(B, T, C)} {{
      %h = of.layer_norm %x weight %g1 bias %b1 : ({f(B, T, C)}, {f(C)}, {f(C)}) -> {f(B, T, C)}
      %qkv = of.matmul %h, %wqkv : ({f(B, T, C)}, {f(C, 3 * C)}) -> {f(B, T, 3 * C)}
    """ + "".join(f"""  %{n} = of.slice %qkv {{starts = array<i64: 0, 0, {i * C}>, limits = array<i64: {B}, {T}, {(i + 1) * C}>}} : ({f(B, T, 3 * C)}) -> {f(B, T, C)}
      %{n}4 = of.reshape %{n} : ({f(B, T, C)}) -> {f(B, T, H, D)}
      %{n}h = of.transpose %{n}4, [0, 2, 1, 3] : ({f(B, T, H, D)}) -> {f(B, H, T, D)}
    """ for i, n in enumerate("qkv")) + f"""  %s = of.matmul %qh, %kh {{transpose_b = true}} : ({f(B, H, T, D)}, {f(B, H, T, D)}) -> {f(B, H, T, T)}
      %scale = of.constant dense<{1 / math.sqrt(D)}> : tensor<f32>
      %ss = of.mul %s, %scale : ({f(B, H, T, T)}, tensor<f32>) -> {f(B, H, T, T)}
      %ninf = of.constant dense<-1.0e9> : tensor<f32>
      %sm = of.select %mask, %ss, %ninf : (tensor<{T}x{T}xi1>, {f(B, H, T, T)}, tensor<f32>) -> {f(B, H, T, T)}
      %p = of.softmax %sm {{axis = -1}} : ({f(B, H, T, T)}) -> {f(B, H, T, T)}
      %c = of.matmul %p, %vh : ({f(B, H, T, T)}, {f(B, H, T, D)}) -> {f(B, H, T, D)}
      %ct = of.transpose %c, [0, 2, 1, 3] : ({f(B, H, T, D)}) -> {f(B, T, H, D)}
      %c2 = of.reshape %ct : ({f(B, T, H, D)}) -> {f(B, T, C)}
      %a = of.matmul %c2, %wo : ({f(B, T, C)}, {f(C, C)}) -> {f(B, T, C)}
      %r1 = of.add %x, %a : ({f(B, T, C)}, {f(B, T, C)}) -> {f(B, T, C)}
      %h2 = of.layer_norm %r1 weight %g2 bias %b2 : ({f(B, T, C)}, {f(C)}, {f(C)}) -> {f(B, T, C)}
      %fc = of.matmul %h2, %wfc : ({f(B, T, C)}, {f(C, 4 * C)}) -> {f(B, T, 4 * C)}
      %act = of.gelu %fc {{approximate = "tanh"}} : ({f(B, T, 4 * C)}) -> {f(B, T, 4 * C)}
      %m = of.matmul %act, %wp : ({f(B, T, 4 * C)}, {f(4 * C, C)}) -> {f(B, T, C)}
      %y = of.add %r1, %m : ({f(B, T, C)}, {f(B, T, C)}) -> {f(B, T, C)}
      return %y : {f(B, T, C)}
    }}"""
            bp = {"x": rng.standard_normal((B, T, C), dtype=np.float32),
                  "mask": np.tril(np.ones((T, T), dtype=bool))}
            for name, shape in [("g1", (C,)), ("b1", (C,)), ("wqkv", (C, 3 * C)), ("wo", (C, C)),
                                ("g2", (C,)), ("b2", (C,)), ("wfc", (C, 4 * C)), ("wp", (4 * C, C))]:
                bp[name] = (rng.standard_normal(shape) / (np.sqrt(shape[0]) if len(shape) > 1 else 10)
                            ).astype(np.float32)
            ofp, _, _ = compile_plan(tools, blk, work, "block")
            t_of, _ = of_time(tools, ofp, bp, work, args.repeat)
            if HAVE_TORCH:
                import torch
                tb_ = {k: torch.from_numpy(v) for k, v in bp.items()}

                def torch_block():
                    with torch.no_grad():
                        F = torch.nn.functional
                        x = tb_["x"]
                        h = F.layer_norm(x, (C,), tb_["g1"], tb_["b1"])
                        q, k, v = (t.reshape(B, T, H, D).transpose(1, 2)
                                   for t in (h @ tb_["wqkv"]).split(C, -1))
                        s = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(D))
                        s = torch.where(tb_["mask"], s, torch.tensor(-1.0e9))
                        c = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
                        r1 = x + c @ tb_["wo"]
                        h2 = F.layer_norm(r1, (C,), tb_["g2"], tb_["b2"])
                        return r1 + F.gelu(h2 @ tb_["wfc"], approximate="tanh") @ tb_["wp"]

                want = torch_block().numpy()
                got = np.load(work / "out" / "out0.npy")
                err = np.linalg.norm(got - want) / np.linalg.norm(want)
                if err > 1e-4:
                    sys.exit(f"bench: the transformer block differs from PyTorch's by {err:.1e}")
                # This machine drifts by 10-50 % between runs: OF and
                # PyTorch alternate for five rounds, and the row gives each
                # one's median round and the range of the per-round ratios.
                t_ofs, t_torches = [], []
                for _ in range(5):
                    t_ofs.append(of_time(tools, ofp, bp, work, args.repeat)[0])
                    t_torches.append(peer_time(torch_block, args.repeat))
                ratios = sorted(p / o for o, p in zip(t_ofs, t_torches))
                rows.append((f"GPT block fwd {B}x{T}x{C} h{H}", statistics.median(t_ofs), "torch eager",
                             statistics.median(t_torches),
                             f"outputs agree to {err:.1e}; peer/OF per round {ratios[0]:.2f}-{ratios[-1]:.2f}"))

        if selected("example"):
            # Transformer block: compile time and plan size, and forward time.
            gpt = (ROOT / "examples" / "gpt_block.mlir").read_text()
            ofp, t_opt, t_translate = compile_plan(tools, gpt, work, "gpt")
            inputs = {"x": rng.standard_normal((2, 16, 64), dtype=np.float32),
                      "causal_mask": np.tril(np.ones((16, 16), dtype=bool))}
            for name, shape in [("ln1.weight", (64,)), ("ln1.bias", (64,)), ("attn.qkv.weight", (64, 192)),
                                ("attn.proj.weight", (64, 64)), ("ln2.weight", (64,)), ("ln2.bias", (64,)),
                                ("mlp.fc.weight", (64, 256)), ("mlp.proj.weight", (256, 64))]:
                inputs[name] = (rng.standard_normal(shape) * 0.1).astype(np.float32)
            # The example is data parallel over 2 ranks (its placement @dp).
            t_of, _ = of_time(tools, ofp, inputs, work, args.repeat, nproc=2)
            print(f"transformer block (examples/gpt_block.mlir, 2 ranks): of-opt --of-pipeline=cpu {t_opt:.2f} s, "
                  f"of-translate --of-plan-to-binary {t_translate:.2f} s, plan {ofp.stat().st_size} bytes, "
                  f"forward {t_of * 1e3:.3f} ms per run")

    print(f"{'case':34} {'OF ms':>9} {'peer':>16} {'peer ms':>9} {'peer/OF':>8}  notes")
    for case, t_of, peer, t_peer, note in rows:
        print(f"{case:34} {t_of * 1e3:9.3f} {peer:>16} {t_peer * 1e3:9.3f} {t_peer / t_of:8.2f}  {note}")


if __name__ == "__main__":
    main()
