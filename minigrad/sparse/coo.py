"""The COO layout: ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense)."""
from __future__ import annotations

import numpy as np

from .. import backend as _be
from ..tensor import Tensor, wrap as _wrap
from . import _autograd as A
from . import _kernels as K
from ._checks import coo_parts
from .base import SparseTensor, _arr_str, _same_arrays


# ---------------------------------------------------------------------------

class SparseCOOTensor(SparseTensor):
    """A sparse tensor in coordinate format: ``indices`` (sparse_dim, nnz), ``values`` (nnz, *dense)."""

    layout = "coo"

    def __init__(self, indices, values, shape=None, requires_grad=False):
        self._idx, self._values, self._shape = coo_parts(indices, values, shape, requires_grad)
        self._coalesced = None

    @classmethod
    def _make(cls, idx, values, shape, coalesced=None):
        """Internal constructor: no checks (idx an int64 backend array, values a Tensor)."""
        s = object.__new__(cls)
        s._idx = idx
        s._values = values
        s._shape = tuple(shape)
        s._coalesced = coalesced
        return s

    @property
    def sparse_dim(self) -> int:
        return int(self._idx.shape[0])

    @property
    def indices(self) -> Tensor:
        """The coordinates, an int64 Tensor of shape (sparse_dim, nnz) (no copy)."""
        return _wrap(self._idx)

    @property
    def crow_indices(self):
        raise AttributeError("crow_indices: a COO tensor has none; convert with .to_sparse_csr()")

    @property
    def col_indices(self):
        raise AttributeError("col_indices: a COO tensor has none; convert with .to_sparse_csr()")

    def _coo_rows(self):
        return [self._idx[d] for d in range(self._idx.shape[0])]

    def _with_values(self, values, coalesced=None):
        return SparseCOOTensor._make(self._idx, values, self._shape[: self.sparse_dim] + tuple(values.shape[1:]),
                                     self._coalesced if coalesced is None else coalesced)

    def _same_indices(self, other):
        return _same_arrays(self._idx, other._idx)

    def _grad_like(self, g_values):
        """A sparse gradient with this tensor's indices and ``g_values`` as values."""
        if not isinstance(g_values, Tensor):
            g_values = _wrap(g_values)
        return SparseCOOTensor._make(self._idx, g_values, self._shape, self._coalesced)

    def _to_device(self, dev):
        return SparseCOOTensor._make(_be.to_device(self._idx, dev), self._values.to(dev), self._shape,
                                     self._coalesced)

    # -- coalescing -------------------------------------------------------------------
    @property
    def is_coalesced(self) -> bool:
        """True when the coordinates are sorted and unique (computed once, O(nnz))."""
        if self._coalesced is None:
            S = self.sparse_dim
            if self.nnz <= 1:
                self._coalesced = True
            elif S == 0:
                self._coalesced = False
            else:
                keys, _ = K.keys_of(self._xp(), self._coo_rows(), self._shape[:S])
                self._coalesced = K.is_sorted(self._xp(), keys, strict=True)
        return self._coalesced

    def coalesce(self):
        """Sorted, unique coordinates; duplicates' values added (differentiable). Stored zeros stay."""
        if self.is_coalesced:
            return self
        xp = self._xp()
        S = self.sparse_dim
        if S == 0:
            v = A.segment_sum(self._values, xp.zeros(self.nnz, dtype=np.int64), 1)
            return SparseCOOTensor._make(xp.zeros((0, 1), dtype=np.int64), v, self._shape, True)
        g, idx = K.group_coords(xp, self._coo_rows(), self._shape[:S])
        v = self._values if g.identity else A.group_sum(self._values, g)
        return SparseCOOTensor._make(idx, v, self._shape, True)

    # -- conversions -----------------------------------------------------------------
    def to_dense(self) -> Tensor:
        """The dense Tensor (duplicates add up); differentiable in the values."""
        return A.to_dense(self._values, self._coo_rows(), self._shape)

    def to_sparse_coo(self, sparse_dim=None):
        if sparse_dim is None or sparse_dim == self.sparse_dim:
            return self
        return self._respread(sparse_dim)

    def _respread(self, sparse_dim):
        """The same tensor with ``sparse_dim`` sparse dims (only moving dims from dense to sparse)."""
        S = self.sparse_dim
        if not S <= sparse_dim <= self.ndim:
            raise ValueError(f"to_sparse_coo: cannot turn a COO tensor with {S} sparse dims into one with "
                             f"{sparse_dim} (only dense dims can become sparse here; use .to_dense() first)")
        if sparse_dim == S:
            return self
        # each stored slice becomes its nonzero entries along the moved dims
        xp = self._xp()
        moved = self._shape[S:sparse_dim]
        v = self._values
        vd = v.data
        mask = vd != 0
        extra = tuple(range(1 + len(moved), vd.ndim))
        if extra:
            mask = mask.any(axis=extra)
        nz = xp.nonzero(mask)
        idx = xp.stack([self._idx[d][nz[0]] for d in range(S)] + list(nz[1:])) if self.nnz else \
            xp.zeros((sparse_dim, 0), dtype=np.int64)
        vals = v[tuple(nz)]
        return SparseCOOTensor._make(idx.astype(np.int64, copy=False), vals, self._shape,
                                     True if self.is_coalesced else None)

    # to_sparse_csr builds a CSR tensor (csr.py imports this module): __init__.py binds it

    def _repr_body(self):
        return f"indices={_arr_str(self._idx)}, values={_arr_str(self._values.data)}"
