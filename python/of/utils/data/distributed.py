"""DistributedSampler: PyTorch's torch/utils/data/distributed.py for of.

Each of `num_replicas` ranks gets every num_replicas-th index of one order
of the dataset (padded by repeating its start, or cut, to a multiple of
num_replicas). The defaults are of's job (`of._runtime.world()`: the MPI
launcher's rank and size, (0, 1) without one), where PyTorch asks its
process group.
"""

import math

from ..._runtime import world
from . import _rng
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """This rank's share of `dataset`: the indices rank, rank + num_replicas,
    ... of the padded (drop_last=False) or cut (drop_last=True) order. With
    `shuffle`, the order is a permutation seeded by `seed + epoch`, the same
    on every rank (call `set_epoch(epoch)` before each epoch); it is NumPy's
    permutation, not the one PyTorch's generator makes for that seed, so the
    ranks partition the dataset as PyTorch's do but with other indices."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = world()[1]
        if rank is None:
            rank = world()[0]
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            # the nearest length that divides evenly: every rank the same count
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            indices = _rng.private(self.seed + self.epoch).permutation(
                len(self.dataset)).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not "
                                 f"match num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose order the next iteration uses (with shuffle)."""
        self.epoch = epoch
