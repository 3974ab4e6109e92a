"""torch.distributions.Categorical over of tensors: PyTorch's normalisation
of probs or logits, log_prob (a gather of the normalised logits), entropy,
and samples drawn by of.multinomial (eager: the probabilities' values)."""

import math

import numpy as np

from .. import _dtype as dt
from .. import _ops
from .._grad_mode import no_grad
from .._tensor import Size
from .._torch_functions import logsumexp
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits


def _simplex(p):
    return (p >= 0).all() and (np.abs(p.sum(-1) - 1) < 1e-6).all()


class Categorical(Distribution):
    """Categorical(probs=None, logits=None, validate_args=None): samples are
    integers in [0, K), K = the last dimension of `probs` or `logits` (the
    others are the batch). `probs` are normalised to sum to 1, `logits` to
    log-probabilities, as PyTorch's; the one not given is computed from the
    other when first used (logits as log(probs) clamped to [eps, 1 - eps])."""

    # the constraints as (PyTorch's name, check of the values)
    arg_constraints = {"probs": ("Simplex()", _simplex),
                       "logits": ("IndependentConstraint(Real(), 1)",
                                  lambda v: (v == v).all())}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = _ops.div(probs, _ops.sum(probs, -1, keepdim=True))
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = _ops.sub(logits, logsumexp(logits, dim=-1, keepdim=True))
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = tuple(self._param.shape[:-1]) if self._param.ndim > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def support(self):
        high = self._num_events - 1
        return (f"IntegerInterval(lower_bound=0, upper_bound={high})",
                lambda v: ((v % 1 == 0) & (v >= 0) & (v <= high)).all())

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return Size(self._param.shape)

    @property
    def mean(self):
        return _ops.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                         device=self.probs.device)

    @property
    def mode(self):
        return _ops.argmax(self.probs, dim=-1)

    @property
    def variance(self):
        return _ops.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                         device=self.probs.device)

    def sample(self, sample_shape=Size()):
        """torch.multinomial(probs, n, replacement=True) per batch element,
        shaped sample_shape + batch_shape. Eager only."""
        sample_shape = Size(sample_shape)
        with no_grad():
            probs_2d = _ops.reshape(self.probs, (-1, self._num_events))
            samples_2d = _ops.transpose(
                _ops.multinomial(probs_2d, sample_shape.numel(), True), 0, 1)
            return _ops.reshape(samples_2d, tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = _ops.unsqueeze(_ops.cast(value, dt.int64), -1)
        shape = tuple(np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape)))
        value = _ops.broadcast_to(value, shape[:-1] + (1,))
        log_pmf = _ops.broadcast_to(self.logits, shape)
        return _ops.squeeze(_ops.gather(log_pmf, -1, value), -1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype.np).min)
        logits = _ops.clamp(self.logits, min=min_real)
        p_log_p = _ops.mul(logits, self.probs)
        return _ops.neg(_ops.sum(p_log_p, -1))

    def enumerate_support(self, expand=True):
        values = _ops.arange(self._num_events, dtype=dt.int64, device=self._param.device)
        values = _ops.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = _ops.broadcast_to(values, (self._num_events,) + tuple(self._batch_shape))
        return values
