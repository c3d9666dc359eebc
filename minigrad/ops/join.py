"""NumPy's shape, join, split, rearranging, triangle and diagonal functions, each built from
minigrad's views, indexing (its gradient: index_add), concatenate and where, so each has its
gradient without a rule of its own. Results have NumPy's shapes and dtypes; where NumPy returns
a view (flip, diagonal) the result here may be a copy."""
from __future__ import annotations

import numbers

import numpy as np

from collections import namedtuple

from .. import _batched
from .. import backend as _be
from .._util import NOARG
from ..creation import as_tensor
from ..engine import run_op
from ..errors import AxisError
from ..tensor import Tensor, wrap
from ._registry import randn as _r, Sample, composite, defop, named, public
from .elementwise import where
from .indexing import index_add
from .reduce import normalize_axis, sum as _sum
from .shape import _dim_size, broadcast_to, concatenate, permute, reshape, swapaxes


def _ax(axis, ndim, op):
    (a,) = normalize_axis(axis, ndim, op)
    return a


def _xp(x):
    return _be.array_module(x.data)


def _index(x, axis, idx):
    """``x`` indexed along ``axis`` by the integer array (or int) ``idx``."""
    return x[(slice(None),) * axis + (idx,)]


# -- rearranging axes -------------------------------------------------------------------------------


@composite("moveaxis", numpy=(np.moveaxis,), samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 0, -1), Sample(_r(rng, 2, 3, 4), (0, 1), (2, 0))],
      torch=lambda th, x, s, d: th.movedim(x, s, d), complex=True)
@named("moveaxis")
def moveaxis(a, source, destination):
    """Move axes to new positions; the others keep their order."""
    a = as_tensor(a, "moveaxis")
    src = normalize_axis(source if isinstance(source, (tuple, list)) else (source,), a.ndim, "moveaxis") \
        if not isinstance(source, (tuple, list)) else tuple(_ax(s, a.ndim, "moveaxis") for s in source)
    dst = tuple(_ax(d, a.ndim, "moveaxis") for d in (destination if isinstance(destination, (tuple, list))
                                                     else (destination,)))
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute(a, tuple(order))


@composite("movedim", method="movedim",
           samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 0, -1), Sample(_r(rng, 2, 3, 4), (0, 1), (2, 0))],
           torch=lambda th, x, s, d: th.movedim(x, s, d), complex=True)
@named("movedim")
def movedim(input, source, destination):  # noqa: A002 - PyTorch's name
    """PyTorch's ``movedim``: ``moveaxis`` under PyTorch's name (dims moved to new positions, the
    others keeping their order; a view)."""
    return moveaxis(input, source, destination)


@composite("rollaxis", numpy=(np.rollaxis,), samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 2), Sample(_r(rng, 2, 3, 4), 0, 3)], complex=True)
@named("rollaxis")
def rollaxis(a, axis, start=0):
    """Roll ``axis`` backwards until it lies before ``start`` (NumPy's older moveaxis)."""
    a = as_tensor(a, "rollaxis")
    n = a.ndim
    axis = _ax(axis, n, "rollaxis")
    if not -n <= start <= n:
        raise AxisError(f"rollaxis: start {start} is out of range for ndim {n}")
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    order = list(range(n))
    order.remove(axis)
    order.insert(start, axis)
    return permute(a, tuple(order))


@composite("expand_dims", numpy=(np.expand_dims,), samples=lambda rng: [Sample(_r(rng, 2, 3), 1), Sample(_r(rng, 2, 3), (0, -1))], complex=True)
@named("expand_dims")
def expand_dims(a, axis):
    """Insert size-1 axes at the positions ``axis`` (an int or a tuple) of the result."""
    a = as_tensor(a, "expand_dims")
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_nd = a.ndim + len(axes)
    new = normalize_axis(tuple(axes), out_nd, "expand_dims")
    it = iter(a.shape)
    return reshape(a, tuple(1 if i in new else next(it) for i in range(out_nd)))


def _atleast(n, arys, name):
    out = []
    for x in arys:
        x = as_tensor(x, name)
        s = x.shape
        if x.ndim < n:
            if n == 1:
                s = (1,)
            elif n == 2:
                s = (1,) * (2 - x.ndim) + s
            else:
                s = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[x.ndim]
            x = reshape(x, s)
        out.append(x)
    return out[0] if len(out) == 1 else tuple(out)


def _atleast_samples(rng):
    return [Sample(np.asarray(rng.standard_normal())), Sample(_r(rng, 3)), Sample(_r(rng, 2, 3))]


@composite("atleast_1d", numpy=(np.atleast_1d,), samples=_atleast_samples, complex=True)
@named("atleast_1d")
def atleast_1d(*arys):
    """Each input with at least 1 dim (NumPy's placement of the new axes); one or a tuple."""
    return _atleast(1, arys, "atleast_1d")


@composite("atleast_2d", numpy=(np.atleast_2d,), samples=_atleast_samples, complex=True)
@named("atleast_2d")
def atleast_2d(*arys):
    """Each input with at least 2 dims (NumPy's placement of the new axes); one or a tuple."""
    return _atleast(2, arys, "atleast_2d")


@composite("atleast_3d", numpy=(np.atleast_3d,), samples=_atleast_samples, complex=True)
@named("atleast_3d")
def atleast_3d(*arys):
    """Each input with at least 3 dims (NumPy's placement of the new axes); one or a tuple."""
    return _atleast(3, arys, "atleast_3d")


# -- repeating and rearranging elements ----------------------------------------------------------


@composite("repeat", numpy=(np.repeat,), samples=lambda rng: [Sample(_r(rng, 2, 3), 2), Sample(_r(rng, 2, 3), np.array([1, 0, 2]), axis=1),
                             Sample(_r(rng, 2, 3), 2, axis=-2)], method="repeat", complex=True)
@named("repeat")
def repeat(a, repeats, axis=None):
    """Repeat each element ``repeats`` times (an int or one count per element) along ``axis``
    (the flattened tensor when None): NumPy's ``repeat``, also as ``t.repeat`` (PyTorch's
    ``repeat`` is ``mg.tile``)."""
    a = as_tensor(a, "repeat")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = _ax(axis, a.ndim, "repeat")
    reps = repeats.data if isinstance(repeats, Tensor) else repeats
    if _batched.levels_of(reps):  # vmap: each element's counts (one total for all of them)
        n = a.shape[axis]
        return _index(a, axis, wrap(_batched.per_element(reps, lambda r: np.repeat(np.arange(n), r), "repeat")))
    if not isinstance(reps, numbers.Integral):
        reps = _be.to_numpy(reps) if hasattr(reps, "shape") else np.asarray(reps)  # host counts: the shape needs them
    idx = np.repeat(np.arange(a.shape[axis]), reps)
    return _index(a, axis, idx)


@composite("tile", numpy=(np.tile,), samples=lambda rng: [Sample(_r(rng, 2, 3), 2), Sample(_r(rng, 2, 3), (2, 1, 2)), Sample(_r(rng, 3), (2, 2))], complex=True)
@named("tile")
def tile(A, reps):  # noqa: N803 - NumPy's name
    """The tensor repeated ``reps`` times along each axis (NumPy's ``tile``)."""
    a = as_tensor(A, "tile")
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    nd = max(a.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    inter = tuple(v for r, s in zip(reps, a.shape, strict=True) for v in (1, s))
    full = tuple(v for r, s in zip(reps, a.shape, strict=True) for v in (r, s))
    return reshape(broadcast_to(reshape(a, inter), full), tuple(r * s for r, s in zip(reps, a.shape, strict=True)))


def _torch_roll_oracle(th, x, shifts, dims=None):
    return th.roll(x, shifts, dims) if dims is not None else th.roll(x, shifts)


@composite("roll", numpy=(np.roll,), samples=lambda rng: [Sample(_r(rng, 2, 3), 1), Sample(_r(rng, 2, 3), -1, 1), Sample(_r(rng, 2, 3), (1, 2), (0, 1)),
                                                         Sample(_r(rng, 2, 3), shifts=1, dims=1)],
      torch=lambda th, x, shift=None, axis=None, shifts=None, dims=None: _torch_roll_oracle(
          th, x, shift if shifts is None else shifts, axis if dims is None else dims), complex=True)
@named("roll")
def roll(a, shift=NOARG, axis=None, *, shifts=NOARG, dims=NOARG):
    """Elements shifted by ``shift`` along ``axis`` (the flattened tensor when None), wrapping around.
    PyTorch's keywords ``shifts=`` and ``dims=`` are taken too (the same result)."""
    if shifts is not NOARG:
        if shift is not NOARG:
            raise TypeError("roll: got both shift and its alias shifts=; give one")
        shift = shifts
    if dims is not NOARG:
        if axis is not None:
            raise TypeError("roll: got both axis and its alias dims=; give one")
        axis = dims
    if shift is NOARG:
        raise TypeError("roll: missing the shift (shifts=) argument")
    a = as_tensor(a, "roll")
    if axis is None:
        return reshape(roll(reshape(a, (-1,)), shift, 0), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts, axes = np.broadcast_arrays(np.asarray(shifts), np.asarray(axes))
    for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist(), strict=True):
        ax = _ax(ax, a.ndim, "roll")
        n = a.shape[ax]
        if n:
            a = _index(a, ax, (np.arange(n) - s) % n)
    return a


@composite("flip", numpy=(np.flip,), samples=lambda rng: [Sample(_r(rng, 2, 3)), Sample(_r(rng, 2, 3, 2), 1), Sample(_r(rng, 2, 3, 2), (0, -1)),
                                                         Sample(_r(rng, 2, 3, 2), dims=(0, 2))], complex=True)
@named("flip")
def flip(m, axis=None, *, dims=NOARG):
    """The order of elements reversed along ``axis`` (every axis when None); PyTorch's ``dims=`` is
    taken too (``Tensor.flip(dims)``)."""
    if dims is not NOARG:
        if axis is not None:
            raise TypeError("flip: got both axis and its alias dims=; give one")
        axis = dims
    m = as_tensor(m, "flip")
    axes = normalize_axis(axis, m.ndim, "flip")
    return m[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))]


@composite("fliplr", numpy=(np.fliplr,), samples=lambda rng: [Sample(_r(rng, 2, 3))], complex=True)
@named("fliplr")
def fliplr(m):
    """Reverse the columns (axis 1)."""
    return flip(m, 1)


@composite("flipud", numpy=(np.flipud,), samples=lambda rng: [Sample(_r(rng, 2, 3))], complex=True)
@named("flipud")
def flipud(m):
    """Reverse the rows (axis 0)."""
    return flip(m, 0)


@composite("rot90", numpy=(np.rot90,), samples=lambda rng: [Sample(_r(rng, 2, 3)), Sample(_r(rng, 2, 3), 2), Sample(_r(rng, 2, 3, 4), -1, (1, 2))],
      torch=lambda th, x, k=1, axes=(0, 1): th.rot90(x, k, axes), complex=True)
@named("rot90")
def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    m = as_tensor(m, "rot90")
    a0, a1 = (_ax(a, m.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: axes must differ, got {axes}")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return flip(flip(m, a0), a1)
    if k == 1:
        return swapaxes(flip(m, a1), a0, a1)
    return flip(swapaxes(m, a0, a1), a1)


# -- pad -----------------------------------------------------------------------------------------


def _pad_index(n, before, after, mode):
    i = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:  # reflect
        return np.zeros_like(i)
    p = 2 * (n - 1)
    i = np.abs(i) % p
    return np.where(i >= n, p - i, i)


@composite("pad", numpy=(np.pad,), samples=lambda rng: [Sample(_r(rng, 2, 3), 1), Sample(_r(rng, 2, 3), ((1, 0), (2, 1)), constant_values=0.5),
                          Sample(_r(rng, 2, 3), ((1, 2), (0, 1)), "edge"), Sample(_r(rng, 3, 4), 2, "reflect"),
                          Sample(_r(rng, 2, 3), ((0, 2), (4, 1)), mode="wrap")])
@named("pad")
def pad(array, pad_width, mode="constant", constant_values=0):
    """Pad each axis by ``pad_width`` (``n``, ``(before, after)`` or one pair per axis): ``mode``
    "constant" (``constant_values``), "edge", "reflect" or "wrap", as NumPy's ``pad``."""
    x = as_tensor(array, "pad")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2)).tolist()
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise ValueError(f"pad: mode {mode!r} is not supported (constant, edge, reflect, wrap)")
    from .meta import full_like

    values = np.broadcast_to(np.asarray(constant_values), (x.ndim, 2)).tolist() if mode == "constant" else None
    for ax, (b, a) in enumerate(widths):
        if b == 0 and a == 0:
            continue
        n = x.shape[ax]
        if mode == "constant":
            parts = []
            for w, v in ((b, values[ax][0]), (None, None), (a, values[ax][1])):
                if w is None:
                    parts.append(x)
                elif w:
                    parts.append(full_like(x, v, shape=x.shape[:ax] + (w,) + x.shape[ax + 1:]))
            x = concatenate(parts, axis=ax)
        else:
            if n == 0:
                raise ValueError(f"pad: cannot {mode}-pad an empty axis {ax} (shape {x.shape})")
            x = _index(x, ax, _pad_index(n, b, a, mode))
    return x


# -- joining ---------------------------------------------------------------------------------------


def _two(rng, *shape):
    return [_r(rng, *shape), _r(rng, *shape)]


def _tensors(tup, name):
    return [as_tensor(t, name) for t in tup]


@composite("vstack", numpy=(np.vstack,), samples=lambda rng: [Sample(_two(rng, 3)), Sample([_r(rng, 2, 3), _r(rng, 1, 3)])], complex=True)
@named("vstack")
def vstack(tup):
    """Stack along the first axis (1-D inputs become rows)."""
    return concatenate(_seq(atleast_2d(*_tensors(tup, "vstack"))), axis=0)


@composite("hstack", numpy=(np.hstack,), samples=lambda rng: [Sample(_two(rng, 3)), Sample([_r(rng, 2, 3), _r(rng, 2, 1)])], complex=True)
@named("hstack")
def hstack(tup):
    """Stack along the second axis (the first for 1-D inputs)."""
    ts = _tensors(tup, "hstack")
    return concatenate(_seq(atleast_1d(*ts)), axis=0 if all(t.ndim <= 1 for t in ts) else 1)


@composite("dstack", numpy=(np.dstack,), samples=lambda rng: [Sample(_two(rng, 3)), Sample(_two(rng, 2, 3))], complex=True)
@named("dstack")
def dstack(tup):
    """Stack along the third axis."""
    return concatenate(_seq(atleast_3d(*_tensors(tup, "dstack"))), axis=2)


@composite("column_stack", numpy=(np.column_stack,),
           samples=lambda rng: [Sample(_two(rng, 3)), Sample([_r(rng, 3), _r(rng, 3, 2)])], complex=True)
@named("column_stack")
def column_stack(tup):
    """1-D inputs as columns, stacked along the second axis."""
    return concatenate([reshape(t, (-1, 1)) if t.ndim < 2 else t for t in _tensors(tup, "column_stack")], axis=1)


def _seq(v):
    return list(v) if isinstance(v, tuple) else [v]


@composite("append", numpy=(np.append,), samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 4)), Sample(_r(rng, 2, 3), _r(rng, 1, 3), axis=0)], complex=True)
@named("append")
def append(arr, values, axis=None):
    """``values`` appended to ``arr`` (both flattened when ``axis`` is None)."""
    a, v = as_tensor(arr, "append"), as_tensor(values, "append")
    if axis is None:
        return concatenate([reshape(a, (-1,)), reshape(v, (-1,))], axis=0)
    return concatenate([a, v], axis=axis)


# -- splitting -----------------------------------------------------------------------------------


def _split(x, sections, axis, name, equal):
    x = as_tensor(x, name)
    axis = _ax(axis, x.ndim, name)
    n = x.shape[axis]
    if isinstance(sections, numbers.Integral):
        k = int(sections)
        if k <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {k}")
        if equal and n % k:
            raise ValueError(f"{name}: array split does not result in an equal division ({n} into {k})")
        q, r = divmod(n, k)
        bounds = np.cumsum([0] + [q + 1] * r + [q] * (k - r)).tolist()
    else:
        cuts = [int(c) for c in sections]
        bounds = [0] + cuts + [n]
    pre = (slice(None),) * axis
    return [x[pre + (slice(lo, max(lo, hi) if hi is not None else None),)]
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


@composite("split", numpy=(np.split,), samples=lambda rng: [Sample(_r(rng, 4, 3), 2), Sample(_r(rng, 4, 3), [1, 2], axis=1),
                                                           Sample(_r(rng, 5, 3), 2, dim=0), Sample(_r(rng, 4, 3), [1, 2], dim=1)], complex=True)
@named("split")
def split(ary, indices_or_sections, axis=NOARG, *, dim=NOARG):
    """NumPy's spelling (``axis``, positional or keyword): equal sections (an int that divides the
    axis) or cuts at the given indices, a list of views. PyTorch's (``dim=``): ``split_size_or_sections``,
    pieces of that size (the last shorter) or a list of sizes, a tuple of views (``Tensor.split``)."""
    if dim is not NOARG:
        if axis is not NOARG:
            raise TypeError("split: got both axis= and its alias dim=; give one")
        return torch_split(ary, indices_or_sections, dim)
    return _split(ary, indices_or_sections, 0 if axis is NOARG else axis, "split", True)


@composite("torch_split", method="split", export=False, torch=lambda th, x, s, dim=0: th.split(x, s, dim),
           samples=lambda rng: [Sample(_r(rng, 5, 3), 2), Sample(_r(rng, 4, 3), [1, 2], dim=1), Sample(_r(rng, 4, 3), 4)], complex=True)
@named("split")
def torch_split(input, split_size_or_sections, dim=0):  # noqa: A002
    """PyTorch's ``split``: ``dim`` cut into pieces of ``split_size_or_sections`` (an int; the last
    piece shorter) or of the listed sizes (which must add up to the dim), a tuple of views."""
    x = as_tensor(input, "split")
    if x.ndim == 0:
        raise ValueError("split: a 0-d tensor cannot be split (shape ())")
    d, _ = _dim_size(x, dim, "split")
    n, s = x.shape[d], split_size_or_sections
    if isinstance(s, numbers.Integral) and not isinstance(s, (bool, np.bool_)):
        if s <= 0 and not (s == 0 and n == 0):
            raise ValueError(f"split: split_size must be positive, got {s} (shape {x.shape})")
        sizes = [min(int(s), n - lo) for lo in range(0, n, int(s))] if n else [0]
    else:
        sizes = [int(k) for k in s]
        if any(k < 0 for k in sizes) or np.sum(sizes) != n:
            raise ValueError(f"split: split sizes {sizes} must be non-negative and add up to {n}, the size of "
                             f"dim {d} of shape {x.shape}")
    bounds = np.cumsum([0] + sizes).tolist()
    pre = (slice(None),) * d
    return tuple(x[pre + (slice(lo, hi),)] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True))


@composite("array_split", numpy=(np.array_split,), samples=lambda rng: [Sample(_r(rng, 5, 3), 3), Sample(_r(rng, 4, 3), [1, 3], axis=0)], complex=True)
@named("array_split")
def array_split(ary, indices_or_sections, axis=0):
    """As ``split``, where an int need not divide the axis (the first sections are one longer)."""
    return _split(ary, indices_or_sections, axis, "array_split", False)


def _split_samples(rng):
    return [Sample(_r(rng, 4, 4, 2), 2)]


@composite("hsplit", numpy=(np.hsplit,), samples=_split_samples, complex=True)
@named("hsplit")
def hsplit(ary, indices_or_sections):
    """``split`` along the second axis (the first for 1-D)."""
    a = as_tensor(ary, "hsplit")
    return _split(a, indices_or_sections, 0 if a.ndim == 1 else 1, "hsplit", True)


@composite("vsplit", numpy=(np.vsplit,), samples=_split_samples, complex=True)
@named("vsplit")
def vsplit(ary, indices_or_sections):
    """``split`` along the first axis."""
    return _split(as_tensor(ary, "vsplit"), indices_or_sections, 0, "vsplit", True)


@composite("dsplit", numpy=(np.dsplit,), samples=_split_samples, complex=True)
@named("dsplit")
def dsplit(ary, indices_or_sections):
    """``split`` along the third axis."""
    return _split(as_tensor(ary, "dsplit"), indices_or_sections, 2, "dsplit", True)


def _chunk_bounds(n, chunks):
    """PyTorch's chunk sizes: ``ceil(n / chunks)`` each, the last one shorter, so there may be
    fewer than ``chunks``; an empty dim gives ``chunks`` empty chunks."""
    size = -(-n // chunks)
    if size == 0:
        return [(0, 0)] * chunks
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


@composite("chunk", method="chunk", torch=lambda th, x, chunks, dim=0: th.chunk(x, chunks, dim),
           samples=lambda rng: [Sample(_r(rng, 5, 3), 3), Sample(_r(rng, 2, 6), 4, dim=1), Sample(_r(rng, 2, 3), 1, -1)], complex=True)
@named("chunk")
def chunk(input, chunks, dim=0):  # noqa: A002
    """PyTorch's ``chunk``: ``dim`` cut into pieces of ``ceil(size / chunks)`` (the last shorter;
    there may be fewer than ``chunks``), a tuple of views. NumPy's ``array_split`` instead cuts
    into exactly ``chunks`` pieces."""
    x = as_tensor(input, "chunk")
    if isinstance(chunks, (bool, np.bool_)) or not isinstance(chunks, numbers.Integral):
        raise TypeError(f"chunk: chunks must be an int, got {type(chunks).__name__} {chunks!r}")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be greater than 0, got {chunks} (shape {x.shape})")
    if x.ndim == 0:
        raise ValueError("chunk: a 0-d tensor cannot be chunked (shape ())")
    d, _ = _dim_size(x, dim, "chunk")
    pre = (slice(None),) * d
    return tuple(x[pre + (slice(lo, hi),)] for lo, hi in _chunk_bounds(x.shape[d], int(chunks)))


@composite("unbind", method="unbind", torch=lambda th, x, dim=0: th.unbind(x, dim),
           samples=lambda rng: [Sample(_r(rng, 3, 2)), Sample(_r(rng, 2, 3, 2), dim=-2)], complex=True)
@named("unbind")
def unbind(input, dim=0):  # noqa: A002
    """PyTorch's ``unbind``: the slices along ``dim``, which is removed, as a tuple of views."""
    x = as_tensor(input, "unbind")
    if x.ndim == 0:
        raise ValueError("unbind: a 0-d tensor has no dim to unbind (shape ())")
    d, _ = _dim_size(x, dim, "unbind")
    pre = (slice(None),) * d
    return tuple(x[pre + (i, Ellipsis)] for i in range(x.shape[d]))


# -- taking ---------------------------------------------------------------------------------------


@composite("take", numpy=(np.take,), samples=lambda rng: [Sample(_r(rng, 3, 4), np.array([0, 2, 2])), Sample(_r(rng, 3, 4), np.array([[3], [0]]), axis=1),
                           Sample(_r(rng, 3, 4), 1, axis=-1)], method="take", complex=True)
@named("take")
def take(a, indices, axis=None):
    """Elements at ``indices`` along ``axis`` (of the flattened tensor when None); repeated indices
    accumulate in backward."""
    a = as_tensor(a, "take")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return _index(a, _ax(axis, a.ndim, "take"), indices)


@composite("take_along_axis", numpy=(np.take_along_axis,), samples=lambda rng: [Sample(_r(rng, 3, 4), np.array([[0, 3], [1, 1], [2, 0]]), axis=1),
                                      Sample(_r(rng, 3, 4), np.array([[2, 0, 1, 1]]), axis=0)],
      torch=lambda th, x, i, axis: th.take_along_dim(x, i, axis), complex=True)
@named("take_along_axis")
def take_along_axis(arr, indices, axis):
    """``arr`` indexed by ``indices`` along ``axis``, matching it elsewhere (``argsort``'s partner)."""
    a = as_tensor(arr, "take_along_axis")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = _ax(axis, a.ndim, "take_along_axis")
    idx = indices.data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.ndim != a.ndim:
        raise ValueError(f"take_along_axis: indices of ndim {idx.ndim} do not match arr of ndim {a.ndim}")
    full = tuple(idx if d == axis else np.arange(a.shape[d]).reshape((-1,) + (1,) * (a.ndim - d - 1))
                 for d in range(a.ndim))
    return a[full]


ARGSORT = defop("argsort", lambda xp, x, axis: xp.argsort(x, axis=axis, kind="stable"), kind="reduce")
SortResult = namedtuple("sort", ["values", "indices"])  # PyTorch's torch.return_types.sort


def _sort_index(a, axis, descending, name):
    """The stable argsort of the Tensor ``a`` along ``axis`` (descending: equal values keep their order)."""
    if not descending:
        return run_op(ARGSORT, a, axis=axis)
    key = a.detach()
    key = key.astype(np.int64) if key.dtype.kind in "bu" else key
    return run_op(ARGSORT, -key, axis=axis)


def _torch_dim(a, dim, name):
    if dim is None:
        raise TypeError(f"{name}: dim must be an int, got None")
    return 0 if a.ndim == 0 else _ax(dim, a.ndim, name)


@public(ARGSORT, method="argsort", numpy=(np.argsort,))
@named("argsort")
def argsort(a, axis=-1, kind=None, order=None, *, dim=NOARG, descending=False, stable=False):
    """The indices that sort ``a`` along ``axis`` (a stable sort; int64, not differentiable).
    PyTorch's ``dim=`` and ``descending=`` (equal values keep their order) are taken too."""
    a = as_tensor(a, "argsort")
    if isinstance(kind, (bool, np.bool_)):  # Tensor.argsort(dim, descending): PyTorch's positional order
        kind, descending = None, bool(kind)
    if order is not None:
        raise TypeError("argsort: order= (structured arrays) is not supported on Tensors")
    if dim is not NOARG:
        if axis != -1:
            raise TypeError("argsort: got both axis and its alias dim=; give one")
        if a.ndim == 0:  # PyTorch's argsort of a 0-d tensor: 0-d
            return reshape(_sort_index(reshape(a, (1,)), 0, descending, "argsort"), ())
        return _sort_index(a, _torch_dim(a, dim, "argsort"), descending, "argsort")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    if a.ndim == 0:  # NumPy's argsort of a 0-d array: [0]
        a, axis = reshape(a, (1,)), 0
    return _sort_index(a, _ax(axis, a.ndim, "argsort"), descending, "argsort")


@composite("sort", numpy=(np.sort,), samples=lambda rng: [Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), 0), Sample(_r(rng, 3, 4), None),
                                                         Sample(_r(rng, 3, 4), dim=0, descending=True)])
@named("sort")
def sort(a, axis=-1, kind=None, order=None, *, dim=NOARG, descending=NOARG, stable=NOARG):
    """A sorted copy along ``axis`` (flattened when None); each value's gradient goes back to
    where it came from (ties: in stable order).

    NumPy's spelling (``axis``, positional or keyword) returns the values; PyTorch's (``dim=``,
    ``descending=``, ``stable=``; ``Tensor.sort``) returns PyTorch's pair ``(values, indices)``.
    """
    if dim is not NOARG or descending is not NOARG or stable is not NOARG:
        if axis != -1:
            raise TypeError("sort: got both axis and its alias dim=; give one")
        return torch_sort(a, -1 if dim is NOARG else dim, descending is not NOARG and bool(descending))
    a = as_tensor(a, "sort")
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return take_along_axis(a, argsort(a, axis), axis)


def _sort_samples(rng):
    # no ties: finite differences cannot check a gradient there (tests/test_torch_ordering.py checks them against torch)
    return [Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), 0), Sample(_r(rng, 3, 4), descending=True),
            Sample(_r(rng, 3, 3), 0, True, stable=True)]


@composite("torch_sort", method="sort", export=False, samples=_sort_samples,
           torch=lambda th, x, dim=-1, descending=False, stable=False: th.sort(x, dim=dim, descending=descending, stable=stable))
@named("sort")
def torch_sort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """PyTorch's ``sort``: ``(values, indices)`` along ``dim``, descending if asked; the gradient goes
    to where each value came from. The sort is stable whatever ``stable`` says (equal values keep
    their order, descending too), so ties send their gradients as PyTorch's ``stable=True``."""
    a = as_tensor(input, "sort")
    if a.ndim == 0:
        return SortResult(a.clone(), mg_zeros_like_int(a))
    d = _torch_dim(a, dim, "sort")
    idx = _sort_index(a, d, bool(descending), "sort")
    return SortResult(take_along_axis(a, idx, d), idx)


def mg_zeros_like_int(a):
    """A 0-d int64 zero on ``a``'s device (the index of a 0-d tensor's only value)."""
    return Tensor(_xp(a).zeros((), dtype=np.int64))


# -- diagonals and triangles --------------------------------------------------------------------------


@composite("diagonal", numpy=(np.diagonal,), samples=lambda rng: [Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), 1), Sample(_r(rng, 3, 4), -2),
                               Sample(_r(rng, 2, 3, 4), 0, 2, 1), Sample(_r(rng, 2, 3, 3), axis1=-1, axis2=-2)],
      method="diagonal", torch=lambda th, x, offset=0, axis1=0, axis2=1: th.diagonal(x, offset, axis1, axis2), complex=True)
@named("diagonal")
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of the ``axis1``/``axis2`` planes, offset above (``offset > 0``) or below; the
    diagonal axis comes last, as NumPy's (a copy here, where NumPy returns a read-only view)."""
    a = as_tensor(a, "diagonal")
    a1, a2 = _ax(axis1, a.ndim, "diagonal"), _ax(axis2, a.ndim, "diagonal")
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    a = moveaxis(a, (a1, a2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = max(0, min(n - r0, m - c0))
    return a[..., np.arange(length) + r0, np.arange(length) + c0]


@composite("trace", numpy=(np.trace,), samples=lambda rng: [Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), 1), Sample(_r(rng, 2, 3, 3), 0, 1, 2)],
      method="trace", complex=True)
@named("trace")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along the diagonal (``diagonal``'s arguments); ints sum in int64."""
    return _sum(diagonal(a, offset, axis1, axis2), -1, dtype=dtype)


@composite("diag", numpy=(np.diag,), samples=lambda rng: [Sample(_r(rng, 3)), Sample(_r(rng, 3), 1), Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), -1)],
      torch=lambda th, x, k=0: th.diag(x, k), complex=True)
@named("diag")
def diag(v, k=0):
    """A 1-D input: the square matrix with ``v`` on its ``k``-th diagonal. A 2-D input: its
    ``k``-th diagonal."""
    v = as_tensor(v, "diag")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got shape {v.shape}")
    n = v.shape[0] + abs(k)
    i = np.arange(v.shape[0])
    return index_add((n, n), (i + max(-k, 0), i + max(k, 0)), v)


def _triangle(m, k, lower, name):
    m = as_tensor(m, name)
    if m.ndim < 2:
        raise ValueError(f"{name}: input must be at least 2-D, got shape {m.shape}")
    n, c = m.shape[-2], m.shape[-1]
    mask = _xp(m).tri(n, c, k if lower else k - 1, dtype=bool)
    zero = 0.0 if m.dtype.kind == "f" else 0
    out = where(mask, m, zero) if lower else where(mask, zero, m)
    return out if out.dtype == m.dtype else out.astype(m.dtype)


def _tri_samples(rng):
    return [Sample(_r(rng, 3, 4)), Sample(_r(rng, 3, 4), 1), Sample(_r(rng, 2, 3, 3), -1)]


@composite("tril", numpy=(np.tril,), samples=_tri_samples, torch=lambda th, x, k=0: th.tril(x, k), complex=True)
@named("tril")
def tril(m, k=0):
    """The lower triangle (on and below the ``k``-th diagonal) of the last two axes; zeros elsewhere,
    with no gradient there."""
    return _triangle(m, k, True, "tril")


@composite("triu", numpy=(np.triu,), samples=_tri_samples, torch=lambda th, x, k=0: th.triu(x, k), complex=True)
@named("triu")
def triu(m, k=0):
    """The upper triangle (on and above the ``k``-th diagonal) of the last two axes; zeros elsewhere,
    with no gradient there."""
    return _triangle(m, k, False, "triu")


# -- PyTorch's diag_embed and repeat_interleave ------------------------------------------------------


@composite("diag_embed", method="diag_embed", samples=lambda rng: [
    Sample(_r(rng, 3)), Sample(_r(rng, 2, 3), 1), Sample(_r(rng, 2, 3), -1, 0, 2), Sample(_r(rng, 2, 3), 0, -1, 0)],
    torch=lambda th, x, offset=0, dim1=-2, dim2=-1: th.diag_embed(x, offset, dim1, dim2), complex=True)
@named("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002 - PyTorch's names
    """PyTorch's ``diag_embed``: the last dim of ``input`` on the ``offset``-th diagonal of new
    square planes in dims ``dim1`` (rows) and ``dim2`` (columns) of the result, zeros elsewhere
    (one more dim than ``input``)."""
    x = as_tensor(input, "diag_embed")
    if x.ndim == 0:
        raise ValueError("diag_embed: input must have at least 1 dim, got a 0-d tensor")
    nd = x.ndim + 1
    d1, d2 = _ax(dim1, nd, "diag_embed"), _ax(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    k = x.shape[-1]
    n = k + abs(offset)
    batch = x.shape[:-1]
    b = int(np.prod(batch, dtype=np.int64))
    i = np.arange(k)
    out = index_add((b, n, n), (np.arange(b)[:, None], (i + max(-offset, 0))[None, :], (i + max(offset, 0))[None, :]),
                    reshape(x, (b, k)))
    out = reshape(out, batch + (n, n))
    return moveaxis(out, (nd - 2, nd - 1), (d1, d2))


@composite("repeat_interleave", method="repeat_interleave", samples=lambda rng: [
    Sample(_r(rng, 2, 3), 2), Sample(_r(rng, 2, 3), np.array([1, 0, 2]), dim=1), Sample(_r(rng, 2, 3), 3, dim=0)],
    torch=lambda th, x, repeats, dim=None: th.repeat_interleave(x, repeats, dim), complex=True)
@named("repeat_interleave")
def repeat_interleave(input, repeats, dim=None, *, output_size=None):  # noqa: A002
    """PyTorch's ``repeat_interleave``: each element repeated ``repeats`` times (an int, or one
    count per element along ``dim``); the flattened input when ``dim`` is None. NumPy's ``repeat``
    with PyTorch's names."""
    out = repeat(input, repeats, axis=dim)
    if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
        raise ValueError(f"repeat_interleave: output_size={output_size} but the result has "
                         f"{out.shape[0 if dim is None else dim]} along dim {dim}")
    return out


# -- PyTorch's method forms of tril, triu, diag, roll, tile, where ---------------------------------
# mg.tril(m, k), mg.diag(v, k), mg.roll(a, shift, axis), mg.tile(A, reps) and mg.where(cond, x, y) keep
# NumPy's names; the Tensor methods take PyTorch's (``diagonal=``, ``shifts, dims``, ``dims``) and
# Tensor.where is PyTorch's ``self.where(condition, y)``: self where condition else y.


@composite("torch_tril", method="tril", export=False, samples=_tri_samples,
           torch=lambda th, x, diagonal=0: th.tril(x, diagonal), complex=True)
@named("tril")
def torch_tril(input, diagonal=0):  # noqa: A002 - PyTorch's names
    """PyTorch's ``Tensor.tril(diagonal=0)``: the lower triangle of the last two dims, zeros elsewhere."""
    return _triangle(input, diagonal, True, "tril")


@composite("torch_triu", method="triu", export=False, samples=_tri_samples,
           torch=lambda th, x, diagonal=0: th.triu(x, diagonal), complex=True)
@named("triu")
def torch_triu(input, diagonal=0):  # noqa: A002
    """PyTorch's ``Tensor.triu(diagonal=0)``: the upper triangle of the last two dims, zeros elsewhere."""
    return _triangle(input, diagonal, False, "triu")


@composite("torch_diag", method="diag", export=False,
           samples=lambda rng: [Sample(_r(rng, 3)), Sample(_r(rng, 3), 1), Sample(_r(rng, 3, 4), diagonal=-1)],
           torch=lambda th, x, diagonal=0: th.diag(x, diagonal), complex=True)
@named("diag")
def torch_diag(input, diagonal=0):  # noqa: A002
    """PyTorch's ``Tensor.diag(diagonal=0)``: a 1-D tensor on the ``diagonal``-th diagonal of a square
    matrix, or a 2-D tensor's ``diagonal``-th diagonal."""
    return diag(input, diagonal)


@composite("torch_roll", method="roll", export=False, torch=_torch_roll_oracle,
           samples=lambda rng: [Sample(_r(rng, 2, 3), 2), Sample(_r(rng, 2, 3), -1, 1),
                                Sample(_r(rng, 2, 3, 2), (1, 2), dims=(0, -1))], complex=True)
@named("roll")
def torch_roll(input, shifts, dims=None):  # noqa: A002
    """PyTorch's ``Tensor.roll(shifts, dims=None)``: elements shifted by ``shifts`` along ``dims``
    (the flattened tensor when None, its shape restored), wrapping around."""
    if dims is not None and isinstance(shifts, (tuple, list)) != isinstance(dims, (tuple, list)) \
            or isinstance(dims, (tuple, list)) and len(shifts) != len(dims):
        raise ValueError(f"roll: shifts {shifts!r} and dims {dims!r} must have the same length")
    return roll(input, shifts, dims)


@composite("torch_tile", method="tile", export=False, torch=lambda th, x, *dims: x.tile(*dims),
           samples=lambda rng: [Sample(_r(rng, 2, 3), (2,)), Sample(_r(rng, 2, 3), (2, 1, 2)),
                                Sample(_r(rng, 2, 3), 1, 3), Sample(_r(rng, 2, 3), 2)], complex=True)
@named("tile")
def torch_tile(input, *dims):  # noqa: A002
    """PyTorch's ``Tensor.tile(*dims)``: repeated ``dims[i]`` times along each dim (ones prepended to
    the shorter of ``dims`` and the shape), as NumPy's ``tile``; ``dims`` a tuple or the ints themselves."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in dims):
        raise TypeError(f"tile: dims must be ints (or one tuple of ints), got {dims!r}")
    return tile(input, dims)


@composite("torch_flip", method="flip", export=False, torch=lambda th, x, *dims, **kw: x.flip(*dims, **kw),
           samples=lambda rng: [Sample(_r(rng, 2, 3, 2), 0, 2), Sample(_r(rng, 2, 3), (0, -1)),
                                Sample(_r(rng, 2, 3), 1), Sample(_r(rng, 2, 3), dims=(1,))], complex=True)
@named("flip")
def torch_flip(input, *args, dims=NOARG):  # noqa: A002
    """PyTorch's ``Tensor.flip(*dims)``: reversed along ``dims`` (a tuple, or the ints themselves, or
    ``dims=``); ``t.flip()`` reverses every dim (NumPy's ``flip`` with no axis)."""
    if dims is not NOARG and args:
        raise TypeError(f"flip: got dims both positionally {args!r} and as dims={dims!r}; give one")
    if dims is NOARG:
        dims = None if not args else args[0] if len(args) == 1 else tuple(args)
    return flip(input, dims)


@composite("torch_where", method="where", export=False, torch=lambda th, x, c, y: x.where(c, y),
           samples=lambda rng: [Sample(_r(rng, 3, 4), rng.random((3, 4)) > 0.5, _r(rng, 3, 4)),
                                Sample(_r(rng, 4), rng.random((3, 1)) > 0.5, 2.0)], complex=True)
@named("where")
def torch_where(input, condition, y):  # noqa: A002
    """PyTorch's ``Tensor.where(condition, y)``: ``self`` where ``condition`` else ``y`` (broadcast)."""
    return where(condition, input, y)
