"""The random source of the data utilities: of's one generator.

PyTorch's samplers and `random_split` take `generator=` (a torch.Generator)
and otherwise draw from the default generator. of has one generator, seeded
by `of.manual_seed` (`of._random`), and `of.Generator` cannot be made; so
these functions take `generator=None` only, and draw from of's generator
where PyTorch draws from its default one: the same draws, in the same
order, so a shuffle is reproducible under `of.manual_seed(s)` (the numbers
are NumPy's, not PyTorch's: a shuffle is not the permutation PyTorch draws
for the same seed).
"""

import numpy as np

from ... import _random
from ..._compat import unsupported


def check_generator(api, generator):
    """Refuses a generator other than None (of draws from its one generator;
    see the module docstring)."""
    unsupported(api, generator=(generator, None))


def default():
    """of's generator as it is now (`of.manual_seed` replaces it)."""
    return _random._generator


def draw_seed():
    """One seed drawn from of's generator: PyTorch's
    `torch.empty((), dtype=torch.int64).random_()` of its default generator,
    made before a private generator for one epoch's shuffle or a loader's
    worker seeds."""
    return _random.seed64()


def private(seed):
    """A generator of its own, seeded with `seed` (PyTorch's
    `torch.Generator().manual_seed(seed)`)."""
    return np.random.default_rng(seed)
