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


def constant_(tensor, val):
    return tensor.fill_(val)


def _fans(tensor):
    shape = tensor.shape
    receptive = int(math.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for `nonlinearity`, as torch.nn.init's."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _kaiming_std(tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor.uniform_(-bound, bound)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    return tensor.normal_(0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return tensor.uniform_(-bound, bound)


def xavier_normal_(tensor, gain=1.0, generator=None):
    if generator is not None:
        raise NotImplementedError("torch.nn.init.xavier_normal_(generator=...) is not "
                                  "supported by of: seed with of.manual_seed")
    fan_in, fan_out = _fans(tensor)
    return tensor.normal_(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) values redrawn until they lie in [a, b] (the
    truncated normal exactly; PyTorch uses the inverse CDF)."""
    import numpy as np

    from .. import _random
    if generator is not None:
        raise NotImplementedError("torch.nn.init.trunc_normal_(generator=...) is not "
                                  "supported by of: seed with of.manual_seed")
    if not a < b:
        raise ValueError(f"trunc_normal_: a ({a}) must be less than b ({b})")
    shape = tuple(tensor.shape)
    out = np.asarray(_random.normal(shape, mean, std), np.float64).reshape(-1)
    bad = (out < a) | (out > b)
    for _ in range(10000):
        if not bad.any():
            break
        out[bad] = np.asarray(_random.normal((int(bad.sum()),), mean, std)).reshape(-1)
        bad = (out < a) | (out > b)
    else:
        raise ValueError(f"trunc_normal_: [{a}, {b}] holds too little of Normal({mean}, {std}) "
                         "to sample from")
    return tensor._inplace(out.reshape(shape))


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one,
    the signs of R's diagonal moved into Q (PyTorch's construction); a
    tensor of more than 2 dimensions is flattened to (size(0), rest)."""
    import numpy as np

    from .. import _random
    if generator is not None:
        raise NotImplementedError("torch.nn.init.orthogonal_(generator=...) is not supported "
                                  "by of: seed with of.manual_seed")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = np.asarray(_random.normal((rows, cols), 0.0, 1.0), np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return tensor._inplace(gain * q.reshape(tuple(tensor.shape)))


def eye_(tensor):
    """The identity in a 2-D tensor (ones on the diagonal)."""
    import numpy as np
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return tensor._inplace(np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """A convolution weight (3-5 dims) that passes its input through: a one
    at the kernel's centre for output channel i and input channel i, per
    group (PyTorch's)."""
    import numpy as np
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    weight = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            weight[(g * out_per_group + d, d) + centre] = 1
    return tensor._inplace(weight)
