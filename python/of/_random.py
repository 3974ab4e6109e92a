"""The default random generator of eager factories and initialisers
(of.manual_seed, of.randn, Tensor.normal_, dropout seeds)."""

import numpy as np

_generator = np.random.default_rng(0)
_seed = 0
# get_state's words: PCG64's 128-bit state and increment (two words each),
# and its buffered 32-bit half (a flag and the value)
STATE_WORDS = 6


def manual_seed(seed):
    global _generator, _seed
    _generator = np.random.default_rng(seed)
    _seed = int(seed)


def initial_seed():
    return _seed


def get_state():
    """The generator's state as STATE_WORDS unsigned 64-bit words."""
    state = _generator.bit_generator.state
    mask = (1 << 64) - 1
    s, inc = state["state"]["state"], state["state"]["inc"]
    return [s >> 64, s & mask, inc >> 64, inc & mask, state["has_uint32"], state["uinteger"]]


def set_state(words):
    s_hi, s_lo, inc_hi, inc_lo, has, value = words
    bits = np.random.PCG64()
    bits.state = {"bit_generator": "PCG64", "state": {"state": (s_hi << 64) | s_lo,
                                                      "inc": (inc_hi << 64) | inc_lo},
                  "has_uint32": has, "uinteger": value}
    global _generator
    _generator = np.random.Generator(bits)


def normal(shape, mean=0.0, std=1.0):
    return _generator.normal(mean, std, size=tuple(shape))


def uniform(shape, a=0.0, b=1.0):
    return _generator.uniform(a, b, size=tuple(shape))


def seed64():
    return int(_generator.integers(0, 2 ** 62))
