"""Pooling, functional form: ``max_pool1d`` / ``max_pool2d``, ``avg_pool1d`` / ``avg_pool2d`` and
``adaptive_avg_pool2d`` (PyTorch's shapes, argument names and semantics).

Composed from minigrad's public operations (padding, sliding windows, indexing, means), so it
runs on every backend and gives derivatives of every order. ``max_pool2d`` picks each window's
first maximum (PyTorch's tie rule) by ``argmax`` and gathers it with advanced indexing, so the
gradient goes to exactly one element per window.

``minigrad.nn.functional`` exports these names. Each is a composite (``@composite``): the registry
test gradchecks and gradgradchecks it from its samples.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..ops import windows as _windows
from ..ops.shape import stack
from ..tensor import Tensor
from ..engine import run_op
from ..creation import as_tensor
from ..ops._registry import randn as _r, Sample, composite, defop
from ._common import ntuple
from .padding import pad_widths


def _distinct(rng, *shape):
    """A sample without ties (max pooling has a kink at a tie)."""
    return rng.permutation(math.prod(shape)).reshape(shape) * 0.1 + 0.01


def _pool_args(x, kernel_size, stride, padding, dilation, nd, op, ceil_mode):
    x = as_tensor(x, op)
    if x.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: input must be {nd + 1}-D or {nd + 2}-D (N, C, *spatial), got shape {x.shape}")
    if ceil_mode:
        raise NotImplementedError(f"{op}: ceil_mode=True is not implemented")
    ks = ntuple(kernel_size, nd, "kernel_size", op)
    stride = ks if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) else \
        ntuple(stride, nd, "stride", op)
    pads = ntuple(padding, nd, "padding", op, minimum=0)
    dilation = ntuple(dilation, nd, "dilation", op)
    for p, k in zip(pads, ks, strict=True):
        if p > k // 2:
            raise ValueError(f"{op}: padding {pads} must be at most half the kernel size {ks}")
    return x, ks, stride, pads, dilation


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    x, ks, stride, pads, dilation = _pool_args(x, kernel_size, stride, padding, dilation, nd, op, ceil_mode)
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: input must be floating-point, got {x.dtype}")
    spatial = tuple(range(x.ndim - nd, x.ndim))
    widths = ((0, 0),) * (x.ndim - nd) + tuple((p, p) for p in pads)
    xpad = pad_widths(x, widths, -math.inf)
    # which element of each window is the (first) maximum: constants (index arrays), not recorded
    v = _windows.windows(xpad.detach(), ks, axes=spatial, step=stride, dilation=dilation)
    index = run_op(WINDOW_ARGMAX, v, nd=nd, ks=ks, stride=stride, dilation=dilation)
    out = xpad[index]                                          # the gradient reaches that one element
    if not return_indices:
        return out
    # PyTorch's indices: flat positions in the unpadded input's spatial dims
    return out, run_op(FLAT_POSITIONS, *index, xshape=tuple(x.shape), nd=nd, pads=pads)


def _window_argmax(xp, v, nd, ks, stride, dilation):
    """The index (one array per dim of the input) of the (first) maximum of each window of ``v``."""
    ndim = v.ndim - nd
    lead = v.shape[:ndim]
    k = int(np.prod(ks))
    first = v.reshape(lead + (k,)).argmax(axis=-1)            # (..., out...) flat index in the window
    index = []
    for ax in range(ndim):
        if ax < ndim - nd:
            shape = [1] * ndim
            shape[ax] = lead[ax]
            index.append(xp.arange(lead[ax]).reshape(shape))
        else:
            j = ax - (ndim - nd)
            inner = int(np.prod(ks[j + 1:]))
            kj = (first // inner) % ks[j]                      # this dim's offset inside the window
            shape = [1] * ndim
            shape[ax] = lead[ax]
            index.append(xp.arange(lead[ax]).reshape(shape) * stride[j] + kj * dilation[j])
    return tuple(index)


def _flat_positions(xp, *index, xshape, nd, pads):
    flat = xp.zeros(index[-1].shape, dtype=np.int64)
    ndim = len(xshape)
    for j in range(nd):
        ax = ndim - nd + j
        flat = flat * xshape[ax] + (index[ax] - pads[j])
    return flat


# the index arrays of max pooling, as ops (not differentiable: constants for the gradient)
WINDOW_ARGMAX = defop("window_argmax", _window_argmax, kind="other", n_out=None)
FLAT_POSITIONS = defop("flat_positions", _flat_positions, kind="other")


@composite("max_pool2d", export=False,
           samples=lambda rng: [Sample(_distinct(rng, 1, 2, 4, 4), 2),
                                Sample(_distinct(rng, 1, 1, 5, 5), 3, stride=2, padding=1)])
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-D max pooling, PyTorch's ``F.max_pool2d`` (x (N, C, H, W) or (C, H, W)).

    Args:
        kernel_size: an int or (kH, kW).
        stride: an int or a pair; None (default) means the kernel size.
        padding: implicit -inf on both sides, at most half the kernel.
        dilation: spacing between a window's elements.
        return_indices: also return, per output, the flat index in H * W of the chosen input.

    Ties send the whole gradient to the first maximum of the window in row-major order, as
    PyTorch does (never split). A NaN in a window makes that output NaN.

    >>> F.max_pool2d(mg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


@composite("max_pool1d", samples=lambda rng: [Sample(_distinct(rng, 1, 2, 6), 2)], export=False)
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-D max pooling, PyTorch's ``F.max_pool1d`` (x (N, C, L) or (C, L)); see ``max_pool2d``."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op):
    x, ks, stride, pads, _ = _pool_args(x, kernel_size, stride, padding, 1, nd, op, ceil_mode)
    spatial = tuple(range(x.ndim - nd, x.ndim))
    widths = ((0, 0),) * (x.ndim - nd) + tuple((p, p) for p in pads)
    v = _windows.windows(pad_widths(x, widths), ks, axes=spatial, step=stride)
    s = v.sum(axis=tuple(range(x.ndim, x.ndim + nd)))
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{op}: divisor_override must not be zero")
        return s / float(divisor_override)
    if count_include_pad or not any(pads):
        return s / float(np.prod(ks))
    # the number of real (unpadded) elements in each window, per output position
    ones = np.pad(np.ones(x.shape[x.ndim - nd:]), tuple((p, p) for p in pads))
    counts = np.lib.stride_tricks.sliding_window_view(ones, ks)[tuple(slice(None, None, st) for st in stride)]
    counts = counts.sum(axis=tuple(range(nd, 2 * nd))).astype(x.dtype)
    return s / Tensor(counts, device=x.device)


@composite("avg_pool2d", export=False,
           samples=lambda rng: [Sample(_r(rng, 1, 2, 4, 4), 2), Sample(_r(rng, 1, 1, 5, 5), 3, stride=2)])
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None):
    """2-D average pooling, PyTorch's ``F.avg_pool2d`` (x (N, C, H, W) or (C, H, W)).

    Args:
        kernel_size: an int or (kH, kW). stride: None (default) means the kernel size.
        padding: zeros on both sides, at most half the kernel.
        count_include_pad: divide by the whole window (default) or by its unpadded part.
        divisor_override: divide by this instead.

    >>> F.avg_pool2d(mg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


@composite("avg_pool1d", samples=lambda rng: [Sample(_r(rng, 1, 2, 6), 3)], export=False)
def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    """1-D average pooling, PyTorch's ``F.avg_pool1d`` (x (N, C, L) or (C, L)); see ``avg_pool2d``."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


@composite("adaptive_avg_pool2d", samples=lambda rng: [Sample(_r(rng, 2, 3, 4, 4), 1)], export=False)
def adaptive_avg_pool2d(x, output_size):
    """Average pooling to a given output size, PyTorch's ``F.adaptive_avg_pool2d``.

    Args:
        x: (N, C, H, W) or (C, H, W).
        output_size: an int or (oH, oW); None in a pair keeps that input size.

    Output cell ``i`` of a dim averages input ``floor(i * H / oH)`` to ``ceil((i + 1) * H / oH)``.
    Output size 1 is the global average; sizes that divide the input are an ``avg_pool2d``.

    >>> F.adaptive_avg_pool2d(mg.ones(2, 3, 5, 7), 1).shape
    (2, 3, 1, 1)
    """
    x = as_tensor(x, "adaptive_avg_pool2d")
    if x.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: input must be 3-D or 4-D, got shape {x.shape}")
    if isinstance(output_size, numbers.Integral) or output_size is None:
        output_size = (output_size, output_size)
    h, w = x.shape[-2:]
    oh, ow = (h if output_size[0] is None else int(output_size[0]), w if output_size[1] is None else int(output_size[1]))
    if oh < 1 or ow < 1:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {output_size!r}")
    if (oh, ow) == (1, 1):
        return x.mean(axis=(-2, -1), keepdims=True)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(x, (h // oh, w // ow))
    rows = []
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        cells = []
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            cells.append(x[..., r0:r1, c0:c1].mean(axis=(-2, -1)))
        rows.append(stack(cells, axis=-1))
    return stack(rows, axis=-2)
