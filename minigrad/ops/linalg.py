"""``np.linalg`` on Tensors (``mg.linalg``): inv, det, slogdet, solve, cholesky, eigh, eigvalsh,
eig, eigvals, svd, svdvals, norm, matrix_power, pinv, lstsq, batched over leading axes as NumPy does.
All take complex matrices too, with PyTorch's gradients (docs/complex.md, "Linear algebra":
conjugate transposes, Hermitian triangles, the phases of complex vectors).

Gradients are PyTorch's formulas. Where a result has several parts (eigh's eigenvalues and
eigenvectors, svd's U, S, Vh), each part is its own op whose rule recomputes the others it
needs, so a rule stays one output's rule and higher derivatives record as usual. NumPy's
``cholesky``, ``eigh`` and ``eigvalsh`` read the lower triangle only (``eigh`` and ``eigvalsh``: the
upper with ``UPLO="U"``): their gradients are those of that function (lower triangle; PyTorch's
symmetric gradient G gives tril(G) + tril(G, -1); upper: triu(G) + triu(G, 1)), which is the same
gradient for any symmetric input built upstream (``B @ B.T``). On an input that is not symmetric,
PyTorch's ``torch.linalg.eigh`` returns G itself, which is not the derivative of what it computes
(the triangle's function): minigrad's is, and gradcheck holds it to that.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _batched
from .. import backend as _be
from ..creation import as_tensor
from ..engine import run_op
from ._registry import Sample, composite, conj as _conj, defop, named, public
from .elementwise import where
from .matmul import matmul
from .reduce import max as _max, min as _min, sum as _sum

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _T(a):
    return a.swapaxes(-1, -2)


def _H(a):
    """The conjugate transpose (of a real matrix: the transpose, no conjugate taken)."""
    return _T(_conj(a))


def _cx(a) -> bool:
    return a.dtype.kind == "c"


def _re(a):
    """The real part of a complex array or Tensor; a real one itself."""
    return a.real if _cx(a) else a


def _lower(g, xp, upper=False):
    """The gradient of a function of the lower triangle (the upper when ``upper``), from the
    symmetric gradient ``g``. Complex: of the Hermitian matrix the triangle gives (LAPACK reads its
    diagonal's real part only), from its gradient's Hermitian part (a real diagonal)."""
    if _cx(g):
        g = (g + _H(g)) * 0.5
    return xp.triu(g) + xp.triu(g, 1) if upper else xp.tril(g) + xp.tril(g, -1)


def _sym_of_lower(t, xp, upper=False):
    """The tangent of the symmetric matrix a function of the lower triangle (the upper when
    ``upper``) reads, from ``t`` (``_lower``'s adjoint); complex: of the Hermitian one (the
    diagonal's real part)."""
    if _cx(t):
        off = xp.triu(t, 1) if upper else xp.tril(t, -1)
        d = xp.tril(xp.triu(t))
        return off + _H(off) + (d + _H(d)) * 0.5
    return xp.triu(t) + _T(xp.triu(t, 1)) if upper else xp.tril(t) + _T(xp.tril(t, -1))


# -- the gauge of complex vectors ------------------------------------------------------------------------
# A complex eigenvector (of eigh, eig) or singular vector is defined up to a phase e^{i phi}. Each is
# returned turned so that its entry of largest modulus is real and positive (LAPACK's geev's choice),
# which makes it a function of the input that gradcheck can hold its rules to; a loss that does not
# depend on the phase (PyTorch's condition) gets PyTorch's gradient. The rules take PyTorch's formulas,
# which hold for any phase, and move the cotangent or tangent across the turning (``_unturned``,
# ``_turned_tangent``).


def _peak(V):
    """1 at each column's entry of largest modulus, 0 elsewhere (real; no history)."""
    a = abs(V)
    return (a == a.max(axis=-2, keepdims=True)).astype(a.dtype)


def _phase(V):
    """Each column's phase, ``top / |top|`` of its entry of largest modulus: shape (..., 1, k)."""
    top = (V * _peak(V)).sum(axis=-2, keepdims=True)
    return top / abs(top)


def _turned_tangent(dV, V):
    """The tangent of the turned vectors ``V`` (their peaks real) from a tangent ``dV`` of the vectors
    in any phase: dV minus the phase's change, ``i V Im(dV_peak) / V_peak``; and that change per column."""
    K = _peak(V)
    dphi = (dV * K).sum(axis=-2, keepdims=True).imag / _re((V * K).sum(axis=-2, keepdims=True))
    return dV - 1j * V * dphi, dphi


def _unturned(g, V, extra=None):
    """The cotangent of the vectors in any phase, from ``g``, that of the turned vectors ``V`` (None:
    none); ``extra`` adds the phase's part from elsewhere (svd's Vh, turned with U), per column. The
    result has a real ``diag(Vᴴ g)``: PyTorch's condition for a loss that ignores the phase."""
    K = _peak(V)
    beta = 0.0 if g is None else (_conj(g) * V).sum(axis=-2, keepdims=True).imag
    if extra is not None:
        beta = beta + extra
    out = 1j * K * (beta / _re((V * K).sum(axis=-2, keepdims=True)))
    return out if g is None else g + out


def _tr_inv(xp, a, t):
    """tr(A⁻¹ t) for each matrix: the tangent of log|det A|."""
    return (_T(xp.inv(a)) * t).sum(axis=(-2, -1))


def _mats(rng, *batch, n=3, spd=False, shift=0.0):
    a = rng.standard_normal(batch + (n, n))
    if spd:
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    return a + shift * np.eye(n)


def _sym(rng, *batch, n=3):
    a = rng.standard_normal(batch + (n, n))
    return a + np.swapaxes(a, -1, -2) + np.diag(np.arange(n) * 3.0)  # well separated eigenvalues


def _hpd(rng, *batch, n=3):
    """A Hermitian positive-definite matrix, plus noise in the triangle a function of the lower one
    ignores (the upper) and in its diagonal's imaginary part."""
    a = rng.standard_normal(batch + (n, n)) + 1j * rng.standard_normal(batch + (n, n))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return h + np.triu(rng.standard_normal(batch + (n, n)), 1) + 0.3j * np.eye(n)


def _hsym(rng, *batch, n=3):
    """``_sym``'s complex kin: Hermitian with well separated eigenvalues (noise in the upper triangle
    and the diagonal's imaginary part, which a function of the lower triangle ignores)."""
    a = rng.standard_normal(batch + (n, n)) + 1j * rng.standard_normal(batch + (n, n))
    h = a + np.conj(np.swapaxes(a, -1, -2)) + np.diag(np.arange(n) * 3.0)
    return h + np.triu(rng.standard_normal(batch + (n, n)), 1) + 0.2j * np.eye(n)


def _lsym(th, x, upper=False):
    """Torch's view of a NumPy function of the lower triangle (the upper when ``upper``): the
    symmetric matrix it reads (complex: the Hermitian one, its diagonal's real part)."""
    if x.is_complex():
        off = th.triu(x, 1) if upper else th.tril(x, -1)
        return off + off.mH + th.diag_embed(th.diagonal(x, 0, -2, -1).real.to(x.dtype))
    return th.triu(x) + th.triu(x, 1).mT if upper else th.tril(x) + th.tril(x, -1).mT


def _th_turned(th, V):
    """Torch's vectors turned as minigrad's (``_phase``), differentiably (a function of the phase-free
    subspace, so PyTorch's rules take it); and the phases."""
    a = V.detach().abs()
    top = (V * (a == a.amax(dim=-2, keepdim=True)).to(a.dtype)).sum(-2, keepdim=True)
    p = top / top.abs()
    return V * p.conj(), p


def _uplo(UPLO, op):  # noqa: N803 - NumPy's name
    """NumPy's ``UPLO`` ("L" or "U", either case) -> whether the upper triangle is read."""
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if uplo not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return uplo == "U"


# -- inv, det, slogdet, solve -------------------------------------------------------------------------

INV = defop("inv", lambda xp, x: xp.linalg.inv(x), lambda ctx, g: (-(_T(ctx.out) @ g @ _T(ctx.out)),),
            save_out=True, kind="other", torch=lambda th, x: th.linalg.inv(x), complex="holomorphic",
            jvp=lambda ctx, t: -(ctx.out @ t @ ctx.out),
            samples=lambda rng: [Sample(_mats(rng, shift=3.0)), Sample(_mats(rng, 2, n=2, shift=2.0))])


@public(INV, export=False, numpy=(np.linalg.inv,))
@named("inv")
def inv(a):
    """The inverse of each square matrix (the last two axes); gradient -A⁻ᵀ g A⁻ᵀ (complex: -A⁻ᴴ g A⁻ᴴ)."""
    return run_op(INV, as_tensor(a, "inv"))


def _det_rule(ctx, g):
    (x,) = ctx.saved  # d det / dA = det A⁻ᵀ (invertible A)
    return ((g * ctx.out)[..., None, None] * _T(ctx.xp.inv(x)),)


DET = defop("det", lambda xp, x: xp.linalg.det(x), _det_rule, save=(0,), save_out=True, kind="other", complex="holomorphic",
            jvp=lambda ctx, t: ctx.out * _tr_inv(ctx.xp, ctx.args[0], t),
            torch=lambda th, x: th.linalg.det(x),
            samples=lambda rng: [Sample(_mats(rng, shift=2.0)), Sample(_mats(rng, 2, n=2)),
                                 Sample(np.array([[0.5, 2.0], [1.5, 0.3]]))])  # a negative determinant


@public(DET, export=False, numpy=(np.linalg.det,))
@named("det")
def det(a):
    """The determinant of each square matrix; gradient det(A) A⁻ᵀ (complex: conj(det A) A⁻ᴴ; it needs an
    invertible A here)."""
    return run_op(DET, as_tensor(a, "det"))


def _slogdet_samples(rng):
    return [Sample(_mats(rng, shift=2.0)), Sample(np.array([[0.5, 2.0], [1.5, 0.3]]))]


LOGABSDET = defop("logabsdet", lambda xp, x: xp.linalg.slogdet(x)[1],
                  lambda ctx, g: (g[..., None, None] * _H(ctx.xp.inv(ctx.saved[0])),), save=(0,), kind="other",
                  jvp=lambda ctx, t: _re(_tr_inv(ctx.xp, ctx.args[0], t)), complex=True,  # Re tr(A⁻¹ dA)
                  torch=lambda th, x: th.linalg.slogdet(x)[1], samples=_slogdet_samples)


def _det_sign_rule(ctx, g):
    """A complex sign s = det/|det| moves as ds = i s Im tr(A⁻¹ dA): gradient i Im(conj(s) g) A⁻ᴴ... with
    PyTorch's convention, -i Im(conj(g) s) A⁻ᴴ. A real sign is piecewise constant: gradient 0."""
    (x,) = ctx.saved
    if not _cx(ctx.out):
        return (ctx.xp.zeros_like(x),)
    b = -(_conj(g) * ctx.out).imag
    return (b[..., None, None] * (1j * _H(ctx.xp.inv(x))),)


def _det_sign_jvp(ctx, t):
    if not _cx(ctx.out):
        return None
    return ctx.out * (1j * _tr_inv(ctx.xp, ctx.args[0], t).imag)


DET_SIGN = defop("det_sign", lambda xp, x: xp.linalg.slogdet(x)[0], _det_sign_rule, save=(0,), save_out=True,
                 kind="other", jvp=_det_sign_jvp, complex=True, samples=_slogdet_samples,
                 torch=lambda th, x: th.linalg.det(x) / th.linalg.det(x).abs())  # slogdet's sign; torch's has no
# gradient for a real input, this one the same (zero) for both


@public(LOGABSDET, export=False, numpy=(np.linalg.slogdet,))
@named("slogdet")
def slogdet(a):
    """``(sign, logabsdet)`` of each determinant (NumPy's named tuple); ``logabsdet``'s gradient is
    A⁻ᵀ (negative determinants included; complex: A⁻ᴴ). A real ``sign`` is piecewise constant (gradient
    0); a complex one, ``det / |det|``, has PyTorch's gradient."""
    a = as_tensor(a, "slogdet")
    return SlogdetResult(run_op(DET_SIGN, a), run_op(LOGABSDET, a))


def _solve_rule(ctx, g):
    (a,) = ctx.saved
    gb = ctx.xp.solve(_T(a), g)  # x = A⁻¹ b: gb = A⁻ᵀ g, gA = -gb xᵀ (complex: holomorphic, A⁻ᴴ g, -gb xᴴ)
    return (-(gb @ _T(ctx.out)) if ctx.parents[0] is not None else None), gb


def _solve_jvp(ctx, ta, tb):
    a, x = ctx.args[0], ctx.out  # dx = A⁻¹ (db - dA x)
    rhs = tb if ta is None else -(ta @ x) if tb is None else tb - ta @ x
    return ctx.xp.solve(a, rhs)


SOLVE = defop("solve", lambda xp, a, b: xp.linalg.solve(a, b), _solve_rule, save=(0,), save_out=True, broadcast=True,
              kind="other", complex="holomorphic", jvp=_solve_jvp, torch=lambda th, a, b: th.linalg.solve(a, b),
              samples=lambda rng: [Sample(_mats(rng, shift=3.0), rng.standard_normal((3, 2))),
                                   Sample(_mats(rng, 2, shift=3.0), rng.standard_normal((2, 3, 1)))])


@public(SOLVE, export=False, numpy=(np.linalg.solve,))
@named("solve")
def solve(a, b):
    """x with ``a @ x == b``, batched; ``b`` a vector (1-D) or matrices ``(..., n, k)`` (NumPy 2's rule)."""
    a, b = as_tensor(a, "solve"), as_tensor(b, "solve")
    if b.ndim == 1:
        return run_op(SOLVE, a, b.reshape(-1, 1)).reshape(a.shape[:-2] + (-1,))
    return run_op(SOLVE, a, b)


# -- cholesky, eigh ----------------------------------------------------------------------------------


def _cholesky_rule(ctx, g):
    xp = ctx.xp
    L = ctx.out  # PyTorch's: S = L⁻ᵀ Φ(Lᵀ g) L⁻¹, Φ: the lower triangle with its diagonal halved (complex: ᴴ)
    P = _H(L) @ g
    Li = xp.inv(L)
    S = _H(Li) @ ((xp.tril(P) + xp.tril(P, -1)) * 0.5) @ Li
    return (_lower((S + _H(S)) * 0.5, xp),)


def _cholesky_jvp(ctx, t):
    xp, L = ctx.xp, ctx.out  # dL = L Φ(L⁻¹ dA L⁻ᵀ), Φ: the lower triangle with its diagonal halved
    Li = xp.inv(L)
    X = Li @ _sym_of_lower(t, xp) @ _H(Li)
    return L @ ((xp.tril(X) + xp.tril(X, -1)) * 0.5)


CHOLESKY = defop("cholesky", lambda xp, x: xp.linalg.cholesky(x), _cholesky_rule, save_out=True, kind="other",
                 jvp=_cholesky_jvp, complex=True,
                 torch=lambda th, x: th.linalg.cholesky(_lsym(th, x)),
                 complex_samples=lambda rng: [Sample(_hpd(rng)), Sample(_hpd(rng, 2, n=2))],
                 samples=lambda rng: [Sample(_mats(rng, spd=True)), Sample(_mats(rng, 2, n=2, spd=True))])


@public(CHOLESKY, export=False, numpy=(np.linalg.cholesky,))
@named("cholesky")
def cholesky(a):
    """The lower Cholesky factor of each symmetric (complex: Hermitian) positive-definite matrix (its lower
    triangle is read; complex: and its diagonal's real part)."""
    return run_op(CHOLESKY, as_tensor(a, "cholesky"))


def _th_eigh(th, x, upper=False):
    """Torch's eigenvectors with their signs turned to NumPy's (a constant per vector); complex: turned as
    minigrad's (``_th_turned``)."""
    V = th.linalg.eigh(_lsym(th, x, upper))[1]
    if x.is_complex():
        return _th_turned(th, V)[0]
    d = np.sign((np.linalg.eigh(x.detach().numpy(), "U" if upper else "L")[1] * V.detach().numpy()).sum(axis=-2))
    return V * th.tensor(d)[..., None, :]


def _eigvalsh_rule(ctx, g, upper=False):
    xp = ctx.xp
    V = xp.eigh_vectors(ctx.saved[0], upper=upper)
    return (_lower((V * g[..., None, :]) @ _H(V), xp, upper),)


def _eigvalsh_jvp(ctx, t, upper=False):
    xp = ctx.xp
    V = xp.eigh_vectors(ctx.args[0], upper=upper)
    return _re((_conj(V) * (_sym_of_lower(t, xp, upper) @ V)).sum(axis=-2))  # dw_i = v_iᴴ dA v_i


def _eigen_gaps(xp, x, upper):
    """E_ij = w_j - w_i for the eigenvalues w of ``x``; raises where eigenvalues repeat."""
    w = xp.eigvalsh(x, upper=upper)
    E = w[..., None, :] - w[..., :, None]  # 0 on the diagonal only when w is distinct
    n = w.shape[-1]
    Ea = _batched.innermost(E)  # under vmap: every element's gaps
    if int((Ea == 0).sum()) > n * (Ea.size // (n * n) if n else 0):
        raise ValueError("eigh: the derivative of the eigenvectors is not defined where eigenvalues repeat "
                         f"(eigenvalues {w}); differentiate the eigenvalues alone (eigvalsh), or perturb the input")
    return E


def _eigh_vectors_rule(ctx, g, upper=False):
    xp = ctx.xp
    V = ctx.out
    E = _eigen_gaps(xp, ctx.saved[0], upper)
    if _cx(V):
        g = _unturned(g, V)
    VtgV = _H(V) @ g
    skew = (VtgV - _H(VtgV)) * 0.5
    G = V @ (skew / xp.where(E == 0, 1.0, E)) @ _H(V)
    return (_lower(G, xp, upper),)


def _eigh_vectors_jvp(ctx, t, upper=False):
    xp, V = ctx.xp, ctx.out  # dV = V (F ∘ Vᵀ dA V), F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
    E = _eigen_gaps(xp, ctx.args[0], upper)
    M = _H(V) @ _sym_of_lower(t, xp, upper) @ V
    dV = V @ xp.where(E == 0, 0.0, M / xp.where(E == 0, 1.0, E))
    return _turned_tangent(dV, V)[0] if _cx(V) else dV


def _upper_only(rng, *batch, n=3):
    """A matrix whose upper triangle is ``_sym``'s and whose lower one is noise (UPLO="U" reads the upper)."""
    return _sym(rng, *batch, n=n) + np.tril(rng.standard_normal(batch + (n, n)), -1)


def _eigh_vectors(xp, x, upper=False):
    V = xp.linalg.eigh(x, UPLO="U" if upper else "L")[1]
    return V * _conj(_phase(V)) if _cx(V) else V


def _eigh_complex_samples(rng):
    return [Sample(_hsym(rng)), Sample(_hsym(rng, 2, n=2)), Sample(_hsym(rng).swapaxes(-1, -2).conj(), upper=True)]


EIGVALSH = defop("eigvalsh", lambda xp, x, upper=False: xp.linalg.eigvalsh(x, UPLO="U" if upper else "L"),
                 _eigvalsh_rule, save=(0,), kind="other", jvp=_eigvalsh_jvp, complex=True,
                 complex_samples=_eigh_complex_samples,
                 torch=lambda th, x, upper=False: th.linalg.eigvalsh(_lsym(th, x, upper)),
                 samples=lambda rng: [Sample(_sym(rng)), Sample(_sym(rng, 2, n=2)), Sample(rng.standard_normal((3, 3))),
                                      Sample(rng.standard_normal((3, 3)), upper=True),
                                      Sample(_upper_only(rng, 2, n=2), upper=True)])
EIGH_VECTORS = defop("eigh_vectors", _eigh_vectors,
                     _eigh_vectors_rule, save=(0,), save_out=True, kind="other", jvp=_eigh_vectors_jvp, complex=True,
                     complex_samples=_eigh_complex_samples,
                     samples=lambda rng: [Sample(_sym(rng)), Sample(_sym(rng, 2, n=2)),
                                          Sample(_upper_only(rng), upper=True), Sample(_upper_only(rng, 2, n=2), upper=True)],
                     torch=lambda th, x, upper=False: _th_eigh(th, x, upper))


@public(EIGVALSH, export=False, numpy=(np.linalg.eigvalsh,))
@named("eigvalsh")
def eigvalsh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """The eigenvalues of each symmetric matrix, ascending (its lower triangle is read; the upper with
    ``UPLO="U"``, and the gradient is that triangle's)."""
    upper = _uplo(UPLO, "eigvalsh")
    a = as_tensor(a, "eigvalsh")
    return run_op(EIGVALSH, a, upper=True) if upper else run_op(EIGVALSH, a)


@public(EIGH_VECTORS, export=False, numpy=(np.linalg.eigh,))
@named("eigh")
def eigh(a, UPLO="L"):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each symmetric (complex: Hermitian) matrix (NumPy's named tuple;
    the lower triangle is read; the upper with ``UPLO="U"``, and the gradient is that triangle's). The
    eigenvectors' gradient needs distinct eigenvalues: where they repeat, backward raises a ValueError
    saying so (PyTorch returns inf/NaN there). Complex eigenvectors are turned so that each one's entry
    of largest modulus is real and positive (a phase is theirs to choose): the gradient of a loss that
    ignores the phases (``|V|``, ``V diag(w) Vᴴ``) is PyTorch's."""
    upper = _uplo(UPLO, "eigh")
    a = as_tensor(a, "eigh")
    if upper:
        return EighResult(run_op(EIGVALSH, a, upper=True), run_op(EIGH_VECTORS, a, upper=True))
    return EighResult(run_op(EIGVALSH, a), run_op(EIGH_VECTORS, a))


# -- eig, eigvals (general matrices) ------------------------------------------------------------------------

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _eig(xp, x):
    """``(w, V)`` of ``xp.linalg.eig``, complex always (PyTorch's: a real matrix too, so the type does not
    hang on the values), V's columns of norm 1 and turned (``_phase``). CuPy before v14 has no general
    eig (cuSOLVER's geev came with CUDA 12.6): a device array without it is solved on the host and its
    results sent back, as PyTorch's CUDA eig does (its geev runs on the CPU, synchronizing)."""
    fn = getattr(xp.linalg, "eig", None)
    if fn is None:
        w, V = np.linalg.eig(xp.asnumpy(x))
        w, V = xp.asarray(w), xp.asarray(V)
    else:
        w, V = fn(x)
    ct = np.result_type(x.dtype, np.complex64)
    w, V = w.astype(ct), V.astype(ct)
    return w, V * _conj(_phase(V))


def _eig_gaps(xp, L):
    """E_ij = L_j - L_i; raises where eigenvalues repeat (the eigenvectors' derivative is not defined)."""
    E = L[..., None, :] - L[..., :, None]
    n = L.shape[-1]
    Ea = _batched.innermost(E)
    if int((Ea == 0).sum()) > n * (Ea.size // (n * n) if n else 0):
        raise ValueError("eig: the derivative of the eigenvectors is not defined where eigenvalues repeat "
                         f"(eigenvalues {L}); differentiate the eigenvalues alone (eigvals), or perturb the input")
    return E


def _eigvals_rule(ctx, g):
    xp = ctx.xp  # PyTorch's: gA = V⁻ᴴ diag(g) Vᴴ
    Vh = _H(xp.eig_vectors(ctx.saved[0]))
    return (xp.solve(Vh, g[..., :, None] * Vh),)


def _eigvals_jvp(ctx, t):
    xp = ctx.xp  # dL = diag(V⁻¹ dA V)
    V = xp.eig_vectors(ctx.args[0])
    return (xp.inv(V) * _T(t @ V)).sum(axis=-1)


def _eig_vectors_rule(ctx, g):
    """PyTorch's linalg_eig_backward for V (norm-1 columns): gA = V⁻ᴴ ((Vᴴg - VᴴV Re diag(Vᴴg)) / conj(E)) Vᴴ
    off the diagonal, from the cotangent of V in any phase (``_unturned``)."""
    xp, V = ctx.xp, ctx.out
    E = _eig_gaps(xp, xp.eigvals(ctx.saved[0]))
    g = _unturned(g, V)
    Vh = _H(V)
    VhgV = Vh @ g - Vh @ (V * _re((_conj(V) * g).sum(axis=-2, keepdims=True)))
    gA = xp.where(E == 0, 0.0, VhgV / xp.where(E == 0, 1.0, _conj(E)))
    return (xp.solve(Vh, gA @ Vh),)


def _eig_vectors_jvp(ctx, t):
    """PyTorch's linalg_eig_jvp for V: dV = V (V⁻¹ dA V / E) less V Re diag(Vᴴ that) (norm 1), then
    the turning's (``_turned_tangent``)."""
    xp, V = ctx.xp, ctx.out
    E = _eig_gaps(xp, xp.eigvals(ctx.args[0]))
    dP = xp.solve(V, t @ V)
    dV = V @ xp.where(E == 0, 0.0, dP / xp.where(E == 0, 1.0, E))
    dV = dV - V * _re((_conj(V) * dV).sum(axis=-2, keepdims=True))
    return _turned_tangent(dV, V)[0]


def _eig_samples(rng):
    return [Sample(_mats(rng)), Sample(_mats(rng, 2, n=2)),
            Sample(np.array([[0.0, -2.0, 0.3], [1.5, 0.1, 0.0], [0.2, 0.4, 1.0]]))]  # a complex pair


EIGVALS = defop("eigvals", lambda xp, x: _eig(xp, x)[0], _eigvals_rule, save=(0,), kind="other", complex=True,
                jvp=_eigvals_jvp, samples=_eig_samples, torch=lambda th, x: th.linalg.eig(x)[0])
EIG_VECTORS = defop("eig_vectors", lambda xp, x: _eig(xp, x)[1], _eig_vectors_rule, save=(0,), save_out=True,
                    kind="other", complex=True, jvp=_eig_vectors_jvp, samples=_eig_samples,
                    torch=lambda th, x: _th_turned(th, th.linalg.eig(x)[1])[0])


@public(EIGVALS, export=False, numpy=(np.linalg.eigvals,))
@named("eigvals")
def eigvals(a):
    """The eigenvalues of each square matrix, complex (a real matrix's too, as ``torch.linalg.eigvals``;
    NumPy's are real when all are); gradient V⁻ᴴ diag(g) Vᴴ."""
    return run_op(EIGVALS, as_tensor(a, "eigvals"))


@public(EIG_VECTORS, export=False, numpy=(np.linalg.eig,))
@named("eig")
def eig(a):
    """``(eigenvalues, eigenvectors)`` of each square matrix (a named tuple), complex as
    ``torch.linalg.eig``'s (a real matrix's too). The eigenvectors have norm 1 and are turned so that
    each one's entry of largest modulus is real and positive (LAPACK's geev's choice, made for a real
    matrix's real eigenvectors too): the gradient of a loss that ignores the phases (``|V|``,
    ``V diag(w) V⁻¹``) is PyTorch's. Their gradient needs distinct eigenvalues. On a device whose CuPy
    has no ``linalg.eig`` it is computed on the host."""
    a = as_tensor(a, "eig")
    return EigResult(run_op(EIGVALS, a), run_op(EIG_VECTORS, a))


# -- qr ----------------------------------------------------------------------------------------------

QRResult = namedtuple("QRResult", ["Q", "R"])


def _qr_grad(xp, x, gQ=None, gR=None):
    """PyTorch's linalg_qr_backward (reduced, m >= n): gA = (Q S + gQ) R⁻ᵀ, S from triu(gR Rᵀ - Qᵀ gQ).
    Complex (ᵀ -> ᴴ): R's diagonal is real (LAPACK's), so S = triu(M, 1) + its adjoint + Re diag(M)."""
    m, n = x.shape[-2], x.shape[-1]
    if m < n:
        raise ValueError(f"qr: the gradient of a wide matrix ({m}x{n}, more columns than rows) is not supported here")
    Q, R = xp.qr_q(x), xp.qr_r(x)
    M = gR @ _H(R) if gR is not None else -(_H(Q) @ gQ)
    if _cx(M):
        up, d = xp.triu(M, 1), xp.tril(xp.triu(M))
        S = up + _H(up) + (d + _H(d)) * 0.5
    else:
        S = xp.triu(M) + _T(xp.triu(M, 1))
    gA = Q @ S
    if gQ is not None:
        gA = gA + gQ
    return gA @ _H(xp.inv(R))


def _qr_jvp(xp, x, t, want):
    """JAX's qr_jvp_rule (reduced, m >= n): with C = Qᵀ dA R⁻¹ and Ω = tril(C, -1) - its transpose
    (skew), dQ = Q (Ω - C) + dA R⁻¹ and dR = (C - Ω) R. ``want``: "Q" or "R". Complex: Cᴴ for Cᵀ, and
    Ω's diagonal i Im diag(C), which keeps R's diagonal real (JAX's correction)."""
    m, n = x.shape[-2], x.shape[-1]
    if m < n:
        raise ValueError(f"qr: the derivative of a wide matrix ({m}x{n}, more columns than rows) is not supported here")
    Q, R = xp.qr_q(x), xp.qr_r(x)
    tRi = t @ xp.inv(R)
    C = _H(Q) @ tRi
    low = xp.tril(C, -1)
    omega = low - _H(low)
    if _cx(C):
        d = xp.tril(xp.triu(C))
        omega = omega + (d - _H(d)) * 0.5
    return Q @ (omega - C) + tRi if want == "Q" else (C - omega) @ R


def _th_qr(th, x):
    """Torch's Q and R with their signs turned to NumPy's (a constant per column of Q)."""
    Q, R = th.linalg.qr(x)
    d = th.tensor(np.sign((np.conj(np.linalg.qr(x.detach().numpy())[0]) * Q.detach().numpy()).real.sum(axis=-2)))
    return Q * d[..., None, :], R * d[..., :, None]


def _qr_samples(rng):
    return [Sample(_mats(rng, shift=2.0)), Sample(rng.standard_normal((2, 4, 3)))]


QR_Q = defop("qr_q", lambda xp, x: xp.linalg.qr(x)[0], lambda ctx, g: (_qr_grad(ctx.xp, ctx.saved[0], gQ=g),),
             save=(0,), kind="other", jvp=lambda ctx, t: _qr_jvp(ctx.xp, ctx.args[0], t, "Q"), complex=True,
             samples=_qr_samples, torch=lambda th, x: _th_qr(th, x)[0])
QR_R = defop("qr_r", lambda xp, x: xp.linalg.qr(x)[1], lambda ctx, g: (_qr_grad(ctx.xp, ctx.saved[0], gR=g),),
             save=(0,), kind="other", jvp=lambda ctx, t: _qr_jvp(ctx.xp, ctx.args[0], t, "R"), complex=True,
             samples=_qr_samples, torch=lambda th, x: _th_qr(th, x)[1])


@public(QR_Q, export=False, numpy=(np.linalg.qr,))
@named("qr")
def qr(a, mode="reduced"):
    """``(Q, R)`` with ``a = Q @ R`` (NumPy's named tuple; ``mode="reduced"`` only, or ``"r"``).
    Differentiable for ``m >= n`` with PyTorch's formula; complex too (R's diagonal real, LAPACK's)."""
    a = as_tensor(a, "qr")
    if mode == "r":
        return run_op(QR_R, a)
    if mode != "reduced":
        raise TypeError(f"qr: mode={mode!r} is not supported on Tensors (reduced or r)")
    return QRResult(run_op(QR_Q, a), run_op(QR_R, a))


# -- svd ---------------------------------------------------------------------------------------------


def _svd_parts(xp, x):
    return xp.svd_u(x, full=False), xp.svdvals(x), xp.svd_vh(x, full=False)


def _svd_fixed(xp, x, full):
    """NumPy's svd; complex: U's columns turned (``_phase``) and Vh's rows with them, so U S Vh is kept."""
    U, S, Vh = xp.linalg.svd(x, full_matrices=full)
    if not _cx(U):
        return U, S, Vh
    p = _phase(U)
    k = min(x.shape[-2], x.shape[-1])
    pk = _T(p[..., :k])
    Vh = Vh * pk if Vh.shape[-2] == k else xp.concatenate([Vh[..., :k, :] * pk, Vh[..., k:, :]], axis=-2)
    return U * _conj(p), S, Vh


def _svd_grad(xp, x, gU=None, gS=None, gVh=None):
    """PyTorch's linalg_svd_backward (real, reduced) for one of the three gradients."""
    U, S, Vh = _svd_parts(xp, x)
    m, n = x.shape[-2], x.shape[-1]
    if gS is not None:
        return (U * gS[..., None, :]) @ Vh
    if _cx(U):
        return _svd_grad_complex(xp, x, U, S, Vh, gU, gVh)
    S2 = S * S
    E = S2[..., None, :] - S2[..., :, None]
    E = xp.where(E == 0, 1.0, E)
    if gU is not None:
        UtgU = _T(U) @ gU
        inner = ((UtgU - _T(UtgU)) * S[..., None, :]) / E
        if m > n:
            gUS = gU / S[..., None, :]
            return (U @ inner + gUS - U @ (_T(U) @ gUS)) @ Vh
        return U @ inner @ Vh
    V, gV = _T(Vh), _T(gVh)
    VtgV = _T(V) @ gV
    inner = (S[..., :, None] * (VtgV - _T(VtgV))) / E
    if m < n:
        SgVh = gVh / S[..., :, None]
        return U @ (inner @ Vh + SgVh - (SgVh @ V) @ Vh)
    return U @ inner @ Vh


def _svd_grad_complex(xp, x, U, S, Vh, gU, gVh):
    """PyTorch's svd_backward (complex, reduced) for the turned U or Vh: the cotangent of U in any
    phase (``_unturned``: Vh turns with U, so gVh's phase part lands on U), then PyTorch's formula with
    both, its imaginary diagonal term i Im diag(Uᴴ gU) / S included."""
    m, n = x.shape[-2], x.shape[-1]
    extra = None if gVh is None else -_T((_conj(gVh) * Vh).sum(axis=-1, keepdims=True).imag)
    gU = _unturned(gU, U, extra)
    S2 = S * S
    E = S2[..., None, :] - S2[..., :, None]
    Ed = xp.where(E == 0, 1.0, E)
    UhgU = _H(U) @ gU
    inner = (UhgU - _H(UhgU)) * S[..., None, :]
    if gVh is not None:
        VhgV = Vh @ _H(gVh)
        inner = inner + S[..., :, None] * (VhgV - _H(VhgV))
    inner = xp.where(E == 0, 0.0, inner / Ed)
    im = (_conj(U) * gU).sum(axis=-2).imag / S  # Im diag(Uᴴ gU) / S
    gA = U @ inner + U * (1j * im)[..., None, :]
    if m > n:
        gUS = gU / S[..., None, :]
        gA = gA + gUS - U @ (_H(U) @ gUS)
    gA = gA @ Vh
    if m < n and gVh is not None:
        SgVh = gVh / S[..., :, None]
        gA = gA + U @ (SgVh - (SgVh @ _H(Vh)) @ Vh)
    return gA


def _svd_jvp_complex(xp, x, t, want, U, S, Vh):
    """The tangent of the turned U or Vh: PyTorch's linalg_svd_jvp (dU's diagonal i Im diag(dP) / S), then
    the turning's (``_turned_tangent``; Vh's rows turn with U's columns)."""
    V = _H(Vh)
    m, n = x.shape[-2], x.shape[-1]
    dP = _H(U) @ t @ V
    S2 = S * S
    E = S2[..., None, :] - S2[..., :, None]
    F = xp.where(E == 0, 0.0, 1.0 / xp.where(E == 0, 1.0, E))
    dPS = dP * S[..., None, :]
    dU = U @ (F * (dPS + _H(dPS))) + U * (1j * (_conj(U) * (t @ V)).sum(axis=-2).imag / S)[..., None, :]
    if m > n:
        tV = t @ V
        dU = dU + (tV - U @ (_H(U) @ tV)) / S[..., None, :]
    dU, dphi = _turned_tangent(dU, U)
    if want == "U":
        return dU
    SdP = S[..., :, None] * dP
    dV = V @ (F * (SdP + _H(SdP)))
    if m < n:
        tU = _H(t) @ U
        dV = dV + (tU - V @ (Vh @ tU)) / S[..., None, :]
    return _H(dV) + 1j * _T(dphi) * Vh


def _svd_jvp(xp, x, t, want):
    """JAX's svd_jvp_rule (real, reduced) for one part (``want``: "S", "U" or "Vh"): with
    dP = Uᵀ dA V, dS = diag(dP); dU = U (F ∘ (dP S + S dPᵀ)), dV = V (F ∘ (S dP + dPᵀ S)),
    F_ij = 1 / (s_j² - s_i²) off the diagonal (0 on it), plus the parts of dA outside U's / V's span."""
    U, S, Vh = _svd_parts(xp, x)
    V = _H(Vh)
    if want == "S":
        return _re((_conj(U) * (t @ V)).sum(axis=-2))
    if _cx(U):
        return _svd_jvp_complex(xp, x, t, want, U, S, Vh)
    m, n = x.shape[-2], x.shape[-1]
    dP = _T(U) @ t @ V
    S2 = S * S
    E = S2[..., None, :] - S2[..., :, None]
    F = xp.where(E == 0, 0.0, 1.0 / xp.where(E == 0, 1.0, E))
    if want == "U":
        dPS = dP * S[..., None, :]
        dU = U @ (F * (dPS + _T(dPS)))
        if m > n:
            tV = t @ V
            dU = dU + (tV - U @ (_T(U) @ tV)) / S[..., None, :]
        return dU
    SdP = S[..., :, None] * dP
    dV = V @ (F * (SdP + _T(SdP)))
    if m < n:
        tU = _T(t) @ U
        dV = dV + (tU - V @ (Vh @ tU)) / S[..., None, :]
    return _T(dV)


def _full_check(x, full, what):
    m, n = x.shape[-2], x.shape[-1]
    if full and m != n:
        raise ValueError(f"svd: the gradient of {what} of a {m}x{n} matrix with full_matrices=True is not defined "
                         "(its extra columns are arbitrary); call svd(a, full_matrices=False)")


def _svd_samples(rng):
    return [Sample(rng.standard_normal((4, 3))), Sample(rng.standard_normal((2, 3, 5))), Sample(_sym(rng))]


SVDVALS = defop("svdvals", lambda xp, x: xp.linalg.svd(x, compute_uv=False),
                lambda ctx, g: (_svd_grad(ctx.xp, ctx.saved[0], gS=g),), save=(0,), kind="other", complex=True,
                jvp=lambda ctx, t: _svd_jvp(ctx.xp, ctx.args[0], t, "S"),
                torch=lambda th, x: th.linalg.svdvals(x), samples=_svd_samples)


def _svd_u_rule(ctx, g, full):
    _full_check(ctx.saved[0], full, "U")
    return (_svd_grad(ctx.xp, ctx.saved[0], gU=g),)


def _svd_vh_rule(ctx, g, full):
    _full_check(ctx.saved[0], full, "Vh")
    return (_svd_grad(ctx.xp, ctx.saved[0], gVh=g),)


def _svd_u_jvp(ctx, t, full):
    _full_check(ctx.args[0], full, "U")
    return _svd_jvp(ctx.xp, ctx.args[0], t, "U")


def _svd_vh_jvp(ctx, t, full):
    _full_check(ctx.args[0], full, "Vh")
    return _svd_jvp(ctx.xp, ctx.args[0], t, "Vh")


def _th_svd(th, x, full):
    """Torch's U and Vh with their signs turned to NumPy's (a constant per singular vector); complex:
    turned as minigrad's (``_svd_fixed``), differentiably."""
    U, _, Vh = th.linalg.svd(x, full_matrices=full)
    if x.is_complex():
        U, p = _th_turned(th, U)
        k = min(x.shape[-2:])
        pk = p[..., :k].mT
        return U, (Vh * pk if Vh.shape[-2] == k else th.cat([Vh[..., :k, :] * pk, Vh[..., k:, :]], dim=-2))
    Un = np.linalg.svd(x.detach().numpy(), full_matrices=full)[0]
    d = th.tensor(np.sign((Un * U.detach().numpy()).sum(axis=-2)))
    k = min(x.shape[-2:])
    return U * d[..., None, :], Vh * d[..., :k, None] if Vh.shape[-2] == k else Vh


def _uvh_samples(rng):
    return [Sample(rng.standard_normal((4, 3)), full=False), Sample(rng.standard_normal((2, 3, 5)), full=False),
            Sample(_sym(rng), full=True)]


SVD_U = defop("svd_u", lambda xp, x, full: _svd_fixed(xp, x, full)[0], _svd_u_rule, save=(0,), complex=True,
              kind="other", jvp=_svd_u_jvp, samples=_uvh_samples, torch=lambda th, x, full: _th_svd(th, x, full)[0])
SVD_VH = defop("svd_vh", lambda xp, x, full: _svd_fixed(xp, x, full)[2], _svd_vh_rule, save=(0,), complex=True,
               kind="other", jvp=_svd_vh_jvp, samples=_uvh_samples, torch=lambda th, x, full: _th_svd(th, x, full)[1])


@public(SVDVALS, export=False, numpy=(np.linalg.svdvals,) if hasattr(np.linalg, "svdvals") else ())
@named("svdvals")
def svdvals(x):
    """The singular values, descending; differentiable everywhere (gradient U diag(g) Vh)."""
    return run_op(SVDVALS, as_tensor(x, "svdvals"))


@public(SVD_U, export=False, numpy=(np.linalg.svd,))
@named("svd")
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``(U, S, Vh)`` with ``a = U @ (S[..., None] * Vh)`` (NumPy's named tuple), or ``S`` alone with
    ``compute_uv=False``. S's gradient is defined everywhere; U's and Vh's need distinct non-zero
    singular values, and ``full_matrices=False`` for a non-square matrix (as PyTorch). Complex singular
    vectors are turned so that each column of U has its largest-modulus entry real and positive, and Vh's
    rows with them (U S Vh is kept): the gradient of a loss that ignores the phases (``|U|``,
    ``U diag(S) Vh``) is PyTorch's."""
    if hermitian:
        raise TypeError("svd: hermitian=True is not supported on Tensors (use eigh)")
    a = as_tensor(a, "svd")
    if not compute_uv:
        return svdvals(a)
    full = bool(full_matrices)
    return SVDResult(run_op(SVD_U, a, full=full), run_op(SVDVALS, a), run_op(SVD_VH, a, full=full))


# -- composites: norm, matrix_power, pinv, lstsq ---------------------------------------------------------


def _norm_samples(rng):
    x = rng.standard_normal((3, 4))
    return [Sample(x), Sample(x, "fro"), Sample(x, "nuc"), Sample(x, 2), Sample(x, -2), Sample(x, 1), Sample(x, -np.inf),
            Sample(x[0]), Sample(x[0], 1), Sample(x[0], np.inf), Sample(x[0], 3), Sample(x[0], 0.5),
            Sample(x, None, 1), Sample(x, 2, 0, True), Sample(rng.standard_normal((2, 3, 4)), axis=(1, 2))]


def _abs2(x):
    """|x|², real: x * x, or Re(x conj(x)) for complex x."""
    return (x * x.conj()).real if _cx(x) else x * x


@composite("norm", numpy=(np.linalg.norm,), export=False, samples=_norm_samples, complex=True,
           torch=lambda th, x, ord=None, axis=None, keepdims=False: th.linalg.norm(x, ord, axis, keepdims))
@named("norm")
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    """NumPy's vector and matrix norms (``ord`` None, 'fro', 'nuc', inf, -inf, 0, 1, -1, 2, -2 or any
    p for vectors; ``axis`` an int or a pair). The 2-norm's gradient at 0 is not defined (NaN). Complex
    inputs give real norms (of the moduli; 2, -2 and 'nuc' of the singular values)."""
    x = as_tensor(x, "norm")
    if axis is None:
        if ord is None or (ord in ("fro", "f") and x.ndim == 2):
            out = _sum(_abs2(x)) ** 0.5
            return out.reshape((1,) * x.ndim) if keepdims else out
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2:
        raise ValueError(f"norm: improper number of dimensions to norm (axis={axis})")
    return _matrix_norm(x, ord, axes, keepdims)


def _vector_norm(x, ord, a, keepdims):  # noqa: A002
    ax = abs(x) if ord not in (None, 2) else None
    if ord is None or ord == 2:
        return _sum(_abs2(x), a, keepdims) ** 0.5
    if ord == np.inf:
        return _max(ax, axis=a, keepdims=keepdims)
    if ord == -np.inf:
        return _min(ax, axis=a, keepdims=keepdims)
    if ord == 0:
        return _sum((x != 0).astype(np.finfo(x.dtype).dtype), a, keepdims)
    if ord == 1:
        return _sum(ax, a, keepdims)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    return _sum(ax ** ord, a, keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    from .join import moveaxis

    r, c = axes
    if ord in (None, "fro", "f"):
        out = _sum(_abs2(x), axes, keepdims) ** 0.5
        return out
    if ord in (1, -1):
        s = _sum(abs(x), r, True)
        out = (_max if ord == 1 else _min)(s, axis=c, keepdims=True)
    elif ord in (np.inf, -np.inf):
        s = _sum(abs(x), c, True)
        out = (_max if ord == np.inf else _min)(s, axis=r, keepdims=True)
    elif ord in (2, -2, "nuc"):
        sv = svdvals(moveaxis(x, (r, c), (-2, -1)))
        out = _sum(sv, -1) if ord == "nuc" else (_max if ord == 2 else _min)(sv, axis=-1)
        if keepdims:
            for a in sorted((r, c)):
                out = out.reshape(out.shape[:a] + (1,) + out.shape[a:])
        return out
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    return out if keepdims else out.reshape(tuple(s for i, s in enumerate(x.shape) if i not in (r, c)))


@composite("matrix_power", numpy=(np.linalg.matrix_power,), export=False, complex=True,
           samples=lambda rng: [Sample(_mats(rng, shift=2.0), 3), Sample(_mats(rng, 2, shift=2.0), 0),
                                Sample(_mats(rng, shift=3.0), -2), Sample(_mats(rng), 1)],
           torch=lambda th, x, n: th.linalg.matrix_power(x, n))
@named("matrix_power")
def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse for n < 0)."""
    a = as_tensor(a, "matrix_power")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: needs square matrices, got shape {a.shape}")
    if n == 0:
        from .meta import zeros_like

        eye = _be.array_module(a.data).eye(a.shape[-1], dtype=a.dtype)
        return zeros_like(a) + eye
    if n < 0:
        a, n = inv(a), -n
    out, base = None, a
    while n:
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return out


@composite("pinv", numpy=(np.linalg.pinv,), export=False, complex=True,
           samples=lambda rng: [Sample(rng.standard_normal((4, 3))), Sample(rng.standard_normal((2, 3, 5)))],
           torch=lambda th, x: th.linalg.pinv(x))
@named("pinv")
def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, from the SVD (singular values below ``rcond`` times the
    largest are dropped). Its gradient follows the SVD's: distinct singular values."""
    if hermitian:
        raise TypeError("pinv: hermitian=True is not supported on Tensors")
    a = as_tensor(a, "pinv")
    cut = rcond if rcond is not None else rtol if rtol is not None else max(a.shape[-2:]) * np.finfo(a.dtype).eps
    U, S, Vh = svd(a, full_matrices=False)
    big = S > _max(S, axis=-1, keepdims=True).detach() * cut
    s_inv = where(big, 1.0 / where(big, S, 1.0), 0.0)
    return _H(Vh) @ (s_inv[..., :, None] * _H(U))


@composite("lstsq", numpy=(np.linalg.lstsq,), export=False, complex=True,
           samples=lambda rng: [Sample(rng.standard_normal((5, 3)), rng.standard_normal((5, 2))),
                                Sample(rng.standard_normal((4, 3)), rng.standard_normal(4))])
@named("lstsq")
def lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)`` as NumPy's: ``x`` minimises ``|a x - b|`` (``pinv(a) @ b``,
    differentiable in ``a`` and ``b``); ``residuals`` the squared residual per column when ``a``
    has full column rank and more rows than columns, else empty; ``rank`` an int; ``s`` the
    singular values."""
    a, b = as_tensor(a, "lstsq"), as_tensor(b, "lstsq")
    s = svdvals(a)
    m, n = a.shape
    eps = np.finfo(a.dtype).eps * max(m, n) if rcond is None else rcond
    sd = _be.to_numpy(_batched.innermost(s.detach().data))  # under vmap: every element's, the batch axes first
    ranks = (sd > eps * sd.max(-1, keepdims=True)).sum(-1) if sd.size else np.zeros(sd.shape[:-1], dtype=int)
    if ranks.size and ranks.min() != ranks.max():
        raise RuntimeError(f"lstsq: vmap: the rank differs between the batch elements ({sorted(set(ranks.ravel().tolist()))}); "
                           "the residuals' shape depends on it, so vmap needs one rank for every element")
    rank = int(ranks.ravel()[0]) if ranks.size else 0
    x = pinv(a, rcond=eps) @ b
    if rank == n and m > n:
        r = matmul(a, x) - b
        res = _sum(_abs2(r), 0)
        res = res.reshape(1) if res.ndim == 0 else res
    else:
        from .meta import zeros_like

        res = zeros_like(b, shape=(0,))
    return x, res, rank, s
