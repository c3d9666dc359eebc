"""Forward mode: dual tensors, and the tangents that travel with every op (``mg.autograd.forward_ad``).

Inside ``with dual_level():``, ``make_dual(x, u)`` is ``x`` carrying the tangent ``u``. Every op
that reads a dual tensor computes its output's tangent as it runs: ``run_op`` hands the op to
the active ``Levels`` (``carry``), which calls the op's forward-mode rule (``Op.jvp``). One pass,
no reverse pass; ``unpack_dual(y)`` reads ``(primal, tangent)``.

A rule is written once in the array API, like a gradient rule: in first order it is handed
backend arrays; when the tangent must itself be differentiated (a level inside another, or
gradients recorded through it) it is handed Tensors and ``ctx.xp`` records. Levels nest: the
tangent at level ``L`` is computed with ``L`` and the levels inside it switched off, so it
carries the tangents of the levels outside (JAX's order of perturbations).

Most rules are derived, not written (``derive``): an elementwise op's JVP (``elementwise_jvp``) is its VJP rule
applied to the tangent (its Jacobian is diagonal); a linear op's is the op applied to the
tangents (``linear_jvp``); a multilinear one's, the sum over its inputs (``multilinear_jvp``).
"""
from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

import numpy as np

from . import _batched
from . import _state
from . import backend as _be
from . import kernels as _k
from ._xp import shares_memory
from .engine import OPS, TENSORS, _positions, run_op, array_namespace
from .tensor import Tensor, wrap

_ids = itertools.count(1)
_nd = np.ndarray
_new = object.__new__


class Levels:
    """The dual levels active in this thread, outermost first. ``run_op`` calls ``carry``."""

    __slots__ = ("ids", "duals", "plain")

    def __init__(self, ids, duals, plain=frozenset()):
        self.ids = ids
        self.duals = duals  # per level: weak references to the tensors make_dual made there
        self.plain = plain  # levels whose tangents no reverse pass differentiates (dual_level(_plain=True))

    def inside(self, outer):
        """These levels with only ``outer`` (a prefix of ``ids``) active; None when it is empty."""
        return Levels(outer, self.duals, self.plain) if outer else None

    def __repr__(self):
        return f"<dual levels {self.ids}>"

    def carry(self, op, args, datas, params, aux, out):
        """Give ``out`` (a Tensor, or a tuple of them) its tangent at each level an input has one."""
        ids = self.ids
        for k, level in enumerate(ids):
            ts = tds = None  # the inputs' tangents, and their arrays
            rg = False  # an input or a tangent requires grad: the tangent may have to record
            for i, a in enumerate(args):
                if isinstance(a, Tensor):
                    fw = a._tangents
                    t = None if fw is None else fw.get(level)
                    if t is None and a._base is not None:  # a view taken before its base was written
                        t = _from_base(a, level)
                    if t is not None:
                        if ts is None:
                            ts, tds = [None] * len(args), [None] * len(args)
                        ts[i], tds[i] = t, t.data
                        rg = rg or t._requires_grad
                    rg = rg or a._requires_grad
            if ts is None:
                continue
            if op.jvp is None:
                _no_rule(op)
            elif k == 0 and out.__class__ is not tuple and op.rule_on_arrays and not (
                    rg and level not in self.plain and _state.get().grad):
                _on_arrays(op, datas, params, aux, out, tds, level)
            else:
                _on_tensors(op, args, params, aux, out, ts, level, ids[:k])
            observers = _state.get().observers
            if observers:  # anomaly mode looks at the tangents
                for o in observers:
                    if hasattr(o, "tangent"):
                        o.tangent(op.name, level, [tangent_of(r, level) for r in (out if out.__class__ is tuple
                                                                                 else (out,))], tds)


class JvpCtx:
    """What a forward-mode rule reads: ``xp``, ``op``, ``args`` (the inputs: arrays and numbers in
    first order, else Tensors), ``out`` (the output), ``aux``. (``saved``, ``parents`` and ``meta``
    are what a gradient rule reads, when ``elementwise_jvp`` calls one.)"""

    __slots__ = ("xp", "op", "args", "out", "aux", "saved", "parents")

    def __init__(self, xp, op, args, out, aux):
        self.xp, self.op, self.args, self.out, self.aux = xp, op, args, out, aux

    @property
    def meta(self):
        return tuple((getattr(a, "shape", ()), getattr(a, "dtype", None)) for a in self.args)


def _no_rule(op):
    if op.rule is not None:  # not differentiable: the output carries no tangent (a zero one)
        raise RuntimeError(f"forward mode: op {op.name!r} has no forward-mode rule (jvp); {_missing_hint(op)}")


def _on_arrays(op, datas, params, aux, out, tds, level):
    """First order: the rule runs on the backend arrays (the tangent needs no history)."""
    d = out.data
    if d.dtype.kind not in "fc":
        return
    ctx = _new(JvpCtx)  # (no __init__ frame: one per op)
    if _batched.active:  # vmap: a tangent or an operand may be batched where the output is not
        try:
            ctx.xp = array_namespace(_be.array_module(d, *[a for a in (*datas, *tds) if hasattr(a, "shape")]))
        except RuntimeError:  # a device move (``to``): its rule runs on the output's device
            ctx.xp = array_namespace(_be.array_module(d))
    else:
        ctx.xp = _NUMPY if d.__class__ is _nd else array_namespace(_be.array_module(d))
    ctx.op, ctx.args, ctx.out, ctx.aux = op, datas, d, aux
    r = op.jvp(ctx, *tds, **params)
    if r is None:
        return
    if r.__class__ is not d.__class__ or r.shape != d.shape or r.dtype != d.dtype or (
            not op.view and _aliases(r, tds)):
        r = _as_tangent(op, d, r, tds)
    _set(out, level, wrap(r))


def _on_tensors(op, args, params, aux, out, ts, level, outer):
    """The tangent is recorded, or carries the outer levels' tangents: the rule runs on Tensors,
    with this level and those inside it switched off (``outer`` stay on)."""
    many = out.__class__ is tuple
    outs = out if many else (out,)
    if not any(o.data.dtype.kind in "fc" for o in outs):
        return
    token = _state.set_levels(_state.get().fw.inside(outer))
    try:
        res = op.jvp(JvpCtx(TENSORS, op, args, out, aux), *ts, **params)
    finally:
        _state.reset(token)
    for o, r in zip(outs, res if many else (res,), strict=True):
        if r is not None and o.data.dtype.kind in "fc":
            _set(o, level, _tensor_tangent(op, o, r, ts))


_NUMPY = array_namespace(np)


def _missing_hint(op):
    if op.kind == "function":
        return f"give the autograd.Function {op.name} a static jvp(ctx, *tangents)"
    return "write one beside its gradient rule (forward_ad.derive explains which are derived)"


def _as_tangent(op, d, r, tds):
    """A rule's array result as the tangent of the output array ``d``: its shape and dtype, and
    never an input's tangent itself (a write into one would change the other) unless the op is a view."""
    if r.__class__ is not d.__class__ and not _batched.is_batched(r):
        r = _be.array_module(d).asarray(r, dtype=d.dtype)
    if r.shape != d.shape:
        r = _be.array_module(r, d).broadcast_to(r, _shape_of(op, r, d.shape)).copy()
    elif not op.view and _aliases(r, tds):
        r = r.copy()
    if r.dtype != d.dtype:
        r = r.astype(d.dtype)
    return r


def _tensor_tangent(op, o, r, ts):
    """The same, on Tensors (the tangent recorded, or carrying outer levels' tangents)."""
    t = r if isinstance(r, Tensor) else wrap(_be.array_module(o.data).asarray(r, dtype=o.data.dtype))
    if t.shape != o.shape:
        t = TENSORS.broadcast_to(t, _shape_of(op, t, o.shape)).clone()
    elif not op.view and any(t is u or (u is not None and t._storage is u._storage) for u in ts):
        t = t.clone()
    if t.dtype != o.dtype:
        t = t.astype(o.dtype)
    return t


def _shape_of(op, r, shape):
    """``shape``, when ``r`` broadcasts to it (a rule may return a scalar zero); else an error."""
    try:
        np.broadcast_shapes(tuple(r.shape), tuple(shape))
    except ValueError:
        raise RuntimeError(f"internal error: the forward-mode rule of {op.name!r} returned shape {tuple(r.shape)} "
                           f"for an output of shape {tuple(shape)}") from None
    return shape


def _aliases(a, tds):
    """``a`` is, or may be a view of, one of the tangent arrays ``tds``."""
    fresh = getattr(a, "base", 0) is None  # a new array (most rules' results): only identity can alias
    for u in tds:
        if u is not None and (a is u or not fresh and _be.array_module(a).may_share_memory(a, u)):
            return True
    return False


def _set(t, level, tangent):
    fw = t._tangents
    if fw is None:
        fw = t._tangents = {level: tangent}
        n = t._node
        if n is not None and n._out is not None and t._output_index == 0:  # a rule reads the output (exp): with its tangents
            n.out_tangents = fw
    else:
        fw[level] = tangent


# ---------------------------------------------------------------------------
# derived rules
# ---------------------------------------------------------------------------


def elementwise_jvp(ctx, *ts, **params):
    """The JVP of an elementwise op: its Jacobian is diagonal (per input, after broadcasting), so
    the tangent is the gradient rule applied to each input's tangent broadcast to the output.
    The rule is asked for one input's gradient at a time (``ctx.parents``), and reads the inputs it
    saves (``ctx.saved``; with ``save_for_others``, not that input itself, as in a backward where it alone
    needs a gradient). For complex numbers: a holomorphic op's gradient rule is ``conj(text(conj(g)))``
    (ops/_registry.holomorphic: the op's ``twin``), its text for real numbers being ``g f'(x)``, so its tangent is that text on
    ``t``, ``f'(z) t`` (= conj(vjp(conj(t)))); an op whose rule is right for complex numbers as written
    (``complex=True``) is linear with real coefficients (``where``, ``add``: the rule on ``t`` is its
    tangent), or gives its own ``jvp`` (``abs``, ``angle``: not holomorphic)."""
    op, args, xp = ctx.op, ctx.args, ctx.xp
    rule = op.rule  # the text itself (a complex Node's rule is the op's twin's)
    n = len(args)
    save = op.save_at if op.save_at is not None else _positions(op.save, n)
    if save and save[-1] >= n:
        save = tuple(i for i in save if i < n)
    saved = tuple(map(args.__getitem__, save))
    if xp is TENSORS:
        saved = tuple(map(_as_saved, saved))
    total = None
    for i, t in enumerate(ts):
        if t is None:
            continue
        if op.broadcast and t.shape != ctx.out.shape:
            t = xp.broadcast_to(t, ctx.out.shape)
        ctx.parents = _ONLY[n][i]
        ctx.saved = saved
        if op.save_for_others and i in save:
            k = save.index(i)
            ctx.saved = saved[:k] + (None,) + saved[k + 1:]
        d = rule(ctx, t, **params)[i]
        if d is not None:
            total = d if total is None else total + d
    return total


# _ONLY[n][i]: the ``parents`` that ask a rule of n inputs for input i's gradient alone
_ONLY = [tuple((None,) * i + (True,) + (None,) * (n - i - 1) for i in range(n)) for n in range(8)]


def _as_saved(a):
    """An input as a gradient rule on Tensors reads it from ``ctx.saved``: an array constant as a Tensor."""
    if not isinstance(a, Tensor) and hasattr(a, "shape"):
        return wrap(a)
    return a


def linear_jvp(*positions):
    """The JVP of an op linear in the inputs at ``positions`` (all when none are given), the others
    held: the op itself applied to the tangents (zeros where an input has none)."""
    def jvp(ctx, *ts, **params):
        at = positions or range(len(ts))
        if all(ts[i] is None for i in at):
            return None
        xs = list(ctx.args)
        for i in at:
            xs[i] = ts[i] if ts[i] is not None else ctx.xp.zeros_like(ctx.args[i])
        return ctx.xp.run_op(ctx.op, *xs, **params)

    jvp.derived = "linear"
    return jvp


def multilinear_jvp(*positions):
    """The JVP of an op linear in each input at ``positions`` separately (``x @ y``, einsum): the
    sum, over the inputs with a tangent, of the op with that input replaced by its tangent."""
    def jvp(ctx, *ts, **params):
        total = None
        for i in positions or range(len(ts)):
            if ts[i] is not None:
                xs = list(ctx.args)
                xs[i] = ts[i]
                d = ctx.xp.run_op(ctx.op, *xs, **params)
                total = d if total is None else total + d
        return total

    jvp.derived = "multilinear"
    return jvp


elementwise_jvp.derived = "elementwise"


def derive(jvp, rule, kind):
    """An op's forward-mode rule as ``defop`` records it: ``jvp`` when given; else derived from
    the gradient rule of an elementwise op; else None (forward mode through it raises, naming it)."""
    if jvp is not None or rule is None:
        return jvp
    return elementwise_jvp if kind == "elementwise" else None


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

    def __init__(self, *, _plain=False):
        # _plain (mg.func's hvp and hessian): no reverse pass will differentiate this level's
        # tangents, so they are computed on arrays even from inputs that require grad
        self._plain = _plain

    def __enter__(self):
        _state.refuse("forward mode (forward_ad.dual_level): a replay would not carry tangents")
        m = _state.get()
        self.level = next(_ids)
        outer = m.fw
        ids = (outer.ids if outer is not None else ()) + (self.level,)
        duals = dict(outer.duals) if outer is not None else {}
        duals[self.level] = []
        plain = outer.plain if outer is not None else frozenset()
        self._token = _state.set_levels(Levels(ids, duals, plain | {self.level} if self._plain else plain))
        return self.level

    def __exit__(self, *exc):
        fw = _state.get().fw
        _state.reset(self._token)
        for w in fw.duals.get(self.level, ()):
            t = w()
            if t is not None and t._tangents is not None:
                t._tangents.pop(self.level, None)
        return False


def _current(fn):
    fw = _state.get().fw
    if fw is None:
        raise RuntimeError(f"forward_ad.{fn}: no dual level is active; call it inside `with forward_ad.dual_level():`")
    return fw


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
    token = _state.set_levels(fw.inside(tuple(i for i in fw.ids if i < level)))
    try:
        d = run_op(OPS["alias"], primal)  # (ops/shape.py's) the outer levels' tangents ride along
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
    if primal.dtype.kind not in "fc":
        raise TypeError(f"forward_ad.make_dual: only floating-point and complex primals have tangents, got dtype "
                        f"{primal.dtype}")
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
    if fw is None or not isinstance(tensor, Tensor) or (tensor._tangents is None and tensor._base is None):
        return UnpackedDualTensor(tensor, None)
    level = fw.ids[-1] if level is None else level
    t = tensor._tangents.get(level) if tensor._tangents is not None else None
    if t is None and tensor._base is not None:  # a view taken before its base got a tangent
        t = _from_base(tensor, level)
    if t is None:
        return UnpackedDualTensor(tensor, None)
    outer = tuple(i for i in fw.ids if i < level)
    token = _state.set_levels(fw.inside(outer))
    try:
        p = run_op(OPS["alias"], tensor)
    finally:
        _state.reset(token)
    return UnpackedDualTensor(p, t)


def tangent_of(t, level):
    """The tangent ``t`` carries at ``level`` (None when none)."""
    fw = getattr(t, "_tangents", None)
    return None if fw is None else fw.get(level)


# ---------------------------------------------------------------------------
# in-place writes (ops/inplace.py writes the tangents, with ``write`` itself): the views of tangents
# ---------------------------------------------------------------------------


set_tangent = _set


def before_write(t):
    """``t``'s tangents as an in-place write's rule reads them: a view's taken from its base where it
    has none yet; one that a reverse pass differentiates is a recorded clone (the write overwrites
    the tangent, which the rule's recorded ops may have saved)."""
    fw = _state.get().fw
    if fw is None:
        return t._tangents
    if t._base is not None:
        for level in fw.ids:
            if tangent_of(t, level) is None:
                _from_base(t, level)
    tangents = t._tangents
    if tangents is not None and any(u._requires_grad for u in tangents.values()):
        tangents = {level: u.clone() if u._requires_grad else u for level, u in tangents.items()}
    return tangents


def recorded_tangents(t):
    """``t`` carries, at an active level, a tangent that a reverse pass differentiates."""
    fw = _state.get().fw
    return fw is not None and t._tangents is not None and any(u._requires_grad for u in t._tangents.values())


def zero_tangent(t, level):
    """A zero tangent for ``t`` at ``level``; for a view, a view of its base's tangent (made
    zero where the base has none), so that a write through the view reaches it."""
    base = t._base
    if base is None or base.data.size == 0 or not shares_memory(t.data, base.data):
        z = wrap(_be.array_module(t.data).zeros(t.shape, dtype=t.dtype))
        _set(t, level, z)
        return z
    if tangent_of(base, level) is None:
        _set(base, level, wrap(_be.array_module(base.data).zeros(base.shape, dtype=base.dtype)))
    return _view_tangent(t, base, level)


def _view_tangent(v, base, level):
    """The tangent of the view ``v`` as the view of its base's tangent at ``v``'s positions (the
    base's tangent made C-ordered first, if it is not): the registry's ``strided_view`` op, run
    with the levels outside ``level`` active, so the view carries the base tangent's history and
    its own tangents."""
    fw = _state.get().fw
    bt = tangent_of(base, level)
    outer = fw.inside(tuple(i for i in fw.ids if i < level)) if fw is not None else None
    token = _state.set_levels(outer)
    try:
        if not bt.data.flags.c_contiguous:
            bt = bt.clone()
            _set(base, level, bt)
        pos = _k.view_positions(v.data, base.data).reshape(-1)
        strides = []
        step = 1
        for n in reversed(v.shape):  # the view's strides in its base, read off its positions
            strides.append(int(pos[step] - pos[0]) if n > 1 else 0)
            step *= n
        z = run_op(OPS["strided_view"], bt, pos.reshape(v.shape), offset=int(pos[0]) if pos.size else 0,
                   shape=tuple(v.shape), strides=tuple(strides[::-1]))
    finally:
        _state.reset(token)
    _set(v, level, z)
    return z


def _from_base(a, level):
    """A view that carries no tangent of a base that does (the base got it by a write after the
    view was taken): the view of the base's tangent. None when there is none."""
    base = a._base
    if tangent_of(base, level) is None or a.data.dtype.kind not in "fc" or not shares_memory(a.data, base.data):
        return None
    return _view_tangent(a, base, level)
