"""Tensor: a backend array plus what autograd needs, and the ``Storage`` a tensor shares with
its views. This module holds what the tape reads and nothing more: ``Tensor(data, ...)``
converts its data in ``creation.py`` with the other factories, ``.grad`` and ``.backward()``
are backward.py's, and the operations (``+``, ``.sum()``...) and other methods are bound onto
the class in one documented place, ``minigrad.ops``.
"""
from __future__ import annotations

from operator import attrgetter as _attr

import numpy as np

from . import _state

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


class Storage:
    """What a tensor and its views share: ``version``, bumped by every in-place write (backward
    checks the tensors it saved against it), and ``views``, weak references to views of it that
    record nothing, so that a recorded write which makes the storage require grad can give them
    a history (ops/inplace.py). The defaults are class attributes: making one runs no Python."""

    version = 0
    views = None

    def __repr__(self):
        return f"<Storage version {self.version}>"


_new = object.__new__


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
    return t


class Tensor:
    """An n-dimensional array that records the operations applied to it.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is ``mg.tensor`` without its
    copy. ``t.data`` is the backend array; ``t.grad`` holds the gradient after ``backward()``.

    >>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4., 6.])
    """

    # the fields every op sets are slots: the array, requires grad, the gradient, the Node that
    # made it and which of its outputs this is, the storage, forward mode's tangents by level;
    # rarely set ones live in the instance __dict__ and default to the class attributes below
    __slots__ = ("data", "_rg", "_grad", "_node", "_oidx", "_storage", "_fw", "__dict__", "__weakref__")
    __array_priority__ = 1000  # numpy_array * tensor -> Tensor.__rmul__
    _hooks = None   # gradient hooks of a leaf (a non-leaf's live on its Node)
    _base = None    # the tensor whose storage this view shares
    name = None     # a label for pictures (mg.viz) and messages

    # the array's own attributes, read through a C getter: rules read them on every op
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

    def __hash__(self):
        return id(self)
