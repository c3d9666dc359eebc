"""The stand-in's device array, ``ndarray``: a NumPy array that refuses to leave the device
implicitly, with CuPy's operators and methods, and the wrapping of NumPy values into it.

It dispatches ``np.<ufunc>(device)`` and ``np.<func>(device)`` through the tables in ``_base``,
which ``_funcs`` fills: this module imports ``_base`` only.
"""
from __future__ import annotations

import operator as _op

import numpy as _np

from ._base import (
    _FFT_FUNCS,
    _FUNCS,
    _LINALG_FUNCS,
    _MSG_IMPLICIT,
    _UFUNCS,
    _check_dtype,
    _check_kind,
    _cupy_index,
    _Device,
    _Flags,
    _MemoryPointer,
    _mixing_error,
)


def _wrap(r):
    """NumPy results -> device arrays (scalars become 0-d arrays, as CuPy returns them)."""
    if isinstance(r, _np.ndarray):
        _check_dtype(r.dtype, "result")
        return ndarray._from(r)
    if isinstance(r, _np.generic):
        return ndarray._from(_np.asarray(r))
    if isinstance(r, tuple):
        return tuple(_wrap(x) for x in r)
    if isinstance(r, list):
        return [_wrap(x) for x in r]
    return r


def _unwrap(x, where):
    """A device array -> its NumPy array; host arrays refused; containers unwrapped."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, _np.ndarray):
        raise _mixing_error(where, x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(e, where) for e in x)
    return x


def _unwrap_index(idx):
    """Indices may be device arrays, ints, slices, lists and NumPy arrays (CuPy converts those)."""
    if isinstance(idx, tuple):
        return tuple(_unwrap_index(i) for i in idx)
    if isinstance(idx, ndarray):
        return idx._a
    if isinstance(idx, list):
        return _np.asarray([i._a if isinstance(i, ndarray) else i for i in idx])
    return idx


class ndarray:  # noqa: N801 - CuPy's name
    """A device array of the stand-in (a NumPy array that refuses to leave the device implicitly)."""

    __module__ = "minigrad.testing.fakecupy"  # its public home (reprs and messages name it as before the split)
    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100  # CuPy's value: a Tensor (1000) wins the reflected operator

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._a = _np.empty(shape, _check_dtype(dtype, "ndarray"), order=order)

    @classmethod
    def _from(cls, a):
        self = object.__new__(cls)
        self._a = a
        return self

    # -- refusing the host ----------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_MSG_IMPLICIT)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # CuPy dispatches np.<ufunc>(device_array) to its own ufunc of the same name
        f = _UFUNCS.get(ufunc.__name__)
        if f is None:
            return NotImplemented
        if method == "__call__":
            return f(*inputs, **kwargs)
        if method in ("outer", "reduce", "accumulate", "reduceat"):
            m = getattr(f, method, None)
            return NotImplemented if m is None else m(*inputs, **kwargs)
        return NotImplemented  # np.add.at(device, ...) does not dispatch: use cupyx.scatter_add

    def __array_function__(self, func, types, args, kwargs):
        # np.<name> dispatches to cupy.<name>, np.linalg.<name> to cupy.linalg.<name>, where CuPy has it
        table = {"numpy": _FUNCS, "numpy.linalg": _LINALG_FUNCS, "numpy.fft": _FFT_FUNCS}.get(func.__module__)
        f = None if table is None else table.get(func.__name__)
        if f is None:
            return NotImplemented
        return f(*args, **kwargs)

    # -- explicit transfers -------------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        """Copy to the host: a NumPy array (never a view of device memory)."""
        if out is not None:
            out[...] = self._a
            return out
        return _np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy a host array into this device array."""
        if not isinstance(arr, _np.ndarray):
            raise TypeError(f"set: expected numpy.ndarray, got {type(arr)}")
        if arr.shape != self._a.shape:
            raise ValueError(f"set: shape mismatch {arr.shape} vs {self._a.shape}")
        self._a[...] = arr

    def item(self, *args):
        return self._a.item(*args)

    def tolist(self):
        return self._a.tolist()

    # -- attributes -----------------------------------------------------------------
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    # the wrapped array's own (read-only) attributes, read through
    ndim = property(_op.attrgetter("_a.ndim"))
    size = property(_op.attrgetter("_a.size"))
    dtype = property(_op.attrgetter("_a.dtype"))
    itemsize = property(_op.attrgetter("_a.itemsize"))
    nbytes = property(_op.attrgetter("_a.nbytes"))
    strides = property(_op.attrgetter("_a.strides"))

    @property
    def flags(self):
        return _Flags(self._a)

    @property
    def base(self):
        b = self._a.base
        return ndarray._from(b) if isinstance(b, _np.ndarray) else None

    @property
    def data(self):
        return _MemoryPointer(self._a.__array_interface__["data"][0])

    @property
    def device(self):
        return _Device(0)

    @property
    def T(self):  # noqa: N802
        return ndarray._from(self._a.T)

    # the complex parts, read and written through: one property each, as NumPy's
    real = property(lambda self: _wrap(self._a.real), lambda self, v: setattr(self._a, "real", _unwrap(v, "real")))
    imag = property(lambda self: _wrap(self._a.imag), lambda self, v: setattr(self._a, "imag", _unwrap(v, "imag")))

    # -- Python protocol ---------------------------------------------------------------
    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (ndarray._from(self._a[i]) for i in range(self._a.shape[0]))

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __index__(self):
        if self._a.ndim != 0 or self._a.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._a)

    __hash__ = None

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a.item(), spec) if self._a.ndim == 0 else format(str(self._a), spec)

    def __copy__(self):
        return ndarray._from(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray._from(self._a.copy())

    # -- indexing ---------------------------------------------------------------------------
    def __getitem__(self, idx):
        return _wrap(self._a[_cupy_index(self._a.shape, _unwrap_index(idx))])

    def __setitem__(self, idx, value):
        if isinstance(value, _np.ndarray):
            raise _mixing_error("__setitem__", value)
        self._a[_cupy_index(self._a.shape, _unwrap_index(idx))] = value._a if isinstance(value, ndarray) else value

    def take(self, indices, axis=None, out=None):
        if isinstance(indices, _np.ndarray):
            raise _mixing_error("take", indices)
        r = self._a.take(_unwrap(indices, "take"), axis=axis, mode="wrap", out=None if out is None else out._a)
        return out if out is not None else _wrap(r)

    # -- methods CuPy's ndarray has (forwarded, results wrapped) ---------------------------
    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        dt = _check_dtype(dtype, "astype")
        return ndarray._from(self._a.astype(dt, order=order, copy=copy))

    def view(self, dtype=None, *args, **kwargs):
        if dtype is None:
            return ndarray._from(self._a.view())
        return ndarray._from(self._a.view(_check_dtype(dtype, "view")))

    def fill(self, value):
        if isinstance(value, _np.ndarray) and value.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a.fill(_unwrap(value, "fill") if isinstance(value, ndarray) else value)

    def sort(self, axis=-1, kind=None):
        _check_kind(kind, "sort")
        self._a.sort(axis=axis, kind="stable")

    def argsort(self, axis=-1, kind=None):
        _check_kind(kind, "argsort")
        return ndarray._from(self._a.argsort(axis=axis, kind="stable"))

    def __dlpack__(self, *a, **k):
        raise TypeError("fakecupy: no DLPack export")


def _method(name):
    def m(self, *args, **kwargs):
        args = _unwrap(args, f"ndarray.{name}")
        kwargs = {k: _unwrap(v, f"ndarray.{name}") for k, v in kwargs.items()}
        return _wrap(getattr(self._a, name)(*args, **kwargs))

    m.__name__ = name
    return m


for _name in (
    "all", "any", "argmax", "argmin", "argpartition", "choose", "clip", "compress", "conj", "conjugate",
    "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "mean", "min", "nonzero",
    "partition", "prod", "put", "ravel", "repeat", "reshape", "round", "squeeze", "std", "sum",
    "swapaxes", "trace", "transpose", "var",
):
    setattr(ndarray, _name, _method(_name))


_OTHER = object()  # "not an operand the device array handles": the other side's operator may


def _operand(other, name):
    """The NumPy value behind an operator's other operand (host arrays refused)."""
    if isinstance(other, ndarray):
        return other._a
    if isinstance(other, (bool, int, float, complex, _np.generic)):
        return other
    if isinstance(other, _np.ndarray):
        raise _mixing_error(name, other)
    return _OTHER  # e.g. a minigrad Tensor: its reflected operator runs


def _binop(fn, name):
    def f(self, other):
        o = _operand(other, name)
        return NotImplemented if o is _OTHER else _wrap(fn(self._a, o))

    f.__name__ = name
    return f


def _rbinop(fn, name):
    return _binop(lambda a, o: fn(o, a), name)


def _ibinop(fn, name):
    def f(self, other):
        o = _operand(other, name)
        if o is _OTHER:
            return NotImplemented
        fn(self._a, o)
        return self

    f.__name__ = name
    return f


for _n, _f, _fi in (
    ("add", _op.add, _op.iadd), ("sub", _op.sub, _op.isub), ("mul", _op.mul, _op.imul),
    ("truediv", _op.truediv, _op.itruediv), ("floordiv", _op.floordiv, _op.ifloordiv),
    ("mod", _op.mod, _op.imod), ("pow", _op.pow, _op.ipow), ("matmul", _op.matmul, _op.imatmul),
    ("and", _op.and_, _op.iand), ("or", _op.or_, _op.ior), ("xor", _op.xor, _op.ixor),
    ("lshift", _op.lshift, _op.ilshift), ("rshift", _op.rshift, _op.irshift),
):
    setattr(ndarray, f"__{_n}__", _binop(_f, f"__{_n}__"))
    setattr(ndarray, f"__r{_n}__", _rbinop(_f, f"__r{_n}__"))
    setattr(ndarray, f"__i{_n}__", _ibinop(_fi, f"__i{_n}__"))
for _n, _f in (("lt", _op.lt), ("le", _op.le), ("gt", _op.gt), ("ge", _op.ge), ("eq", _op.eq), ("ne", _op.ne),
               ("divmod", divmod)):
    setattr(ndarray, f"__{_n}__", _binop(_f, f"__{_n}__"))
ndarray.__rdivmod__ = _rbinop(divmod, "__rdivmod__")
for _n, _f in (("neg", _op.neg), ("pos", _op.pos), ("abs", abs), ("invert", _op.invert)):
    setattr(ndarray, f"__{_n}__", (lambda f: lambda self: _wrap(f(self._a)))(_f))

