"""Reductions. Sum is the reference: the others reuse its axis rules, and its gradient rule is
the mirror image of broadcasting (reshape to keep the reduced axes, then broadcast: a view)."""
from __future__ import annotations

import builtins
import numbers
from collections import namedtuple

import numpy as np

from .. import _batched
from .._util import NOARG, pick
from ..backend import to_numpy
from ..creation import as_tensor
from ..engine import run_op
from ..errors import NAMED_ERRORS, AxisError, reraise
from ..tensor import Tensor
from ..backward import sum_to as _sum_to
from ._registry import Family, Sample, composite, defop, linear_jvp, named, public, row


def normalize_axis(axis, ndim: int, op: str = "sum") -> tuple[int, ...]:
    """Axis spec -> sorted tuple of non-negative axes (the sum table of the docs).

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
        host = to_numpy(axis)
        axis = int(host) if host.ndim == 0 else [int(a) for a in host]
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{op}: axis must be an int, a tuple of ints or None, got bool {axis!r}")
    if isinstance(axis, numbers.Integral):
        return (_one_axis(int(axis), ndim, op),)
    if not isinstance(axis, (tuple, list)):
        raise TypeError(
            f"{op}: axis must be None, an int, a tuple/list of ints or a 1-D integer array, "
            f"got {type(axis).__name__} {axis!r}"
        )
    out = []
    for a in axis:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{op}: every axis must be an int, got {type(a).__name__} {a!r} in {axis!r}")
        n = _one_axis(int(a), ndim, op)
        if n in out:
            raise ValueError(
                f"{op}: duplicate axis {n} in {tuple(axis)!r} (each axis may appear once after "
                f"normalising negative axes for ndim {ndim})"
            )
        out.append(n)
    return tuple(sorted(out))


def _one_axis(a, ndim, op):
    if not -ndim <= a < ndim:
        if ndim == 0:
            raise AxisError(f"{op}: axis {a} is out of bounds for a 0-d tensor (only axis=None or () is allowed)")
        raise AxisError(f"{op}: axis {a} is out of bounds for a tensor of ndim {ndim} "
                        f"(valid range [{-ndim}, {ndim - 1}])")
    return a + ndim if a < 0 else a


def reduce_args(x, axis, keepdims, dim, keepdim, op):
    """A reduction's arguments in NumPy's or PyTorch's spelling (``axis``/``dim``,
    ``keepdims``/``keepdim``) -> ``x`` as a Tensor, its reduced axes (sorted) and ``keepdims``."""
    axis = pick("axis", axis, "dim", dim, None, op)
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, op))
    x = as_tensor(x, op)
    return x, normalize_axis(axis, x.ndim, op), keepdims


def keep_shape(shape, axes):
    """``shape`` with the reduced ``axes`` kept as size 1."""
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def result_dtype(dtype, given):
    """Sum's result dtype: ``given``, else NumPy's (bool and signed ints -> int64, unsigned -> uint64)."""
    if given is not None:
        return np.dtype(given)
    k = dtype.kind
    if k in "bi":
        return np.dtype(np.int64)
    if k == "u":
        return np.dtype(np.uint64)
    return None



def _kept(g, shape, axes, keepdims):
    """A reduced gradient (or output) with its reduced axes back as size 1."""
    return g if keepdims or not axes else g.reshape(keep_shape(shape, axes))


def _axes_info(axes, keepdims, **_):
    return {"axis": axes, "keepdims": keepdims}


def _reduce_samples(rng):
    x = rng.standard_normal((2, 3, 4))
    return [Sample(x, axes=(1,), keepdims=False), Sample(x, axes=(0, 2), keepdims=True),
            Sample(x, axes=(0, 1, 2), keepdims=False), Sample(rng.standard_normal(5), axes=(0,), keepdims=False),
            # a square output: a rule that transposes an axis gives wrong values, not a shape error
            Sample(rng.standard_normal((3, 3, 4)), axes=(2,), keepdims=False)]


def _reduce_fn(op, name):
    def fn(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
        x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, name)
        return run_op(op, x, axes=axes, keepdims=keepdims)
    return fn


# a reduction over axes: ``forward(xp, x, axes, keepdims)``, its public function takes NumPy's and
# PyTorch's spellings (reduce_args)
REDUCE = Family("reduce", _reduce_fn, named=True, info=_axes_info)


# -- sum ------------------------------------------------------------------------------------


def _sum_fwd(xp, x, axes, keepdims, dtype=None):
    if not axes:  # () : no reduction, an identity copy (NumPy / OpenVINO ReduceSum)
        return x.astype(dtype) if dtype is not None else x.copy()
    if x.__class__ is np.ndarray:  # what ndarray.sum calls, without its Python wrapper (0.4 us)
        return np.add.reduce(x, axes, dtype, None, keepdims)
    return x.sum(axes, dtype, None, keepdims)


def _sum_rule(ctx, g, axes, keepdims, dtype=None):
    shape, dt = ctx.meta[0]
    if axes and not keepdims:
        g = g.reshape(keep_shape(shape, axes))
    if g.dtype != dt:  # cast the small gradient, then broadcast: the result stays a view
        g = g.astype(dt)
    return (g if g.shape == shape else ctx.xp.broadcast_to(g, shape),)


SUM = defop("sum", _sum_fwd, _sum_rule, kind="reduce", jvp=linear_jvp(0), info=_axes_info, samples=lambda rng: _reduce_samples(rng) + [
    Sample(rng.standard_normal((3, 4)), axes=(), keepdims=False)],
    torch=lambda th, x, axes, keepdims, dtype=None: x.sum(dim=axes, keepdim=keepdims) if axes else x.clone(), complex=True)


@public(SUM, method="sum", numpy=(np.sum,))
def sum(x, axis=NOARG, keepdims=NOARG, dtype=None, *, dim=NOARG, keepdim=NOARG):  # noqa: A001
    """Sum of elements over the given axes.

    Args:
        x: a Tensor (or array-like).
        axis: None (every axis), an int, a tuple/list/1-D integer array of ints
            (negative counts from the end), or () for no reduction (an identity copy).
            ``dim`` is an alias.
        keepdims: keep each reduced axis with size 1 (``keepdim`` is an alias).
        dtype: accumulation and result dtype; by default bool and signed ints
            sum to int64, unsigned to uint64, floats keep their dtype.

    Returns:
        a Tensor; its gradient broadcasts back over the reduced axes.

    >>> mg.sum(mg.ones(2, 3), axis=-1)
    tensor([3., 3.])
    """
    try:
        if dim is not NOARG or keepdim is not NOARG:
            axis = pick("axis", axis, "dim", dim, None, "sum")
            keepdims = pick("keepdims", keepdims, "keepdim", keepdim, False, "sum")
        else:
            axis = None if axis is NOARG else axis
            keepdims = False if keepdims is NOARG else keepdims
        keepdims = bool(keepdims)
        x = as_tensor(x, "sum")
        nd = x.data.ndim
        if axis is None:
            axes = tuple(range(nd))
        elif type(axis) is int and -nd <= axis < nd:
            axes = (axis + nd if axis < 0 else axis,)
        else:
            axes = normalize_axis(axis, nd, "sum")
        return run_op(SUM, x, axes=axes, keepdims=keepdims, dtype=result_dtype(x.data.dtype, dtype))
    except NAMED_ERRORS as e:  # inline, not @named: one frame less on a hot path
        reraise(e, "sum")


@composite("sum_to", method="sum_to", kind="reduce",
           samples=lambda rng: [Sample(rng.standard_normal((2, 3, 4)), (3, 1)), Sample(rng.standard_normal((3, 4)), (4,))], complex=True)
@named("sum_to")
def sum_to(x, shape):
    """The one inverse of broadcasting: sum ``x`` down to ``shape``.

    Sums away leading axes and the axes where ``shape`` has size 1; its gradient is
    ``broadcast_to``.
    """
    x = as_tensor(x, "sum_to")
    shape = tuple(shape)
    xs = x.shape
    if xs == shape:
        return x
    lead = len(xs) - len(shape)
    if lead < 0 or any(s != 1 and xs[i + lead] != s for i, s in enumerate(shape)):
        raise ValueError(f"sum_to: shape {tuple(xs)} does not broadcast from {shape}")
    return _sum_to(x, shape)  # the one the rules use (backward.py), on a Tensor: recorded through sum


@composite("mean", method="mean", kind="reduce", numpy=(np.mean,),
           samples=lambda rng: [Sample(rng.standard_normal((2, 3)), 1), Sample(rng.standard_normal((2, 3)))], complex=True)
@named("mean")
def mean(x, axis=NOARG, keepdims=NOARG, dtype=None, *, dim=NOARG, keepdim=NOARG):
    """Arithmetic mean over the given axes (sum's axis rules); ints average to float64."""
    x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    if dtype is None and x.dtype.kind not in "fc":
        dtype = np.float64
    s = sum(x, axes, keepdims, dtype)
    m = s / count if count else s * float("nan")
    if dtype is not None and m.dtype != dtype:  # an integer dtype: NumPy divides, then casts (truncating)
        m = m.astype(dtype)
    return m


def _ddof(ddof, correction, dim, keepdim, op):
    """The correction of a var/std call: PyTorch's keywords (dim=, keepdim=) default to PyTorch's
    correction 1, NumPy's spelling (axis=, positional, none) to NumPy's ddof 0."""
    if ddof is not NOARG and correction is not None:
        raise TypeError(f"{op}: got both ddof={ddof!r} and correction={correction!r}; give one")
    if correction is not None:
        return correction
    if ddof is not NOARG:
        return ddof
    return 1 if dim is not NOARG or keepdim is not NOARG else 0


@composite("var", method="var", kind="reduce", numpy=(np.var,),
           samples=lambda rng: [Sample(rng.standard_normal((3, 4)), 1), Sample(rng.standard_normal((3, 4)), ddof=1)])
@named("var")
def var(x, axis=NOARG, keepdims=NOARG, ddof=NOARG, *, dim=NOARG, keepdim=NOARG, correction=None):
    """Variance over the given axes, divided by ``count - ddof`` (PyTorch: ``correction``).

    The spelling picks the default: NumPy's (``axis=``, a positional axis, no keywords) gives
    NumPy's ``ddof=0``; PyTorch's (``dim=``, ``keepdim=``) gives PyTorch's ``correction=1``.

    >>> mg.tensor([1.0, 3.0]).var(axis=0).item(), mg.tensor([1.0, 3.0]).var(dim=0).item()
    (1.0, 2.0)
    """
    corr = _ddof(ddof, correction, dim, keepdim, "var")
    x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    d = x - mean(x, axes, True)
    return sum(d * d, axes, keepdims) / builtins.max(count - corr, 0)


def _std_rule(ctx, g, axes, keepdims, ddof):
    (x,) = ctx.saved
    shape = ctx.meta[0][0]
    out = _kept(ctx.out, shape, axes, keepdims)
    g = _kept(g, shape, axes, keepdims)
    n = 1
    for a in axes:
        n *= shape[a]
    d = x - x.mean(axis=axes, keepdims=True)
    # where the deviation is 0 the gradient is 0, as PyTorch's (selected, so no 0/0 NaN); the
    # divisor is made safe too, so that the second derivative (div's rule: num / den**2) stays
    # finite there as well instead of multiplying a selected 0 by NaN
    zero = out == 0
    safe = ctx.xp.where(zero, 1.0, out)
    return (ctx.xp.where(zero, 0.0, g * d / (safe * (n - ddof))),)


def _std_jvp(ctx, t, axes, keepdims, ddof):
    x, out = ctx.args[0], ctx.out
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - x.mean(axis=axes, keepdims=True)  # d std = sum(d t) / ((n - ddof) std), 0 where std is 0 (as the rule)
    zero = out == 0
    dt = (d * t).sum(axis=axes, keepdims=keepdims)
    return ctx.xp.where(zero, 0.0, dt / (ctx.xp.where(zero, 1.0, out) * (n - ddof)))


STD = defop("std", lambda xp, x, axes, keepdims, ddof: x.std(axis=axes, ddof=ddof, keepdims=keepdims), _std_rule,
            save=(0,), save_out=True, kind="reduce", info=_axes_info, jvp=_std_jvp,
            samples=lambda rng: [Sample(rng.standard_normal((3, 4)), axes=(1,), keepdims=False, ddof=0),
                                 Sample(rng.standard_normal((3, 4)), axes=(0, 1), keepdims=True, ddof=1),
                                 Sample(rng.standard_normal((3, 3, 4)), axes=(2,), keepdims=False, ddof=0)],
            torch=lambda th, x, axes, keepdims, ddof: x.std(dim=axes, keepdim=keepdims, correction=ddof))


@public(STD, method="std", numpy=(np.std,))
@named("std")
def std(x, axis=NOARG, keepdims=NOARG, ddof=NOARG, *, dim=NOARG, keepdim=NOARG, correction=None):
    """Standard deviation over the given axes (``ddof`` / ``correction`` as in ``var``: NumPy's
    spelling defaults to ``ddof=0``, PyTorch's ``dim=`` / ``keepdim=`` to ``correction=1``).

    The gradient is 0 where the standard deviation is 0 (a constant input), as in PyTorch.
    """
    corr = _ddof(ddof, correction, dim, keepdim, "std")
    x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, "std")
    return run_op(STD, x, axes=axes, keepdims=keepdims, ddof=corr)


# -- max / min ------------------------------------------------------------------------------


def _extreme_fwd(name):
    """max's or min's forward: the values, and as ``aux`` the one-hot of PyTorch's ``dim=`` form
    (``at_index``: True at the index PyTorch returns along the axis, the first extreme) or None."""
    def forward(xp, x, axes, keepdims, at_index=False):
        out = getattr(x, name)(axes, None, keepdims)
        if not at_index:
            return out, None
        (axis,) = axes
        index = getattr(x, "arg" + name)(axis=axis, keepdims=True)
        pos = xp.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1))
        return out, pos == index

    return forward


def _extreme_rule(ctx, g, axes, keepdims, at_index=False):
    shape = ctx.meta[0][0]
    g = _kept(g, shape, axes, keepdims)
    if ctx.aux is not None:  # PyTorch's dim= form: the gradient goes to the returned index alone (a scatter)
        return (ctx.xp.where(ctx.aux, g, 0.0),)
    x = ctx.saved[0]
    mask = x == _kept(ctx.out, shape, axes, keepdims)
    share = g / mask.sum(axis=axes, keepdims=True)
    return (ctx.xp.where(mask, share, 0.0),)  # ties share the gradient evenly


def _extreme_jvp(ctx, t, axes, keepdims, at_index=False):
    if ctx.aux is not None:  # the tangent at the returned index (the rule's adjoint)
        return ctx.xp.where(ctx.aux, t, 0.0).sum(axis=axes, keepdims=keepdims)
    x = ctx.args[0]
    mask = x == _kept(ctx.out, x.shape, axes, keepdims)  # the mean of the tied tangents: the rule's adjoint
    return ctx.xp.where(mask, t, 0.0).sum(axis=axes, keepdims=keepdims) / mask.sum(axis=axes, keepdims=keepdims)


def _extreme_samples(rng):
    """NumPy's form (``axes``), and PyTorch's ``dim=`` form (``at_index``: the gradient to the returned index)."""
    x, y = rng.permutation(24).reshape(2, 3, 4) * 0.1, rng.permutation(36).reshape(3, 3, 4) * 0.1
    return [Sample(x, axes=(1,), keepdims=False),
            Sample(rng.permutation(12).reshape(3, 4) * 0.1, axes=(0, 1), keepdims=True),
            Sample(y, axes=(2,), keepdims=False),  # square output
            Sample(x, axes=(1,), keepdims=False, at_index=True),
            Sample(y, axes=(2,), keepdims=True, at_index=True)]


def _extreme_torch(amax, name):
    def oracle(th, x, axes, keepdims, at_index=False):
        return getattr(th, name)(x, axes[0], keepdims).values if at_index else getattr(th, amax)(x, axes, keepdims)

    return oracle


def _arg_fn(op, name):
    def fn(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
        axis = pick("axis", axis, "dim", dim, None, name)
        keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, name))
        x = as_tensor(x, name)
        if axis is not None:
            if isinstance(axis, (tuple, list)):
                raise TypeError(f"{name}: axis must be an int or None, got {type(axis).__name__} {axis!r}")
            axes = normalize_axis(axis, x.ndim, name)  # an int, or a one-element integer array or tensor
            if len(axes) != 1:
                raise TypeError(f"{name}: axis must be a single int or None, got {len(axes)} axes {axes}")
            (axis,) = axes
        if x.data.size == 0:
            raise ValueError(f"{name}: empty tensor of shape {x.shape} has no {name[3:]}")
        return run_op(op, x, axis=axis, keepdims=keepdims)

    fn.__doc__ = f"Index of the {name[3:]}imum (flattened when axis is None); int64, not differentiable."
    return fn


def _extreme_fn(op, name, indices):
    pair = namedtuple(name, ["values", "indices"])  # PyTorch's torch.return_types.max / min

    def fn(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
        if dim is not NOARG and dim is not None and not isinstance(dim, numbers.Integral):
            raise TypeError(f"{name}: dim= takes one int and returns PyTorch's (values, indices), got dim={dim!r}; "
                            f"for several axes write {name}(axis={dim!r}) (values only)")
        x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, name)
        xd = x.data
        if xd.size == 0 and any(xd.shape[a] == 0 for a in axes):
            raise ValueError(f"{name}: zero-size reduction over axes {axes} of shape {xd.shape} has no identity")
        if dim is NOARG or dim is None:
            return x.clone() if not axes else run_op(op, x, axes=axes, keepdims=keepdims)
        index = indices(x, axis=axes[0], keepdims=keepdims)  # PyTorch's spelling, PyTorch's result and gradient
        return pair(run_op(op, x, axes=axes, keepdims=keepdims, at_index=True), index)

    fn.__doc__ = (f"{name.capitalize()}imum over the given axes; the gradient is split evenly among ties "
                  f"(``dim=``: it goes to the returned index, as PyTorch's).\n\n"
                  f"NumPy's spelling (``axis=``, a positional axis) returns the values; PyTorch's ``dim=`` (one "
                  f"int) returns PyTorch's named pair ``(values, indices)``, whose gradient PyTorch sends to "
                  f"``indices`` alone (a scatter), and so does minigrad's.\n\n"
                  f">>> values, indices = mg.tensor([[1.0, 5.0], [7.0, 2.0]]).{name}(dim=1)")
    return fn


# argmax / argmin: one axis (or none: the flat index); max / min: values, and PyTorch's (values,
# indices) for ``dim=`` (``indices``: the row's argmax or argmin)
ARG = Family("reduce", _arg_fn, named=True)
EXTREME = Family("reduce", _extreme_fn, reads=("indices",), named=True, save=(0,), save_out=True, aux=True,
                 info=_axes_info, jvp=_extreme_jvp)


def _int64(xp, out):
    return xp.asarray(out).astype(np.int64, copy=False)


argmax = row("argmax", lambda xp, x, axis, keepdims: _int64(xp, x.argmax(axis=axis, keepdims=keepdims)),
             family=ARG, numpy=(np.argmax,))
argmin = row("argmin", lambda xp, x, axis, keepdims: _int64(xp, x.argmin(axis=axis, keepdims=keepdims)),
             family=ARG, numpy=(np.argmin,))
max = row("max", _extreme_fwd("max"), _extreme_rule, family=EXTREME, indices=argmax,  # noqa: A001
          samples=_extreme_samples, torch=_extreme_torch("amax", "max"), numpy=(np.max,))
min = row("min", _extreme_fwd("min"), _extreme_rule, family=EXTREME, indices=argmin,  # noqa: A001
          samples=_extreme_samples, torch=_extreme_torch("amin", "min"), numpy=(np.min,))

ANY = defop("any", lambda xp, x, axis, keepdims: xp.asarray(x.any(axis=axis, keepdims=keepdims)), kind="reduce", complex=True)
ALL = defop("all", lambda xp, x, axis, keepdims: xp.asarray(x.all(axis=axis, keepdims=keepdims)), kind="reduce", complex=True)


@public(ANY, method="any", export=False)
@named("any")
def any_(x, axis=None, keepdims=False):
    """Whether any element is true (over ``axis``)."""
    return run_op(ANY, x, axis=axis, keepdims=keepdims)


@public(ALL, method="all", export=False)
@named("all")
def all_(x, axis=None, keepdims=False):
    """Whether every element is true (over ``axis``)."""
    return run_op(ALL, x, axis=axis, keepdims=keepdims)


# -- logsumexp, softmax, log_softmax ----------------------------------------------------------

_SHORT_ROW = 16  # rows up to this long are shifted on a transposed copy (see shift_by_max)


def shift_by_max(xd, axes):
    """``xd - xd.max(axis=axes, keepdims=True)`` for a non-empty array: the stable shift of
    softmax and log_softmax. The result is a fresh array, possibly F-ordered.

    NumPy reduces along short contiguous rows one row at a time: the max over the last axis
    of (1797, 10) float32 logits takes 107 us. On the host, for the last axis of a float
    array, the same values come another way: rows of up to ``_SHORT_ROW`` are copied with
    the axis first, so that the max and the subtraction run across rows (10 us; the result
    is a transposed view of the copy).
    """
    nd = xd.ndim
    if xd.__class__ is not np.ndarray or nd < 2 or axes != (nd - 1,) or xd.dtype.kind != "f" \
            or xd.shape[-1] > _SHORT_ROW:
        return xd - xd.max(axis=axes, keepdims=True)
    xt = xd.transpose((nd - 1,) + tuple(range(nd - 1))).copy()  # always a copy: written below
    xt -= np.maximum.reduce(xt, axis=0)
    return xt.transpose(tuple(range(1, nd)) + (0,))


def _c_ordered(xp, a):
    """Where to write a result computed from the fresh array ``a``: ``a`` itself when C-ordered."""
    return a if a.flags.c_contiguous else xp.empty(a.shape, a.dtype)


def _lse_fwd(xp, x, axes, keepdims):
    m = x.max(axis=axes, keepdims=True) if x.size else xp.zeros(keep_shape(x.shape, axes), x.dtype)
    m = xp.where(xp.isfinite(m), m, 0)
    s = xp.log(xp.exp(x - m).sum(axis=axes, keepdims=True)) + m
    return s if keepdims else s.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes))


def _lse_rule(ctx, g, axes, keepdims):
    (x,) = ctx.saved
    shape = ctx.meta[0][0]
    return (_kept(g, shape, axes, keepdims) * ctx.xp.exp(x - _kept(ctx.out, shape, axes, keepdims)),)


def _lse_jvp(ctx, t, axes, keepdims):
    x = ctx.args[0]
    return (ctx.xp.exp(x - _kept(ctx.out, x.shape, axes, keepdims)) * t).sum(axis=axes, keepdims=keepdims)


logsumexp = row("logsumexp", _lse_fwd, _lse_rule, family=REDUCE, save=(0,), save_out=True, jvp=_lse_jvp,
                samples=_reduce_samples, torch=lambda th, x, axes, keepdims: th.logsumexp(x, axes, keepdims),
                doc="log(sum(exp(x))) over the given axes, computed stably.")


def _axes1(axis, dim, ndim, op):
    axis = pick("axis", axis, "dim", dim, -1, op)
    if axis is None:
        raise TypeError(f"{op}: axis must be an int or a tuple of ints, got None")
    return normalize_axis(axis, ndim, op)


def softmax_forward(xp, x, axes):
    if not x.size:  # nothing to normalise (and the max of an empty axis fails)
        return xp.exp(x)
    e = shift_by_max(x, axes)
    xp.exp(e, out=e)
    return xp.divide(e, e.sum(axis=axes, keepdims=True), out=_c_ordered(xp, e))


def _softmax_rule(ctx, g, axes):
    y = ctx.out
    return (y * (g - (g * y).sum(axis=axes, keepdims=True)),)


def _softmax_jvp(ctx, t, axes):
    y = ctx.out
    return y * (t - (y * t).sum(axis=axes, keepdims=True))


def _axis_samples(rng):
    return [Sample(rng.standard_normal((3, 4)), axes=(1,)), Sample(rng.standard_normal((2, 3, 4)), axes=(0, 2)),
            Sample(rng.standard_normal((3, 3)), axes=(0,))]  # square: a transposed rule shows


SOFTMAX = defop("softmax", softmax_forward, _softmax_rule, save_out=True, kind="reduce", samples=_axis_samples,
                jvp=_softmax_jvp, batch=_batched.fresh_buffers,  # _c_ordered's buffer
                info=lambda axes: {"axis": axes[0] if len(axes) == 1 else axes},
                torch=lambda th, x, axes: (x - th.logsumexp(x, axes, True)).exp())


@public(SOFTMAX, method="softmax")
@named("softmax")
def softmax(x, axis=-1, *, dim=NOARG):
    """exp(x) / sum(exp(x)) along ``axis`` (default the last; a tuple normalises over several), stably."""
    x = as_tensor(x, "softmax")
    return run_op(SOFTMAX, x, axes=_axes1(axis if dim is NOARG else NOARG, dim, x.ndim, "softmax"))


def _log_softmax_fwd(xp, x, axes):
    if not x.size:
        return x.astype(xp.result_type(x.dtype, 1.0))
    s = shift_by_max(x, axes)
    lse = xp.log(xp.exp(s).sum(axis=axes, keepdims=True))
    return xp.subtract(s, lse, out=_c_ordered(xp, s))


def _log_softmax_rule(ctx, g, axes):
    return (g - ctx.xp.exp(ctx.out) * g.sum(axis=axes, keepdims=True),)


def _log_softmax_jvp(ctx, t, axes):
    return t - (ctx.xp.exp(ctx.out) * t).sum(axis=axes, keepdims=True)


LOG_SOFTMAX = defop("log_softmax", _log_softmax_fwd, _log_softmax_rule, save_out=True, kind="reduce",
                    jvp=_log_softmax_jvp, batch=_batched.fresh_buffers,  # _c_ordered's buffer
                    info=lambda axes: {"axis": axes[0] if len(axes) == 1 else axes},
                    samples=_axis_samples, torch=lambda th, x, axes: x - th.logsumexp(x, axes, True))


@public(LOG_SOFTMAX, method="log_softmax")
@named("log_softmax")
def log_softmax(x, axis=-1, *, dim=NOARG):
    """x - logsumexp(x) along ``axis`` (default the last; a tuple normalises over several), stably."""
    x = as_tensor(x, "log_softmax")
    return run_op(LOG_SOFTMAX, x, axes=_axes1(axis if dim is NOARG else NOARG, dim, x.ndim, "log_softmax"))



# -- std_mean / var_mean (PyTorch's; issue 42) ------------------------------------------------------


def _stat_mean(stat, x, dim, correction, keepdim, name):
    if isinstance(correction, (bool, np.bool_)):
        raise TypeError(f"{name}: correction must be a number, got bool {correction!r} (unbiased=False is correction=0)")
    x = as_tensor(x, name)
    axis = None if dim is None else dim
    return stat(x, axis, keepdim, correction=correction), mean(x, axis, keepdim)


def _stat_mean_samples(rng):
    x = rng.standard_normal((3, 4))
    return [Sample(x), Sample(x, 1), Sample(x, (0, 1), correction=0, keepdim=True), Sample(x, dim=0, keepdim=True)]


@composite("std_mean", kind="reduce", samples=_stat_mean_samples,
           torch=lambda th, x, dim=None, correction=1, keepdim=False: th.std_mean(x, dim, correction=correction,
                                                                                 keepdim=keepdim))
@named("std_mean")
def std_mean(input, dim=None, *, correction=1, keepdim=False):  # noqa: A002 - PyTorch's names
    """PyTorch's ``std_mean``: ``(std, mean)`` over ``dim`` (all dims when None), the standard
    deviation divided by ``count - correction`` (PyTorch's default 1)."""
    return _stat_mean(std, input, dim, correction, keepdim, "std_mean")


@composite("var_mean", kind="reduce", samples=_stat_mean_samples,
           torch=lambda th, x, dim=None, correction=1, keepdim=False: th.var_mean(x, dim, correction=correction,
                                                                                 keepdim=keepdim))
@named("var_mean")
def var_mean(input, dim=None, *, correction=1, keepdim=False):  # noqa: A002
    """PyTorch's ``var_mean``: ``(var, mean)`` over ``dim`` (all dims when None), the variance
    divided by ``count - correction`` (PyTorch's default 1)."""
    return _stat_mean(var, input, dim, correction, keepdim, "var_mean")
