"""of.amp: torch.amp for of. `autocast` runs a region's ops in mixed
precision (PyTorch's op lists and type promotion); `GradScaler` scales the
loss of float16 training and skips the steps whose gradients overflow.

    with of.autocast(device_type="cuda", dtype=of.bfloat16):
        logits, loss = model(x, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    of.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()

See docs/python.md, "Automatic mixed precision"."""

from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_available", "GradScaler"]
