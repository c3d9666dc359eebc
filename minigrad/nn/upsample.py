"""Upsampling, functional form: ``interpolate`` (PyTorch's ``F.interpolate`` for (N, C, H, W)
input, modes ``"nearest"``, ``"nearest-exact"`` and ``"bilinear"``), and its layers ``Upsample``,
``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``.

Nearest modes gather rows and columns (``getitem`` with index arrays, whose gradient is the
overlap-add ``index_add``); bilinear multiplies by two constant interpolation matrices
(``A_h @ x @ A_wᵀ``), whose gradient is the transposed product. Both follow PyTorch's index
rules exactly, so the values match torch's::

    >>> F.interpolate(mg.ones(1, 3, 4, 4), scale_factor=2, mode="bilinear").shape
    (1, 3, 8, 8)
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import creation as _creation
from ..creation import as_tensor
from ..ops._registry import randn as _r, Sample, composite
from .module import Module

__all__ = ["interpolate", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]

_MODES = ("nearest", "nearest-exact", "bilinear")


def _sizes(shape, size, scale_factor, op):
    """(output sizes, scales the index rule reads: 1 / scale_factor, or None when ``size`` is given)."""
    spatial = tuple(shape[2:])
    nd = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: pass exactly one of size and scale_factor")
    if size is not None:
        if isinstance(size, numbers.Integral):
            size = (int(size),) * nd
        size = tuple(int(s) for s in size)
        if len(size) != nd or any(s < 1 for s in size):
            raise ValueError(f"{op}: size must be a positive int or {nd} of them for input {tuple(shape)}, got {size}")
        return size, (None,) * nd
    if isinstance(scale_factor, numbers.Real):
        scale_factor = (float(scale_factor),) * nd
    scale_factor = tuple(float(s) for s in scale_factor)
    if len(scale_factor) != nd or any(s <= 0 for s in scale_factor):
        raise ValueError(f"{op}: scale_factor must be a positive number or {nd} of them, got {scale_factor}")
    out = tuple(math.floor(n * s) for n, s in zip(spatial, scale_factor, strict=True))
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: scale_factor {scale_factor} gives an empty output for input {tuple(shape)}")
    return out, scale_factor


def _nearest_index(n_in, n_out, scale, exact):
    """PyTorch's nearest source index (its CPU kernel, in float32): ``floor(dst * s)`` or, exact,
    ``floor((dst + 0.5) * s)``, at most ``n_in - 1``; ``s`` is ``1 / scale_factor`` or ``n_in / n_out``."""
    if not exact and n_out == n_in:
        return np.arange(n_in)
    if not exact and n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    s = np.float32(1.0 / scale) if scale is not None else np.float32(n_in) / np.float32(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    return np.minimum(np.floor(dst * s).astype(np.int64), n_in - 1)


def _linear_matrix(n_in, n_out, scale, align_corners):
    """(n_out, n_in): row ``j`` holds the weights of PyTorch's linear interpolation at output ``j``."""
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = s * np.arange(n_out, dtype=np.float64)
    else:
        s = 1.0 / scale if scale is not None else n_in / n_out
        src = np.maximum(s * (np.arange(n_out, dtype=np.float64) + 0.5) - 0.5, 0.0)
    i0 = src.astype(np.int64)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    lam = np.clip(src - i0, 0.0, 1.0)
    a = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(a, (rows, i0), 1.0 - lam)
    np.add.at(a, (rows, i1), lam)
    return a


def _torch_interpolate(th, x, *args, **kw):
    return th.nn.functional.interpolate(x, *args, **kw)


@composite("interpolate", export=False, torch=_torch_interpolate,
           samples=lambda rng: [Sample(_r(rng, 1, 2, 3, 4), size=(5, 7), mode="bilinear"),
                                Sample(_r(rng, 1, 2, 3, 4), scale_factor=(1.5, 2.5), mode="bilinear",
                                       align_corners=True),
                                Sample(_r(rng, 2, 1, 3, 4), size=(5, 3))])
def interpolate(x, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    """Resize the spatial dims of (N, C, H, W) input, PyTorch's ``F.interpolate``.

    Args:
        x: (N, C, H, W).
        size: the output's (oH, oW) (or one int for both); or
        scale_factor: a number or (sH, sW): ``oH = floor(H sH)``, and the index rule reads
            ``1 / sH`` (PyTorch's default ``recompute_scale_factor=None``; True reads ``H / oH``).
        mode: ``"nearest"`` (source ``min(floor(dst H / oH), H - 1)``, PyTorch's rule),
            ``"nearest-exact"`` (``floor((dst + 0.5) H / oH)``) or ``"bilinear"``.
        align_corners: bilinear only (default False): True maps the corner pixels' centres onto
            each other (source ``dst (H - 1) / (oH - 1)``); False maps the corners' edges
            (source ``(dst + 0.5) H / oH - 0.5``, clamped at 0).

    Returns:
        (N, C, oH, oW), linear in ``x``: its gradient sums each output back onto its sources.

    >>> F.interpolate(mg.arange(4.0).reshape(1, 1, 2, 2), scale_factor=2).tolist()[0][0][0]
    [0.0, 0.0, 1.0, 1.0]
    """
    op = "interpolate"
    x = as_tensor(x, op)
    if mode not in _MODES:
        raise NotImplementedError(f"{op}: mode must be one of {_MODES}, got {mode!r}")
    if x.ndim != 4:
        raise NotImplementedError(f"{op}: only 4-D (N, C, H, W) input is implemented, got shape {x.shape}")
    if antialias:
        raise NotImplementedError(f"{op}: antialias=True is not implemented")
    if mode != "bilinear" and align_corners is not None:
        raise ValueError(f"{op}: align_corners only applies to mode='bilinear' (got mode={mode!r})")
    outs, scales = _sizes(x.shape, size, scale_factor, op)
    if recompute_scale_factor:
        scales = (None,) * len(outs)
    ins = tuple(x.shape[2:])
    if mode == "bilinear":
        ah, aw = (_creation.tensor(_linear_matrix(i, o, s, bool(align_corners)), dtype=x.data.dtype, device=x.device)
                  for i, o, s in zip(ins, outs, scales, strict=True))
        return ah @ x @ aw.swapaxes(0, 1)
    exact = mode == "nearest-exact"
    ih, iw = (_nearest_index(i, o, s, exact) for i, o, s in zip(ins, outs, scales, strict=True))
    if not np.array_equal(ih, np.arange(ins[0])):
        x = x[:, :, ih]
    if not np.array_equal(iw, np.arange(ins[1])):
        x = x[:, :, :, iw]
    return x


class Upsample(Module):
    """``F.interpolate`` as a layer, PyTorch's ``nn.Upsample`` (no parameters).

    >>> mg.nn.Upsample(scale_factor=2, mode="bilinear")(mg.zeros(1, 3, 4, 5)).shape
    (1, 3, 8, 10)
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if mode not in _MODES:
            raise NotImplementedError(f"Upsample: mode must be one of {_MODES}, got {mode!r}")
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, numbers.Real) else scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x):
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        s = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return s + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")``, PyTorch's ``nn.UpsamplingNearest2d``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode="bilinear", align_corners=True)``, PyTorch's
    ``nn.UpsamplingBilinear2d``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
