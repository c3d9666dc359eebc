"""Indexing ops: ``getitem`` (``x[idx]``, a view for basic indexing) and its adjoint
``index_add`` (a zeros tensor with values added at an index), and the index helpers the
in-place ``setitem`` shares with them (converting an index, splitting it into a template and
array arguments, moving index arrays to the device with NumPy's bounds checks, printing it).

PyTorch's indexing functions sit beside them: ``index_put`` (an op: ``x[idx] = v`` out of place,
each value's gradient the gradient at its index), and ``gather``, ``scatter``, ``scatter_add``,
``index_select``, ``masked_fill`` and ``masked_select``, built from getitem, index_add, index_put
and where.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import _batched

from .. import backend as _be
from .. import kernels as _k
from ..backward import sum_to
from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, composite, defop, linear_jvp, named, public
from .elementwise import where
from .shape import _dim_size, _r, _shape_args, broadcast_to

_ARRAY = object()  # where an index array sits in an index template


def convert_index(idx):
    """Tensors -> arrays, lists -> arrays; returns (index tuple, is_basic)."""
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


def split_index(raw, idx):
    """An index as (template, arguments): each index array becomes an argument of the op (the
    user's index Tensor itself where there was one, so that the op saves it with its version)."""
    raws = raw if isinstance(raw, tuple) else (raw,)
    template, args = [], []
    for r, i in zip(raws, idx, strict=False):
        if hasattr(i, "shape") and not isinstance(i, (bool, np.bool_)):
            template.append(_ARRAY)
            args.append(r if isinstance(r, Tensor) else i)
        else:
            template.append(i)
    template.extend(idx[len(raws):])
    return tuple(template), args


def join_index(template, arrays):
    it = iter(arrays)
    return tuple(next(it) if t is _ARRAY else t for t in template)


def _getitem_fwd(xp, x, *arrays, template):
    return x[join_index(template, arrays)]


def _getitem_rule(ctx, g, template):
    return (ctx.xp.index_add(g, *ctx.saved, shape=ctx.meta[0][0], template=template),)


GETITEM = defop("getitem", _getitem_fwd, _getitem_rule, save=(1, ...), view="maybe", kind="view", jvp=linear_jvp(0),
                info=lambda template: {"index": fmt_index(template)},
                samples=lambda rng: [Sample(_r(rng, 4, 3), template=(1, slice(None))),
                                     Sample(_r(rng, 4, 3), np.array([0, 2, 0]), template=(_ARRAY,))], complex=True)


@public(GETITEM, dunders=("__getitem__",), export=False)
def getitem(x, idx):
    """``x[idx]`` with basic (a view) and advanced (a copy) indexing; repeated indices accumulate in backward."""
    x = as_tensor(x, "getitem")
    xd = x.data
    cidx, basic = convert_index(idx)
    if not basic:
        cidx = to_device_index(cidx, xd, "getitem")
    elif all(type(i) is int for i in cidx):
        cidx = cidx + (Ellipsis,)  # x[1, 2] is then a 0-d view, not a copied scalar
    template, args = split_index(idx, cidx)
    try:
        return run_op(GETITEM, x, *args, template=template)
    except IndexError as e:
        raise IndexError(f"{e} (tensor shape {xd.shape})") from None  # apply's message starts "getitem: "


def _index_add_fwd(xp, v, *arrays, shape, template):
    z = xp.zeros(shape, dtype=v.dtype)
    idx = join_index(template, arrays)
    if not arrays:
        z[idx] = v
    else:
        _k.index_add(xp, z, idx, v)
    return z


def _index_add_rule(ctx, g, shape, template):
    return (ctx.xp.getitem(g, *ctx.saved, template=template),)


INDEX_ADD = defop("index_add", _index_add_fwd, _index_add_rule, save=(1, ...), kind="other", jvp=linear_jvp(0),
                  batch=_batched.fresh_buffers,
                  info=lambda shape, template: {"index": fmt_index(template)},
                  samples=lambda rng: [Sample(_r(rng, 3), np.array([0, 2, 0]), shape=(4,), template=(_ARRAY,)),
                                       Sample(_r(rng, 3), shape=(2, 3), template=(1,))], complex=True)


_TORCH_INDEX_ADD_KW = frozenset({"input", "dim", "index", "source", "alpha"})


@public(INDEX_ADD)
@named("index_add")
def index_add(*args, **kwargs):
    """A zeros tensor of ``shape`` with ``values`` added at ``idx``; repeated indices accumulate:
    minigrad's ``index_add(shape, idx, values)``.

    >>> mg.index_add((3,), mg.tensor([0, 2, 0]), mg.tensor([1.0, 2.0, 3.0]))
    tensor([4., 0., 2.])

    PyTorch's ``index_add(input, dim, index, source, alpha=1)`` (API.md's spelling rule: chosen by
    any of its keywords, by four positional arguments, or by a Tensor first argument, which cannot be
    a shape): ``input`` with ``alpha * source`` added at ``index`` along ``dim`` (``Tensor.index_add``).
    """
    if _TORCH_INDEX_ADD_KW & kwargs.keys() or len(args) >= 4 or (args and isinstance(args[0], Tensor)):
        return torch_index_add(*args, **kwargs)
    return _index_add(*args, **kwargs)


def _index_add(shape, idx, values):
    values = as_tensor(values, "index_add")
    shape = _shape_args((shape,) if not isinstance(shape, (tuple, list)) else (tuple(shape),), "index_add")
    cidx, basic = convert_index(idx)
    if not basic:
        cidx = to_device_index(cidx, values.data, "index_add", shape)
    template, args = split_index(idx, cidx)
    try:
        return run_op(INDEX_ADD, values, *args, shape=shape, template=template)
    except IndexError as e:
        raise IndexError(f"{e} (target shape {shape})") from None  # apply's message starts "index_add: "
    except ValueError as e:
        raise ValueError(
            f"index_add: values of shape {tuple(values.shape)} do not fit the index {fmt_index(cidx)} of a "
            f"target of shape {shape} ({str(e).removeprefix('index_add: ')})"
        ) from None


def to_device_index(idx, xd, op="getitem", shape=None):
    """Index arrays onto ``xd``'s device. CuPy does not bounds-check integer index arrays (they
    wrap around), so on the device they are checked here as NumPy checks them (one sync each)."""
    xp = _be.array_module(xd)
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
            v = _batched.innermost(i)  # under vmap: every element's index
            out = (v < -n) | (v >= n)
            if out.any():
                raise IndexError(
                    f"{op}: index {int(v[out].ravel()[0])} is out of bounds for axis {d} with size {n} "
                    f"(tensor shape {tuple(shape)})"
                )
        d += dims(i)


def fmt_index(idx):
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
        elif i is _ARRAY:
            parts.append("array")
        else:
            parts.append(str(i))
    return "[" + ", ".join(parts) + "]"


# -- PyTorch's indexing: index_put (writes, out of place), and the functions built on it and getitem --


def _index_put_fwd(xp, x, v, *arrays, template):
    out = x.copy()
    out[join_index(template, arrays)] = v
    return out


def _index_put_rule(ctx, g, template):
    arrays = ctx.saved
    gx = ctx.xp.index_put(g, 0, *arrays, template=template) if ctx.parents[0] is not None else None
    gv = None
    if ctx.parents[1] is not None:  # every value's gradient, duplicates' too (PyTorch's: g at its index)
        gv = ctx.xp.getitem(g, *arrays, template=template)
        if tuple(gv.shape) != tuple(ctx.meta[1][0]):
            gv = sum_to(gv, ctx.meta[1][0])  # values broadcast over the indexed positions
    return gx, gv


def _index_put_jvp(ctx, tx, tv, *_, template):
    """Linear in the input and the values together: the op itself on their tangents (a missing
    tangent of the values writes zeros)."""
    if tx is None and tv is None:
        return None
    x = tx if tx is not None else ctx.xp.zeros_like(ctx.args[0])
    return ctx.xp.run_op(ctx.op, x, 0 if tv is None else tv, *ctx.args[2:], template=template)


INDEX_PUT = defop(
    "index_put", _index_put_fwd, _index_put_rule, save=(2, ...), kind="other", jvp=_index_put_jvp,
    batch=_batched.lifting(0),  # the copy of x written into: batched too
    info=lambda template: {"index": fmt_index(template)},
    torch=lambda th, x, v, *arrays, template: th.index_put(x, arrays, v),  # (samples: index arrays only)
    samples=lambda rng: [Sample(_r(rng, 4, 3), _r(rng, 2), np.array([0, 2]), np.array([1, 1]), template=(_ARRAY, _ARRAY)),
                         Sample(_r(rng, 4, 3), _r(rng, 3), np.array([1, 3]), template=(_ARRAY,)),
                         Sample(_r(rng, 4, 3), _r(rng, 2, 1), np.array([[0], [2]]), np.array([2, 0]),
                                template=(_ARRAY, _ARRAY))], complex=True)


def _put(x, idx, v, op):
    """``x`` with ``v`` written at ``idx`` (a copy; ``x[idx] = v`` out of place), through index_put."""
    cidx, basic = convert_index(idx)
    if not basic:
        cidx = to_device_index(cidx, x.data, op)
    template, args = split_index(idx, cidx)
    return run_op(INDEX_PUT, x, v, *args, template=template)


@public(INDEX_PUT, method="index_put")
@named("index_put")
def index_put(input, indices, values, accumulate=False):  # noqa: A002 - PyTorch's name
    """PyTorch's ``index_put``: a copy of ``input`` with ``values`` (broadcast) written at
    ``input[indices]`` (``indices`` a tuple of index tensors, or any index ``x[...]`` takes), or
    added there with ``accumulate=True`` (repeated indices then sum). Each value's gradient is the
    gradient at its index; ``input``'s is zero where a value was written."""
    x = as_tensor(input, "index_put")
    idx = tuple(indices) if isinstance(indices, list) else indices
    target = x.detach()[idx].shape  # checks the index against the input (IndexError naming the shape)
    v = values if isinstance(values, Tensor) else as_tensor(values, "index_put").astype(x.dtype)
    if v.dtype != x.dtype:
        raise TypeError(f"index_put: values dtype {v.dtype} differs from input dtype {x.dtype} (shapes: input {x.shape}, "
                        f"values {tuple(v.shape)}); cast one with .astype(...)")
    try:
        np.broadcast_shapes(tuple(v.shape), target)
        if len(v.shape) > len(target) or np.broadcast_shapes(tuple(v.shape), target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(f"index_put: values of shape {tuple(v.shape)} do not broadcast to the {target} "
                         f"positions indexed in input of shape {x.shape}") from None
    if accumulate:
        return x + index_add(x.shape, idx, broadcast_to(v, target))
    return _put(x, idx, v, "index_put")


def _int_index(index, op):
    """``index`` (a Tensor, an array or a list) as an integer Tensor or array, and its array."""
    if isinstance(index, Tensor):
        d = index.data
    elif hasattr(index, "dtype") and hasattr(index, "shape"):
        d = index
    else:
        d = index = np.asarray(index)
        if d.size == 0:
            d = index = d.astype(np.int64)
    if d.dtype.kind not in "iu":
        raise TypeError(f"{op}: index must be an integer tensor, got dtype {d.dtype} (shape {tuple(d.shape)})")
    return index, d


def _check_range(d, n, dim, op, shape):
    """IndexError naming ``op`` for an index outside [0, n) (PyTorch's scatter and gather take no
    negative indices)."""
    if d.size:
        d = _batched.innermost(d)  # under vmap: every element's index
        bad = (d < 0) | (d >= n)
        if bad.any():
            raise IndexError(f"{op}: index {int(d[bad].ravel()[0])} is out of bounds for dim {dim} with size {n} "
                             f"(input shape {tuple(shape)})")


def _along(x, dim, index, op, src=None):
    """The arguments of gather and scatter checked as PyTorch checks them, and the full index
    that reaches ``x[..., index[i, j, k], ...]`` at dim ``dim`` for each position of ``index``."""
    d, n = _dim_size(x, dim, op)
    index, di = _int_index(index, op)
    ishape = tuple(di.shape)
    shapes = f"input {x.shape}, index {ishape}" + ("" if src is None else f", src {tuple(src.shape)}")
    if len(ishape) != x.ndim or (src is not None and src.ndim != x.ndim):
        raise ValueError(f"{op}: input, index{'' if src is None else ' and src'} must have the same number of dims "
                         f"(shapes: {shapes})")
    for k, s in enumerate(ishape):
        if (k != d and s > x.shape[k]) or (src is not None and s > src.shape[k]):
            raise ValueError(f"{op}: index is larger than {'input' if k != d and s > x.shape[k] else 'src'} at dim {k} "
                             f"(shapes: {shapes}; only input's dim {d} may be smaller than index's)")
    _check_range(di, n, d, op, x.shape)
    full = tuple(index if k == d else np.arange(s).reshape((-1,) + (1,) * (len(ishape) - k - 1))
                 for k, s in enumerate(ishape))
    return full, ishape


@composite("gather", method="gather", torch=lambda th, x, dim, index: th.gather(x, dim, index),
           samples=lambda rng: [Sample(_r(rng, 3, 4), 1, np.array([[0, 3], [1, 1], [2, 0]])),
                                Sample(_r(rng, 3, 4), 0, np.array([[2, 0, 1, 1], [0, 0, 2, 1], [1, 1, 1, 1], [0, 2, 0, 0]])),
                                Sample(_r(rng, 3, 4), 0, np.array([[1, 2], [0, 0]]))], complex=True)
@named("gather")
def gather(input, dim, index, *, sparse_grad=False):  # noqa: A002
    """PyTorch's ``gather``: ``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (the index replaces
    dim ``dim``); ``index`` has input's ndim and is no larger elsewhere. The gradient adds back into
    the gathered positions (``scatter_add``)."""
    if sparse_grad:
        raise ValueError("gather: sparse_grad=True is not supported (the gradient is dense)")
    x = as_tensor(input, "gather")
    if x.ndim == 0:
        return gather(x.reshape(1), dim, _int_index(index, "gather")[0].reshape(1)).reshape(())
    full, _ = _along(x, dim, index, "gather")
    return x[full]


def _src(input, src, value, op):
    x = as_tensor(input, op)
    if src is not None and value is not None:
        raise TypeError(f"{op}: give src or value, not both")
    if src is None and value is None:
        raise TypeError(f"{op}: missing src (a tensor) or value (a number)")
    if src is None or not (isinstance(src, Tensor) or hasattr(src, "shape")):
        v = src if src is not None else value
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number) or isinstance(v, complex):
            raise TypeError(f"{op}: value must be a real number, got {type(v).__name__} {v!r}")
        return x, None, v
    s = as_tensor(src, op)
    if s.dtype != x.dtype:
        raise TypeError(f"{op}: src dtype {s.dtype} differs from input dtype {x.dtype} (shapes: input {x.shape}, "
                        f"src {s.shape}); cast one with .astype(...)")
    return x, s, None


def _src_part(s, ishape):
    """The part of ``src`` that index reaches: ``src[:i0, :i1, ...]`` (all of it when the shapes match)."""
    return s if tuple(s.shape) == ishape else s[tuple(slice(0, k) for k in ishape)]


# (samples: src shaped as index, where PyTorch's backward is defined; a larger src is tests/test_torch_names.py's)
@composite("scatter", method="scatter",
           torch=lambda th, x, dim, index, src: th.scatter(x, dim, index, src),
           samples=lambda rng: [Sample(_r(rng, 3, 4), 0, np.array([[2, 0, 1, 1], [0, 1, 2, 0]]), _r(rng, 2, 4)),
                                Sample(_r(rng, 3, 4), 1, np.array([[3, 0], [1, 2]]), _r(rng, 2, 2)),
                                Sample(_r(rng, 3, 4), -1, np.array([[0], [2], [3]]), 1.5)], complex=True)
@named("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """PyTorch's ``scatter`` (out of place): a copy of ``input`` with ``out[index[i][j]][j] = src[i][j]``
    for ``dim=0``; ``src`` may be a number (``value``). Where ``index`` repeats a position, one of the
    values lands there (as in PyTorch, which one is unspecified). Gradients as PyTorch's: ``src``'s
    is ``gather`` of the gradient (at every index, repeated ones too); ``input``'s is zero at the
    written positions."""
    if reduce is not None:
        raise ValueError(f"scatter: reduce={reduce!r} is not supported; use scatter_add for reduce='add'")
    x, s, v = _src(input, src, value, "scatter")
    full, ishape = _along(x, dim, index, "scatter", s)
    return _put(x, full, v if s is None else _src_part(s, ishape), "scatter")


@composite("scatter_add", method="scatter_add", torch=lambda th, x, dim, index, src: th.scatter_add(x, dim, index, src),
           samples=lambda rng: [Sample(_r(rng, 3, 4), 0, np.array([[2, 0, 1, 1], [2, 0, 0, 1]]), _r(rng, 2, 4)),
                                Sample(_r(rng, 3, 4), 1, np.array([[3, 3, 0], [1, 2, 1]]), _r(rng, 2, 3))], complex=True)
@named("scatter_add")
def scatter_add(input, dim, index, src):  # noqa: A002
    """PyTorch's ``scatter_add`` (out of place): ``input`` plus ``src`` added at ``index`` along ``dim``
    (``out[index[i][j]][j] += src[i][j]`` for ``dim=0``); repeated indices sum. ``src``'s gradient
    is ``gather`` of the gradient, ``input``'s the gradient itself."""
    x = as_tensor(input, "scatter_add")
    s = as_tensor(src, "scatter_add")
    if s.dtype != x.dtype:
        raise TypeError(f"scatter_add: src dtype {s.dtype} differs from input dtype {x.dtype} (shapes: input "
                        f"{x.shape}, src {s.shape}); cast one with .astype(...)")
    full, ishape = _along(x, dim, index, "scatter_add", s)
    return x + index_add(x.shape, full, _src_part(s, ishape))


@composite("index_select", method="index_select", torch=lambda th, x, dim, index: th.index_select(x, dim, index),
           samples=lambda rng: [Sample(_r(rng, 4, 3), 0, np.array([3, 0, 3])), Sample(_r(rng, 2, 5), 1, np.array(2))], complex=True)
@named("index_select")
def index_select(input, dim, index):  # noqa: A002
    """PyTorch's ``index_select``: the entries of dim ``dim`` at ``index`` (1-D, or 0-D as one entry),
    in that order; repeated indices accumulate in backward."""
    x = as_tensor(input, "index_select")
    x1 = x.reshape(1) if x.ndim == 0 else x  # a 0-d input: one entry, and a 0-d result (PyTorch's)
    d, n = _dim_size(x1, dim, "index_select")
    index, di = _int_index(index, "index_select")
    if di.ndim > 1 or (x.ndim == 0 and di.size != 1):
        raise ValueError(f"index_select: index must be 0-D or 1-D{' with one entry for a 0-d input' if x.ndim == 0 else ''}, "
                         f"got shape {tuple(di.shape)} (input shape {x.shape})")
    _check_range(di, n, d, "index_select", x.shape)
    out = x1[(slice(None),) * d + (index.reshape(1) if di.ndim == 0 else index,)]
    return out.reshape(()) if x.ndim == 0 else out


def _bool_mask(mask, op, shape):
    m = mask.data if isinstance(mask, Tensor) else mask if hasattr(mask, "dtype") else np.asarray(mask)
    if m.dtype.kind != "b":
        raise TypeError(f"{op}: mask must be a bool tensor, got dtype {m.dtype} (mask shape {tuple(m.shape)}, "
                        f"input shape {shape})")
    return m


def _broadcast_with(m, shape, op):
    try:
        return np.broadcast_shapes(tuple(m.shape), tuple(shape))
    except ValueError:
        raise ValueError(f"{op}: mask of shape {tuple(m.shape)} does not broadcast with input of shape "
                         f"{tuple(shape)}") from None


@composite("masked_fill", method="masked_fill", torch=lambda th, x, mask, value: th.masked_fill(x, mask, value),
           samples=lambda rng: [Sample(_r(rng, 3, 4), rng.random((3, 4)) < 0.5, 0.5),
                                Sample(_r(rng, 3, 4), np.array([True, False, False, True]), -2.0),
                                Sample(_r(rng, 2, 3), np.array([[True], [False]]), np.asarray(rng.standard_normal()))])
@named("masked_fill")
def masked_fill(input, mask, value):  # noqa: A002
    """PyTorch's ``masked_fill``: ``value`` (a number, or a 0-d tensor, differentiable) where the bool
    ``mask`` (broadcast) is True, ``input`` elsewhere, in ``input``'s dtype. The gradient reaches
    ``input`` where the mask is False (selected with ``where``), and ``value`` summed where it is True."""
    x = as_tensor(input, "masked_fill")
    m = _bool_mask(mask, "masked_fill", x.shape)
    _broadcast_with(m, x.shape, "masked_fill")
    if isinstance(value, Tensor) or hasattr(value, "shape"):
        if value.ndim:
            raise ValueError(f"masked_fill: value must be a number or a 0-d tensor, got shape {tuple(value.shape)} "
                             f"(input shape {x.shape})")
    elif isinstance(value, complex) or not isinstance(value, numbers.Number):
        raise TypeError(f"masked_fill: value must be a real number or a 0-d tensor, got {type(value).__name__} "
                        f"{value!r}")
    out = where(mask if isinstance(mask, Tensor) else m, value, x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


@composite("masked_select", method="masked_select", torch=lambda th, x, mask: th.masked_select(x, mask),
           samples=lambda rng: [Sample(_r(rng, 3, 4), rng.random((3, 4)) < 0.5),
                                Sample(_r(rng, 3, 1), np.array([[True, False, True, True], [False] * 4, [True] * 4]))], complex=True)
@named("masked_select")
def masked_select(input, mask):  # noqa: A002
    """PyTorch's ``masked_select``: the elements of ``input`` where the bool ``mask`` is True (the two
    broadcast together), as a 1-D tensor in row-major order."""
    x = as_tensor(input, "masked_select")
    m = _bool_mask(mask, "masked_select", x.shape)
    shape = _broadcast_with(m, x.shape, "masked_select")
    xp = _be.array_module(x.data)
    if xp is not _be.array_module(m):
        m = _be.to_device(m, x.device)
    return broadcast_to(x, shape)[xp.broadcast_to(m, shape)]


# -- PyTorch's index_add ------------------------------------------------------------------------------


@composite("torch_index_add", method="index_add", export=False,
           torch=lambda th, x, dim, index, source, alpha=1: th.index_add(x, dim, th.as_tensor(index), source,
                                                                         alpha=alpha),
           samples=lambda rng: [Sample(_r(rng, 4, 3), 0, np.array([3, 0, 3]), _r(rng, 3, 3)),
                                Sample(_r(rng, 2, 5), 1, np.array([4, 1]), _r(rng, 2, 2), alpha=-0.5),
                                Sample(_r(rng, 2, 3, 2), -2, np.array([2, 2, 0, 1]), _r(rng, 2, 4, 2), alpha=2)], complex=True)
@named("index_add")
def torch_index_add(input, dim, index, source, alpha=1):  # noqa: A002 - PyTorch's names
    """PyTorch's ``index_add``: a copy of ``input`` with ``alpha * source[..., i, ...]`` added at
    ``index[i]`` along ``dim`` (repeated indices accumulate); ``source`` has ``input``'s shape but
    ``len(index)`` along ``dim``. ``input``'s gradient is the gradient, ``source``'s ``alpha`` times
    its ``index_select``."""
    x = as_tensor(input, "index_add")
    s = as_tensor(source, "index_add")
    if s.dtype != x.dtype:
        raise TypeError(f"index_add: source dtype {s.dtype} differs from input dtype {x.dtype} (shapes: input "
                        f"{x.shape}, source {s.shape}); cast one with .astype(...)")
    if x.ndim == 0:  # PyTorch's: a 0-d input is one entry along dim 0 (or -1)
        _dim_size(x.reshape(1), dim, "index_add")
        return torch_index_add(x.reshape(1), 0, index, s.reshape(1) if s.ndim == 0 else s, alpha).reshape(())
    d, n = _dim_size(x, dim, "index_add")
    index, di = _int_index(index, "index_add")
    if di.ndim > 1:
        raise ValueError(f"index_add: index must be 1-D, got shape {tuple(di.shape)} (input shape {x.shape})")
    index, di = (index.reshape(1), di.reshape(1)) if di.ndim == 0 else (index, di)
    want = x.shape[:d] + (di.shape[0],) + x.shape[d + 1:]
    if s.shape != want:
        raise ValueError(f"index_add: source of shape {s.shape} must have shape {want} (input shape {x.shape}, "
                         f"{di.shape[0]} indices along dim {d})")
    _check_range(di, n, d, "index_add", x.shape)
    if not (isinstance(alpha, numbers.Number) and alpha == 1):
        s = s * alpha
    return x + _index_add(x.shape, (slice(None),) * d + (index,), s)
