"""Issue 42's math names against PyTorch (float64): values and gradients, the dim=/keepdim= spelling, ties,
the casts, and errors that name the op. The registry test gradchecks each from its samples too."""
import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=True):
    a = np.asarray(a, dtype=np.float64)
    return mg.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _check(f_mg, f_th, *arrays, rtol=1e-12, atol=1e-14):
    pairs = [_pair(a) for a in arrays]
    out, tout = f_mg(*[m for m, _ in pairs]), f_th(*[t for _, t in pairs])
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    w = np.random.default_rng(3).standard_normal(out.shape)
    (out * mg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for m, t in pairs:
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-14)


rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4))


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_erfc_match_torch_over_the_line(name):
    x = np.concatenate([np.linspace(-7, 7, 1401), [0.0, 1e-300, -1e-8, 0.46875, 4.0, 27.0, -27.0]])
    _check(getattr(mg, name), getattr(torch, name), x, rtol=2e-15, atol=1e-300)
    _check(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), X, rtol=2e-15)


def test_erfinv_matches_torch_and_inverts_erf():
    z = np.concatenate([np.linspace(-0.999999, 0.999999, 4001), 1 - np.logspace(-12, -1, 30), [0.0, 1e-200, 0.5]])
    _check(mg.erfinv, torch.erfinv, z, rtol=1e-12)
    out = mg.erfinv(mg.tensor(np.array([1.0, -1.0, 1.5, np.nan]))).numpy()
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2:]).all()
    y = mg.erfinv(mg.tensor(z)).numpy()
    np.testing.assert_allclose(torch.erf(torch.tensor(y)).numpy(), z, rtol=0, atol=4e-16)
    assert mg.tensor(np.float32([0.3])).erfinv().dtype == np.float32


def test_erf_needs_no_scipy_and_nn_uses_the_same_erfc():
    from minigrad.nn import activations
    from minigrad.ops import math as ops_math

    assert activations._erfc_cody is ops_math._erfc_cody


def test_rsqrt_atan2_logit_lerp_addcmul_addcdiv():
    pos = rng.uniform(0.2, 2.0, (3, 4))
    _check(mg.rsqrt, torch.rsqrt, pos)
    _check(lambda t: t.rsqrt(), lambda t: t.rsqrt(), pos)
    _check(mg.atan2, torch.atan2, X, rng.standard_normal(4))
    _check(lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), X, pos)
    p = rng.uniform(0.02, 0.98, 7)
    _check(mg.logit, torch.logit, p)
    _check(lambda t: t.logit(eps=0.1), lambda t: t.logit(eps=0.1), p)
    _check(lambda t: mg.logit(t, 0.05), lambda t: torch.logit(t, 0.05), p)
    _check(lambda a, b: mg.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3), X, rng.standard_normal(4))
    _check(lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w), X, X + 1, rng.uniform(0, 1, (3, 4)))
    _check(lambda a, b, c: mg.addcmul(a, b, c, value=-2.5), lambda a, b, c: torch.addcmul(a, b, c, value=-2.5),
           X, rng.standard_normal(4), rng.standard_normal((3, 1)))
    _check(lambda a, b, c: a.addcdiv(b, c), lambda a, b, c: a.addcdiv(b, c), X, X * 2, pos)
    _check(lambda a, b, c: mg.addcdiv(a, b, c, value=0.5), lambda a, b, c: torch.addcdiv(a, b, c, value=0.5),
           X, X * 2, pos)


def test_nan_to_num():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0])
    _check(lambda t: mg.nan_to_num(t, nan=3.0, posinf=9.0, neginf=-8.0),
           lambda t: torch.nan_to_num(t, nan=3.0, posinf=9.0, neginf=-8.0), x)
    _check(lambda t: t.nan_to_num(1.0, 2.0, -2.0), lambda t: t.nan_to_num(1.0, 2.0, -2.0), x)
    for dt, tdt in ((np.float64, torch.float64), (np.float32, torch.float32)):
        got = mg.nan_to_num(mg.tensor(x.astype(dt))).numpy()
        np.testing.assert_array_equal(got, torch.nan_to_num(torch.tensor(x, dtype=tdt)).numpy())
        assert got.dtype == dt


def test_predicates_are_methods():
    x = mg.tensor([1.0, np.nan, np.inf, -np.inf])
    t = torch.tensor([1.0, np.nan, np.inf, -np.inf])
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(t, name)().numpy())
        np.testing.assert_array_equal(getattr(mg, name)(x).numpy(), getattr(t, name)().numpy())


TIES = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, -1.0], [0.5, 7.0, -4.0, 7.0]])


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}, {"dim": -1},
                                {"dim": ()}])
def test_amax_amin_split_ties_as_torch(name, kw):
    _check(lambda t: getattr(mg, name)(t, **kw), lambda t: getattr(torch, name)(t, **kw), TIES)
    _check(lambda t: getattr(t, name)(**kw), lambda t: getattr(t, name)(**kw), TIES)


def test_amax_numpy_spelling_still_works():
    x = mg.tensor(TIES)
    np.testing.assert_array_equal(mg.amax(x, 1).numpy(), np.amax(TIES, 1))
    np.testing.assert_array_equal(np.amin(x, axis=0, keepdims=True).numpy(), np.amin(TIES, axis=0, keepdims=True))


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": -1, "keepdim": False}])
def test_aminmax(kw):
    a, t = _pair(TIES)
    lo, hi = mg.aminmax(a, **kw)
    tlo, thi = torch.aminmax(t, **kw)
    for o, to in ((lo, tlo), (hi, thi)):
        np.testing.assert_array_equal(o.detach().numpy(), to.detach().numpy())
    (lo * 2 + hi * 3).sum().backward()
    (tlo * 2 + thi * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    res = a.aminmax(**kw)
    assert res.min.shape == res[0].shape and res.max.shape == tuple(thi.shape)


def test_nansum_nanmean_dim_and_methods():
    x = rng.standard_normal((3, 4))
    x[0, 1] = x[2, 2] = np.nan
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}):
        _check(lambda t, kw=kw: t.nansum(**kw), lambda t, kw=kw: t.nansum(**kw), x)
        _check(lambda t, kw=kw: mg.nanmean(t, **kw), lambda t, kw=kw: torch.nanmean(t, **kw), x)
    _check(lambda t: t.nanmean(1), lambda t: t.nanmean(1), x)  # positional axis, the same in both


def test_diff_dim():
    _check(lambda t: mg.diff(t, dim=0), lambda t: torch.diff(t, dim=0), X)
    _check(lambda t: t.diff(2, dim=1), lambda t: t.diff(2, dim=1), X)
    _check(lambda t: t.diff(), lambda t: t.diff(), X)


def test_casts():
    x = mg.tensor(np.array([-1.7, 0.0, 2.5, 300.0]))
    t = torch.tensor([-1.7, 0.0, 2.5, 300.0], dtype=torch.float64)
    for name, dt in (("int", np.int32), ("short", np.int16), ("half", np.float16), ("bool", np.bool_)):
        got = getattr(x, name)()
        assert got.dtype == dt, name
        np.testing.assert_array_equal(got.numpy(), getattr(t, name)().numpy())
    h = mg.tensor(np.array([1.5, -2.0]), requires_grad=True)
    h.half().float().sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [1.0, 1.0])
    assert h.grad.dtype == np.float64


@pytest.mark.parametrize("call, name", [
    (lambda x: x.int(3), "int"),
    (lambda x: x.bool(dtype=None), "bool"),
    (lambda x: mg.addcmul(x, x, x, value="a"), "addcmul"),
    (lambda x: mg.addcdiv(x, x, mg.ones(5)), "addcdiv"),
    (lambda x: mg.lerp(x, mg.ones(5), 0.5), "lerp"),
    (lambda x: mg.amax(x, dim=3), "amax"),
    (lambda x: mg.amin(x, axis=0, dim=0), "amin"),
    (lambda x: mg.aminmax(x, dim=(0, 1)), "aminmax"),
    (lambda x: mg.aminmax(x, dim=2), "aminmax"),
    (lambda x: x.nansum(axis=0, dim=0), "nansum"),
    (lambda x: x.nanmean(dim=4), "nanmean"),
    (lambda x: x.diff(axis=0, dim=0), "diff"),
    (lambda x: mg.atan2(x, mg.ones(5)), "atan2"),
])
def test_errors_name_the_op(call, name):
    x = mg.tensor(X)
    with pytest.raises((TypeError, ValueError, IndexError)) as e:
        call(x)
    assert str(e.value).startswith(name), str(e.value)


GAMMA_X = np.concatenate([np.linspace(0.05, 40.0, 800), np.logspace(-6, 3, 60),
                          -np.repeat(np.arange(0, 8), 5) - np.tile([0.1, 0.3, 0.5, 0.7, 0.9], 8)])


def test_lgamma_digamma_polygamma_against_mpmath():
    """Against mpmath at 30 digits (PyTorch's own trigamma is good to ~5e-10 only, so it is not the reference)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    xs = GAMMA_X[::7]
    lg = np.array([float(mpmath.log(abs(mpmath.gamma(float(x))))) for x in xs])
    np.testing.assert_allclose(mg.lgamma(mg.tensor(xs)).numpy(), lg, rtol=5e-14, atol=1e-14)
    for n in (0, 1, 2, 4):
        ref = np.array([float(mpmath.psi(n, float(x))) for x in xs])
        got = mg.polygamma(n, mg.tensor(xs)).numpy()
        pos = xs > 0
        np.testing.assert_allclose(got[pos], ref[pos], rtol=2e-13, atol=1e-14, err_msg=n)
        # below 0 the reflection subtracts terms that grow near the poles (|psi_4| ~ 1e6 at 0.1 from one):
        # a few ulps of those, not of the result
        np.testing.assert_allclose(got[~pos], ref[~pos], rtol=1e-9, atol=1e-12, err_msg=n)


def test_lgamma_digamma_polygamma_match_torch():
    _check(mg.lgamma, torch.lgamma, GAMMA_X, rtol=5e-13, atol=1e-13)
    _check(lambda t: t.lgamma(), lambda t: t.lgamma(), GAMMA_X, rtol=5e-13, atol=1e-13)
    x = GAMMA_X[GAMMA_X > 10]  # where PyTorch's trigamma (digamma's gradient) is accurate
    _check(mg.digamma, torch.digamma, x, rtol=1e-13)
    _check(lambda t: t.digamma(), lambda t: t.digamma(), x, rtol=1e-13)
    pos = GAMMA_X[GAMMA_X > 0]
    _check(lambda t: t.polygamma(1), lambda t: t.polygamma(1), pos, rtol=1e-9)  # PyTorch's trigamma: ~5e-10
    for n in (2, 3):
        _check(lambda t, n=n: mg.polygamma(n, t), lambda t, n=n: torch.polygamma(n, t), pos, rtol=1e-12, atol=1e-14)
        neg = GAMMA_X[GAMMA_X < 0]
        np.testing.assert_allclose(mg.polygamma(n, mg.tensor(neg)).numpy(),
                                   torch.polygamma(n, torch.tensor(neg)).numpy(), rtol=1e-9)


def test_gamma_poles_and_limits_as_torch():
    x = np.array([0.0, -1.0, -3.0, 1.0, 2.0, np.inf, -2.5])
    with np.errstate(all="ignore"):
        got = mg.lgamma(mg.tensor(x)).numpy()
        np.testing.assert_allclose(got, torch.lgamma(torch.tensor(x)).numpy(), rtol=1e-13)  # inf and 0 exactly
        np.testing.assert_allclose(mg.digamma(mg.tensor(x)).numpy(), torch.digamma(torch.tensor(x)).numpy(),
                                   rtol=1e-13)
        assert mg.polygamma(2, mg.tensor([0.0, -2.0])).numpy().tolist() == [-np.inf, -np.inf]
    assert mg.lgamma(mg.tensor([1, 2, 3])).dtype == np.float32  # an integer tensor: the default float dtype
    with pytest.raises(TypeError, match="^polygamma"):
        mg.polygamma(-1, mg.tensor([1.0]))
    with pytest.raises(TypeError, match="^polygamma"):
        mg.polygamma(1.5, mg.tensor([1.0]))
