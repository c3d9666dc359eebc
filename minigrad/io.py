"""``save`` / ``load``: named arrays in a ``.npz`` file, never pickle.

Nested containers (a model's ``state_dict``, an optimizer's, an epoch counter...) are
flattened into arrays named by dotted paths (``model.0.weight``); the shape of the tree
(which keys are dicts, lists, tuples; Python scalars and strings) is kept as JSON text in
one more array, ``__minigrad__``.

``save`` writes the zip itself, as ``numpy.savez`` would (one ``NAME.npy`` per array,
stored uncompressed, each by ``numpy.lib.format.write_array(allow_pickle=False)``), so
any key works (``savez`` keeps ``file`` and ``allow_pickle`` for itself) and an object
array is a TypeError. ``numpy.load`` reads the result.

``load`` does not call ``numpy.load``: it opens the zip with ``zipfile``, reads each
``.npy`` header with numpy's header readers, and refuses an object dtype
(``UnsafeFileError``; nothing is ever unpickled) and a declared shape that the bytes
present do not match, before reading any data. ``numpy.load(allow_pickle=False)`` would
allocate what a header declares first (a 24-byte entry claiming 800 MB takes 800 MB), lets
``BadZipFile``, ``EOFError``, ``KeyError``... out of damaged files, and calls any unknown
file "pickled data". ``load`` also checks the zip's entry count, since ``zipfile`` silently
drops the entries after a directory record with a damaged length; and it tells a pickle
from junk by parsing (never running) it with ``pickletools``. Every failure is a
``ValueError`` (``CorruptFileError`` or ``UnsafeFileError``) that starts ``load:`` and
names the file.

Two of those steps have no public API: reading a version 3.0 (utf-8) ``.npy`` header and
the entry count of the zip's end record. They use ``numpy.lib._format_impl._read_array_header``
(numpy 1.x: ``numpy.lib.format._read_array_header``) and ``zipfile._EndRecData`` where they
exist, and ``_npy_header_3_0`` / ``_zip_entry_count``, small parsers of the documented
formats, where they do not; tests/test_io.py loads files with each private name taken away.

>>> mg.save({"model": model.state_dict(), "epoch": 3}, "ckpt.npz")
>>> ckpt = mg.load("ckpt.npz")
>>> model.load_state_dict(ckpt["model"])
"""
from __future__ import annotations

import ast
import io
import json
import math
import numbers
import os
import pickletools
import struct
import tokenize
import zipfile
import zlib

import numpy as np

from . import backend as _be
from .errors import MinigradError
from .tensor import Tensor

__all__ = ["save", "load", "UnsafeFileError", "CorruptFileError"]

_META = "__minigrad__"
_FORMAT = "minigrad.save"
_VERSION = 1


class UnsafeFileError(MinigradError, ValueError):
    """The file holds Python objects (pickled data) that ``load`` refuses to read."""


class CorruptFileError(MinigradError, ValueError):
    """The file is not a readable ``.npz`` / ``.npy``: truncated, damaged, or something else."""


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
    # an explicit stack of (value, path, parent container, slot in it)
    root = {}
    stack = [(obj, (), root, "tree")]
    while stack:
        v, path, parent, key = stack.pop()
        name = _name_of(path)
        where = repr(name)
        node, arr = _leaf_node(v, name, where)
        if node is None:
            node = _container_node(v, path, where, stack)
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


def _name_of(path):
    return ".".join(str(k) for k in path) if path else "value"


def _leaf_node(v, name, where):
    """(node, host array or None) for a Tensor, an array or a scalar; (None, None) for anything else."""
    if isinstance(v, Tensor) or hasattr(v, "_grad_target"):
        if not isinstance(v, Tensor):
            raise TypeError(f"save: {where} is a sparse tensor; save its parts (indices, values) or .to_dense()")
        return {"t": "tensor", "k": name}, _host(v.data, where)
    if isinstance(v, np.ndarray) or _be.is_cupy_array(v):
        return {"t": "ndarray", "k": name}, _host(v, where)
    if isinstance(v, np.generic):
        return {"t": "npscalar", "k": name}, _host(np.asarray(v), where)
    if v is None or isinstance(v, (bool, str)):
        return {"t": "py", "v": v}, None
    if isinstance(v, numbers.Integral):
        return {"t": "py", "v": int(v)}, None
    if isinstance(v, numbers.Real):
        f = float(v)
        return ({"t": "py", "v": f} if np.isfinite(f) else {"t": "float", "v": repr(f)}), None
    return None, None


def _container_node(v, path, where, stack):
    """The node of a dict, list or tuple, its items pushed on ``stack`` to fill it; TypeError otherwise."""
    if isinstance(v, dict):
        items = [None] * len(v)
        for i, (k, sub) in enumerate(v.items()):
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"save: dict keys must be str or int, got {type(k).__name__} {k!r} at {where}")
            stack.append((sub, path + (k,), items, (i, k)))
        return {"t": "dict", "items": items}
    if isinstance(v, (list, tuple)):
        items = [None] * len(v)
        for i, sub in enumerate(v):
            stack.append((sub, path + (i,), items, i))
        return {"t": "list" if isinstance(v, list) else "tuple", "items": items}
    hint = " (save its state_dict() instead)" if hasattr(v, "state_dict") else ""
    raise TypeError(
        f"save: cannot save {type(v).__name__} at {where}{hint}; supported: Tensors, arrays, "
        "numbers, strings, None, and dicts / lists / tuples of them"
    )


def save(obj, path) -> None:
    """Write ``obj`` to ``path`` as a ``.npz`` of named host arrays (no pickle).

    Args:
        obj: a Tensor, an array, or nested dicts / lists / tuples of Tensors, arrays,
            numbers, strings and None (a ``state_dict()``, a checkpoint dict...).
        path: file name or path-like, written exactly as given whatever its suffix
            (``"ckpt.pt"`` writes ``ckpt.pt``; the content is an ``.npz`` archive), or a
            writable binary file object.

    Device arrays are copied to the host. Raises TypeError for anything else (a Module:
    save its ``state_dict()``).

    >>> mg.save(model.state_dict(), "model.npz")
    """
    tree, arrays = _flatten(obj)
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree})
    arrays[_META] = np.array(meta)  # a unicode string array, not an object array
    if isinstance(path, (str, os.PathLike)):
        with open(os.fspath(path), "wb") as f:  # exactly this name: mg.load(path) reads it back
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

    Args:
        path: file name, path-like, or a seekable binary file object.
        device: where Tensors go (default: the default device).

    A ``.npz`` written by something else comes back as a dict of its arrays by name; a bare
    ``.npy`` as its array. Never unpickles: a file with object arrays raises
    ``UnsafeFileError``. A file that is truncated, damaged or not an ``.npz`` / ``.npy`` at all
    raises ``CorruptFileError`` (a ``ValueError``) naming the file and what is wrong; every
    array's declared shape is checked against the bytes the file holds before anything is
    allocated.

    >>> model.load_state_dict(mg.load("model.npz"))
    """
    where = _file_name(path)
    if isinstance(path, (str, os.PathLike)):
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            raise FileNotFoundError(_missing(where)) from None
        with f:
            arrays = _read_file(f, where)
    else:
        arrays = _read_file(path, where)
    if not isinstance(arrays, dict):
        return arrays  # a bare .npy file: its array
    meta = arrays.pop(_META, None)
    if meta is None:
        return arrays
    if not (isinstance(meta, np.ndarray) and meta.shape == () and meta.dtype.kind == "U"):
        what = f"{meta.dtype} array of shape {meta.shape}" if isinstance(meta, np.ndarray) else "raw bytes"
        raise CorruptFileError(f"load: {where} has an unreadable {_META!r} entry: a {what}, expected one string")
    try:
        info = json.loads(str(meta))
        tree = info["tree"]
        if info.get("format") != _FORMAT:
            raise ValueError(f"format is {info.get('format')!r}, expected {_FORMAT!r}")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise CorruptFileError(f"load: {where} has an unreadable {_META!r} entry ({type(e).__name__}: {e})") from None
    return _build(tree, arrays, device, where)


_NPY_MAGIC = np.lib.format.MAGIC_PREFIX
_HEADER_CHARS = 10000  # numpy's default max_header_size, which its public 1.0 / 2.0 readers apply
_MAXDIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32  # NPY_MAXDIMS
_CHUNK = 1 << 20  # array data is read in pieces this big, so memory follows the bytes really there
_PICKLE_PROBE = 1 << 20  # how much of an unrecognised file is parsed (never run) to tell a pickle
# what zipfile / zlib / numpy's header parser raise on damaged input
_DAMAGE = (
    zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, struct.error, zlib.error,
    NotImplementedError, RuntimeError, OverflowError, KeyError, IndexError, RecursionError,
)  # fmt: skip


def _missing(where):
    """The message of a file ``load`` cannot find, with the likely reason when there is one."""
    msg = f"load: no file {where!r}"
    if os.path.exists(where + ".npz"):
        msg += (f"; there is {where + '.npz'!r}, which an older minigrad's save wrote for this name "
                f"(it added .npz): load that name, or rename it")
    else:
        folder = os.path.dirname(os.path.abspath(where))
        msg += f" (looked in {folder})" if os.path.isdir(folder) else f" (no folder {folder})"
    return msg


def _file_name(path):
    if isinstance(path, (str, os.PathLike)):
        return os.fspath(path)
    name = getattr(path, "name", None)
    return name if isinstance(name, str) else f"<{type(path).__name__}>"


def _why(e):
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _read_file(f, where):
    """The arrays of an .npz by entry name, or a bare .npy's array; dispatch on the first bytes."""
    start = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(start)
    magic = f.read(len(_NPY_MAGIC))
    f.seek(start)
    if magic.startswith((b"PK\x03\x04", b"PK\x05\x06")):  # what numpy.load takes for a zip
        return _read_npz(f, end, where)
    if magic == _NPY_MAGIC:
        return _read_npy(f, end - start, where, None, exact=False)
    if not magic:
        raise CorruptFileError(f"load: {where} is empty; expected an .npz archive (as mg.save writes) or an .npy")
    if _looks_pickled(f.read(_PICKLE_PROBE), end - start):
        raise UnsafeFileError(
            f"load: {where} holds pickled Python objects; minigrad never unpickles (that could run "
            "arbitrary code). Only files of plain numeric / string arrays can be loaded"
        )
    raise CorruptFileError(
        f"load: {where} is not an .npz or .npy file (it starts with {magic!r}); expected a zip archive "
        "of .npy arrays, as mg.save and numpy.savez write"
    )


def _looks_pickled(head, size):
    """Whether a file starting with ``head`` (``size`` bytes in all) is a pickle: its opcodes are
    parsed with pickletools, nothing is imported or run."""
    if size > len(head) and head[:1] == b"\x80" and 2 <= head[1] <= 5:
        return True  # too big to parse here; a protocol 2-5 header
    try:
        for _ in pickletools.genops(io.BytesIO(head)):  # stops at the STOP opcode
            pass
    except Exception:  # noqa: BLE001 - anything that is not a well-formed pickle
        return False
    return True


def _read_npz(f, end, where):
    try:
        zf = zipfile.ZipFile(f)
    except _DAMAGE as e:
        raise CorruptFileError(
            f"load: {where} starts like an .npz (zip) archive but its zip directory is missing or damaged; "
            f"the file is probably truncated ({_why(e)})"
        ) from None
    arrays = {}
    with zf:
        listed = _listed_entries(f)
        if listed is not None and listed != len(zf.infolist()):
            raise CorruptFileError(
                f"load: {where} has a damaged zip directory: it lists {listed} entries but {len(zf.infolist())} "
                "could be read"
            )
        for info in zf.infolist():
            name = info.filename
            key = name[:-4] if name.endswith(".npy") else name  # numpy's keys
            problem = None
            if info.header_offset + info.compress_size > end:
                problem = (
                    f"its {info.compress_size} bytes at offset {info.header_offset} run past the end of "
                    f"the file ({end} bytes); the file is probably truncated"
                )
            elif info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
                problem = f"stored uncompressed but sized {info.file_size} and {info.compress_size} bytes"
            if problem:
                raise CorruptFileError(f"load: {where} has a damaged entry {key!r}: {problem}")
            try:
                with zf.open(info) as fh:
                    if name.endswith(".npy"):
                        arrays[key] = _read_npy(fh, info.file_size, where, key)
                    else:  # numpy.load gives such an entry as its bytes
                        arrays[key] = bytes(_read_exactly(fh, info.file_size, where, key))
            except MinigradError:
                raise
            except _DAMAGE as e:
                raise CorruptFileError(f"load: {where} has a damaged entry {key!r} ({_why(e)})") from None
    return arrays


def _listed_entries(f):
    """How many entries the zip's end record says it has, or None. zipfile walks the directory by
    its byte size only, so one damaged length there silently drops the entries after it. zipfile has
    no public reader of that count: its private ``_EndRecData`` (the record zipfile itself opened
    the archive with), or ``_zip_entry_count`` where this Python has none."""
    end_record = getattr(zipfile, "_EndRecData", None)  # private, in every CPython 3 so far
    try:
        if end_record is None:
            return _zip_entry_count(f)
        record = end_record(f)
    except (OSError, ValueError, struct.error):
        return None  # zipfile itself has read this record: what it took is what is there
    return record[getattr(zipfile, "_ECD_ENTRIES_TOTAL", 4)] if record else None


# the zip records that end an archive (PKWARE's APPNOTE.TXT 4.3.14-4.3.16), little-endian
_END = struct.Struct("<4s4H2LH")  # signature, disk numbers (2), entries here, entries in all, size, offset, comment
_END64_LOCATOR = struct.Struct("<4sLQL")  # signature, disk, offset of the zip64 end record, disks
_END64 = struct.Struct("<4sQ2H2L4Q")  # signature, size, versions (2), disks (2), entries here, in all, size, offset


def _zip_entry_count(f):
    """The entry count in all of the zip in ``f``'s end of central directory record, or of the zip64
    record before it where a zip64 locator precedes it; None where there is no end record. Found
    where zipfile finds it: the file's last 22 bytes when they are a record with no comment, else
    the last record signature in the final 64 KiB + 22 bytes (the comment is at most 64 KiB)."""
    size = f.seek(0, os.SEEK_END)
    if size < _END.size:
        return None
    f.seek(size - _END.size)
    record = f.read(_END.size)
    at = size - _END.size
    if not (record[:4] == b"PK\x05\x06" and record[-2:] == b"\0\0"):  # not there, or with a comment
        at = max(size - (1 << 16) - _END.size, 0)
        f.seek(at)
        tail = f.read()
        found = tail.rfind(b"PK\x05\x06")
        record = tail[found : found + _END.size]
        if found < 0 or len(record) != _END.size:
            return None
        at += found
    count = _END.unpack(record)[4]
    if at >= _END64_LOCATOR.size + _END64.size:
        f.seek(at - _END64_LOCATOR.size - _END64.size)
        zip64 = f.read(_END64.size + _END64_LOCATOR.size)
        if zip64[_END64.size : _END64.size + 4] == b"PK\x06\x07" and zip64[:4] == b"PK\x06\x06":
            count = _END64.unpack(zip64[: _END64.size])[7]
    return count


def _read_npy_header(fh, what):
    """(shape, fortran_order, dtype) from an .npy header, read with numpy's parsers (version 3.0:
    numpy's private one, or ``_npy_header_3_0`` where this numpy has none)."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            return fmt.read_array_header_1_0(fh)
        if version == (2, 0):
            return fmt.read_array_header_2_0(fh)
        if version == (3, 0):  # utf-8 field names; numpy has no public reader for these
            numpy_reader = _numpy_header_reader()
            return numpy_reader(fh, version) if numpy_reader else _npy_header_3_0(fh)
        raise ValueError(f"unsupported .npy format version {version}")
    except (
        ValueError, TypeError, EOFError, SyntaxError, tokenize.TokenError, RecursionError, OverflowError, IndexError
    ) as e:
        # numpy re-parses a header that fails as Python 2 text, with tokenize; sorting the keys of
        # a header with str and bytes keys, for its own message, raises TypeError; descr_to_dtype
        # raises IndexError on a descr of ()
        raise CorruptFileError(f"load: {what} has a damaged .npy header ({_why(e)})") from None


def _numpy_header_reader():
    """numpy's private reader of every .npy header version, or None where this numpy has none:
    ``numpy.lib._format_impl._read_array_header`` (numpy 2), ``numpy.lib.format._read_array_header``
    (numpy 1.x). Looked up at each use, so the tests can take it away."""
    try:
        from numpy.lib._format_impl import _read_array_header
    except ImportError:
        _read_array_header = getattr(np.lib.format, "_read_array_header", None)
    return _read_array_header


def _npy_header_3_0(fh):
    """(shape, fortran_order, dtype) of a version 3.0 .npy header, after its magic: a 4-byte
    little-endian length, then that many bytes of utf-8 text, a Python dict literal with exactly
    the keys 'descr', 'fortran_order' and 'shape' (numpy's format docs). Checked as numpy checks
    it; ``ast.literal_eval`` builds literals and runs nothing. ValueError when malformed."""
    (length,) = struct.unpack("<I", _read_header_bytes(fh, 4))
    if length > 4 * _HEADER_CHARS:  # utf-8 takes at most 4 bytes a character; refused before reading
        raise ValueError(f"header of {length} bytes; numpy reads at most {_HEADER_CHARS} characters")
    text = _read_header_bytes(fh, length).decode("utf-8")
    if len(text) > _HEADER_CHARS:
        raise ValueError(f"header of {len(text)} characters; numpy reads at most {_HEADER_CHARS}")
    d = ast.literal_eval(text)
    if not isinstance(d, dict):
        raise ValueError(f"header is not a dictionary: {_short(d)}")
    if d.keys() != {"descr", "fortran_order", "shape"}:
        raise ValueError(f"header keys are {sorted(map(repr, d))}, expected 'descr', 'fortran_order', 'shape'")
    shape, fortran_order = d["shape"], d["fortran_order"]
    if not (isinstance(shape, tuple) and all(isinstance(n, int) for n in shape)):
        raise ValueError(f"shape is not valid: {_short(shape)}")
    if not isinstance(fortran_order, bool):
        raise ValueError(f"fortran_order is not a valid bool: {_short(fortran_order)}")
    try:
        dtype = np.lib.format.descr_to_dtype(d["descr"])
    except TypeError:
        raise ValueError(f"descr is not a valid dtype descriptor: {_short(d['descr'])}") from None
    return shape, fortran_order, dtype


def _read_header_bytes(fh, n):
    """Exactly ``n`` bytes of a header from ``fh``; ValueError at the end of the file."""
    data = b""
    while len(data) < n:
        chunk = fh.read(n - len(data))
        if not chunk:
            raise ValueError(f"EOF: reading array header, expected {n} bytes got {len(data)}")
        data += chunk
    return data


def _read_npy(fh, size, where, entry, exact=True):
    """One .npy array from ``fh``, which holds ``size`` bytes from here; the header's shape x itemsize
    must account for exactly the bytes after the header (at most them, where not ``exact``: a bare
    .npy stream may go on with more), checked before anything is allocated."""
    what = where if entry is None else f"{where} entry {entry!r}"
    start = fh.tell()
    shape, fortran_order, dtype = _read_npy_header(fh, what)
    if dtype.hasobject:
        raise UnsafeFileError(
            f"load: {what} is an object array (pickled Python objects); "
            "minigrad never unpickles (that could run arbitrary code)"
        )
    if dtype.subdtype is not None:  # numpy never writes one: an array's subarray axes are in its shape
        raise CorruptFileError(f"load: {what} has a damaged .npy header (its dtype {dtype} is a subarray)")
    held = size - (fh.tell() - start)
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if min(shape, default=0) < 0 or count > np.iinfo(np.intp).max or nbytes > held or (exact and nbytes < held):
        raise CorruptFileError(
            f"load: {what} declares shape {shape} of {dtype} ({nbytes} bytes of data) but holds {held} bytes; "
            "the file is truncated or damaged"
        )
    if len(shape) > _MAXDIMS:
        raise CorruptFileError(f"load: {what} declares {len(shape)} dimensions; numpy arrays have at most {_MAXDIMS}")
    if dtype.itemsize == 0:
        return np.empty(shape, dtype)  # no bytes to read or allocate
    a = np.frombuffer(_read_exactly(fh, nbytes, where, entry, exact), dtype=dtype, count=count)
    return a.reshape(shape[::-1]).transpose() if fortran_order else a.reshape(shape)


def _read_exactly(fh, nbytes, where, entry, exact=True):
    """``nbytes`` bytes from ``fh`` (and nothing after them where ``exact``), read in chunks so that
    memory grows with what is really there, not with what a header claims."""
    buf = bytearray()
    while len(buf) < nbytes:
        chunk = fh.read(min(_CHUNK, nbytes - len(buf)))
        if not chunk:
            break
        buf += chunk
    if len(buf) != nbytes or (exact and fh.read(1)):  # the extra read also runs zipfile's CRC check
        what = where if entry is None else f"{where} entry {entry!r}"
        raise CorruptFileError(f"load: {what} should hold {nbytes} bytes of data but holds a different amount")
    return buf


def _build(tree, arrays, device, where):
    """Rebuild the nested object from the JSON tree (iteratively), checking every node."""

    def bad(msg):
        return CorruptFileError(f"load: {where} has a malformed {_META!r} index: {msg}")

    result = [None]
    stack = [(tree, result, 0)]
    while stack:
        node, parent, slot = stack.pop()
        if not isinstance(node, dict):
            raise bad(f"a node is {type(node).__name__} {_short(node)}, expected an object with a 't' field")
        t = node.get("t")
        if t in ("tensor", "ndarray", "npscalar"):
            v = _array_value(node, t, arrays, device, where, bad)
        elif t in ("py", "float"):
            v = _scalar_value(node, t, bad)
        elif t in ("dict", "list", "tuple"):
            v = _container_value(node, t, stack, bad)
        else:
            raise bad(f"unknown entry kind {_short(t)}")
        parent[slot] = v
    return _untuple(result[0])


def _array_value(node, t, arrays, device, where, bad):
    """The Tensor, array or NumPy scalar a "tensor" / "ndarray" / "npscalar" node names."""
    k = node.get("k")
    if not isinstance(k, str):
        raise bad(f"a {t} node names its array by {_short(k)}, expected a string")
    if k not in arrays:
        raise CorruptFileError(f"load: {where} is missing the array {k!r} its index names")
    a = arrays[k]
    if not isinstance(a, np.ndarray):
        raise CorruptFileError(f"load: {where} entry {k!r} is not an .npy array")
    if t == "tensor":
        if a.dtype.kind in "OUSV":
            raise CorruptFileError(f"load: {where} entry {k!r} is a {a.dtype} array, which cannot be a Tensor")
        return Tensor(a, device=device)
    if t == "npscalar":
        if a.ndim != 0:
            raise CorruptFileError(f"load: {where} entry {k!r} has shape {a.shape}, expected a scalar ()")
        return a[()]
    return a


def _scalar_value(node, t, bad):
    """The Python value of a "py" node, or the float of a "float" node (nan, inf)."""
    v = node.get("v")
    if t == "py":
        if not (v is None or isinstance(v, (bool, int, float, str))):
            raise bad(f"a 'py' node holds {_short(v)}, expected a number, string, bool or null")
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        raise bad(f"a 'float' node holds {_short(v)}, expected a float's text such as 'nan'") from None


def _container_value(node, t, stack, bad):
    """An empty dict / list / tuple box for a container node, its items pushed on ``stack`` to fill it."""
    items = node.get("items")
    if t == "dict":
        if not isinstance(items, list):
            raise bad(f"a dict node's 'items' is {_short(items)}, expected a list of [key, node] pairs")
        v = {}
        for item in items:
            if not (isinstance(item, list) and len(item) == 2):
                raise bad(f"a dict item is {_short(item)}, expected a [key, node] pair")
            k = item[0]
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise bad(f"a dict key is {_short(k)}, expected a string or an integer")
            v[k] = None
        for k, sub in items:
            stack.append((sub, v, k))
        return v
    if not isinstance(items, list):
        raise bad(f"a {t} node's 'items' is {_short(items)}, expected a list of nodes")
    v = (_TupleBox if t == "tuple" else list)([None] * len(items))
    for i, sub in enumerate(items):
        stack.append((sub, v, i))
    return v


def _short(v, n=60):
    r = repr(v)
    return r if len(r) <= n else r[: n - 3] + "..."


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
