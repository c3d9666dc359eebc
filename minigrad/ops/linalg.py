"""matmul (1-D, 2-D, batched with broadcast batch dims) and outer."""
from __future__ import annotations

from .. import backend as _be
from ..tensor import Tensor
from . import _core as C


def _mm_rule(ctx, g, saved):
    a, b = saved
    ma, mb = ctx.meta
    a_shape, b_shape = ctx.attrs
    # promote 1-D operands the way matmul does, so one 2-D rule serves every case
    a1 = len(a_shape) == 1
    b1 = len(b_shape) == 1
    if a1 and b1:  # dot product: g is 0-d
        return (None if ma is None else g * b, None if mb is None else g * a)
    if a1:
        g = g.reshape(g.shape[:-1] + (1, g.shape[-1]))
    if b1:
        g = g.reshape(g.shape + (1,))
    ga = gb = None
    if ma is not None:
        bb = b.reshape((b_shape[0], 1)) if b1 else b
        ga = C.matmul(g, bb.swapaxes(-1, -2))
        ga = C.sum_to(ga, (1,) + a_shape if a1 else a_shape) if ga.shape != ((1,) + a_shape if a1 else a_shape) else ga
        if a1:
            ga = ga.reshape(a_shape)
    if mb is not None:
        aa = a.reshape((1, a_shape[0])) if a1 else a
        gb = C.matmul(aa.swapaxes(-1, -2), g)
        target = b_shape + (1,) if b1 else b_shape
        gb = C.sum_to(gb, target) if gb.shape != target else gb
        if b1:
            gb = gb.reshape(b_shape)
    return ga, gb


def matmul(a, b):
    """Matrix product with NumPy's rules: 1-D operands are promoted and the added
    dim removed; leading (batch) dims broadcast.

    >>> mg.matmul(mg.ones(2, 3), mg.ones(3, 4)).shape
    (2, 4)
    """
    if hasattr(a, "_sparse_values_for_grad") or hasattr(b, "_sparse_values_for_grad"):
        from .. import sparse  # sparse x dense (or dense x sparse) never densifies

        return sparse.matmul(a, b)
    ad = a.data if isinstance(a, Tensor) else C.const(a, "matmul")
    bd = b.data if isinstance(b, Tensor) else C.const(b, "matmul")
    if not hasattr(ad, "ndim") or not hasattr(bd, "ndim") or ad.ndim == 0 or bd.ndim == 0:
        raise ValueError(
            f"matmul: both operands need at least 1 dim, got shapes {C._shape_of(ad)} and {C._shape_of(bd)}"
        )
    ka = ad.shape[-1]
    kb = bd.shape[0] if bd.ndim == 1 else bd.shape[-2]
    if ka != kb:
        raise ValueError(
            f"matmul: shapes {tuple(ad.shape)} and {tuple(bd.shape)} are not aligned: the last dim of the "
            f"first ({ka}) must equal the {'only' if bd.ndim == 1 else 'second-to-last'} dim of the second ({kb})"
        )
    if type(ad) is not type(bd):
        C.check_same_device("matmul", ad, bd)
    try:
        out = C.timed("matmul", _be.matmul, ad, bd)
    except ValueError:
        raise ValueError(
            f"matmul: batch dims of shapes {tuple(ad.shape)} and {tuple(bd.shape)} do not broadcast"
        ) from None
    return C.record("matmul", _mm_rule, out, (a, b), saved=(a, b), attrs=(ad.shape, bd.shape))


def rmatmul(a, b):
    return matmul(b, a)


def outer(a, b):
    """Outer product of two vectors (flattened first, as NumPy does)."""
    if not isinstance(a, Tensor):
        a = Tensor(a)
    if not isinstance(b, Tensor):
        b = Tensor(b)
    return a.reshape(-1, 1) * b.reshape(1, -1)


def dot(a, b):
    return matmul(a, b)
