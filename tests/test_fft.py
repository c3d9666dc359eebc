"""mg.fft against NumPy and torch.fft: values for every transform, n/s padding and cropping, each
norm; np.fft.<name>(t) with NumPy's argument names; gradients and tangents through real losses of
complex spectra (the Hermitian bookkeeping of rfft and irfft), against torch; clear errors. The
registry test gradchecks each transform to order 2 in both modes (tests/test_registry.py) and
batches it (tests/test_vmap_registry.py)."""
import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "rfft2", "rfftn"]
C2R = ["irfft", "irfft2", "irfftn"]
NORMS = [None, "backward", "ortho", "forward"]


def _t(a, device, rg=False):
    return mg.tensor(a, device=device, requires_grad=rg)


def _np(t):
    return mg.backend.to_numpy(t.detach().data)


def _kw(name, size, norm):
    if name.endswith("2") or name.endswith("n"):
        return dict(s=None if size is None else (size, size + 1), norm=norm)
    return dict(n=size, norm=norm)


@pytest.mark.parametrize("name", C2C + R2C + C2R)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("size", [None, 3, 8])
def test_values_match_numpy_and_torch(name, norm, size, device):
    x = rng.standard_normal((3, 4, 6))
    if name in C2C or name in C2R:
        x = x + 1j * rng.standard_normal(x.shape)
    kw = _kw(name, size, norm)
    got = _np(getattr(mg.fft, name)(_t(x, device), **kw))
    want = getattr(torch.fft, name)(torch.tensor(x), **kw).resolve_conj().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np_kw = dict(kw)
    np.testing.assert_allclose(got, getattr(np.fft, name)(x, **np_kw), rtol=1e-10, atol=1e-12)


def test_numpy_dispatch_takes_numpys_argument_names(device):
    x = rng.standard_normal((4, 6))
    t = _t(x, device)
    np.testing.assert_allclose(_np(np.fft.fft(t, 8, 0, "ortho")), np.fft.fft(x, 8, 0, "ortho"))
    np.testing.assert_allclose(_np(np.fft.rfftn(t, axes=(0,))), np.fft.rfftn(x, axes=(0,)))
    np.testing.assert_allclose(_np(mg.fft.fft(t, axis=0)), np.fft.fft(x, axis=0))
    np.testing.assert_allclose(_np(np.fft.fftshift(t, axes=1)), np.fft.fftshift(x, axes=1))
    assert isinstance(np.fft.ifft2(t), mg.Tensor)


def test_shifts_and_frequencies():
    x = rng.standard_normal((4, 5))
    np.testing.assert_array_equal(mg.fft.fftshift(mg.tensor(x)).numpy(), np.fft.fftshift(x))
    np.testing.assert_array_equal(mg.fft.ifftshift(mg.tensor(x), dim=0).numpy(), np.fft.ifftshift(x, axes=0))
    np.testing.assert_allclose(mg.fft.fftfreq(7, 0.5, dtype=mg.float64).numpy(), torch.fft.fftfreq(7, 0.5).numpy())
    np.testing.assert_allclose(mg.fft.rfftfreq(8, dtype=mg.float64).numpy(), torch.fft.rfftfreq(8).numpy())


def _loss(lib, name, x, w, kw):
    y = getattr(lib.fft, name)(x, **kw)
    if y.dtype.is_complex if lib is torch else y.dtype.kind == "c":
        return ((y.real * w.real) ** 2).sum() + (y.imag * w.imag).sum() + (y.abs() * w.real).sum()
    return (y * w.real).sum() + (y ** 2).sum()


@pytest.mark.parametrize("name", C2C + R2C + C2R)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("size", [None, 5, 8])
def test_gradients_match_torch(name, norm, size, device):
    """A real loss of the spectrum: the gradient (PyTorch's convention for a complex input) and, by
    forward mode, the loss's tangent, against torch; n/s pads or crops, odd and even lengths
    exercise rfft's and irfft's Hermitian bookkeeping."""
    x = rng.standard_normal((3, 6))
    if name not in R2C:
        x = x + 1j * rng.standard_normal(x.shape)
    kw = _kw(name, size, norm)
    out_shape = getattr(np.fft, name)(x, **kw).shape
    w = rng.standard_normal(out_shape) + 1j * rng.standard_normal(out_shape)
    xt = torch.tensor(x, requires_grad=True)
    _loss(torch, name, xt, torch.tensor(w), kw).backward()
    xm = _t(x, device, rg=True)
    _loss(mg, name, xm, _t(w, device), kw).backward()
    np.testing.assert_allclose(_np(xm.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-10)
    u = rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape) if name not in R2C else 0)
    _, want = torch.func.jvp(lambda a: _loss(torch, name, a, torch.tensor(w), kw), (torch.tensor(x),),
                             (torch.tensor(u),))
    _, got = mg.func.jvp(lambda a: _loss(mg, name, a, _t(w, device), kw), (_t(x, device),), (_t(u, device),))
    np.testing.assert_allclose(float(_np(got)), want.item(), rtol=1e-9)


def test_gradcheck_of_complex_and_real_inputs():
    z = mg.tensor(rng.standard_normal(5) + 1j * rng.standard_normal(5), requires_grad=True)
    assert mg.gradcheck(lambda a: mg.fft.ifft(mg.fft.fft(a, n=7, norm="ortho") * 2, n=5), [z], modes=("rev", "fwd"))
    r = mg.tensor(rng.standard_normal(6), requires_grad=True)
    assert mg.gradcheck(lambda a: mg.fft.irfft(mg.fft.rfft(a) ** 2, n=6), [r], modes=("rev", "fwd"), order=2)


def test_round_trips():
    x = rng.standard_normal((4, 7))
    t = mg.tensor(x)
    np.testing.assert_allclose(mg.fft.irfftn(mg.fft.rfftn(t), s=x.shape).numpy(), x, atol=1e-12)
    np.testing.assert_allclose(mg.fft.ifft2(mg.fft.fft2(t)).numpy().real, x, atol=1e-12)


def test_dtypes_follow_numpy():
    assert mg.fft.fft(mg.zeros(4)).dtype == np.complex64
    assert mg.fft.rfft(mg.zeros(4, dtype=mg.float64)).dtype == np.complex128
    assert mg.fft.irfft(mg.zeros(3, dtype=mg.complex64)).dtype == np.float32


def test_errors_name_the_function():
    t = mg.tensor(rng.standard_normal((3, 4)))
    with pytest.raises(ValueError, match="fft.fft: norm must be"):
        mg.fft.fft(t, norm="both")
    with pytest.raises(ValueError, match="fft.fft: dim 2 is out of range"):
        mg.fft.fft(t, dim=2)
    with pytest.raises(TypeError, match="fft.rfft: expected a real input"):
        mg.fft.rfft(mg.tensor(np.ones(3) + 1j))
    with pytest.raises(ValueError, match="fft.fftn: s has 3 sizes for 2 dims"):
        mg.fft.fftn(t, s=(2, 2, 2), dim=(0, 1))
    with pytest.raises(ValueError, match="at least 1 dim"):
        mg.fft.fft(mg.tensor(1.0))
    with pytest.raises(TypeError, match="both dim= and axis="):
        mg.fft.fft(t, dim=0, axis=0)


def test_vmap_of_an_fft_loss_matches_torch():
    x = rng.standard_normal((5, 8))
    f_mg = lambda a: (mg.fft.rfft(a).abs() ** 2).sum()  # noqa: E731
    f_th = lambda a: (torch.fft.rfft(a).abs() ** 2).sum()  # noqa: E731
    got = mg.func.vmap(mg.func.grad(f_mg))(mg.tensor(x)).numpy()
    want = torch.func.vmap(torch.func.grad(f_th))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
