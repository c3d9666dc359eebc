"""The checked constructors ``coo_tensor`` and ``csr_tensor`` (their checks are in ``_checks.py``)."""
from __future__ import annotations

from ._checks import IndexDtypeError
from .coo import SparseCOOTensor
from .csr import SparseCSRTensor

__all__ = ["IndexDtypeError", "coo_tensor", "csr_tensor"]


def coo_tensor(indices, values, shape=None, requires_grad=False) -> SparseCOOTensor:
    """A COO sparse tensor.

    Args:
        indices: integer array (sparse_dim, nnz): column ``k`` is the coordinate of entry ``k``
            in the first ``sparse_dim`` dims. Duplicates are allowed (they add up).
        values: (nnz, *dense_shape): a Tensor (gradients flow through it), a NumPy/CuPy
            array or nested lists. ``sparse_dim < ndim`` makes a hybrid tensor.
        shape: the full shape; inferred (max index + 1 per sparse dim) when None.
        requires_grad: make ``values`` a leaf that requires grad.

    Raises ValueError (wrong ranks, nnz disagreeing, a shape that does not fit the values),
    IndexError (an index out of bounds, named with its position) and IndexDtypeError
    (a TypeError and ValueError) for non-integer indices.

    >>> s = mg.sparse.coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], shape=(2, 3))
    """
    return SparseCOOTensor(indices, values, shape, requires_grad)


def csr_tensor(crow_indices, col_indices, values, shape=None, requires_grad=False) -> SparseCSRTensor:
    """A CSR sparse tensor: 2-D, or 3-D batched.

    Args:
        crow_indices: (rows + 1,) row pointers, or (batch, rows + 1) for a batched tensor, each
            row of it starting at 0 and non-decreasing.
        col_indices: (nnz,) column of each stored entry (batches one after the other). PyTorch's
            batched form, (batch, nnz_per_batch), is accepted and flattened.
        values: (nnz, *dense_shape) (PyTorch's (batch, nnz_per_batch, ...) is flattened too).
        shape: (rows, cols) or (batch, rows, cols), plus the dense dims of the values;
            inferred (cols = max column + 1) when None.

    Raises ValueError / IndexError naming the array and the position that is wrong.

    >>> s = mg.sparse.csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(2, 3))
    """
    return SparseCSRTensor(crow_indices, col_indices, values, shape, requires_grad)
