"""The strided walk of a sum: reduce one dim of a tensor by walking the flat buffer it lives in.

A C-contiguous tensor of shape ``shape`` keeps element ``(i0, i1, ...)`` at
``sum(i_k * prod(shape[k+1:]))`` of its buffer. Summing dim ``d`` adds, for each
output cell, ``shape[d]`` elements that lie ``prod(shape[d+1:])`` apart. Six numbers
say how to walk the buffer (the seed notebook's derivation)::

    mprev = prod(shape[:d])                     mnext = prod(shape[d+1:])
    stride, nstride = mnext, shape[d]           inside a window: the elements one cell adds
    step, nstep = (shape[d], mprev)  if d is the last dim  else (1, mnext)
                                                from one window to the next
    shift, nshift = (mnext * shape[d], mprev)  if d is a middle dim  else (0, 1)
                                                from one block of windows to the next

Output cell number ``s * nstep + j`` (``s < nshift``, ``j < nstep``) is
``sum(buffer[s*shift + j*step + k*stride] for k in range(nstride))``; the cells come out
in the C order of ``shape`` without dim ``d``. For shape (2, 3, 2, 4)::

    dim  stride nstride step nstep shift nshift
     0     24      2      1    24     0     1
     1      8      3      1     8    24     2
     2      4      2      1     4     8     6
     3      1      4      4    12     0     1

``sum`` runs a walk as one strided view of the buffer, ``(nshift, nstep, nstride)`` with
strides ``(shift, step, stride)``, summed over its last axis: vectorised, no Python loop
per element. Given ``strides`` (in elements) and an ``offset`` it walks any strided layout
(a transposed or sliced tensor's storage): the dims kept are merged where their strides
allow, which for a contiguous layout gives back exactly the six numbers above.

>>> mg.strided.sum_plan((2, 3, 2, 4), 1)
SumPlan(stride=8, nstride=3, step=1, nstep=8, shift=24, nshift=2)
>>> mg.strided.sum(np.arange(24.0), (2, 3, 4), axis=1).shape
(2, 4)
"""
from __future__ import annotations

import builtins
import numbers
from typing import NamedTuple

import numpy as np

from ._util import axis_index
from .backend import array_module
from .kernels import as_strided, data_ptr as _ptr
from .ops.windows import windows  # mg.strided.windows: the sliding-window view is an op, in ops/windows.py

__all__ = ["SumPlan", "sum_plan", "sum", "loops", "layout", "as_strided", "windows"]


class SumPlan(NamedTuple):
    """The six numbers of a strided sum over one dim of a contiguous tensor."""

    stride: int   # distance between the elements one output cell adds
    nstride: int  # how many elements each output cell adds (shape[dim])
    step: int     # distance from one window's start to the next window's
    nstep: int    # windows per block
    shift: int    # distance from one block's start to the next block's
    nshift: int   # blocks

    @property
    def size(self) -> int:
        """Number of output cells (``nstep * nshift``)."""
        return self.nstep * self.nshift

    def starts(self) -> np.ndarray:
        """Buffer offset of each window's first element, in output order (host int64 array)."""
        s = np.arange(self.nshift, dtype=np.int64)[:, None] * self.shift
        j = np.arange(self.nstep, dtype=np.int64)[None, :] * self.step
        return (s + j).reshape(-1)

    def window(self, cell: int) -> np.ndarray:
        """Buffer offsets the output cell ``cell`` adds up (host int64 array)."""
        s, j = divmod(int(cell), self.nstep)
        return s * self.shift + j * self.step + np.arange(self.nstride, dtype=np.int64) * self.stride


def _shape(shape, op) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    out = []
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 0:
            raise TypeError(f"{op}: shape entries must be non-negative ints, got {tuple(shape)!r}")
        out.append(int(n))
    return tuple(out)


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def sum_plan(shape, axis) -> SumPlan:
    """The walk that sums dim ``axis`` of a contiguous tensor of ``shape``.

    Args:
        shape: the tensor's shape (a tuple of ints, or one int).
        axis: the dim to sum (negative counts from the end).

    Returns:
        a ``SumPlan(stride, nstride, step, nstep, shift, nshift)``.

    >>> mg.strided.sum_plan((2, 3, 2, 4), 3)
    SumPlan(stride=1, nstride=4, step=4, nstep=12, shift=0, nshift=1)
    """
    shape = _shape(shape, "sum_plan")
    d = axis_index(axis, len(shape), "sum_plan")
    mprev, mnext, n = _prod(shape[:d]), _prod(shape[d + 1:]), shape[d]
    last = d == len(shape) - 1
    middle = 0 < d < len(shape) - 1
    step, nstep = (n, mprev) if last else (1, mnext)
    shift, nshift = (mnext * n, mprev) if middle else (0, 1)
    return SumPlan(mnext, n, step, nstep, shift, nshift)


def loops(shape, axis, strides=None) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    """The loops of a strided sum over any layout: ``(outer, window)``.

    ``outer`` lists ``(count, stride)`` per loop over the output cells, outermost first
    (kept dims, size-1 dims dropped, neighbours merged where ``stride_a == count_b * stride_b``);
    ``window`` is ``(nstride, stride)`` of the summed dim. ``strides`` are in elements
    (C-contiguous when None).

    >>> mg.strided.loops((2, 3, 2, 4), 1)
    ([(2, 24), (8, 1)], (3, 8))
    """
    shape = _shape(shape, "loops")
    d = axis_index(axis, len(shape), "loops")
    strides = _contiguous(shape) if strides is None else _strides(strides, shape, "loops")
    merged: list[tuple[int, int]] = []
    for i, (n, s) in enumerate(zip(shape, strides, strict=False)):
        if i == d or n == 1:
            continue
        if merged and merged[-1][0] != 0 and n != 0 and merged[-1][1] == n * s:
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    return merged, (shape[d], strides[d])


def _contiguous(shape) -> tuple[int, ...]:
    out = []
    acc = 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _strides(strides, shape, op) -> tuple[int, ...]:
    strides = tuple(strides)
    if len(strides) != len(shape):
        raise ValueError(f"{op}: {len(strides)} strides {strides} given for the {len(shape)}-d shape {shape}")
    for s in strides:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{op}: strides must be ints (in elements, not bytes), got {strides!r}")
    return tuple(int(s) for s in strides)


_builtin_sum = builtins.sum


def sum(buffer, shape, axis, strides=None, offset=0):  # noqa: A001 - the module's verb
    """Sum dim ``axis`` of the tensor of ``shape`` that lies in the flat ``buffer``.

    Args:
        buffer: a 1-D NumPy or CuPy array (or a Tensor over one; a contiguous n-D array is flattened).
        shape: the tensor's shape.
        axis: the dim to sum (negative counts from the end).
        strides: the tensor's strides in elements (C-contiguous when None).
        offset: the buffer index of the tensor's first element.

    Returns:
        an array of the buffer's module, shape ``shape`` without ``axis``, equal to
        ``x.sum(axis)`` (NumPy's result dtype).

    >>> mg.strided.sum(np.arange(6.0), (2, 3), 0)
    array([3., 5., 7.])
    """
    buf = getattr(buffer, "data", buffer) if not hasattr(buffer, "strides") else buffer
    if not hasattr(buf, "strides"):
        raise TypeError(f"strided.sum: expected a NumPy/CuPy array or a Tensor as buffer, got {type(buffer).__name__}")
    if buf.ndim != 1:
        if not buf.flags.c_contiguous:
            raise ValueError(f"strided.sum: expected a flat buffer, got a non-contiguous array of shape {buf.shape}")
        buf = buf.reshape(-1)
    shape = _shape(shape, "strided.sum")
    d = axis_index(axis, len(shape), "strided.sum")
    out_shape = shape[:d] + shape[d + 1:]
    if strides is None:
        p = sum_plan(shape, d)
        view_shape = (p.nshift, p.nstep, p.nstride)
        view_strides = (p.shift, p.step, p.stride)
    else:
        outer, (n, s) = loops(shape, d, strides)
        view_shape = tuple(c for c, _ in outer) + (n,)
        view_strides = tuple(t for _, t in outer) + (s,)
    view = as_strided(buf, offset, view_shape, view_strides)
    return view.sum(axis=-1).reshape(out_shape)


def layout(x):
    """Where a Tensor or array lies: ``(buffer, shape, strides, offset)``.

    ``buffer`` is a flat 1-D view of the memory it lives in (the whole storage when that is
    one contiguous block, as for every tensor minigrad makes), ``strides`` are in elements
    and ``offset`` is the buffer index of its first element, so that
    ``mg.strided.sum(*mg.strided.layout(t), axis)`` walks ``t`` in place.

    >>> buf, shape, strides, off = mg.strided.layout(mg.arange(12).reshape(3, 4).T[1:])
    >>> (shape, strides, off)
    ((3, 3), (1, 4), 1)
    """
    a = getattr(x, "data", x) if not hasattr(x, "strides") else x
    isz = a.itemsize
    strides = tuple(s // isz for s in a.strides)
    root = a
    while getattr(root, "base", None) is not None and hasattr(root.base, "strides"):
        root = root.base
    xp = array_module(a)
    if root.dtype == a.dtype and (root.flags.c_contiguous or root.flags.f_contiguous) and root.size:
        flat = xp.lib.stride_tricks.as_strided(root, (root.size,), (isz,))
        return flat, tuple(a.shape), strides, (_ptr(a) - _ptr(root)) // isz
    if a.size == 0:
        return xp.zeros(0, a.dtype), tuple(a.shape), strides, 0
    # anything else: a buffer spanning exactly the memory this array reaches, from its lowest address
    lo = _builtin_sum((n - 1) * s for n, s in zip(a.shape, strides, strict=False) if s < 0)
    hi = _builtin_sum((n - 1) * s for n, s in zip(a.shape, strides, strict=False) if s > 0)
    low = a[tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(a.shape, strides, strict=False))]
    flat = xp.lib.stride_tricks.as_strided(low, (hi - lo + 1,), (isz,))
    return flat, tuple(a.shape), strides, -lo
