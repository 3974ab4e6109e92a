"""What PyTorch's signatures take beyond what of computes: the one place
that refuses an argument value of does not support (rather than ignoring
it), maps PyTorch's legacy loss arguments, and gives `inplace=True` its
meaning (docs/python.md, "The rule")."""

import warnings

from ._grad_mode import check_inplace_leaf


def unsupported(api, **given):
    """Raises NotImplementedError naming `api(name=value)` for the first
    `name=(value, default)` whose value is not PyTorch's default (under
    which of computes what PyTorch does)."""
    for name, (value, default) in given.items():
        if value is not default and value != default:
            raise NotImplementedError(
                f"{api}({name}={value!r}) is not supported yet: of computes {api} as "
                f"PyTorch does with {name}={default!r}")


def legacy_reduction(size_average, reduce, reduction):
    """PyTorch's reading of the deprecated `size_average`/`reduce` of a
    loss (torch.nn._reduction.legacy_get_string), with its warning."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def softmax_dim(name, ndim, dim):
    """PyTorch's implicit softmax dimension for `dim=None`, with its warning."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  "call to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def inplace(api, input, out):  # noqa: A002
    """`out` written into `input`, which is returned (inplace=True). In a
    traced function `input` then stands for the new value; an input of the
    traced function itself is refused, since its caller's tensor would not
    change."""
    program = input._program
    if program is None:
        check_inplace_leaf(input, api)
        input._set_value(out._value())
        input._grad_fn = out._grad_fn  # it now holds the op's result
        return input
    if any(t is input for t in program.arg_tensors):
        raise NotImplementedError(
            f"{api}(inplace=True) on an input or parameter of a compiled function: the "
            "caller's tensor would not change; use the result (inplace=False)")
    program.values[id(input)] = program.values[id(out)]
    program.keep.append(out)
    return input
