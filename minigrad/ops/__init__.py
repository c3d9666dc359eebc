"""Every op minigrad has, registered once (``registry()``), and the one documented place where
the layers below learn of this one: Tensor's methods and operators are bound here, from the
registry, after every family has registered its ops.

Adding an elementwise op or a reduction is one ``row`` in its family's file, with its samples;
its Tensor method, its ``minigrad.<name>`` export, its NumPy dispatch entry, its profile name
and its label in pictures all follow from that entry.
"""
from __future__ import annotations

import numpy as _np

from .. import backward as _backward
from .. import creation as _creation
from .. import engine as _engine
from .. import tensor_methods as _tensor_methods
from ..tensor import Tensor
from . import casts, einsum, elementwise, indexing, inplace, losses, matmul, reduce, shape, windows, writes  # noqa: F401 - each registers its ops
from . import join, linalg, math, meta, products, scan  # noqa: F401 - the differentiable NumPy (issue 32)
from . import ordering  # noqa: F401 - PyTorch's topk, median, quantile, cummax, unique... (issue 42)
from . import complex_ops  # noqa: F401 - conj, real, imag, angle, view_as_real... (issue 41)
from . import fft  # noqa: F401 - the FFT (issue 41)
from . import numpy_dispatch
from ._registry import Sample, composite, registry
from .numpy_dispatch import numpy_functions  # mg.ops.numpy_functions(): the table NumPy's protocols read

__all__ = ["registry", "Sample", "exports", "numpy_functions"]


# -- the methods that hand a dense tensor to the sparse package ----------------------------------
# sparse sits above the ops and imports them; these two Tensor methods import it when called.
# They live here, beside the binding, so that this file stays the one place a lower layer
# reaches up.


@composite("to_sparse_coo", method="to_sparse_coo", export=False, kind="cast")
def to_sparse_coo(x, sparse_dim=None):
    """A COO sparse tensor of the non-zero entries (differentiable; ``mg.sparse``)."""
    from .. import sparse  # noqa: PLC0415 - sparse is above this layer (see above)

    return sparse.to_sparse_coo(x, sparse_dim)


@composite("to_sparse_csr", method="to_sparse_csr", export=False, kind="cast")
def to_sparse_csr(x):
    """A CSR sparse tensor (2-D, or 3-D batched) of the non-zero entries (differentiable)."""
    from .. import sparse  # noqa: PLC0415

    return sparse.to_sparse_csr(x)


def _reflected(fn):
    def r(self, other):
        return fn(other, self)

    r.__name__ = f"r{fn.__name__}"
    return r


def _bind() -> None:
    """Tensor's methods and operators: its own (``tensor_methods``), then the registry's."""
    _tensor_methods.bind()
    for op in registry().values():
        for name, write in op.inplace.items():  # (an in-place op's entry has no frontend of its own)
            setattr(Tensor, name, write)
        fn = op.frontend
        if fn is None:
            continue
        for name in op.method:
            setattr(Tensor, name, fn)
        for name in op.dunders:
            reflected = name.startswith("__r") and name not in ("__round__",)
            setattr(Tensor, name, _reflected(fn) if reflected else fn)
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = elementwise.abs
    Tensor.T = property(lambda self: shape.transpose(self), doc="The dims reversed (a view).")
    Tensor.mT = property(shape.matrix_transpose, doc="The last two dims swapped (a view).")
    Tensor.real = property(complex_ops.real, doc="The real part (PyTorch's ``t.real``; a real tensor: itself).")
    Tensor.imag = property(complex_ops.imag, doc="The imaginary part (PyTorch's ``t.imag``).")
    Tensor.__init__ = _creation.init
    Tensor.backward = _backward.backward
    Tensor._refresh_view = inplace.refresh_view
    _engine.FUNCTIONS.update((op.export, op.frontend) for op in registry().values()
                             if op.export and op.frontend is not None and hasattr(_np, op.export))
    Tensor.__array_ufunc__ = numpy_dispatch.array_ufunc  # np.exp(t), np.sum(t, axis=1) ... run minigrad's ops
    Tensor.__array_function__ = numpy_dispatch.array_function


def exports() -> dict:
    """The public functions ``minigrad`` exports, by name (from the registry)."""
    return {op.export: op.frontend for op in registry().values() if op.export and op.frontend is not None}


_bind()
