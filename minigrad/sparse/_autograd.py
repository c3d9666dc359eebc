"""The differentiable pieces sparse ops are made of.

Each takes and returns dense minigrad Tensors (the stored values) and is a registered op
(``mg.ops.registry()``), run by the engine's one ``run_op``; index arrays ride along as
constants. Rules are written in the array API, as every rule is, so second derivatives come for free.
"""
from __future__ import annotations

import numpy as np

from .. import _batched
from .. import kernels as _k
from ..engine import run_op
from ..ops._registry import OnDevice, Sample, defop, linear_jvp, multilinear_jvp
from ..ops.indexing import _ARRAY
from . import _kernels as K


def gather_rows(v, idx):
    """``v[idx]`` along axis 0 (differentiable; repeated indices accumulate in backward)."""
    return v[idx]


def _segsum_rule(ctx, g, inv, n):
    return (g[inv],)


SEGMENT_SUM = defop("sparse_segment_sum", lambda xp, v, inv, n: K.segment_sum(xp, v, inv, n), _segsum_rule,
                    kind="reduce", jvp=linear_jvp(0),
                    samples=lambda rng: [Sample(rng.standard_normal((5, 2)), inv=np.array([0, 2, 0, 1, 2]), n=3)])


def segment_sum(v, inv, n):
    """Rows of ``v`` added into ``n`` segments given by ``inv`` (differentiable in ``v``).

    Backward is a gather: each entry receives the gradient of its segment.
    """
    out = run_op(SEGMENT_SUM, v, inv=inv, n=n)
    if out._node is not None:
        out._node.info = {"segments": n}
    return out


def _binned_rule(ctx, g, groups):
    full = ctx.xp.index_add(g, groups.keys, shape=(groups.space,), template=(_ARRAY,))
    return (full[groups.entry_keys],)


def _binned_samples(rng):
    def groups(xp):  # a counted (binned) grouping, built on the device under test
        return K.group_coords(xp, [xp.asarray(np.array([0, 2, 0, 1, 2]))], (3,), False)[0]

    return [Sample(rng.standard_normal(5), groups=OnDevice(groups))]


BINNED_SUM = defop("sparse_binned_sum", lambda xp, v, groups: K.binned_sum(xp, v, groups), _binned_rule,
                   kind="reduce", jvp=linear_jvp(0), samples=_binned_samples)


def group_sum(v, groups):
    """Rows of ``v`` added within each group of ``groups`` (a Groups); differentiable in ``v``.

    A binned grouping of 1-D floating values sums with one bincount over the key space
    (no inverse map); otherwise a segment sum over the inverse map.
    """
    if groups.binned and v.ndim == 1 and v.dtype.kind == "f":
        out = run_op(BINNED_SUM, v, groups=groups)
        if out._node is not None:
            out._node.op = "sparse_segment_sum"
            out._node.info = {"segments": groups.n}
        return out
    return segment_sum(v, groups.inverse(), groups.n)


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
        flat[...] = _k.bincount_add(xp, keys, vd, flat.shape[0])
    else:
        _k.index_add(xp, flat, keys, vd)
    return out


def _todense_rule(ctx, g, rows, shape):
    if not rows:
        n = ctx.meta[0][0][0]
        return (ctx.xp.broadcast_to(g.reshape((1,) + tuple(g.shape)), (n,) + tuple(g.shape)),)
    return (g[tuple(rows)],)


TO_DENSE = defop("sparse_to_dense", _todense_fwd, _todense_rule, kind="other", jvp=linear_jvp(0),
                 batch=_batched.fresh_buffers,
                 samples=lambda rng: [Sample(rng.standard_normal(3), rows=(np.array([0, 1, 1]), np.array([2, 0, 2])),
                                             shape=(2, 3))])


def to_dense(v, rows, shape):
    """The dense tensor of ``shape`` holding the values ``v`` at coordinates ``rows``
    (duplicates add up). Backward gathers the gradient at the stored coordinates."""
    shape = tuple(int(s) for s in shape)
    out = run_op(TO_DENSE, v, rows=tuple(rows), shape=shape)
    if out._node is not None and rows:
        out._node.info = {"shape": shape}
    return out


def _spmm_fwd(xp, vd, bd, rows, cols, nrows):
    dt = np.result_type(vd.dtype, bd.dtype)
    if vd.dtype != dt:
        vd = vd.astype(dt)
    if bd.dtype != dt:
        bd = bd.astype(dt)
    prod = vd[:, None] * bd[cols]
    return K.segment_sum(xp, prod, rows, nrows)


def _spmm_rule(ctx, g, rows, cols, nrows):
    v, b = ctx.saved
    gv = gb = None
    gr = g[rows]  # (nnz, N)
    if ctx.parents[0] is not None:
        gv = (gr * b[cols]).sum(axis=-1)
    if ctx.parents[1] is not None:
        gb = ctx.xp.sparse_segment_sum(gr * v.reshape((-1, 1)), inv=cols, n=ctx.meta[1][0][0])
    return gv, gb


SPMM = defop("sparse_matmul", _spmm_fwd, _spmm_rule, save=(0, 1), kind="other", jvp=multilinear_jvp(0, 1),
             samples=lambda rng: [Sample(rng.standard_normal(3), rng.standard_normal((3, 2)),
                                         rows=np.array([0, 1, 1]), cols=np.array([2, 0, 2]), nrows=2)])


def spmm(v, rows, cols, nrows, b):
    """out (nrows, N) = sum over stored (r, c, v) of v * b[c, :] placed in row r.

    Differentiable in ``v`` (nnz,) and ``b`` (K, N); saves only the two inputs.
    """
    return run_op(SPMM, v, b, rows=rows, cols=cols, nrows=nrows)
