"""DataLoader: PyTorch's torch/utils/data/dataloader.py for of.

It takes PyTorch's arguments with their meaning and errors, and yields the
batches PyTorch's loader yields (as of tensors, through `default_collate`),
in the same order. Loading runs in this process: `num_workers=N` makes N
workers that run here, one batch at a time, in PyTorch's order (`_worker`),
so the batches are those of PyTorch's N worker processes, including an
IterableDataset's N copies and what `worker_init_fn` and `get_worker_info`
make of them; nothing is loaded in parallel or ahead.
"""

import functools
import multiprocessing
import time
import warnings
from math import ceil
from typing import Generic, TypeVar

from . import _rng
from ._collate import default_collate, default_convert
from ._worker import InProcessWorker
from .dataset import IterableDataset, _sample_reader
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

T_co = TypeVar("T_co", covariant=True)


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """The keys of an IterableDataset: None, forever (the dataset decides
    when it ends)."""

    def __iter__(self):
        while True:
            yield None


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.getitem = _sample_reader(dataset)

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.getitem(idx) for idx in possibly_batched_index]
        else:
            data = self.getitem(possibly_batched_index)
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _make_fetcher(kind, auto_collation, collate_fn, drop_last, dataset):
    fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)


class DataLoader(Generic[T_co]):
    """Batches of `dataset`, PyTorch's DataLoader with its arguments:

    - `batch_size` (None: no batching, samples through `default_convert`),
      `shuffle` (a RandomSampler drawing from of's generator: reproducible
      under `of.manual_seed`), `sampler`, `batch_sampler`, `drop_last`,
      `collate_fn` (default `default_collate`: of tensors), with PyTorch's
      ValueErrors for combinations it refuses.
    - `num_workers=N`: N workers that run in this process (see the module
      docstring): the same batches, in the same order, as PyTorch's N
      processes; `worker_init_fn(id)` runs in each worker before it loads,
      `get_worker_info()` describes the worker (its own shallow copy of the
      dataset and random states) while it runs. `persistent_workers` keeps
      the workers (their dataset copies and states) from epoch to epoch.
    - How PyTorch loads, not what: `pin_memory`, `pin_memory_device`,
      `prefetch_factor`, `multiprocessing_context` and `in_order` are
      checked as PyTorch checks them and change nothing (nothing is loaded
      ahead, so batches always come in order). `timeout` > 0 (PyTorch: only
      with workers) raises PyTorch's RuntimeError for a batch that took
      longer than that to load.
    - `generator` must be None: the loader's draws (a seed per epoch for the
      workers, the shuffle) come from of's generator.

    The batches it yields are of tensors (with `default_collate`); a
    dataset's torch tensors are copied into them through NumPy.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            # the keys of a stream mean nothing: no sampler, no shuffle
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            elif batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is "
                                 "mutually exclusive with drop_last")

        _rng.check_generator("DataLoader", generator)
        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        # PyTorch's checks; the context itself starts nothing here
        if context is not None:
            if self.num_workers > 0:
                if isinstance(context, str):
                    methods = multiprocessing.get_all_start_methods()
                    if context not in methods:
                        raise ValueError(
                            f"multiprocessing_context option should specify a valid start "
                            f"method in {methods!r}, but got multiprocessing_context="
                            f"{context!r}")
                    context = multiprocessing.get_context(context)
                if not isinstance(context, multiprocessing.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context object or "
                        f"a string specifying the start method, but got "
                        f"multiprocessing_context={context}")
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = _DataLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _DataLoaderIter(self)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            # the dataset's own length, in batches: PyTorch trusts a dataset
            # to shard itself across workers, and so warns when more come
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else ceil(
                    length / self.batch_size)
            return length
        return len(self._index_sampler)


class _DataLoaderIter:
    """One epoch of a loader (of every epoch, with persistent workers)."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _rng.draw_seed()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0
        make_fetcher = functools.partial(_make_fetcher, self._dataset_kind,
                                         self._auto_collation, self._collate_fn,
                                         self._drop_last)
        if self._num_workers == 0:
            if self._timeout != 0:
                raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0 "
                                     "(DataLoader(timeout=) needs num_workers > 0)")
            self._fetcher = make_fetcher(self._dataset)
            self._workers = None
        else:
            self._workers = [InProcessWorker(i, self._num_workers, self._base_seed,
                                             self._dataset, loader.worker_init_fn, make_fetcher)
                             for i in range(self._num_workers)]
            self._next_worker = 0

    def _reset(self, loader):
        """The next epoch of persistent workers: a new pass of the sampler,
        the workers from the first (PyTorch resets its worker cycle)."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        for worker in self._workers:
            worker.restart()
        self._next_worker = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def _worker(self):
        """The next worker that has data, in PyTorch's round-robin order;
        None when all are exhausted."""
        for _ in range(self._num_workers):
            worker = self._workers[self._next_worker]
            self._next_worker = (self._next_worker + 1) % self._num_workers
            if worker.active:
                return worker
        return None

    def _next_data(self):
        if self._workers is None:
            return self._fetcher.fetch(next(self._sampler_iter))
        while True:
            if not any(w.active for w in self._workers):
                raise StopIteration
            index = next(self._sampler_iter)
            worker = self._worker()
            start = time.perf_counter()
            try:
                data = worker.fetch(index)
            except StopIteration:
                if self._dataset_kind != _DatasetKind.Iterable:
                    raise
                worker.active = False  # its copy of the dataset is exhausted
                continue
            if self._timeout > 0 and time.perf_counter() - start > self._timeout:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            message = (f"Length of IterableDataset {self._dataset} was reported to be "
                       f"{self._IterableDataset_len_called}(when accessing len(dataloader)), "
                       f"but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker.")
            warnings.warn(message, stacklevel=2)
        return data
