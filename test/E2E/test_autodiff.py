"""--of-autodiff, every differentiable op: the gradient function that OF
compiles and runs (of-run --entry main_grad) against JAX's autograd of the
same function and against central finite differences, both in float64.

Each case is a one-op program on float64 tensors whose parameters are the
op's differentiable operands; the loss is sum(op(...) * r) with r a random
input, so the check covers the whole vector-Jacobian product, not only its
sum. Tolerances (||g - ref|| / ||ref||): 1e-10 against JAX (both are exact
up to float64 rounding), 1e-6 against finite differences (step 1e-6: the
truncation and rounding errors are ~1e-10..1e-8 relative). The cast case
rounds through float32, so its tolerances are float32's (1e-6 against JAX;
no finite differences, which float32 rounding would swamp).

Reference: JAX (CPU, float64 via jax_enable_x64), installed by
scripts/setup.sh.
"""

import re

import numpy as np
import pytest

from ofrun import check, mlir_type, run_mlir, splitmix_keep

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

F64 = np.float64
VS_JAX = 1e-10
VS_FD = 1e-6


def nonzero(rng, shape, lo=0.25, hi=2.0):
    mag = rng.uniform(lo, hi, size=shape)
    return mag * rng.choice([-1.0, 1.0], size=shape)


def positive(rng, shape, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, size=shape)


def t(shape, et="f64"):
    return mlir_type(shape, et)


class Case:
    """One op under test: `params` and `inputs` are {name: array}; `op` is
    the MLIR line defining %y from them (types as {T_name} and {T_y});
    `ref` computes y from a dict of arrays with jax.numpy."""

    def __init__(self, params, op, ref, inputs=None, fd=True, tol=VS_JAX):
        self.params, self.inputs = params, inputs or {}
        self.op, self.ref, self.fd, self.tol = op, ref, fd, tol

    def arrays(self):
        return {**self.params, **self.inputs}

    def out_shape(self):
        return np.shape(self.ref({k: jnp.asarray(v) for k, v in self.arrays().items()}))

    def mlir(self):
        types = {f"T_{k}": mlir_type(np.asarray(v)) for k, v in self.arrays().items()}
        ys = self.out_shape()
        types["T_y"] = t(ys)
        args = [f"%{k}: {types['T_' + k]} {{of.name = \"{k}\", of.param}}"
                for k in self.params]
        args += [f"%{k}: {types['T_' + k]} {{of.name = \"{k}\"}}" for k in self.inputs]
        args.append(f"%r: {t(ys)} {{of.name = \"r\"}}")
        axes = ", ".join(str(i) for i in range(len(ys)))
        return (f"func.func @main({', '.join(args)}) -> tensor<f64> {{\n"
                f"  {re.sub(r'{(T_[a-z_]+)}', lambda m: types[m.group(1)], self.op)}\n"
                f"  %w = of.mul %y, %r : ({t(ys)}, {t(ys)}) -> {t(ys)}\n"
                f"  %l = of.reduce_sum %w {{axes = array<i64: {axes}>}} : ({t(ys)}) -> tensor<f64>\n"
                f"  return %l : tensor<f64>\n}}\n")


def loss_fn(case, r):
    """The loss as a function of the parameters, in JAX."""
    fixed = {k: jnp.asarray(v) for k, v in case.inputs.items()}

    def f(params):
        return jnp.sum(case.ref({**params, **fixed}) * r)
    return f


def finite_differences(f, params, rng, samples=6, h=1e-6):
    """Central differences of f at `samples` random elements of each
    parameter: {name: (flat indices, derivatives)}."""
    out = {}
    for name, value in params.items():
        flat = np.asarray(value, dtype=F64).ravel()
        idx = rng.choice(flat.size, size=min(samples, flat.size), replace=False)
        ds = []
        for i in idx:
            up, down = flat.copy(), flat.copy()
            up[i] += h
            down[i] -= h
            pu = {**params, name: up.reshape(np.shape(value))}
            pd = {**params, name: down.reshape(np.shape(value))}
            ds.append((float(f(pu)) - float(f(pd))) / (2 * h))
        out[name] = (idx, np.array(ds))
    return out


def cases(rng):
    c = {}
    x34 = nonzero(rng, (3, 4))
    pos = positive(rng, (3, 4))
    unary = {
        "neg": ("of.neg", x34, jnp.negative), "exp": ("of.exp", x34, jnp.exp),
        "log": ("of.log", pos, jnp.log), "sqrt": ("of.sqrt", pos, jnp.sqrt),
        "rsqrt": ("of.rsqrt", pos, lambda a: 1 / jnp.sqrt(a)),
        "tanh": ("of.tanh", x34, jnp.tanh),
        "sigmoid": ("of.sigmoid", x34, jax.nn.sigmoid),
        "relu": ("of.relu", x34, jax.nn.relu),
        "silu": ("of.silu", x34, jax.nn.silu),
        "erf": ("of.erf", x34, jax.scipy.special.erf),
        "sin": ("of.sin", x34, jnp.sin), "cos": ("of.cos", x34, jnp.cos),
        "gelu": ("of.gelu", x34, lambda a: jax.nn.gelu(a, approximate=False)),
        "gelu_tanh": ('of.gelu|{approximate = "tanh"}', x34,
                      lambda a: jax.nn.gelu(a, approximate=True)),
    }
    for name, (op, x, fn) in unary.items():
        mnemonic, _, attrs = op.partition("|")
        c[name] = Case({"x": x}, f"%y = {mnemonic} %x {attrs} : ({{T_x}}) -> {{T_y}}",
                       lambda a, fn=fn: fn(a["x"]))
    binary = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply,
              "div": jnp.divide, "pow": jnp.power, "maximum": jnp.maximum,
              "minimum": jnp.minimum}
    for name, fn in binary.items():
        for shapes in (((3, 4), (4,)), ((2, 1, 4), (3, 1))):
            a = positive(rng, shapes[0]) if name == "pow" else nonzero(rng, shapes[0])
            b = nonzero(rng, shapes[1])
            key = f"{name}_{'row' if len(shapes[0]) == 2 else 'outer'}"
            c[key] = Case({"a": a, "b": b},
                          f"%y = of.{name} %a, %b : ({{T_a}}, {{T_b}}) -> {{T_y}}",
                          lambda v, fn=fn: fn(v["a"], v["b"]))
    c["select"] = Case(
        {"a": nonzero(rng, (3, 4)), "b": nonzero(rng, (4,))},
        "%y = of.select %c, %a, %b : ({T_c}, {T_a}, {T_b}) -> {T_y}",
        lambda v: jnp.where(v["c"], v["a"], v["b"]),
        inputs={"c": rng.integers(0, 2, size=(3, 1)).astype(np.bool_)})
    c["cast"] = Case(
        {"x": x34},
        "%h = of.cast %x : {T_x} to tensor<3x4xf32>\n"
        "  %y = of.cast %h : tensor<3x4xf32> to {T_y}",
        lambda v: v["x"].astype(jnp.float32).astype(jnp.float64), fd=False, tol=1e-6)
    c["broadcast_to"] = Case(
        {"x": nonzero(rng, (1, 4))},
        "%y = of.broadcast_to %x : ({T_x}) -> tensor<3x4xf64>",
        lambda v: jnp.broadcast_to(v["x"], (3, 4)))
    c["reshape"] = Case({"x": x34}, "%y = of.reshape %x : ({T_x}) -> tensor<2x6xf64>",
                        lambda v: v["x"].reshape(2, 6))
    c["transpose"] = Case(
        {"x": nonzero(rng, (2, 3, 4))},
        "%y = of.transpose %x, [2, 0, 1] : ({T_x}) -> tensor<4x2x3xf64>",
        lambda v: jnp.transpose(v["x"], (2, 0, 1)))
    c["slice"] = Case(
        {"x": nonzero(rng, (4, 6))},
        "%y = of.slice %x {starts = array<i64: 1, 2>, limits = array<i64: 3, 6>} "
        ": ({T_x}) -> tensor<2x4xf64>",
        lambda v: v["x"][1:3, 2:6])
    c["slice_strided"] = Case(
        {"x": nonzero(rng, (6, 7))},
        "%y = of.slice %x {starts = array<i64: 1, 0>, limits = array<i64: 6, 6>, "
        "strides = array<i64: 2, 4>} : ({T_x}) -> tensor<3x2xf64>",
        lambda v: v["x"][1:6:2, 0:6:4])
    c["concat"] = Case(
        {"a": nonzero(rng, (3, 2)), "b": nonzero(rng, (3, 4))},
        "%y = of.concat %a, %b {axis = 1 : i64} : ({T_a}, {T_b}) -> tensor<3x6xf64>",
        lambda v: jnp.concatenate([v["a"], v["b"]], axis=1))
    x234 = nonzero(rng, (2, 3, 4))
    c["reduce_sum"] = Case(
        {"x": x234}, "%y = of.reduce_sum %x {axes = array<i64: 0, 2>} : ({T_x}) -> {T_y}",
        lambda v: jnp.sum(v["x"], axis=(0, 2)))
    c["reduce_mean_keep"] = Case(
        {"x": x234},
        "%y = of.reduce_mean %x {axes = array<i64: -1>, keepdims = true} : ({T_x}) -> {T_y}",
        lambda v: jnp.mean(v["x"], axis=-1, keepdims=True))
    c["reduce_max"] = Case(
        {"x": x234}, "%y = of.reduce_max %x {axes = array<i64: 1>} : ({T_x}) -> {T_y}",
        lambda v: jnp.max(v["x"], axis=1))
    mm = {
        "matmul": ((3, 4), (4, 5), False, False),
        "matmul_ta": ((4, 3), (4, 5), True, False),
        "matmul_tb": ((3, 4), (5, 4), False, True),
        "matmul_tab": ((4, 3), (5, 4), True, True),
        "matmul_batch_weight": ((2, 3, 4), (4, 5), False, False),
        "matmul_batch_weight_tb": ((2, 3, 4), (5, 4), False, True),
        "matmul_batched": ((2, 3, 4), (2, 4, 5), False, False),
        "matmul_batched_ta": ((2, 4, 3), (2, 4, 5), True, False),
        "matmul_broadcast_batch": ((2, 3, 4), (1, 4, 5), False, False),
    }
    for name, (sa, sb, ta, tb) in mm.items():
        def ref(v, ta=ta, tb=tb):
            a = jnp.swapaxes(v["a"], -1, -2) if ta else v["a"]
            b = jnp.swapaxes(v["b"], -1, -2) if tb else v["b"]
            return jnp.matmul(a, b)
        attrs = "{" + f"transpose_a = {str(ta).lower()}, transpose_b = {str(tb).lower()}" + "}"
        c[name] = Case({"a": nonzero(rng, sa), "b": nonzero(rng, sb)},
                       f"%y = of.matmul %a, %b {attrs} : ({{T_a}}, {{T_b}}) -> {{T_y}}", ref)
    c["softmax"] = Case({"x": x234}, "%y = of.softmax %x {axis = -1 : i64} : ({T_x}) -> {T_y}",
                        lambda v: jax.nn.softmax(v["x"], axis=-1))
    c["softmax_axis0"] = Case({"x": x234}, "%y = of.softmax %x {axis = 0 : i64} : ({T_x}) -> {T_y}",
                              lambda v: jax.nn.softmax(v["x"], axis=0))
    c["log_softmax"] = Case({"x": x234},
                            "%y = of.log_softmax %x {axis = 1 : i64} : ({T_x}) -> {T_y}",
                            lambda v: jax.nn.log_softmax(v["x"], axis=1))

    def layer_norm(v, axes, w=None, b=None, eps=1e-5):
        x = v["x"]
        mean = jnp.mean(x, axis=axes, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=axes, keepdims=True)
        y = (x - mean) / jnp.sqrt(var + eps)
        if w is not None:
            y = y * v[w]
        if b is not None:
            y = y + v[b]
        return y
    c["layer_norm"] = Case(
        {"x": x234, "g": nonzero(rng, (4,)), "b": nonzero(rng, (4,))},
        "%y = of.layer_norm %x weight %g bias %b {axis = -1 : i64} "
        ": ({T_x}, {T_g}, {T_b}) -> {T_y}",
        lambda v: layer_norm(v, (-1,), "g", "b"))
    c["layer_norm_axis1"] = Case(
        {"x": x234}, "%y = of.layer_norm %x {axis = 1 : i64} : ({T_x}) -> {T_y}",
        lambda v: layer_norm(v, (1, 2)))

    def rms_norm(v, eps=1e-6):
        x = v["x"]
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * v["g"]
    c["rms_norm"] = Case(
        {"x": x234, "g": nonzero(rng, (4,))},
        "%y = of.rms_norm %x weight %g {axis = -1 : i64} : ({T_x}, {T_g}) -> {T_y}",
        rms_norm)
    ids = rng.integers(0, 7, size=(2, 5)).astype(np.int64)
    ids[0, :2] = 3  # repeated rows sum their gradients
    c["embedding"] = Case(
        {"table": nonzero(rng, (7, 3))},
        "%y = of.embedding %ids, %table : ({T_ids}, {T_table}) -> {T_y}",
        lambda v: v["table"][v["ids"]], inputs={"ids": ids})
    labels = rng.integers(0, 5, size=(2, 3)).astype(np.int32)
    c["cross_entropy"] = Case(
        {"logits": nonzero(rng, (2, 3, 5))},
        "%y = of.cross_entropy %logits, %labels : ({T_logits}, {T_labels}) -> {T_y}",
        lambda v: (jax.nn.logsumexp(v["logits"], axis=-1) -
                   jnp.take_along_axis(v["logits"], v["labels"][..., None], axis=-1)[..., 0]),
        inputs={"labels": labels})
    seed = int(rng.integers(0, 2 ** 62))
    keep = splitmix_keep(seed, 3 * 4, 0.3).reshape(3, 4)
    c["dropout"] = Case(
        {"x": x34},
        "%y = of.dropout %x, %seed {p = 3.0e-01 : f64} : ({T_x}, {T_seed}) -> {T_y}",
        lambda v: jnp.where(keep, v["x"] / 0.7, 0.0),
        inputs={"seed": np.array(seed, dtype=np.int64)})
    xb = nonzero(rng, (4, 3, 2, 2))
    stats = {"rm": nonzero(rng, (3,)), "rv": positive(rng, (3,))}

    def batch_norm(v, training, eps=1e-5):
        x = v["x"]
        shape = (1, 3, 1, 1)
        if training:
            mean = jnp.mean(x, axis=(0, 2, 3), keepdims=True)
            var = jnp.mean((x - mean) ** 2, axis=(0, 2, 3), keepdims=True)
        else:
            mean, var = v["rm"].reshape(shape), v["rv"].reshape(shape)
        return ((x - mean) / jnp.sqrt(var + eps) * v["g"].reshape(shape) +
                v["b"].reshape(shape))
    for training in (True, False):
        name = "batch_norm_" + ("train" if training else "eval")
        c[name] = Case(
            {"x": xb, "g": nonzero(rng, (3,)), "b": nonzero(rng, (3,))},
            f"%y, %m, %v = of.batch_norm %x, %g, %b, %rm, %rv "
            f"{{training = {str(training).lower()}}} : ({{T_x}}, {{T_g}}, {{T_b}}, {{T_rm}}, "
            f"{{T_rv}}) -> ({{T_y}}, tensor<3xf64>, tensor<3xf64>)",
            lambda v, training=training: batch_norm(v, training), inputs=stats)

    # Convolutions: groups, strides, asymmetric padding, dilation, bias; and
    # a strided one whose last input row feeds no output.
    def conv(v, strides, padding, dilation=(1, 1), groups=1):
        y = jax.lax.conv_general_dilated(
            v["x"], v["k"], strides, [(padding[0], padding[1]), (padding[2], padding[3])],
            rhs_dilation=dilation, dimension_numbers=("NCHW", "OIHW", "NCHW"),
            feature_group_count=groups)
        return y + v["b"].reshape(1, -1, 1, 1) if "b" in v else y
    c["conv2d_groups"] = Case(
        {"x": nonzero(rng, (2, 4, 7, 6)), "k": nonzero(rng, (6, 2, 3, 3)),
         "b": nonzero(rng, (6,))},
        "%y = of.conv2d %x, %k, %b {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 2>, "
        "dilation = array<i64: 1, 2>, groups = 2 : i64} : ({T_x}, {T_k}, {T_b}) -> {T_y}",
        lambda v: conv(v, (2, 1), (1, 0, 1, 2), (1, 2), 2))
    c["conv2d_strided"] = Case(
        {"x": nonzero(rng, (2, 3, 6, 6)), "k": nonzero(rng, (4, 3, 3, 3))},
        "%y = of.conv2d %x, %k {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} "
        ": ({T_x}, {T_k}) -> {T_y}",
        lambda v: conv(v, (2, 2), (1, 1, 1, 1)))

    def pool(x, reduce, init, kernel, strides, padding):
        return jax.lax.reduce_window(
            x, init, reduce, (1, 1) + kernel, (1, 1) + strides,
            [(0, 0), (0, 0), (padding[0], padding[1]), (padding[2], padding[3])])
    c["max_pool2d"] = Case(
        {"x": rng.permutation(np.linspace(-2, 2, 2 * 3 * 5 * 6)).reshape(2, 3, 5, 6)},
        "%y = of.max_pool2d %x {kernel_size = array<i64: 2, 3>, strides = array<i64: 2, 2>, "
        "padding = array<i64: 1, 0, 1, 1>} : ({T_x}) -> {T_y}",
        lambda v: pool(v["x"], jax.lax.max, -jnp.inf, (2, 3), (2, 2), (1, 0, 1, 1)))
    # Windows that tile the input (stride = window, no padding): the
    # gradient is a map over dx rather than a gather. Distinct values (no
    # ties, whose choice JAX does not promise).
    c["max_pool2d_tiled"] = Case(
        {"x": rng.permutation(np.linspace(-2, 2, 2 * 3 * 4 * 6)).reshape(2, 3, 4, 6)},
        "%y = of.max_pool2d %x {kernel_size = array<i64: 2, 3>} : ({T_x}) -> {T_y}",
        lambda v: pool(v["x"], jax.lax.max, -jnp.inf, (2, 3), (2, 3), (0, 0, 0, 0)))
    c["avg_pool2d_tiled"] = Case(
        {"x": nonzero(rng, (2, 3, 4, 6))},
        "%y = of.avg_pool2d %x {kernel_size = array<i64: 2, 3>} : ({T_x}) -> {T_y}",
        lambda v: pool(v["x"], jax.lax.add, 0.0, (2, 3), (2, 3), (0, 0, 0, 0)) / 6.0)
    for include in (True, False):
        def avg(v, include=include):
            total = pool(v["x"], jax.lax.add, 0.0, (3, 3), (2, 2), (1, 1, 1, 1))
            if include:
                return total / 9.0
            return total / pool(jnp.ones_like(v["x"]), jax.lax.add, 0.0, (3, 3), (2, 2),
                                (1, 1, 1, 1))
        c[f"avg_pool2d_{'include' if include else 'exclude'}_pad"] = Case(
            {"x": nonzero(rng, (2, 3, 5, 5))},
            "%y = of.avg_pool2d %x {kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
            f"padding = array<i64: 1, 1, 1, 1>, count_include_pad = {str(include).lower()}}} "
            ": ({T_x}) -> {T_y}", avg)
    return c


CASE_NAMES = sorted(cases(np.random.default_rng(0)))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_vjp(name, rng, tmp_path):
    case = cases(rng)[name]
    r = rng.uniform(-1, 1, size=case.out_shape())
    outs = run_mlir(case.mlir(), {**case.arrays(), "r": r}, tmp_path,
                    pipeline="cpu,autodiff=true", entry="main_grad")
    f = loss_fn(case, jnp.asarray(r))
    params = {k: jnp.asarray(v) for k, v in case.params.items()}
    loss, grads = jax.value_and_grad(f)(params)
    check(outs["out0"], np.asarray(loss), case.tol, "loss")
    for k in case.params:
        check(outs[f"grad_{k}"], np.asarray(grads[k]), case.tol, f"grad_{k}")
    if case.fd:
        for k, (idx, ds) in finite_differences(f, case.params, rng).items():
            got = outs[f"grad_{k}"].ravel()[idx]
            check(got, ds, VS_FD, f"grad_{k} vs finite differences")


def test_unused_parameter_gets_zero_gradient(rng, tmp_path):
    """A parameter the loss does not depend on gets zeros; an input the
    loss depends on but that is no parameter gets no gradient output."""
    x = nonzero(rng, (3,))
    mlir = """func.func @main(%x: tensor<3xf64> {of.name = "x", of.param},
                     %u: tensor<2xf64> {of.name = "u", of.param},
                     %c: tensor<3xf64> {of.name = "c"}) -> tensor<f64> {
  %y = of.mul %x, %c : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %l = of.reduce_sum %y {axes = array<i64: 0>} : (tensor<3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}
"""
    c = nonzero(rng, (3,))
    outs = run_mlir(mlir, {"x": x, "u": nonzero(rng, (2,)), "c": c}, tmp_path,
                    pipeline="cpu,autodiff=true", entry="main_grad")
    assert sorted(outs) == ["grad_u", "grad_x", "out0"]
    check(outs["grad_x"], c, VS_JAX, "grad_x")
    check(outs["grad_u"], np.zeros(2), 0, "grad_u")
