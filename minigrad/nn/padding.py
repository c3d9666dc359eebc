"""Padding, functional form: ``pad`` (PyTorch's ``F.pad``: constant, reflect, replicate) and ``pad_widths`` (one
``(lo, hi)`` per dim, as convolution and pooling pad), both running the ``pad_constant`` op, whose
gradient is the interior of the incoming one (a view).

``minigrad.nn.functional`` exports ``pad``.
"""
from __future__ import annotations

import numpy as np

from .. import _batched
from ..engine import run_op
from ..creation import as_tensor
from ..ops._registry import randn as _r, Sample, composite, defop

__all__ = ["pad"]


def _inner(shape, widths):
    """Where the input sits inside its padding: one slice per dim."""
    return tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape, widths, strict=True))


def _padded(xp, x, widths, value):
    out = xp.full(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths, strict=True)), value, dtype=x.dtype)
    out[_inner(x.shape, widths)] = x
    return out


# constant padding; its gradient is the slice of the interior (a view)
PAD_CONSTANT = defop("pad_constant", _padded,
                     lambda ctx, g, widths, value: (g[_inner(ctx.meta[0][0], widths)],), kind="other",
                     batch=_batched.fresh_buffers,
                     # affine: the tangent is padded with zeros, whatever the value
                     jvp=lambda ctx, t, widths, value: ctx.xp.run_op(PAD_CONSTANT, t, widths=widths, value=0.0),
                     samples=lambda rng: [Sample(_r(rng, 2, 3), widths=((0, 0), (1, 2)), value=0.5),
                                          Sample(_r(rng, 2, 2, 3), widths=((1, 0), (0, 0), (2, 1)), value=0.0)], complex=True)


# F.pad's registry name is functional_pad: "pad" is np.pad's (ops/join.py)
@composite("functional_pad", samples=lambda rng: [Sample(_r(rng, 2, 3), (1, 2))], export=False)
def pad(x, pad, mode: str = "constant", value: float = 0.0):  # noqa: A002 - PyTorch's name
    """Pad ``x`` with a constant, PyTorch's ``F.pad`` convention.

    Args:
        x: a Tensor.
        pad: ``(left, right)`` pairs starting from the LAST dim: ``(l, r)`` pads the last dim,
            ``(l, r, t, b)`` the last two, and so on. Entries must be >= 0.
        mode: ``"constant"`` (``value``), ``"reflect"`` (mirrored, the edge not repeated) or
            ``"replicate"`` (the edge repeated).
        value: the fill value (``"constant"``).

    Returns:
        a new Tensor; its gradient is the interior of the incoming one.

    >>> F.pad(mg.ones(2, 3), (1, 1)).shape
    (2, 5)
    """
    x = as_tensor(x, "pad")
    if mode not in ("constant", "reflect", "replicate"):
        raise NotImplementedError(f"pad: mode must be 'constant', 'reflect' or 'replicate', got {mode!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: {pad} must hold (left, right) pairs for at most {x.ndim} dims (input shape {x.shape})")
    if any(p < 0 for p in pad):
        raise ValueError(f"pad: negative padding {pad} is not supported")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        return pad_widths(x, tuple(widths), value)
    for d, (lo, hi) in enumerate(widths):  # reflect / replicate: each padded dim read at mirrored or clamped positions
        if lo or hi:
            x = x[(slice(None),) * d + (_edge_positions(x.shape[d], lo, hi, mode, x.shape),)]
    return x


def _edge_positions(n, lo, hi, mode, shape):
    """The source position of each of ``lo + n + hi`` outputs along a dim of size ``n``: mirrored
    without repeating the edge (``reflect``, PyTorch's rule: each width below ``n``), or clamped
    (``replicate``); a gather, so the gradient adds up where a position is read twice."""
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if lo >= n or hi >= n:
        raise ValueError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the dim it pads (size {n}, input "
                         f"shape {tuple(shape)})")
    i = np.abs(i)
    return np.where(i > n - 1, 2 * (n - 1) - i, i)


def pad_widths(x, widths, value=0.0):
    """``x`` padded with ``value``: ``widths`` holds one ``(lo, hi)`` per dim (conv and pooling pad
    this way); ``x`` itself when every width is 0."""
    if all(lo == 0 and hi == 0 for lo, hi in widths):
        return x
    return run_op(PAD_CONSTANT, x, widths=tuple(widths), value=value)
