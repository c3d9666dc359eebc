"""Transposed convolution, interpolation and EmbeddingBag against PyTorch (float64): values and
gradients, the layers through ``load_state_dict``, and gradcheck in both modes to order 2."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def _pair(rng, *shape):
    a = rng.standard_normal(shape)
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _check_grads(out, tout, pairs, rng):
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), **TOL)
    w = rng.standard_normal(tout.shape)
    (out * mg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for m, t in pairs:
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), **TOL)


# -- conv_transpose2d ---------------------------------------------------------------------------------

CONVT = [  # N, C, H, W, O, groups, kernel, stride, padding, output_padding, dilation
    (2, 4, 5, 6, 6, 2, 3, 2, 1, 1, 1),
    (1, 3, 4, 4, 2, 1, (2, 3), 1, 0, 0, 1),
    (2, 2, 3, 5, 4, 2, 3, (2, 3), (2, 1), (1, 2), (2, 2)),
    (1, 2, 6, 6, 2, 1, 5, 3, 4, 2, 1),     # padding larger than dilation (k - 1): the spread input is cropped
    (1, 2, 3, 3, 3, 1, 3, 1, 2, 0, 1),
    (2, 6, 4, 3, 9, 3, 2, 2, 0, 0, 3),     # output_padding 0 with dilation 3
]


@pytest.mark.parametrize("case", CONVT)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose2d_matches_torch(case, bias):
    n, c, h, w, o, g, k, s, p, op, d = case
    rng = np.random.default_rng(1)
    kk = k if isinstance(k, tuple) else (k, k)
    x, tx = _pair(rng, n, c, h, w)
    wt, twt = _pair(rng, c, o // g, *kk)
    pairs = [(x, tx), (wt, twt)]
    b = tb = None
    if bias:
        b, tb = _pair(rng, o)
        pairs.append((b, tb))
    out = F.conv_transpose2d(x, wt, b, stride=s, padding=p, output_padding=op, groups=g, dilation=d)
    tout = TF.conv_transpose2d(tx, twt, tb, stride=s, padding=p, output_padding=op, groups=g, dilation=d)
    assert out.shape == tuple(tout.shape)
    _check_grads(out, tout, pairs, rng)


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    rng = np.random.default_rng(2)
    x = mg.tensor(rng.standard_normal((2, 4, 9, 8)), requires_grad=True)
    w = mg.tensor(rng.standard_normal((6, 2, 3, 3)))
    y = F.conv2d(x, w, stride=2, padding=1, dilation=1, groups=2)
    v = mg.tensor(rng.standard_normal(y.shape))
    (y * v).sum().backward()
    back = F.conv_transpose2d(v, w, stride=2, padding=1, output_padding=(0, 1), groups=2)
    np.testing.assert_allclose(back.detach().numpy(), x.grad.numpy(), **TOL)


def test_conv_transpose2d_unbatched_and_errors():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2, 2))
    got = F.conv_transpose2d(mg.tensor(x), mg.tensor(w), stride=2)
    np.testing.assert_allclose(got.numpy(), TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2).numpy(),
                               **TOL)
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(mg.tensor(x), mg.tensor(w), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="groups"):
        F.conv_transpose2d(mg.tensor(x), mg.tensor(w), groups=3)


def test_conv_transpose2d_gradcheck_both_modes_order_2():
    rng = np.random.default_rng(4)
    x = mg.tensor(rng.standard_normal((1, 2, 3, 2)), requires_grad=True)
    w = mg.tensor(rng.standard_normal((2, 1, 2, 3)), requires_grad=True)
    b = mg.tensor(rng.standard_normal(2), requires_grad=True)

    def f(x, w, b):
        return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))

    assert mg.gradcheck(f, (x, w, b), modes=("rev", "fwd"))
    assert mg.gradcheck(f, (x, w, b), modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(1, 2), groups=2, dilation=2, bias=False)])
def test_conv_transpose2d_layer_matches_torch(kw):
    mg.manual_seed(0)
    m = mg.nn.ConvTranspose2d(4, 6, 3, dtype=mg.float64, **kw)
    t = torch.nn.ConvTranspose2d(4, 6, 3, dtype=torch.float64, **kw)
    assert m.weight.shape == tuple(t.weight.shape)
    assert set(m.state_dict()) == set(t.state_dict())
    # PyTorch's init: U(+-1/sqrt(fan_in)) with fan_in = out / groups * kH * kW, for weight and bias
    bound = 1 / np.sqrt(m.weight.shape[1] * 9)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    m.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(5)
    x, tx = _pair(rng, 2, 4, 5, 4)
    pairs = [(x, tx), (m.weight, t.weight)] + ([(m.bias, t.bias)] if m.bias is not None else [])
    _check_grads(m(x), t(tx), pairs, rng)


def test_conv_transpose2d_layer_output_size():
    m = mg.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=mg.float64)
    t = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=torch.float64)
    m.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(6).standard_normal((1, 2, 4, 4))
    got = m(mg.tensor(x), output_size=(8, 7))
    assert got.shape == (1, 3, 8, 7)
    np.testing.assert_allclose(got.detach().numpy(), t(torch.tensor(x), output_size=(8, 7)).detach().numpy(), **TOL)
    with pytest.raises(ValueError, match="output_size"):
        m(mg.tensor(x), output_size=(9, 7))
    assert "output_padding" not in repr(m) and "ConvTranspose2d(2, 3" in repr(m)


# -- interpolate / Upsample ---------------------------------------------------------------------------

INTERP = [
    dict(size=(9, 4)), dict(scale_factor=2), dict(scale_factor=(1.7, 0.6)), dict(size=7),
    dict(size=(13, 11), mode="nearest-exact"), dict(scale_factor=(2.3, 1.5), mode="nearest-exact"),
    dict(size=(9, 4), mode="bilinear"), dict(size=(9, 14), mode="bilinear", align_corners=False),
    dict(size=(9, 14), mode="bilinear", align_corners=True), dict(scale_factor=(1.7, 0.6), mode="bilinear"),
    dict(scale_factor=(1.7, 3), mode="bilinear", align_corners=True),
    dict(size=(1, 1), mode="bilinear", align_corners=True), dict(size=(1, 2), mode="bilinear"),
    dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True),
    dict(scale_factor=0.5, mode="bilinear"),
]


@pytest.mark.parametrize("kw", INTERP, ids=str)
def test_interpolate_matches_torch(kw):
    rng = np.random.default_rng(7)
    x, tx = _pair(rng, 2, 3, 5, 7)
    out, tout = F.interpolate(x, **kw), TF.interpolate(tx, **kw)
    assert out.shape == tuple(tout.shape)
    _check_grads(out, tout, [(x, tx)], rng)


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear_gradcheck_both_modes_order_2(align_corners):
    x = mg.tensor(np.random.default_rng(8).standard_normal((1, 2, 3, 2)), requires_grad=True)

    def f(x):
        return F.interpolate(x, size=(4, 5), mode="bilinear", align_corners=align_corners)

    assert mg.gradcheck(f, (x,), modes=("rev", "fwd"))
    assert mg.gradcheck(f, (x,), modes=("rev", "fwd"), order=2)


def test_interpolate_float32_and_errors():
    x = np.random.default_rng(9).standard_normal((1, 2, 4, 4)).astype(np.float32)
    got = F.interpolate(mg.tensor(x), scale_factor=1.5, mode="bilinear")
    assert got.dtype == mg.float32
    want = TF.interpolate(torch.tensor(x), scale_factor=1.5, mode="bilinear").numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="exactly one"):
        F.interpolate(mg.tensor(x))
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(mg.tensor(x), size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(mg.tensor(x), size=3, mode="bicubic")


@pytest.mark.parametrize(("make", "tmake"), [
    (lambda: mg.nn.Upsample(scale_factor=2), lambda: torch.nn.Upsample(scale_factor=2)),
    (lambda: mg.nn.Upsample(size=(7, 3), mode="bilinear"), lambda: torch.nn.Upsample(size=(7, 3), mode="bilinear")),
    (lambda: mg.nn.Upsample(scale_factor=(1.5, 2), mode="bilinear", align_corners=True),
     lambda: torch.nn.Upsample(scale_factor=(1.5, 2), mode="bilinear", align_corners=True)),
    (lambda: mg.nn.UpsamplingNearest2d(size=5), lambda: torch.nn.UpsamplingNearest2d(size=5)),
    (lambda: mg.nn.UpsamplingBilinear2d(scale_factor=2), lambda: torch.nn.UpsamplingBilinear2d(scale_factor=2)),
])
def test_upsample_layers_match_torch(make, tmake):
    rng = np.random.default_rng(10)
    x, tx = _pair(rng, 2, 3, 4, 3)
    m = make()
    assert list(m.state_dict()) == []
    _check_grads(m(x), tmake()(tx), [(x, tx)], rng)


# -- EmbeddingBag -------------------------------------------------------------------------------------

BAGS = [  # input, offsets, include_last_offset
    (np.array([[1, 3, 3, 0], [5, 2, 7, 3], [3, 3, 3, 3]]), None, False),   # the last bag all padding (3)
    (np.array([4, 3, 1, 3, 7, 9, 0, 2, 2, 5, 3, 8]), np.array([0, 3, 3, 7]), False),  # an empty bag
    (np.array([4, 3, 1, 3, 7, 9, 0, 2, 2, 5, 3, 8]), np.array([0, 2, 2, 9, 12]), True),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3, -7])
@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag_matches_torch(mode, padding_idx, case):
    inp, off, last = BAGS[case]
    rng = np.random.default_rng(11)
    w, tw = _pair(rng, 10, 4)
    kw = dict(mode=mode, padding_idx=padding_idx, include_last_offset=last)
    out = F.embedding_bag(mg.tensor(inp), w, None if off is None else mg.tensor(off), **kw)
    tout = TF.embedding_bag(torch.tensor(inp), tw, None if off is None else torch.tensor(off), **kw)
    assert out.shape == tuple(tout.shape)
    _check_grads(out, tout, [(w, tw)], rng)


@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag_per_sample_weights(case):
    inp, off, last = BAGS[case]
    rng = np.random.default_rng(12)
    w, tw = _pair(rng, 10, 4)
    p, tp = _pair(rng, *inp.shape)
    out = F.embedding_bag(mg.tensor(inp), w, None if off is None else mg.tensor(off), mode="sum",
                          per_sample_weights=p, include_last_offset=last)
    tout = TF.embedding_bag(torch.tensor(inp), tw, None if off is None else torch.tensor(off), mode="sum",
                            per_sample_weights=tp, include_last_offset=last)
    _check_grads(out, tout, [(w, tw), (p, tp)], rng)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_layer_matches_torch(mode):
    mg.manual_seed(0)
    m = mg.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=3, dtype=mg.float64)
    t = torch.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=3, dtype=torch.float64)
    assert list(m.state_dict()) == list(t.state_dict()) == ["weight"]
    assert not m.weight.detach().numpy()[3].any()          # PyTorch zeroes the padding row
    m.load_state_dict({k: mg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(13)
    for inp, off, _ in BAGS[:2]:
        m.weight.grad = None
        t.weight.grad = None
        out = m(mg.tensor(inp), None if off is None else mg.tensor(off))
        tout = t(torch.tensor(inp), None if off is None else torch.tensor(off))
        _check_grads(out, tout, [(m.weight, t.weight)], rng)


def test_embedding_bag_errors():
    w = mg.randn(5, 2)
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(mg.tensor([1, 2]), w)
    with pytest.raises(ValueError, match="offsets\\[0\\]"):
        F.embedding_bag(mg.tensor([1, 2]), w, mg.tensor([1]))
    with pytest.raises(IndexError, match="out of range"):
        F.embedding_bag(mg.tensor([[1, 5]]), w)
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(mg.tensor([[1, 2]]), w, mode="mean", per_sample_weights=mg.ones(1, 2))
    with pytest.raises(ValueError, match="mode"):
        mg.nn.EmbeddingBag(5, 2, mode="median")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck_both_modes_order_2(mode):
    rng = np.random.default_rng(14)
    w = mg.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    p = mg.tensor(rng.standard_normal(7), requires_grad=True)
    idx, off = mg.tensor([0, 4, 2, 5, 1, 4, 3]), mg.tensor([0, 2, 2, 5])

    def f(w, p):
        return F.embedding_bag(idx, w, off, mode=mode, padding_idx=1,
                               per_sample_weights=p if mode == "sum" else None)

    assert mg.gradcheck(f, (w, p), modes=("rev", "fwd"))
    assert mg.gradcheck(f, (w, p), modes=("rev", "fwd"), order=2)
