"""torch.autograd.function: custom autograd Functions (of/_autograd.py)."""

from .._autograd import Function, FunctionCtx, once_differentiable  # noqa: F401
