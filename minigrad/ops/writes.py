"""The in-place methods: ``add_ sub_ mul_ div_ pow_ floor_divide_ remainder_ fmod_ clamp_`` (and the
augmented assignments ``+= -= *= /= **= //= %=`` bound to them), the unary ones (``exp_ log_ sqrt_
abs_ neg_ sigmoid_ tanh_ relu_ sin_ cos_ floor_ ceil_ round_ reciprocal_ square_ clamp_min_
clamp_max_``; ``tril_ triu_ scatter_add_``, whose ops are composites, write their result with ``copy_``'s op),
``fill_ zero_ copy_``, ``t[idx] = value`` (``setitem``) and the draws ``uniform_ normal_ bernoulli_``
(``mg.manual_seed``'s generator; a plain overwrite, no gradient through the values drawn), with
the ops only they have (``floor_divide_``, ``fill_``, ``copy_``, ``setitem``) and their
registrations; ``multinomial`` (not a write) is registered here beside them.

Each checks its operands and hands the write to ``inplace.write``, which decides whether and
how the write is recorded; ``inplace.py``'s docstring says when a write is allowed and what it
records.
"""
from __future__ import annotations

import numpy as np

from .. import _state
from .. import backend as _be
from .. import creation as _creation
from ..backward import sum_to
from ..tensor import Tensor
from . import elementwise as E
from . import indexing as I
from . import join as J
from . import math as M
from ._registry import Family, Sample, composite, defop, inplace_method, inplace_op, named, op_of, public, row
from .indexing import convert_index, fmt_index, join_index, split_index, to_device_index
from .inplace import COPY_, FILL_, _const, _operand, _plan, _same_device, _self, write

# -- arithmetic: the out-of-place op's own forward and rule, written into the tensor ------------------


def _inplace_fn(op, name, alpha=False):
    if alpha:  # add_ / sub_: t += alpha * other
        def method(t, other, *, alpha=1):
            _self(t, name)
            od = _operand(other, name, t)
            other = other if isinstance(other, Tensor) else od
            return write(t, op, name, (other * alpha if alpha != 1 else other,))
        return method

    def method(t, other):
        _self(t, name)
        od = _operand(other, name, t)
        try:
            return write(t, op, name, (other if isinstance(other, Tensor) else od,))
        except ValueError as e:
            msg = str(e)
            if "broadcast" in msg or "integers to negative" in msg.lower():
                msg = f"{name}: {msg.removeprefix(f'{name}: ')}"  # run_op may have named the op already
                raise ValueError(f"{msg} (tensor dtype {t.dtype}, shape {t.shape})") from None
            raise
    return method


INPLACE = Family("inplace", _inplace_fn, reads=("of", "alpha"), inplace=True,
                 doc="``{op}`` in place (the other operand broadcasts to the tensor); returns the tensor.")

add_ = row("add_", family=INPLACE, of=E.add, alpha=True, method=("add_", "__iadd__"),
           doc="``t += alpha * other`` in place (other broadcasts to t); returns t.")
sub_ = row("sub_", family=INPLACE, of=E.sub, alpha=True, method=("sub_", "__isub__"),
           doc="``t -= alpha * other`` in place (other broadcasts to t); returns t.")
mul_ = row("mul_", family=INPLACE, of=E.mul, method=("mul_", "__imul__"))
div_ = row("div_", family=INPLACE, of=E.div, method=("div_", "__itruediv__"))
pow_ = row("pow_", family=INPLACE, of=E.pow, method=("pow_", "__ipow__"))
remainder_ = row("remainder_", family=INPLACE, of=E.mod, method=("remainder_", "__imod__"))
fmod_ = row("fmod_", family=INPLACE, of=E.fmod, method=("fmod_",))


# the zero gradient of an overwritten tensor is ``xp.zeros_like`` (ops/meta.py's row on Tensors)

FLOOR_DIVIDE_ = defop("floor_divide_", lambda xp, x, y: x // y, lambda ctx, g: (ctx.xp.zeros_like(g), None),
                      kind="inplace", jvp=lambda ctx, tx, ty: None,  # piecewise constant: a zero tangent
                      samples=lambda rng: [Sample(rng.standard_normal(4) * 3, 0.75)])


def floor_divide_(t, other):
    """``t //= other`` in place (NumPy's floor division); returns ``t``. Not differentiable (as
    ``x // y``): a ``t`` in a recorded graph gets a zero gradient through it, ``other`` none."""
    _self(t, "floor_divide_")
    od = _operand(other, "floor_divide_", t)
    return write(t, FLOOR_DIVIDE_, "floor_divide_", (od,))


CLAMP_ = inplace_op(E.CLIP, "clamp_")
CLAMP_MIN_ = inplace_op(E.CLIP, "clamp_min_")
CLAMP_MAX_ = inplace_op(E.CLIP, "clamp_max_")


def _clamp(t, lo, hi, op, name):
    _self(t, name)
    bounds = []
    for b in (lo, hi):
        if isinstance(b, Tensor):
            if b._requires_grad and _state.get().grad:
                raise TypeError(f"{name}: bounds that require grad are not supported in place; "
                                "use mg.clamp(x, lo, hi)")
            b = _operand(b, name, t)
        elif b is not None:
            b = _operand(b, name, t)
        bounds.append(b)
    return write(t, op, name, (), {"lo": bounds[0], "hi": bounds[1]})


def clamp_(t, min=None, max=None):  # noqa: A002 - NumPy/PyTorch names
    """Clamp into ``[min, max]`` in place (either may be None); gradient 1 inside, bounds included."""
    if min is None and max is None:
        _self(t, "clamp_")
        raise ValueError("clamp_: at least one of min and max must be given")
    return _clamp(t, min, max, CLAMP_, "clamp_")


def clamp_min_(t, min):  # noqa: A002 - PyTorch's name
    """``t.clamp_(min=min)`` under its own name (PyTorch's); gradient 1 where ``t >= min``."""
    if min is None:
        raise ValueError("clamp_min_: min must be a number or a Tensor, got None")
    return _clamp(t, min, None, CLAMP_MIN_, "clamp_min_")


def clamp_max_(t, max):  # noqa: A002 - PyTorch's name
    """``t.clamp_(max=max)`` under its own name (PyTorch's); gradient 1 where ``t <= max``."""
    if max is None:
        raise ValueError("clamp_max_: max must be a number or a Tensor, got None")
    return _clamp(t, None, max, CLAMP_MAX_, "clamp_max_")


clip_ = clamp_


# -- unary ops in place: the op's own forward and rules, written into the tensor ----------------------


def _unary_inplace_fn(op, name):
    def method(t):
        _self(t, name)
        return write(t, op, name)
    return method


UNARY_INPLACE = Family("inplace", _unary_inplace_fn, reads=("of",), inplace=True,
                       doc="``t.{name}()``: its out-of-place op's result written into ``t`` (the op's gradient; "
                           "a result dtype ``t`` cannot hold is a TypeError); returns ``t``.")

exp_ = row("exp_", family=UNARY_INPLACE, of=E.exp)
log_ = row("log_", family=UNARY_INPLACE, of=E.log)
sqrt_ = row("sqrt_", family=UNARY_INPLACE, of=E.sqrt)
abs_ = row("abs_", family=UNARY_INPLACE, of=E.abs)
neg_ = row("neg_", family=UNARY_INPLACE, of=E.neg)
sigmoid_ = row("sigmoid_", family=UNARY_INPLACE, of=E.sigmoid)
tanh_ = row("tanh_", family=UNARY_INPLACE, of=E.tanh)
relu_ = row("relu_", family=UNARY_INPLACE, of=E.relu)
sin_ = row("sin_", family=UNARY_INPLACE, of=E.sin)
cos_ = row("cos_", family=UNARY_INPLACE, of=E.cos)
floor_ = row("floor_", family=UNARY_INPLACE, of=M.floor)
ceil_ = row("ceil_", family=UNARY_INPLACE, of=M.ceil)
reciprocal_ = row("reciprocal_", family=UNARY_INPLACE, of=M.reciprocal)
square_ = row("square_", family=UNARY_INPLACE, of=M.square)

ROUND_ = inplace_op(M.ROUND, "round_")


def round_(t, decimals=0):
    """Round half to even to ``decimals`` places in place (``mg.round``); a zero gradient; returns ``t``."""
    _self(t, "round_")
    return write(t, ROUND_, "round_", (), {"decimals": decimals})


# tril / triu are composites (no op of their own to write): their result, computed from t's current
# history, is written with copy_'s op under the method's name; copy_'s rule sends the old t a zero
# gradient, and tril's own graph carries the gradient of the kept triangle back to it.


def tril_(t, diagonal=0):
    """Keep the lower triangle (on and below the ``diagonal``-th diagonal) of the last two axes in
    place, zeros elsewhere; returns ``t``."""
    _self(t, "tril_")
    return write(t, COPY_, "tril_", (J.tril(t, diagonal),), check=False)


def triu_(t, diagonal=0):
    """Keep the upper triangle (on and above the ``diagonal``-th diagonal) of the last two axes in
    place, zeros elsewhere; returns ``t``."""
    _self(t, "triu_")
    return write(t, COPY_, "triu_", (J.triu(t, diagonal),), check=False)


def scatter_add_(t, dim, index, src):
    """PyTorch's ``scatter_add_``: ``src`` added into ``t`` at ``index`` along ``dim`` in place
    (``t[index[i][j]][j] += src[i][j]`` for ``dim=0``; repeated indices sum); returns ``t``. The
    result of ``scatter_add``, written as ``tril_``'s is: ``t``'s gradient the gradient, ``src``'s
    its ``gather``."""
    _self(t, "scatter_add_")
    try:
        out = I.scatter_add(t, dim, index, src)
    except (TypeError, ValueError, IndexError) as e:  # the method's name in its errors
        msg = str(e)
        raise type(e)("scatter_add_:" + msg.removeprefix("scatter_add:") if msg.startswith("scatter_add:") else msg) \
            from None
    return write(t, COPY_, "scatter_add_", (out,), check=False)


# -- sampling in place: draws written over the tensor (no gradient through them) ----------------------


def _draws_into(t, name, kind, a, b):
    _self(t, name)
    if kind != "bernoulli" and t.dtype.kind != "f":
        raise TypeError(f"{name}: draws are floating-point; the tensor has dtype {t.dtype}")
    _plan(t, name, ())  # a leaf that requires grad is refused before anything is drawn
    return write(t, COPY_, name, (_creation.sample_like(t, kind, a, b),), check=False)


def _number(v, name, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {what} must be a number, got {type(v).__name__} {v!r}")
    return float(v)


def uniform_(t, from_=0.0, to=1.0):
    """Overwrite ``t`` with uniform draws from ``[from_, to)`` (``mg.manual_seed``'s generator);
    returns ``t``. No gradient flows through the draws."""
    lo, hi = _number(from_, "uniform_", "from_"), _number(to, "uniform_", "to")
    if lo > hi:
        raise ValueError(f"uniform_: expects from_ <= to, got from_={lo} and to={hi}")
    return _draws_into(t, "uniform_", "uniform", lo, hi)


def normal_(t, mean=0.0, std=1.0):
    """Overwrite ``t`` with normal draws of mean ``mean`` and standard deviation ``std``
    (``mg.manual_seed``'s generator); returns ``t``. No gradient flows through the draws."""
    m, s = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    if not s >= 0:
        raise ValueError(f"normal_: expects std >= 0, got {s}")
    return _draws_into(t, "normal_", "normal", m, s)


def bernoulli_(t, p=0.5):
    """Overwrite ``t`` with 1 (probability ``p``: a number, or a Tensor of probabilities that
    broadcasts to ``t``) or 0, in ``t``'s dtype (``mg.manual_seed``'s generator); returns ``t``."""
    if isinstance(p, Tensor):
        _operand(p, "bernoulli_", t)  # on t's device, broadcasting to t
        p = p.detach()
    else:
        p = _number(p, "bernoulli_", "p")
        if not 0 <= p <= 1:
            raise ValueError(f"bernoulli_: p must be in [0, 1], got {p}")
    return _draws_into(t, "bernoulli_", "bernoulli", p, None)


# -- overwriting --------------------------------------------------------------------------------


def fill_(t, value, *, _op="fill_"):
    """Set every element to ``value`` (a number, or a one-element tensor) in place; returns ``t``."""
    _self(t, _op)
    if isinstance(value, Tensor) and value.size != 1:
        raise ValueError(f"{_op}: the value must be a number or a one-element tensor, got shape {value.shape}")
    vd = _operand(value, _op, t)
    out = write(t, FILL_, _op, (value if isinstance(value, Tensor) else vd,), check=False)
    if t._node is not None and t._node.op == _op and not isinstance(value, Tensor) and _op == "fill_":
        t._node.info = {"value": value}
    return out


def zero_(t):
    """Set every element to 0 in place; returns ``t``."""
    _self(t, "zero_")
    return fill_(t, 0, _op="zero_")


def copy_(t, src):
    """Copy ``src`` (broadcast to ``t``'s shape, cast to its dtype, moved to its device) into ``t``; returns ``t``.

    Differentiable in ``src``; the gradient goes back to ``src``'s device and dtype.
    """
    op = "copy_"
    _self(t, op)
    if isinstance(src, Tensor):
        if src.device != t.device:
            src = src.to(t.device)
        elif src._storage is t._storage:
            src = src.clone()
    else:
        src = _const(src, op, t)
        if isinstance(src, np.ndarray) and _be.is_cupy_array(t.data):
            src = _be.to_device(src, t.device)
    sshape = tuple(getattr(src, "shape", ()))
    try:
        ok = np.broadcast_shapes(sshape, t.shape) == tuple(t.shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"copy_: the source of shape {sshape} does not broadcast to the tensor's shape {t.shape}")
    return write(t, COPY_, op, (src,), check=False)


# -- t[idx] = value ---------------------------------------------------------------------------------


def _setitem_fwd(xp, x, *rest, template, sel_shape, vshape):
    """Write the value (the last argument) at the index into ``x`` itself (the tensor's storage);
    the masks for the rule ride as aux."""
    arrays, v = rest[:-1], rest[-1]
    idx = join_index(template, arrays)
    keep = xp.ones(x.shape, dtype=bool)
    keep[idx] = False
    won = None
    if not arrays:
        x[idx] = v
    else:  # repeated indices: find which write lands where, and write exactly that (deterministic on GPUs too)
        n = 1
        for s in sel_shape:
            n *= s
        ids = xp.arange(n, dtype=np.int64).reshape(sel_shape)
        tag = xp.full(x.shape, -1, dtype=np.int64)
        tag[idx] = ids
        winner = tag[idx]
        won = winner == ids
        vfull = xp.broadcast_to(xp.asarray(v).reshape(vshape), sel_shape)
        x[idx] = vfull.reshape(-1)[winner.reshape(-1)].reshape(sel_shape)
    return x, (keep, won)


def _setitem_rule(ctx, g, template, sel_shape, vshape):
    keep, won = ctx.aux
    xp = ctx.xp
    gt = xp.where(keep, g, 0.0) if ctx.parents[0] is not None else None
    gv = None
    if ctx.parents[-1] is not None:
        gs = xp.getitem(g, *ctx.saved, template=template)
        if won is not None:
            gs = xp.where(won, gs, 0.0)
        gv = _fit_grad(gs, ctx.meta[-1][0])
    return (gt,) + (None,) * len(ctx.saved) + (gv,)


def _setitem_jvp(ctx, tx, *ts, template, sel_shape, vshape):
    # the kept positions of x's tangent, plus the value's tangent scattered where it won (not in place)
    keep, won = ctx.aux
    xp = ctx.xp
    out = None if tx is None else xp.where(keep, tx, 0.0)
    tv = ts[-1]
    if tv is not None:
        tv = xp.broadcast_to(tv.reshape(vshape), sel_shape)
        if won is not None:
            tv = xp.where(won, tv, 0.0)
        tv = xp.index_add(tv, *ctx.args[1:-1], shape=tuple(ctx.out.shape), template=template)
        out = tv if out is None else out + tv
    return out


SETITEM = defop("setitem", _setitem_fwd, _setitem_rule, save=(1, ..., -1), aux=True, kind="inplace", jvp=_setitem_jvp,
                samples=lambda rng: [Sample(rng.standard_normal((3, 4)), rng.standard_normal(4), template=(1,),
                                            sel_shape=(4,), vshape=(4,))], complex=True)


def _fit_grad(gs, shape):
    """Sum a gradient of the written region down to the value's shape (which may carry extra leading 1s)."""
    k = len(shape) - gs.ndim
    if k > 0:
        return sum_to(gs, shape[k:]).reshape(shape)
    return sum_to(gs, shape)


def setitem(t, idx, value):
    """``t[idx] = value`` (basic or advanced indexing; ``value`` broadcasts to ``t[idx]``).

    Differentiable in ``t`` (the written positions get no gradient) and in ``value``.

    >>> buf = mg.zeros(3)
    >>> buf[1] = x          # buf now has a history: gradients reach x
    """
    op = "setitem"
    _self(t, op)
    cidx, basic = convert_index(idx)
    if not basic:
        cidx = to_device_index(cidx, t.data, op)
    if isinstance(value, Tensor):
        if type(value.data) is not type(t.data):
            _same_device(op, t.data, value.data)
        if value._storage is t._storage:
            value = value.clone()
    else:
        value = _const(value, op, t)
        if hasattr(value, "shape") and type(value) is not type(t.data):
            _same_device(op, t.data, value)
    try:
        sel_shape = tuple(t.data[cidx].shape)
    except IndexError as e:
        raise IndexError(f"setitem: {e} (tensor shape {t.shape})") from None
    vshape = tuple(getattr(value, "shape", ()))  # a Tensor's or an array's (a CuPy array's .data is its memory)
    stripped = _strip_ones(vshape, len(sel_shape))
    try:
        if len(stripped) > len(sel_shape) or np.broadcast_shapes(stripped, sel_shape) != sel_shape:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"setitem: a value of shape {vshape} cannot be broadcast to the indexed region {fmt_index(cidx)} "
            f"of shape {sel_shape} (tensor shape {t.shape})"
        ) from None
    if stripped != vshape:  # w[-1] = mg.tensor([5.]): one element into one slot, as NumPy's and PyTorch's setitem
        value = value.reshape(stripped)
    template, args = split_index(idx, cidx)
    out = write(t, SETITEM, op, (*args, value), {"template": template, "sel_shape": sel_shape, "vshape": stripped},
                check=False)
    if t._node is not None and t._node.op == op:
        t._node.info = {"index": fmt_index(cidx)}
    return out


def _strip_ones(shape, ndim):
    """A value's shape without the leading 1s beyond ``ndim`` dims (NumPy's setitem drops them)."""
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


# -- their public faces (bound as Tensor methods by minigrad.ops) ---------------------------------

inplace_method(op_of(E.floordiv), floor_divide_, "floor_divide_", "__ifloordiv__")
inplace_method(CLAMP_, clamp_, "clamp_", "clip_")
inplace_method(CLAMP_MIN_, clamp_min_, "clamp_min_")
inplace_method(CLAMP_MAX_, clamp_max_, "clamp_max_")
inplace_method(ROUND_, round_, "round_")
inplace_method(op_of(J.tril), tril_, "tril_")
inplace_method(op_of(J.triu), triu_, "triu_")
inplace_method(op_of(I.scatter_add), scatter_add_, "scatter_add_")
inplace_method(COPY_, uniform_, "uniform_")  # overwrites, as copy_ (whose op records them)
inplace_method(COPY_, normal_, "normal_")
inplace_method(COPY_, bernoulli_, "bernoulli_")
composite("multinomial", method="multinomial", kind="factory")(named("multinomial")(_creation.multinomial))
public(FILL_, method="fill_", export=False)(fill_)
public(COPY_, method="copy_", export=False)(copy_)
public(SETITEM, dunders=("__setitem__",), export=False)(setitem)
public(FLOOR_DIVIDE_, export=False)(floor_divide_)
composite("zero_", method="zero_", export=False, kind="inplace")(zero_)
