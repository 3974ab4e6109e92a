"""of.save / of.load: state dicts as safetensors files (readable by the
`safetensors` package, PyTorch, JAX...), and PyTorch `.pt` files when
torch is installed.

    of.save(model.state_dict(), "model.safetensors")
    model.load_state_dict(of.load("model.safetensors"))
    model.load_state_dict(of.load("pytorch_model.pt"))   # needs torch
"""

import json
import os
import struct

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor, _c_order

_ST_NAMES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
             "int64": "I64", "int32": "I32", "int8": "I8", "bool": "BOOL"}
_FROM_ST = {v: k for k, v in _ST_NAMES.items()}


def save(state_dict, path, metadata=None):
    """Writes name -> tensor as one safetensors file (temp file + rename, so
    a crash leaves any previous file whole). Tied tensors are written under
    each name."""
    arrays = {}
    for name, value in state_dict.items():
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        arrays[name] = (dt.from_numpy(array.dtype), _c_order(array))
    header, offset = {}, 0
    for name in sorted(arrays):
        dtype, array = arrays[name]
        header[name] = {"dtype": _ST_NAMES[dtype.name], "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in sorted(arrays):
            f.write(arrays[name][1].tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def tensor_names(path):
    """The tensor names in a safetensors file's header."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return {k for k in header if k != "__metadata__"}


def _load_safetensors(path):
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than its header size)")
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            raise ValueError(f"{path}: not a safetensors file (header of {n} bytes in a file "
                             f"of {size})")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: the safetensors header is not JSON: {e}") from None
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = dt._by_name(_FROM_ST[info["dtype"]])
            begin, end = info["data_offsets"]
            shape = tuple(int(d) for d in info["shape"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: tensor '{name}' has a bad or unsupported entry "
                             f"{info}") from None
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dtype.itemsize:
            raise ValueError(f"{path}: tensor '{name}' ({info['dtype']} {list(shape)}) has "
                             f"offsets {[begin, end]} outside or inconsistent with the "
                             f"{len(data)} data bytes")
        array = np.frombuffer(data[begin:end], dtype=dtype.np).reshape(shape).copy()
        out[name] = Tensor(array, dtype=dtype)
    return out


def load(path):
    """name -> of tensor from a safetensors file, or from a PyTorch
    checkpoint (.pt/.pth/.bin, a state dict; needs torch)."""
    with open(path, "rb") as f:
        head = f.read(8)
    if path.endswith(".safetensors") or (len(head) == 8 and
                                         struct.unpack("<Q", head)[0] < 100_000_000 and
                                         not head.startswith(b"PK")):
        return _load_safetensors(path)
    try:
        import torch
    except ImportError:
        raise ImportError(f"{path} looks like a PyTorch checkpoint, which needs torch to "
                          "read; convert it to safetensors, or install torch") from None
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(
            state["state_dict"], dict):
        state = state["state_dict"]
    out = {}
    for name, value in state.items():
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            array = value.float().numpy().astype(dt.bfloat16.np)
        else:
            array = value.numpy()
        out[name] = Tensor(_c_order(array))
    return out
