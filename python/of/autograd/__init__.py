"""of.autograd: torch.autograd for eager tensors. Eager ops on tensors that
require gradients are recorded; `backward` and `grad` differentiate the
recorded program with the compiler's `--of-autodiff` (of/_autograd.py).
Compiled training steps (`of.compile(model, loss_fn, optimizer)`,
`nn.Graph`) differentiate their traced program the same way."""

from .. import _grad_mode as grad_mode  # noqa: F401  (torch.autograd.grad_mode)
from . import function  # noqa: F401
from .._autograd import Function, backward, grad  # noqa: F401
from .._grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                          is_inference_mode_enabled, no_grad, set_grad_enabled)
