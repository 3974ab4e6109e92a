"""of.utils: what training scripts use beside the model.

- `of.utils.Progress`: a progress bar with per-step loss and throughput.
- `of.utils.data`: PyTorch's `torch.utils.data` (datasets, samplers,
  `DataLoader`, `default_collate`), yielding of tensors.
- `of.utils.checkpoint`: PyTorch's `torch.utils.checkpoint` (activation
  recomputation in compiled training steps).
"""

from . import checkpoint, data
from ._progress import Progress

__all__ = ["Progress", "checkpoint", "data"]
