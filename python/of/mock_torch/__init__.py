"""of.mock_torch: run code written for PyTorch on of unchanged (OneFlow's
oneflow.mock_torch). While the mock is on, `import torch` gives of, and
`import torch.X.Y` gives of.X.Y:

    python -m of.mock_torch train.py --epochs 3     # the script's torch is of

    with of.mock_torch.enable():
        import torch
        import torch.nn.functional as F
        model = torch.nn.Linear(8, 2)               # an of.nn.Linear
    import torch                                    # PyTorch again

`enable()` and `disable()` switch the mock on and off, as plain calls or
as context managers that switch back on exit; `is_enabled()` tells.

What a torch name gives (_importer.py):
- Every attribute of of's module: `torch.nn.Linear is of.nn.Linear`, so
  isinstance checks against torch.Tensor or torch.nn.Module see of's
  classes. `torch.device`, the dtypes, `torch.cuda.is_available()` are
  of's.
- A name of lacks raises AttributeError naming the PyTorch API
  ("torch.nn.LazyLinear is not provided by of (of.mock_torch)"), and a
  module of lacks (torch.fft, torch._C) ModuleNotFoundError naming it. No
  placeholder stands in for a missing name.
- `torch.__version__` is "2.0.0+of.<of's version>": the PyTorch API level
  of's names follow, so version checks take their PyTorch 2 branches.

The torch modules are module objects of their own (in sys.modules under
the torch names), not of's modules: with the mock off, of's modules look
up their names as they always do. Assigning an attribute of a torch module
assigns it on the of module, as patching a torch function patches what
torch's own code calls.

Turning the mock on sets aside the torch modules in sys.modules (a real
PyTorch imported before) and turning it off puts them back, so `import
torch` after `with enable():` is PyTorch again. Modules first imported
with the mock on keep the torch they imported (of) until they are
imported anew in another process. While the mock is on, of's own use of
an installed PyTorch finds of in its place: of.utils.data does not collate
PyTorch tensors made before, and of.load of a PyTorch checkpoint (through
torch.load) fails.
"""

import sys

from ._importer import TORCH_VERSION, TorchModule, finder, settings  # noqa: F401

__all__ = ["TORCH_VERSION", "TorchModule", "disable", "enable", "is_enabled"]


class _State:
    enabled = False
    # the torch entries of sys.modules set aside: PyTorch's while the mock
    # is on, the mock's TorchModules while it is off
    set_aside = {}


_state = _State()


def _switch(on):
    """Turns the mock on or off: swaps the torch entries of sys.modules with
    those set aside, and puts TorchFinder first on sys.meta_path or takes
    it away."""
    if _state.enabled == on:
        return
    current = {name: module for name, module in sys.modules.items()
               if name == "torch" or name.startswith("torch.")}
    for name in current:
        del sys.modules[name]
    sys.modules.update(_state.set_aside)
    _state.set_aside = current
    if on:
        sys.meta_path.insert(0, finder)
    elif finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _state.enabled = on


class enable:  # noqa: N801 - oneflow.mock_torch's name, a call and a context manager
    """Turns the mock on: `import torch` gives of from here. As a context
    manager, switches back on exit to what was before (off, or on).

    verbose=True prints to stderr each torch module resolved (`torch.nn ->
    of.nn`) and each torch name of does not provide."""

    def __init__(self, lazy=False, verbose=False):
        if lazy:
            raise NotImplementedError(
                "of.mock_torch.enable(lazy=True) (oneflow.mock_torch's lazy mode) is not "
                "supported: it hands out placeholder objects for the PyTorch names of "
                "lacks; of.mock_torch raises AttributeError or ModuleNotFoundError naming "
                "the missing PyTorch API instead")
        self._previous = (_state.enabled, settings.verbose)
        settings.verbose = bool(verbose)
        _switch(True)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        enabled, settings.verbose = self._previous
        _switch(enabled)
        return False


class disable:  # noqa: N801 - oneflow.mock_torch's name, a call and a context manager
    """Turns the mock off: `import torch` gives PyTorch (where installed)
    from here. As a context manager, switches back on exit to what was
    before."""

    def __init__(self):
        self._previous = _state.enabled
        _switch(False)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _switch(self._previous)
        return False


def is_enabled():
    """Whether `import torch` gives of."""
    return _state.enabled
