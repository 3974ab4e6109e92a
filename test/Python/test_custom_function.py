"""torch.autograd.Function in of: custom forward/backward pairs as public
programs write them (a gradient reversal layer, a straight-through
estimator, an exp that saves its result, a function of two inputs with a
non-differentiable output, new-style setup_context), in the middle of
recorded ops and chained with each other, against PyTorch in float64 from
the same values; the ctx API, PyTorch's errors, and the refusal inside a
compiled training step."""

import numpy as np
import pytest

import of

torch = pytest.importorskip("torch")


@pytest.fixture
def rng():
    return np.random.default_rng(41)


def functions(fw):
    class GradReverse(fw.autograd.Function):  # DANN's gradient reversal layer
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.alpha, None

    class RoundSTE(fw.autograd.Function):  # straight-through rounding (VQ-VAE, QAT)
        @staticmethod
        def forward(ctx, x):
            return fw.round(x)

        @staticmethod
        def backward(ctx, g):
            return g

    class Exp(fw.autograd.Function):  # PyTorch's docs' example
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    class MulArgmax(fw.autograd.Function):  # two inputs, an integer output
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            idx = (a * b).argmax(-1)
            ctx.mark_non_differentiable(idx)
            return a * b, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            a, b = ctx.saved_tensors
            ga = g * b if ctx.needs_input_grad[0] else None
            gb = g * a if ctx.needs_input_grad[1] else None
            return ga, gb

    class Cube(fw.autograd.Function):  # new style: forward without ctx
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g

    return GradReverse, RoundSTE, Exp, MulArgmax, Cube


def run(fw, x0, w0, b0):
    GradReverse, RoundSTE, Exp, MulArgmax, Cube = functions(fw)
    x = fw.tensor(x0, requires_grad=True)
    w = fw.tensor(w0, requires_grad=True)
    b = fw.tensor(b0, requires_grad=True)
    h = fw.tanh(x @ w)                      # recorded ops before
    h = GradReverse.apply(h, 0.5)
    q = RoundSTE.apply(h * 3) / 3
    e = Exp.apply(q + h)                    # custom after custom
    m, idx = MulArgmax.apply(e, b)
    c = Cube.apply(m.sum(0))
    loss = (c * fw.sin(c)).sum() + (e * x.sum()).mean()   # recorded ops after
    loss.backward()
    return loss.detach(), idx, x.grad, w.grad, b.grad


def test_custom_functions_match_pytorch(rng):
    x0, w0, b0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)) * 0.5, \
        rng.standard_normal(5)
    ours, theirs = run(of, x0, w0, b0), run(torch, x0, w0, b0)
    assert np.array_equal(ours[1].numpy(), theirs[1].numpy())
    for a, t in zip(ours[:1] + ours[2:], theirs[:1] + theirs[2:]):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_autograd_grad_and_retain_graph(rng):
    x0 = rng.standard_normal(6)
    results = {}
    for fw in (of, torch):
        _, _, Exp, _, _ = functions(fw)
        x = fw.tensor(x0, requires_grad=True)
        y = (Exp.apply(x * 2) * x).sum()
        g1, = fw.autograd.grad(y, x, retain_graph=True)
        g2, = fw.autograd.grad(y, [x])
        results[fw.__name__] = (g1.numpy(), g2.numpy())
        with pytest.raises(RuntimeError):  # the graph was freed
            fw.autograd.grad(y, x)
    np.testing.assert_allclose(results["of"][0], results["torch"][0], rtol=1e-12)
    np.testing.assert_allclose(results["of"][1], results["torch"][1], rtol=1e-12)


def test_in_a_module_trained_eagerly(rng):
    """A model with a gradient reversal head, trained with SGD eagerly in
    both from the same weights."""
    def net(fw):
        GradReverse = functions(fw)[0]
        fw.manual_seed(0)

        class Net(fw.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = fw.nn.Linear(6, 8)
                self.head = fw.nn.Linear(8, 3)
                self.domain = fw.nn.Linear(8, 2)

            def forward(self, x):
                h = fw.relu(self.body(x))
                return self.head(h), self.domain(GradReverse.apply(h, 1.0))
        return Net()
    tm, om = net(torch), net(of)
    om.load_state_dict({k: of.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    losses = {}
    for fw, model in ((torch, tm), (of, om)):
        opt = fw.optim.SGD(model.parameters(), lr=0.1)
        losses[fw.__name__] = []
        r = np.random.default_rng(3)
        for _ in range(3):
            x = fw.tensor(r.standard_normal((5, 6)).astype(np.float32))
            y, d = fw.tensor(r.integers(0, 3, 5)), fw.tensor(r.integers(0, 2, 5))
            out, dom = model(x)
            loss = fw.nn.functional.cross_entropy(out, y) + \
                fw.nn.functional.cross_entropy(dom, d)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[fw.__name__].append(loss.item())
    np.testing.assert_allclose(losses["of"], losses["torch"], rtol=1e-5)
    for (name, o), t in zip(om.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_errors_and_ctx():
    class TooFew(of.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = of.ones(3, requires_grad=True), of.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooFew.apply(a, b).sum().backward()

    class WrongShape(of.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        WrongShape.apply(of.ones(3, requires_grad=True)).sum().backward()

    class NoBackward(of.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

    with pytest.raises(NotImplementedError, match="implement either the backward"):
        NoBackward.apply(of.ones(2, requires_grad=True)).sum().backward()

    class Identity(of.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            assert ctx.needs_input_grad == (True,)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = of.ones(2, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.grad_fn is None and "IdentityBackward" in repr(y.grad_fn)
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [15.0, 15.0])
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0])  # a custom result's gradient
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])
    with of.no_grad():  # nothing recorded
        assert Identity.apply(x).grad_fn is None
    assert of.autograd.function.once_differentiable(Identity.backward) is Identity.backward


def test_refused_in_a_compiled_training_step():
    class Double(of.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Net(of.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = of.nn.Linear(3, 1)

        def forward(self, x):
            return Double.apply(self.lin(x)).sum()

    model = Net()
    step = of.compile(model, optimizer=of.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(NotImplementedError, match="compiled training step"):
        step(of.ones(2, 3))
