"""torch.backends.mps: Apple's GPUs, which of does not run on. Scripts ask
`torch.backends.mps.is_available()` to pick a device; the answer is False."""


def is_available():
    return False


def is_built():
    return False


__all__ = ["is_available", "is_built"]
