"""Automatic mixed precision against PyTorch: torch.autocast's op lists
(the result dtypes of each op of its lists that of has, on the CPU run
eagerly against PyTorch's values, on CUDA traced and compared with
PyTorch's autocast on FakeTensors, so no GPU is needed), PyTorch's type
promotion inside a region, models trained under autocast (an MLP, a
convolutional net, nanoGPT's loop with GradScaler) against PyTorch's
bfloat16 autocast and float32 results, GradScaler step by step against
PyTorch's, autocast under of.compile, and the bfloat16 results of eager ops."""

import contextlib
import os
import sys
import threading
import warnings

import numpy as np
import pytest

import of
import of.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))

# A bfloat16 has an 8-bit significand (relative spacing 2^-8 = 3.9e-3):
# results of a few bfloat16 ops, rounded in another order than PyTorch's,
# stay within BF16 relative to the largest element.
BF16 = 2e-2


def value(t):
    """A tensor of either framework (or an array) as float64 (bool stays
    bool)."""
    if isinstance(t, np.ndarray):
        a = t
    elif isinstance(t, of.Tensor):
        a = t.numpy()
    else:
        a = t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    return a if a.dtype == np.bool_ else a.astype(np.float64)


def assert_close(o, t, rel=BF16):
    o, t = value(o), value(t)
    assert o.shape == t.shape
    if o.dtype == np.bool_:
        np.testing.assert_array_equal(o, t)
        return
    assert np.abs(o - t).max() <= rel * max(np.abs(t).max(), 1e-6), (
        f"max difference {np.abs(o - t).max()} against {np.abs(t).max()}")


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


# --------------------------------------------------------------------------
# bfloat16 results come back from the runtime (python/of/_session.py).

def test_bfloat16_results_of_eager_ops_and_compiled_functions(rng):
    y = of.ones(4).to(of.bfloat16) * 2
    assert y.dtype is of.bfloat16 and y.numpy().dtype == of.bfloat16.np
    assert y.numpy().astype(np.float32).tolist() == [2.0] * 4
    a = rng.standard_normal((3, 5)).astype(np.float32)
    x = of.tensor(a).bfloat16()

    def square(t):
        return t * t
    out = of.compile(square)(x)  # a bfloat16 input and result of a plan
    assert out.dtype is of.bfloat16
    assert_close(out, torch.tensor(a).bfloat16() ** 2, rel=1e-2)


# --------------------------------------------------------------------------
# The op lists.

def operands(rng):
    """The values the cases take (labels, a 0-d value, batch norm's running
    statistics among them)."""
    return {"a": rng.standard_normal((4, 8)), "w": rng.standard_normal((8, 8)),
            "b": rng.standard_normal(8), "x": rng.standard_normal((4, 8)),
            "img": rng.standard_normal((2, 3, 6, 6)), "k": rng.standard_normal((4, 3, 3, 3)),
            "kb": rng.standard_normal(4), "q": rng.standard_normal((2, 2, 5, 8)),
            "g": rng.uniform(0.5, 1.5, 8), "lab": rng.integers(0, 8, 4),
            "one": np.array(1.5), "mean": np.zeros(3), "var": np.ones(3)}


def as_tensors(fw, arrays):
    """`arrays` as `fw` tensors (float32, labels int64)."""
    return {k: fw.tensor(v.astype(np.int64 if k == "lab" else np.float32))
            for k, v in arrays.items()}


def with_bfloat16(fw, t):
    """`t` and bfloat16 operands made from its float32 ones by a cast."""
    return dict(t, h=t["x"].to(fw.bfloat16), himg=t["img"].to(fw.bfloat16))


# name -> (the op on inputs t of framework fw with functional f)
CASES = {
    "matmul": lambda fw, f, t: t["a"] @ t["w"],
    "matmul of a bfloat16 and a float32": lambda fw, f, t: t["h"] @ t["w"],
    "linear": lambda fw, f, t: f.linear(t["a"], t["w"], t["b"]),
    "conv2d": lambda fw, f, t: f.conv2d(t["img"], t["k"], t["kb"], padding=1),
    "scaled_dot_product_attention": lambda fw, f, t: f.scaled_dot_product_attention(
        t["q"], t["q"], t["q"], is_causal=True),
    "softmax": lambda fw, f, t: f.softmax(t["h"], -1),
    "softmax of float32": lambda fw, f, t: f.softmax(t["a"], -1),
    "softmax with dtype": lambda fw, f, t: f.softmax(t["h"], -1, dtype=fw.bfloat16),
    "Tensor.softmax": lambda fw, f, t: t["h"].softmax(-1),
    "log_softmax": lambda fw, f, t: f.log_softmax(t["h"], -1),
    "sum": lambda fw, f, t: t["h"].sum(-1),
    "sum with dtype": lambda fw, f, t: t["h"].sum(-1, dtype=fw.bfloat16),
    "mean": lambda fw, f, t: t["h"].mean(-1),
    "exp": lambda fw, f, t: t["h"].exp(),
    "log": lambda fw, f, t: (t["h"] * t["h"] + 1).log(),
    "rsqrt": lambda fw, f, t: (t["h"] * t["h"] + 1).rsqrt(),
    "pow": lambda fw, f, t: t["h"] ** 2,
    "square": lambda fw, f, t: t["h"].square(),
    "tanh": lambda fw, f, t: t["h"].tanh(),
    "gelu": lambda fw, f, t: f.gelu(t["h"]),
    "layer_norm of bfloat16 with float32 parameters": lambda fw, f, t: f.layer_norm(
        t["h"], (8,), t["g"], t["b"]),
    "layer_norm of float32": lambda fw, f, t: f.layer_norm(t["a"], (8,), t["g"], t["b"]),
    "rms_norm of bfloat16 with a float32 weight": lambda fw, f, t: f.rms_norm(
        t["h"], (8,), t["g"]),
    "cross_entropy": lambda fw, f, t: f.cross_entropy(t["h"], t["lab"]),
    "cross_entropy with ignore_index": lambda fw, f, t: f.cross_entropy(
        t["h"], t["lab"], ignore_index=1),
    "mse_loss": lambda fw, f, t: f.mse_loss(t["h"], t["a"]),
    "embedding": lambda fw, f, t: f.embedding(t["lab"], t["w"]),
    "add of bfloat16 and float32": lambda fw, f, t: t["h"] + t["a"],
    "add of bfloat16 and a 0-d float32": lambda fw, f, t: t["h"] + t["one"],
    "mul of 0-d bfloat16 and 0-d float32": lambda fw, f, t: t["h"].sum() * t["one"],
    "sub of float32 and a bfloat16 vector": lambda fw, f, t: t["a"] - t["h"][0],
    "div of bfloat16 and float64": lambda fw, f, t: t["h"] / t["a"].double(),
    "matmul of float64": lambda fw, f, t: t["a"].double() @ t["w"].double(),
    "comparison": lambda fw, f, t: t["h"] < t["a"],
    "maximum": lambda fw, f, t: fw.maximum(t["h"], t["a"]),
    "where": lambda fw, f, t: fw.where(t["a"] > 0, t["h"], t["a"]),
    "cat": lambda fw, f, t: fw.cat([t["h"], t["a"]]),
    "addcmul": lambda fw, f, t: fw.addcmul(t["a"], t["h"], t["h"]),
    "batch_norm of bfloat16 with float32 statistics": lambda fw, f, t: f.batch_norm(
        t["himg"], t["mean"], t["var"], t["g"][:3], t["b"][:3], training=True),
    "relu": lambda fw, f, t: f.relu(t["h"]),
}


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_cpu_autocast_results_and_dtypes_are_pytorchs(rng):
    arrays = operands(rng)
    ot, tt = (with_bfloat16(fw, as_tensors(fw, arrays)) for fw in (of, torch))
    for name, case in CASES.items():
        with of.autocast("cpu", dtype=of.bfloat16):
            o = case(of, F, ot)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            t = case(torch, TF, tt)
        assert dtype_name(o) == dtype_name(t), name
        assert_close(o, t)


def test_mixed_dtypes_promote_inside_and_outside_autocast():
    """PyTorch's type promotion, the same with autocast on or off:
    bfloat16 with float32 is float32, bfloat16 with int64 bfloat16."""
    h, a = of.ones(3).bfloat16(), of.ones(3)
    th, ta = torch.ones(3).bfloat16(), torch.ones(3)
    for region in (contextlib.nullcontext, lambda: of.autocast("cpu"),
                   lambda: of.autocast("cpu", enabled=False)):
        with region():
            assert (h + a).dtype is of.float32 and (th + ta).dtype is torch.float32
            assert (h + of.tensor([1, 2, 3])).dtype is of.bfloat16
            assert (th + torch.tensor([1, 2, 3])).dtype is torch.bfloat16


def test_cuda_autocast_op_list_is_pytorchs_on_fake_tensors(rng, tmp_path):
    """of's CUDA policies (traced for "cuda" tensors, which needs no GPU)
    give the dtypes PyTorch's CUDA autocast gives FakeTensors."""
    fake_tensor = pytest.importorskip("torch._subclasses.fake_tensor")
    arrays = operands(rng)
    names = sorted(arrays)
    for low in ("float16", "bfloat16"):
        theirs = {}
        with fake_tensor.FakeTensorMode():
            tt = with_bfloat16(torch, {k: v.to("cuda") for k, v in
                                       as_tensors(torch, arrays).items()})
            prev = torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")
            torch.set_autocast_enabled("cuda", True)
            torch.set_autocast_dtype("cuda", getattr(torch, low))
            try:
                for name, case in CASES.items():
                    theirs[name] = dtype_name(case(torch, TF, tt))
            finally:
                torch.set_autocast_enabled("cuda", prev[0])
                torch.set_autocast_dtype("cuda", prev[1])
        ours = {}

        def traced(*args):
            t = with_bfloat16(of, dict(zip(names, args)))
            for name, case in CASES.items():
                ours[name] = dtype_name(case(of, F, t))
            return args[0].sum()
        args = [as_tensors(of, arrays)[n].to("cuda") for n in names]
        # PyTorch's set_autocast_enabled, without autocast()'s check for a GPU
        of.set_autocast_enabled("cuda", True)
        of.set_autocast_dtype("cuda", getattr(of, low))
        try:
            of.compile(traced).save_plan(str(tmp_path / f"{low}.ofp"), *args)
        except of.CompileError:
            pass  # the trace is what is compared (a CUDA plan needs the toolkit's libdevice)
        finally:
            of.set_autocast_enabled("cuda", False)
            of.set_autocast_dtype("cuda", of.float16)
        assert ours == theirs


# --------------------------------------------------------------------------
# Models under autocast against PyTorch.

def _same_weights(om, tm):
    om.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


def _mlp(fw):
    nn = fw.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 16)
            self.ln, self.head = nn.LayerNorm(16), nn.Linear(16, 5)

        def forward(self, x):
            h = self.fc1(x)
            r = x + self.fc2(nn.functional.gelu(h))  # a float32 residual
            return h, r, self.head(self.ln(r))
    return MLP()


def _convnet(fw):
    nn = fw.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn, self.pool = nn.BatchNorm2d(8), nn.AvgPool2d(2)
            self.fc = nn.Linear(8 * 4 * 4, 5)

        def forward(self, x):
            h = self.conv(x)
            a = self.bn(h)
            return h, a, self.fc(self.pool(a.relu()).flatten(1))
    return Net()


@pytest.mark.parametrize("make, shape", [(_mlp, (6, 16)), (_convnet, (2, 3, 8, 8))],
                         ids=["mlp", "convnet"])
def test_forward_and_backward_under_autocast_match_pytorch(rng, make, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 5, shape[0])
    tm, om, t32 = make(torch), make(of), make(torch)
    _same_weights(om, tm)
    t32.load_state_dict(tm.state_dict())
    runs = []
    for fw, f, m, amp in ((of, F, om, True), (torch, TF, tm, True), (torch, TF, t32, False)):
        with fw.autocast("cpu", dtype=fw.bfloat16, enabled=amp):
            *hidden, logits = m(fw.tensor(x))
            loss = f.cross_entropy(logits, fw.tensor(y))
        loss.backward()
        runs.append(([dtype_name(t) for t in hidden + [logits, loss]],
                     [loss, logits] + [p.grad for p in m.parameters()] +
                     [b for b in m.buffers() if b.dtype.is_floating_point]))
    (odt, ours), (tdt, theirs), (_, full) = runs
    assert odt == tdt and tdt[-2:] == ["bfloat16", "float32"]
    assert all(p.grad.dtype is of.float32 for p in om.parameters())
    for o, t, t32v in zip(ours, theirs, full):
        assert_close(o, t)  # PyTorch's bfloat16 autocast
        # float32's, as a sanity bound: as far as PyTorch's bfloat16 result
        # is (the gradients through a batch norm in bfloat16 are up to 40%
        # off: of's are PyTorch's to 1%)
        o, t, t32v = value(o), value(t), value(t32v)
        scale = np.abs(t32v).max()
        assert np.abs(o - t32v).max() <= 2 * np.abs(t - t32v).max() + BF16 * scale


@pytest.mark.skipif(not of.cuda.is_available(), reason="needs a GPU")
def test_mlp_under_cuda_autocast_matches_pytorchs_cpu_autocast(rng):
    """The MLP's ops have the same policies on both devices: of on the GPU
    against PyTorch's CPU autocast (bfloat16 both)."""
    x = rng.standard_normal((6, 16)).astype(np.float32)
    y = rng.integers(0, 5, 6)
    tm, om = _mlp(torch), _mlp(of)
    _same_weights(om, tm)
    om.to("cuda")
    runs = []
    for fw, f, m, device in ((of, F, om, "cuda"), (torch, TF, tm, "cpu")):
        with fw.autocast(device, dtype=fw.bfloat16):
            *hidden, logits = m(fw.tensor(x).to(device))
            loss = f.cross_entropy(logits, fw.tensor(y).to(device))
        loss.backward()
        runs.append(([dtype_name(t) for t in hidden + [logits, loss]],
                     [loss, logits] + [p.grad for p in m.parameters()]))
    assert runs[0][0] == runs[1][0]
    for o, t in zip(runs[0][1], runs[1][1]):
        assert_close(o, t)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_nanogpt_loop_with_autocast_and_grad_scaler_matches_pytorch(rng, optimizer):
    """nanoGPT's train.py loop: the forward under torch.amp.autocast, then
    scaler.scale(loss).backward(), unscale_, clip_grad_norm_, step, update;
    with nanoGPT's AdamW (configure_optimizers) and with SGD."""
    from train_gpt import load_model
    tokens = rng.integers(0, 64, size=(3, 2, 17))
    losses, params = {}, {}
    for name, fw in (("torch", torch), ("of", of)):
        ns = load_model(name)
        cfg = ns["GPTConfig"](block_size=16, vocab_size=64, n_layer=1, n_head=2, n_embd=32)
        model = ns["GPT"](cfg)
        if name == "torch":
            state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
            initial = [p.detach().numpy().copy() for p in model.parameters()]
        else:
            model.load_state_dict(state)
        opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95)) if optimizer == "adamw" \
            else fw.optim.SGD(model.parameters(), lr=0.5)
        scaler = fw.amp.GradScaler("cpu")
        ctx = fw.amp.autocast(device_type="cpu", dtype=fw.bfloat16)
        losses[name] = []
        for step in range(3):
            X, Y = fw.tensor(tokens[step, :, :-1]), fw.tensor(tokens[step, :, 1:])
            with ctx:
                logits, loss = model(X, Y)
            assert dtype_name(logits) == "bfloat16" and dtype_name(loss) == "float32"
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            fw.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            losses[name].append(loss.item())
        assert scaler.get_scale() == 2.0**16
        params[name] = list(model.parameters())
    np.testing.assert_allclose(losses["of"], losses["torch"], rtol=1e-3)
    assert all(p.dtype is of.float32 for p in params["of"])
    if optimizer == "sgd":
        # (AdamW moves an element whose gradient is rounding noise, such as
        # the key biases', by a whole lr either way)
        for o, t, before in zip(params["of"], params["torch"], initial):
            assert_close(value(o) - before, value(t) - before)


# --------------------------------------------------------------------------
# GradScaler.

def _linear_pair():
    tm = torch.nn.Linear(4, 3)
    om = of.nn.Linear(4, 3)
    _same_weights(om, tm)
    return om, tm


def test_a_disabled_grad_scaler_passes_everything_through(rng):
    om, _ = _linear_pair()
    opt = of.optim.SGD(om.parameters(), lr=0.1)
    scaler = of.amp.GradScaler("cpu", enabled=False)
    loss = om(of.tensor(rng.standard_normal((2, 4)).astype(np.float32))).sum()
    assert scaler.scale(loss) is loss and scaler.scale([loss]) == [loss]
    loss.backward()
    grad = om.weight.grad.numpy().copy()
    w = om.weight.numpy().copy()
    assert scaler.unscale_(opt) is None
    np.testing.assert_array_equal(om.weight.grad.numpy(), grad)
    assert scaler.step(opt) is None
    np.testing.assert_allclose(om.weight.numpy(), w - 0.1 * grad, rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    assert not scaler.is_enabled()
    scaler.load_state_dict({})  # a no-op, as in PyTorch


@pytest.mark.skipif(of.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_grad_scaler_without_a_gpu_disables_itself_as_pytorchs():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        assert not of.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert not of.cuda.amp.GradScaler(enabled=False).is_enabled()


def test_grad_scaler_steps_skips_and_rescales_as_pytorchs(rng):
    """Four iterations with growth_interval=2, the third with an inf in the
    gradient: step for step, the scale, the growth tracker, the gradients
    after unscale_ and the parameters are PyTorch's."""
    om, tm = _linear_pair()
    opts = of.optim.SGD(om.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    scalers = [fw.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
               for fw in (of, torch)]
    for it in range(4):
        x = rng.standard_normal((3, 4)).astype(np.float32)
        skipped, grads = [], []
        for fw, m, opt, scaler in zip((of, torch), (om, tm), opts, scalers):
            opt.zero_grad()
            loss = m(fw.tensor(x)).square().mean()
            scaled = scaler.scale(loss)
            assert dtype_name(scaled) == "float32"
            assert scaled.item() == pytest.approx(loss.item() * scaler.get_scale(), rel=1e-6)
            scaled.backward()
            if it == 2:  # an overflow in one gradient
                g = m.bias.grad.numpy().copy()
                g[1] = np.inf
                m.bias.grad = fw.tensor(g)
            before = value(m.weight)
            scaler.unscale_(opt)
            grads.append([value(p.grad) for p in m.parameters()])
            scaler.step(opt)
            after = value(m.weight)
            skipped.append(np.array_equal(before, after))
            scaler.update()
        assert skipped == [it == 2] * 2
        assert scalers[0].state_dict() == scalers[1].state_dict()
        for o, t in zip(*grads):
            np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-7)
        for o, t in zip(om.parameters(), tm.parameters()):
            np.testing.assert_allclose(value(o), value(t), rtol=1e-5, atol=1e-6)
    # 1024, grown to 2048 after two good steps, halved by the overflow
    assert scalers[0].get_scale() == 1024.0 and scalers[0].state_dict()["_growth_tracker"] == 1


def test_grad_scaler_state_dict_and_errors_are_pytorchs(rng):
    om, _ = _linear_pair()
    opt = of.optim.SGD(om.parameters(), lr=0.1)
    scaler = of.amp.GradScaler("cpu", init_scale=8.0, growth_factor=4.0, backoff_factor=0.25,
                               growth_interval=3)
    assert scaler.get_scale() == 8.0
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.unscale_(opt)
    bf16_loss = om(of.randn(2, 4)).sum().bfloat16()
    assert scaler.scale(bf16_loss).dtype is of.float32  # a 0-d bfloat16 loss: float32
    assert scaler.scale(om(of.randn(2, 4)).bfloat16()).dtype is of.bfloat16
    scaler.scale(om(of.randn(2, 4)).sum()).backward()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        scaler.update()
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    state = scaler.state_dict()
    ts = torch.amp.GradScaler("cpu", init_scale=8.0, growth_factor=4.0, backoff_factor=0.25,
                              growth_interval=3)
    ts.load_state_dict(state)
    assert ts.state_dict() == state == {"scale": 2.0, "growth_factor": 4.0,
                                        "backoff_factor": 0.25, "growth_interval": 3,
                                        "_growth_tracker": 1}
    fresh = of.amp.GradScaler("cpu")
    fresh.load_state_dict(ts.state_dict())
    assert fresh.state_dict() == state
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})
    fresh.scale(of.ones(()))
    om.weight.grad = of.zeros(3, 4).half()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        fresh.unscale_(opt)
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        of.amp.GradScaler("cpu", growth_factor=1.0)


# --------------------------------------------------------------------------
# The context manager.

def test_autocast_as_decorator_nested_and_per_thread():
    x, w = of.randn(2, 4), of.randn(4, 4)

    @of.autocast(device_type="cpu", dtype=of.bfloat16)
    def forward():
        inner = []
        with of.autocast(device_type="cpu", enabled=False):
            inner.append((x @ w).dtype)
            inner.append(of.is_autocast_enabled("cpu"))
        seen = []
        thread = threading.Thread(target=lambda: seen.append((x @ w).dtype))
        thread.start()
        thread.join()
        return (x @ w).dtype, inner, seen, of.is_autocast_enabled("cpu")
    assert forward() == (of.bfloat16, [of.float32, False], [of.float32], True)
    assert not of.is_autocast_enabled("cpu") and (x @ w).dtype is of.float32
    assert forward.__name__ == "forward"
    with of.autocast("cpu", dtype=of.float16):
        assert of.get_autocast_dtype("cpu") is of.float16 and (x @ w).dtype is of.float16
    assert of.get_autocast_dtype("cpu") is of.bfloat16
    assert of.get_autocast_dtype("cuda") is of.float16 and not of.is_autocast_enabled()
    with pytest.warns(FutureWarning, match="torch.cpu.amp.autocast"):
        ctx = of.cpu.amp.autocast()
    with ctx:
        assert (x @ w).dtype is of.bfloat16
    with pytest.raises(TypeError, match="requires a callable"):
        of.autocast("cpu")(3)


def test_autocast_arguments_as_pytorchs():
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of"):
        ctx = of.autocast("cpu", dtype=of.float32)
    with ctx:
        assert not of.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        of.autocast(0)
    with pytest.raises(RuntimeError, match="device string: gpu"):
        of.autocast("gpu")
    with pytest.raises(NotImplementedError, match="'xpu'"):
        of.autocast("xpu")
    assert of.amp.is_autocast_available("cpu") and not of.amp.is_autocast_available("xpu")
    if not of.cuda.is_available():
        assert not of.cuda.is_bf16_supported()
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ctx = of.autocast("cuda")
        with ctx:
            assert not of.is_autocast_enabled("cuda")
        with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                of.cuda.amp.autocast()


# --------------------------------------------------------------------------
# Under of.compile.

def test_autocast_inside_a_compiled_function_and_training_step(rng):
    x = of.tensor(rng.standard_normal((6, 16)).astype(np.float32))
    y = of.tensor(rng.integers(0, 5, 6))
    model = _mlp(of)

    def forward(x, y):
        with of.autocast("cpu", dtype=of.bfloat16):
            h, r, logits = model(x)
            return h, r, logits, F.cross_entropy(logits, y)
    compiled = of.compile(forward)(x, y)
    eager = forward(x, y)
    assert [dtype_name(t) for t in compiled] == [dtype_name(t) for t in eager] == \
        ["bfloat16", "float32", "bfloat16", "float32"]
    for c, e in zip(compiled, eager):
        assert_close(c, e)

    class Amp(of.nn.Module):  # the forward in a region, the loss outside
        def __init__(self):
            super().__init__()
            self.inner = _mlp(of)

        @of.autocast("cpu")
        def forward(self, x):
            return self.inner(x)[-1].float()
    fused, eager_model = Amp(), Amp()
    eager_model.load_state_dict(fused.state_dict())
    opts = [of.optim.SGD(m.parameters(), lr=0.1) for m in (fused, eager_model)]
    step = of.compile(fused, loss_fn=F.cross_entropy, optimizer=opts[0])
    for _ in range(2):
        fused_loss = step(x, y)
        loss = F.cross_entropy(eager_model(x), y)
        opts[1].zero_grad()
        loss.backward()
        opts[1].step()
        assert_close(fused_loss, loss)
    for a, b in zip(fused.parameters(), eager_model.parameters()):
        assert_close(a, b)


def test_a_compiled_module_called_inside_and_outside_a_region():
    compiled = of.compile(of.nn.Linear(4, 3))
    x = of.randn(2, 4)
    with of.autocast("cpu"):
        assert compiled(x).dtype is of.bfloat16
    assert compiled(x).dtype is of.float32
