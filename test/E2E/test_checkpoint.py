"""Checkpoints of compiled training (`of-run --save-state/--load-state`):
the state of a training step (parameters and AdamW state) saved as one
safetensors file of global tensors, and training fed one batch per step
(`--batch`).

- Save -> kill -9 -> load -> continue gives exactly (bit for bit) the loss
  sequence and final parameters of an uninterrupted run, on 1 rank and on 2
  and 4 ranks (data parallel, Megatron, 2-D).
- The file is read by the `safetensors` package (an independent reader):
  global tensors equal to the trained parameters of-run writes, with the
  step count in the metadata. A 1-rank checkpoint continues on a Megatron
  2-rank plan (losses within float32 reordering, 1e-5), and an evaluation
  entry that takes only the parameters loads them from it.
- kill -9 during a save leaves the previous checkpoint whole: the test
  repeats kills until one lands mid-save (the temporary file is left
  behind) and checks every surviving checkpoint's contents.
- Corrupt or mismatched checkpoints and bad --batch files fail with a
  message naming the problem.
"""

import math
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from ofrun import ToolError, _run, check, compile_program, tool
from test_training import BATCH, DIMS, LAYOUTS, mlp_program, nproc_of

safetensors_numpy = pytest.importorskip("safetensors.numpy")

STEPS = 8
BATCHES = 3  # fewer than the steps: the data wraps around
LR = 0.01
PIPELINE = "cpu,train=adamw,weight-decay=0.01,max-grad-norm=0.5"
STEP_LINE = re.compile(r"^step (\d+)/(\d+)  loss (\S+)", re.M)


def need_mpi(nproc):
    if nproc > 1 and shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")


def make_data(rng, tmp_path):
    params = {
        "w0": (rng.normal(size=(DIMS[0], DIMS[1])) / math.sqrt(DIMS[0])).astype(np.float32),
        "b0": (rng.normal(size=(DIMS[1],)) * 0.1).astype(np.float32),
        "w1": (rng.normal(size=(DIMS[1], DIMS[2])) / math.sqrt(DIMS[1])).astype(np.float32),
        "b1": (rng.normal(size=(DIMS[2],)) * 0.1).astype(np.float32),
    }
    batches = {
        "x": rng.normal(size=(BATCHES, BATCH, DIMS[0])).astype(np.float32),
        "y": rng.integers(0, DIMS[2], size=(BATCHES, BATCH)).astype(np.int64),
    }
    param_args, batch_args = [], []
    for name, array in params.items():
        np.save(tmp_path / f"{name}.npy", array)
        param_args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    for name, array in batches.items():
        np.save(tmp_path / f"batch_{name}.npy", array)
        batch_args += ["--batch", f"{name}={tmp_path / f'batch_{name}.npy'}"]
    return params, batches, param_args, batch_args


def train_cmd(plan, nproc, steps, out, *extra):
    return ([tool("of-run")] + (["-n", str(nproc)] if nproc > 1 else []) +
            [str(plan), "--entry", "mlp_train_step", "--steps", str(steps),
             "--set", f"lr={LR}", "--output-dir", str(out), *map(str, extra)])


def losses_of(stdout):
    """{step: loss text} of of-run's per-step lines."""
    return {int(m[0]): m[2] for m in STEP_LINE.findall(stdout)}


def kill_everything_with(marker):
    """SIGKILLs every process whose command line mentions `marker` (the
    ranks of an mpirun job live in their own sessions) and waits until none
    is left, so nothing writes the checkpoint after this returns."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found = True
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if not found:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes mentioning {marker} survived SIGKILL")


def checkpoint_step(path):
    from safetensors import safe_open
    with safe_open(str(path), framework="numpy") as f:
        return int(f.metadata()["of.step"])


@pytest.mark.parametrize("layout", ["1-rank", "data-2", "megatron-2", "2d-2x2",
                                    "stages-data-2x2"])
def test_kill_load_continue(layout, rng, tmp_path):
    """Training killed (-9) after a save and continued from the checkpoint
    gives the uninterrupted run's losses and parameters bit for bit."""
    grid, args = LAYOUTS[layout]
    nproc = nproc_of(grid)
    need_mpi(nproc)
    plan = compile_program(mlp_program(grid, args), tmp_path, pipeline=PIPELINE)
    params, _, param_args, batch_args = make_data(rng, tmp_path)
    data_args = param_args + batch_args

    # Train with a save after every step; kill the whole job mid-run.
    ckpt = tmp_path / "ckpt.safetensors"
    job = subprocess.Popen(
        train_cmd(plan, nproc, 100000, tmp_path / "killed", *data_args,
                  "--save-state", ckpt, "--save-every", 1),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True)
    seen = {}
    for line in job.stdout:
        seen.update(losses_of(line))
        if len(seen) >= 3:
            break
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    kill_everything_with(str(ckpt))
    saved = checkpoint_step(ckpt)
    assert saved >= 2, f"checkpoint at step {saved}"

    # The uninterrupted run, as far as the continued one goes.
    total = saved + STEPS
    full = _run(train_cmd(plan, nproc, total, tmp_path / "full", *data_args)).decode()
    reference = losses_of(full)
    assert sorted(reference) == list(range(1, total + 1)), full
    for step, loss in seen.items():
        assert loss == reference[step], f"step {step} before the kill"
    resumed = _run(train_cmd(plan, nproc, STEPS, tmp_path / "resumed",
                             *batch_args, "--load-state", ckpt)).decode()
    got = losses_of(resumed)
    assert sorted(got) == list(range(saved + 1, total + 1)), resumed
    for step, loss in got.items():
        assert loss == reference[step], f"step {step}: {loss} vs {reference[step]}"
    for name in params:
        np.testing.assert_array_equal(np.load(tmp_path / "resumed" / f"{name}.npy"),
                                      np.load(tmp_path / "full" / f"{name}.npy"),
                                      err_msg=name)


def test_checkpoint_contents_and_portability(rng, tmp_path):
    """The checkpoint as the `safetensors` package reads it; a 1-rank
    checkpoint continued on a Megatron 2-rank plan; the forward entry loads
    only the parameters."""
    need_mpi(2)
    one = tmp_path / "one"
    one.mkdir()
    plan1 = compile_program(mlp_program([], {}), one, pipeline=PIPELINE)
    params, batches, param_args, batch_args = make_data(rng, tmp_path)
    data_args = param_args + batch_args
    full = losses_of(_run(train_cmd(plan1, 1, STEPS, tmp_path / "full", *data_args)).decode())

    ckpt = tmp_path / "ckpt.safetensors"
    _run(train_cmd(plan1, 1, 3, tmp_path / "three", *data_args, "--save-state", ckpt))
    tensors = safetensors_numpy.load_file(str(ckpt))
    state = {f"adam_{m}_{p}" for m in "mv" for p in params} | {"adam_step"}
    assert set(tensors) == set(params) | state
    assert checkpoint_step(ckpt) == 3
    for name in params:
        np.testing.assert_array_equal(tensors[name],
                                      np.load(tmp_path / "three" / f"{name}.npy"))
    assert tensors["adam_step"] == 3.0
    assert not list(tmp_path.glob("ckpt.safetensors.tmp.*"))

    # Continue on 2 ranks with the first weight split by columns.
    two = tmp_path / "two"
    two.mkdir()
    grid, args = LAYOUTS["megatron-2"]
    plan2 = compile_program(mlp_program(grid, args), two, pipeline=PIPELINE)
    out = _run(train_cmd(plan2, 2, STEPS - 3, tmp_path / "cont", *batch_args,
                         "--load-state", ckpt)).decode()
    got = losses_of(out)
    assert sorted(got) == list(range(4, STEPS + 1)), out
    for step, loss in got.items():
        check(np.array(float(loss)), np.array(float(full[step])), 1e-5, f"loss at step {step}")

    # The forward entry takes x, y and the parameters, not the optimizer
    # state: its loss at the step-3 parameters on batch 3 is step 4's loss.
    np.save(tmp_path / "x3.npy", batches["x"][3 % BATCHES])
    np.save(tmp_path / "y3.npy", batches["y"][3 % BATCHES])
    _run([tool("of-run"), str(plan1), "--entry", "mlp", "--load-state", str(ckpt),
          "--input", f"x={tmp_path / 'x3.npy'}", "--input", f"y={tmp_path / 'y3.npy'}",
          "--output-dir", str(tmp_path / "eval")])
    assert np.load(tmp_path / "eval" / "loss.npy") == np.float32(full[4])


# w: 16M floats (64 MiB) so a save takes long enough to be interrupted;
# loss = sum(w), so SGD with lr = 1 from zeros makes every element of w
# exactly -step: a checkpoint is whole only if w == -(its of.step).
BIG = 4096
BIG_PROGRAM = f"""func.func @sum(%w: tensor<{BIG}x{BIG}xf32> {{of.name = "w", of.param}}) -> (tensor<f32> {{of.name = "loss"}}) {{
  %s = of.reduce_sum %w {{axes = array<i64: 0, 1>}} : (tensor<{BIG}x{BIG}xf32>) -> tensor<f32>
  return %s : tensor<f32>
}}
"""


def test_kill_during_save_keeps_previous_checkpoint(tmp_path):
    plan = compile_program(BIG_PROGRAM, tmp_path, pipeline="cpu,train=sgd")
    ckpt = tmp_path / "ckpt.safetensors"
    cmd = [tool("of-run"), str(plan), "--entry", "sum_train_step", "--steps", "100000",
           "--set", "lr=1", "--output-dir", str(tmp_path / "out"),
           "--save-state", str(ckpt), "--save-every", "1"]
    rng = np.random.default_rng()
    mid_save = 0
    for attempt in range(40):
        if ckpt.exists() and mid_save:
            break
        job = subprocess.Popen(cmd + (["--load-state", str(ckpt)] if ckpt.exists() else []),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = job.stdout.readline()  # the first step ran; saves follow
        assert first.startswith("step "), first + job.stderr.read()
        time.sleep(rng.uniform(0.0, 0.4))
        job.kill()
        job.communicate()
        leftovers = list(tmp_path.glob("ckpt.safetensors.tmp.*"))
        if leftovers:
            mid_save += 1
            for leftover in leftovers:
                leftover.unlink()
        # Whatever the moment of the kill, the checkpoint is a whole one.
        if ckpt.exists():
            tensors = safetensors_numpy.load_file(str(ckpt))
            step = checkpoint_step(ckpt)
            assert step >= 1 and set(tensors) == {"w"}
            w = tensors["w"]
            assert w.shape == (BIG, BIG)
            assert np.all(w == -float(step)), f"checkpoint of step {step} holds a mix"
    assert mid_save, "no kill landed during a save in 40 tries"
    # And of-run continues from it: the next step makes every element
    # -(step + 1). (Its loss, a float32 sum of 16M equal values, is exact
    # only while the partial sums stay exact, i.e. for steps 1 and 2; a
    # slow machine reaches later checkpoints, so the loss is not compared.)
    step = checkpoint_step(ckpt)
    out = _run(cmd[:5] + ["1", "--set", "lr=1", "--output-dir", str(tmp_path / "out"),
                          "--load-state", str(ckpt)]).decode()
    assert out.startswith(f"step {step + 1}/{step + 1}  loss "), out
    w = np.load(tmp_path / "out" / "w.npy")
    assert np.all(w == -float(step + 1))


def expect_error(cmd, *fragments):
    with pytest.raises(ToolError) as info:
        _run(cmd)
    assert info.value.rc == 1, info.value.stderr
    for fragment in fragments:
        assert fragment in info.value.stderr, info.value.stderr


def test_bad_checkpoints_and_batches(rng, tmp_path):
    plan = compile_program(mlp_program([], {}), tmp_path, pipeline=PIPELINE)
    params, batches, param_args, batch_args = make_data(rng, tmp_path)
    data_args = param_args + batch_args
    ckpt = tmp_path / "ckpt.safetensors"
    _run(train_cmd(plan, 1, 2, tmp_path / "out", *data_args, "--save-state", ckpt))
    good = ckpt.read_bytes()

    def load(data, *fragments):
        bad = tmp_path / "bad.safetensors"
        bad.write_bytes(data)
        expect_error(train_cmd(plan, 1, 1, tmp_path / "o", *batch_args, "--load-state", bad),
                     *fragments)

    load(good[: len(good) // 2], "not a valid safetensors file", "outside the data")
    load(good[:5], "shorter than the 8-byte header length")
    load((10**9).to_bytes(8, "little") + good[8:], "exceeds the file")
    header = int.from_bytes(good[:8], "little")
    load(good[:8] + b"[" + good[9:], "is not a JSON object")
    load(good[:8] + good[8:8 + header].replace(b'"F32"', b'"F33"', 1) + good[8 + header:],
         "dtype 'F33'")
    load(good[:8] + good[8:8 + header].replace(b'"w0"', b'"zz"') + good[8 + header:],
         "lacks the state 'w0'")
    load(good[:8] + good[8:8 + header].replace(b'"shape":[12,16]', b'"shape":[16,12]')
         + good[8 + header:], "holds 'w0' as f32 [16, 12]", "takes f32 [12, 16]")
    # Without its step count, AdamW's state would continue at step 0.
    stepless = tmp_path / "stepless.safetensors"
    safetensors_numpy.save_file(safetensors_numpy.load(good), str(stepless))
    expect_error(train_cmd(plan, 1, 1, tmp_path / "o", *batch_args, "--load-state", stepless),
                 "records no step count", "start afresh from its weights with --init-state")
    _run(train_cmd(plan, 1, 1, tmp_path / "o", *batch_args, "--init-state", stepless))
    expect_error(train_cmd(plan, 1, 1, tmp_path / "o", *batch_args,
                           "--load-state", tmp_path / "absent.safetensors"),
                 "cannot open the checkpoint")
    # --init-state takes weights without optimizer state, but every parameter.
    other = tmp_path / "other.safetensors"
    unrelated = b'{"zz":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    other.write_bytes(len(unrelated).to_bytes(8, "little") + unrelated + bytes(4))
    expect_error(train_cmd(plan, 1, 1, tmp_path / "o", *batch_args, "--init-state", other),
                 "lacks the parameters 'w0', 'b0', 'w1', 'b1' of entry")
    # Given twice: on the command line and in the checkpoint.
    expect_error(train_cmd(plan, 1, 1, tmp_path / "o", *data_args, "--load-state", ckpt),
                 "input 'w0' is given on the command line and loaded from the checkpoint")
    # Nothing to save for an entry without state.
    np.save(tmp_path / "x0.npy", batches["x"][0])
    np.save(tmp_path / "y0.npy", batches["y"][0])
    expect_error([tool("of-run"), str(plan), "--entry", "mlp", "--load-state", str(ckpt),
                  "--input", f"x={tmp_path / 'x0.npy'}", "--input", f"y={tmp_path / 'y0.npy'}",
                  "--output-dir", str(tmp_path / "o"), "--save-state", str(tmp_path / "e")],
                 "nothing to save", "the entry has no state")
    # A --batch file whose trailing shape is not the input's.
    np.save(tmp_path / "bx.npy", batches["x"][:, :, :3])
    expect_error(train_cmd(plan, 1, 1, tmp_path / "o", "--load-state", ckpt,
                           "--batch", f"x={tmp_path / 'bx.npy'}",
                           "--batch", f"y={tmp_path / 'batch_y.npy'}"),
                 "--batch 'x': expected f32 [K, 6, 12]", "got f32 [3, 6, 3]")
