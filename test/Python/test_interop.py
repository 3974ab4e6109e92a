"""Weights in and out: a PyTorch state_dict from a .pt file, safetensors
files written by the `safetensors` package (no torch needed), and of.save
files that the `safetensors` package reads."""

import numpy as np
import pytest

import of
import of.nn as nn


def _model():
    return nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 2))


def test_load_pytorch_pt_file(tmp_path, rng):
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.LayerNorm(5),
                             torch.nn.Linear(5, 2))
    torch.save(tm.state_dict(), tmp_path / "model.pt")
    m = _model()
    m.load_state_dict(of.load(str(tmp_path / "model.pt")))
    x = rng.standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(m(of.from_numpy(x)).numpy(),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_safetensors_both_ways(tmp_path, rng):
    from safetensors.numpy import load_file, save_file
    weights = {k: rng.standard_normal(v.shape).astype(np.float32)
               for k, v in _model().state_dict().items()}
    save_file(weights, str(tmp_path / "in.safetensors"))
    m = _model()
    m.load_state_dict(of.load(str(tmp_path / "in.safetensors")))
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), weights[k])
    of.save(m.state_dict(), str(tmp_path / "out.safetensors"), metadata={"step": 7})
    back = load_file(str(tmp_path / "out.safetensors"))
    assert set(back) == set(weights)
    for k in weights:
        np.testing.assert_array_equal(back[k], weights[k])


def test_bad_files_are_clear_errors(tmp_path):
    m = _model()
    with pytest.raises(KeyError, match="missing keys"):
        m.load_state_dict({"0.weight": np.zeros((5, 6), np.float32)})
    with pytest.raises(ValueError, match="has shape"):
        bad = {k: v.numpy() for k, v in m.state_dict().items()}
        bad["0.weight"] = np.zeros((6, 5), np.float32)
        m.load_state_dict(bad)
    path = tmp_path / "cut.safetensors"
    of.save(m.state_dict(), str(path))
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="offsets"):
        of.load(str(path))
    path.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(ValueError, match="not JSON"):
        of.load(str(path))


def test_torch_batches_feed_of_modules():
    # A batch from a torch DataLoader (torch tensors, in a tuple) fed to an of
    # module and to a compiled one gives what the same values as of tensors do.
    torch = pytest.importorskip("torch")
    lin = of.nn.Linear(3, 2)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    want = lin(of.tensor(x.numpy())).numpy()
    np.testing.assert_array_equal(lin(x).numpy(), want)
    np.testing.assert_array_equal(of.compile(lin)(x).numpy(), want)
    np.testing.assert_array_equal(lin(x.numpy()).numpy(), want)
    with pytest.raises(TypeError, match="requires grad"):
        lin(x.clone().requires_grad_())
