"""PyTorch's ``F.unfold`` / ``F.fold`` (im2col and its adjoint) and ``F.gumbel_softmax``.

``unfold`` is a view of sliding windows (``ops/windows.py``'s ``windows``) of the zero-padded input,
its blocks laid out as PyTorch's: ``(N, C * kh * kw, L)``, channel slowest, then the kernel's rows and
columns; ``L`` the blocks, row-major. ``fold`` is its adjoint: the blocks added back where they lie
(``overlap_add``, the windows' own gradient), the padding cut off; overlapping blocks sum. Both
take a batched (4-D / 3-D) or an unbatched input, as PyTorch does. ``gumbel_softmax`` draws its
Gumbel noise from ``mg.manual_seed``'s generator (``creation.rand_like``)."""
from __future__ import annotations

import numbers

import numpy as np

from .. import creation
from ..creation import as_tensor
from ..engine import run_op
from ..ops import elementwise as _ew
from ..ops.indexing import scatter
from ..ops.join import pad as _pad
from ..ops.reduce import argmax
from ..ops.shape import permute, reshape
from ..ops.windows import OVERLAP_ADD, _window_spec, windows
from .activations import softmax


def _pair(v, what, op):
    t = (v, v) if isinstance(v, numbers.Integral) else tuple(v)
    if len(t) != 2 or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in t):
        raise TypeError(f"{op}: {what} must be an int or a pair of ints, got {v!r}")
    return tuple(int(k) for k in t)


def _geometry(op, kernel_size, dilation, padding, stride):
    k, d = _pair(kernel_size, "kernel_size", op), _pair(dilation, "dilation", op)
    p, s = _pair(padding, "padding", op), _pair(stride, "stride", op)
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise ValueError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
                         f"kernel_size={k}, dilation={d}, padding={p}, stride={s}")
    return k, d, p, s


def _blocks(op, hw, k, d, p, s):
    out = tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(hw, k, d, p, s, strict=True))
    if min(out) < 1:
        raise ValueError(f"{op}: no block fits: spatial size {hw} padded by {p} is smaller than the kernel {k} "
                         f"dilated by {d}")
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002 - PyTorch's names
    """PyTorch's ``F.unfold`` (im2col): the sliding ``kernel_size`` blocks of a ``(N, C, H, W)`` (or
    ``(C, H, W)``) input, zero-padded by ``padding``, as ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``).

    >>> F.unfold(mg.zeros(1, 2, 4, 4), 2).shape
    (1, 8, 9)
    """
    x = as_tensor(input, "unfold")
    if x.ndim not in (3, 4):
        raise ValueError(f"unfold: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape {x.shape}")
    k, d, p, s = _geometry("unfold", kernel_size, dilation, padding, stride)
    batched = x.ndim == 4
    if not batched:
        x = reshape(x, (1,) + x.shape)
    n, c = x.shape[:2]
    oh, ow = _blocks("unfold", x.shape[2:], k, d, p, s)
    if p != (0, 0):
        x = _pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    w = windows(x, k, axes=(2, 3), step=s, dilation=d)  # (N, C, oh, ow, kh, kw)
    out = reshape(permute(w, (0, 1, 4, 5, 2, 3)), (n, c * k[0] * k[1], oh * ow))
    return out if batched else reshape(out, out.shape[1:])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """PyTorch's ``F.fold`` (col2im), ``unfold``'s adjoint: ``(N, C * kh * kw, L)`` (or
    ``(C * kh * kw, L)``) blocks summed into a ``(N, C, *output_size)`` (or ``(C, *output_size)``)
    tensor where they lie; overlapping blocks add up.

    >>> F.fold(mg.ones(1, 4, 4), (3, 3), 2)[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    x = as_tensor(input, "fold")
    if x.ndim not in (2, 3):
        raise ValueError(f"fold: input must be 2-D (C * kh * kw, L) or 3-D (N, C * kh * kw, L), got shape {x.shape}")
    size = _pair(output_size, "output_size", "fold")
    k, d, p, s = _geometry("fold", kernel_size, dilation, padding, stride)
    batched = x.ndim == 3
    if not batched:
        x = reshape(x, (1,) + x.shape)
    n, ck, length = x.shape
    if ck % (k[0] * k[1]):
        raise ValueError(f"fold: dim 1 of the input ({ck}, shape {tuple(x.shape)}) must be divisible by the "
                         f"kernel's size {k[0]} * {k[1]}")
    oh, ow = _blocks("fold", size, k, d, p, s)
    if length != oh * ow:
        raise ValueError(f"fold: the input has {length} blocks (shape {tuple(x.shape)}), but output_size {size}, "
                         f"kernel_size {k}, dilation {d}, padding {p} and stride {s} give {oh} * {ow} = {oh * ow}")
    c = ck // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    spec = _window_spec((n, c, hp, wp), k, (2, 3), s, d)
    blocks = permute(reshape(x, (n, c, k[0], k[1], oh, ow)), (0, 1, 4, 5, 2, 3))
    out = run_op(OVERLAP_ADD, blocks, spec=spec)
    out = out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return out if batched else reshape(out, out.shape[1:])


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """PyTorch's ``F.gumbel_softmax``: ``softmax((logits + g) / tau, dim)`` with ``g`` Gumbel(0, 1)
    noise drawn from ``mg.manual_seed``'s generator; ``hard=True`` gives the one-hot of its argmax in
    the forward pass and the soft sample's gradient in the backward (the straight-through
    estimator: ``y_hard - y_soft.detach() + y_soft``). ``eps`` is unused, as in PyTorch."""
    x = as_tensor(logits, "gumbel_softmax")
    if x.dtype.kind != "f":
        raise TypeError(f"gumbel_softmax: logits must be floating-point, got dtype {x.dtype} (shape {x.shape})")
    if not tau > 0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau!r}")
    u = creation.rand_like(x)
    e = -_ew.log1p(-u)  # Exponential(1), as PyTorch's exponential_(); 0 only if u is exactly 0
    g = -_ew.log(_ew.maximum(e, np.finfo(x.dtype).tiny))
    y = softmax((x + g) / tau, dim)
    if not hard:
        return y
    index = argmax(y, dim=dim, keepdim=True)
    y_hard = scatter(creation.zeros_like(y), dim, index, value=1.0)
    return y_hard - y.detach() + y
