"""Indexing ops: ``getitem`` (``x[idx]``, a view for basic indexing) and its adjoint
``index_add`` (a zeros tensor with values added at an index), and the index helpers the
in-place ``setitem`` shares with them (converting an index, splitting it into a template and
array arguments, moving index arrays to the device with NumPy's bounds checks, printing it).
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend as _be
from .. import kernels as _k
from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, defop, linear_jvp, named, public
from .shape import _r, _shape_args

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
                                     Sample(_r(rng, 4, 3), np.array([0, 2, 0]), template=(_ARRAY,))])


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
                  info=lambda shape, template: {"index": fmt_index(template)},
                  samples=lambda rng: [Sample(_r(rng, 3), np.array([0, 2, 0]), shape=(4,), template=(_ARRAY,)),
                                       Sample(_r(rng, 3), shape=(2, 3), template=(1,))])


@public(INDEX_ADD)
@named("index_add")
def index_add(shape, idx, values):
    """A zeros tensor of ``shape`` with ``values`` added at ``idx``; repeated indices accumulate.

    >>> mg.index_add((3,), mg.tensor([0, 2, 0]), mg.tensor([1.0, 2.0, 3.0]))
    tensor([4., 0., 2.])
    """
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
            out = (i < -n) | (i >= n)
            if out.any():
                raise IndexError(
                    f"{op}: index {int(i[out].ravel()[0])} is out of bounds for axis {d} with size {n} "
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
