"""The attention, convolution, bag-of-embeddings and resampling modules and
functions of of.nn (MultiheadAttention, the Transformer family, Conv1d,
ConvTranspose1d/2d, EmbeddingBag, interpolate / Upsample, and
scaled_dot_product_attention's dropout) against PyTorch: the same weights
(PyTorch's state_dict loaded into the of module), float32 in of against
float64 in PyTorch, outputs and the gradients of the inputs and of every
parameter compared relative to each tensor's largest element; eagerly and,
for the attention modules and EmbeddingBag's traced offsets, under
of.compile (and one model of them in a compiled training step). Bad
arguments raise PyTorch's exception types."""

import re

import numpy as np
import pytest

import of
import of.nn as onn
import of.nn.functional as OF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# float32 against float64, relative to the tensor's largest element
TOL = 1e-5


def close(ours, theirs, tol=TOL, what=""):
    ours = ours.numpy() if isinstance(ours, of.Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    scale = max(float(np.abs(theirs).max()), 1e-30)
    err = float(np.abs(ours.astype(np.float64) - theirs).max())
    assert err <= tol * scale, f"{what}: max error {err:.3g} against max {scale:.3g}"


def inputs(arrays):
    """Each array as an of float32 / torch float64 leaf that requires grad
    (integer and bool arrays as they are, without grad); the same array
    given twice stays one tensor (self-attention)."""
    ours, theirs, seen = [], [], {}
    for a in arrays:
        if id(a) in seen:
            o, t = seen[id(a)]
        elif a.dtype.kind == "f":
            o = of.tensor(a.astype(np.float32), requires_grad=True)
            t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
        else:
            o, t = of.tensor(a), torch.tensor(a)
        seen[id(a)] = (o, t)
        ours.append(o)
        theirs.append(t)
    return ours, theirs


def backward_both(rng, ours, theirs):
    """loss = sum(out * g) over the outputs (None skipped) with the same
    random g, backward in both."""
    loss_o, loss_t = 0, 0
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
            continue
        g = rng.standard_normal(tuple(t.shape))
        loss_o = loss_o + (o * of.tensor(g.astype(np.float32))).sum()
        loss_t = loss_t + (t * torch.tensor(g)).sum()
    loss_o.backward()
    loss_t.backward()


def check_function(rng, ours_fn, theirs_fn, *arrays, tol=TOL):
    """ours_fn(of tensors) against theirs_fn(torch tensors): outputs and the
    gradients of the float inputs."""
    ours, theirs = inputs(arrays)
    out_o, out_t = ours_fn(*ours), theirs_fn(*theirs)
    outs_o = out_o if isinstance(out_o, tuple) else (out_o,)
    outs_t = out_t if isinstance(out_t, tuple) else (out_t,)
    for i, (o, t) in enumerate(zip(outs_o, outs_t)):
        if t is not None:
            close(o, t, tol, f"output {i}")
    backward_both(rng, outs_o, outs_t)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t.requires_grad:
            close(o.grad, t.grad, tol, f"gradient of input {i}")
    return ours, theirs


def same_weights(tmod, omod):
    """tmod in float64 and omod with its weights (PyTorch's state_dict)."""
    tmod.double()
    omod.load_state_dict(tmod.state_dict())
    assert list(omod.state_dict()) == list(tmod.state_dict())


class Called(onn.Module):
    """A module called with fixed keyword arguments (of.compile passes
    positional tensors only)."""

    def __init__(self, module, **kwargs):
        super().__init__()
        self.module, self.kwargs = module, kwargs

    def forward(self, *args):
        return self.module(*args, **self.kwargs)


def check_module(rng, tmod, omod, arrays, kwargs=None, compiled=False, tol=TOL):
    """The modules (omod with tmod's weights) on the same inputs and keyword
    arguments (arrays as tensors): outputs, input and parameter gradients."""
    same_weights(tmod, omod)
    kwargs = kwargs or {}
    okw = {k: of.tensor(v.astype(np.float32) if v.dtype == np.float64 else v)
           if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    if compiled:
        compiled_module = of.compile(Called(omod, **okw))

        def ours_fn(*xs):
            return compiled_module(*xs)
    else:
        def ours_fn(*xs):
            return omod(*xs, **okw)
    check_function(rng, ours_fn, lambda *xs: tmod(*xs, **tkw), *arrays, tol=tol)
    grads = dict(omod.named_parameters())
    for name, p in tmod.named_parameters():
        close(grads[name].grad, p.grad, tol, f"gradient of {name}")


def raises_like(of_call, torch_call):
    """Both calls raise, with the same exception type."""
    with pytest.raises(Exception) as theirs:
        torch_call()
    with pytest.raises(type(theirs.value)):
        of_call()


# ---------------------------------------------------------------------------
# Convolutions

CONV1D = [dict(), dict(stride=2, padding=1), dict(padding="same", dilation=2),
          dict(padding="same"), dict(padding="valid", stride=3), dict(groups=2, dilation=2)]


@pytest.mark.parametrize("kwargs", CONV1D, ids=str)
def test_conv1d(rng, kwargs):
    x, w = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 4 // kwargs.get("groups", 1), 3))
    b = rng.standard_normal(6)
    check_function(rng, lambda x, w, b: OF.conv1d(x, w, b, **kwargs),
                   lambda x, w, b: TF.conv1d(x, w, b, **kwargs), x, w, b)
    tm, om = torch.nn.Conv1d(4, 6, 3, **kwargs), onn.Conv1d(4, 6, 3, **kwargs)
    check_module(rng, tm, om, [x])
    check_module(rng, tm, om, [x[0]])  # unbatched [C, L]


def test_conv2d_string_padding(rng):
    x, w = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((4, 3, 2, 3))
    for padding in ("same", "valid"):
        check_function(rng, lambda x, w: OF.conv2d(x, w, padding=padding, dilation=(2, 1)),
                       lambda x, w: TF.conv2d(x, w, padding=padding, dilation=(2, 1)), x, w)


CONV_T2D = [dict(), dict(stride=2), dict(stride=2, padding=1, output_padding=1),
            dict(stride=(3, 2), padding=(2, 0), output_padding=(1, 0), dilation=(1, 2)),
            dict(groups=2, stride=2, padding=2), dict(padding=1, dilation=2, output_padding=1)]


@pytest.mark.parametrize("kwargs", CONV_T2D, ids=str)
def test_conv_transpose2d(rng, kwargs):
    groups = kwargs.get("groups", 1)
    x, w = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((4, 3, 3, 4))
    b = rng.standard_normal(3 * groups)
    check_function(rng, lambda x, w, b: OF.conv_transpose2d(x, w, b, **kwargs),
                   lambda x, w, b: TF.conv_transpose2d(x, w, b, **kwargs), x, w, b)
    tm = torch.nn.ConvTranspose2d(4, 3 * groups, (3, 4), **kwargs)
    om = onn.ConvTranspose2d(4, 3 * groups, (3, 4), **kwargs)
    check_module(rng, tm, om, [x])
    check_module(rng, tm, om, [x[1]])  # unbatched


def test_conv_transpose1d_and_output_size(rng):
    x, w = rng.standard_normal((2, 4, 7)), rng.standard_normal((4, 3, 4))
    check_function(rng, lambda x, w: OF.conv_transpose1d(x, w, stride=3, padding=1,
                                                          output_padding=2),
                   lambda x, w: TF.conv_transpose1d(x, w, stride=3, padding=1,
                                                    output_padding=2), x, w)
    tm, om = torch.nn.ConvTranspose1d(4, 6, 4, stride=3, groups=2), \
        onn.ConvTranspose1d(4, 6, 4, stride=3, groups=2)
    check_module(rng, tm, om, [x])
    x2 = rng.standard_normal((1, 4, 5, 6))
    tm, om = torch.nn.ConvTranspose2d(4, 2, 3, stride=2), onn.ConvTranspose2d(4, 2, 3, stride=2)
    for size in ([12, 13], [1, 2, 11, 14]):
        check_module(rng, tm, om, [x2], dict(output_size=size))
    raises_like(lambda: om(of.tensor(x2.astype(np.float32)), output_size=[20, 13]),
                lambda: tm(torch.tensor(x2), output_size=[20, 13]))


def test_conv_errors():
    x, w = of.zeros(1, 2, 4, 4), of.zeros(2, 2, 3)
    raises_like(lambda: OF.conv1d(x, w), lambda: TF.conv1d(torch.zeros(1, 2, 4, 4),
                                                         torch.zeros(2, 2, 3)))
    raises_like(lambda: OF.conv1d(of.zeros(1, 2, 4), w, padding="same", stride=2),
                lambda: TF.conv1d(torch.zeros(1, 2, 4), torch.zeros(2, 2, 3), padding="same",
                                  stride=2))
    raises_like(lambda: OF.conv1d(of.zeros(1, 2, 4), w, padding="full"),
                lambda: TF.conv1d(torch.zeros(1, 2, 4), torch.zeros(2, 2, 3), padding="full"))
    raises_like(lambda: OF.conv_transpose2d(of.zeros(1, 2, 4, 4), of.zeros(2, 3, 3, 3),
                                            stride=2, output_padding=2),
                lambda: TF.conv_transpose2d(torch.zeros(1, 2, 4, 4), torch.zeros(2, 3, 3, 3),
                                            stride=2, output_padding=2))
    raises_like(lambda: OF.conv_transpose2d(of.zeros(1, 3, 4, 4), of.zeros(2, 3, 3, 3)),
                lambda: TF.conv_transpose2d(torch.zeros(1, 3, 4, 4), torch.zeros(2, 3, 3, 3)))
    for args, kwargs in [((3, 4, 3), dict(groups=2)), ((4, 4, 3), dict(padding="same",
                                                                       stride=2)),
                         ((4, 4, 3), dict(padding="full"))]:
        raises_like(lambda: onn.Conv1d(*args, **kwargs),
                    lambda: torch.nn.Conv1d(*args, **kwargs))
    with pytest.raises(NotImplementedError, match="padding_mode"):
        onn.Conv1d(2, 2, 3, padding_mode="reflect")


# ---------------------------------------------------------------------------
# EmbeddingBag

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_2d(rng, mode, padding_idx):
    w = rng.standard_normal((10, 3))
    ids = rng.integers(0, 10, (4, 5))
    ids[0, 1], ids[1, :] = 2, 2  # a padding entry, and a bag of padding only
    check_function(rng, lambda w, i: OF.embedding_bag(i, w, mode=mode, padding_idx=padding_idx),
                   lambda w, i: TF.embedding_bag(i, w, mode=mode, padding_idx=padding_idx),
                   w, ids)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_offsets(rng, mode, padding_idx, include_last_offset):
    """1-D input cut at offsets (an empty bag among them), with eager
    offsets and with offsets traced by of.compile."""
    w = rng.standard_normal((10, 3))
    ids = rng.integers(0, 10, 12)
    ids[3] = 2
    offsets = np.array([0, 3, 3, 7, 12])

    def ours(w, i, o):
        return OF.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx,
                                include_last_offset=include_last_offset)

    def theirs(w, i, o):
        return TF.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx,
                                include_last_offset=include_last_offset)
    check_function(rng, ours, theirs, w, ids, offsets)
    check_function(rng, of.compile(ours), theirs, w, ids, offsets)


def test_embedding_bag_per_sample_weights(rng):
    w, ids = rng.standard_normal((10, 3)), rng.integers(0, 10, 9)
    psw, offsets = rng.standard_normal(9), np.array([0, 2, 6])

    def ours(w, p, i, o):
        return OF.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=ids[0])

    def theirs(w, p, i, o):
        return TF.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=ids[0])
    check_function(rng, ours, theirs, w, psw, ids, offsets)
    check_function(rng, of.compile(ours), theirs, w, psw, ids, offsets)
    ids2, psw2 = rng.integers(0, 10, (3, 4)), rng.standard_normal((3, 4))
    check_function(rng, lambda w, p, i: OF.embedding_bag(i, w, mode="sum", per_sample_weights=p),
                   lambda w, p, i: TF.embedding_bag(i, w, mode="sum", per_sample_weights=p),
                   w, psw2, ids2)


def test_embedding_bag_module(rng):
    tm = torch.nn.EmbeddingBag(10, 4, mode="max", padding_idx=-1, include_last_offset=True)
    om = onn.EmbeddingBag(10, 4, mode="max", padding_idx=-1, include_last_offset=True)
    assert om.padding_idx == 9 and not om.weight.numpy()[9].any()
    ids, offsets = rng.integers(0, 10, 8), np.array([0, 5, 8])
    check_module(rng, tm, om, [ids, offsets])
    tm, om = torch.nn.EmbeddingBag(10, 4), onn.EmbeddingBag(10, 4)  # mode 'mean'
    check_module(rng, tm, om, [rng.integers(0, 10, (2, 3))])


def test_embedding_bag_errors():
    w, ids = of.randn(10, 3), of.tensor([1, 2, 3, 4])
    tw, tids = torch.randn(10, 3), torch.tensor([1, 2, 3, 4])
    cases = [
        (dict(offsets=[1, 2]), {}),  # offsets[0] != 0
        (dict(offsets=[0, 5]), {}),  # past the end
        (dict(offsets=None), {}),
        (dict(offsets=[[0]]), {}),
        (dict(offsets=[0, 2]), dict(mode="mean", per_sample_weights=[1.0] * 4)),
        (dict(offsets=[0, 2]), dict(mode="sum", per_sample_weights=[1.0] * 3)),
        (dict(offsets=[0, 2]), dict(mode="median")),
        (dict(offsets=[0, 2]), dict(padding_idx=12)),
    ]
    for given, kwargs in cases:
        o = of.tensor(given["offsets"]) if given["offsets"] is not None else None
        t = torch.tensor(given["offsets"]) if given["offsets"] is not None else None
        okw = {k: of.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        tkw = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        raises_like(lambda: OF.embedding_bag(ids, w, o, **okw),
                    lambda: TF.embedding_bag(tids, tw, t, **tkw))
    raises_like(lambda: OF.embedding_bag(of.tensor([[1, 2]]), w, of.tensor([0])),
                lambda: TF.embedding_bag(torch.tensor([[1, 2]]), tw, torch.tensor([0])))
    raises_like(lambda: OF.embedding_bag(of.tensor([[[1]]]), w),
                lambda: TF.embedding_bag(torch.tensor([[[1]]]), tw))
    raises_like(lambda: OF.embedding_bag(of.tensor([1.0, 2.0]), w, of.tensor([0])),
                lambda: TF.embedding_bag(torch.tensor([1.0, 2.0]), tw, torch.tensor([0])))
    with pytest.raises(RuntimeError, match="must not decrease"):
        OF.embedding_bag(ids, w, of.tensor([0, 3, 2]))
    with pytest.raises(NotImplementedError, match="max_norm"):
        onn.EmbeddingBag(10, 3, max_norm=1.0)
    # traced offsets are not known when compiling: bad ones stop the run
    # at the embedding's index check, naming the Python line
    bag = of.compile(lambda w, i, o: OF.embedding_bag(i, w, o))
    np.testing.assert_allclose(bag(w, ids, of.tensor([0, 2])).numpy(),
                               OF.embedding_bag(ids, w, of.tensor([0, 2])).numpy(), rtol=1e-6)
    for offsets in ([1, 2], [0, 5], [0, 3, 2]):
        with pytest.raises(RuntimeError, match="test_nn_modules.py"):
            bag(w, ids, of.tensor(offsets))


# ---------------------------------------------------------------------------
# interpolate / Upsample

def interpolate_cases(spatial):
    return [dict(size=9), dict(size=(4, 11, 3)[:spatial]), dict(scale_factor=2),
            dict(scale_factor=1.5), dict(scale_factor=0.5),
            dict(scale_factor=(2.3, 0.7, 1.0)[:spatial]),
            dict(scale_factor=1.7, recompute_scale_factor=True)]


def _backward_shortcut(kwargs, shape, out_shape):
    """Whether PyTorch's 'nearest' backward kernel takes another source than
    its 1-D / 3-D forward: an output of the input's size or twice it from a
    scale factor other than 1 or 2 (its nearest_idx shortcuts)."""
    factors = kwargs.get("scale_factor")
    if factors is None or kwargs.get("recompute_scale_factor"):
        return False
    factors = factors if isinstance(factors, tuple) else (factors,) * len(shape)
    return any((m == 2 * n and f != 2) or (m == n and f != 1)
               for n, m, f in zip(shape, out_shape, factors))


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None),
                                                ("linear", False), ("linear", True)])
@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_interpolate(rng, mode, align_corners, spatial):
    """Sizes and scale factors, 1-D to 3-D. PyTorch's 1-D and 3-D 'nearest'
    backward kernels do not always take the sources of its forward kernels
    (_backward_shortcut); of's gradient is its forward's, so those cases
    compare the forward only."""
    shape = [(2, 3, 6), (2, 3, 5, 7), (1, 2, 3, 4, 5)][spatial - 1]
    if mode == "linear":
        mode = ["linear", "bilinear", "trilinear"][spatial - 1]
    x = rng.standard_normal(shape)
    for kwargs in interpolate_cases(spatial):
        def ours(x):
            return OF.interpolate(x, mode=mode, align_corners=align_corners, **kwargs)

        def theirs(x):
            return TF.interpolate(x, mode=mode, align_corners=align_corners, **kwargs)
        out = theirs(torch.tensor(x))
        if mode == "nearest" and spatial != 2 and \
                _backward_shortcut(kwargs, shape[2:], out.shape[2:]):
            close(ours(of.tensor(x.astype(np.float32))), out, what=str(kwargs))
            continue
        check_function(rng, ours, theirs, x)


def test_upsample_modules(rng):
    x = rng.standard_normal((1, 2, 3, 4))
    for tm, om in [(torch.nn.Upsample(scale_factor=2, mode="bilinear"),
                    onn.Upsample(scale_factor=2, mode="bilinear")),
                   (torch.nn.Upsample(size=(5, 7)), onn.Upsample(size=(5, 7))),
                   (torch.nn.UpsamplingNearest2d(scale_factor=3),
                    onn.UpsamplingNearest2d(scale_factor=3)),
                   (torch.nn.UpsamplingBilinear2d(size=6), onn.UpsamplingBilinear2d(size=6))]:
        check_module(rng, tm, om, [x])
    check_function(rng, lambda x: OF.interpolate(x, size=(1, 2), mode="area"),
                   lambda x: TF.interpolate(x, size=(1, 2), mode="area"), x)
    for name, kwargs in [("upsample", dict(scale_factor=2, mode="bilinear")),
                         ("upsample_nearest", dict(size=(4, 6))),
                         ("upsample_bilinear", dict(scale_factor=1.5))]:
        with pytest.warns(UserWarning, match="deprecated"):
            ours = getattr(OF, name)(of.tensor(x.astype(np.float32)), **kwargs)
        with pytest.warns(UserWarning, match="deprecated"):
            theirs = getattr(TF, name)(torch.tensor(x), **kwargs)
        close(ours, theirs, what=name)


def test_interpolate_errors():
    x, tx = of.zeros(1, 2, 4, 4), torch.zeros(1, 2, 4, 4)
    for kwargs in [dict(mode="nearest", align_corners=True, scale_factor=2),
                   dict(mode="bilinear"), dict(mode="bilinear", size=3, scale_factor=2),
                   dict(mode="linear", size=3), dict(mode="bilinear", size=(3, 4, 5)),
                   dict(mode="bilinear", scale_factor=(2, 3, 4)),
                   dict(size=3, recompute_scale_factor=True)]:
        raises_like(lambda: OF.interpolate(x, **kwargs), lambda: TF.interpolate(tx, **kwargs))
    raises_like(lambda: OF.interpolate(of.zeros(1, 2, 4), size=3, mode="bilinear"),
                lambda: TF.interpolate(torch.zeros(1, 2, 4), size=3, mode="bilinear"))
    with pytest.raises(NotImplementedError, match="bicubic"):
        OF.interpolate(x, size=3, mode="bicubic")
    with pytest.raises(NotImplementedError, match="antialias"):
        OF.interpolate(x, size=3, mode="bilinear", antialias=True)


# ---------------------------------------------------------------------------
# scaled_dot_product_attention with dropout

def test_sdpa_dropout(rng):
    """With v the identity the result is the dropped-out weights: each 0 or
    the weight / (1 - p), about p of them 0; a seed gives the same masks
    again; compiled, each call draws new masks. The gradient flows
    through the kept weights only."""
    p, length = 0.4, 64
    q, k = rng.standard_normal((2, length, 8)), rng.standard_normal((2, length, 8))
    eye = np.broadcast_to(np.eye(length), (2, length, length)).astype(np.float32)
    qo, ko = of.tensor(q.astype(np.float32), requires_grad=True), of.tensor(k.astype(np.float32))
    weights = TF.softmax(torch.tensor(q) @ torch.tensor(k).transpose(-1, -2) / np.sqrt(8), -1)
    weights = weights.numpy()
    of.manual_seed(3)
    out = OF.scaled_dot_product_attention(qo, ko, of.tensor(eye), dropout_p=p)
    got = out.numpy()
    kept = got != 0
    np.testing.assert_allclose(got[kept], weights[kept] / (1 - p), rtol=1e-4)
    assert abs(1 - kept.mean() - p) < 0.03
    of.manual_seed(3)
    again = OF.scaled_dot_product_attention(qo, ko, of.tensor(eye), dropout_p=p)
    np.testing.assert_array_equal(again.numpy(), got)
    (out * of.tensor(eye)).sum().backward()  # the kept diagonal's weights
    tq = torch.tensor(q, requires_grad=True)
    tw = TF.softmax(tq @ torch.tensor(k).transpose(-1, -2) / np.sqrt(8), -1)
    (tw * torch.tensor(kept * np.eye(length)) / (1 - p)).sum().backward()
    close(qo.grad, tq.grad, 1e-4)
    attend = of.compile(lambda q, k, v: OF.scaled_dot_product_attention(q, k, v, dropout_p=p))
    first, second = (attend(qo.detach(), ko, of.tensor(eye)).numpy() for _ in range(2))
    assert not np.array_equal(first != 0, second != 0)
    assert abs(1 - (first != 0).mean() - p) < 0.03


def test_sdpa_grouped_query_attention(rng):
    """enable_gqa: 6 query heads over 2 key/value heads, with a mask."""
    q, k, v = (rng.standard_normal((2, h, 5, 4)) for h in (6, 2, 2))
    mask = rng.random((5, 5)) < 0.7
    mask[:, 0] = True
    check_function(rng, lambda q, k, v: OF.scaled_dot_product_attention(
                       q, k, v, of.tensor(mask), enable_gqa=True),
                   lambda q, k, v: TF.scaled_dot_product_attention(
                       q, k, v, torch.tensor(mask), enable_gqa=True), q, k, v)
    raises_like(lambda: OF.scaled_dot_product_attention(of.zeros(1, 3, 2, 4), of.zeros(1, 2, 2, 4),
                                                        of.zeros(1, 2, 2, 4), enable_gqa=True),
                lambda: TF.scaled_dot_product_attention(torch.zeros(1, 3, 2, 4),
                                                        torch.zeros(1, 2, 2, 4),
                                                        torch.zeros(1, 2, 2, 4), enable_gqa=True))


# ---------------------------------------------------------------------------
# MultiheadAttention

E, HEADS = 8, 2


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False),
                                                   (False, True)])
@pytest.mark.parametrize("mask_kind", ["bool", "float", "3d"])
def test_multihead_attention(rng, batch_first, need_weights, average, mask_kind):
    """Cross-attention with an attn_mask and a key_padding_mask, then
    self-attention (one input tensor) eagerly and compiled."""
    length, source, batch = 3, 5, 2
    tm = torch.nn.MultiheadAttention(E, HEADS, batch_first=batch_first)
    om = onn.MultiheadAttention(E, HEADS, batch_first=batch_first)

    def seq(n):
        return rng.standard_normal((batch, n, E) if batch_first else (n, batch, E))
    if mask_kind == "bool":
        mask = rng.random((length, source)) < 0.3
        mask[:, 0] = False  # no row masked whole
    elif mask_kind == "float":
        mask = rng.standard_normal((length, source))
    else:
        mask = rng.standard_normal((batch * HEADS, length, source))
    padding = np.zeros((batch, source), bool)
    padding[0, 1] = padding[1, 4] = True
    kwargs = dict(need_weights=need_weights, average_attn_weights=average, attn_mask=mask,
                  key_padding_mask=padding)
    check_module(rng, tm, om, [seq(length), seq(source), seq(source)], kwargs)
    x = seq(length)
    causal = np.triu(np.ones((length, length), bool), 1)
    kwargs = dict(need_weights=need_weights, average_attn_weights=average, attn_mask=causal)
    for compiled in (False, True) if mask_kind == "bool" else (False,):
        tm.zero_grad()
        om.zero_grad()
        check_module(rng, tm, om, [x, x, x], kwargs, compiled=compiled)


def test_multihead_attention_kdim_vdim_unbatched(rng):
    tm = torch.nn.MultiheadAttention(E, HEADS, kdim=3, vdim=5, bias=False)
    om = onn.MultiheadAttention(E, HEADS, kdim=3, vdim=5, bias=False)
    assert [n for n, _ in om.named_parameters()] == [n for n, _ in tm.named_parameters()]
    q, k, v = (rng.standard_normal(s) for s in ((4, E), (6, 3), (6, 5)))
    kwargs = dict(attn_mask=rng.standard_normal((HEADS, 4, 6)),
                  key_padding_mask=np.array([0, 0, 1, 0, 0, 0], bool))
    check_module(rng, tm, om, [q, k, v], kwargs)
    check_module(rng, tm, om, [q, k, v], dict(kwargs, need_weights=False))


@pytest.mark.parametrize("add_bias_kv,add_zero_attn", [(True, False), (False, True),
                                                       (True, True)])
def test_multihead_attention_extra_keys(rng, add_bias_kv, add_zero_attn):
    """bias_k / bias_v and the zero key: extra source positions, which the
    masks allow."""
    tm = torch.nn.MultiheadAttention(E, HEADS, add_bias_kv=add_bias_kv,
                                     add_zero_attn=add_zero_attn)
    om = onn.MultiheadAttention(E, HEADS, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
    q, k, v = (rng.standard_normal(s) for s in ((3, 2, E), (4, 2, E), (4, 2, E)))
    padding = np.zeros((2, 4), bool)
    padding[1, 0] = True
    for need_weights in (True, False):
        tm.zero_grad()
        om.zero_grad()
        check_module(rng, tm, om, [q, k, v], dict(attn_mask=rng.random((3, 4)) < 0.3,
                                                  key_padding_mask=padding,
                                                  need_weights=need_weights))


def test_multihead_attention_dropout(rng):
    """Dropout of the attention weights in training mode (a random mask,
    so compared with eval mode's result only by being different); eval
    mode matches PyTorch."""
    tm = torch.nn.MultiheadAttention(E, HEADS, dropout=0.5)
    om = onn.MultiheadAttention(E, HEADS, dropout=0.5)
    same_weights(tm, om)
    x = rng.standard_normal((6, 2, E))
    xo = of.tensor(x.astype(np.float32))
    for need_weights in (True, False):
        train = om(xo, xo, xo, need_weights=need_weights)[0].numpy()
        om.eval()
        tm.eval()
        out = om(xo, xo, xo, need_weights=need_weights)[0]
        close(out, tm(*[torch.tensor(x)] * 3, need_weights=need_weights)[0])
        assert np.abs(train - out.numpy()).max() > 1e-3
        om.train()
        tm.train()


def test_multihead_attention_errors():
    raises_like(lambda: onn.MultiheadAttention(6, 4), lambda: torch.nn.MultiheadAttention(6, 4))
    raises_like(lambda: onn.MultiheadAttention(0, 4), lambda: torch.nn.MultiheadAttention(0, 4))
    om, tm = onn.MultiheadAttention(E, HEADS), torch.nn.MultiheadAttention(E, HEADS)
    x, tx = of.zeros(3, 2, E), torch.zeros(3, 2, E)
    raises_like(lambda: om(x, x, x, attn_mask=of.zeros(3, 4)),
                lambda: tm(tx, tx, tx, attn_mask=torch.zeros(3, 4)))
    raises_like(lambda: om(x, x, x, attn_mask=of.zeros(5, 3, 3)),
                lambda: tm(tx, tx, tx, attn_mask=torch.zeros(5, 3, 3)))
    raises_like(lambda: om(x, x, x, key_padding_mask=of.zeros(2, 3, dtype=of.int64)),
                lambda: tm(tx, tx, tx, key_padding_mask=torch.zeros(2, 3, dtype=torch.int64)))
    raises_like(lambda: om(x, x, x, is_causal=True), lambda: tm(tx, tx, tx, is_causal=True))
    raises_like(lambda: om(of.zeros(3, 2, 4), x, x), lambda: tm(torch.zeros(3, 2, 4), tx, tx))


# ---------------------------------------------------------------------------
# The Transformer family

D_MODEL, FF = 8, 16


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_transformer_encoder_layer(rng, batch_first, norm_first, activation):
    act_t, act_o = (TF.silu, OF.silu) if activation == "callable" else (activation,) * 2
    tm = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, activation=act_t,
                                          batch_first=batch_first, norm_first=norm_first)
    om = onn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, activation=act_o,
                                     batch_first=batch_first, norm_first=norm_first)
    length, batch = 4, 3
    x = rng.standard_normal((batch, length, D_MODEL) if batch_first else (length, batch, D_MODEL))
    padding = np.zeros((batch, length), bool)
    padding[0, 2] = True
    kwargs = dict(src_mask=np.triu(np.full((length, length), -np.inf), 1),
                  src_key_padding_mask=padding)
    for compiled in (False, True) if activation != "gelu" else (False,):
        tm.zero_grad()
        om.zero_grad()
        check_module(rng, tm, om, [x], kwargs, compiled=compiled)


def test_transformer_decoder_layer_and_stacks(rng):
    length, source, batch = 4, 5, 3
    tgt, memory = rng.standard_normal((length, batch, D_MODEL)), \
        rng.standard_normal((source, batch, D_MODEL))
    kwargs = dict(tgt_mask=np.triu(np.ones((length, length), bool), 1),
                  memory_key_padding_mask=np.eye(batch, source, dtype=bool))
    tm = torch.nn.TransformerDecoderLayer(D_MODEL, HEADS, FF, dropout=0.0, norm_first=True)
    om = onn.TransformerDecoderLayer(D_MODEL, HEADS, FF, dropout=0.0, norm_first=True)
    check_module(rng, tm, om, [tgt, memory], kwargs)
    tm = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(
        D_MODEL, HEADS, FF, dropout=0.0, activation="gelu"), 2, norm=torch.nn.LayerNorm(D_MODEL))
    om = onn.TransformerDecoder(onn.TransformerDecoderLayer(
        D_MODEL, HEADS, FF, dropout=0.0, activation="gelu"), 2, norm=onn.LayerNorm(D_MODEL))
    check_module(rng, tm, om, [tgt, memory], kwargs)
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        D_MODEL, HEADS, FF, dropout=0.0), 3, enable_nested_tensor=False)
    om = onn.TransformerEncoder(onn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0), 3)
    check_module(rng, tm, om, [memory], dict(mask=np.triu(np.ones((source, source), bool), 1),
                                             is_causal=True))


def test_transformer(rng):
    tm = torch.nn.Transformer(D_MODEL, HEADS, 2, 2, FF, dropout=0.0, batch_first=True)
    om = onn.Transformer(D_MODEL, HEADS, 2, 2, FF, dropout=0.0, batch_first=True)
    src, tgt = rng.standard_normal((3, 5, D_MODEL)), rng.standard_normal((3, 4, D_MODEL))
    mask = onn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4))
    assert onn.Transformer.generate_square_subsequent_mask(2, dtype=of.float64).dtype is \
        of.float64
    padding = np.zeros((3, 5), bool)
    padding[1, 3] = True
    check_module(rng, tm, om, [src, tgt], dict(tgt_mask=mask.numpy().astype(np.float64),
                                               src_key_padding_mask=padding,
                                               memory_key_padding_mask=padding))
    raises_like(lambda: om(of.zeros(3, 5, D_MODEL), of.zeros(2, 4, D_MODEL)),
                lambda: tm(torch.zeros(3, 5, D_MODEL), torch.zeros(2, 4, D_MODEL)))
    raises_like(lambda: om(of.zeros(3, 5, D_MODEL), of.zeros(3, 4, 6)),
                lambda: tm(torch.zeros(3, 5, D_MODEL), torch.zeros(3, 4, 6)))
    raises_like(lambda: onn.TransformerEncoderLayer(D_MODEL, HEADS, activation="tanh"),
                lambda: torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, activation="tanh"))


def test_transformer_initialisation():
    """PyTorch's initialisation: xavier_uniform_ matrices, zero biases of
    the attention's projections, unit LayerNorms."""
    of.manual_seed(0)
    model = onn.Transformer(16, 4, 1, 1, 32)
    for name, p in model.named_parameters():
        value = p.numpy()
        if value.ndim > 1:
            bound = np.sqrt(6.0 / sum(value.shape[:2]))
            assert np.abs(value).max() <= bound and np.abs(value).max() > 0.8 * bound, name
        elif "norm" in name:
            assert np.all(value == (1.0 if name.endswith("weight") else 0.0)), name
        elif "in_proj_bias" in name or "out_proj.bias" in name:
            assert not value.any(), name
    torch_keys = list(torch.nn.Transformer(16, 4, 1, 1, 32).state_dict())
    assert list(model.state_dict()) == torch_keys


# ---------------------------------------------------------------------------
# In a compiled training step

def _bag_encoder(nn):
    """EmbeddingBag (offsets traced) feeding a TransformerEncoderLayer and a
    Conv1d over the sequence: a class for torch.nn or of.nn."""
    class BagEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(20, 8, mode="mean")
            self.encoder = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            self.conv = nn.Conv1d(8, 3, 3, padding="same")

        def forward(self, ids, offsets, x):
            h = self.encoder(x + self.bag(ids, offsets).unsqueeze(1))
            return self.conv(h.transpose(1, 2)).mean(2)
    return BagEncoder


def test_compiled_training_step(rng):
    """Three SGD steps of of.compile(model, loss_fn, optimizer) against
    PyTorch's loop: the losses and the trained weights."""
    tm, om = _bag_encoder(torch.nn)().double(), _bag_encoder(onn)()
    om.load_state_dict(tm.state_dict())
    ids, offsets = rng.integers(0, 20, 10), np.array([0, 3, 3, 7])
    x, y = rng.standard_normal((4, 5, 8)), rng.integers(0, 3, 4)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    step = of.compile(om, loss_fn=OF.cross_entropy,
                      optimizer=of.optim.SGD(om.parameters(), lr=0.1))
    for _ in range(3):
        loss = step(of.tensor(ids), of.tensor(offsets), of.tensor(x.astype(np.float32)),
                    of.tensor(y))
        topt.zero_grad()
        expected = TF.cross_entropy(tm(torch.tensor(ids), torch.tensor(offsets),
                                       torch.tensor(x)), torch.tensor(y))
        expected.backward()
        topt.step()
        assert abs(float(loss.item()) - float(expected)) <= 1e-5 * abs(float(expected))
    trained = om.state_dict()
    for name, value in tm.state_dict().items():
        close(trained[name], value, what=name)


# ---------------------------------------------------------------------------
# Recurrent cells (time_sequence_prediction's LSTMCell), LeakyReLU and the
# L1-type losses (dcgan's and actor_critic's)

CELLS = [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)),
         ("LSTMCell", {}), ("LSTMCell", dict(bias=False)), ("GRUCell", {})]


@pytest.mark.parametrize("name,kwargs", CELLS, ids=str)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_rnn_cells(rng, name, kwargs, batched):
    tm, om = getattr(torch.nn, name)(3, 5, **kwargs), getattr(onn, name)(3, 5, **kwargs)
    assert repr(om) == repr(tm)
    assert [n for n, _ in om.named_parameters()] == [n for n, _ in tm.named_parameters()]
    bound = 1 / np.sqrt(5)  # PyTorch's initialisation range
    assert all(float(p.abs().max().item()) <= bound for p in om.parameters())
    x = rng.standard_normal((4, 3) if batched else (3,))
    check_module(rng, tm, om, [x])  # without a state: zeros
    states = [rng.standard_normal((4, 5) if batched else (5,))
              for _ in range(2 if name == "LSTMCell" else 1)]
    if name != "LSTMCell":
        check_module(rng, tm, om, [x] + states)
        return
    tm.zero_grad()
    om.zero_grad()
    check_function(rng, lambda x, h, c: om(x, (h, c)), lambda x, h, c: tm(x, (h, c)),
                   x, *states)
    grads = dict(om.named_parameters())
    for n, p in tm.named_parameters():
        close(grads[n].grad, p.grad, what=f"gradient of {n}")


def test_lstm_cell_compiled_loop(rng):
    """time_sequence_prediction's use: cells stepped over a sequence in a
    compiled function, float64 as there."""
    tm, om = torch.nn.LSTMCell(1, 6), onn.LSTMCell(1, 6)
    same_weights(tm, om)
    om.double()

    def unrolled(fw, cell):
        def run(x):
            h = c = fw.zeros(x.shape[0], 6, dtype=fw.float64)
            outs = []
            for x_t in x.split(1, dim=1):
                h, c = cell(x_t, (h, c))
                outs.append(h)
            return fw.cat(outs, dim=1)
        return run
    x = rng.standard_normal((2, 5))
    got = of.compile(unrolled(of, om))(of.tensor(x))
    close(got, unrolled(torch, tm)(torch.tensor(x)), tol=1e-10)


def test_rnn_cell_errors():
    cell, tcell = onn.LSTMCell(3, 4), torch.nn.LSTMCell(3, 4)
    for x, hx in [((2, 5), None), ((2, 3), ((3, 4), (3, 4))), ((2, 3), ((2, 5), (2, 5))),
                  ((2, 2, 3), None), ((3,), ((1, 4), (1, 4)))]:
        raises_like(lambda: cell(of.zeros(*x), hx and tuple(of.zeros(*h) for h in hx)),
                    lambda: tcell(torch.zeros(*x), hx and tuple(torch.zeros(*h) for h in hx)))
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D"):
        cell(of.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        cell(of.zeros(2, 5))
    with pytest.raises(ValueError, match="GRUCell: Expected hidden to be 1D or 2D, got 3D"):
        onn.GRUCell(3, 4)(of.zeros(2, 3), of.zeros(1, 2, 4))
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        onn.RNNCell(3, 4, nonlinearity="gelu")(of.zeros(2, 3))


@pytest.mark.parametrize("slope", [0.01, 0.2])
def test_leaky_relu(rng, slope):
    x = rng.standard_normal((3, 4))
    x[0, :2] = 0.0  # PyTorch's gradient at 0 is the slope
    check_function(rng, lambda a: OF.leaky_relu(a, slope), lambda a: TF.leaky_relu(a, slope), x)
    check_module(rng, torch.nn.LeakyReLU(slope), onn.LeakyReLU(slope), [x])
    assert repr(onn.LeakyReLU(0.2, inplace=True)) == repr(torch.nn.LeakyReLU(0.2, inplace=True))
    y = of.tensor(x.astype(np.float32))
    assert OF.leaky_relu(y, slope, inplace=True) is y
    close(y, TF.leaky_relu(torch.tensor(x), slope))


LOSSES = [("l1_loss", "L1Loss", {}), ("smooth_l1_loss", "SmoothL1Loss", {}),
          ("smooth_l1_loss", "SmoothL1Loss", dict(beta=0.5)),
          ("smooth_l1_loss", "SmoothL1Loss", dict(beta=0.0)),
          ("huber_loss", "HuberLoss", dict(delta=0.7))]


@pytest.mark.parametrize("function,module,kwargs", LOSSES, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_losses(rng, function, module, kwargs, reduction):
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    x[0, :3] = y[0, :3] + np.array([0.0, 0.5, -0.7])  # at 0 and on the kinks
    check_function(rng, lambda a, b: getattr(OF, function)(a, b, reduction=reduction, **kwargs),
                   lambda a, b: getattr(TF, function)(a, b, reduction=reduction, **kwargs),
                   x, y)
    check_module(rng, getattr(torch.nn, module)(reduction=reduction, **kwargs),
                 getattr(onn, module)(reduction=reduction, **kwargs), [x, y])


def test_l1_loss_errors():
    with pytest.warns(UserWarning, match=re.escape(
            "Using a target size (torch.Size([2, 3])) that is different to the input size "
            "(torch.Size([3])). This will likely lead to incorrect results due to "
            "broadcasting.")):
        OF.smooth_l1_loss(of.zeros(3), of.zeros(2, 3))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        OF.smooth_l1_loss(of.zeros(3), of.zeros(3), beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values"):
        OF.huber_loss(of.zeros(3), of.zeros(3), delta=0.0)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        OF.l1_loss(of.zeros(3), of.zeros(3), reduction="bad")
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert onn.SmoothL1Loss(size_average=False).reduction == "sum"
