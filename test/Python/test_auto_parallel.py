"""of.compile(..., auto_parallel=True) and nn.Graph's
config.enable_auto_parallel(): only the placement is written; the
compiler's exact SBP search (--of-auto-parallel) chooses every
distribution. Training matches the hand layout's (and PyTorch's) losses
and weights on 2 and 4 ranks, the parameters come back in the chosen
distribution with unchanged values, and the layout is not a replicated
one."""

import json

import numpy as np
import pytest
from conftest import launch

SCRIPT = r'''
import json, sys
import numpy as np
import of
import of.nn as nn
F = nn.functional
mode, graph = sys.argv[1], sys.argv[2] == "graph"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 256)
        self.l2 = nn.Linear(256, 8)

    def forward(self, x, y):
        return F.cross_entropy(self.l2(F.relu(self.l1(x))), y)


of.manual_seed(0)
model = MLP()
init = {k: v.numpy() for k, v in model.state_dict().items()}
p = of.placement("cpu", ranks=list(range(of.env.world_size())))
model.to_global(p, of.sbp.broadcast)
opt = of.optim.AdamW(model.parameters(), lr=0.01)
if graph:
    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if mode == "auto":
                self.config.enable_auto_parallel()

        def build(self, x, y):
            loss = self.model(x, y)
            loss.backward()
            return loss
    step = Train()
else:
    step = of.compile(model, optimizer=opt, auto_parallel=mode == "auto")
rng = np.random.default_rng(0)
losses = []
for _ in range(5):
    x = of.tensor(rng.normal(size=(16, 32)).astype(np.float32)).to_global(p, of.sbp.broadcast)
    y = of.tensor(rng.integers(0, 8, 16)).to_global(p, of.sbp.broadcast)
    losses.append(step(x, y).item())
state = model.state_dict()
out = {"losses": losses, "sbp": {k: [str(s) for s in v.sbp] for k, v in state.items()},
       "weights": {k: v.numpy().tolist() for k, v in state.items()},
       "init": {k: v.tolist() for k, v in init.items()}}
if of.env.rank() == 0:
    print("RESULT " + json.dumps(out))
'''


def run(tmp_path, nproc, mode, graph=False):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = launch(str(script), nproc, mode, "graph" if graph else "compile")
    assert proc.returncode == 0, proc.stdout
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def torch_losses(init):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    l1, l2 = torch.nn.Linear(32, 256), torch.nn.Linear(256, 8)
    with torch.no_grad():
        for layer, name in ((l1, "l1"), (l2, "l2")):
            layer.weight.copy_(torch.tensor(init[f"{name}.weight"]))
            layer.bias.copy_(torch.tensor(init[f"{name}.bias"]))
    params = list(l1.parameters()) + list(l2.parameters())
    opt = torch.optim.AdamW(params, lr=0.01)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(5):
        x = torch.tensor(rng.normal(size=(16, 32)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 8, 16))
        loss = torch.nn.functional.cross_entropy(l2(torch.relu(l1(x))), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("nproc", [2, 4])
def test_auto_parallel_trains_like_the_hand_layout(tmp_path, nproc):
    hand = run(tmp_path, nproc, "hand")
    auto = run(tmp_path, nproc, "auto")
    np.testing.assert_allclose(auto["losses"], hand["losses"], rtol=1e-5)
    np.testing.assert_allclose(auto["losses"], torch_losses(auto["init"]), rtol=1e-4)
    for k, w in hand["weights"].items():
        np.testing.assert_allclose(auto["weights"][k], w, rtol=1e-5, atol=1e-6, err_msg=k)
    # the hand layout is replicated; the search split the MLP's weights
    # (Megatron's column- then row-parallel layout under the default model)
    assert all(s == ["of.sbp.broadcast"] for s in hand["sbp"].values()), hand["sbp"]
    assert auto["sbp"]["l1.weight"] == ["of.sbp.split(0)"], auto["sbp"]
    assert auto["sbp"]["l2.weight"] == ["of.sbp.split(1)"], auto["sbp"]


def test_graph_enable_auto_parallel(tmp_path):
    hand = run(tmp_path, 2, "hand", graph=True)
    auto = run(tmp_path, 2, "auto", graph=True)
    np.testing.assert_allclose(auto["losses"], hand["losses"], rtol=1e-5)
    assert any(s != ["of.sbp.broadcast"] for s in auto["sbp"].values()), auto["sbp"]
