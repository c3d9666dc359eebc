"""The bottom of the CPU stand-in for CuPy (the package docstring says what it enforces).

What every other part of it needs, and nothing that needs the array class: the errors, the
dtype and sort-kind checks, atomicAdd's dtypes, CuPy's wrap-around of integer indices, the
device, flags and ``cuda`` namespace, and the dispatch tables the array reads.

Import order is one way: ``_base`` <- ``_ndarray`` <- ``_funcs`` <- the package entry.
"""
from __future__ import annotations

import types as _types

import numpy as _np

# -- the dispatch tables ----------------------------------------------------------------------
# ndarray.__array_ufunc__ / __array_function__ (in _ndarray) look names up here; _funcs fills
# them once, when the package is imported (and the entry adds get_array_module), so the array
# never imports the functions that wrap it. These dicts are the one binding place.
_UFUNCS: dict = {}        # ufunc name -> the stand-in's ufunc
_FUNCS: dict = {}         # module-level name -> the stand-in's function (ufuncs included)
_LINALG_FUNCS: dict = {}  # numpy.linalg name -> the stand-in's linalg function
_FFT_FUNCS: dict = {}  # numpy.fft name -> the stand-in's fft function (cupy.fft)

_MSG_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
    "explicitly. (fakecupy: this would fail on CuPy too)"
)


def _mixing_error(where, obj):
    return TypeError(
        f"Unsupported type {type(obj)} in {where}: a device array cannot be mixed with a host numpy.ndarray; "
        "move one explicitly (xp.asarray(host) / device.get()). (fakecupy: this would fail on CuPy too)"
    )


_BAD_KINDS = frozenset("OUSVMm")
_LONG = {_np.dtype(_np.longdouble), _np.dtype(_np.clongdouble)} - {_np.dtype(_np.float64), _np.dtype(_np.complex128)}


def _check_dtype(dt, where):
    dt = _np.dtype(dt)
    if dt.kind in _BAD_KINDS or dt in _LONG:
        raise TypeError(f"{where}: CuPy does not support dtype {dt} (fakecupy)")
    return dt


def _check_kind(kind, where):
    if kind not in (None, "stable"):
        raise ValueError(f"{where}: CuPy accepts kind=None or 'stable' only, got {kind!r} (fakecupy)")


_ATOMIC_ADD = frozenset(_np.dtype(t) for t in (_np.int32, _np.uint32, _np.uint64, _np.float16,
                                                _np.float32, _np.float64))


def _check_atomic(dt, where):
    if _np.dtype(dt) not in _ATOMIC_ADD:
        raise TypeError(
            f"{where}: scatter_add only supports int32, float16, float32, float64, uint32, uint64, as data type "
            f"(got {_np.dtype(dt)}; fakecupy mirrors CuPy's atomicAdd limits)"
        )


def _cupy_index(shape, idx):
    """CuPy does not bounds-check integer index arrays: they wrap around their axis (NumPy raises)."""
    tup = idx if isinstance(idx, tuple) else (idx,)

    def dims(i):
        if i is None or i is Ellipsis or isinstance(i, (bool, _np.bool_)):
            return 0
        return i.ndim if isinstance(i, _np.ndarray) and i.dtype.kind == "b" else 1

    out, d = [], 0
    for i in tup:
        if i is Ellipsis:
            d += len(shape) - sum(dims(j) for j in tup)
        elif isinstance(i, _np.ndarray) and i.dtype.kind in "iu" and d < len(shape) and shape[d] > 0:
            i = i % shape[d]
        out.append(i)
        d += dims(i)
    return tuple(out) if isinstance(idx, tuple) else out[0]


# -- the device, its memory and flags -----------------------------------------------------------

class _Device:
    __slots__ = ("id",)

    def __init__(self, id=0):  # noqa: A002 - CuPy's name
        self.id = int(id)

    def __enter__(self):
        if not 0 <= self.id < _N_DEVICES:
            raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id} (fakecupy has {_N_DEVICES})")
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return self.__enter__()

    def synchronize(self):
        pass

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self):
        return hash(("fakecuda", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


_N_DEVICES = 1


class _MemoryPointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class _Flags:
    """CuPy's flags: contiguity and ownership, no ``writeable``."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = bool(a.flags.owndata)

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


# -- cuda ----------------------------------------------------------------------------------------

class _Runtime:
    @staticmethod
    def getDeviceCount():  # noqa: N802 - CuPy's name
        return _N_DEVICES

    @staticmethod
    def getDevice():  # noqa: N802
        return 0

    @staticmethod
    def deviceSynchronize():  # noqa: N802
        pass


class _Stream:
    def synchronize(self):
        pass


class _Event:
    def __init__(self, *a, **k):
        import time

        self._time = time
        self._t = None

    def record(self, stream=None):
        self._t = self._time.perf_counter()

    def synchronize(self):
        pass


def _get_elapsed_time(start, end):
    return (end._t - start._t) * 1e3


_Stream.null = _Stream()
cuda = _types.SimpleNamespace(
    Device=_Device, runtime=_Runtime, Stream=_Stream, Event=_Event, get_elapsed_time=_get_elapsed_time,
    is_available=lambda: True,
)
