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
"""
from __future__ import annotations

import operator as _op
import types as _types

import numpy as _np

__all__ = ["ndarray", "asarray", "array", "asnumpy", "get_array_module", "cuda"]

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


# ---------------------------------------------------------------------------
# the array
# ---------------------------------------------------------------------------

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


class ndarray:  # noqa: N801 - CuPy's name
    """A device array of the stand-in (a NumPy array that refuses to leave the device implicitly)."""

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
        f = _FUNCS.get(func.__name__)
        if f is None or func.__module__ not in ("numpy", "numpy.linalg") or (
                func.__module__ == "numpy.linalg" and func.__name__ not in _LINALG):
            return NotImplemented
        if func.__module__ == "numpy.linalg":
            f = getattr(linalg, func.__name__)
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

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def itemsize(self):
        return self._a.itemsize

    @property
    def nbytes(self):
        return self._a.nbytes

    @property
    def strides(self):
        return self._a.strides

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

    @property
    def real(self):
        return _wrap(self._a.real)

    @real.setter
    def real(self, v):
        self._a.real = _unwrap(v, "real")

    @property
    def imag(self):
        return _wrap(self._a.imag)

    @imag.setter
    def imag(self, v):
        self._a.imag = _unwrap(v, "imag")

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


def _check_kind(kind, where):
    if kind not in (None, "stable"):
        raise ValueError(f"{where}: CuPy accepts kind=None or 'stable' only, got {kind!r} (fakecupy)")


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


# ---------------------------------------------------------------------------
# the module's functions: a curated subset of NumPy's, the names CuPy has
# ---------------------------------------------------------------------------

def _strict(np_func, name):
    """A CuPy-like function: device arrays in, device arrays out; host arrays refused."""

    def f(*args, **kwargs):
        args = _unwrap(args, name)
        kwargs = {k: _unwrap(v, name) for k, v in kwargs.items()}
        return _wrap(np_func(*args, **kwargs))

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"fakecupy.{name}: numpy.{name} under CuPy's rules"
    return f


class ufunc:  # noqa: N801 - CuPy's name
    """A ufunc with CuPy's methods: ``outer`` always; ``at``/``reduce``/``accumulate``/``reduceat``
    only where CuPy 13 has them (``hasattr`` is False elsewhere)."""

    def __init__(self, np_ufunc, methods=()):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout
        self._call = _strict(np_ufunc, self.__name__)
        self._methods = frozenset(methods)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def outer(self, a, b, **kwargs):
        return _strict(self._u.outer, f"{self.__name__}.outer")(a, b, **kwargs)

    def __getattr__(self, name):  # only for names not found normally: the optional methods
        d = self.__dict__
        if name in ("at", "reduce", "accumulate", "reduceat"):
            if name in d.get("_methods", ()):
                return self._bound(name)
            raise AttributeError(
                f"fakecupy: cupy.{d.get('__name__')}.{name} does not exist in CuPy"
                + ("; use cupyx.scatter_add (minigrad.backend.index_add)" if name == "at" else "")
            )
        raise AttributeError(name)

    def _bound(self, method):
        f = _strict(getattr(self._u, method), f"{self.__name__}.{method}")
        if method != "at":
            return f

        def at(a, indices, b=None):
            if not isinstance(a, ndarray):
                raise TypeError(f"{self.__name__}.at: expected a device array, got {type(a)}")
            _check_atomic(a.dtype, f"{self.__name__}.at")
            idx = _cupy_index(a.shape, _unwrap_index(indices))
            if b is None:
                self._u.at(a._a, idx)
            else:
                self._u.at(a._a, idx, _unwrap(b, f"{self.__name__}.at"))

        return at

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"


# CuPy 13: at for add/subtract/maximum/minimum/bitwise_and/or/xor; reduce for add/multiply;
# accumulate for add; reduceat for add (cupy/cupy#7082)
_UFUNC_METHODS = {
    "add": ("at", "reduce", "accumulate", "reduceat"),
    "subtract": ("at",),
    "multiply": ("reduce",),
    "maximum": ("at",),
    "minimum": ("at",),
    "bitwise_and": ("at",),
    "bitwise_or": ("at",),
    "bitwise_xor": ("at",),
}

_UFUNC_NAMES = """
add subtract multiply divide true_divide floor_divide negative positive power float_power remainder mod fmod
absolute fabs sign exp exp2 expm1 log log2 log10 log1p sqrt square cbrt reciprocal sin cos tan arcsin arccos
arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh hypot deg2rad rad2deg degrees radians floor ceil trunc
rint maximum minimum fmax fmin isfinite isinf isnan signbit copysign nextafter ldexp frexp modf logaddexp
logaddexp2 greater greater_equal less less_equal equal not_equal logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift right_shift conjugate conj heaviside gcd lcm
divmod
""".split()

_UFUNCS = {n: ufunc(getattr(_np, n), _UFUNC_METHODS.get(n, ())) for n in _UFUNC_NAMES}
_UFUNCS["abs"] = _UFUNCS["absolute"]

_FUNC_NAMES = """
empty_like zeros_like ones_like full_like copy copyto diag diagflat tri tril triu meshgrid
reshape ravel transpose swapaxes moveaxis rollaxis expand_dims squeeze broadcast_to broadcast_arrays
atleast_1d atleast_2d atleast_3d concatenate stack vstack hstack dstack column_stack split array_split hsplit
vsplit tile repeat flip fliplr flipud roll rot90 pad append unique trim_zeros take take_along_axis put choose
compress diagonal einsum tensordot matmul dot vdot inner outer kron trace cross
clip around round real imag angle sinc nan_to_num i0
sum prod mean var std max amax min amin argmax argmin all any cumsum cumprod nansum nanprod nanmean nanvar nanstd
nanmax nanmin nanargmax nanargmin count_nonzero median nanmedian average percentile quantile ptp diff
searchsorted nonzero flatnonzero argwhere where extract partition argpartition bincount histogram digitize isin
allclose isclose array_equal array_equiv iscomplexobj isrealobj isscalar
may_share_memory shares_memory result_type can_cast promote_types ndim unravel_index ravel_multi_index
cov corrcoef convolve correlate interp polyval
""".split()

_FUNCS = {n: _strict(getattr(_np, n), n) for n in _FUNC_NAMES}
_FUNCS.update(_UFUNCS)


_np_sort = _strict(_np.sort, "sort")
_np_argsort = _strict(_np.argsort, "argsort")


def _sort(a, axis=-1, kind=None):
    _check_kind(kind, "sort")
    return _np_sort(a, axis=axis, kind="stable")


def _argsort(a, axis=-1, kind=None):
    _check_kind(kind, "argsort")
    return _np_argsort(a, axis=axis, kind="stable")


def _lexsort(keys):
    if not isinstance(keys, ndarray):
        raise TypeError(
            f"lexsort: CuPy takes one device array of keys (k, N), got {type(keys).__name__}; "
            "stack the keys first (fakecupy)"
        )
    if keys.ndim > 2:
        raise NotImplementedError("lexsort: CuPy supports keys of rank 1 or 2 only")
    return _wrap(_np.lexsort(keys._a))


def _as_0d(f):
    """CuPy answers allclose / array_equal with a 0-d device array, not a Python bool."""

    def g(*args, **kwargs):
        return ndarray._from(_np.asarray(f(*args, **kwargs)))

    g.__name__ = f.__name__
    return g


def _take(a, indices, axis=None, out=None):
    if not isinstance(a, ndarray):
        raise TypeError(f"take: expected a device array, got {type(a)}")
    return a.take(indices, axis=axis, out=out)


_FUNCS.update(sort=_sort, argsort=_argsort, lexsort=_lexsort, take=_take)
for _n in ("allclose", "array_equal", "array_equiv"):
    _FUNCS[_n] = _as_0d(_FUNCS[_n])


def _creation(np_func, name):
    """Factories take shapes and scalars (host values: fine), never host arrays."""

    def f(*args, dtype=None, **kwargs):
        args = _unwrap(args, name)
        if dtype is not None:
            kwargs["dtype"] = _check_dtype(dtype, name)
        return _wrap(np_func(*args, **kwargs))

    f.__name__ = name
    return f


for _n in ("empty", "zeros", "ones", "full", "arange", "linspace", "logspace", "eye", "identity", "indices"):
    _FUNCS[_n] = _creation(getattr(_np, _n), _n)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    """A device array from host data (an explicit host-to-device copy) or from a device array."""
    if isinstance(obj, ndarray):
        a = obj._a
        r = _np.array(a, dtype=dtype, copy=True, order=order, ndmin=ndmin) if copy else a
        if not copy and dtype is not None:
            r = a.astype(dtype, copy=False)
        return ndarray._from(r)
    if isinstance(obj, (list, tuple)):
        obj = _device_items(obj)
    r = _np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin)  # host -> device: a copy
    _check_dtype(r.dtype, "array")
    return ndarray._from(r)


def _device_items(seq):
    """Nested lists of device arrays and host values -> NumPy values (stacking, as cupy.array does)."""
    if isinstance(seq, (list, tuple)):
        return [_device_items(e) for e in seq]
    return seq._a if isinstance(seq, ndarray) else seq


def asarray(a, dtype=None, order=None, *, blocking=False):
    """``a`` itself when it is a device array of that dtype, else a device copy."""
    if isinstance(a, ndarray):
        if dtype is None or _np.dtype(dtype) == a.dtype:
            return a
        return a.astype(dtype)
    return array(a, dtype=dtype, copy=True)


asanyarray = asarray


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray):
        return ndarray._from(_np.ascontiguousarray(a._a, dtype=dtype))
    return array(a, dtype=dtype)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A host NumPy array: ``a.get()`` for device arrays, ``numpy.asarray`` otherwise."""
    if isinstance(a, ndarray):
        return a.get(out=out)
    return _np.asarray(a, order=order)


def get_array_module(*args):
    for a in args:
        if isinstance(a, ndarray):
            return _this
    return _np


_FUNCS.update(array=array, asarray=asarray, asanyarray=asanyarray, ascontiguousarray=ascontiguousarray,
              asnumpy=asnumpy, get_array_module=get_array_module)

_LINALG = ("norm", "solve", "inv", "det", "slogdet", "qr", "svd", "eigh", "eigvalsh", "cholesky", "pinv",
           "lstsq", "matrix_power", "matrix_rank", "tensorsolve", "tensorinv")
linalg = _types.SimpleNamespace(**{n: _strict(getattr(_np.linalg, n), f"linalg.{n}") for n in _LINALG})


# -- cupyx: scatter_add with atomicAdd's dtypes ------------------------------------------------

_ATOMIC_ADD = frozenset(_np.dtype(t) for t in (_np.int32, _np.uint32, _np.uint64, _np.float16,
                                                _np.float32, _np.float64))


def _check_atomic(dt, where):
    if _np.dtype(dt) not in _ATOMIC_ADD:
        raise TypeError(
            f"{where}: scatter_add only supports int32, float16, float32, float64, uint32, uint64, as data type "
            f"(got {_np.dtype(dt)}; fakecupy mirrors CuPy's atomicAdd limits)"
        )


def _scatter_add(a, slices, value):
    if not isinstance(a, ndarray):
        raise TypeError(f"scatter_add: expected a device array, got {type(a)}")
    idx = _cupy_index(a.shape, _unwrap_index(slices))
    has_int_array = any(
        isinstance(i, _np.ndarray) and i.dtype.kind in "iu" for i in (idx if isinstance(idx, tuple) else (idx,))
    )
    if has_int_array:
        _check_atomic(a.dtype, "scatter_add")
    _np.add.at(a._a, idx, _unwrap(value, "scatter_add"))


cupyx = _types.SimpleNamespace(scatter_add=_scatter_add)


# -- cuda --------------------------------------------------------------------------------------

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

# -- lib.stride_tricks.as_strided (CuPy has it; like NumPy's, it checks no bounds) -----------------

def _as_strided(x, shape=None, strides=None):
    if not isinstance(x, ndarray):
        raise TypeError(f"as_strided: expected a device array, got {type(x)} (fakecupy)")
    return ndarray._from(_np.lib.stride_tricks.as_strided(x._a, shape, strides))


lib = _types.SimpleNamespace(stride_tricks=_types.SimpleNamespace(as_strided=_as_strided))

# -- constants and dtypes (CuPy re-exports NumPy's) ----------------------------------------------------

_CONSTS = dict(
    newaxis=None, inf=_np.inf, nan=_np.nan, pi=_np.pi, e=_np.e,
    dtype=_np.dtype, finfo=_np.finfo, iinfo=_np.iinfo, generic=_np.generic, number=_np.number,
    integer=_np.integer, floating=_np.floating, complexfloating=_np.complexfloating,
    bool_=_np.bool_, int8=_np.int8, int16=_np.int16, int32=_np.int32, int64=_np.int64, uint8=_np.uint8,
    uint16=_np.uint16, uint32=_np.uint32, uint64=_np.uint64, float16=_np.float16, float32=_np.float32,
    float64=_np.float64, complex64=_np.complex64, complex128=_np.complex128, intp=_np.intp,
    ndarray=ndarray, ufunc=ufunc, linalg=linalg, lib=lib, cuda=cuda,
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
_this = __import__(__name__, fromlist=["_"])
