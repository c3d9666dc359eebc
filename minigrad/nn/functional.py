"""Functional layers and losses: linear, activations, softmax, cross_entropy, mse_loss,
binary_cross_entropy_with_logits, dropout, layer_norm, embedding.

``linear``, ``cross_entropy`` and ``binary_cross_entropy_with_logits`` are fused ops: one
Node each, with a forward and a gradient rule written for the hot path (no temporaries
beyond what the result needs). Their rules run on backend arrays in a first-order pass and
on Tensors with ``create_graph=True``, like every core rule, so second derivatives work.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from ..ops import _core as C
from ..ops import elementwise as _ew
from ..ops import reduce as _red
from ..tensor import Tensor, _wrap

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss", "binary_cross_entropy_with_logits", "dropout", "layer_norm", "embedding",
]

_REDUCTIONS = ("mean", "sum", "none")


def _t(x, op):
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: got a sparse tensor; use mg.sparse.matmul for sparse inputs")
    return Tensor(x)


def _check_reduction(reduction, op):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


# -- linear -----------------------------------------------------------------------------


def _linear_rule(ctx, g, saved):
    x, w = saved
    meta = ctx.meta
    mx, mw = meta[0], meta[1]
    mb = meta[2] if len(meta) == 3 else None
    gx = gw = gb = None
    if mx is not None:
        gx = C.matmul(g, w)
    if mw is not None or mb is not None:
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        if mw is not None:
            x2 = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
            gw = C.matmul(g2.T, x2)
        if mb is not None:
            gb = _sum_rows(g2)
    return gx, gw, gb


_ONES: dict = {}  # (rows, dtype) -> a read-only vector of ones, for column sums on the host


def _sum_rows(g2):
    """g2.sum(0). On the host as ones @ g2: BLAS's gemv is several times faster than NumPy's
    axis-0 reduction (and uses BLAS's threads)."""
    if type(g2) is not np.ndarray or g2.dtype.kind != "f":
        return g2.sum(0)
    key = (g2.shape[0], g2.dtype)
    ones = _ONES.get(key)
    if ones is None:
        if len(_ONES) > 16:
            _ONES.clear()
        ones = np.ones(g2.shape[0], dtype=g2.dtype)
        ones.flags.writeable = False
        _ONES[key] = ones
    return ones @ g2


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` as one op (PyTorch's layout: ``weight`` is (out, in)).

    Args:
        x: (..., in) Tensor.
        weight: (out, in) Tensor.
        bias: (out,) Tensor or None.

    Returns:
        (..., out) Tensor.

    >>> F.linear(mg.ones(2, 3), mg.ones(4, 3)).shape
    (2, 4)
    """
    x = _t(x, "linear")
    xd = x.data
    wd = weight.data
    if wd.ndim != 2 or xd.ndim < 1 or xd.shape[-1] != wd.shape[1]:
        raise ValueError(
            f"linear: input of shape {tuple(xd.shape)} does not match weight of shape {tuple(wd.shape)} "
            f"(expected input (..., {wd.shape[1] if wd.ndim == 2 else '?'}) and weight (out, in))"
        )
    if type(xd) is not type(wd):
        C.check_same_device("linear", xd, wd)
    out = C.timed("linear", _linear_fwd, xd, wd, None if bias is None else bias.data)
    if bias is None:
        return C.record("linear", _linear_rule, out, (x, weight),
                        saved=(x if weight._rg else None, weight if x._rg else None))
    return C.record("linear", _linear_rule, out, (x, weight, bias),
                    saved=(x if weight._rg else None, weight if x._rg else None))


def _linear_fwd(xd, wd, bd):
    out = _be.matmul(xd, wd.T)
    if bd is not None:
        if out.dtype == bd.dtype and out.ndim >= 1:
            out += bd  # a fresh array: add the bias in place, no temporary
        else:
            out = out + bd
    return out


# -- activations ---------------------------------------------------------------------------


def relu(x):
    """max(x, 0), elementwise."""
    return _ew.relu(x)


def _tanh_rule(ctx, g, saved):
    (y,) = saved
    if C.is_t(g) or C.is_t(y):  # create_graph: recorded ops
        return (g * (1 - y * y),)
    d = y * y                       # one temporary instead of three: (1 - y*y) * g in place
    C.xp_of(d).subtract(1, d, out=d)
    d *= g
    return (d,)


def tanh(x):
    """Hyperbolic tangent, elementwise (``mg.tanh`` with a backward that allocates one array, not three)."""
    x = _t(x, "tanh")
    return C.unary("tanh", C.xp_of(x.data).tanh, _tanh_rule, x, 2)


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise."""
    return _ew.sigmoid(x)


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along ``dim`` (default the last), computed stably."""
    return _red.softmax(_t(x, "softmax"), dim)


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim`` (default the last), computed stably."""
    return _red.log_softmax(_t(x, "log_softmax"), dim)


# -- cross entropy ---------------------------------------------------------------------------


def _targets(target, n, c, op, xd):
    """Integer class indices as a backend int array, checked against ``c`` classes."""
    td = target.data if isinstance(target, Tensor) else target
    if isinstance(td, (list, tuple, numbers.Integral)):
        td = np.asarray(td)
    if not hasattr(td, "dtype") or td.dtype.kind not in "iu":
        kind = getattr(td, "dtype", type(td).__name__)
        raise TypeError(
            f"{op}: target must hold integer class indices, got {kind}; for probabilities "
            "or one-hot targets use -(target * log_softmax(input)).sum(-1)"
        )
    if tuple(td.shape) != (n,):
        raise ValueError(f"{op}: input of shape {tuple(xd.shape)} needs a target of shape ({n},), got {tuple(td.shape)}")
    xp = C.xp_of(xd)
    if xp is np:
        td = np.asarray(td)
    elif not _be.is_cupy_array(td):
        td = _be.to_device(np.asarray(td), _be.device_of(xd))
    if n:
        lo, hi = int(td.min()), int(td.max())
        if lo < 0 or hi >= c:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{op}: target {bad} is out of bounds for {c} classes (valid [0, {c - 1}])")
    return td


def _ce_fwd(xd, td, reduction):
    """Per-row losses and the softmax (kept for backward), computed stably."""
    xp = C.xp_of(xd)
    n = xd.shape[0]
    rows = xp.arange(n)
    # the ufunc's own reduce on the host: the array method's Python wrapper costs more than the
    # work on a minibatch's logits
    total = np.add.reduce if xp is np else xp.sum
    p = _red.shift_by_max(xd, 1) if n else xd - xd  # x - max (for few classes, an F-ordered array)
    picked = p[rows, td]                       # x[t] - max
    xp.exp(p, out=p)
    s = total(p, axis=1)
    p /= s[:, None]                            # softmax
    loss = xp.log(s)
    loss -= picked                             # logsumexp - x[t]
    if reduction == "none":
        return loss, p
    if not n:
        return xp.asarray(xp.nan if reduction == "mean" else 0, dtype=xd.dtype), p
    loss = total(loss, axis=0, keepdims=True)  # an array, not a NumPy scalar
    if reduction == "mean":
        loss /= n
    return loss.reshape(()), p


def _ce_rule(ctx, g, saved):
    x, _, p = saved  # the middle one is the target, saved for its version check only
    td, reduction = ctx.attrs
    n = ctx.meta[0][0][0]
    if C.is_t(g):  # create_graph: the same formula with recorded ops
        xp = C.xp_of(td)
        onehot = xp.zeros(x.shape, dtype=x.dtype)
        onehot[xp.arange(n), td] = 1
        d = _red.softmax(x, 1) - onehot
        if reduction == "mean":
            return (d * (g / n),)
        if reduction == "sum":
            return (d * g,)
        return (d * g.reshape(n, 1),)
    xp = C.xp_of(p)
    gx = p.copy(order="K")  # keep p's layout: no transposing copy
    gx[xp.arange(n), td] -= 1
    if reduction == "mean":
        gx *= g / n if g.ndim == 0 else g.reshape(()) / n
    elif reduction == "sum":
        gx *= g
    else:
        gx *= g.reshape(n, 1)
    return (gx,)


def cross_entropy(input, target, reduction: str = "mean"):  # noqa: A002 - PyTorch's name
    """Softmax cross-entropy between logits and integer class targets, as one stable op.

    Args:
        input: (N, C) logits (or (C,) for one sample; (N, C, d1, ...) moves the class dim last).
        target: N integer class indices in [0, C) (Tensor, array or list).
        reduction: 'mean' (default), 'sum' or 'none' (per-sample losses).

    Stable for logits of any size (±1000 gives finite losses and gradients).

    >>> F.cross_entropy(mg.tensor([[1000.0, -1000.0]]), [0]).item()
    0.0
    """
    _check_reduction(reduction, "cross_entropy")
    x = _t(input, "cross_entropy")
    if x.data.dtype.kind != "f":
        raise TypeError(f"cross_entropy: input must be floating-point logits, got dtype {x.data.dtype}")
    if x.ndim == 1:
        if isinstance(target, Tensor):
            t = target.reshape(1)  # a view: it keeps the target's version counter
        else:
            t = np.asarray(target).reshape(1) if not _be.is_cupy_array(target) else target.reshape(1)
        out = cross_entropy(x.reshape(1, -1), t, reduction)
        return out.reshape(()) if reduction == "none" else out
    if x.ndim > 2:
        # (N, C, d1, ...) -> (N * d1 * ..., C), then back for reduction='none'
        c = x.shape[1]
        rest = x.shape[2:]
        perm = (0,) + tuple(range(2, x.ndim)) + (1,)
        xt = x.permute(*perm).reshape(-1, c)
        t = target if isinstance(target, Tensor) else np.asarray(target)
        if tuple(t.shape) != (x.shape[0],) + tuple(rest):
            raise ValueError(
                f"cross_entropy: input of shape {x.shape} needs a target of shape {(x.shape[0],) + tuple(rest)}, "
                f"got {tuple(t.shape)}"
            )
        out = cross_entropy(xt, t.reshape(-1), reduction)
        return out.reshape((x.shape[0],) + tuple(rest)) if reduction == "none" else out
    if x.ndim != 2:
        raise ValueError(f"cross_entropy: input must be (N, C) logits, got shape {x.shape}")
    xd = x.data
    n, c = xd.shape
    td = _targets(target, n, c, "cross_entropy", xd)
    loss, p = C.timed("cross_entropy", _ce_fwd, xd, td, reduction)
    # a target Tensor is saved too: changing it in place before backward is refused, not silently wrong
    return C.record("cross_entropy", _ce_rule, loss, (x,), saved=(x, target if isinstance(target, Tensor) else None, p),
                    attrs=(td, reduction),
                    info={"reduction": reduction})


def nll_loss(input, target, reduction: str = "mean"):  # noqa: A002
    """Negative log-likelihood of integer targets given log-probabilities (N, C)."""
    _check_reduction(reduction, "nll_loss")
    x = _t(input, "nll_loss")
    if x.ndim != 2:
        raise ValueError(f"nll_loss: input must be (N, C) log-probabilities, got shape {x.shape}")
    n, c = x.shape
    td = _targets(target, n, c, "nll_loss", x.data)
    picked = -x[C.xp_of(x.data).arange(n), td]
    return _reduce(picked, reduction)


def _reduce(v, reduction):
    if reduction == "mean":
        return v.mean()
    if reduction == "sum":
        return v.sum()
    return v


# -- regression losses -------------------------------------------------------------------------


def mse_loss(input, target, reduction: str = "mean"):  # noqa: A002
    """Mean squared error ``(input - target) ** 2``, reduced by 'mean', 'sum' or 'none'.

    Shapes must match exactly (broadcasting a target is almost always a bug).
    """
    _check_reduction(reduction, "mse_loss")
    x = _t(input, "mse_loss")
    y = target if isinstance(target, Tensor) else Tensor(target, dtype=x.dtype)
    if tuple(y.shape) != tuple(x.shape):
        raise ValueError(
            f"mse_loss: input of shape {x.shape} and target of shape {y.shape} differ; "
            "reshape one so they match"
        )
    d = x - y
    return _reduce(d * d, reduction)


def _bce_fwd(xd, yd, reduction):
    xp = C.xp_of(xd)
    loss = xp.maximum(xd, 0) - xd * yd  # softplus(x) - x*y, stable both ways
    loss += xp.log1p(xp.exp(-xp.abs(xd)))
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return xp.asarray(loss, dtype=xd.dtype)


def _bce_rule(ctx, g, saved):
    x, y = saved
    mx, my = ctx.meta
    reduction, size = ctx.attrs
    if reduction == "mean":
        g = g / size
    elif reduction == "sum":
        pass
    gx = gy = None
    if C.is_t(x) or C.is_t(y) or C.is_t(g):
        xt = x if C.is_t(x) else _wrap(x)
        sig = _ew.sigmoid(xt)
    else:
        sig = _ew._sigmoid_fwd(x)
    if mx is not None:
        gx = (sig - y) * g
    if my is not None:
        gy = -x * g
    return gx, gy


def binary_cross_entropy_with_logits(input, target, reduction: str = "mean"):  # noqa: A002
    """Sigmoid + binary cross-entropy in one stable op: ``softplus(x) - x * y``.

    Args:
        input: logits of any shape.
        target: probabilities in [0, 1] of the same shape.
        reduction: 'mean' (default), 'sum' or 'none'.
    """
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    x = _t(input, "binary_cross_entropy_with_logits")
    y = target if isinstance(target, Tensor) else Tensor(target, dtype=x.dtype)
    if tuple(y.shape) != tuple(x.shape):
        raise ValueError(
            f"binary_cross_entropy_with_logits: input of shape {x.shape} and target of shape {y.shape} differ"
        )
    yd = y.data if y.data.dtype == x.data.dtype else y.data.astype(x.data.dtype)
    loss = C.timed("binary_cross_entropy_with_logits", _bce_fwd, x.data, yd, reduction)
    return C.record("binary_cross_entropy_with_logits", _bce_rule, loss, (x, y), saved=(x, y),
                    attrs=(reduction, x.data.size), info={"reduction": reduction})


# -- regularisation and normalisation ------------------------------------------------------------


def dropout(x, p: float = 0.5, training: bool = True):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (training only).

    Uses the generator seeded by ``mg.manual_seed``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    x = _t(x, "dropout")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    from .. import creation

    keep = creation._rng.random(x.shape, dtype=np.float32) >= p
    xp = C.xp_of(x.data)
    mask = keep.astype(x.data.dtype)
    mask *= 1.0 / (1.0 - p)
    if xp is not np:
        mask = _be.to_device(mask, _be.device_of(x.data))
    return x * mask


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale and shift."""
    x = _t(x, "layer_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape):
        raise ValueError(
            f"layer_norm: input of shape {x.shape} does not end with normalized_shape {tuple(normalized_shape)}"
        )
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    d = x - mu
    var = (d * d).mean(axis=axes, keepdims=True)
    y = d / (var + eps).sqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def embedding(indices, weight):
    """Rows of ``weight`` picked by integer ``indices`` (any shape); repeated rows accumulate gradient."""
    idx = indices.data if isinstance(indices, Tensor) else indices
    if isinstance(idx, (list, tuple, numbers.Integral)):
        idx = np.asarray(idx)
    if not hasattr(idx, "dtype") or idx.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be integers, got {getattr(idx, 'dtype', type(idx).__name__)}")
    n = weight.shape[0]
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            raise IndexError(f"embedding: index {lo if lo < 0 else hi} is out of range for {n} embeddings")
    # index by the Tensor itself when there is one: getitem saves it with its version
    return weight[indices if isinstance(indices, Tensor) else idx]

# convolution, pooling, batch norm and smooth activations live in conv.py (issue 22)
from .conv import (  # noqa: E402
    adaptive_avg_pool2d, avg_pool1d, avg_pool2d, batch_norm, conv1d, conv2d, gelu, max_pool1d, max_pool2d, pad,
    silu,
)

__all__ += [
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "gelu",
    "silu", "batch_norm", "pad",
]
