"""Sparse COO and CSR tensors (``mg.sparse``): sum and matmul, never densified.

>>> import minigrad as mg
>>> s = mg.sparse.coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], shape=(2, 3), requires_grad=True)
>>> r = mg.sparse.sum(s, axis=0)          # sparse (3,): entries at 0 and 2
>>> r.backward(mg.ones(3)); s.grad.values  # one gradient per stored entry
tensor([1., 1., 1.])

A sparse tensor keeps its index arrays (int64) and ``values``, a dense Tensor of
shape (nnz, *dense_shape). Ops are dense array ops on ``values`` recorded by the
ordinary autograd engine, so ``s.grad`` is sparse with ``s``'s own indices.
"""
from .convert import from_scipy, to_scipy, to_sparse_coo, to_sparse_csr
from .ops import matmul, sum
from .tensor import (
    IndexDtypeError, SparseCOOTensor, SparseCSRTensor, SparseTensor, coo_tensor, csr_tensor, is_sparse,
)

__all__ = [
    "coo_tensor", "csr_tensor", "sum", "matmul", "from_scipy", "to_scipy", "to_sparse_coo", "to_sparse_csr",
    "SparseTensor", "SparseCOOTensor", "SparseCSRTensor", "IndexDtypeError", "is_sparse",
]
