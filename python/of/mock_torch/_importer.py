"""How torch's module names resolve to of's modules while of.mock_torch is
on: `torch` is `of`, `torch.X.Y` is `of.X.Y`.

A torch module is a `TorchModule`, a module object of its own registered
in sys.modules under the torch name, whose attributes are those of the of
module behind it. of's modules are never changed, so `of.nn.Foo` looks up
as it always does, with or without the mock; only the torch names say,
for a name of lacks, that it is a PyTorch API of does not provide:

    torch.nn.LazyLinear  AttributeError: torch.nn.LazyLinear is not provided
                         by of (of.mock_torch)
    import torch.fft     ModuleNotFoundError: No module named 'torch.fft':
                         torch.fft is not provided by of (of.mock_torch) ...

`TorchFinder`, first on sys.meta_path while the mock is on, answers every
import of `torch` and `torch.*` (of.mock_torch's __init__ puts it there
and takes it away).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from .. import __version__ as _of_version

# torch.__version__ under the mock: the PyTorch release whose API of's names
# follow (2.x: torch.compile, F.scaled_dot_product_attention,
# optim.lr_scheduler.LRScheduler), so that third-party version checks take
# their PyTorch 2 branches, with of's version as the local label (PEP 440).
TORCH_VERSION = f"2.0.0+of.{_of_version}"

# of's public modules that are not the PyTorch module of the same torch
# name, with what to use instead.
NOT_TORCH = {
    "of.mock_torch": "it is of's own module, not one of PyTorch's",
    "of.distributed.launch": ("of's launcher takes other arguments than "
                              "torch.distributed.launch; run python -m "
                              "of.distributed.launch --nproc N script.py"),
}


class _Settings:
    verbose = False


settings = _Settings()


def note(message):
    """A line on stderr when the mock is verbose (enable(verbose=True))."""
    if settings.verbose:
        print(f"[of.mock_torch] {message}", file=sys.stderr, flush=True)


def _is_of_module(value):
    return isinstance(value, types.ModuleType) and not isinstance(value, TorchModule) and (
        value.__name__ == "of" or value.__name__.startswith("of."))


def _not_provided_module(torch_name, why):
    return ModuleNotFoundError(
        f"No module named {torch_name!r}: {torch_name} is not provided by of "
        f"(of.mock_torch): {why}", name=torch_name)


def resolve(torch_name):
    """The of module behind the torch module `torch_name` ("torch",
    "torch.nn.functional"): `of` for `torch`, then, for each further part,
    the of module that the parent of module has under that name (an
    attribute, or a submodule not imported yet). Raises ModuleNotFoundError
    naming the torch module where of has none, where a part is private
    (torch._C, torch._dynamo: PyTorch's internals, which of's private
    modules are not), or where of's module is not PyTorch's (NOT_TORCH)."""
    parts = torch_name.split(".")
    if parts[0] != "torch":
        raise ValueError(f"{torch_name!r} is not a torch module name")
    module = importlib.import_module("of")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_"):
            raise _not_provided_module(
                torch_name, f"{'.'.join(parts[:i + 1])} is one of PyTorch's internal modules")
        value = module.__dict__.get(part)
        if not _is_of_module(value):
            submodule = f"{module.__name__}.{part}"
            try:
                value = importlib.import_module(submodule)
            except ModuleNotFoundError as e:
                if e.name is not None and (submodule == e.name or
                                           submodule.startswith(e.name + ".")):
                    raise _not_provided_module(
                        torch_name, f"of has no module {submodule}") from None
                raise
        module = value
    if module.__name__ in NOT_TORCH:
        raise _not_provided_module(torch_name, NOT_TORCH[module.__name__])
    return module


_modules = {}  # torch name -> its TorchModule, made once


def torch_module(torch_name):
    """The TorchModule for `torch_name`, made at the first request (see
    `resolve` for what it wraps and what raises)."""
    module = _modules.get(torch_name)
    if module is None:
        of_module = resolve(torch_name)
        module = TorchModule(torch_name, of_module)
        _modules[torch_name] = module
        note(f"{torch_name} -> {of_module.__name__}")
    return module


def _is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class TorchModule(types.ModuleType):
    """A torch module under the mock: a module whose attributes are those of
    its of module (`__of_module__`). Submodules come as TorchModules under
    their torch names; a name the of module lacks raises AttributeError
    naming the PyTorch API. Assigning an attribute assigns it on the of
    module (as patching torch.nn.functional.gelu patches what torch's code
    calls); the module's own dunders (`__name__`, `__spec__`,
    `torch.__version__`) and its submodules are its own.

    Every TorchModule is a package to the import system (`__path__` is
    empty: TorchFinder answers every torch import), so that importing a
    submodule of lacks (torch.nn.modules.linear) says so rather than that
    its parent is no package."""

    def __init__(self, torch_name, of_module):
        super().__init__(torch_name, of_module.__doc__)
        d = self.__dict__
        d["__of_module__"] = of_module
        d["__spec__"] = importlib.machinery.ModuleSpec(torch_name, finder, is_package=True)
        d["__loader__"] = finder
        d["__package__"] = torch_name
        d["__path__"] = []
        if getattr(of_module, "__file__", None) is not None:
            d["__file__"] = of_module.__file__
        if torch_name == "torch":
            d["__version__"] = TORCH_VERSION

    def __getattr__(self, name):
        of_module = self.__dict__["__of_module__"]
        if name == "__all__":
            names = getattr(of_module, "__all__", None)
            return list(names) if names is not None else [
                n for n in vars(of_module) if not n.startswith("_")]
        if _is_dunder(name):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}",
                                 name=name, obj=self)
        missing = object()
        value = getattr(of_module, name, missing)
        if value is missing and not name.startswith("_"):
            # torch imports its submodules with itself (torch.distributed
            # is there after `import torch`); of imports some on demand
            try:
                return self._submodule(name)
            except ModuleNotFoundError:
                pass
        if value is missing or (name.startswith("_") and isinstance(value, types.ModuleType)):
            note(f"{self.__name__}.{name}: not provided")
            raise AttributeError(f"{self.__name__}.{name} is not provided by of (of.mock_torch)",
                                 name=name, obj=self)
        if _is_of_module(value):
            try:
                return self._submodule(name)
            except ModuleNotFoundError as e:  # an of module that is not PyTorch's
                raise AttributeError(str(e), name=name, obj=self) from None
        return value

    def _submodule(self, name):
        """The TorchModule `self.<name>`, kept as an attribute of this one
        and, while the mock is on, in sys.modules (as an import of it would)."""
        torch_name = f"{self.__name__}.{name}"
        module = torch_module(torch_name)
        self.__dict__[name] = module
        if finder in sys.meta_path:
            sys.modules.setdefault(torch_name, module)
        return module

    def __setattr__(self, name, value):
        if _is_dunder(name) or isinstance(value, TorchModule):
            self.__dict__[name] = value
        else:
            setattr(self.__dict__["__of_module__"], name, value)
            self.__dict__.pop(name, None)

    def __delattr__(self, name):
        if name in self.__dict__:
            del self.__dict__[name]
        else:
            delattr(self.__dict__["__of_module__"], name)

    def __dir__(self):
        return sorted(set(self.__dict__) - {"__of_module__"}
                      | set(dir(self.__dict__["__of_module__"])))

    def __repr__(self):
        of_module = self.__dict__["__of_module__"]
        return f"<module {self.__name__!r} (of.mock_torch: {of_module.__name__})>"


class TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads `torch` and `torch.*` as TorchModules; declines every
    other name. A torch module of lacks is a ModuleNotFoundError from
    find_spec, which the import statement raises as it is."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        try:
            module = torch_module(fullname)
        except ModuleNotFoundError as e:
            note(f"import {fullname}: {e}")
            raise
        return module.__spec__

    def create_module(self, spec):
        return torch_module(spec.name)

    def exec_module(self, module):
        pass  # nothing to run: the attributes are the of module's


finder = TorchFinder()
