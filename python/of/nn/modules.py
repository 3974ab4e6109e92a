"""of.nn modules, with PyTorch's names, constructor arguments, parameter
names and initialisation ranges."""

import collections
import math
import warnings

import numpy as np

from .. import _dtype as dt
from .. import _ops
from .._compat import legacy_reduction, unsupported
from .._tensor import Parameter, Tensor, _c_order
from ..serialization import register_module_class
from . import functional as F
from . import init
from .utils import rnn as rnn_utils


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    # -- attributes ---------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call super().__init__() before assigning attributes "
                                 f"of {type(self).__name__}")
        # As PyTorch: a parameter's name takes a Parameter (or None), a
        # buffer's a tensor (or None), and stays one.
        if name in self._parameters and value is not None and \
                not isinstance(value, Parameter):
            raise TypeError(f"cannot assign {type(value).__name__} as parameter '{name}' "
                            "(of.nn.Parameter or None expected); a module moves its "
                            "parameters with module.to(...)")
        if name in self._buffers and (value is None or isinstance(value, Tensor)):
            self._buffers[name] = value
            return
        # A parameter or child replaced keeps its place (state_dict order,
        # Sequential's order), as in PyTorch.
        if isinstance(value, Parameter) and name in self._parameters:
            self._parameters[name] = value
            return
        if isinstance(value, Module) and name in self._modules:
            self._modules[name] = value
            return
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def register_parameter(self, name, param):
        self.__setattr__(name, param)

    def add_module(self, name, module):
        self._modules[name] = module

    # -- traversal ----------------------------------------------------------
    def named_modules(self, memo=None, prefix=""):
        memo = memo if memo is not None else set()
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def children(self):
        return iter(m for m in self._modules.values() if m is not None)

    def named_children(self):
        return iter((n, m) for n, m in self._modules.items() if m is not None)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, p in m._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield mprefix + ("." if mprefix else "") + name, p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix=""):
        for mprefix, m in self.named_modules(prefix=prefix):
            for name, b in m._buffers.items():
                if b is not None:
                    yield mprefix + ("." if mprefix else "") + name, b

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad = flag
        return self

    def zero_grad(self, set_to_none=True):
        from ..optim.optimizer import _zero_grad
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    def to(self, *args, **kwargs):
        """Moves the parameters and buffers to a device ("cpu", "cuda")
        and/or casts the floating-point ones to a dtype, in place (the
        tensors stay the same objects, so an optimizer made before still
        holds them): module.to("cuda"), module.to(of.bfloat16),
        module.to(device=..., dtype=...)."""
        dev, dtype = _ops.to_arguments(args, kwargs, "Module.to")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"Module.to: {dtype} is not a floating-point dtype")
        state = {id(t): t for t in [*self.parameters(), *self.buffers()]}.values()
        for t in state:
            if dev is not None and t.device != dev and t._placement is not None:
                raise ValueError(
                    f"Module.to('{dev}'): a global parameter is on its placement's devices "
                    f"({t._placement}); place the module on of.placement('{dev}', ...)")
        for t in state:
            if dev is not None and t._placement is None:
                t._local_device = dev
            if dtype is not None and t.dtype.is_floating_point and t.dtype is not dtype:
                if t._lazy():  # global ahead of time: its logical value
                    t._logical = t._logical.astype(dtype.np)
                    t._version += 1
                else:
                    t._set_value(t._value().astype(dtype.np))
                t._dtype = dtype
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(dt.float32)

    def double(self):
        return self.to(dt.float64)

    def half(self):
        return self.to(dt.float16)

    def bfloat16(self):
        return self.to(dt.bfloat16)

    # -- state --------------------------------------------------------------
    def state_dict(self, prefix=""):
        """name -> tensor, with every name (tied parameters appear under each
        of their names, as in PyTorch). Values are current: parameters a
        compiled step trained are read from its session."""
        out = collections.OrderedDict()
        for mprefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            skip = m.__dict__.get("_non_persistent", set())
            for name, p in m._parameters.items():
                if p is not None:
                    out[mprefix + ("." if mprefix else "") + name] = p
            for name, b in m._buffers.items():
                if b is not None and name not in skip:
                    out[mprefix + ("." if mprefix else "") + name] = b
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values (of tensors, NumPy arrays or torch tensors) into the
        parameters and buffers of the same names."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys "
                           f"{unexpected}")
        for name, target in own.items():
            if name not in state_dict:
                continue
            value = _to_numpy(state_dict[name])
            if tuple(value.shape) != tuple(target.shape):
                raise ValueError(f"load_state_dict: '{name}' has shape {list(value.shape)}, "
                                 f"the module's is {list(target.shape)}")
            value = _c_order(value.astype(target.dtype.np))
            if target._placement is not None:  # this rank's part of the value
                target._take_global(Tensor(value, dtype=target.dtype).to_global(
                    target._placement, target._sbp))
            else:
                target._set_value(value)
        return collections.namedtuple("IncompatibleKeys", "missing_keys unexpected_keys")(
            missing, unexpected)

    def to_global(self, placement=None, sbp=None):
        """Makes every parameter and buffer global on `placement`: `sbp` is
        one SBP (list) for all, or a function (name, tensor) -> SBP list."""
        for name, t in list(self.state_dict().items()):
            if getattr(t, "_global_done", False):
                continue
            s = sbp(name, t) if callable(sbp) else sbp
            t._take_global(t.to_global(placement, s))
            t._global_done = True
        for t in self.state_dict().values():
            t.__dict__.pop("_global_done", None)
        return self

    # -- calling --------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # NumPy arrays and torch tensors (a torch DataLoader's batch) as of
        # tensors, copied
        args = [a if isinstance(a, Tensor) else _ops.from_foreign(a) for a in args]
        kwargs = {k: v if isinstance(v, Tensor) else _ops.from_foreign(v)
                  for k, v in kwargs.items()}
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        return lines[0] + (")" if len(lines) == 1 else "\n" + "\n".join(lines[1:]) + "\n)")


def _to_numpy(value):
    if isinstance(value, Tensor):
        return value.numpy()
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            return value.float().numpy().astype(dt.bfloat16.np)
        return value.numpy()
    return np.asarray(value)


def _param(*shape, bound=None):
    p = Parameter(np.zeros(shape, np.float32))
    if bound is not None:
        p.uniform_(-bound, bound)
    return p


def _place(module, device, dtype):
    """A constructor's device= and dtype= arguments."""
    if device is not None or dtype is not None:
        module.to(device=device, dtype=dtype)


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = _param(out_features, in_features, bound=bound)
        self.bias = _param(out_features, bound=bound) if bias else None
        _place(self, device, dtype)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Conv2d(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        unsupported("Conv2d", padding_mode=(padding_mode, "zeros"))
        self.padding_mode = padding_mode
        k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        fan_in = in_channels // groups * k[0] * k[1]
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = _param(out_channels, in_channels // groups, *k, bound=bound)
        self.bias = _param(out_channels, bound=bound) if bias else None
        _place(self, device, dtype)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class _ConvNd(Module):
    """PyTorch's _ConvNd: the attributes and initialisation of Conv1d and
    the transposed convolutions (kaiming_uniform_(a=sqrt(5)) of the weight,
    a bound of 1/sqrt(fan_in) for the bias). A transposed convolution's
    weight is [in_channels, out_channels / groups, k...]."""

    def __init__(self, api, spatial, in_channels, out_channels, kernel_size, stride, padding,
                 dilation, transposed, output_padding, groups, bias, padding_mode, device,
                 dtype):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in F._ntuple(stride, spatial)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of ['zeros', 'reflect', 'replicate', "
                             f"'circular'], but got padding_mode='{padding_mode}'")
        unsupported(api, padding_mode=(padding_mode, "zeros"))
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._ntuple(kernel_size, spatial)
        self.stride, self.dilation = F._ntuple(stride, spatial), F._ntuple(dilation, spatial)
        self.padding = padding if isinstance(padding, str) else F._ntuple(padding, spatial)
        self.transposed, self.output_padding = transposed, F._ntuple(output_padding, spatial)
        self.groups, self.padding_mode = groups, padding_mode
        shape = (in_channels, out_channels // groups) if transposed else \
            (out_channels, in_channels // groups)
        self.weight = _param(*shape, *self.kernel_size)
        self.bias = _param(out_channels) if bias else None
        self.reset_parameters()
        _place(self, device, dtype)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _ConvForwardNd(_ConvNd):
    """Conv1d and Conv3d: `_spatial` dimensions, `_function` the functional
    form."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(type(self).__name__, self._spatial, in_channels, out_channels,
                         kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input):  # noqa: A002
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding,
                                    self.dilation, self.groups)


class Conv1d(_ConvForwardNd):
    _spatial, _function = 1, staticmethod(F.conv1d)


class Conv3d(_ConvForwardNd):
    _spatial, _function = 3, staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """ConvTranspose1d/2d/3d: `_spatial` dimensions, `_function` the
    functional form."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(type(self).__name__, self._spatial, in_channels, out_channels,
                         kernel_size, stride, padding, dilation, True, output_padding, groups,
                         bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):  # noqa: A002
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups,
                                    self.dilation)

    def _output_padding(self, input, output_size):  # noqa: A002
        """PyTorch's output_padding for a requested output_size (the last
        `spatial` numbers): what the stride leaves undetermined."""
        if output_size is None:
            return self.output_padding
        spatial = len(self.kernel_size)
        output_size = list(output_size)
        if len(output_size) not in (spatial, spatial + 1, spatial + 2):
            raise ValueError(f"ConvTranspose{spatial}D: for {input.ndim}D input, output_size "
                             f"must have {spatial} or {spatial + 2} elements (got "
                             f"{len(output_size)})")
        output_size = output_size[-spatial:]
        padding = []
        for d in range(spatial):
            size = input.shape[input.ndim - spatial + d]
            smallest = ((size - 1) * self.stride[d] - 2 * self.padding[d] +
                        self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {smallest} to {largest} (for an input of "
                                 f"{list(input.shape[2:])})")
            padding.append(output_size[d] - smallest)
        return tuple(padding)


class ConvTranspose1d(_ConvTransposeNd):
    _spatial, _function = 1, staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    _spatial, _function = 2, staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    _spatial, _function = 3, staticmethod(F.conv_transpose3d)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = ns, eps
        self.weight = Parameter(np.ones(ns, np.float32)) if elementwise_affine else None
        self.bias = Parameter(np.zeros(ns, np.float32)) if elementwise_affine and bias else None
        _place(self, device, dtype)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = ns, eps
        self.weight = Parameter(np.ones(ns, np.float32)) if elementwise_affine else None
        _place(self, device, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        F.embedding_arguments(padding_idx, max_norm, scale_grad_by_freq, sparse)
        unsupported("Embedding", _weight=(_weight, None), _freeze=(_freeze, False))
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = _param(num_embeddings, embedding_dim)
        self.weight.normal_(0.0, 1.0)
        _place(self, device, dtype)

    def forward(self, idx):
        return F.embedding(idx, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(Module):
    """torch.nn.EmbeddingBag: F.embedding_bag with the module's weight
    (normal(0, 1), the padding_idx row zero)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        unsupported("EmbeddingBag", max_norm=(max_norm, None),
                    scale_grad_by_freq=(scale_grad_by_freq, False), sparse=(sparse, False),
                    _weight=(_weight, None))
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        self.weight = _param(num_embeddings, embedding_dim)
        self.reset_parameters()
        _place(self, device, dtype)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            value = self.weight.numpy().copy()
            value[self.padding_idx] = 0
            self.weight._set_value(value)

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F.dropout_probability(p)
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)


class _BatchNorm(Module):
    """Batch normalisation over the channels (dimension 1). In training mode the batch
    statistics normalise and the running statistics are updated after each
    call, eagerly or in a compiled program (which returns them as updates
    of its state, kept by the runtime)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        unsupported(type(self).__name__, bias=(bias, True), affine=(affine, True),
                    track_running_stats=(track_running_stats, True))
        if momentum is None:
            raise NotImplementedError(f"{type(self).__name__}(momentum=None) (a cumulative moving "
                                      "average) is not supported yet: give a momentum")
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(np.ones(num_features, np.float32))
        self.bias = Parameter(np.zeros(num_features, np.float32))
        self.register_buffer("running_mean", Tensor(np.zeros(num_features, np.float32)))
        self.register_buffer("running_var", Tensor(np.ones(num_features, np.float32)))
        self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))
        _place(self, device, dtype)

    def forward(self, x):
        if x.ndim not in self._ranks:
            raise ValueError(f"expected {self._expected} input (got {x.ndim}D input)")
        y, mean, var = _ops.batch_norm(x, self.running_mean, self.running_var, self.weight,
                                       self.bias, self.training, self.momentum, self.eps)
        if self.training:
            count = self.num_batches_tracked
            if y._program is None:
                self.running_mean._set_value(mean._value())
                self.running_var._set_value(var._value())
                count._set_value(count._value() + 1)
            else:  # a traced program returns them as updates of its state
                y._program.updates += [(self.running_mean, mean), (self.running_var, var),
                                       (count, count + 1)]
        return y


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) inputs."""
    _ranks, _expected = (2, 3), "2D or 3D"


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) inputs."""
    _ranks, _expected = (4,), "4D"


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) inputs."""
    _ranks, _expected = (5,), "5D"


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are the whole global batch's.
    An of batch norm of a batch split over ranks (S(0)) already computes
    them so (its per-channel sums are all-reduced: the sync batch norm
    signature of of.batch_norm), so this is _BatchNorm for any input of 2
    or more dimensions, and convert_sync_batchnorm only changes classes."""
    _ranks, _expected = tuple(range(2, 9)), "at least 2D"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        unsupported("SyncBatchNorm", process_group=(process_group, None))
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every batch norm in it a SyncBatchNorm holding the
        same parameters and buffers."""
        unsupported("SyncBatchNorm.convert_sync_batchnorm",
                    process_group=(process_group, None))
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            converted = cls.__new__(cls)
            converted.__dict__.update(module.__dict__)
            return converted
        for name, child in list(module._modules.items()):
            converted = cls.convert_sync_batchnorm(child)
            if converted is not child:
                setattr(module, name, converted)
        return module


class _InstanceNorm(Module):
    """F.instance_norm over (N, C, *) or unbatched (C, *) inputs, with an
    optional per-channel affine (off by default, as PyTorch's); running
    statistics (track_running_stats=True) are not supported."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__()
        unsupported(type(self).__name__, track_running_stats=(track_running_stats, False))
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(np.ones(num_features, np.float32))
            self.bias = Parameter(np.zeros(num_features, np.float32)) if bias else None
        else:
            self.weight = self.bias = None
        _place(self, device, dtype)

    def forward(self, x):
        spatial = self._spatial
        if x.ndim not in (spatial + 1, spatial + 2):
            raise ValueError(f"expected {spatial + 1}D or {spatial + 2}D input (got "
                             f"{x.ndim}D input)")
        unbatched = x.ndim == spatial + 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {x.shape[1]}.")
        y = F.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode
        F.max_pool2d_arguments(dilation, ceil_mode, return_indices)

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.divisor_override = ceil_mode, divisor_override
        self.count_include_pad = count_include_pad
        F.avg_pool2d_arguments(ceil_mode, divisor_override)

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


def _activation(name, fn, takes_inplace):
    if takes_inplace:
        class Activation(Module):
            def __init__(self, inplace=False):
                super().__init__()
                self.inplace = inplace

            def forward(self, x):
                return fn(x, self.inplace)
    else:
        class Activation(Module):
            def forward(self, x):
                return fn(x)
    Activation.__name__ = Activation.__qualname__ = name
    return Activation


ReLU = _activation("ReLU", F.relu, True)
SiLU = _activation("SiLU", F.silu, True)
Sigmoid = _activation("Sigmoid", F.sigmoid, False)
Tanh = _activation("Tanh", F.tanh, False)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                           else "")


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


ReLU6 = _activation("ReLU6", F.relu6, True)
SELU = _activation("SELU", F.selu, True)
Mish = _activation("Mish", F.mish, True)
Hardswish = _activation("Hardswish", F.hardswish, True)
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, True)
LogSigmoid = _activation("LogSigmoid", F.logsigmoid, False)
Softsign = _activation("Softsign", F.softsign, False)
Tanhshrink = _activation("Tanhshrink", F.tanhshrink, False)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002
        return F.elu(input, self.alpha, self.inplace)


class CELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and rename to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and rename to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.softshrink(input, self.lambd)


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.hardshrink(input, self.lambd)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)


class PReLU(Module):
    """x where x > 0, else a * x with a learnt slope `a` (one, or one per
    channel), initialised to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(np.full(num_parameters, init, np.float32))
        _place(self, device, dtype)

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)


class MaxPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode
        F.max_pool2d_arguments(dilation, ceil_mode, return_indices)

    def forward(self, input):  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        F.avg_pool2d_arguments(ceil_mode, None)

    def forward(self, input):  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                            count_include_pad=self.count_include_pad)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    """F.adaptive_max_pool{1,2}d (`_pool`) to the module's output size."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        unsupported(type(self).__name__, return_indices=(return_indices, False))
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):  # noqa: A002
        return type(self)._pool(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _pool = staticmethod(F.adaptive_max_pool2d)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


def _dropout_module(name, fn):
    class DropoutModule(Module):
        def __init__(self, p=0.5, inplace=False):
            super().__init__()
            F.dropout_probability(p)
            self.p, self.inplace = p, inplace

        def forward(self, input):  # noqa: A002
            return fn(input, self.p, self.training, self.inplace)
    DropoutModule.__name__ = DropoutModule.__qualname__ = name
    return DropoutModule


Dropout1d = _dropout_module("Dropout1d", F.dropout1d)
Dropout2d = _dropout_module("Dropout2d", F.dropout2d)
Dropout3d = _dropout_module("Dropout3d", F.dropout3d)
AlphaDropout = _dropout_module("AlphaDropout", F.alpha_dropout)
FeatureAlphaDropout = _dropout_module("FeatureAlphaDropout", F.feature_alpha_dropout)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        d = self.dim % input.ndim
        shape = tuple(input.shape)
        return input.reshape(shape[:d] + self.unflattened_size + shape[d + 1:])


class _PadNd(Module):
    """torch.nn's padding modules: F.pad of the last `_spatial` dimensions
    with the module's padding (an int for every side, or the F.pad tuple)
    and mode."""
    _mode, _spatial = "constant", 1

    def __init__(self, padding):
        super().__init__()
        self.padding = (padding,) * (2 * self._spatial) if isinstance(padding, int) else \
            tuple(padding)

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _pad_module(name, base, mode, spatial):
    return type(name, (base,), {"_mode": mode, "_spatial": spatial, "__module__": __name__,
                                "__doc__": f"torch.nn.{name}: F.pad(mode={mode!r}) of the "
                                           f"last {spatial} dimension(s)."})


ConstantPad1d = _pad_module("ConstantPad1d", _ConstantPadNd, "constant", 1)
ConstantPad2d = _pad_module("ConstantPad2d", _ConstantPadNd, "constant", 2)
ConstantPad3d = _pad_module("ConstantPad3d", _ConstantPadNd, "constant", 3)


def _zero_pad_module(name, base):
    def __init__(self, padding):
        base.__init__(self, padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
    return type(name, (base,), {"__init__": __init__, "extra_repr": extra_repr,
                                "__module__": __name__,
                                "__doc__": f"torch.nn.{name}: zeros around the input."})


ZeroPad1d = _zero_pad_module("ZeroPad1d", ConstantPad1d)
ZeroPad2d = _zero_pad_module("ZeroPad2d", ConstantPad2d)
ZeroPad3d = _zero_pad_module("ZeroPad3d", ConstantPad3d)
ReflectionPad1d = _pad_module("ReflectionPad1d", _PadNd, "reflect", 1)
ReflectionPad2d = _pad_module("ReflectionPad2d", _PadNd, "reflect", 2)
ReflectionPad3d = _pad_module("ReflectionPad3d", _PadNd, "reflect", 3)
ReplicationPad1d = _pad_module("ReplicationPad1d", _PadNd, "replicate", 1)
ReplicationPad2d = _pad_module("ReplicationPad2d", _PadNd, "replicate", 2)
ReplicationPad3d = _pad_module("ReplicationPad3d", _PadNd, "replicate", 3)
CircularPad1d = _pad_module("CircularPad1d", _PadNd, "circular", 1)
CircularPad2d = _pad_module("CircularPad2d", _PadNd, "circular", 2)
CircularPad3d = _pad_module("CircularPad3d", _PadNd, "circular", 3)


class AdaptiveAvgPool2d(Module):
    """F.adaptive_avg_pool2d: output sizes that divide the input size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        if affine:
            self.weight = Parameter(np.ones(num_channels, np.float32))
            self.bias = Parameter(np.zeros(num_channels, np.float32)) if bias else None
        else:
            self.weight = self.bias = None
        _place(self, device, dtype)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class Upsample(Module):
    """torch.nn.Upsample: F.interpolate with the module's size or scale."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = tuple(float(f) for f in scale_factor) \
            if isinstance(scale_factor, (tuple, list)) else \
            float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)


class _AlongDim(Module):
    """A normalisation along the module's `dim` (`_fn`: F.softmax, ...)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.dim)


class Softmax(_AlongDim):
    _fn = staticmethod(F.softmax)


class Softmax2d(Module):
    """Softmax over the channels of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):  # noqa: A002
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Bilinear(Module):
    """y = x1^T A x2 + b, A (out_features, in1_features, in2_features),
    initialised uniform(-1/sqrt(in1_features), 1/sqrt(in1_features)) as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in1_features)
        self.weight = _param(out_features, in1_features, in2_features, bound=bound)
        self.bias = _param(out_features, bound=bound) if bias else None
        _place(self, device, dtype)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Softmin(_AlongDim):
    _fn = staticmethod(F.softmin)


class LogSoftmax(_AlongDim):
    _fn = staticmethod(F.log_softmax)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Identity(Module):
    def forward(self, x):
        return x


class _Loss(Module):
    """torch.nn.modules.loss._Loss: the reduction, from PyTorch's legacy
    size_average/reduce arguments where given."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """torch.nn.modules.loss._WeightedLoss: _Loss with the class weights as a
    buffer (in the state_dict, moving with the module), as PyTorch's."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """torch.nn.CrossEntropyLoss: F.cross_entropy with the module's weight
    (a buffer, as PyTorch's), ignore_index, reduction and label_smoothing."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """torch.nn.NLLLoss: F.nll_loss with the module's weight (a buffer, as
    PyTorch's, so it is in the state_dict and moves with the module)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    def forward(self, input, target):  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):  # noqa: A002
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


def _cell_step(mode, xg, state, w):
    """One step of a recurrent cell of `mode` (RNNBase._GATES): `xg` the
    input projection (bias_ih included), `state` (h,) or (h, c), `w` the
    weights ("hh", and "bh", "hr" where there are); returns the new
    state. PyTorch's cell arithmetic, in its order."""
    h = state[0]
    hg = F.linear(h, w["hh"], w.get("bh"))
    if mode == "RNN_TANH":
        return (_ops.tanh(_ops.add(hg, xg)),)
    if mode == "RNN_RELU":
        return (_ops.relu(_ops.add(hg, xg)),)
    if mode == "GRU":  # PyTorch's gru_cell: h' = (h - n) * z + n
        xr, xz, xn = _ops.chunk(xg, 3, -1)
        hr, hz, hn = _ops.chunk(hg, 3, -1)
        r = _ops.sigmoid(_ops.add(hr, xr))
        z = _ops.sigmoid(_ops.add(hz, xz))
        n = _ops.tanh(_ops.add(xn, _ops.mul(hn, r)))
        return (_ops.add(_ops.mul(_ops.sub(h, n), z), n),)
    i, f, g, o = _ops.chunk(_ops.add(hg, xg), 4, -1)  # LSTM
    c = _ops.add(_ops.mul(_ops.sigmoid(f), state[1]),
                 _ops.mul(_ops.sigmoid(i), _ops.tanh(g)))
    h = _ops.mul(_ops.sigmoid(o), _ops.tanh(c))
    if "hr" in w:
        h = F.linear(h, w["hr"])
    return (h, c)


class RNNBase(Module):
    """torch.nn.RNNBase: the recurrent layers (RNN, LSTM, GRU) as a loop
    over time steps of of ops, with PyTorch's parameters (names, shapes,
    uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) initialisation),
    cell arithmetic, argument checks and results. The input projection of
    each layer is one matmul over all steps; each step adds the hidden
    state's projection, as PyTorch's CPU kernels do. A PackedSequence runs
    on its padded form with each sequence's state held after its last step
    (outputs there are zero), and comes back packed; its final states are
    in the batch's original order, as PyTorch's."""

    _GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, "
                          "so non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in self._GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = self._GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                layer_input = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih_l{}{}", (gates, layer_input)),
                          ("weight_hh_l{}{}", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gates,)), ("bias_hh_l{}{}", (gates,))]
                if proj_size > 0:
                    shapes.append(("weight_hr_l{}{}", (proj_size, hidden_size)))
                names = []
                for pattern, shape in shapes:
                    name = pattern.format(layer, suffix)
                    setattr(self, name, _param(*shape))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()
        _place(self, device, dtype)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """PyTorch's re-layout of the weights in one buffer for cuDNN: of's
        parameters are separate tensors whatever their layout, so there is
        nothing to do."""

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _expected_hidden(self, batch, size):
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    def _check_input(self, input, hx, name, time_major=False):  # noqa: A002
        """PyTorch's checks; returns input as [T, N, I], hx as [L*D, N, H]
        (a tuple for LSTM) and whether the input was unbatched."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: the input must be a tensor or a PackedSequence, not "
                            f"{type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                             "tensor instead")
        batched = input.ndim == 3
        states = hx if isinstance(hx, tuple) else (hx,) if hx is not None else None
        if not batched:
            input = _ops.unsqueeze(input, 0 if self.batch_first else 1)
            if states is not None:
                for h in states:
                    if h.ndim != 2:
                        raise RuntimeError("For unbatched 2-D input, hx should also be 2-D "
                                           f"but got {h.ndim}-D tensor")
                states = tuple(_ops.unsqueeze(h, 1) for h in states)
        elif states is not None:
            for h in states:
                if h.ndim != 3:
                    raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                                       f"{h.ndim}-D tensor")
        if input.dtype is not self._flat_weights[0].dtype:
            w = self._flat_weights[0].dtype
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w}). Convert input: input.to({w}), or convert model: "
                             f"model.to({input.dtype})")
        if self.batch_first and not time_major:
            input = _ops.transpose(input, 0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        batch = input.shape[1]
        sizes = [self.proj_size if self.proj_size > 0 else self.hidden_size]
        if self.mode == "LSTM":
            sizes.append(self.hidden_size)
        if states is None:
            states = tuple(_ops.zeros(self._expected_hidden(batch, size), dtype=input.dtype,
                                      device=input.device) for size in sizes)
        for i, (h, size) in enumerate(zip(states, sizes)):
            expected = self._expected_hidden(batch, size)
            if tuple(h.shape) != expected:
                which = f"hidden[{i}] " if self.mode == "LSTM" else "hidden "
                raise RuntimeError(f"Expected {which}size {expected}, got {list(h.shape)}")
        return input, states, batched

    def _cell(self, xg, state, w):
        return _cell_step(self.mode, xg, state, w)

    def _run(self, input, hx, name):  # noqa: A002
        packed, masks = None, None
        if isinstance(input, rnn_utils.PackedSequence):
            packed = input
            input, lengths = rnn_utils._padded(packed)
            if hx is not None and packed.sorted_indices is not None:
                order = packed.sorted_indices
                hx = tuple(_ops.index_select(h, 1, order) for h in hx) \
                    if isinstance(hx, tuple) else _ops.index_select(hx, 1, order)
            # step t updates the sequences longer than t
            lengths = np.asarray(lengths).reshape(-1, 1)
            masks = [_ops.tensor(lengths > t) for t in range(input.shape[0])]
        x, states, batched = self._check_input(input, hx, name, time_major=packed is not None)
        directions = 2 if self.bidirectional else 1
        steps = x.shape[0]
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                names = self._all_weights[layer * directions + direction]
                w = {key: getattr(self, n) for key, n in
                     zip(("ih", "hh", "bi", "bh") if self.bias else ("ih", "hh"), names)}
                if self.proj_size > 0:
                    w["hr"] = getattr(self, names[-1])
                xg = F.linear(x, w["ih"], w.get("bi"))
                k = layer * directions + direction
                state = tuple(s[k] for s in states)
                out = [None] * steps
                for t in (range(steps - 1, -1, -1) if direction else range(steps)):
                    new = self._cell(xg[t], state, w)
                    if masks is None:
                        state = new
                        out[t] = _ops.unsqueeze(state[0], 0)
                    else:  # a packed batch: ended sequences keep their state
                        state = tuple(_ops.where(masks[t], n, o) for n, o in zip(new, state))
                        out[t] = _ops.unsqueeze(_ops.where(masks[t], state[0], 0.0), 0)
                outputs.append(_ops.cat(out, 0))
                for final, s in zip(finals, state):
                    final.append(_ops.unsqueeze(s, 0))
            x = outputs[0] if directions == 1 else _ops.cat(outputs, -1)
            if self.dropout and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, self.training)
        finals = [_ops.cat(f, 0) for f in finals]
        if packed is not None:
            if packed.unsorted_indices is not None:
                finals = [_ops.index_select(f, 1, packed.unsorted_indices) for f in finals]
            return rnn_utils._repack(x, packed), finals
        if self.batch_first:
            x = _ops.transpose(x, 0, 1)
        if not batched:
            x = _ops.squeeze(x, 0 if self.batch_first else 1)
            finals = [_ops.squeeze(f, 1) for f in finals]
        return x, finals


class RNN(RNNBase):
    """torch.nn.RNN: h_t = tanh (or relu)(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and not isinstance(hx, Tensor):
            raise TypeError(f"RNN: hx must be a tensor, not {type(hx).__name__}")
        output, (h,) = self._run(input, hx, "RNN")
        return output, h


class LSTM(RNNBase):
    """torch.nn.LSTM (with proj_size): gates i, f, g, o in that order."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and not (isinstance(hx, tuple) and len(hx) == 2):
            raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
        output, (h, c) = self._run(input, hx, "LSTM")
        return output, (h, c)


class GRU(RNNBase):
    """torch.nn.GRU: gates r, z, n in that order."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and not isinstance(hx, Tensor):
            raise TypeError(f"GRU: hx must be a tensor, not {type(hx).__name__}")
        output, (h,) = self._run(input, hx, "GRU")
        return output, h


class RNNCellBase(Module):
    """torch.nn.RNNCellBase: one step of a recurrent layer (RNNCell,
    LSTMCell, GRUCell), with PyTorch's parameters (weight_ih, weight_hh,
    bias_ih, bias_hh; uniform(-1/sqrt(hidden_size), 1/sqrt(hidden_size))),
    cell arithmetic (RNNBase's), argument checks and unbatched (1-D)
    inputs."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = _param(num_chunks * hidden_size, input_size)
        self.weight_hh = _param(num_chunks * hidden_size, hidden_size)
        if bias:
            self.bias_ih = _param(num_chunks * hidden_size)
            self.bias_hh = _param(num_chunks * hidden_size)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        _place(self, device, dtype)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, name, mode, input, hx):  # noqa: A002
        """PyTorch's checks, then one step of `mode`; `hx` a tuple of
        states or None. Returns the new states."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        batched = input.ndim == 2
        x = input if batched else _ops.unsqueeze(input, 0)
        if hx is None:
            zeros = _ops.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            hx = (zeros,) * (2 if mode == "LSTM" else 1)
        elif not batched:
            hx = tuple(_ops.unsqueeze(h, 0) for h in hx)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        for i, h in enumerate(hx):
            if h.ndim != 2:
                raise RuntimeError(f"Expected 2D hidden{i} (batch x hidden_size), but got "
                                   f"{h.ndim}D tensor")
            if h.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{i} "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        w = {"hh": self.weight_hh, "bh": self.bias_hh} if self.bias else {"hh": self.weight_hh}
        state = _cell_step(mode, F.linear(x, self.weight_ih, self.bias_ih), hx, w)
        return state if batched else tuple(_ops.squeeze(h, 0) for h in state)


class RNNCell(RNNCellBase):
    """torch.nn.RNNCell: h' = tanh (or relu)(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.ndim}D "
                             "instead")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step("RNNCell", modes[self.nonlinearity], input,
                          None if hx is None else (hx,))[0]


class LSTMCell(RNNCellBase):
    """torch.nn.LSTMCell: gates i, f, g, o; returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None:
            for i, h in enumerate(hx):
                if h.ndim not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{i}] to be 1D or 2D, got "
                                     f"{h.ndim}D instead")
        return self._step("LSTMCell", "LSTM", input, None if hx is None else tuple(hx))


class GRUCell(RNNCellBase):
    """torch.nn.GRUCell: gates r, z, n; h' = (h - n) z + n."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        if hx is not None and hx.ndim not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.ndim}D "
                             "instead")
        return self._step("GRUCell", "GRU", input, None if hx is None else (hx,))[0]


class _IndexedModules(Module):
    """Children in order, by position: Sequential's and ModuleList's access."""

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __setitem__(self, i, module):
        keys = list(self._modules)
        if not -len(keys) <= i < len(keys):
            raise IndexError(f"index {i} is out of range")
        setattr(self, keys[i], module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(_IndexedModules):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(_IndexedModules):
    def __init__(self, modules=None):
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        for name, m in (modules or {}).items():
            self.add_module(name, m)

    def __getitem__(self, name):
        return self._modules[name]

    def __setitem__(self, name, module):
        self.add_module(name, module)

    def __contains__(self, name):
        return name in self._modules

    def __len__(self):
        return len(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


def _as_parameter(value):
    """ParameterList/ParameterDict's rule: a tensor that is not a Parameter
    becomes one (other values are stored as they are)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """torch.nn.ParameterList: parameters by position, registered as "0",
    "1", ... (so parameters() and state_dict() see them)."""

    def __init__(self, values=None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def _key(self, idx):
        if not -self._size <= idx < self._size:
            raise IndexError(f"index {idx} is out of range")
        return str(idx % self._size)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx, param):
        setattr(self, self._key(idx), _as_parameter(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(self._size))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter containing: [{type(p).__name__} of size "
                         f"{'x'.join(map(str, p.shape))}]" if isinstance(p, Tensor) else
                         f"({i}): Object of type: {type(p).__name__}"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """torch.nn.ParameterDict: parameters by name, in insertion order."""

    def __init__(self, parameters=None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, not {type(key).__name__}")
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __contains__(self, key):
        return key in self._keys

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def keys(self):
        return self._keys.keys()

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, values):
        items = values.items() if hasattr(values, "items") else values
        for k, v in items:
            self[k] = v

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def copy(self):
        return ParameterDict(self.items())

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{type(p).__name__} of size "
                         f"{'x'.join(map(str, p.shape))}]" if isinstance(p, Tensor) else
                         f"({k}): Object of type: {type(p).__name__}" for k, p in self.items())


# of.save writes a whole module (torch.save(model)) as its class and attributes
register_module_class(Module)

__all__ = ["Module", "ParameterList", "ParameterDict", "Softmax2d", "ChannelShuffle", "RReLU",
           "LocalResponseNorm", "Bilinear", "MultiLabelSoftMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Unfold", "Fold", "AlphaDropout", "FeatureAlphaDropout",
           "LayerNorm", "RMSNorm", "Embedding", "EmbeddingBag", "Dropout",
           "Dropout1d", "Dropout2d", "Dropout3d",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "GroupNorm", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle", "ReLU",
           "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d",
           "SiLU", "Sigmoid", "Tanh", "GELU", "Softmax", "Softmin", "LogSoftmax", "Flatten",
           "Unflatten", "Identity",
           "ReLU6", "SELU", "Mish", "Hardswish", "Hardsigmoid", "LogSigmoid", "Softsign",
           "Tanhshrink", "ELU", "CELU", "Softplus", "Hardtanh", "Threshold", "Softshrink",
           "Hardshrink", "GLU", "PReLU", "CosineSimilarity", "PairwiseDistance",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss",
           "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
           "CTCLoss",
           "LeakyReLU",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
           "Sequential", "ModuleList", "ModuleDict", "init"]
