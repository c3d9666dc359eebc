"""mg.sparse.sum: values and gradients against dense sum, for COO and CSR, every axis rule.

The first block ports the seed design's test plan (paddle.sparse.sum): random masks,
dense vs sparse sum values and gradients (sparse grad == dense grad * mask) for COO
1-D, 2-D, 3-D, 6-D and 9-D over every single axis and None, keepdim on and off; CSR 2-D
and 3-D over -1 and None; dtype int32 variants. Then everything the issue adds.
"""
import time
import tracemalloc

import numpy as np
import pytest

import minigrad as mg
from minigrad import sparse as sp

from conftest import to_np


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def masked(shape, rng, density=0.4, dtype=np.float64, block_dims=0):
    """A dense array with random zeros; with ``block_dims`` the zeros come in whole
    trailing blocks (the pattern of a hybrid tensor). Nonzero values are never 0."""
    x = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    lead = shape[: len(shape) - block_dims]
    keep = rng.random(lead) < density
    x = x * keep.reshape(lead + (1,) * block_dims)
    if dtype is not None and np.dtype(dtype).kind in "iub":
        x = np.round(x * 3).astype(dtype)
    else:
        x = x.astype(dtype)
    return x


def densify(r):
    return r.to_dense() if sp.is_sparse(r) else r


def coords(s):
    """Host coordinates (sparse_dim, nnz) of any sparse tensor, in stored order."""
    return to_np(s.to_sparse_coo().indices)


def at_coords(a, c):
    """a's blocks at coordinates c (sparse_dim, nnz): (nnz, *dense_shape)."""
    if c.shape[0] == 0:
        return np.broadcast_to(a, (c.shape[1],) + a.shape)
    return a[tuple(c)]


def expand_grad(g, shape, axes, keepdims):
    """The dense gradient of a sum: g broadcast back over the reduced axes."""
    g = np.asarray(g)
    if not keepdims:
        g = np.expand_dims(g, axes) if axes else g
    return np.broadcast_to(g, shape)


def norm_axes(axis, ndim):
    return mg.ops.reduce.normalize_axis(axis, ndim)


def check_sum(s, x, axis, keepdims=False, dtype=None, rng=None, upstream="dense", rtol=1e-10):
    """Compare sparse.sum(s) with np.sum(x) (values, shape, dtype) and, for a floating
    result, the sparse gradient with dense grad * mask (at the stored entries)."""
    rng = rng or np.random.default_rng(1)
    r = sp.sum(s, axis=axis, dtype=dtype, keepdims=keepdims)
    ref = np.sum(x, axis=axis if axis is None else tuple(np.atleast_1d(axis)) if not isinstance(axis, int) else axis,
                 keepdims=keepdims, dtype=dtype)
    ref = np.asarray(ref)
    # the dense reference of the library itself agrees with NumPy
    dref = mg.sum(mg.tensor(x), axis=axis, keepdims=keepdims, dtype=dtype)
    assert dref.shape == ref.shape
    rd = densify(r)
    assert rd.shape == ref.shape, (axis, keepdims, rd.shape, ref.shape)
    assert rd.dtype == ref.dtype == dref.dtype, (rd.dtype, ref.dtype)
    np.testing.assert_allclose(to_np(rd), ref, rtol=rtol, atol=1e-12)
    axes = norm_axes(axis, x.ndim)
    kept_sparse = [d for d in range(s.sparse_dim) if d not in axes]
    if axes and not kept_sparse:
        assert isinstance(r, mg.Tensor)
    else:
        assert sp.is_sparse(r)
        want = "csr" if s.layout == "csr" and (r.sparse_dim in (2, 3)) else "coo"
        assert r.layout == want
        assert r.is_coalesced or not axes
    if not (s.requires_grad and rd.dtype.kind == "f"):
        return r
    g = rng.standard_normal(ref.shape)
    s.grad = None
    if isinstance(r, mg.Tensor):
        r.backward(mg.tensor(g))
    elif upstream == "dense":
        r.backward(mg.tensor(g))
    else:  # the result's own layout
        rc = coords(r)
        gv = at_coords(g, rc)
        if r.layout == "csr":
            gs = sp.csr_tensor(r.crow_indices, r.col_indices, gv, r.shape)
        else:
            gs = sp.coo_tensor(r.indices, gv, r.shape)
        r.backward(gs)
    gd = expand_grad(g, x.shape, axes, keepdims)
    mask = x != 0
    assert s.grad.layout == s.layout
    assert s.grad.nnz == s.nnz
    c = coords(s)
    # per stored entry: the upstream gradient at its kept coordinates
    np.testing.assert_allclose(to_np(s.grad.values), at_coords(gd, c), rtol=1e-12)
    # and as a tensor: dense grad * mask
    np.testing.assert_allclose(to_np(s.grad.to_dense()), gd * mask.reshape(mask.shape), rtol=1e-12)
    return r


def coo_of(x, sparse_dim=None):
    return mg.tensor(x).to_sparse_coo(sparse_dim).detach().requires_grad_(x.dtype.kind == "f")


def csr_of(x):
    return mg.tensor(x).to_sparse_csr().detach().requires_grad_(x.dtype.kind == "f")


# ---------------------------------------------------------------------------
# the seed plan
# ---------------------------------------------------------------------------

SEED_SHAPES = [(5,), (4, 5), (3, 4, 5), (8, 3, 4, 4, 5, 3), (2, 3, 4, 2, 3, 4, 2, 3, 4)]


@pytest.mark.parametrize("shape", SEED_SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("keepdim", [False, True])
def test_seed_coo_every_axis(shape, keepdim):
    rng = np.random.default_rng(len(shape))
    masks = 1 if len(shape) >= 6 else 3
    for _ in range(masks):
        x = masked(shape, rng, density=0.3)
        s = coo_of(x)
        for axis in [None] + list(range(len(shape))):
            check_sum(s, x, axis, keepdim, rng=rng)
        check_sum(s, x, -1, keepdim, rng=rng)
        check_sum(s, x, -len(shape), keepdim, rng=rng, upstream="sparse")


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5)], ids=["2d", "3d"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", [-1, None])
def test_seed_csr(shape, keepdim, axis):
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = masked(shape, rng, density=0.4)
        check_sum(csr_of(x), x, axis, keepdim, rng=rng)
        check_sum(csr_of(x), x, axis, keepdim, rng=rng, upstream="sparse")


@pytest.mark.parametrize("shape", SEED_SHAPES, ids=lambda s: f"{len(s)}d")
@pytest.mark.parametrize("keepdim", [False, True])
def test_seed_dtype_int32(shape, keepdim):
    rng = np.random.default_rng(3)
    xf = masked(shape, rng, density=0.4)
    xi = masked(shape, rng, density=0.4, dtype=np.int32)
    for axis in [None] + list(range(len(shape))):
        check_sum(coo_of(xf), xf, axis, keepdim, dtype=np.int32)  # floats cast to int32, then summed
        r = check_sum(coo_of(xi), xi, axis, keepdim)  # int32 sums to int64 (NumPy)
        assert densify(r).dtype == np.int64
        check_sum(coo_of(xi), xi, axis, keepdim, dtype=np.int32)
        if len(shape) in (2, 3):
            check_sum(csr_of(xf), xf, axis, keepdim, dtype=np.int32)
            check_sum(csr_of(xi), xi, axis, keepdim)


def test_dtype_casts_each_value_before_summing():
    s = sp.coo_tensor([[0, 0, 1]], [1.5, 1.5, -1.7], shape=(2,))
    r = sp.sum(s, axis=0, dtype=np.int32)
    assert r.dtype == np.int32 and r.item() == 1  # int(1.5) + int(1.5) + int(-1.7) = 1 + 1 - 1
    assert r.item() == np.sum(np.array([1.5, 1.5, -1.7]), dtype=np.int32)  # NumPy casts first too
    assert np.sum(np.array([3.0, -1.7]), dtype=np.int32) == 2  # (summing first would give 1)
    b = sp.coo_tensor([[0, 1, 1]], np.array([True, True, False]), shape=(3,))
    rb = sp.sum(b)
    assert rb.dtype == np.int64 and rb.item() == 2
    ru = sp.sum(sp.coo_tensor([[0]], np.array([3], dtype=np.uint8), shape=(2,)))
    assert ru.dtype == np.uint64
    r16 = sp.sum(sp.coo_tensor([[0, 1]], np.array([1, 2], dtype=np.float32), shape=(2,)), dtype=np.float64)
    assert r16.dtype == np.float64


# ---------------------------------------------------------------------------
# beyond the seed: CSR on every axis, tuples, hybrid, uncoalesced, nnz = 0
# ---------------------------------------------------------------------------

def _all_axis_specs(ndim):
    specs = [None, ()] + list(range(ndim)) + [-1]
    for a in range(ndim):
        for b in range(a + 1, ndim):
            specs.append((a, b))
    if ndim >= 3:
        specs.append(tuple(range(ndim)))
        specs.append([0, -1])
    return specs


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5), (1, 4, 5), (3, 1, 5)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_csr_every_axis_and_tuple(shape, keepdim):
    rng = np.random.default_rng(11)
    x = masked(shape, rng, density=0.45)
    for axis in _all_axis_specs(len(shape)):
        check_sum(csr_of(x), x, axis, keepdim, rng=rng)
        check_sum(csr_of(x), x, axis, keepdim, rng=rng, upstream="sparse")


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 2, 4)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_coo_tuples(shape, keepdim):
    rng = np.random.default_rng(12)
    x = masked(shape, rng, density=0.4)
    for axis in _all_axis_specs(len(shape)):
        check_sum(coo_of(x), x, axis, keepdim, rng=rng)
        check_sum(coo_of(x), x, axis, keepdim, rng=rng, upstream="sparse")


@pytest.mark.parametrize("shape,sparse_dim", [((4, 5, 3), 1), ((4, 5, 3), 2), ((3, 4, 2, 3), 2), ((5, 2), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_hybrid_coo(shape, sparse_dim, keepdim):
    rng = np.random.default_rng(13)
    x = masked(shape, rng, density=0.5, block_dims=len(shape) - sparse_dim)
    s = coo_of(x, sparse_dim)
    assert s.sparse_dim == sparse_dim and s.dense_dim == len(shape) - sparse_dim
    for axis in _all_axis_specs(len(shape)):
        r = check_sum(s, x, axis, keepdim, rng=rng)
        if sp.is_sparse(r) and sparse_dim:
            axes = norm_axes(axis, len(shape))
            kept = sum(1 for d in range(sparse_dim) if d not in axes)
            assert r.sparse_dim == (sparse_dim if keepdim else kept)
        check_sum(s, x, axis, keepdim, rng=rng, upstream="sparse")


@pytest.mark.parametrize("keepdim", [False, True])
def test_hybrid_csr(keepdim):
    rng = np.random.default_rng(14)
    for shape in [(3, 4, 2), (2, 3, 4, 3)]:
        nsp = len(shape) - 1
        x = masked(shape, rng, density=0.5, block_dims=1)
        c = coo_of(x, nsp).to_sparse_csr().detach().requires_grad_()
        assert c.layout == "csr" and c.dense_dim == 1
        np.testing.assert_array_equal(to_np(c.to_dense()), x)
        for axis in _all_axis_specs(len(shape)):
            check_sum(c, x, axis, keepdim, rng=rng)


def _uncoalesced(rng, shape, nnz=40):
    idx = np.stack([rng.integers(0, n, size=nnz) for n in shape])
    idx = np.concatenate([idx, idx[:, :7]], axis=1)  # guaranteed duplicates
    perm = rng.permutation(idx.shape[1])
    idx = idx[:, perm]
    vals = rng.standard_normal(idx.shape[1])
    return idx, vals


@pytest.mark.parametrize("keepdim", [False, True])
def test_uncoalesced(keepdim):
    rng = np.random.default_rng(15)
    shape = (4, 3, 5)
    idx, vals = _uncoalesced(rng, shape)
    s = sp.coo_tensor(idx, vals, shape, requires_grad=True)
    assert not s.is_coalesced
    x = to_np(s.to_dense())
    dense_ref = np.zeros(shape)
    np.add.at(dense_ref, tuple(idx), vals)
    np.testing.assert_allclose(x, dense_ref)
    for axis in _all_axis_specs(3):
        r = sp.sum(s, axis=axis, keepdims=keepdim)
        ref = np.sum(dense_ref, axis=None if axis is None else tuple(np.atleast_1d(axis)), keepdims=keepdim)
        np.testing.assert_allclose(to_np(densify(r)), ref, atol=1e-12)
        g = rng.standard_normal(np.shape(ref))
        s.grad = None
        r.backward(mg.tensor(g))
        gd = expand_grad(g, shape, norm_axes(axis, 3), keepdim)
        # one gradient per stored entry, duplicates included, in the input's order
        assert s.grad.nnz == idx.shape[1]
        np.testing.assert_array_equal(to_np(s.grad.indices), idx)
        np.testing.assert_allclose(to_np(s.grad.values), gd[tuple(idx)])


def test_uncoalesced_csr_duplicate_columns():
    # row 0 stores column 1 twice, columns out of order
    c = sp.csr_tensor([0, 3, 4], [1, 0, 1, 2], [1.0, 2.0, 3.0, 4.0], (2, 3), requires_grad=True)
    assert not c.is_coalesced
    np.testing.assert_allclose(to_np(c.to_dense()), [[2.0, 4.0, 0.0], [0.0, 0.0, 4.0]])
    r = sp.sum(c, axis=0)
    np.testing.assert_allclose(to_np(r.to_dense()), [2.0, 4.0, 4.0])
    r.backward(mg.tensor(np.array([10.0, 20.0, 30.0])))
    np.testing.assert_allclose(to_np(c.grad.values), [20.0, 10.0, 20.0, 30.0])
    cc = c.coalesce()
    assert cc.is_coalesced and cc.nnz == 3
    np.testing.assert_array_equal(to_np(cc.col_indices), [0, 1, 2])


@pytest.mark.parametrize("shape,layout", [(s, l) for s in [(3, 4), (3, 0, 4), (0,), (0, 5), (2, 3, 4), (0, 0, 0)]
                                          for l in ("coo", "csr") if l == "coo" or len(s) in (2, 3)])
def test_nnz_zero_and_zero_size(shape, layout):
    x = np.zeros(shape)
    s = coo_of(x) if layout == "coo" else csr_of(x)
    assert s.nnz == 0
    for keepdim in (False, True):
        for axis in _all_axis_specs(len(shape)):
            r = check_sum(s, x, axis, keepdim)
            if sp.is_sparse(r):
                assert r.nnz == 0


def test_stored_zeros_are_kept():
    s = sp.coo_tensor([[0, 1, 2], [0, 0, 1]], [0.0, 1.0, -1.0], shape=(3, 2), requires_grad=True)
    r = sp.sum(s, axis=1)
    assert r.nnz == 3  # the stored 0 at row 0 stays a stored entry
    np.testing.assert_allclose(to_np(r.values), [0.0, 1.0, -1.0])
    r2 = sp.sum(sp.coo_tensor([[0, 0]], [1.0, -1.0], shape=(2,)), axis=())
    assert r2.nnz == 2
    r.backward(mg.tensor(np.array([5.0, 6.0, 7.0])))
    np.testing.assert_allclose(to_np(s.grad.values), [5.0, 6.0, 7.0])


def test_identity_axis_is_a_copy():
    s = coo_of(masked((3, 4), np.random.default_rng(0)))
    r = sp.sum(s, axis=())
    assert r.layout == "coo" and r.values is not s.values
    np.testing.assert_array_equal(to_np(r.to_dense()), to_np(s.to_dense()))
    assert sp.sum(s, axis=(), dtype=np.float32).dtype == np.float32


# ---------------------------------------------------------------------------
# axis rules and errors (the same as dense sum)
# ---------------------------------------------------------------------------

def test_axis_errors():
    s = coo_of(masked((2, 3, 4), np.random.default_rng(0)))
    with pytest.raises(mg.AxisError, match="3"):
        sp.sum(s, axis=3)
    with pytest.raises(IndexError):
        sp.sum(s, axis=-4)
    with pytest.raises(ValueError, match="duplicate"):
        sp.sum(s, axis=(1, -2))
    with pytest.raises(TypeError):
        sp.sum(s, axis=1.0)
    with pytest.raises(TypeError):
        sp.sum(s, axis="0")
    with pytest.raises(TypeError):
        sp.sum(s, axis=0, dim=0)
    with pytest.raises(TypeError, match="keepdims"):
        sp.sum(s, 0, True)


def test_aliases_method_and_array_axes():
    x = masked((2, 3, 4), np.random.default_rng(0))
    s = coo_of(x)
    a = sp.sum(s, dim=1, keepdim=True)
    b = s.sum(axis=1, keepdims=True)
    b2 = s.sum(dim=1, keepdim=True)
    np.testing.assert_allclose(to_np(b2.to_dense()), x.sum(axis=1, keepdims=True))
    assert s.sum().item() == pytest.approx(x.sum())
    c = s.sum(np.array([1]), keepdims=True)
    for r in (a, b, c):
        np.testing.assert_allclose(to_np(r.to_dense()), x.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(to_np(sp.sum(mg.tensor(x), axis=1)), x.sum(axis=1))  # dense input: mg.sum


# ---------------------------------------------------------------------------
# never densify
# ---------------------------------------------------------------------------

def test_never_densify_huge_shape():
    rng = np.random.default_rng(0)
    n = 10 ** 6
    idx = rng.integers(0, n, size=(3, 1000))
    idx[:, 500:510] = idx[:, :10]  # some duplicates too
    s = sp.coo_tensor(idx, rng.standard_normal(1000), (n, n, n), requires_grad=True)
    specs = [0, 1, 2, (0, 1), (0, 2), (1, 2), None, -1]
    for axis in specs:  # warm up
        sp.sum(s, axis=axis)
    tracemalloc.start()
    try:
        for axis in specs:
            for keepdim in (False, True):
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                t0 = time.perf_counter()
                r = sp.sum(s, axis=axis, keepdims=keepdim)
                s.grad = None
                if isinstance(r, mg.Tensor):
                    r.backward(mg.ones(r.shape, dtype=np.float64))
                else:
                    r.backward(r._grad_like(mg.ones(r.nnz, dtype=np.float64)))
                    r.backward  # noqa: B018
                dt = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1] - base
                assert dt < 0.25, (axis, dt)  # milliseconds in practice; generous for busy machines
                assert peak < 1 << 20, (axis, peak)  # kilobytes in practice
                assert s.grad.nnz == 1000
    finally:
        tracemalloc.stop()
    # the values are right, checked against a direct computation on the coordinates
    r = sp.sum(s, axis=1)
    d = {}
    v = to_np(s.values)
    for k in range(1000):
        key = (int(idx[0, k]), int(idx[2, k]))
        d[key] = d.get(key, 0.0) + v[k]
    got = {(int(a), int(b)): float(c) for a, b, c in zip(*to_np(r.indices), to_np(r.values), strict=True)}
    assert got.keys() == d.keys()
    for key in d:
        assert abs(got[key] - d[key]) < 1e-12
    # an uncoalesced huge tensor coalesces without densifying too
    assert not s.is_coalesced
    c = s.coalesce()
    assert c.is_coalesced and c.nnz == 990


@pytest.mark.parametrize("shape,layout", [((10 ** 6,) * 3, "coo"), ((10 ** 5, 10 ** 9), "csr"),
                                          ((2, 10 ** 5, 10 ** 9), "csr"), ((10 ** 8,) * 3 + (2,), "coo")])
def test_sorted_groups_in_a_huge_key_space(shape, layout):
    # coalesced input, kept dims a prefix, a key space far beyond nnz: the groups come from
    # one pass over the sorted keys (no bins, no sort); some kept coordinates repeat. The last
    # shape keeps 10**24 coordinates, past int64: the keys are ranks, counted into bins
    rng = np.random.default_rng(5)
    nd = len(shape)
    idx = np.stack([rng.integers(0, d, size=300) for d in shape])
    idx[: nd - 1, 100:160] = idx[: nd - 1, :60]
    s = sp.coo_tensor(idx, rng.standard_normal(300), shape).coalesce()
    s = (s if layout == "coo" else s.to_sparse_csr()).detach().requires_grad_()
    c = coords(s)
    v = to_np(s.values)
    for axis in (nd - 1, tuple(range(1, nd))):
        kept = tuple(d for d in range(nd) if d not in np.atleast_1d(axis))
        r = sp.sum(s, axis=axis)
        assert r.layout == ("csr" if layout == "csr" and len(kept) >= 2 else "coo")
        want = {}
        for k in range(s.nnz):
            key = tuple(int(c[d, k]) for d in kept)
            want[key] = want.get(key, 0.0) + v[k]
        assert [tuple(int(a) for a in col) for col in coords(r).T] == sorted(want)
        np.testing.assert_allclose(to_np(r.values), [want[key] for key in sorted(want)], rtol=1e-12)
        g = rng.standard_normal(r.nnz)
        s.grad = None
        r.backward(r._grad_like(mg.tensor(g)))
        pos = {key: i for i, key in enumerate(sorted(want))}
        expect = [g[pos[tuple(int(c[d, k]) for d in kept)]] for k in range(s.nnz)]
        np.testing.assert_allclose(to_np(s.grad.values), expect)


def test_huge_shape_beyond_int64_keys():
    # the product of the dims (1e24) overflows int64: keys fall back to lexicographic ranks
    n = 10 ** 8
    idx = np.array([[5, 5, 7, 5], [1, 2, 3, 1], [n - 1, 0, 9, n - 1]])
    s = sp.coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], (n, n, n), requires_grad=True)
    assert not s.is_coalesced
    c = s.coalesce()
    np.testing.assert_array_equal(to_np(c.indices), [[5, 5, 7], [1, 2, 3], [n - 1, 0, 9]])
    np.testing.assert_allclose(to_np(c.values), [5.0, 2.0, 3.0])
    r = sp.sum(s, axis=1)
    np.testing.assert_array_equal(to_np(r.indices), [[5, 5, 7], [0, n - 1, 9]])
    np.testing.assert_allclose(to_np(r.values), [2.0, 5.0, 3.0])
    r.backward(r._grad_like(mg.tensor(np.array([10.0, 20.0, 30.0]))))
    np.testing.assert_allclose(to_np(s.grad.values), [20.0, 10.0, 30.0, 20.0])


# ---------------------------------------------------------------------------
# gradcheck on the values
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_gradcheck_sum(layout):
    rng = np.random.default_rng(21)
    x = masked((3, 4, 2), rng, density=0.5)
    s = coo_of(x) if layout == "coo" else csr_of(x)
    for axis in [0, 1, 2, (0, 2), None]:
        for keepdim in (False, True):
            assert mg.gradcheck(lambda t, a=axis, k=keepdim: sp.sum(t, axis=a, keepdims=k), (s,))
    # through a nonlinearity of the result
    assert mg.gradcheck(lambda t: (sp.sum(t, axis=1).to_dense() ** 2).sum(), (s,))


def test_gradcheck_hybrid_and_uncoalesced():
    rng = np.random.default_rng(22)
    x = masked((4, 3, 2), rng, density=0.5, block_dims=1)
    s = coo_of(x, 2)
    assert mg.gradcheck(lambda t: sp.sum(t, axis=(0, 2)), (s,))
    idx, vals = _uncoalesced(rng, (3, 4), nnz=6)
    u = sp.coo_tensor(idx, vals, (3, 4), requires_grad=True)
    assert mg.gradcheck(lambda t: sp.sum(t, axis=0), (u,))
    assert mg.gradcheck(lambda t: t.coalesce().to_dense() * 2.0, (u,))


def test_gradgradcheck_sum():
    rng = np.random.default_rng(23)
    s = coo_of(masked((3, 4), rng, density=0.6))
    assert mg.gradgradcheck(lambda t: sp.sum(t, axis=1).to_dense() ** 2, (s,))  # sorted groups
    assert mg.gradgradcheck(lambda t: sp.sum(t, axis=0).to_dense() ** 2, (s,))  # counted into bins
    assert mg.gradgradcheck(lambda t: sp.sum(t.to_sparse_csr(), axis=0).to_dense() ** 2, (s,))
    g = sp.coo_tensor([[2, 0], [1, 1]], mg.tensor(np.array([1.0, 2.0]), requires_grad=True), (3, 4))
    # a sparse upstream gradient, itself differentiable, with create_graph=True
    r = sp.sum(s, axis=())
    r.backward(g, create_graph=True)
    assert s.grad.values.requires_grad


def test_float32_values_float64_accumulation():
    rng = np.random.default_rng(24)
    x = masked((5, 6), rng).astype(np.float32)
    s = coo_of(x)
    r = sp.sum(s, axis=0, dtype=np.float64)
    assert r.dtype == np.float64
    r.backward(mg.ones(6, dtype=np.float64))
    assert s.grad.dtype == np.float32
    np.testing.assert_allclose(to_np(s.grad.values), np.ones(s.nnz))
