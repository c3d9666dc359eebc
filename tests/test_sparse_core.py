"""Sparse containers: construction and validation, coalescing, conversions, SciPy, matmul, autograd glue."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import sparse as sp

from conftest import to_np


def masked(shape, rng, density=0.5):
    x = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return x * (rng.random(shape) < density)


# ---------------------------------------------------------------------------
# construction
# ---------------------------------------------------------------------------

def test_coo_attributes():
    s = sp.coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], shape=(2, 3))
    assert s.layout == "coo" and s.shape == (2, 3) and s.ndim == 2 and s.nnz == 3
    assert s.sparse_dim == 2 and s.dense_dim == 0
    assert s.dtype == mg.get_default_dtype()
    assert isinstance(s.values, mg.Tensor) and isinstance(s.indices, mg.Tensor)
    assert s.indices.dtype == np.int64 and s.indices.shape == (2, 3)
    assert not s.requires_grad and s.grad is None
    np.testing.assert_array_equal(to_np(s.to_dense()), [[0, 0, 3], [4, 0, 5]])
    assert "sparse_coo_tensor" in repr(s) and "nnz=3" in repr(s)
    with pytest.raises(AttributeError, match="to_sparse_csr"):
        s.crow_indices  # noqa: B018


def test_coo_shape_inferred_and_hybrid():
    s = sp.coo_tensor([[0, 3]], np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert s.shape == (4, 2) and s.sparse_dim == 1 and s.dense_dim == 1
    np.testing.assert_array_equal(to_np(s.to_dense()), [[1, 2], [0, 0], [0, 0], [3, 4]])
    e = sp.coo_tensor([[], []], [])
    assert e.shape == (0, 0) and e.nnz == 0
    e2 = sp.coo_tensor(np.zeros((2, 0), dtype=np.int64), np.zeros(0), shape=(5, 6))
    assert e2.to_dense().shape == (5, 6)


def test_csr_attributes_and_batched():
    c = sp.csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    assert c.layout == "csr" and c.sparse_dim == 2 and c.nnz == 3
    np.testing.assert_array_equal(to_np(c.to_dense()), [[1, 0, 2], [0, 3, 0]])
    # batched, different nnz per batch
    b = sp.csr_tensor([[0, 1, 1], [0, 2, 3]], [1, 0, 1, 0], [1.0, 2.0, 3.0, 4.0], (2, 2, 2))
    assert b.sparse_dim == 3 and b.shape == (2, 2, 2)
    np.testing.assert_array_equal(to_np(b.to_dense()), [[[0, 1], [0, 0]], [[2, 3], [4, 0]]])
    # PyTorch's batched form: the same nnz per batch, col (batch, k)
    t = sp.csr_tensor([[0, 1, 2], [0, 0, 2]], [[1, 0], [0, 1]], [[1.0, 2.0], [3.0, 4.0]], (2, 2, 2))
    np.testing.assert_array_equal(to_np(t.to_dense()), [[[0, 1], [2, 0]], [[0, 0], [3, 4]]])
    assert "crow_indices" in repr(c)
    with pytest.raises(AttributeError):
        c.indices  # noqa: B018


def test_requires_grad_and_leaf():
    s = sp.coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True)
    assert s.requires_grad and s.is_leaf and s.grad_fn is None
    v = mg.tensor([1.0, 2.0])
    s2 = sp.coo_tensor([[0, 1]], v, (3,))
    s2.requires_grad_()
    assert s2.requires_grad and not v.requires_grad  # the caller's tensor is left alone
    with pytest.raises(TypeError, match="floating"):
        sp.coo_tensor([[0]], np.array([1]), (2,), requires_grad=True)


def test_values_from_a_graph_carry_gradients():
    w = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = sp.coo_tensor([[0, 1, 1], [1, 0, 2]], w * 2, (2, 3))
    assert s.requires_grad and not s.is_leaf
    sp.sum(s).backward()
    np.testing.assert_allclose(to_np(w.grad), [2.0, 2.0, 2.0])


# ---------------------------------------------------------------------------
# validation: ValueError / IndexError naming which and where
# ---------------------------------------------------------------------------

def test_coo_validation():
    with pytest.raises(IndexError, match=r"indices\[1, 2\] = 3 .*dim 1"):
        sp.coo_tensor([[0, 1, 1], [0, 1, 3]], [1.0, 2.0, 3.0], (2, 3))
    with pytest.raises(IndexError, match=r"indices\[0, 1\] = -1"):
        sp.coo_tensor([[0, -1], [0, 1]], [1.0, 2.0], (2, 3))
    with pytest.raises(IndexError, match="negative"):
        sp.coo_tensor([[0, -1]], [1.0, 2.0])
    with pytest.raises(ValueError, match="nnz mismatch.*3.*2"):
        sp.coo_tensor([[0, 1, 1]], [1.0, 2.0], (3,))
    with pytest.raises(ValueError, match="2 dims"):
        sp.coo_tensor([0, 1], [1.0, 2.0], (3,))
    with pytest.raises(ValueError, match="integer") as e:
        sp.coo_tensor([[0.0, 1.0]], [1.0, 2.0], (3,))
    assert isinstance(e.value, TypeError)  # IndexDtypeError is both
    with pytest.raises(ValueError, match="has 3 dims"):
        sp.coo_tensor([[0, 1]], [1.0, 2.0], (3, 4, 5))
    with pytest.raises(ValueError, match="dense part"):
        sp.coo_tensor([[0, 1]], np.ones((2, 3)), (3, 4))
    with pytest.raises(ValueError, match="negative"):
        sp.coo_tensor([[0, 1]], [1.0, 2.0], (-3,))
    with pytest.raises(ValueError, match="at least 1 dim"):
        sp.coo_tensor(np.zeros((0, 1), dtype=np.int64), np.float64(1.0), ())
    with pytest.raises(IndexError, match="size 0"):
        sp.coo_tensor([[0]], [1.0], (0,))
    # uint64 indices past int64's range: named with their own value, not a wrapped one
    with pytest.raises(IndexError, match=r"indices\[0, 1\] = 9223372036854775813"):
        sp.coo_tensor(np.array([[1, 2 ** 63 + 5]], dtype=np.uint64), [1.0, 2.0], (3,))
    assert sp.coo_tensor(np.array([[1, 2]], dtype=np.uint64), [1.0, 2.0], (3,)).indices.dtype == np.int64


def test_csr_validation():
    ok = dict(crow_indices=[0, 2, 3], col_indices=[0, 2, 1], values=[1.0, 2.0, 3.0], shape=(2, 3))
    sp.csr_tensor(**ok)

    def bad(**kw):
        return sp.csr_tensor(**{**ok, **kw})

    with pytest.raises(ValueError, match=r"crow_indices\[0\] = 1 must be 0"):
        bad(crow_indices=[1, 2, 3])
    with pytest.raises(ValueError, match=r"non-decreasing.*crow_indices\[2\] = 1 < crow_indices\[1\] = 2"):
        bad(crow_indices=[0, 2, 1], col_indices=[0], values=[1.0])
    with pytest.raises(ValueError, match="rows \\+ 1 = 3"):
        bad(crow_indices=[0, 3])
    with pytest.raises(ValueError, match=r"crow_indices\[-1\] = 2 must equal nnz = 3"):
        bad(crow_indices=[0, 1, 2])
    with pytest.raises(IndexError, match=r"col_indices\[1\] = 3"):
        bad(col_indices=[0, 3, 1])
    with pytest.raises(ValueError, match="nnz mismatch"):
        bad(values=[1.0, 2.0])
    with pytest.raises(ValueError, match="integer"):
        bad(col_indices=[0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="has 3 dims"):
        bad(shape=(2, 3, 4))
    with pytest.raises(ValueError, match=r"crow_indices\[1, 2\] = 0 < crow_indices\[1, 1\] = 1"):
        sp.csr_tensor([[0, 1, 1], [0, 1, 0]], [0], [1.0], (2, 2, 2))
    with pytest.raises(ValueError, match=r"crow_indices\[1, 0\] = 1 must be 0"):
        sp.csr_tensor([[0, 1, 1], [1, 1, 1]], [0], [1.0], (2, 2, 2))
    with pytest.raises(ValueError, match="batches"):
        sp.csr_tensor([[0, 1, 1]], [0], [1.0], (2, 2, 2))
    with pytest.raises(ValueError, match="sum of crow_indices"):
        sp.csr_tensor([[0, 1, 1], [0, 1, 1]], [0], [1.0], (2, 2, 2))


# ---------------------------------------------------------------------------
# coalesce, conversions
# ---------------------------------------------------------------------------

def test_coalesce():
    s = sp.coo_tensor([[1, 0, 1, 0], [2, 1, 2, 0]], [1.0, 2.0, 3.0, 0.0], (2, 3), requires_grad=True)
    assert not s.is_coalesced
    c = s.coalesce()
    assert c.is_coalesced and c.nnz == 3
    np.testing.assert_array_equal(to_np(c.indices), [[0, 0, 1], [0, 1, 2]])
    np.testing.assert_allclose(to_np(c.values), [0.0, 2.0, 4.0])  # the stored zero stays
    assert c.coalesce() is c
    (c.to_dense() * mg.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
    np.testing.assert_allclose(to_np(s.grad.values), [5.0, 1.0, 5.0, 0.0])
    assert sp.coo_tensor([[0, 2, 5]], [1.0, 1.0, 1.0], (6,)).is_coalesced
    assert not sp.coo_tensor([[0, 2, 2]], [1.0, 1.0, 1.0], (6,)).is_coalesced


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5)])
def test_conversions_round_trip(shape):
    rng = np.random.default_rng(0)
    x = masked(shape, rng)
    t = mg.tensor(x)
    coo = t.to_sparse_coo()
    csr = t.to_sparse_csr()
    assert coo.is_coalesced and csr.is_coalesced
    for s in (coo, csr, coo.to_sparse_csr(), csr.to_sparse_coo(), csr.to_sparse_coo().to_sparse_csr()):
        np.testing.assert_array_equal(to_np(s.to_dense()), x)
    np.testing.assert_array_equal(to_np(csr.to_sparse_coo().indices), to_np(coo.indices))
    assert csr.to_sparse_coo().values is csr.values  # no copy, same graph
    assert sp.to_sparse_coo(coo) is coo and sp.to_sparse_csr(csr) is csr
    with pytest.raises(ValueError, match="2-D"):
        mg.tensor(np.ones(3)).to_sparse_csr()
    with pytest.raises(ValueError, match="sparse dims"):
        mg.tensor(np.ones((2, 2, 2, 2))).to_sparse_coo().to_sparse_csr()


def test_to_sparse_hybrid_and_sparse_dim():
    x = np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [2.0, 3.0]]])
    s = mg.tensor(x).to_sparse_coo(sparse_dim=2)
    assert s.nnz == 2 and s.values.shape == (2, 2)
    np.testing.assert_array_equal(to_np(s.to_dense()), x)
    s1 = s.to_sparse_coo(3)
    assert s1.sparse_dim == 3 and s1.nnz == 3
    np.testing.assert_array_equal(to_np(s1.to_dense()), x)
    s0 = mg.tensor(x).to_sparse_coo(0)
    assert s0.sparse_dim == 0 and s0.nnz == 1
    np.testing.assert_array_equal(to_np(s0.to_dense()), x)
    with pytest.raises(ValueError, match="sparse_dim"):
        mg.tensor(x).to_sparse_coo(4)


def test_conversions_are_differentiable():
    rng = np.random.default_rng(1)
    x = mg.tensor(masked((3, 4), rng), requires_grad=True)
    w = mg.tensor(rng.standard_normal((3, 4)))
    (x.to_sparse_csr().to_sparse_coo().to_dense() * w).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), to_np(w) * (to_np(x) != 0))
    c = x.detach().to_sparse_csr().requires_grad_()
    (c.to_sparse_coo().to_sparse_csr().to_dense() * w).sum().backward()
    np.testing.assert_allclose(to_np(c.grad.to_dense()), to_np(w) * (to_np(x) != 0))
    assert c.grad.layout == "csr"


# ---------------------------------------------------------------------------
# SciPy
# ---------------------------------------------------------------------------

def test_scipy_round_trip():
    ssp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(2)
    m = ssp.random(6, 7, density=0.3, format="csr", random_state=3)
    c = sp.from_scipy(m)
    assert c.layout == "csr"
    np.testing.assert_allclose(to_np(c.to_dense()), m.toarray())
    back = c.to_scipy()
    assert back.format == "csr"
    np.testing.assert_allclose(back.toarray(), m.toarray())
    coo = sp.from_scipy(m.tocoo(), requires_grad=True)
    assert coo.layout == "coo" and coo.requires_grad
    np.testing.assert_allclose(coo.to_scipy().toarray(), m.toarray())
    csc = sp.from_scipy(ssp.csc_matrix(m))
    assert csc.layout == "coo"
    np.testing.assert_allclose(to_np(csc.to_dense()), m.toarray())
    # sums agree with SciPy's
    np.testing.assert_allclose(to_np(sp.sum(c, axis=0).to_dense()), np.asarray(m.sum(axis=0)).ravel())
    np.testing.assert_allclose(to_np(sp.sum(c, axis=1).to_dense()), np.asarray(m.sum(axis=1)).ravel())
    with pytest.raises(TypeError):
        sp.from_scipy(np.ones((2, 2)))
    with pytest.raises(ValueError, match="2-D"):
        mg.tensor(rng.standard_normal((2, 2, 2))).to_sparse_coo().to_scipy()


def test_scipy_is_optional(monkeypatch):
    # without SciPy only the interop functions fail, with an ImportError that says what to install
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    s = sp.coo_tensor([[0, 1]], [1.0, 2.0], (3,))
    assert sp.sum(s).item() == 3.0
    with pytest.raises(ImportError, match="pip install"):
        sp.coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2)).to_scipy()
    with pytest.raises(ImportError, match="pip install"):
        sp.from_scipy(object())


# ---------------------------------------------------------------------------
# backward plumbing
# ---------------------------------------------------------------------------

def test_backward_with_sparse_grad_of_another_pattern():
    s = sp.coo_tensor([[0, 1, 2], [1, 1, 0]], [1.0, 2.0, 3.0], (3, 2), requires_grad=True)
    # upstream gradient stores (1, 1) and (2, 1) only, uncoalesced: (1, 1) twice
    g = sp.coo_tensor([[1, 2, 1], [1, 1, 1]], [5.0, 7.0, 1.0], (3, 2))
    s.backward(g)
    np.testing.assert_allclose(to_np(s.grad.values), [0.0, 6.0, 0.0])
    s.grad = None
    s.backward(g.to_sparse_csr())
    np.testing.assert_allclose(to_np(s.grad.values), [0.0, 6.0, 0.0])
    s.grad = None
    s.backward(np.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(to_np(s.grad.values), [1.0, 3.0, 4.0])
    with pytest.raises(RuntimeError, match="shape"):
        s.backward(mg.ones(2, 3))
    with pytest.raises(RuntimeError, match="one-element"):
        s.backward()


def test_backward_sparse_grad_hybrid_mix():
    # a hybrid output (sparse_dim 1) and a fully sparse upstream gradient
    x = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]])
    s = mg.tensor(x).to_sparse_coo(1).detach().requires_grad_()
    g = sp.coo_tensor([[0, 2, 1], [1, 0, 0]], [10.0, 20.0, 30.0], (3, 2))
    s.backward(g)
    np.testing.assert_allclose(to_np(s.grad.values), [[0.0, 10.0], [20.0, 0.0]])
    # and the other way: a fully sparse output, a hybrid gradient
    t = mg.tensor(x).to_sparse_coo().detach().requires_grad_()
    t.backward(mg.tensor(np.arange(6.0).reshape(3, 2)).to_sparse_coo(1))
    np.testing.assert_allclose(to_np(t.grad.values), [0.0, 1.0, 4.0])


def test_autograd_grad_returns_sparse():
    s = sp.coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 2.0, 3.0], (2, 2), requires_grad=True)
    out = (sp.sum(s, axis=0).to_dense() ** 2).sum()
    (g,) = mg.grad(out, s)
    assert g.layout == "coo" and g.nnz == 3
    # column sums: col0 = 2, col1 = 4 -> d/dv = 2 * colsum
    np.testing.assert_allclose(to_np(g.values), [8.0, 4.0, 8.0])
    c = s.detach().to_sparse_csr().requires_grad_()
    (gc,) = mg.grad(sp.sum(c), c)
    assert gc.layout == "csr"


def test_detach_astype_to():
    s = sp.coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True)
    d = s.detach()
    assert not d.requires_grad and d.values.data is s.values.data
    f = s.astype(np.float64)
    assert f.dtype == np.float64
    sp.sum(f).backward()
    assert s.grad.dtype == s.dtype
    assert s.to("cpu").device == "cpu" and s.cpu().nnz == 2


# ---------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("nshape", [(5, 3), (5,), (2, 5, 3)])
def test_matmul_2d(layout, nshape):
    rng = np.random.default_rng(4)
    x = masked((4, 5), rng)
    t = mg.tensor(x)
    s = (t.to_sparse_coo() if layout == "coo" else t.to_sparse_csr()).detach().requires_grad_()
    b = mg.tensor(rng.standard_normal(nshape), requires_grad=True)
    out = s @ b
    xd = mg.tensor(x, requires_grad=True)
    bd = mg.tensor(to_np(b), requires_grad=True)
    ref = xd @ bd
    np.testing.assert_allclose(to_np(out), to_np(ref), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(ref.shape)
    out.backward(mg.tensor(g))
    ref.backward(mg.tensor(g))
    np.testing.assert_allclose(to_np(b.grad), to_np(bd.grad), rtol=1e-12, atol=1e-12)
    assert s.grad.layout == layout
    np.testing.assert_allclose(to_np(s.grad.to_dense()), to_np(xd.grad) * (x != 0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("nshape", [(2, 5, 3), (5, 3), (5,)])
def test_matmul_batched(layout, nshape):
    rng = np.random.default_rng(5)
    x = masked((2, 4, 5), rng)
    t = mg.tensor(x)
    s = (t.to_sparse_coo() if layout == "coo" else t.to_sparse_csr()).detach().requires_grad_()
    bn = rng.standard_normal(nshape)
    b = mg.tensor(bn, requires_grad=True)
    out = sp.matmul(s, b)
    ref = np.matmul(x, bn)
    np.testing.assert_allclose(to_np(out), ref, rtol=1e-12, atol=1e-12)
    assert mg.gradcheck(lambda u, v: sp.matmul(u, v), (s, b))


def test_dense_at_sparse_and_gradcheck():
    rng = np.random.default_rng(6)
    x = masked((4, 5), rng)
    s = mg.tensor(x).to_sparse_csr().detach().requires_grad_()
    a = mg.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    np.testing.assert_allclose(to_np(sp.matmul(a, s)), to_np(a) @ x, rtol=1e-12)
    np.testing.assert_allclose(to_np(np.ones(4) @ s), np.ones(4) @ x, rtol=1e-12)  # NumPy defers to us
    v = mg.tensor(rng.standard_normal(4), requires_grad=True)
    assert mg.gradcheck(lambda u, w: sp.matmul(w, u), (s, a))
    assert mg.gradcheck(lambda u, w: sp.matmul(w, u), (s, v))
    assert mg.gradcheck(lambda u, w: sp.matmul(u, w), (s.to_sparse_coo(), mg.tensor(rng.standard_normal((5, 2)), requires_grad=True)))
    assert mg.gradgradcheck(lambda u, w: sp.matmul(u, w), (s, mg.tensor(rng.standard_normal((5, 2)), requires_grad=True)))


def test_matmul_errors():
    s = sp.coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(ValueError, match="not aligned"):
        s @ mg.ones(3, 2)
    with pytest.raises(TypeError, match="sparse @ sparse"):
        sp.matmul(s, s)
    with pytest.raises(ValueError, match="hybrid"):
        mg.tensor(np.ones((2, 2))).to_sparse_coo(1) @ mg.ones(2, 2)
    with pytest.raises(ValueError, match="2-D or 3-D"):
        sp.coo_tensor([[0]], [1.0], (2,)) @ mg.ones(2)
    with pytest.raises(ValueError, match="not aligned"):
        sp.matmul(mg.ones(3, 3), s)


def test_matmul_uncoalesced():
    s = sp.coo_tensor([[0, 1, 0], [1, 0, 1]], [1.0, 2.0, 3.0], (2, 2), requires_grad=True)
    b = mg.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    out = s @ b
    np.testing.assert_allclose(to_np(out), to_np(s.to_dense()) @ to_np(b))
    out.sum().backward()
    np.testing.assert_allclose(to_np(s.grad.values), [7.0, 3.0, 7.0])


def test_dense_ops_refuse_sparse():
    s = sp.coo_tensor([[0]], [1.0], (2,))
    with pytest.raises(TypeError, match="sparse"):
        mg.sum(s)
    with pytest.raises(TypeError, match="sparse"):
        mg.ones(2) + s


def test_tape_of_a_sparse_result_is_its_values_history():
    v = mg.tensor([3.0, 4.0, 5.0], requires_grad=True)
    s = sp.coo_tensor([[0, 1, 1], [2, 0, 2]], v * 2.0, shape=(2, 3)).sum(axis=1)  # still sparse
    ops = [n.op for n in mg.autograd.tape(s)]
    assert ops[0] == "mul" and len(ops) >= 2
    assert "mul" in str(mg.autograd.tape(s))
    assert len(mg.autograd.tape(sp.coo_tensor([[0]], [1.0], shape=(1,)))) == 0
