"""The stand-in's functions: a curated subset of NumPy's, the names CuPy has, under CuPy's
rules (device arrays in, device arrays out, host arrays refused): its ufuncs, functions,
factories, ``linalg``, ``cupyx.scatter_add`` and ``lib.stride_tricks.as_strided``.

Importing it fills the dispatch tables of ``_base`` that ``ndarray`` reads.
"""
from __future__ import annotations

import types as _types

import numpy as _np

from ._base import _FFT_FUNCS, _FUNCS, _LINALG_FUNCS, _UFUNCS, _check_atomic, _check_dtype, _check_kind, _cupy_index
from ._ndarray import _unwrap, _unwrap_index, _wrap, ndarray


def _strict(np_func, name):
    """A CuPy-like function: device arrays in, device arrays out; host arrays refused."""

    def f(*args, **kwargs):
        args = _unwrap(args, name)
        kwargs = {k: _unwrap(v, name) for k, v in kwargs.items()}
        return _wrap(np_func(*args, **kwargs))

    f.__name__ = name
    f.__qualname__ = name
    f.__module__ = "minigrad.testing.fakecupy"  # found there by name (pickle), as before the split
    f.__doc__ = f"fakecupy.{name}: numpy.{name} under CuPy's rules"
    return f


class ufunc:  # noqa: N801 - CuPy's name
    """A ufunc with CuPy's methods: ``outer`` always; ``at``/``reduce``/``accumulate``/``reduceat``
    only where CuPy 13 has them (``hasattr`` is False elsewhere)."""

    __module__ = "minigrad.testing.fakecupy"  # its public home (reprs name it as before the split)

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
                + ("; use cupyx.scatter_add (minigrad.kernels.index_add)" if name == "at" else "")
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

_UFUNCS.update({n: ufunc(getattr(_np, n), _UFUNC_METHODS.get(n, ())) for n in _UFUNC_NAMES})
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

_FUNCS.update({n: _strict(getattr(_np, n), n) for n in _FUNC_NAMES})
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


# get_array_module (it answers with the package itself) is added by the package entry
_FUNCS.update(array=array, asarray=asarray, asanyarray=asanyarray, ascontiguousarray=ascontiguousarray,
              asnumpy=asnumpy)

_LINALG = ("norm", "solve", "inv", "det", "slogdet", "qr", "svd", "eigh", "eigvalsh", "cholesky", "pinv",
           "lstsq", "matrix_power", "matrix_rank", "tensorsolve", "tensorinv")
_LINALG_FUNCS.update({n: _strict(getattr(_np.linalg, n), f"linalg.{n}") for n in _LINALG})
linalg = _types.SimpleNamespace(**_LINALG_FUNCS)

_FFT = ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
        "fftshift", "ifftshift", "fftfreq", "rfftfreq", "hfft", "ihfft")
_FFT_FUNCS.update({n: _strict(getattr(_np.fft, n), f"fft.{n}") for n in _FFT})
fft = _types.SimpleNamespace(**_FFT_FUNCS)


# -- cupyx: scatter_add with atomicAdd's dtypes ------------------------------------------------

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


# -- lib.stride_tricks.as_strided (CuPy has it; like NumPy's, it checks no bounds) -----------------

def _as_strided(x, shape=None, strides=None):
    if not isinstance(x, ndarray):
        raise TypeError(f"as_strided: expected a device array, got {type(x)} (fakecupy)")
    return ndarray._from(_np.lib.stride_tricks.as_strided(x._a, shape, strides))


lib = _types.SimpleNamespace(stride_tricks=_types.SimpleNamespace(as_strided=_as_strided))
