"""Datasets: PyTorch's torch/utils/data/dataset.py for of.

A map-style dataset (`Dataset`) maps keys to samples (`__getitem__`,
usually `__len__`); an iterable one (`IterableDataset`) is a stream
(`__iter__`). Samples may be of tensors, NumPy arrays, torch tensors or any
Python values; the loader's collate function makes of tensors of them.
"""

import bisect
import functools
import itertools
import math
import operator
import warnings
from typing import Generic, Iterable, TypeVar

import numpy as np

from ..._tensor import Tensor, _c_order
from . import _rng

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys to samples: subclasses define `__getitem__`, and
    usually `__len__` (the default samplers need it). `__getitems__(indices)`,
    where defined, fetches a batch's samples at once."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    # No default __len__ (PyTorch's reasons: len() of a dataset without one
    # must be a TypeError, not a wrong number).


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples: subclasses define `__iter__` (an abstract
    method: a subclass without one cannot be made, as in PyTorch). With
    `DataLoader(num_workers=N)` each worker iterates its own copy of the
    dataset (`get_worker_info()` tells it which), as in PyTorch."""

    def __add__(self, other):
        return ChainDataset([self, other])


def _plain(t):
    """Whether `t` is an of tensor whose rows can be read through NumPy: a
    local value, not traced and not recording gradients."""
    return (isinstance(t, Tensor) and not t.is_global and not t.requires_grad
            and t._program is None)


def _rows(t, index):
    """`t[index]` of a plain of tensor read through NumPy (of's eager
    indexing compiles one slice program per distinct index); a copy, so the
    sample does not change with `t`."""
    array = t.numpy()[index]
    return Tensor(_c_order(np.array(array, copy=True)), dtype=t.dtype, device=t.device)


def _sample_reader(dataset):
    """`dataset.__getitem__`, or for a plain of tensor its rows through
    NumPy (the same values)."""
    if _plain(dataset):
        return functools.partial(_rows, dataset)
    return functools.partial(operator.getitem, dataset)


class TensorDataset(Dataset):
    """Samples are the rows of `tensors` (of tensors, or torch tensors and
    NumPy arrays) along their first dimension: `dataset[i]` is
    `tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(_rows(t, index) if _plain(t) else t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets side by side: `StackDataset(a, b)[i] == (a[i], b[i])`,
    `StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}`."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) "
                    "like input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(dataset) for dataset in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            datasets = list(kwargs.values())
            self._length = len(datasets[0])
            if any(self._length != len(dataset) for dataset in datasets):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    @staticmethod
    def _items(dataset, indices):
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError("Nested dataset's output size mismatch."
                                 f" Expected {len(indices)}, got {len(items)}")
            return items
        return [dataset[i] for i in indices]

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            batch = [{} for _ in indices]
            for k, dataset in self.datasets.items():
                for sample, item in zip(batch, self._items(dataset, indices)):
                    sample[k] = item
            return batch
        columns = [self._items(dataset, indices) for dataset in self.datasets]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets):
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other, chained as they are iterated."""

    def __init__(self, datasets: Iterable[Dataset]):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` at random into non-overlapping Subsets of `lengths`:
    counts, or fractions summing to 1 (each floor(fraction * len), the
    remainder handed out one by one from the first split, as PyTorch).
    The permutation is drawn from of's generator (`of.manual_seed`);
    `generator` must be None (see `_rng`)."""
    _rng.check_generator("random_split", generator)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _rng.default().permutation(sum(lengths)).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
