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
    p = of.placement("cpu", ranks=[0, 1])
    with pytest.raises(RuntimeError, match=r"placed on 2 ranks but this job has 1.*--nproc 2"):
        of.ones(4).to_global(p, of.sbp.split(0))


def test_bad_placements_and_sbp():
    with pytest.raises(ValueError, match="distinct"):
        of.placement("cpu", ranks=[0, 0])
    with pytest.raises(ValueError, match="'gpu' is not supported by this build"):
        of.placement("gpu", ranks=[0])
    with pytest.raises(ValueError, match="non-negative dimension"):
        of.sbp.split(-1)
    with pytest.raises(ValueError, match="splits dimension 2 of a tensor of rank 1"):
        of.ones(4).to_global(of.placement("cpu", ranks=[0]), of.sbp.split(2))
