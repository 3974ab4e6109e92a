"""The loader's workers, run in this process.

PyTorch's `DataLoader(num_workers=N)` starts N processes; each gets a copy
of the dataset, seeds its random generators (Python's `random` and torch's
with `base_seed + id`, NumPy's global one from both), sets
`get_worker_info()`, runs `worker_init_fn(id)`, and fetches the batches the
main process hands it in turn. of loads in this process but keeps each of
those semantics: a worker here is a shallow copy of the dataset
(`copy.copy`: attributes a worker sets stay its own; objects the dataset
holds are shared, not copied), its own states of `random`, NumPy's global
generator, of's generator and (where torch is imported) torch's CPU
generator, which are swapped in while it runs and out after, so the main
process's random streams are untouched by loading as in PyTorch, and
`get_worker_info()` describing it while it runs (None elsewhere). Batches
go to the workers in PyTorch's order, so every batch is the one PyTorch's
workers would make.
"""

import copy
import random
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _random
from ..._tensor import Tensor
from ._collate import _is_torch_tensor

__all__ = ["WorkerInfo", "get_worker_info"]

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: its `id` (0 to
    num_workers - 1), `num_workers`, the `seed` its generators were seeded
    with (base_seed + id), and `dataset`, its copy of the dataset.
    `worker_method` is "in_process" (PyTorch's: "multiprocessing" or
    "thread"); `rng` is None, as for PyTorch's process workers, since the
    global generators are the worker's own while it runs."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str = "in_process"


def get_worker_info():
    """The WorkerInfo of the loader worker running now, None outside one
    (in the main process, and when num_workers=0)."""
    return _worker_info


def _numpy_seed(base_seed, worker_id):
    """PyTorch's `_generate_state`: the 4-word seed of NumPy's global
    generator in worker `worker_id`."""
    mask = 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask, base_seed >> 32, 0]
    hash_a = 0x43B0D7E5

    def hash_(value):
        nonlocal hash_a
        value = (value ^ hash_a) & mask
        hash_a = (hash_a * 0x931E8875) & mask
        value = (value * hash_a) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x, y):
        result = (((0xCA01F9DD * x) & mask) - ((0x4973F715 * y) & mask)) & mask
        return (result ^ (result >> 16)) & mask

    pool = [hash_(e) for e in entropy]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hash_(pool[src]))
    hash_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_b) & mask
        hash_b = (hash_b * 0x58F38DED) & mask
        value = (value * hash_b) & mask
        state.append((value ^ (value >> 16)) & mask)
    return state


def _torch_generator():
    torch = sys.modules.get("torch")
    return getattr(torch, "default_generator", None)


class _GlobalRandomState:
    """The global random states a worker process would have had to itself."""

    @staticmethod
    def capture():
        torch_gen = _torch_generator()
        return (random.getstate(), np.random.get_state(), _random._generator,
                torch_gen.get_state() if torch_gen is not None else None)

    @staticmethod
    def restore(state):
        python, numpy, of_generator, torch_state = state
        random.setstate(python)
        np.random.set_state(numpy)
        _random._generator = of_generator
        torch_gen = _torch_generator()
        if torch_gen is not None and torch_state is not None:
            torch_gen.set_state(torch_state)

    @staticmethod
    def seeded(base_seed, worker_id):
        """The states PyTorch's worker seeds: random and torch with
        base_seed + id, NumPy's global one with _generate_state, and of's
        generator (torch's counterpart) with base_seed + id."""
        seed = base_seed + worker_id
        python = random.Random(seed).getstate()
        numpy = np.random.RandomState(_numpy_seed(base_seed, worker_id)).get_state()
        torch_state = None
        torch_gen = _torch_generator()
        if torch_gen is not None:
            saved = torch_gen.get_state()
            torch_gen.manual_seed(seed)
            torch_state = torch_gen.get_state()
            torch_gen.set_state(saved)
        return (python, numpy, np.random.default_rng(seed), torch_state)


def _worker_copy(dataset):
    """A worker's copy of `dataset`: a shallow copy of a dataset object, so
    that what the worker sets on it stays its own; an array, a tensor or a
    built-in container (no attributes to set) is shared rather than copied
    whole."""
    if not hasattr(dataset, "__dict__") or isinstance(dataset, (np.ndarray, Tensor)) \
            or _is_torch_tensor(dataset):
        return dataset
    return copy.copy(dataset)


class InProcessWorker:
    """One of a loader's workers: its dataset copy, its random states and
    its fetcher. `run(fn)` runs `fn()` as the worker."""

    def __init__(self, worker_id, num_workers, base_seed, dataset, init_fn, make_fetcher):
        self.info = WorkerInfo(id=worker_id, num_workers=num_workers,
                               seed=base_seed + worker_id, dataset=_worker_copy(dataset))
        self._state = _GlobalRandomState.seeded(base_seed, worker_id)
        self._make_fetcher = make_fetcher
        self.fetcher = None
        self.error = None  # an exception of starting, raised at the first fetch
        self.active = True  # False once its IterableDataset copy is exhausted
        try:
            if init_fn is not None:
                self.run(lambda: init_fn(worker_id))
            self.fetcher = self.run(lambda: make_fetcher(self.info.dataset))
        except Exception as e:  # noqa: BLE001 - PyTorch reports it with the worker's batch
            self.error = e

    def restart(self):
        """A new epoch of a persistent worker: a new fetcher (a new iterator
        of an IterableDataset), the worker's state kept."""
        self.active = True
        if self.error is None:
            try:
                self.fetcher = self.run(lambda: self._make_fetcher(self.info.dataset))
            except Exception as e:  # noqa: BLE001
                self.error = e

    def fetch(self, index):
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.run(lambda: self.fetcher.fetch(index))

    def run(self, fn):
        global _worker_info
        outer_state, outer_info = _GlobalRandomState.capture(), _worker_info
        _GlobalRandomState.restore(self._state)
        _worker_info = self.info
        try:
            return fn()
        finally:
            self._state = _GlobalRandomState.capture()
            _GlobalRandomState.restore(outer_state)
            _worker_info = outer_info
