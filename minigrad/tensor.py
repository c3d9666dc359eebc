"""Tensor: a backend array plus what autograd needs, and the ``Storage`` a tensor shares with
its views. This module holds what the tape reads and nothing more: ``Tensor(data, ...)``
converts its data in ``creation.py`` with the other factories, ``.backward()`` is backward.py's,
and the operations (``+``, ``.sum()``...) and the other methods and properties
(``requires_grad``, ``grad``, ``grad_fn``... in ``tensor_methods.py``) are bound onto the class
in one documented place, ``minigrad.ops``.
"""
from __future__ import annotations

import numpy as np

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


def fields(t, data):
    """Give the Tensor ``t`` its fields, the one place that sets them: the array ``data``, and no
    gradient, history, shared storage or tangents yet. Returns ``t``."""
    t.data = data
    t._requires_grad = False
    t._grad = None
    t._node = None
    t._output_index = 0
    t._storage = Storage()
    t._tangents = None
    return t


def wrap(data):
    """A Tensor over the backend array ``data``: no checks, no copy (internal)."""
    return fields(_new(Tensor), data)


class Tensor:
    """An n-dimensional array that records the operations applied to it.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is ``mg.tensor`` without its
    copy. ``t.data`` is the backend array; ``t.grad`` holds the gradient after ``backward()``.

    >>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4., 6.])
    """

    # the fields every op sets are slots: the array, requires grad, the gradient (``.grad``), the
    # Node that made it (``.grad_fn``) and which of its outputs this is, the storage, forward mode's
    # tangents by level; rarely set ones live in the instance __dict__ and default to the class
    # attributes below
    __slots__ = ("data", "_requires_grad", "_grad", "_node", "_output_index", "_storage", "_tangents", "__dict__", "__weakref__")
    __array_priority__ = 1000  # numpy_array * tensor -> Tensor.__rmul__
    _hooks = None   # gradient hooks of a leaf (a non-leaf's live on its Node)
    _base = None    # the tensor whose storage this view shares
    name = None     # a label for pictures (mg.viz) and messages

    @property
    def shape(self) -> tuple:
        """The shape, a tuple of ints (the array's)."""
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        """The element type, a NumPy dtype."""
        return self.data.dtype

    def __hash__(self):
        return id(self)
