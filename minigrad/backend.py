"""Which array module an array belongs to, device strings, and moving data.

This is the only module that imports CuPy, and only when a CUDA device is
asked for. Every op finds its array module from its inputs with
``array_module(*arrays)`` and uses functions NumPy and CuPy both have.
"""
from __future__ import annotations

import numpy as np

_cupy = None  # the cupy module once a CUDA device has been asked for
_ndarray = np.ndarray


def _import_cupy():
    global _cupy
    if _cupy is None:
        try:
            import cupy  # noqa: PLC0415 - optional dependency, imported on demand
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise RuntimeError(
                "device 'cuda' needs CuPy: install it with `pip install minigrad[gpu]` "
                "(or a cupy-cudaXX wheel matching your CUDA) on a machine with an NVIDIA GPU"
            ) from e
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # pragma: no cover
            raise RuntimeError(f"device 'cuda': CuPy is installed but no GPU is usable ({e})") from e
        if n == 0:  # pragma: no cover
            raise RuntimeError("device 'cuda': CuPy is installed but no GPU was found")
        _cupy = cupy
    return _cupy


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
        _import_cupy()
    _default_device = d


def get_default_device() -> str:
    return _default_device


def xp_for(device: str):
    """The array module for a normalised device string."""
    if device == "cpu":
        return np
    return _import_cupy()


def to_device(a, device: str):
    """Move array ``a`` to ``device`` explicitly (a copy when the device changes)."""
    if device == "cpu":
        if is_cupy_array(a):
            return a.get()
        return a
    cp = _import_cupy()
    idx = int(device.split(":")[1])
    if isinstance(a, cp.ndarray) and a.device.id == idx:
        return a
    with cp.cuda.Device(idx):
        return cp.asarray(a)


def to_numpy(a) -> np.ndarray:
    """A host NumPy array for ``a`` (explicit device-to-host copy for CuPy)."""
    if is_cupy_array(a):
        return a.get()
    return np.asarray(a)


def index_add(xp, target, index, values) -> None:
    """target[index] += values, accumulating repeated indices (NumPy and CuPy)."""
    if xp is np:
        np.add.at(target, index, values)
    else:  # pragma: no cover - GPU only
        import cupyx  # noqa: PLC0415

        cupyx.scatter_add(target, index, values)


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
