"""torch.cuda.amp for of (of.cuda.amp): PyTorch's deprecated spellings of
torch.amp.autocast("cuda", ...) and torch.amp.GradScaler("cuda", ...),
with their FutureWarnings."""

import warnings

from .. import _dtype as dt
from . import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):
    """torch.cuda.amp.autocast(args...): torch.amp.autocast("cuda", args...)."""

    def __init__(self, enabled=True, dtype=dt.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """torch.cuda.amp.GradScaler(args...): torch.amp.GradScaler("cuda", args...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
