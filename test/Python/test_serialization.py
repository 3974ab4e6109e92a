"""of.save / of.load: what PyTorch training scripts save (a checkpoint dict
of state dicts, optimizer state with integer keys, Python numbers,
strings, None, tuples and lists) round trips through one safetensors file
(a path or a file object); PyTorch's arguments are honoured or refused;
what cannot be stored is a TypeError at save time; a corrupt, cut-short or
tampered file is a ValueError naming the problem; a torch.save file is
read through torch (weights_only=True) or refused clearly without it."""

import collections
import io
import json
import math
import os
import struct
import sys
import zipfile

import numpy as np
import pytest

import of
import of.nn as nn
from of.serialization import STRUCTURE_KEY


def _model():
    of.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 2))


def _tensors(rng):
    """A tensor of each dtype, shapes including 0-d and empty."""
    bf16 = of.from_numpy(rng.standard_normal((3, 4)).astype(of.bfloat16.np))
    return {
        "f32": of.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)),
        "f64": of.from_numpy(rng.standard_normal(5)),
        "f16": of.from_numpy(rng.standard_normal((2, 2)).astype(np.float16)),
        "bf16": bf16,
        "i64": of.from_numpy(rng.integers(-2**40, 2**40, (4,), dtype=np.int64)),
        "i32": of.from_numpy(rng.integers(-100, 100, (2, 1, 3), dtype=np.int32)),
        "i8": of.from_numpy(rng.integers(-100, 100, (7,), dtype=np.int8)),
        "bool": of.from_numpy(rng.random((3, 3)) > 0.5),
        "scalar": of.from_numpy(np.array(rng.standard_normal(), dtype=np.float32)),
        "empty": of.from_numpy(np.zeros((0, 4), np.float32)),
    }


def _checkpoint(rng):
    """A nanoGPT-style checkpoint, with an AdamW-style optimizer state dict
    (integer keys) and every kind of value of.save stores."""
    model = _model()
    state = {i: {"step": of.from_numpy(np.array(1200.0, np.float32)),
                 "exp_avg": of.from_numpy(rng.standard_normal(p.shape).astype(np.float32)),
                 "exp_avg_sq": of.from_numpy(rng.random(p.shape).astype(np.float32))}
             for i, p in enumerate(model.parameters())}
    optimizer = {"state": state,
                 "param_groups": [{"lr": 6e-4, "betas": (0.9, 0.95), "eps": 1e-8,
                                   "weight_decay": 0.1, "amsgrad": False, "foreach": None,
                                   "params": list(range(len(state)))}]}
    return model, {
        "model": model.state_dict(),
        "optimizer": optimizer,
        "model_args": {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024,
                       "bias": False, "vocab_size": None, "dropout": 0.0},
        "iter_num": 1200,
        "best_val_loss": 1.23,
        "config": {"out_dir": "out", "dataset": "openwebtext", "init_from": "scratch",
                   "big": 2**70, "neg": -3, "inf": math.inf, "ninf": -math.inf,
                   "nan": math.nan, "unicode": "π ≈ 3.14 — ok", "bytes": b"\x00\xff",
                   "list": [1, [2.5, "x"], (3, None)], "tuple": (1, (2,), []),
                   "empty": {}, "dtype": of.bfloat16, "device": of.device("cpu"),
                   "size": of.Size([2, 3]), "np_scalar": np.float64(0.25),
                   "np_array": np.arange(6, dtype=np.int32).reshape(2, 3),
                   ("tuple", 1): "a tuple key", 2.5: "a float key", None: "a None key",
                   True: "a bool key", b"k": "a bytes key"},
        "tensors": _tensors(rng),
    }


def assert_same(a, b, where="obj"):
    """`a` and `b` equal with the same types throughout (tuples stay
    tuples, ints ints, dict order kept), tensors by dtype, shape, device
    and bits."""
    assert type(a) is type(b) or (isinstance(a, of.Tensor) and isinstance(b, of.Tensor)), \
        f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, of.Tensor):
        assert a.dtype is b.dtype and a.shape == b.shape and a.device == b.device, where
        assert a.requires_grad == b.requires_grad, where
        np.testing.assert_array_equal(a.numpy().reshape(-1).view(np.uint8),
                                      b.numpy().reshape(-1).view(np.uint8), err_msg=where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        assert [type(k) for k in a] == [type(k) for k in b], where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


# --------------------------------------------------------------------------
# Round trips

def test_nested_checkpoint_round_trips(tmp_path, rng):
    _, ckpt = _checkpoint(rng)
    path = tmp_path / "ckpt.pt"
    of.save(ckpt, path)  # a PathLike, as torch takes; the name's suffix does not matter
    back = of.load(str(path))
    assert_same(ckpt, back)
    # what the checks above rely on
    assert type(back["model"]) is collections.OrderedDict
    assert list(back["optimizer"]["state"]) == [0, 1, 2, 3, 4, 5]
    assert type(back["optimizer"]["param_groups"][0]["betas"]) is tuple
    assert type(back["config"]["list"][1]) is list and back["config"]["list"][2] == (3, None)
    assert back["config"]["big"] == 2**70 and back["iter_num"] == 1200
    assert back["tensors"]["bf16"].dtype is of.bfloat16
    assert back["tensors"]["i64"].dtype is of.int64 and back["tensors"]["bool"].dtype is of.bool
    assert back["config"]["dtype"] is of.bfloat16 and back["config"]["size"] == (2, 3)
    assert type(back["config"]["np_scalar"]) is np.float64
    assert back["model_args"]["vocab_size"] is None
    assert not os.path.exists(f"{path}.tmp.{os.getpid()}")


def test_top_level_values_and_empty_containers(tmp_path, rng):
    for obj in [None, 3, "text", [], {}, (), of.ones(2, 3), [of.zeros(1), of.zeros(1)],
                {"a.b": of.ones(1), "a": {"b": of.zeros(1)}, "__metadata__": of.ones(2)}]:
        buffer = io.BytesIO()
        of.save(obj, buffer)
        buffer.seek(0)
        assert_same(obj, of.load(buffer))


def test_file_objects(tmp_path, rng):
    _, ckpt = _checkpoint(rng)
    buffer = io.BytesIO()
    buffer.write(b"something before")
    start = buffer.tell()
    of.save(ckpt, buffer)
    buffer.seek(start)  # read from the position, as torch.load does
    assert_same(ckpt, of.load(buffer))
    with open(tmp_path / "ckpt.bin", "wb") as f:
        of.save(ckpt, f)
    with open(tmp_path / "ckpt.bin", "rb") as f:
        assert_same(ckpt, of.load(f))

    class Unseekable(io.RawIOBase):  # a pipe: read whole, then parsed
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)
    assert_same(ckpt, of.load(Unseekable((tmp_path / "ckpt.bin").read_bytes())))
    with pytest.raises(TypeError, match="binary file object"):
        of.save(ckpt, 42)
    with pytest.raises(TypeError, match="binary file object"):
        of.load(42)


def test_state_dict_into_a_module(tmp_path, rng):
    model = _model()
    of.save(model.state_dict(), tmp_path / "model.safetensors")
    other = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 2))
    x = of.from_numpy(rng.standard_normal((3, 6)).astype(np.float32))
    assert not np.array_equal(other(x).numpy(), model(x).numpy())
    loaded = of.load(tmp_path / "model.safetensors")
    assert list(loaded) == list(model.state_dict())  # PyTorch's order, not sorted
    other.load_state_dict(loaded)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    # a checkpoint's model entry, the way nanoGPT resumes
    _, ckpt = _checkpoint(rng)
    of.save(ckpt, tmp_path / "ckpt.pt")
    resumed = _model()
    resumed.load_state_dict(of.load(tmp_path / "ckpt.pt", map_location="cpu")["model"])
    np.testing.assert_array_equal(resumed(x).numpy(), _model()(x).numpy())


def test_flat_state_dicts_stay_plain_safetensors(tmp_path):
    """Tensor names are the keys (what of-run --init-state and the
    safetensors package read); a safetensors file without of's structure
    loads as name -> tensor."""
    from safetensors.numpy import load_file, save_file
    model = _model()
    path = tmp_path / "model.safetensors"
    of.save(model.state_dict(), str(path), metadata={"step": 7})
    back = load_file(str(path))
    assert set(back) == set(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(back[k], v.numpy())
    assert of.serialization.tensor_names(str(path)) == set(back)
    plain = tmp_path / "plain.safetensors"
    save_file({"b": np.ones((2,), np.int64), "a": np.zeros((1, 2), np.float16)}, str(plain))
    loaded = of.load(str(plain))
    assert sorted(loaded) == ["a", "b"] and loaded["b"].dtype is of.int64
    assert loaded["a"].dtype is of.float16 and loaded["a"].shape == (1, 2)
    # nested checkpoints are safetensors too, their tensors named by path
    _, ckpt = _checkpoint(np.random.default_rng(0))
    of.save(ckpt, str(tmp_path / "ckpt.pt"))
    names = set(load_file(str(tmp_path / "ckpt.pt")))
    assert {"model.0.weight", "optimizer.state.0.exp_avg", "tensors.bf16",
            "config.np_array"} <= names
    with pytest.raises(ValueError, match="of's own"):
        of.save({}, io.BytesIO(), metadata={STRUCTURE_KEY: "x"})


def test_parameters_gradients_and_devices(tmp_path):
    w = nn.Parameter(of.ones(2, 2))
    frozen = nn.Parameter(of.ones(2), requires_grad=False)
    leaf = of.zeros(3).requires_grad_()
    on_gpu = of.ones(4).to("cuda")  # a device label: values live on the host
    buffer = io.BytesIO()
    of.save([w, frozen, leaf, on_gpu], buffer)
    buffer.seek(0)
    a, b, c, d = of.load(buffer)
    assert type(a) is nn.Parameter and a.requires_grad
    assert type(b) is nn.Parameter and not b.requires_grad
    assert type(c) is of.Tensor and c.requires_grad
    assert d.device == "cuda" and not d.requires_grad


def test_global_tensors_save_their_logical_value():
    p = of.placement("cpu", ranks=[0, 1])  # made ahead of time: a logical value here
    g = of.from_numpy(np.arange(8, dtype=np.float32)).to_global(p, of.sbp.split(0))
    buffer = io.BytesIO()
    of.save({"g": g}, buffer)
    buffer.seek(0)
    back = of.load(buffer)["g"]
    assert not back.is_global and back.device == "cpu"
    np.testing.assert_array_equal(back.numpy(), np.arange(8, dtype=np.float32))


# --------------------------------------------------------------------------
# PyTorch's arguments

def _saved(obj):
    buffer = io.BytesIO()
    of.save(obj, buffer)
    return buffer.getvalue()


def test_map_location():
    data = _saved({"cpu": of.ones(2), "gpu": of.ones(3).to("cuda")})
    load = lambda **kw: of.load(io.BytesIO(data), **kw)  # noqa: E731
    plain = load()
    assert plain["cpu"].device == "cpu" and plain["gpu"].device == "cuda"
    for where in ("cpu", of.device("cpu")):
        assert {t.device for t in load(map_location=where).values()} == {"cpu"}
    assert {t.device for t in load(map_location="cuda").values()} == {"cuda"}
    tag = f"cuda:{of.device('cuda').index}"  # PyTorch's location tags
    moved = load(map_location={tag: "cpu"})
    assert moved["gpu"].device == "cpu" and moved["cpu"].device == "cpu"
    moved = load(map_location={"cpu": "cuda"})
    assert moved["gpu"].device == "cuda" and moved["cpu"].device == "cuda"
    seen = []
    kept = load(map_location=lambda storage, loc: seen.append(loc) or storage)
    assert seen == ["cpu", tag] and {t.device for t in kept.values()} == {"cpu"}
    assert load(map_location=lambda storage, loc: None)["gpu"].device == "cuda"
    with pytest.raises(TypeError, match="map_location returned"):
        load(map_location=lambda storage, loc: "cpu")
    with pytest.raises(TypeError, match="map_location must be"):
        load(map_location=3.5)
    with pytest.raises(ValueError, match="not a device"):
        load(map_location="mps")


def test_weights_only_and_refused_arguments():
    data = _saved({"a": of.ones(2), "n": 3})
    for weights_only in (None, True, False):  # nothing is unpickled: all the same
        assert_same(of.load(io.BytesIO(data), weights_only=weights_only),
                    {"a": of.ones(2), "n": 3})
    assert of.load(io.BytesIO(data), mmap=False)["n"] == 3
    refused = [lambda: of.load(io.BytesIO(data), pickle_module=json),
               lambda: of.load(io.BytesIO(data), mmap=True),
               lambda: of.load(io.BytesIO(data), encoding="latin1"),
               lambda: of.save({}, io.BytesIO(), json),
               lambda: of.save({}, io.BytesIO(), pickle_protocol=4),
               lambda: of.save({}, io.BytesIO(), _use_new_zipfile_serialization=False)]
    for call, name in zip(refused, ["pickle_module", "mmap", "encoding", "pickle_module",
                                    "pickle_protocol", "_use_new_zipfile_serialization"]):
        with pytest.raises(NotImplementedError, match=name):
            call()


# --------------------------------------------------------------------------
# What cannot be stored

class Config:
    lr = 1e-3


@pytest.mark.parametrize("obj, what", [
    ({"config": Config()}, r"obj\['config'\] is a .*Config"),
    ({"fn": len}, "builtin_function_or_method"),
    ({"fn": [lambda: 0]}, r"obj\['fn'\]\[0\] is a builtins.function"),
    ({"s": {1, 2}}, "builtins.set"),
    ({"c": 1j}, "builtins.complex"),
    ({"d": collections.defaultdict(list)}, "defaultdict"),
    ({"i16": np.zeros(3, np.int16)}, "dtype int16"),
    ({object(): 1}, "a dict key"),
    ({"k": {of.ones(1): 1}}, "a dict key"),
])
def test_unrepresentable_objects_are_type_errors(tmp_path, obj, what):
    path = tmp_path / "ckpt.pt"
    path.write_bytes(b"the previous file")
    with pytest.raises(TypeError, match=what) as info:
        of.save(obj, path)
    assert "torch.save would pickle" in str(info.value)
    assert path.read_bytes() == b"the previous file"  # left whole
    assert os.listdir(tmp_path) == ["ckpt.pt"]


class Whole(nn.Module):
    """A module saved whole (torch.save(model)): parameters, a buffer, a
    submodule list, plain attributes."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        self.norm = nn.BatchNorm1d(2)
        self.scale, self.name_ = 0.5, "whole"

    def forward(self, x):
        return self.norm(self.body(x)) * self.scale


def test_whole_modules(tmp_path, rng):
    """torch.save(model) / torch.load(weights_only=False): the module comes
    back with its class, weights, buffers, attributes and mode; without
    weights_only=False loading it is refused (it imports the class's
    module), as PyTorch >= 2.6 refuses a pickled module."""
    model = Whole()
    model.eval()
    x = of.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    path = tmp_path / "model.pt"
    of.save({"model": model, "epoch": 3}, path)
    for weights_only in (None, True):
        with pytest.raises(Exception, match="weights_only=False") as info:
            of.load(path, weights_only=weights_only)
        assert "test_serialization:Whole" in str(info.value)
    loaded = of.load(path, weights_only=False)
    assert loaded["epoch"] == 3 and type(loaded["model"]) is Whole
    again = loaded["model"]
    assert again is not model and not again.training and again.name_ == "whole"
    assert isinstance(again.body[0].weight, nn.Parameter)
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[k].numpy(), v.numpy())

    def local():
        class Inner(nn.Module):
            pass
        return Inner()
    with pytest.raises(TypeError, match="defined inside a function"):
        of.save(local(), io.BytesIO())
    model.hook = lambda: 0
    with pytest.raises(TypeError, match=r"obj\.hook|builtins.function"):
        of.save(model, io.BytesIO())


def test_a_module_node_naming_another_class_is_refused(tmp_path):
    """A tampered module node cannot make an object of a class that is not
    an of.nn.Module."""
    buffer = io.BytesIO()
    of.save(Whole(), buffer)
    data = buffer.getvalue()
    forged = data.replace(b"test_serialization:Whole", b"builtins:ArithmeticError")
    assert forged != data
    with pytest.raises(ValueError, match="not an of.nn.Module class"):
        of.load(io.BytesIO(forged), weights_only=False)


def test_cycles_and_deep_nesting_are_refused():
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        of.save({"loop": loop}, io.BytesIO())
    deep = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper"):
        of.save(deep, io.BytesIO())
    shared = [1, 2]
    assert_same(of.load(io.BytesIO(_saved([shared, shared]))), [[1, 2], [1, 2]])


# --------------------------------------------------------------------------
# Corrupt, cut-short and tampered files

def _file(header, data=b"", length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _retamper(data, change, must_change=True):
    """A valid file with its structure JSON changed by `change(structure)`
    (which returns the new structure, or its text)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    text = header["__metadata__"][STRUCTURE_KEY]
    structure = change(json.loads(text))
    new = structure if isinstance(structure, str) else json.dumps(structure)
    assert not must_change or json.dumps(json.loads(text)) != new, "nothing tampered"
    header["__metadata__"][STRUCTURE_KEY] = new
    return _file(header, data[8 + n:])


def _good():
    return _saved({"w": of.ones(2, 2), "b": of.zeros(2), "n": 1})


def _set(path, value):
    def change(structure):
        node = structure
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return structure
    return change


T = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
CORRUPT = {
    "empty file": (b"", "shorter than the 8-byte header length"),
    "cut inside the length": (b"\x05\x00\x00", "shorter than the 8-byte"),
    "huge header length": (b"\xff" * 8 + b"{}", "header of 18446744073709551615 bytes"),
    "header longer than the file": (_file({"a": T}, length=4096), "header of 4096 bytes"),
    "header not JSON": (_file(b"{oops"), "not JSON"),
    "header not UTF-8": (_file(b"\xff\xfe{}"), "not JSON"),
    "header a JSON array": (_file([1, 2]), "JSON list, not an object"),
    "NaN in the header": (_file(b'{"a": NaN}'), "not JSON"),
    "a name twice": (_file(b'{"a": {}, "a": {}}'), "appears twice"),
    "unknown dtype": (_file({"a": dict(T, dtype="U16")}, b"\0" * 8), "bad or unsupported"),
    "entry not an object": (_file({"a": [1, 2]}), "bad or unsupported"),
    "bool in a shape": (_file({"a": dict(T, shape=[True, 2])}, b"\0" * 8), "bad or unsup"),
    "negative dimension": (_file({"a": dict(T, shape=[-2])}, b"\0" * 8), "bad or unsupported"),
    "offsets past the data": (_file({"a": dict(T, data_offsets=[0, 16])}, b"\0" * 8),
                              r"offsets \[0, 16\] outside"),
    "offsets not the shape's size": (_file({"a": dict(T, shape=[3])}, b"\0" * 8),
                                     "inconsistent"),
    "offsets reversed": (_file({"a": dict(T, data_offsets=[8, 0])}, b"\0" * 8), "outside"),
    "float offsets": (_file({"a": dict(T, data_offsets=[0.0, 8.0])}, b"\0" * 8), "bad or"),
    "overlapping tensors": (_file({"a": T, "b": T}, b"\0" * 8), "overlap or leave a gap"),
    "a gap": (_file({"a": dict(T, data_offsets=[8, 16])}, b"\0" * 16), "starts at data byte 8"),
    "trailing bytes": (_file({"a": T}, b"\0" * 12), "trailing bytes"),
    "metadata not strings": (_file({"__metadata__": {"x": 1}}), "not an object of strings"),
    "cut short": (_good()[:-4], "outside or inconsistent"),
    "structure not JSON": (_retamper(_good(), lambda s: "{not json"), "structure .* not JSON"),
    "structure not of.save's": (_retamper(_good(), lambda s: {"object": 1}),
                                "not an of.save structure"),
    "newer version": (_retamper(_good(), _set(["version"], 99)), "newer of"),
    "missing tensor": (_retamper(_good(), _set(["object", "dict", 0, 1, "tensor"], "zz")),
                       "refers to tensor 'zz', which the file does not have"),
    "a tensor twice": (_retamper(_good(), _set(["object", "dict", 1, 1, "tensor"], "w")),
                       "refers to tensor 'w' a second time"),
    "a tensor left out": (_retamper(_good(), _set(["object", "dict", 1, 1], None)),
                          r"does not refer to: \['b'\]"),
    "tensor name not a string": (_retamper(_good(), _set(["object", "dict", 0, 1, "tensor"],
                                                         [1])), "is not a string"),
    "unknown node": (_retamper(_good(), _set(["object", "dict", 2, 1], {"pickle": "x"})),
                     "not one node tag"),
    "node with two tags": (_retamper(_good(), _set(["object", "dict", 2, 1],
                                                   {"tuple": [], "bytes": ""})), "keys"),
    "bad float node": (_retamper(_good(), _set(["object", "dict", 2, 1], {"float": "1"})),
                       "is a float node"),
    "bad base64": (_retamper(_good(), _set(["object", "dict", 2, 1], {"bytes": "!!"})),
                   "is a bytes node"),
    "unknown dtype node": (_retamper(_good(), _set(["object", "dict", 2, 1],
                                                   {"dtype": "complex64"})), "dtype node"),
    "dict items not pairs": (_retamper(_good(), _set(["object", "dict", 2], [1, 2, 3])),
                             "not \\[key, value\\] pairs"),
    "unhashable dict key": (_retamper(_good(), _set(["object", "dict", 2, 0], [1])),
                            "not a key node"),
    "a dict key twice": (_retamper(_good(), _set(["object", "dict", 2, 0], "w")),
                         "key that appears twice"),
    "a tensor without location": (_retamper(_good(), lambda s: _set(
        ["object", "dict", 0, 1], {"tensor": "w"})(s)), "without a location"),
    "location not a device": (_retamper(_good(), _set(["object", "dict", 0, 1, "location"],
                                                      "tpu:0")), "saved on 'tpu:0'"),
    "gradients of an integer": (_retamper(_saved({"i": of.ones(2).long()}), _set(
        ["object", "dict", 0, 1, "requires_grad"], True)), "not floating point"),
    "JSON nested too deep": (_retamper(_good(), lambda s: json.dumps(s).replace(
        '["n", 1]', '["n", ' + "[" * 5000 + "]" * 5000 + "]")), "not JSON|nests deeper"),
    "structure nested too deep": (_retamper(_good(), lambda s: json.dumps(s).replace(
        '["n", 1]', '["n", ' + "[" * 700 + "]" * 700 + "]")), "nests deeper"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_files_are_clear_errors(tmp_path, case):
    data, message = CORRUPT[case]
    path = tmp_path / "bad.pt"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        of.load(str(path))
    with pytest.raises(ValueError, match=message):
        of.load(io.BytesIO(data))


def test_the_tampering_helpers_keep_a_good_file_good():
    assert_same(of.load(io.BytesIO(_retamper(_good(), lambda s: s, must_change=False))),
                {"w": of.ones(2, 2), "b": of.zeros(2), "n": 1})


# --------------------------------------------------------------------------
# PyTorch's own files

def test_a_zip_checkpoint_without_torch_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as z:  # torch.save's layout: archive/data.pkl
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(RuntimeError, match="zip archive, the format of PyTorch's torch.save"):
        of.load(str(path))
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19.")  # torch's legacy magic
    with pytest.raises(RuntimeError, match="legacy format of PyTorch's torch.save"):
        of.load(str(legacy))


def test_torch_checkpoints(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.LayerNorm(5),
                             torch.nn.Linear(5, 2))
    opt = torch.optim.AdamW(tm.parameters(), lr=1e-3)
    tm(torch.randn(3, 6)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": tm.state_dict(), "optimizer": opt.state_dict(), "iter_num": 5,
                "bf16": torch.arange(4, dtype=torch.bfloat16), "betas": (0.9, 0.95)}, path)
    ckpt = of.load(str(path))
    m = _model()
    m.load_state_dict(ckpt["model"])
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(m(of.from_numpy(x)).numpy(),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(ckpt["optimizer"]["state"]) == [0, 1, 2, 3, 4, 5]
    assert ckpt["optimizer"]["state"][0]["exp_avg"].dtype is of.float32
    assert ckpt["bf16"].dtype is of.bfloat16 and ckpt["bf16"].tolist() == [0, 1, 2, 3]
    assert ckpt["betas"] == (0.9, 0.95) and ckpt["iter_num"] == 5
    with pytest.raises(NotImplementedError, match="weights_only=False"):
        of.load(str(path), weights_only=False)
    with pytest.raises(RuntimeError, match="could not read"):
        bad = tmp_path / "bad.pt"
        bad.write_bytes(path.read_bytes()[:200])
        of.load(str(bad))
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(RuntimeError, match="Install torch"):
        of.load(str(path))
