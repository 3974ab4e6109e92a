"""Collation: PyTorch's `default_collate` and `default_convert`
(torch/utils/data/_utils/collate.py), making of tensors.

A batch's elements may be of tensors, NumPy arrays and scalars, Python
numbers, strings, or torch tensors (a dataset written for PyTorch). Tensors
and arrays are stacked on the host through NumPy and the result is one of
tensor on the elements' device; a torch tensor is copied out through NumPy
(`t.detach().cpu().numpy()`; bfloat16 through its bits), so nothing of the
batch shares memory with the dataset. dtypes are PyTorch's: Python floats
make float64, ints int64, bools bool, NumPy values keep their dtype; a dtype
of has no tensors for (int16, uint16, complex) is a TypeError naming it.
"""

import collections.abc
import copy
import re
import sys

import numpy as np

from ... import _dtype as dt
from ... import _ops
from ..._dist import device as _device
from ..._tensor import Tensor, _c_order

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype.str of text and objects

_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
          "lists; found {}")


# --------------------------------------------------------------------------
# Elements as host arrays, and host arrays as of tensors.

def _torch_tensor_type():
    """torch.Tensor where torch is imported (a dataset that makes torch
    tensors imported it), else None: of never imports torch itself."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


def _is_torch_tensor(value):
    kind = _torch_tensor_type()
    return kind is not None and isinstance(value, kind)


def _torch_to_host(t):
    """A torch tensor as (a NumPy copy of its value, its of device)."""
    import torch
    t = t.detach()
    where = "cpu" if t.device.type == "cpu" else t.device.type
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        if dt.bfloat16.np is None:
            raise TypeError("a torch.bfloat16 tensor needs ml_dtypes to become an of tensor")
        array = t.view(torch.int16).numpy().view(dt.bfloat16.np).copy()
    else:
        array = t.numpy().copy()
    return array, _device(where)


def _host(value):
    """`value` (an of or torch tensor, a NumPy array or scalar) as (a NumPy
    array, the of device a tensor of it belongs on)."""
    if isinstance(value, Tensor):
        if value.is_global:
            raise NotImplementedError(
                "default_collate of global tensors is not supported: collate local tensors "
                "and call .to_global(placement, sbp) on the batch")
        return value.numpy(), value.device
    if _is_torch_tensor(value):
        return _torch_to_host(value)
    return np.asarray(value), _device("cpu")


def _tensor(array, where):
    """An of tensor holding `array` on device `where` (a dtype of lacks is a
    TypeError that names it)."""
    try:
        dtype = dt.from_numpy(array.dtype)
    except TypeError as e:
        raise TypeError(f"default_collate: {e}; convert the data (.astype(...)) in the "
                        "dataset or collate_fn") from None
    return Tensor(_c_order(array), dtype=dtype, device=where)


def _as_tensor(value):
    """torch.as_tensor of one value: an of tensor as it is, others copied."""
    if isinstance(value, Tensor):
        return value
    array, where = _host(value)
    return _tensor(np.array(array, copy=True), where)


def _stack(batch):
    """torch.stack(batch, 0) of tensors and arrays, with its errors. Of
    tensors that record gradients are stacked by of's ops (the gradient
    flows back to them, as through torch.stack); the rest through NumPy."""
    if any(isinstance(b, Tensor) and b.requires_grad for b in batch):
        return _ops.cat([_ops.unsqueeze(_as_tensor(b), 0) for b in batch], 0)
    hosts = [_host(b) for b in batch]
    shape = hosts[0][0].shape
    for i, (array, _) in enumerate(hosts):
        if array.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(array.shape)} at entry {i}")
    where = hosts[0][1]
    for _, other in hosts:
        if other != where:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {where} and {other}!")
    return _tensor(np.stack([array for array, _ in hosts]), where)


# --------------------------------------------------------------------------
# default_convert

def _is_numpy_value(value):
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_")


def default_convert(data):
    """PyTorch's default_convert: each NumPy array or scalar (not of text or
    objects) and each torch tensor inside `data` (mappings, namedtuples,
    tuples (which become lists), sequences) becomes an of tensor; other
    values stay as they are. The loader's collate_fn when it does not
    batch (batch_size=None)."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if _is_torch_tensor(data):
        return _as_tensor(data)
    if _is_numpy_value(data):
        if kind is np.ndarray and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return kind({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # PyTorch's: a list
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return kind([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


# --------------------------------------------------------------------------
# collate and default_collate

def collate(batch, *, collate_fn_map=None):
    """PyTorch's `collate`: the function `collate_fn_map` gives the first
    element's type (its exact type, else the first key it is an instance
    of), else mappings, namedtuples and sequences collated per field (a
    tuple's fields as a list); torch tensors are stacked as of tensors."""
    elem = batch[0]
    kind = type(elem)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for key in collate_fn_map:
            if isinstance(elem, key):
                return collate_fn_map[key](batch, collate_fn_map=collate_fn_map)
    if _is_torch_tensor(elem):
        return _stack(batch)
    if isinstance(elem, collections.abc.Mapping):
        def field(key):
            return collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: field(key) for key in elem})
                return clone
            return kind({key: field(key) for key in elem})
        except TypeError:
            return {key: field(key) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return kind(*(collate(samples, collate_fn_map=collate_fn_map)
                      for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map)
                    for samples in transposed]  # PyTorch's: a list
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return kind([collate(samples, collate_fn_map=collate_fn_map)
                         for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(_ERROR.format(kind))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return _stack(batch)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _STRING_OR_OBJECT.search(elem.dtype.str) is not None:
        raise TypeError(_ERROR.format(elem.dtype))
    return _stack(batch)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _tensor(np.array(batch), _device("cpu"))


def collate_float_fn(batch, *, collate_fn_map=None):
    return _tensor(np.array(batch, dtype=np.float64), _device("cpu"))


def collate_int_fn(batch, *, collate_fn_map=None):
    # torch.tensor(batch): bool for bools, int64 for ints, float32 once a
    # float is among them, and its errors for other values
    for value in batch:
        if not isinstance(value, (bool, int, float, np.bool_, np.number)):
            if isinstance(value, (str, bytes)):
                raise TypeError(f"new(): invalid data type '{type(value).__name__}'")
            raise RuntimeError(f"Could not infer dtype of {type(value).__name__}")
    if all(isinstance(value, (bool, np.bool_)) for value in batch):
        return _tensor(np.array(batch, dtype=np.bool_), _device("cpu"))
    if any(isinstance(value, (float, np.floating)) for value in batch):
        return _tensor(np.array(batch, dtype=np.float32), _device("cpu"))
    if any(not -2 ** 63 <= int(value) < 2 ** 63 for value in batch):
        raise ValueError("Overflow when unpacking long long")
    return _tensor(np.array(batch, dtype=np.int64), _device("cpu"))


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """PyTorch's default_collate: a list of samples as one batch with an
    outer batch dimension. Tensors, NumPy arrays and torch tensors are
    stacked (an of tensor), NumPy scalars make a tensor of their dtype,
    Python floats a float64 tensor, ints an int64 one and bools a bool one
    (torch.tensor's dtypes); strings and bytes stay a sequence of them;
    mappings, namedtuples and sequences are collated field by field
    (tuples as lists). The loader's collate_fn when it batches."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
