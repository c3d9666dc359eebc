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

from .. import _state
from .. import backend as _be
from .. import creation
from ..ops import linalg as _la
from ..ops import nn as _nn
from ..ops import elementwise as _ew
from ..ops import reduce as _red
from ..tensor import Tensor
# convolution, pooling, batch norm and smooth activations live in conv.py, pool.py and activations.py
from .activations import gelu, silu
from .conv import batch_norm, conv1d, conv2d, pad
from .pool import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

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

linear = _la.linear


# -- activations ---------------------------------------------------------------------------


# the ops themselves, as mg.relu, mg.tanh and mg.sigmoid: one function, one rule
relu = _ew.relu
tanh = _ew.tanh
sigmoid = _ew.sigmoid


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along ``dim`` (default the last), computed stably."""
    return _red.softmax(_t(x, "softmax"), dim)


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim`` (default the last), computed stably."""
    return _red.log_softmax(_t(x, "log_softmax"), dim)


# -- cross entropy ---------------------------------------------------------------------------


_UNSIGNED = {k: np.dtype(f"u{k}") for k in (1, 2, 4, 8)}


def _targets(target, n, c, op, xd):
    """Integer class indices as a backend int array, checked against ``c`` classes."""
    td = target.data if isinstance(target, Tensor) else target
    if td.__class__ is not np.ndarray and isinstance(td, (list, tuple, numbers.Integral)):
        td = np.asarray(td)
    if not hasattr(td, "dtype") or td.dtype.kind not in "iu":
        kind = getattr(td, "dtype", type(td).__name__)
        raise TypeError(
            f"{op}: target must hold integer class indices, got {kind}; for probabilities "
            "or one-hot targets use -(target * log_softmax(input)).sum(-1)"
        )
    if tuple(td.shape) != (n,):
        raise ValueError(f"{op}: input of shape {tuple(xd.shape)} needs a target of shape ({n},), got {tuple(td.shape)}")
    if xd.__class__ is np.ndarray or _be.array_module(xd) is np:
        td = np.asarray(td)
    elif not _be.is_cupy_array(td):
        td = _be.to_device(np.asarray(td), _be.device_of(xd))
    # one pass: viewed as unsigned integers, negative targets are huge too
    if n and int((td.view(_UNSIGNED[td.dtype.itemsize]) if td.dtype.kind == "i" else td).max()) >= c:
        lo, hi = int(td.min()), int(td.max())
        bad = lo if lo < 0 else hi
        raise IndexError(f"{op}: target {bad} is out of bounds for {c} classes (valid [0, {c - 1}])")
    return td


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
    n, c = x.shape
    td = _targets(target, n, c, "cross_entropy", x.data)
    # a target Tensor is saved itself by nll_loss: changing it in place before backward is refused
    return _nn.cross_entropy_op(x, target if isinstance(target, Tensor) else td, reduction)


def nll_loss(input, target, reduction: str = "mean"):  # noqa: A002
    """Negative log-likelihood of integer targets given log-probabilities (N, C)."""
    _check_reduction(reduction, "nll_loss")
    x = _t(input, "nll_loss")
    if x.ndim != 2:
        raise ValueError(f"nll_loss: input must be (N, C) log-probabilities, got shape {x.shape}")
    n, c = x.shape
    td = _targets(target, n, c, "nll_loss", x.data)
    return _nn.nll_loss_op(x, target if isinstance(target, Tensor) else td, reduction)


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
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    return _nn.bce_op(x, y, reduction)


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
    # a captured step (mg.compile) draws a fresh mask on each replay, as eager does
    return x * _state.kernel(_dropout_mask, x.shape, p, x.data.dtype, x.device)


def _dropout_mask(shape, p, dtype, device):
    """Keep (scaled by 1 / (1 - p)) or drop each element, from ``mg.manual_seed``'s generator."""
    keep = creation._rng.random(shape, dtype=np.float32) >= p
    mask = keep.astype(dtype)
    mask *= 1.0 / (1.0 - p)
    return mask if device == "cpu" else _be.to_device(mask, device)


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

__all__ += [
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "gelu",
    "silu", "batch_norm", "pad",
]
