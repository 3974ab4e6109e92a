"""The default random generator of eager factories and initialisers
(of.manual_seed, of.randn, Tensor.normal_, dropout seeds)."""

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed):
    global _generator
    _generator = np.random.default_rng(seed)


def normal(shape, mean=0.0, std=1.0):
    return _generator.normal(mean, std, size=tuple(shape))


def uniform(shape, a=0.0, b=1.0):
    return _generator.uniform(a, b, size=tuple(shape))


def seed64():
    return int(_generator.integers(0, 2 ** 62))
