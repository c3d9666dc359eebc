"""Shape ops: reshape/view, permute, broadcast_to <-> sum_to (indexing is in ``indexing.py``),
concatenate/stack, moving between devices; and the composites built on them (transpose,
swapaxes, squeeze, unsqueeze, flatten, expand).

Ops that NumPy answers with a view return a view here too: the result shares the input's
storage and its version counter.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from ..backward import sum_to
from ..creation import as_tensor
from ..engine import run_op
from ..errors import NAMED_ERRORS, AxisError, reraise
from ..tensor import Tensor
from ._registry import randn as _r, Sample, composite, defop, linear_jvp, named, public



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


def _axis(a, ndim, op):
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
        raise TypeError(f"{op}: dim must be an int, got {type(a).__name__} {a!r}")
    a = int(a)
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: dim {a} is out of range for a tensor of ndim {ndim} (valid [{-ndim}, {ndim - 1}])")
    return a + ndim if a < 0 else a


# -- reshape / view -------------------------------------------------------------


RESHAPE = defop("reshape", lambda xp, x, shape: x.reshape(shape), lambda ctx, g, shape: (g.reshape(ctx.meta[0][0]),),
                view="maybe", kind="view", jvp=linear_jvp(0), torch=lambda th, x, shape: x.reshape(shape),
                info=lambda shape: {"shape": shape},
                samples=lambda rng: [Sample(_r(rng, 2, 3, 4), shape=(6, 4)), Sample(_r(rng, 6), shape=(3, 2, 1))], complex=True)


def _do_reshape(op, x, shape):
    try:
        x = as_tensor(x, op)
        xd = x.data
        shape = _shape_args(shape, op)
        n = 1
        unknown = 0
        for s in shape:
            if s == -1:
                unknown += 1
            else:
                n *= s
        if unknown > 1 or (unknown == 0 and n != xd.size) or (unknown == 1 and (n == 0 or xd.size % n)) \
                or any(s < -1 for s in shape):
            raise ValueError(f"{op}: cannot reshape a tensor of shape {xd.shape} ({xd.size} elements) into shape {shape}")
        out = run_op(RESHAPE, x, shape=shape)
        if op == "view" and out._base is None and xd.size and out.data.size:
            raise RuntimeError(
                f"view: shape {shape} is not compatible with the strides {x.stride()} of the input "
                f"(shape {xd.shape}): the result would need a copy. Use .reshape(...) (or .contiguous().view(...))"
            )
        return out
    except NAMED_ERRORS as e:  # inline, not @named: one frame less on a hot path
        reraise(e, op)


DETACH = defop("detach", lambda xp, x: x, kind="view", complex=True)  # no rule: its result is cut from the graph
# the identity as a view: make_dual's and unpack_dual's primal, a transform's input (forward_ad, func)
ALIAS = defop("alias", lambda xp, x: x, lambda ctx, g: (g,), view=True, kind="view", jvp=linear_jvp(0),
              samples=lambda rng: [Sample(_r(rng, 2, 3))], complex=True)


@public(DETACH, method="detach", export=False)
def detach(x):
    """The same data, cut from the graph (shares memory and version counter)."""
    t = run_op(DETACH, x)  # an op, so that a captured step (mg.compile) reads the array again on each replay
    t._storage = x._storage
    t._base = x if x._base is None else x._base
    return t


@public(RESHAPE, method="reshape", numpy=(np.reshape,))
def reshape(x, *shape):
    """Same data with a new shape (one entry may be -1); a view when the layout allows, else a copy."""
    return _do_reshape("reshape", x, shape)


@composite("view", method="view", export=False,
           samples=lambda rng: [Sample(_r(rng, 2, 3), 3, 2)], complex=True)
def view(x, *shape):
    """Same storage with a new shape; raises when that needs a copy (use reshape)."""
    return _do_reshape("view", x, shape)


@composite("flatten", method=("flatten",), samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 1)], complex=True)
@named("flatten")
def flatten(x, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (PyTorch's flatten; all dims by default)."""
    x = as_tensor(x, "flatten")
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


@composite("ravel", method="ravel", numpy=(np.ravel,), samples=lambda rng: [Sample(_r(rng, 2, 3))], complex=True)
@named("ravel")
def ravel(x, order="C"):
    """All elements in one dim, in C order (``flatten()``)."""
    if order not in ("C", "K", "A"):
        raise TypeError(f"ravel: order={order!r} is not supported on Tensors (C order only)")
    return flatten(x)


# -- permutations -------------------------------------------------------------------


def _permute_rule(ctx, g, dims):
    return (g.transpose(tuple(np.argsort(dims).tolist())),)


PERMUTE = defop("permute", lambda xp, x, dims: x.transpose(dims), _permute_rule, view=True, kind="view", jvp=linear_jvp(0),
                info=lambda dims: {"dims": dims},
                torch=lambda th, x, dims: x.permute(dims),
                samples=lambda rng: [Sample(_r(rng, 2, 3, 4), dims=(2, 0, 1)), Sample(_r(rng, 2, 3), dims=(1, 0)),
                                     Sample(_r(rng, 3, 3), dims=(1, 0))], complex=True)


@public(PERMUTE, method="permute")
def permute(x, *dims):
    """Reorder the dims: ``out.shape[i] == x.shape[dims[i]]`` (a view)."""
    try:
        x = as_tensor(x, "permute")
        dims = _shape_args(dims, "permute")
        nd = x.ndim
        if len(dims) != nd:
            raise ValueError(f"permute: got {len(dims)} dims {dims} for a tensor of ndim {nd}")
        dims = tuple(_axis(d, nd, "permute") for d in dims)
        if len(set(dims)) != nd:
            raise ValueError(f"permute: repeated dim in {dims}")
        return run_op(PERMUTE, x, dims=dims)
    except NAMED_ERRORS as e:  # inline, not @named: one frame less on a hot path
        reraise(e, "permute")


@composite("transpose", method="transpose", numpy=(np.transpose,),
           samples=lambda rng: [Sample(_r(rng, 2, 3)), Sample(_r(rng, 2, 3, 4), 0, 2)], complex=True)
@named("transpose")
def transpose(x, *axes):
    """No args: reverse the dims (NumPy, ``.T``). Two dims: swap them (PyTorch), on
    any ndim. A full permutation, as one tuple or list: as NumPy's ``transpose(axes)``."""
    x = as_tensor(x, "transpose")
    nd = x.ndim
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        return permute(x, tuple(axes[0]))
    if not axes:
        return permute(x, tuple(range(nd))[::-1])
    if len(axes) == 2:  # t.transpose(0, 1) swaps even on 2-D (there NumPy would read a permutation)
        return swapaxes(x, axes[0], axes[1])
    return permute(x, axes)


@composite("swapaxes", method=("swapaxes", "swapdims"), numpy=(np.swapaxes,),
           samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 0, -1)], complex=True)
def swapaxes(x, a, b):
    """Swap two dims (a view)."""
    x = as_tensor(x, "swapaxes")
    nd = x.ndim
    a, b = _axis(a, nd, "swapaxes"), _axis(b, nd, "swapaxes")
    dims = list(range(nd))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, dims)


_MT = {}  # ndim -> the permutation that swaps the last two dims


def matrix_transpose(x):
    """``x.mT``: the last two dims swapped (a view)."""
    nd = x.data.ndim
    dims = _MT.get(nd)
    if dims is None:
        if nd < 2:
            raise ValueError(f"mT: needs at least 2 dims, got a tensor of shape {x.shape}")
        dims = _MT[nd] = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return run_op(PERMUTE, x, dims=dims)


# -- squeeze / unsqueeze -------------------------------------------------------------


@composite("squeeze", method="squeeze", numpy=(np.squeeze,), samples=lambda rng: [Sample(_r(rng, 2, 1, 3))], complex=True)
@named("squeeze")
def squeeze(x, axis=None, dim=None):
    """Remove size-1 dims (all of them, or those named; naming a dim of size != 1 is an error)."""
    x = as_tensor(x, "squeeze")
    axis = axis if dim is None else dim
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


@composite("unsqueeze", method="unsqueeze", samples=lambda rng: [Sample(_r(rng, 2, 3), -1)], complex=True)
def unsqueeze(x, dim):
    """Insert a size-1 dim at ``dim`` (in [-ndim-1, ndim])."""
    x = as_tensor(x, "unsqueeze")
    nd = x.ndim
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"unsqueeze: dim must be an int, got {dim!r}")
    if not -nd - 1 <= dim <= nd:
        raise AxisError(f"unsqueeze: dim {dim} is out of range for a tensor of ndim {nd} (valid [{-nd - 1}, {nd}])")
    d = dim + nd + 1 if dim < 0 else dim
    shp = x.shape
    return reshape(x, shp[:d] + (1,) + shp[d:])


# -- broadcasting -----------------------------------------------------------------------

BROADCAST_TO = defop("broadcast_to", lambda xp, x, shape: xp.broadcast_to(x, shape),
                     lambda ctx, g, shape: (sum_to(g, ctx.meta[0][0]),), view=True, kind="broadcast", jvp=linear_jvp(0),
                     info=lambda shape: {"shape": shape},
                     torch=lambda th, x, shape: x.broadcast_to(shape),
                     samples=lambda rng: [Sample(_r(rng, 3, 1), shape=(2, 3, 4)), Sample(_r(rng, 4), shape=(3, 4))], complex=True)


@public(BROADCAST_TO, method="broadcast_to", numpy=(np.broadcast_to,))
def broadcast_to(x, shape):
    """Broadcast to ``shape`` (a read-only view); its gradient is ``sum_to``."""
    try:
        x = as_tensor(x, "broadcast_to")
        shape = (shape,) if isinstance(shape, numbers.Integral) else _shape_args(tuple(shape), "broadcast_to")
        xd = x.data
        if xd.shape == shape:
            return x
        try:
            np.broadcast_shapes(xd.shape, shape)
            if len(shape) < xd.ndim or np.broadcast_shapes(xd.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"broadcast_to: cannot broadcast shape {xd.shape} to {shape} (trailing dims must match or be 1)"
            ) from None
        return run_op(BROADCAST_TO, x, shape=shape)
    except NAMED_ERRORS as e:  # inline, not @named: one frame less on a hot path
        reraise(e, "broadcast_to")


@composite("expand", method="expand", export=True, samples=lambda rng: [Sample(_r(rng, 3, 1), 2, -1, 4)], complex=True)
@named("expand")
def expand(x, *sizes):
    """PyTorch's expand: broadcast to ``sizes``, where -1 keeps that dim."""
    x = as_tensor(x, "expand")
    sizes = _shape_args(sizes, "expand")
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: {len(sizes)} sizes {sizes} given for a tensor of ndim {x.ndim} (shape {x.shape})")
    shape = tuple(x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    if any(s < 0 for s in shape):
        raise ValueError(f"expand: -1 is only allowed for existing dims, got {sizes} for shape {x.shape}")
    return broadcast_to(x, shape)


# -- joining ----------------------------------------------------------------------------


def _concat_rule(ctx, g, axis, sizes):
    pre = (slice(None),) * axis
    out, start = [], 0
    for m, p in zip(sizes, ctx.parents, strict=True):
        out.append(g[pre + (slice(start, start + m),)] if p is not None else None)
        start += m
    return tuple(out)



def _concat_fwd(xp, *xs, axis, sizes):
    return xp.concatenate(xs, axis)


CONCATENATE = defop("concatenate", _concat_fwd, _concat_rule, kind="other", jvp=linear_jvp(),
                    info=lambda axis, sizes: {"axis": axis},
                    torch=lambda th, *xs, axis, sizes: th.cat(xs, axis),
                    samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 4, 3), axis=0, sizes=(2, 4)),
                                         Sample(_r(rng, 2, 1), _r(rng, 2, 2), axis=1, sizes=(1, 2))], complex=True)


@public(CONCATENATE, numpy=(np.concatenate,))
@named("concatenate")
def concatenate(tensors, axis=0, *, dim=None):
    """Join tensors along an existing axis (``dim`` is an alias)."""
    if dim is not None:
        axis = dim
    ts = [as_tensor(t, "concatenate") for t in tensors]
    if not ts:
        raise ValueError("concatenate: need at least one tensor")
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("concatenate: zero-dimensional tensors cannot be concatenated (use stack)")
    a = _axis(axis, nd, "concatenate")
    for t in ts[1:]:
        if t.ndim != nd or any(s != u for i, (s, u) in enumerate(zip(t.shape, ts[0].shape, strict=True)) if i != a):
            raise ValueError(f"concatenate: shapes {[tuple(t.shape) for t in ts]} differ outside axis {a}")
    return run_op(CONCATENATE, *ts, axis=a, sizes=tuple(t.shape[a] for t in ts))


cat = concatenate


def _stack_rule(ctx, g, axis):
    pre = (slice(None),) * axis
    return tuple(g[pre + (i,)] if p is not None else None for i, p in enumerate(ctx.parents))


STACK = defop("stack", lambda xp, *xs, axis: xp.stack(xs, axis), _stack_rule, kind="other", jvp=linear_jvp(),
              info=lambda axis: {"axis": axis},
              torch=lambda th, *xs, axis: th.stack(xs, axis),
              samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 2, 3), axis=1)], complex=True)


@public(STACK, numpy=(np.stack,))
@named("stack")
def stack(tensors, axis=0, *, dim=None):
    """Join same-shape tensors along a new axis."""
    if dim is not None:
        axis = dim
    ts = [as_tensor(t, "stack") for t in tensors]
    if not ts:
        raise ValueError("stack: need at least one tensor")
    for t in ts[1:]:
        if t.shape != ts[0].shape:
            raise ValueError(f"stack: all tensors must have the same shape, got {[tuple(t.shape) for t in ts]}")
    nd = ts[0].ndim + 1
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -nd <= axis < nd:
        raise AxisError(f"stack: axis {axis} is out of range for the result's ndim {nd}")
    return run_op(STACK, *ts, axis=axis + nd if axis < 0 else axis)


# -- devices ----------------------------------------------------------------------------


TO = defop("to", lambda xp, x, device, src: _be.to_device(x, device),
           lambda ctx, g, device, src: (ctx.xp.to(g, device=src, src=device),), kind="other", jvp=linear_jvp(0),
           info=lambda device, src: {"device": device},
           samples=lambda rng: [Sample(_r(rng, 2, 3), device="cpu", src="cpu")], complex=True)


@public(TO, export=False)
def to_device(x, device):
    """Copy to ``device`` ('cpu' or 'cuda:N'); the gradient goes back to the source device."""
    src = x.device
    if src == device:
        return x
    return run_op(TO, x, device=device, src=src)


@composite("move", method="to", export=False, samples=lambda rng: [Sample(_r(rng, 2, 3), "cpu")])
def to(x, device=None, dtype=None):
    """Move to ``device`` ("cpu", "cuda", "cuda:N") and/or cast to ``dtype``; differentiable."""
    t = x
    if isinstance(device, (np.dtype, type)) and dtype is None:
        device, dtype = None, device
    if device is not None:
        t = to_device(t, _be.parse_device(device))
    if dtype is not None:
        t = t.astype(dtype)
    return t


@composite("contiguous", method="contiguous", export=False, samples=lambda rng: [Sample(_r(rng, 3, 2).T)], complex=True)
def contiguous(x):
    """Self when C-contiguous, else a contiguous copy (differentiable)."""
    return x if x.is_contiguous() else x.clone()


@composite("cpu", method="cpu", export=False, kind="cast")
def cpu(x):
    """The tensor on the host (itself when already there); differentiable."""
    return to(x, "cpu")


@composite("cuda", method="cuda", export=False, kind="cast")
def cuda(x, device=None):
    """The tensor on a CUDA device (``cuda:0`` by default, or ``device`` as an int or string)."""
    return to(x, "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)


# -- PyTorch's views: narrow, select, t, unflatten, and the *_as forms -------------------------------


def _dim_size(x, dim, op):
    """``dim`` normalised for ``x`` and that dim's length (an error naming ``op`` and the shape)."""
    try:
        d = _axis(dim, x.ndim, op)
    except AxisError as e:
        raise AxisError(f"{e} (shape {x.shape})") from None
    return d, x.shape[d]


def _int_arg(v, what, op):
    if isinstance(v, Tensor) and v.ndim == 0 and v.dtype.kind in "iu":
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}: {what} must be an int, got {type(v).__name__} {v!r}")
    return int(v)


@composite("narrow", method="narrow", torch=lambda th, x, dim, start, length: th.narrow(x, dim, start, length),
           samples=lambda rng: [Sample(_r(rng, 4, 3), 0, 1, 2), Sample(_r(rng, 2, 5), -1, -3, 3)], complex=True)
@named("narrow")
def narrow(input, dim, start, length):  # noqa: A002 - PyTorch's name
    """PyTorch's ``narrow``: the ``length`` entries of ``dim`` from ``start`` (negative counts
    from the end), a view."""
    x = as_tensor(input, "narrow")
    d, n = _dim_size(x, dim, "narrow")
    start, length = _int_arg(start, "start", "narrow"), _int_arg(length, "length", "narrow")
    if not -n <= start <= n:
        raise IndexError(f"narrow: start {start} is out of range for dim {d} of size {n} (shape {x.shape})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise ValueError(f"narrow: start ({start}) + length ({length}) exceeds dim {d} of size {n} (shape {x.shape})")
    return x[(slice(None),) * d + (slice(start, start + length),)]


@composite("select", method="select", torch=lambda th, x, dim, index: th.select(x, dim, index),
           samples=lambda rng: [Sample(_r(rng, 2, 3, 4), 1, -1), Sample(_r(rng, 3), 0, 2)], complex=True)
@named("select")
def select(input, dim, index):  # noqa: A002
    """PyTorch's ``select``: the slice at ``index`` of ``dim``, which is removed (a view)."""
    x = as_tensor(input, "select")
    d, n = _dim_size(x, dim, "select")
    i = _int_arg(index, "index", "select")
    if not -n <= i < n:
        raise IndexError(f"select: index {i} is out of range for dim {d} of size {n} (shape {x.shape})")
    return x[(slice(None),) * d + (i + n if i < 0 else i, Ellipsis)]


@composite("t", method="t", torch=lambda th, x: th.t(x),
           samples=lambda rng: [Sample(_r(rng, 2, 3)), Sample(_r(rng, 3)), Sample(np.asarray(rng.standard_normal()))], complex=True)
@named("t")
def t(input):  # noqa: A002
    """PyTorch's ``t``: a 2-D tensor transposed (a view); 0-D and 1-D ones as they are."""
    x = as_tensor(input, "t")
    if x.ndim > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dims, got shape {x.shape} (use transpose(0, 1) or permute)")
    return permute(x, (1, 0)) if x.ndim == 2 else x


@composite("unflatten", method="unflatten", torch=lambda th, x, dim, sizes: th.unflatten(x, dim, sizes),
           samples=lambda rng: [Sample(_r(rng, 2, 12), 1, (3, -1)), Sample(_r(rng, 6, 2), 0, (2, 3))], complex=True)
@named("unflatten")
def unflatten(input, dim, sizes):  # noqa: A002
    """PyTorch's ``unflatten``: ``dim`` split into ``sizes`` (one may be -1), ``flatten``'s inverse."""
    x = as_tensor(input, "unflatten")
    d, n = _dim_size(x, dim, "unflatten")
    sizes = _shape_args((tuple(sizes),) if isinstance(sizes, (tuple, list)) else (sizes,), "unflatten")
    if not sizes:
        raise ValueError(f"unflatten: sizes must not be empty (dim {d} of shape {x.shape})")
    known = int(np.prod([s for s in sizes if s != -1]))
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes) or \
            (n != known if -1 not in sizes else (known == 0 or n % known)):
        raise ValueError(f"unflatten: sizes {sizes} do not multiply to the size {n} of dim {d} (shape {x.shape})")
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def _shape_of(other, op):
    if isinstance(other, Tensor) or hasattr(other, "shape"):
        return tuple(other.shape)
    raise TypeError(f"{op}: other must be a Tensor, got {type(other).__name__}")


@composite("expand_as", method="expand_as", torch=lambda th, x, other: x.expand_as(other),
           samples=lambda rng: [Sample(_r(rng, 3, 1), _r(rng, 2, 3, 4), nondiff=(1,))], complex=True)
@named("expand_as")
def expand_as(input, other):  # noqa: A002
    """``expand(*other.shape)``: broadcast to ``other``'s shape (a read-only view)."""
    x = as_tensor(input, "expand_as")
    shape = _shape_of(other, "expand_as")
    try:
        return expand(x, *shape)
    except ValueError:
        raise ValueError(f"expand_as: cannot expand shape {x.shape} to other's shape {shape}") from None


@composite("view_as", method="view_as", torch=lambda th, x, other: x.view_as(other),
           samples=lambda rng: [Sample(_r(rng, 2, 6), _r(rng, 3, 4), nondiff=(1,))], complex=True)
@named("view_as")
def view_as(input, other):  # noqa: A002
    """``view(other.shape)``: the same storage in ``other``'s shape (an error where that needs a copy)."""
    return _do_reshape("view", as_tensor(input, "view_as"), (_shape_of(other, "view_as"),))


@composite("reshape_as", method="reshape_as", torch=lambda th, x, other: x.reshape_as(other),
           samples=lambda rng: [Sample(_r(rng, 2, 6), _r(rng, 3, 4), nondiff=(1,))], complex=True)
@named("reshape_as")
def reshape_as(input, other):  # noqa: A002
    """``reshape(other.shape)``: a view where the layout allows, else a copy."""
    return _do_reshape("reshape", as_tensor(input, "reshape_as"), (_shape_of(other, "reshape_as"),))
