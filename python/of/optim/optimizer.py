"""The optimizer base class: parameter groups and their hyperparameters,
which the compiled training step reads (torch.optim.Optimizer's
interface)."""


class Optimizer:
    def __init__(self, params, defaults):
        params = list(params)
        if params and isinstance(params[0], dict):
            groups = [dict(defaults, **g) for g in params]
        else:
            groups = [dict(defaults, params=params)]
        for g in groups:
            g["params"] = list(g["params"])
            g.setdefault("initial_lr", g["lr"])
        self.param_groups = groups
        self.defaults = defaults
        self._steps = 0
        # Groups may differ in weight decay (compiled per parameter); the
        # other settings are one compiled update for every parameter.
        keys = [k for k in defaults if k != "weight_decay"]
        for g in groups[1:]:
            for k in keys:
                if g[k] != groups[0][k]:
                    raise NotImplementedError(
                        f"{type(self).__name__}: parameter groups with different '{k}' "
                        "are not supported yet (groups may differ in weight_decay only)")

    def _weight_decays(self):
        """id(parameter) -> its group's weight decay, when groups differ."""
        decays = {g["weight_decay"] for g in self.param_groups}
        if len(decays) <= 1:
            return {}
        return {id(p): float(g["weight_decay"]) for g in self.param_groups
                for p in g["params"]}

    def zero_grad(self, set_to_none=True):
        pass  # gradients live inside the compiled step

    def step(self):
        raise RuntimeError("of applies the optimizer inside the compiled training step: "
                           "pass it to of.compile(..., optimizer=opt) or "
                           "Graph.add_optimizer(opt) and call the compiled step")

    def state_dict(self):
        return {"param_groups": [{k: v for k, v in g.items() if k != "params"}
                                 for g in self.param_groups], "step": self._steps}

