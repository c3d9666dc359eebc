"""Sparse COO and CSR tensors (``mg.sparse``): sum and matmul, never densified.

>>> import minigrad as mg
>>> s = mg.sparse.coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], shape=(2, 3), requires_grad=True)
>>> r = mg.sparse.sum(s, axis=0)          # sparse (3,): entries at 0 and 2
>>> r.backward(mg.ones(3)); s.grad.values  # one gradient per stored entry
tensor([1., 1., 1.])

A sparse tensor keeps its index arrays (int64) and ``values``, a dense Tensor of
shape (nnz, *dense_shape). Ops are dense array ops on ``values`` recorded by the
ordinary autograd engine, so ``s.grad`` is sparse with ``s``'s own indices.

This file is also the one place where the layouts learn of the functions that build sparse
tensors of them: the methods that call ``ops.py`` and ``convert.py`` are bound here (below).
"""
from .._util import NOARG as _NOARG
from .convert import coo_to_csr as _coo_to_csr
from .convert import from_scipy, to_scipy, to_sparse_coo, to_sparse_csr
from .ops import matmul, sum
from .tensor import (
    IndexDtypeError, SparseCOOTensor, SparseCSRTensor, SparseTensor, coo_tensor, csr_tensor, is_sparse,
)

__all__ = [
    "coo_tensor", "csr_tensor", "sum", "matmul", "from_scipy", "to_scipy", "to_sparse_coo", "to_sparse_csr",
    "SparseTensor", "SparseCOOTensor", "SparseCSRTensor", "IndexDtypeError", "is_sparse",
]


# -- the methods that build sparse tensors ---------------------------------------------------------
# base.py and coo.py sit below ops.py and convert.py, which import them to build sparse tensors;
# these methods call those functions, so they are defined here and bound below once every sparse
# module has loaded, as minigrad/ops/__init__.py binds Tensor's methods. No sparse module imports
# one above it, at module level or inside a function.


def _sum(self, axis=_NOARG, dtype=None, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
    """``mg.sparse.sum(self, axis=None, dtype=None, keepdims=False)`` (``dim``/``keepdim`` aliases)."""
    return sum(self, axis, dtype, keepdims, dim=dim, keepdim=keepdim)


def _matmul(self, other):
    return matmul(self, other)


def _rmatmul(self, other):
    return matmul(other, self)


def _sparse_matmul(self, a, b):
    """``mg.matmul`` / ``@`` with a sparse operand: the sparse product (never densified)."""
    return matmul(a, b)


def _to_scipy(self):
    """A SciPy sparse array (coo_array / csr_array) with a host copy of the data (no gradient)."""
    return to_scipy(self)


def _coo_to_sparse_csr(self):
    """CSR with the same entries (coalesced first); needs 2 or 3 sparse dims."""
    return _coo_to_csr(self)


def _bind() -> None:
    """The methods above, on the classes; each named as if its class defined it (reprs, help())."""
    for cls, name, fn in ((SparseTensor, "sum", _sum), (SparseTensor, "__matmul__", _matmul),
                          (SparseTensor, "__rmatmul__", _rmatmul), (SparseTensor, "_sparse_matmul", _sparse_matmul),
                          (SparseTensor, "to_scipy", _to_scipy), (SparseCOOTensor, "to_sparse_csr", _coo_to_sparse_csr)):
        fn.__name__, fn.__qualname__ = name, f"{cls.__name__}.{name}"
        setattr(cls, name, fn)
    SparseTensor.matmul = SparseTensor.__matmul__


_bind()
