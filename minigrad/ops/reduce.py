"""Reductions. Sum is the reference: the others reuse its axis rules and its
backward (reshape to keepdims, then broadcast: a view, no copy)."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from .._util import NOARG, pick
from ..errors import AxisError
from ..tensor import Tensor, _wrap
from . import _core as C
from ._core import record


def normalize_axis(axis, ndim: int, op: str = "sum") -> tuple[int, ...]:
    """Axis spec -> sorted tuple of non-negative axes (API.md's table).

    None: every axis; int, tuple, list or 1-D integer array: those axes, negative
    counted from the end; () : none. Out of range -> AxisError, duplicates ->
    ValueError, floats/str/bool -> TypeError.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Tensor):
        axis = axis.data
    if hasattr(axis, "dtype") and hasattr(axis, "ndim"):  # numpy / cupy array
        if axis.dtype.kind not in "iu":
            raise TypeError(f"{op}: axis array must hold integers, got dtype {axis.dtype}")
        if axis.ndim > 1:
            raise TypeError(f"{op}: axis array must be 0-d or 1-D, got shape {tuple(axis.shape)}")
        from ..backend import to_numpy

        host = to_numpy(axis)
        axis = int(host) if host.ndim == 0 else [int(a) for a in host]
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{op}: axis must be an int, a tuple of ints or None, got bool {axis!r}")
    if isinstance(axis, numbers.Integral):
        a = int(axis)
        if not -ndim <= a < ndim:
            raise AxisError(_range_msg(op, a, ndim))
        return (a + ndim if a < 0 else a,)
    if not isinstance(axis, (tuple, list)):
        raise TypeError(
            f"{op}: axis must be None, an int, a tuple/list of ints or a 1-D integer array, "
            f"got {type(axis).__name__} {axis!r}"
        )
    out = []
    for a in axis:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{op}: every axis must be an int, got {type(a).__name__} {a!r} in {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise AxisError(_range_msg(op, a, ndim))
        n = a + ndim if a < 0 else a
        if n in out:
            raise ValueError(
                f"{op}: duplicate axis {n} in {tuple(axis)!r} (each axis may appear once after "
                f"normalising negative axes for ndim {ndim})"
            )
        out.append(n)
    return tuple(sorted(out))


def _range_msg(op, a, ndim):
    if ndim == 0:
        return f"{op}: axis {a} is out of bounds for a 0-d tensor (only axis=None or () is allowed)"
    return f"{op}: axis {a} is out of bounds for a tensor of ndim {ndim} (valid range [{-ndim}, {ndim - 1}])"


def _keep_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _result_dtype(dtype, given):
    if given is not None:
        return np.dtype(given)
    k = dtype.kind
    if k in "bi":
        return np.dtype(np.int64)
    if k == "u":
        return np.dtype(np.uint64)
    return None


def _t(x, op):
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: got a sparse tensor; use mg.sparse.{op} or s.{op}()")
    return Tensor(x)


# -- sum ------------------------------------------------------------------------


def _sum_rule(ctx, g, saved):
    shape, keep = ctx.attrs
    if keep is not None and g.shape != keep:
        g = g.reshape(keep)
    dt = ctx.meta[0][1]
    if g.dtype != dt:  # cast the small gradient, then broadcast: the result stays a view
        g = g.astype(dt)
    return (C.broadcast_to(g, shape),)


def sum(x, axis=NOARG, keepdims=NOARG, dtype=None, *, dim=NOARG, keepdim=NOARG):  # noqa: A001
    """Sum of elements over the given axes.

    Args:
        x: a Tensor (or array-like).
        axis: None (every axis), an int, a tuple/list/1-D integer array of ints
            (negative counts from the end), or () for no reduction (an identity copy).
            ``dim`` is an alias.
        keepdims: keep each reduced axis with size 1 (``keepdim`` is an alias).
        dtype: accumulation and result dtype; by default bool and signed ints sum
            to int64, unsigned to uint64, floats keep their dtype.

    Returns:
        a Tensor; its gradient broadcasts back over the reduced axes.

    >>> mg.sum(mg.ones(2, 3), axis=-1)
    tensor([3., 3.])
    """
    axis = pick("axis", axis, "dim", dim, None, "sum")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "sum"))
    x = _t(x, "sum")
    xd = x.data
    shape = xd.shape
    if axis is None:
        axes = tuple(range(xd.ndim))
    elif type(axis) is int and -xd.ndim <= axis < xd.ndim:
        axes = (axis + xd.ndim if axis < 0 else axis,)
    else:
        axes = normalize_axis(axis, xd.ndim, "sum")
    rdt = _result_dtype(xd.dtype, dtype)
    if not axes:  # () : no reduction, an identity copy (NumPy / OpenVINO ReduceSum)
        out = C.timed("sum", lambda: xd.astype(rdt) if rdt is not None else xd.copy())
        keep = None
    else:
        out = C.timed("sum", xd.sum, axes, rdt, None, keepdims)
        keep = None if keepdims else _keep_shape(shape, axes)
    r = record("sum", _sum_rule, out, (x,), attrs=(shape, keep), info={"axis": axes, "keepdims": keepdims})
    if r._rg and r.data.dtype.kind not in "fc":
        r._node, r._rg = None, False  # an integer result carries no gradient
    return r


def mean(x, axis=NOARG, keepdims=NOARG, dtype=None, *, dim=NOARG, keepdim=NOARG):
    """Arithmetic mean over the given axes (sum's axis rules); ints average to float64."""
    axis = pick("axis", axis, "dim", dim, None, "mean")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "mean"))
    x = _t(x, "mean")
    axes = normalize_axis(axis, x.ndim, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    if dtype is None and x.dtype.kind not in "fc":
        dtype = np.float64
    s = sum(x, axes, keepdims, dtype)
    return s / count if count else s * float("nan")


def var(x, axis=NOARG, keepdims=NOARG, ddof=0, *, dim=NOARG, keepdim=NOARG, correction=None):
    """Variance over the given axes; ``ddof`` (or PyTorch's ``correction``) as in NumPy (default 0)."""
    axis = pick("axis", axis, "dim", dim, None, "var")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "var"))
    if correction is not None:
        ddof = correction
    x = _t(x, "var")
    axes = normalize_axis(axis, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    m = mean(x, axes, True)
    d = x - m
    return sum(d * d, axes, keepdims) / builtins.max(count - ddof, 0)


def std(x, axis=NOARG, keepdims=NOARG, ddof=0, *, dim=NOARG, keepdim=NOARG, correction=None):
    """Standard deviation: sqrt(var)."""
    from .elementwise import sqrt

    return sqrt(var(x, axis, keepdims, ddof, dim=dim, keepdim=keepdim, correction=correction))


# -- max / min ---------------------------------------------------------------------


def _extreme(name, x, axis, keepdims):
    x = _t(x, name)
    xd = x.data
    axes = normalize_axis(axis, xd.ndim, name)
    if xd.size == 0 and any(xd.shape[a] == 0 for a in axes):
        raise ValueError(f"{name}: zero-size reduction over axes {axes} of shape {xd.shape} has no identity")
    if not axes:
        return x.clone() if x._rg else _wrap(xd.copy())
    f = xd.max if name == "max" else xd.min
    out = C.timed(name, f, axes, None, keepdims)
    keep = None if keepdims else _keep_shape(xd.shape, axes)
    return record(name, _extreme_rule_for(axes), out, (x,), saved=(x,), save_out=True,
                  attrs=(xd.shape, keep), info={"axis": axes, "keepdims": keepdims})


def _extreme_rule_for(axes):
    def rule(ctx, g, saved):
        x, out = saved
        shape, keep = ctx.attrs
        if keep is not None:
            g = g.reshape(keep)
            out = out.reshape(keep)
        mask = C.data_of(x) == C.data_of(out)
        cnt = mask.sum(axis=axes, keepdims=True)
        return (g * (mask / cnt),)  # ties share the gradient evenly

    return rule


def max(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):  # noqa: A001
    """Maximum over the given axes (values only); the gradient is split evenly among ties."""
    axis = pick("axis", axis, "dim", dim, None, "max")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "max"))
    return _extreme("max", x, axis, keepdims)


def min(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):  # noqa: A001
    """Minimum over the given axes (values only); the gradient is split evenly among ties."""
    axis = pick("axis", axis, "dim", dim, None, "min")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "min"))
    return _extreme("min", x, axis, keepdims)


def _arg(name, x, axis, keepdims):
    x = _t(x, name)
    xd = x.data
    if axis is not None:
        (axis,) = normalize_axis(int(axis) if not isinstance(axis, (bool, float, str)) else axis, xd.ndim, name)
    f = xd.argmax if name == "argmax" else xd.argmin
    if xd.size == 0:
        raise ValueError(f"{name}: empty tensor of shape {xd.shape} has no {name[3:]}")
    out = f(axis=axis, keepdims=keepdims)
    return _wrap(C.as_array_out(out).astype(np.int64, copy=False))


def argmax(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """Index of the maximum (flattened when axis is None); int64, not differentiable."""
    axis = pick("axis", axis, "dim", dim, None, "argmax")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "argmax"))
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """Index of the minimum (flattened when axis is None); int64, not differentiable."""
    axis = pick("axis", axis, "dim", dim, None, "argmin")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "argmin"))
    return _arg("argmin", x, axis, keepdims)


# -- logsumexp, softmax, log_softmax -------------------------------------------------

_SHORT_ROW = 16  # rows up to this long are shifted on a transposed copy (see shift_by_max)


def shift_by_max(xd, a):
    """``xd - xd.max(axis=a, keepdims=True)`` for a non-empty array: the stable shift of
    softmax, log_softmax and cross_entropy. The result is a fresh array, possibly F-ordered.

    NumPy reduces along short contiguous rows one row at a time: the max over the last axis
    of (1797, 10) float32 logits takes 107 us. On the host, for the last axis of a float
    array, the same values (NaN included) come another way. Rows of up to ``_SHORT_ROW`` are
    copied with the axis first, so that the max and the subtraction run across rows (10 us;
    the result is a transposed view of the copy). Longer rows gather each row's argmax
    (68 us instead of 185 for (1797, 128)).
    """
    if xd.__class__ is not np.ndarray or xd.ndim < 2 or a != xd.ndim - 1 or xd.dtype.kind != "f":
        return xd - xd.max(axis=a, keepdims=True)
    c = xd.shape[-1]
    if c <= _SHORT_ROW:
        nd = xd.ndim  # (np.moveaxis would cost 2.6 us, a minibatch's whole shift 3)
        xt = xd.transpose((nd - 1,) + tuple(range(nd - 1))).copy()  # always a copy: written below
        xt -= np.maximum.reduce(xt, axis=0)
        return xt.transpose(tuple(range(1, nd)) + (0,))
    if not xd.flags.c_contiguous:
        return xd - xd.max(axis=a, keepdims=True)
    x2 = xd.reshape(-1, c)
    m = x2[np.arange(x2.shape[0]), x2.argmax(axis=1)]
    return xd - m.reshape(xd.shape[:-1] + (1,))


def _c_ordered(xp, a):
    """Where to write a result computed from ``a`` (a fresh array): ``a`` itself when it is
    C-ordered, else a new C-ordered array, so that what users get views like any result."""
    return a if a.flags.c_contiguous else xp.empty(a.shape, a.dtype)


def _lse_rule(ctx, g, saved):
    x, out = saved
    keep = ctx.attrs
    if keep is not None:
        g = g.reshape(keep)
        out = out.reshape(keep)
    return (g * C.exp(x - out),)


def logsumexp(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """log(sum(exp(x))) over the given axes, computed stably."""
    axis = pick("axis", axis, "dim", dim, None, "logsumexp")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "logsumexp"))
    x = _t(x, "logsumexp")
    xd = x.data
    xp = C.xp_of(xd)
    axes = normalize_axis(axis, xd.ndim, "logsumexp")

    def fwd():
        m = xd.max(axis=axes, keepdims=True) if xd.size else xp.zeros(_keep_shape(xd.shape, axes), xd.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        s = xp.log(xp.exp(xd - m).sum(axis=axes, keepdims=True)) + m
        return s if keepdims else s.reshape(tuple(n for i, n in enumerate(xd.shape) if i not in axes))

    out = C.timed("logsumexp", fwd)
    keep = None if keepdims else _keep_shape(xd.shape, axes)
    return record("logsumexp", _lse_rule, out, (x,), saved=(x,), save_out=True, attrs=keep,
                  info={"axis": axes, "keepdims": keepdims})


def _axis1(axis, dim, ndim, op):
    axis = pick("axis", axis, "dim", dim, -1, op)
    if axis is None:
        raise TypeError(f"{op}: axis must be an int, got None")
    (a,) = normalize_axis(axis, ndim, op)
    return a


def _softmax_rule(ctx, g, saved):
    (y,) = saved
    a = ctx.attrs
    return (y * (g - (g * y).sum(axis=a, keepdims=True)),)


def softmax(x, axis=-1, *, dim=NOARG):
    """exp(x) / sum(exp(x)) along one axis (default the last), computed stably."""
    x = _t(x, "softmax")
    xd = x.data
    a = _axis1(axis if dim is NOARG else NOARG, dim, xd.ndim, "softmax")
    xp = C.xp_of(xd)

    def fwd():
        if not xd.size:  # nothing to normalise (and the max of an empty axis fails)
            return xp.exp(xd)
        e = shift_by_max(xd, a)
        xp.exp(e, out=e)
        return xp.divide(e, e.sum(axis=a, keepdims=True), out=_c_ordered(xp, e))

    out = C.timed("softmax", fwd)
    return record("softmax", _softmax_rule, out, (x,), save_out=True, attrs=a, info={"axis": a})


def _log_softmax_rule(ctx, g, saved):
    (y,) = saved
    a = ctx.attrs
    return (g - C.exp(y) * g.sum(axis=a, keepdims=True),)


def log_softmax(x, axis=-1, *, dim=NOARG):
    """x - logsumexp(x) along one axis (default the last), computed stably."""
    x = _t(x, "log_softmax")
    xd = x.data
    a = _axis1(axis if dim is NOARG else NOARG, dim, xd.ndim, "log_softmax")
    xp = C.xp_of(xd)

    def fwd():
        if not xd.size:  # nothing to normalise (and the max of an empty axis fails)
            return xd.astype(xp.result_type(xd.dtype, 1.0))
        s = shift_by_max(xd, a)
        lse = xp.log(xp.exp(s).sum(axis=a, keepdims=True))
        return xp.subtract(s, lse, out=_c_ordered(xp, s))

    out = C.timed("log_softmax", fwd)
    return record("log_softmax", _log_softmax_rule, out, (x,), save_out=True, attrs=a, info={"axis": a})
