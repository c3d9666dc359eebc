"""Which array module an array belongs to, device strings, and moving data.

This is the only module that imports CuPy, and only when a CUDA device is
asked for. Every op finds its array module from its inputs with
``array_module(*arrays)`` and uses functions NumPy and CuPy both have.
"""
from __future__ import annotations

import numpy as np

_cupy = None   # the cupy module (or the CPU stand-in) once a CUDA device has been asked for
_cupyx = None  # its companion namespace, for scatter_add
_n_gpus = 0    # how many CUDA devices it sees


# how to get CuPy: the README's words ("The GPU"), so the error and the README say the same
GPU_INSTALL = ('bash scripts/setup.sh gpu (in a clone; elsewhere pip install "minigrad[gpu]"), or the '
               "cupy-cudaXX wheel matching your CUDA")


def _import_cupy(device: str = "cuda:0"):
    global _cupy, _cupyx, _n_gpus
    if _cupy is None:
        try:
            import cupy  # noqa: PLC0415 - optional dependency, imported on demand
            import cupyx  # noqa: PLC0415
        except ImportError as e:
            raise RuntimeError(
                f"device {device!r} needs CuPy, which is not installed: {GPU_INSTALL}, on a machine with an "
                f"NVIDIA GPU ({e})"
            ) from e
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # pragma: no cover - depends on the machine
            raise RuntimeError(f"device {device!r}: CuPy is installed but no GPU is usable ({e})") from e
        if n == 0:  # pragma: no cover
            raise RuntimeError(f"device {device!r}: CuPy is installed but no GPU was found")
        _cupy, _cupyx, _n_gpus = cupy, cupyx, n
    return _cupy


def use_fake_cupy(enable: bool = True) -> None:
    """Testing aid: treat the CPU stand-in ``minigrad._fakecupy`` as CuPy (device 'cuda:0').

    ``enable=False`` forgets it; the next CUDA request imports the real CuPy.
    """
    global _cupy, _cupyx, _n_gpus
    if enable:
        from . import _fakecupy  # noqa: PLC0415

        _cupy, _cupyx, _n_gpus = _fakecupy, _fakecupy.cupyx, _fakecupy.cuda.runtime.getDeviceCount()
    else:
        _cupy = _cupyx = None


def is_cupy_array(a) -> bool:
    return _cupy is not None and isinstance(a, _cupy.ndarray)


def array_module(*arrays):
    """The array module (numpy or cupy) of the given arrays; NumPy for scalars.

    Raises a RuntimeError naming both devices when host and device arrays are mixed.
    """
    xp = None
    first = None
    for a in arrays:
        if _cupy is not None and isinstance(a, _cupy.ndarray):
            m = _cupy
        elif isinstance(a, np.ndarray):
            m = np
        else:
            continue
        if xp is None:
            xp, first = m, a
        elif xp is not m:
            raise RuntimeError(
                f"expected all arrays on one device, got {device_of(first)} and {device_of(a)}"
            )
    return np if xp is None else xp


def device_of(a) -> str:
    """The device string of a backend array: 'cpu' or 'cuda:N'."""
    if is_cupy_array(a):
        return f"cuda:{a.device.id}"
    return "cpu"


def parse_device(device) -> str:
    """Normalise a device spec to 'cpu' or 'cuda:N'."""
    if device is None:
        return _default_device
    d = str(device)
    if d == "cpu":
        return "cpu"
    if d == "cuda":
        return "cuda:0"
    if d.startswith("cuda:") and d[5:].isdigit():
        return d
    raise ValueError(f"unknown device {device!r}: expected 'cpu', 'cuda' or 'cuda:N'")


_default_device = "cpu"


def set_default_device(device) -> None:
    """Device used by factories when no ``device=`` is given."""
    global _default_device
    d = parse_device(device)
    if d != "cpu":
        _import_cupy(d)
    _default_device = d


def get_default_device() -> str:
    return _default_device


def xp_for(device: str):
    """The array module for a normalised device string."""
    if device == "cpu":
        return np
    cp = _import_cupy(device)
    _device_index(device)
    return cp


def _device_index(device: str) -> int:
    """N of 'cuda:N', checked against the GPUs present."""
    idx = int(device.split(":")[1])
    if idx >= _n_gpus:
        raise ValueError(
            f"device {device!r} does not exist: this machine has {_n_gpus} CUDA device(s) (cuda:0..cuda:{_n_gpus - 1})"
        )
    return idx


def to_device(a, device: str):
    """Move array ``a`` to ``device`` explicitly (a copy when the device changes)."""
    if device == "cpu":
        if is_cupy_array(a):
            return a.get()
        return a
    cp = _import_cupy(device)
    idx = _device_index(device)
    if isinstance(a, cp.ndarray):
        if a.device.id == idx:
            return a
        with cp.cuda.Device(idx):
            return cp.array(a, copy=True)  # peer copy onto the current device
    with cp.cuda.Device(idx):
        return cp.asarray(a)  # host -> device copy


def to_numpy(a) -> np.ndarray:
    """A host NumPy array for ``a`` (explicit device-to-host copy for CuPy)."""
    if is_cupy_array(a):
        return a.get()
    return np.asarray(a)


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
    dt = target.dtype
    if dt in _ATOMIC_ADD:
        _cupyx.scatter_add(target, index, values)
    elif dt == np.int64:
        v = xp.asarray(values).astype(np.int64, copy=False)
        _cupyx.scatter_add(target.view(np.uint64), index, v.view(np.uint64))
    elif dt.kind == "c":
        v = xp.asarray(values)
        for part, unit in ((v.real, 1), (v.imag, 1j)):
            acc = xp.zeros(target.shape, dtype=part.dtype)
            index_add(xp, acc, index, part)
            target += acc * unit
    else:  # bool, int8/16, uint8/16: accumulate in 32 bits, then add once (wraps like NumPy)
        acc = xp.zeros(target.shape, dtype=np.uint32 if dt.kind == "u" else np.int32)
        _cupyx.scatter_add(acc, index, xp.asarray(values).astype(acc.dtype))
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
