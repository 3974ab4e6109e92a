"""Whole-model gradient checks (model_gradcheck.py): one compiled training
step's parameter updates, and those of three steps of SGD with and without
momentum and weight decay (each from the weights the step before left),
against PyTorch in float64, for models written against PyTorch and loaded
under of with only their imports changed:
torchvision's ResNet-18 (test/Python/models/resnet.py), the nanoGPT of
examples/python/nanogpt.py, an MLP and a pooling convnet (models/small.py).

The sizes cross the thresholds where the CPU pipeline changes how it
computes (read from the code):
- Parallel.h kMinWorkPerThread (16384 elements): generated kernels below it
  run on one thread, above it split over threads (ResNet batch 32 at 16x16
  has 2048-element tensors in layer4, batch 16 at 64x64 1M-element ones).
- OneDnn.cpp: convolutions, and pooling gradients whose windows overlap,
  are oneDNN steps; oneDNN picks its kernels by channel blocking (8 or 16
  channels; widths 8, 12, 16 and 64 here) and by instruction set (the
  machine's AVX-512, and AVX with its gemm-based convolutions in a
  subprocess: the kernels the ResNet issue was filed on).
- OFToLinalg.cpp windowsTile: the gradient of 2x2 max windows that tile the
  input is a generated kernel, of overlapping windows oneDNN's (PoolNet,
  ResNet's 3x3 stride-2 max pool).
- Vectorised loops and their remainders: spatial extents 40 -> 20, 10, 5,
  3, 2 and sequence lengths 7 and 16.
- Batch norm with one sample (batch 1: statistics over space only) and
  with 1x1 maps (statistics over the batch only); each sees 16 values or
  more (over 4, float32 itself is 1e-4 off float64, PyTorch's as of's).
CpuExecutor.cpp kSmallGemmMacs (2^24 multiply-adds per batched gemm) is
not crossed: the GPT's attention gemms stay below it at these sizes.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from model_gradcheck import assert_close, check_model  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
from train_gpt import corpus, load_model  # noqa: E402

MODELS = os.path.join(HERE, "models")
TOL = 1e-4
# One step at lr 1 gives the gradient itself as the update; the three-step
# runs use a rate at which this ResNet trains (at 0.1 with momentum its loss
# goes 2.8 -> 6.4 -> 9.1, and float32 runs, PyTorch's as much as of's, leave
# float64 by 2e-1 at the third step: a diverging trajectory amplifies
# rounding itself, not only kinks).
ONE_STEP = ("sgd", dict(lr=1.0))
SGD = ("sgd", dict(lr=0.01))
SGD_MOMENTUM_WD = ("sgd", dict(lr=0.01, momentum=0.9, weight_decay=1e-4))


def resnet(width):
    def build(framework):
        return load_model(framework, os.path.join(MODELS, "resnet.py"))["resnet18"](
            width=width)
    return build


def images(rng, steps, batch, size, classes=10):
    return [((rng.standard_normal((batch, 3, size, size)).astype(np.float32),),
             rng.integers(0, classes, batch)) for _ in range(steps)]


def run(label, build, batches, optimizer, seed, loss="cross_entropy"):
    reports, state = check_model(build, batches, optimizer=optimizer, loss=loss, tol=TOL,
                                 seed=seed)
    assert_close(reports, state, TOL, label)
    return reports


RESNET_CASES = {
    # the sizes of the issue's table (one step, lr 1)
    "b16-64x64": (16, 64, 64, 1, ONE_STEP),
    "b16-32x32": (16, 32, 64, 1, ONE_STEP),
    "b4-64x64": (4, 64, 64, 1, ONE_STEP),
    # batch 1 (batch norm over space only), one 16-channel block; at 64x64
    # layer4's norms see 4 values each, where float32 is 1e-4 off float64
    # in PyTorch as in of (OF_TEST_SEED=3632844411184025171: PyTorch 1.4e-4,
    # of 1.3e-4): at 128x128 they see 16
    "b1-128x128-w16": (1, 128, 16, 1, ONE_STEP),
    # odd sizes: 12 channels (no whole 8- or 16-channel block), spatial
    # 40 -> 20, 10, 5, 3, 2
    "b3-40x40-w12": (3, 40, 12, 1, ONE_STEP),
    # a large batch of small maps: layer3 and layer4 are 1x1
    "b32-16x16-w8": (32, 16, 8, 1, ONE_STEP),
    # three steps, plain and with momentum and weight decay
    "b16-32x32-sgd-3": (16, 32, 64, 3, SGD),
    "b16-32x32-momentum-wd-3": (16, 32, 64, 3, SGD_MOMENTUM_WD),
}


@pytest.mark.parametrize("case", RESNET_CASES)
def test_resnet18(rng, case):
    batch, size, width, steps, optimizer = RESNET_CASES[case]
    run(f"resnet18 {case}", resnet(width), images(rng, steps, batch, size), optimizer,
        seed=int(rng.integers(2 ** 31)))


ISSUE_CASE = r'''
import sys
sys.path.insert(0, {here!r})
import numpy as np
from test_gradcheck_models import resnet, run, ONE_STEP
rng = np.random.default_rng(0)
x = rng.standard_normal((16, 3, 64, 64)).astype(np.float32)
y = rng.integers(0, 10, 16)
reports = run("resnet18 issue", resnet(64), [((x,), y)], ONE_STEP, seed=0)
print("FLIPS", [str(f) for f in reports[0].flips])
'''


def test_resnet18_issue_case_on_avx():
    """The issue's case (torchvision's init from torch.manual_seed(0), NumPy
    default_rng(0) images, batch 16 at 64x64), with oneDNN held to AVX as on
    the machine the issue was filed on: 44 of 62 gradients were off by up to
    3.9e-2 from float64. The cause is one ReLU input of layer3.1's output,
    1.2e-6 from 0 in float64, which float32 rounding puts on the other side
    (PyTorch's float32 stays on float64's side here by chance; of's with
    oneDNN's AVX-512 kernels too). With that element moved across, every
    gradient agrees within 1.5e-5."""
    env = dict(os.environ, DNNL_MAX_CPU_ISA="AVX")
    proc = subprocess.run([sys.executable, "-c", ISSUE_CASE.format(here=HERE)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=600)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout
    flips = next(line for line in proc.stdout.splitlines() if line.startswith("FLIPS"))
    assert "layer3.1.relu" in flips and "[14, 19, 2, 3]" in flips, flips


def test_check_catches_a_wrong_update(rng):
    """The harness is not vacuous: an update 1% off (here a learning rate 1%
    off on the tested side) fails it, though kink flips are tried."""
    reports, state = check_model(resnet(8), images(rng, 1, 4, 32), optimizer=("sgd", dict(lr=1.0)),
                                 tested_optimizer=("sgd", dict(lr=1.01)), tol=TOL,
                                 seed=int(rng.integers(2 ** 31)))
    with pytest.raises(AssertionError, match="parameter updates off"):
        assert_close(reports, state, TOL, "wrong lr")


GPT_CASES = {
    # batch, sequence length, n_embd, n_head, steps, optimizer
    "b8-t16": (8, 16, 64, 4, 1, ONE_STEP),
    "b1-t7-e48": (1, 7, 48, 3, 1, ONE_STEP),
    "b3-t16-momentum-wd-3": (3, 16, 64, 4, 3, SGD_MOMENTUM_WD),
}


@pytest.mark.parametrize("case", GPT_CASES)
def test_nanogpt(rng, case):
    batch, t, embd, heads, steps, optimizer = GPT_CASES[case]

    def build(framework):
        ns = load_model(framework)
        return ns["GPT"](ns["GPTConfig"](block_size=16, n_embd=embd, n_head=heads))
    tokens = corpus(64)
    batches = []
    for _ in range(steps):
        starts = rng.integers(0, len(tokens) - t - 1, size=batch)
        x = np.stack([tokens[s:s + t] for s in starts])
        y = np.stack([tokens[s + 1:s + 1 + t] for s in starts])
        batches.append(((x,), y))
    run(f"nanogpt {case}", build, batches, optimizer, seed=int(rng.integers(2 ** 31)),
        loss=None)


def small(name, *args):
    def build(framework):
        return load_model(framework, os.path.join(MODELS, "small.py"))[name](*args)
    return build


@pytest.mark.parametrize("batch,optimizer", [(1, ONE_STEP), (7, ONE_STEP),
                                             (32, SGD_MOMENTUM_WD)])
def test_mlp(rng, batch, optimizer):
    steps = 3 if optimizer is SGD_MOMENTUM_WD else 1
    batches = [((rng.standard_normal((batch, 32)).astype(np.float32),),
                rng.integers(0, 10, batch)) for _ in range(steps)]
    run(f"mlp b{batch}", small("MLP"), batches, optimizer, seed=int(rng.integers(2 ** 31)))


@pytest.mark.parametrize("batch,size,channels", [(2, 12, 16), (8, 20, 12)])
def test_poolnet(rng, batch, size, channels):
    run(f"poolnet b{batch} {size}x{size} c{channels}", small("PoolNet", channels),
        images(rng, 1, batch, size), ONE_STEP, seed=int(rng.integers(2 ** 31)))
