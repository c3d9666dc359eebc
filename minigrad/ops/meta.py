"""NumPy's questions about an array (``np.shape``, ``np.ndim``, ``np.size``, ``np.result_type``),
answered from a Tensor without recording, and the ``*_like`` factories, which return Tensors
(constants: nothing flows back through them); PyTorch's factories on a tensor (``x.new_zeros``,
``new_ones``, ``new_full``, ``new_tensor``: its dtype and device) and ``is_tensor``."""
from __future__ import annotations

import numpy as np

from ..creation import as_tensor, full, ones, tensor, zeros
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
                     "``device=``, ``requires_grad=`` as mg.zeros).", complex=True)
ones_like = row("ones_like", _like_fwd("ones"), family=LIKE, method=(), numpy=(np.ones_like,),
                doc="A Tensor of ones with ``a``'s shape and dtype (NumPy's keywords).", complex=True)
empty_like = row("empty_like", _like_fwd("empty"), family=LIKE, method=(), numpy=(np.empty_like,),
                 doc="An uninitialised Tensor with ``a``'s shape and dtype.", complex=True)
full_like = row("full_like", _like_fwd("full"), family=LIKE, method=(), numpy=(np.full_like,),
                doc="A Tensor of ``fill_value`` with ``a``'s shape and dtype (NumPy's "
                    "``full_like(a, fill_value, dtype=None, ...)``).", complex=True)


# -- PyTorch's factories on a tensor (x.new_zeros(...)) and torch.is_tensor ------------------------


def _new(x, name, dtype, device):
    x = as_tensor(x, name)
    return x.dtype if dtype is None else dtype, x.device if device is None else device


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return size


@composite("new_zeros", method="new_zeros", kind="factory")
@named("new_zeros")
def new_zeros(input, *size, dtype=None, device=None, requires_grad=False):  # noqa: A002 - PyTorch's name
    """PyTorch's ``x.new_zeros(size)``: zeros of ``size`` (ints, or one tuple) with ``x``'s dtype and
    device unless ``dtype=`` / ``device=`` say otherwise; a new leaf (nothing flows back to ``x``)."""
    dt, dev = _new(input, "new_zeros", dtype, device)
    return zeros(*_size(size), dtype=dt, device=dev, requires_grad=requires_grad)


@composite("new_ones", method="new_ones", kind="factory")
@named("new_ones")
def new_ones(input, *size, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """PyTorch's ``x.new_ones(size)``: ones of ``size`` with ``x``'s dtype and device (a new leaf)."""
    dt, dev = _new(input, "new_ones", dtype, device)
    return ones(*_size(size), dtype=dt, device=dev, requires_grad=requires_grad)


@composite("new_full", method="new_full", kind="factory")
@named("new_full")
def new_full(input, size, fill_value, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """PyTorch's ``x.new_full(size, fill_value)``: ``fill_value`` cast to ``x``'s dtype, on its device
    (a new leaf)."""
    dt, dev = _new(input, "new_full", dtype, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return full(_size((size,)), fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


@composite("new_tensor", method="new_tensor", kind="factory")
@named("new_tensor")
def new_tensor(input, data, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """PyTorch's ``x.new_tensor(data)``: a copy of ``data`` (a list, a number, an array or a Tensor,
    detached) with ``x``'s dtype and device (a new leaf)."""
    dt, dev = _new(input, "new_tensor", dtype, device)
    if isinstance(data, Tensor):
        data = data.detach()
    return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


@composite("is_tensor", kind="query")
def is_tensor(obj) -> bool:
    """PyTorch's ``is_tensor``: whether ``obj`` is a minigrad tensor (dense, or sparse: ``mg.sparse``);
    a NumPy array or a number is not."""
    return isinstance(obj, Tensor) or type(obj).__module__.startswith("minigrad.sparse.")
