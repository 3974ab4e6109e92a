"""of.nn.init: in-place initialisers (eager, from of.manual_seed's generator)."""

import math


def normal_(tensor, mean=0.0, std=1.0):
    return tensor.normal_(mean, std)


def uniform_(tensor, a=0.0, b=1.0):
    return tensor.uniform_(a, b)


def zeros_(tensor):
    return tensor.zero_()


def ones_(tensor):
    return tensor.fill_(1.0)


def constant_(tensor, value):
    return tensor.fill_(value)


def _fans(tensor):
    shape = tensor.shape
    receptive = int(math.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def kaiming_uniform_(tensor, a=0.0):
    fan_in, _ = _fans(tensor)
    gain = math.sqrt(2.0 / (1 + a * a))
    bound = gain * math.sqrt(3.0 / fan_in)
    return tensor.uniform_(-bound, bound)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return tensor.uniform_(-bound, bound)
