"""Conversions: dense -> COO / CSR, COO <-> CSR, SciPy interop. All differentiable in the values."""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from ..tensor import Tensor, wrap as _wrap
from . import _kernels as K
from .tensor import SparseCOOTensor, SparseCSRTensor, SparseTensor, coo_tensor, csr_tensor


def to_sparse_coo(t, sparse_dim=None) -> SparseCOOTensor:
    """The nonzero entries of ``t`` as a COO tensor (``x.to_sparse_coo()``); differentiable.

    ``sparse_dim`` (default ``t.ndim``): how many leading dims are sparse; with fewer, the
    trailing dims are dense blocks, stored where any of their elements is nonzero.
    The result is coalesced (row-major order).
    """
    if isinstance(t, SparseTensor):
        return t.to_sparse_coo(sparse_dim)
    if not isinstance(t, Tensor):
        t = Tensor(t)
    nd = t.ndim
    if sparse_dim is None:
        sparse_dim = nd
    if isinstance(sparse_dim, (bool, np.bool_)) or not isinstance(sparse_dim, numbers.Integral):
        raise TypeError(f"to_sparse_coo: sparse_dim must be an int, got {sparse_dim!r}")
    sparse_dim = int(sparse_dim)
    if not 0 <= sparse_dim <= nd:
        raise ValueError(f"to_sparse_coo: sparse_dim must be in [0, {nd}] for a tensor of shape {t.shape}, "
                         f"got {sparse_dim}")
    xp = t._xp()
    d = t.data
    if sparse_dim == 0:
        idx = xp.zeros((0, 1), dtype=np.int64)
        return SparseCOOTensor._make(idx, t.reshape((1,) + tuple(t.shape)), t.shape, True)
    mask = d != 0
    if sparse_dim < nd:
        mask = mask.any(axis=tuple(range(sparse_dim, nd)))
    nz = xp.nonzero(mask)
    nz = tuple(a.astype(np.int64, copy=False) for a in nz)
    idx = xp.stack(nz) if nz[0].shape[0] else xp.zeros((sparse_dim, 0), dtype=np.int64)
    values = t[nz]
    return SparseCOOTensor._make(idx, values, t.shape, True)


def to_sparse_csr(t) -> SparseCSRTensor:
    """The nonzero entries of a 2-D (or 3-D batched) tensor as CSR (``x.to_sparse_csr()``)."""
    if isinstance(t, SparseTensor):
        return t.to_sparse_csr()
    if not isinstance(t, Tensor):
        t = Tensor(t)
    if t.ndim not in (2, 3):
        raise ValueError(f"to_sparse_csr: CSR holds 2-D tensors or 3-D batches of them, got shape {t.shape}")
    return coo_to_csr(to_sparse_coo(t))


def coo_to_csr(s) -> SparseCSRTensor:
    """COO (2 or 3 sparse dims) -> CSR, coalescing first; shares the (coalesced) values."""
    S = s.sparse_dim
    if S not in (2, 3):
        raise ValueError(f"to_sparse_csr: CSR needs 2 sparse dims (or 3 with a batch dim), this COO tensor of "
                         f"shape {s.shape} has {S}")
    c = s.coalesce()
    return csr_from_sorted(c._xp(), c._coo_rows(), c._values, c._shape)


def csr_from_sorted(xp, rows, values, shape):
    """CSR from coordinates already in row-major order (2 or 3 arrays)."""
    if len(rows) == 2:
        crow = K.rows_to_crow(xp, rows[0], shape[0])
    else:
        crow = K.batched_rows_to_crow(xp, rows[0], rows[1], shape[0], shape[1])
    return SparseCSRTensor._make(crow, rows[-1], values, shape, True, tuple(rows))


# ---------------------------------------------------------------------------
# SciPy
# ---------------------------------------------------------------------------

def _scipy():
    try:
        import scipy.sparse as sp  # noqa: PLC0415 - optional dependency
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("SciPy interop needs SciPy: pip install minigrad[scipy]") from e
    return sp


def from_scipy(m, requires_grad=False, device=None):
    """A minigrad sparse tensor from a SciPy sparse matrix or array.

    CSR (``csr_matrix`` / ``csr_array``) stays CSR; every other format becomes COO
    (through ``tocoo()``, duplicates kept). The arrays are copied.
    """
    sp = _scipy()
    if not sp.issparse(m):
        raise TypeError(f"from_scipy: expected a SciPy sparse matrix or array, got {type(m).__name__}")
    dev = _be.parse_device(device)
    if m.format == "csr":
        vals = _wrap(_be.to_device(np.array(m.data), dev))
        return csr_tensor(_be.to_device(np.asarray(m.indptr, dtype=np.int64), dev),
                          _be.to_device(np.asarray(m.indices, dtype=np.int64), dev), vals, tuple(m.shape),
                          requires_grad=requires_grad)
    c = m.tocoo()
    coords = getattr(c, "coords", None)
    if coords is None:
        coords = (c.row, c.col)
    idx = np.stack([np.asarray(a, dtype=np.int64) for a in coords]) if len(coords) else np.zeros((0, c.nnz), np.int64)
    vals = _wrap(_be.to_device(np.array(c.data), dev))
    return coo_tensor(_be.to_device(idx, dev), vals, tuple(c.shape), requires_grad=requires_grad)


def to_scipy(s):
    """``s.to_scipy()``: a SciPy ``coo_array`` / ``csr_array`` (host copy, no gradient).

    Needs a 2-D tensor without dense dims (SciPy's sparse arrays are 2-D).
    """
    sp = _scipy()
    if s.dense_dim:
        raise ValueError(f"to_scipy: SciPy has no hybrid sparse arrays; this tensor has {s.dense_dim} dense dims "
                         "(convert with .to_sparse_coo(sparse_dim=ndim) first)")
    if s.ndim != 2:
        raise ValueError(f"to_scipy: SciPy sparse arrays are 2-D, got shape {s.shape}")
    data = _be.to_numpy(s._values.data).copy()
    if s.layout == "csr":
        return sp.csr_array((data, _be.to_numpy(s._col).copy(), _be.to_numpy(s._crow).copy()), shape=s.shape)
    idx = _be.to_numpy(s._idx)
    return sp.coo_array((data, (idx[0].copy(), idx[1].copy())), shape=s.shape)
