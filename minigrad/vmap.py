"""``mg.func.vmap``: ``func`` run once over a batch, as if once per element.

The arguments' batch axes become vmap levels (``batching.VMAP_IN``): their Tensors' arrays are
``BatchedArray``s, whose shape is one element's. ``func`` runs once; each op's forward (and, in a
backward or a forward-mode pass, each rule) runs on the batched arrays, where every array call is
batched (``_batched.py``). The results give their batch back as an axis (``VMAP_OUT``)."""
from __future__ import annotations

import functools
import numbers

from . import _batched
from . import _pytree
from .batching import VMAP_IN, VMAP_OUT
from .engine import run_op
from .ops.shape import concatenate as _cat
from .tensor import Tensor

_RANDOMNESS = ("error", "different", "same")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` vectorised over a batch axis of its arguments, as ``torch.func.vmap``.

    Args:
        func: a function of Tensors (and other values) returning a Tensor, or tuples, lists and
            dicts of them.
        in_dims: per argument, the axis it is batched over (an int, negative counting from the
            end) or None (the same for every element); an int for all arguments, or a structure
            matching the arguments (a tuple with one entry per argument, nested as they are).
        out_dims: the axis of each output that holds the batch: an int, or one per output.
        randomness: "error" (the default) refuses random draws inside ``func``; "different" draws
            independently per element; "same" draws once for all.
        chunk_size: run the batch in chunks of this many elements (less memory), each one call
            of ``func``.

    ``func`` runs once per chunk (once for the whole batch by default), never once per element:
    every op batches its array calls. An op whose forward uses an array call without a batching
    rule runs once per element, with a warning that names it. Keyword arguments are not batched.

    >>> mg.func.vmap(mg.dot)(mg.ones(5, 3), mg.ones(5, 3))      # five dot products
    >>> mg.func.vmap(mg.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)   # per-sample gradients
    """
    name = "func.vmap"
    if randomness not in _RANDOMNESS:
        raise ValueError(f"{name}: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral)
                                   or chunk_size < 1):
        raise ValueError(f"{name}: chunk_size must be None or a positive int, got {chunk_size!r}")
    if not callable(func):
        raise TypeError(f"{name}: expected a function, got {type(func).__name__}")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        leaves, spec = _pytree.flatten(args)
        dims = _in_dims(in_dims, args, leaves, name)
        size = _batch_size(leaves, dims, name)
        if chunk_size is None or chunk_size >= size:
            return _run(func, leaves, dims, spec, kwargs, size, out_dims, randomness, name)
        chunks = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            part = [x if d is None else x.narrow(d, start, stop - start) for x, d in zip(leaves, dims, strict=True)]
            chunks.append(_run(func, part, dims, spec, kwargs, stop - start, out_dims, randomness, name))
        return _join(chunks, out_dims, name)

    return vmapped


def _in_dims(in_dims, args, leaves, name):
    """One in_dim per leaf of the arguments (None: not batched), checked and made non-negative."""
    if isinstance(in_dims, (int, type(None))) and not isinstance(in_dims, bool):
        flat = [in_dims] * len(leaves)
    elif isinstance(in_dims, (tuple, list)):
        if len(in_dims) != len(args):
            raise ValueError(f"{name}: in_dims has {len(in_dims)} entries, but the function was called with "
                             f"{len(args)} positional arguments; give one in_dim per argument (or an int for all)")
        flat = _pytree.leaves_like(tuple(in_dims), tuple(args), name, "in_dims")
    else:
        raise TypeError(f"{name}: in_dims must be an int, None, or a tuple with one entry per argument, "
                        f"got {type(in_dims).__name__}")
    out = []
    for k, (x, d) in enumerate(zip(leaves, flat, strict=True)):
        if d is None:
            out.append(None)
            continue
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"{name}: in_dims entries must be ints or None, got {d!r}")
        if not isinstance(x, Tensor):
            if isinstance(in_dims, int):
                out.append(None)  # an int for all arguments batches the Tensors among them
                continue
            raise ValueError(f"{name}: in_dim={d} was given for an input of type {type(x).__name__}; only Tensors "
                             "can be batched (give None for it)")
        if not -x.ndim <= d < x.ndim:
            raise ValueError(f"{name}: in_dim={d} is out of range for an input of shape {x.shape} "
                             f"({x.ndim} dims: expected {-x.ndim} <= in_dim < {x.ndim})")
        out.append(int(d) % x.ndim)
    if all(d is None for d in out):
        raise ValueError(f"{name}: no input is batched (every in_dim is None, or no argument is a Tensor); "
                         "at least one Tensor argument must have an in_dim")
    return out


def _batch_size(leaves, dims, name):
    size, first = None, None
    for k, (x, d) in enumerate(zip(leaves, dims, strict=True)):
        if d is None:
            continue
        n = x.shape[d]
        if size is None:
            size, first = n, (k, d, x.shape)
        elif n != size:
            raise ValueError(f"{name}: the batched inputs have different batch sizes: input {first[0]} has size "
                             f"{size} along in_dim {first[1]} (shape {first[2]}), input {k} has size {n} along "
                             f"in_dim {d} (shape {x.shape})")
    return size


def _run(func, leaves, dims, spec, kwargs, size, out_dims, randomness, name):
    level, token = _batched.new_level(size, randomness)
    try:
        xs = [x if d is None else run_op(VMAP_IN, x, dim=d, level=level, size=size)
              for x, d in zip(leaves, dims, strict=True)]
        res = func(*_pytree.unflatten(xs, spec), **kwargs)
    finally:
        _batched.exit_level(token)
    outs, ospec = _pytree.flatten(res)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}: the function must return Tensors (or tuples, lists and dicts of them), got "
                            f"{type(o).__name__} among its outputs")
    odims = _out_dims(out_dims, res, outs, name)
    return _pytree.unflatten([_out(o, d, level, size, name) for o, d in zip(outs, odims, strict=True)], ospec)


def _out_dims(out_dims, res, outs, name):
    if isinstance(out_dims, (int, type(None))) and not isinstance(out_dims, bool):
        return [out_dims] * len(outs)
    if isinstance(out_dims, (tuple, list)):
        if not isinstance(res, (tuple, list)) or len(out_dims) != len(res):
            n = len(res) if isinstance(res, (tuple, list)) else 1
            raise ValueError(f"{name}: out_dims has {len(out_dims)} entries, but the function returned {n} "
                             "outputs; give one out_dim per output (or an int for all)")
        return _pytree.leaves_like(tuple(out_dims), tuple(res), name, "out_dims")
    raise TypeError(f"{name}: out_dims must be an int, None or a tuple, got {type(out_dims).__name__}")


def _out(o, d, level, size, name):
    batched = level in _batched.levels_of(o.data)
    if d is None:
        if batched:
            raise ValueError(f"{name}: out_dims is None for an output that is batched (shape {o.shape} per "
                             "element); None is only for an output that is the same for every element")
        return o
    if isinstance(d, bool) or not isinstance(d, numbers.Integral):
        raise TypeError(f"{name}: out_dims entries must be ints or None, got {d!r}")
    nd = o.ndim + 1
    if not -nd <= d < nd:
        raise ValueError(f"{name}: out_dim={d} is out of range for an output of shape {o.shape} per element "
                         f"(expected {-nd} <= out_dim < {nd})")
    return run_op(VMAP_OUT, o, dim=int(d) % nd, level=level, size=size)


def _join(chunks, out_dims, name):
    first = chunks[0]
    leaves0, spec = _pytree.flatten(first)
    per = [_pytree.flatten(c)[0] for c in chunks]
    if isinstance(out_dims, (tuple, list)):
        odims = _pytree.leaves_like(tuple(out_dims), tuple(first), name, "out_dims")
    else:
        odims = [out_dims] * len(leaves0)
    joined = [leaves0[k] if d is None else _cat([p[k] for p in per], dim=d) for k, d in enumerate(odims)]
    return _pytree.unflatten(joined, spec)
