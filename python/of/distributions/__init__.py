"""of.distributions: torch.distributions' probability distributions over of
tensors (parameters, log-probabilities and entropies as of ops, so they
differentiate; samples drawn from of's generator). So far: Categorical."""

from .categorical import Categorical
from .distribution import Distribution

__all__ = ["Categorical", "Distribution"]
