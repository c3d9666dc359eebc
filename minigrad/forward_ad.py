"""Forward mode: dual tensors, and the tangents that travel with every op (``mg.autograd.forward_ad``).

Inside ``with dual_level():``, ``make_dual(x, u)`` is ``x`` carrying the tangent ``u``. Every op
that reads a dual tensor computes its output's tangent as it runs: ``apply`` hands the op to
the active ``Levels`` (``carry``), which calls the op's forward-mode rule (``Op.jvp``). One pass,
no reverse pass; ``unpack_dual(y)`` reads ``(primal, tangent)``.

A rule is written once in the array API, like a gradient rule: in first order it is handed
backend arrays; when the tangent must itself be differentiated (a level inside another, or
gradients recorded through it) it is handed Tensors and ``ctx.xp`` records. Levels nest: the
tangent at level ``L`` is computed with ``L`` and the levels inside it switched off, so it
carries the tangents of the levels outside (JAX's order of perturbations).

Most rules are derived, not written (``derive``): an elementwise op's JVP is its VJP rule
applied to the tangent (its Jacobian is diagonal); a linear op's is the op applied to the
tangents (``linear``); a multilinear one's, the sum over its inputs (``multilinear``).
"""
from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

import numpy as np

from . import _state
from . import backend as _be
from . import kernels as _k
from .engine import TENSORS, Op, _positions, apply, array_namespace
from .tensor import Tensor, wrap

_ids = itertools.count(1)
_nd = np.ndarray


class Levels:
    """The dual levels active in this thread, outermost first. ``apply`` calls ``carry``."""

    __slots__ = ("ids", "duals")

    def __init__(self, ids, duals):
        self.ids = ids
        self.duals = duals  # per level: weak references to the tensors make_dual made there

    def __repr__(self):
        return f"<dual levels {self.ids}>"

    def carry(self, op, args, datas, params, aux, out):
        """Give ``out`` (a Tensor, or a tuple of them) its tangent at each level an input has one."""
        ids = self.ids
        for k, level in enumerate(ids):
            ts = None
            for i, a in enumerate(args):
                if isinstance(a, Tensor) and a._fw is not None:
                    t = a._fw.get(level)
                    if t is not None:
                        if ts is None:
                            ts = [None] * len(args)
                        ts[i] = t
            if ts is not None:
                _tangent(op, args, datas, params, aux, out, ts, level, ids[:k])


class JvpCtx:
    """What a forward-mode rule reads: ``xp``, ``op``, ``args`` (the inputs: arrays and numbers in
    first order, else Tensors), ``out`` (the output), ``aux``."""

    __slots__ = ("xp", "op", "args", "out", "aux")

    def __init__(self, xp, op, args, out, aux):
        self.xp, self.op, self.args, self.out, self.aux = xp, op, args, out, aux


def _tangent(op, args, datas, params, aux, out, ts, level, outer):
    """``out``'s tangent at ``level`` from the inputs' tangents ``ts`` (Tensors or None)."""
    outs = out if isinstance(out, tuple) else (out,)
    if op.rule is None or not any(o.data.dtype.kind == "f" for o in outs):
        return  # not differentiable: the output carries no tangent (a zero one)
    if op.jvp is None:
        raise RuntimeError(f"forward mode: op {op.name!r} has no forward-mode rule (jvp); "
                           f"{_missing_hint(op)}")
    mode = _state.get()
    on_tensors = bool(outer) or not op.arrays or (mode.grad and (
        any(isinstance(a, Tensor) and a._rg for a in args) or any(t is not None and t._rg for t in ts)))
    if on_tensors:  # the tangent is recorded / carries the outer levels' tangents
        token = _state.set_levels(Levels(outer, mode.fw.duals) if outer else None)
        try:
            res = op.jvp(JvpCtx(TENSORS, op, args, out, aux), *ts, **params)
        finally:
            _state.reset(token)
    else:
        d0 = outs[0].data
        xp = array_namespace(np if d0.__class__ is _nd else _be.array_module(d0))
        res = op.jvp(JvpCtx(xp, op, datas, out.data if out is outs[0] else tuple(o.data for o in outs), aux),
                     *[None if t is None else t.data for t in ts], **params)
    res = res if isinstance(out, tuple) else (res,)
    for o, r in zip(outs, res, strict=True):
        if r is not None and o.data.dtype.kind == "f":
            _set(o, level, _checked(op, o, r, ts, on_tensors))


def _missing_hint(op):
    if op.kind == "function":
        return f"give the autograd.Function {op.name} a static jvp(ctx, *tangents)"
    return "write one beside its gradient rule (forward_ad.derive explains which are derived)"


def _checked(op, o, r, ts, on_tensors):
    """A rule's result as ``o``'s tangent: a Tensor of ``o``'s shape and dtype, never an input
    tangent itself (a write into one would change the other), unless the op is a view."""
    if on_tensors:
        t = r if isinstance(r, Tensor) else wrap(_be.array_module(o.data).asarray(r, dtype=o.data.dtype))
        if not op.view and any(t is u or (u is not None and t._storage is u._storage) for u in ts):
            t = t.clone()
    else:
        a = r.data if isinstance(r, Tensor) else r
        if not hasattr(a, "shape") or a.__class__ is not o.data.__class__:
            a = _be.array_module(o.data).asarray(a, dtype=o.data.dtype)
        if not op.view and _aliases(a, ts):
            a = a.copy()
        t = wrap(a)
    if t.shape != o.shape:
        try:
            t = TENSORS.broadcast_to(t, o.shape).clone() if on_tensors else wrap(_be.array_module(o.data).broadcast_to(
                t.data, o.shape).copy())
        except ValueError:
            raise RuntimeError(f"internal error: the forward-mode rule of {op.name!r} returned shape {t.shape} "
                               f"for an output of shape {o.shape}") from None
    if t.dtype != o.dtype:
        t = t.astype(o.dtype)
    return t


def _aliases(a, ts):
    if a.__class__ is not _nd:
        return any(u is not None and a is u.data for u in ts)
    for u in ts:
        if u is not None and (a is u.data or (a.base is not None and np.may_share_memory(a, u.data))):
            return True
    return False


def _set(t, level, tangent):
    fw = t._fw
    if fw is None:
        t._fw = {level: tangent}
    else:
        fw[level] = tangent


# ---------------------------------------------------------------------------
# derived rules
# ---------------------------------------------------------------------------


class _RuleCtx:
    """The ``ctx`` an op's gradient rule reads, built from a forward-mode call (``elementwise``)."""

    __slots__ = ("xp", "saved", "out", "aux", "parents", "meta")

    def __init__(self, xp, saved, out, aux, parents, meta):
        self.xp, self.saved, self.out, self.aux, self.parents, self.meta = xp, saved, out, aux, parents, meta


def elementwise(ctx, *ts, **params):
    """The JVP of an elementwise op: its Jacobian is diagonal (per input, after broadcasting), so
    the tangent is the gradient rule applied to each input's tangent broadcast to the output."""
    op, args, out, xp = ctx.op, ctx.args, ctx.out, ctx.xp
    n = len(args)
    saved = tuple(_as_saved(args[i], xp) if i < n else None for i in (op.save_at or _positions(op.save, n)))
    meta = tuple((getattr(a, "shape", ()), getattr(a, "dtype", None)) for a in args)
    total = None
    for i, t in enumerate(ts):
        if t is None:
            continue
        if op.broadcast and t.shape != out.shape:
            t = xp.broadcast_to(t, out.shape)
        parents = (None,) * i + (True,) + (None,) * (n - i - 1)
        d = op.rule(_RuleCtx(xp, saved, out, ctx.aux, parents, meta), t, **params)[i]
        if d is not None:
            total = d if total is None else total + d
    return total


def _as_saved(a, xp):
    """An input as a gradient rule reads it from ``ctx.saved``: on Tensors an array constant is a Tensor."""
    if xp is TENSORS and not isinstance(a, Tensor) and hasattr(a, "shape"):
        return wrap(a)
    return a


def linear(*positions):
    """The JVP of an op linear in the inputs at ``positions`` (all when none are given), the others
    held: the op itself applied to the tangents (zeros where an input has none)."""
    def jvp(ctx, *ts, **params):
        at = positions or range(len(ts))
        if all(ts[i] is None for i in at):
            return None
        xs = list(ctx.args)
        for i in at:
            xs[i] = ts[i] if ts[i] is not None else ctx.xp.zeros_like(ctx.args[i])
        return ctx.xp.apply(ctx.op, *xs, **params)

    jvp.derived = "linear"
    return jvp


def multilinear(*positions):
    """The JVP of an op linear in each input at ``positions`` separately (``x @ y``, einsum): the
    sum, over the inputs with a tangent, of the op with that input replaced by its tangent."""
    def jvp(ctx, *ts, **params):
        total = None
        for i in positions or range(len(ts)):
            if ts[i] is not None:
                xs = list(ctx.args)
                xs[i] = ts[i]
                d = ctx.xp.apply(ctx.op, *xs, **params)
                total = d if total is None else total + d
        return total

    jvp.derived = "multilinear"
    return jvp


elementwise.derived = "elementwise"


def derive(jvp, rule, kind):
    """An op's forward-mode rule as ``defop`` records it: ``jvp`` when given; else derived from
    the gradient rule of an elementwise op; else None (forward mode through it raises, naming it)."""
    if jvp is not None or rule is None:
        return jvp
    return elementwise if kind == "elementwise" else None


# ---------------------------------------------------------------------------
# the public face: dual_level, make_dual, unpack_dual
# ---------------------------------------------------------------------------


class dual_level:  # noqa: N801 - PyTorch's name
    """Context manager: a forward-mode level. Tangents given by ``make_dual`` inside it travel
    with every op, and are dropped when it exits. Levels nest (forward over forward).

    >>> with fwAD.dual_level():
    ...     y = mg.sin(fwAD.make_dual(x, u))
    ...     primal, tangent = fwAD.unpack_dual(y)      # sin(x), cos(x) * u
    """

    def __enter__(self):
        m = _state.get()
        self.level = next(_ids)
        outer = m.fw
        ids = (outer.ids if outer is not None else ()) + (self.level,)
        duals = dict(outer.duals) if outer is not None else {}
        duals[self.level] = []
        self._token = _state.set_levels(Levels(ids, duals))
        return self.level

    def __exit__(self, *exc):
        fw = _state.get().fw
        _state.reset(self._token)
        for w in fw.duals.get(self.level, ()):
            t = w()
            if t is not None and t._fw is not None:
                t._fw.pop(self.level, None)
        return False


def _current(fn):
    fw = _state.get().fw
    if fw is None:
        raise RuntimeError(f"forward_ad.{fn}: no dual level is active; call it inside `with forward_ad.dual_level():`")
    return fw


def _identity_view(xp, x):
    return x


# ``make_dual``'s and ``unpack_dual``'s primal: ``x`` itself (a view, the gradient passes through)
_ALIAS = Op("alias", _identity_view, lambda ctx, g: (g,), view=True, kind="view", jvp=linear(0))


def make_dual(primal, tangent, *, level=None):
    """``primal`` carrying ``tangent`` at the innermost dual level: a view of ``primal`` (the same
    storage and history). ``tangent`` must have the primal's shape, dtype and device."""
    fw = _current("make_dual")
    level = fw.ids[-1] if level is None else level
    if hasattr(primal, "_make_dual"):  # a tensor of another layout (sparse)
        return primal._make_dual(tangent, level)
    if not isinstance(primal, Tensor):
        raise TypeError(f"forward_ad.make_dual: the primal must be a Tensor, got {type(primal).__name__}")
    tangent = _check_tangent(primal, tangent)
    token = _state.set_levels(Levels(tuple(i for i in fw.ids if i < level), fw.duals) if fw.ids[0] < level
                              else None)
    try:
        d = apply(_ALIAS, primal)  # the outer levels' tangents ride along
    finally:
        _state.reset(token)
    _set(d, level, tangent)
    fw.duals.setdefault(level, []).append(weakref.ref(d))
    return d


def _check_tangent(primal, tangent):
    if not isinstance(tangent, Tensor):
        if hasattr(tangent, "_grad_target"):
            raise TypeError("forward_ad.make_dual: a sparse tangent needs a sparse primal")
        tangent = Tensor(tangent, dtype=primal.dtype, device=primal.device)
    if primal.dtype.kind != "f":
        raise TypeError(f"forward_ad.make_dual: only floating-point primals have tangents, got dtype {primal.dtype}")
    if tangent.shape != primal.shape:
        raise ValueError(f"forward_ad.make_dual: the tangent has shape {tangent.shape} but the primal has shape "
                         f"{primal.shape}; they must match")
    if tangent.dtype != primal.dtype:
        raise TypeError(f"forward_ad.make_dual: the tangent has dtype {tangent.dtype} but the primal has dtype "
                        f"{primal.dtype}; they must match")
    if tangent.device != primal.device:
        raise ValueError(f"forward_ad.make_dual: the tangent is on {tangent.device} but the primal is on "
                         f"{primal.device}")
    return tangent


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: ``primal`` and ``tangent`` (None when it has none)."""

    primal: object
    tangent: object


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of a dual tensor at the innermost level: the primal is a view without
    that tangent; the tangent is None for a tensor that carries none (a zero one)."""
    fw = _state.get().fw
    if hasattr(tensor, "_unpack_dual"):  # a tensor of another layout (sparse)
        return UnpackedDualTensor(*tensor._unpack_dual(None if fw is None else fw.ids[-1] if level is None
                                                       else level))
    if fw is None or not isinstance(tensor, Tensor) or tensor._fw is None:
        return UnpackedDualTensor(tensor, None)
    level = fw.ids[-1] if level is None else level
    t = tensor._fw.get(level)
    if t is None:
        return UnpackedDualTensor(tensor, None)
    outer = tuple(i for i in fw.ids if i < level)
    token = _state.set_levels(Levels(outer, fw.duals) if outer else None)
    try:
        p = apply(_ALIAS, tensor)
    finally:
        _state.reset(token)
    return UnpackedDualTensor(p, t)


def tangent_of(t, level):
    """The tangent ``t`` carries at ``level`` (None when none)."""
    fw = getattr(t, "_fw", None)
    return None if fw is None else fw.get(level)


# ---------------------------------------------------------------------------
# in-place writes (ops/inplace.py): the tangent is written in place too
# ---------------------------------------------------------------------------


def write_tangents(t, r, positions):
    """``t``'s storage now holds ``r``'s values: at each level, ``r``'s tangent is written into
    ``t``'s, in place, so the tangents of ``t``'s views and base see it as their values do.
    ``positions(view, base)`` gives a view's flat positions in its base (ops/inplace.py)."""
    fw = _state.get().fw
    if fw is None:
        return
    for level in fw.ids:
        new, cur = tangent_of(r, level), tangent_of(t, level)
        if new is None and cur is None:
            continue
        if cur is None:
            cur = _zero_tangent(t, level, positions)
        if new is None:
            cur.data[...] = 0
        elif getattr(getattr(cur.data, "flags", None), "writeable", True):
            cur.data[...] = new.data
            cur._fw = new._fw  # (nested levels: the tangent's own tangents)
            cur._storage.version += 1
        else:  # a read-only tangent (a broadcast one given to make_dual): t gets a copy of its own
            _set(t, level, new.clone())


def _zero_tangent(t, level, positions):
    """A zero tangent for ``t`` at ``level``; for a view, a view of its base's tangent (made
    zero and C-ordered where the base has none), so that a write through the view reaches it."""
    xp = _be.array_module(t.data)
    base = t._base
    if base is None or base.data.size == 0:
        z = wrap(xp.zeros(t.shape, dtype=t.dtype))
        _set(t, level, z)
        return z
    bt = tangent_of(base, level)
    if bt is None or not bt.data.flags.c_contiguous:
        bt = wrap(xp.zeros(base.shape, dtype=base.dtype) if bt is None else xp.ascontiguousarray(bt.data))
        _set(base, level, bt)
    pos = positions(t.data, base.data)
    idx = [0] * pos.ndim
    strides = []
    for k, n in enumerate(pos.shape):  # the view's strides in its base, read off its positions
        if n > 1:
            idx[k] = 1
            strides.append(int(pos[tuple(idx)]) - int(pos.flat[0]))
            idx[k] = 0
        else:
            strides.append(0)
    z = wrap(_k.as_strided(bt.data.reshape(-1), int(pos.flat[0]) if pos.size else 0, t.shape, strides))
    _set(t, level, z)
    return z
