"""Three more pytorch/examples programs, run under of as scripts, against
PyTorch from the same weights.

The files are byte-identical copies of pytorch/examples (BSD 3-Clause,
programs/LICENSE.pytorch-examples) at commit
77f55b912142e11fcfdf5b530231fb9c52f181e8 (programs/README.md):

- dcgan/main.py: the DCGAN generator and discriminator (ConvTranspose2d,
  BatchNorm2d in training mode, LeakyReLU, Tanh, Sigmoid), BCELoss, two
  Adam optimizers, `netD(fake.detach())`, checkpoints with torch.save; run
  as a script with `--dataset fake` and small sizes, resuming from weights
  the test saves with torch.save (the script's --netG/--netD).
- time_sequence_prediction/train.py: two nn.LSTMCell layers unrolled over
  a float64 sine wave, trained by optim.LBFGS with a closure, then
  predicting 1000 steps ahead under no_grad; run as `__main__` with
  --steps, its traindata.pt written as the example's generate_sine_wave.py
  does (smaller), by each framework's save. PyTorch >= 2.6 refuses to
  load that NumPy array by default (weights_only=True); its run sets
  TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, PyTorch's switch for such files.
- reinforcement_learning/actor_critic.py: a policy and value network,
  torch.distributions.Categorical (sample, log_prob), F.smooth_l1_loss,
  returns normalised with std(), Adam; its main() on a CartPole.

Only the torch import lines change (test_public_programs_more's
`_of_imports`). What the programs get from outside is the test's: sys.argv,
stand-ins for the packages they import that are neither torch nor of
(torchvision's FakeData, ToTensor and save_image; gymnasium's CartPole;
matplotlib), and the random numbers, which come from one NumPy generator
for both frameworks (their generators differ): dcgan's torch.randn,
actor_critic's Categorical.sample (inverse CDF of a shared uniform draw).
time_sequence_prediction's Sequence() is initialised by each framework's
generator, so the test's LBFGS (the framework's, subclassed) starts from
PyTorch's initial weights in both. The losses of every step match within
rtol 1e-5 (measured: see each test).
"""

import contextlib
import io
import os
import re
import sys
import types
from unittest import mock

import numpy as np
import pytest

import of
from test_public_programs import PROGRAMS, Patched, assert_losses_close
from test_public_programs_more import _of_imports

torch = pytest.importorskip("torch")


def _stub_module(name, **attributes):
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


@contextlib.contextmanager
def _stand_ins(modules):
    """sys.modules holds `modules` (name -> module) while the program runs;
    only those names are put back afterwards."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def run_program(fw, file, argv, name="__main__", cwd=None, modules=None, patches=(),
                preset=None):
    """Executes programs/`file` as module `name` (as written for torch, with
    its torch import lines changed for of) with sys.argv = [file] + argv,
    in `cwd`, with the stand-in `modules` and `patches` (context managers)
    in force. Returns the module's namespace and what it printed."""
    path = os.path.join(PROGRAMS, file)
    with open(path) as f:
        source = f.read()
    if fw == "of":
        source = _of_imports(source, path)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__dict__.update(preset or {})
    printed = io.StringIO()
    cwd = cwd or os.getcwd()
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(sys, "argv", [path] + list(argv)))
        stack.enter_context(_stand_ins(modules or {}))
        stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(printed))
        for patch in patches:
            stack.enter_context(patch)
        exec(compile(source, path, "exec"), module.__dict__)
    return module, printed.getvalue()


def _framework(fw):
    return torch if fw == "torch" else of


def _numpy_state(state):
    return {k.removeprefix("_orig_mod."): np.asarray(v.detach().numpy()) for k, v in
            state.items()}


def assert_state_close(of_state, torch_state, rtol):
    """Every tensor within `rtol` of its largest element (integers exactly)."""
    of_state, torch_state = _numpy_state(of_state), _numpy_state(torch_state)
    assert list(of_state) == list(torch_state)
    for name, t in torch_state.items():
        o = of_state[name]
        assert o.shape == t.shape and o.dtype == t.dtype, name
        err = np.abs(o.astype(np.float64) - t).max() / max(np.abs(t).max(), 1e-30)
        assert err <= rtol, f"{name}: relative error {err}"


# -- pytorch/examples dcgan/main.py ----------------------------------------------

DCGAN_SIZES = dict(batch=4, nz=8, ngf=4, ndf=4, images=8)


class _InOrderFakeData:
    """torchvision.datasets.FakeData's stand-in: `images` (C x H x W in
    [0, 1], as ToTensor gives) with label 0, the k-th access returning item
    k whatever the index (the DataLoader shuffles with the framework's
    generator)."""

    def __init__(self, images, fw):
        self.images, self.fw, self.served = images, fw, 0

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[self.served % len(self.images)]
        self.served += 1
        return _framework(self.fw).tensor(image), 0


def _torchvision(fw, images, saved):
    """The torchvision modules dcgan imports: datasets.FakeData (checked to
    be the call the script makes), transforms.ToTensor, utils.save_image
    (records the file names)."""
    def fake_data(image_size, transform):
        assert tuple(image_size) == images.shape[1:], image_size
        assert isinstance(transform, to_tensor)
        return _InOrderFakeData(images, fw)

    class to_tensor:  # noqa: N801 (torchvision's ToTensor)
        pass

    def save_image(tensor, fp, normalize=False):
        assert tuple(tensor.shape)[1:] == images.shape[1:]
        saved.append(os.path.basename(fp))

    datasets = _stub_module("torchvision.datasets", FakeData=fake_data)
    transforms = _stub_module("torchvision.transforms", ToTensor=to_tensor)
    utils = _stub_module("torchvision.utils", save_image=save_image)
    package = _stub_module("torchvision", datasets=datasets, transforms=transforms,
                           utils=utils, __path__=[])
    return {"torchvision": package, "torchvision.datasets": datasets,
            "torchvision.transforms": transforms, "torchvision.utils": utils}


def _shared_randn(fw, draws):
    """torch.randn(*size, device=...) returning the next of `draws` (checked
    to have the shape asked for)."""
    mod = _framework(fw)
    it = iter(draws)

    def randn(*size, device=None, **kwargs):
        value = next(it)
        assert tuple(value.shape) == tuple(size), (value.shape, size)
        assert str(device) == "cpu"
        return mod.tensor(value, **kwargs)
    return randn


def run_dcgan(fw, compiled, folder, images, noise, netG=None, netD=None, niter=1):
    """main.py with --dataset fake at small sizes (64 x 64 images, as its
    architecture needs), from the checkpoints netG/netD (None: the script's
    own initialisation, with --niter 0: the weights to start from). Returns
    the namespace, BCELoss's losses, the printed lines and the saved images."""
    mod = _framework(fw)
    s = DCGAN_SIZES
    out = os.path.join(folder, f"{fw}-{compiled}")
    argv = ["--dataset", "fake", "--batchSize", str(s["batch"]), "--imageSize", "64",
            "--nz", str(s["nz"]), "--ngf", str(s["ngf"]), "--ndf", str(s["ndf"]),
            "--niter", str(niter), "--workers", "0", "--manualSeed", "1", "--outf", out]
    if netG:
        argv += ["--netG", netG, "--netD", netD]
    losses, saved = [], []
    bce_forward = mod.nn.BCELoss.forward

    def recorded(self, input, target):  # noqa: A002
        loss = bce_forward(self, input, target)
        losses.append(float(loss.item()))
        return loss
    patches = [mock.patch.object(mod.nn.BCELoss, "forward", recorded),
               mock.patch.object(mod, "randn", _shared_randn(fw, noise))]
    if compiled:  # netG and netD are made by Generator(ngpu).to(device): compiled there
        to = of.nn.Module.to
        patches.append(mock.patch.object(of.nn.Module, "to",
                                         lambda self, *a, **k: of.compile(to(self, *a, **k))))
    ns, printed = run_program(fw, "dcgan/main.py", argv, modules=_torchvision(fw, images, saved),
                              patches=patches)
    return ns, losses, printed, saved


@pytest.fixture(scope="module")
def dcgan_setup(tmp_path_factory):
    """The images, the noise draws, and PyTorch's initial weights (the
    script's weights_init) saved by torch.save, with PyTorch's run."""
    folder = str(tmp_path_factory.mktemp("dcgan"))
    rng = np.random.default_rng(7)
    s = DCGAN_SIZES
    images = rng.random((s["images"], 3, 64, 64)).astype(np.float32)
    steps = s["images"] // s["batch"]
    # fixed_noise, then one draw per iteration
    noise = [rng.standard_normal((s["batch"], s["nz"], 1, 1)).astype(np.float32)
             for _ in range(1 + steps)]
    ns, _, _, _ = run_dcgan("torch", False, folder, images, noise, niter=0)
    netG, netD = os.path.join(folder, "netG0.pth"), os.path.join(folder, "netD0.pth")
    torch.save(ns.netG.state_dict(), netG)
    torch.save(ns.netD.state_dict(), netD)
    reference = run_dcgan("torch", False, folder, images, noise, netG, netD)
    return folder, images, noise, netG, netD, reference


def _compiled_checkpoint(path):
    """The state dict at `path` as a compiled module saves it (and loads
    it, in PyTorch as in of): its keys prefixed with "_orig_mod."."""
    compiled = path.replace(".pth", "-compiled.pth")
    torch.save({"_orig_mod." + k: v for k, v in torch.load(path).items()}, compiled)
    return compiled


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_dcgan(dcgan_setup, compiled):
    folder, images, noise, netG, netD, reference = dcgan_setup
    torch_ns, torch_losses, torch_printed, torch_saved = reference
    if compiled:  # a compiled module's checkpoint: its keys start with "_orig_mod."
        netG, netD = (_compiled_checkpoint(path) for path in (netG, netD))
    ns, losses, printed, saved = run_dcgan("of", compiled, folder, images, noise, netG, netD)
    # per iteration: errD_real, errD_fake, errG
    assert len(losses) == len(torch_losses) == 3 * 2
    assert_losses_close(losses, torch_losses)
    assert saved == torch_saved == ["real_samples.png", "fake_samples_epoch_000.png"]
    # the printed lines (4 decimals) and the checkpoints the script saved
    lines = [line for line in printed.splitlines() if line.startswith("[0/1]")]
    torch_lines = [line for line in torch_printed.splitlines() if line.startswith("[0/1]")]
    assert len(lines) == len(torch_lines) == 2
    for line, torch_line in zip(lines, torch_lines):
        values = [float(v) for v in re.findall(r"-?\d+\.\d{4}", line)]
        torch_values = [float(v) for v in re.findall(r"-?\d+\.\d{4}", torch_line)]
        np.testing.assert_allclose(values, torch_values, rtol=0, atol=1.01e-4)
    for net in ("netG", "netD"):
        path = os.path.join(folder, f"of-{compiled}", f"{net}_epoch_0.pth")
        torch_path = os.path.join(folder, "torch-False", f"{net}_epoch_0.pth")
        # Adam's first steps move each weight by about lr whatever its
        # gradient's size, so float32 noise in a near-zero gradient shows
        assert_state_close(of.load(path), torch.load(torch_path), rtol=1e-3)


# -- pytorch/examples time_sequence_prediction/train.py ---------------------------

def sine_waves(folder, fw, n=5, length=11, T=20):
    """generate_sine_wave.py's data at a smaller N and L, saved as it does
    (`torch.save` of a float64 NumPy array, the framework's save) in
    folder/fw/traindata.pt; returns that folder."""
    rng = np.random.RandomState(2)
    x = np.empty((n, length), "int64")
    x[:] = np.array(range(length)) + rng.randint(-4 * T, 4 * T, n).reshape(n, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    folder = os.path.join(folder, fw)
    os.makedirs(folder, exist_ok=True)
    _framework(fw).save(data, open(os.path.join(folder, "traindata.pt"), "wb"))
    return folder


def _matplotlib():
    """matplotlib and matplotlib.pyplot: every call does nothing."""
    def nothing(*args, **kwargs):
        return None

    def function(name):
        if name.startswith("__"):  # a module's own attributes (__file__): absent
            raise AttributeError(name)
        return nothing
    pyplot = _stub_module("matplotlib.pyplot", __getattr__=function)
    package = _stub_module("matplotlib", use=nothing, pyplot=pyplot, __path__=[])
    return {"matplotlib": package, "matplotlib.pyplot": pyplot}


def run_time_sequence(fw, folder, steps, initial=None):
    """train.py as __main__ with --steps; the LBFGS it makes starts from
    `initial` (a list of arrays, the parameters in order) or records the
    initial parameters. Returns the printed losses (each closure's
    `loss:`, each step's `test loss:`) and the initial and final
    parameters."""
    mod = _framework(fw)
    lbfgs = mod.optim.LBFGS
    made = []

    class SameStart(lbfgs):
        def __init__(self, params, *args, **kwargs):
            params = list(params)
            with mod.no_grad():
                for p, value in zip(params, initial or []):
                    p.copy_(mod.tensor(value))
            made.append([p.detach().numpy().copy() for p in params])
            super().__init__(params, *args, **kwargs)
            self.params = params

    patches = [mock.patch.object(mod.optim, "LBFGS", SameStart)]
    if fw == "torch":  # PyTorch >= 2.6 loads only tensors by default, not the NumPy array
        # that generate_sine_wave.py saves: its documented switch back
        patches.append(mock.patch.dict(os.environ, {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}))
    ns, printed = run_program(fw, "time_sequence_prediction/train.py", ["--steps", str(steps)],
                              cwd=sine_waves(folder, fw), modules=_matplotlib(),
                              patches=patches)
    train = [float(v) for v in re.findall(r"^loss: (\S+)$", printed, re.M)]
    test = [float(v) for v in re.findall(r"^test loss: (\S+)$", printed, re.M)]
    final = [p.detach().numpy() for p in ns.optimizer.params]
    return train, test, made[0], final


@pytest.mark.filterwarnings("ignore:Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
def test_time_sequence_prediction(tmp_path):
    """2 LBFGS steps (lr 0.8, up to 20 iterations each) in float64, each
    followed by the 1000-step prediction (eager, about a minute in of). Not
    compiled: the prediction would unroll 1000 steps into one program."""
    folder = str(tmp_path)
    torch.manual_seed(0)
    torch_train, torch_test, initial, torch_final = run_time_sequence("torch", folder, 2)
    train, test, _, final = run_time_sequence("of", folder, 2, initial)
    assert len(train) == len(torch_train) >= 2 * 10
    assert len(test) == len(torch_test) == 2
    assert_losses_close(train, torch_train)
    assert_losses_close(test, torch_test)
    for o, t in zip(final, torch_final):
        assert o.dtype == t.dtype == np.float64
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-8)


# -- pytorch/examples reinforcement_learning/actor_critic.py ----------------------

class CartPole:
    """gymnasium's CartPole-v1 dynamics (Euler steps of its equations,
    float32 observations, reward 1 per step), seeded from a NumPy generator.
    To keep the run short and alike in both frameworks, an episode ends
    only by truncation after `length` steps, and spec.reward_threshold is
    the running reward after three such episodes, less a little, so main()
    stops after the third."""

    gravity, masscart, masspole, length_, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02

    def __init__(self, length=20):
        self.length = length
        running = 10.0
        for _ in range(3):
            running = 0.05 * length + 0.95 * running
        self.spec = types.SimpleNamespace(reward_threshold=running - 0.01)
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        assert action in (0, 1)
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length_
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + polemass_length * theta_dot ** 2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length_ * (4.0 / 3.0 - self.masspole * costheta ** 2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        self.state = np.array([x + self.tau * x_dot, x_dot + self.tau * xacc,
                               theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc])
        self.steps += 1
        return self.state.astype(np.float32), 1.0, False, self.steps >= self.length, {}


def _gymnasium(envs):
    def make(name, render_mode=None):
        assert name == "CartPole-v1" and render_mode is None
        envs.append(CartPole())
        return envs[-1]
    return {"gymnasium": _stub_module("gymnasium", make=make)}


def run_actor_critic(fw, compiled, uniforms, initial=None):
    """The script's module code (argument defaults, env, Policy, Adam), then
    main(), with Categorical.sample drawing from `uniforms` and torch.stack
    recorded (the policy and value losses of each episode). Returns the
    stacked losses, the printed lines and the initial and final weights."""
    mod = _framework(fw)
    envs = []
    ns, _ = run_program(fw, "reinforcement_learning/actor_critic.py", [],
                        name="actor_critic", modules=_gymnasium(envs))
    model = ns.model
    if initial is not None:
        model.load_state_dict({k: mod.tensor(v) for k, v in initial.items()})
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    draws = iter(uniforms)

    class SharedDraws(ns.Categorical):
        def sample(self, sample_shape=()):
            assert tuple(sample_shape) == () and tuple(self.probs.shape) == (2,)
            cdf = np.cumsum(self.probs.detach().numpy().astype(np.float64))
            return mod.tensor(int(np.searchsorted(cdf, next(draws) * cdf[-1], side="right")))

    stacks = []

    def stack(tensors, *args, **kwargs):
        out = mod.stack(tensors, *args, **kwargs)
        stacks.append(out.detach().numpy().copy())
        return out

    ns.Categorical = SharedDraws
    ns.torch = Patched(ns.torch, stack=stack)
    if compiled:
        ns.model = of.compile(model)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ns.main()
    final = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return stacks, printed.getvalue(), start, final, envs


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_actor_critic(compiled):
    """3 episodes of 20 steps, an Adam step after each (lr 3e-2)."""
    uniforms = np.random.default_rng(3).random(1000)
    torch.manual_seed(0)
    torch_stacks, torch_printed, initial, torch_final, _ = run_actor_critic(
        "torch", False, uniforms)
    stacks, printed, _, final, envs = run_actor_critic("of", compiled, uniforms, initial)
    assert len(envs) == 1 and envs[0].steps == 20
    assert printed == torch_printed
    assert printed.startswith("Solved! Running reward is now 11.4262")
    assert len(stacks) == len(torch_stacks) == 2 * 3  # policy, value losses per episode
    for o, t in zip(stacks, torch_stacks):
        assert o.shape == t.shape == (20,)
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-6)
    for name, t in torch_final.items():
        err = np.abs(final[name] - t).max() / np.abs(t).max()
        assert err <= 1e-4, f"{name}: relative error {err}"
