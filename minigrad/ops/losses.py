"""The losses that are ops of their own: nll_loss, cross_entropy (one op forward, one op
backward) and binary_cross_entropy_with_logits."""
from __future__ import annotations

import numpy as np

from .. import _batched
from ..engine import run_op
from ._registry import Sample, defop, linear_jvp
from .reduce import shift_by_max, softmax_forward


def _reduce_rows(xp, per_row, reduction, dtype):
    """Per-row losses reduced as PyTorch's losses are: 'none', 'sum', or 'mean' (NaN for no rows)."""
    if reduction == "none":
        return per_row
    n = per_row.shape[0]
    if not n:
        return xp.asarray(xp.nan if reduction == "mean" else 0, dtype=dtype)
    total = per_row.sum(axis=0, keepdims=True).reshape(())  # a 0-d array (a NumPy scalar is not one)
    if reduction == "mean":
        if total.dtype.kind != "f":
            return total / n
        total /= n  # in place: the same bits, and it stays an array
    return total


def _nll_fwd(xp, logp, target, reduction):
    return _reduce_rows(xp, -logp[xp.arange(logp.shape[0]), target], reduction, logp.dtype)


def _nll_rule(ctx, g, reduction):
    (target,) = ctx.saved
    return ctx.xp.nll_loss_backward(g, target, shape=ctx.meta[0][0], reduction=reduction), None


NLL = defop("nll_loss", _nll_fwd, _nll_rule, save=(1,), kind="reduce", jvp=linear_jvp(0),
            info=lambda reduction: {"reduction": reduction},
            torch=lambda th, x, t, reduction: th.nn.functional.nll_loss(x, t, reduction=reduction),
            samples=lambda rng: [Sample(rng.standard_normal((4, 3)), np.array([0, 2, 1, 2]), reduction="mean"),
                                 Sample(rng.standard_normal((4, 3)), np.array([0, 2, 1, 2]), reduction="none")])


def _nll_backward_fwd(xp, g, target, shape, reduction):
    n = shape[0]
    out = xp.zeros(shape, dtype=g.dtype)
    if n:
        out[xp.arange(n), target] = -(g / n if reduction == "mean" else g)
    return out


def _nll_backward_rule(ctx, gg, shape, reduction):
    (target,) = ctx.saved
    return ctx.xp.nll_loss(gg, target, reduction=reduction), None


NLL_BACKWARD = defop("nll_loss_backward", _nll_backward_fwd, _nll_backward_rule, save=(1,), kind="other", jvp=linear_jvp(0),
                     batch=_batched.fresh_buffers,
                     samples=lambda rng: [Sample(rng.standard_normal(4), np.array([0, 2, 1, 2]), shape=(4, 3),
                                                 reduction="none"),
                                          Sample(rng.standard_normal(()), np.array([1, 0]), shape=(2, 3),
                                                 reduction="mean")])


def _bce_fwd(xp, x, y, reduction):
    loss = xp.maximum(x, 0) - x * y  # softplus(x) - x y, stable both ways
    loss += xp.log1p(xp.exp(-xp.abs(x)))
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return xp.asarray(loss, dtype=x.dtype)


def _bce_rule(ctx, g, reduction):
    x, y = ctx.saved
    if reduction == "mean":
        g = g / x.size
    gx = (ctx.xp.sigmoid(x) - y) * g if ctx.parents[0] is not None else None
    gy = -x * g if ctx.parents[1] is not None else None
    return gx, gy


def _bce_jvp(ctx, tx, ty, reduction):
    x, y = ctx.args  # d loss = (sigmoid(x) - y) dx - x dy, elementwise, then reduced
    d = (ctx.xp.sigmoid(x) - y) * tx if tx is not None else None
    if ty is not None:
        d = -x * ty if d is None else d - x * ty
    return d.mean() if reduction == "mean" else d.sum() if reduction == "sum" else d


BCE = defop("binary_cross_entropy_with_logits", _bce_fwd, _bce_rule, save=(0, 1), kind="reduce", jvp=_bce_jvp,
            info=lambda reduction: {"reduction": reduction},
            torch=lambda th, x, y, reduction: th.nn.functional.binary_cross_entropy_with_logits(x, y, reduction=reduction),
            samples=lambda rng: [Sample(rng.standard_normal((3, 4)), rng.random((3, 4)), reduction="mean"),
                                 Sample(rng.standard_normal(5), rng.random(5), reduction="none")])


def nll_loss_op(logp, target, reduction):
    return run_op(NLL, logp, target, reduction=reduction)


def bce_op(x, y, reduction):
    return run_op(BCE, x, y, reduction=reduction)


# -- cross_entropy: one op forward, one op backward (whose own rule gives the second order) ---------------


def _ce_fwd(xp, x, target, reduction):
    """Per-row ``logsumexp(x) - x[target]``, reduced; stable for logits of any size. Also
    returns ``softmax(x)`` (aux), which backward needs and the forward has all but made."""
    n = x.shape[0]
    s = shift_by_max(x, (1,)) if n else x - x  # a fresh array: written in place below
    picked = s[xp.arange(n), target]
    xp.exp(s, out=s)
    sums = s.sum(axis=1, keepdims=True)
    loss = xp.log(sums[:, 0])
    loss -= picked
    s /= sums  # softmax(x)
    return _reduce_rows(xp, loss, reduction, x.dtype), s


def _ce_rule(ctx, g, reduction):
    x, target = ctx.saved
    return ctx.xp.cross_entropy_backward(g, x, target, ctx.aux, reduction=reduction), None


def _ce_jvp(ctx, t, _, reduction):
    x, target = ctx.args
    if not x.shape[0]:
        return None
    # d loss_row = <softmax(x) - onehot(target), t_row>: cross_entropy_backward with g = 1 (its
    # probs, the forward's aux, are a cache: it differentiates through x)
    if reduction == "none":
        return (ctx.xp.cross_entropy_backward(1.0, x, target, ctx.aux, reduction="sum") * t).sum(axis=1)
    return (ctx.xp.cross_entropy_backward(1.0, x, target, ctx.aux, reduction=reduction) * t).sum()


CROSS_ENTROPY = defop("cross_entropy", _ce_fwd, _ce_rule, save=(0, 1), aux=True, kind="reduce", jvp=_ce_jvp,
                      info=lambda reduction: {"reduction": reduction},
                      torch=lambda th, x, t, reduction: th.nn.functional.cross_entropy(x, t, reduction=reduction),
                      samples=lambda rng: [Sample(rng.standard_normal((4, 3)), np.array([0, 2, 1, 2]), reduction=r)
                                           for r in ("mean", "sum", "none")])


def _ce_backward_fwd(xp, g, x, target, probs=None, *, reduction):
    """``(softmax(x) - onehot(target)) * g`` (``g / n`` for a mean, ``g`` per row for 'none').
    ``probs``: softmax(x) as cross_entropy's forward made it (a cache that needs no gradient of
    its own: the rule differentiates through ``x``); computed here when not given."""
    n = x.shape[0]
    p = softmax_forward(xp, x, (1,)) if probs is None else probs.copy()  # a fresh array
    if n:
        p[xp.arange(n), target] -= 1
    if reduction == "mean":
        p *= g / n
    elif reduction == "sum":
        p *= g
    else:
        p *= g.reshape(n, 1)
    return p


def _ce_backward_rule(ctx, gg, reduction):
    g, x, target = ctx.saved
    n = x.shape[0]
    xp = ctx.xp
    p = xp.softmax(x, axes=(1,))
    d = xp.cross_entropy_backward(1.0, x, target, reduction="sum")  # softmax(x) - onehot(target)
    if reduction == "mean":
        scale, gg_g = g / n, (gg * d).sum() / n
    elif reduction == "sum":
        scale, gg_g = g, (gg * d).sum()
    else:
        scale, gg_g = g.reshape(n, 1), (gg * d).sum(axis=1)
    gg_x = scale * p * (gg - (gg * p).sum(axis=1, keepdims=True))
    return (gg_g, gg_x, None, None)[:len(ctx.parents)]  # one per input: probs is optional


def _ce_backward_jvp(ctx, tg, tx, *_, reduction):
    g, x, target = ctx.args[:3]
    xp = ctx.xp
    d = xp.cross_entropy_backward(tg, x, target, *ctx.args[3:], reduction=reduction) if tg is not None else None
    if tx is not None:  # linear in g; in x, (g-scaled) d softmax = p (tx - <p, tx>) per row
        n = x.shape[0]
        scale = g / n if reduction == "mean" else g if reduction == "sum" else g.reshape(n, 1)
        p = xp.softmax(x, axes=(1,))
        dx = scale * p * (tx - (p * tx).sum(axis=1, keepdims=True))
        d = dx if d is None else d + dx
    return d


CE_BACKWARD = defop("cross_entropy_backward", _ce_backward_fwd, _ce_backward_rule, save=(0, 1, 2), kind="other",
                    jvp=_ce_backward_jvp, batch=_batched.lifting(1, 3),  # p, from x or probs, takes g in place
                    samples=lambda rng: [Sample(np.asarray(rng.standard_normal()), rng.standard_normal((4, 3)),
                                                np.array([0, 2, 1, 2]), reduction="mean"),
                                         Sample(rng.standard_normal(4), rng.standard_normal((4, 3)),
                                                np.array([1, 0, 2, 2]), reduction="none")])


def cross_entropy_op(x, target, reduction):
    return run_op(CROSS_ENTROPY, x, target, reduction=reduction)
