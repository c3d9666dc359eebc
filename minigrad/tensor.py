"""Tensor: a backend array plus what autograd needs (requires_grad, grad, grad_fn).

This module holds the data structure only. Its operations (``+``, ``.sum()``, ``.exp()``,
``.backward()``...) are bound onto the class in one documented place, ``minigrad.ops``,
from the op registry: that is the one place where a lower layer learns of a higher one.
"""
from __future__ import annotations

import warnings
from operator import attrgetter as _attr

import numpy as np

from . import _state
from . import backend as _be

_default_dtype = np.dtype(np.float32)


def set_default_dtype(dtype) -> None:
    """The dtype Python floats and lists of floats become (float32 unless changed)."""
    global _default_dtype
    d = np.dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default_dtype = d


def get_default_dtype():
    """The dtype Python floats and lists of floats become."""
    return _default_dtype


def check_grad_dtype(dtype, where="requires_grad") -> None:
    """Only real floating tensors may require grad (complex autograd is not implemented)."""
    d = np.dtype(dtype)
    if d.kind != "f":
        extra = " (complex autograd is not implemented)" if d.kind == "c" else ""
        raise TypeError(f"{where}: only floating-point tensors can require grad, got dtype {d}{extra}")


_new = object.__new__


class Storage:
    """What a tensor and its views share: ``version``, bumped by every in-place write (backward
    checks the tensors it saved against it), and ``views``, weak references to views of it that
    record nothing, so that a recorded write which makes the storage require grad can give them
    a history (ops/inplace.py); None until there is one. Every op makes one: the defaults are
    class attributes, so making one runs no Python code."""

    version = 0
    views = None

    def __repr__(self):
        return f"<Storage version {self.version}>"


def wrap(data):
    """A Tensor over the backend array ``data``: no checks, no copy (internal)."""
    t = _new(Tensor)
    t.data = data
    t._rg = False
    t._grad = None
    t._node = None
    t._oidx = 0
    t._storage = Storage()
    t._fw = None
    if _state.active:  # a capture (mg.compile) tells arrays it knows from ones it missed
        _state.born(t)
    return t


def zero_grads(params, set_to_none: bool = True) -> None:
    """Forget the gradients of ``params`` (``.grad = None``, or zeros): ``zero_grad`` of optimizers
    and modules, one kernel of a captured step (mg.compile)."""
    for p in params:
        g = p._grad
        p._grad = None if set_to_none or g is None else wrap(g.data * 0)


def _to_array(data, dtype=None, device=None, op="tensor"):
    """User data as a backend array: Python floats default to the default dtype."""
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, np.ndarray) or _be.is_cupy_array(data):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(e, Tensor) for e in _flat_items(data)):
            _refuse_graph_copy(data, op)
            data = _tensors_to_lists(data)
        try:
            arr = np.asarray(data)
        except ValueError as e:  # ragged nested lists
            raise ValueError(f"{op}: the data must be a rectangular nested list or an array; {e}") from None
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(_default_dtype)
    if dtype is not None:
        dtype = np.dtype(dtype)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
    if arr.dtype.kind in "OUSVMm":  # objects, strings, raw bytes, dates: not numbers
        raise TypeError(f"{op}: cannot make a tensor from {type(data).__name__} data of dtype {arr.dtype}")
    dev = _be.parse_device(device) if device is not None else None
    if dev is not None:
        arr = _be.to_device(arr, dev)
    elif _be.get_default_device() != "cpu" and not _be.is_cupy_array(arr):
        arr = _be.to_device(arr, _be.get_default_device())
    return arr


def _flat_items(data):
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        else:
            yield d


def _refuse_graph_copy(data, op):
    """A list of Tensors that require grad would be copied without its graph: refuse, say mg.stack."""
    for e in _flat_items(data):
        if isinstance(e, Tensor) and e.requires_grad:
            raise TypeError(
                f"{op}: the list holds a Tensor of shape {e.shape} that requires grad; copying it into a new "
                "tensor would drop its graph (no gradient would flow back). Use mg.stack([...]) to keep the "
                "graph, or detach the elements first ([t.detach() for t in ...]) for a constant"
            )


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return _be.to_numpy(data.data)
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(d) for d in data]
    return data


def _set_grad(t, g):
    t._grad = g


class Tensor:
    """An n-dimensional array that records the operations applied to it.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is ``mg.tensor``.
    ``t.data`` is the backend array (no copy); ``t.grad`` holds the gradient
    after ``backward()``.

    >>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4., 6.])
    """

    # every op makes one: the hot fields are slots; rarely set ones live in the instance
    # __dict__ and default to the class attributes below
    # _fw: forward mode's tangents by dual level, or None (forward_ad.py); a slot, as forward mode
    # sets it on every op it runs through
    __slots__ = ("data", "_rg", "_grad", "_node", "_oidx", "_storage", "_fw", "__dict__", "__weakref__")
    __array_priority__ = 1000  # numpy_array * tensor -> Tensor.__rmul__
    _hooks = None   # gradient hooks of a leaf (a non-leaf's live on its Node)
    _base = None    # the tensor whose storage this view shares
    name = None     # a label for pictures (mg.viz) and messages

    def __init__(self, data, dtype=None, requires_grad=False, device=None):
        # made again on each replay of a captured step (mg.compile), as eager makes it each call
        self.data = _state.kernel(_to_array, data, dtype, device) if _state.active else _to_array(data, dtype, device)
        self._rg = False
        self._grad = None
        self._node = None
        self._oidx = 0
        self._storage = Storage()
        self._fw = None
        if _state.active:  # made in a captured step, not a live tensor
            _state.born(self)
        if requires_grad:
            self.requires_grad = True

    # -- attributes ----------------------------------------------------------
    # The array's own attributes, read through a C getter (``attrgetter``): rules and frontends
    # read them on every op, and a Python getter would cost a frame each time.
    shape = property(_attr("data.shape"), doc="The shape, a tuple of ints (the array's).")
    ndim = property(_attr("data.ndim"), doc="The number of dimensions.")


    dtype = property(_attr("data.dtype"), doc="The element type, a NumPy dtype.")


    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        value = bool(value)
        if value:
            check_grad_dtype(self.data.dtype)
            if not self._rg:
                _state.refuse("creating a tensor that requires grad (a new parameter)")
        elif self._node is not None:
            raise RuntimeError(
                "requires_grad: you can only change requires_grad of leaf tensors; use "
                "detach() to get a tensor that does not require grad"
            )
        self._rg = value


    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return self._node

    @property
    def grad(self):
        """The gradient accumulated by ``backward()`` (a Tensor), or None.

        Reading it on a non-leaf that did not ``retain_grad()`` warns once, as PyTorch does.
        """
        g = self._grad
        if g is None and self._node is not None and self._node.retain is None \
                and not self.__dict__.get("_warned"):
            self.__dict__["_warned"] = True
            warnings.warn(
                "The .grad attribute of a tensor that is not a leaf is not populated during backward(); "
                "call .retain_grad() on it before backward() if you want its gradient",
                UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, g):
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError(f"grad: assigned grad must be a Tensor or None, got {type(g).__name__}")
            if g.shape != self.shape:
                raise ValueError(f"grad: assigned grad has shape {g.shape} but the tensor has shape {self.shape}")
            if g.dtype != self.dtype:
                raise TypeError(f"grad: assigned grad has dtype {g.dtype} but the tensor has dtype {self.dtype}")
            if g.device != self.device:
                raise ValueError(f"grad: assigned grad is on {g.device} but the tensor is on {self.device}")
        _state.kernel(_set_grad, self, g)  # a captured step (mg.compile) assigns it again on each replay


    def __hash__(self):
        return id(self)


    # -- conversion ----------------------------------------------------------


    # -- DLPack ---------------------------------------------------------------


    # -- storage ---------------------------------------------------------------


    # -- autograd ------------------------------------------------------------


    # -- printing ------------------------------------------------------------


