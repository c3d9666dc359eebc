"""``mg.nn.functional``: the functions of ``mg.nn`` in one namespace (PyTorch's names and arguments).

Written here: ``linear``, ``dropout``, ``layer_norm``, ``embedding``. Gathered from the files that
write them: the activations (``activations.py``), ``conv1d``, ``conv2d`` and ``batch_norm``
(``conv.py``), ``pad`` (``padding.py``), the poolings (``pool.py``) and the losses and ``one_hot``
(``losses.py``). The layers (``layers*.py``) call them through this namespace.

``linear``, ``cross_entropy`` and ``binary_cross_entropy_with_logits`` are fused ops: one
Node each, with a forward and a gradient rule written for the hot path (no temporaries
beyond what the result needs). Their rules run on backend arrays in a first-order pass and
on Tensors with ``create_graph=True``, like every core rule, so second derivatives work.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import creation
from ..creation import as_tensor
from ..ops import matmul as _la
from ..tensor import Tensor
from .activations import elu, gelu, leaky_relu, log_softmax, relu, sigmoid, silu, softmax, softplus, tanh
from .conv import batch_norm, conv1d, conv2d
from .losses import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, one_hot, smooth_l1_loss,
)
from .padding import pad
from .pool import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss", "binary_cross_entropy_with_logits", "dropout", "layer_norm", "embedding",
    "leaky_relu", "elu", "softplus", "l1_loss", "binary_cross_entropy", "huber_loss", "smooth_l1_loss", "kl_div",
    "one_hot",
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "gelu",
    "silu", "batch_norm", "pad",
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
