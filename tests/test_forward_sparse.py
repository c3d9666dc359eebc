"""Forward mode through sparse tensors: a sparse primal's tangent is sparse with the primal's
indices (``make_dual`` / ``unpack_dual`` on COO and CSR), and the tangents of ``mg.sparse.sum``
and sparse matmul match the dense computation's tangent."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import sparse as sp
from minigrad.autograd import forward_ad as fwAD

from conftest import to_np

IDX = np.array([[0, 1, 1, 2, 0, 2], [2, 0, 2, 1, 2, 3]])  # (0, 2) twice: uncoalesced


def _pair(layout="coo", block=(), seed=0, idx=IDX, shape=(3, 4)):
    """A sparse primal and a sparse tangent with its indices (float64, on the test device)."""
    rng = np.random.default_rng(seed)
    n = idx.shape[1]
    p = sp.coo_tensor(idx, rng.standard_normal((n,) + block), shape=shape + block)
    t = sp.coo_tensor(idx, rng.standard_normal((n,) + block), shape=shape + block)
    if layout == "csr":
        p = p.coalesce().to_sparse_csr()
        t = sp.csr_tensor(p.crow_indices, p.col_indices, rng.standard_normal(tuple(p.values.shape)), p.shape)
    return p, t


def _dense(x):
    return x.to_dense() if sp.is_sparse(x) else x


def _tangents(fn, args, tangents):
    """``fn(*args)``'s primal and tangent (densified), the tangents given per argument (None: none)."""
    with fwAD.dual_level():
        duals = [a if t is None else fwAD.make_dual(a, t) for a, t in zip(args, tangents, strict=True)]
        p, t = fwAD.unpack_dual(fn(*duals))
    assert t is not None
    if sp.is_sparse(p):  # the tangent of a sparse result is sparse with the result's indices
        assert sp.is_sparse(t) and t.layout == p.layout and t.shape == p.shape
        np.testing.assert_array_equal(to_np(t.to_sparse_coo().indices), to_np(p.to_sparse_coo().indices))
    return to_np(_dense(p)), to_np(_dense(t))


def _same_as_dense(sparse_fn, dense_fn, args, tangents):
    """The sparse computation's primal and tangent equal the dense one's on the densified inputs."""
    p, t = _tangents(sparse_fn, args, tangents)
    dp, dt = _tangents(dense_fn, [_dense(a) for a in args], [None if u is None else _dense(u) for u in tangents])
    np.testing.assert_allclose(p, dp, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t, dt, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_make_dual_and_unpack_dual_keep_the_indices(layout):
    p, t = _pair(layout)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t)
        assert d.layout == layout and d.shape == p.shape
        primal, tangent = fwAD.unpack_dual(d)
        assert sp.is_sparse(primal) and sp.is_sparse(tangent) and tangent.layout == layout
        np.testing.assert_array_equal(to_np(primal.values), to_np(p.values))
        np.testing.assert_array_equal(to_np(tangent.values), to_np(t.values))
        np.testing.assert_array_equal(to_np(tangent.to_dense()), to_np(t.to_dense()))
        assert fwAD.unpack_dual(p).tangent is None  # the primal itself carries none
    assert fwAD.unpack_dual(d).tangent is None  # dropped with its level
    assert fwAD.unpack_dual(d).primal is d


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_coo(axis, keepdims):
    p, t = _pair("coo")
    _same_as_dense(lambda s: sp.sum(s, axis=axis, keepdims=keepdims),
                   lambda x: mg.sum(x, axis=axis, keepdims=keepdims), [p], [t])


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2)])
def test_sum_hybrid_coo(axis):
    p, t = _pair("coo", block=(2,))
    _same_as_dense(lambda s: sp.sum(s, axis=axis), lambda x: mg.sum(x, axis=axis), [p], [t])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_sum_csr(axis):
    p, t = _pair("csr")
    _same_as_dense(lambda s: sp.sum(s, axis=axis), lambda x: mg.sum(x, axis=axis), [p], [t])


def test_sum_batched_csr():
    idx = np.array([[0, 0, 1, 1], [0, 1, 0, 2], [2, 0, 1, 1]])
    p, t = _pair("csr", idx=idx, shape=(2, 3, 3))
    assert p.sparse_dim == 3
    for axis in (None, 0, -1, (1, 2)):
        _same_as_dense(lambda s, axis=axis: sp.sum(s, axis=axis), lambda x, axis=axis: mg.sum(x, axis=axis), [p], [t])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_matmul(layout):
    p, t = _pair(layout)
    rng = np.random.default_rng(5)
    b, tb = mg.tensor(rng.standard_normal((4, 2))), mg.tensor(rng.standard_normal((4, 2)))
    v, tv = mg.tensor(rng.standard_normal(4)), mg.tensor(rng.standard_normal(4))
    a, ta = mg.tensor(rng.standard_normal((5, 3))), mg.tensor(rng.standard_normal((5, 3)))
    b3, tb3 = mg.tensor(rng.standard_normal((2, 4, 2))), mg.tensor(rng.standard_normal((2, 4, 2)))
    for tangents in ([t, tb], [t, None], [None, tb]):  # both, the sparse one alone, the dense one alone
        _same_as_dense(lambda s, x: s @ x, lambda s, x: s @ x, [p, b], tangents)
    _same_as_dense(lambda s, x: sp.matmul(s, x), lambda s, x: s @ x, [p, v], [t, tv])      # (R, K) @ (K,)
    _same_as_dense(lambda s, x: s @ x, lambda s, x: s @ x, [p, b3], [t, tb3])              # (R, K) @ (B, K, N)
    _same_as_dense(lambda x, s: x @ s, lambda x, s: x @ s, [a, p], [ta, t])                # dense @ sparse


def test_batched_sparse_matmul():
    idx = np.array([[0, 0, 1, 1], [0, 1, 0, 2], [2, 0, 1, 1]])
    rng = np.random.default_rng(2)
    for layout in ("coo", "csr"):
        p, t = _pair(layout, idx=idx, shape=(2, 3, 3))
        b, tb = mg.tensor(rng.standard_normal((2, 3, 4))), mg.tensor(rng.standard_normal((2, 3, 4)))
        _same_as_dense(lambda s, x: s @ x, lambda s, x: s @ x, [p, b], [t, tb])


def test_through_conversions_and_coalesce():
    p, t = _pair("coo")
    _same_as_dense(lambda s: s.coalesce().to_sparse_csr().to_dense() * 2.0, lambda x: x * 2.0, [p], [t])
    _same_as_dense(lambda s: sp.sum(s.to_sparse_csr(), axis=1), lambda x: mg.sum(x, axis=1), [p], [t])


def test_second_order_through_sparse_matmul():
    """Forward over forward: the mixed derivative of s @ b along (ts, tb) is ts @ tb."""
    p, t = _pair("coo")
    rng = np.random.default_rng(7)
    b, tb = mg.tensor(rng.standard_normal((4, 2))), mg.tensor(rng.standard_normal((4, 2)))
    with fwAD.dual_level():
        s = fwAD.make_dual(p, t)
        with fwAD.dual_level():
            y = sp.sum(s @ fwAD.make_dual(b, tb) * (s @ b), axis=None)
            _, inner = fwAD.unpack_dual(y)
        _, mixed = fwAD.unpack_dual(inner)
    ps, ts, bd, tbd = to_np(p.to_dense()), to_np(t.to_dense()), to_np(b), to_np(tb)
    # y = sum((S b) * (S b)) with b perturbed in the first factor: d/db = sum((S tb) * (S b)),
    # then d/dS along T: sum((T tb) * (S b) + (S tb) * (T b))
    want = ((ts @ tbd) * (ps @ bd) + (ps @ tbd) * (ts @ bd)).sum()
    np.testing.assert_allclose(to_np(mixed), want, rtol=1e-12)


def test_forward_over_reverse_through_sparse_sum():
    """A Hessian-vector product through sparse ops: grad inside a dual level."""
    p, t = _pair("coo")
    p = p.coalesce().detach().requires_grad_()
    t = sp.coo_tensor(p.indices, np.random.default_rng(3).standard_normal(p.nnz), shape=p.shape)
    with fwAD.dual_level():
        s = fwAD.make_dual(p, t)
        r = sp.sum(s, axis=1)  # a sparse (3,) vector
        (g,) = mg.grad(mg.sum(r.values ** 3), s.values)
        _, hv = fwAD.unpack_dual(g)
    # d/dv sum(r^3) = 3 r[row]^2; its derivative along t: 6 r[row] * (sum of t over the row)
    rows = to_np(p.indices)[0]
    vals, tv = to_np(p.values), to_np(t.values)
    r_np = np.bincount(rows, vals, minlength=3)
    tr = np.bincount(rows, tv, minlength=3)
    np.testing.assert_allclose(to_np(hv), 6 * r_np[rows] * tr[rows], rtol=1e-12)


def test_make_dual_refuses_a_tangent_with_other_indices_or_shape():
    p, t = _pair("coo")
    other = sp.coo_tensor(IDX[:, :5], np.ones(5), shape=(3, 4))
    with fwAD.dual_level():
        for bad, exc in ((other, ValueError), (sp.coo_tensor(IDX, np.ones(6), shape=(3, 5)), ValueError),
                         (t.coalesce().to_sparse_csr(), ValueError), (t.values, TypeError),
                         (sp.coo_tensor(IDX[::-1], np.ones(6), shape=(4, 4)), ValueError)):
            with pytest.raises(exc, match="make_dual") as info:
                fwAD.make_dual(p, bad)
            msg = str(info.value)
            assert "sparse coo tensor of shape (3, 4) with nnz 6" in msg, msg  # the primal
            assert "the tangent a" in msg, msg
        with pytest.raises(ValueError, match="other indices"):
            fwAD.make_dual(p, sp.coo_tensor(IDX[::-1][:, :6] % 3, np.ones(6), shape=(3, 4)))
        with pytest.raises(TypeError, match="sparse primal"):
            fwAD.make_dual(p.to_dense(), t)
        with pytest.raises(TypeError, match="dtype"):
            fwAD.make_dual(p, sp.coo_tensor(IDX, np.ones(6, dtype=np.float32), shape=(3, 4)))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_tensor_built_from_dual_values_keeps_their_tangent(layout):
    """coo_tensor / csr_tensor over a dual values Tensor: the sparse tensor carries its tangent."""
    p, t = _pair(layout)
    with fwAD.dual_level():
        v = fwAD.make_dual(p.values, t.values)
        if layout == "coo":
            s = sp.coo_tensor(p.indices, v * 2.0, shape=p.shape)
        else:
            s = sp.csr_tensor(p.crow_indices, p.col_indices, v * 2.0, p.shape)
        primal, tangent = fwAD.unpack_dual(sp.sum(s, axis=0))
        assert fwAD.unpack_dual(sp.coo_tensor(p.to_sparse_coo().indices, p.values, p.shape)).tangent is None
    np.testing.assert_allclose(to_np(_dense(tangent)), 2 * to_np(t.to_dense()).sum(axis=0), rtol=1e-12)
