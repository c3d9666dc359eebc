"""Which array module (NumPy, or CuPy on a GPU) an array belongs to: all the tape needs of the
backend. backend.py imports CuPy when a CUDA device is first asked for and records it here; it
also parses device strings and moves data."""
from __future__ import annotations

import numpy as np

_cupy = None  # the cupy module (or the CPU stand-in, minigrad.testing.fakecupy) once a CUDA device was asked for


def is_cupy_array(a) -> bool:
    return _cupy is not None and isinstance(a, _cupy.ndarray)


def array_module(*arrays):
    """The array module (numpy or cupy) of the given arrays; NumPy for scalars.

    Raises a RuntimeError naming both devices when host and device arrays are mixed.
    """
    xp = first = None
    for a in arrays:
        if _cupy is not None and isinstance(a, _cupy.ndarray):
            m = _cupy
        elif isinstance(a, np.ndarray):
            m = np
        else:
            m = getattr(a, "batch_namespace", None)  # a vmap level's array (_batched.py): its namespace
            if m is None:
                continue
        if xp is None:
            xp, first = m, a
        elif xp is not m:
            inner, other = getattr(m, "module", m), getattr(xp, "module", xp)
            if inner is not other:
                raise RuntimeError(f"expected all arrays on one device, got {device_of(first)} and {device_of(a)}")
            if m is not inner:  # a batched array's namespace routes the plain arrays' calls too
                xp, first = m, a
    return np if xp is None else xp


def shares_memory(a, b) -> bool:
    """Whether the arrays ``a`` and ``b`` may overlap in memory. An empty array shares none, and
    arrays on two devices share none."""
    if a.size == 0 or b.size == 0:
        return False
    try:
        xp = array_module(a, b)
    except RuntimeError:
        return False
    return bool(xp.may_share_memory(a, b))


def device_of(a) -> str:
    """The device string of a backend array: 'cpu' or 'cuda:N'."""
    while hasattr(a, "batch_namespace"):  # a vmap level's array: its physical array's device
        a = a.p
    return f"cuda:{a.device.id}" if is_cupy_array(a) else "cpu"
