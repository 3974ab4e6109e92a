"""The nanoGPT-style model of nanogpt.py, written against PyTorch, ported to
of by changing only its three import lines, trains for 20 AdamW steps under
of.compile (with nanoGPT's two AdamW parameter groups: no weight decay for
biases and norms) on 1 rank and on 2 ranks, data parallel (parameters broadcast,
batch split) and Megatron-style tensor parallel (SBP chosen per parameter
with module.to_global), and matches PyTorch's loss curve from the same
initial weights and batches."""

import json
import os
import sys

import numpy as np
import pytest

from conftest import launch

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 20
BATCH = 4
# float32 against float32 with different summation orders: the relative
# error of each step's loss. Over the first 10 steps it stays below
# TOLERANCE (worst 9e-7 over 36 seeded runs of the three cases). AdamW then
# amplifies rounding differences: a near-zero gradient element steps its
# weight by up to a whole lr either way, so single later steps reach more
# (6.9e-4 at step 17 with OF_TEST_SEED=6445285073336388687, 1 rank);
# LATE_TOLERANCE bounds them. A wrong gradient or update is off by O(1e-2)
# from the first steps.
TOLERANCE = 1e-4
LATE_STEPS = 10
LATE_TOLERANCE = 5e-3
# AdamW's epsilon, on both sides. At PyTorch's default of 1e-8 the
# amplification is larger: OF_TEST_SEED=7965413584918782101 (2 ranks,
# megatron) gave a loss error of 9.7e-4 at step 14 and a wpe difference of
# 1.9e-2 (the same on the commit before the session that measured it);
# at 1e-6 its worst loss error is 1.4e-7.
ADAMW_EPSILON = 1e-6
# Each parameter's update against PyTorch's (see the test). Over 30 seeded
# runs of the three cases it stayed below 8.5e-4; one seed reaches 1.9e-2
# (c_attn.weight, OF_TEST_SEED=2452705983123324865, 2 ranks data, whose
# query weights take noise-driven steps), where the old bound of 1e-2 on
# the weights themselves failed it. A wrong gradient is off by O(1).
UPDATE_TOLERANCE = 0.1
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
from train_gpt import corpus, load_model as load_model_module  # noqa: E402


def batches(cfg, seed):
    """Next-token batches cut from a text that ships with Debian, as bytes
    folded into the vocabulary."""
    tokens = corpus(cfg.vocab_size)
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(tokens) - cfg.block_size - 1, size=(STEPS, BATCH))
    x = np.stack([[tokens[s:s + cfg.block_size] for s in row] for row in starts])
    y = np.stack([[tokens[s + 1:s + 1 + cfg.block_size] for s in row] for row in starts])
    return x, y


def torch_losses(seed):
    ns = load_model_module("torch")
    cfg = ns["GPTConfig"]()
    torch.manual_seed(seed)
    model = ns["GPT"](cfg)
    initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    for group in opt.param_groups:
        group["eps"] = ADAMW_EPSILON
    x, y = batches(cfg, seed)
    losses = []
    for i in range(STEPS):
        _, loss = model(torch.from_numpy(x[i]), torch.from_numpy(y[i]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    final = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return initial, losses, final


WORKER = r'''
import json, sys
import numpy as np
sys.path.insert(0, {here!r})
from test_nanogpt import load_model_module, batches, STEPS, ADAMW_EPSILON
from train_gpt import megatron  # column/row-parallel MLP, vocabulary-parallel embedding
import of

seed = int(sys.argv[1])
ns = load_model_module("of")
cfg = ns["GPTConfig"]()
model = ns["GPT"](cfg)
init = np.load(sys.argv[2])
model.load_state_dict({{k: init[k] for k in init.files}})
ranks = of.env.world_size()
layout = sys.argv[4]
placement = of.placement("cpu", ranks=list(range(ranks))) if ranks > 1 else None

if placement is not None:
    model.to_global(placement, megatron if layout == "megatron" else of.sbp.broadcast)
opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))  # two groups, as nanoGPT
for group in opt.param_groups:
    group["eps"] = ADAMW_EPSILON
step = of.compile(model, optimizer=opt)
x, y = batches(cfg, seed)
losses = []
for i in range(STEPS):
    xb, yb = of.tensor(x[i]), of.tensor(y[i])
    if placement is not None:
        data_sbp = of.sbp.split(0) if layout == "data" else of.sbp.broadcast
        xb = xb.to_global(placement, data_sbp)
        yb = yb.to_global(placement, data_sbp)
    losses.append(step(xb, yb).item())
assert step.compiles == 1, step.compiles
final = {{k: v.numpy() for k, v in model.state_dict().items()}}
if of.env.rank() == 0:
    np.savez(sys.argv[3], **final)
    print("LOSSES " + json.dumps(losses))
'''


@pytest.mark.parametrize("ranks,layout", [(1, "data"), (2, "data"), (2, "megatron")])
def test_nanogpt_matches_pytorch(tmp_path, rng, ranks, layout):
    seed = int(rng.integers(0, 2 ** 31))
    initial, want, torch_final = torch_losses(seed)
    init_file = tmp_path / "init.npz"
    np.savez(init_file, **initial)
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER.format(here=HERE))
    final_file = tmp_path / "final.npz"
    if ranks == 1:
        import subprocess
        proc = subprocess.run([sys.executable, str(worker), str(seed), str(init_file),
                               str(final_file), layout], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
    else:
        proc = launch(str(worker), ranks, seed, init_file, final_file, layout)
    assert proc.returncode == 0, proc.stdout
    line = next(l for l in proc.stdout.splitlines() if l.startswith("LOSSES "))
    got = json.loads(line[len("LOSSES "):])
    errors = [abs(g - w) / abs(w) for g, w in zip(got, want)]
    print(f"ranks={ranks} {layout}: worst relative step error {max(errors):.2e}; "
          f"loss {want[0]:.4f} -> {want[-1]:.4f}")
    # The comparison is not trivial: the curve moves (each step is a new
    # batch, so single steps are noisy and are not required to fall).
    assert max(want) - min(want) > 0.05, want
    assert max(errors[:LATE_STEPS]) < TOLERANCE, list(zip(got, want))
    assert max(errors) < LATE_TOLERANCE, list(zip(got, want))
    # The trained parameters, read back through state_dict(), match too:
    # each tensor's update (final - initial) against PyTorch's, by the norm
    # of their difference relative to PyTorch's update, so a wrong gradient
    # or optimizer step is off by O(1) even where the update is small next to
    # the weight (layer norm gains). Rounding noise stays well below
    # UPDATE_TOLERANCE but is not tiny: AdamW turns it into full +-lr steps
    # where a true gradient is near zero, and softmax makes some exactly
    # zero (a shift of a row of scores changes nothing), so their directions
    # in c_attn carry only noise. The key part of c_attn.bias is such a
    # direction through and through, so it is left out.
    final = np.load(final_file)
    C = 64
    worst = (0.0, "")
    for name, value in torch_final.items():
        got, start = final[name], initial[name]
        if name.endswith("attn.c_attn.bias"):
            keep = np.r_[0:C, 2 * C:3 * C]
            got, value, start = got[keep], value[keep], start[keep]
        want_update = value - start
        diff = np.linalg.norm((got - start) - want_update) / np.linalg.norm(want_update)
        worst = max(worst, (diff, name))
        assert diff < UPDATE_TOLERANCE, (name, diff)
    print(f"worst relative update difference {worst[0]:.1e} ({worst[1]})")
    moved = [np.linalg.norm(final[n] - initial[n]) / np.linalg.norm(initial[n])
             for n in initial if np.linalg.norm(initial[n]) > 0]
    assert max(moved) > 1e-2, "training changed the parameters"
