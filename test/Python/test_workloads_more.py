"""More of the seed's workloads (examples/models) at reduced sizes, as
test_workloads.py runs ResNet-50 and BERT: each training script under of
(compiled) against the same script under PyTorch from the same initial
weights and batches, and on 2 ranks against 1.

- The partial-FC face classifier (face.py, train_face.py): iResNet
  backbone data parallel, the classification weight split by class (S(0)),
  ArcFace and CosFace margins, class sampling; a class count whose weight
  is over the per-rank budget on 1 rank trains on 2 (each rank holds half).
- DLRM (dlrm.py, train_dlrm.py): EmbeddingBag tables split by rows (S(0)),
  their lookups partial sums (P), dot interaction, BCEWithLogits; a table
  over the per-rank budget on 1 rank trains on 2.
"""

import json
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "examples", "models")
sys.path.insert(0, MODELS)
import train_dlrm  # noqa: E402
import train_face  # noqa: E402
import workload  # noqa: E402
from test_workloads import launch_script, relative_errors, train  # noqa: E402

# float32 against float32 in other summation orders (measured errors in
# each test's docstring).
LOSS_RTOL = 1e-4

FACE = ["--num-classes", "64", "--embedding", "16", "--width", "4", "--image-size", "16",
        "--batch-size", "8", "--steps", "5", "--lr", "0.01", "--scale", "16",
        "--no-checkpoint"]
DLRM = ["--tables", "400", "60", "--embedding-dim", "8", "--bottom", "16", "--top", "16",
        "--batch-size", "16", "--steps", "5", "--lr", "0.5", "--no-checkpoint"]


def initial_weights(tmp_path, script, args):
    """The weights the script's model has under PyTorch (its seed), as an
    .npz of state_dict arrays."""
    options = script.parse(args)
    name = "face" if script is train_face else "dlrm"
    ns = workload.load_model("torch", os.path.join(MODELS, f"{name}.py"))
    torch.manual_seed(options.seed)
    model = script.build(ns, options)
    path = tmp_path / f"{name}-init.npz"
    np.savez(path, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    return str(path)


def against_pytorch(tmp_path, script, args, tag):
    args = args + ["--init", initial_weights(tmp_path, script, args)]
    want = train(script, args + ["--framework", "torch", "--eager"], tmp_path, "torch")
    got = train(script, args, tmp_path, "of")
    errors = relative_errors(got, want)
    print(f"{tag}: losses {np.round(want, 4)}, worst relative error {errors.max():.1e}")
    assert max(want) - min(want) > 0.01, want  # it moves
    assert errors.max() <= LOSS_RTOL, list(zip(got, want))


def two_against_one(tmp_path, script, args, tag, budget=()):
    """Losses on 2 ranks (with the `budget` flags) against 1 rank's."""
    args = args + ["--init", initial_weights(tmp_path, script, args)]
    one = train(script, args, tmp_path, "one")
    launch_script(script, args + list(budget) + ["--log", str(tmp_path / "two.json")], 2)
    two = json.load(open(tmp_path / "two.json"))
    errors = relative_errors(two["losses"], one)
    print(f"{tag} 2 ranks: worst relative error {errors.max():.1e}")
    assert errors.max() <= LOSS_RTOL, list(zip(two["losses"], one))
    return two


# -- partial-FC face classifier ---------------------------------------------------------

@pytest.mark.parametrize("margin", ["arcface", "cosface"])
def test_face_matches_pytorch(tmp_path, margin):
    """5 compiled steps (64 classes, embedding 16, width 4, 16x16 images,
    batch 8, SGD momentum 0.9 with weight decay) from the same weights."""
    against_pytorch(tmp_path, train_face, FACE + ["--margin", margin], f"face {margin}")


def test_face_sampled_matches_pytorch(tmp_path):
    """Partial FC's class sampling (half of the classes per step)."""
    against_pytorch(tmp_path, train_face, FACE + ["--sample-rate", "0.5"], "face sampled")


def test_face_two_ranks_hold_half_the_classes(tmp_path):
    """The classification weight [64, 16] (4 KiB) over a 3 KiB budget: one
    rank refuses to train; 2 ranks hold [32, 16] each (2 KiB) and train
    with the losses of 1 rank (without the budget), class sampling on."""
    args = FACE + ["--sample-rate", "0.5"]
    with pytest.raises(SystemExit, match="over --fc-budget-mb"):
        train_face.main(args + ["--fc-budget-mb", str(3 / 1024)])
    two = two_against_one(tmp_path, train_face, args, "face",
                          ["--fc-budget-mb", str(3 / 1024)])
    assert two["fc_shape"] == [32, 16] and two["fc_bytes"] == 32 * 16 * 4


# -- DLRM ----------------------------------------------------------------------------------

def test_dlrm_matches_pytorch(tmp_path):
    """5 compiled steps (tables of 400 and 60 rows, dimension 8, batch 16,
    4 ids per bag on average, SGD) from the same weights."""
    against_pytorch(tmp_path, train_dlrm, DLRM, "dlrm")


def test_dlrm_two_ranks_hold_half_the_table(tmp_path):
    """The 400-row table (12.5 KiB) over a 10 KiB budget: one rank refuses;
    2 ranks hold 200 rows each and train with the losses of 1 rank."""
    with pytest.raises(SystemExit, match="over --table-budget-mb"):
        train_dlrm.main(DLRM + ["--table-budget-mb", str(10 / 1024)])
    two = two_against_one(tmp_path, train_dlrm, DLRM, "dlrm",
                          ["--table-budget-mb", str(10 / 1024)])
    assert two["table_parts"] == [[200, 8], [30, 8]]
