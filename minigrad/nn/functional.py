"""Functional layers and losses: linear, activations, softmax, the losses (from losses.py:
cross_entropy, nll_loss, mse_loss, l1_loss, binary_cross_entropy(_with_logits), huber_loss,
smooth_l1_loss, kl_div, one_hot), dropout, layer_norm, embedding.

``linear``, ``cross_entropy`` and ``binary_cross_entropy_with_logits`` are fused ops: one
Node each, with a forward and a gradient rule written for the hot path (no temporaries
beyond what the result needs). Their rules run on backend arrays in a first-order pass and
on Tensors with ``create_graph=True``, like every core rule, so second derivatives work.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import creation
from ..ops import matmul as _la
from ..ops import elementwise as _ew
from ..ops import reduce as _red
from ..creation import as_tensor
from ..tensor import Tensor
# convolution, pooling, batch norm and smooth activations live in conv.py, pool.py and activations.py
from .activations import gelu, silu
from .conv import batch_norm, conv1d, conv2d, pad
from .pool import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss", "binary_cross_entropy_with_logits", "dropout", "layer_norm", "embedding",
    "leaky_relu", "elu", "softplus", "l1_loss", "binary_cross_entropy", "huber_loss", "smooth_l1_loss", "kl_div",
    "one_hot",
]



# -- linear -----------------------------------------------------------------------------


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` as one op (PyTorch's layout: ``weight`` is (out, in)).

    The input must be floating-point like the weight: an integer batch (class labels, pixel
    counts read as int64) is refused, as PyTorch refuses it, instead of silently giving float64.

    >>> F.linear(mg.ones(2, 3), mg.ones(4, 3)).shape
    (2, 4)
    """
    xd = getattr(x, "data", x)
    dt = getattr(xd, "dtype", None)
    if dt is not None and dt.kind in "iub":
        wdt = getattr(getattr(weight, "data", weight), "dtype", "float32")
        raise TypeError(f"linear: input dtype {dt} is not floating-point (the weight is {wdt}); convert the "
                        f"batch first: x.astype({_dtype_name(wdt)}) (PyTorch: x.float())")
    return _la.linear(x, weight, bias)


def _dtype_name(dt):
    return f"mg.{np.dtype(dt).name}" if np.dtype(dt).kind == "f" else "mg.float32"


# -- activations ---------------------------------------------------------------------------


# the ops themselves, as mg.relu, mg.tanh and mg.sigmoid: one function, one rule
relu = _ew.relu
tanh = _ew.tanh
sigmoid = _ew.sigmoid


def leaky_relu(x, negative_slope: float = 0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x``; PyTorch's ``F.leaky_relu``.

    >>> F.leaky_relu(mg.tensor([-2.0, 3.0])).tolist()
    [-0.02, 3.0]
    """
    x = as_tensor(x, "leaky_relu")
    return _ew.where(x > 0, x, x * negative_slope)


def elu(x, alpha: float = 1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``; PyTorch's ``F.elu``.

    >>> round(F.elu(mg.tensor([-1.0])).item(), 4)
    -0.6321
    """
    x = as_tensor(x, "elu")
    pos = x > 0
    # exp of the negative side only: a large positive x never overflows in the branch not taken
    return _ew.where(pos, x, (_ew.where(pos, 0.0, x).exp() - 1.0) * alpha)


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (PyTorch's ``F.softplus``, its formula and its threshold).

    >>> round(F.softplus(mg.tensor([0.0])).item(), 4)
    0.6931
    """
    x = as_tensor(x, "softplus")
    bx = x * beta
    big = bx > threshold
    return _ew.where(big, x, _ew.where(big, 0.0, bx).exp().log1p() / beta)


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along ``dim`` (default the last), computed stably."""
    return _red.softmax(as_tensor(x, "softmax"), dim)


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim`` (default the last), computed stably."""
    return _red.log_softmax(as_tensor(x, "log_softmax"), dim)


# -- losses (losses.py) -----------------------------------------------------------------------

from .losses import (  # noqa: E402
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, one_hot, smooth_l1_loss,
)


# -- regularisation and normalisation ------------------------------------------------------------


def dropout(x, p: float = 0.5, training: bool = True):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (training only).

    Uses the generator seeded by ``mg.manual_seed``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    x = as_tensor(x, "dropout")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    # a captured step (mg.compile) draws a fresh mask on each replay, as eager does
    return x * creation.dropout_mask(x.shape, p, x.data.dtype, x.device)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale and shift."""
    x = as_tensor(x, "layer_norm")
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
