"""PyTorch's ordering functions (issue 42): ``topk``, ``median``, ``quantile``, ``cummax``, ``cummin``
built on the stable sort of ``join.py`` and indexing (so each value's gradient goes back to the
index it came from, as PyTorch's); ``unique``, ``bincount``, ``bucketize``, ``searchsorted``, which
are integer-valued and not differentiated."""
from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from .. import _batched
from .. import backend as _be
from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor, wrap
from ._registry import Sample, composite, defop, named, public
from .elementwise import where
from .join import _torch_dim, moveaxis, take_along_axis, torch_sort
from .math import isnan
from .reduce import sum as _sum
from .shape import reshape

TopkResult = namedtuple("topk", ["values", "indices"])  # PyTorch's torch.return_types.*
MedianResult = namedtuple("median", ["values", "indices"])
CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _xp(x):
    return _be.array_module(x.data)


def _distinct(rng, *shape):
    """Sample values without ties (the gradient of an order statistic is not defined at a tie)."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 + rng.uniform(-0.05, 0.05, shape)


# -- topk -------------------------------------------------------------------------------------------


@composite("topk", method="topk", kind="reduce",
           samples=lambda rng: [Sample(_distinct(rng, 3, 5), 2), Sample(_distinct(rng, 4, 3), 3, 0),
                                Sample(_distinct(rng, 3, 4), 2, largest=False), Sample(_distinct(rng, 6), 6)],
           torch=lambda th, x, k, dim=-1, largest=True, sorted=True: th.topk(x, k, dim, largest, sorted))
@named("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's names
    """PyTorch's ``topk``: the ``k`` largest (``largest=False``: smallest) values along ``dim`` and
    their indices, as ``(values, indices)``, in sorted order (whatever ``sorted`` says); the
    gradient goes to the indices. Equal values are taken in index order."""
    x = as_tensor(input, "topk")
    n = x.shape[_torch_dim(x, dim, "topk")] if x.ndim else 1
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__} {k!r}")
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for dim {dim} of size {n} (shape {x.shape})")
    values, indices = torch_sort(x, dim, descending=bool(largest))
    if x.ndim == 0:
        return TopkResult(values, indices)
    d = _torch_dim(x, dim, "topk")
    pre = (slice(None),) * d + (slice(0, int(k)),)
    return TopkResult(values[pre], indices[pre])


# -- median and quantile --------------------------------------------------------------------------


@composite("median", method="median", kind="reduce",
           samples=lambda rng: [Sample(_distinct(rng, 3, 4)), Sample(_distinct(rng, 3, 5), 1),
                                Sample(_distinct(rng, 4, 3), 0, keepdim=True), Sample(_distinct(rng, 2, 3, 4), dim=-1)],
           torch=lambda th, x, dim=None, keepdim=False: th.median(x) if dim is None else th.median(x, dim, keepdim))
@named("median")
def median(input, dim=None, keepdim=False):  # noqa: A002
    """PyTorch's ``median``: the lower of the two middle values (NumPy's ``np.median`` averages
    them). Without ``dim`` a 0-d tensor; with ``dim``, ``(values, indices)``. The gradient goes to
    one index, the stable sort's (equal values in index order): the ``(n - 1) // 2``-th of the sorted values."""
    x = as_tensor(input, "median")
    if x.data.size == 0:
        raise ValueError(f"median: an empty tensor (shape {x.shape}) has no median")
    if dim is None:
        if keepdim:
            raise TypeError("median: keepdim=True needs a dim")
        values, _ = _median_at(reshape(x, (-1,)), 0, False)
        return values
    if x.ndim == 0:
        return MedianResult(x.clone(), run_op(_ZERO_INDEX, x))
    return MedianResult(*_median_at(x, _torch_dim(x, dim, "median"), keepdim))


def _median_at(x, d, keepdim):
    """The lower median along ``d`` and its index: the ``(n - 1) // 2``-th sorted value, or where a
    row holds NaN, its first NaN (the sort puts NaNs last; PyTorch's median is NaN there too)."""
    values, indices = torch_sort(x, d)
    n = x.shape[d]
    nans = _sum(isnan(x), d, True)  # the sort's NaNs come last: the first is at n - count
    pos = where(nans > 0, n - nans, (n - 1) // 2).astype(np.int64)
    values, indices = take_along_axis(values, pos, d), take_along_axis(indices, pos, d)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values, indices


_ZERO_INDEX = defop("zero_index", lambda xp, x: xp.zeros(x.shape, dtype=np.int64), kind="other")

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_samples(rng):
    return [Sample(_distinct(rng, 7), 0.3), Sample(_distinct(rng, 3, 5), np.array([0.1, 0.5, 1.0]), dim=1, nondiff=(1,)),
            Sample(_distinct(rng, 4, 3), 0.75, dim=0, keepdim=True),
            Sample(_distinct(rng, 2, 5), np.array([0.2, 0.9]), dim=None, keepdim=True, nondiff=(1,)),
            Sample(_distinct(rng, 3, 6), 0.45, dim=1, interpolation="midpoint"),
            Sample(_distinct(rng, 3, 6), 0.45, dim=1, interpolation="lower"),
            Sample(_distinct(rng, 3, 6), 0.45, dim=1, interpolation="higher"),
            Sample(_distinct(rng, 3, 6), np.array([0.3, 0.5, 0.7]), dim=1, interpolation="nearest", nondiff=(1,))]


def _quantile_torch(th, x, q, dim=None, keepdim=False, interpolation="linear"):
    q = th.tensor(q) if isinstance(q, np.ndarray) else q
    return th.quantile(x, q, dim, keepdim, interpolation=interpolation)


@composite("quantile", method="quantile", kind="reduce", samples=_quantile_samples, torch=_quantile_torch)
@named("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """PyTorch's ``quantile``: the ``q``-th quantiles (a float, or a 1-D sequence or tensor of
    them, in [0, 1]; a 1-D ``q`` puts its axis first) along ``dim`` (the flattened tensor when
    None), from the sorted values at rank ``q * (n - 1)``, between neighbours as ``interpolation``
    says (``linear``, ``lower``, ``higher``, ``midpoint``, ``nearest``: half to even). The gradient
    goes to the one or two values interpolated, as PyTorch's; a row holding NaN gives NaN."""
    x = as_tensor(input, "quantile")
    if x.dtype.kind != "f":
        raise TypeError(f"quantile: input must be float32 or float64, got {x.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"quantile: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    each = isinstance(q, Tensor) and _batched.levels_of(q.data)  # vmap: each element's own q (kept batched)
    qs = q.data.astype(np.float64) if each else (
        _be.to_numpy(q.data) if isinstance(q, Tensor) else np.asarray(q)).astype(np.float64)
    if qs.ndim > 1:
        raise ValueError(f"quantile: q must be a scalar or 1-D, got shape {qs.shape}")
    chk = _be.to_numpy(_batched.innermost(qs)) if each else qs
    if chk.size and (np.isnan(chk).any() or chk.min() < 0 or chk.max() > 1):
        raise ValueError(f"quantile: q values must be in the range [0, 1], got {chk.tolist()}")
    shape = x.shape
    if dim is None:
        x, d = reshape(x, (-1,)), 0
    else:
        d = _torch_dim(x, dim, "quantile")
    if x.ndim == 0:
        x, d = reshape(x, (1,)), 0
    n = x.shape[d]
    if n == 0:
        raise ValueError(f"quantile: input of shape {shape} is empty along the reduced dim")
    values, _ = torch_sort(moveaxis(x, d, -1), -1)
    rank = (qs.reshape((1,)) if qs.ndim == 0 else qs) * (n - 1)
    lo, hi = np.floor(rank).astype(np.int64), np.ceil(rank).astype(np.int64)
    if interpolation == "nearest":
        lo = hi = np.round(rank).astype(np.int64)
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    if each:
        lo, hi = wrap(lo), wrap(hi)
    v_lo = values[..., lo]
    if interpolation in ("midpoint", "linear"):
        w = np.where(hi.data > lo.data if each else hi > lo, 0.5, 0.0) if interpolation == "midpoint" else \
            rank - (lo.data if each else lo)
        w = wrap(w.astype(x.dtype)) if each else Tensor(w.astype(x.dtype), device=x.device)
        out = v_lo + (values[..., hi] - v_lo) * w
    else:
        out = v_lo
    # where a row holds NaN, PyTorch's quantile is its last sorted value (a NaN: the sort puts them last),
    # which takes the gradient
    out = where(_sum(isnan(values), -1, True) > 0, values[..., n - 1:], out)
    out = moveaxis(out, -1, 0)  # (nq,) + the other dims
    if keepdim:
        kept = tuple(1 for _ in shape) if dim is None else tuple(1 if i == d else s for i, s in enumerate(shape))
        out = reshape(out, (out.shape[0],) + kept)
    return out[0] if qs.ndim == 0 else out


# -- cummax / cummin --------------------------------------------------------------------------------


def _cum_index_fwd(xp, x, axis, largest):
    """The index of the running maximum (``largest``) or minimum along ``axis``: the last index
    where it was reached, as PyTorch's (ties: the later index; a NaN takes over, as PyTorch's).
    A loop along the axis, each step over the rest (CuPy has no ``maximum.accumulate``)."""
    xm = xp.moveaxis(x, axis, 0)
    best, idx, out = xm[0], xp.zeros(xm.shape[1:], dtype=np.int64), []
    for k in range(xm.shape[0]):
        take = ((xm[k] >= best) if largest else (xm[k] <= best)) | xp.isnan(xm[k])
        best, idx = xp.where(take, xm[k], best), xp.where(take, k, idx)
        out.append(idx)
    return xp.moveaxis(xp.stack(out), 0, axis).astype(np.int64)


CUM_INDEX = defop("cum_index", _cum_index_fwd, kind="reduce")


def _cum_extreme(x, dim, largest, name, pair):
    x = as_tensor(x, name)
    if x.ndim == 0:
        return pair(x.clone(), run_op(_ZERO_INDEX, x))
    d = _torch_dim(x, dim, name)
    if x.data.size == 0:
        return pair(x.clone(), run_op(_ZERO_INDEX, x))
    idx = run_op(CUM_INDEX, x, axis=d, largest=largest)
    return pair(take_along_axis(x, idx, d), idx)


def _cum_samples(rng):
    return [Sample(_distinct(rng, 3, 5), 1), Sample(_distinct(rng, 4, 3), 0), Sample(_distinct(rng, 6), dim=0),
            Sample(_distinct(rng, 2, 3, 4), -1)]


@composite("cummax", method="cummax", kind="reduce", samples=_cum_samples,
           torch=lambda th, x, dim: th.cummax(x, dim))
@named("cummax")
def cummax(input, dim):  # noqa: A002
    """PyTorch's ``cummax``: the running maximum along ``dim`` and the index where it was reached
    (ties: the later index), as ``(values, indices)``; each value's gradient goes to its index."""
    return _cum_extreme(input, dim, True, "cummax", CummaxResult)


@composite("cummin", method="cummin", kind="reduce", samples=_cum_samples,
           torch=lambda th, x, dim: th.cummin(x, dim))
@named("cummin")
def cummin(input, dim):  # noqa: A002
    """PyTorch's ``cummin``: the running minimum along ``dim`` and its index (ties: the later
    index), as ``(values, indices)``; each value's gradient goes to its index."""
    return _cum_extreme(input, dim, False, "cummin", CumminResult)


# -- not differentiated: unique, bincount, bucketize, searchsorted ----------------------------------


UNIQUE = defop("unique", lambda xp, x, dim, part: xp.unique(x, axis=dim, return_inverse=True, return_counts=True)[part],
               kind="other")


@public(UNIQUE, method="unique")
@named("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """PyTorch's ``unique``: the distinct values (``dim``: the distinct slices along it), sorted
    (whatever ``sorted`` says); with ``return_inverse`` each element's (``dim``: slice's) index
    among them, shaped as the input (``dim``: one per slice); with ``return_counts`` how often each
    occurs. Not differentiated."""
    x = as_tensor(input, "unique")
    d = None if dim is None else _torch_dim(x, dim, "unique")
    if d is None:
        x = reshape(x, (-1,))
    values = run_op(UNIQUE, x.detach(), dim=d, part=0)
    if not (return_inverse or return_counts):
        return values
    out = (values,)
    if return_inverse:
        inv = run_op(UNIQUE, x.detach(), dim=d, part=1).astype(np.int64)
        out += (reshape(inv, as_tensor(input, "unique").shape if d is None else (-1,)),)
    if return_counts:
        out += (run_op(UNIQUE, x.detach(), dim=d, part=2).astype(np.int64),)
    return out


BINCOUNT = defop("bincount", lambda xp, x, *w, minlength: xp.bincount(x, *w, minlength=minlength), kind="other")


@public(BINCOUNT, method="bincount", numpy=(np.bincount,))
@named("bincount")
def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer ``input`` (at least
    ``minlength`` counts); with ``weights`` the sum of the weights at each value, in the weights'
    dtype (float32 stays float32, as PyTorch's). Not differentiated (neither is PyTorch's)."""
    x = as_tensor(input, "bincount")
    if x.ndim != 1 or x.dtype.kind not in "iub":
        raise TypeError(f"bincount: input must be a 1-D integer tensor, got {x.dtype} of shape {x.shape}")
    if x.data.size and bool((_batched.innermost(x.data) < 0).any()):  # under vmap: every element's
        raise ValueError("bincount: input must hold non-negative integers")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if weights is None:
        return run_op(BINCOUNT, x.detach(), minlength=int(minlength)).astype(np.int64)
    w = as_tensor(weights, "bincount").detach()
    if w.shape != x.shape:
        raise ValueError(f"bincount: weights of shape {w.shape} must have the input's shape {x.shape}")
    out = run_op(BINCOUNT, x.detach(), w, minlength=int(minlength))
    return out.astype(w.dtype) if w.dtype.kind == "f" else out


def _searchsorted_fwd(xp, seq, v, right):
    side = "right" if right else "left"
    if seq.ndim <= 1:
        return xp.searchsorted(seq, v, side=side).astype(np.int64)
    rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
    out = xp.stack([xp.searchsorted(s, w, side=side) for s, w in zip(rows_s, rows_v, strict=True)])
    return out.reshape(v.shape).astype(np.int64)


SEARCHSORTED = defop("searchsorted", _searchsorted_fwd, kind="other")


@public(SEARCHSORTED, numpy=(np.searchsorted,))
@named("searchsorted")
def searchsorted(sorted_sequence, values, right=False, *, side=None, sorter=None):
    """The index at which each of ``values`` would go in ``sorted_sequence`` to keep it sorted:
    before equal entries, or after them with ``right=True`` (NumPy: ``side='right'``). A
    sequence of more than one dim is searched row by row (its leading dims match ``values``'), as
    PyTorch's. int64, not differentiated."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ValueError("searchsorted: right=True and side='left' contradict each other")
        right = side == "right"
    seq = as_tensor(sorted_sequence, "searchsorted").detach()
    if sorter is not None:
        seq = take_along_axis(seq, as_tensor(sorter, "searchsorted"), -1)
    v = values.detach() if isinstance(values, Tensor) else Tensor(values, device=seq.device)
    if seq.ndim > 1 and seq.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"searchsorted: the leading dims of sorted_sequence {seq.shape} and values {v.shape} "
                         "must match")
    return run_op(SEARCHSORTED, seq, v, right=bool(right))


@composite("bucketize", kind="other",  # integer samples: constants, nothing to gradcheck
           samples=lambda rng: [Sample(np.array([[1, 5], [3, 4]]), np.array([0, 3, 4]))])
@named("bucketize")
def bucketize(input, boundaries, *, right=False, out_int32=False):  # noqa: A002
    """PyTorch's ``bucketize``: for each element of ``input`` the index ``i`` of its bucket in the
    1-D sorted ``boundaries``, ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``:
    ``boundaries[i-1] <= x < boundaries[i]``). int64 (``out_int32``: int32), not differentiated."""
    b = as_tensor(boundaries, "bucketize")
    if b.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {b.shape}")
    out = searchsorted(b, input, right=right)
    return out.astype(np.int32) if out_int32 else out
