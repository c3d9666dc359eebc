"""NumPy's dispatch protocols on Tensors: ``np.exp(t)``, ``np.sum(t, axis=1)``,
``np.concatenate([a, b])`` ... call the minigrad function the registry names for that NumPy
function (``numpy_functions()``) and return recorded Tensors. NumPy's argument names are mapped
onto minigrad's from the two signatures; anything else raises. ``minigrad.ops`` binds
``array_ufunc`` and ``array_function`` as Tensor's ``__array_ufunc__`` and ``__array_function__``."""
from __future__ import annotations

import inspect as _inspect

import numpy as _np

from ._registry import registry


def numpy_functions() -> dict:
    """NumPy function or ufunc -> the minigrad function it dispatches to (from the registry)."""
    return {f: op.frontend for op in registry().values() if op.frontend is not None for f in op.numpy}


_NUMPY = None  # numpy_functions(), built on first use (after every family has registered)
_SIGS: dict = {}

# names NumPy gives the operands (mapped by position onto minigrad's leading parameters)
_DATA = frozenset(("a", "b", "x", "y", "x1", "x2", "array", "arrays", "condition", "operands", "prototype", "m", "v",
                   "ary", "arr", "tup", "A", "arys", "val", "z"))
# NumPy's name for a parameter -> minigrad's names for it, tried in order
_ALIASES = {"axis1": ("dim0", "a"), "axis2": ("dim1", "b"), "a_min": ("min",), "a_max": ("max",),
            "newshape": ("shape",), "axis": ("dim",), "keepdims": ("keepdim",)}


def _numpy_table() -> dict:
    global _NUMPY
    if _NUMPY is None:
        _NUMPY = numpy_functions()
    return _NUMPY


def _np_name(func, method="__call__") -> str:
    """``numpy.sort``, ``numpy.fft.fft``, ``numpy.add.reduce``: the name a message gives."""
    mod = "numpy" if isinstance(func, _np.ufunc) else (getattr(func, "__module__", None) or "numpy")
    name = f"{mod}.{getattr(func, '__name__', func)}"
    return name if method == "__call__" else f"{name}.{method}"


def _unsupported(func, method="__call__", why=None):
    name = _np_name(func, method)
    why = why or "has no minigrad op"
    return TypeError(
        f"{name} {why}: minigrad cannot record it on a Tensor. Use t.detach().numpy() to work on a "
        "NumPy array instead (no gradient flows through it), or the minigrad function "
        "(mg.ops.numpy_functions() lists the NumPy functions Tensors support)")


def _signature(f):
    sig = _SIGS.get(f)
    if sig is None:
        try:
            sig = _inspect.signature(f)
        except (TypeError, ValueError):
            sig = False
        _SIGS[f] = sig
    return sig


def _is_default(value, default) -> bool:
    if value is _np._NoValue or value is default:
        return True
    if default is _inspect.Parameter.empty or default is _np._NoValue:
        return False
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:
        return False


def _dispatch(func, fn, args, kwargs, method="__call__"):
    """Call minigrad's ``fn`` with NumPy ``func``'s arguments, renamed from NumPy's names."""
    name = _np_name(func, method)
    out = kwargs.get("out")
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(f"{name}: out= is not supported on Tensors (minigrad ops return new tensors); "
                        "assign the result instead")
    npsig, mgsig = _signature(func), _signature(fn)
    if not npsig or not mgsig:
        return fn(*args, **kwargs)
    values, spread = _map_arguments(name, fn, npsig, mgsig, args, kwargs)
    pos, kw = _call_arguments(list(mgsig.parameters.values()), values, spread)
    return fn(*pos, **kw)


def _map_arguments(name, fn, npsig, mgsig, args, kwargs):
    """NumPy's arguments bound to ``npsig``, mapped onto ``fn``'s parameters: (minigrad parameter
    name -> value, the names of minigrad's *args that take NumPy's *operands one by one)."""
    try:
        bound = npsig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    given = []  # (numpy name, value, numpy parameter)
    for k, v in bound.arguments.items():
        p = npsig.parameters[k]
        if p.kind is p.VAR_KEYWORD:
            given.extend((kk, vv, None) for kk, vv in v.items())
        else:
            given.append((k, v, p))
    mgparams = list(mgsig.parameters.values())
    values = {}  # minigrad parameter name -> value
    spread = set()  # minigrad's *args that take NumPy's *operands one by one
    data_pos = 0
    for k, v, p in given:
        if k == "out":
            continue
        if p is not None and (k in _DATA or p.kind is p.VAR_POSITIONAL):
            while data_pos < len(mgparams) and mgparams[data_pos].kind is mgparams[data_pos].KEYWORD_ONLY:
                data_pos += 1
            if data_pos >= len(mgparams):
                raise TypeError(f"{name}: too many operands for minigrad's {fn.__name__}")
            values[mgparams[data_pos].name] = v
            if mgparams[data_pos].kind is mgparams[data_pos].VAR_POSITIONAL:
                if p.kind is p.VAR_POSITIONAL:
                    spread.add(mgparams[data_pos].name)
            else:
                data_pos += 1
            continue
        target = next((n for n in (k,) + _ALIASES.get(k, ()) if n in mgsig.parameters and n not in values), None)
        if target is not None:
            if v is not _np._NoValue and not (v is None and p is not None and p.default is None
                                               and mgsig.parameters[target].kind is p.VAR_POSITIONAL):
                values[target] = v
            continue
        if p is not None and _is_default(v, p.default):
            continue  # a NumPy option left at its default
        raise TypeError(f"{name}: the argument {k}={v!r} is not supported on Tensors by minigrad's "
                        f"{fn.__name__}{mgsig}")
    return values, spread


def _call_arguments(mgparams, values, spread):
    """The positional and keyword arguments that pass ``values`` to the parameters ``mgparams``."""
    pos, kw = [], {}
    positional = True
    for p in mgparams:
        if p.name not in values:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional = False
            continue
        v = values[p.name]
        if p.kind is p.VAR_POSITIONAL:
            if p.name in spread:
                pos.extend(v)
            else:
                pos.append(v)  # a shape or a permutation: one tuple, as minigrad reads it
        elif p.kind is p.KEYWORD_ONLY or (not positional and p.kind is p.POSITIONAL_OR_KEYWORD):
            kw[p.name] = v
        elif p.kind is p.VAR_KEYWORD:
            kw.update(v)
        else:
            pos.append(v)
    return pos, kw


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufunc protocol: ``np.exp(t)``, ``np.add(a, t)``, ``ndarray * t`` run minigrad's op."""
    fn = _numpy_table().get(ufunc) if method == "__call__" else None
    if fn is None:
        if method != "__call__" and ufunc in _numpy_table():
            raise _unsupported(ufunc, method, why="(a ufunc method) is not supported on Tensors")
        raise _unsupported(ufunc, method)
    return _dispatch(ufunc, fn, inputs, kwargs)


def array_function(self, func, types, args, kwargs):
    """NumPy's function protocol: ``np.sum(t, axis=1)``, ``np.concatenate([a, t])`` run minigrad's op."""
    fn = _numpy_table().get(func)
    if fn is None:
        raise _unsupported(func)
    return _dispatch(func, fn, args, kwargs)
