"""vmap's arrays: ``BatchedArray``, a backend array that stands for a batch of arrays, one per
element of a ``vmap`` level, and ``BatchedNamespace``, the array module an op's forward and
gradient rule are handed when one of their arrays is batched.

A ``BatchedArray`` holds its physical array ``p`` (the batch along axis 0) and its ``level``: it
*is* the array ``p[b]`` for each ``b``, and shows that logical array's ``shape``, ``ndim``,
``dtype``. Every op's forward and rule is written in the array API (``xp.<name>``, operators,
array methods); on batched arrays each of those calls runs once on the physical arrays (the
batching rules below: elementwise calls broadcast, an axis moves past the batch axis, a shape
gains it in front, matmul batches on the left). So an op's batching rule is derived from its
forward, and the tape, gradient rules and forward mode work on batched arrays unchanged:
``vmap(grad(f))``, ``vmap(jvp(f))`` and ``jacrev`` by one reverse pass over a batched cotangent
need nothing of their own. An array call with no batching rule raises ``NoBatchRule``: the
engine then runs that op once per element and stacks the results (``loop``), with a warning
that names the op.

Levels nest: a level's physical array may itself be batched at a lower level. A call runs at
the highest level among its arguments; arrays of lower levels (and unbatched ones) are
constants of that level's elements, shared by all of them.
"""
from __future__ import annotations

import itertools
import operator
import threading
import warnings
from contextvars import ContextVar

import numpy as np

from . import _state
from .errors import BatchingFallback

_level_ids = itertools.count(1)
_lock = threading.Lock()
# the vmap levels active in this thread, outermost first: (level, size, randomness)
_levels: ContextVar[tuple] = ContextVar("minigrad_vmap_levels", default=())
active = 0  # how many vmap calls run, in any thread: a hint that lets hot paths skip the checks


class NoBatchRule(BatchingFallback):
    """An array call on batched arrays that has no batching rule: the op's own batching rule runs
    instead, or the op once per element (``fallback``)."""

    def fallback(self, op, arrays, params):
        return fallback(op, arrays, params, self)


class BatchedValueError(NoBatchRule, RuntimeError):
    """A batched value read as one Python value (``.item()``, ``float()``, ``bool()``), or copied
    into an unbatched array: a user's code that does this inside vmap gets this error."""


def new_level(size: int, randomness: str):
    """Enter a vmap level of ``size`` elements; returns (level, token for ``exit_level``)."""
    global active
    with _lock:
        level = next(_level_ids)
        active += 1
        _state.vmapping += 1
    return level, _levels.set(_levels.get() + ((level, size, randomness),))


def exit_level(token) -> None:
    global active
    _levels.reset(token)
    with _lock:
        active -= 1
        _state.vmapping -= 1


def levels() -> tuple:
    return _levels.get()


# ---------------------------------------------------------------------------
# BatchedArray
# ---------------------------------------------------------------------------

def is_batched(a) -> bool:
    return a.__class__ is BatchedArray


def top_level(args) -> int:
    """The highest level among ``args`` (0: none batched)."""
    top = 0
    for a in args:
        if a.__class__ is BatchedArray and a.level > top:
            top = a.level
        elif isinstance(a, (list, tuple)):
            top = max(top, top_level(a))
    return top


def batched(level: int, p):
    """The array batched at ``level`` over axis 0 of ``p``. When ``p`` is batched at a higher level
    (a gradient arriving from an outer transform), the levels are swapped so that the outer
    wrapper always has the higher level."""
    if p.__class__ is BatchedArray and p.level > level:
        return BatchedArray(p.level, batched(level, _mod(p.p).swapaxes(p.p, 0, 1)))
    if p.__class__ is BatchedArray and p.level == level:
        raise RuntimeError("internal error: a batched array of one level inside the same level")
    return BatchedArray(level, p)


def _mod(a):
    """The array module of ``a`` (a backend array or a lower level's BatchedArray)."""
    if a.__class__ is np.ndarray:
        return np
    if a.__class__ is BatchedArray:
        return a.batch_namespace
    from . import _xp
    return _xp.array_module(a)


def _phys(a, level):
    """``a``'s physical array at ``level`` (batch on axis 0), or None when it is not batched there."""
    return a.p if a.__class__ is BatchedArray and a.level == level else None


def _size_at(args, level):
    for a in args:
        if a.__class__ is BatchedArray and a.level == level:
            return a.p.shape[0]
        if isinstance(a, (list, tuple)):
            s = _size_at(a, level)
            if s is not None:
                return s
    return None


def _refuse_value(what):
    raise BatchedValueError(
        f"vmap: {what} of a batched tensor: inside vmap a tensor stands for one value per batch element, so it "
        "has no single Python value (data-dependent control flow is not supported; use mg.where, or move the "
        "check outside vmap)")


def _refuse_write():
    raise BatchedValueError(
        "vmap: an in-place write of a batched value into an unbatched tensor: the tensor is the same for every "
        "batch element, the value is not (write into a batched tensor, or use an out-of-place op)")


class BatchedArray:
    """A batch of arrays, one per element of a vmap ``level``: ``p[b]`` for each ``b``."""

    __slots__ = ("level", "p")
    __array_priority__ = 2000

    def __init__(self, level, p):
        self.level, self.p = level, p

    # -- what the logical array shows -------------------------------------------------------
    @property
    def shape(self):
        return self.p.shape[1:]

    @property
    def ndim(self):
        return self.p.ndim - 1

    @property
    def size(self):
        s = 1
        for n in self.p.shape[1:]:
            s *= n
        return s

    @property
    def dtype(self):
        return self.p.dtype

    @property
    def itemsize(self):
        return self.p.itemsize

    @property
    def nbytes(self):
        return self.size * self.p.itemsize

    @property
    def strides(self):
        return self.p.strides[1:]

    @property
    def device(self):
        return self.p.device

    @property
    def flags(self):
        return self.p.flags

    @property
    def vmap_levels(self) -> frozenset:
        """The levels this array is batched at (the engine notes them for backward)."""
        return levels_of(self)

    def settle(self, keep):
        return settle(self, keep)

    def to_settle(self, keep):
        return to_settle(self, keep)

    def view_positions_in(self, b, view_positions):
        """kernels.view_positions of this batched view in the batched base ``b``: each element's
        positions in its own base (the physical ones, less each element's start)."""
        pos = view_positions(self.p, b.p)
        n = pos.shape[0]
        first = _mod(pos).arange(n, dtype=np.int64).reshape((n,) + (1,) * (pos.ndim - 1)) * b.size
        pos = pos - first
        if pos.__class__ is not BatchedArray and bool((pos == pos[:1]).all()):
            return pos[0]  # the same view of every element (the usual case): one set of positions
        return BatchedArray(self.level, pos)

    @property
    def batch_namespace(self):
        p = self.p
        while p.__class__ is BatchedArray:
            p = p.p
        m = _mod(p)
        ns = _NAMESPACES.get(m)
        if ns is None:
            ns = _NAMESPACES[m] = BatchedNamespace(m)
        return ns

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        return self.swapaxes(-1, -2)

    @property
    def real(self):
        return BatchedArray(self.level, self.p.real)

    @property
    def imag(self):
        return BatchedArray(self.level, self.p.imag)

    def __repr__(self):
        return f"BatchedArray(level={self.level}, shape={self.shape}, batch={self.p.shape[0]}, dtype={self.dtype})"

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.p.shape[1]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- no single value ---------------------------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise BatchedValueError(
            "vmap: a batched value was converted to an array or written into an unbatched one: inside vmap, an "
            "in-place write of a batched value into an unbatched tensor is not possible (make the target batched, "
            "e.g. with an out-of-place op), and a batched tensor has no single NumPy array")

    def item(self, *args):
        _refuse_value(".item()")

    def tolist(self):
        _refuse_value(".tolist()")

    def __bool__(self):
        _refuse_value("bool()")

    def __float__(self):
        _refuse_value("float()")

    def __int__(self):
        _refuse_value("int()")

    def __index__(self):
        _refuse_value("int()")

    def __complex__(self):
        _refuse_value("complex()")

    # -- the array API -----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__":
            if kwargs.get("out") is not None:
                return _ufunc_out(ufunc, inputs, kwargs)
            return call(ufunc.__name__, ufunc, inputs, kwargs)  # matmul is a ufunc with a rule of its own
        if method in ("reduce", "accumulate") and inputs and inputs[0].__class__ is BatchedArray:
            return _ufunc_reduce(ufunc, method, inputs[0], kwargs)
        if method == "at":
            return _ufunc_at(ufunc, *inputs)
        raise NoBatchRule(f"np.{ufunc.__name__}.{method}")

    def __array_function__(self, func, types, args, kwargs):
        mod = func.__module__ or ""
        name = ("linalg." + func.__name__) if "linalg" in mod else ("fft." + func.__name__) if mod.endswith(
            ".fft") or ".fft." in mod else func.__name__
        return call(name, func, args, kwargs)

    def astype(self, dtype, copy=True, **kwargs):
        return BatchedArray(self.level, self.p.astype(dtype, copy=copy, **kwargs))

    def copy(self, order="C"):
        return BatchedArray(self.level, self.p.copy())

    def view(self, *args):
        if args:
            raise NoBatchRule("ndarray.view(dtype)")
        return BatchedArray(self.level, self.p.view())

    def conj(self):
        return BatchedArray(self.level, self.p.conj())

    conjugate = conj

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if isinstance(shape, int):
            shape = (shape,)
        shape = _fill_shape(tuple(int(s) for s in shape), self.size, self.shape)
        return BatchedArray(self.level, self.p.reshape((self.p.shape[0],) + shape, order=order))

    def ravel(self, order="C"):
        return self.reshape(-1)

    flatten = ravel

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        nd = self.ndim
        perm = tuple(range(nd))[::-1] if not axes or axes[0] is None else tuple(_ax(a, nd) for a in axes)
        return BatchedArray(self.level, self.p.transpose((0,) + tuple(a + 1 for a in perm)))

    def swapaxes(self, a, b):
        nd = self.ndim
        return BatchedArray(self.level, self.p.swapaxes(_ax(a, nd) + 1, _ax(b, nd) + 1))

    def squeeze(self, axis=None):
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        return BatchedArray(self.level, self.p.squeeze(_axes(axis, self.ndim)))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        nd = self.ndim
        return BatchedArray(self.level, self.p.diagonal(offset, _ax(axis1, nd) + 1, _ax(axis2, nd) + 1))

    def fill(self, value):
        self.p.fill(value)

    def __getitem__(self, idx):
        return getitem(self, idx)

    def __setitem__(self, idx, value):
        setitem(self, idx, value)


def _fill_shape(shape, size, old):
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0:
            raise ValueError(f"cannot reshape array of shape {old} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    return shape


def _ax(a, nd):
    a = operator.index(a)
    if not -nd <= a < max(nd, 1):
        raise np.exceptions.AxisError(a, nd)
    return a % nd if nd else 0


def _axes(axis, nd):
    """``axis`` (None: all, an int, a tuple) as the physical axes of a level's array of ``nd`` dims."""
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(_ax(a, nd) + 1 for a in axis)
    return _ax(axis, nd) + 1


# methods that reduce or scan along ``axis``
def _axis_method(name):
    def method(self, axis=None, *args, **kwargs):
        if axis is None and name in ("argmax", "argmin"):
            # the flat index, per element (keepdims: with one singleton axis per dim)
            keep = kwargs.pop("keepdims", False)
            flat = self.p.reshape(self.p.shape[0], -1)
            r = BatchedArray(self.level, getattr(flat, name)(1, *args, **kwargs))
            return r.reshape((1,) * self.ndim) if keep else r
        if axis is None and name in ("cumsum", "cumprod"):
            return getattr(self.ravel(), name)(0, *args, **kwargs)
        return BatchedArray(self.level, getattr(self.p, name)(_axes(axis, self.ndim), *args, **kwargs))

    method.__name__ = name
    return method


for _name in ("sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin", "std", "var", "cumsum",
              "cumprod"):
    setattr(BatchedArray, _name, _axis_method(_name))


def _sort_method(self, axis=-1, **kwargs):
    self.p.sort(_ax(axis, self.ndim) + 1, **kwargs)


def _argsort_method(self, axis=-1, **kwargs):
    return BatchedArray(self.level, self.p.argsort(_ax(axis, self.ndim) + 1, **kwargs))


BatchedArray.sort, BatchedArray.argsort = _sort_method, _argsort_method


def _clip_method(self, a_min=None, a_max=None, **kwargs):
    return elementwise(np.clip, (self, a_min, a_max), kwargs)


def _round_method(self, decimals=0):
    return BatchedArray(self.level, self.p.round(decimals))


BatchedArray.clip, BatchedArray.round = _clip_method, _round_method


# operators: the ufuncs
def _binary(uf, reflected=False):
    if reflected:
        def op(self, other):
            return elementwise(uf, (other, self), {})
    else:
        def op(self, other):
            return elementwise(uf, (self, other), {})
    return op


def _inplace(uf):
    def op(self, other):
        return _ufunc_out(uf, (self, other), {"out": (self,)})
    return op


for _dunder, _uf in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
                     ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
                     ("matmul", np.matmul), ("and", np.bitwise_and), ("or", np.bitwise_or),
                     ("xor", np.bitwise_xor), ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(BatchedArray, f"__{_dunder}__", _binary(_uf))
    setattr(BatchedArray, f"__r{_dunder}__", _binary(_uf, reflected=True))
    setattr(BatchedArray, f"__i{_dunder}__", _inplace(_uf))
for _dunder, _uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                     ("eq", np.equal), ("ne", np.not_equal)):
    setattr(BatchedArray, f"__{_dunder}__", _binary(_uf))


def _matmul_dunder(reflected):
    # ``a @ b``: the matmul rule with the physical arrays' own matmul (CuPy's on the device)
    if reflected:
        def op(self, other):
            return _matmul(_mod(self.p).matmul, other, self)
    else:
        def op(self, other):
            return _matmul(_mod(self.p).matmul, self, other)
    return op


BatchedArray.__matmul__, BatchedArray.__rmatmul__ = _matmul_dunder(False), _matmul_dunder(True)
BatchedArray.__neg__ = lambda self: BatchedArray(self.level, -self.p)
BatchedArray.__pos__ = lambda self: BatchedArray(self.level, +self.p)
BatchedArray.__abs__ = lambda self: BatchedArray(self.level, abs(self.p))
BatchedArray.__invert__ = lambda self: BatchedArray(self.level, ~self.p)
BatchedArray.__hash__ = None


# ---------------------------------------------------------------------------
# the batching rules
# ---------------------------------------------------------------------------

def _lndim(a, level):
    """The number of dims of ``a`` as one element of ``level`` sees it."""
    if a.__class__ is BatchedArray and a.level == level:
        return a.p.ndim - 1
    return getattr(a, "ndim", 0)


def _aligned(args, level, nd=None):
    """Each array argument as the level's elementwise call takes it: a batched one's physical
    array with singleton axes after the batch axis up to ``nd`` dims (the widest), others as they are
    (they broadcast from the right)."""
    if nd is None:
        nd = max((_lndim(a, level) for a in args), default=0)
    out = []
    for a in args:
        p = _phys(a, level)
        if p is None:
            out.append(a)
            continue
        k = p.ndim - 1
        if k < nd:
            p = p.reshape(p.shape[:1] + (1,) * (nd - k) + p.shape[1:])
        out.append(p)
    return out


def _phys_call(name, fn, args, kwargs):
    """``fn(*args, **kwargs)`` on a level's physical arrays: through the lower level's rule when one of
    them is batched there (not through NumPy's dispatch, which may hand a device array's override
    the batched one first)."""
    if top_level(args):
        return call(name, fn, args, kwargs)
    return fn(*args, **kwargs)


def elementwise(fn, args, kwargs):
    """An elementwise call (a ufunc, ``where``, ``clip``): the physical arrays, aligned, broadcast."""
    level = top_level(args)
    res = _phys_call(fn.__name__, fn, _aligned(args, level), kwargs)
    if isinstance(res, tuple):
        return tuple(BatchedArray(level, r) for r in res)
    return BatchedArray(level, res)


def _ufunc_out(ufunc, inputs, kwargs):
    """``ufunc(..., out=(o,))`` (``a += b``): into a batched ``o`` at the highest level."""
    out = kwargs.pop("out")
    out = out[0] if isinstance(out, tuple) else out
    level = top_level(inputs + (out,))
    if out.__class__ is not BatchedArray or out.level != level:
        _refuse_write()
    ins = _aligned(inputs, level, out.ndim)
    ufunc(*ins, out=out.p, **kwargs)
    return out


def _ufunc_reduce(ufunc, method, x, kwargs):
    axis = kwargs.pop("axis", 0)
    if method == "accumulate":
        return BatchedArray(x.level, getattr(ufunc, method)(x.p, axis=_axes(axis, x.ndim), **kwargs))
    return BatchedArray(x.level, ufunc.reduce(x.p, axis=_axes(axis, x.ndim), **kwargs))


def _ufunc_at(ufunc, a, idx, b=None):
    """``np.add.at(a, idx, b)``: a batched ``a`` takes each element's own scatter (its own index
    arrays and values, where they are batched)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    level = top_level((a, b) + idx)
    if a.__class__ is not BatchedArray or a.level != level:
        _refuse_write()
    p, full = _target_index(a, idx, level)
    if b is None:
        ufunc.at(p, full)
        return
    ufunc.at(p, full, _values_at(b, level, _selection_ndim(a.shape, idx)))


def _selection_ndim(shape, idx):
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=bool), shape=shape, strides=(0,) * len(shape))
    # index arrays (batched, or on the device) as host zeros of one element's shape: only the dims count
    idx = tuple(np.zeros(tuple(k.shape), dtype=bool if k.dtype == np.dtype(bool) else np.intp)
                if hasattr(k, "shape") and not isinstance(k, np.generic) else k for k in idx)
    return probe[idx].ndim


def _move_first(p, axis):
    return p if axis == 0 else _mod(p).moveaxis(p, axis, 0)


def getitem(x, idx):
    """``x[idx]``: a batched ``x`` is indexed past its batch axis; batched index arrays take each
    element's own index (gathered with the batch's arange)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    level = top_level((x,) + idx)
    if top_level(idx) != level:  # the index is the same for every element
        p = x.p
        res = p[(slice(None),) + idx]
        adv = [i for i, k in enumerate(idx) if _is_advanced(k)]
        if adv and any(b - a > 1 for a, b in zip(adv, adv[1:], strict=False)):
            # NumPy puts the broadcast index dims first when advanced indices are not adjacent;
            # with the batch axis in front they went first still, then the batch axis
            nb = np.broadcast_shapes(*[np.shape(idx[i]) for i in adv])
            res = _move_first(res, len(nb))
        return BatchedArray(level, res)
    return _gather(x, idx, level)


def _is_advanced(k):
    return not (k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)))


def _gather(x, idx, level):
    xp, full = _gather_index(x, idx, level)
    return BatchedArray(level, xp[full])


def _gather_index(x, idx, level):
    """``x[idx]`` with batched index arrays as one physical indexing ``p[full]``: ``p`` is ``x``'s
    physical array at ``level`` (broadcast when ``x`` is not batched there; a view of it after
    any leading basic indices) and ``full`` gathers with the batch's arange, so ``p[full]`` is the
    batch axis, then one element's ``x[idx]`` (also the place a write through ``idx`` goes)."""
    size = _size_at((x,) + idx, level)
    xp = _phys(x, level)
    if xp is None:
        xp = _mod(x).broadcast_to(x, (size,) + tuple(x.shape))
    if any(k is Ellipsis for k in idx):
        e = next(i for i, k in enumerate(idx) if k is Ellipsis)
        n_used = sum(1 for k in idx if k is not None and k is not Ellipsis)
        idx = idx[:e] + (slice(None),) * (len(xp.shape) - 1 - n_used) + idx[e + 1:]
    adv = [i for i, k in enumerate(idx) if _is_advanced(k)]
    if any(getattr(idx[i], "dtype", None) == np.dtype(bool) and top_level((idx[i],)) == level for i in adv):
        raise RuntimeError(
            "vmap: indexing with a batched boolean mask (masked_select, x[mask]): each element would select its "
            "own number of values, a shape that depends on the data, which vmap cannot batch (torch.func.vmap "
            "refuses it too); use mg.where(mask, x, 0), or a mask that is the same for every element")
    if any(b - a > 1 for a, b in zip(adv, adv[1:], strict=False)) or any(
            getattr(idx[i], "dtype", None) == np.dtype(bool) for i in adv):
        raise NoBatchRule("indexing with batched index arrays that are boolean or not adjacent")
    first = adv[0]
    head = idx[:first]
    if any(k is None for k in head):
        raise NoBatchRule("indexing with None before batched index arrays")
    if any(not (isinstance(k, slice) and k == slice(None)) for k in head):
        xp = xp[(slice(None),) + head]  # the leading basic indices first: full slices remain
        head = tuple(slice(None) for k in head if isinstance(k, slice))
    lead = len(head)
    ndb = max(_lndim(idx[i], level) for i in adv)
    m = _mod(xp)
    shape_b = (size,) + (1,) * (lead + ndb)
    parts = [m.arange(size).reshape(shape_b)]
    for j in range(lead):  # the leading full slices as aranges of their own axis
        n = xp.shape[1 + j]
        parts.append(m.arange(n).reshape((1,) * (1 + j) + (n,) + (1,) * (lead - j - 1 + ndb)))
    for i in adv:
        k = idx[i]
        pk = _phys(k, level)
        if pk is None:
            parts.append(k)
        else:
            parts.append(pk.reshape(pk.shape[:1] + (1,) * (lead + ndb - pk.ndim + 1) + pk.shape[1:]))
    rest = idx[adv[-1] + 1:]
    return xp, tuple(parts) + rest


def _target_index(x, idx, level):
    """Where a write into the batched ``x`` through ``idx`` goes: (physical view, physical index),
    the selection's shape the batch axis then one element's ``x[idx]``."""
    if top_level(idx) == level:
        return _gather_index(x, idx, level)
    return x.p, (slice(None),) + idx


def _values_at(v, level, sel):
    """The values written into a selection of ``sel`` dims per element: a batched one's physical
    array with singleton axes after the batch axis up to ``sel``; others broadcast as they are."""
    pv = _phys(v, level)
    if pv is None:
        return v
    k = pv.ndim - 1
    if k < sel:
        pv = pv.reshape(pv.shape[:1] + (1,) * (sel - k) + pv.shape[1:])
    return pv


def scatter_target(target, idx, values):
    """``kernels.index_add(xp, target, idx, values)`` (``target[idx] += values``) on arrays some of
    which are batched, as one scatter on physical arrays: ``(xp, target, index, values)`` for it,
    each element with its own index arrays and values (an unbatched target takes no batched ones)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    level = top_level((target, values) + idx)
    if not level:
        return _mod(target), target, idx, values
    if target.__class__ is not BatchedArray or target.level != level:
        _refuse_write()
    p, full = _target_index(target, idx, level)
    return _mod(p), p, full, _values_at(values, level, _selection_ndim(target.shape, idx))


def setitem(x, idx, value):
    """``x[idx] = value`` into a batched ``x``: each element's selection takes its own value."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    level = top_level((x, value) + idx)
    if x.__class__ is not BatchedArray or x.level != level:
        _refuse_write()
    p, full = _target_index(x, idx, level)
    p[full] = _values_at(value, level, _selection_ndim(x.shape, idx))


# numpy functions by name -------------------------------------------------------------------------

_RULES: dict = {}
_NOAXES = object()  # an fft function's axes not given (fft2's default differs from fftn's)


def rule(*names):
    def deco(fn):
        for n in names:
            _RULES[n] = fn
        return fn
    return deco


def call(name, fn, args, kwargs):
    """The array function ``name`` (``fn``: the module's own) on arguments some of which are batched."""
    r = _RULES.get(name)
    if r is not None:
        return r(fn, *args, **kwargs)
    if isinstance(fn, np.ufunc) or (hasattr(fn, "nin") and hasattr(fn, "nout")):  # NumPy's or CuPy's ufuncs
        return elementwise(fn, args, kwargs)
    raise NoBatchRule(f"{name}")


def _level_and_phys(x):
    level = top_level((x,))
    return level, x.p


@rule("where")
def _where(fn, cond, *xy):
    if not xy:
        raise NoBatchRule("where(cond) (nonzero)")
    return elementwise(fn, (cond,) + xy, {})


@rule("clip")
def _clip(fn, x, a_min=None, a_max=None, **kw):
    return elementwise(fn, (x, a_min, a_max), kw)


@rule("round", "around", "real", "imag", "conj", "conjugate", "nan_to_num", "isclose", "sinc", "i0", "angle",
      "real_if_close", "fix", "isreal", "iscomplex")
def _elementwise_fn(fn, *args, **kw):
    return elementwise(fn, args, kw)


@rule("copysign", "heaviside")
def _elementwise_fn2(fn, *args, **kw):
    return elementwise(fn, args, kw)


@rule("sum", "mean", "prod", "max", "min", "amax", "amin", "any", "all", "std", "var", "nansum", "nanmean",
      "nanmax", "nanmin", "nanprod", "count_nonzero", "median", "nanmedian", "ptp", "logsumexp")
def _reduce(fn, x, axis=None, *args, **kw):
    if x.__class__ is not BatchedArray:
        raise NoBatchRule(f"{fn.__name__} of unbatched array with batched arguments")
    return BatchedArray(x.level, fn(x.p, _axes(axis, x.ndim), *args, **kw))


@rule("quantile", "percentile", "nanquantile", "nanpercentile")
def _quantile(fn, x, q, axis=None, **kw):
    if x.__class__ is not BatchedArray or top_level((q,)) == x.level:
        raise NoBatchRule(fn.__name__)
    r = fn(x.p, q, axis=_axes(axis, x.ndim), **kw)
    if np.ndim(q):  # the quantiles' axis comes first, then the batch
        r = _mod(r).swapaxes(r, 0, 1)
    return BatchedArray(x.level, r)


@rule("argmax", "argmin", "cumsum", "cumprod", "nancumsum", "nancumprod")
def _argred(fn, x, axis=None, **kw):
    return getattr(x, fn.__name__.replace("nan", ""))(axis, **kw) if "nan" not in fn.__name__ else \
        BatchedArray(x.level, fn(x.p, _axes(axis, x.ndim), **kw))


@rule("sort", "argsort", "flip", "partition", "argpartition")
def _along(fn, x, *args, axis=-1, **kw):
    if fn.__name__ in ("partition", "argpartition"):
        return BatchedArray(x.level, fn(x.p, *args, axis=_ax(axis, x.ndim) + 1, **kw))
    if fn.__name__ == "flip" and args:
        axis, args = args[0], args[1:]
    if fn.__name__ == "flip" and axis is None:
        return BatchedArray(x.level, fn(x.p, axis=tuple(range(1, x.p.ndim))))
    if fn.__name__ in ("sort", "argsort") and args:
        axis, args = args[0], args[1:]
    if axis is None:
        return fn(x.ravel(), *args, axis=0, **kw)
    return BatchedArray(x.level, fn(x.p, *args, axis=_axes(axis, x.ndim), **kw))


@rule("roll")
def _roll(fn, x, shift, axis=None):
    if axis is None:
        return fn(x.ravel(), shift, 0).reshape(x.shape)
    return BatchedArray(x.level, fn(x.p, shift, _axes(axis, x.ndim)))


@rule("tril", "triu")
def _tri(fn, x, k=0):
    return BatchedArray(x.level, fn(x.p, k))


@rule("reshape")
def _reshape(fn, x, shape, *args, **kw):
    return x.reshape(shape, **kw)


@rule("ravel")
def _ravel(fn, x, order="C"):
    return x.ravel()


@rule("transpose")
def _transpose(fn, x, axes=None):
    return x.transpose(axes)


@rule("swapaxes")
def _swapaxes(fn, x, a, b):
    return x.swapaxes(a, b)


@rule("moveaxis")
def _moveaxis(fn, x, source, destination):
    nd = x.ndim
    src = _axes(source, nd)
    dst = _axes(destination, nd)
    return BatchedArray(x.level, fn(x.p, src, dst))


@rule("expand_dims")
def _expand_dims(fn, x, axis):
    nd = x.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    return BatchedArray(x.level, fn(x.p, _axes(axis, nd)))


@rule("squeeze")
def _squeeze(fn, x, axis=None):
    return x.squeeze(axis)


@rule("diagonal")
def _diagonal(fn, x, offset=0, axis1=0, axis2=1):
    return x.diagonal(offset, axis1, axis2)


@rule("trace")
def _trace(fn, x, offset=0, axis1=0, axis2=1, dtype=None):
    nd = x.ndim
    return BatchedArray(x.level, fn(x.p, offset, _ax(axis1, nd) + 1, _ax(axis2, nd) + 1, dtype=dtype))


@rule("broadcast_to")
def _broadcast_to(fn, x, shape, **kw):
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    level = x.level
    p = _aligned((x,), level, len(shape))[0]
    return BatchedArray(level, fn(p, (p.shape[0],) + shape, **kw))


@rule("broadcast_arrays")
def _broadcast_arrays(fn, *args, **kw):
    shape = np.broadcast_shapes(*[a.shape for a in args])
    return [_bcast(a, shape) for a in args]


def _bcast(a, shape):
    if a.__class__ is BatchedArray:
        return _broadcast_to(None if a is None else _mod(a.p).broadcast_to, a, shape)
    return _mod(a).broadcast_to(a, shape)


def _with_batch(args, level):
    """Arrays of a join: each batched at ``level`` (an unbatched one broadcast over the batch)."""
    size = _size_at(args, level)
    out = []
    for a in args:
        p = _phys(a, level)
        if p is None:
            m = _mod(a) if hasattr(a, "shape") else np
            a = m.asarray(a) if not hasattr(a, "shape") else a
            p = _mod(a).broadcast_to(a, (size,) + tuple(a.shape))
        out.append(p)
    return out


@rule("concatenate", "stack", "hstack", "vstack", "column_stack")
def _join(fn, arrays, axis=0, **kw):
    arrays = list(arrays)
    level = top_level(arrays)
    ps = _with_batch(arrays, level)
    name = fn.__name__
    if name == "stack":
        nd = arrays[0].ndim + 1
        return BatchedArray(level, _phys_call(name, fn, (ps,), dict(axis=_axes(axis, nd), **kw)))
    if name == "concatenate":
        if axis is None:
            return BatchedArray(level, _phys_call(name, fn, ([p.reshape(p.shape[0], -1) for p in ps],), dict(axis=1, **kw)))
        return BatchedArray(level, _phys_call(name, fn, (ps,), dict(axis=_axes(axis, arrays[0].ndim), **kw)))
    raise NoBatchRule(name)


@rule("split", "array_split")
def _split(fn, x, indices_or_sections, axis=0):
    return [BatchedArray(x.level, p) for p in fn(x.p, indices_or_sections, axis=_axes(axis, x.ndim))]


@rule("repeat")
def _repeat(fn, x, repeats, axis=None):
    if top_level((repeats,)) == x.level:
        raise NoBatchRule("repeat with batched repeats")
    if axis is None:
        return BatchedArray(x.level, fn(x.p.reshape(x.p.shape[0], -1), repeats, axis=1))
    return BatchedArray(x.level, fn(x.p, repeats, axis=_axes(axis, x.ndim)))


@rule("tile")
def _tile(fn, x, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(x.ndim, len(reps))
    p = _aligned((x,), x.level, nd)[0]
    return BatchedArray(x.level, fn(p, (1,) + (1,) * (nd - len(reps)) + reps))


@rule("pad")
def _pad(fn, x, pad_width, mode="constant", **kw):
    pw = np.broadcast_to(np.asarray(pad_width), (x.ndim, 2)).tolist()
    return BatchedArray(x.level, fn(x.p, [(0, 0)] + pw, mode=mode, **kw))


@rule("take")
def _take(fn, x, indices, axis=None, **kw):
    if top_level((indices,)) == top_level((x, indices)):
        if axis is None:
            return getitem(x.ravel() if x.__class__ is BatchedArray else _mod(x).ravel(x), (indices,))
        nd = x.ndim
        return getitem(x, (slice(None),) * _ax(axis, nd) + (indices,))
    if axis is None:
        return BatchedArray(x.level, fn(x.p.reshape(x.p.shape[0], -1), indices, axis=1, **kw))
    return BatchedArray(x.level, fn(x.p, indices, axis=_axes(axis, x.ndim), **kw))


@rule("take_along_axis")
def _take_along_axis(fn, x, indices, axis):
    level = top_level((x, indices))
    nd = max(_lndim(x, level), _lndim(indices, level))
    px, pi = _with_batch([x, indices], level)
    px, pi = _aligned([BatchedArray(level, px), BatchedArray(level, pi)], level, nd)
    return BatchedArray(level, _phys_call("take_along_axis", fn, (px, pi), dict(axis=_ax(axis, nd) + 1)))


@rule("lib.stride_tricks.as_strided")
def _as_strided(fn, x, shape=None, strides=None, **kw):
    """A strided view of each element: the batch axis is one more leading axis, with its own stride
    (an element's strides, ``x.strides``, are its physical array's past the batch axis)."""
    if x.__class__ is not BatchedArray:
        raise NoBatchRule("as_strided of an unbatched array with batched arguments")
    p = x.p
    shape = tuple(p.shape[1:]) if shape is None else tuple(shape)
    strides = tuple(p.strides[1:]) if strides is None else tuple(strides)
    if p.__class__ is BatchedArray:  # a lower level's array: its own rule, through its namespace
        fn = _mod(p).lib.stride_tricks.as_strided
    return BatchedArray(x.level, fn(p, (p.shape[0],) + shape, (p.strides[0],) + strides, **kw))


@rule("searchsorted")
def _searchsorted(fn, a, v, side="left", sorter=None):
    """Each element's own search: with only the values batched, one search of them all; with the
    sequence batched, each value's position counted by comparison with its element's sequence
    (``a < v``, or ``a <= v`` for side='right': the count of entries before it)."""
    level = top_level((a, v, sorter))
    if _phys(a, level) is None and top_level((sorter,)) != level:
        return BatchedArray(level, fn(a, v.p, side=side, sorter=sorter))
    if sorter is not None:
        a = getitem(a, (sorter,)) if top_level((a, sorter)) else a[sorter]
    size = _size_at((a, v), level)
    pa, pv = unbatch(a, level, size), unbatch(v, level, size)
    m = _mod(pa)
    vs = pv.reshape(size, -1, 1)
    below = (pa[:, None, :] < vs) if side == "left" else (pa[:, None, :] <= vs)
    return BatchedArray(level, below.sum(axis=-1).astype(np.intp).reshape(pv.shape))


@rule("bincount")
def _bincount(fn, x, weights=None, minlength=0):
    """Each element's counts: the elements' indices offset into one bincount of ``size`` blocks.
    The counts' length is data-dependent (the largest index + 1, at least ``minlength``): it must
    be the same for every element (checked on every element's indices)."""
    level = top_level((x, weights))
    size = _size_at((x, weights), level)
    px = unbatch(x, level, size)
    pw = None if weights is None else unbatch(weights, level, size)
    if px.__class__ is BatchedArray or pw.__class__ is BatchedArray:
        raise NoBatchRule("bincount under nested vmap levels")
    m = _mod(px)
    top = innermost(px)
    tops = (top.max(axis=1) + 1) if top.shape[1] else m.zeros(size, dtype=np.intp)
    lo, hi = int(tops.min()), int(tops.max())
    n = max(int(minlength), hi)
    if max(int(minlength), lo) != n:
        raise ValueError(
            f"vmap: bincount's length depends on the data (the largest index + 1, here {lo} to {hi} across the "
            f"batch elements): each element would count into a different number of bins; pass minlength >= {hi}")
    flat = (px + m.arange(size, dtype=px.dtype)[:, None] * n).reshape(-1)
    r = fn(flat, None if pw is None else pw.reshape(-1), minlength=size * n)
    return BatchedArray(level, r.reshape(size, n))


@rule("unravel_index")
def _unravel_index(fn, indices, shape, order="C"):
    return tuple(BatchedArray(indices.level, r) for r in fn(indices.p, shape, order=order))


@rule("zeros_like", "ones_like", "empty_like", "full_like")
def _like(fn, x, *args, shape=None, **kw):
    if shape is not None:
        return fn(x.p[0], *args, shape=shape, **kw)
    return BatchedArray(x.level, fn(x.p, *args, **kw))


@rule("copy", "array", "ascontiguousarray", "asarray", "asanyarray")
def _copy(fn, x, dtype=None, copy=None, **kw):
    if x.__class__ is not BatchedArray:
        raise NoBatchRule(f"{fn.__name__} of a structure holding batched arrays")
    if fn.__name__ in ("asarray", "asanyarray") or (fn.__name__ == "array" and copy is False):
        x = x if dtype is None or np.dtype(dtype) == x.dtype else x.astype(dtype)
        p = _phys_call(fn.__name__, fn, (x.p,), {})  # the module's own: CuPy's moves a host array to the device
        return x if p is x.p else BatchedArray(x.level, p)
    p = x.p if dtype is None else x.p.astype(dtype)
    return BatchedArray(x.level, p.copy() if p is x.p else p)


@rule("asnumpy")
def _asnumpy(fn, x, *args, **kw):
    """CuPy's ``asnumpy``: the physical array to the host (an op that computes there: eig on CuPy < 14)."""
    return BatchedArray(x.level, _phys_call("asnumpy", fn, (x.p,) + args, kw))


@rule("shape")
def _shape(fn, x):
    return x.shape


@rule("ndim")
def _ndim(fn, x):
    return x.ndim


@rule("size")
def _size(fn, x, axis=None):
    return x.size if axis is None else x.shape[axis]


@rule("result_type")
def _result_type(fn, *args):
    return np.result_type(*[a.dtype if a.__class__ is BatchedArray else a for a in args])


@rule("may_share_memory", "shares_memory")
def _may_share(fn, a, b, **kw):
    pa = a.p if a.__class__ is BatchedArray else a
    pb = b.p if b.__class__ is BatchedArray else b
    from ._xp import device_of
    if device_of(pa) != device_of(pb):  # arrays on two devices share no memory
        return False
    return _mod(pa).may_share_memory(pa, pb)


@rule("matmul")
def _matmul(fn, a, b, **kw):
    level = top_level((a, b))
    na, nb = _lndim(a, level), _lndim(b, level)
    if na == 0 or nb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    pa, pb = _phys(a, level), _phys(b, level)
    # vectors as matrices: a (k,) as (1, k), b (k,) as (k, 1); dropped again at the end
    if na == 1:
        a = BatchedArray(level, pa[:, None, :]) if pa is not None else a[None, :]
    if nb == 1:
        b = BatchedArray(level, pb[..., None]) if pb is not None else b[:, None]
    nd = max(max(na, 2), max(nb, 2))
    xa, xb = _aligned((a, b), level, nd)
    r = _stacked_matmul(fn, xa, xb) if not kw else _phys_call("matmul", fn, (xa, xb), kw)
    if na == 1:
        r = r[..., 0, :]
    if nb == 1:
        r = r[..., 0]
    return BatchedArray(level, r)


def _stacked_matmul(fn, xa, xb):
    """``fn(xa, xb)`` (performance only: the same product) for the two stacks where NumPy's matmul
    loops over small matrices: a shared matrix ``xb`` (the batch folds into ``xa``'s rows: one
    GEMM), and a contraction over one (outer products: one broadcast multiply)."""
    if xa.__class__ is BatchedArray or xb.__class__ is BatchedArray:
        return _matmul(fn, xa, xb)  # a lower level's: its own rule
    if xa.ndim < 2 or xb.ndim < 2:
        return fn(xa, xb)
    k = xa.shape[-1]
    if k == 1 and xb.shape[-2] == 1:  # einsum's loop: twice a broadcast multiply's speed (stride-0 operand)
        return _mod(xa).einsum("...i,...j->...ij", xa[..., 0], xb[..., 0, :])
    if xb.ndim == 2 and xa.ndim > 2 and xa.shape[-2] * 4 < xa.size // k:  # few rows per element
        return fn(xa.reshape(-1, k), xb).reshape(xa.shape[:-1] + xb.shape[-1:])
    return fn(xa, xb)


@rule("dot")
def _dot(fn, a, b):
    if _lndim(a, top_level((a,))) <= 2 and getattr(b, "ndim", 0) <= 2:
        return _matmul(_mod(a.p if a.__class__ is BatchedArray else a).matmul, a, b)
    raise NoBatchRule("dot of arrays over 2-d")


@rule("outer")
def _outer(fn, a, b):
    return elementwise(np.multiply, (_flat(a)[..., None] if True else a, _flat(b)[None, :] if True else b), {})


def _flat(a):
    return a.ravel() if hasattr(a, "ravel") else np.ravel(a)


@rule("einsum")
def _einsum(fn, subscripts, *operands, **kw):
    if not isinstance(subscripts, str) or "->" not in subscripts:
        raise NoBatchRule("einsum without an explicit output")
    level = top_level(operands)
    ins, out = subscripts.replace(" ", "").split("->")
    ins = ins.split(",")
    used = set("".join(ins) + out)
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used)
    ps = []
    subs = []
    for s, o in zip(ins, operands, strict=True):
        p = _phys(o, level)
        if p is None:
            ps.append(o)
            subs.append(s)
        else:
            ps.append(p)
            subs.append(letter + s)
    return BatchedArray(level, _phys_call("einsum", fn, (",".join(subs) + "->" + letter + out, *ps), kw))


@rule("linalg.inv", "linalg.det", "linalg.slogdet", "linalg.cholesky", "linalg.eigh", "linalg.eigvalsh",
      "linalg.svd", "linalg.qr", "linalg.eig", "linalg.eigvals", "linalg.pinv", "linalg.matrix_rank")
def _stacked(fn, x, *args, **kw):
    """Functions of the last two axes, that take a stack of matrices."""
    if x.__class__ is not BatchedArray or top_level(args) == x.level:
        raise NoBatchRule(fn.__name__)
    r = fn(x.p, *args, **kw)
    if isinstance(r, tuple):
        return tuple(BatchedArray(x.level, v) for v in r)
    if hasattr(r, "_fields"):  # a named tuple (eigh, svd, slogdet, qr)
        return type(r)(*[BatchedArray(x.level, v) for v in r])
    return BatchedArray(x.level, r)


@rule("linalg.solve")
def _solve(fn, a, b):
    level = top_level((a, b))
    na, nb = _lndim(a, level), _lndim(b, level)
    vec = nb == 1 or (nb < na)  # NumPy 2: b is a vector only when 1-d
    vec = nb == 1
    if vec:
        pb = _phys(b, level)
        b = BatchedArray(level, pb[..., None]) if pb is not None else b[..., None]
    nd = max(na, 2 if vec else nb)
    xa, xb = _aligned((a, b), level, nd)
    r = _phys_call("linalg.solve", fn, (xa, xb), {})
    return BatchedArray(level, r[..., 0] if vec else r)


@rule("linalg.norm")
def _norm(fn, x, ord=None, axis=None, keepdims=False):
    if axis is None:
        if ord is None:
            return BatchedArray(x.level, fn(x.p.reshape(x.p.shape[0], -1), axis=1, keepdims=False)).reshape(
                (1,) * x.ndim if keepdims else ())
        axis = tuple(range(x.ndim)) if x.ndim == 2 else 0
    return BatchedArray(x.level, fn(x.p, ord=ord, axis=_axes(axis, x.ndim), keepdims=keepdims))


@rule("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft")
def _fft1(fn, x, n=None, axis=-1, norm=None):
    if x.__class__ is not BatchedArray:
        raise NoBatchRule(fn.__name__)
    return BatchedArray(x.level, fn(x.p, n, _ax(axis, x.ndim) + 1, norm))


@rule("fft.fftn", "fft.ifftn", "fft.rfftn", "fft.irfftn", "fft.fft2", "fft.ifft2", "fft.rfft2", "fft.irfft2")
def _fftn(fn, x, s=None, axes=_NOAXES, norm=None):
    """The n-d transforms: the axes past the batch axis (NumPy's defaults made explicit first)."""
    if x.__class__ is not BatchedArray:
        raise NoBatchRule(fn.__name__)
    nd = x.ndim
    if axes is _NOAXES:
        axes = (-2, -1) if fn.__name__.endswith("2") else None
    if axes is None:
        axes = tuple(range(nd)) if s is None else tuple(range(nd - len(s), nd))
    return BatchedArray(x.level, fn(x.p, s, _axes(tuple(axes), nd), norm))


@rule("fft.fftshift", "fft.ifftshift")
def _fftshift(fn, x, axes=None):
    return BatchedArray(x.level, fn(x.p, tuple(range(1, x.p.ndim)) if axes is None else _axes(axes, x.ndim)))


# ---------------------------------------------------------------------------
# the namespace an op's forward and rule are handed
# ---------------------------------------------------------------------------

_PASS = {"zeros", "ones", "empty", "full", "arange", "eye", "identity", "linspace", "dtype", "result_type",
         "iinfo", "finfo", "newaxis", "errstate", "promote_types", "can_cast", "issubdtype", "tri", "indices",
         "ndindex", "unravel_index", "ravel_multi_index", "diag_indices", "tril_indices", "triu_indices"}


class BatchedNamespace:
    """The array module handed to an op whose arrays are batched: ``module``'s functions, each
    routed through its batching rule when an argument is batched."""

    def __init__(self, module):
        self.module = module
        self.__name__ = module.__name__

    def __getattr__(self, name):
        attr = getattr(self.module, name)
        if not callable(attr) or isinstance(attr, type) or name in _PASS:
            if hasattr(attr, "__dict__") and name in ("linalg", "fft", "lib", "random", "cuda"):
                sub = _SubNamespace(attr, name)
                self.__dict__[name] = sub
                return sub
            return attr
        fn = _routed(name, attr)
        self.__dict__[name] = fn
        return fn

    def scatter_target(self, target, index, values):
        """kernels.index_add's arguments on the physical arrays (a batched scatter as one scatter)."""
        return scatter_target(target, index, values)


class _SubNamespace:
    def __init__(self, module, prefix):
        self.module, self.prefix = module, prefix

    def __getattr__(self, name):
        attr = getattr(self.module, name)
        if not callable(attr) or isinstance(attr, type):
            return _SubNamespace(attr, f"{self.prefix}.{name}") if hasattr(attr, "__dict__") else attr
        return _routed(f"{self.prefix}.{name}", attr)


def _routed(name, fn):
    def routed(*args, **kwargs):
        if top_level(args) or top_level(tuple(kwargs.values())):
            if kwargs.get("out") is not None and hasattr(fn, "nout"):
                return _ufunc_out(fn, args, kwargs)
            return call(name, fn, args, kwargs)
        return fn(*args, **kwargs)

    routed.__name__ = name
    return routed


_NAMESPACES: dict = {}


# ---------------------------------------------------------------------------
# the fallback: once per element
# ---------------------------------------------------------------------------

def fallback(op, arrays, params, why):
    """``op`` on ``arrays`` some of which are batched, where its forward made an array call with no
    batching rule (``why``): the op's own batching rule, else once per element."""
    if op.batch is not None:
        return op.batch(op.forward, arrays, params)
    return loop(op.name, op.forward, arrays, params, str(why))


def elementwise_op(forward, arrays, params):
    """The batching rule of an elementwise op: its forward on the physical arrays, aligned (each
    batched one's batch axis first, then singleton axes up to the widest), whose results are
    the physical results."""
    level = top_level(arrays)
    phys = _aligned(arrays, level)
    from . import _xp
    xp = _xp.array_module(*[a for a in phys if hasattr(a, "shape")])
    out = forward(xp, *phys, **params)
    return _wrap_all(out, level)


def fresh_buffers(forward, arrays, params, lift=()):
    """The batching rule of an op whose forward writes its operands into a fresh buffer
    (``xp.zeros(shape)`` then ``buf[idx] = x`` or a scatter): its forward with buffers made
    batched at the arguments' levels (one per element), so those writes batch as any other.
    The operands at the positions ``lift`` (written into, after a copy) are made batched at those
    levels too. An array call without a rule in it still runs the op once per element."""
    lv = {}
    for a in _walk(arrays):
        while a.__class__ is BatchedArray:  # a level's physical array may hold lower levels
            lv.setdefault(a.level, a.p.shape[0])
            a = a.p
    lv = sorted(lv.items())
    inner = next(a for a in _walk(arrays) if a.__class__ is BatchedArray).batch_namespace.module
    if lift and not params.get("inplace"):  # a write into the operand itself stays refused when it is not batched
        arrays = [_lift(a, lv) if k in lift and hasattr(a, "shape") else a for k, a in enumerate(arrays)]
    try:
        return forward(_Buffers(inner, lv), *arrays, **params)
    except NoBatchRule as e:
        return loop(getattr(forward, "__name__", "op"), forward, arrays, params, str(e))


def refused(forward, arrays, params):
    """The batching rule of a write into its first operand (``assign``), reached only when that
    operand is not batched where the value is: an error, never a loop (each element would
    overwrite the one tensor in turn)."""
    _refuse_write()


def lifting(*positions):
    """``fresh_buffers``, with the operands at ``positions`` made batched first (an op whose forward
    copies one and writes into the copy)."""
    def rule(forward, arrays, params):
        return fresh_buffers(forward, arrays, params, lift=positions)
    return rule


def _lift(a, lv):
    """``a`` batched at each of the levels ``lv`` ((level, size), outermost first) it is not, broadcast."""
    have = levels_of(a)
    for level, size in lv:
        if level not in have:
            a = batched(level, _mod(a).broadcast_to(a, (size,) + tuple(a.shape)))
    return a


class _Buffers(BatchedNamespace):
    """A BatchedNamespace whose fresh buffers (``zeros``, ``ones``, ``empty``, ``full``) are batched
    at ``levels`` ((level, size), outermost first)."""

    def __init__(self, module, levels):
        super().__init__(module)
        self._levels = levels
        for name in ("zeros", "ones", "empty", "full"):
            setattr(self, name, self._fresh(getattr(module, name)))

    def _fresh(self, make):
        def fresh(shape, *args, **kwargs):
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            x = make(tuple(n for _, n in self._levels) + shape, *args, **kwargs)
            for level, _ in self._levels:  # the outermost level's axis first: the innermost wrapper
                x = BatchedArray(level, x)
            return x
        return fresh


def _wrap_all(out, level):
    if isinstance(out, tuple):
        return tuple(_wrap_all(o, level) for o in out)
    return BatchedArray(level, out) if hasattr(out, "shape") else out


def loop(name, fn, args, params, why=""):
    """``fn(xp, *args, **params)`` once per element of the highest level among ``args``, the
    results stacked: an op with no batching rule (a warning names it)."""
    level = top_level(args)
    size = _size_at(args, level)
    warnings.warn(f"vmap: op {name!r} has no batching rule{f' ({why})' if why else ''}; it runs once per batch "
                  f"element ({size} times)", stacklevel=3)
    outs = []
    for b in range(size):
        sl = [_element(a, level, b) for a in args]
        from . import _xp
        arrays = [a for a in _walk(sl) if hasattr(a, "shape")]
        xp = _xp.array_module(*arrays) if arrays else np
        outs.append(fn(xp, *sl, **params))
    return _stack(outs, level)


def _element(a, level, b):
    if a.__class__ is BatchedArray and a.level == level:
        return a.p[b]
    if isinstance(a, (list, tuple)) and top_level(a) == level:
        return type(a)(_element(v, level, b) for v in a)
    return a


def _walk(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _walk(a)
        else:
            yield a


def _stack(outs, level):
    first = outs[0]
    if isinstance(first, tuple):
        return tuple(_stack([o[i] for o in outs], level) for i in range(len(first)))
    if isinstance(first, list):
        return [_stack([o[i] for o in outs], level) for i in range(len(first))]
    if first is None or isinstance(first, (str, bool, int, float)) and not isinstance(first, np.generic):
        if any(o != first for o in outs):
            raise NoBatchRule("a per-element Python value differs between elements")
        return first
    if isinstance(first, dict):
        return {k: _stack([o[k] for o in outs], level) for k in first}
    m = _mod(first) if hasattr(first, "shape") else np
    return BatchedArray(level, m.stack([m.asarray(o) for o in outs]))


# ---------------------------------------------------------------------------
# random draws inside vmap: ``randomness``
# ---------------------------------------------------------------------------

def draw(fn, shape, what: str):
    """``fn(shape)``, a random draw, under the active levels' ``randomness``: "error" refuses it,
    "different" draws one per element (the batch axes in front), "same" one for all."""
    lv = _levels.get()
    if not lv:
        return fn(shape)
    check_random(what)
    pre = [(level, size) for level, size, randomness in lv if randomness == "different"]
    if not pre:
        return fn(shape)
    x = fn(tuple(s for _, s in pre) + tuple(shape))
    for level, _ in pre:  # the outermost level's axis first: it is the innermost wrapper
        x = BatchedArray(level, x)
    return x


def check_random(what: str) -> None:
    """Refuse a random draw inside a vmap level whose ``randomness`` is "error"."""
    for _, _, randomness in _levels.get():
        if randomness == "error":
            raise RuntimeError(
                f"vmap: {what} draws random numbers inside vmap(..., randomness='error') (the default); pass "
                "randomness='different' for independent draws per batch element, or 'same' for one draw shared by all")


def map_physical(a, fn):
    """``fn`` applied to the innermost physical array of ``a`` (a device move of a batched draw)."""
    if a.__class__ is BatchedArray:
        return BatchedArray(a.level, map_physical(a.p, fn))
    return fn(a)


def levels_of(a) -> frozenset:
    """The levels ``a`` is batched at."""
    out = set()
    while a.__class__ is BatchedArray:
        out.add(a.level)
        a = a.p
        # a lower level may wrap the physical array of this one
    return frozenset(out)


def unbatch(a, level: int, size: int):
    """The physical array of ``a`` at ``level``, the batch on axis 0: ``a``'s own when batched there
    (through the levels above it), else ``a`` broadcast over the ``size`` elements."""
    if a.__class__ is BatchedArray:
        if a.level == level:
            return a.p
        if a.level > level:
            inner = unbatch(a.p, level, size)  # (size, batch of a.level, ...)
            return BatchedArray(a.level, _mod(inner).swapaxes(inner, 0, 1))
    return _mod(a).broadcast_to(a, (size,) + tuple(a.shape))


def settle(g, keep: frozenset):
    """A gradient array batched at levels that are neither among ``keep`` (the input's) nor active in
    this thread, summed over them: the input was the same for all of their elements."""
    active_now = {lv for lv, _, _ in _levels.get()}
    return _settle(g, keep, active_now)


def _settle(g, keep, active_now):
    if g.__class__ is not BatchedArray:
        return g
    inner = _settle(g.p, keep, active_now)
    if g.level in keep or g.level in active_now:
        return g if inner is g.p else BatchedArray(g.level, inner)
    return inner.sum(axis=0)


def to_settle(g, keep: frozenset) -> list:
    """The (level, size) pairs ``settle`` would sum ``g`` over, outermost wrapper first."""
    active_now = {lv for lv, _, _ in _levels.get()}
    out = []
    while g.__class__ is BatchedArray:
        if g.level not in keep and g.level not in active_now:
            out.append((g.level, g.p.shape[0]))
        g = g.p
    return out


def innermost(a):
    """The innermost physical array of ``a`` (every level's batch axis in front), for a check that
    must hold for every element (an index in bounds); ``a`` itself when not batched."""
    while a.__class__ is BatchedArray:
        a = a.p
    return a


def check_write(target, values, name: str) -> None:
    """Refuse an in-place write (``name``) of a value batched at a level the target is not batched at."""
    have = levels_of(target)
    for v in values:
        extra = levels_of(v) - have
        if extra:
            raise RuntimeError(
                f"vmap: {name}: an in-place write of a batched value into an unbatched tensor (shape "
                f"{tuple(target.shape)}): the tensor is the same for every batch element and the value is not; write "
                "into a batched tensor, or use the out-of-place op")


def per_element(a, fn, what: str):
    """``fn`` of each element's host array of the batched ``a`` (an index computed from its values:
    ``repeat``'s counts), the results stacked and batched again as ``a`` was. Each element's result
    must have one shape: a shape that depends on the values is refused, naming ``what``."""
    from . import backend as _be
    levels, x = [], a
    while x.__class__ is BatchedArray:
        levels.append(x.level)
        x = x.p
    nb = len(levels)
    host = _be.to_numpy(x)
    outs = [np.asarray(fn(e)) for e in host.reshape((-1,) + host.shape[nb:])]
    if any(o.shape != outs[0].shape for o in outs):
        raise RuntimeError(f"vmap: {what}: the result's shape depends on each element's values (shapes "
                           f"{sorted({o.shape for o in outs})}); vmap needs one shape for every element")
    res = np.stack(outs).reshape(host.shape[:nb] + outs[0].shape)
    res = res if x.__class__ is np.ndarray else _mod(x).asarray(res)
    for level in reversed(levels):  # the lowest level is the innermost wrapper
        res = BatchedArray(level, res)
    return res
