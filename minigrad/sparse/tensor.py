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
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backward as _ag
from .. import backend as _be
from .._util import NOARG
from ..tensor import Tensor, wrap as _wrap
from . import _autograd as A
from . import _kernels as K


class IndexDtypeError(TypeError, ValueError):
    """Index arrays must hold integers (a TypeError and a ValueError)."""


def is_sparse(x) -> bool:
    return isinstance(x, SparseTensor)


# ---------------------------------------------------------------------------
# argument conversion and validation
# ---------------------------------------------------------------------------

def _as_values(values, op):
    if isinstance(values, SparseTensor):
        raise TypeError(f"{op}: values must be dense, got a sparse tensor")
    if isinstance(values, Tensor):
        return values if values.requires_grad else values.detach()
    return Tensor(values)


def _as_index(a, name, op, xp, device):
    if isinstance(a, SparseTensor):
        raise TypeError(f"{op}: {name} must be an integer array, got a sparse tensor")
    if isinstance(a, Tensor):
        a = a.data
    elif not (isinstance(a, np.ndarray) or _be.is_cupy_array(a)):
        arr = np.asarray(a)
        if arr.size == 0 and arr.dtype.kind == "f":  # [] or [[], []]: empty lists are float64 to NumPy
            arr = arr.astype(np.int64)
        a = arr
    if a.dtype.kind not in "iu":
        raise IndexDtypeError(f"{op}: {name} must be an integer array, got dtype {a.dtype}")
    if a.dtype == np.uint64 and a.size:  # values past int64's range would wrap in the cast below
        big = a > np.uint64(np.iinfo(np.int64).max)
        if bool(big.any()):
            where = _first_true(_be.array_module(a), big)
            pos = ", ".join(str(i) for i in where)
            raise IndexError(f"{op}: {name}[{pos}] = {int(_be.to_numpy(a[where]))} is out of bounds "
                             "(larger than any int64 index)")
    a = _be.to_device(a, device)
    if a.dtype != K.int64:
        a = a.astype(np.int64)
    return a


def _check_shape(shape, op):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a tuple of ints, got {type(shape).__name__}") from None
    for i, s in enumerate(shape):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{op}: shape[{i}] must be an int, got {s!r}")
        if s < 0:
            raise ValueError(f"{op}: shape[{i}] = {s} is negative (shape {tuple(shape)})")
    return tuple(int(s) for s in shape)


def _first_true(xp, mask):
    """Host index (tuple) of the first True of a boolean array."""
    flat = int(_be.to_numpy(xp.argmax(mask.reshape(-1))))
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape))


def _bounds_check(xp, arr, size, name, what, op):
    """IndexError naming the first entry of ``arr`` outside [0, size)."""
    if arr.size == 0:
        return
    bad = (arr < 0) | (arr >= size)
    if bool(bad.any()):
        where = _first_true(xp, bad)
        val = int(_be.to_numpy(arr[where]))
        pos = ", ".join(str(i) for i in where)
        raise IndexError(f"{op}: {name}[{pos}] = {val} is out of bounds for {what} (valid range [0, {size - 1}])"
                         if size > 0 else f"{op}: {name}[{pos}] = {val} is out of bounds for {what}, which has size 0")


def _device_of(v):
    return _be.device_of(v.data)


# ---------------------------------------------------------------------------
# the common base
# ---------------------------------------------------------------------------

class SparseTensor:
    """Base of SparseCOOTensor and SparseCSRTensor (shared attributes, autograd glue)."""

    __array_ufunc__ = None  # make NumPy defer `ndarray @ sparse` to __rmatmul__
    layout = "?"

    # -- attributes -------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        """The stored values, a dense Tensor (nnz, *dense_shape); differentiable."""
        return self._values

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def nnz(self) -> int:
        return int(self._values.shape[0])

    @property
    def dense_dim(self) -> int:
        return len(self._shape) - self.sparse_dim

    @property
    def is_sparse(self) -> bool:
        return True

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def _xp(self):
        return _be.array_module(self._values.data)

    # -- autograd ----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._values.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True):
        """Make the stored values a leaf that requires grad (in place); returns self."""
        self._values.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._values.is_leaf

    @property
    def grad_fn(self):
        return self._values.grad_fn

    @property
    def grad(self):
        """The gradient: a sparse tensor with this tensor's indices and layout, or None."""
        g = self._values.grad
        return None if g is None else self._grad_like(g)

    @grad.setter
    def grad(self, g):
        if g is None:
            self._values.grad = None
        elif isinstance(g, SparseTensor):
            self._values.grad = g._values
        else:
            raise TypeError("grad: assign None or a sparse tensor with the same indices")

    def retain_grad(self):
        self._values.retain_grad()

    def _sparse_values_for_grad(self) -> Tensor:
        """The Tensor autograd differentiates for this sparse tensor (gradcheck, mg.grad)."""
        return self._values

    def detach(self):
        """The same indices with values cut from the graph (shares memory)."""
        return self._with_values(self._values.detach())

    def backward(self, grad=None, retain_graph=False, create_graph=False):
        """Backpropagate from this sparse tensor.

        ``grad`` is the upstream gradient: a dense Tensor / array of this shape, or a
        sparse tensor of this shape (any layout, coalesced or not). Each stored entry
        receives the upstream gradient at its coordinates; nothing is densified.
        """
        g = self._values_grad_from(grad)
        _ag.run_backward([self._values], [g], retain_graph=retain_graph or create_graph,
                         create_graph=create_graph)

    def _values_grad_from(self, grad):
        """The gradient of ``values`` given an upstream gradient of the whole tensor (Tensor ops:
        recorded when the upstream gradient itself carries a history, as under create_graph)."""
        xp = self._xp()
        if grad is None:
            if K.prod(self._shape) != 1:
                raise RuntimeError(
                    f"backward: grad can be implicitly created only for one-element outputs; this sparse "
                    f"output has shape {self._shape}. Pass grad= (dense or sparse, shape {self._shape})")
            return _wrap(xp.ones(self._values.shape, dtype=self.dtype))
        if isinstance(grad, SparseTensor):
            if grad.shape != self._shape:
                raise RuntimeError(f"backward: sparse grad has shape {grad.shape} but the output has shape "
                                   f"{self._shape}; they must match exactly")
            return self._gather_sparse(grad)
        if not isinstance(grad, Tensor):
            grad = Tensor(xp.asarray(grad, dtype=self.dtype))
        if grad.shape != self._shape:
            raise RuntimeError(f"backward: grad has shape {grad.shape} but the output has shape {self._shape}; "
                               "they must match exactly")
        rows = self._coo_rows()
        if not rows:
            return grad.reshape((1,) + grad.shape)[xp.zeros(self.nnz, dtype=np.int64)]
        return grad[tuple(rows)]

    def _gather_sparse(self, grad):
        """The sparse ``grad`` read at this tensor's stored coordinates: for each entry, the
        block (dense dims) of ``grad`` there, zeros where ``grad`` stores nothing. O(nnz)."""
        from ..ops.elementwise import where
        from ..ops.shape import index_add

        xp = self._xp()
        S = self.sparse_dim
        if grad.sparse_dim < S:  # move grad's leading dense dims into its sparse part
            grad = grad.to_sparse_coo()._respread(S)
        gc = grad.coalesce()
        block = tuple(self._shape[S:])
        if gc.nnz == 0:  # grad stores nothing: every entry gets zeros
            return _wrap(xp.zeros((self.nnz,) + block, dtype=gc.dtype))
        gv = gc._values
        if gc.sparse_dim == S and gc.nnz == self.nnz and (
                (gc.layout == self.layout == "coo" and _same_arrays(gc._idx, self._idx))
                or (gc.layout == self.layout == "csr" and _same_arrays(gc._crow, self._crow)
                    and _same_arrays(gc._col, self._col))):
            return gv
        if S == 0:  # every entry is a copy of the whole (dense-shaped) block
            return gc.to_dense().reshape((1,) + block).broadcast_to((self.nnz,) + block)
        src = gc._coo_rows()
        if gc.sparse_dim == S:
            pos, found = K.lookup(xp, src, self._coo_rows(), self._shape[:S])
            return where(_wrap(found.reshape((-1,) + (1,) * len(block))), gv[pos], 0.0)
        # grad is sparse in some of this tensor's dense dims: scatter its entries into
        # one block per distinct stored coordinate, then hand each entry its block
        groups, uniq = K.group_coords(xp, self._coo_rows(), self._shape[:S])
        pos, found = K.lookup(xp, uniq, src[:S], self._shape[:S])
        keep = xp.flatnonzero(found)
        where_ = (pos[keep],) + tuple(r[keep] for r in src[S:])
        blocks = index_add((groups.n,) + block, where_, gv[keep])
        return blocks if groups.identity else blocks[groups.inverse()]

    # -- operators -------------------------------------------------------------------
    def sum(self, axis=NOARG, dtype=None, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
        """``mg.sparse.sum(self, axis=None, dtype=None, keepdims=False)`` (``dim``/``keepdim`` aliases)."""
        from .ops import sum as _sum

        return _sum(self, axis, dtype, keepdims, dim=dim, keepdim=keepdim)

    def __matmul__(self, other):
        from .ops import matmul

        return matmul(self, other)

    def __rmatmul__(self, other):
        from .ops import matmul

        return matmul(other, self)

    matmul = __matmul__

    def _sparse_matmul(self, a, b):
        """``mg.matmul`` / ``@`` with a sparse operand: the sparse product (never densified)."""
        from .ops import matmul

        return matmul(a, b)

    def to_scipy(self):
        """A SciPy sparse array (coo_array / csr_array) with a host copy of the data (no gradient)."""
        from .convert import to_scipy

        return to_scipy(self)

    def astype(self, dtype):
        """The values cast to ``dtype`` (differentiable between floating dtypes)."""
        return self._with_values(self._values.astype(dtype))

    def to(self, device=None, dtype=None):
        """Move to ``device`` and/or cast to ``dtype``; differentiable in the values."""
        if isinstance(device, (np.dtype, type)) and dtype is None:
            device, dtype = None, device
        out = self
        if device is not None:
            dev = _be.parse_device(device)
            out = out._to_device(dev)
        if dtype is not None:
            out = out.astype(dtype)
        return out

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def _repr_body(self):
        raise NotImplementedError

    def __repr__(self):
        extra = [f"shape={self._shape}", f"nnz={self.nnz}", f"dtype={self.dtype}"]
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self._values.grad_fn is not None:
            extra.append(f"grad_fn=<{self._values.grad_fn.op}>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return f"sparse_{self.layout}_tensor(" + self._repr_body() + ", " + ", ".join(extra) + ")"

    __str__ = __repr__

    def __bool__(self):
        raise ValueError("the truth value of a sparse tensor is ambiguous; use .to_dense()")


def _same_arrays(a, b):
    if a is b:
        return True
    if a.shape != b.shape:
        return False
    xp = _be.array_module(a, b)
    return bool(xp.array_equal(a, b))


def _arr_str(a):
    a = _be.to_numpy(a)

    def one(x):
        return np.array2string(x, separator=", ", threshold=20, edgeitems=3, precision=4, max_line_width=10 ** 6)

    if a.ndim == 2 and a.shape[0] <= 8:  # index rows on one line
        return "[" + ", ".join(one(r) for r in a) + "]"
    return one(a)


# ---------------------------------------------------------------------------
# COO
# ---------------------------------------------------------------------------

class SparseCOOTensor(SparseTensor):
    """A sparse tensor in coordinate format: ``indices`` (sparse_dim, nnz), ``values`` (nnz, *dense)."""

    layout = "coo"

    def __init__(self, indices, values, shape=None, requires_grad=False):
        s = coo_tensor(indices, values, shape, requires_grad)
        self._idx, self._values, self._shape, self._coalesced = s._idx, s._values, s._shape, s._coalesced

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

    def to_sparse_csr(self):
        """CSR with the same entries (coalesced first); needs 2 or 3 sparse dims."""
        from .convert import coo_to_csr

        return coo_to_csr(self)

    def _repr_body(self):
        return f"indices={_arr_str(self._idx)}, values={_arr_str(self._values.data)}"


# ---------------------------------------------------------------------------
# CSR
# ---------------------------------------------------------------------------

class SparseCSRTensor(SparseTensor):
    """Compressed sparse rows: 2-D, or 3-D batched (see the module docstring)."""

    layout = "csr"

    def __init__(self, crow_indices, col_indices, values, shape=None, requires_grad=False):
        s = csr_tensor(crow_indices, col_indices, values, shape, requires_grad)
        for k in ("_crow", "_col", "_values", "_shape", "_coalesced", "_rows_cache"):
            setattr(self, k, getattr(s, k))

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


# ---------------------------------------------------------------------------
# public constructors
# ---------------------------------------------------------------------------

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
    op = "coo_tensor"
    v = _as_values(values, op)
    xp = v._xp()
    idx = _as_index(indices, "indices", op, xp, _device_of(v))
    if idx.ndim != 2:
        raise ValueError(f"{op}: indices must have 2 dims (sparse_dim, nnz), got shape {tuple(idx.shape)}")
    if v.ndim < 1:
        raise ValueError(f"{op}: values must have at least 1 dim (nnz, *dense_shape), got a 0-d value")
    S, nnz = int(idx.shape[0]), int(idx.shape[1])
    if v.shape[0] != nnz:
        raise ValueError(f"{op}: nnz mismatch: indices have {nnz} entries (shape {tuple(idx.shape)}) but values "
                         f"have {v.shape[0]} (shape {tuple(v.shape)}); values.shape[0] must equal indices.shape[1]")
    dense = tuple(v.shape[1:])
    if shape is None:
        if nnz:
            sp = tuple(int(m) + 1 for m in _be.to_numpy(idx.max(axis=1)))
            neg = idx < 0
            if bool(neg.any()):
                d, k = _first_true(xp, neg)
                raise IndexError(f"{op}: indices[{d}, {k}] = {int(_be.to_numpy(idx[d, k]))} is negative")
        else:
            sp = (0,) * S
        return SparseCOOTensor._make(idx, _finish(v, requires_grad), sp + dense)
    shape = _check_shape(shape, op)
    if len(shape) != S + len(dense):
        raise ValueError(f"{op}: shape {shape} has {len(shape)} dims, but indices give {S} sparse dims and "
                         f"values {len(dense)} dense dims (values shape {tuple(v.shape)})")
    if shape[S:] != dense:
        raise ValueError(f"{op}: the dense part of shape {shape}, {shape[S:]}, must equal values.shape[1:] = {dense}")
    if nnz and S:
        sizes = xp.asarray(shape[:S], dtype=np.int64)[:, None]
        bad = (idx < 0) | (idx >= sizes)
        if bool(bad.any()):
            d, k = _first_true(xp, bad)
            val = int(_be.to_numpy(idx[d, k]))
            raise IndexError(f"{op}: indices[{d}, {k}] = {val} is out of bounds for dim {d} of shape {shape} "
                             f"(valid range [0, {shape[d] - 1}])" if shape[d] else
                             f"{op}: indices[{d}, {k}] = {val} is out of bounds for dim {d} of shape {shape}, "
                             "which has size 0")
    return SparseCOOTensor._make(idx, _finish(v, requires_grad), shape)


def _finish(v, requires_grad):
    if requires_grad:
        if not v.requires_grad:
            v.requires_grad = True
    return v


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
    op = "csr_tensor"
    v = _as_values(values, op)
    xp = v._xp()
    dev = _device_of(v)
    crow = _as_index(crow_indices, "crow_indices", op, xp, dev)
    col = _as_index(col_indices, "col_indices", op, xp, dev)
    if crow.ndim not in (1, 2):
        raise ValueError(f"{op}: crow_indices must be 1-D (rows + 1,) or 2-D (batch, rows + 1), got shape "
                         f"{tuple(crow.shape)}")
    batched = crow.ndim == 2
    if batched and col.ndim == 2:  # PyTorch's layout: the same nnz in every batch
        if col.shape[0] != crow.shape[0]:
            raise ValueError(f"{op}: col_indices has {col.shape[0]} batches but crow_indices has {crow.shape[0]}")
        if v.ndim < 2 or tuple(v.shape[:2]) != tuple(col.shape):
            raise ValueError(f"{op}: with 2-D col_indices {tuple(col.shape)}, values must start with the same "
                             f"two dims, got shape {tuple(v.shape)}")
        col = col.reshape(-1)
        v = v.reshape((-1,) + tuple(v.shape[2:]))
    if col.ndim != 1:
        raise ValueError(f"{op}: col_indices must be 1-D (nnz,), got shape {tuple(col.shape)}")
    if v.ndim < 1:
        raise ValueError(f"{op}: values must have at least 1 dim (nnz, *dense_shape), got a 0-d value")
    nnz = int(col.shape[0])
    if v.shape[0] != nnz:
        raise ValueError(f"{op}: nnz mismatch: col_indices has {nnz} entries but values have {v.shape[0]} "
                         f"(shape {tuple(v.shape)})")
    if crow.shape[-1] < 1:
        raise ValueError(f"{op}: crow_indices needs rows + 1 >= 1 entries per batch, got shape {tuple(crow.shape)}")
    dense = tuple(v.shape[1:])
    nsp = 3 if batched else 2
    rows = int(crow.shape[-1]) - 1
    if shape is None:
        cols = int(_be.to_numpy(col.max())) + 1 if nnz else 0
        shape = ((int(crow.shape[0]),) if batched else ()) + (rows, cols) + dense
    shape = _check_shape(shape, op)
    if len(shape) != nsp + len(dense):
        kind = "batched (3-D) CSR with 2-D crow_indices" if batched else "2-D CSR with 1-D crow_indices"
        raise ValueError(f"{op}: shape {shape} has {len(shape)} dims, but a {kind} and values of shape "
                         f"{tuple(v.shape)} need {nsp + len(dense)}")
    if shape[nsp:] != dense:
        raise ValueError(f"{op}: the dense part of shape {shape}, {shape[nsp:]}, must equal values.shape[1:] = {dense}")
    if batched and crow.shape[0] != shape[0]:
        raise ValueError(f"{op}: crow_indices has {crow.shape[0]} batches (shape {tuple(crow.shape)}) but shape "
                         f"{shape} has {shape[0]}")
    if rows != shape[nsp - 2]:
        raise ValueError(f"{op}: crow_indices has {rows + 1} entries per batch, but shape {shape} has "
                         f"{shape[nsp - 2]} rows: it needs rows + 1 = {shape[nsp - 2] + 1}")
    c2 = crow.reshape(-1, rows + 1)
    first = c2[:, 0]
    if bool((first != 0).any()):
        b = int(_be.to_numpy(xp.argmax(first != 0)))
        where = f"[{b}, 0]" if batched else "[0]"
        raise ValueError(f"{op}: crow_indices{where} = {int(_be.to_numpy(first[b]))} must be 0")
    if rows:
        dec = c2[:, 1:] < c2[:, :-1]
        if bool(dec.any()):
            b, r = _first_true(xp, dec)
            where = (lambda i: f"[{b}, {i}]") if batched else (lambda i: f"[{i}]")
            raise ValueError(
                f"{op}: crow_indices must be non-decreasing, but crow_indices{where(r + 1)} = "
                f"{int(_be.to_numpy(c2[b, r + 1]))} < crow_indices{where(r)} = {int(_be.to_numpy(c2[b, r]))}")
    total = int(_be.to_numpy(c2[:, -1].sum()))
    if total != nnz:
        last = "the sum of crow_indices[:, -1]" if batched else "crow_indices[-1]"
        raise ValueError(f"{op}: {last} = {total} must equal nnz = {nnz} (the length of col_indices and values)")
    _bounds_check(xp, col, shape[nsp - 1], "col_indices", f"the {shape[nsp - 1]} columns of shape {shape}", op)
    return SparseCSRTensor._make(crow, col, _finish(v, requires_grad), shape)
