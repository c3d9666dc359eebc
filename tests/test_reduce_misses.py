"""Three places where minigrad gave another library's answer than the spelling asked for:

- ``max(dim=)`` / ``min(dim=)`` (PyTorch's pair): the gradient goes to the returned index alone,
  as PyTorch's scatter does, in reverse and forward mode and at order 2; NumPy's spelling
  (``axis=``, a positional axis, ``np.max``) keeps sharing it among ties;
- ``np.average`` follows NumPy's dtypes (a list of weights is a float64 array);
- ``np.linalg.eigh`` / ``eigvalsh`` with ``UPLO="U"`` read the upper triangle, and their gradient
  is that triangle's (PyTorch's symmetric gradient G folded onto it: ``triu(G) + triu(G, 1)``).
"""
import numpy as np
import pytest

import minigrad as mg
from conftest import dev, leaf, leaf_of, to_np

torch = pytest.importorskip("torch")

TIED = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
TIED3 = [[[1.0, 4.0], [4.0, 4.0], [0.0, 4.0]], [[2.0, -1.0], [2.0, -1.0], [1.0, -1.0]]]
MODES = ("rev", "fwd")


def _th(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


# -- max(dim=) / min(dim=) ------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("data, dim", [(TIED, 1), (TIED, 0), (TIED, -1), (TIED3, 1), (TIED3, 0), (TIED3, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_dim_form_sends_the_gradient_to_the_returned_index_as_torch(op, data, dim, keepdim):
    x, xt = leaf_of(data), _th(data, True)
    values, indices = getattr(x, op)(dim=dim, keepdim=keepdim)
    tv, ti = getattr(xt, op)(dim=dim, keepdim=keepdim)
    np.testing.assert_array_equal(to_np(values), tv.detach().numpy())
    np.testing.assert_array_equal(to_np(indices), ti.numpy())
    w = np.random.default_rng(0).standard_normal(tuple(tv.shape))
    (values * mg.tensor(dev(w))).sum().backward()
    (tv * _th(w)).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), xt.grad.numpy())  # one entry per row gets it, ties or not


@pytest.mark.parametrize("op", ["max", "min"])
def test_numpy_spelling_keeps_sharing_ties(op):
    x = leaf_of(TIED)
    want = torch.amax if op == "max" else torch.amin
    xt = _th(TIED, True)
    want(xt, 1).sum().backward()
    for f in (lambda t: getattr(t, op)(axis=1), lambda t: getattr(t, op)(1), lambda t: getattr(np, op)(t, axis=1),
              lambda t: getattr(mg, op)(t, 1), lambda t: getattr(t, op)(axis=1, keepdims=True)):
        x.grad = None
        f(x).sum().backward()
        np.testing.assert_array_equal(to_np(x.grad), xt.grad.numpy())  # amax's even split
    np.testing.assert_array_equal(xt.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0.5, 0]] if op == "max" else [[1, 0, 0], [0, 0, 1]])


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("data, dim", [(TIED, 1), (TIED, 0), (TIED3, 1), (TIED3, 2)])
def test_dim_form_tangent_is_the_tangent_at_the_index_as_torch_func_jvp(op, data, dim):
    u = np.random.default_rng(1).standard_normal(np.shape(data))
    out, tangent = mg.func.jvp(lambda t: getattr(t, op)(dim=dim).values, (mg.tensor(dev(data)),),
                               (mg.tensor(dev(u)),))
    tout, ttangent = torch.func.jvp(lambda t: getattr(t, op)(dim=dim).values, (_th(data),), (_th(u),))
    np.testing.assert_array_equal(to_np(out), tout.numpy())
    np.testing.assert_array_equal(to_np(tangent), ttangent.numpy())
    # NumPy's spelling: the mean of the tied tangents (the adjoint of the shared gradient), as torch.amax's
    _, shared = mg.func.jvp(lambda t: getattr(t, op)(axis=dim), (mg.tensor(dev(data)),), (mg.tensor(dev(u)),))
    amax = torch.amax if op == "max" else torch.amin
    np.testing.assert_allclose(to_np(shared), torch.func.jvp(lambda t: amax(t, dim), (_th(data),), (_th(u),))[1].numpy(),
                               rtol=1e-15, atol=0)


@pytest.mark.parametrize("op", ["max", "min"])
def test_dim_form_second_order_with_ties_as_torch(op):
    """The rule records on Tensors: reverse over reverse, and forward over reverse (an hvp), match
    torch's double backward through max(dim=) on tied rows."""
    data = np.asarray(TIED3) * 0.5
    v = np.random.default_rng(2).standard_normal(data.shape)

    def f(t, lib):
        vals = getattr(t, op)(dim=1).values
        return (vals * vals * vals).sum()

    x, xt = leaf_of(data), _th(data, True)
    (g,) = mg.grad(f(x, mg), [x], create_graph=True)
    assert g.requires_grad
    (gt,) = torch.autograd.grad(f(xt, torch), [xt], create_graph=True)
    np.testing.assert_allclose(to_np(g), gt.detach().numpy(), rtol=1e-14)
    (h,) = mg.grad((g * mg.tensor(dev(v))).sum(), [x])
    (ht,) = torch.autograd.grad((gt * _th(v)).sum(), [xt])
    np.testing.assert_allclose(to_np(h), ht.numpy(), rtol=1e-14)
    _, hv = mg.func.hvp(lambda t: f(t, mg), (mg.tensor(dev(data)),), (mg.tensor(dev(v)),))
    np.testing.assert_allclose(to_np(hv[0] if isinstance(hv, tuple) else hv), ht.numpy(), rtol=1e-14)


@pytest.mark.parametrize("op", ["max", "min"])
def test_dim_form_gradchecks_in_both_modes_to_order_2(op):
    x = mg.tensor(dev(np.random.default_rng(3).permutation(24).reshape(2, 3, 4) * 0.1), requires_grad=True)
    for dim, keepdim in ((1, False), (0, True), (-1, False), (2, True)):
        def f(t, dim=dim, keepdim=keepdim):
            return getattr(t, op)(dim=dim, keepdim=keepdim).values ** 2

        assert mg.gradcheck(f, [x], modes=MODES, order=2), (op, dim, keepdim)
    assert mg.gradcheck(lambda t: getattr(mg, op)(t, dim=1).values.exp(), [x], modes=MODES, order=2)


def test_dim_form_indices_carry_no_gradient_and_the_tape_names_the_op():
    x = leaf((3, 4))
    values, indices = x.max(dim=1)
    assert not indices.requires_grad and indices.dtype == np.int64
    assert values.grad_fn is not None and "max" in repr(values.grad_fn)
    assert mg.min(x, dim=0).values.grad_fn is not None


def test_dim_form_with_nan_follows_torch():
    data = [[1.0, np.nan, 3.0], [2.0, 2.0, np.nan]]
    x, xt = leaf_of(data), _th(data, True)
    v, i = x.max(dim=1)
    tv, ti = xt.max(dim=1)
    np.testing.assert_array_equal(to_np(i), ti.numpy())
    np.testing.assert_array_equal(to_np(v), tv.detach().numpy())
    v.sum().backward()
    tv.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), xt.grad.numpy())


# -- np.average's dtypes --------------------------------------------------------------------------


X32 = (np.arange(12, dtype=np.float32).reshape(3, 4) - 4.5) / 7


@pytest.mark.parametrize("weights", [
    [0.5, 1.0, 2.0, 0.25], [1, 2, 3, 4], (0.5, 1.0, 2.0, 0.25),
    np.array([0.5, 1.0, 2.0, 0.25]), np.array([0.5, 1.0, 2.0, 0.25], np.float32),
    np.array([0.5, 1.0, 2.0, 0.25], np.float16), np.array([1, 2, 3, 4], np.int32), np.array([1, 2, 3, 4], np.int64),
    np.array([1, 2, 3, 4], np.int8), np.array([True, True, False, True])])
@pytest.mark.parametrize("returned", [False, True])
def test_average_follows_numpys_dtype(weights, returned):
    x = mg.tensor(dev(X32))
    w = dev(weights) if isinstance(weights, np.ndarray) else weights
    got = np.average(x, axis=1, weights=w, returned=returned)
    want = np.average(X32, axis=1, weights=weights, returned=returned)
    for g, e in zip(got if returned else (got,), want if returned else (want,), strict=True):
        assert g.dtype == e.dtype, (weights, g.dtype, e.dtype)
        assert g.shape == e.shape
        np.testing.assert_allclose(to_np(g), e, rtol=1e-6 if e.dtype == np.float32 else 1e-13)
    assert mg.average(x, 1, weights).dtype == np.average(X32, 1, weights).dtype  # mg's own name too


@pytest.mark.parametrize("xdtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("wdtype", [np.float32, np.float64, np.int64])
def test_average_with_tensor_weights_uses_their_dtype(xdtype, wdtype):
    xn = (np.arange(12).reshape(3, 4) % 5).astype(xdtype)
    wn = np.array([1, 2, 3, 4], dtype=wdtype)
    got, scl = np.average(mg.tensor(dev(xn)), axis=1, weights=mg.tensor(dev(wn)), returned=True)
    want, wscl = np.average(xn, axis=1, weights=wn, returned=True)
    assert (got.dtype, scl.dtype) == (want.dtype, wscl.dtype), (xdtype, wdtype)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-6)
    np.testing.assert_allclose(to_np(scl), wscl, rtol=1e-6)


def test_average_full_weights_keepdims_and_unweighted_dtypes():
    wn = np.random.default_rng(0).uniform(0.5, 1.0, (3, 4))
    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)}):
        got = np.average(mg.tensor(dev(X32)), weights=wn.tolist(), **kw)
        want = np.average(X32, weights=wn.tolist(), **kw)
        assert got.dtype == want.dtype == np.float64 and got.shape == want.shape, kw
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12)
    for xn in (X32, X32.astype(np.float64), np.arange(6).reshape(2, 3)):
        got, scl = np.average(mg.tensor(dev(xn)), axis=0, returned=True)
        want, wscl = np.average(xn, axis=0, returned=True)
        assert (got.dtype, scl.dtype) == (want.dtype, wscl.dtype)
        np.testing.assert_allclose(to_np(scl), wscl)


def test_average_list_weights_gradient_reaches_a_float32_input():
    x = mg.tensor(dev(X32), requires_grad=True)
    avg = np.average(x, axis=1, weights=[0.5, 1.0, 2.0, 0.25])
    assert avg.dtype == np.float64
    avg.sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(to_np(x.grad), np.tile(np.array([0.5, 1.0, 2.0, 0.25]) / 3.75, (3, 1)), rtol=1e-6)
    w = mg.tensor(dev(np.array([0.5, 1.0, 2.0, 0.25])), requires_grad=True)
    x64 = mg.tensor(dev(X32.astype(np.float64)), requires_grad=True)
    assert mg.gradcheck(lambda a, b: np.average(a, axis=1, weights=b), [x64, w], modes=MODES, order=2)


# -- eigh / eigvalsh with UPLO="U" ----------------------------------------------------------------


def _upper_only(n=3, seed=0, batch=()):
    """Upper triangle: a symmetric matrix with well separated eigenvalues; lower: noise (never read)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    s = a + np.swapaxes(a, -1, -2) + np.diag(np.arange(n) * 3.0)
    return s + np.tril(rng.standard_normal(batch + (n, n)) * 5, -1)


def _tsym_upper(t):
    return torch.triu(t) + torch.triu(t, 1).mT


@pytest.mark.parametrize("call", [
    lambda a: np.linalg.eigh(a, "U"), lambda a: np.linalg.eigh(a, UPLO="U"), lambda a: np.linalg.eigh(a, "u"),
    lambda a: mg.linalg.eigh(a, UPLO="U")])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_eigh_upper_reads_the_upper_triangle_as_numpy(call, batch):
    an = _upper_only(batch=batch)
    w, V = call(mg.tensor(dev(an)))
    wn, Vn = np.linalg.eigh(an, UPLO="U")
    np.testing.assert_allclose(to_np(w), wn, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(V), Vn, rtol=1e-12, atol=1e-12)  # NumPy's signs too
    np.testing.assert_allclose(to_np(np.linalg.eigvalsh(mg.tensor(dev(an)), UPLO="U")), wn, rtol=1e-12)
    assert not np.allclose(np.linalg.eigvalsh(an), wn)  # the lower triangle says something else


def test_eigh_refuses_another_uplo():
    for f in (np.linalg.eigh, np.linalg.eigvalsh):
        with pytest.raises(ValueError, match="UPLO must be 'L' or 'U'"):
            f(mg.tensor(dev(np.eye(2))), "X")


def test_eigh_upper_gradient_is_the_upper_triangles_and_folds_torchs():
    """torch.linalg.eigh(A, UPLO="U") returns its symmetric gradient G on any input; the function
    NumPy computes reads the upper triangle alone, so its gradient is triu(G) + triu(G, 1) (zero
    below the diagonal). Both agree wherever the input is symmetric by construction."""
    an = _upper_only()
    c = np.array([1.0, -2.0, 0.5])
    cv = np.random.default_rng(4).standard_normal((3, 3))

    def loss(w, V, lib):
        c_, m_ = (mg.tensor(dev(c)), mg.tensor(dev(cv))) if lib is mg else (_th(c), _th(cv))
        return (w * w * c_).sum() + ((V * c_) @ V.T * m_).sum()  # gauge-invariant: V diag(c) Vᵀ

    a = mg.tensor(dev(an), requires_grad=True)
    loss(*np.linalg.eigh(a, "U"), mg).backward()
    at = _th(an, True)
    loss(*torch.linalg.eigh(at, UPLO="U"), torch).backward()
    G = at.grad.numpy()
    np.testing.assert_allclose(to_np(a.grad), np.triu(G) + np.triu(G, 1), rtol=1e-10, atol=1e-12)
    assert np.all(np.tril(to_np(a.grad), -1) == 0)
    at2 = _th(an, True)  # the same as torch differentiating the symmetric matrix of the upper triangle
    loss(*torch.linalg.eigh(_tsym_upper(at2)), torch).backward()
    np.testing.assert_allclose(to_np(a.grad), at2.grad.numpy(), rtol=1e-10, atol=1e-12)
    # a symmetric input built upstream: PyTorch's gradient exactly
    bn = np.random.default_rng(5).standard_normal((3, 3))
    b, bt = mg.tensor(dev(bn), requires_grad=True), _th(bn, True)
    loss(*np.linalg.eigh(b @ b.T + b.T @ b, UPLO="U"), mg).backward()
    loss(*torch.linalg.eigh(bt @ bt.T + bt.T @ bt, UPLO="U"), torch).backward()
    np.testing.assert_allclose(to_np(b.grad), bt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_eigh_upper_tangent_as_torch_func_jvp():
    an, un = _upper_only(batch=(2,)), np.random.default_rng(6).standard_normal((2, 3, 3))
    c = np.array([1.0, -2.0, 0.5])

    def f_mg(t):
        w, V = np.linalg.eigh(t, UPLO="U")
        return w, (V * mg.tensor(dev(c))) @ V.mT

    def f_th(t):
        w, V = torch.linalg.eigh(_tsym_upper(t))
        return w, (V * _th(c)) @ V.mT

    _, (dw, dP) = mg.func.jvp(f_mg, (mg.tensor(dev(an)),), (mg.tensor(dev(un)),))
    _, (tdw, tdP) = torch.func.jvp(f_th, (_th(an),), (_th(un),))
    np.testing.assert_allclose(to_np(dw), tdw.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(dP), tdP.numpy(), rtol=1e-10, atol=1e-12)
    _, low = mg.func.jvp(lambda t: np.linalg.eigvalsh(t, "U"), (mg.tensor(dev(an)),),
                         (mg.tensor(dev(np.tril(un, -1))),))
    assert np.all(to_np(low) == 0)  # a tangent below the diagonal moves nothing


def test_eigh_upper_gradchecks_in_both_modes_to_order_2():
    a = mg.tensor(dev(_upper_only()), requires_grad=True)
    ab = mg.tensor(dev(_upper_only(n=2, seed=1, batch=(2,))), requires_grad=True)
    c = mg.tensor(dev(np.array([1.0, -2.0, 0.5])))

    def eigvals_sq(t):
        return (np.linalg.eigvalsh(t, UPLO="U") ** 2).sum()

    def projector(t):
        w, V = np.linalg.eigh(t, "U")
        return (V * c[: V.shape[-1]]) @ V.mT + w[..., None]

    for t in (a, ab):
        assert mg.gradcheck(eigvals_sq, [t], modes=MODES, order=2)
        assert mg.gradcheck(projector, [t], modes=MODES, order=2)
