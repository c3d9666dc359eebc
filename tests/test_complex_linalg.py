"""Complex linear algebra (issue 41, item 5): values and gradients of ``mg.linalg`` on complex128 matrices
against ``torch.linalg``, in reverse and forward mode, through losses that do not depend on the phases
of eigen- and singular vectors (``|U|``, ``U diag(S) Vh``, projectors), as PyTorch's own tests compare
them; the turned vectors' convention; ``eig`` of a real matrix; a complex64 smoke test. The registry
test (tests/test_registry.py) gradchecks every op on complex samples to order 2, on CPU and fakecuda."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import forward_ad as fwAD

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(41)


def _c(*shape, rng=RNG):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _herm(n=3):
    a = _c(n, n)
    return a + a.conj().T + np.diag(np.arange(n) * 3.0)


def _hpd(n=3):
    a = _c(n, n)
    return a @ a.conj().T + n * np.eye(n)


A3 = _c(3, 3) + 2 * np.eye(3)
B32 = _c(3, 2)
TALL = _c(4, 3)
WIDE = _c(2, 3, 5)
H3, P3 = _herm(), _hpd()

# name -> (minigrad function of Tensors, torch function of tensors, inputs): each a real loss of
# phase-free quantities (the registry test checks the raw outputs, phases turned, against torch turned alike)
CASES = {
    "inv": (lambda a: mg.linalg.inv(a), lambda a: torch.linalg.inv(a), (A3,)),
    "det": (lambda a: mg.linalg.det(a), lambda a: torch.linalg.det(a), (A3,)),
    "slogdet": (lambda a: mg.stack([mg.linalg.slogdet(a)[0], mg.linalg.slogdet(a)[1] + 0j]),
                lambda a: torch.stack([torch.linalg.slogdet(a)[0], torch.linalg.slogdet(a)[1] + 0j]), (A3,)),
    "solve": (lambda a, b: mg.linalg.solve(a, b), lambda a, b: torch.linalg.solve(a, b), (A3, B32)),
    "solve_vec": (lambda a, b: mg.linalg.solve(a, b), lambda a, b: torch.linalg.solve(a, b), (A3, B32[:, 0])),
    "norm": (lambda x: mg.linalg.norm(x), lambda x: torch.linalg.norm(x), (TALL,)),
    "norm_vec": (lambda x: mg.linalg.norm(x, axis=1), lambda x: torch.linalg.vector_norm(x, dim=1), (TALL,)),
    "norm_1": (lambda x: mg.linalg.norm(x[0], 1), lambda x: torch.linalg.vector_norm(x[0], 1), (TALL,)),
    "norm_fro": (lambda x: mg.linalg.norm(x, "fro"), lambda x: torch.linalg.matrix_norm(x, "fro"), (TALL,)),
    "norm_nuc": (lambda x: mg.linalg.norm(x, "nuc"), lambda x: torch.linalg.matrix_norm(x, "nuc"), (TALL,)),
    "norm_2": (lambda x: mg.linalg.norm(x, 2), lambda x: torch.linalg.matrix_norm(x, 2), (TALL,)),
    "svdvals": (lambda x: mg.linalg.svdvals(x), lambda x: torch.linalg.svdvals(x), (WIDE,)),
    "svd_abs_u": (lambda x: abs(mg.linalg.svd(x, full_matrices=False)[0]),
                  lambda x: torch.linalg.svd(x, full_matrices=False)[0].abs(), (TALL,)),
    "svd_abs_vh": (lambda x: abs(mg.linalg.svd(x, full_matrices=False)[2]),
                   lambda x: torch.linalg.svd(x, full_matrices=False)[2].abs(), (WIDE,)),
    "svd_usvh": (lambda x: _usvh(*mg.linalg.svd(x, full_matrices=False)),
                 lambda x: _usvh(*torch.linalg.svd(x, full_matrices=False)), (TALL,)),
    "svd_uvh": (lambda x: (lambda u, s, vh: u @ vh)(*mg.linalg.svd(x, full_matrices=False)),
                lambda x: (lambda u, s, vh: u @ vh)(*torch.linalg.svd(x, full_matrices=False)), (WIDE,)),
    "eigvalsh": (lambda a: mg.linalg.eigvalsh(a), lambda a: torch.linalg.eigvalsh(_th_herm(a)), (H3,)),
    "eigh_abs": (lambda a: abs(mg.linalg.eigh(a)[1]), lambda a: torch.linalg.eigh(_th_herm(a))[1].abs(), (H3,)),
    "eigh_projector": (lambda a: _projector(mg.linalg.eigh(a)[1][:, :1]),
                       lambda a: _projector(torch.linalg.eigh(_th_herm(a))[1][:, :1]), (H3,)),
    "qr_q": (lambda a: mg.linalg.qr(a)[0], lambda a: torch.linalg.qr(a)[0], (TALL,)),
    "qr_r": (lambda a: mg.linalg.qr(a)[1], lambda a: torch.linalg.qr(a)[1], (TALL,)),
    "cholesky": (lambda a: mg.linalg.cholesky(a), lambda a: torch.linalg.cholesky(_th_herm(a)), (P3,)),
    "eigvals": (lambda a: mg.linalg.eigvals(a), lambda a: torch.linalg.eigvals(a), (A3,)),
    "eig_abs": (lambda a: abs(mg.linalg.eig(a)[1]), lambda a: torch.linalg.eig(a)[1].abs(), (A3,)),
    "eig_vlv": (lambda a: _vlvinv(*mg.linalg.eig(a), mg.linalg.inv),
                lambda a: _vlvinv(*torch.linalg.eig(a), torch.linalg.inv), (A3,)),
    "eig_projector": (lambda a: _projector(mg.linalg.eig(a)[1][:, 1:2]),
                      lambda a: _projector(torch.linalg.eig(a)[1][:, 1:2]), (A3,)),
    "pinv": (lambda a: mg.linalg.pinv(a), lambda a: torch.linalg.pinv(a), (TALL,)),
    "matrix_power": (lambda a: mg.linalg.matrix_power(a, -2), lambda a: torch.linalg.matrix_power(a, -2), (A3,)),
}


def _usvh(u, s, vh):
    return (u * s[..., None, :]) @ vh


def _projector(v):
    return v @ v.conj().swapaxes(-1, -2) if isinstance(v, mg.Tensor) else v @ v.mH


def _vlvinv(w, v, inv):
    return (v * w[..., None, :]) @ inv(v)


def _th_herm(a):
    """The Hermitian matrix NumPy's eigh and cholesky read (the lower triangle, the diagonal's real part)."""
    low = torch.tril(a, -1)
    return low + low.mH + torch.diag_embed(torch.diagonal(a, 0, -2, -1).real.to(a.dtype))


def _weights(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _loss(out, w, lib):
    o = out if out.dtype in (np.complex128, torch.complex128) else out + 0j
    return ((o * (mg.tensor(w) if lib is mg else torch.tensor(w))).sum()).real


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch_linalg(name):
    f, tf, args = CASES[name]
    xs = [mg.tensor(a, requires_grad=True) for a in args]
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    out, tout = f(*xs), tf(*ts)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    w = _weights(out.shape, 0)
    _loss(out, w, mg).backward()
    _loss(tout, w, torch).backward()
    for x, t in zip(xs, ts, strict=True):
        assert x.grad.dtype == np.complex128
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangents_match_torch_forward_mode(name):
    import torch.autograd.forward_ad as tfw

    f, tf, args = CASES[name]
    us = [_weights(np.shape(a), 1 + k) for k, a in enumerate(args)]
    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(mg.tensor(a), mg.tensor(u)) for a, u in zip(args, us, strict=True)])
        got = fwAD.unpack_dual(out).tangent.numpy()
    with tfw.dual_level():
        tout = tf(*[tfw.make_dual(torch.tensor(a), torch.tensor(u)) for a, u in zip(args, us, strict=True)])
        want = tfw.unpack_dual(tout).tangent.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", ["svd_usvh", "eigh_projector", "eig_vlv", "qr_q", "cholesky", "det", "slogdet"])
def test_gradcheck_to_order_2(name):
    f, _, args = CASES[name]
    xs = [mg.tensor(a, requires_grad=True) for a in args]
    assert mg.gradcheck(f, xs, modes=("rev", "fwd"), order=2, fast=True)


def test_turned_vectors_have_a_real_positive_peak_and_keep_the_factorization():
    """Complex eigenvectors and singular vectors: each one's entry of largest modulus real and positive
    (LAPACK geev's choice), so the outputs are functions of the input; U diag(S) Vh and A V = V diag(w) hold."""
    for V in (mg.linalg.eigh(H3)[1], mg.linalg.eig(A3)[1], mg.linalg.svd(TALL)[0], mg.linalg.svd(WIDE)[0]):
        v = V.numpy()
        peak = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
        assert np.allclose(peak.imag, 0, atol=1e-15) and (peak.real > 0).all()
    for x in (TALL, WIDE, A3):
        for full in (False, True):
            u, s, vh = (t.numpy() for t in mg.linalg.svd(x, full_matrices=full))
            k = s.shape[-1]
            np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=1e-12)
    w, V = (t.numpy() for t in mg.linalg.eig(A3))
    np.testing.assert_allclose(A3 @ V, V * w, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0)


def test_eig_of_a_real_matrix_is_complex_as_torchs():
    a = np.array([[0.0, -2.0, 0.3], [1.5, 0.1, 0.0], [0.2, 0.4, 1.0]])  # a complex pair
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w, V = mg.linalg.eig(x)
    tw, tV = torch.linalg.eig(t)
    assert w.dtype == np.complex128 and V.dtype == np.complex128
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-12)
    sym = np.diag([1.0, 2.0, 3.0]) + 0.1 * np.ones((3, 3))  # real eigenvalues: still complex, as torch's
    assert mg.linalg.eigvals(sym).dtype == np.complex128 and np.linalg.eigvals(mg.tensor(sym)).dtype == np.complex128
    assert mg.linalg.eigvals(mg.tensor(sym, dtype=mg.float32)).dtype == np.complex64
    loss = (abs(V) ** 2 * mg.tensor([[1.0, 2.0, 3.0]])).sum() + (w * w).real.sum()
    tloss = (tV.abs() ** 2 * torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)).sum() + (tw * tw).real.sum()
    loss.backward()
    tloss.backward()
    assert x.grad.dtype == np.float64  # a real input's gradient is real
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_numpy_dispatch_reaches_the_complex_ops():
    x = mg.tensor(A3, requires_grad=True)
    w, V = np.linalg.eig(x)
    assert isinstance(w, mg.Tensor) and isinstance(V, mg.Tensor)
    (np.linalg.det(x).real + np.linalg.norm(x) + np.linalg.eigvals(x).imag.sum()).backward()
    assert x.grad.dtype == np.complex128


def test_eigenvector_gradient_at_a_repeated_eigenvalue_raises_naming_eig():
    x = mg.tensor(np.eye(3, dtype=np.complex128), requires_grad=True)
    with pytest.raises(ValueError, match="eig: the derivative of the eigenvectors is not defined"):
        abs(mg.linalg.eig(x)[1]).sum().backward()


def test_complex64_smoke():
    a = A3.astype(np.complex64)
    x = mg.tensor(a, requires_grad=True)
    outs = [mg.linalg.det(x), mg.linalg.inv(x).sum(), mg.linalg.norm(x) + 0j, mg.linalg.svdvals(x).sum() + 0j,
            mg.linalg.eigvals(x).sum(), abs(mg.linalg.eig(x)[1]).sum() + 0j, mg.linalg.qr(x)[1].sum(),
            mg.linalg.slogdet(x)[1] + 0j]
    for o in outs:
        assert o.dtype == np.complex64, o.dtype
    sum(o.real for o in outs).backward()
    assert x.grad.dtype == np.complex64 and np.isfinite(x.grad.numpy()).all()
    t = torch.tensor(a, requires_grad=True)
    touts = [torch.linalg.det(t), torch.linalg.inv(t).sum(), torch.linalg.norm(t) + 0j,
             torch.linalg.svdvals(t).sum() + 0j, torch.linalg.eigvals(t).sum(),
             torch.linalg.eig(t)[1].abs().sum() + 0j, torch.linalg.qr(t)[1].sum(), torch.linalg.slogdet(t)[1] + 0j]
    sum(o.real for o in touts).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=2e-3, atol=2e-4)


def test_eig_stays_on_the_device():
    """CuPy before v14 (and fakecupy) has no linalg.eig: the op solves on the host and sends the results
    back, so the outputs and the gradient are on the input's device (under MINIGRAD_DEVICE=fakecuda: cuda:0)."""
    x = mg.tensor(A3, requires_grad=True)
    w, V = mg.linalg.eig(x)
    assert w.device == x.device and V.device == x.device
    (abs(V).sum() + w.real.sum()).backward()
    assert x.grad.device == x.device
