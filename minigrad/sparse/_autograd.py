"""The differentiable pieces sparse ops are made of.

Each op takes and returns dense minigrad Tensors (the stored values) and is
recorded through the normal engine with its own gradient rule; index arrays
ride along as constants in ``attrs``. Every rule is written so that it runs on
backend arrays (first-order backward) and on Tensors (``create_graph=True``),
as the engine requires.
"""
from __future__ import annotations

import numpy as np

from .. import backend as _be
from ..ops import _core as C
from ..ops import shape as _shape
from ..tensor import Tensor, _wrap
from . import _kernels as K


def _xp(a):
    return _be.array_module(a.data if isinstance(a, Tensor) else a)


# -- gather: out = v[idx] along the first axis -----------------------------------

def gather_rows(v, idx):
    """``v[idx]`` along axis 0 (differentiable; repeated indices accumulate in backward)."""
    if not C.is_t(v):
        return v[idx]
    return _shape.getitem(v, idx)


# -- scatter: out = zeros(n, ...) with v[i] added at idx[i] -----------------------

def _segsum_rule(ctx, g, saved):
    inv, _n = ctx.attrs
    return (gather_rows(g, inv),)


def segment_sum(v, inv, n):
    """Rows of ``v`` added into ``n`` segments given by ``inv`` (differentiable in ``v``).

    Backward is a gather: each entry receives the gradient of its segment.
    """
    if not C.is_t(v):
        return K.segment_sum(_xp(v), v, inv, n)
    out = C.timed("sparse_segment_sum", K.segment_sum, _xp(v), v.data, inv, n)
    return C.record("sparse_segment_sum", _segsum_rule, out, (v,), attrs=(inv, n),
                    info={"segments": n})


def _binned_rule(ctx, g, saved):
    (groups,) = ctx.attrs
    if not C.is_t(g):
        return (K.binned_spread(_xp(g), g, groups),)
    full = _shape.index_add((groups.space,), groups.keys, g)
    return (gather_rows(full, groups.entry_keys),)


def group_sum(v, groups):
    """Rows of ``v`` added within each group of ``groups`` (a Groups); differentiable in ``v``.

    A binned grouping of 1-D floating values sums with one bincount over the key space
    (no inverse map); otherwise a segment sum over the inverse map.
    """
    if groups.binned and v.ndim == 1 and v.dtype.kind == "f":
        out = C.timed("sparse_segment_sum", K.binned_sum, _xp(v), v.data, groups)
        return C.record("sparse_segment_sum", _binned_rule, out, (v,), attrs=(groups,),
                        info={"segments": groups.n})
    return segment_sum(v, groups.inverse(), groups.n)


# -- dense <-> stored entries --------------------------------------------------------

def _todense_rule(ctx, g, saved):
    rows, _shape_ = ctx.attrs
    return (g[tuple(rows)],)


def _todense_fwd(xp, vd, rows, shape):
    out = xp.zeros(shape, dtype=vd.dtype)
    if vd.shape[0] == 0:
        return out
    sp = shape[: len(rows)]
    if not rows:  # no sparse dims: every entry lands on the whole tensor
        out[...] = vd.sum(axis=0)
        return out
    keys, _ = K.keys_of(xp, rows, sp)  # the dense shape fits in memory, so the keys are linear
    flat = out.reshape((K.prod(sp),) + tuple(shape[len(rows):]))
    if flat.ndim == 1 and vd.dtype.kind in "fc":
        flat[...] = _be.bincount_add(xp, keys, vd, flat.shape[0])
    else:
        _be.index_add(xp, flat, keys, vd)
    return out


def to_dense(v, rows, shape):
    """The dense tensor of ``shape`` holding the values ``v`` at coordinates ``rows``
    (duplicates add up). Backward gathers the gradient at the stored coordinates."""
    shape = tuple(int(s) for s in shape)
    rows = tuple(rows)
    if not C.is_t(v):
        return _todense_fwd(_xp(v), v, rows, shape)
    out = C.timed("sparse_to_dense", _todense_fwd, _xp(v), v.data, rows, shape)
    if not rows:
        return C.record("sparse_to_dense", _todense_rule0, out, (v,), attrs=(v.shape[0],))
    return C.record("sparse_to_dense", _todense_rule, out, (v,), attrs=(rows, shape),
                    info={"shape": shape})


def _todense_rule0(ctx, g, saved):
    (n,) = ctx.attrs
    return (C.broadcast_to(g.reshape((1,) + tuple(g.shape)), (n,) + tuple(g.shape)),)


# -- sparse x dense matmul -------------------------------------------------------------

def _scatter_add_rows(x, idx, n):
    """zeros((n, *x.shape[1:])) with x's rows added at idx (dual)."""
    if C.is_t(x):
        return _shape.index_add((n,) + tuple(x.shape[1:]), idx, x)
    return K.segment_sum(_xp(x), x, idx, n)


def _spmm_fwd(xp, vd, rows, cols, bd, nrows):
    dt = np.result_type(vd.dtype, bd.dtype)
    if vd.dtype != dt:
        vd = vd.astype(dt)
    if bd.dtype != dt:
        bd = bd.astype(dt)
    prod = vd[:, None] * bd[cols]
    return K.segment_sum(xp, prod, rows, nrows)


def _spmm_rule(ctx, g, saved):
    v, b = saved
    rows, cols, nrows = ctx.attrs
    mv, mb = ctx.meta
    gv = gb = None
    gr = gather_rows(g, rows)  # (nnz, N)
    if mv is not None:
        gv = (gr * gather_rows(b, cols)).sum(axis=-1)
    if mb is not None:
        gb = _scatter_add_rows(gr * v.reshape((-1, 1)), cols, mb[0][0])
    return gv, gb


def spmm(v, rows, cols, nrows, b):
    """out (nrows, N) = sum over stored (r, c, v) of v * b[c, :] placed in row r.

    Differentiable in ``v`` (nnz,) and ``b`` (K, N); saves only the two inputs.
    """
    xp = _be.array_module(v.data, b.data)
    out = C.timed("sparse_matmul", _spmm_fwd, xp, v.data, rows, cols, b.data, nrows)
    return C.record("sparse_matmul", _spmm_rule, out, (v, b), saved=(v, b), attrs=(rows, cols, nrows))


def wrap(a):
    return _wrap(a)
