"""Samplers: PyTorch's torch/utils/data/sampler.py for of.

A sampler yields the keys (indices) a loader fetches, or (`BatchSampler`)
lists of them. The random ones draw from of's generator as PyTorch's draw
from its default one (`_rng`): `RandomSampler` one seed per epoch for a
private generator, `SubsetRandomSampler` and `WeightedRandomSampler` their
draws directly, each when its iterator starts.
"""

import itertools
from typing import Generic, TypeVar

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from . import _rng
from ._collate import _host, _is_torch_tensor

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class of samplers: subclasses define `__iter__` and may define
    `__len__` (no default one: len() of a sampler without it is a
    TypeError, as in PyTorch)."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices per epoch (`num_samples` beyond
    the dataset's length: whole permutations one after another, then part
    of one), or `num_samples` indices drawn with replacement. Each epoch
    draws one seed from of's generator when its iteration starts."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        _rng.check_generator("RandomSampler", generator)
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # the dataset's size may change after the sampler is made
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _rng.private(_rng.draw_seed())
        if self.replacement:  # in chunks of 32, as PyTorch (num_samples may be 1e10)
            for start in range(0, self.num_samples, 32):
                yield from rng.integers(0, n, size=min(32, self.num_samples - start)).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from rng.permutation(n).tolist()
            yield from rng.permutation(n).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """`indices` in a random order (drawn from of's generator per epoch)."""

    def __init__(self, indices, generator=None):
        _rng.check_generator("SubsetRandomSampler", generator)
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _rng.default().permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _as_float64(values):
    """`values` (a sequence, an of or torch tensor, an array) as a float64
    NumPy array."""
    if isinstance(values, Tensor) or _is_torch_tensor(values):
        values = _host(values)[0]
    return np.asarray(values, dtype=np.float64)


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` indices of `weights`, each drawn with probability
    proportional to its weight (with replacement, or without: an index is
    then drawn at most once)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if (not isinstance(num_samples, int) or isinstance(num_samples, bool)
                or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        _rng.check_generator("WeightedRandomSampler", generator)
        weights = _as_float64(weights)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = Tensor(weights, dtype=dt.float64)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        # torch.multinomial's checks, then its draw
        weights = self.weights.numpy()
        if not np.isfinite(weights).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (weights < 0).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        total = weights.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > len(weights):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        generator = _rng.default()
        if self.replacement:
            drawn = generator.choice(len(weights), size=self.num_samples, p=weights / total)
            yield from drawn.tolist()
            return
        # without replacement: the positive weights' indices in a weighted
        # order, then (as torch.multinomial) zero-weight ones, in a random order
        positive = np.flatnonzero(weights > 0)
        first = generator.choice(len(weights), size=min(self.num_samples, len(positive)),
                                 replace=False, p=weights / total)
        rest = generator.permutation(np.flatnonzero(weights == 0))
        yield from first.tolist() + rest[:self.num_samples - len(first)].tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Lists of `batch_size` indices of `sampler` (the last one shorter
    unless `drop_last`)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[sampler_iter] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
