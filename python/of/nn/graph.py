"""of.nn.Graph: OneFlow's static-graph class. Assign modules as
attributes, add an optimizer, write build(); calling the graph traces
build() once per input signature and runs the compiled plan.

    class TrainGraph(of.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(of.optim.AdamW(model.parameters(), lr=1e-3))

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss
"""

from .._jit import CompiledFunction
from .modules import Module


class _GraphConfig:
    """nn.Graph.config: OneFlow's GraphConfig over the graph's options."""

    def __init__(self, options):
        self._options = options

    def __call__(self, dump_dir=None, amp=None, zero=False, max_grad_norm=None):
        self._options.update(dump_dir=dump_dir, amp=amp, zero=zero, max_grad_norm=max_grad_norm)

    def enable_auto_parallel(self, mode=True):
        """Every distribution chosen by the compiler's exact SBP search
        (of.compile's auto_parallel)."""
        self._options["auto_parallel"] = bool(mode)

    def enable_zero(self, mode=True, *, stage=1, shard_min_size=1024,
                    shard_restore_level=1):
        """ZeRO: the optimizer state split over the data-parallel ranks
        (of's ZeRO is stage 1 at any size)."""
        self._options["zero"] = bool(mode)


class Graph:
    def __init__(self):
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_optimizer", None)
        object.__setattr__(self, "_compiled", None)
        object.__setattr__(self, "_options", {})

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def add_optimizer(self, optimizer, lr_sch=None):
        if self._optimizer is not None:
            raise NotImplementedError("one optimizer per graph")
        object.__setattr__(self, "_optimizer", optimizer)
        object.__setattr__(self, "lr_scheduler", lr_sch)

    @property
    def config(self):
        """The graph's options: call it (`self.config(amp="bf16")`) or use
        OneFlow's GraphConfig methods (`self.config.enable_auto_parallel()`)."""
        return _GraphConfig(self._options)

    def build(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define build()")

    def _compiled_function(self):
        if self._compiled is None:
            modules = [(name + ".", m) for name, m in self._modules.items()]
            name = "".join(c if c.isalnum() else "_" for c in type(self).__name__.lower())
            object.__setattr__(self, "_compiled", CompiledFunction(
                self.build, modules, name, self._optimizer, **self._options))
        return self._compiled

    def __call__(self, *args):
        out = self._compiled_function()(*args)
        if self._optimizer is not None and self.lr_scheduler is not None:
            self.lr_scheduler.step()
        return out

    def save_plan(self, path, *example_args):
        self._compiled_function().save_plan(path, *example_args)

    def save_state(self, path, step=None):
        self._compiled_function().save_state(path, step)

    def load_state(self, path):
        return self._compiled_function().load_state(path)
