"""Sessions: an entry of a compiled plan run by libofrt on this rank, its
inputs set and its results read as NumPy arrays."""

import numpy as np

from . import _dtype as dt
from ._dist import _sbp_from_runtime
from ._runtime import _C, world


def _raw(array):
    """`array` as the binding's buffer: a dtype that is not NumPy's own
    (ml_dtypes' bfloat16, whose format character 'E' the buffer protocol
    cannot export) is viewed as unsigned integers of its size, the same
    bytes; the runtime only copies bytes, checked by count."""
    if array.dtype.isbuiltin == 2:
        return array.view(np.dtype(f"u{array.dtype.itemsize}"))
    return array


class Runner:
    """An entry of a plan as a session of this rank, with its inputs' and
    outputs' descriptions."""

    def __init__(self, plan_bytes, entry="", device="cpu"):
        C = _C()
        self.device = device  # what the plan was compiled for
        self.plan = C.Plan(plan_bytes)
        distributed = self.plan.world_size > 1
        if distributed:
            rank, size = world()
            if size != self.plan.world_size:
                raise RuntimeError(
                    f"the program is placed on {self.plan.world_size} ranks but this job "
                    f"has {size}; start it with `python -m of.distributed.launch "
                    f"--nproc {self.plan.world_size} ...`")
        self.session = C.Session(self.plan, entry, distributed, 0)
        self.inputs = self.session.inputs()
        self.outputs = self.session.outputs()
        self.input_index = {d["name"]: i for i, d in enumerate(self.inputs)}
        self.versions = {}  # input index -> (id, version) last set
        self.runs = 0

        self._out_np = [(tuple(d["shape"]), dt.from_mlir(d["dtype"]).np)
                        for d in self.outputs]
        self._in_np = [dt.from_mlir(d["dtype"]).np for d in self.inputs]

    def set(self, index, array, global_value=False):
        if array.dtype != self._in_np[index]:  # a uint8 tensor's bytes: computed as i32
            array = array.astype(self._in_np[index])
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self.session.set_input(index, _raw(array), global_value)

    def run(self):
        self.session.run()
        self.runs += 1

    def input(self, index, dtype):
        """This rank's part of input `index` as the session holds it now (a
        parameter a training step updated), read as `dtype`."""
        out = np.empty(self.inputs[index]["shape"], dtype=self._in_np[index])
        self.session.get_input(index, _raw(out))
        return dtype.stored(out)

    def output(self, index):
        shape, np_dtype = self._out_np[index]
        out = np.empty(shape, dtype=np_dtype)
        self.session.get_output(index, _raw(out))
        return out

    def input_dist(self, index):
        d = self.inputs[index]
        if "sbp" not in d:
            return None
        return tuple(_sbp_from_runtime(c) for c in d["sbp"])

    def output_dist(self, index):
        d = self.outputs[index]
        if "sbp" not in d:
            return None
        return tuple(_sbp_from_runtime(c) for c in d["sbp"])
