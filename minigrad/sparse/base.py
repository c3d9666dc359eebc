"""The common base of the sparse tensors: shared attributes, autograd glue, operators.

The layouts live in ``coo.py`` and ``csr.py``, the checked constructors in
``constructors.py``; ``tensor.py`` re-exports them all (see its docstring for the layouts).
"""
from __future__ import annotations

import numpy as np

from .. import backward as _backward
from .. import backend as _be
from .. import forward_ad as _fw
from ..ops.elementwise import where
from ..ops.indexing import index_add
from ..tensor import Tensor, wrap as _wrap
from . import _kernels as K


def is_sparse(x) -> bool:
    return isinstance(x, SparseTensor)


class SparseTensor:
    """Base of SparseCOOTensor and SparseCSRTensor (shared attributes, autograd glue)."""

    __array_ufunc__ = None  # make NumPy defer `ndarray @ sparse` to __rmatmul__
    layout = "?"

    # -- attributes -------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        """The stored values, a dense Tensor (nnz, *dense_shape); differentiable."""
        return self._values

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def nnz(self) -> int:
        return int(self._values.shape[0])

    @property
    def dense_dim(self) -> int:
        return len(self._shape) - self.sparse_dim

    @property
    def is_sparse(self) -> bool:
        return True

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def _xp(self):
        return _be.array_module(self._values.data)

    # -- autograd ----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._values.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True):
        """Make the stored values a leaf that requires grad (in place); returns self."""
        self._values.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._values.is_leaf

    @property
    def grad_fn(self):
        return self._values.grad_fn

    @property
    def grad(self):
        """The gradient: a sparse tensor with this tensor's indices and layout, or None."""
        g = self._values.grad
        return None if g is None else self._grad_like(g)

    @grad.setter
    def grad(self, g):
        if g is None:
            self._values.grad = None
        elif isinstance(g, SparseTensor):
            self._values.grad = g._values
        else:
            raise TypeError("grad: assign None or a sparse tensor with the same indices")

    def retain_grad(self):
        self._values.retain_grad()

    def _grad_target(self) -> Tensor:
        """The Tensor autograd differentiates for this sparse tensor (gradcheck, mg.grad): the
        protocol by which an object that is not a Tensor takes part in ``mg.grad``, with
        ``_grad_like(g)`` making its gradient from that Tensor's."""
        return self._values

    def detach(self):
        """The same indices with values cut from the graph (shares memory)."""
        return self._with_values(self._values.detach())

    def backward(self, grad=None, retain_graph=False, create_graph=False):
        """Backpropagate from this sparse tensor.

        ``grad`` is the upstream gradient: a dense Tensor / array of this shape, or a
        sparse tensor of this shape (any layout, coalesced or not). Each stored entry
        receives the upstream gradient at its coordinates; nothing is densified.
        """
        g = self._values_grad_from(grad)
        _backward.run_backward([self._values], [g], retain_graph=retain_graph or create_graph,
                         create_graph=create_graph)

    def _values_grad_from(self, grad):
        """The gradient of ``values`` given an upstream gradient of the whole tensor (Tensor ops:
        recorded when the upstream gradient itself carries a history, as under create_graph)."""
        xp = self._xp()
        if grad is None:
            if K.prod(self._shape) != 1:
                raise RuntimeError(
                    f"backward: grad can be implicitly created only for one-element outputs; this sparse "
                    f"output has shape {self._shape}. Pass grad= (dense or sparse, shape {self._shape})")
            return _wrap(xp.ones(self._values.shape, dtype=self.dtype))
        if isinstance(grad, SparseTensor):
            if grad.shape != self._shape:
                raise RuntimeError(f"backward: sparse grad has shape {grad.shape} but the output has shape "
                                   f"{self._shape}; they must match exactly")
            return self._gather_sparse(grad)
        if not isinstance(grad, Tensor):
            grad = Tensor(xp.asarray(grad, dtype=self.dtype))
        if grad.shape != self._shape:
            raise RuntimeError(f"backward: grad has shape {grad.shape} but the output has shape {self._shape}; "
                               "they must match exactly")
        rows = self._coo_rows()
        if not rows:
            return grad.reshape((1,) + grad.shape)[xp.zeros(self.nnz, dtype=np.int64)]
        return grad[tuple(rows)]

    def _gather_sparse(self, grad):
        """The sparse ``grad`` read at this tensor's stored coordinates: for each entry, the
        block (dense dims) of ``grad`` there, zeros where ``grad`` stores nothing. O(nnz)."""
        xp = self._xp()
        S = self.sparse_dim
        if grad.sparse_dim < S:  # move grad's leading dense dims into its sparse part
            grad = grad.to_sparse_coo()._respread(S)
        gc = grad.coalesce()
        block = tuple(self._shape[S:])
        if gc.nnz == 0:  # grad stores nothing: every entry gets zeros
            return _wrap(xp.zeros((self.nnz,) + block, dtype=gc.dtype))
        gv = gc._values
        if gc.sparse_dim == S and gc.nnz == self.nnz and (
                (gc.layout == self.layout == "coo" and _same_arrays(gc._idx, self._idx))
                or (gc.layout == self.layout == "csr" and _same_arrays(gc._crow, self._crow)
                    and _same_arrays(gc._col, self._col))):
            return gv
        if S == 0:  # every entry is a copy of the whole (dense-shaped) block
            return gc.to_dense().reshape((1,) + block).broadcast_to((self.nnz,) + block)
        src = gc._coo_rows()
        if gc.sparse_dim == S:
            pos, found = K.lookup(xp, src, self._coo_rows(), self._shape[:S])
            return where(_wrap(found.reshape((-1,) + (1,) * len(block))), gv[pos], 0.0)
        # grad is sparse in some of this tensor's dense dims: scatter its entries into
        # one block per distinct stored coordinate, then hand each entry its block
        groups, uniq = K.group_coords(xp, self._coo_rows(), self._shape[:S])
        pos, found = K.lookup(xp, uniq, src[:S], self._shape[:S])
        keep = xp.flatnonzero(found)
        where_ = (pos[keep],) + tuple(r[keep] for r in src[S:])
        blocks = index_add((groups.n,) + block, where_, gv[keep])
        return blocks if groups.identity else blocks[groups.inverse()]

    # -- forward mode: forward_ad.make_dual / unpack_dual hand a sparse tensor to these -----
    def _make_dual(self, tangent, level):
        """This tensor carrying ``tangent`` at ``level``: a sparse tangent has the primal's layout,
        indices and shape, so the values Tensor is made dual with the tangent's values."""
        sparse = isinstance(tangent, SparseTensor)
        same = sparse and tangent.layout == self.layout and tangent.shape == self._shape
        if not same or (tangent.device == self.device and not self._same_indices(tangent)):
            raise (ValueError if sparse else TypeError)(
                f"forward_ad.make_dual: a sparse primal's tangent must be sparse with the primal's layout, indices "
                f"and shape; the primal is {self._describe()}, the tangent {_describe(tangent)}"
                f"{' (other indices)' if same else ''}")
        return self._with_values(_fw.make_dual(self._values, tangent._values, level=level))

    def _unpack_dual(self, level):
        """``(primal, tangent)``: the tangent sparse with this tensor's indices (None when it has none)."""
        if level is None:
            return self, None
        p, t = _fw.unpack_dual(self._values, level=level)
        return self._with_values(p), None if t is None else self._grad_like(t)

    def _describe(self):
        return f"a sparse {self.layout} tensor of shape {self._shape} with nnz {self.nnz}"

    # sum, matmul (and @), _sparse_matmul and to_scipy call ops.py and convert.py, which build
    # sparse tensors from this module: the package's __init__.py binds them (see there)

    def astype(self, dtype):
        """The values cast to ``dtype`` (differentiable between floating dtypes)."""
        return self._with_values(self._values.astype(dtype))

    def to(self, device=None, dtype=None):
        """Move to ``device`` and/or cast to ``dtype``; differentiable in the values."""
        if isinstance(device, (np.dtype, type)) and dtype is None:
            device, dtype = None, device
        out = self
        if device is not None:
            dev = _be.parse_device(device)
            out = out._to_device(dev)
        if dtype is not None:
            out = out.astype(dtype)
        return out

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def _repr_body(self):
        raise NotImplementedError

    def __repr__(self):
        extra = [f"shape={self._shape}", f"nnz={self.nnz}", f"dtype={self.dtype}"]
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self._values.grad_fn is not None:
            extra.append(f"grad_fn=<{self._values.grad_fn.op}>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return f"sparse_{self.layout}_tensor(" + self._repr_body() + ", " + ", ".join(extra) + ")"

    __str__ = __repr__

    def __bool__(self):
        raise ValueError("the truth value of a sparse tensor is ambiguous; use .to_dense()")


def _describe(x):
    if isinstance(x, SparseTensor):
        return x._describe()
    return f"a {type(x).__name__} of shape {tuple(getattr(x, 'shape', ()))}"


def _same_arrays(a, b):
    if a is b:
        return True
    if a.shape != b.shape:
        return False
    xp = _be.array_module(a, b)
    return bool(xp.array_equal(a, b))


def _arr_str(a):
    a = _be.to_numpy(a)

    def one(x):
        return np.array2string(x, separator=", ", threshold=20, edgeitems=3, precision=4, max_line_width=10 ** 6)

    if a.ndim == 2 and a.shape[0] <= 8:  # index rows on one line
        return "[" + ", ".join(one(r) for r in a) + "]"
    return one(a)
