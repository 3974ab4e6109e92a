"""Public PyTorch training programs, written by others, run under of with
only their import lines changed, against PyTorch from the same weights.

The programs are copied into programs/ (each with its license, source URL
and commit, and a note of what was deleted); `load` executes a file as
written (torch) or with every `torch` import line changed to `of`'s, and
nothing else. Data are small deterministic NumPy arrays of the programs'
shapes instead of their downloads; sizes and step counts are cut down.
Each test runs the program's own training loop for a few steps in torch
and in of (eagerly, and with the model under `of.compile(model)`), from
torch's initial weights copied into of's model, and compares the loss of
every step and the trained weights.

Dropout is switched off (p = 0) in both: the masks come from different
generators. An API a program needs that of lacks marks its test
xfail(strict) naming that API; the mark lifts itself once the API exists,
so the test then has to pass.
"""

import os
import re
import sys
import types

import numpy as np
import pytest

import of

torch = pytest.importorskip("torch")

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

# float32 against float32 with other summation orders: the relative error
# of each step's loss, and of the trained weights (relative to each
# tensor's largest element)
LOSS_RTOL = 1e-5
WEIGHT_RTOL = 1e-4

_IMPORT = re.compile(r"^(import torch(\.[\w.]+( as \w+)?)?|from torch(\.[\w.]+)? import .*)$",
                     re.M)


def _of_imports(source, path):
    """`source` with its torch import lines changed to of's: `import torch`
    -> `import of as torch`, `import torch.X as Y` -> `import of.X as Y`,
    `import torch.X` -> `import of.X, of as torch`,
    `from torch.X import Y` -> `from of.X import Y`. Any other line naming
    a torch module in an import is an error."""
    def change(match):
        line = match.group(0)
        if line == "import torch":
            return "import of as torch"
        if " as " not in line and line.startswith("import torch."):
            # `import torch.onnx` binds `torch`: of's submodule, then of as torch
            return line.replace("torch", "of", 1) + ", of as torch"
        return line.replace("torch", "of", 1)
    changed = _IMPORT.sub(change, source)
    left = [line for line in changed.splitlines()
            if re.match(r"\s*(import|from)\s+torch\b", line)]
    assert not left, f"{path}: import lines that load can not change: {left}"
    return changed


def load(framework, *files, flat=False, preset=None):
    """The program files (paths under programs/, dependencies first) as
    modules, executed as written (framework "torch") or with their torch
    imports changed to of's ("of"). A file in a folder is a module of the
    package named after the folder ("mingpt/model.py" is mingpt.model), or
    with `flat` a top-level module named after the file (a script folder
    whose files `import data`), so the files import each other as upstream;
    each framework gets its own copies (sys.modules holds them only while
    they load). `preset` gives globals of the last file before it runs
    (what a deleted argument parser made)."""
    loaded, saved = {}, {}

    def register(name, module):
        saved.setdefault(name, sys.modules.get(name))
        sys.modules[name] = module

    try:
        for file in files:
            path = os.path.join(PROGRAMS, file)
            name = os.path.splitext(os.path.basename(file) if flat else file)[0]
            name = name.replace("/", ".")
            is_package = name.endswith(".__init__")
            if is_package:
                name = name[:-len(".__init__")]
            package = name.rpartition(".")[0]
            if package and package not in loaded:
                loaded[package] = types.ModuleType(package)
                loaded[package].__path__ = []
                register(package, loaded[package])
            module = types.ModuleType(name)
            module.__file__ = path
            if is_package:
                module.__path__ = []
            source = open(path).read()
            if framework == "of":
                source = _of_imports(source, path)
            register(name, module)
            if preset and file == files[-1]:
                module.__dict__.update(preset)
            exec(compile(source, path, "exec"), module.__dict__)
            if package:
                setattr(loaded[package], name.rpartition(".")[2], module)
            loaded[name] = module
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return loaded


def test_load_changes_only_import_lines():
    source = ("import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
              "from torch.utils.data.dataloader import DataLoader\nimport torch.onnx\n"
              "from torchvision import datasets\nx = torch.zeros(1)\n    import torch\n")
    assert _of_imports(source.replace("    import torch\n", ""), "p") == (
        "import of as torch\nimport of.nn as nn\nfrom of.nn import functional as F\n"
        "from of.utils.data.dataloader import DataLoader\nimport of.onnx, of as torch\n"
        "from torchvision import datasets\nx = torch.zeros(1)\n")
    with pytest.raises(AssertionError, match="import lines"):
        _of_imports(source, "p")


class Recorded:
    """`fn`, keeping what it returns (the loss a program's loop computes
    and only prints)."""

    def __init__(self, fn):
        self.fn, self.results = fn, []

    def __call__(self, *args, **kwargs):
        out = self.fn(*args, **kwargs)
        self.results.append(out)
        return out


class Patched:
    """`module` with some attributes replaced (a program's `F` whose
    nll_loss is Recorded)."""

    def __init__(self, module, **replaced):
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name):
        return getattr(self._module, name)


def weights(model):
    """A model's state_dict as NumPy arrays (copies)."""
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def assert_losses_close(of_losses, torch_losses, rtol=LOSS_RTOL):
    o, t = np.asarray(of_losses, np.float64), np.asarray(torch_losses, np.float64)
    assert o.shape == t.shape, (o, t)
    err = np.abs(o - t) / np.abs(t)
    assert err.max() <= rtol, f"losses {o} against torch's {t}: relative error {err}"
    return err.max()


def assert_weights_close(of_model, torch_model, rtol=WEIGHT_RTOL):
    own = of_model.state_dict()
    for name, t in torch_model.state_dict().items():
        o, t = own[name].numpy(), t.detach().numpy()
        scale = max(np.abs(t).max(), 1e-30)
        err = np.abs(o.astype(np.float64) - t).max() / scale
        assert err <= rtol, f"{name}: relative error {err}"


def needs(*apis):
    """xfail(strict) while of lacks one of `apis` ("of.flatten",
    "of.optim.Adadelta", "of.Tensor.argmax"): the test fails the way a
    missing attribute fails, and must pass once each exists."""
    missing = []
    for api in apis:
        obj = of
        for part in api.split(".")[1:]:
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(api)
    return pytest.mark.xfail(bool(missing), raises=AttributeError, strict=True,
                             reason=f"of lacks {', '.join(missing)}")


def _sampler_draws_lazily():
    """Whether RandomSampler(replacement=True) draws its indices as they
    are taken (as PyTorch's, 32 at a time) rather than all at once:
    minGPT's trainer asks for int(1e10) of them."""
    sampler = of.utils.data.RandomSampler(range(2), replacement=True, num_samples=2 ** 62)
    try:
        next(iter(sampler))
    except (MemoryError, ValueError):
        return False
    return True




# -- pytorch/examples mnist/main.py ----------------------------------------------

def mnist_data(rng, n):
    """MNIST-shaped batches: 1x28x28 images normalised as the program's
    transform does, labels 0..9."""
    images = ((rng.random((n, 1, 28, 28)) - 0.1307) / 0.3081).astype(np.float32)
    return images, rng.integers(0, 10, n)


def run_mnist(fw, compiled, images, labels, initial=None, epochs=2, batch=4):
    """main()'s loop at its default settings: Net, Adadelta(lr=1.0),
    StepLR(step_size=1, gamma=0.7), train() per epoch (here 2 epochs of 2
    batches of 4)."""
    ns = load(fw, "mnist/main.py")["mnist.main"]
    mod = torch if fw == "torch" else of
    losses = Recorded(ns.F.nll_loss)
    ns.F = Patched(ns.F, nll_loss=losses)
    model = ns.Net()
    model.dropout1.p = model.dropout2.p = 0.0
    if initial is not None:
        model.load_state_dict(initial)
    initial = weights(model)
    net = model
    if compiled:
        model = of.compile(model)
    data = mod.utils.data
    loader = data.DataLoader(data.TensorDataset(mod.tensor(images), mod.tensor(labels)),
                             batch_size=batch)
    opt = ns.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = ns.StepLR(opt, step_size=1, gamma=0.7)
    args = types.SimpleNamespace(log_interval=10, dry_run=False)
    for epoch in range(1, epochs + 1):
        ns.train(args, model, "cpu", loader, opt, epoch)
        scheduler.step()
    return net, initial, [float(loss.item()) for loss in losses.results]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@needs("of.flatten", "of.optim.Adadelta")
def test_mnist(rng, compiled):
    images, labels = mnist_data(rng, 8)
    torch.manual_seed(0)
    reference, initial, torch_losses = run_mnist("torch", False, images, labels)
    model, _, of_losses = run_mnist("of", compiled, images, labels, initial)
    assert len(of_losses) == 4
    assert_losses_close(of_losses, torch_losses)
    assert_weights_close(model, reference)


def _sum_counts_bools():
    """Whether a bool tensor's sum() counts (PyTorch: an int64 result), as
    test()'s `pred.eq(target.view_as(pred)).sum()` needs."""
    try:
        return of.tensor(np.array([True, False, True])).sum().item() == 2
    except of.CompileError:
        return False


@needs("of.flatten", "of.Tensor.argmax", "of.Tensor.eq")
def test_mnist_evaluation(rng, capsys):
    """test(): the summed nll_loss and the accuracy it prints."""
    if not _sum_counts_bools():
        pytest.xfail("of: Tensor.sum() of a bool tensor does not compile (of.reduce_sum takes "
                     "numbers; PyTorch sums bools and integers in int64)")
    images, labels = mnist_data(rng, 8)
    printed = []
    torch.manual_seed(0)
    reference = None
    for fw in ("torch", "of"):
        ns = load(fw, "mnist/main.py")["mnist.main"]
        mod = torch if fw == "torch" else of
        model = ns.Net()
        if reference is None:
            reference = weights(model)
        else:
            model.load_state_dict(reference)
        data = mod.utils.data
        loader = data.DataLoader(data.TensorDataset(mod.tensor(images), mod.tensor(labels)),
                                 batch_size=4)
        capsys.readouterr()
        ns.test(model, "cpu", loader)
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1]


# -- karpathy/minGPT: mingpt/{model,trainer}.py with projects/chargpt ------------

MINGPT = ("mingpt/__init__.py", "mingpt/utils.py", "mingpt/model.py", "mingpt/trainer.py",
          "chargpt.py")


class InOrder:
    """A dataset served in order, whatever index the sampler asks for: the
    k-th access returns item k. The trainer samples indices at random, from
    generators that differ between torch and of; this keeps the batches
    alike."""

    def __init__(self, dataset):
        self.dataset, self.served = dataset, 0

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        item = self.dataset[self.served % len(self.dataset)]
        self.served += 1
        return item


def run_mingpt(fw, compiled, text, initial=None, steps=4):
    """chargpt's setup (get_config, CharDataset) at gpt-nano-like sizes,
    then Trainer.run() with its AdamW groups and clip_grad_norm_."""
    mods = load(fw, *MINGPT)
    chargpt = mods["chargpt"]
    config = chargpt.get_config()
    config.data.block_size = 16
    dataset = chargpt.CharDataset(config.data, text)
    config.model.model_type = None
    config.model.n_layer, config.model.n_head, config.model.n_embd = 2, 2, 32
    config.model.embd_pdrop = config.model.resid_pdrop = config.model.attn_pdrop = 0.0
    config.model.vocab_size = dataset.get_vocab_size()
    config.model.block_size = dataset.get_block_size()
    config.trainer.device = "cpu"
    config.trainer.num_workers = 0
    config.trainer.batch_size = 4
    config.trainer.max_iters = steps
    model = mods["mingpt.model"].GPT(config.model)
    if initial is not None:
        model.load_state_dict(initial)
    initial = weights(model)
    net = model
    if compiled:
        model = of.compile(model)
    trainer = mods["mingpt.trainer"].Trainer(config.trainer, model, InOrder(dataset))
    losses = []
    trainer.add_callback("on_batch_end", lambda t: losses.append(float(t.loss.item())))
    trainer.run()
    return net, initial, losses


def mingpt_text():
    """A text to learn: minGPT's own model.py."""
    return open(os.path.join(PROGRAMS, "mingpt", "model.py")).read()[:3000]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@needs("of.pow")
def test_mingpt(compiled):
    if not _sampler_draws_lazily():  # not run: the trainer's sampler would take 75 GiB
        pytest.xfail("of.utils.data.RandomSampler(replacement=True, num_samples=int(1e10)) "
                     "draws every index at once (RandomSampler.__iter__)")
    text = mingpt_text()
    torch.manual_seed(0)
    reference, initial, torch_losses = run_mingpt("torch", False, text)
    model, _, of_losses = run_mingpt("of", compiled, text, initial)
    assert len(of_losses) == 4
    assert_losses_close(of_losses, torch_losses)
    # The key bias's gradient is zero in exact arithmetic (softmax ignores
    # a constant added to a row of scores): in float32 it is rounding noise,
    # which AdamW divides by about eps, so that bias differs by up to 2e-4
    # of its largest element (1e-6 for every other tensor).
    assert_weights_close(model, reference, rtol=1e-3)


# -- pytorch/examples word_language_model: data.py, model.py, main.py -------------

WORD_LM = ("word_language_model/data.py", "word_language_model/model.py",
           "word_language_model/main.py")


def word_corpus(folder, rng):
    """train/valid/test.txt of words from a 24-word vocabulary, sized so
    that every bptt chunk is whole: 3 training batches of 10 x 3 tokens,
    one validation chunk of 10 x 3 (<eos> ends each line, as in
    Wikitext). Training and evaluation batches have the same size (main.py's
    eval_batch_size, 10), so their eager ops share compiled signatures."""
    words = [f"w{i}" for i in range(24)]
    for name, tokens in (("train.txt", 10 * 10), ("valid.txt", 4 * 10), ("test.txt", 4 * 10)):
        lines, count = [], 0
        while count < tokens:
            n = min(int(rng.integers(3, 9)), tokens - count) - 1
            lines.append(" ".join(words[i] for i in rng.integers(0, len(words), max(n, 0))))
            count += max(n, 0) + 1
        with open(os.path.join(folder, name), "w", encoding="utf8") as f:
            f.write("\n".join(lines) + "\n")


def run_word_lm(fw, kind, compiled, folder, initial=None, epochs=2):
    """main.py at small sizes (the values its argument parser would give),
    then its epoch loop: train() (SGD through p.data.add_, clip_grad_norm_,
    the hidden state carried across batches, detached) and evaluate().
    Returns the model, its initial weights, the criterion's losses with
    evaluate()'s results, and the compiled forward's compile count."""
    args = types.SimpleNamespace(
        data=folder, model=kind, emsize=16, nhid=16, nlayers=2, lr=20.0, clip=0.25,
        epochs=epochs, batch_size=10, bptt=3, dropout=0.0, tied=True, seed=1111,
        log_interval=200, save=os.path.join(folder, "model.pt"), onnx_export="", nhead=2,
        dry_run=False, accel=False, use_optimizer=False)
    main = load(fw, *WORD_LM, flat=True, preset={"args": args})["main"]
    if initial is not None:
        main.model.load_state_dict(initial)
    initial = weights(main.model)
    net = main.model
    if compiled:
        main.model = of.compile(main.model)
    losses = Recorded(main.criterion)
    main.criterion = losses
    evaluations = []
    for epoch in range(1, epochs + 1):
        main.epoch = epoch
        main.train()
        evaluations.append(main.evaluate(main.val_data))
    results = [float(loss.item()) for loss in losses.results] + evaluations
    return net, initial, results, main.model.compiles if compiled else 0


def _tuple_arguments_are_inputs():
    """Whether tensors in a tuple argument of a compiled function are its
    inputs, rather than constants of the plan keyed by their repr (a
    compile per value: the LSTM's hidden state (h, c) changes every step)."""
    f = of.compile(lambda x, hc: x + hc[0])
    x = of.zeros(3)
    f(x, (of.zeros(3),))
    return float(f(x, (of.ones(3),)).sum().item()) == 3.0 and f.compiles == 1


@pytest.mark.parametrize("kind,compiled", [("LSTM", False), ("LSTM", True), ("GRU", True)])
def test_word_language_model(tmp_path, rng, kind, compiled):
    if kind == "LSTM" and compiled and not _tuple_arguments_are_inputs():
        pytest.xfail("of.compile: tensors in a tuple argument (the LSTM's hidden state) are "
                     "constants of the plan, keyed by their repr (_jit._signature)")
    word_corpus(str(tmp_path), rng)
    reference, initial, torch_losses, _ = run_word_lm("torch", kind, False, str(tmp_path))
    model, _, of_losses, compiles = run_word_lm("of", kind, compiled, str(tmp_path), initial)
    # per epoch: 3 training steps, then evaluate() (1 chunk) and its result
    assert len(of_losses) == 2 * (3 + 2)
    assert_losses_close(of_losses, torch_losses)
    assert_weights_close(model, reference)
    if compiled:  # one forward for training batches, one for evaluation's
        assert compiles == 2


@pytest.mark.parametrize("kind,options", [
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=3)),
    ("GRU", dict(batch_first=True, bias=False)),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
])
def test_recurrent_layers(rng, kind, options):
    """nn.RNN/LSTM/GRU (of's a loop of of ops) against PyTorch's: outputs,
    final states, input and parameter gradients, with the options the
    language model does not use."""
    layers = {fw: getattr(fw.nn, kind)(5, 6, **options) for fw in (torch, of)}
    assert list(layers[of].state_dict()) == list(layers[torch].state_dict())
    layers[of].load_state_dict(weights(layers[torch]))
    x_ = rng.standard_normal((3, 4, 5)).astype(np.float32)
    results = []
    for fw in (torch, of):
        x = fw.tensor(x_, requires_grad=True)
        out, state = layers[fw](x)
        h = state[0] if kind == "LSTM" else state
        ((out * out).sum() + (h * 3.0).sum()).backward()
        results.append([out, h, x.grad] + [p.grad for p in layers[fw].parameters()])
    for t, o in zip(*results):
        t = t.detach().numpy()
        assert np.abs(o.numpy() - t).max() <= 1e-5 * np.abs(t).max()


@pytest.mark.parametrize("case", ["weight", "ignore", "spatial"])
def test_nll_loss(rng, case):
    """F.nll_loss / nn.NLLLoss (mnist's and the language model's loss)
    against PyTorch: values and input gradients, with class weights (the
    module's, mean), an ignored class (per element) and [N, C, d...]
    inputs (sum)."""
    x_ = rng.standard_normal((6, 5)).astype(np.float32)
    t_ = rng.integers(0, 5, 6)
    kwargs = {}
    if case == "weight":
        kwargs["weight"] = rng.random(5).astype(np.float32)
    elif case == "ignore":
        t_[[1, 3]] = t_[0]
        kwargs.update(ignore_index=int(t_[0]), reduction="none")
    else:
        x_ = rng.standard_normal((2, 5, 3, 4))
        t_ = rng.integers(0, 5, (2, 3, 4))
        kwargs["reduction"] = "sum"
    results = []
    for fw in (torch, of):
        x = fw.tensor(x_, requires_grad=True)
        args = {k: fw.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        loss = fw.nn.NLLLoss(**args)(x, fw.tensor(t_)) if case == "weight" else \
            fw.nn.functional.nll_loss(x, fw.tensor(t_), **args)
        scale = fw.tensor(np.arange(1, loss.numel() + 1, dtype=x_.dtype).reshape(loss.shape))
        (loss * scale).sum().backward()
        results.append((loss, x.grad))
    for t, o in zip(*results):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_nll_loss_errors():
    x = of.zeros(4, 3)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but "
                                           "got Int"):
        of.nn.functional.nll_loss(x, of.zeros(4, dtype=of.int32))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target "
                                         r"batch_size \(3\)"):
        of.nn.functional.nll_loss(x, of.zeros(3, dtype=of.int64))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 3 "
                                           "classes or no classes"):
        of.nn.functional.nll_loss(x, of.zeros(4, dtype=of.int64), weight=of.ones(2))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        of.nn.functional.nll_loss(x, of.zeros(4, dtype=of.int64), reduction="bad")
    with pytest.raises(RuntimeError, match=r"index 3 out of range \[0, 3\)"):
        of.nn.functional.nll_loss(x, of.tensor(np.array([0, 1, 2, 3]))).item()
    f = of.compile(lambda a, b: of.nn.functional.nll_loss(a, b))
    with pytest.raises(RuntimeError, match=r"index -1 out of range \[0, 3\)"):
        f(x, of.tensor(np.array([0, 1, -1, 2]))).item()
