"""In-place writes: the machinery (``write``, the checks, ``copy_slices`` / ``as_strided``, view
histories) behind ``add_ sub_ mul_ div_ pow_ floor_divide_ remainder_ fmod_ zero_ fill_ copy_ clamp_``,
the unary ones (``exp_ sigmoid_ relu_ clamp_min_ tril_``...), the draws (``uniform_ normal_ bernoulli_``),
every augmented assignment ``+= -= *= /= **= //= %=`` (in place, as NumPy's and PyTorch's are:
views see the write) and ``t[idx] = value``; those methods themselves are in ``writes.py``.
``t._version`` reads the counter.

Every write goes into the tensor's storage, so its base and every other view of that
storage see it, and bumps the storage's version counter (``t._storage.version``). A Node
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
    re-derived from the base when next used (``engine.edge`` calls ``refresh_view``), so
    ``h[0] += x`` or ``buf[:, 1] = y`` inside a graph get correct gradients;
  * when a write makes a storage require grad for the first time (``buf[0] = x`` on a plain
    ``buf``), the views of it taken before (remembered weakly by ``engine._share_storage`` on
    the storage's ``views``) get a history reading the new one, so they
    carry gradients too (``left, right = out[:, :H], out[:, H:]`` then filling both works);
  * a tensor that shares storage with a tensor in the graph without being part of the
    graph (``y.detach()`` or a view of ``y`` taken under ``no_grad``, ``y`` a non-leaf):
    ``RuntimeError``: the graph could not see the write.

- Memory that must not be written:

  * ``.grad`` arrays are read-only views (``backward._readonly``), since one gradient
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

import numpy as np

from .. import _batched
from .. import _state
from .. import backend as _be
from ..creation import own_copy
from .._xp import shares_memory
from ..kernels import as_strided as _as_strided
from ..kernels import overlapping as _overlapping
from ..kernels import view_positions as _positions
from ..engine import Op, run_op, const, edge
from .. import forward_ad as _fwd
from ..tensor import Tensor, wrap
from . import elementwise as E
from ._registry import Sample, defop, linear_jvp
from .indexing import _ARRAY

# -- the checks ---------------------------------------------------------------


def _self(t, op):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor to write into, got {type(t).__name__}")


def _readonly(a) -> bool:
    flags = getattr(a, "flags", None)
    return flags is not None and getattr(flags, "writeable", True) is False


def _live_base(t):
    """The base whose storage ``t`` writes into, or None (not a view, or no longer sharing memory)."""
    b = t._base
    if b is None or not shares_memory(t.data, b.data):
        return None
    return b


def _plan(t, op, others):
    """How a write into ``t`` happens: ``(mode, self_needs_grad)``.

    mode: None (a plain write), "self" (rebase ``t``) or "base" (through ``t``'s base).
    """
    if not _state.get().grad:
        return None, False
    if t._requires_grad and t._node is None:
        raise RuntimeError(
            f"{op}: a leaf tensor that requires grad (shape {t.shape}) cannot be modified in place while "
            "gradients are recorded. Update it under `with mg.no_grad():` (as optimizers do), or write "
            "into a .clone()"
        )
    diff = t.data.dtype.kind in "fc"
    need = diff and (t._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in others))
    base = _live_base(t)
    if base is None:
        return ("self", t._requires_grad) if need else (None, False)
    if base._requires_grad and base._node is None:
        if t._requires_grad or need:
            raise RuntimeError(
                f"{op}: this tensor is a view of a leaf that requires grad (shape {base.shape}); it cannot be "
                "modified in place while gradients are recorded. Write under `with mg.no_grad():`, or into "
                "a .clone()"
            )
        return None, False  # a detached alias of a leaf: saved versions guard every graph that used it
    if base._requires_grad:
        if not t._requires_grad:
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
            own_copy(t)  # a .grad (read-only) or a wrapped broadcast array: write a private copy
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
            _same_device(op, t.data, od)
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
        try:
            return Tensor(v, device=t.device).data
        except (TypeError, ValueError) as e:  # the message names ``tensor``: name the in-place op
            raise type(e)(f"{op}: {e}") from None
    return const(v, op)


def _aliases(o, t) -> bool:
    return isinstance(o, Tensor) and o._storage is t._storage


def _saved_value(o, t):
    """``o`` as a rule will need it after the write into ``t``: itself, or a recorded clone if it shares ``t``'s storage."""
    if not isinstance(o, Tensor):
        return o
    return o.clone() if _aliases(o, t) else o


def _same_device(op, a, b):
    try:
        _be.array_module(a, b)
    except RuntimeError:
        raise RuntimeError(f"{op}: expected both operands on the same device, got {_be.device_of(a)} and "
                           f"{_be.device_of(b)}; move one with .to(device)") from None


# -- committing a write: every write goes through run_op ---------------------------------------

def _history(t, copy):
    """A Tensor standing for ``t`` before the write: its history, and its values (a recorded
    clone when the rule will read them after ``t`` is overwritten)."""
    old = wrap(t.data)
    old._storage = t._storage
    if t._node is not None:
        e = edge(t)  # a stale view is re-derived from its base first
        old._node, old._output_index = e if isinstance(e, tuple) else (e, 0)
    old._requires_grad = t._requires_grad
    old._tangents = _fwd.before_write(t)  # forward mode's tangents, read by the op's forward-mode rule
    return E.clone(old) if copy else old  # a recorded clone, taken before the write


def _rebase(t, n, name):
    """Point ``t``'s history at ``n`` (keeping retain_grad())."""
    old = t._node
    n.op = name
    if old is not None and old.retain is not None and old.retain() is t:
        n.retain, old.retain = old.retain, None
    t._node, t._output_index, t._requires_grad = n, 0, True


def write(t, op: Op, name: str, others=(), params=None, check=True):
    """Write ``op(t, *others, **params)`` into ``t``'s storage, bump its version, and record the
    write where ``_plan`` says so; returns ``t``."""
    params = params or {}
    _state.note_write(t)  # a captured step (mg.compile) refuses writes into its inputs
    if _batched.active:
        _batched.check_write(t.data, [o.data for o in others if isinstance(o, Tensor)], name)
    # an operand sharing t's storage is read before the write: a (recorded) clone of it is saved
    others = tuple(o.clone() if isinstance(o, Tensor) and o._storage is t._storage else o for o in others)
    grad_others = tuple(o for o in others if isinstance(o, Tensor))
    mode, self_rg = _plan(t, name, grad_others)
    _prepare_storage(t, name)
    if mode is None:  # nothing the write reads requires grad (its tangents may: run_op records those)
        r = run_op(op, _history(t, 0 in op.save) if _fwd.recorded_tangents(t) else t, *others, **params)
        return _store(t, r, name, check)
    if mode == "self":
        was_rg = t._requires_grad
        r = run_op(op, _history(t, 0 in op.save), *others, **params)
        _store(t, r, name, check)
        _rebase(t, r._node, name)
        if not was_rg:
            _promote_views(t, None)
        return t
    base = t._base
    was_rg = base._requires_grad
    if _batched.is_batched(t.data) and not _batched.is_batched(base.data):
        raise RuntimeError(f"vmap: {name}: an in-place write into a vmapped input whose tensor is differentiated "
                           "outside vmap (it requires grad); clone the input inside the function and write into the clone")
    pos = _positions(t.data, base.data)
    r = run_op(op, _history(t, 0 in op.save), *others, **params)
    _store(t, r, name, check)
    keep = _be.array_module(base.data).ones(base.data.shape, dtype=bool)
    keep.reshape(-1)[pos.reshape(-1)] = False
    cs = run_op(COPY_SLICES, _history(base, False), r, pos, keep, inplace=True)
    cs._node.info = {"op": name}
    _rebase(base, cs._node, "copy_slices")
    view_history(t, base, pos)
    if not was_rg:
        _promote_views(base, t)
    return t


def _store(t, r, name, check):
    if check:
        _check_result(t, r.data, name)
    if r.data is not t.data:
        run_op(_ASSIGN, t, r)  # an op, so that a captured step (mg.compile) writes again on each replay
    t._storage.version += 1
    if r._tangents is not None or t._tangents is not None:
        _write_tangents(t, r)
    return t


def _write_tangents(t, r):
    """``t``'s storage now holds ``r``'s values: at each active dual level, ``t``'s tangent is
    overwritten with ``r``'s (zeroed where ``r`` has none), in place, so that the tangents of
    ``t``'s views and base see it as their values do. The tangent's write is itself a ``write``,
    run with the outer levels active: where the tangent is differentiated (it requires grad, or
    carries an outer level's tangent) the write is recorded like any other, and the tangent's own
    tangents are overwritten in turn (forward over forward, reverse over forward)."""
    fw = _state.get().fw
    if fw is None:
        return
    ids = fw.ids
    for k, level in enumerate(ids):
        new, cur = _fwd.tangent_of(r, level), _fwd.tangent_of(t, level)
        if new is None and cur is None:
            continue
        if cur is None and _live_base(t) is None:  # nothing else shares it: r's own tangent (a fresh one)
            _fwd.set_tangent(t, level, new)
            continue
        if cur is None:
            cur = _fwd.zero_tangent(t, level)
        elif cur._base is not None and (_readonly(cur.data) or _overlapping(cur.data)):
            _fwd.set_tangent(t, level, new.clone() if new is not None else  # a broadcast tangent: t gets its own
                             wrap(_be.array_module(cur.data).zeros(cur.shape, dtype=cur.dtype)))
            continue
        token = _state.set_levels(fw.inside(ids[:k]))
        try:
            if new is None:
                write(cur, FILL_, "zero_", (0,), check=False)
            else:
                write(cur, COPY_, "copy_", (new,), check=False)
        finally:
            _state.reset(token)


def _assign(xp, t, value):
    t[...] = value
    return t


_ASSIGN = defop("assign", _assign, kind="inplace", batch=_batched.refused, complex=True)  # the write itself: ``t[...] = value``, no gradient of its own


# -- the overwriting ops (``fill_``, ``copy_``: writes.py), which a tangent's own write uses too ---------


def _fill_fwd(xp, x, v):
    out = xp.empty_like(x)
    out[...] = v.reshape(()) if hasattr(v, "reshape") else v
    return out


def _fill_fwd_any(xp, x, v):
    out = xp.empty_like(x)
    out[...] = v
    return out


def _overwrite_rule(ctx, g):
    return ctx.xp.zeros_like(g), g if ctx.parents[1] is not None else None


FILL_ = defop("fill_", _fill_fwd, _overwrite_rule, broadcast=True, kind="inplace", jvp=linear_jvp(1),
              batch=_batched.lifting(0),  # a batched value over an unbatched x (its tangent: x's own write is refused later)
              samples=lambda rng: [Sample(rng.standard_normal(4), rng.standard_normal(1))], complex=True)
COPY_ = defop("copy_", _fill_fwd_any, _overwrite_rule, broadcast=True, kind="inplace", jvp=linear_jvp(1),
              batch=_batched.lifting(0),  # a batched value over an unbatched x (its tangent: x's own write is refused later)
              samples=lambda rng: [Sample(rng.standard_normal((2, 3)), rng.standard_normal(3))], complex=True)


# -- a view of a tangent at a view's positions (forward_ad.view_tangent runs it by name) --------------


def _strided_view_fwd(xp, b, pos, offset, shape, strides):
    return _as_strided(b.reshape(-1), offset, shape, strides)


def _strided_view_rule(ctx, g, offset, shape, strides):
    (pos,) = ctx.saved
    bshape = ctx.meta[0][0]
    size = 1
    for n in bshape:
        size *= n
    flat = ctx.xp.index_add(g.reshape(-1), pos.reshape(-1), shape=(size,), template=(_ARRAY,))
    return (flat.reshape(bshape),)


STRIDED_VIEW = defop("strided_view", _strided_view_fwd, _strided_view_rule, save=(1,), view=True, kind="view",
                     jvp=linear_jvp(0),
                     samples=lambda rng: [Sample(rng.standard_normal((3, 4)), np.array([[1, 5], [2, 6]]), offset=1,
                                                 shape=(2, 2), strides=(1, 4))], complex=True)


def _copy_slices_rule(ctx, g, inplace=False):
    pos, keep = ctx.saved
    gb = ctx.xp.where(keep, g, 0.0) if ctx.parents[0] is not None else None
    gv = g.reshape(-1)[pos] if ctx.parents[1] is not None else None
    return gb, gv


def _copy_slices_fwd(xp, b, v, pos, keep, inplace=False):
    """``b`` with ``v`` written at its flat positions ``pos`` (into ``b`` itself for a write)."""
    out = b if inplace else b.copy()
    out[xp.unravel_index(pos.reshape(-1), b.shape)] = v.reshape(-1)
    return out


def _copy_slices_jvp(ctx, tb, tv, *_, inplace=False):
    # linear in b and v (the positions held), computed out of place: never into b's tangent
    xp = ctx.xp
    b, v, pos, keep = ctx.args
    return xp.run_op(COPY_SLICES, xp.zeros_like(b) if tb is None else tb, xp.zeros_like(v) if tv is None else tv,
                    pos, keep)


COPY_SLICES = defop("copy_slices", _copy_slices_fwd, _copy_slices_rule, save=(2, 3), kind="other",
                    batch=_batched.lifting(0),  # the copy of b written into: batched too (not b itself)
                    jvp=_copy_slices_jvp,
                    samples=lambda rng: [Sample(rng.standard_normal((3, 4)), rng.standard_normal(4),
                                                np.arange(4, 8), np.arange(12).reshape(3, 4) // 4 != 1)], complex=True)


def _as_strided_rule(ctx, g, shape):
    (pos,) = ctx.saved
    size = 1
    for n in shape:
        size *= n
    flat = ctx.xp.index_add(g.reshape(-1), pos.reshape(-1), shape=(size,), template=(_ARRAY,))
    return (flat.reshape(shape),)


AS_STRIDED = defop("as_strided", lambda xp, b, pos, shape: b.reshape(-1)[pos], _as_strided_rule, save=(1,),
                   kind="view", jvp=linear_jvp(0),
                   samples=lambda rng: [Sample(rng.standard_normal((3, 4)), np.array([[1, 5], [1, 9]]),
                                               shape=(3, 4))], complex=True)


def view_history(v, base, pos):
    """Give the view ``v`` a fresh history: ``v = base.flat[pos]`` of ``base``'s current history."""
    r = run_op(AS_STRIDED, base, pos, shape=tuple(base.data.shape))
    n = r._node
    n.view_version = v._storage.version
    old = v._node
    if old is not None and old.retain is not None and old.retain() is v:  # retain_grad() goes along
        n.retain, old.retain = old.retain, None
    v._node, v._output_index, v._requires_grad = n, 0, True
    return n


def refresh_view(x):
    """The history of a view whose storage was written since it was taken, re-derived from its base
    (``engine.edge`` calls this as ``Tensor._refresh_view``; PyTorch regenerates a view's grad_fn so)."""
    n = x._node
    base = _live_base(x)
    if base is None or not base._requires_grad or _overlapping(base.data):
        n.view_version = x._storage.version  # nothing to re-derive from: the history it has is the one there is
        return n
    return view_history(x, base, _positions(x.data, base.data))


def _promote_views(root, done):
    """The storage of ``root`` has just come to require grad: give the views taken of it before
    (remembered by the engine in the storage's ``views``) a history reading ``root``'s new one."""
    refs = root._storage.views or ()
    root._storage.views = None
    for w in refs:
        v = w()
        if v is None or v is done or v._requires_grad or v._node is not None or v._base is not root:
            continue
        if v.data.dtype.kind == "f" and shares_memory(v.data, root.data):
            view_history(v, root, _positions(v.data, root.data))
