"""Training on a real data set: scikit-learn's bundled handwritten digits
(1797 8x8 images, 10 classes; sklearn/datasets/data/digits.csv.gz, no
download). An MLP 64-128-10, and a small convolutional network (3x3
convolution to 16 channels, ReLU, 2x2 max pooling, linear), trained by the
compiled AdamW step for 1000 steps of 64 images (about 45 epochs) (`of-run --steps --batch`,
1 rank and 2 ranks data parallel), then the plan's evaluation entry,
which loads only the parameters from the checkpoint, classifies the 360
held-out images.

Stated target: test accuracy >= 0.95 (a logistic regression on these
pixels gets about 0.95-0.96). Measured over 12 runs with fresh seeds:
0.967-0.992 for both models on 1 and 2 ranks (with 400 steps it was
0.953-0.983, too close to the target). The CNN had 8 channels until a CI
run drew a seed (OF_TEST_SEED=16750647300380959) on which it reached
0.944; over 20 seeds it ranged 0.944-0.992. With 16 channels that seed
gives 0.975, and 6 runs of all six cases plus 10 of the 1-rank CNN
ranged 0.967-0.994.

Some held-out splits are harder than the target allows for: on one CI
seed (OF_TEST_SEED=1339506784703269739, 2-mlp-bf16) OF reached 0.944 in
bf16 and 0.947 in f32, and scikit-learn's MLPClassifier with the same
recipe (128 hidden, Adam lr 0.003, batch 64, L2 1e-4, 45 epochs) 0.944-0.961
over 8 initialisations on that split. So the target is 0.95, or on a split
where scikit-learn's mean over three initialisations is below 0.975, that
mean less 0.025 (9 images; its spread over initialisations was +-0.009).
"""

import math
import shutil

import numpy as np
import pytest

from ofrun import _run, compile_program, tool

datasets = pytest.importorskip("sklearn.datasets")

HIDDEN, CLASSES, BATCH, STEPS, TEST = 128, 10, 64, 1000, 360
CHANNELS = 16  # the CNN's convolution channels, each pooled to 4x4 features
FEATURES = CHANNELS * 16
TARGET = 0.95


REP = "#of.sbp<@p, [B]>"


def t(shape, et="f32", enc=REP):
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{et}, {enc}>"


def digits_program(data_parallel, params, body):
    """@digits (the mean cross-entropy of a batch, parameters of.param) and
    @classify (the logits of the test set, taking the same parameters as
    plain inputs) of one model: `params` lists (ssa, name, shape), and
    body(n, enc) gives the ops from %x ([n, 64]) to the logits %z."""
    grid = "[2]" if data_parallel else "[1]"
    split = "#of.sbp<@p, [S(0)]>" if data_parallel else REP

    def args(param):
        attr = ", of.param" if param else ""
        return ", ".join(f'%{ssa}: {t(shape)} {{of.name = "{name}"{attr}}}'
                         for ssa, name, shape in params)
    return f"""of.placement @p {{device = "cpu", shape = {grid}}}
func.func @digits(%x: {t((BATCH, 64), enc=split)} {{of.name = "x"}}, %y: {t((BATCH,), "i64", split)} {{of.name = "y"}}, {args(True)}) -> ({t(())} {{of.name = "loss"}}) {{
{body(BATCH, split)}  %ce = of.cross_entropy %z, %y : ({t((BATCH, CLASSES), enc=split)}, {t((BATCH,), "i64", split)}) -> {t((BATCH,), enc=split)}
  %l = of.reduce_mean %ce {{axes = array<i64: 0>}} : ({t((BATCH,), enc=split)}) -> tensor<f32>
  %lb = of.boxing %l : tensor<f32> -> {t(())}
  return %lb : {t(())}
}}
func.func @classify(%x: {t((TEST, 64))} {{of.name = "x"}}, {args(False)}) -> ({t((TEST, CLASSES))} {{of.name = "logits"}}) {{
{body(TEST, REP)}  return %z : {t((TEST, CLASSES))}
}}
"""


def mlp_program(data_parallel):
    """linear 64->128, relu, linear 128->10."""
    params = [("w0", "w0", (64, HIDDEN)), ("b0", "b0", (HIDDEN,)),
              ("w1", "w1", (HIDDEN, CLASSES)), ("b1", "b1", (CLASSES,))]

    def body(n, enc):
        h, z = t((n, HIDDEN), enc=enc), t((n, CLASSES), enc=enc)
        return f"""  %m0 = of.matmul %x, %w0 : ({t((n, 64), enc=enc)}, {t((64, HIDDEN))}) -> {h}
  %a0 = of.add %m0, %b0 : ({h}, {t((HIDDEN,))}) -> {h}
  %r0 = of.relu %a0 : ({h}) -> {h}
  %m1 = of.matmul %r0, %w1 : ({h}, {t((HIDDEN, CLASSES))}) -> {z}
  %z = of.add %m1, %b1 : ({z}, {t((CLASSES,))}) -> {z}
"""
    return digits_program(data_parallel, params, body)


def cnn_program(data_parallel):
    """conv 1->16 3x3 (padding 1) + bias, relu, 2x2 max pool, linear 256->10."""
    c, f = CHANNELS, FEATURES
    params = [("k", "conv.weight", (c, 1, 3, 3)), ("kb", "conv.bias", (c,)),
              ("w", "fc.weight", (f, CLASSES)), ("b", "fc.bias", (CLASSES,))]

    def body(n, enc):
        return f"""  %img = of.reshape %x : ({t((n, 64), enc=enc)}) -> {t((n, 1, 8, 8), enc=enc)}
  %c = of.conv2d %img, %k, %kb {{padding = array<i64: 1, 1, 1, 1>}} : ({t((n, 1, 8, 8), enc=enc)}, {t((c, 1, 3, 3))}, {t((c,))}) -> {t((n, c, 8, 8), enc=enc)}
  %r = of.relu %c : ({t((n, c, 8, 8), enc=enc)}) -> {t((n, c, 8, 8), enc=enc)}
  %m = of.max_pool2d %r {{kernel_size = array<i64: 2, 2>}} : ({t((n, c, 8, 8), enc=enc)}) -> {t((n, c, 4, 4), enc=enc)}
  %f = of.reshape %m : ({t((n, c, 4, 4), enc=enc)}) -> {t((n, f), enc=enc)}
  %mm = of.matmul %f, %w : ({t((n, f), enc=enc)}, {t((f, CLASSES))}) -> {t((n, CLASSES), enc=enc)}
  %z = of.add %mm, %b : ({t((n, CLASSES), enc=enc)}, {t((CLASSES,))}) -> {t((n, CLASSES), enc=enc)}
"""
    return digits_program(data_parallel, params, body)


def target_accuracy(images, labels, train, test):
    """TARGET, or a lower one where scikit-learn's MLP with this file's
    recipe finds the split hard (see the module docstring)."""
    import warnings

    from sklearn.neural_network import MLPClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it stops at max_iter on purpose
        reference = np.mean([
            MLPClassifier((HIDDEN,), learning_rate_init=0.003, batch_size=BATCH,
                          alpha=1e-4, max_iter=45, n_iter_no_change=1000,
                          random_state=seed).fit(images[train], labels[train])
            .score(images[test], labels[test]) for seed in range(3)])
    return min(TARGET, reference - 0.025)


def mlp_init(rng):
    return {"w0": rng.normal(size=(64, HIDDEN)) / math.sqrt(64), "b0": np.zeros(HIDDEN),
            "w1": rng.normal(size=(HIDDEN, CLASSES)) / math.sqrt(HIDDEN),
            "b1": np.zeros(CLASSES)}


def cnn_init(rng):
    return {"conv.weight": rng.normal(size=(CHANNELS, 1, 3, 3)) / 3.0,
            "conv.bias": np.zeros(CHANNELS),
            "fc.weight": rng.normal(size=(FEATURES, CLASSES)) / math.sqrt(FEATURES),
            "fc.bias": np.zeros(CLASSES)}


# bf16 mixed precision (--of-amp: matmuls and convolutions in bf16 with f32
# accumulation, everything else f32) reaches the same target.
@pytest.mark.parametrize("nproc,model,amp", [
    (1, "mlp", ""), (1, "cnn", ""), (2, "mlp", ""), (2, "cnn", ""),
    (1, "cnn", "bf16"), (2, "mlp", "bf16")])
def test_digits_accuracy(nproc, model, amp, rng, tmp_path):
    if nproc > 1 and shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    digits = datasets.load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = rng.permutation(len(images))
    test, train = order[:TEST], order[TEST:]
    batches = len(train) // BATCH
    train = train[: batches * BATCH]

    plan = compile_program((mlp_program if model == "mlp" else cnn_program)(nproc > 1), tmp_path,
                           pipeline="cpu,train=adamw,weight-decay=0.0001" +
                           (f",amp={amp}" if amp else ""))
    np.save(tmp_path / "bx.npy", images[train].reshape(batches, BATCH, 64))
    np.save(tmp_path / "by.npy", labels[train].reshape(batches, BATCH))
    init = (mlp_init if model == "mlp" else cnn_init)(rng)
    args = []
    for name, value in init.items():
        np.save(tmp_path / f"{name}.npy", value.astype(np.float32))
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    ckpt = tmp_path / "digits.safetensors"
    cmd = [tool("of-run")] + (["-n", str(nproc)] if nproc > 1 else []) + [
        str(plan), "--entry", "digits_train_step", "--steps", str(STEPS),
        "--set", "lr=0.003", "--batch", f"x={tmp_path / 'bx.npy'}",
        "--batch", f"y={tmp_path / 'by.npy'}", *args,
        "--save-state", str(ckpt), "--output-dir", str(tmp_path / "trained")]
    log = _run(cmd).decode().splitlines()
    losses = [float(line.split()[3]) for line in log if line.startswith("step ")]
    assert len(losses) == STEPS
    assert np.mean(losses[-20:]) < 0.25 * np.mean(losses[:5]), log[:5] + log[-5:]

    np.save(tmp_path / "test_x.npy", images[test])
    _run([tool("of-run")] + (["-n", str(nproc)] if nproc > 1 else []) + [
          str(plan), "--entry", "classify", "--load-state", str(ckpt),
          "--input", f"x={tmp_path / 'test_x.npy'}", "--output-dir", str(tmp_path / "eval")])
    predicted = np.argmax(np.load(tmp_path / "eval" / "logits.npy"), axis=1)
    accuracy = float(np.mean(predicted == labels[test]))
    target = target_accuracy(images, labels, train, test)
    print(f"digits {model}{' ' + amp if amp else ''} test accuracy "
          f"({nproc} rank{'s' if nproc > 1 else ''}): {accuracy:.4f} (target {target:.4f})")
    assert accuracy >= target, (accuracy, target)
