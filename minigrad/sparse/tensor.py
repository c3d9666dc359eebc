"""Sparse COO and CSR tensors: index arrays plus a dense Tensor of stored values.

A sparse tensor holds its index arrays (backend int64 arrays, never
differentiated) and ``values``, an ordinary minigrad Tensor of shape
``(nnz, *dense_shape)``. Every sparse op is built from dense array operations
on ``values`` recorded through the normal engine, so gradients flow to
``values``; ``s.grad`` is a sparse tensor with ``s``'s own indices whose values
are ``values.grad`` (one gradient per stored entry, duplicates included).

COO: ``indices`` (sparse_dim, nnz); ``sparse_dim < ndim`` is a hybrid tensor
whose trailing dims are dense. Duplicate coordinates are legal (uncoalesced);
``coalesce()`` sorts and merges them.

CSR: ``crow_indices`` (rows + 1,) and ``col_indices`` (nnz,) for a 2-D
tensor; for a 3-D batched one ``crow_indices`` is (batch, rows + 1), each row
of it starting at 0, and ``col_indices`` / ``values`` hold the batches one
after the other (batch 0's entries, then batch 1's...), so batches may have
different nnz. Trailing dense dims are allowed here too. ``sparse_dim`` counts
the indexed dims: 2, or 3 with the batch dim.

The code lives in ``base.py`` (SparseTensor), ``coo.py``, ``csr.py`` and
``constructors.py`` (the checked constructors; their checks are in ``_checks.py``); this module
re-exports their names.
"""
from __future__ import annotations

from .base import SparseTensor, is_sparse
from .constructors import IndexDtypeError, coo_tensor, csr_tensor
from .coo import SparseCOOTensor
from .csr import SparseCSRTensor

__all__ = ["SparseTensor", "SparseCOOTensor", "SparseCSRTensor", "IndexDtypeError", "coo_tensor", "csr_tensor",
           "is_sparse"]
