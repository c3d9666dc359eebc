"""vmap's two ops: ``VMAP_IN`` makes a Tensor batched at a level (its array a ``BatchedArray``,
``_batched.py``), ``VMAP_OUT`` gives the batch back as an axis. Each is the other's gradient and
its own tangent (both are linear), so a vmapped computation differentiates like any other:
``grad(vmap(f))`` runs the vmapped backward, ``vmap(grad(f))`` a backward per element.
Backward sums a gradient over the finished levels its input was not batched at with VMAP_OUT
(backward._settle_tensor, looked up by name: the core does not import vmap)."""
from __future__ import annotations

from . import _batched
from .engine import OPS, Op


def _in_forward(xp, x, dim, level):
    return _batched.batched(level, xp.moveaxis(x, dim, 0) if dim else x)


def _in_rule(ctx, g, dim, level, size):
    return (ctx.xp.run_op(VMAP_OUT, g, dim=dim, level=level, size=size),)


def _out_forward(xp, x, dim, level, size):
    p = _batched.unbatch(x, level, size)
    return _batched._mod(p).moveaxis(p, 0, dim) if dim else p


def _out_rule(ctx, g, dim, level, size):
    return (ctx.xp.run_op(VMAP_IN, g, dim=dim, level=level, size=size),)


def _linear(ctx, t, **params):
    return None if t is None else ctx.xp.run_op(ctx.op, t, **params)


VMAP_IN = Op("vmap_in", lambda xp, x, dim, level, size: _in_forward(xp, x, dim, level), _in_rule, kind="view", view=True,
             jvp=_linear, info=lambda dim, level, size: {"in_dim": dim, "level": level}, complex=True)
VMAP_OUT = Op("vmap_out", _out_forward, _out_rule, kind="view", jvp=_linear,
              info=lambda dim, level, size: {"out_dim": dim, "level": level}, complex=True)


OPS["vmap_in"], OPS["vmap_out"] = VMAP_IN, VMAP_OUT  # backward finds vmap_out by name (its _settle_tensor)
