"""of-run's run-time errors: out-of-range gather indices (the plan's
check.index_range step) and inputs of the wrong shape or dtype."""

import numpy as np
import pytest

from ofrun import Program, ToolError, compile_program, run_plan

VOCAB = 10


@pytest.fixture(scope="module")
def embedding_plan(tmp_path_factory):
    p = Program()
    p.input("ids", np.zeros((2, 3), dtype=np.int64))
    p.input("table", np.zeros((VOCAB, 4), dtype=np.float32))
    p.op("%e = of.embedding %ids, %table : (tensor<2x3xi64>, tensor<10x4xf32>) -> tensor<2x3x4xf32>")
    p.output("e", "%e", "tensor<2x3x4xf32>", None, 0)
    tmp = tmp_path_factory.mktemp("embedding")
    plan = compile_program(p.text(), tmp)
    lowered = (tmp / "prog.lowered.mlir").read_text()
    assert "check.index_range" in lowered, "the plan lacks its index check"
    return plan


def good_inputs(rng):
    return {"ids": rng.integers(0, VOCAB, size=(2, 3), dtype=np.int64),
            "table": rng.uniform(-1, 1, size=(VOCAB, 4)).astype(np.float32)}


def run_fails(plan, inputs, tmp_path):
    with pytest.raises(ToolError) as info:
        run_plan(plan, inputs, tmp_path)
    assert info.value.rc != 0
    return info.value.stderr


def test_in_range_runs(embedding_plan, rng, tmp_path):
    inputs = good_inputs(rng)
    out = run_plan(embedding_plan, inputs, tmp_path)
    np.testing.assert_array_equal(out["e"], inputs["table"][inputs["ids"]])


@pytest.mark.parametrize("bad", [VOCAB, -1, 2 ** 40])
def test_index_out_of_range(embedding_plan, rng, tmp_path, bad):
    inputs = good_inputs(rng)
    inputs["ids"][1, 2] = bad
    err = run_fails(embedding_plan, inputs, tmp_path)
    assert "out of range" in err, err
    assert f"index {bad} " in err, err
    assert f"[0, {VOCAB})" in err, err
    assert not (tmp_path / "out" / "e.npy").exists(), "an output was written"


def test_bad_input_shape(embedding_plan, rng, tmp_path):
    inputs = good_inputs(rng)
    inputs["ids"] = inputs["ids"].reshape(3, 2)
    err = run_fails(embedding_plan, inputs, tmp_path)
    assert "'ids'" in err and "[2, 3]" in err and "[3, 2]" in err, err


@pytest.mark.parametrize("name,array", [
    ("ids", np.ones((2, 3), dtype=np.int32)),
    ("ids", np.ones((2, 3), dtype=np.float32)),
    ("table", np.ones((VOCAB, 4), dtype=np.float64)),
])
def test_bad_input_dtype(embedding_plan, rng, tmp_path, name, array):
    inputs = good_inputs(rng)
    inputs[name] = array
    err = run_fails(embedding_plan, inputs, tmp_path)
    assert f"'{name}'" in err and "expected" in err, err


def test_unsupported_npy_dtype(embedding_plan, rng, tmp_path):
    inputs = good_inputs(rng)
    inputs["ids"] = np.ones((2, 3), dtype=np.complex64)
    err = run_fails(embedding_plan, inputs, tmp_path)
    assert "unsupported dtype" in err, err


def test_missing_input(embedding_plan, rng, tmp_path):
    inputs = good_inputs(rng)
    del inputs["table"]
    err = run_fails(embedding_plan, inputs, tmp_path)
    assert "missing input" in err and "table" in err, err
