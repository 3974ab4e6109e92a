"""of.compile and of.nn.Graph: caching by signature (memory and disk),
compile errors at the Python line, plans that of-run executes, IR dumps,
logging, learning-rate schedules without recompilation, checkpoints."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import of
import of.nn as nn
import of.nn.functional as F

TOOLS = os.environ.get("OF_TOOLS_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def test_second_call_does_not_recompile_new_shape_does(rng):
    model = MLP()
    compiled = of.compile(model)
    x = of.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    before = of.cache_stats.compiles
    y1 = compiled(x)
    assert compiled.compiles == 1 and of.cache_stats.compiles == before + 1
    y2 = compiled(of.from_numpy(rng.standard_normal((4, 8)).astype(np.float32)))
    assert compiled.compiles == 1 and of.cache_stats.compiles == before + 1
    compiled(of.from_numpy(rng.standard_normal((6, 8)).astype(np.float32)))
    assert compiled.compiles == 2 and of.cache_stats.compiles == before + 2
    np.testing.assert_allclose(y1.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert y2.shape == (4, 3)


def test_plans_are_cached_on_disk_across_processes(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import of, of.nn as nn\n"
        "of.manual_seed(0)\n"
        "m = nn.Sequential(nn.Linear(5, 7), nn.GELU())\n"
        "print(of.compile(m)(of.ones(2, 5)).sum().item())\n"
        "print('STATS', of.cache_stats.compiles, of.cache_stats.disk_hits)\n")
    env = dict(os.environ, OF_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.split() for r in runs)
    assert first[0] == second[0]  # the same value
    assert int(first[2]) >= 1 and int(second[2]) == 0 and int(second[3]) >= 1, (first, second)


def test_compile_error_points_at_the_python_line():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(np.ones(4, np.float32))

        def forward(self, x):
            return F.layer_norm(x, (8,), self.w)  # the weight has the wrong shape

    line = Bad.forward.__code__.co_firstlineno + 1
    with pytest.raises(of.CompileError) as info:
        of.compile(Bad())(of.ones(2, 8))
    message = str(info.value)
    assert f"{__file__}:{line}: error:" in message, message
    assert "F.layer_norm(x, (8,), self.w)" in message


def test_run_error_points_at_the_python_line():
    # A compiled step that fails at run time (a token id past the
    # vocabulary) names the step and the Python line that made it.
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(16, 4)

        def forward(self, ids):
            return self.emb(ids).tanh()

    line = Tagger.forward.__code__.co_firstlineno + 1
    step = of.compile(Tagger())
    assert step(of.tensor(np.array([[1, 2, 3]], np.int64))).shape == (1, 3, 4)
    # (the parameters require gradients, so the call runs when its result
    # is read: it may yet join a training step, the standard loop's)
    with pytest.raises(RuntimeError) as info:
        step(of.tensor(np.array([[1, 20, 3]], np.int64))).numpy()
    message = str(info.value)
    assert "index 20 out of range [0, 16)" in message, message
    assert f"(library check.index_range, from {__file__}:{line}:1)" in message, message


def test_save_plan_runs_in_of_run(tmp_path, rng):
    model = MLP()
    compiled = of.compile(model)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y = compiled(of.from_numpy(x)).numpy()
    plan = tmp_path / "mlp.ofp"
    compiled.save_plan(str(plan))
    np.save(tmp_path / "x.npy", x)
    args = [os.path.join(TOOLS, "of-run"), str(plan), "--input", f"x={tmp_path / 'x.npy'}"]
    for name, p in model.state_dict().items():
        np.save(tmp_path / f"{name}.npy", p.numpy())
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    r = subprocess.run(args + ["--output-dir", str(tmp_path / "out")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out0.npy"), y)


def test_ahead_of_time_training_in_of_run(tmp_path, rng):
    """A training step compiled by save_plan(path, *example_args) before
    anything runs, its initial weights saved by of.save, trained by of-run
    --init-state (optimizer state from zero): the losses of training the
    same model in Python."""
    of.manual_seed(3)
    model = MLP()
    step = of.compile(model, loss_fn=nn.CrossEntropyLoss(),
                      optimizer=of.optim.AdamW(model.parameters(), lr=1e-2))
    xs = rng.standard_normal((4, 16, 8)).astype(np.float32)
    ys = rng.integers(0, 3, size=(4, 16))
    plan = tmp_path / "step.ofp"
    step.save_plan(str(plan), of.from_numpy(xs[0]), of.from_numpy(ys[0]))
    assert step._last is None  # compiled, not run
    of.save(model.state_dict(), str(tmp_path / "init.safetensors"))
    np.save(tmp_path / "x.npy", xs)
    np.save(tmp_path / "y.npy", ys)
    r = subprocess.run([os.path.join(TOOLS, "of-run"), str(plan), "--entry", "mlp_train_step",
                        "--init-state", str(tmp_path / "init.safetensors"),
                        "--batch", f"x={tmp_path / 'x.npy'}",
                        "--batch", f"target={tmp_path / 'y.npy'}", "--set", "lr=0.01",
                        "--steps", "4", "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "state not given starts at zeros: adam_m_" in r.stderr
    aot = [float(v) for v in re.findall(r"^step \d+/4  loss (\S+)", r.stdout, re.M)]
    python = [step(of.from_numpy(x), of.from_numpy(y)).item() for x, y in zip(xs, ys)]
    assert len(aot) == 4  # (random labels: the loss need not fall in 4 steps)
    np.testing.assert_allclose(aot, python, rtol=1e-5)
    np.testing.assert_allclose(np.load(tmp_path / "out" / "fc1.weight.npy"),
                               model.fc1.weight.numpy(), rtol=1e-5, atol=1e-6)
    # Weights without a parameter are refused; a checkpoint's weights start
    # afresh (its optimizer state is not read).
    state = {k: v for k, v in model.state_dict().items() if k != "fc2.bias"}
    of.save(state, str(tmp_path / "partial.safetensors"))
    step.save_state(str(tmp_path / "ckpt.safetensors"))
    base = [os.path.join(TOOLS, "of-run"), str(plan), "--entry", "mlp_train_step",
            "--batch", f"x={tmp_path / 'x.npy'}", "--batch", f"target={tmp_path / 'y.npy'}",
            "--set", "lr=0.01", "--steps", "2", "--output-dir", str(tmp_path / "o")]
    r = subprocess.run(base + ["--init-state", str(tmp_path / "partial.safetensors")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "lacks the parameters 'fc2.bias'" in r.stderr, r.stderr
    r = subprocess.run(base + ["--init-state", str(tmp_path / "ckpt.safetensors"),
                               "--save-state", str(tmp_path / "again.safetensors")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    from safetensors.numpy import load_file
    assert int(load_file(str(tmp_path / "again.safetensors"))["adam_step"]) == 2


def test_dump_dir_and_debug_log(tmp_path):
    dump = tmp_path / "ir"
    of.compile(MLP(), dump_dir=str(dump))(of.ones(2, 8))
    files = [os.path.join(d, f) for d, _, fs in os.walk(dump) for f in fs]
    names = " ".join(sorted(os.path.basename(f) for f in files))
    assert "input.mlir" in names and "plan.ofp" in names
    for stage in ("of-lower-cpu-kernels", "convert-of-to-linalg", "one-shot-bufferize",
                  "of-build-plan"):
        assert stage in names, (stage, names)
    script = tmp_path / "log.py"
    script.write_text("import of\nprint((of.ones(3) + 1).sum().item())\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=dict(os.environ, OF_LOG="debug", OF_CACHE_DIR=""), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "6.0", r.stderr
    assert "pass convert-of-to-linalg" in r.stderr and "compiled eager op" in r.stderr, r.stderr


def test_lr_schedule_without_recompiling():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Linear(4, 2)
    m = nn.Linear(4, 2)
    m.load_state_dict(tm.state_dict())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    opt = of.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sched = of.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    step = of.compile(m, loss_fn=nn.MSELoss(), optimizer=opt)
    for _ in range(6):
        loss = torch.nn.functional.mse_loss(tm(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        loss.backward()
        topt.step()
        tsched.step()
        got = step(of.from_numpy(x), of.from_numpy(y)).item()
        sched.step()
        assert abs(got - loss.item()) <= 1e-5 * abs(loss.item())
    assert step.compiles == 1
    np.testing.assert_allclose(m.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


class TrainGraph(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        return loss


def test_graph_matches_compile_and_checkpoints(tmp_path, rng):
    x = of.from_numpy(rng.standard_normal((8, 8)).astype(np.float32))
    y = of.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))
    a, b = MLP(), MLP()
    b.load_state_dict(a.state_dict())
    graph = TrainGraph(a, of.optim.AdamW(a.parameters(), lr=1e-2))
    step = of.compile(b, loss_fn=F.mse_loss, optimizer=of.optim.AdamW(b.parameters(), lr=1e-2))
    for _ in range(3):
        assert graph(x, y).item() == step(x, y).item()
    graph.save_state(str(tmp_path / "ckpt.safetensors"))
    expected = [graph(x, y).item() for _ in range(3)]
    assert graph.load_state(str(tmp_path / "ckpt.safetensors")) == 3
    assert [graph(x, y).item() for _ in range(3)] == expected
    # the graph's parameters are named after its attributes
    from safetensors.numpy import load_file
    names = set(load_file(str(tmp_path / "ckpt.safetensors")))
    assert {"model.fc1.weight", "adam_m_model.fc1.weight", "lr"} - {"lr"} <= names


def test_backward_of_a_value_without_history_is_pytorchs_error():
    loss = (of.ones(3) * 2).sum()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        loss.backward()


def test_dropout_in_a_compiled_step_and_eval_mode_recompiles(rng):
    model = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5), nn.Linear(64, 1))
    x = of.from_numpy(rng.standard_normal((16, 8)).astype(np.float32))
    y = of.zeros(16, 1)
    step = of.compile(model, loss_fn=F.mse_loss, optimizer=of.optim.SGD(model.parameters(),
                                                                         lr=0.0))
    losses = {step(x, y).item() for _ in range(4)}
    assert len(losses) == 4, "each step draws a new dropout mask"
    forward = of.compile(model)
    train_out = forward(x).numpy()
    model.eval()
    eval_out = forward(x).numpy()
    assert forward.compiles == 2, "eval mode is a different program"
    np.testing.assert_allclose(eval_out, model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(train_out, eval_out)


def test_batch_norm_running_statistics_in_compiled_steps(rng):
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 2))
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(64, 2))
    m.load_state_dict(tm.state_dict(), strict=False)
    x = rng.standard_normal((8, 3, 6, 6)).astype(np.float32) * 2 + 1
    y = rng.integers(0, 2, 8)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    step = of.compile(m, loss_fn=F.cross_entropy, optimizer=of.optim.SGD(m.parameters(),
                                                                          lr=0.1))
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        loss.backward()
        topt.step()
        got = step(of.from_numpy(x), of.tensor(y)).item()
        assert abs(got - loss.item()) <= 1e-4 * abs(loss.item())
    for name in ("1.running_mean", "1.running_var", "1.weight", "0.weight"):
        np.testing.assert_allclose(m.state_dict()[name].numpy(),
                                   tm.state_dict()[name].detach().numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    # a compiled forward in training mode updates them too, as eagerly
    forward = of.compile(m)
    before = m[1].running_mean.numpy().copy()
    forward(of.from_numpy(x))
    after_compiled = m[1].running_mean.numpy().copy()
    m[1].running_mean.copy_(before)
    m(of.from_numpy(x))
    np.testing.assert_allclose(after_compiled, m[1].running_mean.numpy(), rtol=1e-6, atol=1e-7)
    assert not np.allclose(before, after_compiled)


def test_a_damaged_cached_plan_is_recompiled(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import of\n"
        "print((of.ones(5) * 3.0).sum().item(), of.cache_stats.compiles,"
        " of.cache_stats.disk_hits)\n")
    env = dict(os.environ, OF_CACHE_DIR=str(tmp_path / "cache"))
    run = lambda: subprocess.run([sys.executable, str(script)], env=env,  # noqa: E731
                                 capture_output=True, text=True, timeout=120)
    first = run()
    assert first.returncode == 0, first.stderr
    for plan in (tmp_path / "cache").rglob("*.ofp"):
        plan.write_bytes(plan.read_bytes()[:100])  # cut short
    second = run()
    assert second.returncode == 0, second.stderr
    value, compiles, hits = second.stdout.split()
    assert value == "15.0" and int(compiles) >= 1 and int(hits) == 0, second.stdout
    third = run()
    assert third.stdout.split()[2] != "0", "the recompiled plans are cached again"


def test_f16_amp_with_loss_scaling_tracks_torch_grad_scaler(rng):
    """amp="f16" against PyTorch's CPU autocast to float16 with
    torch.amp.GradScaler and AdamW, from the same weights and data: every
    step's loss within 1e-3 of the initial loss (f16 rounding: 3.3e-5 to
    9.7e-5 measured in eleven runs)."""
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    m = MLP()
    m.load_state_dict({f"fc{i // 2 + 1}.{k}": v for i in (0, 2)
                       for k, v in tm[i].state_dict().items()})
    x = rng.standard_normal((32, 8)).astype(np.float32)
    y = rng.integers(0, 3, size=32)
    topt = torch.optim.AdamW(tm.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    opt = of.optim.AdamW(m.parameters(), lr=0.01)
    step = of.compile(m, loss_fn=nn.CrossEntropyLoss(), optimizer=opt, amp="f16")
    losses, ref = [], []
    for _ in range(20):
        with torch.autocast("cpu", dtype=torch.float16):
            logits = tm(torch.from_numpy(x))
        loss = torch.nn.functional.cross_entropy(logits.float(), torch.from_numpy(y))
        topt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(topt)
        scaler.update()
        ref.append(loss.item())
        losses.append(step(of.from_numpy(x), of.from_numpy(y)).item())
    drift = max(abs(a - b) for a, b in zip(losses, ref)) / ref[0]
    assert ref[-1] < 0.85 * ref[0], ref
    print(f"f16 AMP against torch's GradScaler: drift {drift:.2e} of the initial loss")
    assert drift <= 1e-3, (drift, losses, ref)
    assert step.compiles == 1


def test_optimizer_state_follows_the_step_across_signatures(rng, tmp_path):
    """A step of another signature (a smaller last batch, the model cast to
    float64) continues the optimizer state of the one before, and back:
    the same trajectory as PyTorch's AdamW over those batches."""
    torch = pytest.importorskip("torch")
    from safetensors.numpy import load_file
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    m = MLP()
    m.load_state_dict({f"fc{i // 2 + 1}.{k}": v for i in (0, 2)
                       for k, v in tm[i].state_dict().items()})
    topt = torch.optim.AdamW(tm.parameters(), lr=0.01)
    step = of.compile(m, loss_fn=nn.CrossEntropyLoss(),
                      optimizer=of.optim.AdamW(m.parameters(), lr=0.01))
    for i, batch in enumerate([8, 8, 8, 5, 8, 8, 5]):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        y = rng.integers(0, 3, size=batch)
        loss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
        topt.zero_grad()
        loss.backward()
        topt.step()
        got = step(of.from_numpy(x), of.from_numpy(y)).item()
        assert abs(got - loss.item()) <= 1e-4 * abs(loss.item()), (i, got, loss.item())
    assert step.compiles == 2
    for i, layer in ((1, 0), (2, 2)):
        np.testing.assert_allclose(getattr(m, f"fc{i}").weight.numpy(),
                                   tm[layer].weight.detach().numpy(), rtol=1e-4, atol=1e-5)
    # Cast to float64: a third plan, which continues the step count and
    # the moments (in f64).
    moment = topt.state[tm[0].weight]["exp_avg"].numpy().astype(np.float64)
    m.to(of.float64)
    x = rng.standard_normal((8, 8))
    y = rng.integers(0, 3, size=8)
    step(of.from_numpy(x), of.from_numpy(y))
    assert step.compiles == 3 and m.fc1.weight.dtype is of.float64
    step.save_state(str(tmp_path / "s.safetensors"))
    state = load_file(str(tmp_path / "s.safetensors"))
    assert int(state["adam_step"]) == 8
    # The first moment continues: beta1 * the old one + (1 - beta1) * the
    # new gradient (PyTorch's, in f64, from the same weights).
    tm.double()
    tm.zero_grad()
    torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    expected = 0.9 * moment + 0.1 * tm[0].weight.grad.numpy()
    m1 = state["adam_m_fc1.weight"]
    assert m1.dtype == np.float64
    np.testing.assert_allclose(m1, expected, rtol=1e-3, atol=1e-6)


def test_nested_tensor_arguments_are_inputs_not_constants():
    # Tensors inside tuples, lists and dicts (an LSTM's (h, c)) are inputs of
    # the plan: two values that print alike give their own results, and one
    # compile serves both; a list where a tuple was is another signature.
    class M(nn.Module):
        def forward(self, x, hc):
            return x + hc[0] * hc[1]["s"]
    m = of.compile(M())
    a = np.zeros(2000, np.float32)
    b = a.copy()
    b[1000] = 5
    assert m(of.zeros(2000), (of.tensor(a), {"s": of.tensor(2.0)})).numpy()[1000] == 0
    assert m(of.zeros(2000), (of.tensor(b), {"s": of.tensor(3.0)})).numpy()[1000] == 15
    assert m.compiles == 1
    # NumPy arrays are tensors too
    assert m(np.zeros(2000, np.float32), [of.tensor(b), {"s": of.tensor(1.0)}]).numpy()[1000] == 5
    assert m.compiles == 2
