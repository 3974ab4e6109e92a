"""of.jit: torch.jit's decorators and entry points, which older PyTorch
programs apply to models and functions (`model = torch.jit.script(model)`,
`@torch.jit.script` on a helper). TorchScript compiles a program into the
same computation it runs eagerly; of compiles with of.compile instead, so
script and trace return what they are given, whose calls compute what the
scripted or traced program would. What only a TorchScript object has
(`.save`, `.graph`, `.code`, `torch.jit.load`) is not provided: those raise
AttributeError naming the missing API."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """The module, function or class itself (see the module docstring)."""
    del optimize, _frames_up, _rcb, example_inputs
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False,
          _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """The module or function itself (see the module docstring)."""
    return func


def ignore(drop=False, **kwargs):
    """@torch.jit.ignore: the function itself (of runs everything as Python)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def is_scripting():
    """False: of never runs code as TorchScript."""
    return False


def is_tracing():
    return False


__all__ = ["export", "ignore", "is_scripting", "is_tracing", "script", "trace", "unused"]
