"""Tensor's properties and methods beyond the tape's data structure: ``requires_grad``, ``grad``
(a captured step, mg.compile, replays an assignment), ``grad_fn``, sizes and devices, conversion
to Python and NumPy, printing, DLPack, storage queries, hooks. ``minigrad.ops`` binds them onto
``Tensor`` with the op methods (``bind``), so that what the tape needs (``tensor.py``) reads on
its own.
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import _state
from . import backend as _be
from .tensor import Tensor, get_default_dtype

_NEEDS_DETACH = ("Can't call {what} a Tensor that requires grad: NumPy would not record what it does, "
                 "so no gradient would flow back. Use tensor.detach().numpy() instead "
                 "(or np.asarray(tensor.detach())).")


def tangent_level(tangents):
    """The first active dual level at which ``tangents`` (a tensor's ``_tangents``) holds one, or None."""
    levels = _state.get().fw
    if tangents is None or levels is None:
        return None
    for level in levels.ids:
        if level in tangents:
            return level
    return None


def _refuse_untracked(t, what):
    """Refuse handing ``t``'s array to code that records nothing (NumPy): a tensor that requires
    grad would lose its gradient there, one that carries a tangent at an active dual level its
    tangent (a derivative silently zero)."""
    if t._requires_grad:
        raise RuntimeError(_NEEDS_DETACH.format(what=what))
    level = tangent_level(t._tangents)
    if level is not None:
        raise RuntimeError(
            f"Can't call {what} a Tensor that carries a tangent (forward mode, dual level {level}): NumPy "
            "would not carry it, so the derivative would silently be zero. Use the primal, "
            "forward_ad.unpack_dual(t).primal, to mean that (or compute with minigrad's functions, "
            "which carry the tangent)")


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


class _HookHandle:
    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks, fn):
        self._hooks = hooks
        self._fn = fn

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)

def check_grad_dtype(dtype, where="requires_grad") -> None:
    """Only floating-point and complex tensors may require grad."""
    d = np.dtype(dtype)
    if d.kind not in "fc":
        raise TypeError(f"{where}: only floating-point and complex tensors can require grad, got dtype {d}")


class TensorMethods:
    """The methods ``bind`` copies onto ``Tensor`` (never instantiated)."""

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        value = bool(value)
        if value:
            check_grad_dtype(self.data.dtype)
            if not self._requires_grad:
                _state.refuse("creating a tensor that requires grad (a new parameter)")
        elif self._node is not None:
            raise RuntimeError(
                "requires_grad: you can only change requires_grad of leaf tensors; use "
                "detach() to get a tensor that does not require grad"
            )
        self._requires_grad = value

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        """The Node that made this tensor (None for a leaf)."""
        return self._node

    @property
    def grad(self):
        """The gradient accumulated by ``backward()`` (a Tensor), or None. Reading it on a non-leaf
        that did not ``retain_grad()`` warns once, as PyTorch does."""
        g = self._grad
        if g is None and self._node is not None and self._node.retain is None and not self.__dict__.get("_warned"):
            self.__dict__["_warned"] = True
            warnings.warn("The .grad attribute of a tensor that is not a leaf is not populated during backward(); "
                          "call .retain_grad() on it before backward() if you want its gradient", UserWarning,
                          stacklevel=2)
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
        _state.assign(self, "_grad", g)  # a captured step (mg.compile) assigns it again on each replay

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

    @property
    def device(self) -> str:
        return _be.device_of(self.data)

    @property
    def is_cuda(self) -> bool:
        return _be.is_cupy_array(self.data)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

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

    def __format__(self, spec):
        """A one-element tensor formats like its number (``f"{loss:.4f}"``)."""
        if spec and self.data.size == 1:
            return format(self.item(), spec)
        return format(str(self), spec)

    def numpy(self) -> np.ndarray:
        """A host NumPy array (the same memory on the CPU; an explicit copy from the GPU).

        A tensor that requires grad refuses, as PyTorch's does: what NumPy does with the array
        is not recorded, so ``t.detach().numpy()`` says that the gradient stops there. So does one
        that carries a tangent at an active dual level (``forward_ad.unpack_dual(t).primal.numpy()``).
        """
        _refuse_untracked(self, "numpy() on")
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
        _refuse_untracked(self, "np.asarray() / np.array() (__array__) on")
        if _be.is_cupy_array(self.data):  # as CuPy and PyTorch: no implicit device-to-host copy
            raise TypeError(
                f"can't convert a {self.device} tensor to a NumPy array implicitly; use t.numpy() "
                "(an explicit copy to the host) or t.cpu()"
            )
        _state.refuse("np.asarray() of a tensor (__array__)")
        a = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return a.copy() if copy and a is self.data else a

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
        return self._storage.version

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self._node is None:
            return
        if not self._requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require grad")
        self._node.retain = weakref.ref(self)

    def register_hook(self, fn):
        """Call ``fn(grad)`` when this tensor's gradient is computed; it may return a replacement.

        Returns a handle with ``.remove()``.
        """
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that does not require grad")
        owner = self if self._node is None else self._node
        if owner._hooks is None:
            owner._hooks = []
        owner._hooks.append(fn)
        return _HookHandle(owner._hooks, fn)

    def __repr__(self):
        _state.refuse("printing a tensor's values (repr/str)")  # a replay would print nothing
        body = np.array2string(_be.to_numpy(self.data), separator=", ", prefix="tensor(", precision=4)
        extra = []
        if self.data.dtype not in (get_default_dtype(), np.dtype(np.int64), np.dtype(bool)):
            extra.append(f"dtype={self.data.dtype}")
        if self.device != "cpu":
            extra.append(f"device='{self.device}'")
        if self._node is not None:
            extra.append(f"grad_fn=<{self._node.op}>")
        elif self._requires_grad:
            extra.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extra) + ")"

    __str__ = __repr__


def bind() -> None:
    """Copy ``TensorMethods``' methods and properties onto ``Tensor``."""
    for name, value in vars(TensorMethods).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                        "__static_attributes__"):
            setattr(Tensor, name, value)
