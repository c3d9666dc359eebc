"""A CPU stand-in for CuPy: NumPy underneath, CuPy's manners on top.

It keeps device code honest on machines without a GPU (CI has none). Select it
with ``MINIGRAD_DEVICE=fakecuda`` in the test suite, or ``mg.backend.use_fake_cupy()``;
minigrad then treats it exactly as it treats CuPy, as the device ``"cuda:0"``.

What it enforces, as CuPy does:

- no implicit conversion to NumPy: ``np.asarray(a)``, ``np.array(a)`` and
  ``a.__array__()`` raise ``TypeError``; ``a.get()`` (or ``asnumpy``) copies to
  the host explicitly;
- no mixing with host arrays: an operator, ufunc or function given a device array
  and a ``numpy.ndarray`` raises ``TypeError`` (NumPy and Python scalars are fine);
  assigning a ``numpy.ndarray`` into a device array raises too;
- only functions CuPy has: the module exposes a curated subset of NumPy's names
  (``getattr`` of anything else raises ``AttributeError``), ``np.<func>(device_array)``
  dispatches to that subset and fails for the rest, ufunc methods exist only where
  CuPy has them (``add.at``, ``add.reduceat``...), ``lexsort`` takes one 2-D array,
  ``sort``/``argsort`` take no ``kind`` but ``"stable"``;
- ``cupyx.scatter_add`` (and ``add.at``) accept only the dtypes CUDA's atomicAdd
  supports (int32, uint32, uint64, float16, float32, float64);
- integer index arrays are not bounds-checked: out-of-range entries wrap around their axis
  (indexing, assignment, ``take``, ``scatter_add``), where NumPy would raise ``IndexError``;
- reductions and integer indexing return 0-d arrays, never NumPy scalars;
  ``.flags`` has no ``writeable``; ``.device.id``, ``.data.ptr`` exist; the dtypes
  CuPy lacks (object, strings, datetimes, longdouble) are refused.

The package: ``_base`` (errors, checks, devices, the dispatch tables) <- ``_ndarray`` (the
array) <- ``_funcs`` (ufuncs, functions, factories, linalg, cupyx, lib; fills the tables) <-
this entry, the module minigrad uses as ``cupy``: its names, constants and ``__getattr__``.
"""
from __future__ import annotations

import sys as _sys

import numpy as _np

# the module's names (``X as X``: re-exported, as cupy has them)
from ._base import _FUNCS
from ._base import cuda as cuda
from ._funcs import array as array
from ._funcs import asanyarray as asanyarray
from ._funcs import asarray as asarray
from ._funcs import ascontiguousarray as ascontiguousarray
from ._funcs import asnumpy as asnumpy
from ._funcs import cupyx as cupyx
from ._funcs import lib as lib
from ._funcs import fft as fft
from ._funcs import linalg as linalg
from ._funcs import ufunc as ufunc
from ._ndarray import ndarray as ndarray

__all__ = ["ndarray", "asarray", "array", "asnumpy", "get_array_module", "cuda"]


def get_array_module(*args):
    for a in args:
        if isinstance(a, ndarray):
            return _this
    return _np


_FUNCS["get_array_module"] = get_array_module  # the last entry of the table _funcs fills

# -- constants and dtypes (CuPy re-exports NumPy's) ----------------------------------------------------

_CONSTS = dict(
    newaxis=None, inf=_np.inf, nan=_np.nan, pi=_np.pi, e=_np.e,
    dtype=_np.dtype, finfo=_np.finfo, iinfo=_np.iinfo, generic=_np.generic, number=_np.number,
    integer=_np.integer, floating=_np.floating, complexfloating=_np.complexfloating,
    bool_=_np.bool_, int8=_np.int8, int16=_np.int16, int32=_np.int32, int64=_np.int64, uint8=_np.uint8,
    uint16=_np.uint16, uint32=_np.uint32, uint64=_np.uint64, float16=_np.float16, float32=_np.float32,
    float64=_np.float64, complex64=_np.complex64, complex128=_np.complex128, intp=_np.intp,
    ndarray=ndarray, ufunc=ufunc, linalg=linalg, fft=fft, lib=lib, cuda=cuda,
)


def __getattr__(name):
    try:
        return _FUNCS[name]
    except KeyError:
        pass
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"fakecupy: CuPy has no {name!r} (or the stand-in does not list it); use functions NumPy and CuPy "
        "both have, or a backend helper"
    )


globals().update(_CONSTS)
_this = _sys.modules[__name__]  # what get_array_module answers for a device array
