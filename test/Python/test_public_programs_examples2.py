"""More pytorch/examples programs, run under of as scripts, against PyTorch
from the same weights and the same random draws.

The files are byte-identical copies of pytorch/examples (BSD 3-Clause,
programs/LICENSE.pytorch-examples) at commit
77f55b912142e11fcfdf5b530231fb9c52f181e8 (programs/README.md):

- regression/main.py: a Linear fitting a degree-4 polynomial with
  F.smooth_l1_loss and `param.data.add_(-0.1 * param.grad)` until the loss
  is below 1e-3 (hundreds of eager steps).
- mnist_rnn/main.py: nn.LSTM(batch_first), BatchNorm1d, Dropout2d on a 2-D
  input (PyTorch warns and masks element by element), F.nll_loss,
  Adadelta, StepLR, torch.accelerator.
- mnist_forward_forward/main.py: Hinton's forward-forward training: a
  Layer subclassing nn.Linear with its own Adam and its own `train()`,
  x[range(n), y] = v, torch.randint(high, size=...), norm, log1p, exp.
- gcn/main.py and gat/main.py: graph networks on a Cora-shaped graph:
  torch.FloatTensor/LongTensor/Tensor(n, m), torch.sparse_coo_tensor,
  to_sparse, torch.spmm, eye + sparse (float + int64), x[mask] = 0, Adam
  with L2 weight decay, multi-head attention written with matmul and
  where.
- reinforcement_learning/reinforce.py: REINFORCE with
  distributions.Categorical and a return normalisation.
- super_resolution/model.py and main.py: a sub-pixel convolution network
  (PixelShuffle, init.orthogonal_), Adam, MSELoss, a DataLoader with 4
  workers, and `torch.save(model, ...)` of the whole module each epoch,
  loaded back with weights_only=False.
- fast_neural_style/neural_style: `train` (TransformerNet with
  ReflectionPad2d, InstanceNorm2d(affine=True), residual blocks and
  nearest upsampling; VGG16 features for the content and Gram-matrix style
  losses; Adam; in-place `div_` of the batch; `import torch.onnx`), then
  `eval` of the weights it saved.
- imagenet/main.py --dummy -a resnet18: SGD with momentum and weight decay,
  StepLR, top-k accuracy, checkpoints with shutil; `import
  torch.multiprocessing`, torch.backends.mps and torch.accelerator.
- siamese_network/main.py: a ResNet-18 trunk (torchvision's definition,
  programs/resnet) on pairs of MNIST-shaped images the dataset draws with
  Python's `random`, BCELoss, Adadelta, StepLR, `torch.where(c, 1, 0)`.

Only the torch import lines change. What the programs get from outside is
the test's: sys.argv, stand-ins for torchvision (MNIST, transforms), the
super-resolution data module, PIL.Image, torchvision's VGG16 (its layers,
with shared random weights),
requests/tarfile (the Cora download: a synthetic graph written where the
script reads it), gymnasium's CartPole; and the random numbers, which come
from one NumPy generator for both frameworks (their generators differ):
torch.randn/randint/randperm and Categorical.sample; the models start from
PyTorch's initial weights (recorded at `Model(...).to(device)` in PyTorch's
run, loaded there in of's). Dropout probabilities are 0 (their masks come
from each framework's generator).
"""

import contextlib
import io
import math
import os
import re
import sys
import tarfile
import types
from unittest import mock

import numpy as np
import pytest

import of
from test_public_programs import load
from test_public_programs_examples import (_framework, _gymnasium, _stand_ins, _stub_module,
                                          run_program)

torch = pytest.importorskip("torch")

# PyTorch's, about its sparse tensors' invariant checks (gcn/gat, the unit tests)
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled")


def _numbers(text, pattern):
    return [float(v) for v in re.findall(pattern, text, re.M)]


def _shared(fw, name, draws):
    """mod.<name> replaced by a function returning the next of `draws` (a
    NumPy array) as the framework's tensor of the shape asked for."""
    mod = _framework(fw)
    it = iter(draws)

    def draw(*args, size=None, **kwargs):
        value = next(it)
        return mod.tensor(value)
    return mock.patch.object(mod, name, draw)


def _same_start(fw, store):
    """Module.to patched so that each model a program makes with
    `Model(...).to(device)` starts from the same weights in both
    frameworks: PyTorch's run (first) records each one's initial state in
    `store` (by class and order), of's loads it. Later `.to` calls of the
    same model (of's `.cpu()` is one) change nothing."""
    mod = _framework(fw)
    to = mod.nn.Module.to
    started, made = [], {}

    def recorded_to(self, *args, **kwargs):
        if not any(m is self for m in started):
            started.append(self)
            name = type(self).__name__
            made[name] = made.get(name, 0) + 1
            key = (name, made[name])
            if fw == "torch":
                store[key] = {k: v.detach().numpy().copy()
                              for k, v in self.state_dict().items()}
            else:
                self.load_state_dict({k: of.tensor(v) for k, v in store[key].items()})
        return to(self, *args, **kwargs)
    return mock.patch.object(mod.nn.Module, "to", recorded_to)


def _fixed_linear(fw, seed):
    """mod.nn.Linear whose weights are drawn from a NumPy generator seeded
    with `seed` (the same in both frameworks)."""
    mod = _framework(fw)
    linear = mod.nn.Linear

    class FixedLinear(linear):
        def __init__(self, in_features, out_features, *args, **kwargs):
            super().__init__(in_features, out_features, *args, **kwargs)
            rng = np.random.default_rng(seed)
            bound = 1 / math.sqrt(in_features)
            with mod.no_grad():
                for p in self.parameters():
                    p.copy_(mod.tensor(rng.uniform(-bound, bound, tuple(p.shape))
                                       .astype(np.float32)))
    return mock.patch.object(mod.nn, "Linear", FixedLinear)


# -- torchvision's MNIST, as the programs use it ------------------------------------

class _Compose:
    """torchvision.transforms.Compose."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class _Lambda:
    """torchvision.transforms.Lambda."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class _InOrder:
    """A dataset stand-in whose k-th access returns item k whatever the
    index, so both frameworks' shuffled loaders see the same batches:
    `item(k)` makes item k."""

    def __init__(self, count, item):
        self.count, self.item, self.served = count, item, 0

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        k = self.served % self.count
        self.served += 1
        return self.item(k)


def _torchvision(fw, images, labels):
    """torchvision.datasets.MNIST (the k-th access returns item k whatever
    the index, so both frameworks' shuffled loaders see the same batches),
    transforms.Compose/ToTensor/Normalize/Lambda."""
    mod = _framework(fw)

    class ToTensor:
        def __call__(self, image):
            return mod.tensor(image[None].astype(np.float32) / 255)

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean[0], std[0]

        def __call__(self, x):
            return (x - self.mean) / self.std

    def MNIST(root, train=True, download=False, transform=None):  # noqa: N802
        return _InOrder(len(images), lambda k: (transform(images[k]), int(labels[k])))

    transforms = _stub_module("torchvision.transforms", Compose=_Compose, ToTensor=ToTensor,
                              Normalize=Normalize, Lambda=_Lambda)
    datasets = _stub_module("torchvision.datasets", MNIST=MNIST)
    package = _stub_module("torchvision", datasets=datasets, transforms=transforms, __path__=[])
    return {"torchvision": package, "torchvision.datasets": datasets,
            "torchvision.transforms": transforms}


def _mnist(seed, n):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28)).astype(np.uint8), rng.integers(0, 10, n)


# -- regression/main.py -------------------------------------------------------------

def run_regression(fw, draws):
    """The script, its smooth L1 losses recorded; returns them and what it
    printed."""
    mod = _framework(fw)
    smooth_l1 = mod.nn.functional.smooth_l1_loss
    losses = []

    def recorded(*args, **kwargs):
        loss = smooth_l1(*args, **kwargs)
        losses.append(float(loss.item()))
        return loss
    patches = [_shared(fw, "randn", draws), _fixed_linear(fw, 11),
               mock.patch.object(mod.nn.functional, "smooth_l1_loss", recorded)]
    return losses, run_program(fw, "regression/main.py", [], patches=patches)[1]


def test_regression():
    """The script's loop until its smooth L1 loss is below 1e-3 (hundreds of
    eager steps). The run is chaotic past ~250 steps (x^4 features, lr 0.1:
    in PyTorch alone, a relative change of 1e-7 in the weights at each step
    changes the loss at step 600 30-fold, and float32 against float64 2-fold),
    so the losses are compared until step 200, then both runs must stop with
    the polynomial learned (the printed coefficients within 0.05 of
    PyTorch's) and print the same target."""
    rng = np.random.default_rng(5)
    draws = [rng.standard_normal((4, 1)).astype(np.float32),
             rng.standard_normal(1).astype(np.float32)]
    draws += [rng.standard_normal(32).astype(np.float32) for _ in range(5000)]
    torch_losses, torch_printed = run_regression("torch", draws)
    losses, printed = run_regression("of", draws)
    assert len(torch_losses) > 250 and len(losses) < 5000 and losses[-1] < 1e-3
    np.testing.assert_allclose(losses[:200], torch_losses[:200], rtol=1e-4)
    assert _numbers(printed, r"after (\d+) batches") == [len(losses)]
    learned = r"^==> Learned function:\s+(.*)$"
    coefficient = r"([-+]\d+\.\d+)"
    np.testing.assert_allclose(
        _numbers(re.search(learned, printed, re.M).group(1), coefficient),
        _numbers(re.search(learned, torch_printed, re.M).group(1), coefficient), atol=0.05)
    assert printed.splitlines()[-1] == torch_printed.splitlines()[-1]  # the actual function


# -- mnist_rnn/main.py --------------------------------------------------------------

def run_mnist_rnn(fw, images, labels, store):
    ns, _ = run_program(fw, "mnist_rnn/main.py", [], name="mnist_rnn",
                        modules=_torchvision(fw, images, labels))
    dropout = _framework(fw).nn.Dropout2d
    init = dropout.__init__
    no_dropout = mock.patch.object(dropout, "__init__",
                                   lambda self, p=0.5, inplace=False: init(self, 0.0, inplace))
    argv = ["--batch-size", "4", "--test-batch-size", "8", "--epochs", "2",
            "--log-interval", "1"]
    printed = io.StringIO()
    with mock.patch("sys.argv", ["main.py"] + argv), contextlib.redirect_stdout(printed), \
            _patched([_same_start(fw, store), no_dropout]):
        ns.main()
    return printed.getvalue()


def _patched(patches):
    """One context manager for several."""
    stack = contextlib.ExitStack()
    for p in patches:
        stack.enter_context(p)
    return stack


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 2-D input")
def test_mnist_rnn():
    """2 epochs of 2 batches of 4 (Adadelta lr 0.1, StepLR 0.7), each
    followed by the test pass: the printed losses and accuracy."""
    images, labels = _mnist(1, 8)
    store = {}
    torch_printed = run_mnist_rnn("torch", images, labels, store)
    printed = run_mnist_rnn("of", images, labels, store)
    pattern = r"Loss: (\S+)$"
    losses = _numbers(printed, pattern)
    assert len(losses) == 4
    np.testing.assert_allclose(losses, _numbers(torch_printed, pattern), rtol=0, atol=2e-6)
    pattern = r"Average loss: (\S+),"
    np.testing.assert_allclose(_numbers(printed, pattern), _numbers(torch_printed, pattern),
                               rtol=0, atol=1e-4)
    pattern = r"Accuracy: (\d+)/"
    assert _numbers(printed, pattern) == _numbers(torch_printed, pattern)


# -- mnist_forward_forward/main.py ----------------------------------------------------

def run_forward_forward(fw, images, labels, picks, store):
    argv = ["--epochs", "4", "--train_size", "8", "--test_size", "8", "--log-interval", "1",
            "--no_accel"]
    patches = [_same_start(fw, store), _shared(fw, "randint", picks)]
    return run_program(fw, "mnist_forward_forward/main.py", argv,
                       modules=_torchvision(fw, images, labels), patches=patches)[1]


def test_forward_forward():
    """Two layers of 500 trained 4 epochs each with their own Adam on the
    positive and negative data: every printed loss and the errors."""
    images, labels = _mnist(2, 8)
    picks = [np.array([k % 9]) for k in range(8)]
    store = {}
    torch_printed = run_forward_forward("torch", images, labels, picks, store)
    printed = run_forward_forward("of", images, labels, picks, store)
    losses, torch_losses = _numbers(printed, r"^Loss:  (\S+)"), _numbers(torch_printed,
                                                                         r"^Loss:  (\S+)")
    assert len(losses) == 8
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-5)
    for what in ("train error", "test error"):
        pattern = rf"^{what}: (\S+)"
        assert _numbers(printed, pattern) == _numbers(torch_printed, pattern)


# -- gcn/main.py and gat/main.py ------------------------------------------------------

def write_cora(folder, nodes, features, classes, seed=1):
    """cora.content (id, 0/1 features, class name) and cora.cites (id pairs)
    of a random graph, in folder/cora as the scripts read them."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(10 * nodes)[:nodes] + 1
    os.makedirs(os.path.join(folder, "cora"), exist_ok=True)
    with open(os.path.join(folder, "cora", "cora.content"), "w") as f:
        for i in range(nodes):
            bits = (rng.random(features) < 0.2).astype(int)
            f.write("\t".join([str(ids[i])] + [str(b) for b in bits] +
                              [f"class_{rng.integers(classes)}"]) + "\n")
    with open(os.path.join(folder, "cora", "cora.cites"), "w") as f:
        for _ in range(2 * nodes):
            a, b = rng.integers(nodes, size=2)
            f.write(f"{ids[a]}\t{ids[b]}\n")


class _Download:
    """requests.get(...) and tarfile.open(...) of the Cora archive: nothing
    to download or extract (write_cora wrote the files)."""
    raw = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def extractall(self, *args, **kwargs):
        pass


def run_graph(fw, program, folder, argv, permutation, store):
    requests = _stub_module("requests", get=lambda url, stream=False: _Download())
    patches = [_same_start(fw, store),
        mock.patch.object(tarfile, "open", lambda *a, **k: _Download()),
        _shared(fw, "randperm", [permutation])]
    return run_program(fw, f"{program}/main.py", argv, cwd=folder,
                       modules={"requests": requests}, patches=patches)[1]


@pytest.fixture(scope="module")
def cora(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cora"))
    nodes = 1700  # the scripts split 1000/500/rest (gcn) and 1200/400/rest (gat)
    write_cora(folder, nodes, 24, 4)
    return folder, np.random.default_rng(9).permutation(nodes)


_EPOCH = r"^Epoch: \d+ \(\S+\) loss_train: (\S+) acc_train: (\S+) loss_val: (\S+) acc_val: (\S+)$"
_TEST = r"^Test set results: loss (\S+) accuracy (\S+)$"


def _graph_results(printed):
    epochs = [[float(v) for v in m] for m in re.findall(_EPOCH, printed, re.M)]
    return epochs, [[float(v) for v in m] for m in re.findall(_TEST, printed, re.M)]


@pytest.mark.parametrize("program,argv", [
    ("gcn", ["--epochs", "4", "--val-every", "1", "--dropout-p", "0", "--include-bias"]),
    ("gat", ["--epochs", "3", "--val-every", "1", "--dropout-p", "0", "--hidden-dim", "8",
             "--num-heads", "2"]),
])
def test_graph_networks(cora, program, argv):
    """Each epoch's printed training and validation loss and accuracy (4
    decimals) and the test result."""
    folder, permutation = cora
    store = {}
    torch_printed = run_graph("torch", program, folder, argv, permutation, store)
    printed = run_graph("of", program, folder, argv, permutation, store)
    epochs, test = _graph_results(printed)
    torch_epochs, torch_test = _graph_results(torch_printed)
    assert len(epochs) == len(torch_epochs) == int(argv[1]) and len(test) == 1
    np.testing.assert_allclose(epochs, torch_epochs, rtol=0, atol=1.01e-4)
    np.testing.assert_allclose(test, torch_test, rtol=0, atol=1.01e-4)


# -- reinforcement_learning/reinforce.py ----------------------------------------------

def run_reinforce(fw, uniforms, initial=None):
    mod = _framework(fw)
    envs = []
    ns, _ = run_program(fw, "reinforcement_learning/reinforce.py", [], name="reinforce",
                        modules=_gymnasium(envs))
    if initial is not None:
        ns.policy.load_state_dict({k: mod.tensor(v) for k, v in initial.items()})
    start = {k: v.detach().numpy().copy() for k, v in ns.policy.state_dict().items()}
    draws = iter(uniforms)

    class SharedDraws(ns.Categorical):
        def sample(self, sample_shape=()):
            cdf = np.cumsum(self.probs.detach().numpy().astype(np.float64).reshape(-1))
            value = int(np.searchsorted(cdf, next(draws) * cdf[-1], side="right"))
            return mod.tensor([value])

    ns.Categorical = SharedDraws
    ns.policy.dropout.p = 0.0
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ns.main()
    final = {k: v.detach().numpy().copy() for k, v in ns.policy.state_dict().items()}
    return printed.getvalue(), start, final, envs


def test_reinforce():
    """Three episodes of 20 steps (the stand-in CartPole), each followed by
    the policy-gradient step: what main() prints and the final weights."""
    uniforms = np.random.default_rng(3).random(1000)
    torch_printed, initial, torch_final, _ = run_reinforce("torch", uniforms)
    printed, _, final, envs = run_reinforce("of", uniforms, initial)
    assert printed == torch_printed and printed.startswith("Solved!")
    assert envs[0].steps == 20
    for name, t in torch_final.items():
        err = np.abs(final[name] - t).max() / np.abs(t).max()
        assert err <= 1e-4, f"{name}: relative error {err}"


# -- what the programs found missing, as unit tests against PyTorch -----------------

def test_accelerator_without_gpu():
    if of.cuda.is_available():
        pytest.skip("a GPU is present: the CPU-only answers do not apply")
    assert of.accelerator.is_available() is False
    assert of.accelerator.current_accelerator() is None
    assert of.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="no accelerator is available"):
        of.accelerator.current_device_index()
    of.accelerator.synchronize()


def test_sparse_coo_as_pytorch(rng):
    indices = np.array([[0, 2, 2, 1], [1, 0, 0, 3]])
    values = rng.standard_normal(4).astype(np.float32)
    dense = rng.standard_normal((4, 5)).astype(np.float32)
    results = {}
    for mod in (torch, of):
        s = mod.sparse_coo_tensor(indices, mod.tensor(values), (3, 4))
        assert s.is_sparse and s.layout == mod.sparse_coo
        assert not s.to_dense().is_sparse and mod.ones(2).layout == mod.strided
        c = s.coalesce()
        results[mod] = [s.to_dense(), c.indices(), c.values(), mod.spmm(s, mod.tensor(dense)),
                        mod.sparse.mm(s, mod.tensor(dense)), s.to_dense().to_sparse().to_dense(),
                        mod.eye(3, 4) + mod.sparse_coo_tensor(indices, mod.ones(4), (3, 4),
                                                              dtype=mod.int64),
                        mod.tensor(dense).mm(mod.tensor(dense).t())]
        assert c._nnz() == 3
    for o, t in zip(results[of], results[torch]):
        assert o.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError, match="outside size"):
        of.sparse_coo_tensor([[0, 5]], of.ones(2), (3,))


def test_sparse_input_gradient(rng):
    """mm of a sparse matrix (a graph's adjacency) with a parameter: the
    parameter's gradient is PyTorch's."""
    adj = (rng.random((6, 6)) < 0.3).astype(np.float32)
    w = rng.standard_normal((6, 2)).astype(np.float32)
    grads = []
    for mod in (torch, of):
        p = mod.tensor(w, requires_grad=True)
        mod.spmm(mod.tensor(adj).to_sparse(), p).square().sum().backward()
        grads.append(p.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5)


def test_legacy_constructors():
    for mod in (torch, of):
        assert tuple(mod.Tensor(2, 3).shape) == (2, 3) and mod.Tensor(2, 3).dtype == mod.float32
        assert tuple(mod.Tensor().shape) == (0,)
        assert mod.Tensor([1, 2]).dtype == mod.float32
        assert mod.LongTensor([1, 2]).dtype == mod.int64
        assert mod.FloatTensor(np.array([[1, 2]], np.int32)).dtype == mod.float32
        assert mod.DoubleTensor(2).dtype == mod.float64
        assert isinstance(mod.ones(2), mod.FloatTensor)
        assert not isinstance(mod.ones(2), mod.LongTensor)
        assert isinstance(mod.ones(2, dtype=mod.int64), mod.LongTensor)
        np.testing.assert_array_equal(mod.IntTensor([3, 4]).numpy(), [3, 4])
    with pytest.raises(TypeError, match="takes sizes"):
        of.Tensor(2, "a")


@pytest.mark.parametrize("a,b", [("float32", "int64"), ("int32", "int64"), ("bool", "int32"),
                                 ("float32", "float64"), ("int64", "float64")])
def test_binary_ops_promote_as_pytorch(rng, a, b):
    x = (rng.standard_normal((3, 4)) * 3).astype(a)
    y = (rng.standard_normal(4) * 3).astype(b)
    z = np.array(2.5, np.float64)  # a 0-d float64 tensor does not widen float32
    for name in ("add", "sub", "mul", "maximum", "lt", "eq"):
        if name == "sub" and "bool" in (a, b):
            continue  # PyTorch refuses `-` with a bool tensor
        o = getattr(of, name)(of.tensor(x), of.tensor(y))
        t = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), name
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    o, t = of.tensor(x) * of.tensor(z), torch.tensor(x) * torch.tensor(z)
    assert o.dtype.name == str(t.dtype).removeprefix("torch.")
    o = of.where(of.tensor(x > 0), of.tensor(x), of.tensor(y))
    t = torch.where(torch.tensor(x > 0), torch.tensor(x), torch.tensor(y))
    assert o.dtype.name == str(t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    o, t = of.cat([of.tensor(y), of.tensor(x[0])]), torch.cat([torch.tensor(y),
                                                               torch.tensor(x[0])])
    assert o.dtype.name == str(t.dtype).removeprefix("torch.")


def test_promotion_in_place_keeps_the_tensors_dtype():
    for mod in (torch, of):
        x = mod.ones(3)
        x += mod.tensor([1, 2, 3])
        assert x.dtype == mod.float32
        i = mod.tensor([1, 2, 3])
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            i += mod.ones(3)


def test_small_habits_the_programs_use(rng):
    x = rng.standard_normal((4, 10)).astype(np.float32)
    y = np.array([1, 3, 0, 9])
    out = []
    for mod in (torch, of):
        mod.manual_seed(0)
        t = mod.tensor(x)
        t[range(4), mod.tensor(y)] = t.max()  # x_[range(n), y] = v
        assert tuple(mod.randint(10, size=(3,)).shape) == (3,)
        assert tuple(mod.arange(5)[5:].shape) == (0,)  # an empty slice at the end
        assert tuple(mod.ones(4, 3)[4:, 1:].shape) == (0, 2)
        out.append(t.numpy())
    np.testing.assert_array_equal(out[1], out[0])


def _train_compiled(w0, xs, make_optimizer):
    """The weight of `(x @ w).square().mean()` trained from `w0` over the
    batches `xs` by the standard loop under of.compile (one compiled step)."""
    class Net(of.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = of.nn.Parameter(of.tensor(w0))

        def forward(self, x):
            return (x @ self.w).square().mean()

    net = Net()
    model = of.compile(net)
    opt = make_optimizer(net.parameters())
    for x in xs:
        opt.zero_grad()
        model(of.tensor(x)).backward()
        opt.step()
    return net.w.detach().numpy()


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_weight_decay(rng, decoupled):
    """Adam's L2 weight decay (added to the gradient) and its decoupled one,
    eager and compiled, against PyTorch over 3 steps."""
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    xs = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(3)]
    finals = []
    for mod in (torch, of):
        p = mod.tensor(w0, requires_grad=True)
        opt = mod.optim.Adam([p], lr=0.1, weight_decay=0.3, decoupled_weight_decay=decoupled)
        for x in xs:
            opt.zero_grad()
            (mod.tensor(x) @ p).square().mean().backward()
            opt.step()
        finals.append(p.detach().numpy())
        assert opt.state_dict()["param_groups"][0]["decoupled_weight_decay"] is decoupled
    np.testing.assert_allclose(finals[1], finals[0], rtol=1e-5, atol=1e-6)

    trained = _train_compiled(w0, xs, lambda params: of.optim.Adam(
        params, lr=0.1, weight_decay=0.3, decoupled_weight_decay=decoupled))
    np.testing.assert_allclose(trained, finals[0], rtol=1e-5, atol=1e-6)


def test_small_functions_as_pytorch(rng):
    """Aliases and compositions programs call by PyTorch's names, each
    against PyTorch on the same input."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 0], x[1, 1], x[2, 2], x[0, 3] = np.inf, np.nan, 0.0, -np.inf
    y = rng.standard_normal((3, 4, 5)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    cases = [
        lambda m, t: m.isinf(t(x)), lambda m, t: m.nan_to_num(t(x)),
        lambda m, t: m.nan_to_num(t(x), nan=1.0, posinf=2.0, neginf=-2.0),
        lambda m, t: m.trunc(t(x) * 3), lambda m, t: m.frac(t(y) * 3),
        lambda m, t: m.count_nonzero(t(x)), lambda m, t: m.count_nonzero(t(x), 1),
        lambda m, t: m.logical_not(t(x)), lambda m, t: m.logical_and(t(x), t(x) > 0),
        lambda m, t: m.logical_or(t(x), t(x) > 0), lambda m, t: m.logical_xor(t(x), t(x) > 0),
        lambda m, t: m.movedim(t(y), 0, 2), lambda m, t: m.movedim(t(y), [0, 1], [2, 0]),
        lambda m, t: m.moveaxis(t(y), -1, 0), lambda m, t: m.swapaxes(t(y), 0, 2),
        lambda m, t: m.unflatten(t(y), 2, (5, 1)), lambda m, t: t(y).unflatten(1, (2, -1)),
        lambda m, t: m.diagonal(t(y), 0, 0, 2), lambda m, t: m.diagonal(t(y), 1, 0, 2),
        lambda m, t: m.diagonal(t(y), -2, 2, 1), lambda m, t: m.trace(t(y[0])),
        lambda m, t: m.mv(t(y[0]), t(y[0, 0])), lambda m, t: t(y).ravel(),
        lambda m, t: m.hstack([t(v), t(v)]), lambda m, t: m.vstack([t(v), t(v)]),
        lambda m, t: m.stack(m.unbind(t(y), 1), 0), lambda m, t: m.subtract(t(v), t(v), alpha=2),
        lambda m, t: m.multiply(t(v), 3), lambda m, t: m.divide(t(v), 3),
        lambda m, t: m.true_divide(t(v), 2), lambda m, t: m.negative(t(v)),
        lambda m, t: m.var_mean(t(y), 1)[0], lambda m, t: m.std_mean(t(y), 1)[1],
        lambda m, t: m.broadcast_tensors(t(v), t(y[:, :1, :1]))[0],
        lambda m, t: t(y[0]).where(t(y[0]) > 0, 0.0), lambda m, t: t(v).maximum(t(v) * 2),
    ]
    for k, case in enumerate(cases):
        o = case(of, of.tensor).numpy()
        r = case(torch, torch.tensor).numpy()
        assert o.shape == r.shape and o.dtype == r.dtype, k
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=str(k))
    assert of.finfo(of.float32).eps == torch.finfo(torch.float32).eps
    assert of.finfo(of.float16).max == torch.finfo(torch.float16).max
    assert of.iinfo(of.int64).min == torch.iinfo(torch.int64).min
    assert of.ones(2, 3).nelement() == 6 and of.ones(2, 3).ndimension() == 2


# -- super_resolution/main.py ---------------------------------------------------------

def _super_resolution_data(fw, pairs):
    """The script's `data` module: training and test sets of (low, high)
    resolution images, the k-th access returning pair k (both frameworks'
    shuffled loaders see the same batches)."""
    mod = _framework(fw)

    class Pairs:
        def __init__(self, items):
            self.items, self.served = items, 0

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            low, high = self.items[self.served % len(self.items)]
            self.served += 1
            return mod.tensor(low), mod.tensor(high)

    def training_set(upscale_factor):
        assert upscale_factor == 3
        return Pairs(pairs[:8])

    def test_set(upscale_factor):
        return Pairs(pairs[8:])
    return _stub_module("data", get_training_set=training_set, get_test_set=test_set)


def run_super_resolution(fw, folder, pairs, store):
    """main.py with --upscale_factor 3 and 2 epochs; returns what it printed
    and the model it saved after epoch 2, loaded back as a whole module."""
    model = load(fw, "super_resolution/model.py", flat=True)["model"]
    argv = ["--upscale_factor", "3", "--batchSize", "4", "--testBatchSize", "2",
            "--nEpochs", "2", "--lr", "0.001"]
    modules = {"data": _super_resolution_data(fw, pairs), "model": model}
    cwd = os.path.join(folder, fw)
    os.makedirs(cwd, exist_ok=True)
    _, printed = run_program(fw, "super_resolution/main.py", argv, cwd=cwd, modules=modules,
                             patches=[_same_start(fw, store)])
    saved = sys.modules.get("model")
    sys.modules["model"] = model  # the class the checkpoint names, as the script had it
    try:
        if fw == "torch":
            with pytest.raises(Exception, match="weights_only"):
                torch.load(os.path.join(cwd, "model_epoch_2.pth"))
        else:
            with pytest.raises(Exception, match="weights_only=False"):
                of.load(os.path.join(cwd, "model_epoch_2.pth"))
        net = _framework(fw).load(os.path.join(cwd, "model_epoch_2.pth"), weights_only=False)
    finally:
        if saved is None:
            sys.modules.pop("model")
        else:
            sys.modules["model"] = saved
    assert type(net).__name__ == "Net"
    return printed, net


@pytest.mark.filterwarnings("ignore:This DataLoader will create 4 worker processes")
def test_super_resolution(tmp_path):
    """2 epochs of 2 batches (Adam, MSELoss, PixelShuffle, orthogonal init),
    each followed by the PSNR of the test set and `torch.save(model, ...)`
    of the whole module, loaded back with weights_only=False: the printed
    losses and PSNRs, and the reloaded models' outputs."""
    rng = np.random.default_rng(12)
    pairs = [(rng.random((1, 8, 8), np.float32), rng.random((1, 24, 24), np.float32))
             for _ in range(12)]
    store = {}
    torch_printed, torch_net = run_super_resolution("torch", str(tmp_path), pairs, store)
    printed, net = run_super_resolution("of", str(tmp_path), pairs, store)
    for pattern in (r"Loss: (\S+)$", r"Avg\. Loss: (\S+)$", r"Avg\. PSNR: (\S+) dB$"):
        values = _numbers(printed, pattern)
        assert len(values) >= 2
        np.testing.assert_allclose(values, _numbers(torch_printed, pattern), rtol=0,
                                   atol=1.01e-4)
    assert _numbers(printed, r"model_epoch_(\d)\.pth") == [1, 2]
    x = rng.random((2, 1, 8, 8), np.float32)
    with torch.no_grad():
        expected = torch_net(torch.tensor(x)).numpy()
    np.testing.assert_allclose(net(of.tensor(x)).numpy(), expected, rtol=1e-4, atol=1e-6)


def test_operators_and_in_place_forms(rng):
    """~ & | ^ // % and the in-place operators and methods, against
    PyTorch: x += y writes x (an alias sees it); on an integer tensor a
    float result is PyTorch's error."""
    a = rng.standard_normal((3, 4)).astype(np.float32) * 4
    m, n = a > 0, a < 1
    i = np.arange(12).reshape(3, 4) - 5
    results = {}
    for mod in (torch, of):
        t = mod.tensor
        out = [~t(m), t(m) & t(n), t(m) | t(n), t(m) ^ t(n), t(m) & True, ~t(i), t(i) // 3,
               t(i) % 4, 7 // t(i + 20), 7 % t(i + 20), mod.bitwise_and(t(m), t(n)),
               mod.bitwise_or(t(m), t(n)), mod.bitwise_xor(t(m), t(n)), mod.bitwise_not(t(m)),
               t(m).bitwise_and(t(n)), t(m).bitwise_or(t(n)), t(m).bitwise_xor(t(n)),
               t(m).bitwise_not(), mod.fix(t(a)), t(a).fix(), mod.swapdims(t(a), 0, 1),
               t(a).swapdims(1, 0), mod.atleast_1d(t(1.5)), mod.atleast_2d(t(a[0]))]
        for name, arg in [("bitwise_and_", t(n)), ("bitwise_or_", t(n)),
                          ("bitwise_xor_", t(n)), ("logical_and_", t(n)), ("logical_or_", t(n)),
                          ("logical_xor_", t(n))]:
            x = t(m)
            assert getattr(x, name)(arg) is x
            out.append(x)
        for name in ("bitwise_not_", "logical_not_"):
            x = t(m)
            getattr(x, name)()
            out.append(x)
        for name, x, args in [("trunc_", t(a), ()), ("frac_", t(a), ()),
                              ("nan_to_num_", t(a), ()), ("floor_divide_", t(i), (3,)),
                              ("remainder_", t(i), (3,))]:
            alias = x
            getattr(x, name)(*args)
            out.append(alias)
        x = t(a)
        alias = x
        x += 1
        x *= t(a)
        x -= 2
        x /= 3
        x **= 2
        out.append(alias)
        x = t(i)
        alias = x
        x //= 2
        x %= 5
        x += 1
        out.append(alias)
        b = t(m)
        alias = b
        b &= t(n)
        b |= t(m)
        b ^= t(n)
        out.append(alias)
        k = t(i)
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            k += t(a)
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            k /= 2
        results[mod] = out
        assert mod.get_default_dtype() == mod.float32
    for k, (o, r) in enumerate(zip(results[of], results[torch])):
        assert o.dtype.name == str(r.dtype).removeprefix("torch."), k
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-5, atol=1e-5, err_msg=str(k))
    with pytest.raises(TypeError, match="bitwise_not is only supported"):
        ~of.ones(2)
    with pytest.raises(NotImplementedError, match="bitwise_and of integer tensors"):
        of.tensor([1]) & of.tensor([3])


def test_sparse_and_legacy_odds():
    s = of.sparse_coo_tensor([[0, 1]], of.tensor([2.0, 3.0]), (3,))
    assert s.coalesce().is_coalesced() and s.to_sparse_coo().is_sparse
    with pytest.raises(RuntimeError, match="expected a sparse COO tensor"):
        of.ones(2).is_coalesced()
    for name, dtype in [("BoolTensor", "bool"), ("CharTensor", "int8"),
                        ("HalfTensor", "float16")]:
        assert getattr(of, name)([1, 0]).dtype.name == dtype
        assert str(getattr(torch, name)([1, 0]).dtype) == f"torch.{dtype}"


def test_more_torch_functions_as_pytorch(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    x[1, 2] = np.nan
    y = rng.standard_normal((4, 5)).astype(np.float32)
    cases = [
        lambda m, t: m.tensor_split(t(y), 3, 1), lambda m, t: m.tensor_split(t(y), [1, -1], 1),
        lambda m, t: t(y).tensor_split(2), lambda m, t: m.column_stack([t(y[0]), t(y[1])]),
        lambda m, t: m.dstack([t(y), t(y)]), lambda m, t: m.fliplr(t(y)),
        lambda m, t: m.flipud(t(y)), lambda m, t: m.rot90(t(y)), lambda m, t: m.rot90(t(y), 3),
        lambda m, t: t(y).rot90(2, [1, 0]), lambda m, t: m.diff(t(y)),
        lambda m, t: t(y).diff(2, 0), lambda m, t: m.median(t(y)),
        lambda m, t: m.median(t(y), 1), lambda m, t: t(y).median(0, keepdim=True),
        lambda m, t: m.median(t(x), 1), lambda m, t: m.median(t(x)),  # NaN rows: PyTorch's NaN
        lambda m, t: m.take(t(y), t(np.array([[0, 5], [19, 3]]))),
        lambda m, t: m.nansum(t(x)), lambda m, t: t(x).nanmean(1), lambda m, t: m.nanmean(t(x)),
        lambda m, t: m.logspace(0, 2, 5), lambda m, t: m.tril_indices(3, 4, 1),
        lambda m, t: m.triu_indices(4, 3, -1), lambda m, t: m.kron(t(y[:2, :2]), t(y[:3, :2])),
        lambda m, t: m.hypot(t(y), t(x)), lambda m, t: m.deg2rad(t(y)),
        lambda m, t: m.rad2deg(t(y)),
        lambda m, t: m.xlogy(t(np.array([0., 1., 2., 0.])), t(np.array([0., 2., np.nan, 3.]))),
        lambda m, t: m.cosine_similarity(t(y), t(y * 2 + 1)),
        lambda m, t: m.pairwise_distance(t(y), t(x[:, ::-1].copy() * 0 + 1)),
        lambda m, t: m.argwhere(t(y > 0)), lambda m, t: t(y > 0).argwhere(),
        lambda m, t: m.clone(t(y)), lambda m, t: m.detach(t(y)),
        lambda m, t: m.as_tensor([1, 2]), lambda m, t: m.asarray(np.ones(2)),
        lambda m, t: m.as_tensor(t(y), dtype=m.float64),
    ]
    for k, case in enumerate(cases):
        o, r = case(of, of.tensor), case(torch, torch.tensor)
        for a, b in zip(o if isinstance(o, tuple) else [o], r if isinstance(r, tuple) else [r]):
            assert a.dtype.name == str(b.dtype).removeprefix("torch."), k
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6,
                                       equal_nan=True, err_msg=str(k))
    t = of.tensor(y)
    assert of.as_tensor(t) is t
    s = of.get_rng_state()
    a = of.randn(3)
    of.set_rng_state(s)
    np.testing.assert_array_equal(of.randn(3).numpy(), a.numpy())
    of.manual_seed(7)
    assert of.initial_seed() == 7
    assert of.seed() == of.initial_seed()
    with pytest.raises(RuntimeError, match="set_rng_state"):
        of.set_rng_state(of.zeros(6))
    of.set_default_dtype(of.float32)
    with pytest.raises(NotImplementedError, match="set_default_dtype"):
        of.set_default_dtype(of.float64)
    z = of.normal(of.zeros(20000), of.ones(20000) * 2)
    assert abs(float(z.mean())) < 0.1 and abs(float(z.std()) - 2) < 0.1
    assert tuple(of.normal(0.0, 1.0, (2, 3)).shape) == (2, 3)
    r = of.randint_like(of.zeros(100), 3, 6)
    assert r.dtype is of.float32 and set(np.unique(r.numpy())) <= {3.0, 4.0, 5.0}


def test_jit_script_and_trace_return_what_they_are_given(rng):
    """torch.jit.script/trace: calls compute what they computed before."""
    model = of.nn.Linear(3, 2)
    x = of.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    assert of.jit.script(model) is model and of.jit.trace(model, x) is model

    @of.jit.script
    def double(v):
        return v * 2

    @of.jit.ignore
    def helper(v):
        return v

    np.testing.assert_array_equal(double(x).numpy(), x.numpy() * 2)
    assert helper(x) is x and of.jit.unused(helper) is helper and of.jit.export(helper) is helper
    assert not of.jit.is_scripting() and not of.jit.is_tracing()
    with pytest.raises(AttributeError):
        of.jit.load("model.pt")


# -- fast_neural_style/neural_style ----------------------------------------------------

_VGG16 = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M"]


def _vgg16_features(fw, seed=21):
    """torchvision's vgg16().features at its layer indices (conv 3x3 + ReLU,
    max pools), with weights drawn from one NumPy generator (the same in
    both frameworks; the script asks for ImageNet's)."""
    mod = _framework(fw)
    rng = np.random.default_rng(seed)
    layers, channels = [], 3
    for v in _VGG16:
        if v == "M":
            layers.append(mod.nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        conv = mod.nn.Conv2d(channels, v, kernel_size=3, padding=1)
        with mod.no_grad():
            conv.weight.copy_(mod.tensor((rng.standard_normal(tuple(conv.weight.shape)) *
                                          math.sqrt(2 / (9 * channels))).astype(np.float32)))
            conv.bias.copy_(mod.tensor(np.zeros(v, np.float32)))
        layers += [conv, mod.nn.ReLU(inplace=True)]
        channels = v
    return mod.nn.Sequential(*layers)


class _Image:
    """PIL.Image's stand-in: an H x W x 3 uint8 array."""

    ANTIALIAS = "antialias"

    def __init__(self, array):
        self.array = array

    def convert(self, mode):
        assert mode == "RGB"
        return self

    def resize(self, size, resample=None):
        assert tuple(size) == self.array.shape[:2], (size, self.array.shape)
        return self


def _neural_style_modules(fw, images, style, saved):
    mod = _framework(fw)

    class Resize:
        def __init__(self, size):
            self.size = size

        def __call__(self, image):
            assert image.array.shape[:2] == (self.size, self.size)
            return image

    CenterCrop = Resize

    class ToTensor:
        def __call__(self, image):
            return mod.tensor(image.array.transpose(2, 0, 1).astype(np.float32) / 255)

    def ImageFolder(root, transform):  # noqa: N802
        return _InOrder(len(images), lambda k: (transform(_Image(images[k])), 0))

    weights = types.SimpleNamespace(IMAGENET1K_V1="IMAGENET1K_V1")

    def vgg16(weights=None):
        assert weights == "IMAGENET1K_V1"
        return types.SimpleNamespace(features=_vgg16_features(fw))

    transforms = _stub_module("torchvision.transforms", Compose=_Compose, Resize=Resize,
                              CenterCrop=CenterCrop, ToTensor=ToTensor, Lambda=_Lambda)
    datasets = _stub_module("torchvision.datasets", ImageFolder=ImageFolder)
    models = _stub_module("torchvision.models", vgg16=vgg16, VGG16_Weights=weights)
    package = _stub_module("torchvision", datasets=datasets, transforms=transforms,
                           models=models, __path__=[])

    class Saved:
        def __init__(self, array):
            self.array = array

        def save(self, filename):
            saved[os.path.basename(filename)] = self.array

    image = _stub_module("PIL.Image", open=lambda filename: _Image(style),
                         fromarray=Saved, ANTIALIAS=_Image.ANTIALIAS)
    pil = _stub_module("PIL", Image=image, __path__=[])
    return {"torchvision": package, "torchvision.datasets": datasets,
            "torchvision.transforms": transforms, "torchvision.models": models,
            "PIL": pil, "PIL.Image": image}


def run_neural_style(fw, folder, images, style, store):
    """`neural_style.py train` (1 epoch of 2 batches of 2, 16 x 16 images),
    then `eval` of the model it saved on a content image. Returns the
    printed lines and the stylised image."""
    saved = {}
    modules = _neural_style_modules(fw, images, style, saved)
    files = ["utils.py", "transformer_net.py", "vgg.py"]
    with _stand_ins(modules):
        modules.update({name[:-3]: load(fw, f"fast_neural_style/neural_style/{name}",
                                        flat=True)[name[:-3]] for name in files})
    out = os.path.join(folder, fw)
    argv = ["train", "--dataset", "unused", "--style-image", "style.jpg", "--save-model-dir",
            out, "--epochs", "1", "--batch-size", "2", "--image-size", "16", "--style-size",
            "16", "--log-interval", "1", "--content-weight", "1e5", "--style-weight", "1e10"]
    patches = [_same_start(fw, store)]
    _, printed = run_program(fw, "fast_neural_style/neural_style/neural_style.py", argv,
                             modules=modules, patches=patches)
    (model,) = [f for f in os.listdir(out) if f.endswith(".model")]
    argv = ["eval", "--content-image", "content.jpg", "--model", os.path.join(out, model),
            "--output-image", os.path.join(out, "out.jpg")]
    run_program(fw, "fast_neural_style/neural_style/neural_style.py", argv, modules=modules)
    return printed, saved["out.jpg"]


def test_fast_neural_style(tmp_path):
    """Training (TransformerNet: ReflectionPad2d, InstanceNorm2d(affine),
    residual blocks, nearest upsampling; VGG16's features for the content
    and Gram-matrix style losses; Adam; `batch.div_(255)` in place) and
    stylising with the saved weights: the printed losses and the output
    image."""
    rng = np.random.default_rng(17)
    images = [rng.integers(0, 256, (16, 16, 3)).astype(np.uint8) for _ in range(4)]
    style = rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)
    store = {}
    torch_printed, torch_image = run_neural_style("torch", str(tmp_path), images, style, store)
    printed, image = run_neural_style("of", str(tmp_path), images, style, store)
    pattern = r"content: (\S+)\tstyle: (\S+)\ttotal: (\S+)$"
    losses = [[float(v) for v in m] for m in re.findall(pattern, printed, re.M)]
    torch_losses = [[float(v) for v in m] for m in re.findall(pattern, torch_printed, re.M)]
    assert len(losses) == len(torch_losses) == 2
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-4)
    assert image.dtype == np.uint8 and image.shape == (16, 16, 3)
    # the stylised image (0..255, cast to uint8): within one level of PyTorch's
    assert np.abs(image.astype(int) - torch_image.astype(int)).max() <= 1


def test_onnx_names():
    """`import torch.onnx` works (fast_neural_style imports it); of writes no
    ONNX, and says so."""
    assert of.onnx.is_in_onnx_export() is False and torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="does not write ONNX"):
        of.onnx.export(of.nn.Linear(2, 2), (of.ones(1, 2),), "model.onnx")


# -- siamese_network/main.py ------------------------------------------------------------

def _siamese_torchvision(fw, images, labels):
    """torchvision for siamese_network: datasets.MNIST with .data (uint8,
    as torchvision's) and .targets, models.resnet18 (the torchvision
    definition in programs/resnet, for the framework)."""
    mod = _framework(fw)
    resnet = load(fw, "resnet/resnet.py", flat=True)["resnet"]

    class MNIST:
        def __init__(self, root, train=True, download=False):
            self.data, self.targets = mod.tensor(images), mod.tensor(labels)

    def resnet18(weights=None):
        assert weights is None
        return resnet.resnet18()

    datasets = _stub_module("torchvision.datasets", MNIST=MNIST)
    models = _stub_module("torchvision.models", resnet18=resnet18)
    transforms = _stub_module("torchvision.transforms")
    package = _stub_module("torchvision", datasets=datasets, models=models,
                           transforms=transforms, __path__=[])
    return {"torchvision": package, "torchvision.datasets": datasets,
            "torchvision.models": models, "torchvision.transforms": transforms}


def run_siamese(fw, images, labels, store):
    import random
    random.seed(4)  # the dataset draws its pairs from Python's generator
    argv = ["--batch-size", "4", "--test-batch-size", "4", "--epochs", "2", "--log-interval",
            "1", "--no-accel"]
    return run_program(fw, "siamese_network/main.py", argv,
                       modules=_siamese_torchvision(fw, images, labels),
                       patches=[_same_start(fw, store)])[1]


def test_siamese_network():
    """2 epochs of 2 batches of image pairs (a ResNet-18 trunk with its
    BatchNorm in training mode on unnormalised 0..255 pixels, BCELoss,
    Adadelta at lr 1.0, StepLR), each followed by the test pass. The run is
    chaotic from its third step: in PyTorch alone, weights changed by a
    relative 1e-6 change the 4th and 5th losses from 1.20 and 2.54 to 1.51
    and 0.57 (Adadelta's first steps have the same size whatever the
    gradient's, so float32 noise in a near-zero gradient is a full step). So
    the first step's loss is compared at float32 precision, the second at
    1e-3 (its gradients agree with PyTorch's within 3e-4 of each tensor's
    largest), and the rest of the run must print every loss and both test
    passes."""
    rng = np.random.default_rng(23)
    images = rng.integers(0, 256, (20, 28, 28)).astype(np.uint8)
    labels = np.arange(20) % 10
    store = {}
    torch_printed = run_siamese("torch", images, labels, store)
    printed = run_siamese("of", images, labels, store)
    pattern = r"Loss: (\S+)$"
    losses, torch_losses = _numbers(printed, pattern), _numbers(torch_printed, pattern)
    assert len(losses) == len(torch_losses) == 2 * 5 and np.isfinite(losses).all()
    np.testing.assert_allclose(losses[0], torch_losses[0], rtol=1e-5)
    np.testing.assert_allclose(losses[1], torch_losses[1], rtol=1e-3)
    pattern = r"Average loss: (\S+), Accuracy: (\d+)/20"
    assert len(re.findall(pattern, printed)) == len(re.findall(pattern, torch_printed)) == 2


def test_where_of_two_numbers(rng):
    c = rng.standard_normal(5) > 0
    for x, y in [(1, 0), (1.0, 0), (True, False), (2, 0.5)]:
        o, t = of.where(of.tensor(c), x, y), torch.where(torch.tensor(c), x, y)
        assert o.dtype.name == str(t.dtype).removeprefix("torch."), (x, y)
        np.testing.assert_array_equal(o.numpy(), t.numpy())


@pytest.mark.parametrize("name,kwargs", [("AdamW", dict(amsgrad=True)),
                                         ("Adam", dict(amsgrad=True, weight_decay=0.1))])
def test_amsgrad(rng, name, kwargs):
    """AMSGrad (PyTorch's DQN tutorial trains with AdamW(amsgrad=True)):
    gradients that shrink, so the running maximum of the second moment is
    not the second moment; eager and compiled, against PyTorch over 4 steps,
    and the state_dict's max_exp_avg_sq."""
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    xs = [rng.standard_normal((5, 3)).astype(np.float32) * s for s in (3.0, 1.0, 0.3, 0.1)]
    finals, states = [], []
    for mod in (torch, of):
        p = mod.tensor(w0, requires_grad=True)
        opt = getattr(mod.optim, name)([p], lr=0.1, **kwargs)
        for x in xs:
            opt.zero_grad()
            (mod.tensor(x) @ p).square().mean().backward()
            opt.step()
        finals.append(p.detach().numpy())
        states.append(opt.state_dict())
    np.testing.assert_allclose(finals[1], finals[0], rtol=1e-5, atol=1e-6)
    assert states[1]["param_groups"][0]["amsgrad"] is True
    np.testing.assert_allclose(states[1]["state"][0]["max_exp_avg_sq"].numpy(),
                               states[0]["state"][0]["max_exp_avg_sq"].numpy(), rtol=1e-5)

    trained = _train_compiled(w0, xs, lambda params: getattr(of.optim, name)(
        params, lr=0.1, **kwargs))
    np.testing.assert_allclose(trained, finals[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args", [(1, 3, 2), (0, 2, 1), (2, 4, 1), (-2, 10, 3)])
def test_tensor_unfold_windows(rng, args):
    """Tensor.unfold (sliding windows; PyTorch's DQN tutorial averages the
    last 100 episode durations with it): values and gradients."""
    x = rng.standard_normal((3, 10, 4)).astype(np.float32)
    o, t = of.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = o.unfold(*args), t.unfold(*args)
    np.testing.assert_array_equal(yo.numpy(), yt.detach().numpy())
    w = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    (yo * of.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="maximum size"):
        of.tensor(x).unfold(1, 11, 1)


def test_backends_mps_is_not_available():
    assert of.backends.mps.is_available() is False and of.backends.mps.is_built() is False


def test_uint8_as_pytorch(rng):
    """uint8 tensors (images, torchvision's MNIST.data): stored as bytes,
    computed as i32, wrapped modulo 256 as PyTorch wraps; eager and in a
    compiled function."""
    a = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    cases = [
        lambda m, t: t(a) + t(a), lambda m, t: t(a) * 3, lambda m, t: t(a) - 10,
        lambda m, t: -t(a), lambda m, t: t(a) ** 2, lambda m, t: t(a) // 3,
        lambda m, t: t(a).float() / 255, lambda m, t: t(a) > -1, lambda m, t: t(a) == 7,
        lambda m, t: t(a).sum(), lambda m, t: t(a).sum(1), lambda m, t: t(a).max(),
        lambda m, t: t(a)[1], lambda m, t: t(a)[:, [2, 0]], lambda m, t: t(a)[t(a) > 100],
        lambda m, t: t(a).unsqueeze(0).clone(), lambda m, t: t(a).permute(1, 0),
        lambda m, t: t(a).long() * 2, lambda m, t: t(a) + t(np.arange(4)),
        lambda m, t: m.from_numpy(a).to(m.float32).div(255),
        lambda m, t: t(np.array([300, -1, 7])).to(m.uint8), lambda m, t: t(a).to(m.int32),
        lambda m, t: m.cat([t(a), t(a)]), lambda m, t: m.stack([t(a), t(a)], 2),
        lambda m, t: m.where(t(a) > 50, t(a), t(a) // 2),
    ]
    for k, case in enumerate(cases):
        o, r = case(of, of.tensor), case(torch, torch.tensor)
        assert o.dtype.name == str(r.dtype).removeprefix("torch."), (k, o.dtype, r.dtype)
        np.testing.assert_array_equal(o.numpy(), r.numpy(), err_msg=str(k))
    x, y = of.tensor(a), torch.tensor(a)
    x += 200
    y += 200
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert of.tensor(a).type() == "torch.ByteTensor" and isinstance(x, of.ByteTensor)
    assert of.ByteTensor([1, 2]).dtype is of.uint8 and of.tensor(a).element_size() == 1
    # uint8 with int8 is PyTorch's int16, which of has not: the next wider, int32
    assert (of.tensor(a) + of.tensor(a.astype(np.int8))).dtype is of.int32
    doubled = of.compile(lambda v: (v + v, v.float() / 255))(of.tensor(a))
    assert doubled[0].dtype is of.uint8 and doubled[1].dtype is of.float32
    np.testing.assert_array_equal(doubled[0].numpy(), (a + a).astype(np.uint8))
    buffer = io.BytesIO()
    of.save({"image": of.tensor(a)}, buffer)
    buffer.seek(0)
    loaded = of.load(buffer)["image"]
    assert loaded.dtype is of.uint8
    np.testing.assert_array_equal(loaded.numpy(), a)


def test_integer_pow_as_pytorch():
    a = np.array([[-3, 0, 2], [5, 1, 7]])
    cases = [lambda m, t: t(a) ** 2, lambda m, t: t(a) ** 0, lambda m, t: t(a) ** 3,
             lambda m, t: 2 ** t(np.abs(a)), lambda m, t: t(a) ** t(np.abs(a)),
             lambda m, t: t(a) ** 2.0, lambda m, t: t(a.astype(np.int32)) ** 5,
             lambda m, t: m.pow(t(a), 2)]
    for k, case in enumerate(cases):
        o, r = case(of, of.tensor), case(torch, torch.tensor)
        assert o.dtype.name == str(r.dtype).removeprefix("torch."), k
        np.testing.assert_array_equal(o.numpy(), r.numpy(), err_msg=str(k))
    with pytest.raises(RuntimeError, match="negative integer powers"):
        of.tensor([2]) ** -1
    step = of.compile(lambda v: v ** 3 + 1)
    np.testing.assert_array_equal(step(of.tensor(a)).numpy(), a ** 3 + 1)


def test_num_threads():
    """torch.set_num_threads / get_num_threads: the threads CPU steps use;
    a step gives the same result on one thread."""
    before = of.get_num_threads()
    assert before >= 1
    x = of.tensor(np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32))
    reference = (x @ x).numpy()
    try:
        of.set_num_threads(1)
        assert of.get_num_threads() == 1
        np.testing.assert_allclose((x @ x).numpy(), reference, rtol=1e-5, atol=1e-4)
    finally:
        of.set_num_threads(before)
    assert of.get_num_threads() == before
    for bad, message in [(0, "positive integer"), (1.5, "expects an int")]:
        for mod in (of, torch):
            with pytest.raises(RuntimeError, match=message):
                mod.set_num_threads(bad)


@pytest.mark.parametrize("name,kwargs", [
    ("Adamax", dict(lr=0.05)), ("Adamax", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05)), ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.05, weight_decay=0.1))])
def test_adamax_nadam_radam(rng, name, kwargs):
    """8 steps (RAdam rectifies from its 6th), eager and compiled, against
    PyTorch: the weights and every state_dict entry."""
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    xs = [rng.standard_normal((5, 3)).astype(np.float32) * s
          for s in (3.0, 1.0, 0.3, 0.1, 1.0, 2.0, 0.5, 1.0)]
    finals, states = [], []
    for mod in (torch, of):
        p = mod.tensor(w0, requires_grad=True)
        opt = getattr(mod.optim, name)([p], **kwargs)
        for x in xs:
            opt.zero_grad()
            (mod.tensor(x) @ p).square().mean().backward()
            opt.step()
        finals.append(p.detach().numpy())
        states.append(opt.state_dict())
    np.testing.assert_allclose(finals[1], finals[0], rtol=1e-5, atol=1e-6)
    ours, theirs = states[1]["state"][0], states[0]["state"][0]
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=key)
    trained = _train_compiled(w0, xs, lambda params: getattr(of.optim, name)(params, **kwargs))
    np.testing.assert_allclose(trained, finals[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid beta parameter"):
        getattr(of.optim, name)([of.nn.Parameter(of.ones(2))], betas=(1.0, 0.9))


def test_multiprocessing_spawn(tmp_path):
    """torch.multiprocessing.spawn: fn(i, *args) in new processes (each
    computing with of), and a failing one reported with its traceback."""
    import _spawn_helpers
    assert of.multiprocessing.spawn(_spawn_helpers.write_rank, args=(str(tmp_path), 1.5),
                                    nprocs=2) is None
    for i in range(2):
        assert (tmp_path / f"rank{i}.txt").read_text() == f"{2.0 * i} 3.0"
    with pytest.raises(of.multiprocessing.ProcessRaisedException, match="rank one fails"):
        of.multiprocessing.spawn(_spawn_helpers.fail_on_one, nprocs=2)
    assert of.multiprocessing.cpu_count() >= 1 and of.multiprocessing.Queue is not None


def test_data_parallel_on_one_device(rng):
    """nn.DataParallel on one device calls the module; its state_dict keys
    are prefixed "module.", as PyTorch's; several GPUs are refused."""
    x = rng.standard_normal((4, 3)).astype(np.float32)
    results = []
    for mod in (torch, of):
        torch.manual_seed(0)
        inner = torch.nn.Linear(3, 2)
        net = mod.nn.Linear(3, 2)
        net.load_state_dict({k: mod.tensor(v.detach().numpy()) for k, v in
                             inner.state_dict().items()})
        wrapped = mod.nn.DataParallel(net)
        assert wrapped.module is net
        assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
        results.append(wrapped(mod.tensor(x)).detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="one process per GPU"):
        of.nn.DataParallel(of.nn.Linear(2, 2), device_ids=[0, 1])


# -- imagenet/main.py -------------------------------------------------------------------

def _imagenet_torchvision(fw, images, store):
    """torchvision for imagenet/main.py --dummy: models (resnet18, the
    torchvision definition in programs/resnet, made with PyTorch's initial
    weights: recorded in `store` by PyTorch's run, loaded in of's; on the
    CPU the script never calls .to), datasets.FakeData (`images` whatever
    the size asked, labels k % 10, in access order) and
    transforms.ToTensor."""
    mod = _framework(fw)
    resnet = load(fw, "resnet/resnet.py", flat=True)["resnet"]

    def resnet18():
        model = resnet.resnet18()
        if fw == "torch":
            store["resnet18"] = {k: v.detach().numpy().copy()
                                 for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: of.tensor(v) for k, v in store["resnet18"].items()})
        return model

    def fake_data(size, image_size, num_classes, transform):
        assert tuple(image_size) == (3, 224, 224) and num_classes == 1000
        return _InOrder(len(images), lambda k: (transform(images[k]), k % 10))

    class ToTensor:
        def __call__(self, image):
            return mod.tensor(image)

    models = _stub_module("torchvision.models", resnet18=resnet18)
    datasets = _stub_module("torchvision.datasets", FakeData=fake_data)
    transforms = _stub_module("torchvision.transforms", ToTensor=ToTensor)
    package = _stub_module("torchvision", models=models, datasets=datasets,
                           transforms=transforms, __path__=[])
    return {"torchvision": package, "torchvision.models": models,
            "torchvision.datasets": datasets, "torchvision.transforms": transforms}


@pytest.mark.filterwarnings("ignore:You have chosen to seed training")
@pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true")  # PyTorch's, on a CPU
def test_imagenet(tmp_path):
    """imagenet/main.py --dummy -a resnet18: one epoch of 2 batches (SGD
    momentum, weight decay, StepLR), the validation pass (top-1/top-5 with
    topk), checkpoint.pth.tar and model_best.pth.tar written; the printed
    training losses and accuracies against PyTorch's."""
    rng = np.random.default_rng(31)
    images = [rng.random((3, 32, 32)).astype(np.float32) for _ in range(8)]
    argv = ["--dummy", "-a", "resnet18", "-b", "4", "--epochs", "1", "-j", "0", "-p", "1",
            "--seed", "1", "--no-accel"]
    store, printed = {}, {}
    for fw in ("torch", "of"):
        folder = tmp_path / fw
        folder.mkdir()
        printed[fw] = run_program(fw, "imagenet/main.py", argv, cwd=str(folder),
                                  modules=_imagenet_torchvision(fw, images, store))[1]
        assert sorted(os.listdir(folder)) == ["checkpoint.pth.tar", "model_best.pth.tar"]
    train = r"^Epoch: \[0\]\[\d/2\].*Loss (\S+) \(.*Acc@1\s+(\S+) \(.*Acc@5\s+(\S+) \("
    ours = np.array(re.findall(train, printed["of"], re.M), float)
    theirs = np.array(re.findall(train, printed["torch"], re.M), float)
    assert ours.shape == theirs.shape == (2, 3)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3)
    final = r"^ \* +Acc@1 (\S+) Acc@5 (\S+)$"
    assert re.findall(final, printed["of"], re.M) == re.findall(final, printed["torch"], re.M)
    checkpoint = of.load(str(tmp_path / "of" / "checkpoint.pth.tar"))
    assert checkpoint["epoch"] == 1 and checkpoint["arch"] == "resnet18"
    assert set(checkpoint) >= {"state_dict", "optimizer", "scheduler", "best_acc1"}
