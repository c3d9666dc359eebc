"""NumPy's questions about an array (``np.shape``, ``np.ndim``, ``np.size``, ``np.result_type``),
answered from a Tensor without recording, and the ``*_like`` factories, which return Tensors
(constants: nothing flows back through them)."""
from __future__ import annotations

import numpy as np

from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Family, composite, named, row


def _meta(x):
    return x.data if isinstance(x, Tensor) else x


@composite("shape", kind="query", numpy=(np.shape,), export=False)
def shape(a) -> tuple[int, ...]:
    """``np.shape(t)``: the shape, a tuple (not recorded)."""
    return tuple(np.shape(_meta(a))) if not isinstance(a, Tensor) else tuple(a.data.shape)


@composite("ndim", kind="query", numpy=(np.ndim,), export=False)
def ndim(a) -> int:
    """``np.ndim(t)``: the number of dims (not recorded)."""
    return a.data.ndim if isinstance(a, Tensor) else np.ndim(a)


@composite("size", kind="query", numpy=(np.size,), export=False)
def size(a, axis=None) -> int:
    """``np.size(t, axis=None)``: the number of elements, or the length of ``axis`` (not recorded)."""
    d = a.data if isinstance(a, Tensor) else np.asarray(a)
    return int(d.size) if axis is None else int(d.shape[axis])


@composite("result_type", kind="query", numpy=(np.result_type,))
@named("result_type")
def result_type(*arrays_and_dtypes) -> np.dtype:
    """NumPy's ``result_type`` over Tensors (their dtypes), arrays, dtypes and numbers (not recorded).

    >>> mg.result_type(mg.ones(2, dtype=mg.float32), 1.0)
    dtype('float32')
    """
    return np.result_type(*(a.data if isinstance(a, Tensor) else a for a in arrays_and_dtypes))


def _like_fwd(fill):
    def fwd(xp, x, dtype=None, shape=None, fill_value=None):
        s = x.shape if shape is None else shape
        d = x.dtype if dtype is None else dtype
        if fill == "full":
            return xp.full(s, fill_value, dtype=d)
        return getattr(xp, fill)(s, dtype=d)
    return fwd


def _like_fn(op, name):
    def make(a, fill_value, dtype, order, subok, shape, device, requires_grad):
        if order not in ("K", "C", "A") or subok is not True:
            raise TypeError(f"{name}: order={order!r} / subok={subok!r} are not supported on Tensors")
        x = as_tensor(a, name)
        params = {"dtype": None if dtype is None else np.dtype(dtype),
                  "shape": None if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))}
        if name == "full_like":
            if isinstance(fill_value, complex):
                raise TypeError(f"full_like: complex fill_value {fill_value!r} is not supported (minigrad has no complex dtypes)")
            params["fill_value"] = fill_value.item() if isinstance(fill_value, Tensor) else fill_value
        out = run_op(op, x, **params)
        if device is not None and device != out.device:
            out = out.to(device)
        if requires_grad:
            out.requires_grad_()
        return out

    if name == "full_like":
        def fn(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None, requires_grad=False):
            return make(a, fill_value, dtype, order, subok, shape, device, requires_grad)
    else:
        def fn(a, dtype=None, order="K", subok=True, shape=None, *, device=None, requires_grad=False):
            return make(a, None, dtype, order, subok, shape, device, requires_grad)
    return fn


LIKE = Family("other", _like_fn, named=True)  # NumPy's *_like factories: constants shaped like a tensor


zeros_like = row("zeros_like", _like_fwd("zeros"), family=LIKE, method=(), numpy=(np.zeros_like,),
                 doc="A Tensor of zeros with ``a``'s shape and dtype (NumPy's keywords; "
                     "``device=``, ``requires_grad=`` as mg.zeros).")
ones_like = row("ones_like", _like_fwd("ones"), family=LIKE, method=(), numpy=(np.ones_like,),
                doc="A Tensor of ones with ``a``'s shape and dtype (NumPy's keywords).")
empty_like = row("empty_like", _like_fwd("empty"), family=LIKE, method=(), numpy=(np.empty_like,),
                 doc="An uninitialised Tensor with ``a``'s shape and dtype.")
full_like = row("full_like", _like_fwd("full"), family=LIKE, method=(), numpy=(np.full_like,),
                doc="A Tensor of ``fill_value`` with ``a``'s shape and dtype (NumPy's "
                    "``full_like(a, fill_value, dtype=None, ...)``).")
