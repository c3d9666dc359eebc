"""``save`` / ``load``: named arrays in a ``.npz`` file, never pickle.

Nested containers (a model's ``state_dict``, an optimizer's, an epoch counter...) are
flattened into arrays named by dotted paths (``model.0.weight``); the shape of the tree
(which keys are dicts, lists, tuples; Python scalars and strings) is kept as JSON text in
one more array. Loading uses ``numpy.load(allow_pickle=False)``: a file holding object
arrays is refused, so loading an untrusted file never runs code.

>>> mg.save({"model": model.state_dict(), "epoch": 3}, "ckpt.npz")
>>> ckpt = mg.load("ckpt.npz")
>>> model.load_state_dict(ckpt["model"])
"""
from __future__ import annotations

import json
import numbers
import os
import zipfile

import numpy as np

from . import backend as _be
from .errors import MinigradError
from .tensor import Tensor

__all__ = ["save", "load", "UnsafeFileError"]

_META = "__minigrad__"
_FORMAT = "minigrad.save"
_VERSION = 1


class UnsafeFileError(MinigradError, ValueError):
    """The file holds Python objects (pickled data) that ``load`` refuses to read."""


def _host(a, where):
    a = _be.to_numpy(a)
    if a.dtype.hasobject:
        raise TypeError(
            f"save: {where} is an array of Python objects (dtype {a.dtype}); only numeric, bool and "
            "string arrays can be saved (minigrad never pickles)"
        )
    return a


def _flatten(obj):
    """(tree description for JSON, {dotted name: host array})."""
    arrays: dict[str, np.ndarray] = {}

    def name_of(path):
        return ".".join(str(k) for k in path) if path else "value"

    # an explicit stack of (value, path, parent container, slot in it)
    root = {}
    stack = [(obj, (), root, "tree")]
    while stack:
        v, path, parent, key = stack.pop()
        where = repr(name_of(path))
        if isinstance(v, Tensor) or hasattr(v, "_sparse_values_for_grad"):
            if not isinstance(v, Tensor):
                raise TypeError(f"save: {where} is a sparse tensor; save its parts (indices, values) or .to_dense()")
            node = {"t": "tensor", "k": name_of(path)}
            arr = _host(v.data, where)
        elif isinstance(v, np.ndarray) or _be.is_cupy_array(v):
            node = {"t": "ndarray", "k": name_of(path)}
            arr = _host(v, where)
        elif isinstance(v, np.generic):
            node = {"t": "npscalar", "k": name_of(path)}
            arr = _host(np.asarray(v), where)
        elif v is None or isinstance(v, (bool, str)):
            node, arr = {"t": "py", "v": v}, None
        elif isinstance(v, numbers.Integral):
            node, arr = {"t": "py", "v": int(v)}, None
        elif isinstance(v, numbers.Real):
            f = float(v)
            node, arr = ({"t": "py", "v": f} if np.isfinite(f) else {"t": "float", "v": repr(f)}), None
        elif isinstance(v, dict):
            items = [None] * len(v)
            node = {"t": "dict", "items": items}
            arr = None
            for i, (k, sub) in enumerate(v.items()):
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise TypeError(f"save: dict keys must be str or int, got {type(k).__name__} {k!r} at {where}")
                stack.append((sub, path + (k,), items, (i, k)))
        elif isinstance(v, (list, tuple)):
            items = [None] * len(v)
            node = {"t": "list" if isinstance(v, list) else "tuple", "items": items}
            arr = None
            for i, sub in enumerate(v):
                stack.append((sub, path + (i,), items, i))
        else:
            hint = " (save its state_dict() instead)" if hasattr(v, "state_dict") else ""
            raise TypeError(
                f"save: cannot save {type(v).__name__} at {where}{hint}; supported: Tensors, arrays, "
                "numbers, strings, None, and dicts / lists / tuples of them"
            )
        if arr is not None:
            k = node["k"]
            if k in arrays or k == _META:
                raise ValueError(
                    f"save: two entries flatten to the same name {k!r}; rename a key (keys are joined with '.')"
                )
            arrays[k] = arr
        # attach to parent
        if key == "tree":
            parent["tree"] = node
        elif isinstance(key, tuple):  # dict item (index, key)
            parent[key[0]] = [key[1], node]
        else:
            parent[key] = node
    return root["tree"], arrays


def save(obj, path) -> None:
    """Write ``obj`` to ``path`` as a ``.npz`` of named host arrays (no pickle).

    Args:
        obj: a Tensor, an array, or nested dicts / lists / tuples of Tensors, arrays,
            numbers, strings and None (a ``state_dict()``, a checkpoint dict...).
        path: file name or path-like; NumPy adds ``.npz`` when missing.

    Device arrays are copied to the host. Raises TypeError for anything else (a Module:
    save its ``state_dict()``).

    >>> mg.save(model.state_dict(), "model.npz")
    """
    tree, arrays = _flatten(obj)
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree})
    arrays[_META] = np.array(meta)  # a unicode string array, not an object array
    if isinstance(path, (str, os.PathLike)):
        p = os.fspath(path)
        if not p.endswith(".npz"):
            p += ".npz"
        with open(p, "wb") as f:
            _write_npz(f, arrays)
    else:  # a file object
        _write_npz(path, arrays)


def _write_npz(f, arrays):
    """What ``np.savez`` writes (one ``NAME.npy`` per array in a zip), with pickling switched off
    and any key allowed (``np.savez(f, **arrays)`` would take a key "file" or "allow_pickle"
    for its own arguments)."""
    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, a in arrays.items():
            with zf.open(name + ".npy", mode="w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(a), allow_pickle=False)


def load(path, device=None):
    """Read what ``save`` wrote: the same nesting, Tensors as Tensors (on ``device`` or the
    default device), arrays as NumPy arrays, scalars and strings as themselves.

    A ``.npz`` written by something else comes back as a dict of its arrays by name.
    Never unpickles: a file with object arrays raises ``UnsafeFileError``.

    >>> model.load_state_dict(mg.load("model.npz"))
    """
    try:
        npz = np.load(path, allow_pickle=False)
    except ValueError as e:
        if "pickle" in str(e).lower():
            raise UnsafeFileError(
                f"load: {path!s} holds pickled Python objects; minigrad never unpickles (that could run "
                "arbitrary code). Only files of plain numeric / string arrays can be loaded"
            ) from None
        raise
    if not isinstance(npz, np.lib.npyio.NpzFile):
        return npz  # a bare .npy file: its array
    with npz:
        try:
            names = list(npz.files)
            arrays = {}
            for k in names:
                arrays[k] = npz[k]
        except ValueError as e:
            if "pickle" in str(e).lower():
                raise UnsafeFileError(
                    f"load: {path!s} holds an object array (pickled Python objects) in entry {k!r}; "
                    "minigrad never unpickles (that could run arbitrary code)"
                ) from None
            raise
    meta = arrays.pop(_META, None)
    if meta is None:
        return arrays
    try:
        info = json.loads(str(meta))
        tree = info["tree"]
        if info.get("format") != _FORMAT:
            raise ValueError("not a minigrad file")
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise ValueError(f"load: {path!s} has an unreadable {_META!r} entry ({e})") from None
    try:
        return _build(tree, arrays, device, path)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"load: {path!s} has a malformed {_META!r} index ({type(e).__name__}: {e})") from None


def _build(tree, arrays, device, path):
    """Rebuild the nested object from the JSON tree (iteratively)."""
    result = [None]
    stack = [(tree, result, 0)]
    while stack:
        node, parent, slot = stack.pop()
        t = node["t"]
        if t in ("tensor", "ndarray", "npscalar"):
            k = node["k"]
            if k not in arrays:
                raise ValueError(f"load: {path!s} is missing the array {k!r} its index names")
            a = arrays[k]
            v = Tensor(a, device=device) if t == "tensor" else a[()] if t == "npscalar" else a
        elif t == "py":
            v = node["v"]
        elif t == "float":
            v = float(node["v"])
        elif t == "dict":
            v = {}
            for k, _ in node["items"]:
                v[k] = None
            for k, sub in node["items"]:
                stack.append((sub, v, k))
        elif t in ("list", "tuple"):
            v = (_TupleBox if t == "tuple" else list)([None] * len(node["items"]))
            for i, sub in enumerate(node["items"]):
                stack.append((sub, v, i))
        else:
            raise ValueError(f"load: {path!s}: unknown entry kind {t!r}")
        parent[slot] = v
    return _untuple(result[0])


class _TupleBox(list):
    """A list to be turned into a tuple once its items are filled."""


def _untuple(obj):
    # tuples are filled as lists first; convert bottom-up without recursion
    order = []
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            order.append(o)
            stack.extend(o.values())
        elif isinstance(o, list):
            order.append(o)
            stack.extend(o)
    for o in reversed(order):
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, _TupleBox):
                    o[k] = tuple(v)
        else:
            for i, v in enumerate(o):
                if isinstance(v, _TupleBox):
                    o[i] = tuple(v)
    return tuple(obj) if isinstance(obj, _TupleBox) else obj
