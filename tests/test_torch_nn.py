"""Issue 42: PyTorch's further nn names (normalize, cosine_similarity, pairwise_distance, glu, mish,
hardtanh, logsigmoid, softmin, group_norm, rms_norm, scaled_dot_product_attention, the embedding and
ranking losses, and the layers LogSoftmax, Mish, Hardtanh, Unflatten, ParameterDict, GroupNorm,
RMSNorm, ZeroPad2d, PixelShuffle), each against torch in float64: outputs, and the gradients of the
inputs and parameters for a random upstream gradient; a few gradchecked to second order in both modes."""
import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

torch = pytest.importorskip("torch")

nn = mg.nn
F = mg.nn.functional
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def _compare(mg_fn, th_fn, arrays, grads=None, seed=0):
    """``mg_fn(*mg leaves)`` against ``th_fn(*torch leaves)``: outputs, then the gradients of the
    inputs whose index is in ``grads`` (default: every float input) for a random upstream gradient."""
    rng = np.random.default_rng(seed)
    grads = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"] if grads is None else grads
    xs = [mg.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    out, tout = mg_fn(*xs), th_fn(*ts)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), **TOL)
    g = rng.standard_normal(tout.shape)
    (out * mg.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    for i in grads:
        np.testing.assert_allclose(xs[i].grad.numpy(), ts[i].grad.numpy(), **TOL, err_msg=f"input {i}")


def _r(*shape, seed=1):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape)


# -- functionals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_normalize(p, dim):
    _compare(lambda x: F.normalize(x, p=p, dim=dim), lambda x: TF.normalize(x, p=p, dim=dim), [_r(3, 4, 5)])


def test_normalize_clamps_at_eps():
    x = np.zeros((2, 3))
    x[1] = [1e-14, 0.0, 0.0]
    np.testing.assert_allclose(F.normalize(mg.tensor(x)).numpy(), TF.normalize(torch.tensor(x)).numpy(), rtol=1e-12)


@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((3, 4, 5), (1, 4, 5)), -1), (((5,), (5,)), 0)])
def test_cosine_similarity(shapes, dim):
    a, b = _r(*shapes[0], seed=2), _r(*shapes[1], seed=3)
    _compare(lambda x, y: F.cosine_similarity(x, y, dim=dim), lambda x, y: TF.cosine_similarity(x, y, dim=dim), [a, b])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    a, b = _r(4, 6, seed=2), _r(4, 6, seed=3)
    _compare(lambda x, y: F.pairwise_distance(x, y, p=p, keepdim=keepdim),
             lambda x, y: TF.pairwise_distance(x, y, p=p, keepdim=keepdim), [a, b])


@pytest.mark.parametrize("name,kw", [("mish", {}), ("logsigmoid", {}), ("hardtanh", {}),
                                     ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
                                     ("softmin", {"dim": 1}), ("softmin", {"dim": 0}),
                                     ("glu", {}), ("glu", {"dim": 1})])
def test_activation_functions(name, kw):
    x = _r(4, 6) * 3
    x[0, :3] = [40.0, -40.0, 25.0]  # far tails: no overflow, and PyTorch's values there
    _compare(lambda t: getattr(F, name)(t, **kw), lambda t: getattr(TF, name)(t, **kw), [x])


def test_glu_odd_dim_is_an_error():
    with pytest.raises(ValueError, match="even"):
        F.glu(mg.ones(2, 3))


@pytest.mark.parametrize("groups", [1, 2, 6])
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(groups, affine):
    arrays = [_r(3, 6, 4, 5), 1 + _r(6, seed=4), _r(6, seed=5)] if affine else [_r(3, 6, 4, 5)]
    _compare(lambda x, *wb: F.group_norm(x, groups, *wb, eps=1e-5),
             lambda x, *wb: TF.group_norm(x, groups, *wb, eps=1e-5), arrays)


@pytest.mark.parametrize("shape", [(5,), (4, 5)])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(shape, eps):
    _compare(lambda x, w: F.rms_norm(x, shape, w, eps=eps), lambda x, w: TF.rms_norm(x, shape, w, eps=eps),
             [_r(3, 4, 5), 1 + _r(*shape, seed=6)])
    _compare(lambda x: F.rms_norm(x, shape, eps=eps), lambda x: TF.rms_norm(x, shape, eps=eps), [_r(3, 4, 5)])


@pytest.mark.parametrize("case", ["plain", "scale", "causal", "bool", "float", "causal_rect"])
def test_scaled_dot_product_attention(case):
    q, k, v = _r(2, 3, 4, 8, seed=7), _r(2, 3, 6, 8, seed=8), _r(2, 3, 6, 5, seed=9)
    kw, mask = {}, None
    if case == "scale":
        kw = {"scale": 0.3}
    elif case in ("causal", "causal_rect"):
        kw = {"is_causal": True}
        if case == "causal":
            k, v = k[:, :, :4], v[:, :, :4]
    elif case == "bool":
        mask = np.random.default_rng(3).random((4, 6)) > 0.4
        mask[:, 0] = True  # no row masked out entirely
    elif case == "float":
        mask = _r(3, 4, 6, seed=10)

    def run(sdpa, wrap):
        return lambda a, b, c: sdpa(a, b, c, attn_mask=None if mask is None else wrap(mask), **kw)

    _compare(run(F.scaled_dot_product_attention, mg.tensor), run(TF.scaled_dot_product_attention, torch.tensor),
             [q, k, v])


# -- losses ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss(reduction, margin):
    t = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    _compare(lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=margin, reduction=reduction),
             lambda a, b, y: TF.cosine_embedding_loss(a, b, y, margin=margin, reduction=reduction),
             [_r(5, 4, seed=2), _r(5, 4, seed=3), t], grads=[0, 1])
    mod, tmod = nn.CosineEmbeddingLoss(margin, reduction), torch.nn.CosineEmbeddingLoss(margin, reduction=reduction)
    _compare(mod, tmod, [_r(5, 4, seed=2), _r(5, 4, seed=3), t], grads=[0, 1])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(reduction, margin):
    t = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    args = [_r(6, seed=2), _r(6, seed=3), t]
    _compare(lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=margin, reduction=reduction),
             lambda a, b, y: TF.margin_ranking_loss(a, b, y, margin=margin, reduction=reduction), args, grads=[0, 1])
    _compare(nn.MarginRankingLoss(margin, reduction), torch.nn.MarginRankingLoss(margin, reduction=reduction),
             args, grads=[0, 1])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("p,swap", [(2.0, False), (1.0, True), (3.0, True)])
def test_triplet_margin_loss(reduction, p, swap):
    args = [_r(5, 4, seed=2), _r(5, 4, seed=3), _r(5, 4, seed=4) * 0.5]
    _compare(lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=1.0, p=p, swap=swap, reduction=reduction),
             lambda a, b, c: TF.triplet_margin_loss(a, b, c, margin=1.0, p=p, swap=swap, reduction=reduction), args)
    _compare(nn.TripletMarginLoss(margin=1.0, p=p, swap=swap, reduction=reduction),
             torch.nn.TripletMarginLoss(margin=1.0, p=p, swap=swap, reduction=reduction), args)


# -- layers --------------------------------------------------------------------------------------------


def _layer_pair(layer, tlayer, x):
    """Load torch's state into ``layer``, then compare outputs, input and parameter gradients."""
    assert list(layer.state_dict()) == list(tlayer.state_dict())
    for tp in tlayer.parameters():  # not the default values: the comparison sees the affine part
        with torch.no_grad():
            tp.add_(torch.tensor(np.random.default_rng(tp.numel()).standard_normal(tuple(tp.shape))))
    layer.load_state_dict({k: v.detach().numpy() for k, v in tlayer.state_dict().items()})
    xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = layer(xm), tlayer(xt)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), **TOL)
    g = np.random.default_rng(0).standard_normal(tuple(tout.shape))
    (out * mg.tensor(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), **TOL)
    for (name, p), (_, tp) in zip(layer.named_parameters(), tlayer.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), **TOL, err_msg=name)


@pytest.mark.parametrize("make", [
    lambda m: m.LogSoftmax(dim=1), lambda m: m.Mish(), lambda m: m.Hardtanh(),
    lambda m: m.Hardtanh(-2.0, 0.5), lambda m: m.Unflatten(1, (2, 3)), lambda m: m.Unflatten(-1, (-1, 2)),
    lambda m: m.GroupNorm(3, 6), lambda m: m.GroupNorm(2, 6, eps=1e-3, affine=False),
    lambda m: m.RMSNorm(4), lambda m: m.RMSNorm((5, 4), eps=1e-4), lambda m: m.RMSNorm(4, elementwise_affine=False),
    lambda m: m.ZeroPad2d(2), lambda m: m.ZeroPad2d((1, 0, 2, 3)), lambda m: m.ZeroPad2d((-1, 2, 0, -2)), lambda m: m.PixelShuffle(1),
])
def test_layers_against_torch(make):
    x = _r(2, 6, 5, 4) * 2
    _layer_pair(make(nn).double() if hasattr(nn.Module, "double") else make(nn), make(torch.nn).double(), x)


def test_pixel_shuffle():
    _layer_pair(nn.PixelShuffle(2), torch.nn.PixelShuffle(2), _r(2, 3, 8, 4, 5))
    _layer_pair(nn.PixelShuffle(3), torch.nn.PixelShuffle(3), _r(9, 2, 3))


def test_layer_defaults_match_torch():
    for m, t in [(nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)), (nn.RMSNorm([3, 2]), torch.nn.RMSNorm([3, 2]))]:
        for (k, v), (tk, tv) in zip(m.state_dict().items(), t.state_dict().items(), strict=True):
            assert k == tk and np.array_equal(np.asarray(v.numpy() if hasattr(v, "numpy") else v), tv.numpy())
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)
    assert nn.RMSNorm(3).eps is None and repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"


def test_parameter_dict():
    pd = nn.ParameterDict({"a": mg.ones(2), "b": nn.Parameter(mg.zeros(3))})
    tpd = torch.nn.ParameterDict({"a": torch.ones(2), "b": torch.nn.Parameter(torch.zeros(3))})
    assert list(pd.state_dict()) == list(tpd.state_dict()) == ["a", "b"]
    assert all(isinstance(p, nn.Parameter) for p in pd.values()) and len(list(pd.parameters())) == 2
    pd["c"] = mg.ones(1)
    assert "c" in pd and pd.keys() == ["a", "b", "c"] and len(pd) == 3
    assert pd.pop("a").shape == (2,) and list(pd) == ["b", "c"]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterDict({"w": mg.ones(2)})

    assert list(M().state_dict()) == ["ps.w"]
    with pytest.raises(KeyError, match="keys"):
        pd["zz"]
    with pytest.raises(TypeError):
        pd["d"] = 3.0


# -- second-order gradchecks in both modes -------------------------------------------------------------


@pytest.mark.parametrize("fn,shapes", [
    (lambda x: F.normalize(x, dim=-1), [(3, 4)]),
    (lambda x, y: F.cosine_similarity(x, y), [(3, 4), (3, 4)]),
    (lambda x, y: F.pairwise_distance(x, y), [(3, 4), (3, 4)]),
    (F.mish, [(3, 4)]), (F.logsigmoid, [(3, 4)]), (lambda x: F.glu(x, 0), [(4, 3)]),
    (lambda x: F.softmin(x, 1), [(3, 4)]),
    (lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    (lambda x, w: F.rms_norm(x, 4, w, 1e-3), [(3, 4), (4,)]),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [(2, 3, 2), (2, 3, 2), (2, 3, 2)]),
    (lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=2.0), [(3, 4), (3, 4), (3, 4)]),
])
def test_gradcheck_second_order(fn, shapes):
    xs = [mg.tensor(_r(*s, seed=i), requires_grad=True) for i, s in enumerate(shapes)]
    assert mg.gradcheck(fn, xs, modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("p", [2.0, 3.0, 1.0])
def test_zero_vectors_have_torchs_gradients(p):
    a, b = _r(3, 4, seed=2), _r(3, 4, seed=3)
    a[1] = 0.0
    _compare(lambda x: F.normalize(x, p=p), lambda x: TF.normalize(x, p=p), [a])
    _compare(lambda x, y: F.cosine_similarity(x, y), lambda x, y: TF.cosine_similarity(x, y), [a, b])
    b2 = a.copy()
    b2[0] += 1e-6  # x1 - x2 + eps is exactly zero in places
    _compare(lambda x, y: F.pairwise_distance(x, y, p=p, eps=0.0), lambda x, y: TF.pairwise_distance(x, y, p=p, eps=0.0),
             [a, b2])


def test_hardtanh_boundaries_have_zero_gradient():
    x = np.array([-1.0, 1.0, -2.0, 0.3, 2.0, -0.5, 0.5])
    _compare(F.hardtanh, TF.hardtanh, [x])
    _compare(lambda t: F.hardtanh(t, -0.5, 0.5), lambda t: TF.hardtanh(t, -0.5, 0.5), [x])


def test_implicit_dim_warns_like_torch():
    x = _r(3, 4)
    with pytest.warns(UserWarning, match="implicit dim"):
        out = nn.LogSoftmax()(mg.tensor(x))
    with pytest.warns(UserWarning):
        ref = torch.nn.LogSoftmax()(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)
    with pytest.warns(UserWarning, match="implicit dim"):
        out = F.softmin(mg.tensor(x))
    with pytest.warns(UserWarning):
        ref = TF.softmin(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)


def test_sdpa_dropout_and_errors():
    q = mg.tensor(_r(2, 4, 3))
    mg.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert np.all(out.numpy() == 0.0)
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mg.ones(4, 4, dtype=mg.bool_), is_causal=True)
    with pytest.raises(ValueError, match="do not fit"):
        F.scaled_dot_product_attention(q, mg.tensor(_r(2, 4, 5)), q)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", [((3, 4, 5), (1, 2)), ((2, 3, 4, 5), (2, 1, 1, 2)), ((2, 3, 4, 5), (3, 0, 0, 2))])
def test_pad_reflect_and_replicate_match_torch(mode, shape, pad):
    """F.pad's other modes (a gather at mirrored or clamped positions), values and gradients as torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = F.pad(xm, pad, mode=mode), torch.nn.functional.pad(xt, pad, mode=mode)
    w = rng.standard_normal(tuple(tout.shape))
    (out * mg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(out), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy(), rtol=1e-12)
    assert mg.gradcheck(lambda a: F.pad(a, pad, mode=mode), [mg.tensor(x, requires_grad=True)], modes=("rev", "fwd"),
                        order=2, fast=True)


def test_pad_reflect_refuses_a_width_as_large_as_its_dim():
    with pytest.raises(ValueError, match=r"pad: reflect padding \(4, 0\) must be smaller than the dim it pads \(size 4"):
        F.pad(mg.zeros(2, 4), (4, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="pad: mode must be"):
        F.pad(mg.zeros(2, 4), (1, 1), mode="circular")


def test_embedding_padding_idx_reads_the_row_and_sends_it_no_gradient():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    w, idx = rng.standard_normal((6, 3)), np.array([[0, 2, 2], [5, 2, 1]])
    wm, wt = mg.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = F.embedding(mg.tensor(idx), wm, padding_idx=2)
    tout = torch.nn.functional.embedding(torch.tensor(idx), wt, padding_idx=2)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(to_np(out), tout.detach().numpy())
    np.testing.assert_allclose(to_np(wm.grad), wt.grad.numpy())
    layer = mg.nn.Embedding(5, 2, padding_idx=-1)
    assert layer.padding_idx == 4 and not to_np(layer.weight)[4].any()
    assert "padding_idx=4" in repr(layer)
    with pytest.raises(ValueError, match="Embedding: padding_idx 5 is out of range"):
        mg.nn.Embedding(5, 2, 5)
