"""Shape ops: reshape/view, transpose/permute, squeeze/unsqueeze, broadcast_to <-> sum_to,
indexing (getitem <-> scatter-add), concatenate/stack, moving between devices.

Ops that NumPy answers with a view return a view here too: the result shares the
input's storage and its version counter.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from ..errors import AxisError
from ..tensor import Tensor
from . import _core as C
from ._core import record


def _t(x, op):
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: got a sparse tensor; convert it with .to_dense() first")
    return Tensor(x)


def _shape_args(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    elif len(shape) == 1 and isinstance(shape[0], Tensor):
        shape = tuple(int(s) for s in shape[0].tolist())
    out = []
    for s in shape:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{op}: shape entries must be ints, got {type(s).__name__} {s!r}")
        out.append(int(s))
    return tuple(out)


def _shares(out, xd):
    if out.size == 0 or xd.size == 0:
        return True
    return bool(C.xp_of(xd).may_share_memory(out, xd))


def _axis(a, ndim, op):
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
        raise TypeError(f"{op}: dim must be an int, got {type(a).__name__} {a!r}")
    a = int(a)
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: dim {a} is out of range for a tensor of ndim {ndim} (valid [{-ndim}, {ndim - 1}])")
    return a + ndim if a < 0 else a


# -- reshape / view -------------------------------------------------------------


def _reshape_rule(ctx, g, saved):
    return (g.reshape(ctx.attrs),)


def _do_reshape(op, x, shape):
    x = _t(x, op)
    xd = x.data
    shape = _shape_args(shape, op)
    try:
        out = C.timed(op, xd.reshape, shape)
    except ValueError:
        raise ValueError(
            f"{op}: cannot reshape a tensor of shape {xd.shape} ({xd.size} elements) into shape {shape}"
        ) from None
    is_view = _shares(out, xd)
    if op == "view" and not is_view:
        raise RuntimeError(
            f"view: shape {shape} is not compatible with the strides {x.stride()} of the input "
            f"(shape {xd.shape}): the result would need a copy. Use .reshape(...) (or .contiguous().view(...))"
        )
    return record(op, _reshape_rule, out, (x,), attrs=xd.shape, view_of=x if is_view else None,
                  info={"shape": out.shape})


def reshape(x, *shape):
    """Same data with a new shape (one entry may be -1); a view when the layout allows, else a copy."""
    return _do_reshape("reshape", x, shape)


def view(x, *shape):
    """Same storage with a new shape; raises when that needs a copy (use reshape)."""
    return _do_reshape("view", x, shape)


def flatten(x, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (PyTorch's flatten; all dims by default)."""
    x = _t(x, "flatten")
    nd = x.ndim
    if nd == 0:
        return reshape(x, (1,))
    s = _axis(start_dim, nd, "flatten")
    e = _axis(end_dim, nd, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shp = x.shape
    n = 1
    for d in shp[s:e + 1]:
        n *= d
    return reshape(x, shp[:s] + (n,) + shp[e + 1:])


# -- permutations -------------------------------------------------------------------


def _permute_rule(ctx, g, saved):
    inv = ctx.attrs
    return (permute(g, inv) if C.is_t(g) else g.transpose(inv),)


def permute(x, *dims):
    """Reorder the dims: ``out.shape[i] == x.shape[dims[i]]`` (a view)."""
    x = _t(x, "permute")
    dims = _shape_args(dims, "permute")
    nd = x.ndim
    if len(dims) != nd:
        raise ValueError(f"permute: got {len(dims)} dims {dims} for a tensor of ndim {nd}")
    dims = tuple(_axis(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise ValueError(f"permute: repeated dim in {dims}")
    inv = tuple(np.argsort(dims).tolist())
    out = C.timed("permute", x.data.transpose, dims)
    return record("permute", _permute_rule, out, (x,), attrs=inv, view_of=x, info={"dims": dims})


def transpose(x, *axes):
    """No args: reverse the dims (NumPy, ``.T``). Two dims: swap them (PyTorch), on
    any ndim. A full permutation, as one tuple or list: as NumPy's ``transpose(axes)``."""
    x = _t(x, "transpose")
    nd = x.ndim
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        return permute(x, tuple(axes[0]))
    if not axes:
        return permute(x, tuple(range(nd))[::-1])
    if len(axes) == 2:  # t.transpose(0, 1) swaps even on 2-D (there NumPy would read a permutation)
        return swapaxes(x, axes[0], axes[1])
    return permute(x, axes)


def swapaxes(x, a, b):
    """Swap two dims (a view)."""
    x = _t(x, "swapaxes")
    nd = x.ndim
    a, b = _axis(a, nd, "swapaxes"), _axis(b, nd, "swapaxes")
    dims = list(range(nd))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, dims)


# -- squeeze / unsqueeze -------------------------------------------------------------


def squeeze(x, axis=None):
    """Remove size-1 dims (all of them, or those named; naming a dim of size != 1 is an error)."""
    x = _t(x, "squeeze")
    shp = x.shape
    if axis is None:
        new = tuple(s for s in shp if s != 1)
    else:
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        axes = {_axis(a, x.ndim, "squeeze") for a in axes}
        for a in axes:
            if shp[a] != 1:
                raise ValueError(f"squeeze: cannot squeeze dim {a} of size {shp[a]} (shape {shp}); only size-1 dims")
        new = tuple(s for i, s in enumerate(shp) if i not in axes)
    return reshape(x, new)


def unsqueeze(x, dim):
    """Insert a size-1 dim at ``dim`` (in [-ndim-1, ndim])."""
    x = _t(x, "unsqueeze")
    nd = x.ndim
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"unsqueeze: dim must be an int, got {dim!r}")
    if not -nd - 1 <= dim <= nd:
        raise AxisError(f"unsqueeze: dim {dim} is out of range for a tensor of ndim {nd} (valid [{-nd - 1}, {nd}])")
    d = dim + nd + 1 if dim < 0 else dim
    shp = x.shape
    return reshape(x, shp[:d] + (1,) + shp[d:])


# -- broadcasting -----------------------------------------------------------------------


def _broadcast_rule(ctx, g, saved):
    return (C.sum_to(g, ctx.attrs),)


def broadcast_to(x, shape):
    """Broadcast to ``shape`` (a read-only view); its gradient is ``sum_to``."""
    x = _t(x, "broadcast_to")
    shape = _shape_args((shape,) if not isinstance(shape, tuple) else shape, "broadcast_to") if not isinstance(shape, int) else (shape,)
    xd = x.data
    if xd.shape == shape:
        return x
    try:
        out = C.timed("broadcast_to", C.xp_of(xd).broadcast_to, xd, shape)
    except ValueError:
        raise ValueError(
            f"broadcast_to: cannot broadcast shape {xd.shape} to {shape} (trailing dims must match or be 1)"
        ) from None
    return record("broadcast_to", _broadcast_rule, out, (x,), attrs=xd.shape, view_of=x, info={"shape": shape})


def expand(x, *sizes):
    """PyTorch's expand: broadcast to ``sizes``, where -1 keeps that dim."""
    x = _t(x, "expand")
    sizes = _shape_args(sizes, "expand")
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: {len(sizes)} sizes {sizes} given for a tensor of ndim {x.ndim} (shape {x.shape})")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise ValueError(f"expand: -1 is only allowed for existing dims, got {sizes} for shape {x.shape}")
    return broadcast_to(x, shape)


def sum_to(x, shape):
    """The one inverse of broadcasting: sum ``x`` down to ``shape``."""
    return C.sum_to(_t(x, "sum_to"), tuple(shape))


# -- indexing ---------------------------------------------------------------------------


def _convert_index(idx):
    """Tensors -> arrays, lists -> arrays; returns (index, is_basic)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    basic = True
    for i in idx:
        if isinstance(i, Tensor):
            i = i.data
        elif isinstance(i, list):
            i = np.asarray(i)
            if i.dtype == np.float64 and i.size == 0:
                i = i.astype(np.int64)
        if i is None or i is Ellipsis or isinstance(i, slice):
            pass
        elif isinstance(i, (bool, np.bool_)):
            basic = False
        elif isinstance(i, numbers.Integral):
            i = int(i)
        elif hasattr(i, "dtype"):
            if i.dtype.kind not in "biu":
                raise IndexError(f"getitem: index arrays must be integer or bool, got dtype {i.dtype}")
            if i.ndim == 0 and i.dtype.kind in "iu":
                i = int(i)
            else:
                basic = False
        else:
            raise IndexError(f"getitem: unsupported index {type(i).__name__} {i!r}")
        out.append(i)
    return tuple(out), basic


def _getitem_rule(ctx, g, saved):
    shape, idx, basic = ctx.attrs
    return (_scatter(g, shape, idx, basic),)


def getitem(x, idx):
    """``x[idx]`` with basic (a view) and advanced (a copy) indexing."""
    x = _t(x, "getitem")
    xd = x.data
    raw = idx
    idx, basic = _convert_index(idx)
    if not basic:
        idx = _to_device_index(idx, xd, "getitem")
    elif all(type(i) is int for i in idx):
        idx = idx + (Ellipsis,)  # x[1, 2] is then a 0-d view, not a copied scalar
    try:
        out = C.timed("getitem", xd.__getitem__, idx)
    except IndexError as e:
        raise IndexError(f"getitem: {e} (tensor shape {xd.shape})") from None
    return record("getitem", _getitem_rule, out, (x,), saved=() if basic or not x._rg else _index_saved(raw, idx),
                  attrs=(xd.shape, idx, basic), view_of=x if basic else None, info={"index": _fmt_index(idx)})


def _index_saved(raw, idx):
    """What an advanced index keeps for backward, to save on the Node: ``(None, *arrays)``, each
    index Tensor itself (so that backward refuses one changed in place since, instead of sending
    the gradient to the wrong positions) or the array made from a list. ``None`` stands for the
    indexed tensor, so an error names the index as input 1 of the op."""
    raw = raw if isinstance(raw, tuple) else (raw,)
    out = [None]
    for r, i in zip(raw, idx, strict=False):
        if hasattr(i, "shape") and not isinstance(i, (bool, np.bool_)):
            out.append(r if isinstance(r, Tensor) else i)
    return tuple(out) if len(out) > 1 else ()


def _to_device_index(idx, xd, op="getitem", shape=None):
    """Index arrays onto ``xd``'s device. CuPy does not bounds-check integer index arrays (they
    wrap around), so on the device they are checked here as NumPy checks them (one sync each)."""
    xp = C.xp_of(xd)
    if xp is np:
        return idx
    idx = tuple(xp.asarray(i) if isinstance(i, np.ndarray) else i for i in idx)
    _check_bounds(idx, xd.shape if shape is None else shape, op)
    return idx


def _check_bounds(idx, shape, op):
    """IndexError for an integer index array that reaches outside its axis of ``shape``."""
    def dims(i):  # how many axes of the indexed array an index entry consumes
        if i is None or i is Ellipsis or isinstance(i, (bool, np.bool_)):
            return 0
        return i.ndim if getattr(i, "dtype", None) is not None and i.dtype.kind == "b" else 1

    d = 0
    for i in idx:
        if i is Ellipsis:
            d += len(shape) - sum(dims(j) for j in idx)
            continue
        if getattr(i, "dtype", None) is not None and i.dtype.kind in "iu" and i.size and d < len(shape):
            n = shape[d]
            out = (i < -n) | (i >= n)
            if out.any():
                raise IndexError(
                    f"{op}: index {int(i[out].ravel()[0])} is out of bounds for axis {d} with size {n} "
                    f"(tensor shape {tuple(shape)})"
                )
        d += dims(i)


def _fmt_index(idx):
    parts = []
    for i in idx:
        if isinstance(i, slice):
            parts.append(f"{'' if i.start is None else i.start}:{'' if i.stop is None else i.stop}"
                         + ("" if i.step is None else f":{i.step}"))
        elif i is None:
            parts.append("None")
        elif i is Ellipsis:
            parts.append("...")
        elif hasattr(i, "shape"):
            parts.append(f"array{tuple(i.shape)}")
        else:
            parts.append(str(i))
    return "[" + ", ".join(parts) + "]"


def _scatter_fwd(gd, shape, idx, basic):
    xp = C.xp_of(gd)
    z = xp.zeros(shape, dtype=gd.dtype)
    if basic:
        z[idx] = gd
    else:
        _be.index_add(xp, z, idx, gd)
    return z


def _scatter_rule(ctx, g, saved):
    shape, idx, basic = ctx.attrs
    return (g[idx] if C.is_t(g) else g[idx],)


def _scatter(g, shape, idx, basic, saved=()):
    """Zeros of ``shape`` with ``g`` added at ``idx`` (repeats accumulate); the pair of getitem."""
    if not C.is_t(g):
        return _scatter_fwd(g, shape, idx, basic)
    out = C.timed("index_add", _scatter_fwd, g.data, shape, idx, basic)
    return record("index_add", _scatter_rule, out, (g,), saved=saved, attrs=(shape, idx, basic),
                  info={"index": _fmt_index(idx)})


def index_add(shape, idx, values):
    """A zeros tensor of ``shape`` with ``values`` added at ``idx``; repeated indices accumulate.

    >>> mg.index_add((3,), mg.tensor([0, 2, 0]), mg.tensor([1.0, 2.0, 3.0]))
    tensor([4., 0., 2.])
    """
    values = _t(values, "index_add")
    raw = idx
    shape = _shape_args((shape,) if not isinstance(shape, (tuple, list)) else (tuple(shape),), "index_add")
    idx, basic = _convert_index(idx)
    if not basic:
        idx = _to_device_index(idx, values.data, "index_add", shape)
    try:
        return _scatter(values, shape, idx, basic, () if basic else _index_saved(raw, idx))
    except IndexError as e:
        raise IndexError(f"index_add: {e} (target shape {shape})") from None
    except ValueError as e:
        raise ValueError(
            f"index_add: values of shape {tuple(values.shape)} do not fit the index {_fmt_index(idx)} of a "
            f"target of shape {shape} ({e})"
        ) from None


# -- joining ----------------------------------------------------------------------------


def _concat_rule(ctx, g, saved):
    axis, bounds = ctx.attrs
    pre = (slice(None),) * axis
    return tuple(g[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:], strict=True))


def concatenate(tensors, axis=0, *, dim=None):
    """Join tensors along an existing axis (``dim`` is an alias)."""
    if dim is not None:
        axis = dim
    ts = [_t(t, "concatenate") for t in tensors]
    if not ts:
        raise ValueError("concatenate: need at least one tensor")
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated (use stack)")
    a = _axis(axis, nd, "concatenate")
    for t in ts[1:]:
        if t.ndim != nd or any(s != u for i, (s, u) in enumerate(zip(t.shape, ts[0].shape, strict=True)) if i != a):
            raise ValueError(
                f"concatenate: shapes {[tuple(t.shape) for t in ts]} differ outside axis {a}"
            )
    datas = [t.data for t in ts]
    xp = C.xp_all("concatenate", *datas)
    out = C.timed("concatenate", xp.concatenate, datas, a)
    bounds = [0]
    for t in ts:
        bounds.append(bounds[-1] + t.shape[a])
    return record("concatenate", _concat_rule, out, ts, attrs=(a, bounds), info={"axis": a})


cat = concatenate


def _stack_rule(ctx, g, saved):
    axis, n = ctx.attrs
    pre = (slice(None),) * axis
    return tuple(g[pre + (i,)] for i in range(n))


def stack(tensors, axis=0, *, dim=None):
    """Join same-shape tensors along a new axis."""
    if dim is not None:
        axis = dim
    ts = [_t(t, "stack") for t in tensors]
    if not ts:
        raise ValueError("stack: need at least one tensor")
    for t in ts[1:]:
        if t.shape != ts[0].shape:
            raise ValueError(f"stack: all tensors must have the same shape, got {[tuple(t.shape) for t in ts]}")
    nd = ts[0].ndim + 1
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -nd <= axis < nd:
        raise AxisError(f"stack: axis {axis} is out of range for the result's ndim {nd}")
    a = axis + nd if axis < 0 else axis
    datas = [t.data for t in ts]
    xp = C.xp_all("stack", *datas)
    out = C.timed("stack", xp.stack, datas, a)
    return record("stack", _stack_rule, out, ts, attrs=(a, len(ts)), info={"axis": a})


# -- devices ----------------------------------------------------------------------------


def _to_device_rule(ctx, g, saved):
    src = ctx.attrs
    return (to_device(g, src) if C.is_t(g) else _be.to_device(g, src),)


def to_device(x, device):
    """Copy to ``device`` ('cpu' or 'cuda:N'); the gradient goes back to the source device."""
    src = x.device
    if src == device:
        return x
    out = C.timed("to", _be.to_device, x.data, device)
    return record("to", _to_device_rule, out, (x,), attrs=src, info={"device": device})
