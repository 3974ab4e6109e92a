"""of.save / of.load: PyTorch's checkpoint calls, written as safetensors
files (readable by the `safetensors` package, PyTorch, JAX, of-run) and
never as pickles, so loading a file runs no code.

    of.save(model.state_dict(), "model.safetensors")
    model.load_state_dict(of.load("model.safetensors"))
    of.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
             "iter_num": 1200, "config": config}, "ckpt.pt")
    checkpoint = of.load("ckpt.pt", map_location="cpu")
    model.load_state_dict(of.load("pytorch_model.pt"))   # torch's own file: needs torch

The file (one path or file object in, one out) is a safetensors file:

    8 bytes   N, the header's length (little-endian u64, at most 100 MiB)
    N bytes   the JSON header, padded with spaces to a multiple of 8:
              {"__metadata__": {"of.structure": "<JSON text>", <metadata=...>},
               "<tensor name>": {"dtype": "F32", "shape": [2, 3],
                                 "data_offsets": [begin, end]}, ...}
    the data  each tensor's bytes, C order, little-endian, back to back

A tensor's name is the path of keys that leads to it ("model.fc.weight",
"optimizer.state.0.exp_avg"), so a flat state dict's tensors are named by
its keys, as before. "of.structure" holds the saved object as JSON
({"format": "of.save", "version": 1, "object": <node>}), a node being:

    null, true, false, a number, a string   None, bools, ints, finite floats, str
    [node, ...]                             a list
    {"tuple": [node, ...]}                  a tuple
    {"dict": [[key, node], ...]}            a dict (keys: None, bool, int, float,
    {"OrderedDict": [[key, node], ...]}     str, bytes or tuples of them), in order
    {"float": "nan" | "inf" | "-inf"}       a float JSON has no number for
    {"bytes": "<base64>"}                   bytes
    {"tensor": name, "location": "cpu" | "cuda:N"
     [, "requires_grad": true] [, "parameter": true]}
                                            an of tensor (the header's `name`)
    {"ndarray": name [, "scalar": true]}    a NumPy array (or NumPy scalar)
    {"dtype": "bfloat16"}, {"device": "cuda"}, {"Size": [int, ...]}
    {"module": "pkg.mod:Class", "state": node}
                                            a whole nn.Module (torch.save(model)):
                                            its class and its attributes (a dict)

A whole module is saved as its class's import path and its attributes
(parameters, buffers, submodules, plain values); loading it imports that
class's module and rebuilds the object without calling __init__, which
runs that module's code, so of.load does it only with weights_only=False,
as PyTorch (>= 2.6) loads a pickled module only then. Each tensor of the
header is referred to exactly once. A safetensors file
without "of.structure" (the `safetensors` package's, of-run's) loads as
name -> tensor. Files are checked whole before anything is returned: a
bad header, offsets outside the data or not back to back, a structure
that is not the above, or that refers to a tensor the file lacks (or
leaves one out) is a ValueError naming the problem.
"""

import base64
import collections
import contextlib
import importlib
import io
import json
import math
import os
import pickle  # noqa: S403 - only as torch.save's default `pickle_module`; nothing is pickled
import struct

import numpy as np

from . import _dtype as dt
from ._compat import unsupported
from ._dist import device
from ._tensor import Parameter, Size, Tensor, _c_order

_ST_NAMES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
             "int64": "I64", "int32": "I32", "int8": "I8", "bool": "BOOL", "uint8": "U8"}
_FROM_ST = {v: k for k, v in _ST_NAMES.items()}

STRUCTURE_KEY = "of.structure"
FORMAT, VERSION = "of.save", 1
# The largest header read (as the safetensors package and of-run's reader).
MAX_HEADER_BYTES = 100 << 20
# The largest dimension a header may give (as of-run's reader).
MAX_DIM = 1 << 48
_ZIP_MAGIC = b"PK\x03\x04"
_SCALARS = (type(None), bool, int, str)
# nn.Module (registered by of.nn, which imports this module): the class
# whose instances of.save writes as module nodes
_MODULE_CLASSES = []


def register_module_class(cls):
    _MODULE_CLASSES.append(cls)


def _is_module(value):
    return bool(_MODULE_CLASSES) and isinstance(value, _MODULE_CLASSES[0])


# --------------------------------------------------------------------------
# Saving

def save(obj, f, pickle_module=pickle, pickle_protocol=2,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False, *,
         metadata=None):
    """Writes `obj` (tensors, NumPy arrays, None, bools, ints, floats,
    strings, bytes, dtypes, devices and sizes, in lists, tuples and dicts)
    to `f`, a path (written to a temporary file, then renamed, so a crash
    leaves any previous file whole) or a binary file object. Global tensors
    are saved as their logical values (a collective call). A tensor that
    appears twice is stored twice. `metadata` (of's): strings to store in
    the header's __metadata__."""
    unsupported("of.save", pickle_module=(pickle_module, pickle),
                pickle_protocol=(pickle_protocol, 2),
                _use_new_zipfile_serialization=(_use_new_zipfile_serialization, True),
                _disable_byteorder_record=(_disable_byteorder_record, False))
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    if STRUCTURE_KEY in meta:
        raise ValueError(f"of.save: metadata key '{STRUCTURE_KEY}' is of's own")
    # The whole object is checked before any tensor is read: reading a
    # global tensor is collective, and every rank must fail (or not) alike.
    encoder = _Encoder()
    try:
        tree = encoder.node(obj, ())
    except RecursionError:
        raise ValueError("of.save: the object nests deeper than this Python can write") \
            from None
    meta[STRUCTURE_KEY] = json.dumps({"format": FORMAT, "version": VERSION, "object": tree},
                                     separators=(",", ":"), allow_nan=False)
    arrays = [(name, _array_of(value)) for name, value, _ in encoder.tensors]
    header, offset = {"__metadata__": meta}, 0
    for name, array in arrays:
        header[name] = {"dtype": _ST_NAMES[dt.from_numpy(array.dtype).name],
                        "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    if len(text) > MAX_HEADER_BYTES:
        raise ValueError(f"of.save: the header would be {len(text)} bytes, more than the "
                         f"{MAX_HEADER_BYTES} a safetensors reader reads; save fewer, larger "
                         "tensors")

    def write(out):
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for _, array in arrays:
            out.write(array.reshape(-1).view(np.uint8).data)

    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"of.save: f must be a path or a binary file object with "
                            f"write(), not {type(f).__name__}")
        write(f)
        if hasattr(f, "flush"):
            f.flush()
        return
    path = os.fspath(f)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _where(path):
    """A path of keys as Python's subscripts: obj['model'][0]."""
    return "obj" + "".join(f"[{k!r}]" for k in path)


def _array_of(value):
    """The C-ordered array of a tensor or NumPy value."""
    return _c_order(value.numpy() if isinstance(value, Tensor) else np.asarray(value))


def _check_numpy(value, path):
    try:
        dt.from_numpy(value.dtype)
    except TypeError as e:
        raise TypeError(f"of.save: {_where(path)} is a NumPy value of dtype {value.dtype}, "
                        f"which an of file cannot hold ({e}); torch.save would pickle it") \
            from None


class _Encoder:
    """The structure of an object as JSON nodes; its tensors and arrays in
    `tensors` as (name, value, path)."""

    def __init__(self):
        self.tensors = []
        self.names = {"__metadata__"}
        self.open = set()  # the containers being encoded (a cycle would recurse forever)

    def name(self, path):
        base = ".".join(str(k) for k in path) or "tensor"
        name, n = base, 0
        while name in self.names:
            n += 1
            name = f"{base}#{n}"
        self.names.add(name)
        return name

    def array(self, value, path):
        if not isinstance(value, Tensor):
            _check_numpy(value, path)
        name = self.name(path)
        self.tensors.append((name, value, path))
        return name

    def refuse(self, value, path, what="of.save"):
        raise TypeError(
            f"{what}: {_where(path)} is a {type(value).__module__}.{type(value).__qualname__}, "
            "which an of file cannot hold: torch.save would pickle it, of.save writes no "
            "pickle. It stores tensors, NumPy arrays, None, bool, int, float, str, bytes, "
            "dtypes, devices and sizes in lists, tuples and dicts; convert the value (a "
            "NumPy scalar with .item(), an object to a dict of its fields)")

    def node(self, value, path):
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, Tensor):
            node = {"tensor": self.array(value, path), "location": _location(value)}
            if value.requires_grad:
                node["requires_grad"] = True
            if isinstance(value, Parameter):
                node["parameter"] = True
            return node
        if kind is np.ndarray:
            return {"ndarray": self.array(value, path)}
        if isinstance(value, np.generic):
            return {"ndarray": self.array(value, path), "scalar": True}
        if kind is bytes:
            return {"bytes": base64.b64encode(value).decode()}
        if kind is dt.dtype:
            return {"dtype": value.name}
        if kind is device:
            return {"device": str(value)}
        if kind is Size:
            return {"Size": [int(d) for d in value]}
        if _is_module(value):
            return self.module(value, path)
        if kind not in (list, tuple, dict, collections.OrderedDict):
            self.refuse(value, path)
        with self.inside(value, path):
            if kind is list:
                return [self.node(v, path + (i,)) for i, v in enumerate(value)]
            if kind is tuple:
                return {"tuple": [self.node(v, path + (i,)) for i, v in enumerate(value)]}
            return {kind.__name__: [[self.key(k, path), self.node(v, path + (k,))]
                                    for k, v in value.items()]}

    @contextlib.contextmanager
    def inside(self, value, path):
        """Encoding the container (or module) `value`: one that holds itself
        is refused (a cycle would recurse forever)."""
        if id(value) in self.open:
            raise ValueError(f"of.save: {_where(path)} contains itself; an of file holds "
                             "trees (torch.save would pickle the cycle)")
        self.open.add(id(value))
        try:
            yield
        finally:
            self.open.discard(id(value))

    def module(self, value, path):
        cls = type(value)
        if "<locals>" in cls.__qualname__:
            raise TypeError(f"of.save: {_where(path)} is a module of class {cls.__qualname__}, "
                            "defined inside a function, which loading could not find; define "
                            "it at module level, or save its state_dict()")
        with self.inside(value, path):
            return {"module": f"{cls.__module__}:{cls.__qualname__}",
                    "state": self.node(dict(value.__dict__), path)}

    def key(self, value, path):
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if kind is bytes:
            return {"bytes": base64.b64encode(value).decode()}
        if kind is tuple:
            return {"tuple": [self.key(v, path) for v in value]}
        self.refuse(value, path + (value,), "of.save (a dict key)")


def _location(tensor):
    """PyTorch's location tag of a tensor's device: "cpu" or "cuda:N"."""
    where = tensor.device
    return "cpu" if where == "cpu" else f"{where}:{where.index}"


# --------------------------------------------------------------------------
# Loading

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """The object `of.save` wrote to `f` (a path or a binary file object,
    read from its position); a safetensors file without of's structure as
    name -> tensor; a PyTorch checkpoint through torch.load(weights_only=
    True) when torch is installed. Tensors go where they were saved from,
    or where `map_location` says: a device, a dict of location tags, or a
    callable (tensor, tag) -> tensor or None (PyTorch's, given the tensor
    where PyTorch gives its storage); a PyTorch file's map_location goes
    to torch.load as it is. Nothing is unpickled, so `weights_only` (None,
    True or False) loads the same objects from an of file."""
    unsupported("of.load", pickle_module=(pickle_module, None), mmap=(bool(mmap), False))
    if pickle_load_args:
        raise NotImplementedError(
            f"of.load({', '.join(f'{k}=' for k in pickle_load_args)}...) is not supported: "
            "they configure PyTorch's unpickler, and of.load unpickles nothing")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return _load_stream(stream, os.fspath(f), map_location, weights_only)
    if not hasattr(f, "read"):
        raise TypeError(f"of.load: f must be a path or a binary file object with read(), "
                        f"not {type(f).__name__}")
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _load_stream(f, getattr(f, "name", None) or f"<{type(f).__name__}>",
                        map_location, weights_only)


def tensor_names(path):
    """The tensor names in a safetensors file's header."""
    with open(path, "rb") as f:
        return set(_read_header(f, path, f.tell())[1])


def _load_stream(stream, name, map_location, weights_only):
    start = stream.tell()
    head = stream.read(8)
    # torch.save's zip archive, or its legacy pickle (PROTO 2-5 opcode, and
    # a "header length" no safetensors file has)
    legacy = len(head) == 8 and head[0] == 0x80 and 2 <= head[1] <= 5 and \
        struct.unpack("<Q", head)[0] > MAX_HEADER_BYTES
    if head.startswith(_ZIP_MAGIC) or legacy:
        stream.seek(start)
        return _load_torch(stream, name, head.startswith(_ZIP_MAGIC), map_location,
                           weights_only)
    meta, entries, data_start = _read_header(stream, name, start)
    reader = _Decoder(stream, name, entries, data_start, map_location, weights_only)
    if STRUCTURE_KEY not in meta:  # a plain safetensors file: name -> tensor
        return {key: reader.tensor(key, "cpu", (key,)) for key in entries}
    try:
        structure = json.loads(meta[STRUCTURE_KEY], parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{name}: the of.save structure in the header is not JSON: {e}") \
            from None
    if not (type(structure) is dict and structure.get("format") == FORMAT
            and "object" in structure and type(structure.get("version")) is int):
        raise ValueError(f"{name}: the header's '{STRUCTURE_KEY}' is not an of.save "
                         "structure ({'format': 'of.save', 'version': N, 'object': ...})")
    if structure["version"] > VERSION:
        raise ValueError(f"{name}: written by a newer of (of.save format version "
                         f"{structure['version']}; this of reads version {VERSION})")
    try:
        obj = reader.node(structure["object"], ())
    except RecursionError:
        raise ValueError(f"{name}: the of.save structure nests deeper than this Python "
                         "can read") from None
    unused = [key for key in entries if key not in reader.used]
    if unused:
        raise ValueError(f"{name}: the file holds tensors its of.save structure does not "
                         f"refer to: {unused[:5]}{' ...' if len(unused) > 5 else ''} (a "
                         "tampered or mixed-up file)")
    return obj


def _no_constant(text):
    raise ValueError(f"{text} is not a JSON number")


def _unique_object(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice")
        out[key] = value
    return out


def _read_header(stream, name, start):
    """A safetensors header, checked: (its __metadata__, name -> (dtype,
    shape, begin, end) in the order of the data, where the data starts)."""
    stream.seek(0, os.SEEK_END)
    size = stream.tell() - start
    if size < 8:
        raise ValueError(f"{name}: not an of.save or safetensors file: {size} bytes, shorter "
                         "than the 8-byte header length (empty or cut short)")
    stream.seek(start)
    (n,) = struct.unpack("<Q", stream.read(8))
    if n > MAX_HEADER_BYTES or n > size - 8:
        raise ValueError(f"{name}: not an of.save or safetensors file: its first 8 bytes give "
                         f"a header of {n} bytes, in a file of {size} (at most "
                         f"{MAX_HEADER_BYTES} are read)")
    raw = stream.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_object,
                            parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"{name}: the safetensors header is not JSON: {e}") from None
    if type(header) is not dict:
        raise ValueError(f"{name}: the safetensors header is a JSON "
                         f"{type(header).__name__}, not an object")
    meta = header.pop("__metadata__", {})
    if type(meta) is not dict or any(type(v) is not str for v in meta.values()):
        raise ValueError(f"{name}: the header's __metadata__ is not an object of strings")
    data_bytes = size - 8 - n
    entries = {}
    for key, info in header.items():
        try:
            dtype = dt._by_name(_FROM_ST[info["dtype"]])
            shape = tuple(info["shape"])
            begin, end = info["data_offsets"]
            if not all(type(d) is int and 0 <= d <= MAX_DIM for d in shape) or \
                    type(begin) is not int or type(end) is not int:
                raise TypeError
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{name}: tensor '{key}' has a bad or unsupported entry {info} "
                             f"(of reads the dtypes {sorted(_FROM_ST)})") from None
        count = math.prod(shape)
        if not 0 <= begin <= end <= data_bytes or end - begin != count * dtype.itemsize:
            raise ValueError(f"{name}: tensor '{key}' ({info['dtype']} {list(shape)}) has "
                             f"offsets {[begin, end]} outside or inconsistent with the "
                             f"{data_bytes} data bytes (a cut-short or tampered file)")
        entries[key] = (dtype, shape, begin, end)
    # The data is the tensors back to back, every byte of it some tensor's
    # (the safetensors rule): no overlap, gap or trailing bytes.
    at = 0
    for key, (_, _, begin, end) in sorted(entries.items(), key=lambda e: e[1][2:]):
        if begin != at:
            raise ValueError(f"{name}: tensor '{key}' starts at data byte {begin}, not {at}: "
                             "the tensors overlap or leave a gap (a tampered file)")
        at = end
    if at != data_bytes:
        raise ValueError(f"{name}: the tensors end at data byte {at} of {data_bytes}: "
                         "trailing bytes (a tampered file)")
    return meta, entries, start + 8 + n


_TAGS = {"tuple", "dict", "OrderedDict", "float", "bytes", "tensor", "ndarray", "dtype",
         "device", "Size", "module"}


class _Decoder:
    """Builds the saved object from its structure, reading each tensor the
    structure refers to (once) from the stream."""

    def __init__(self, stream, name, entries, data_start, map_location, weights_only=None):
        self.stream, self.name, self.entries = stream, name, entries
        self.data_start, self.map_location = data_start, map_location
        self.weights_only = weights_only
        self.used = set()

    def bad(self, path, what):
        return ValueError(f"{self.name}: the of.save structure at {_where(path)} {what} "
                          "(a tampered or foreign file)")

    def read(self, key, path):
        if type(key) is not str or key not in self.entries:
            raise self.bad(path, f"refers to tensor {key!r}, which the file does not have")
        if key in self.used:
            raise self.bad(path, f"refers to tensor {key!r} a second time")
        self.used.add(key)
        dtype, shape, begin, end = self.entries[key]
        if dtype.np is None:
            raise ValueError(f"{self.name}: tensor '{key}' is bfloat16, which needs the "
                             "ml_dtypes package (pip install ml_dtypes)")
        array = np.empty(shape, dtype.np)
        self.stream.seek(self.data_start + begin)
        raw = array.reshape(-1).view(np.uint8)
        got = 0
        while got < raw.size:  # a raw stream may return less than asked
            if hasattr(self.stream, "readinto"):
                n = self.stream.readinto(raw[got:].data)
            else:
                chunk = self.stream.read(raw.size - got)
                n = len(chunk)
                raw[got:got + n] = np.frombuffer(chunk, np.uint8)
            if not n:
                break
            got += n
        if got != end - begin:
            raise ValueError(f"{self.name}: tensor '{key}' is cut short ({got} of "
                             f"{end - begin} bytes; the file changed while being read)")
        return array

    def tensor(self, key, location, path, requires_grad=False, parameter=False):
        array = self.read(key, path)
        value = Tensor(array, dtype=self.entries[key][0])
        value = self.place(value, location, path)
        if parameter:
            return Parameter(value, requires_grad=requires_grad)
        if requires_grad:
            value.requires_grad_(True)
        return value

    def place(self, value, location, path):
        """`value` (on the CPU) where `map_location` puts a tensor saved on
        `location`, as torch.load does."""
        target = self.map_location
        if callable(target) and not isinstance(target, (str, dict)):
            moved = target(value, location)
            if moved is None:
                return self.restore(value, location, path)
            if not isinstance(moved, Tensor) or moved.shape != value.shape or \
                    moved.dtype is not value.dtype:
                raise TypeError(f"of.load: map_location returned {type(moved).__name__} "
                                f"for the tensor at {_where(path)}; it must return the "
                                "tensor it was given, on some device (or None)")
            return moved
        if target is None:
            return self.restore(value, location, path)
        if isinstance(target, dict):
            if type(location) is str and location in target:
                target = target[location]
            else:
                return self.restore(value, location, path)
        if not isinstance(target, str):  # of.device is a str; so is 'cuda:0'
            raise TypeError(f"of.load: map_location must be None, a device, a str, a dict "
                            f"(of str) or a callable, not {type(target).__name__}")
        return value.to(device(target))

    def restore(self, value, location, path):
        """`value` on the device a saved location tag names, "cuda:N" being
        this process's GPU (an of process uses one)."""
        if type(location) is not str:
            raise self.bad(path, f"gives the location {location!r}, not a string")
        try:
            return value.to(device(location.partition(":")[0]))
        except ValueError as e:
            raise ValueError(f"{self.name}: the tensor at {_where(path)} was saved on "
                             f"'{location}', which of cannot place here ({e}); pass "
                             "map_location='cpu' (or a device) to of.load") from None

    def node(self, value, path):
        kind = type(value)
        if kind in _SCALARS or (kind is float and math.isfinite(value)):
            return value
        if kind is list:
            return [self.node(v, path + (i,)) for i, v in enumerate(value)]
        if kind is not dict:
            raise self.bad(path, f"is a JSON {kind.__name__}")
        tags = _TAGS.intersection(value)
        if len(tags) != 1:
            raise self.bad(path, f"is an object with the keys {sorted(value)}, not one node "
                                 f"tag of {sorted(_TAGS)}")
        (tag,) = tags
        allowed = {"tensor": {"tensor", "location", "requires_grad", "parameter"},
                   "ndarray": {"ndarray", "scalar"}, "module": {"module", "state"}}.get(tag, {tag})
        if not set(value) <= allowed:
            raise self.bad(path, f"has the keys {sorted(value)}; a {tag} node has "
                                 f"{sorted(allowed)}")
        body = value[tag]
        if tag in ("tensor", "ndarray") and type(body) is not str:
            raise self.bad(path, f"is a {tag} node whose name {body!r:.80} is not a string")
        if tag == "tensor":
            flags = [value.get(k, False) for k in ("requires_grad", "parameter")]
            if "location" not in value or any(type(v) is not bool for v in flags):
                raise self.bad(path, "is a tensor node without a location or with flags "
                                     "that are not booleans")
            if flags[0] and not self.entries.get(body, (dt.float32,))[0].is_floating_point:
                raise self.bad(path, "asks for gradients of a tensor that is not floating "
                                     "point")
            return self.tensor(body, value["location"], path, *flags)
        if tag == "ndarray":
            scalar = value.get("scalar", False)
            array = self.read(body, path)
            if scalar is True and array.ndim == 0:
                return array[()]
            if scalar is not False:
                raise self.bad(path, "is a NumPy scalar node of a tensor that is not 0-d")
            return array
        if tag in ("dict", "OrderedDict"):
            if type(body) is not list or any(type(p) is not list or len(p) != 2
                                             for p in body):
                raise self.bad(path, f"is a {tag} whose items are not [key, value] pairs")
            keys = [self.key(k, path) for k, _ in body]
            out = (dict if tag == "dict" else collections.OrderedDict)(
                (k, self.node(v, path + (k,))) for k, (_, v) in zip(keys, body))
            if len(out) != len(body):
                raise self.bad(path, f"is a {tag} with a key that appears twice")
            return out
        if tag == "tuple":
            if type(body) is not list:
                raise self.bad(path, "is a tuple node whose items are not a list")
            return tuple(self.node(v, path + (i,)) for i, v in enumerate(body))
        if tag == "module":
            return self.module(body, value.get("state"), path)
        return self.leaf(tag, body, path)

    def module(self, where, state, path):
        """A whole module: its class imported (weights_only=False only, as
        PyTorch's), the object made without __init__, its attributes set."""
        if type(where) is not str or where.count(":") != 1:
            raise self.bad(path, f"is a module node whose class {where!r:.80} is not "
                                 "'module:Class'")
        if self.weights_only is not False:
            raise pickle.UnpicklingError(
                f"{self.name}: {_where(path)} is a whole module of class {where} "
                "(torch.save(model)); rebuilding it imports that class's module, which runs "
                "its code. Load it with of.load(..., weights_only=False) if you trust the "
                "file (PyTorch's rule), or save and load model.state_dict() instead")
        module_name, qualname = where.split(":")
        try:
            cls = importlib.import_module(module_name)
            for part in qualname.split("."):
                cls = getattr(cls, part)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"{self.name}: the module at {_where(path)} is of class {where}, "
                             f"which can not be found here ({e}); import it first") from None
        if not (isinstance(cls, type) and _MODULE_CLASSES and
                issubclass(cls, _MODULE_CLASSES[0])):
            raise self.bad(path, f"names {where}, which is not an of.nn.Module class")
        attributes = self.node(state, path)
        if type(attributes) is not dict or not all(type(k) is str for k in attributes):
            raise self.bad(path, "is a module node whose state is not a dict of attributes")
        obj = cls.__new__(cls)
        obj.__dict__.update(attributes)
        return obj

    def leaf(self, tag, body, path):
        """The nodes that are neither containers nor tensors (also dict keys)."""
        try:
            if tag == "float" and body in ("nan", "inf", "-inf"):
                return float(body)
            if tag == "bytes" and type(body) is str:
                return base64.b64decode(body.encode("ascii"), validate=True)
            if tag == "dtype" and type(body) is str:
                return dt._by_name(body)
            if tag == "device" and type(body) is str:
                return device(body)
            if tag == "Size" and type(body) is list and \
                    all(type(d) is int and d >= 0 for d in body):
                return Size(body)
        except (ValueError, KeyError, UnicodeEncodeError):
            pass
        raise self.bad(path, f"is a {tag} node with the value {body!r:.80}, which is not one")

    def key(self, value, path):
        kind = type(value)
        if kind in _SCALARS or (kind is float and math.isfinite(value)):
            return value
        if kind is dict and len(value) == 1:
            (tag, body), = value.items()
            if tag == "tuple" and type(body) is list:
                return tuple(self.key(v, path) for v in body)
            if tag in ("float", "bytes"):
                return self.leaf(tag, body, path)
        raise self.bad(path, f"has the dict key {value!r:.80}, which is not a key node")


# --------------------------------------------------------------------------
# PyTorch's own files

def _load_torch(stream, name, is_zip, map_location, weights_only):
    """A torch.save file, read by torch.load(weights_only=True) (PyTorch's
    restricted unpickler), its tensors made of tensors."""
    what = ("a zip archive, the format of PyTorch's torch.save (.pt/.pth)" if is_zip else
            "a pickle, the legacy format of PyTorch's torch.save")
    if weights_only is False:
        raise NotImplementedError(
            f"of.load(weights_only=False) of {name} ({what}) is not supported: of reads "
            "PyTorch checkpoints only through torch.load(weights_only=True), PyTorch's "
            "restricted unpickler, and runs no other pickle (of.save files load the same "
            "with any weights_only)")
    try:
        import torch
    except ImportError:
        raise RuntimeError(
            f"{name} is {what}, not an of.save (safetensors) file. of reads no pickles "
            "itself; with torch installed, of.load reads it through torch.load("
            "weights_only=True). Install torch, or convert the checkpoint to safetensors "
            "(safetensors.torch.save_file(state_dict, path))") from None
    if "__of_module__" in vars(torch):  # of.mock_torch: `torch` is of itself
        raise RuntimeError(
            f"{name} is {what}, which of reads through the real torch.load, but "
            "of.mock_torch is on (import torch gives of): load it with the mock off, or "
            "convert it to safetensors first")
    try:
        obj = torch.load(stream, map_location=map_location, weights_only=True)
    except Exception as e:  # noqa: BLE001 - whatever torch says, with the file named
        raise RuntimeError(f"{name} is {what}, which torch.load(weights_only=True) could "
                           f"not read: {type(e).__name__}: {e}") from e
    return _from_torch(obj, torch, name, ())


def _from_torch(value, torch, name, path):
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.dtype == torch.bfloat16:
            array = tensor.float().numpy().astype(dt.bfloat16.np)
        else:
            try:
                array = tensor.numpy()
                dt.from_numpy(array.dtype)
            except (TypeError, RuntimeError) as e:
                raise ValueError(f"{name}: the tensor at {_where(path)} is {value.dtype}, "
                                 f"which of has no dtype for ({e})") from None
        out = Tensor(_c_order(array), dtype=dt.from_numpy(array.dtype))
        if value.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{name}: the tensor at {_where(path)} is on {value.device}; "
                             "of places tensors on 'cpu' or 'cuda' (pass map_location)")
        out = out.to(device(value.device.type))
        if isinstance(value, torch.nn.Parameter):
            return Parameter(out, requires_grad=value.requires_grad)
        if value.requires_grad:
            out.requires_grad_(True)
        return out
    kind = type(value)
    if kind in (dict, collections.OrderedDict):
        return kind((k, _from_torch(v, torch, name, path + (k,))) for k, v in value.items())
    if kind in (list, tuple):
        return kind(_from_torch(v, torch, name, path + (i,)) for i, v in enumerate(value))
    if isinstance(value, torch.Size):
        return Size(value)
    if isinstance(value, torch.dtype):
        of_name = str(value).removeprefix("torch.")
        if of_name not in dt._BY_NAME:
            raise ValueError(f"{name}: {_where(path)} is {value}, which of has no dtype for")
        return dt._by_name(of_name)
    if isinstance(value, torch.device):
        return device(value.type)
    if type(value).__module__.split(".")[0] == "torch":
        raise ValueError(f"{name}: {_where(path)} is a {type(value).__qualname__}, a torch "
                         "object of has no counterpart for")
    return value
