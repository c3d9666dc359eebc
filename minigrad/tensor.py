"""Tensor: a backend array plus what autograd needs (requires_grad, grad, grad_fn)."""
from __future__ import annotations

import weakref

import numpy as np

from . import autograd as _ag
from . import backend as _be
from ._util import NOARG as _NOARG

_default_dtype = np.dtype(np.float32)


def set_default_dtype(dtype) -> None:
    """The dtype Python floats and lists of floats become (float32 unless changed)."""
    global _default_dtype
    d = np.dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default_dtype = d


def get_default_dtype():
    return _default_dtype


def _check_grad_dtype(dtype, where="requires_grad"):
    if np.dtype(dtype).kind not in "fc":
        raise TypeError(
            f"{where}: only floating-point tensors can require grad, got dtype {np.dtype(dtype)}"
        )


def _wrap(data, rg=False):
    """Internal fast constructor: a Tensor over ``data`` (no checks, no copy)."""
    t = _new(Tensor)
    t.data = data
    t._rg = rg
    t.grad = None
    t._node = None
    t._oidx = 0
    t._ver = [0]
    t._hooks = None
    t._base = None
    return t


_new = object.__new__


def _to_array(data, dtype=None, device=None):
    """Convert user data to a backend array: Python floats default to the default dtype."""
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, np.ndarray) or _be.is_cupy_array(data):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(e, Tensor) for e in _flat_items(data)):
            data = _tensors_to_lists(data)
        arr = np.asarray(data)
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(_default_dtype)
    if dtype is not None:
        dtype = np.dtype(dtype)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
    if arr.dtype.kind in "OUSV":  # objects, strings, raw bytes: not numbers
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} data of dtype {arr.dtype}")
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


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return _be.to_numpy(data.data)
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(d) for d in data]
    return data


class Tensor:
    """An n-dimensional array that records the operations applied to it.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` is ``mg.tensor``.
    ``t.data`` is the backend array (no copy); ``t.grad`` holds the gradient
    after ``backward()``.

    >>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4., 6.])
    """

    __slots__ = ("data", "_rg", "grad", "_node", "_oidx", "_ver", "_hooks", "_base", "name", "__weakref__")
    __array_priority__ = 1000  # numpy_array * tensor -> Tensor.__rmul__

    def __init__(self, data, dtype=None, requires_grad=False, device=None):
        self.data = _to_array(data, dtype, device)
        self._rg = False
        self.grad = None
        self._node = None
        self._oidx = 0
        self._ver = [0]
        self._hooks = None
        self._base = None
        if requires_grad:
            self.requires_grad = True

    # -- attributes ----------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self) -> str:
        return _be.device_of(self.data)

    @property
    def is_cuda(self) -> bool:
        return _be.is_cupy_array(self.data)

    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        value = bool(value)
        if value:
            _check_grad_dtype(self.data.dtype)
        elif self._node is not None:
            raise RuntimeError(
                "requires_grad: you can only change requires_grad of leaf tensors; use "
                "detach() to get a tensor that does not require grad"
            )
        self._rg = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return self._node

    @property
    def T(self) -> "Tensor":
        return _shape.transpose(self)

    @property
    def mT(self) -> "Tensor":
        return _shape.swapaxes(self, -1, -2)

    def _xp(self):
        return _be.array_module(self.data)

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.data.shape[0]):
            yield self[i]

    def __bool__(self):
        if self.data.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.data.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.data.dtype.kind not in "iub" or self.data.size != 1:
            raise TypeError("only integer tensors of one element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    # -- conversion ----------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A host NumPy array (the same memory on the CPU; an explicit copy from the GPU)."""
        return _be.to_numpy(self.data)

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item: only one-element tensors can be converted to a Python scalar, got shape {self.shape}")
        return self.data.reshape(()).item() if hasattr(self.data, "item") else self.data

    def tolist(self):
        return _be.to_numpy(self.data).tolist()

    def __array__(self, dtype=None, copy=None):
        if _be.is_cupy_array(self.data):  # as CuPy and PyTorch: no implicit device-to-host copy
            raise TypeError(
                f"can't convert a {self.device} tensor to a NumPy array implicitly; use t.numpy() "
                "(an explicit copy to the host) or t.cpu()"
            )
        a = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return a.copy() if copy and a is self.data else a

    def to(self, device=None, dtype=None) -> "Tensor":
        """Move to ``device`` ("cpu", "cuda", "cuda:N") and/or cast to ``dtype``; differentiable."""
        t = self
        if isinstance(device, (np.dtype, type)) and dtype is None:
            device, dtype = None, device
        if device is not None:
            t = _shape.to_device(t, _be.parse_device(device))
        if dtype is not None:
            t = t.astype(dtype)
        return t

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device=None) -> "Tensor":
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def astype(self, dtype) -> "Tensor":
        return _ew.astype(self, dtype)

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    def long(self):
        return self.astype(np.int64)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory and version counter)."""
        t = _wrap(self.data)
        t._ver = self._ver
        t._base = self if self._base is None else self._base
        return t

    def clone(self) -> "Tensor":
        return _ew.clone(self)

    def copy(self) -> "Tensor":
        return _ew.clone(self)

    # -- storage ---------------------------------------------------------------
    def stride(self, dim=None):
        """Strides in elements (not bytes), as PyTorch reports them."""
        item = self.data.itemsize
        st = tuple(s // item for s in self.data.strides)
        return st if dim is None else st[dim]

    def is_contiguous(self) -> bool:
        return bool(self.data.flags.c_contiguous)

    def contiguous(self) -> "Tensor":
        """Self when C-contiguous, else a contiguous copy (differentiable)."""
        return self if self.is_contiguous() else _ew.clone(self)

    def storage_offset(self) -> int:
        """Offset of the first element from the start of the storage, in elements."""
        base = self.data
        while getattr(base, "base", None) is not None:
            base = base.base
        if not hasattr(base, "__array_interface__") and not hasattr(base, "data"):
            return 0
        try:
            start = self.data.__array_interface__["data"][0]
            bstart = base.__array_interface__["data"][0]
        except AttributeError:  # CuPy
            start, bstart = self.data.data.ptr, base.data.ptr
        return (start - bstart) // self.data.itemsize

    # -- sparse ----------------------------------------------------------------
    def to_sparse_coo(self, sparse_dim=None):
        """A COO sparse tensor of the non-zero entries (differentiable)."""
        from . import sparse

        return sparse.to_sparse_coo(self, sparse_dim)

    def to_sparse_csr(self):
        """A CSR sparse tensor (2-D, or 3-D batched) of the non-zero entries (differentiable)."""
        from . import sparse

        return sparse.to_sparse_csr(self)

    # -- autograd ------------------------------------------------------------
    def backward(self, grad=None, retain_graph=False, create_graph=False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        Args:
            grad: the gradient of some scalar with respect to ``self`` (same shape);
                may be omitted for a one-element tensor.
            retain_graph: keep saved values so backward can run through the graph again.
            create_graph: record the backward pass (for higher-order gradients).
        """
        _ag.run_backward([self], [grad], retain_graph=retain_graph or create_graph, create_graph=create_graph)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self._node is None:
            return
        if not self._rg:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        self._node.retain = weakref.ref(self)

    def register_hook(self, fn):
        """Call ``fn(grad)`` when this tensor's gradient is computed; it may return a replacement.

        Returns a handle with ``.remove()``.
        """
        if not self._rg:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that does not require grad")
        if self._node is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            if self._node.hooks is None:
                self._node.hooks = []
            hooks = self._node.hooks
        hooks.append(fn)
        return _HookHandle(hooks, fn)

    # -- printing ------------------------------------------------------------
    def __repr__(self):
        body = np.array2string(_be.to_numpy(self.data), separator=", ", prefix="tensor(", precision=4)
        extra = []
        if self.data.dtype not in (_default_dtype, np.dtype(np.int64), np.dtype(bool)):
            extra.append(f"dtype={self.data.dtype}")
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self._node is not None:
            extra.append(f"grad_fn=<{self._node.op}>")
        elif self._rg:
            extra.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extra) + ")"

    __str__ = __repr__

    # -- shape methods ---------------------------------------------------------
    def reshape(self, *shape):
        return _shape.reshape(self, *shape)

    def view(self, *shape):
        return _shape.view(self, *shape)

    def transpose(self, *axes):
        return _shape.transpose(self, *axes)

    def permute(self, *dims):
        return _shape.permute(self, *dims)

    def swapaxes(self, a, b):
        return _shape.swapaxes(self, a, b)

    swapdims = swapaxes

    def squeeze(self, axis=None, dim=None):
        return _shape.squeeze(self, axis if dim is None else dim)

    def unsqueeze(self, dim):
        return _shape.unsqueeze(self, dim)

    def expand(self, *sizes):
        return _shape.expand(self, *sizes)

    def broadcast_to(self, shape):
        return _shape.broadcast_to(self, shape)

    def flatten(self, start_dim=0, end_dim=-1):
        return _shape.flatten(self, start_dim, end_dim)

    def ravel(self):
        return _shape.flatten(self)

    def __getitem__(self, idx):
        return _shape.getitem(self, idx)

    # -- reductions ------------------------------------------------------------
    def sum(self, axis=_NOARG, keepdims=_NOARG, dtype=None, *, dim=_NOARG, keepdim=_NOARG):
        return _red.sum(self, axis, keepdims, dtype, dim=dim, keepdim=keepdim)

    def mean(self, axis=_NOARG, keepdims=_NOARG, dtype=None, *, dim=_NOARG, keepdim=_NOARG):
        return _red.mean(self, axis, keepdims, dtype, dim=dim, keepdim=keepdim)

    def var(self, axis=_NOARG, keepdims=_NOARG, ddof=0, *, dim=_NOARG, keepdim=_NOARG, correction=None):
        return _red.var(self, axis, keepdims, ddof, dim=dim, keepdim=keepdim, correction=correction)

    def std(self, axis=_NOARG, keepdims=_NOARG, ddof=0, *, dim=_NOARG, keepdim=_NOARG, correction=None):
        return _red.std(self, axis, keepdims, ddof, dim=dim, keepdim=keepdim, correction=correction)

    def max(self, axis=_NOARG, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
        return _red.max(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def min(self, axis=_NOARG, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
        return _red.min(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def argmax(self, axis=_NOARG, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
        return _red.argmax(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def argmin(self, axis=_NOARG, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
        return _red.argmin(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def logsumexp(self, axis=_NOARG, keepdims=_NOARG, *, dim=_NOARG, keepdim=_NOARG):
        return _red.logsumexp(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def softmax(self, axis=-1, *, dim=_NOARG):
        return _red.softmax(self, axis, dim=dim)

    def log_softmax(self, axis=-1, *, dim=_NOARG):
        return _red.log_softmax(self, axis, dim=dim)

    def any(self, axis=None, keepdims=False):
        return _wrap(self.data.any(axis=axis, keepdims=keepdims))

    def all(self, axis=None, keepdims=False):
        return _wrap(self.data.all(axis=axis, keepdims=keepdims))

    # -- elementwise methods ---------------------------------------------------
    def exp(self):
        return _ew.exp(self)

    def log(self):
        return _ew.log(self)

    def sqrt(self):
        return _ew.sqrt(self)

    def tanh(self):
        return _ew.tanh(self)

    def sigmoid(self):
        return _ew.sigmoid(self)

    def relu(self):
        return _ew.relu(self)

    def sin(self):
        return _ew.sin(self)

    def cos(self):
        return _ew.cos(self)

    def abs(self):
        return _ew.abs(self)

    def clip(self, min=None, max=None):
        return _ew.clip(self, min, max)

    clamp = clip

    def pow(self, y):
        return _ew.pow(self, y)

    def matmul(self, y):
        return _la.matmul(self, y)

    def dot(self, y):
        return _la.matmul(self, y)


class _HookHandle:
    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks, fn):
        self._hooks = hooks
        self._fn = fn

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


_ag.Tensor = Tensor
_ag._wrap = _wrap

# The ops modules import Tensor from here; bind them last (no import cycle at load time).
from .ops import elementwise as _ew  # noqa: E402
from .ops import linalg as _la  # noqa: E402
from .ops import reduce as _red  # noqa: E402
from .ops import shape as _shape  # noqa: E402

# operators are the op functions themselves: no extra call on the hot path
Tensor.__add__ = _ew.add
Tensor.__radd__ = _ew.radd
Tensor.__sub__ = _ew.sub
Tensor.__rsub__ = _ew.rsub
Tensor.__mul__ = _ew.mul
Tensor.__rmul__ = _ew.rmul
Tensor.__truediv__ = _ew.div
Tensor.__rtruediv__ = _ew.rdiv
Tensor.__pow__ = _ew.pow
Tensor.__rpow__ = _ew.rpow
Tensor.__neg__ = _ew.neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = _ew.abs
Tensor.__floordiv__ = _ew.floordiv
Tensor.__rfloordiv__ = _ew.rfloordiv
Tensor.__mod__ = _ew.mod
Tensor.__rmod__ = _ew.rmod
Tensor.__matmul__ = _la.matmul
Tensor.__rmatmul__ = _la.rmatmul
Tensor.__lt__ = _ew.lt
Tensor.__le__ = _ew.le
Tensor.__gt__ = _ew.gt
Tensor.__ge__ = _ew.ge
Tensor.__eq__ = _ew.eq
Tensor.__ne__ = _ew.ne
Tensor.__and__ = _ew.logical_and
Tensor.__rand__ = _ew.logical_and
Tensor.__or__ = _ew.logical_or
Tensor.__ror__ = _ew.logical_or
Tensor.__xor__ = _ew.logical_xor
Tensor.__rxor__ = _ew.logical_xor
Tensor.__invert__ = _ew.logical_not

# in-place writes (ops/inplace.py): storage shared with views, version counters bumped
from .ops import inplace as _ip  # noqa: E402

Tensor.add_ = _ip.add_
Tensor.sub_ = _ip.sub_
Tensor.mul_ = _ip.mul_
Tensor.div_ = _ip.div_
Tensor.zero_ = _ip.zero_
Tensor.fill_ = _ip.fill_
Tensor.copy_ = _ip.copy_
Tensor.clamp_ = _ip.clamp_
Tensor.clip_ = _ip.clamp_
Tensor.pow_ = _ip.pow_
Tensor.floor_divide_ = _ip.floor_divide_
Tensor.remainder_ = _ip.remainder_
# augmented assignment is the in-place op itself (it returns the tensor), as in NumPy and PyTorch
Tensor.__iadd__ = _ip.add_
Tensor.__isub__ = _ip.sub_
Tensor.__imul__ = _ip.mul_
Tensor.__itruediv__ = _ip.div_
Tensor.__ipow__ = _ip.pow_
Tensor.__ifloordiv__ = _ip.floor_divide_
Tensor.__imod__ = _ip.remainder_
Tensor._version = property(
    lambda t: t._ver[0],
    doc="How many in-place writes the storage has had (PyTorch's ``t._version``), shared by every view of it",
)
Tensor.__setitem__ = _ip.setitem
