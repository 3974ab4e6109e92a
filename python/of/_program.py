"""Programs as text: an `of` function written op by op (`Program`), the
text of one op (`OpSpec`, `_write_op`), MLIR types and literals, and the
program this thread is tracing. A tensor is read here for its type, device
and placement only; what an op computes is `_apply`'s and `_ops`'."""

import os
import sys
import threading

import numpy as np

from . import _dtype as dt
from ._dist import device

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------
# Source locations: the first frame outside the of package.

def user_frame():
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


# --------------------------------------------------------------------------
# Programs.

def _type(shape, dtype, plc=None, sbp_list=None):
    t = "tensor<" + "".join(f"{d}x" for d in shape) + dtype.mlir
    if plc is not None:
        t += f", #of.sbp<@{plc.symbol()}, [{', '.join(s.mlir() for s in sbp_list)}]>"
    return t + ">"


def float_text(v):
    """A finite float as an MLIR float literal (which needs a '.'),
    exact to the last bit."""
    text = repr(float(v))
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}"
    return text if "." in text else text + ".0"


def _float_literal(v, dtype):
    v = float(v)
    if np.isfinite(v):
        return float_text(v)
    bits = {"f32": ("<f4", 8), "f64": ("<f8", 16), "f16": ("<f2", 4)}
    if dtype.mlir == "bf16":
        raw = np.array([v], "<f4").view("<u4")[0] >> 16
        return f"0x{int(raw):04X}"
    code, width = bits[dtype.mlir]
    raw = np.array([v], code).view(f"<u{code[-1]}")[0]
    return f"0x{int(raw):0{width}X}"


class Program:
    """An `of` function being written: arguments, ops, results."""

    def __init__(self, name, trace=False):
        self.name = name
        self.trace = trace
        self.args = []       # (ssa, type, attrs)
        self.arg_tensors = []  # the tensor each argument is bound to
        self.lines = []
        self.placements = {}
        self.device = None   # the device its tensors are on: its pipeline
        self.values = {}     # id(tensor) -> ssa, for tensors of this program
        self.keep = []       # tensors whose ids are keys of values
        self.counter = 0
        self.seed_arg = None
        self.dropouts = 0
        self.loss = None
        self.updates = []    # (state tensor, its new value) written by the program
        self.train = False   # traced as a training step (gradients of the loss)
        # --of-auto-parallel chooses the arguments' SBP: they are written
        # with their placement's program but no distribution
        self.auto_parallel = False
        self.bindings = {}   # id(module state) -> (its state_dict name, trained)
        self.weight_decays = {}  # id(parameter) -> its group's weight decay, if groups differ
        self.recompute = None  # the checkpointed segment being traced (of.utils.checkpoint)
        self.segments = 0      # segments numbered so far
        self._types = {}     # ssa -> type text

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def note_placement(self, plc):
        if plc is not None:
            self.placements[plc.symbol()] = plc
            self.note_device(plc.type, f"the placement {plc}")

    def note_device(self, dev, what):
        """Records that `what` is on `dev`: a program (a plan) runs on one
        kind of device."""
        if self.device is None:
            self.device = device(dev)
        elif dev != self.device:
            raise ValueError(
                f"{what} is on '{dev}' but other tensors of this "
                f"{'traced function' if self.trace else 'op'} are on '{self.device}'; "
                f"a program runs on one kind of device: move the tensors (and the model) "
                f"with .to('{self.device}') or .to('{dev}')")

    def add_arg(self, tensor, name=None, param=False, weight_decay=None):
        """The argument bound to `tensor`: named, a trained parameter, with
        its own weight decay."""
        if tensor._placement is None and not tensor._device_neutral():
            self.note_device(tensor._local_device,
                             f"'{name}'" if name else f"a tensor of shape {list(tensor.shape)}")
        attrs = []
        if name is not None:
            attrs.append(f'of.name = "{name}"')
        if param:
            attrs.append("of.param")
        if weight_decay is not None:
            attrs.append(f"of.weight_decay = {float_text(weight_decay)} : f64")
        if self.auto_parallel and tensor._placement is not None:
            ty = _type(tensor.shape, tensor.dtype)
        else:
            ty = _type(tensor.shape, tensor.dtype, tensor._placement, tensor._sbp)
        ssa = self.add_typed_arg(ty, tensor._placement, attrs)
        self.arg_tensors.append(tensor)
        self.values[id(tensor)] = ssa
        self.keep.append(tensor)
        return ssa

    def add_typed_arg(self, ty, plc=None, attrs=()):
        """An argument of type `ty` (its text) on placement `plc`, bound to
        no tensor."""
        ssa = self.fresh("a")
        self.note_placement(plc)
        self.args.append((ssa, ty, list(attrs)))
        self._types[ssa] = ty
        return ssa

    def capture(self, t):
        """The argument for module state `t` read by a traced program, or
        None for a tensor that is no module's (it becomes a constant)."""
        binding = self.bindings.get(id(t))
        if binding is None:
            return None
        name, trainable = binding
        decay = self.weight_decays.get(id(t))
        return self.add_arg(t, name=name, param=trainable and self.train,
                            weight_decay=decay if trainable and self.train else None)

    def constant(self, array, dtype):
        """A constant op for `array` (any size)."""
        array = np.asarray(array)
        ssa = self.fresh("c")
        if dtype is dt.bool:
            as_i8 = self.constant(array.astype(np.int8), dt.int8)
            zero = self.constant(np.zeros((), np.int8), dt.int8)
            self.lines.append(
                f"{ssa} = of.compare ne, {as_i8}, {zero} : ({_type(array.shape, dt.int8)}, "
                f"{_type((), dt.int8)}) -> {_type(array.shape, dt.bool)}")
            self._types[ssa] = _type(array.shape, dt.bool)
            return ssa
        ty = _type(array.shape, dtype)
        if array.size == 1:
            v = array.reshape(-1)[0]
            lit = _float_literal(v, dtype) if dtype.is_floating_point else str(int(v))
        else:
            raw = np.ascontiguousarray(array.astype(dtype.carrier)).tobytes()
            lit = f'"0x{raw.hex().upper()}"'
        self.lines.append(f"{ssa} = of.constant dense<{lit}> : {ty}")
        self._types[ssa] = ty
        return ssa

    def text(self, results, result_attrs=None):
        """The function returning `results` [(ssa, type)]; `result_attrs`
        gives each result's attribute text (None for none)."""
        header = "".join(p.mlir() + "\n" for p in self.placements.values())
        args = ", ".join(
            f"{ssa}: {ty}" + (f" {{{', '.join(attrs)}}}" if attrs else "")
            for ssa, ty, attrs in self.args)
        result_attrs = result_attrs or [None] * len(results)
        rtypes = ", ".join(
            ty + (f" {{{a}}}" if a else "")
            for (_, ty), a in zip(results, result_attrs))
        body = "\n  ".join(self.lines)
        ret = ", ".join(ssa for ssa, _ in results)
        rts = ", ".join(ty for _, ty in results)
        return (f"{header}func.func @{self.name}({args}) -> ({rtypes}) {{\n  {body}\n"
                f"  return {ret} : {rts}\n}}\n")


class _TraceState(threading.local):
    def __init__(self):
        self.program = None


_trace = _TraceState()


def tracing():
    return _trace.program


# --------------------------------------------------------------------------
# One op.

class OpSpec:
    """One op: `fmt` is its text with {0}, {1}, ... for the operands,
    `attrs` its attribute dictionary text (may be empty), `outs` the result
    (shape, dtype) pairs, and `sig` the type syntax: "functional"
    (`(operands) -> results`), "cast" (`T to R`) or "arrow" (`T -> R`)."""

    __slots__ = ("fmt", "attrs", "outs", "sig")

    def __init__(self, fmt, attrs, outs, sig="functional"):
        self.fmt = fmt
        self.attrs = attrs
        self.outs = outs
        self.sig = sig


def _write_op(program, spec, operands, loc):
    """Appends op `spec` on SSA values `operands` to `program`, at source
    location `loc` ((file, line) or None); returns its results' names."""
    names = [program.fresh() for _ in spec.outs]
    if len(names) == 1:
        lhs = names[0]
        refs = names
    else:
        base = program.fresh()
        lhs = f"{base}:{len(names)}"
        refs = [f"{base}#{i}" for i in range(len(names))]
    text = spec.fmt.format(*operands)
    attrs = spec.attrs
    if program.recompute is not None:
        attrs = (attrs + ", " if attrs else "") + f"of.recompute = {program.recompute} : i64"
    if attrs:
        text += " {" + attrs + "}"
    out_types = [_type(s, d) for s, d in spec.outs]
    if spec.sig == "cast":
        text += f" : {program._types[operands[0]]} to {out_types[0]}"
    elif spec.sig == "arrow":
        text += f" : {program._types[operands[0]]} -> {out_types[0]}"
    else:
        ins = ", ".join(program._types[o] for o in operands)
        outs = out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")"
        text += f" : ({ins}) -> {outs}"
    if loc is not None:
        text += f' loc("{loc[0]}":{loc[1]}:1)'
    program.lines.append(f"{lhs} = {text}")
    for r, t in zip(refs, out_types):
        program._types[r] = t
    return refs

