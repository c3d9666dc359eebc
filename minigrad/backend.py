"""Devices: which array module an array belongs to (``array_module``, from ``_xp.py``), device
strings, and moving data.

This is the only module that imports CuPy, and only when a CUDA device is asked for. Every op
finds its array module from its inputs with ``array_module(*arrays)`` and uses functions NumPy
and CuPy both have.
"""
from __future__ import annotations

import numpy as np

from . import _xp
from ._xp import array_module, device_of, is_cupy_array  # noqa: F401 - the backend's names too

_cupyx = None  # CuPy's companion namespace, for scatter_add
_n_gpus = 0    # how many CUDA devices it sees


# how to get CuPy: the README's words ("The GPU"), so the error and the README say the same
GPU_INSTALL = ('bash scripts/setup.sh gpu (in a clone; elsewhere pip install "minigrad[gpu]"), or the '
               "cupy-cudaXX wheel matching your CUDA")


def _import_cupy(device: str = "cuda:0"):
    global _cupyx, _n_gpus
    if _xp._cupy is None:
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
        _xp._cupy, _cupyx, _n_gpus = cupy, cupyx, n
    return _xp._cupy


def use_fake_cupy(enable: bool = True) -> None:
    """Testing aid: treat the CPU stand-in ``minigrad.testing.fakecupy`` as CuPy (device 'cuda:0').

    ``enable=False`` forgets it; the next CUDA request imports the real CuPy.
    """
    global _cupyx, _n_gpus
    if enable:
        from .testing import fakecupy  # noqa: PLC0415

        _xp._cupy, _cupyx, _n_gpus = fakecupy, fakecupy.cupyx, fakecupy.cuda.runtime.getDeviceCount()
    else:
        _xp._cupy = _cupyx = None



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
    if hasattr(a, "batch_namespace"):  # a vmap level's array (_batched.BatchedArray): its physical array moves
        return type(a)(a.level, to_device(a.p, device))
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
