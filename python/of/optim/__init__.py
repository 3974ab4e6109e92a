"""of.optim: optimizers whose update is the compiler's `--of-training-step`.

An optimizer holds its hyperparameters; `of.compile(..., optimizer=opt)`
(or `Graph.add_optimizer`) turns them into `--of-training-step` options,
and the eager `opt.step()` runs the same update on the parameters'
`.grad` (optimizer.py). The learning rate is a runtime input read from the
parameter group at every step, so schedulers work without recompiling;
the other hyperparameters are compiled in.
"""

from . import lr_scheduler  # noqa: F401
from .._compat import unsupported
from .optimizer import Optimizer


class SGD(Optimizer):
    """torch.optim.SGD, with PyTorch's argument checks. `foreach` and
    `fused` choose PyTorch's implementation, not its result, and are
    accepted; dampening, nesterov, maximize and differentiable are not
    supported yet (NotImplementedError)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        unsupported("SGD", dampening=(dampening, 0), nesterov=(nesterov, False),
                    maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    _STATE_NAMES = {"momentum_": "momentum_buffer"}

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=sgd", f"momentum={float(g['momentum'])!r}",
                f"weight-decay={float(g['weight_decay'])!r}"]


class AdamW(Optimizer):
    """torch.optim.AdamW, with PyTorch's argument checks. `foreach`,
    `fused` and `capturable` choose PyTorch's implementation, not its
    result, and are accepted; amsgrad, maximize and differentiable are not
    supported yet (NotImplementedError)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        unsupported("AdamW", amsgrad=(amsgrad, False), maximize=(maximize, False),
                    differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

    _STATE_NAMES = {"adam_m_": "exp_avg", "adam_v_": "exp_avg_sq", "adam_step": "step"}

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=adamw", f"beta1={float(g['betas'][0])!r}",
                f"beta2={float(g['betas'][1])!r}", f"epsilon={float(g['eps'])!r}",
                f"weight-decay={float(g['weight_decay'])!r}"]


class Adam(AdamW):
    """torch.optim.Adam. Without weight decay Adam is AdamW with
    weight_decay=0 (the same update); Adam's L2 weight decay (added to the
    gradient before the moments) is not compiled yet."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if weight_decay != 0 and not decoupled_weight_decay:
            raise NotImplementedError(
                f"Adam(weight_decay={weight_decay!r}) (L2 decay added to the gradient) is not "
                "supported yet: use AdamW for decoupled weight decay, or weight_decay=0")
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused)
