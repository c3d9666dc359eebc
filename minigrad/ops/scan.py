"""NumPy's other reductions and its scans: prod (exact at zeros, as PyTorch's), cumsum, cumprod (exact at zeros too),
diff, average, amax/amin, ptp, nansum, nanmean. Axis rules and errors are sum's (``reduce.py``)."""
from __future__ import annotations

import numpy as np

from collections import namedtuple

from .. import _batched
from .._util import NOARG, pick
from .._xp import array_module, is_cupy_array
from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, composite, defop, linear_jvp, named, public
from .reduce import reduce_args, _axes_info, _kept, max as _max, min as _min, normalize_axis, result_dtype, sum as _sum
from .elementwise import where as _where

_MinMax = namedtuple("aminmax", ["min", "max"])  # PyTorch's torch.return_types.aminmax


def _torch_prod(th, x, axes, keepdims, dtype=None):
    for a in sorted(axes, reverse=True):
        x = x.prod(a, keepdim=True)
    return x if keepdims or not axes else x.reshape([s for i, s in enumerate(x.shape) if i not in axes])


# -- prod --------------------------------------------------------------------------------------


def _prod_fwd(xp, x, axes, keepdims, dtype=None):
    if not axes:
        return x.astype(dtype) if dtype is not None else x.copy()
    return x.prod(axis=axes, dtype=dtype, keepdims=keepdims)


def _prod_rule(ctx, g, axes, keepdims, dtype=None):
    (x,) = ctx.saved
    xp = ctx.xp
    shape = ctx.meta[0][0]
    g, out = _kept(g, shape, axes, keepdims), _kept(ctx.out, shape, axes, keepdims)
    # d out / d x_i = the product of the others: out / x_i where x_i != 0; at the one zero of a
    # slice, the product of the non-zeros; 0 where a slice has two zeros or more (PyTorch's values)
    zero = x == 0
    safe = xp.where(zero, 1.0, x)
    others = safe.prod(axis=axes, keepdims=True)
    single = zero.sum(axis=axes, keepdims=True) == 1
    return (g * xp.where(zero, xp.where(single, others, 0.0), out / safe),)


def _prod_jvp(ctx, t, axes, keepdims, dtype=None):
    x, xp = ctx.args[0], ctx.xp
    out = _kept(ctx.out, x.shape, axes, keepdims)
    zero = x == 0  # the rule's partial derivatives (exact at zeros), summed against the tangent
    safe = xp.where(zero, 1.0, x)
    single = zero.sum(axis=axes, keepdims=True) == 1
    partial = xp.where(zero, xp.where(single, safe.prod(axis=axes, keepdims=True), 0.0), out / safe)
    return (partial * t).sum(axis=axes, keepdims=keepdims)


def _prod_samples(rng):
    x = rng.uniform(0.5, 1.5, (2, 3, 4)) * rng.choice([-1, 1], (2, 3, 4))
    z = x.copy()
    z[0, 1, 2] = 0.0  # one zero in a slice
    return [Sample(x, axes=(1,), keepdims=False), Sample(x, axes=(0, 2), keepdims=True),
            Sample(x[0], axes=(0, 1), keepdims=False), Sample(z, axes=(2,), keepdims=False),
            Sample(z, axes=(0, 1, 2), keepdims=False),
            Sample(rng.standard_normal((0, 3)), axes=(0,), keepdims=False),
            Sample(rng.uniform(0.5, 1.5, (3, 3, 2)), axes=(2,), keepdims=False)]  # square output


PROD = defop("prod", _prod_fwd, _prod_rule, save=(0,), save_out=True, kind="reduce", info=_axes_info,
             jvp=_prod_jvp, samples=_prod_samples, torch=_torch_prod, complex='holomorphic')


@public(PROD, method="prod", numpy=(np.prod,))
@named("prod")
def prod(x, axis=None, dtype=None, keepdims=False):
    """Product over the given axes (sum's axis rules; ints multiply in int64). The gradient is the
    product of the other elements, exact at zeros (one zero: the product of the rest; two: 0,
    whose own derivative is taken as 0 there, as PyTorch's).

    >>> mg.prod(mg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    tensor([ 2., 12.])
    """
    x = as_tensor(x, "prod")
    axes = normalize_axis(axis, x.ndim, "prod")
    return run_op(PROD, x, axes=axes, keepdims=bool(keepdims), dtype=result_dtype(x.dtype, dtype))


# -- scans ---------------------------------------------------------------------------------------


def _rev(ndim, axis):
    return (slice(None),) * axis + (slice(None, None, -1),)


def _cumsum_rule(ctx, g, axis, dtype=None):
    r = _rev(g.ndim, axis)  # the adjoint of a running sum is the running sum from the end
    return (ctx.xp.cumsum(g[r], axis=axis)[r],)


def _cumprod_rule(ctx, g, axis, dtype=None):
    (x,) = ctx.saved  # d out_k / d x_i = out_k / x_i for k >= i, where no x is 0
    xp = ctx.xp
    if bool((_batched.innermost(x) == 0).any()):  # under vmap: the exact path when any element has a zero
        lower, before = _cumprod_factors(xp, x, axis)  # exact at zeros: no division
        gm = xp.moveaxis(g, axis, -1)[..., None]
        return (xp.moveaxis(before * (xp.swapaxes(lower, -1, -2) @ gm)[..., 0], -1, axis),)
    r = _rev(g.ndim, axis)
    return (xp.cumsum((g * ctx.out)[r], axis=axis)[r] / x,)


def _cumprod_jvp(ctx, t, axis, dtype=None):
    x, xp = ctx.args[0], ctx.xp
    if bool((_batched.innermost(x) == 0).any()):  # under vmap: the exact path when any element has a zero
        lower, before = _cumprod_factors(xp, x, axis)
        tm = (before * xp.moveaxis(t, axis, -1))[..., None]
        return xp.moveaxis((lower @ tm)[..., 0], -1, axis)
    return ctx.out * xp.cumsum(t / x, axis=axis)  # d out_k = out_k sum_{i <= k} t_i / x_i


def _cumprod_factors(xp, x, axis):
    """cumprod's derivative without dividing by ``x`` (for inputs with zeros): d out_k / d x_i =
    before_i * lower[k, i], with ``before_i`` the product of the x_j before i and ``lower[k, i]``
    the product of those after i up to k (0 for k < i); the scan axis moved last, O(n²) per row."""
    xm = xp.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    k = array_module(x.data if isinstance(x, Tensor) else x).arange(n)  # constant masks, on the backend
    after = xp.where(k[:, None] > k[None, :], xm[..., :, None], 1.0)  # [k, i]: x_k where k > i
    lower = xp.where(k[:, None] >= k[None, :], xp.cumprod(after, axis=-2), 0.0)
    before = xp.cumprod(xp.concatenate([xp.ones_like(xm[..., :1]), xm[..., :-1]], axis=-1), axis=-1)
    return lower, before


def _scan_samples(rng):
    x = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
    return [Sample(x, axis=1), Sample(x, axis=0), Sample(rng.uniform(0.5, 1.5, (2, 3, 2)), axis=-1 + 3),
            Sample(rng.uniform(0.5, 1.5, 5), axis=0),
            Sample(rng.uniform(0.5, 1.5, (3, 3)), axis=0),  # square: a transposed rule shows
            Sample(np.array([[0.7, 0.0, 1.3, -0.8], [0.0, 0.0, 1.1, 0.9], [1.2, -0.6, 0.0, 1.4]]), axis=1)]  # zeros


CUMSUM = defop("cumsum", lambda xp, x, axis, dtype=None: xp.cumsum(x, axis=axis, dtype=dtype), _cumsum_rule,
               kind="reduce", jvp=linear_jvp(0), info=lambda axis, dtype=None: {"axis": axis}, samples=_scan_samples,
               torch=lambda th, x, axis, dtype=None: th.cumsum(x, axis), complex=True)
CUMPROD = defop("cumprod", lambda xp, x, axis, dtype=None: xp.cumprod(x, axis=axis, dtype=dtype), _cumprod_rule,
                save=(0,), save_out=True, kind="reduce", info=lambda axis, dtype=None: {"axis": axis},
                jvp=_cumprod_jvp, samples=_scan_samples, torch=lambda th, x, axis, dtype=None: th.cumprod(x, axis), complex='holomorphic')


def _scan(op, x, axis, dtype):
    x = as_tensor(x, op.name)
    if axis is None:
        x, axis = x.reshape(-1), 0
    (axis,) = normalize_axis(axis, x.ndim, op.name) if x.ndim else (0,)
    if dtype is None and x.dtype.kind in "biu":
        dtype = result_dtype(x.dtype, None)
    return run_op(op, x, axis=axis, dtype=None if dtype is None else np.dtype(dtype))


@public(CUMSUM, method="cumsum", numpy=(np.cumsum,))
@named("cumsum")
def cumsum(x, axis=None, dtype=None):
    """Running sum along ``axis`` (NumPy's: the flattened tensor when None); ints sum in int64."""
    return _scan(CUMSUM, x, axis, dtype)


@public(CUMPROD, method="cumprod", numpy=(np.cumprod,))
@named("cumprod")
def cumprod(x, axis=None, dtype=None):
    """Running product along ``axis`` (flattened when None). Its gradient divides by the input:
    it is not defined at zeros here (PyTorch's is)."""
    return _scan(CUMPROD, x, axis, dtype)


# -- composites ------------------------------------------------------------------------------------


def _diff_samples(rng):
    x = rng.standard_normal((3, 5))
    return [Sample(x), Sample(x, 2, 0), Sample(x, 1, -1, prepend=0.5), Sample(x[0], 3, append=rng.standard_normal(2)),
            Sample(x, 1, dim=0)]


def _diff_torch(th, x, n=1, axis=-1, prepend=None, append=None, dim=None):
    axis = axis if dim is None else dim
    pre = None if prepend is None else th.full_like(x.narrow(axis, 0, 1), prepend)
    return th.diff(x, n, axis, pre, None if append is None else th.as_tensor(append))


@composite("diff", kind="reduce", numpy=(np.diff,), samples=_diff_samples, method="diff", torch=_diff_torch, complex=True)
@named("diff")
def diff(x, n=1, axis=NOARG, prepend=NOARG, append=NOARG, *, dim=NOARG):
    """The n-th discrete difference along ``axis`` (PyTorch's ``dim=``; default the last; NumPy's
    ``prepend``/``append`` included)."""
    from .shape import broadcast_to, concatenate

    axis = pick("axis", axis, "dim", dim, -1, "diff")
    x = as_tensor(x, "diff")
    (axis,) = normalize_axis(axis, x.ndim, "diff")
    parts = []
    for v, where_ in ((prepend, 0), (append, 1)):
        if v is NOARG or v is None:
            continue
        v = as_tensor(v if isinstance(v, Tensor) else np.asarray(v), "diff")  # NumPy's dtype for a number
        if v.ndim == 0:
            shape = list(x.shape)
            shape[axis] = 1
            v = broadcast_to(v, tuple(shape))
        parts.append((where_, v))
    if parts:
        x = concatenate([v for w, v in parts if w == 0] + [x] + [v for w, v in parts if w == 1], axis=axis)
    pre = (slice(None),) * axis
    for _ in range(n):
        x = x[pre + (slice(1, None),)] - x[pre + (slice(None, -1),)]
    return x


@composite("average", kind="reduce", numpy=(np.average,),
           samples=lambda rng: [Sample(rng.standard_normal((3, 4))), Sample(rng.standard_normal((3, 4)), 1,
                                                                           rng.uniform(0.5, 1.0, 4)),
                                Sample(rng.standard_normal((3, 4)), 0, rng.uniform(0.5, 1.0, (3, 4)), keepdims=True)])
@named("average")
def average(x, axis=None, weights=None, returned=False, *, keepdims=False):
    """The (weighted) average over ``axis``; ``returned=True`` also gives the sum of the weights.
    Differentiable in ``x`` and ``weights``; NumPy's dtype (a list of weights is NumPy's array:
    float64 for floats, as ``np.average`` reads it).

    >>> np.average(mg.tensor([1.0, 3.0], dtype=mg.float32), weights=[1.0, 3.0]).dtype
    dtype('float64')
    """
    from .shape import broadcast_to

    x = as_tensor(x, "average")
    if weights is None:
        from .reduce import mean

        avg = mean(x, axis, keepdims)
        if returned:
            from .meta import full_like

            return avg, full_like(avg, x.size / max(avg.size, 1))
        return avg
    w = _weights(weights, x)
    kind = (np.float64,) if x.data.dtype.kind in "biu" else ()  # NumPy averages integers in float64 at least
    dt = np.result_type(x.data.dtype, w.data.dtype, *kind)
    x, w = (t if t.data.dtype == dt else t.astype(dt) for t in (x, w))
    if w.shape != x.shape:
        if axis is None or w.ndim != 1 or isinstance(axis, (tuple, list)):
            raise TypeError(f"average: weights of shape {w.shape} differ from a of shape {x.shape}; give axis= "
                            "(one int) for 1-D weights")
        (ax,) = normalize_axis(axis, x.ndim, "average")
        w = w.reshape(tuple(-1 if i == ax else 1 for i in range(x.ndim)))
    num = _sum(x * w, axis, keepdims)
    den = _sum(broadcast_to(w, x.shape), axis, keepdims)
    if returned:
        return num / den, den
    return num / den


def _weights(weights, x):
    """``average``'s weights as a Tensor: a Tensor or an array as it is, anything else as NumPy's array
    of it (``np.asarray``: a list of floats is float64), on ``x``'s device."""
    if isinstance(weights, Tensor):
        return weights
    if isinstance(weights, np.ndarray) or is_cupy_array(weights):
        return as_tensor(weights, "average")
    return Tensor(np.asarray(weights), device=x.device)


def _am_samples(rng):
    return [Sample(rng.permutation(12).reshape(3, 4) * 0.1, 1),
            Sample(rng.permutation(6).reshape(2, 3) * 0.3, axis=-1, keepdims=True)]


def _am_torch(name):
    def oracle(th, x, axis=None, keepdims=False, dim=None, keepdim=None):
        dim = axis if dim is None else dim
        return getattr(th, name)(x, () if dim is None else dim, keepdims if keepdim is None else keepdim)

    return oracle


def _am_samples_torch(rng):
    return _am_samples(rng) + [Sample(rng.permutation(24).reshape(2, 3, 4) * 0.1, dim=(0, 2), keepdim=True),
                               Sample(rng.permutation(12).reshape(3, 4) * 0.1, dim=0)]


def _am_axes(x, axis, keepdims, dim, keepdim, op):
    """amax's / amin's arguments: NumPy's ``axis``/``keepdims`` or PyTorch's ``dim``/``keepdim`` (an int or a
    tuple; PyTorch's ``dim=()`` is every axis, as ``torch.amax``'s default)."""
    if dim is not NOARG and dim is not None and isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    x, axes, keepdims = reduce_args(x, axis, keepdims, dim, keepdim, op)
    return x, axes, keepdims


@composite("amax", kind="reduce", numpy=(np.amax,), samples=_am_samples_torch, method="amax", torch=_am_torch("amax"))
@named("amax")
def amax(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """``max`` over ``axis`` (NumPy's ``amax``) or ``dim`` (PyTorch's, an int or a tuple): the values only,
    the gradient split evenly among ties (as ``torch.amax``'s)."""
    x, axes, keepdims = _am_axes(x, axis, keepdims, dim, keepdim, "amax")
    return _max(x, axis=axes, keepdims=keepdims)


@composite("amin", kind="reduce", numpy=(np.amin,), samples=_am_samples_torch, method="amin", torch=_am_torch("amin"))
@named("amin")
def amin(x, axis=NOARG, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """``min`` over ``axis`` (NumPy's ``amin``) or ``dim`` (PyTorch's, an int or a tuple): the values only,
    the gradient split evenly among ties (as ``torch.amin``'s)."""
    x, axes, keepdims = _am_axes(x, axis, keepdims, dim, keepdim, "amin")
    return _min(x, axis=axes, keepdims=keepdims)


def _aminmax_torch(th, x, dim=None, keepdim=False):
    return tuple(th.aminmax(x, dim=dim, keepdim=keepdim))


@composite("aminmax", kind="reduce", method="aminmax", torch=_aminmax_torch, samples=lambda rng: [
    Sample(rng.permutation(12).reshape(3, 4) * 0.1), Sample(rng.permutation(12).reshape(3, 4) * 0.1, dim=1),
    Sample(rng.permutation(24).reshape(2, 3, 4) * 0.1, dim=-1, keepdim=True)])
@named("aminmax")
def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002 - PyTorch's name
    """PyTorch's ``aminmax``: the named pair ``(min, max)`` over ``dim`` (one int; None: every element),
    each with ``amin``'s / ``amax``'s gradient (split evenly among ties)."""
    if dim is not None and (isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer))):
        raise TypeError(f"aminmax: dim must be one int or None, got {type(dim).__name__} {dim!r}")
    x = as_tensor(input, "aminmax")
    axis = NOARG if dim is None else dim
    return _MinMax(amin(x, axis, keepdim), amax(x, axis, keepdim))


@composite("ptp", kind="reduce", numpy=(np.ptp,), samples=lambda rng: [
    Sample(rng.permutation(12).reshape(3, 4) * 0.1), Sample(rng.permutation(12).reshape(3, 4) * 0.1, 0, keepdims=True)])
@named("ptp")
def ptp(x, axis=None, keepdims=False):
    """Peak to peak: ``max - min`` over ``axis``."""
    return _max(x, axis=axis, keepdims=keepdims) - _min(x, axis=axis, keepdims=keepdims)


def _nan_samples(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1] = x[2, 3] = np.nan
    return [Sample(x), Sample(x, 1), Sample(x, 0, keepdims=True)]


def _nan_torch(name):
    def oracle(th, x, axis=None, keepdims=False, dim=None, keepdim=False):
        dim = axis if dim is None else dim
        return getattr(th, name)(x) if dim is None else getattr(th, name)(x, dim, keepdims or keepdim)

    return oracle


def _nan_samples_torch(rng):
    x = _nan_samples(rng)[0].args[0]
    return _nan_samples(rng) + [Sample(x, dim=1), Sample(x, dim=(0, 1), keepdim=True)]


@composite("nansum", kind="reduce", numpy=(np.nansum,), samples=_nan_samples_torch, method="nansum",
           torch=_nan_torch("nansum"))
@named("nansum")
def nansum(x, axis=NOARG, dtype=None, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """Sum treating NaN as 0; a NaN's gradient is 0. NumPy's ``axis``/``keepdims`` or PyTorch's ``dim``/``keepdim``."""
    from .math import isnan

    axis = pick("axis", axis, "dim", dim, None, "nansum")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "nansum"))

    x = as_tensor(x, "nansum")
    return _sum(_where(isnan(x), 0.0, x) if x.dtype.kind == "f" else x, axis, keepdims, dtype)


@composite("nanmean", kind="reduce", numpy=(np.nanmean,), samples=_nan_samples_torch, method="nanmean",
           torch=_nan_torch("nanmean"))
@named("nanmean")
def nanmean(x, axis=NOARG, dtype=None, keepdims=NOARG, *, dim=NOARG, keepdim=NOARG):
    """Mean of the non-NaN elements; a NaN's gradient is 0. NumPy's ``axis``/``keepdims`` or PyTorch's
    ``dim``/``keepdim``."""
    from .math import isnan

    axis = pick("axis", axis, "dim", dim, None, "nanmean")
    keepdims = bool(pick("keepdims", keepdims, "keepdim", keepdim, False, "nanmean"))

    x = as_tensor(x, "nanmean")
    if x.dtype.kind != "f":
        from .reduce import mean

        return mean(x, axis, keepdims, dtype)
    keep = ~isnan(x)
    return nansum(x, axis, dtype, keepdims) / _sum(keep, axis, keepdims).astype(x.dtype)



# -- logcumsumexp (PyTorch's; issue 42) -------------------------------------------------------------


def _lcse_weights(xp, x, out, axis):
    """``J[..., k, j] = exp(x_j - out_k)`` for ``j <= k``, else 0 (the scan axis moved last): the
    Jacobian of ``out = logcumsumexp(x)``, each entry at most 1, selected so no overflow leaks in."""
    xm, om = xp.moveaxis(x, axis, -1), xp.moveaxis(out, axis, -1)
    n = xm.shape[-1]
    k = array_module(x.data if isinstance(x, Tensor) else x).arange(n)
    below = k[:, None] >= k[None, :]
    d = xp.where(below, xm[..., None, :] - om[..., :, None], 0.0)
    return xp.where(below, xp.exp(d), 0.0)


def _lcse_fwd(xp, x, axis):
    xm = xp.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    k = xp.arange(n)
    rows = xp.where(k[:, None] >= k[None, :], xm[..., None, :], -np.inf)  # [..., k, j]: x_j for j <= k
    m = rows.max(axis=-1, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0.0)
    return xp.moveaxis((xp.log(xp.exp(rows - m).sum(axis=-1, keepdims=True)) + m)[..., 0], -1, axis)


def _lcse_rule(ctx, g, axis):
    (x,) = ctx.saved
    xp = ctx.xp
    jac = _lcse_weights(xp, x, ctx.out, axis)  # grad_j = sum_k g_k J[k, j]
    gm = xp.moveaxis(g, axis, -1)[..., None, :]
    return (xp.moveaxis((gm @ jac)[..., 0, :], -1, axis),)


def _lcse_jvp(ctx, t, axis):
    xp = ctx.xp
    jac = _lcse_weights(xp, ctx.args[0], ctx.out, axis)  # t_out_k = sum_j J[k, j] t_j
    return xp.moveaxis((jac @ xp.moveaxis(t, axis, -1)[..., :, None])[..., 0], -1, axis)


LOGCUMSUMEXP = defop("logcumsumexp", _lcse_fwd, _lcse_rule, save=(0,), save_out=True, kind="reduce", jvp=_lcse_jvp,
                     info=lambda axis: {"axis": axis},
                     samples=lambda rng: [Sample(rng.standard_normal((3, 4)), axis=1), Sample(rng.standard_normal((3, 4)), axis=0),
                                          Sample(rng.standard_normal(5), axis=0),
                                          # far apart (torch.func.jvp's own tangent is wrong below about -20,
                                          # so the far tail is checked in tests/test_torch_ordering.py)
                                          Sample(np.array([[-6.0, 0.5, 2.0], [4.0, -5.0, 1.0]]), axis=1)],
                     torch=lambda th, x, axis: th.logcumsumexp(x, axis))


@public(LOGCUMSUMEXP, method="logcumsumexp")
@named("logcumsumexp")
def logcumsumexp(input, dim):  # noqa: A002 - PyTorch's name
    """PyTorch's ``logcumsumexp``: ``log(cumsum(exp(x)))`` along ``dim``, computed without
    overflow or underflow (each entry from its own maximum). O(n²) per row along ``dim``: it
    forms the lower-triangular matrix of the prefixes, as its gradient does."""
    x = as_tensor(input, "logcumsumexp")
    if x.dtype.kind not in "fc":
        raise TypeError(f"logcumsumexp: input must be floating, got {x.dtype}")
    if x.ndim == 0:
        return run_op(LOGCUMSUMEXP, x.reshape(1), axis=0).reshape(())
    (axis,) = normalize_axis(dim, x.ndim, "logcumsumexp")
    return run_op(LOGCUMSUMEXP, x, axis=axis)
