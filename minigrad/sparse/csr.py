"""The CSR layout: ``crow_indices``, ``col_indices`` and ``values``; 2-D, or 3-D batched."""
from __future__ import annotations

from .. import backend as _be
from ..tensor import Tensor, wrap as _wrap
from . import _autograd as A
from . import _kernels as K
from ._checks import csr_parts
from .base import SparseTensor, _arr_str, _same_arrays
from .coo import SparseCOOTensor


class SparseCSRTensor(SparseTensor):
    """Compressed sparse rows: 2-D, or 3-D batched (see the module docstring)."""

    layout = "csr"

    def __init__(self, crow_indices, col_indices, values, shape=None, requires_grad=False):
        self._crow, self._col, self._values, self._shape = csr_parts(crow_indices, col_indices, values, shape,
                                                                     requires_grad)
        self._coalesced = self._rows_cache = None

    @classmethod
    def _make(cls, crow, col, values, shape, coalesced=None, rows=None):
        s = object.__new__(cls)
        s._crow = crow
        s._col = col
        s._values = values
        s._shape = tuple(shape)
        s._coalesced = coalesced
        s._rows_cache = rows
        return s

    @property
    def batched(self) -> bool:
        return self._crow.ndim == 2

    @property
    def sparse_dim(self) -> int:
        return 3 if self._crow.ndim == 2 else 2

    @property
    def crow_indices(self) -> Tensor:
        return _wrap(self._crow)

    @property
    def col_indices(self) -> Tensor:
        return _wrap(self._col)

    @property
    def indices(self):
        raise AttributeError("indices: a CSR tensor has crow_indices and col_indices; "
                             "use .to_sparse_coo().indices for coordinates")

    def _coo_rows(self):
        """The coordinates of the stored entries, one int64 array per sparse dim (cached)."""
        if self._rows_cache is None:
            xp = self._xp()
            nnz = self.nnz
            if self.batched:
                b, r = K.batched_crow_to_coords(xp, self._crow, nnz)
                self._rows_cache = (b, r, self._col)
            else:
                self._rows_cache = (K.crow_to_rows(xp, self._crow, nnz), self._col)
        return list(self._rows_cache)

    def _with_values(self, values, coalesced=None):
        return SparseCSRTensor._make(self._crow, self._col, values,
                                     self._shape[: self.sparse_dim] + tuple(values.shape[1:]),
                                     self._coalesced if coalesced is None else coalesced, self._rows_cache)

    def _same_indices(self, other):
        return _same_arrays(self._crow, other._crow) and _same_arrays(self._col, other._col)

    def _grad_like(self, g_values):
        if not isinstance(g_values, Tensor):
            g_values = _wrap(g_values)
        return SparseCSRTensor._make(self._crow, self._col, g_values, self._shape, self._coalesced,
                                     self._rows_cache)

    def _to_device(self, dev):
        return SparseCSRTensor._make(_be.to_device(self._crow, dev), _be.to_device(self._col, dev),
                                     self._values.to(dev), self._shape, self._coalesced)

    @property
    def is_coalesced(self) -> bool:
        """True when the columns are sorted and unique within every row."""
        if self._coalesced is None:
            if self.nnz <= 1:
                self._coalesced = True
            else:
                keys, _ = K.keys_of(self._xp(), self._coo_rows(), self._shape[: self.sparse_dim])
                self._coalesced = K.is_sorted(self._xp(), keys, strict=True)
        return self._coalesced

    def coalesce(self):
        """Columns sorted and unique within each row (duplicates added; differentiable)."""
        if self.is_coalesced:
            return self
        return self.to_sparse_coo().coalesce().to_sparse_csr()

    def to_sparse_coo(self, sparse_dim=None):
        """COO with the same entries in the same order, sharing the values Tensor."""
        coo = SparseCOOTensor._make(self._xp().stack(self._coo_rows()), self._values, self._shape,
                                    self._coalesced)
        if sparse_dim is not None and sparse_dim != coo.sparse_dim:
            return coo._respread(sparse_dim)
        return coo

    def to_sparse_csr(self):
        return self

    def to_dense(self) -> Tensor:
        return A.to_dense(self._values, self._coo_rows(), self._shape)

    def _repr_body(self):
        return (f"crow_indices={_arr_str(self._crow)}, col_indices={_arr_str(self._col)}, "
                f"values={_arr_str(self._values.data)}")
