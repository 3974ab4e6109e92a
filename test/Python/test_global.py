"""Global tensors: to_global with each SBP (even and uneven splits, 1-D
and 2-D placements), .numpy() of a global tensor is the logical value on
every rank, to_local() is this rank's part, eager ops on global tensors,
and clear Python exceptions for mismatched placements."""

import pytest

import of
from conftest import launch

WORKER = r'''
import numpy as np
import of

rank, size = of.env.rank(), of.env.world_size()
S, B, P = of.sbp.split, of.sbp.broadcast, of.sbp.partial_sum
x_value = np.arange(30, dtype=np.float32).reshape(5, 6) - 7
x = of.tensor(x_value)

def balanced(extent, parts, k):
    base, extra = divmod(extent, parts)
    start = k * base + min(k, extra)
    return start, start + base + (k < extra)

if size == 2:
    p = of.placement("cpu", ranks=[0, 1])
    for sbp in (S(0), S(1), B, P):
        g = x.to_global(p, sbp)
        assert g.is_global and g.placement == p and g.sbp == (sbp,)
        np.testing.assert_array_equal(g.numpy(), x_value)
        local = g.to_local().numpy()
        if sbp == S(0):
            lo, hi = balanced(5, 2, rank)  # uneven: 3 and 2 rows
            np.testing.assert_array_equal(local, x_value[lo:hi])
        elif sbp == S(1):
            np.testing.assert_array_equal(local, x_value[:, 3 * rank:3 * rank + 3])
        elif sbp == B:
            np.testing.assert_array_equal(local, x_value)
        else:
            np.testing.assert_array_equal(local, x_value if rank == 0 else 0 * x_value)
        for target in (S(0), S(1), B):  # boxing between SBPs
            np.testing.assert_array_equal(g.to_global(sbp=target).numpy(), x_value)
    # eager ops on global tensors
    g = x.to_global(p, S(0))
    np.testing.assert_allclose((g * 2.0 + 1.0).numpy(), x_value * 2 + 1)
    w_value = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    w = of.tensor(w_value).to_global(p, B)
    y = g @ w
    np.testing.assert_allclose(y.numpy(), x_value @ w_value, rtol=1e-5)
    assert y.sbp == (S(0),), y.sbp
    np.testing.assert_allclose(g.sum().numpy(), x_value.sum(), rtol=1e-6)
    # moving to other ranks (pipeline stages) is a clear exception here
    try:
        g.to_global(of.placement("cpu", ranks=[1]), B)
        raise AssertionError("no exception")
    except NotImplementedError as e:
        assert "pipeline stage" in str(e) and "of-run" in str(e), e
    # mismatched placements and global/local mixes are clear exceptions
    q = of.placement("cpu", ranks=[1, 0])
    try:
        g + x.to_global(q, S(0))
        raise AssertionError("no exception")
    except ValueError as e:
        assert "different placements" in str(e), e
    try:
        g + x
        raise AssertionError("no exception")
    except ValueError as e:
        assert "global tensor and a local tensor" in str(e), e
    try:
        x.to_global(p, [S(0), B])
        raise AssertionError("no exception")
    except ValueError as e:
        assert "needs 1 entries" in str(e), e
else:
    assert size == 4
    p = of.placement("cpu", ranks=[[0, 1], [2, 3]])
    for sbp in ([S(0), S(1)], [S(1), B], [B, S(0)], [P, S(1)], [S(0), S(0)]):
        g = x.to_global(p, sbp)
        np.testing.assert_array_equal(g.numpy(), x_value)
    g = x.to_global(p, [S(0), B])
    np.testing.assert_allclose((g - 1.0).numpy(), x_value - 1)
print(f"OK {rank}")
'''


@pytest.mark.parametrize("ranks", [2, 4])
def test_global_tensor_semantics(tmp_path, ranks):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    proc = launch(str(script), ranks)
    assert proc.returncode == 0, proc.stdout
    for r in range(ranks):
        assert f"OK {r}" in proc.stdout, proc.stdout


def test_global_program_needs_its_ranks():
    """In a job smaller than its placement a global tensor keeps its logical
    value (for compiling ahead of time); using its part needs the ranks."""
    p = of.placement("cpu", ranks=[0, 1])
    g = of.ones(4).to_global(p, of.sbp.split(0))
    for use in (lambda: g + 1.0, g.to_local):
        with pytest.raises(RuntimeError,
                           match=r"placed on 2 ranks but this job has 1.*--nproc 2"):
            use()


def test_module_to_global_again_keeps_trained_weights(rng):
    """A module made global again (same placement and SBP) after training
    keeps the weights its compiled step trained, which its session holds:
    the same as a twin that was not made global again."""
    import numpy as np
    p = of.placement("cpu", ranks=[0])
    B = of.sbp.broadcast
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    models, steps = [], []
    for _ in range(2):
        of.manual_seed(5)
        model = of.nn.Linear(4, 2).to_global(p, B)
        models.append(model)
        steps.append(of.compile(model, loss_fn=of.nn.MSELoss(),
                                optimizer=of.optim.SGD(model.parameters(), lr=0.1)))
    args = [of.from_numpy(v).to_global(p, B) for v in (x, y)]
    for _ in range(2):
        for step in steps:
            step(*args)
    models[0].to_global(p, B)  # read nothing before: the session holds the value
    for step in steps:
        step(*args)
    np.testing.assert_array_equal(models[0].weight.numpy(), models[1].weight.numpy())


def test_a_distributed_step_ahead_of_time(tmp_path, rng):
    """One process compiles a 2-rank data-parallel training step (its
    global tensors keep their logical values: nothing runs), saves the
    weights, and `of-run -n 2 --init-state` trains it: the losses of the
    same model trained on one rank in Python."""
    import os
    import re
    import subprocess
    import numpy as np
    p = of.placement("cpu", ranks=[0, 1])
    S, B = of.sbp.split, of.sbp.broadcast
    xs = rng.standard_normal((3, 16, 8)).astype(np.float32)
    ys = rng.integers(0, 4, (3, 16))

    def mlp():
        of.manual_seed(7)
        return of.nn.Sequential(of.nn.Linear(8, 16), of.nn.ReLU(), of.nn.Linear(16, 4))
    model = mlp().to_global(p, B)
    weight = model[0].weight
    assert weight._lazy() and "logical value" in repr(weight)
    assert weight.clone()._lazy() and weight.sbp == (B,)
    # what needs only the logical value works on it; values are snapshots
    local = of.ones(3)
    g = local.to_global(p, S(0))
    g.numpy()[:] = 5.0
    assert local.numpy().tolist() == [1.0, 1.0, 1.0]
    assert of.nn.Parameter(g)._lazy() and of.nn.Parameter(g).sbp == (S(0),)
    half = mlp().to_global(p, B).half()
    assert half[0].weight.dtype is of.float16 and half[0].weight._lazy()
    loaded = {k: v.numpy() * 1.0 for k, v in mlp().state_dict().items()}
    model.load_state_dict(loaded)  # stays lazy, holds the loaded values
    np.testing.assert_array_equal(model[0].weight.numpy(), loaded["0.weight"])
    assert model[0].weight is weight and weight._lazy()
    step = of.compile(model, loss_fn=of.nn.CrossEntropyLoss(),
                      optimizer=of.optim.AdamW(model.parameters(), lr=1e-2))
    step.save_plan(str(tmp_path / "dp.ofp"), of.from_numpy(xs[0]).to_global(p, S(0)),
                   of.from_numpy(ys[0]).to_global(p, S(0)))
    of.save(model.state_dict(), str(tmp_path / "init.safetensors"))
    np.save(tmp_path / "x.npy", xs)
    np.save(tmp_path / "y.npy", ys)
    tools = os.environ.get("OF_TOOLS_DIR", os.path.join(os.path.dirname(__file__),
                                                        "../../build/bin"))
    r = subprocess.run([os.path.join(tools, "of-run"), "-n", "2", str(tmp_path / "dp.ofp"),
                        "--entry", "sequential_train_step",
                        "--init-state", str(tmp_path / "init.safetensors"),
                        "--batch", f"x={tmp_path / 'x.npy'}",
                        "--batch", f"target={tmp_path / 'y.npy'}", "--set", "lr=0.01",
                        "--steps", "3", "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    aot = [float(v) for v in re.findall(r"^step \d+/3  loss (\S+)", r.stdout, re.M)]
    local = mlp()
    local.load_state_dict(loaded)
    one_rank = of.compile(local, loss_fn=of.nn.CrossEntropyLoss(),
                          optimizer=of.optim.AdamW(local.parameters(), lr=1e-2))
    expected = [one_rank(of.from_numpy(x), of.from_numpy(y)).item() for x, y in zip(xs, ys)]
    np.testing.assert_allclose(aot, expected, rtol=1e-5)


def test_bad_placements_and_sbp():
    with pytest.raises(ValueError, match="distinct"):
        of.placement("cpu", ranks=[0, 0])
    with pytest.raises(ValueError, match="'gpu' is not supported by this build"):
        of.placement("gpu", ranks=[0])
    with pytest.raises(ValueError, match="non-negative dimension"):
        of.sbp.split(-1)
    with pytest.raises(ValueError, match="splits dimension 2 of a tensor of rank 1"):
        of.ones(4).to_global(of.placement("cpu", ranks=[0]), of.sbp.split(2))


DIVERGENT = r'''
import numpy as np
import of
from of._runtime import world
rank, size = world()
p = of.placement("cpu", ranks=[0, 1])
same = of.tensor(np.arange(4, dtype=np.float32))
assert (same.to_global(p, [of.sbp.broadcast]) * 2).numpy().tolist() == [0, 2, 4, 6]
# each rank's local value is taken as the logical value: they must agree
mine = of.tensor(np.arange(4, dtype=np.float32) + rank)
for sbp in (of.sbp.broadcast, of.sbp.split(0)):
    try:
        mine.to_global(p, [sbp]).numpy()
        print(f"NO ERROR {rank}")
    except RuntimeError as e:
        assert "differs from rank" in str(e), e
        print(f"REFUSED {rank}")
'''


def test_rank_divergent_values_to_global_are_refused(tmp_path):
    """A local value that differs per rank made global (B or S: each rank
    takes its part of its own logical value) fails on every rank, naming
    the ranks, instead of each rank keeping another value."""
    script = tmp_path / "divergent.py"
    script.write_text(DIVERGENT)
    proc = launch(str(script), 2)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count("REFUSED") == 4 and "NO ERROR" not in proc.stdout, proc.stdout


FUSED_LOOP = r'''
import json
import numpy as np
import of
F = of.nn.functional


class TwoLosses(of.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = of.nn.Linear(4, 3), of.nn.Linear(4, 2)

    def forward(self, x, y, z):
        a = self.a(x)
        return a, F.cross_entropy(a, y) + F.cross_entropy(self.b(x), z)


rng = np.random.default_rng(0)
data = [rng.standard_normal((8, 4)).astype(np.float32), rng.integers(0, 3, 8),
        rng.integers(0, 2, 8)]
runs = []
for ranks in (1, 2):
    of.manual_seed(0)
    model = TwoLosses()
    args = [of.tensor(v) for v in data]
    if ranks == 2:
        p = of.placement("cpu", ranks=[0, 1])
        model.to_global(p, of.sbp.broadcast)
        args = [t.to_global(p, of.sbp.split(0)) for t in args]
    opt = of.optim.SGD(model.parameters(), lr=0.1)
    compiled = of.compile(model)
    losses = []
    for _ in range(3):
        _, loss = compiled(*args)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    runs.append(losses)
if of.env.rank() == 0:
    print("LOSSES " + json.dumps(runs))
'''


def test_fused_loop_loss_on_two_ranks_is_one_ranks(tmp_path):
    """The standard loop under of.compile(model) fused into one training
    step, data parallel on 2 ranks: the loss it returns is the step's
    (reduced over the ranks), not the forward's partial sums (which
    .item() would add up: twice the loss)."""
    import json
    import numpy as np
    script = tmp_path / "fused.py"
    script.write_text(FUSED_LOOP)
    proc = launch(str(script), 2)
    assert proc.returncode == 0, proc.stdout
    line = next(l for l in proc.stdout.splitlines() if l.startswith("LOSSES "))
    one, two = json.loads(line[len("LOSSES "):])
    np.testing.assert_allclose(two, one, rtol=1e-6)
