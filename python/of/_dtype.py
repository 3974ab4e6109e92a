"""Element types: of.float32, of.bfloat16, ... (PyTorch's names), each with
its MLIR spelling and NumPy dtype."""

import numpy as np

try:
    import ml_dtypes
    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 tensors then need ml_dtypes; everything else works
    _BF16 = None


class dtype:
    """`np` is how a tensor of the dtype is stored (its NumPy dtype), `mlir`
    the element type its programs compute in and `carrier` that type's
    NumPy dtype: the same type, except for uint8, which the compiler (whose
    integers are signless) computes as i32 and which is narrowed back, with
    wraparound, when a value is read (see of.uint8)."""

    __slots__ = ("name", "mlir", "np", "is_floating_point", "itemsize", "carrier")

    def __init__(self, name, mlir, np_dtype, is_float, carrier=None):
        self.name = name
        self.mlir = mlir
        self.np = np_dtype
        self.is_floating_point = is_float
        self.itemsize = np_dtype.itemsize if np_dtype is not None else 2
        self.carrier = np.dtype(carrier) if carrier is not None else np_dtype

    def __repr__(self):
        return "of." + self.name

    def stored(self, array):
        """`array`, a value read from a run (in the carrier type), as this
        dtype stores it: a uint8 value narrowed modulo 256."""
        if self.np is None or array.dtype == self.np:
            return array
        return array.astype(self.np)

    def __reduce__(self):
        return (_by_name, (self.name,))


float32 = dtype("float32", "f32", np.dtype(np.float32), True)
float64 = dtype("float64", "f64", np.dtype(np.float64), True)
float16 = dtype("float16", "f16", np.dtype(np.float16), True)
bfloat16 = dtype("bfloat16", "bf16", _BF16, True)
int64 = dtype("int64", "i64", np.dtype(np.int64), False)
int32 = dtype("int32", "i32", np.dtype(np.int32), False)
int8 = dtype("int8", "i8", np.dtype(np.int8), False)
bool = dtype("bool", "i1", np.dtype(np.bool_), False)  # noqa: A001 (torch's name)
# Stored as bytes, computed as i32: the compiler has signless integers only,
# and every uint8 value (0..255) is an i32. Results are narrowed modulo 256
# (PyTorch's wraparound) where they are made: uint8 add/sub/mul and casts
# to uint8 in the ops, and a value read from a run.
uint8 = dtype("uint8", "i32", np.dtype(np.uint8), False, carrier=np.int32)

class layout:
    """A tensor's storage layout (torch.layout): of.strided, or of.sparse_coo
    (of.sparse: stored densely)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"of.{self._name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001

ALL = (float32, float64, float16, bfloat16, int64, int32, int8, bool, uint8)
_BY_MLIR = {d.mlir: d for d in ALL if d.carrier == d.np or d.np is None}
_BY_NAME = {d.name: d for d in ALL}


def _by_name(name):
    return _BY_NAME[name]


def from_mlir(name):
    return _BY_MLIR[name]


def from_numpy(np_dtype):
    np_dtype = np.dtype(np_dtype)
    for d in ALL:
        if d.np is not None and d.np == np_dtype:
            return d
    raise TypeError(f"of has no dtype for NumPy's {np_dtype} "
                    f"(of has {', '.join(d.name for d in ALL)})")


def default_for(value):
    """The dtype PyTorch gives a Python value: bool, int64 or float32."""
    if isinstance(value, (np.ndarray, np.generic)):
        return from_numpy(value.dtype)
    import builtins
    if isinstance(value, builtins.bool):
        return bool
    if isinstance(value, builtins.int):
        return int64
    return float32
