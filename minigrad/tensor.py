"""Tensor: a backend array plus what autograd needs (requires_grad, grad, grad_fn).

This module holds the data structure only. Its operations (``+``, ``.sum()``, ``.exp()``,
``.backward()``...) are bound onto the class in one documented place, ``minigrad.ops``,
from the op registry: that is the one place where a lower layer learns of a higher one.
"""
from __future__ import annotations

import warnings
import weakref
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

_NEEDS_DETACH = ("Can't call {what} a Tensor that requires grad: NumPy would not record what it does, "
                 "so no gradient would flow back. Use tensor.detach().numpy() instead "
                 "(or np.asarray(tensor.detach())).")


def wrap(data):
    """A Tensor over the backend array ``data``: no checks, no copy (internal)."""
    t = _new(Tensor)
    t.data = data
    t._rg = False
    t._grad = None
    t._node = None
    t._oidx = 0
    t._ver = [0]
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


class _Size(int):
    """``t.size``: an int, NumPy's element count, that also answers PyTorch's ``t.size()`` (the
    shape) and ``t.size(d)`` (dim ``d``, negative counting from the end)."""

    def __new__(cls, n, shape):
        self = int.__new__(cls, n)
        self._shape = shape
        return self

    def __call__(self, dim=None):
        shape = self._shape
        if dim is None:
            return tuple(shape)
        nd = len(shape)
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"size: dim must be an int, got {type(dim).__name__} {dim!r}")
        if not -nd <= dim < nd:
            raise IndexError(f"size: dim {dim} is out of range for a tensor of shape {tuple(shape)} "
                             f"(valid [{-nd}, {nd - 1}])")
        return int(shape[dim])

    def __repr__(self):
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        return int, (int(self),)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy takes only an exact int as a weak scalar (an int subclass would make float32 / t.size
        # float64): hand it the int
        inputs = tuple(int(v) if isinstance(v, _Size) else v for v in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)


def _set_grad(t, g):
    t._grad = g


def _data_of(t):
    return t.data


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
    __slots__ = ("data", "_rg", "_grad", "_node", "_oidx", "_ver", "__dict__", "__weakref__")
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
        self._ver = [0]
        if _state.active:  # made in a captured step, not a live tensor
            _state.born(self)
        if requires_grad:
            self.requires_grad = True

    # -- attributes ----------------------------------------------------------
    # The array's own attributes, read through a C getter (``attrgetter``): rules and frontends
    # read them on every op, and a Python getter would cost a frame each time.
    shape = property(_attr("data.shape"), doc="The shape, a tuple of ints (the array's).")
    ndim = property(_attr("data.ndim"), doc="The number of dimensions.")
    @property
    def size(self) -> "_Size":
        """NumPy's element count, an int (``t.size == 6``) that PyTorch's habit may also call:
        ``t.size()`` is the shape and ``t.size(d)`` its dim ``d``, as ``torch.Tensor.size``."""
        d = self.data
        return _Size(d.size, d.shape)

    def numel(self) -> int:
        """The number of elements (PyTorch's name for ``t.size``)."""
        return self.data.size

    def dim(self) -> int:
        return self.data.ndim

    dtype = property(_attr("data.dtype"), doc="The element type, a NumPy dtype.")

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
            check_grad_dtype(self.data.dtype)
            if not self._rg:
                _state.refuse("creating a tensor that requires grad (a new parameter)")
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

    def _xp(self):
        """The array module of this tensor's data (numpy or cupy)."""
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
        _state.refuse("bool() of a tensor (an `if` or `while` on a tensor's value)")
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

    def __format__(self, spec):
        """A one-element tensor formats like its number (``f"{loss:.4f}"``)."""
        if spec and self.data.size == 1:
            return format(self.item(), spec)
        return format(str(self), spec)

    # -- conversion ----------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A host NumPy array (the same memory on the CPU; an explicit copy from the GPU).

        A tensor that requires grad refuses, as PyTorch's does: what NumPy does with the array
        is not recorded, so ``t.detach().numpy()`` says that the gradient stops there.
        """
        if self._rg:
            raise RuntimeError(_NEEDS_DETACH.format(what="numpy() on"))
        _state.refuse(".numpy()")
        return _be.to_numpy(self.data)

    def item(self):
        _state.refuse(".item()")
        if self.data.size != 1:
            raise ValueError(f"item: only one-element tensors can be converted to a Python scalar, got shape {self.shape}")
        return self.data.reshape(()).item()

    def tolist(self):
        _state.refuse(".tolist()")
        return _be.to_numpy(self.data).tolist()

    def __array__(self, dtype=None, copy=None):
        if self._rg:
            raise RuntimeError(_NEEDS_DETACH.format(what="np.asarray() / np.array() (__array__) on"))
        if _be.is_cupy_array(self.data):  # as CuPy and PyTorch: no implicit device-to-host copy
            raise TypeError(
                f"can't convert a {self.device} tensor to a NumPy array implicitly; use t.numpy() "
                "(an explicit copy to the host) or t.cpu()"
            )
        _state.refuse("np.asarray() of a tensor (__array__)")
        a = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return a.copy() if copy and a is self.data else a

    # -- DLPack ---------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the data for ``np.from_dlpack``, ``torch.from_dlpack``, ``cupy.from_dlpack``...

        No copy: the consumer sees this tensor's memory (a write through either shows in the
        other). A tensor that requires grad hands over its detached data: the consumer's
        operations are not recorded.
        """
        kw = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
        return self.data.__dlpack__(**kw)

    def __dlpack_device__(self):
        """(device type, device id) as DLPack counts them: (1, 0) for the CPU, (2, N) for cuda:N."""
        dev = getattr(self.data, "__dlpack_device__", None)
        if dev is None:
            raise TypeError(f"__dlpack_device__: the {self.device} backend array "
                            f"({type(self.data).__module__}.{type(self.data).__name__}) has no DLPack support")
        return dev()

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory and version counter)."""
        # a captured step (mg.compile) reads the data again on each replay (a parameter's: live)
        t = wrap(_state.kernel(_data_of, self) if _state.active else self.data)
        t._ver = self._ver
        t._base = self if self._base is None else self._base
        return t

    # -- storage ---------------------------------------------------------------
    def stride(self, dim=None):
        """Strides in elements (not bytes), as PyTorch reports them."""
        item = self.data.itemsize
        st = tuple(s // item for s in self.data.strides)
        return st if dim is None else st[dim]

    def is_contiguous(self) -> bool:
        return bool(self.data.flags.c_contiguous)

    def storage_offset(self) -> int:
        """Offset of the first element from the start of the storage, in elements."""
        base = self.data
        while getattr(base, "base", None) is not None:
            base = base.base
        try:
            start = self.data.__array_interface__["data"][0]
            bstart = base.__array_interface__["data"][0]
        except AttributeError:  # CuPy
            start, bstart = self.data.data.ptr, base.data.ptr
        return (start - bstart) // self.data.itemsize

    @property
    def _version(self) -> int:
        """How many in-place writes the storage has had (PyTorch's ``t._version``), shared by its views."""
        return self._ver[0]

    # -- autograd ------------------------------------------------------------
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
        owner = self if self._node is None else self._node
        if owner._hooks is None:
            owner._hooks = []
        owner._hooks.append(fn)
        return _HookHandle(owner._hooks, fn)

    # -- printing ------------------------------------------------------------
    def __repr__(self):
        _state.refuse("printing a tensor's values (repr/str)")  # a replay would print nothing
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


class _HookHandle:
    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks, fn):
        self._hooks = hooks
        self._fn = fn

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)
