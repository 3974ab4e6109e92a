"""Activation checkpointing, `of.utils.checkpoint` (PyTorch's
`torch.utils.checkpoint`): a model whose residual blocks run under
`checkpoint(...)` trains to PyTorch's losses and weights with PyTorch's own
checkpointing from the same weights, eagerly and under `of.compile(model)`
(where the compiler recomputes the blocks' activations in the backward pass,
--of-recompute); with dropout in the blocks the recomputed masks are the
drawn ones (the losses and weights equal those without checkpointing); the
compiled step's plan holds fewer bytes of activations; bad arguments fail as
in PyTorch."""

import os
import re
import subprocess

import numpy as np
import pytest

import of
from test_autograd import _train as train_loop

TOOLS = os.environ.get("OF_TOOLS_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))

torch = pytest.importorskip("torch")


def _model(fw, checkpoint, blocks=3, width=16, hidden=64, p=0.0):
    nn = fw.nn
    run = fw.utils.checkpoint.checkpoint

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(width, hidden)
            self.down = nn.Linear(hidden, width)
            self.drop = nn.Dropout(p)

        def forward(self, x):
            return x + self.drop(self.down(fw.tanh(self.up(x))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
            self.head = nn.Linear(width, 4)

        def forward(self, x):
            for block in self.blocks:
                x = run(block, x, use_reentrant=False) if checkpoint else block(x)
            return self.head(x)

    return Net()


def _same_weights(om, tm):
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _train(fw, model, batches, compiled=False):
    opt = fw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return train_loop(fw, model, opt, batches, compiled=compiled)


def _batches(rng, n=4):
    return [(rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 4, 8))
            for _ in range(n)]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_checkpointed_blocks_train_as_pytorchs(rng, compiled):
    batches = _batches(rng)
    tm = _model(torch, checkpoint=True)
    om = _model(of, checkpoint=True)
    _same_weights(om, tm)
    tl = _train(torch, tm, batches)
    ol = _train(of, om, batches, compiled=compiled)
    np.testing.assert_allclose(ol, tl, rtol=1e-5)
    for name, t in tm.state_dict().items():
        np.testing.assert_allclose(om.state_dict()[name].numpy(), t.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_recomputed_dropout_draws_the_same_masks(rng):
    """Dropout inside a recomputed block: the compiled step with
    checkpointing gives the losses and weights of the one without (the
    seed is an operand of the dropout, so its copy draws the same mask)."""
    batches = _batches(rng, 3)
    of.manual_seed(7)
    plain = _model(of, checkpoint=False, p=0.3)
    of.manual_seed(7)
    checked = _model(of, checkpoint=True, p=0.3)
    checked.load_state_dict(plain.state_dict())
    of.manual_seed(11)
    a = _train(of, plain, batches, compiled=True)
    of.manual_seed(11)
    b = _train(of, checked, batches, compiled=True)
    np.testing.assert_allclose(b, a, rtol=1e-6)
    for (name, x), y in zip(plain.state_dict().items(), checked.state_dict().values()):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def _arena_bytes(model, tmp_path, name):
    x = of.tensor(np.zeros((64, 16), np.float32))
    y = of.tensor(np.zeros(64, np.int64))
    opt = of.optim.SGD(model.parameters(), lr=0.1)
    step = of.compile(model, loss_fn=of.nn.functional.cross_entropy, optimizer=opt)
    plan = tmp_path / f"{name}.ofp"
    step.save_plan(str(plan), x, y)
    text = subprocess.run([os.path.join(TOOLS, "of-translate"), "--of-binary-to-plan", str(plan)],
                          check=True, capture_output=True, text=True).stdout
    return max(int(v) for v in re.findall(r"arena_size = (\d+)", text))


def test_recomputation_shrinks_the_step_plans_arena(tmp_path):
    """Six blocks whose hidden activations (64 x 256 floats each) dwarf
    their inputs: recomputed, the backward pass holds one block's at a
    time."""
    without = _arena_bytes(_model(of, checkpoint=False, blocks=6, hidden=256), tmp_path, "plain")
    with_ = _arena_bytes(_model(of, checkpoint=True, blocks=6, hidden=256), tmp_path, "checked")
    hidden = 64 * 256 * 4
    assert with_ <= without - 3 * hidden, (with_, without)


def test_checkpoint_arguments_as_pytorch():
    f = lambda x, scale=1.0: x * scale  # noqa: E731
    x = of.ones(3)
    np.testing.assert_array_equal(
        of.utils.checkpoint.checkpoint(f, x, scale=2.0, use_reentrant=False).numpy(), 2 * np.ones(3))
    for fw in (torch, of):
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            fw.utils.checkpoint.checkpoint(f, fw.ones(3), scale=2.0, use_reentrant=True)
        with pytest.raises(ValueError, match="determinism_check should be one of"):
            fw.utils.checkpoint.checkpoint(f, fw.ones(3), use_reentrant=False,
                                           determinism_check="bad")
    seq = [lambda t: t + 1, lambda t: t * 2, lambda t: t - 3, lambda t: t * t]
    for fw in (torch, of):
        out = fw.utils.checkpoint.checkpoint_sequential(seq, 2, fw.ones(2), use_reentrant=False)
        np.testing.assert_array_equal(np.asarray(out.numpy() if fw is of else out.detach().numpy()),
                                      np.ones(2))
