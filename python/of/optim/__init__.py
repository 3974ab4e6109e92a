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


def _number(value):
    return f"{float(value)!r}"


class SGD(Optimizer):
    """torch.optim.SGD, with PyTorch's argument checks (momentum, dampening,
    nesterov, weight decay). `foreach` and `fused` choose PyTorch's
    implementation, not its result, and are accepted; maximize and
    differentiable are not supported yet (NotImplementedError)."""

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
        unsupported("SGD", maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    # sgd_step (with dampening: whether the buffer has started) is not in
    # PyTorch's state; a loaded momentum_buffer means it has
    _STATE_NAMES = {"momentum_": "momentum_buffer", "sgd_step": "_started"}

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=sgd", f"momentum={_number(g['momentum'])}",
                f"dampening={_number(g['dampening'])}",
                f"nesterov={'true' if g['nesterov'] else 'false'}",
                f"weight-decay={_number(g['weight_decay'])}"]


def _check_adam_arguments(lr, betas, eps, weight_decay):
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


class AdamW(Optimizer):
    """torch.optim.AdamW, with PyTorch's argument checks. `foreach`,
    `fused` and `capturable` choose PyTorch's implementation, not its
    result, and are accepted; `amsgrad` divides by the running maximum of
    the second moment (state `max_exp_avg_sq`); maximize and differentiable
    are not supported yet (NotImplementedError)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        _check_adam_arguments(lr, betas, eps, weight_decay)
        unsupported("AdamW", maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=bool(amsgrad)))

    _STATE_NAMES = {"adam_m_": "exp_avg", "adam_v_": "exp_avg_sq",
                    "adam_vmax_": "max_exp_avg_sq", "adam_step": "step"}

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=adamw", f"beta1={_number(g['betas'][0])}",
                f"beta2={_number(g['betas'][1])}", f"epsilon={_number(g['eps'])}",
                f"weight-decay={_number(g['weight_decay'])}",
                f"amsgrad={'true' if g.get('amsgrad') else 'false'}"]


class Adam(AdamW):
    """torch.optim.Adam: AdamW's moments with Adam's weight decay, L2 (added
    to the gradient before the moments; with decoupled_weight_decay=True
    AdamW's, applied to the parameter)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", decoupled_weight_decay)
        self.defaults["decoupled_weight_decay"] = decoupled_weight_decay

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        options = super()._pipeline_options(g)
        if not g.get("decoupled_weight_decay", False):
            options[0] = "train=adam"
        return options


class _AdamVariant(Optimizer):
    """Adamax, NAdam and RAdam: Adam's moments and step count, each its own
    update in --of-training-step (train=adamax|nadam|radam), L2 weight
    decay (decoupled_weight_decay=True is not supported yet)."""

    _TRAIN = None

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        options = [f"train={self._TRAIN}", f"beta1={_number(g['betas'][0])}",
                   f"beta2={_number(g['betas'][1])}", f"epsilon={_number(g['eps'])}",
                   f"weight-decay={_number(g['weight_decay'])}"]
        if "momentum_decay" in g:
            options.append(f"momentum-decay={_number(g['momentum_decay'])}")
        return options


class Adamax(_AdamVariant):
    """torch.optim.Adamax: u = max(beta2 u, |g| + eps), p -= lr / (1 -
    beta1^t) m / u."""

    _TRAIN = "adamax"
    _STATE_NAMES = {"adam_m_": "exp_avg", "adamax_inf_": "exp_inf", "adam_step": "step"}

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_adam_arguments(lr, betas, eps, weight_decay)
        unsupported("Adamax", maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))


class NAdam(_AdamVariant):
    """torch.optim.NAdam: Nesterov momentum in Adam, with PyTorch's momentum
    schedule mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2)."""

    _TRAIN = "nadam"
    _STATE_NAMES = {"adam_m_": "exp_avg", "adam_v_": "exp_avg_sq", "adam_step": "step",
                    "nadam_mu_product": "mu_product"}

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_adam_arguments(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        unsupported("NAdam", decoupled_weight_decay=(decoupled_weight_decay, False),
                    maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=False))


class RAdam(_AdamVariant):
    """torch.optim.RAdam: Adam with the variance rectification, plain
    momentum SGD while rho_t <= 5 (PyTorch's)."""

    _TRAIN = "radam"
    _STATE_NAMES = {"adam_m_": "exp_avg", "adam_v_": "exp_avg_sq", "adam_step": "step"}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_adam_arguments(lr, betas, eps, weight_decay)
        unsupported("RAdam", decoupled_weight_decay=(decoupled_weight_decay, False),
                    maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, decoupled_weight_decay=False))


class Adagrad(Optimizer):
    """torch.optim.Adagrad; initial_accumulator_value other than 0 is not
    supported yet (the compiled state starts at zero)."""

    _STATE_NAMES = {"adagrad_sum_": "sum", "adagrad_step": "step"}

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        unsupported("Adagrad", initial_accumulator_value=(initial_accumulator_value, 0),
                    maximize=(maximize, False), differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps))

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=adagrad", f"lr-decay={_number(g['lr_decay'])}",
                f"epsilon={_number(g['eps'])}", f"weight-decay={_number(g['weight_decay'])}"]


class RMSprop(Optimizer):
    """torch.optim.RMSprop (alpha, eps, weight decay, momentum, centered)."""

    _STATE_NAMES = {"rmsprop_square_avg_": "square_avg", "momentum_": "momentum_buffer",
                    "rmsprop_grad_avg_": "grad_avg"}
    _COUNTS_STEPS = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        unsupported("RMSprop", maximize=(maximize, False),
                    differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered))

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=rmsprop", f"alpha={_number(g['alpha'])}", f"epsilon={_number(g['eps'])}",
                f"momentum={_number(g['momentum'])}",
                f"centered={'true' if g['centered'] else 'false'}",
                f"weight-decay={_number(g['weight_decay'])}"]


class Adadelta(Optimizer):
    """torch.optim.Adadelta (rho, eps, weight decay; lr scales the update)."""

    _STATE_NAMES = {"adadelta_square_avg_": "square_avg",
                    "adadelta_acc_delta_": "acc_delta"}
    _COUNTS_STEPS = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        unsupported("Adadelta", maximize=(maximize, False),
                    differentiable=(differentiable, False))
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def _pipeline_options(self, group=None):
        g = group or self.param_groups[0]
        return ["train=adadelta", f"rho={_number(g['rho'])}", f"epsilon={_number(g['eps'])}",
                f"weight-decay={_number(g['weight_decay'])}"]


from .lbfgs import LBFGS  # noqa: E402,F401 (eager only: its step re-evaluates the closure)
