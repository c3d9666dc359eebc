"""Array kernels that NumPy and CuPy spell differently: scatter-add (``np.add.at`` against
``cupyx.scatter_add``), a bincount of rows, a checked strided view, an array's address.
Each takes its arrays' module, or finds it with ``backend.array_module``."""
from __future__ import annotations

import numpy as np

from . import backend as _be
from .backend import array_module

# dtypes cupyx.scatter_add takes (CUDA atomicAdd); others are routed through one of these
_ATOMIC_ADD = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.uint64, np.float16, np.float32, np.float64))


def index_add(xp, target, index, values) -> None:
    """target[index] += values, accumulating repeated indices (NumPy and CuPy).

    NumPy: ``np.add.at``. CuPy: ``cupyx.scatter_add`` (``cupy.scatter_add`` was removed in
    CuPy 8), which takes only atomicAdd's dtypes: int64 adds as uint64 (the same bits in two's
    complement), small ints and bool through int32, complex as two real halves.
    """
    if xp is np:
        np.add.at(target, index, values)
        return
    batched = getattr(target, "batch_namespace", None) or (xp if hasattr(xp, "scatter_target") else None)
    if batched is not None:
        # vmap (a batched target, or the namespace of an op with batched arrays, _batched.py): each element's
        # own scatter, as one scatter on the physical arrays
        index_add(*batched.scatter_target(target, index, values))
        return
    dt = target.dtype
    if dt in _ATOMIC_ADD:
        _be._cupyx.scatter_add(target, index, values)
    elif dt == np.int64:
        v = xp.asarray(values).astype(np.int64, copy=False)
        _be._cupyx.scatter_add(target.view(np.uint64), index, v.view(np.uint64))
    elif dt.kind == "c":
        v = xp.asarray(values)
        for part, unit in ((v.real, 1), (v.imag, 1j)):
            acc = xp.zeros(target.shape, dtype=part.dtype)
            index_add(xp, acc, index, part)
            target += acc * unit
    else:  # bool, int8/16, uint8/16: accumulate in 32 bits, then add once (wraps like NumPy)
        acc = xp.zeros(target.shape, dtype=np.uint32 if dt.kind == "u" else np.int32)
        _be._cupyx.scatter_add(acc, index, xp.asarray(values).astype(acc.dtype))
        if dt == np.bool_:
            target |= acc != 0
        else:
            target += acc.astype(dt)


def bincount_add(xp, index, weights, minlength):
    """Sum ``weights`` (1-D or 2-D rows) into ``minlength`` bins given by ``index``."""
    if weights.ndim == 1:
        w = weights
        if w.dtype.kind == "c":
            return bincount_add(xp, index, w.real, minlength) + 1j * bincount_add(xp, index, w.imag, minlength)
        if w.dtype.kind in "biu":
            out = xp.zeros(minlength, dtype=w.dtype)
            index_add(xp, out, index, w)
            return out
        return xp.bincount(index, weights=w, minlength=minlength).astype(w.dtype, copy=False)
    out = xp.zeros((minlength,) + weights.shape[1:], dtype=weights.dtype)
    index_add(xp, out, index, weights)
    return out


def matmul(a, b):
    """``a @ b`` for backend arrays of one device (BLAS's threads are the user's: see ``mg.set_num_threads``)."""
    return array_module(a, b).matmul(a, b)


def as_strided(buffer, offset: int, shape, strides):
    """A view of the 1-D ``buffer`` starting at element ``offset`` with ``shape`` and ``strides``
    in elements, made by the buffer's own array module (``numpy``/``cupy.lib.stride_tricks``).

    Every element the view reaches must lie inside the buffer (checked: a ValueError
    otherwise), because ``as_strided`` itself checks nothing.
    """
    xp = array_module(buffer)
    if getattr(buffer, "ndim", None) != 1:
        raise ValueError(f"as_strided: expected a 1-D buffer, got shape {getattr(buffer, 'shape', None)}")
    shape = tuple(int(n) for n in shape)
    strides = tuple(int(s) for s in strides)
    offset = int(offset)
    if all(n > 0 for n in shape):
        lo = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s < 0)
        hi = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s > 0)
        if lo < 0 or hi >= buffer.shape[0]:
            raise ValueError(
                f"as_strided: shape {shape} with strides {strides} from offset {offset} reaches elements "
                f"{lo}..{hi}, outside the buffer of {buffer.shape[0]} elements"
            )
        start = buffer[offset:offset + 1]  # a 1-element view whose pointer is the walk's origin
    else:
        start = buffer[:0] if buffer.shape[0] == 0 else buffer[:1]
    unit = buffer.strides[0]  # a buffer may itself be strided: element i lies at i * unit bytes
    return xp.lib.stride_tricks.as_strided(start, shape, tuple(s * unit for s in strides))


def data_ptr(a) -> int:
    """Address of an array's first element (NumPy or CuPy)."""
    ai = getattr(a, "__array_interface__", None)
    if ai is not None:
        return ai["data"][0]
    return a.data.ptr


def overlapping(a) -> bool:
    """Several elements on one memory location (a zero stride on a dim longer than 1)."""
    return any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides, strict=False))


def view_positions(v, b):
    """Flat (C-order) index in ``b`` of every element of its view ``v``: an int64 array of ``v``'s shape."""
    if getattr(v, "vmap_levels", None):  # vmap: each element's view in its own base (_batched.py)
        return v.view_positions_in(b, view_positions)
    xp = _be.array_module(b)
    isz = b.itemsize
    if v.size == 0:
        return xp.zeros(v.shape, dtype=np.int64)
    bst = tuple(s // isz for s in b.strides)
    vst = tuple(s // isz for s in v.strides)
    lo = sum((n - 1) * s for n, s in zip(b.shape, bst, strict=False) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(b.shape, bst, strict=False) if s > 0)
    if overlapping(b):
        raise RuntimeError("in-place write through a view of a broadcast tensor: clone the base first")
    tag = xp.full(hi - lo + 1, -1, dtype=np.int64)  # one cell per memory location the base spans
    as_strided(tag, -lo, b.shape, bst)[...] = xp.arange(b.size, dtype=np.int64).reshape(b.shape)
    off = (data_ptr(v) - data_ptr(b)) // isz - lo
    pos = as_strided(tag, off, v.shape, vst).copy()
    if bool((pos < 0).any()):
        raise RuntimeError("internal error: a view reaches memory its base does not hold")
    return pos
