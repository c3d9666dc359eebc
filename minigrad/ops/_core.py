"""How an op is recorded, plus the helpers gradient rules share.

Ops call ``unary``, ``binary`` or ``record``. Those run the forward over
backend arrays (timed when a profile is active), wrap the result, and record
a Node when gradients are enabled and an input requires grad.

Gradient rules run on backend arrays in a first-order pass and on Tensors
with ``create_graph=True``; the ``dual`` helpers below (``exp``, ``where``,
``sum_to``...) accept either, so one rule serves both.
"""
from __future__ import annotations

import time
from time import perf_counter as _perf
from weakref import ref as _weakref

import numpy as np

from .. import _state
from .. import backend as _be
from ..autograd import Node
from ..autograd import _seq as _seq_counter
from ..tensor import Tensor, _wrap

_nd = np.ndarray
_generic = np.generic
_new = object.__new__
_new_Node = object.__new__
_next_seq = _seq_counter.__next__


def edge(x):
    """The parent entry of an input that requires grad: its Node (or (Node, i)) or the leaf."""
    n = x._node
    if n is None:
        return x
    if n.view_ver is not None and n.view_ver != x._ver[0] and x._base is not None:
        # the storage was written since this view was taken: re-derive it from its base
        from .inplace import refresh_view

        n = refresh_view(x)
    return n if x._oidx == 0 else (n, x._oidx)


def as_array_out(out):
    """NumPy reductions and ufuncs on 0-d input return scalars: keep arrays."""
    if out.__class__ is not _nd and isinstance(out, _generic):
        return np.asarray(out)
    return out


def const(v, op):
    """A non-Tensor operand as a backend value: Python scalars stay scalars (weakly typed)."""
    if isinstance(v, (int, float, bool, complex)):
        return v
    if isinstance(v, _generic):
        return v.item()
    if isinstance(v, _nd) or _be.is_cupy_array(v):
        return v
    if isinstance(v, (list, tuple)):
        return Tensor(v).data
    if hasattr(v, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: sparse tensors are not supported here; use mg.sparse functions or .to_dense()")
    raise TypeError(f"{op}: unsupported operand type {type(v).__name__}")


def check_same_device(op, a, b):
    if type(a) is not type(b) and hasattr(a, "shape") and hasattr(b, "shape"):
        try:
            _be.array_module(a, b)
        except RuntimeError:
            raise RuntimeError(
                f"{op}: expected both operands on the same device, got {_be.device_of(a)} and "
                f"{_be.device_of(b)}; move one with .to(device)"
            ) from None


def xp_all(op, *arrays):
    """The array module of several operands; an error naming both devices when they differ."""
    try:
        return _be.array_module(*arrays)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e}; move one with .to(device)") from None


def _new_node(op, rule, parents, meta, out_meta, attrs):
    """Node.__init__ without the call: every recorded op runs this."""
    n = _new_Node(Node)
    n.op = op
    n.rule = rule
    n.parents = parents
    n.meta = meta
    n.out_meta = out_meta
    n.attrs = attrs
    n.seq = _next_seq()
    n._g = None
    n.freed = False
    n.out_pos = -1
    n.view_ver = None
    n._slow = False
    return n


def unary(op, fwd, rule, x, save=0, attrs=None):
    """Run a one-input op. ``save``: 0 nothing, 1 the input, 2 the output."""
    xd = x.data
    prof = _state.profiler()
    if prof is None:
        out = fwd(xd)
    else:
        t0 = _perf()
        out = fwd(xd)
        prof._add_forward(op, _perf() - t0)
    if out.__class__ is not _nd:
        out = as_array_out(out)
    r = _new(Tensor)  # _wrap, inlined: this runs for every op
    r.data = out
    r.grad = r._hooks = r._base = None
    r._oidx = 0
    ver = r._ver = [0]
    if x._rg and _state.grad_enabled():
        xn = x._node
        n = _new_node(op, rule, (x if xn is None else xn if xn.view_ver is None and x._oidx == 0 else edge(x),),
                      ((xd.shape, xd.dtype),), (out.shape, out.dtype), attrs)
        if save == 1:
            n.saved = (xd,)
            n.saved_t = (x,)
            n.vers = ((x._ver, x._ver[0], 0),)
        elif save == 2:
            n.saved = (out,)
            n.saved_t = (None,)
            n.out_pos = 0
            n.vers = ((ver, 0, 0),)
        else:
            n.saved = n.saved_t = n.vers = ()
        r._node = n
        r._rg = True
        if prof is not None:
            prof._add_saved(op, n.saved_bytes)
    else:
        r._node = None
        r._rg = False
    return r


def binary(op, fwd, rule, x, y, save=""):
    """Run a two-input broadcasting op (Tensors, arrays or Python scalars).

    ``save``: "" nothing, "cross" each input only when the other needs a gradient, "both".
    """
    if x.__class__ is Tensor or isinstance(x, Tensor):
        xd = x.data
        xr = x._rg
    else:
        xd = const(x, op)
        xr = False
    if y.__class__ is Tensor or isinstance(y, Tensor):
        yd = y.data
        yr = y._rg
    else:
        yd = const(y, op)
        yr = False
    if xd.__class__ is not yd.__class__:
        check_same_device(op, xd, yd)
    prof = _state.profiler()
    try:
        if prof is None:
            out = fwd(xd, yd)
        else:
            t0 = _perf()
            out = fwd(xd, yd)
            prof._add_forward(op, _perf() - t0)
    except ValueError as e:
        if "broadcast" in str(e):
            raise ValueError(
                f"{op}: operands could not be broadcast together: shapes {_shape_of(xd)} and "
                f"{_shape_of(yd)} (NumPy broadcasting: trailing dims must match or be 1)"
            ) from None
        raise
    if out.__class__ is not _nd:
        out = as_array_out(out)
    r = _new(Tensor)  # _wrap, inlined
    r.data = out
    r.grad = r._hooks = r._base = None
    r._oidx = 0
    r._ver = [0]
    if (xr or yr) and _state.grad_enabled():
        if xr:
            xn = x._node
            px = x if xn is None else xn if xn.view_ver is None and x._oidx == 0 else edge(x)
            mx = (xd.shape, xd.dtype)
        else:
            px = mx = None
        if yr:
            yn = y._node
            py = y if yn is None else yn if yn.view_ver is None and y._oidx == 0 else edge(y)
            my = (yd.shape, yd.dtype)
        else:
            py = my = None
        n = _new_node(op, rule, (px, py), (mx, my), (out.shape, out.dtype), None)
        if not xr and isinstance(x, Tensor):  # an input that needs no grad: its shape, for the picture
            n.consts = ((0, xd.shape, xd.dtype),)
        elif not yr and isinstance(y, Tensor):
            n.consts = ((1, yd.shape, yd.dtype),)
        if save:
            # "cross": x only when y needs a gradient, and y only when x does
            both = save == "both"
            _save_pair(n, x if both or yr else None, y if both or xr else None)
        else:
            n.saved = n.saved_t = n.vers = ()
        r._node = n
        r._rg = True
        if prof is not None:
            prof._add_saved(op, n.saved_bytes)
    else:
        r._node = None
        r._rg = False
    return r


def _save_pair(n, a, b):
    """Node.save for two items, unrolled: this runs for every recorded binary op."""
    if a.__class__ is Tensor or isinstance(a, Tensor):
        ad = a.data
        if b.__class__ is Tensor or isinstance(b, Tensor):
            n.saved = (ad, b.data)
            n.saved_t = (a, b)
            n.vers = ((a._ver, a._ver[0], 0), (b._ver, b._ver[0], 1))
        else:
            n.saved = (ad, b)
            n.saved_t = (a, None)
            n.vers = ((a._ver, a._ver[0], 0),)
    elif b.__class__ is Tensor or isinstance(b, Tensor):
        n.saved = (a, b.data)
        n.saved_t = (None, b)
        n.vers = ((b._ver, b._ver[0], 1),)
    else:
        n.saved = (a, b)
        n.saved_t = (None, None)
        n.vers = ()


def record(op, rule, out, inputs, saved=(), attrs=None, save_out=False, view_of=None, info=None):
    """Wrap ``out`` (a backend array) as the result of ``op`` over ``inputs`` (Tensors or
    constants) and record a Node when needed. ``view_of``: the Tensor whose storage the result
    shares (its version counter is shared too). ``info``: the attributes a reader of the graph
    wants to see (axis, keepdims, pattern...)."""
    out = as_array_out(out)
    r = _wrap(out)
    if view_of is not None:
        r._ver = view_of._ver
        r._base = view_of if view_of._base is None else view_of._base
        if not r._base._rg:
            note_plain_view(r)
    if not _state.grad_enabled():
        return r
    parents = []
    meta = []
    need = consts = False
    for x in inputs:  # one plain loop: this runs for every recorded op
        if x.__class__ is Tensor or isinstance(x, Tensor):
            if x._rg:
                need = True
                xn = x._node  # edge(x), inlined for the common case
                parents.append(x if xn is None else xn if xn.view_ver is None and x._oidx == 0 else edge(x))
                d = x.data
                meta.append((d.shape, d.dtype))
                continue
            consts = True
        parents.append(None)
        meta.append(None)
    if not need:
        return r
    n = _new_node(op, rule, tuple(parents), tuple(meta), (out.shape, out.dtype), attrs)
    if consts:  # Tensor inputs that need no grad: their shapes, for the picture
        n.consts = tuple((i, x.data.shape, x.data.dtype) for i, x in enumerate(inputs)
                         if isinstance(x, Tensor) and not x._rg)
    if info is not None:
        n.info = info
    if save_out:
        n.save(tuple(saved) + (r,), r)
    elif len(saved) == 2:
        _save_pair(n, saved[0], saved[1])
    elif saved:
        n.save(tuple(saved))
    else:
        n.saved = n.saved_t = n.vers = ()
    r._node = n
    r._rg = True
    if view_of is not None:
        n.view_ver = r._ver[0]
    prof = _state.profiler()
    if prof is not None:
        prof._add_saved(op, n.saved_bytes)
    return r


def note_plain_view(v):
    """Remember a view of storage that does not require grad, so that a recorded in-place write
    which makes the storage require grad can give it a history too (ops/inplace.py). The weak
    references ride on the storage's version cell, ``_ver[1:]``; dead ones are dropped as it grows."""
    cell = v._ver
    cell.append(_weakref(v))
    n = len(cell)
    if n > 32 and n & (n - 1) == 0:
        cell[1:] = [w for w in cell[1:] if w() is not None]


def timed(op, fn, *args):
    """Run a forward computation, timing it when a profile is active."""
    prof = _state.profiler()
    if prof is None:
        return fn(*args)
    t0 = time.perf_counter()
    out = fn(*args)
    prof._add_forward(op, time.perf_counter() - t0)
    return out


def _shape_of(v):
    return tuple(v.shape) if hasattr(v, "shape") else "scalar"


# ---------------------------------------------------------------------------
# dual helpers: the same call on backend arrays (first order) or Tensors (create_graph)
# ---------------------------------------------------------------------------

def is_t(x) -> bool:
    return isinstance(x, Tensor)


def xp_of(x):
    if x.__class__ is _nd:
        return np
    return _be.array_module(x.data if isinstance(x, Tensor) else x)


def unb(g, shape):
    """sum_to when the gradient's shape differs from the input's (broadcast inputs)."""
    return g if g.shape == shape else sum_to(g, shape)


def sum_to(x, shape):
    """The inverse of broadcasting: sum ``x`` down to ``shape``.

    Sums away leading axes and the axes where ``shape`` has size 1. Built on sum,
    so it is differentiable (its gradient is broadcast_to).
    """
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = len(x.shape) - len(shape)
    if lead < 0:
        raise ValueError(f"sum_to: cannot sum shape {tuple(x.shape)} to the longer shape {shape}")
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1
    )
    for i, s in enumerate(shape):
        if s != 1 and x.shape[i + lead] != s:
            raise ValueError(f"sum_to: shape {tuple(x.shape)} does not broadcast from {shape}")
    y = x.sum(axis=axes, keepdims=True)
    if lead:
        y = y.reshape(shape)
    return y


def broadcast_to(x, shape):
    if is_t(x):
        from .shape import broadcast_to as bt

        return bt(x, shape)
    return xp_of(x).broadcast_to(x, shape)


def where(c, a, b):
    if is_t(a) or is_t(b):
        from .elementwise import where as w

        return w(c.data if is_t(c) else c, a, b)
    return xp_of(a).where(c.data if is_t(c) else c, a, b)


def _dual1(name):
    def f(x):
        if is_t(x):
            from . import elementwise

            return getattr(elementwise, name)(x)
        return getattr(xp_of(x), name)(x)

    f.__name__ = name
    return f


exp = _dual1("exp")
log = _dual1("log")
sin = _dual1("sin")
cos = _dual1("cos")
tanh = _dual1("tanh")
sqrt = _dual1("sqrt")


def sign(x):
    """Sign as a constant (its derivative is zero almost everywhere)."""
    d = x.data if is_t(x) else x
    return xp_of(d).sign(d)


def data_of(x):
    """The backend array behind a value (stops gradients: for masks and constants)."""
    return x.data if is_t(x) else x


def matmul(a, b):
    if (a.__class__ is not _nd or b.__class__ is not _nd) and (is_t(a) or is_t(b)):
        from .linalg import matmul as mm

        return mm(a, b)
    return _be.matmul(a, b)


def zeros(like, shape, dtype=None):
    """Zeros on the device of ``like`` (a constant)."""
    d = like.data if is_t(like) else like
    xp = xp_of(d)
    return xp.zeros(shape, dtype=d.dtype if dtype is None else dtype)
