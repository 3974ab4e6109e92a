"""torch.amp.GradScaler for of: dynamic loss scaling for float16 training.
The loss is multiplied by the scale before backward(); unscale_ divides
the optimizer's gradients by it and checks them for inf and NaN (in
NumPy, on the gradients' values); step() runs optimizer.step() only when
they are finite; update() halves the scale after a skipped step and doubles
it after `growth_interval` good ones. The arithmetic is PyTorch's (the
scale a float32, the gradients unscaled by its float32 reciprocal), so a
run takes and skips the steps PyTorch's would."""

import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

from .. import _dtype as dt
from .. import _ops
from .._runtime import cuda_device_count
from .._tensor import Tensor

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scales the loss and unscales the gradients of float16 training
    (PyTorch's GradScaler: the same arguments, methods, checks and state
    dict). Disabled (`enabled=False`, or `device="cuda"` where no GPU is,
    with PyTorch's warning) every method passes through: scale returns its
    argument, step calls optimizer.step()."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and cuda_device_count() == 0:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None           # a float32 (NumPy scalar) once scale() ran
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # an int once scale() ran
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)

    def _lazy_init_scale_growth_tracker(self):
        self._scale = np.float32(self._init_scale)
        self._growth_tracker = int(self._init_growth_tracker)

    def scale(self, outputs):
        """`outputs` (a tensor, or an iterable of tensors, nested) multiplied by
        the scale: a 0-d float32 tensor, with PyTorch's type promotion (a
        0-d bfloat16 loss becomes float32, a float16 tensor with dimensions
        stays float16)."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()

        def apply_scale(val):
            if isinstance(val, Tensor):
                factor = Tensor(np.array(self._scale, np.float32), dtype=dt.float32,
                                device=val.device if val._placement is None else None)
                target = _ops._result_type([val, factor])
                return _ops.mul(_ops.cast(val, target), _ops.cast(factor, target))
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Multiplies the gradients of `optimizer`'s parameters by
        `inv_scale` (a float32) in place and returns whether any of them
        holds an inf or a NaN (PyTorch's
        _amp_foreach_non_finite_check_and_unscale_: in float32, float64 for
        float64 gradients; every gradient is unscaled, finite or not)."""
        found_inf = False
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad.dtype is dt.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                if grad._placement is not None:
                    raise NotImplementedError(
                        "GradScaler with global gradients (a parameter made global with "
                        "to_global) is not supported yet: unscale_ checks local values; "
                        "train global models with of.compile(..., amp='f16'), whose step "
                        "scales the loss the same way")
                if grad._program is not None:
                    raise RuntimeError("GradScaler works on eager gradients, not on values "
                                       "of a traced program")
                value = grad.numpy()
                opmath = np.float64 if grad.dtype is dt.float64 else np.float32
                wide = value.astype(opmath)
                if not np.isfinite(wide).all():
                    found_inf = True
                if inv_scale != 1.0:
                    grad._set_value(np.ascontiguousarray(
                        (wide * opmath(inv_scale)).astype(value.dtype)))
        return found_inf

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (once per step),
        for code that reads or clips them before step()."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = np.float32(1.0 / np.float64(self._scale))
        found_inf = self._unscale_grads_(optimizer, inv_scale, False)
        optimizer_state["found_inf_per_device"] = {self._device: float(found_inf)}
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """unscale_(optimizer) unless done, then optimizer.step(*args,
        **kwargs) if every gradient is finite (else nothing); returns what
        optimizer.step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """The scale for the next iteration: `new_scale` if given, else
        multiplied by backoff_factor if a step found inf/NaN gradients, or
        by growth_factor after growth_interval steps without."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale = np.float32(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                          "or torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.device != self._device \
                        or new_scale.numel() != 1 or new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale = np.float32(new_scale.item())
        else:
            found_infs = [found_inf for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            # torch._amp_update_scale_
            if sum(found_infs):
                self._scale = np.float32(np.float64(self._scale) * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(np.float64(self._scale) * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale)
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None \
                else self._growth_tracker
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (PyTorch's keys; {} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
