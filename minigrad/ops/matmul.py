"""matmul (1-D, 2-D, batched with broadcast batch dims), linear, outer, dot."""
from __future__ import annotations

import numpy as np

from ..backward import sum_to
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, composite, defop, multilinear_jvp, named, public


def mixed_floats(op, a, b, other="the second operand") -> TypeError:
    """The one dtype rule of ``linear``, ``matmul`` and ``@``: two floating operands of different
    widths are refused, with this message (docs/ops.md, "One dtype rule for products")."""
    return TypeError(f"{op}: input dtype {a} differs from {other}'s {b}; cast one (x.astype(w.dtype) or "
                     "model.to(dtype)), as PyTorch requires: linear, matmul and @ refuse mixed float widths alike")


def _mm_rule(ctx, g):
    a, b = ctx.saved
    # promote 1-D operands the way matmul does, so one 2-D rule serves every case
    a1, b1 = a.ndim == 1, b.ndim == 1
    if a1 and b1:  # dot product: g is 0-d
        return (g * b if ctx.parents[0] is not None else None), (g * a if ctx.parents[1] is not None else None)
    if a1:
        g = g.reshape(g.shape[:-1] + (1, g.shape[-1]))
        a = a.reshape(1, a.shape[0])
    if b1:
        g = g.reshape(g.shape + (1,))
        b = b.reshape(b.shape[0], 1)
    ga = gb = None
    if ctx.parents[0] is not None:
        ga = g @ b.swapaxes(-1, -2)
        if a1:  # sum any batch dims first, then drop the added dim
            ga = sum_to(ga, (1, ga.shape[-1])).reshape(-1)
    if ctx.parents[1] is not None:
        gb = a.swapaxes(-1, -2) @ g
        if b1:
            gb = sum_to(gb, (gb.shape[-2], 1)).reshape(-1)
    return ga, gb


def _mm_samples(rng):
    r = rng.standard_normal
    return [Sample(r((3, 4)), r((4, 2))), Sample(r((2, 3, 4)), r((4, 5))), Sample(r((4,)), r((2, 4, 3))),
            Sample(r((3, 4)), r((4,))), Sample(r((4,)), r((4,))), Sample(r((2, 1, 3, 4)), r((3, 4, 2))),
            Sample(r((3, 3)), r((3, 3)))]  # square: a rule that transposes a gradient gives wrong values


# xp: the operands' module, as run_op found it (no second look-up per call)
MATMUL = defop("matmul", lambda xp, a, b: xp.matmul(a, b), _mm_rule, save=(0, 1), broadcast=True, kind="other", ufunc="matmul",
               jvp=multilinear_jvp(), samples=_mm_samples, torch=lambda th, a, b: a @ b, complex='holomorphic')


@public(MATMUL, method="matmul", dunders=("__matmul__", "__rmatmul__"), numpy=(np.matmul,))
def matmul(a, b):
    """Matrix product with NumPy's rules: 1-D operands are promoted and the added
    dim removed; leading (batch) dims broadcast.

    >>> mg.matmul(mg.ones(2, 3), mg.ones(3, 4)).shape
    (2, 4)
    """
    if a.__class__ is Tensor and b.__class__ is Tensor and a.data.ndim >= 2 and b.data.ndim >= 2 \
            and a.data.shape[-1] == b.data.shape[-2] and a.data.dtype == b.data.dtype:
        try:
            return run_op(MATMUL, a, b)  # the common case: the checks below are for the messages
        except ValueError:
            pass
    if hasattr(a, "_sparse_matmul") or hasattr(b, "_sparse_matmul"):  # sparse x dense never densifies
        return (a if hasattr(a, "_sparse_matmul") else b)._sparse_matmul(a, b)
    da, db = getattr(getattr(a, "data", a), "dtype", None), getattr(getattr(b, "data", b), "dtype", None)
    if da is not None and db is not None and da != db and da.kind == "f" and db.kind == "f":
        raise mixed_floats("matmul", da, db)
    sa, sb = _shape(a), _shape(b)
    if len(sa) == 0 or len(sb) == 0:
        raise ValueError(f"matmul: both operands need at least 1 dim, got shapes {sa} and {sb}")
    ka, kb = sa[-1], (sb[0] if len(sb) == 1 else sb[-2])
    if ka != kb:
        raise ValueError(
            f"matmul: shapes {sa} and {sb} are not aligned: the last dim of the first ({ka}) must equal the "
            f"{'only' if len(sb) == 1 else 'second-to-last'} dim of the second ({kb})"
        )
    try:
        return run_op(MATMUL, a, b)
    except ValueError:
        raise ValueError(f"matmul: batch dims of shapes {sa} and {sb} do not broadcast") from None


def _shape(v):
    if isinstance(v, Tensor):
        return tuple(v.shape)
    return tuple(np.shape(v)) if not hasattr(v, "shape") else tuple(v.shape)



@composite("outer", samples=lambda rng: [Sample(rng.standard_normal(3), rng.standard_normal(4))], numpy=(np.outer,),
           method="outer", torch=lambda th, a, b: th.outer(a, b), complex=True)
@named("outer")
def outer(a, b):
    """Outer product of two vectors (flattened first, as NumPy does)."""
    a = a if isinstance(a, Tensor) else Tensor(a)
    b = b if isinstance(b, Tensor) else Tensor(b)
    return a.reshape(-1, 1) * b.reshape(1, -1)


# -- PyTorch's products of fixed ranks: mm, bmm, mv, addmm (matmul after a check of the ranks) ---------


def _ranked(name, a, b, ra, rb, what):
    a, b = _as(a), _as(b)
    if a.ndim != ra or b.ndim != rb:
        raise ValueError(f"{name}: expected {what}, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if ra == 3 and a.shape[0] != b.shape[0]:
        raise ValueError(f"{name}: batch sizes differ: shapes {tuple(a.shape)} and {tuple(b.shape)}")
    ka, kb = a.shape[-1], b.shape[-2] if rb >= 2 else b.shape[0]
    if ka != kb:
        raise ValueError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied ({ka} != {kb})")
    return matmul(a, b)


def _as(v):
    return v if isinstance(v, Tensor) else Tensor(v)


@composite("mm", method="mm", samples=lambda rng: [Sample(rng.standard_normal((3, 4)), rng.standard_normal((4, 2)))],
           torch=lambda th, a, b: th.mm(a, b), complex=True)
@named("mm")
def mm(input, mat2):  # noqa: A002 - PyTorch's name
    """PyTorch's ``mm``: the product of two matrices (2-D only, no broadcasting)."""
    return _ranked("mm", input, mat2, 2, 2, "two 2-D matrices")


@composite("bmm", method="bmm", samples=lambda rng: [Sample(rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)))],
           torch=lambda th, a, b: th.bmm(a, b), complex=True)
@named("bmm")
def bmm(input, mat2):  # noqa: A002
    """PyTorch's ``bmm``: batched matrix products of (b, n, m) and (b, m, p) (no broadcasting)."""
    return _ranked("bmm", input, mat2, 3, 3, "two 3-D batches of matrices")


@composite("mv", method="mv", samples=lambda rng: [Sample(rng.standard_normal((3, 4)), rng.standard_normal(4))],
           torch=lambda th, a, b: th.mv(a, b), complex=True)
@named("mv")
def mv(input, vec):  # noqa: A002
    """PyTorch's ``mv``: a matrix times a vector."""
    return _ranked("mv", input, vec, 2, 1, "a 2-D matrix and a 1-D vector")


@composite("addmm", method="addmm", samples=lambda rng: [
    Sample(rng.standard_normal((3, 2)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))),
    Sample(rng.standard_normal(2), rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), beta=0.5, alpha=2.0)],
    torch=lambda th, x, a, b, beta=1, alpha=1: th.addmm(x, a, b, beta=beta, alpha=alpha), complex=True)
@named("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """PyTorch's ``addmm``: ``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the
    product's shape; with ``beta=0`` input is ignored (its NaNs do not reach the result)."""
    prod = _ranked("addmm", mat1, mat2, 2, 2, "mat1 and mat2 2-D")
    x = _as(input)
    try:
        ok = np.broadcast_shapes(tuple(x.shape), tuple(prod.shape)) == tuple(prod.shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"addmm: input of shape {tuple(x.shape)} does not broadcast to the product's "
                         f"shape {tuple(prod.shape)}")
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return prod
    return prod + (x if beta == 1 else x * beta)


# -- linear: x @ w.T + b as one op (the layer every MLP runs) ---------------------------------


def _linear_fwd(xp, x, w, b=None):
    if x.ndim > 2:  # as rows: NumPy's stacked product with a transposed operand is slow
        return _linear_fwd(xp, x.reshape(-1, x.shape[-1]), w, b).reshape(x.shape[:-1] + (w.shape[0],))
    out = xp.matmul(x, w.T)  # xp: the arrays' module (run_op found it)
    if b is not None:
        if out.dtype == b.dtype and out.ndim >= 1:
            out += b  # a fresh array: add the bias in place, no temporary
        else:
            out = out + b
    return out


def _linear_rule(ctx, g):
    x, w = ctx.saved  # save=(0, 1)
    p = ctx.parents
    xp = ctx.xp
    gx = xp.matmul(g, w) if p[0] is not None else None
    gw = gb = None
    if p[1] is not None or (len(p) == 3 and p[2] is not None):
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        if p[1] is not None:
            x2 = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
            gw = xp.matmul_tn(g2, x2)
        if len(p) == 3 and p[2] is not None:
            gb = g2.sum(axis=0)
    return (gx, gw, gb) if len(p) == 3 else (gx, gw)  # one per input


def _mm_tn_rule(ctx, g):
    a, b = ctx.saved  # out = a.T @ b: d a = b @ g.T (a linear without bias), d b = a @ g
    return (ctx.xp.linear(b, g) if ctx.parents[0] is not None else None,
            ctx.xp.matmul(a, g) if ctx.parents[1] is not None else None)


# a.T @ b for 2-D a and b: linear's weight gradient (g.T @ x) as one op, not a permute and a matmul
MATMUL_TN = defop("matmul_tn", lambda xp, a, b: xp.matmul(a.T, b), _mm_tn_rule, save=(0, 1), save_for_others=True,
                  kind="other", jvp=multilinear_jvp(), torch=lambda th, a, b: a.T @ b,
                  samples=lambda rng: [Sample(rng.standard_normal((5, 3)), rng.standard_normal((5, 4)))], complex='holomorphic')


def _linear_jvp(ctx, tx, tw, tb=None):
    # bilinear in (x, w), plus the bias
    x, w = ctx.args[:2]
    out = None if tx is None else ctx.xp.linear(tx, w)
    if tw is not None:
        d = ctx.xp.linear(x, tw)
        out = d if out is None else out + d
    if tb is not None:
        out = tb if out is None else out + tb
    return out


LINEAR = defop("linear", _linear_fwd, _linear_rule, save=(0, 1), save_for_others=True, kind="other", jvp=_linear_jvp,
               torch=lambda th, x, w, b=None: th.nn.functional.linear(x, w, b),
               samples=lambda rng: [Sample(rng.standard_normal((5, 3)), rng.standard_normal((4, 3)),
                                           rng.standard_normal(4)),
                                    Sample(rng.standard_normal((2, 5, 3)), rng.standard_normal((4, 3)))], complex='holomorphic')


@public(LINEAR, export=False)
def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` as one op (PyTorch's layout: ``weight`` is (out, in)).

    >>> F.linear(mg.ones(2, 3), mg.ones(4, 3)).shape
    (2, 4)
    """
    if not isinstance(x, Tensor):
        if hasattr(x, "_grad_target"):
            raise TypeError("linear: got a sparse tensor; use mg.sparse.matmul for sparse inputs")
        x = Tensor(x)
    xd = x.data  # the arrays, read once: each property costs a call
    wd = weight.data if isinstance(weight, Tensor) else weight
    xs, ws = xd.shape, wd.shape
    if len(ws) != 2 or len(xs) < 1 or xs[-1] != ws[1]:
        raise ValueError(
            f"linear: input of shape {xs} does not match weight of shape {ws} "
            f"(expected input (..., {ws[1] if len(ws) == 2 else '?'}) and weight (out, in))"
        )
    if xd.dtype != wd.dtype and xd.dtype.kind == "f" and wd.dtype.kind == "f":
        raise mixed_floats("linear", xd.dtype, wd.dtype, "the weight")
    if bias is None:
        return run_op(LINEAR, x, weight)
    return run_op(LINEAR, x, weight, bias)
