"""Losses, PyTorch's names, arguments and numbers: functions (``F.cross_entropy``, ``F.nll_loss``,
``F.mse_loss``, ``F.l1_loss``, ``F.binary_cross_entropy``, ``F.binary_cross_entropy_with_logits``,
``F.huber_loss``, ``F.smooth_l1_loss``, ``F.kl_div``, ``F.one_hot``, ``F.cosine_embedding_loss``,
``F.margin_ranking_loss``, ``F.triplet_margin_loss`` with the ``F.pairwise_distance`` it uses) and modules
(``nn.CrossEntropyLoss``, ``NLLLoss``, ``MSELoss``, ``L1Loss``, ``BCELoss``, ``BCEWithLogitsLoss``,
``HuberLoss``, ``SmoothL1Loss``, ``KLDivLoss``, ``CosineEmbeddingLoss``, ``MarginRankingLoss``,
``TripletMarginLoss``).

>>> loss_fn = mg.nn.CrossEntropyLoss(label_smoothing=0.1)
>>> loss = loss_fn(model(x), y)          # y: class indices, or class probabilities

The common case of ``cross_entropy``, ``nll_loss`` and ``binary_cross_entropy_with_logits``
(no ``weight``, no ignored target, no smoothing) is one fused op with its own rule; the rest are
made of recorded ops (log_softmax, indexing, where, sums), so every loss has gradients of any
order without a rule of its own.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import _batched
from .. import backend as _be
from ..ops import elementwise as _ew
from ..ops import losses as _nn
from ..ops import reduce as _red
from ..tensor import Tensor
from .module import Module
from ..creation import as_tensor

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "huber_loss", "smooth_l1_loss", "kl_div", "one_hot",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss", "HuberLoss", "SmoothL1Loss",
    "KLDivLoss",
]

_REDUCTIONS = ("mean", "sum", "none")



def _check_reduction(reduction, op, extra=()):
    if reduction not in _REDUCTIONS + tuple(extra):
        names = ", ".join(repr(r) for r in _REDUCTIONS + tuple(extra))
        raise ValueError(f"{op}: reduction must be one of {names}, got {reduction!r}")


def _reduce(v, reduction):
    if reduction == "mean":
        return v.mean()
    if reduction == "sum":
        return v.sum()
    return v


def _like(y, x, op, what="target"):
    """``y`` as a Tensor of ``x``'s shape and dtype (a constant unless it is a Tensor already)."""
    y = y if isinstance(y, Tensor) else Tensor(y, dtype=x.dtype)
    if tuple(y.shape) != tuple(x.shape):
        raise ValueError(f"{op}: input of shape {x.shape} and {what} of shape {y.shape} differ; "
                         "reshape one so they match")
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _const(w, x, op, name, shape):
    """A weight (Tensor or array) as a backend array of ``x``'s dtype, checked against ``shape``."""
    a = w.data if isinstance(w, Tensor) else w
    if not hasattr(a, "shape"):
        a = np.asarray(a)
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} must have shape {tuple(shape)}, got {tuple(a.shape)}")
    return a.astype(x.data.dtype, copy=False)


# -- class targets ----------------------------------------------------------------------------


_UNSIGNED = {k: np.dtype(f"u{k}") for k in (1, 2, 4, 8)}


def _targets(target, n, c, op, xd, ignore_index=None):
    """Integer class indices as a backend int array on ``xd``'s device, checked against ``c``
    classes (entries equal to ``ignore_index`` are exempt)."""
    td = target.data if isinstance(target, Tensor) else target
    if td.__class__ is not np.ndarray and isinstance(td, (list, tuple, numbers.Integral)):
        td = np.asarray(td)
    if not hasattr(td, "dtype") or td.dtype.kind not in "iu":
        kind = getattr(td, "dtype", type(td).__name__)
        raise TypeError(
            f"{op}: target must hold integer class indices, got {kind}; class probabilities go to "
            "cross_entropy (a float target of the input's shape), or convert labels with .astype(mg.int64)"
        )
    if tuple(td.shape) != (n,):
        raise ValueError(f"{op}: input of shape {tuple(xd.shape)} needs a target of shape ({n},), got {tuple(td.shape)}")
    if _batched.is_batched(td):  # vmap: each element's targets (checked all at once below)
        pass
    elif xd.__class__ is np.ndarray or _be.array_module(xd) is np:
        td = np.asarray(td)
    elif not _be.is_cupy_array(td):
        td = _be.to_device(np.asarray(td), _be.device_of(xd))  # a host list or array, moved explicitly
    if not n:
        return td
    # one pass: viewed as unsigned integers, negative targets are huge too
    every = _batched.innermost(td)
    big = every.view(_UNSIGNED[td.dtype.itemsize]) if td.dtype.kind == "i" else every
    if ignore_index is None:
        if int(big.max()) < c:
            return td
        bad = td
    else:
        bad = every[(big >= c) & (every != ignore_index)]
        if not bad.size:
            return td
    lo, hi = int(bad.min()), int(bad.max())
    ignored = "" if ignore_index is None else f", or ignore_index={ignore_index}"
    raise IndexError(f"{op}: target {lo if lo < 0 else hi} is out of bounds for {c} classes "
                     f"(valid [0, {c - 1}]{ignored})")


def _class_loss(logp, td, weight, ignore_index, reduction, label_smoothing, op):
    """PyTorch's nll_loss (with weight and ignore_index) of log-probabilities ``logp`` (N, C), and
    its label-smoothing term, made of recorded ops."""
    n, c = logp.shape
    xd = logp.data
    xp = _be.array_module(xd)
    ignored = td == ignore_index
    safe = xp.where(ignored, 0, td)
    picked = logp[xp.arange(n), safe]
    if weight is None:
        w = (~ignored).astype(xd.dtype)
    else:
        wd = _const(weight, logp, op, "weight", (c,))
        w = xp.where(ignored, 0, wd[safe])
    nll = _ew.where(ignored, 0.0, picked * -w)
    total = w.sum()
    if reduction == "mean":
        nll = nll.sum() / total
    elif reduction == "sum":
        nll = nll.sum()
    if not label_smoothing:
        return nll
    smooth = -(logp if weight is None else logp * wd).sum(axis=1)
    smooth = _ew.where(ignored, 0.0, smooth)
    if reduction == "mean":
        smooth = smooth.sum() / total
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / c)


def _soft_loss(logp, target, weight, reduction, label_smoothing, op):
    """Cross-entropy against class probabilities (N, C), as PyTorch: the mean divides by N."""
    n, c = logp.shape
    y = _like(target, logp, op)
    if label_smoothing:
        y = y * (1.0 - label_smoothing) + label_smoothing / c
    prod = logp * y
    if weight is not None:
        prod = prod * _const(weight, logp, op, "weight", (c,))
    if reduction == "none":
        return -prod.sum(axis=1)
    s = -prod.sum()
    return s / n if reduction == "mean" else s


def _class_last(x, target, op, soft):
    """(N, C, d1, ...) input -> (N * d1 * ..., C) and its target flattened to match, plus the
    shape a 'none' result takes back."""
    c = x.shape[1]
    rest = tuple(x.shape[2:])
    perm = (0,) + tuple(range(2, x.ndim)) + (1,)
    xt = x.permute(*perm).reshape(-1, c)
    t = target if isinstance(target, Tensor) else Tensor(np.asarray(target)) if not _be.is_cupy_array(target) \
        else Tensor(target)
    want = tuple(x.shape) if soft else (x.shape[0],) + rest
    if tuple(t.shape) != want:
        raise ValueError(f"{op}: input of shape {x.shape} needs a target of shape {want}, got {tuple(t.shape)}")
    t = t.permute(*perm).reshape(-1, c) if soft else t.reshape(-1)
    return xt, t, (x.shape[0],) + rest


def _is_soft(target, x):
    """Whether ``target`` holds class probabilities: floats of the input's shape."""
    if isinstance(target, (list, tuple)):
        target = np.asarray(target)
    d = getattr(target, "dtype", None)
    return d is not None and np.dtype(d).kind == "f" and tuple(target.shape) == tuple(x.shape)


def _check_smoothing(label_smoothing, op):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")


def cross_entropy(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean",  # noqa: A002
                  label_smoothing: float = 0.0):
    """Softmax cross-entropy between logits and targets, PyTorch's ``F.cross_entropy``.

    Args:
        input: (N, C) logits; (C,) for one sample; (N, C, d1, ...) with the classes in dim 1.
        target: class indices (N,) (or (N, d1, ...)): ints in [0, C) or ``ignore_index``;
            or class probabilities of the input's shape (a float target).
        weight: (C,) per-class weights (a rescaling, as PyTorch's; the mean divides by the
            weights of the targets).
        ignore_index: targets with this value add nothing and are not counted in the mean.
        reduction: 'mean' (default), 'sum' or 'none' (per-sample losses).
        label_smoothing: in [0, 1]: the target mixes ``1 - label_smoothing`` of itself with a
            uniform ``label_smoothing / C``.

    Stable for logits of any size (±1000 gives finite losses and gradients). Without weight,
    smoothing or an ignored target, one fused op.

    >>> F.cross_entropy(mg.tensor([[1000.0, -1000.0]]), [0]).item()
    0.0
    """
    op = "cross_entropy"
    _check_reduction(reduction, op)
    _check_smoothing(label_smoothing, op)
    x = as_tensor(input, op)
    if x.data.dtype.kind != "f":
        raise TypeError(f"cross_entropy: input must be floating-point logits, got dtype {x.data.dtype}")
    soft = _is_soft(target, x)
    if x.ndim == 1:
        if soft:
            t = _like(target, x, op).reshape(1, -1)
        elif isinstance(target, Tensor):
            t = target.reshape(1)  # a view: it keeps the target's version counter
        else:
            t = np.asarray(target).reshape(1) if not _be.is_cupy_array(target) else target.reshape(1)
        out = cross_entropy(x.reshape(1, -1), t, weight, ignore_index, reduction, label_smoothing)
        return out.reshape(()) if reduction == "none" else out
    if x.ndim > 2:
        xt, t, back = _class_last(x, target, op, soft)
        out = cross_entropy(xt, t, weight, ignore_index, reduction, label_smoothing)
        return out.reshape(back) if reduction == "none" else out
    if x.ndim != 2:
        raise ValueError(f"cross_entropy: input must be (N, C) logits, got shape {x.shape}")
    n, c = x.shape
    if soft:
        return _soft_loss(_red.log_softmax(x, 1), target, weight, reduction, label_smoothing, op)
    td = _targets(target, n, c, op, x.data, ignore_index)
    if weight is None and not label_smoothing and not (n and bool((_batched.innermost(td) == ignore_index).any())):
        # a target Tensor is saved itself by the fused op: changing it in place before backward is refused
        return _nn.cross_entropy_op(x, target if isinstance(target, Tensor) else td, reduction)
    return _class_loss(_red.log_softmax(x, 1), td, weight, ignore_index, reduction, label_smoothing, op)


def nll_loss(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean"):  # noqa: A002
    """Negative log-likelihood of class targets given log-probabilities, PyTorch's ``F.nll_loss``.

    Args:
        input: (N, C) log-probabilities (``log_softmax``'s); (C,) or (N, C, d1, ...) as in
            ``cross_entropy``.
        target: class indices in [0, C), or ``ignore_index``.
        weight, ignore_index, reduction: as in ``cross_entropy``.

    >>> F.nll_loss(F.log_softmax(mg.zeros(1, 2)), [1]).item()  # log 2
    0.6931...
    """
    op = "nll_loss"
    _check_reduction(reduction, op)
    x = as_tensor(input, op)
    if x.ndim == 1:
        t = target.reshape(1) if isinstance(target, Tensor) else np.asarray(target).reshape(1)
        out = nll_loss(x.reshape(1, -1), t, weight, ignore_index, reduction)
        return out.reshape(()) if reduction == "none" else out
    if x.ndim > 2:
        xt, t, back = _class_last(x, target, op, False)
        out = nll_loss(xt, t, weight, ignore_index, reduction)
        return out.reshape(back) if reduction == "none" else out
    if x.ndim != 2:
        raise ValueError(f"nll_loss: input must be (N, C) log-probabilities, got shape {x.shape}")
    n, c = x.shape
    td = _targets(target, n, c, op, x.data, ignore_index)
    if weight is None and not (n and bool((td == ignore_index).any())):
        return _nn.nll_loss_op(x, target if isinstance(target, Tensor) else td, reduction)
    return _class_loss(x, td, weight, ignore_index, reduction, 0.0, op)


# -- regression losses -------------------------------------------------------------------------


def mse_loss(input, target, reduction: str = "mean"):  # noqa: A002
    """Mean squared error ``(input - target) ** 2``, reduced by 'mean', 'sum' or 'none'.

    Shapes must match exactly (broadcasting a target is almost always a bug).

    >>> F.mse_loss(mg.tensor([1.0, 2.0]), mg.tensor([0.0, 0.0])).item()
    2.5
    """
    _check_reduction(reduction, "mse_loss")
    x = as_tensor(input, "mse_loss")
    d = x - _like(target, x, "mse_loss")
    return _reduce(d * d, reduction)


def l1_loss(input, target, reduction: str = "mean"):  # noqa: A002
    """Mean absolute error ``|input - target|``, PyTorch's ``F.l1_loss``.

    >>> F.l1_loss(mg.tensor([1.0, -2.0]), mg.tensor([0.0, 0.0])).item()
    1.5
    """
    _check_reduction(reduction, "l1_loss")
    x = as_tensor(input, "l1_loss")
    return _reduce((x - _like(target, x, "l1_loss")).abs(), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0):  # noqa: A002
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - delta / 2)``; PyTorch's ``F.huber_loss``.

    >>> F.huber_loss(mg.tensor([0.5, 3.0]), mg.tensor([0.0, 0.0])).item()  # (0.125 + 2.5) / 2
    1.3125
    """
    _check_reduction(reduction, "huber_loss")
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    x = as_tensor(input, "huber_loss")
    z = (x - _like(target, x, "huber_loss")).abs()
    return _reduce(_ew.where(z < delta, (z * z) * 0.5, (z - 0.5 * delta) * delta), reduction)


def smooth_l1_loss(input, target, reduction: str = "mean", beta: float = 1.0):  # noqa: A002
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (``beta=0``: the L1 loss);
    PyTorch's ``F.smooth_l1_loss``.

    >>> F.smooth_l1_loss(mg.tensor([0.5, 3.0]), mg.tensor([0.0, 0.0])).item()
    1.3125
    """
    _check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    x = as_tensor(input, "smooth_l1_loss")
    z = (x - _like(target, x, "smooth_l1_loss")).abs()
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(_ew.where(z < beta, (z * z) * (0.5 / beta), z - 0.5 * beta), reduction)


# -- probabilities --------------------------------------------------------------------------------


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean"):  # noqa: A002
    """Binary cross-entropy of probabilities ``input`` in [0, 1] against ``target``, PyTorch's
    ``F.binary_cross_entropy``: ``-w (y log x + (1 - y) log(1 - x))``, each log clamped to >= -100
    as PyTorch clamps it. For logits use ``binary_cross_entropy_with_logits`` (stable).

    >>> round(F.binary_cross_entropy(mg.tensor([0.5]), mg.tensor([1.0])).item(), 4)
    0.6931
    """
    op = "binary_cross_entropy"
    _check_reduction(reduction, op)
    x = as_tensor(input, op)
    y = _like(target, x, op)
    xd = x.data
    if xd.size and (bool((xd < 0).any()) or bool((xd > 1).any())):
        raise ValueError(f"{op}: input must hold probabilities in [0, 1], got values in "
                         f"[{float(xd.min())}, {float(xd.max())}]; for logits use binary_cross_entropy_with_logits")
    with np.errstate(divide="ignore"):  # log 0 = -inf, clamped to -100 just below
        log_x = _ew.maximum(x.log(), -100.0)
        log_1mx = _ew.maximum((-x).log1p(), -100.0)
    loss = (y - 1.0) * log_1mx - y * log_x
    if weight is not None:
        loss = loss * _weight_like(weight, x, op, "weight")
    return _reduce(loss, reduction)


def _weight_like(w, x, op, name):
    """A weight that broadcasts against the input: a Tensor stays one (its gradient flows), an
    array becomes a constant of the input's dtype."""
    if isinstance(w, Tensor):
        return w if w.dtype == x.dtype else w.astype(x.dtype)
    return _const(w, x, op, name, None)


def _softplus_stable(u):
    """``log(1 + exp(u))`` for any ``u``: ``log1p(exp(-|u|)) + max(u, 0)`` with the kink's
    derivative right (1/2 at 0) and no exp overflow in either branch."""
    pos = u > 0
    return _ew.where(pos, -u, u).exp().log1p() + _ew.where(pos, u, 0.0)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction: str = "mean",  # noqa: A002
                                     pos_weight=None):
    """Sigmoid + binary cross-entropy in one stable op: ``softplus(x) - x * y``; PyTorch's
    ``F.binary_cross_entropy_with_logits``.

    Args:
        input: logits of any shape.
        target: probabilities in [0, 1] of the same shape.
        weight: a rescaling of each element's loss (broadcast against the input).
        reduction: 'mean' (default), 'sum' or 'none'.
        pos_weight: weight of the positive term, one per class (broadcast along the last dim):
            ``-(pos_weight y log s(x) + (1 - y) log(1 - s(x)))``.

    >>> round(F.binary_cross_entropy_with_logits(mg.tensor([0.0]), mg.tensor([1.0])).item(), 4)
    0.6931
    """
    op = "binary_cross_entropy_with_logits"
    _check_reduction(reduction, op)
    x = as_tensor(input, op)
    y = _like(target, x, op)
    if weight is None and pos_weight is None:
        return _nn.bce_op(x, y, reduction)
    sp = _softplus_stable(-x)  # -log sigmoid(x)
    if pos_weight is None:
        loss = (1.0 - y) * x + sp
    else:
        pw = _weight_like(pos_weight, x, op, "pos_weight")
        loss = (1.0 - y) * x + ((pw - 1.0) * y + 1.0) * sp
    if weight is not None:
        loss = loss * _weight_like(weight, x, op, "weight")
    return _reduce(loss, reduction)


def kl_div(input, target, reduction: str = "mean", log_target: bool = False):  # noqa: A002
    """Kullback-Leibler divergence, PyTorch's ``F.kl_div``: ``input`` holds log-probabilities, the
    pointwise loss is ``target (log target - input)`` (0 where ``target`` is 0), or
    ``exp(target) (target - input)`` with ``log_target=True``.

    ``reduction='batchmean'`` divides the sum by the batch size (the KL divergence proper);
    'mean' (PyTorch's default) divides by the number of elements.

    >>> F.kl_div(mg.tensor([0.0]).log(), mg.tensor([0.0]), reduction="sum").item()
    0.0
    """
    op = "kl_div"
    _check_reduction(reduction, op, ("batchmean",))
    x = as_tensor(input, op)
    y = _like(target, x, op)
    if log_target:
        loss = y.exp() * (y - x)
    else:
        pos = y > 0
        ylogy = _ew.where(pos, y * _ew.where(pos, y, 1.0).log(), 0.0)  # xlogy(y, y): 0 at 0
        loss = ylogy - y * x
    if reduction == "batchmean":
        return loss.sum() / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """Class indices -> one-hot rows, PyTorch's ``F.one_hot``: an int64 tensor of shape
    ``tensor.shape + (num_classes,)``; ``num_classes=-1`` takes ``max + 1``. Not differentiable.

    >>> F.one_hot(mg.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    td = tensor.data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if td.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected integer class indices, got dtype {td.dtype} (convert with .astype(mg.int64))")
    xp = _be.array_module(td)
    if num_classes == -1:
        if not td.size:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; give num_classes")
        num_classes = int(td.max()) + 1
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be a positive int or -1, got {num_classes!r}")
    if td.size and (int(td.min()) < 0 or int(td.max()) >= num_classes):
        lo, hi = int(td.min()), int(td.max())
        raise IndexError(f"one_hot: class {lo if lo < 0 else hi} is out of range for {num_classes} classes "
                         f"(valid [0, {num_classes - 1}])")
    out = (td[..., None] == xp.arange(num_classes)).astype(np.int64)
    return Tensor(out)


# -- modules ------------------------------------------------------------------------------------


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(reduction, type(self).__name__, ("batchmean",) if isinstance(self, KLDivLoss) else ())
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


def _buffer(w, name, layer):
    if w is None or isinstance(w, Tensor):
        return w
    if hasattr(w, "shape") or isinstance(w, (list, tuple)):
        return Tensor(w)
    raise TypeError(f"{layer}: {name} must be a Tensor (or array), got {type(w).__name__}")


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy`` as a module: ``nn.CrossEntropyLoss(weight=None, ignore_index=-100,
    reduction="mean", label_smoothing=0.0)``; ``loss_fn(logits, target)``.

    >>> loss_fn = mg.nn.CrossEntropyLoss()
    >>> loss_fn(mg.zeros(2, 3), mg.tensor([0, 2])).item()  # log 3
    1.0986...
    """

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        _check_smoothing(label_smoothing, "CrossEntropyLoss")
        self.register_buffer("weight", _buffer(weight, "weight", "CrossEntropyLoss"))
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input, target):  # noqa: A002
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """``F.nll_loss`` as a module: ``nn.NLLLoss(weight=None, ignore_index=-100, reduction="mean")``."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", _buffer(weight, "weight", "NLLLoss"))
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):  # noqa: A002
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """``F.mse_loss`` as a module: ``nn.MSELoss(reduction="mean")``."""

    def forward(self, input, target):  # noqa: A002
        return mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """``F.l1_loss`` as a module: ``nn.L1Loss(reduction="mean")``."""

    def forward(self, input, target):  # noqa: A002
        return l1_loss(input, target, self.reduction)


class BCELoss(_Loss):
    """``F.binary_cross_entropy`` as a module: ``nn.BCELoss(weight=None, reduction="mean")``."""

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", _buffer(weight, "weight", "BCELoss"))

    def forward(self, input, target):  # noqa: A002
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits`` as a module:
    ``nn.BCEWithLogitsLoss(weight=None, reduction="mean", pos_weight=None)``."""

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", _buffer(weight, "weight", "BCEWithLogitsLoss"))
        self.register_buffer("pos_weight", _buffer(pos_weight, "pos_weight", "BCEWithLogitsLoss"))

    def forward(self, input, target):  # noqa: A002
        return binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class HuberLoss(_Loss):
    """``F.huber_loss`` as a module: ``nn.HuberLoss(reduction="mean", delta=1.0)``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        if not delta > 0:
            raise ValueError(f"HuberLoss: delta must be > 0, got {delta}")
        self.delta = float(delta)

    def forward(self, input, target):  # noqa: A002
        return huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss`` as a module: ``nn.SmoothL1Loss(reduction="mean", beta=1.0)``."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
        self.beta = float(beta)

    def forward(self, input, target):  # noqa: A002
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    """``F.kl_div`` as a module: ``nn.KLDivLoss(reduction="mean", log_target=False)``; the input
    holds log-probabilities. ``reduction="batchmean"`` gives the KL divergence proper."""

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction)
        self.log_target = bool(log_target)

    def forward(self, input, target):  # noqa: A002
        return kl_div(input, target, self.reduction, self.log_target)


# -- PyTorch's embedding and ranking losses: cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss --

__all__ += ["pairwise_distance", "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
            "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss"]


def _sign_target(target, x, op):
    """A +1/-1 target as a Tensor of ``x``'s dtype (a constant unless it is a Tensor already)."""
    t = target if isinstance(target, Tensor) else Tensor(np.asarray(target), device=x.device)
    return t if t.dtype == x.dtype else t.astype(x.dtype)


def _vector_norm(x, p, dim, keepdim):
    """The ``p``-norm of ``x`` along ``dim`` (an int or a tuple), PyTorch's ``linalg.vector_norm``.

    A zero vector has norm 0 and gradient 0 there (PyTorch's subgradient): the root is taken of
    ``where(s > 0, s, 1)``, so no ``0 * inf`` turns the gradient into NaN."""
    p = float(p)
    if p == 1.0:
        return x.abs().sum(axis=dim, keepdims=keepdim)
    if p == float("inf"):
        return x.abs().max(axis=dim, keepdims=keepdim)
    if p <= 0:
        raise ValueError(f"norm: p must be positive (or inf), got {p}")
    s = (x * x).sum(axis=dim, keepdims=keepdim) if p == 2.0 else (x.abs() ** p).sum(axis=dim, keepdims=keepdim)
    pos = s > 0
    safe = _ew.where(pos, s, 1.0)
    root = safe.sqrt() if p == 2.0 else safe ** (1.0 / p)
    return _ew.where(pos, root, 0.0)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``||x1 - x2 + eps||_p`` along the last dim, PyTorch's ``F.pairwise_distance``.

    >>> round(F.pairwise_distance(mg.tensor([[0.0, 0.0]]), mg.tensor([[3.0, 4.0]])).item(), 4)
    5.0
    """
    x1, x2 = as_tensor(x1, "pairwise_distance"), as_tensor(x2, "pairwise_distance")
    d = x1 - x2 + eps
    return _vector_norm(d, p, d.ndim - 1 if d.ndim else None, keepdim)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: str = "mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``
    (cosine along the last dim, PyTorch's formula with its 1e-12 in each squared norm);
    PyTorch's ``F.cosine_embedding_loss``.

    >>> F.cosine_embedding_loss(mg.tensor([[1.0, 0.0]]), mg.tensor([[1.0, 0.0]]), mg.tensor([1.0])).item()
    0.0
    """
    _check_reduction(reduction, "cosine_embedding_loss")
    x1, x2 = as_tensor(input1, "cosine_embedding_loss"), as_tensor(input2, "cosine_embedding_loss")
    if x1.ndim not in (1, 2) or tuple(x1.shape) != tuple(x2.shape):
        raise ValueError(f"cosine_embedding_loss: inputs must be 1-D or 2-D of one shape, got {x1.shape} and {x2.shape}")
    t = _sign_target(target, x1, "cosine_embedding_loss")
    if tuple(t.shape) != tuple(x1.shape[:-1]):
        raise ValueError(f"cosine_embedding_loss: target of shape {t.shape} does not fit inputs of shape {x1.shape}")
    dim = x1.ndim - 1
    eps = 1e-12
    prod = (x1 * x2).sum(axis=dim)
    cos = prod / (((x1 * x1).sum(axis=dim) + eps) * ((x2 * x2).sum(axis=dim) + eps)).sqrt()
    pos = _ew.where(t == 1, 1.0 - cos, 0.0)
    neg = _ew.where(t == -1, (cos - margin).clamp(0.0, None), 0.0)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: str = "mean"):
    """``max(0, -target * (x1 - x2) + margin)``, PyTorch's ``F.margin_ranking_loss``.

    >>> F.margin_ranking_loss(mg.tensor([2.0]), mg.tensor([1.0]), mg.tensor([1.0])).item()
    0.0
    """
    _check_reduction(reduction, "margin_ranking_loss")
    x1, x2 = as_tensor(input1, "margin_ranking_loss"), as_tensor(input2, "margin_ranking_loss")
    t = _sign_target(target, x1, "margin_ranking_loss")
    if not (x1.ndim == x2.ndim == t.ndim):
        raise ValueError(f"margin_ranking_loss: input1 {x1.shape}, input2 {x2.shape} and target {t.shape} "
                         "must have the same number of dims")
    return _reduce((-t * (x1 - x2) + margin).clamp(0.0, None), reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,  # noqa: PLR0913
                        eps: float = 1e-6, swap: bool = False, reduction: str = "mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise p-distance (``swap``: ``d(a, n)``
    is replaced by ``d(p, n)`` where that is smaller); PyTorch's ``F.triplet_margin_loss``."""
    _check_reduction(reduction, "triplet_margin_loss")
    a = as_tensor(anchor, "triplet_margin_loss")
    pos, neg = as_tensor(positive, "triplet_margin_loss"), as_tensor(negative, "triplet_margin_loss")
    if not (a.ndim == pos.ndim == neg.ndim) or a.ndim not in (1, 2):
        raise ValueError(f"triplet_margin_loss: anchor {a.shape}, positive {pos.shape} and negative {neg.shape} "
                         "must all be 1-D or all 2-D")
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = _ew.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(0.0, None), reduction)


class CosineEmbeddingLoss(_Loss):
    """``F.cosine_embedding_loss`` as a module: ``nn.CosineEmbeddingLoss(margin=0.0, reduction="mean")``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = float(margin)

    def forward(self, input1, input2, target):
        return cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class MarginRankingLoss(_Loss):
    """``F.margin_ranking_loss`` as a module: ``nn.MarginRankingLoss(margin=0.0, reduction="mean")``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean"):
        super().__init__(reduction)
        self.margin = float(margin)

    def forward(self, input1, input2, target):
        return margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """``F.triplet_margin_loss`` as a module: ``nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6,
    swap=False, reduction="mean")``; ``loss_fn(anchor, positive, negative)``."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = float(margin), float(p), float(eps), bool(swap)

    def forward(self, anchor, positive, negative):
        return triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                   self.reduction)
