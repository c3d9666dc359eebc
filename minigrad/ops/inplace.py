"""In-place operations: ``add_ sub_ mul_ div_ pow_ floor_divide_ remainder_ zero_ fill_ copy_
clamp_``, every augmented assignment ``+= -= *= /= **= //= %=`` (in place, as NumPy's and
PyTorch's are: views see the write) and ``t[idx] = value``. ``t._version`` reads the counter.

Every write goes into the tensor's storage, so its base and every other view of that
storage see it, and bumps the storage's version counter (``t._ver[0]``). A Node
remembers the versions of the tensors it saved; backward refuses one that changed
since, naming the op and both versions. A gradient is never silently wrong.

When a write is allowed, and what it records
--------------------------------------------
- Under ``no_grad``: any writable tensor may be written, nothing is recorded (that is
  how optimizers update their parameters).
- With gradients recorded:

  * a leaf that requires grad, or a view of one: ``RuntimeError`` (write under
    ``no_grad``, or into a ``.clone()``);
  * a tensor in a recorded graph, or one written with values that require grad
    (``buf[0] = x``): the write is recorded, as PyTorch does. The tensor's history
    is *rebased* onto a new Node (``add_``, ``mul_``, ``setitem``...) whose rule sends
    the gradient to the tensor's old value and to the operands, so gradients stay
    correct. Old values a rule needs (``x`` of ``x.mul_(y)`` when ``y`` requires grad)
    are saved as a recorded clone taken before the write;
  * a view (slice, transpose, reshape that did not copy...) is written through to its
    base: the base is rebased onto a ``copy_slices`` Node (the op's rule applied at the
    view's positions in the base) and the view onto an ``as_strided`` Node reading those
    positions of the new base. Other views of that base taken before the write are
    re-derived from the base when next used (``_core.edge`` calls ``refresh_view``), so
    ``h[0] += x`` or ``buf[:, 1] = y`` inside a graph get correct gradients;
  * when a write makes a storage require grad for the first time (``buf[0] = x`` on a plain
    ``buf``), the views of it taken before (remembered weakly by ``_core.note_plain_view`` on
    the storage's version cell, ``_ver[1:]``) get a history reading the new one, so they
    carry gradients too (``left, right = out[:, :H], out[:, H:]`` then filling both works);
  * a tensor that shares storage with a tensor in the graph without being part of the
    graph (``y.detach()`` or a view of ``y`` taken under ``no_grad``, ``y`` a non-leaf):
    ``RuntimeError``: the graph could not see the write.

- Memory that must not be written:

  * ``.grad`` arrays are read-only views (``autograd._readonly``), since one gradient
    array may be shared by two tensors. An in-place op on a tensor that is not a view and
    whose array is read-only or broadcast (a ``.grad``, or a wrapped read-only NumPy array)
    copies it first (copy-on-write): the tensor gets its own storage, other holders of the
    old array keep the old values. (CuPy has no read-only flag, so on the GPU a ``.grad``
    that came from a broadcast is copied, but one shared with another gradient is not
    detectable: write ``x.grad = x.grad.clone()`` first if you mean to mutate it.)
  * a view whose elements overlap in memory (``expand`` / ``broadcast_to``), or a view of
    read-only memory: ``RuntimeError``, saying to ``.clone()`` / ``.contiguous()`` first.

``floor_divide_`` is not differentiable (as ``x // y``): through it a tensor in a graph gets a zero
gradient, the divisor none. Index Tensors of ``t[idx] = value`` are saved with their versions, so
backward refuses one changed in place since.

In-place results follow NumPy: the other operand broadcasts to the tensor's shape (never
the tensor to a bigger one) and the result is cast back to the tensor's dtype when NumPy's
``same_kind`` rule allows (``int_tensor += 0.5`` is a ``TypeError``). With repeated advanced
indices, ``t[idx] = v`` keeps, per position, the value NumPy wrote last, and only that value
receives the gradient.
"""
from __future__ import annotations

from time import perf_counter as _perf

import numpy as np

from .. import _state
from .. import backend as _be
from ..autograd import Node
from ..tensor import Tensor
from . import _core as C
from ._core import edge, unb
from .elementwise import _mod_rule as _ew_mod_rule
from .elementwise import _pow_rule as _ew_pow_rule

# -- the checks ---------------------------------------------------------------


class _Ctx:
    """What an inner rule sees when it runs inside ``copy_slices``."""

    __slots__ = ("meta", "attrs")

    def __init__(self, meta, attrs):
        self.meta = meta
        self.attrs = attrs


def _metas(ctx):
    """(self, other) metas of a rule's inputs; the other is None when it was a constant."""
    m = ctx.meta
    return m[0], (m[1] if len(m) > 1 else None)


def _self(t, op):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor to write into, got {type(t).__name__}")


def _overlapping(a) -> bool:
    """Several elements on one memory location (a zero stride on a dim longer than 1)."""
    return any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides, strict=False))


def _readonly(a) -> bool:
    flags = getattr(a, "flags", None)
    return flags is not None and getattr(flags, "writeable", True) is False


def _shares(a, b) -> bool:
    if a.size == 0 or b.size == 0:
        return False
    try:
        return bool(_be.array_module(a, b).may_share_memory(a, b))
    except RuntimeError:  # different devices
        return False


def _live_base(t):
    """The base whose storage ``t`` writes into, or None (not a view, or no longer sharing memory)."""
    b = t._base
    if b is None or not _shares(t.data, b.data):
        return None
    return b


def _plan(t, op, others):
    """How a write into ``t`` happens: ``(mode, self_needs_grad)``.

    mode: None (a plain write), "self" (rebase ``t``) or "base" (through ``t``'s base).
    """
    if not _state.grad_enabled():
        return None, False
    if t._rg and t._node is None:
        raise RuntimeError(
            f"{op}: a leaf tensor that requires grad (shape {t.shape}) cannot be modified in place while "
            "gradients are recorded. Update it under `with mg.no_grad():` (as optimizers do), or write "
            "into a .clone()"
        )
    diff = t.data.dtype.kind in "fc"
    need = diff and (t._rg or any(isinstance(o, Tensor) and o._rg for o in others))
    base = _live_base(t)
    if base is None:
        return ("self", t._rg) if need else (None, False)
    if base._rg and base._node is None:
        if t._rg or need:
            raise RuntimeError(
                f"{op}: this tensor is a view of a leaf that requires grad (shape {base.shape}); it cannot be "
                "modified in place while gradients are recorded. Write under `with mg.no_grad():`, or into "
                "a .clone()"
            )
        return None, False  # a detached alias of a leaf: saved versions guard every graph that used it
    if base._rg:
        if not t._rg:
            raise RuntimeError(
                f"{op}: this tensor shares storage with a tensor in the recorded graph (shape {base.shape}) "
                "but is not part of that graph (a .detach() of it, or a view taken under no_grad), so the "
                "graph could not see this write. Write under `with mg.no_grad():`, write into the tensor "
                "itself, or into a .clone()"
            )
        return "base", True
    return ("base", False) if need else (None, False)


def _prepare_storage(t, op):
    """Make ``t.data`` writable: copy-on-write for a read-only or broadcast non-view, else refuse."""
    d = t.data
    if t._base is None:
        if _readonly(d) or _overlapping(d):
            t.data = d.copy()  # a .grad (read-only) or a wrapped broadcast array: write a private copy
        return
    if _overlapping(d):
        raise RuntimeError(
            f"{op}: cannot write in place into a broadcast (expanded) tensor of shape {t.shape} with strides "
            f"{t.stride()}: several of its elements share one memory location. Write into a .clone() (or "
            ".contiguous()) instead"
        )
    if _readonly(d):
        raise RuntimeError(
            f"{op}: this tensor (shape {t.shape}) is a view of read-only memory (a view of a .grad, or of a "
            "read-only NumPy array) and cannot be written in place. Write into a .clone() instead"
        )


def _check_result(t, r, op):
    if tuple(r.shape) != tuple(t.shape):
        raise ValueError(
            f"{op}: the result has shape {tuple(r.shape)} but the tensor has shape {t.shape}: an in-place op "
            "broadcasts its other operand to the tensor, never the tensor to a bigger shape"
        )
    if r.dtype != t.dtype and not np.can_cast(r.dtype, t.dtype, "same_kind"):
        raise TypeError(
            f"{op}: the result dtype {r.dtype} cannot be stored in place into a tensor of dtype {t.dtype} "
            "(NumPy's same_kind casting); use the out-of-place operation, or .astype() first"
        )


def _operand(o, op, t):
    """A non-self operand as a backend value (Python scalars kept; arrays must be on ``t``'s device:
    only ``copy_`` moves data between devices)."""
    od = o.data if isinstance(o, Tensor) else _const(o, op, t)
    if hasattr(od, "shape"):
        if type(od) is not type(t.data):
            C.check_same_device(op, t.data, od)
        oshape = tuple(od.shape)
        if oshape != tuple(t.shape):
            try:
                ok = np.broadcast_shapes(oshape, t.shape) == tuple(t.shape)
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"{op}: the other operand of shape {oshape} does not broadcast to the tensor's shape "
                    f"{tuple(t.shape)}: an in-place op broadcasts its other operand to the tensor, never the "
                    "tensor to a bigger shape"
                )
    return od


def _const(v, op, t):
    """A constant operand: Python scalars stay scalars, lists become arrays on ``t``'s device."""
    if isinstance(v, (list, tuple)):
        return Tensor(v, device=t.device).data
    return C.const(v, op)


def _aliases(o, t) -> bool:
    return isinstance(o, Tensor) and o._ver is t._ver


def _saved_value(o, t):
    """``o`` as a rule will need it after the write into ``t``: itself, or a recorded clone if it shares ``t``'s storage."""
    if not isinstance(o, Tensor):
        return o
    return o.clone() if _aliases(o, t) else o


# -- committing a write -----------------------------------------------------------------------


def _rebase(t, n):
    """Point ``t``'s history at ``n`` (keeping retain_grad())."""
    old = t._node
    if old is not None and old.retain is not None and old.retain() is t:
        n.retain, old.retain = old.retain, None
    t._node, t._oidx, t._rg = n, 0, True


def _clock():
    """The start time of an in-place op when a profile is active, else None."""
    return _perf() if _state.profiler() is not None else None


def _report(op, t0, n=None):
    """Tell the active profile (if any) about one call of ``op`` started at ``t0``."""
    prof = _state.profiler()
    if prof is None or t0 is None:
        return
    prof._add_forward(op, _perf() - t0)
    if n is not None:
        prof._add_saved(op, n.saved_bytes)


def _commit(t, mode, self_rg, op, write, rule=None, others=(), saved=(), attrs=None, info=None, t0=None):
    """Write (``write(t.data)``), bump the version, and record the write when ``mode`` says so.
    ``t0``: when the op started (``_clock()``), for the profile."""
    if mode is None:
        write(t.data)
        t._ver[0] += 1
        _report(op, t0)
        return t
    o_parents = tuple(edge(o) if isinstance(o, Tensor) and o._rg else None for o in others)
    o_meta = tuple((o.data.shape, o.data.dtype) if isinstance(o, Tensor) and o._rg else None for o in others)
    meta = ((t.data.shape, t.data.dtype) if self_rg else None,) + o_meta
    if mode == "self":
        parents = (edge(t) if self_rg else None,) + o_parents
        was_rg = t._rg
        write(t.data)
        t._ver[0] += 1
        n = Node(op, rule, parents, meta, (t.data.shape, t.data.dtype), attrs)
        n.info = info
        n.save(saved)
        _rebase(t, n)
        if not was_rg:
            _promote_views(t, None)
        _report(op, t0, n)
        return t
    base = t._base
    was_rg = base._rg
    pos = _positions(t.data, base.data)
    parents = (edge(base) if self_rg else None,) + o_parents
    write(t.data)
    t._ver[0] += 1
    xp = C.xp_of(base.data)
    keep = xp.ones(base.data.shape, dtype=bool)
    keep.reshape(-1)[pos.reshape(-1)] = False
    bmeta = ((base.data.shape, base.data.dtype) if self_rg else None,) + o_meta
    # pos and keep ride in `saved`, after the inner rule's items: counted as saved for backward
    # (the tape, the profile) and released with them
    n = Node("copy_slices", _copy_slices_rule, parents, bmeta, (base.data.shape, base.data.dtype),
             (rule, meta, attrs, len(saved)))
    n.info = dict(info or {}, op=op)
    n.save(tuple(saved) + (pos, keep))
    _rebase(base, n)
    _view_node(t, base, pos)
    if not was_rg:
        _promote_views(base, t)
    _report(op, t0, n)
    return t


def _promote_views(root, done):
    """The storage of ``root`` has just come to require grad: give the views taken of it before
    (remembered by ``_core.note_plain_view``) a history reading ``root``'s new one."""
    cell = root._ver
    refs = cell[1:]
    del cell[1:]
    for w in refs:
        v = w()
        if v is None or v is done or v._rg or v._node is not None or v._base is not root:
            continue
        if v.data.dtype.kind in "fc" and _shares(v.data, root.data):
            _view_node(v, root, _positions(v.data, root.data))


def _copy_slices_rule(ctx, g, saved):
    rule, imeta, iattrs, k = ctx.attrs
    pos, keep = saved[k], saved[k + 1]
    gv = _gather(g, pos)
    inner = rule(_Ctx(imeta, iattrs), gv, saved[:k])
    gb = None
    if ctx.meta[0] is not None:
        gb = g * keep
        if inner[0] is not None:
            gb = gb + _scatter(inner[0], g.shape, pos)
    return (gb,) + tuple(inner[1:])


def _gather(g, pos):
    """``g.flat[pos]`` (shape of ``pos``), for arrays and Tensors."""
    return g.reshape(-1)[pos]


def _scatter(gv, shape, pos, repeats=False):
    """Zeros of ``shape`` with ``gv`` added at the flat positions ``pos`` (which may repeat only when
    ``repeats``: a broadcast view); the pair of ``_gather``."""
    if C.is_t(gv):
        from .shape import index_add

        size = 1
        for n in shape:
            size *= n
        return index_add((size,), (pos.reshape(-1),), gv.reshape(-1)).reshape(shape)
    xp = C.xp_of(gv)
    z = xp.zeros(shape, dtype=gv.dtype)
    if repeats:
        _be.index_add(xp, z.reshape(-1), pos.reshape(-1), gv.reshape(-1))
    else:
        z.reshape(-1)[pos.reshape(-1)] = gv.reshape(-1)
    return z


def _as_strided_rule(ctx, g, saved):
    shape, repeats = ctx.attrs
    return (_scatter(g, shape, saved[0], repeats),)


def _view_node(v, base, pos):
    """Give the view ``v`` a fresh history: ``v = base.flat[pos]`` of ``base``'s current history."""
    n = Node("as_strided", _as_strided_rule, (edge(base),), ((base.data.shape, base.data.dtype),),
             (v.data.shape, v.data.dtype), (base.data.shape, _overlapping(v.data)))
    n.save((pos,))
    n.view_ver = v._ver[0]
    v._node, v._oidx, v._rg = n, 0, True
    return n


def refresh_view(x):
    """The history of a view whose storage was written since it was taken, re-derived from its base
    (``_core.edge`` calls this; PyTorch regenerates a view's grad_fn the same way)."""
    n = x._node
    base = _live_base(x)
    if base is None or not base._rg or _overlapping(base.data):
        n.view_ver = x._ver[0]  # nothing to re-derive from: the history it has is the one there is
        return n
    return _view_node(x, base, _positions(x.data, base.data))


def _positions(v, b):
    """Flat (C-order) index in ``b`` of every element of its view ``v``: an int64 array of ``v``'s shape."""
    from ..strided import _ptr, as_strided

    xp = C.xp_of(b)
    isz = b.itemsize
    if v.size == 0:
        return xp.zeros(v.shape, dtype=np.int64)
    bst = tuple(s // isz for s in b.strides)
    vst = tuple(s // isz for s in v.strides)
    lo = sum((n - 1) * s for n, s in zip(b.shape, bst, strict=False) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(b.shape, bst, strict=False) if s > 0)
    if _overlapping(b):
        raise RuntimeError("in-place write through a view of a broadcast tensor: clone the base first")
    tag = xp.full(hi - lo + 1, -1, dtype=np.int64)  # one cell per memory location the base spans
    as_strided(tag, -lo, b.shape, bst)[...] = xp.arange(b.size, dtype=np.int64).reshape(b.shape)
    off = (_ptr(v) - _ptr(b)) // isz - lo
    pos = as_strided(tag, off, v.shape, vst).copy()
    if bool((pos < 0).any()):
        raise RuntimeError("internal error: a view reaches memory its base does not hold")
    return pos


# -- arithmetic --------------------------------------------------------------------------------


def _begin(t, other, op, differentiable=True):
    """What every in-place arithmetic op does first: check ``t`` and the operand, decide what to
    record (``other`` counts as an input when ``differentiable``), and ready the storage.
    -> (start time, operand array, the Tensor inputs besides ``t``, mode, self_rg)."""
    t0 = _clock()
    _self(t, op)
    od = _operand(other, op, t)
    others = (other,) if differentiable and isinstance(other, Tensor) else ()
    mode, self_rg = _plan(t, op, others)
    _prepare_storage(t, op)
    return t0, od, others, mode, self_rg


def _addsub_rule(ctx, g, saved):
    mx, my = _metas(ctx)
    a = ctx.attrs
    return (None if mx is None else g, None if my is None else unb(g * a if a != 1 else g, my[0]))


def _addsub(t, other, alpha, op, sign):
    t0, od, others, mode, self_rg = _begin(t, other, op)
    xd = t.data
    if sign > 0:
        r = xd + od if alpha == 1 else xd + od * alpha
    else:
        r = xd - od if alpha == 1 else xd - od * alpha
    _check_result(t, r, op)
    return _commit(t, mode, self_rg, op, _assign(r), _addsub_rule, others, attrs=sign * alpha, t0=t0)


def _assign(r):
    def write(dst):
        dst[...] = r

    return write


def add_(t, other, *, alpha=1):
    """``t += alpha * other`` in place (``other`` broadcasts to ``t``); returns ``t``.

    >>> with mg.no_grad():
    ...     w.add_(w.grad, alpha=-0.1)
    """
    return _addsub(t, other, alpha, "add_", 1)


def sub_(t, other, *, alpha=1):
    """``t -= alpha * other`` in place; returns ``t``."""
    return _addsub(t, other, alpha, "sub_", -1)


def _mul_rule(ctx, g, saved):
    y, x_old = saved
    mx, my = _metas(ctx)
    return (None if mx is None else g * y, None if my is None else unb(g * x_old, my[0]))


def mul_(t, other):
    """``t *= other`` in place; returns ``t``."""
    op = "mul_"
    t0, od, others, mode, self_rg = _begin(t, other, op)
    r = t.data * od
    _check_result(t, r, op)
    saved = ()
    if mode is not None:
        other_rg = isinstance(other, Tensor) and other._rg
        saved = (_saved_value(other if isinstance(other, Tensor) else od, t) if self_rg else None,
                 t.clone() if other_rg else None)
    return _commit(t, mode, self_rg, op, _assign(r), _mul_rule, others, saved, t0=t0)


def _div_rule(ctx, g, saved):
    y, x_old = saved
    mx, my = _metas(ctx)
    gx = None if mx is None else g / y
    gy = None if my is None else unb(-g * x_old / (y * y), my[0])
    return gx, gy


def div_(t, other):
    """``t /= other`` in place (true division); returns ``t``."""
    op = "div_"
    t0, od, others, mode, self_rg = _begin(t, other, op)
    r = t.data / od
    _check_result(t, r, op)
    saved = ()
    if mode is not None:
        other_rg = isinstance(other, Tensor) and other._rg
        saved = (_saved_value(other if isinstance(other, Tensor) else od, t),
                 t.clone() if other_rg else None)
    return _commit(t, mode, self_rg, op, _assign(r), _div_rule, others, saved, t0=t0)


def _pow_rule(ctx, g, saved):
    """x ** y's own rule, over the saved old x and y (a constant exponent has no meta)."""
    return _ew_pow_rule(_Ctx(_metas(ctx), None), g, saved)


def pow_(t, exponent):
    """``t **= exponent`` in place (``exponent`` broadcasts to ``t``); returns ``t``.

    Differentiable in both, with the rule of ``x ** y`` applied to ``t``'s old value.

    >>> y = x * 1
    >>> y.pow_(2)           # y is now x ** 2, its history says so
    """
    op = "pow_"
    t0, od, others, mode, self_rg = _begin(t, exponent, op)
    try:
        r = t.data ** od
    except ValueError as e:  # NumPy: integers to negative integer powers
        raise ValueError(f"{op}: {e} (tensor dtype {t.dtype}, exponent {_describe(od)})") from None
    _check_result(t, r, op)
    saved = ()
    if mode is not None:  # the old x (a recorded clone taken before the write) and the exponent
        saved = (t.clone(), _saved_value(exponent if isinstance(exponent, Tensor) else od, t))
    return _commit(t, mode, self_rg, op, _assign(r), _pow_rule, others, saved, t0=t0)


def _describe(v):
    return f"of shape {tuple(v.shape)}" if hasattr(v, "shape") else repr(v)


def _floordiv_rule(ctx, g, saved):
    mx, _ = _metas(ctx)
    return (None if mx is None else g * 0,)  # piecewise constant: zero wherever it exists


def floor_divide_(t, other):
    """``t //= other`` in place (NumPy's floor division); returns ``t``.

    Not differentiable (as ``x // y``): a ``t`` in a recorded graph gets a zero gradient through
    it, and ``other`` none.
    """
    op = "floor_divide_"
    t0, od, _, mode, self_rg = _begin(t, other, op, differentiable=False)
    r = t.data // od
    _check_result(t, r, op)
    return _commit(t, mode, self_rg, op, _assign(r), _floordiv_rule, (), t0=t0)


def _mod_rule(ctx, g, saved):
    """x % y's own rule, over the saved old x and y (a constant divisor has no meta)."""
    return _ew_mod_rule(_Ctx(_metas(ctx), None), g, saved)


def remainder_(t, other):
    """``t %= other`` in place (Python's and NumPy's sign convention); returns ``t``.

    Differentiable in both: 1 for ``t``, ``-floor(t / other)`` for ``other``.
    """
    op = "remainder_"
    t0, od, others, mode, self_rg = _begin(t, other, op)
    r = t.data % od
    _check_result(t, r, op)
    saved = (None, None)
    if mode is not None and others and other._rg:  # other's gradient needs the old t and other
        saved = (t.clone(), _saved_value(other, t))
    return _commit(t, mode, self_rg, op, _assign(r), _mod_rule, others, saved, t0=t0)


def _clamp_rule(ctx, g, saved):
    (mask,) = saved
    return (g * mask,)


def clamp_(t, min=None, max=None):  # noqa: A002 - NumPy/PyTorch names
    """Clamp into ``[min, max]`` in place (either may be None); gradient 1 inside, bounds included."""
    t0 = _clock()
    op = "clamp_"
    _self(t, op)
    if min is None and max is None:
        raise ValueError("clamp_: at least one of min and max must be given")
    bounds = []
    for b in (min, max):
        if isinstance(b, Tensor):
            if b._rg and _state.grad_enabled():
                raise TypeError("clamp_: bounds that require grad are not supported in place; use mg.clamp(x, lo, hi)")
            b = _operand(b, op, t)
        elif b is not None:
            b = _operand(b, op, t)
        bounds.append(b)
    lo, hi = bounds
    mode, self_rg = _plan(t, op, ())
    _prepare_storage(t, op)
    xd = t.data
    xp = C.xp_of(xd)
    r = xp.clip(xd, lo, hi)
    _check_result(t, r, op)
    saved = ()
    if self_rg:
        m = xp.ones(xd.shape, dtype=bool)
        if lo is not None:
            m = m & (xd >= lo)
        if hi is not None:
            m = m & (xd <= hi)
        saved = (m,)
    return _commit(t, mode, self_rg, op, _assign(r), _clamp_rule, (), saved, info={"min": lo, "max": hi}
                   if not hasattr(lo, "shape") and not hasattr(hi, "shape") else None, t0=t0)


clip_ = clamp_


# -- overwriting --------------------------------------------------------------------------------


def _fill_rule(ctx, g, saved):
    mx, mv = _metas(ctx)
    return (None if mx is None else g * 0, None if mv is None else unb(g, mv[0]))


def fill_(t, value, *, _op="fill_"):
    """Set every element to ``value`` (a number, or a one-element tensor) in place; returns ``t``."""
    t0 = _clock()
    op = _op
    _self(t, op)
    if isinstance(value, Tensor):
        if value.size != 1:
            raise ValueError(f"{op}: the value must be a number or a one-element tensor, got shape {value.shape}")
    vd = _operand(value, op, t)
    others = (value,) if isinstance(value, Tensor) else ()
    mode, self_rg = _plan(t, op, others)
    _prepare_storage(t, op)
    if hasattr(vd, "reshape"):
        vd = vd.reshape(())

    def write(dst):
        dst[...] = vd

    return _commit(t, mode, self_rg, op, write, _fill_rule, others, info={"value": value}
                   if not isinstance(value, Tensor) and op == "fill_" else None, t0=t0)


def zero_(t):
    """Set every element to 0 in place; returns ``t``."""
    _self(t, "zero_")
    return fill_(t, 0, _op="zero_")


def _copy_rule(ctx, g, saved):
    mx, ms = _metas(ctx)
    src_dev = ctx.attrs
    gs = None
    if ms is not None:
        gs = unb(g, ms[0])
        if src_dev is not None:
            if C.is_t(gs):
                from .shape import to_device

                gs = to_device(gs, src_dev)
            else:
                gs = _be.to_device(gs, src_dev)
    return (None if mx is None else g * 0, gs)


def copy_(t, src):
    """Copy ``src`` (broadcast to ``t``'s shape, cast to its dtype, moved to its device) into ``t``; returns ``t``.

    Differentiable in ``src``; the gradient goes back to ``src``'s device and dtype.
    """
    t0 = _clock()
    op = "copy_"
    _self(t, op)
    src_dev = None
    if isinstance(src, Tensor):
        sd = src.data
        if src.device != t.device:
            src_dev = src.device
            sd = _be.to_device(sd, t.device)
        elif _aliases(src, t):
            sd = sd.copy()
    else:
        sd = _const(src, op, t)
        if isinstance(sd, np.ndarray) and _be.is_cupy_array(t.data):
            sd = _be.to_device(sd, t.device)
    sshape = tuple(getattr(sd, "shape", ()))
    try:
        ok = np.broadcast_shapes(sshape, t.shape) == tuple(t.shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"copy_: the source of shape {sshape} does not broadcast to the tensor's shape {t.shape}")
    others = (src,) if isinstance(src, Tensor) else ()
    mode, self_rg = _plan(t, op, others)
    _prepare_storage(t, op)

    def write(dst):
        dst[...] = sd

    return _commit(t, mode, self_rg, op, write, _copy_rule, others, attrs=src_dev, t0=t0)


# -- t[idx] = value ---------------------------------------------------------------------------------


def _setitem_rule(ctx, g, saved):
    idx = ctx.attrs
    keep, won = saved[0], saved[-1]
    mt, mv = _metas(ctx)
    gt = None if mt is None else g * keep
    gv = None
    if mv is not None:
        gs = g[idx]
        if won is not None:
            gs = gs * won
        gv = _fit_grad(gs, mv[0])
    return gt, gv


def _fit_grad(gs, shape):
    """Sum a gradient of the written region down to the value's shape (which may carry extra leading 1s)."""
    k = len(shape) - gs.ndim
    if k > 0:
        return unb(gs, shape[k:]).reshape(shape)
    return unb(gs, shape)


def setitem(t, idx, value):
    """``t[idx] = value`` (basic or advanced indexing; ``value`` broadcasts to ``t[idx]``).

    Differentiable in ``t`` (the written positions get no gradient) and in ``value``.

    >>> buf = mg.zeros(3)
    >>> buf[1] = x          # buf now has a history: gradients reach x
    """
    from .shape import _convert_index, _fmt_index, _index_saved, _to_device_index

    t0 = _clock()
    op = "setitem"
    _self(t, op)
    cidx, basic = _convert_index(idx)
    if not basic:
        cidx = _to_device_index(cidx, t.data, op)
    if isinstance(value, Tensor):
        vd = value.data
        if type(vd) is not type(t.data):
            C.check_same_device(op, t.data, vd)
        if _aliases(value, t):
            vd = vd.copy()
    else:
        vd = _const(value, op, t)
        if hasattr(vd, "shape") and type(vd) is not type(t.data):
            C.check_same_device(op, t.data, vd)
    others = (value,) if isinstance(value, Tensor) else ()
    mode, self_rg = _plan(t, op, others)
    _prepare_storage(t, op)
    xd = t.data
    if mode is None:
        def write(dst):
            try:
                dst[cidx] = vd
            except IndexError as e:
                raise IndexError(f"setitem: {e} (tensor shape {t.shape})") from None
            except ValueError as e:
                raise ValueError(f"setitem: {e} (tensor shape {t.shape}, index {_fmt_index(cidx)})") from None

        return _commit(t, None, False, op, write, t0=t0)
    try:
        sel_shape = tuple(xd[cidx].shape)
    except IndexError as e:
        raise IndexError(f"setitem: {e} (tensor shape {t.shape})") from None
    vshape = tuple(getattr(vd, "shape", ()))
    try:
        np.broadcast_shapes(_strip_ones(vshape, len(sel_shape)), sel_shape)
        if len(_strip_ones(vshape, len(sel_shape))) > len(sel_shape):
            raise ValueError
    except ValueError:
        raise ValueError(
            f"setitem: a value of shape {vshape} cannot be broadcast to the indexed region {_fmt_index(cidx)} "
            f"of shape {sel_shape} (tensor shape {t.shape})"
        ) from None
    xp = C.xp_of(xd)
    keep = xp.ones(xd.shape, dtype=bool)
    keep[cidx] = False
    won = None
    if basic:
        def write(dst):
            dst[cidx] = vd
    else:
        # repeated indices: find which write lands where, and write exactly that (deterministic on GPUs too)
        n = 1
        for s in sel_shape:
            n *= s
        ids = xp.arange(n, dtype=np.int64).reshape(sel_shape)
        tag = xp.full(xd.shape, -1, dtype=np.int64)
        tag[cidx] = ids
        winner = tag[cidx]
        won = winner == ids
        vfull = xp.broadcast_to(xp.asarray(vd).reshape(_strip_ones(vshape, len(sel_shape))), sel_shape)

        def write(dst):
            dst[cidx] = vfull.reshape(-1)[winner.reshape(-1)].reshape(sel_shape)

    # saved: the mask of positions the write kept, the index Tensors (so that backward refuses one changed
    # in place since), which write won per position (repeated advanced indices)
    saved = (keep,) + (_index_saved(idx, cidx)[1:] if not basic else ()) + (won,)
    return _commit(t, mode, self_rg, op, write, _setitem_rule, others, saved, attrs=cidx,
                   info={"index": _fmt_index(cidx)}, t0=t0)


def _strip_ones(shape, ndim):
    """A value's shape without the leading 1s beyond ``ndim`` dims (NumPy's setitem drops them)."""
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape
