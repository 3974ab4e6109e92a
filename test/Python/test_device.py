"""Devices in the Python frontend: "cuda" tensors, modules and placements
compile through --of-pipeline=cuda. The compile-side tests run everywhere
the CUDA toolkit's libdevice is (every cuda compile links it); the ones
that run plans on a GPU are skipped (reported unsupported) where
of.cuda.is_available() is false."""

import os
import subprocess
import sys

import numpy as np
import pytest

import of

TOOLS = os.environ.get("OF_TOOLS_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))


def _toolkit():
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            return os.environ[var]
    return "/usr/local/cuda"


needs_libdevice = pytest.mark.skipif(
    not os.path.exists(os.path.join(_toolkit(), "nvvm/libdevice/libdevice.10.bc")),
    reason="no CUDA toolkit libdevice here: cuda plans cannot be compiled")
needs_gpu = pytest.mark.skipif(
    not of.cuda.is_available(),
    reason=f"no CUDA device here ({of.cuda.unavailable_reason()}): the plan is not run")


def plan_text(path):
    """The plan (.ofp) as ofrt text, through of-translate."""
    return subprocess.run([os.path.join(TOOLS, "of-translate"), "--of-binary-to-plan", path],
                          check=True, capture_output=True, text=True).stdout


def test_device_names(monkeypatch):
    assert of.device("cuda") == "cuda" and of.device("cuda").type == "cuda"
    assert of.device("cpu").index is None
    for bad in ("gpu", "cuda:x", "cpu:0", "tpu:1", ""):
        with pytest.raises(ValueError, match="is not a device"):
            of.device(bad)
    monkeypatch.delenv("OF_CUDA_DEVICE", raising=False)
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert of.device("cuda:0") == "cuda" and of.device("cuda").index == 0
    # libofrt gives a process one GPU: cuda:N must name it
    with pytest.raises(ValueError, match="runs its GPU work on GPU 0.*OF_CUDA_DEVICE=1"):
        of.device("cuda:1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert of.device("cuda:1").index == 1
    monkeypatch.setenv("OF_CUDA_DEVICE", "3")
    assert of.cuda.current_device() == 3
    with pytest.raises(ValueError, match="GPU 3"):
        of.device("cuda:1")
    assert of.device(3) == "cuda"  # an index is a GPU's, as in PyTorch
    of.cuda.set_device(3)  # the process's GPU: accepted
    with pytest.raises(ValueError, match="GPU 3"):
        of.cuda.set_device("cuda:0")
    of.cuda.synchronize()  # runs return when their GPU work is done
    of.cuda.manual_seed_all(4)
    first = of.randn(3).numpy()
    of.manual_seed(4)
    np.testing.assert_array_equal(of.randn(3).numpy(), first)
    monkeypatch.setenv("OF_CUDA_DEVICE", "x")
    with pytest.raises(ValueError, match="OF_CUDA_DEVICE='x' is not a device ordinal"):
        of.cuda.current_device()


def test_tensors_move_between_devices():
    x = of.randn(3, 4, device="cuda")
    assert x.device == "cuda" and x.is_cuda
    y = x.cpu()
    assert y.device == "cpu" and not y.is_cuda
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert x.to("cuda") is x and y.to(x).device == "cuda"
    z = y.to("cuda", of.float64)  # cast on the CPU, then moved
    assert z.device == "cuda" and z.dtype is of.float64
    w = y.to(device="cuda", dtype=of.float16)
    assert w.device == "cuda" and w.dtype is of.float16
    p = of.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert p.device == "cuda" and p.cpu().requires_grad
    for made in (of.zeros(2, device="cuda"), of.ones(2, device="cuda"),
                 of.full((2,), 1.5, device="cuda"), of.rand(2, device="cuda"),
                 of.arange(4, device="cuda"), of.zeros_like(x), of.ones_like(x),
                 of.tril(of.ones(2, 2, device="cuda")), x.clone()):
        assert made.device == "cuda", made
    assert of.zeros_like(x, device="cpu").device == "cpu"
    assert x.cuda(0).device == "cuda" and y.to(0).device == "cuda"
    with pytest.raises(TypeError, match="neither a dtype, a device nor a tensor"):
        x.to(3.5)
    # a move copies (values are host arrays, but tensors do not alias)
    moved = x.cpu()
    moved.numpy()[0, 0] = 42.0
    assert x.numpy()[0, 0] != 42.0
    # a cuda tensor cast on its way to the CPU needs no GPU: cast there
    assert x.to("cpu", of.float64).dtype is of.float64
    assert "device='cuda'" in repr(x) and "device" not in repr(y)
    # Python numbers made tensors are 0-d, and go with any device
    assert of.tensor(2.0).shape == () and of.tensor(2.0)._device_neutral()
    assert of.tensor([1.0], of.float64, True).requires_grad  # positional, as before


def test_one_op_mixing_devices_is_an_error():
    x, y = of.randn(4, device="cuda"), of.randn(4)
    with pytest.raises(ValueError, match=r"on 'cpu' but other tensors of this op are on "
                                         r"'cuda'.*\.to\('cuda'\)"):
        x + y


def test_a_global_tensor_is_on_its_placement():
    g = of.placement("cuda", ranks=[0])
    assert "device = \"cuda\"" in g.mlir()
    with pytest.raises(ValueError, match="not supported by this build"):
        of.placement("tpu", ranks=[0])
    # a cpu global tensor moved with .to() is refused: placements move it
    t = of.ones(4).to_global(of.placement("cpu", ranks=[0]), of.sbp.broadcast)
    assert t.device == "cpu"
    with pytest.raises(ValueError, match=r"to_global\(of.placement\('cuda'"):
        t.to("cuda")


def test_module_to_moves_and_casts_in_place():
    model = of.nn.Sequential(of.nn.Linear(4, 3), of.nn.LayerNorm(3))
    params = list(model.parameters())
    opt = of.optim.SGD(model.parameters(), lr=0.1)
    assert model.to("cuda") is model
    assert all(p.device == "cuda" for p in model.parameters())
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(id(a) == id(b) for a, b in zip(opt.param_groups[0]["params"], params))
    before = model[0].weight.numpy().copy()
    model.to(of.float64)
    assert all(p.dtype is of.float64 and p.device == "cuda" for p in model.parameters())
    np.testing.assert_array_equal(model[0].weight.numpy(), before.astype(np.float64))
    model.cpu()
    assert all(p.device == "cpu" for p in model.parameters())
    assert of.nn.Linear(2, 2, device="cuda").weight.device == "cuda"
    with pytest.raises(TypeError, match="not a floating-point dtype"):
        model.to(of.int32)
    for made in (of.nn.Conv2d(2, 4, 3, device="cuda"), of.nn.LayerNorm(4, device="cuda"),
                 of.nn.RMSNorm(4, device="cuda"), of.nn.Embedding(5, 4, device="cuda"),
                 of.nn.BatchNorm2d(4, device="cuda")):
        assert all(t.device == "cuda" for t in [*made.parameters(), *made.buffers()]), made
    bn = of.nn.BatchNorm2d(3).double()
    assert bn.running_mean.dtype is of.float64 and bn.weight.dtype is of.float64
    assert bn.half().weight.dtype is of.float16 and bn.float().weight.dtype is of.float32
    assert bn.bfloat16().weight.dtype is of.bfloat16 and bn.cuda(0).weight.device == "cuda"
    # as PyTorch: a parameter's name takes a Parameter, a buffer's a tensor
    lin = of.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign Tensor as parameter 'weight'"):
        lin.weight = lin.weight.cuda()
    assert "weight" in lin.state_dict()
    bn.running_mean = of.zeros(3)
    assert "running_mean" in bn.state_dict() and bn.running_mean.shape == (3,)


@needs_libdevice
def test_save_plan_compiles_for_cuda_without_running(tmp_path, rng):
    """The AOT path: a training step of "cuda" tensors compiled to a plan
    on a machine without a GPU, with no session made."""
    model = of.nn.Sequential(of.nn.Linear(8, 16), of.nn.GELU(), of.nn.Linear(16, 4))
    model.to("cuda")
    step = of.compile(model, loss_fn=of.nn.CrossEntropyLoss(),
                      optimizer=of.optim.AdamW(model.parameters(), lr=1e-3))
    x = of.tensor(rng.standard_normal((6, 8)).astype(np.float32), device="cuda")
    y = of.tensor(rng.integers(0, 4, 6), device="cuda")
    path = str(tmp_path / "step.ofp")
    step.save_plan(path, x, y)
    assert step._last is None  # nothing ran
    text = plan_text(path)
    assert "@cuda_kernels" in text and 'format = "cubin"' in text
    assert "@cpu_kernels" not in text
    listing = subprocess.run([os.path.join(TOOLS, "of-run"), path, "--list"], check=True,
                             capture_output=True, text=True).stdout
    assert "entry sequential_train_step" in listing
    for name in ("x", "target", "0.weight", "2.bias", "lr"):
        assert f"input  {name}:" in listing, listing
    # the same model on the CPU compiles for the CPU
    model.cpu()
    step.save_plan(path, x.cpu(), y.cpu())
    text = plan_text(path)
    assert "@cpu_kernels" in text and "@cuda_kernels" not in text


@needs_libdevice
def test_traced_function_on_one_device(tmp_path):
    model = of.nn.Linear(4, 2).to("cuda")
    forward = of.compile(model)
    with pytest.raises(ValueError, match=r"'weight' is on 'cuda' but other tensors of this "
                                         r"traced function are on 'cpu'"):
        forward.save_plan(str(tmp_path / "f.ofp"), of.randn(3, 4))
    # global "cuda" tensors: the placement says the device
    g = of.placement("cuda", ranks=[0])

    def f(a, b):
        return (a @ b).relu().sum()
    fn = of.compile(f)
    # made directly, as moving values onto GPUs (to_global) would run there
    proxy_a = of.Tensor(np.zeros((4, 8), np.float32), placement=g, sbp=(of.sbp.broadcast,))
    proxy_b = of.Tensor(np.zeros((8, 2), np.float32), placement=g, sbp=(of.sbp.split(1),))
    fn.save_plan(str(tmp_path / "g.ofp"), proxy_a, proxy_b)
    assert "@cuda_kernels" in plan_text(str(tmp_path / "g.ofp"))

    # .to() of a traced value to another device than its program's
    def moves(a):
        return a.to("cpu") * 2
    with pytest.raises(ValueError, match=r"\.to\('cpu'\) of a traced value is on 'cpu'"):
        of.compile(moves).save_plan(str(tmp_path / "m.ofp"), of.randn(2, device="cuda"))

    # tensors the function makes or closes over count too (0-d ones do not)
    def adds(a):
        return a + of.ones(4, device="cuda") * of.tensor(2.0)
    with pytest.raises(ValueError, match=r"shape \[4\] that the traced function makes or "
                                         r"closes over is on 'cuda'"):
        of.compile(adds).save_plan(str(tmp_path / "a.ofp"), of.randn(4))
    of.compile(adds).save_plan(str(tmp_path / "a.ofp"), of.randn(4, device="cuda"))
    assert "@cuda_kernels" in plan_text(str(tmp_path / "a.ofp"))
    closure = of.compile(lambda a: model(a))  # the model's parameters are constants
    with pytest.raises(ValueError, match="closes over is on 'cuda'"):
        closure.save_plan(str(tmp_path / "c.ofp"), of.randn(3, 4))


@needs_libdevice
def test_the_chip_is_the_gpus_or_of_cuda_chip(tmp_path, monkeypatch):
    monkeypatch.setenv("OF_CUDA_CHIP", "sm_80")
    assert of.cuda.chip() == "sm_80"
    forward = of.compile(of.nn.Linear(4, 2).cuda())
    forward.save_plan(str(tmp_path / "p.ofp"), of.randn(3, 4, device="cuda"))
    assert 'chip = "sm_80"' in plan_text(str(tmp_path / "p.ofp"))
    monkeypatch.setenv("OF_CUDA_CHIP", "ampere")
    with pytest.raises(ValueError, match="OF_CUDA_CHIP='ampere' is not a GPU architecture"):
        of.cuda.chip()
    monkeypatch.delenv("OF_CUDA_CHIP")
    if of.cuda.is_available():
        major, minor = of.cuda.get_device_capability()
        assert of.cuda.chip() == ("sm_90a" if (major, minor) == (9, 0)
                                  else f"sm_{major}{minor}")
    else:
        assert of.cuda.chip() == "sm_90a"


@pytest.mark.parametrize("driver", ["missing", "stub"])
def test_of_cuda_asks_the_driver_as_libofrt_does(tmp_path, driver):
    """of.cuda loads the driver through libofrt (once per process, hence a
    child process per driver): a missing one and the toolkit's link stub
    are no GPU, with the reason."""
    path = {"missing": str(tmp_path / "no-libcuda.so"),
            "stub": os.path.join(_toolkit(), "lib64/stubs/libcuda.so")}[driver]
    if not os.path.exists(path) and driver == "stub":
        pytest.skip("no CUDA toolkit link stub here")
    probe = ("import of; print(of.cuda.device_count(), of.cuda.is_available()); "
             "print(of.cuda.unavailable_reason())")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, env=dict(os.environ, OF_CUDA_DRIVER=path)).stdout
    first, reason = out.split("\n", 1)
    assert first == "0 False"
    expected = {"missing": "cannot load the CUDA driver", "stub": "link stub, not a driver"}
    assert expected[driver] in reason, reason


def test_running_cuda_tensors_without_a_gpu_says_why():
    if of.cuda.is_available():
        pytest.skip("a GPU is here: test_eager_ops_on_the_gpu runs instead")
    if not os.path.exists(os.path.join(_toolkit(), "nvvm/libdevice/libdevice.10.bc")):
        pytest.skip("no CUDA toolkit libdevice here: cuda plans cannot be compiled")
    with pytest.raises(RuntimeError, match=r"runs on cuda: "):
        of.randn(4, device="cuda").exp()


@needs_gpu
def test_eager_ops_on_the_gpu(rng):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    x, w = of.tensor(a, device="cuda"), of.tensor(b, device="cuda")
    y = (x @ w).tanh() + 1.0
    assert y.device == "cuda"
    np.testing.assert_allclose(y.numpy(), np.tanh(a @ b) + 1.0, rtol=1e-5, atol=1e-5)


@needs_gpu
def test_training_on_the_gpu_matches_the_cpu(rng):
    """The same model and batches trained on the CPU and on the GPU."""
    data = [(rng.standard_normal((16, 8)).astype(np.float32), rng.integers(0, 4, 16))
            for _ in range(5)]
    losses = {}
    for dev in ("cpu", "cuda"):
        of.manual_seed(0)
        model = of.nn.Sequential(of.nn.Linear(8, 32), of.nn.ReLU(), of.nn.Linear(32, 4))
        model.to(dev)
        step = of.compile(model, loss_fn=of.nn.CrossEntropyLoss(),
                          optimizer=of.optim.AdamW(model.parameters(), lr=1e-2))
        losses[dev] = []
        for x, y in data:
            loss = step(of.tensor(x, device=dev), of.tensor(y, device=dev))
            assert loss.device == dev
            losses[dev].append(loss.item())
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-4, atol=1e-5)


@needs_libdevice
@pytest.mark.parametrize("device,ranks", [("cpu", 1), ("cuda", 1), ("cpu", 2)])
def test_train_gpt_example_ahead_of_time(tmp_path, device, ranks):
    """examples/python/train_gpt.py --aot: the step compiled for `device`
    (and for 2 Megatron ranks, in this one process) without running, and
    the of-run command it prints trains it (on the CPU here; a cuda plan
    where a GPU is)."""
    example = os.path.join(os.path.dirname(__file__), "../../examples/python/train_gpt.py")
    job = tmp_path / "job"
    out = subprocess.run([sys.executable, example, "--device", device, "--aot", str(job),
                          "--steps", "3", "--ranks", str(ranks), "--layout", "megatron"],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    command = out.strip().splitlines()[-1].split("&& ", 1)[1].split()
    text = plan_text(str(job / "train_step.ofp"))
    assert f"@{device}_kernels" in text
    if device == "cuda" and not of.cuda.is_available():
        return  # compiled for a GPU; of-run would need one
    assert ("-n 2" in out) == (ranks == 2)
    run = subprocess.run([os.path.join(TOOLS, "of-run")] + command[1:], cwd=job,
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert run.returncode == 0, run.stderr
    losses = [float(line.split()[3]) for line in run.stdout.splitlines()
              if line.startswith("step ")]
    assert len(losses) == 3 and all(np.isfinite(losses)), run.stdout
    assert (job / "checkpoint.safetensors").exists()
