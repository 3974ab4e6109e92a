"""f16 mixed precision with dynamic loss scaling
(--of-pipeline=cpu,train=adamw,amp=f16): matrix products in f16, the
backward pass seeded by the loss scale, steps with non-finite gradients
skipped, the scale halved after each and doubled after a window of good
steps (PyTorch's GradScaler). The MLP of test_training.py, on 1 rank and
on 2 ranks with Megatron tensor parallelism (there the test of whether the
gradients are finite sums squares over sharded gradients across ranks).

- Skipping: started at 2^40, the f16 backward pass overflows; each such
  step leaves the parameters and AdamW's state unchanged (the loss repeats)
  and halves the scale, until it fits. From there the run must equal, loss
  for loss and weight for weight, a run started at the scale it settled on
  (a power-of-two scale is exact in f16 away from overflow and underflow,
  and the skipped steps did not advance AdamW's step count), including any
  later skip (the parameters may move to where that scale overflows
  again).
- Growth: started at 2^0 with a window of 3, ten good steps double the
  scale three times and leave one good step counted.
- Accuracy: the f16 curve tracks the float64 JAX reference of the same
  AdamW loop within F16_TOL of the initial loss (f16 has an 11-bit
  significand: 4.9e-4 relative rounding per element). Measured over 36
  seeds: 8.4e-5 to 2.9e-4 for 33, then 6.2e-4, 9.1e-4 and 2.09e-3
  (OF_TEST_SEED=5225795699554174342, with AdamW's epsilon at 1e-6 or
  1e-8 alike; not analysed further); the tolerance is 4e-3, twice that
  seed's. A step skipped for
  overflow (large initial logits can overflow f16 at 2^16) delays the
  curve by a step: the reference is compared delayed by the skipped steps,
  whose number the final state must confirm.
"""

import re
import shutil

import numpy as np
import pytest

from ofrun import _run, check, compile_program, tool

jax = pytest.importorskip("jax")
from test_training import (ADAMW_EPSILON, BATCH, DIMS, LAYOUTS, OPTIMIZERS,  # noqa: E402
                           jax_loss, mlp_program, reference_train)

ADAMW, LR = OPTIMIZERS["adamw"]
F16_TOL = 4e-3
STATE = ("loss_scale_log2", "loss_scale_good_steps", "adam_step")


def train(layout, options, steps, inputs, tmp_path, name):
    """Compiles the MLP's f16 training step with `options`, runs `steps`
    steps on one batch; returns the losses and the final state."""
    grid, dist = LAYOUTS[layout]
    if grid and shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    work = tmp_path / name
    work.mkdir()
    plan = compile_program(mlp_program(grid, dist), work,
                           pipeline=f"cpu,{ADAMW},amp=f16{options}")
    assert "xf16>" in (work / "prog.lowered.mlir").read_text(), "no f16 products"
    args = []
    for key, value in inputs.items():
        np.save(work / f"{key}.npy", value)
        args += ["--input", f"{key}={work / f'{key}.npy'}"]
    nproc = int(np.prod(grid)) if grid else 1
    out = _run([tool("of-run")] + (["-n", str(nproc)] if nproc > 1 else []) + [
        str(plan), "--entry", "mlp_train_step", "--steps", str(steps), "--set", f"lr={LR}",
        "--output-dir", str(work / "out")] + args).decode()
    losses = [float(v) for v in re.findall(r"^step \d+/\d+  loss (\S+)", out, re.M)]
    assert len(losses) == steps, out
    final = {n: np.load(work / "out" / f"{n}.npy")
             for n in (*STATE, "w0", "b0", "w1", "b1")}
    return losses, final


def mlp_inputs(rng):
    return {"x": rng.normal(size=(BATCH, DIMS[0])).astype(np.float32),
            "y": rng.integers(0, DIMS[2], size=BATCH).astype(np.int64),
            "w0": (rng.normal(size=(DIMS[0], DIMS[1])) * 0.3).astype(np.float32),
            "b0": np.zeros(DIMS[1], np.float32),
            "w1": (rng.normal(size=(DIMS[1], DIMS[2])) * 0.3).astype(np.float32),
            "b1": np.zeros(DIMS[2], np.float32)}


@pytest.mark.parametrize("layout", ["1-rank", "megatron-2"])
def test_overflow_skips_steps(layout, rng, tmp_path):
    inputs = mlp_inputs(rng)
    steps = 40
    losses, final = train(layout, ",loss-scale-log2=40", steps, inputs, tmp_path, "high")
    skipped = -int(final["loss_scale_log2"])
    # A skipped step leaves the parameters, so the next loss repeats: the
    # run starts with `lead` skips. Later steps may overflow again at the
    # settled scale once the parameters have moved (seen on megatron-2:
    # four good steps, then one more skip).
    lead = next(i for i in range(steps - 1) if losses[i + 1] != losses[i])
    later = [i for i in range(lead, steps - 1) if losses[i + 1] == losses[i]]
    print(f"{layout}: {skipped} steps skipped ({lead} at the start, later at {later}), "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    assert 1 <= lead <= skipped <= steps - 10, f"{skipped} steps skipped (the scale started at 2^40)"
    assert skipped - lead >= len(later), "fewer skips counted than the losses show"
    assert final["adam_step"] == steps - skipped, "a skipped step advanced AdamW's count"
    last_skip = later[-1] if later else lead - 1
    assert final["loss_scale_good_steps"] == steps - 1 - last_skip, (
        "the good-step count is not the steps since the last skip")
    assert losses[-1] < 0.5 * losses[0], losses

    # From the first good step on, the run equals one started at the scale
    # the leading skips settled on, later skips included (the leading ones
    # changed nothing, and the same scale sees the same parameters).
    settled, final2 = train(layout, f",loss-scale-log2={40 - lead}", steps - lead,
                            inputs, tmp_path, "settled")
    np.testing.assert_array_equal(np.array(losses[lead:]), np.array(settled),
                                  "the run after the skipped steps differs from one "
                                  "started at the settled scale")
    for name in (*STATE, "w0", "b0", "w1", "b1"):
        expected = final[name] + lead if name == "loss_scale_log2" else final[name]
        np.testing.assert_array_equal(expected, final2[name], name)


def test_scale_grows_after_window(rng, tmp_path):
    _, final = train("1-rank", ",loss-scale-log2=0,loss-scale-window=3", 10,
                     mlp_inputs(rng), tmp_path, "grow")
    assert final["loss_scale_log2"] == 3, final
    assert final["loss_scale_good_steps"] == 1, final
    assert final["adam_step"] == 10, final


def test_f16_tracks_reference(rng, tmp_path):
    inputs = mlp_inputs(rng)
    steps = 20
    losses, final = train("1-rank", "", steps, inputs, tmp_path, "track")
    params = {k: inputs[k] for k in ("w0", "b0", "w1", "b1")}
    data = (jax.numpy.asarray(inputs["x"], jax.numpy.float64), jax.numpy.asarray(inputs["y"]))
    ref, ref_params = reference_train(jax_loss, "adamw", params, lambda s: data, LR, steps,
                                      epsilon=ADAMW_EPSILON)
    # A step skipped for overflow (large initial logits can overflow f16 at
    # 2^16) repeats the loss of the step before and delays the reference
    # curve by one step; the final AdamW state must say as many.
    skipped = [i for i in range(1, steps) if losses[i] == losses[i - 1]]
    assert len(skipped) == -int(final["loss_scale_log2"]) == steps - int(final["adam_step"])
    delayed = [ref[i - sum(1 for j in skipped if j <= i)] for i in range(steps)]
    drift = max(abs(g - r) for g, r in zip(losses, delayed)) / ref[0]
    worst = max(abs(g - r) / abs(r) for g, r in zip(losses, delayed))
    print(f"f16 AMP: loss {losses[0]:.4f} -> {losses[-1]:.4f}, drift {drift:.2e} of the "
          f"initial loss; {len(skipped)} steps skipped")
    assert worst > 1e-6, "the curve is fp32's: f16 is not in effect"
    assert drift <= F16_TOL, f"f16 AMP drifts {drift:.2e} of the initial loss"
    if not skipped:
        check(final["w1"], np.asarray(ref_params["w1"]), 5e-2, "trained w1")
