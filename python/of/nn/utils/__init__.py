"""torch.nn.utils: gradient clipping and parameter vectors. Each is one
compiled function of the gradients (cached per signature), so a clip is
two plan runs, not one eager op per parameter."""

import math

import numpy as np

from ... import _ops
from ..._grad_mode import no_grad
from ..._jit import CompiledFunction
from ..._tensor import Tensor
from . import rnn  # noqa: F401


def _tensors(parameters):
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _norm_of(grads, norm_type):
    if norm_type == math.inf:
        terms = [g.abs().amax() if hasattr(g, "abs") else _ops.amax(_ops.maximum(g, -g))
                 for g in grads]
        total = terms[0]
        for t in terms[1:]:
            total = _ops.maximum(total, t)
        return total
    total = None
    for g in grads:
        term = (g * g).sum()
        total = term if total is None else total + term
    return _ops.sqrt(total)


_functions = {}


def _compiled(name, fn):
    f = _functions.get(name)
    if f is None:
        f = _functions[name] = CompiledFunction(fn, [], name)
    return f


def _check_norm_type(norm_type):
    norm_type = float(norm_type)
    if norm_type not in (2.0, math.inf):
        raise NotImplementedError(
            f"clip_grad_norm_(norm_type={norm_type}) is not supported yet: of computes the "
            "2-norm and the inf-norm")
    return norm_type


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (torch.nn.utils.get_total_norm)."""
    norm_type = _check_norm_type(norm_type)
    tensors = _tensors(tensors)
    if not tensors:
        return _ops.tensor(0.0)
    with no_grad():
        fn = _compiled(f"grad_norm_{'inf' if norm_type == math.inf else 2}",
                       lambda *g: _norm_of(g, norm_type))
        total = fn(*tensors)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    # in float32, as PyTorch computes it
    coef = np.float32(max_norm) / (np.float32(total_norm.item()) + np.float32(1e-6))
    if coef >= 1.0:
        return  # PyTorch multiplies by the clamped 1.0: the same values
    with no_grad():
        fn = _compiled("clip_grads", lambda c, *g: tuple(x * c for x in g))
        scaled = fn(_ops.tensor(float(coef), dtype=grads[0].dtype), *grads)
    for g, s in zip(grads, scaled if isinstance(scaled, tuple) else (scaled,)):
        g._set_value(s._value())


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """torch.nn.utils.clip_grad_norm_: scales the gradients in place so
    that their total norm is at most `max_norm`; returns the total norm
    before clipping."""
    parameters = _tensors(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return _ops.tensor(0.0)
    pending = grads[0]._pending
    if pending is not None and float(norm_type) == 2.0 and not error_if_nonfinite:
        # gradients of a compiled forward's call not computed yet (the
        # standard loop under of.compile): the clip joins its training step
        norm = pending.request_clip(
            parameters, max_norm,
            lambda: clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite))
        if norm is not None:
            return norm
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        fn = _compiled("clip_grad_value", lambda c, *g: tuple(
            _ops.minimum(_ops.maximum(x, -c), c) for x in g))
        clipped = fn(_ops.tensor(clip_value, dtype=grads[0].dtype), *grads)
    for g, s in zip(grads, clipped if isinstance(clipped, tuple) else (clipped,)):
        g._set_value(s._value())


def parameters_to_vector(parameters):
    return _ops.cat([p.reshape(-1) for p in _tensors(parameters)])


def vector_to_parameters(vec, parameters):
    offset = 0
    for p in _tensors(parameters):
        n = p.numel()
        p.data = vec[offset:offset + n].reshape(p.shape)
        offset += n
