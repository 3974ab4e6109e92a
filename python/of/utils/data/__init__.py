"""of.utils.data: PyTorch's torch.utils.data, yielding of tensors.

    from of.utils.data import DataLoader, TensorDataset   # was: torch.utils.data
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    for xb, yb in loader:
        loss = step(xb, yb)

Datasets (`dataset`), samplers (`sampler`, `distributed`), collation
(`_collate`) and the loader (`dataloader`, its in-process workers in
`_worker`) behave as PyTorch's; the differences are stated where they are:
random draws come from of's one generator (`_rng`), workers run in this
process (`_worker`). PyTorch's DataPipes are not provided.
"""

from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
           "default_convert", "get_worker_info", "random_split"]

# torch.utils.data's DataPipes (torchdata's, deprecated in PyTorch)
_DATAPIPES = ("DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe",
              "argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism",
              "non_deterministic", "runtime_validation", "runtime_validation_disabled")


def __getattr__(name):
    if name in _DATAPIPES:
        raise NotImplementedError(
            f"torch.utils.data.{name} (DataPipes) is not supported: of.utils.data has "
            "Dataset, IterableDataset and DataLoader")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
