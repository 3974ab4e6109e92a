"""torch.distributions.utils: conversions between a distribution's
probabilities and logits, as PyTorch computes them."""

import numpy as np

from .. import _ops
from .._grad_mode import enable_grad


def clamp_probs(probs):
    """`probs` clamped to [eps, 1 - eps], eps the dtype's machine epsilon."""
    eps = float(np.finfo(probs.dtype.np).eps)
    return _ops.clamp(probs, min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(clamp_probs(probs)) (with is_binary, log(p) - log1p(-p))."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return _ops.sub(_ops.log(ps_clamped), _ops.log(_ops.sub(1.0, ps_clamped)))
    return _ops.log(ps_clamped)


def logits_to_probs(logits, is_binary=False):
    """softmax(logits, -1) (with is_binary, sigmoid(logits))."""
    if is_binary:
        return _ops.sigmoid(logits)
    return _ops.softmax(logits, -1)


class lazy_property:  # noqa: N801 (PyTorch's name)
    """A property computed once, on first use, with gradients enabled (as
    PyTorch's), then kept as the instance's attribute."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
