"""``mg.nn.functional``: the functions of ``mg.nn`` in one namespace (PyTorch's names and arguments).

Written here: ``linear``, ``dropout``, ``layer_norm``, ``embedding``, and PyTorch's ``normalize``,
``cosine_similarity``, ``group_norm``, ``rms_norm`` and ``scaled_dot_product_attention`` (composites
of recorded ops). Gathered from the files that
write them: the activations (``activations.py``), ``conv1d``, ``conv2d``, ``conv_transpose2d`` and
``batch_norm`` (``conv.py``), ``pad`` (``padding.py``), the poolings (``pool.py``), ``interpolate``
(``upsample.py``), the losses and ``one_hot`` (``losses.py``), and ``unfold``, ``fold`` and
``gumbel_softmax`` (``fold.py``); ``embedding_bag`` is written here too. The layers (``layers*.py``)
call them through this namespace.

``linear``, ``cross_entropy`` and ``binary_cross_entropy_with_logits`` are fused ops: one
Node each, with a forward and a gradient rule written for the hot path (no temporaries
beyond what the result needs). Their rules run on backend arrays in a first-order pass and
on Tensors with ``create_graph=True``, like every core rule, so second derivatives work.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _batched
from .. import creation
from ..creation import as_tensor
from ..ops import matmul as _la
from ..tensor import Tensor, wrap
from .activations import elu, gelu, leaky_relu, log_softmax, relu, sigmoid, silu, softmax, softplus, tanh
from .conv import batch_norm, conv1d, conv2d, conv_transpose2d
from .losses import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, one_hot, smooth_l1_loss,
)
from .padding import pad
from .pool import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .upsample import interpolate

__all__ = [
    "linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy", "nll_loss",
    "mse_loss", "binary_cross_entropy_with_logits", "dropout", "layer_norm", "embedding",
    "leaky_relu", "elu", "softplus", "l1_loss", "binary_cross_entropy", "huber_loss", "smooth_l1_loss", "kl_div",
    "one_hot",
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "gelu",
    "silu", "batch_norm", "pad",
]

__all__ += ["conv_transpose2d", "interpolate"]


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
    mask = creation.dropout_mask(x.shape, p, x.data.dtype, x.device)
    return x * (wrap(mask) if _batched.is_batched(mask) else mask)  # vmap(randomness="different"): a mask each


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


def embedding(indices, weight, padding_idx=None):
    """Rows of ``weight`` picked by integer ``indices`` (any shape); repeated rows accumulate gradient.
    ``padding_idx`` (PyTorch's): that row is read but gets no gradient."""
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
    out = weight[indices if isinstance(indices, Tensor) else idx]
    if padding_idx is None:
        return out
    p = int(padding_idx)
    if not -n <= p < n:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {n} embeddings")
    pad = (idx == p % n)[..., None]
    return _ew.where(pad if isinstance(pad, np.ndarray) else Tensor(pad), out.detach(), out)


# -- PyTorch's further normalisations, distances and attention -------------------------------------

from .activations import glu, hardtanh, logsigmoid, mish, softmin  # noqa: E402
from .losses import (  # noqa: E402
    _vector_norm, cosine_embedding_loss, margin_ranking_loss, pairwise_distance, triplet_margin_loss,
)
from ..ops import elementwise as _ew  # noqa: E402

__all__ += [
    "normalize", "cosine_similarity", "pairwise_distance", "group_norm", "rms_norm", "scaled_dot_product_attention",
    "glu", "mish", "hardtanh", "logsigmoid", "softmin",
    "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
]


from .fold import fold, gumbel_softmax, unfold  # noqa: E402

__all__ += ["unfold", "fold", "gumbel_softmax"]


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):  # noqa: A002
    """``input / max(||input||_p, eps)`` along ``dim``, PyTorch's ``F.normalize``.

    >>> F.normalize(mg.tensor([[3.0, 4.0]])).tolist()
    [[0.6, 0.8]]
    """
    x = as_tensor(input, "normalize")
    return x / _vector_norm(x, p, dim, True).clamp(eps, None)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``sum(x1 * x2) / (max(||x1||, eps) max(||x2||, eps))`` along ``dim`` (the two broadcast
    first), PyTorch's ``F.cosine_similarity``.

    >>> F.cosine_similarity(mg.tensor([[1.0, 0.0]]), mg.tensor([[1.0, 1.0]])).tolist()  # doctest: +ELLIPSIS
    [0.7071...]
    """
    x1, x2 = as_tensor(x1, "cosine_similarity"), as_tensor(x2, "cosine_similarity")
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1 = _vector_norm(x1, 2.0, dim, True).clamp(eps, None)
    n2 = _vector_norm(x2, 2.0, dim, True).clamp(eps, None)
    return ((x1 / n1) * (x2 / n2)).sum(axis=dim)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Normalise (N, C, *) over each of ``num_groups`` groups of channels (biased variance), then
    scale and shift each channel; PyTorch's ``F.group_norm``."""
    x = as_tensor(input, "group_norm")
    if x.ndim < 2:
        raise ValueError(f"group_norm: expected an input of at least 2 dims (N, C, *), got shape {x.shape}")
    n, c = x.shape[0], x.shape[1]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"group_norm: {c} channels cannot be split into {num_groups} groups (input {x.shape})")
    g = x.reshape(n, num_groups, -1)
    mu = g.mean(axis=-1, keepdims=True)
    d = g - mu
    var = (d * d).mean(axis=-1, keepdims=True)
    y = (d / (var + eps).sqrt()).reshape(*x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(*per_channel)
    if bias is not None:
        y = y + bias.reshape(*per_channel)
    return y


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """``input / sqrt(mean(input^2) + eps) * weight`` over the trailing ``normalized_shape`` dims;
    ``eps=None`` is the dtype's machine epsilon (PyTorch's ``F.rms_norm``)."""
    x = as_tensor(input, "rms_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape):
        raise ValueError(
            f"rms_norm: input of shape {x.shape} does not end with normalized_shape {tuple(normalized_shape)}"
        )
    if eps is None:
        eps = float(np.finfo(x.data.dtype).eps)
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x / ((x * x).mean(axis=axes, keepdims=True) + eps).sqrt()
    if weight is not None:
        y = y * weight
    return y


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,  # noqa: PLR0913
                                 is_causal: bool = False, scale=None):
    """``softmax(q @ k^T * scale + mask) @ v`` over (..., L, E), (..., S, E), (..., S, Ev), PyTorch's
    ``F.scaled_dot_product_attention``: ``scale`` defaults to ``1 / sqrt(E)``; a bool ``attn_mask``
    keeps the scores where it is True, a float one is added; ``is_causal`` keeps ``j <= i`` (it
    cannot be combined with ``attn_mask``); ``dropout_p`` drops attention weights (always applied,
    as PyTorch does: pass 0.0 in evaluation).

    >>> F.scaled_dot_product_attention(mg.ones(2, 3, 4), mg.ones(2, 5, 4), mg.ones(2, 5, 6)).shape
    (2, 3, 6)
    """
    q = as_tensor(query, "scaled_dot_product_attention")
    k = as_tensor(key, "scaled_dot_product_attention")
    v = as_tensor(value, "scaled_dot_product_attention")
    L, S = q.shape[-2], k.shape[-2]
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: query {q.shape}, key {k.shape} and value {v.shape} "
                         "do not fit (query and key share the last dim, key and value the one before)")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q * scale) @ k.swapaxes(-2, -1)  # the query scaled: (L, E), not the (L, S) scores
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: pass attn_mask or is_causal=True, not both")
        attn_mask = np.tril(np.ones((L, S), dtype=bool))
    if attn_mask is not None:
        m = attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask
        if not hasattr(m, "dtype"):
            m = np.asarray(m)
        if m.dtype == np.bool_:  # as PyTorch: added as a bias of 0 and -inf (one addition, the gradient passes)
            keep = attn_mask if isinstance(attn_mask, Tensor) else Tensor(m, device=scores.device)
            scores = scores + _ew.where(keep, 0.0, -math.inf).astype(scores.dtype)
        else:
            scores = scores + attn_mask
    w = scores.softmax(dim=-1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return w @ v


# -- bags of embeddings ----------------------------------------------------------------------------

from .. import backend as _be  # noqa: E402

__all__ += ["embedding_bag"]


def _bags(idx, offsets, include_last_offset, op):
    """Host arrays (bag start, bag end) for 1-D indices and ``offsets``."""
    off = _be.to_numpy(offsets.data if isinstance(offsets, Tensor) else np.asarray(offsets))
    if off.ndim != 1 or off.dtype.kind not in "iu":
        raise ValueError(f"{op}: offsets must be a 1-D integer tensor, got {off.dtype} of shape {off.shape}")
    n = idx.shape[0]
    if off.size and int(off[0]) != 0:
        raise ValueError(f"{op}: offsets[0] must be 0 (the first bag starts at the first index), got {int(off[0])}")
    if np.any(np.diff(off) < 0) or (off.size and int(off[-1]) > n):
        raise ValueError(f"{op}: offsets must be non-decreasing and at most {n} (the number of indices), got {off}")
    if include_last_offset:
        if off.size < 1:
            raise ValueError(f"{op}: include_last_offset=True needs at least one offset")
        return off[:-1].astype(np.int64), off[1:].astype(np.int64)
    return off.astype(np.int64), np.append(off[1:], n).astype(np.int64)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2.0,  # noqa: A002, PLR0913
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx=None):
    """Sums, means or maxima of bags of ``weight``'s rows, PyTorch's ``F.embedding_bag``.

    Args:
        input: (B, L) integer indices, each row one bag; or 1-D indices cut into bags by
        offsets: 1-D, the start of each bag (``offsets[0] == 0``); with ``include_last_offset``
            the last entry is the end of the last bag.
        weight: (num_embeddings, embedding_dim).
        mode: ``"sum"``, ``"mean"`` or ``"max"`` over each bag; an empty bag gives zeros.
        per_sample_weights: like ``input`` (float), each row's weight (``mode="sum"`` only).
        padding_idx: entries equal to it are left out of their bag (and of a mean's count).

    Returns:
        (B, embedding_dim). Gradients reach ``weight`` (and ``per_sample_weights``).

    >>> F.embedding_bag(mg.tensor([0, 2, 1]), mg.eye(3), mg.tensor([0, 2]), mode="sum").tolist()
    [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    op = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{op}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(f"{op}: max_norm, scale_grad_by_freq and sparse=True are not implemented")
    weight = as_tensor(weight, op)
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    num, dim = weight.shape
    idx = _be.to_numpy(input.data if isinstance(input, Tensor) else np.asarray(input))
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: input must hold integers, got {idx.dtype}")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise IndexError(f"{op}: index {bad} is out of range for {num} embeddings")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{op}: offsets must be None for 2-D input (each row is a bag)")
        b, length = idx.shape
        starts = np.arange(b, dtype=np.int64) * length
        ends = starts + length
        flat = idx.reshape(-1)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError(f"{op}: 1-D input needs offsets (the start of each bag)")
        starts, ends = _bags(idx, offsets, include_last_offset, op)
        flat = idx
    else:
        raise ValueError(f"{op}: input must be 1-D (with offsets) or 2-D, got shape {idx.shape}")
    if padding_idx is not None:
        padding_idx = int(padding_idx)
        if not -num <= padding_idx < num:
            raise ValueError(f"{op}: padding_idx {padding_idx} is out of range for {num} embeddings")
        padding_idx %= num
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"{op}: per_sample_weights is only supported with mode='sum' (PyTorch's rule)")
    # the bags as a padded (B, L) table of positions in ``flat``; ``keep`` marks the real entries
    lengths = ends - starts
    width = max(int(lengths.max()) if lengths.size else 0, 1)
    cols = np.arange(width)
    keep = cols[None, :] < lengths[:, None]
    pos = np.where(keep, starts[:, None] + cols[None, :], 0)
    rows = flat[pos] if flat.size else np.zeros(pos.shape, dtype=np.int64)
    if padding_idx is not None:
        keep &= rows != padding_idx
    rows = np.where(keep, rows, 0)
    count = keep.sum(axis=1)
    dt = weight.data.dtype
    e = weight[rows]                                                   # (B, L, D)
    if mode == "max":
        mask = creation.tensor(keep[:, :, None], device=weight.device)
        out = _ew.where(mask, e, -math.inf).max(axis=1)
        return _ew.where(creation.tensor((count > 0)[:, None], device=weight.device), out, 0.0)
    m = creation.tensor(keep, dtype=dt, device=weight.device)
    if per_sample_weights is not None:
        psw = as_tensor(per_sample_weights, op)
        if tuple(psw.shape) != tuple(idx.shape):
            raise ValueError(f"{op}: per_sample_weights must have the input's shape {idx.shape}, got {psw.shape}")
        m = m * psw.reshape(-1)[pos]
    out = (e * m.unsqueeze(-1)).sum(axis=1)
    if mode == "mean":
        out = out / creation.tensor(np.maximum(count, 1)[:, None], dtype=dt, device=weight.device)
    return out
