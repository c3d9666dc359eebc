"""Every op minigrad has, registered once (``registry()``), and the one documented place where
the layers below learn of this one: Tensor's methods and operators are bound here, from the
registry, after every family has registered its ops.

Adding an elementwise op is one ``defop`` + ``public`` in its family's file, with its samples;
its Tensor method, its ``minigrad.<name>`` export, its NumPy dispatch entry, its profile name
and its label in pictures all follow from that entry.
"""
from __future__ import annotations

from .. import backward as _backward
from ..tensor import Tensor
from . import einsum, elementwise, inplace, linalg, nn, reduce, shape  # noqa: F401 - each registers its ops
from ._registry import Sample, registry

__all__ = ["registry", "Sample", "exports", "numpy_functions"]


def _reflected(fn):
    def r(self, other):
        return fn(other, self)

    r.__name__ = f"r{fn.__name__}"
    return r


def _bind() -> None:
    """Tensor's methods and operators, from the registry."""
    for op in registry().values():
        fn = op.frontend
        if fn is None:
            continue
        for name in op.method:
            setattr(Tensor, name, fn)
        for name in op.dunders:
            reflected = name.startswith("__r") and name not in ("__round__",)
            setattr(Tensor, name, _reflected(fn) if reflected else fn)
        for name in op.inplace:
            setattr(Tensor, name, getattr(inplace, op.inplace[0]))
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = elementwise.abs
    Tensor.T = property(lambda self: shape.transpose(self), doc="The dims reversed (a view).")
    Tensor.mT = property(shape.matrix_transpose, doc="The last two dims swapped (a view).")
    Tensor.backward = _backward.backward
    Tensor._refresh_view = inplace.refresh_view


def exports() -> dict:
    """The public functions ``minigrad`` exports, by name (from the registry)."""
    return {op.export: op.frontend for op in registry().values() if op.export and op.frontend is not None}


def numpy_functions() -> dict:
    """NumPy function or ufunc -> the minigrad function it dispatches to (from the registry)."""
    return {f: op.frontend for op in registry().values() if op.frontend is not None for f in op.numpy}


_bind()
