"""torch.distributions.Distribution: the base of of's distributions (batch
and event shapes, argument and sample validation, PyTorch's messages)."""

import numpy as np

from .._tensor import Size, Tensor
from .utils import lazy_property

# PyTorch validates by default (unless Python runs with -O)
_default_validate_args = __debug__


def _shape_repr(shape):
    return f"torch.Size({list(shape)})"


class Distribution:
    """Distribution(batch_shape=(), event_shape=(), validate_args=None).
    Validation reads the values, so it runs on eager tensors; the values of
    a tensor of a traced function are not known, and are not checked."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        global _default_validate_args
        _default_validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = _default_validate_args if validate_args is None \
            else validate_args
        if self._validate_args:
            for name, check in self.arg_constraints.items():
                if name not in self.__dict__ and isinstance(
                        getattr(type(self), name, None), lazy_property):
                    continue  # computed from the other parameter: not given
                value = getattr(self, name)
                valid = self._check_values(check, value)
                if valid is not None and not valid:
                    raise ValueError(
                        f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                        f"distribution {self!r} to satisfy the constraint {check[0]}, but "
                        f"found invalid values:\n{value}")
        super().__init__()

    @staticmethod
    def _check_values(check, value):
        """check[1](array) on the value's elements, or None for a traced
        tensor (values unknown)."""
        if not isinstance(value, Tensor) or value._program is not None:
            return None
        return bool(check[1](np.asarray(value.detach().numpy())))

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        raise NotImplementedError

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError

    def sample_n(self, n):
        raise NotImplementedError("Distribution.sample_n is deprecated in PyTorch: use "
                                  "sample((n,))")

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _validate_sample(self, value):
        """PyTorch's checks of a value given to log_prob: a tensor, shaped
        to broadcast with batch_shape + event_shape, within the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{_shape_repr(value.shape)} vs {_shape_repr(self._event_shape)}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{_shape_repr(actual)} vs {_shape_repr(expected)}.")
        support = self.support
        valid = self._check_values(support, value)
        if valid is not None and not valid:
            raise ValueError(
                f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within "
                f"the support ({support[0]}) of the distribution {self!r}, but found invalid "
                f"values:\n{value}")

    def __repr__(self):
        def shown(value):
            return value if value.numel() == 1 else _shape_repr(value.shape)
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {shown(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"
