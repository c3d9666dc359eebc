"""The argument checks of the sparse constructors, below the layouts that use them.

``coo_parts`` and ``csr_parts`` turn ``coo_tensor`` / ``csr_tensor``'s arguments into checked
arrays (raising the errors those constructors document); ``SparseCOOTensor(...)``,
``SparseCSRTensor(...)`` and the constructors in ``constructors.py`` all build from them. This
module imports only ``base.py`` and the kernels, so the layouts need not import the constructors.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from ..engine import run_op
from ..ops.shape import ALIAS
from ..tensor import Tensor
from . import _kernels as K
from .base import SparseTensor


class IndexDtypeError(TypeError, ValueError):
    """Index arrays must hold integers (a TypeError and a ValueError)."""

    __module__ = "minigrad.sparse.constructors"  # its name in tracebacks, as before it moved here


def coo_parts(indices, values, shape=None, requires_grad=False):
    """``coo_tensor``'s arguments checked: (indices (sparse_dim, nnz) int64, values Tensor, shape)."""
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
        return idx, _finish(v, requires_grad), sp + dense
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
    return idx, _finish(v, requires_grad), shape


def csr_parts(crow_indices, col_indices, values, shape=None, requires_grad=False):
    """``csr_tensor``'s arguments checked: (crow_indices, col_indices (nnz,), values Tensor, shape)."""
    op = "csr_tensor"
    v = _as_values(values, op)
    xp = v._xp()
    dev = _device_of(v)
    crow = _as_index(crow_indices, "crow_indices", op, xp, dev)
    col = _as_index(col_indices, "col_indices", op, xp, dev)
    col, v = _csr_flatten(crow, col, v, op)
    shape = _csr_shape(crow, col, v, shape, op)
    nsp = crow.ndim + 1
    _check_crow(xp, crow, int(col.shape[0]), op)
    _bounds_check(xp, col, shape[nsp - 1], "col_indices", f"the {shape[nsp - 1]} columns of shape {shape}", op)
    return crow, col, _finish(v, requires_grad), shape


def _finish(v, requires_grad):
    if requires_grad:
        if not v.requires_grad:
            v.requires_grad = True
    return v


def _as_values(values, op):
    if isinstance(values, SparseTensor):
        raise TypeError(f"{op}: values must be dense, got a sparse tensor")
    if isinstance(values, Tensor):
        if values.requires_grad:
            return values
        if values._tangents:  # a dual constant: a view that keeps its tangents (forward mode), as detach would not
            return run_op(ALIAS, values)
        return values.detach()
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


def _csr_flatten(crow, col, v, op):
    """``col`` (nnz,) and ``v`` (nnz, *dense) after the rank checks, PyTorch's batched form flattened."""
    if crow.ndim not in (1, 2):
        raise ValueError(f"{op}: crow_indices must be 1-D (rows + 1,) or 2-D (batch, rows + 1), got shape "
                         f"{tuple(crow.shape)}")
    if crow.ndim == 2 and col.ndim == 2:  # PyTorch's layout: the same nnz in every batch
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
    return col, v


def _csr_shape(crow, col, v, shape, op):
    """The checked full shape (inferred when None) of a CSR tensor with these arrays."""
    batched = crow.ndim == 2
    dense = tuple(v.shape[1:])
    nsp = 3 if batched else 2
    rows = int(crow.shape[-1]) - 1
    if shape is None:
        cols = int(_be.to_numpy(col.max())) + 1 if col.shape[0] else 0
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
    return shape


def _check_crow(xp, crow, nnz, op):
    """Each batch's row pointers start at 0 and never decrease, and they count ``nnz`` entries."""
    batched = crow.ndim == 2
    rows = int(crow.shape[-1]) - 1
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
