"""of.cpu: torch.cpu's names that training scripts use: `amp` (the
deprecated torch.cpu.amp.autocast and GradScaler)."""

from .amp import cpu_amp as amp  # noqa: F401

__all__ = ["amp"]
