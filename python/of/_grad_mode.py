"""Gradient modes (torch.autograd.grad_mode): whether eager ops record
what the backward pass differentiates. Each is a context manager and a
decorator, as PyTorch's; the mode is per thread."""

import functools
import inspect
import threading


class _Mode(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False


_mode = _Mode()


def is_grad_enabled():
    return _mode.enabled


def is_inference_mode_enabled():
    return _mode.inference


def check_inplace_leaf(t, api):
    """PyTorch's refusal of an in-place write to a leaf that requires
    gradients while they are recorded."""
    if t._grad_fn is None and t._requires_grad and _mode.enabled:
        raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place "
                           f"operation. ({api})")


class _DecoratorContextManager:
    """A context manager that is also a decorator (of functions and
    generator functions), and a class decorator's callable instance."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    except BaseException as e:  # noqa: BLE001 -- thrown into gen
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            response = gen.send(request)
            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class set_grad_enabled(_DecoratorContextManager):
    """Sets gradient recording on or off; takes effect at once (as a
    function call) and is undone when used as a context manager."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(mode) needs a bool, not {type(mode).__name__}")
        self.prev = _mode.enabled
        self.mode = mode
        _mode.enabled = mode

    def __enter__(self):
        _mode.enabled = self.mode

    def __exit__(self, *exc):
        _mode.enabled = self.prev

    def clone(self):
        return type(self)(self.mode)


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also a decorator without parentheses (`@no_grad`), as PyTorch's."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Ops run inside record nothing for backward (torch.no_grad)."""

    def __enter__(self):
        self.prev = _mode.enabled
        _mode.enabled = False

    def __exit__(self, *exc):
        _mode.enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Ops run inside record for backward again (torch.enable_grad)."""

    def __enter__(self):
        self.prev = _mode.enabled
        _mode.enabled = True

    def __exit__(self, *exc):
        _mode.enabled = self.prev


class inference_mode(_DecoratorContextManager):
    """torch.inference_mode: no_grad for of (its tensors carry no version
    counters to skip); inference_mode(False) changes nothing."""

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(mode) needs a bool, not {type(mode).__name__}")
        self.mode = mode

    def __enter__(self):
        self.prev = (_mode.enabled, _mode.inference)
        if self.mode:
            _mode.enabled, _mode.inference = False, True

    def __exit__(self, *exc):
        _mode.enabled, _mode.inference = self.prev

    def clone(self):
        return type(self)(self.mode)
