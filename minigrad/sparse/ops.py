"""Sparse sum and sparse x dense matmul, built from dense ops on the stored values."""
from __future__ import annotations

import numpy as np

from .._util import NOARG, pick
from ..engine import run_op
from ..ops._registry import Sample, defop, linear_jvp
from ..ops.reduce import normalize_axis
from ..ops.reduce import result_dtype as _result_dtype
from ..ops.reduce import sum as _dense_sum
from ..ops.matmul import matmul as _dense_matmul
from ..tensor import Tensor
from . import _autograd as A
from . import _kernels as K
from .convert import csr_from_sorted
from .tensor import SparseCOOTensor, SparseTensor


ALIAS = defop("sparse_sum", lambda xp, v: v, lambda ctx, g: (g,), kind="reduce", jvp=linear_jvp(0),
              samples=lambda rng: [Sample(rng.standard_normal(3))])


def _alias(v):
    """``v`` as a new Tensor over the same data, recorded (gradients pass straight through)."""
    return run_op(ALIAS, v)


def sum(s, axis=NOARG, dtype=None, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):  # noqa: A001
    """Sum of a sparse tensor over the given axes, never densified.

    Args:
        s: a sparse tensor (a dense Tensor is passed to ``mg.sum``).
        axis: None (every axis), an int, a tuple/list of ints (negative count from the end),
            or ``()`` for no reduction (a copy). The same rules and errors as dense ``mg.sum``.
            ``dim`` is an alias.
        dtype: each stored value is cast to it before summing, and the result has it; by
            default bool and signed ints sum to int64, unsigned to uint64, floats keep theirs.
        keepdims: keep each reduced axis with size 1 (``keepdim`` is an alias).

    Returns:
        while a sparse dim remains, a sparse tensor (coalesced; CSR when the input is CSR and
        the result has 2 or 3 sparse dims, else COO); once every sparse dim is summed, a dense
        Tensor. ``result.to_dense()`` equals ``mg.sum(s.to_dense(), axis, keepdims, dtype)``.
        Backward gives every stored entry the upstream gradient at its kept coordinates.

    Cost: O(nnz) (sorted or counted keys) or O(nnz log nnz) (a sort) time and O(nnz) memory,
    whatever the dense shape.

    >>> s = mg.sparse.coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], shape=(2, 3))
    >>> mg.sparse.sum(s, axis=1).to_dense()
    tensor([1., 5.])
    """
    if not isinstance(s, SparseTensor):
        return _dense_sum(s, axis, keepdims, dtype, dim=dim, keepdim=keepdim)
    axes, dtype, keepdims = _sum_args(s, axis, dtype, keepdims, dim, keepdim)
    v = s._values
    rdt = _result_dtype(v.dtype, dtype)
    if rdt is not None and rdt != v.dtype:
        v = v.astype(rdt)  # each value cast before summing, as NumPy does
    if not axes:  # no reduction: a copy with the same indices
        return s._with_values(v.clone() if v is s._values else v)
    S = s.sparse_dim
    sp_axes = tuple(a for a in axes if a < S)
    dn_axes = tuple(a - S + 1 for a in axes if a >= S)
    if dn_axes:
        v = v.sum(axis=dn_axes, keepdims=keepdims, dtype=v.dtype)
    if not sp_axes and S:
        return s._with_values(v)
    if set(range(S)) <= set(sp_axes):  # every sparse dim summed: a dense result
        out = v.sum(axis=0, dtype=v.dtype)
        if keepdims:
            out = out.reshape((1,) * S + tuple(out.shape))
        return out
    return _sum_sparse_dims(s, v, sp_axes, keepdims)


def _sum_args(s, axis, dtype, keepdims, dim, keepdim):
    """``sum``'s arguments resolved: (normalized axes, dtype, keepdims as a bool)."""
    axis = pick("axis", axis, "dim", dim, None, "sparse.sum")
    keepdims = pick("keepdims", keepdims, "keepdim", keepdim, False, "sparse.sum")
    if isinstance(dtype, (bool, np.bool_)):
        raise TypeError(f"sparse.sum: dtype must be a dtype, got {dtype!r} (the signature is "
                        "sum(s, axis=None, dtype=None, keepdims=False); pass keepdims= by keyword)")
    keepdims = bool(keepdims)
    return normalize_axis(axis, s.ndim, "sum"), dtype, keepdims


def _sum_sparse_dims(s, v, sp_axes, keepdims):
    """``s`` with values ``v`` summed over the sparse dims ``sp_axes`` (some sparse dims kept):
    the entries grouped by their kept coordinates, a coalesced sparse result."""
    S = s.sparse_dim
    kept = tuple(d for d in range(S) if d not in sp_axes)
    xp = s._xp()
    rows = s._coo_rows()
    kdims = tuple(s.shape[d] for d in kept)
    # the coordinates stay in order when the input is coalesced and the kept dims lead
    known = s._coalesced is True
    assume_sorted = (kept == tuple(range(len(kept)))) if known else None
    if keepdims:
        at, nrows = kept, S
        sp_shape = tuple(1 if d in sp_axes else s.shape[d] for d in range(S))
    else:
        at, nrows = tuple(range(len(kept))), len(kept)
        sp_shape = kdims

    def alloc(n):
        a = xp.empty((nrows, n), dtype=np.int64)
        for d in range(nrows):
            if d not in at:
                a[d] = 0
        return a

    groups, coords = K.group_coords(xp, [rows[d] for d in kept], kdims, assume_sorted, alloc, at)
    nv = _alias(v) if groups.identity else A.group_sum(v, groups)
    full = [coords[d] for d in range(nrows)]
    shape = sp_shape + tuple(nv.shape[1:])
    if s.layout == "csr" and len(full) in (2, 3):
        return csr_from_sorted(xp, full, nv, shape)
    return SparseCOOTensor._make(coords, nv, shape, True)


# ---------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------

def _as_dense(x, op):
    if isinstance(x, Tensor):
        return x
    return Tensor(x)


def _check_plain(s, op):
    if s.dense_dim:
        raise ValueError(f"{op}: hybrid sparse tensors (dense_dim={s.dense_dim}) are not supported; "
                         "use .to_dense() or a tensor without dense dims")
    if s.ndim not in (2, 3):
        raise ValueError(f"{op}: the sparse operand must be 2-D or 3-D (batched), got shape {s.shape}")


def matmul(a, b):
    """Sparse x dense (or dense x sparse) matrix product; a dense Tensor.

    ``s`` (R, K) @ ``d`` (K,) / (K, N); batched ``s`` (B, R, K) @ (B, K, N), (K, N) or (K,);
    ``d`` (M, R) or (R,) @ ``s`` (R, K). Differentiable in the stored values (a gradient on
    the stored entries only) and in the dense operand. Cost O(nnz * N).

    >>> s = mg.sparse.coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], shape=(2, 2))
    >>> (s @ mg.ones(2, 1)).shape
    (2, 1)
    """
    op = "sparse.matmul"
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        raise TypeError(f"{op}: sparse @ sparse is not supported; convert one operand with .to_dense()")
    if isinstance(a, SparseTensor):
        return _sparse_dense(a, _as_dense(b, op), op)
    if isinstance(b, SparseTensor):
        return _dense_sparse(_as_dense(a, op), b, op)
    return _dense_matmul(a, b)


def _sparse_dense(s, b, op):
    _check_plain(s, op)
    v = s._values
    if b.ndim == 0:
        raise ValueError(f"{op}: the dense operand needs at least 1 dim, got a 0-d tensor")
    kdim = s.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if kb != kdim:
        raise ValueError(f"{op}: shapes {s.shape} and {tuple(b.shape)} are not aligned: the last dim of the sparse "
                         f"operand ({kdim}) must equal the {'only' if b.ndim == 1 else 'second-to-last'} dim of "
                         f"the dense one ({kb})")
    vec = b.ndim == 1
    if vec:
        b = b.reshape((kdim, 1))
    rows = s._coo_rows()
    if s.ndim == 2:
        r, c = rows
        if b.ndim == 2:
            out = A.spmm(v, r, c, s.shape[0], b)
        else:  # (..., K, N): fold the leading dims into the columns
            lead = tuple(b.shape[:-2])
            nd = b.ndim
            bt = b.permute((nd - 2,) + tuple(range(nd - 2)) + (nd - 1,)).reshape((kdim, -1))
            o = A.spmm(v, r, c, s.shape[0], bt).reshape((s.shape[0],) + lead + (b.shape[-1],))
            out = o.permute(tuple(range(1, nd - 1)) + (0, nd - 1))
    else:
        bsz, nr = s.shape[0], s.shape[1]
        bi, r, c = rows
        if b.ndim == 3:
            if b.shape[0] != bsz:
                raise ValueError(f"{op}: batch sizes differ: sparse {s.shape} and dense {tuple(b.shape)}")
            cols = bi * kdim + c
            b2 = b.reshape((bsz * kdim, b.shape[-1]))
        elif b.ndim == 2:
            cols, b2 = c, b
        else:
            raise ValueError(f"{op}: a batched sparse operand {s.shape} takes a dense one of shape (K,), (K, N) "
                             f"or (B, K, N), got {tuple(b.shape)}")
        out = A.spmm(v, bi * nr + r, cols, bsz * nr, b2).reshape((bsz, nr, b2.shape[-1]))
    if vec:
        out = out.reshape(tuple(out.shape[:-1]))
    return out


def _dense_sparse(a, s, op):
    _check_plain(s, op)
    if s.ndim != 2:
        raise ValueError(f"{op}: dense @ sparse needs a 2-D sparse operand, got shape {s.shape}")
    if a.ndim == 0 or a.ndim > 2:
        raise ValueError(f"{op}: dense @ sparse takes a 1-D or 2-D dense operand, got shape {tuple(a.shape)}")
    if a.shape[-1] != s.shape[0]:
        raise ValueError(f"{op}: shapes {tuple(a.shape)} and {s.shape} are not aligned: the last dim of the dense "
                         f"operand ({a.shape[-1]}) must equal the first dim of the sparse one ({s.shape[0]})")
    r, c = s._coo_rows()
    at = a.reshape((a.shape[0], 1)) if a.ndim == 1 else a.T
    out = A.spmm(s._values, c, r, s.shape[1], at)  # (s^T @ a^T): (K, M)
    return out.reshape((s.shape[1],)) if a.ndim == 1 else out.T
