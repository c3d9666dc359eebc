"""Sliding windows: a differentiable view (``mg.strided.windows``).

``windows`` is a view made by as_strided; its gradient is an overlap-add (every window's gradient
added back where the window lies), and the overlap-add's gradient is windows again, so the pair
gives derivatives of every order. Both are registered ops (``mg.ops.registry()``), run by ``run_op``;
``minigrad/strided.py`` (the strided walk of a sum) re-exports ``windows`` as ``mg.strided.windows``."""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from .. import _batched
from .._util import axis_index
from ..backend import array_module
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, defop, linear_jvp


def _per_axis(v, m, name):
    """An int or a sequence of ``m`` ints, as a tuple of ``m`` positive ints."""
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        v = (int(v),) * m
    v = tuple(v)
    if len(v) != m or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral) or s < 1
                          for s in v):
        raise ValueError(f"windows: {name} must be a positive int or {m} positive ints (one per axis), got {v!r}")
    return tuple(int(s) for s in v)


class _WindowSpec(NamedTuple):
    in_shape: tuple     # the input's shape
    axes: tuple         # the windowed axes (normalised, in the caller's order)
    window: tuple       # window size per axis
    step: tuple         # distance between window starts, per axis
    dilation: tuple     # distance between a window's elements, per axis
    out_shape: tuple    # the view's shape: in_shape with each axis -> its window count, then the windows

    @property
    def counts(self):
        return tuple(self.out_shape[a] for a in self.axes)


def _window_spec(shape, window_shape, axes, step, dilation) -> _WindowSpec:
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    if isinstance(window_shape, numbers.Integral):
        window_shape = (window_shape,)
    window_shape = tuple(window_shape)
    if axes is None:
        if len(window_shape) != nd:
            raise ValueError(
                f"windows: with axes=None the window needs one size per dim of the input of shape {shape}, "
                f"got window_shape {window_shape}; pass axes= to window only some dims"
            )
        axes = tuple(range(nd))
    elif isinstance(axes, numbers.Integral):
        axes = (axes,)
    axes = tuple(axis_index(a, nd, "windows") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"windows: axes {axes} repeat a dim")
    m = len(axes)
    if len(window_shape) != m:
        raise ValueError(f"windows: window_shape {window_shape} needs one size per axis in {axes}")
    window = _per_axis(window_shape, m, "window_shape")
    step = _per_axis(step, m, "step")
    dilation = _per_axis(dilation, m, "dilation")
    out = list(shape)
    for a, w, s, d in zip(axes, window, step, dilation, strict=True):
        span = d * (w - 1) + 1
        if span > shape[a]:
            raise ValueError(
                f"windows: a window of {w} (dilation {d}, spanning {span}) does not fit axis {a} of size "
                f"{shape[a]} (input shape {shape})"
            )
        out[a] = (shape[a] - span) // s + 1
    return _WindowSpec(shape, axes, window, step, dilation, tuple(out) + window)


def _windows_array(xd, spec: _WindowSpec):
    """The strided view of backend array ``xd`` (read-only on the host)."""
    xp = array_module(xd)
    strides = list(xd.strides)
    extra = []
    for a, s, d in zip(spec.axes, spec.step, spec.dilation, strict=True):
        extra.append(xd.strides[a] * d)
        strides[a] = xd.strides[a] * s
    strides = tuple(strides) + tuple(extra)
    if xp is np:
        return np.lib.stride_tricks.as_strided(xd, spec.out_shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(xd, spec.out_shape, strides)


def _overlap_add_array(gd, spec: _WindowSpec):
    """Zeros of the input's shape with each window's gradient added where the window lies."""
    xp = array_module(gd)
    out = xp.zeros(spec.in_shape, dtype=gd.dtype)
    nd, m = len(spec.in_shape), len(spec.axes)
    counts = spec.counts
    if math.prod(spec.window) <= math.prod(counts):
        # one strided slab per position inside the window: few big adds
        for pos in np.ndindex(*spec.window):
            dst = [slice(None)] * nd
            for a, j, n, s, d in zip(spec.axes, pos, counts, spec.step, spec.dilation, strict=True):
                dst[a] = slice(j * d, j * d + s * (n - 1) + 1, s)
            out[tuple(dst)] += gd[(Ellipsis,) + pos]
    else:
        # few windows (big ones): one add per window
        rest = nd - m
        for pos in np.ndindex(*counts):
            dst = [slice(None)] * nd
            src = [slice(None)] * nd
            for a, i, w, s, d in zip(spec.axes, pos, spec.window, spec.step, spec.dilation, strict=True):
                dst[a] = slice(i * s, i * s + d * (w - 1) + 1, d)
                src[a] = i
            piece = gd[tuple(src)]  # (other dims..., window dims in axes order)
            out[tuple(dst)] += xp.moveaxis(piece, list(range(rest, rest + m)), list(spec.axes))
    return out


def _windows_samples(rng):
    spec = _window_spec((2, 5, 6), (2, 3), (1, 2), (1, 2), (1, 1))
    return [Sample(rng.standard_normal((2, 5, 6)), spec=spec),
            Sample(rng.standard_normal(7), spec=_window_spec((7,), (3,), None, 2, 2))]


def _overlap_samples(rng):
    return [Sample(rng.standard_normal(s.kwargs["spec"].out_shape), spec=s.kwargs["spec"]) for s in _windows_samples(rng)]


def _overlap_add_batch(forward, arrays, params):
    """vmap's rule: the overlap-add of the physical array, its batch axis one more leading axis of
    the spec (a lower level's array in it: the same again, one level down)."""
    (g,) = arrays
    spec, p = params["spec"], g.p
    n = p.shape[0]
    spec = _WindowSpec((n,) + spec.in_shape, tuple(a + 1 for a in spec.axes), spec.window, spec.step,
                       spec.dilation, (n,) + spec.out_shape)
    out = _overlap_add_batch(forward, (p,), {"spec": spec}) if _batched.is_batched(p) else forward(None, p, spec=spec)
    return _batched.BatchedArray(g.level, out)


WINDOWS = defop("windows", lambda xp, x, spec: _windows_array(x, spec),
                lambda ctx, g, spec: (ctx.xp.overlap_add(g, spec=spec),), view=True, kind="view", jvp=linear_jvp(0),
                samples=_windows_samples, info=lambda spec: {"window": spec.window, "step": spec.step}, complex=True)
OVERLAP_ADD = defop("overlap_add", lambda xp, g, spec: _overlap_add_array(g, spec),
                    lambda ctx, gg, spec: (ctx.xp.windows(gg, spec=spec),), kind="reduce", jvp=linear_jvp(0),
                    batch=_overlap_add_batch,
                    samples=_overlap_samples, info=lambda spec: {"window": spec.window, "step": spec.step}, complex=True)


def windows(x, window_shape, axes=None, step=1, dilation=1):
    """Sliding windows over ``axes`` of ``x`` as a view (no copy), differentiable.

    NumPy's ``sliding_window_view`` with a ``step``: each windowed axis of size ``n`` becomes
    the number of windows ``(n - dilation * (w - 1) - 1) // step + 1``, and the windows' own
    dims are appended at the end, in the order of ``axes``.

    Args:
        x: a Tensor (or array) of any shape.
        window_shape: one int per windowed axis.
        axes: the axes to window (negative counts from the end); None means every axis.
        step: distance between the starts of neighbouring windows: an int or one per axis.
        dilation: distance between the elements of one window: an int or one per axis.

    Returns:
        a Tensor viewing ``x``'s memory (read-only). Its gradient adds every window's gradient
        back where the window lies (overlapping windows accumulate).

    >>> x = mg.arange(6.0)
    >>> mg.strided.windows(x, 3).tolist()
    [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [3.0, 4.0, 5.0]]
    >>> mg.strided.windows(mg.zeros(2, 8, 8), (3, 3), axes=(1, 2), step=2).shape
    (2, 3, 3, 3, 3)
    """
    if not isinstance(x, Tensor):
        x = Tensor(x)
    spec = _window_spec(x.shape, window_shape, axes, step, dilation)
    return run_op(WINDOWS, x, spec=spec)
