"""Convolution, pooling, windows, batch norm, GELU/SiLU/Softmax: values and first and second
derivatives against PyTorch (float64, where torch is installed) over seeded random settings,
and against finite differences (gradcheck / gradgradcheck) everywhere.

Tensors are built on the default device (MINIGRAD_DEVICE chooses it); comparisons run on the
host through ``.numpy()``."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import leaf_of, to_np

nn = mg.nn
F = mg.nn.functional


def _torch():
    return pytest.importorskip("torch")


def close(a, b, tol=1e-10):
    a, b = to_np(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def tnp(t):
    return t.detach().numpy()


def first_and_second(mg_fn, th_fn, arrays, rng, torch):
    """Values, gradients and second derivatives (the gradient of <v, grad>) of mg_fn and th_fn
    at ``arrays``, compared elementwise."""
    xs = [leaf_of(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = mg_fn(*xs), th_fn(*ts)
    close(out, tnp(tout))
    go = rng.standard_normal(tout.shape)
    gs = mg.grad(out, xs, grad_outputs=mg.tensor(go), create_graph=True)
    tgs = torch.autograd.grad(tout, ts, torch.tensor(go), create_graph=True)
    for g, tg in zip(gs, tgs, strict=True):
        close(g, tnp(tg))
    vs = [rng.standard_normal(a.shape) for a in arrays]
    s = sum((g * mg.tensor(v)).sum() for g, v in zip(gs, vs, strict=True))
    ts_ = sum((tg * torch.tensor(v)).sum() for tg, v in zip(tgs, vs, strict=True))
    ths = torch.autograd.grad(ts_, ts, allow_unused=True) if ts_.requires_grad else [None] * len(ts)
    if not s.requires_grad:  # the gradient does not depend on the inputs (piecewise linear)
        assert all(th is None or not th.any() for th in ths)
        return
    hs = mg.grad(s, xs, allow_unused=True)
    for h, th in zip(hs, ths, strict=True):
        if th is None:
            assert h is None or np.all(to_np(h) == 0)
        else:
            close(h if h is not None else mg.zeros(th.shape, dtype="float64"), tnp(th))


# -- windows ------------------------------------------------------------------------------------------


def test_windows_matches_sliding_window_view():
    rng = np.random.default_rng(0)
    for _ in range(20):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(3, 7, nd))
        m = int(rng.integers(1, nd + 1))
        axes = tuple(int(a) for a in rng.permutation(nd)[:m])
        win = tuple(int(rng.integers(1, shape[a] + 1)) for a in axes)
        step = tuple(int(s) for s in rng.integers(1, 3, m))
        a = rng.standard_normal(shape)
        v = mg.strided.windows(mg.tensor(a), win, axes=axes, step=step)
        ref = np.lib.stride_tricks.sliding_window_view(a, win, axis=axes)
        ref = ref[tuple(slice(None, None, step[axes.index(d)]) if d in axes else slice(None) for d in range(nd))]
        close(v, ref, 0)


def test_windows_is_a_view_and_negative_axes():
    x = mg.arange(24.0).reshape(2, 3, 4)
    v = mg.strided.windows(x, (2, 2), axes=(-1, 1))
    assert v.shape == (2, 2, 3, 2, 2)
    assert v.stride() == (12, 4, 1, 1, 4)  # the strides of a view into x: no copy
    assert to_np(v)[1, 0, 2, 1, 0] == to_np(x)[1, 0, 3]  # window dims in the order of axes
    with pytest.raises(ValueError, match="does not fit"):
        mg.strided.windows(x, 5, axes=2)
    with pytest.raises(ValueError, match="one size per dim"):
        mg.strided.windows(x, 2)
    with pytest.raises(ValueError, match="repeat"):
        mg.strided.windows(x, (2, 2), axes=(2, -1))
    assert "windows" in mg.strided.__all__


@pytest.mark.parametrize("win,axes,step,dil", [
    ((2, 3), (2, 1), (2, 1), (2, 1)),
    ((3,), (1,), 2, 1),
    ((4, 5), (1, 2), 1, 1),            # few big windows: the other overlap-add loop
    ((1, 1, 1), None, 1, 1),
])
def test_windows_gradcheck(win, axes, step, dil):
    x = leaf_of(np.random.default_rng(1).standard_normal((2, 4, 5)))
    f = lambda x: mg.strided.windows(x, win, axes=axes, step=step, dilation=dil)  # noqa: E731
    assert mg.gradcheck(f, (x,))
    assert mg.gradgradcheck(f, (x,))


def test_windows_overlap_add_counts():
    x = mg.ones(6, dtype="float64", requires_grad=True)
    mg.strided.windows(x, 3).sum().backward()
    assert to_np(x.grad).tolist() == [1, 2, 3, 3, 2, 1]


# -- convolution -----------------------------------------------------------------------------------------


def _conv_case(rng, nd):
    g = int(rng.choice([1, 1, 2, 3]))
    cg, og = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    n = int(rng.integers(1, 3))
    ks = tuple(int(k) for k in rng.integers(1, 4, nd))
    stride = tuple(int(s) for s in rng.integers(1, 3, nd))
    dil = tuple(int(d) for d in rng.integers(1, 3, nd))
    r = rng.random()
    if r < 0.15:
        pad = "same"
        stride = (1,) * nd
    elif r < 0.25:
        pad = "valid"
    else:
        pad = tuple(int(p) for p in rng.integers(0, 3, nd))
    sizes = tuple(int(d * (k - 1) + 1 + rng.integers(0, 4)) for k, d in zip(ks, dil, strict=True))
    x = rng.standard_normal((n, g * cg) + sizes)
    w = rng.standard_normal((g * og, cg) + ks)
    b = rng.standard_normal(g * og) if rng.random() < 0.7 else None
    return x, w, b, dict(stride=stride, padding=pad, dilation=dil, groups=g)


@pytest.mark.parametrize("nd", [1, 2])
def test_conv_matches_torch_first_and_second_order(nd):
    torch = _torch()
    rng = np.random.default_rng(10 + nd)
    mg_conv, th_conv = (F.conv1d, torch.nn.functional.conv1d) if nd == 1 else (F.conv2d, torch.nn.functional.conv2d)
    for _ in range(20):
        x, w, b, kw = _conv_case(rng, nd)
        arrays = [x, w] + ([b] if b is not None else [])
        first_and_second(lambda *a, kw=kw: mg_conv(*a, **kw), lambda *a, kw=kw: th_conv(*a, **kw), arrays, rng,
                         torch)


@pytest.mark.parametrize("kw", [
    dict(stride=2, padding=1, groups=2),
    dict(dilation=(2, 1), padding=(1, 0)),
    dict(padding="same"),
])
def test_conv2d_gradcheck(kw):
    rng = np.random.default_rng(2)
    x, w, b = leaf_of(rng.standard_normal((1, 2, 5, 4))), leaf_of(rng.standard_normal((2, 2 // kw.get("groups", 1), 2, 3))), \
        leaf_of(rng.standard_normal(2))
    f = lambda x, w, b: F.conv2d(x, w, b, **kw)  # noqa: E731
    assert mg.gradcheck(f, (x, w, b))
    assert mg.gradgradcheck(f, (x, w, b))


def test_conv1d_gradcheck_and_unbatched():
    rng = np.random.default_rng(3)
    x, w = leaf_of(rng.standard_normal((2, 2, 7))), leaf_of(rng.standard_normal((4, 1, 3)))
    f = lambda x, w: F.conv1d(x, w, stride=2, padding=1, groups=2)  # noqa: E731
    assert mg.gradcheck(f, (x, w))
    assert mg.gradgradcheck(f, (x, w))
    y = F.conv1d(x[0], w, groups=2)
    close(y, to_np(F.conv1d(x, w, groups=2))[0])


def test_conv_errors():
    x = mg.zeros(1, 4, 5, 5)
    with pytest.raises(ValueError, match="groups"):
        F.conv2d(x, mg.zeros(3, 2, 3, 3), groups=2)
    with pytest.raises(ValueError, match="same"):
        F.conv2d(x, mg.zeros(2, 4, 3, 3), stride=2, padding="same")
    with pytest.raises(ValueError, match="smaller than the dilated kernel"):
        F.conv2d(x, mg.zeros(2, 4, 3, 3), dilation=3)
    with pytest.raises(ValueError, match="4-D"):
        F.conv2d(x, mg.zeros(2, 4, 3))


def test_conv_layers_init_and_state_dict_from_torch():
    torch = _torch()
    for cls, tcls, shape in ((nn.Conv2d, torch.nn.Conv2d, (2, 4, 9, 8)), (nn.Conv1d, torch.nn.Conv1d, (2, 4, 11))):
        m = cls(4, 6, 3, stride=2, padding=1, groups=2, dtype=np.float64)
        tm = tcls(4, 6, 3, stride=2, padding=1, groups=2, dtype=torch.float64)
        assert list(m.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]
        assert m.weight.shape == tuple(tm.weight.shape)
        fan_in = 2 * 3 ** (len(shape) - 2)
        assert np.abs(to_np(m.weight)).max() <= 1 / math.sqrt(fan_in)
        assert np.abs(to_np(m.bias)).max() <= 1 / math.sqrt(fan_in)
        m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
        x = np.random.default_rng(0).standard_normal(shape)
        close(m(mg.tensor(x)), tnp(tm(torch.tensor(x))))
    assert nn.Conv2d(2, 3, 1, bias=False).bias is None
    assert "Conv2d(2, 3, kernel_size=(1, 1)" in repr(nn.Conv2d(2, 3, 1))


def test_conv2d_float32_default():
    m = nn.Conv2d(3, 4, 3, padding=1)
    y = m(mg.ones(2, 3, 6, 6))
    assert y.dtype == np.float32 and y.shape == (2, 4, 6, 6)
    y.sum().backward()
    assert m.weight.grad.shape == (4, 3, 3, 3) and m.weight.grad.dtype == np.float32


# -- pooling ---------------------------------------------------------------------------------------------


def _pool_case(rng):
    ks = tuple(int(k) for k in rng.integers(1, 4, 2))
    stride = tuple(int(s) for s in rng.integers(1, 4, 2)) if rng.random() < 0.7 else None
    pad = tuple(int(rng.integers(0, k // 2 + 1)) for k in ks)
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3))) + tuple(int(k + rng.integers(0, 5)) for k in ks)
    return rng.standard_normal(shape), dict(kernel_size=ks, stride=stride, padding=pad)


def test_max_pool2d_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(20)
    for _ in range(20):
        x, kw = _pool_case(rng)
        if rng.random() < 0.3:
            kw["dilation"] = 2
            if any((k - 1) * 2 + 1 > s + 2 * p for k, s, p in zip(kw["kernel_size"], x.shape[2:], kw["padding"],
                                                                   strict=True)):
                kw["dilation"] = 1
        first_and_second(lambda a, kw=kw: F.max_pool2d(a, **kw), lambda a, kw=kw: torch.nn.functional.max_pool2d(a, **kw),
                         [x], rng, torch)
        _, idx = F.max_pool2d(mg.tensor(x), return_indices=True, **kw)
        _, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        assert np.array_equal(to_np(idx), tidx.numpy())


def test_avg_pool2d_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(21)
    for i in range(20):
        x, kw = _pool_case(rng)
        kw["count_include_pad"] = bool(i % 2)
        first_and_second(lambda a, kw=kw: F.avg_pool2d(a, **kw), lambda a, kw=kw: torch.nn.functional.avg_pool2d(a, **kw),
                         [x], rng, torch)
    x = rng.standard_normal((2, 3, 6, 5))
    close(F.avg_pool2d(mg.tensor(x), 3, 1, 1, divisor_override=2),
          torch.nn.functional.avg_pool2d(torch.tensor(x), 3, 1, 1, divisor_override=2).numpy())


@pytest.mark.parametrize("size", [1, (1, 1), (2, 3), (3, 4), (None, 2)])
def test_adaptive_avg_pool2d(size):
    rng = np.random.default_rng(4)
    x = leaf_of(rng.standard_normal((2, 2, 6, 7)))
    f = lambda x: F.adaptive_avg_pool2d(x, size)  # noqa: E731
    assert mg.gradcheck(f, (x,))
    torch = pytest.importorskip("torch")
    close(f(x), tnp(torch.nn.functional.adaptive_avg_pool2d(torch.tensor(to_np(x)), size)))


def test_pool_gradcheck():
    x = leaf_of(np.random.default_rng(5).standard_normal((1, 2, 5, 6)))
    for f in (lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, (2, 3), 1, (1, 0)),
              lambda x: F.max_pool1d(x[0], 2), lambda x: F.avg_pool1d(x[0], 3, 2, 1, count_include_pad=False)):
        assert mg.gradcheck(f, (x,))
        assert mg.gradgradcheck(f, (x,))


def test_max_pool_ties_send_the_gradient_to_the_first_maximum():
    x = mg.ones(1, 1, 4, 4, dtype="float64", requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1  # the top-left of each window, never split
    assert np.array_equal(to_np(x.grad)[0, 0], expected)
    # overlapping windows that share one maximum: its gradient accumulates
    y = mg.tensor([[[[0.0, 5.0, 0.0, 0.0]]]], dtype="float64", requires_grad=True)
    F.max_pool2d(y, (1, 2), 1).sum().backward()
    assert to_np(y.grad).ravel().tolist() == [0, 2, 1, 0]
    torch = pytest.importorskip("torch")
    a = np.round(np.random.default_rng(6).standard_normal((2, 3, 6, 6)))  # many ties
    t = torch.tensor(a, requires_grad=True)
    torch.nn.functional.max_pool2d(t, 3, 1, 1).sum().backward()
    z = leaf_of(a)
    F.max_pool2d(z, 3, 1, 1).sum().backward()
    close(z.grad, t.grad.numpy())


def test_max_pool_nan_does_not_leak():
    a = np.zeros((1, 1, 4, 4))
    a[0, 0, 0, 0] = np.nan
    x = leaf_of(a)
    y = F.max_pool2d(x, 2)
    assert np.isnan(to_np(y)[0, 0, 0, 0]) and np.isfinite(to_np(y).ravel()[1:]).all()
    y[..., 1:, :].sum().backward()
    assert np.isfinite(to_np(x.grad)).all()


def test_pool_layers():
    x = mg.tensor(np.random.default_rng(7).standard_normal((2, 3, 8, 8)))
    assert nn.MaxPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.MaxPool2d(3, 1, 1)(x).shape == (2, 3, 8, 8)
    assert nn.AvgPool2d(2)(x).shape == (2, 3, 4, 4)
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 3, 1, 1)
    assert nn.MaxPool1d(2)(x[0]).shape == (3, 8, 4)
    assert nn.AvgPool1d(4)(x[0]).shape == (3, 8, 2)
    with pytest.raises(NotImplementedError, match="ceil_mode"):
        F.max_pool2d(x, 2, ceil_mode=True)
    with pytest.raises(ValueError, match="half the kernel"):
        F.max_pool2d(x, 2, padding=2)


# -- activations ------------------------------------------------------------------------------------------


def test_gelu_silu_match_torch():
    torch = _torch()
    a = np.concatenate([np.linspace(-12, 12, 2001), [-40.0, -8.3, 0.0, 1e-8, 37.0]])
    t = torch.tensor(a)
    close(F.gelu(mg.tensor(a)), torch.nn.functional.gelu(t).numpy(), 1e-10)
    close(F.gelu(mg.tensor(a), approximate="tanh"), torch.nn.functional.gelu(t, approximate="tanh").numpy(), 1e-10)
    close(F.silu(mg.tensor(a)), torch.nn.functional.silu(t).numpy(), 1e-10)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4)) * 3
    for approx in ("none", "tanh"):
        first_and_second(lambda z, a=approx: F.gelu(z, approximate=a),
                         lambda z, a=approx: torch.nn.functional.gelu(z, approximate=a), [x], rng, torch)
    first_and_second(F.silu, torch.nn.functional.silu, [x], rng, torch)


def test_erfc_fallback_matches_math_erfc():
    from minigrad.nn.activations import _erfc_array, _erfc_cody

    z = np.concatenate([np.linspace(-30, 30, 20001), [0.0, 0.46875, -0.46875, 4.0, -4.0, 27.0]])
    ref = np.array([math.erfc(v) for v in z])
    for f in (_erfc_cody, _erfc_array):
        got = to_np(f(mg.tensor(z).data))
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-305)  # relative: far tails too
    assert _erfc_cody(mg.tensor(z.astype(np.float32)).data).dtype == np.float32


def test_float32_normal_cdf_is_float32_accurate():
    # float32 GELU computes Phi in float32 array calls (erfcc), not SciPy's float64 per element
    from minigrad.nn.activations import _normal_cdf

    x = np.concatenate([np.linspace(-14, 9, 200001), [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf]]).astype(np.float32)
    ref = np.array([0.5 * math.erfc(-float(v) / math.sqrt(2)) for v in x[:-2]] + [1.0, 0.0])
    got = _normal_cdf(np, x)
    assert got.dtype == np.float32
    near = np.abs(x) < 3
    np.testing.assert_allclose(got[near], ref[near], rtol=2e-6, atol=0)
    np.testing.assert_allclose(got, ref, rtol=3e-5, atol=1e-44)  # relative in the far tail too
    assert np.isnan(_normal_cdf(np, np.array([np.nan], np.float32)))[0]
    # and the float32 GELU layer against the float64 one, values and gradients
    a = np.random.default_rng(11).standard_normal((4, 50)) * 4
    x32, x64 = leaf_of(a.astype(np.float32)), leaf_of(a)
    F.gelu(x32).sum().backward()
    F.gelu(x64).sum().backward()
    close(F.gelu(x32), to_np(F.gelu(x64)), 2e-6)
    close(x32.grad, to_np(x64.grad), 2e-6)


def test_gelu_silu_gradgradcheck():
    x = leaf_of(np.random.default_rng(9).standard_normal(7) * 3)
    for f in (F.gelu, lambda z: F.gelu(z, approximate="tanh"), F.silu):
        assert mg.gradcheck(f, (x,))
        assert mg.gradgradcheck(f, (x,))
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="fast")


def test_activation_layers():
    torch = _torch()
    a = np.random.default_rng(10).standard_normal((2, 3, 4))
    close(nn.GELU()(mg.tensor(a)), torch.nn.GELU()(torch.tensor(a)).numpy())
    close(nn.GELU("tanh")(mg.tensor(a)), torch.nn.GELU("tanh")(torch.tensor(a)).numpy())
    close(nn.SiLU()(mg.tensor(a)), torch.nn.SiLU()(torch.tensor(a)).numpy())
    close(nn.Softmax(dim=1)(mg.tensor(a)), torch.nn.Softmax(dim=1)(torch.tensor(a)).numpy())
    with pytest.warns(UserWarning, match="implicit dim"):
        close(nn.Softmax()(mg.tensor(a)), torch.softmax(torch.tensor(a), 0).numpy())


# -- batch norm ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (4, 3, 6)), ("BatchNorm2d", (3, 3, 4, 5))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_matches_torch(cls, shape, momentum):
    torch = _torch()
    rng = np.random.default_rng(11)
    m = getattr(nn, cls)(3, momentum=momentum, dtype=np.float64)
    tm = getattr(torch.nn, cls)(3, momentum=momentum, dtype=torch.float64)
    assert list(m.state_dict()) == list(tm.state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(rng.standard_normal(3)))
        tm.bias.copy_(torch.tensor(rng.standard_normal(3)))
    m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    for _ in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        xt = torch.tensor(x, requires_grad=True)
        xm = leaf_of(x)
        y, ty = m(xm), tm(xt)
        close(y, tnp(ty))
        go = rng.standard_normal(shape)
        y.backward(mg.tensor(go))
        ty.backward(torch.tensor(go))
        close(xm.grad, xt.grad.numpy())
        close(m.weight.grad, tm.weight.grad.numpy())
        close(m.bias.grad, tm.bias.grad.numpy())
        m.zero_grad()
        tm.zero_grad()
    for k, v in tm.state_dict().items():
        close(m.state_dict()[k], v.numpy())
    assert m.num_batches_tracked.item() == 3
    m.eval()
    tm.eval()
    x = rng.standard_normal(shape)
    close(m(mg.tensor(x)), tnp(tm(torch.tensor(x))))
    close(m.running_mean, tm.running_mean.numpy())  # eval leaves the running stats alone


def test_batch_norm_options_and_gradgradcheck():
    torch = _torch()
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 2, 3))
    for kw in (dict(affine=False), dict(track_running_stats=False)):
        m, tm = nn.BatchNorm1d(2, dtype=np.float64, **kw), torch.nn.BatchNorm1d(2, dtype=torch.float64, **kw)
        assert list(m.state_dict()) == list(tm.state_dict())
        for mode in ("train", "eval"):
            getattr(m, mode)()
            getattr(tm, mode)()
            close(m(mg.tensor(x)), tnp(tm(torch.tensor(x))))
    w, b = leaf_of(rng.standard_normal(2)), leaf_of(rng.standard_normal(2))
    f = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert mg.gradcheck(f, (leaf_of(x), w, b))
    assert mg.gradgradcheck(f, (leaf_of(x), w, b))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(2)(mg.ones(1, 2))
    with pytest.raises(ValueError, match="channels"):
        nn.BatchNorm2d(3)(mg.ones(2, 2, 2, 2))


def test_batch_norm_float32_buffers_and_device():
    m = nn.BatchNorm2d(3)
    y = m(mg.ones(2, 3, 2, 2) * mg.arange(3.0).reshape(1, 3, 1, 1))
    assert y.dtype == np.float32
    assert m.running_mean.dtype == np.float32 and m.running_mean.device == y.device
    np.testing.assert_allclose(to_np(m.running_mean), [0.0, 0.1, 0.2], rtol=1e-6)
    assert m.num_batches_tracked.dtype == np.int64
