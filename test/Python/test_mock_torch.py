"""of.mock_torch: code written for PyTorch runs on of unchanged.

A PyTorch training script (TRAINING_SCRIPT: `import torch`, `torch.nn`,
`torch.nn.functional`, `torch.utils.data`, `torch.optim`) runs under
`python -m of.mock_torch` and prints the losses PyTorch prints for it.
In a process, `with of.mock_torch.enable():` makes `import torch` of and
puts PyTorch back on exit; a PyTorch name of lacks raises an error naming
it; of's own modules are untouched by the mock.
"""

import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import of
import of.mock_torch

HERE = os.path.dirname(os.path.abspath(__file__))

# A training script written for PyTorch, as third-party code is: plain
# `import torch`, nothing of of. `python script.py --steps 3 --seed 0`
# prints a loss per step. Weights and data come from NumPy (the seed), so
# that PyTorch and of start alike.
TRAINING_SCRIPT = '''\
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.act = nn.ReLU()

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
        return self.layers[-1](x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    sizes, batch, classes = [12, 32, 16, 5], 8, 5
    model = MLP(sizes[:-1] + [classes])
    with torch.no_grad():
        for layer in model.layers:
            fan_in = layer.weight.shape[1]
            layer.weight.copy_(torch.from_numpy(
                rng.uniform(-1, 1, tuple(layer.weight.shape)).astype(np.float32) / fan_in ** 0.5))
            layer.bias.copy_(torch.from_numpy(
                rng.uniform(-0.1, 0.1, tuple(layer.bias.shape)).astype(np.float32)))
    x = rng.standard_normal((batch * args.steps, sizes[0])).astype(np.float32)
    y = rng.integers(0, classes, batch * args.steps).astype(np.int64)
    loader = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                        batch_size=batch, shuffle=False)

    device = "cpu"
    assert isinstance(model, torch.nn.Module) and isinstance(x, np.ndarray)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    model.train()
    for step, (xb, yb) in enumerate(loader):
        xb, yb = xb.to(device), yb.to(device)
        assert isinstance(xb, torch.Tensor) and xb.dtype == torch.float32
        logits = model(xb)
        loss = F.cross_entropy(logits, yb) + 0.1 * F.mse_loss(torch.tanh(logits),
                                                               torch.zeros_like(logits))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        print(f"step {step} loss {loss.item():.9e}")


if __name__ == "__main__":
    main()
'''


def torch_entries():
    return {name: module for name, module in sys.modules.items()
            if name == "torch" or name.startswith("torch.")}


@pytest.fixture(autouse=True)
def mock_is_off_around_each_test():
    before = torch_entries()
    assert not of.mock_torch.is_enabled()
    yield
    assert not of.mock_torch.is_enabled(), "a test left the mock on"
    after = torch_entries()
    assert all(after.get(name) is module for name, module in before.items()), \
        "a test left PyTorch's modules out of sys.modules"
    assert not any(isinstance(m, of.mock_torch.TorchModule) for m in after.values()), \
        "a test left the mock's torch modules in sys.modules"


def run(args, env=None, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=600, env=env or dict(os.environ), cwd=cwd)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train_mlp.py"
    path.write_text(TRAINING_SCRIPT)
    return str(path)


def losses(out):
    found = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
    assert len(found) == 3, out
    return np.array(found)


# --------------------------------------------------------------------------
# A PyTorch script, unchanged


def test_a_pytorch_script_runs_on_of_under_python_m_of_mock_torch(script, rng, tmp_path):
    # a `torch` that fails to import, first on the path: the mock's finder
    # must answer every torch import before any other finder looks
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "raise ImportError('the real torch was imported under the mock')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    seed = int(rng.integers(2**31))
    mocked = run(["-m", "of.mock_torch", "--verbose", script, "--steps", "3", "--seed",
                  str(seed)], env=env)
    assert mocked.returncode == 0, mocked.stderr
    assert np.isfinite(losses(mocked.stdout)).all()
    for mapped in ("torch -> of", "torch.nn -> of.nn",
                   "torch.nn.functional -> of.nn.functional",
                   "torch.utils.data -> of.utils.data", "torch.optim.lr_scheduler"):
        assert f"[of.mock_torch] {mapped}" in mocked.stderr, mocked.stderr


def test_a_pytorch_script_prints_pytorchs_losses_under_the_mock(script, rng):
    pytest.importorskip("torch")
    seed = str(int(rng.integers(2**31)))
    real = run([script, "--steps", "3", "--seed", seed])
    assert real.returncode == 0, real.stderr
    mocked = run(["-m", "of.mock_torch", script, "--steps", "3", "--seed", seed])
    assert mocked.returncode == 0, mocked.stderr
    np.testing.assert_allclose(losses(mocked.stdout), losses(real.stdout), rtol=1e-5)


def test_the_command_runs_a_script_or_module_as_main_with_its_arguments(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    body = ("import sys, torch, helper\n"
            "print(__name__, sys.argv[1:], torch.__name__, type(torch).__name__,"
            " torch.nn.Linear is __import__('of').nn.Linear, helper.VALUE)\n")
    (tmp_path / "script.py").write_text(body)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(body)
    expected = "__main__ ['a', '--b'] torch TorchModule True 7"
    # the script's directory is first on sys.path (helper), wherever it is run from
    out = run(["-m", "of.mock_torch", str(tmp_path / "script.py"), "a", "--b"], cwd=HERE)
    assert out.returncode == 0 and out.stdout.strip() == expected, out.stderr
    out = run(["-m", "of.mock_torch", "-m", "pkg.mod", "a", "--b"], cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == expected, out.stderr
    # the script's exit status is the command's; a bad command line is 2
    (tmp_path / "exits.py").write_text("raise SystemExit(3)\n")
    assert run(["-m", "of.mock_torch", str(tmp_path / "exits.py")]).returncode == 3
    bad = run(["-m", "of.mock_torch", "--lazy", str(tmp_path / "script.py")])
    assert bad.returncode == 2 and "unknown option --lazy" in bad.stderr
    assert run(["-m", "of.mock_torch"]).returncode == 2


# --------------------------------------------------------------------------
# enable() and disable() in a process


def test_inside_enable_torch_is_of():
    with of.mock_torch.enable() as mock:
        assert isinstance(mock, of.mock_torch.enable) and of.mock_torch.is_enabled()
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.optim.lr_scheduler import StepLR
        from torch.utils.data import DataLoader
        assert torch.__name__ == "torch" and sys.modules["torch"] is torch
        assert nn is torch.nn and nn.__name__ == "torch.nn"
        assert nn.Linear is of.nn.Linear and nn.Module is of.nn.Module
        assert torch.Tensor is of.Tensor and torch.nn.Parameter is of.nn.Parameter
        assert F.cross_entropy is of.nn.functional.cross_entropy
        assert StepLR is of.optim.lr_scheduler.StepLR
        assert DataLoader is of.utils.data.DataLoader
        assert torch.float32 is of.float32 and torch.int64 is of.int64
        assert torch.device is of.device and torch.no_grad is of.no_grad
        assert torch.cuda.is_available is of.cuda.is_available
        assert torch.autograd.backward is of.autograd.backward
        assert torch.nn.init.zeros_ is of.nn.init.zeros_
        assert torch.nn.utils.clip_grad_norm_ is of.nn.utils.clip_grad_norm_
        # torch imports its submodules with itself; of imports this one on demand
        assert torch.distributed.__name__ == "torch.distributed"
        assert sys.modules["torch.distributed"] is torch.distributed
        layer = nn.Linear(3, 2)
        assert isinstance(layer, torch.nn.Module) and isinstance(layer.weight, torch.Tensor)
        assert isinstance(torch.zeros(2), torch.Tensor)
        x = torch.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        np.testing.assert_allclose(F.relu(x - 2).numpy(), np.maximum(x.numpy() - 2, 0))
        # a version that parses, with PyTorch 2's API level and of's version
        assert re.fullmatch(r"2\.\d+\.\d+\+of\." + re.escape(of.__version__), torch.__version__)
        assert torch.nn.__name__ == "torch.nn" and "Linear" in dir(torch.nn)
        names = {}
        exec("from torch.nn import *", names)  # noqa: S102 - import * needs a namespace
        assert names["Linear"] is of.nn.Linear
    assert not of.mock_torch.is_enabled()
    assert not isinstance(sys.modules.get("torch"), of.mock_torch.TorchModule)


def test_after_enable_pytorch_is_back():
    real = pytest.importorskip("torch")
    import torch.nn.functional  # noqa: F401 - real submodules imported before, to be restored
    before = torch_entries()
    with of.mock_torch.enable():
        import torch
        assert torch is not real and torch.nn.Linear is of.nn.Linear
        assert not any(name in sys.modules and sys.modules[name] is module
                       for name, module in before.items())
    import torch
    assert torch is real and torch_entries() == before
    assert torch.nn.Linear is not of.nn.Linear and torch.nn.Linear.__module__.startswith("torch.")


def test_enable_and_disable_as_calls_and_nested():
    real_entries = torch_entries()
    of.mock_torch.enable()
    try:
        import torch
        mocked = torch
        assert isinstance(mocked, of.mock_torch.TorchModule)
        with of.mock_torch.disable():
            assert not of.mock_torch.is_enabled() and torch_entries() == real_entries
            with of.mock_torch.enable():
                import torch
                assert torch is mocked  # the same torch module each time
            assert not of.mock_torch.is_enabled()
        assert of.mock_torch.is_enabled() and sys.modules["torch"] is mocked
        with of.mock_torch.enable():  # already on: stays on after
            pass
        assert of.mock_torch.is_enabled()
    finally:
        of.mock_torch.disable()
    assert not of.mock_torch.is_enabled() and torch_entries() == real_entries
    of.mock_torch.disable()  # already off
    assert torch_entries() == real_entries


def test_lazy_mode_is_refused():
    with pytest.raises(NotImplementedError, match=r"enable\(lazy=True\)"):
        of.mock_torch.enable(lazy=True)
    assert not of.mock_torch.is_enabled()


# --------------------------------------------------------------------------
# What of lacks, named


def test_a_missing_name_raises_naming_the_pytorch_api():
    with of.mock_torch.enable():
        import torch
        with pytest.raises(AttributeError,
                           match=r"^torch\.nn\.LazyLinear is not provided by of \(of\.mock_torch\)$"):
            torch.nn.LazyLinear
        with pytest.raises(AttributeError, match=r"^torch\.fft is not provided by of"):
            torch.fft
        with pytest.raises(AttributeError, match=r"^torch\._C is not provided by of"):
            torch._C  # of's private modules are not PyTorch's
        with pytest.raises(AttributeError, match=r"^torch\.nn\.functional\._ops is not"):
            torch.nn.functional._ops
        assert not hasattr(torch, "fft") and hasattr(torch.nn, "Linear")
        assert getattr(torch.nn, "LazyLinear", None) is None
        with pytest.raises(ImportError, match=r"cannot import name 'LazyLinear' from 'torch\.nn'"):
            from torch.nn import LazyLinear  # noqa: F401
        # of's own NotImplementedError for a PyTorch name comes through as it is
        with pytest.raises(NotImplementedError, match="DataPipes"):
            torch.utils.data.IterDataPipe
        # PyTorch's private names that of provides are there
        assert torch.optim.lr_scheduler._LRScheduler is of.optim.lr_scheduler._LRScheduler


def test_a_missing_module_raises_naming_the_torch_module():
    with of.mock_torch.enable():
        for imported, name, why in [
                ("torch.fft", "torch.fft", "of has no module of.fft"),
                ("torch.nn.modules.linear", "torch.nn.modules.linear",
                 "of has no module of.nn.modules.linear"),
                ("torch._C", "torch._C", "torch._C is one of PyTorch's internal modules"),
                ("torch._dynamo.config", "torch._dynamo",
                 "torch._dynamo is one of PyTorch's internal modules"),
                ("torch.distributed.launch", "torch.distributed.launch",
                 "python -m of.distributed.launch"),
                ("torch.mock_torch", "torch.mock_torch", "of's own module")]:
            with pytest.raises(ModuleNotFoundError) as e:
                __import__(imported)
            assert e.value.name == name
            assert str(e.value).startswith(
                f"No module named {name!r}: {name} is not provided by of (of.mock_torch)")
            assert why in str(e.value)
            assert name not in sys.modules


# --------------------------------------------------------------------------
# of's modules stay of's


def test_of_modules_are_untouched_by_the_mock():
    with of.mock_torch.enable():
        import torch
        assert type(of.nn) is types.ModuleType and of.nn is not torch.nn
        with pytest.raises(AttributeError, match=r"module 'of\.nn' has no attribute 'LazyLinear'"):
            of.nn.LazyLinear
        assert sys.modules["of.nn"] is of.nn
        # assigning through a torch name assigns of's attribute, as patching
        # torch.nn.functional patches what torch's own code calls
        probe = object()
        torch.nn.functional.mock_torch_probe = probe
        assert of.nn.functional.mock_torch_probe is probe
        assert torch.nn.functional.mock_torch_probe is probe
        del torch.nn.functional.mock_torch_probe
        assert not hasattr(of.nn.functional, "mock_torch_probe")
    assert type(of.nn) is types.ModuleType
