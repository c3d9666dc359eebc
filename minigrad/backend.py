"""Which array module an array belongs to, device strings, and moving data.

This is the only module that imports CuPy, and only when a CUDA device is
asked for. Every op finds its array module from its inputs with
``array_module(*arrays)`` and uses functions NumPy and CuPy both have.
"""
from __future__ import annotations

import os
import sys

import numpy as np

_cupy = None   # the cupy module (or the CPU stand-in) once a CUDA device has been asked for
_cupyx = None  # its companion namespace, for scatter_add
_n_gpus = 0    # how many CUDA devices it sees


def _import_cupy():
    global _cupy, _cupyx, _n_gpus
    if _cupy is None:
        try:
            import cupy  # noqa: PLC0415 - optional dependency, imported on demand
            import cupyx  # noqa: PLC0415
        except ImportError as e:
            raise RuntimeError(
                "device 'cuda' needs CuPy, which is not installed: `pip install minigrad[gpu]` "
                f"(or the cupy-cudaXX wheel matching your CUDA) on a machine with an NVIDIA GPU ({e})"
            ) from e
        try:
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # pragma: no cover - depends on the machine
            raise RuntimeError(f"device 'cuda': CuPy is installed but no GPU is usable ({e})") from e
        if n == 0:  # pragma: no cover
            raise RuntimeError("device 'cuda': CuPy is installed but no GPU was found")
        _cupy, _cupyx, _n_gpus = cupy, cupyx, n
    return _cupy


def use_fake_cupy(enable: bool = True) -> None:
    """Testing aid: treat the CPU stand-in ``minigrad._fakecupy`` as CuPy (device 'cuda:0').

    ``enable=False`` forgets it; the next CUDA request imports the real CuPy.
    """
    global _cupy, _cupyx, _n_gpus
    if enable:
        from . import _fakecupy  # noqa: PLC0415

        _cupy, _cupyx, _n_gpus = _fakecupy, _fakecupy.cupyx, _fakecupy.cuda.runtime.getDeviceCount()
    else:
        _cupy = _cupyx = None


def is_cupy_array(a) -> bool:
    return _cupy is not None and isinstance(a, _cupy.ndarray)


def array_module(*arrays):
    """The array module (numpy or cupy) of the given arrays; NumPy for scalars.

    Raises a RuntimeError naming both devices when host and device arrays are mixed.
    """
    xp = None
    first = None
    for a in arrays:
        if _cupy is not None and isinstance(a, _cupy.ndarray):
            m = _cupy
        elif isinstance(a, np.ndarray):
            m = np
        else:
            continue
        if xp is None:
            xp, first = m, a
        elif xp is not m:
            raise RuntimeError(
                f"expected all arrays on one device, got {device_of(first)} and {device_of(a)}"
            )
    return np if xp is None else xp


def device_of(a) -> str:
    """The device string of a backend array: 'cpu' or 'cuda:N'."""
    if is_cupy_array(a):
        return f"cuda:{a.device.id}"
    return "cpu"


def parse_device(device) -> str:
    """Normalise a device spec to 'cpu' or 'cuda:N'."""
    if device is None:
        return _default_device
    d = str(device)
    if d == "cpu":
        return "cpu"
    if d == "cuda":
        return "cuda:0"
    if d.startswith("cuda:") and d[5:].isdigit():
        return d
    raise ValueError(f"unknown device {device!r}: expected 'cpu', 'cuda' or 'cuda:N'")


_default_device = "cpu"


def set_default_device(device) -> None:
    """Device used by factories when no ``device=`` is given."""
    global _default_device
    d = parse_device(device)
    if d != "cpu":
        _import_cupy()
    _default_device = d


def get_default_device() -> str:
    return _default_device


def xp_for(device: str):
    """The array module for a normalised device string."""
    if device == "cpu":
        return np
    cp = _import_cupy()
    _device_index(device)
    return cp


def _device_index(device: str) -> int:
    """N of 'cuda:N', checked against the GPUs present."""
    idx = int(device.split(":")[1])
    if idx >= _n_gpus:
        raise ValueError(
            f"device {device!r} does not exist: this machine has {_n_gpus} CUDA device(s) (cuda:0..cuda:{_n_gpus - 1})"
        )
    return idx


def to_device(a, device: str):
    """Move array ``a`` to ``device`` explicitly (a copy when the device changes)."""
    if device == "cpu":
        if is_cupy_array(a):
            return a.get()
        return a
    cp = _import_cupy()
    idx = _device_index(device)
    if isinstance(a, cp.ndarray):
        if a.device.id == idx:
            return a
        with cp.cuda.Device(idx):
            return cp.array(a, copy=True)  # peer copy onto the current device
    with cp.cuda.Device(idx):
        return cp.asarray(a)  # host -> device copy


def to_numpy(a) -> np.ndarray:
    """A host NumPy array for ``a`` (explicit device-to-host copy for CuPy)."""
    if is_cupy_array(a):
        return a.get()
    return np.asarray(a)


# dtypes cupyx.scatter_add takes (CUDA atomicAdd); others are routed through one of these
_ATOMIC_ADD = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.uint64, np.float16, np.float32, np.float64))


def index_add(xp, target, index, values) -> None:
    """target[index] += values, accumulating repeated indices (NumPy and CuPy).

    NumPy: ``np.add.at``. CuPy: ``cupyx.scatter_add`` (``cupy.scatter_add`` was removed in
    CuPy 8), which takes only atomicAdd's dtypes: int64 adds as uint64 (the same bits in two's
    complement), small ints and bool through int32, complex as two real halves.
    """
    if xp is np:
        np.add.at(target, index, values)
        return
    dt = target.dtype
    if dt in _ATOMIC_ADD:
        _cupyx.scatter_add(target, index, values)
    elif dt == np.int64:
        v = xp.asarray(values).astype(np.int64, copy=False)
        _cupyx.scatter_add(target.view(np.uint64), index, v.view(np.uint64))
    elif dt.kind == "c":
        v = xp.asarray(values)
        for part, unit in ((v.real, 1), (v.imag, 1j)):
            acc = xp.zeros(target.shape, dtype=part.dtype)
            index_add(xp, acc, index, part)
            target += acc * unit
    else:  # bool, int8/16, uint8/16: accumulate in 32 bits, then add once (wraps like NumPy)
        acc = xp.zeros(target.shape, dtype=np.uint32 if dt.kind == "u" else np.int32)
        _cupyx.scatter_add(acc, index, xp.asarray(values).astype(acc.dtype))
        if dt == np.bool_:
            target |= acc != 0
        else:
            target += acc.astype(dt)


def bincount_add(xp, index, weights, minlength):
    """Sum ``weights`` (1-D or 2-D rows) into ``minlength`` bins given by ``index``."""
    if weights.ndim == 1:
        w = weights
        if w.dtype.kind == "c":
            return bincount_add(xp, index, w.real, minlength) + 1j * bincount_add(xp, index, w.imag, minlength)
        if w.dtype.kind in "biu":
            out = xp.zeros(minlength, dtype=w.dtype)
            index_add(xp, out, index, w)
            return out
        return xp.bincount(index, weights=w, minlength=minlength).astype(w.dtype, copy=False)
    out = xp.zeros((minlength,) + weights.shape[1:], dtype=weights.dtype)
    index_add(xp, out, index, weights)
    return out


# -- host matmul: how many of BLAS's threads a product gets ---------------------------------------
#
# OpenBLAS (the BLAS in NumPy's Linux and Windows wheels) shares out products of more than
# 2^18 multiply-adds among all its threads. Two choices here do better, measured on two cores:
#
# - Small products, up to _ONE_THREAD (2^21) multiply-adds, run on one BLAS thread: a
#   minibatch layer's (64, 64) @ (64, 128) takes 12.6 us on one thread and 21.2 on two, and the
#   elementwise op that reads a result half-written by another core runs up to 2x slower
#   (its cache lines move across). From 4 x 2^20 on, two threads win (1.5-2x).
# - A stacked product such as (32, 128, 64) @ (32, 64, 128), of at least _SPLIT_STACK
#   multiply-adds, is computed by OpenBLAS one matrix at a time, each too small to share well:
#   on two cores it runs 1.2x slower than on one core per half of the batch. So it is split by
#   batch across as many Python threads as BLAS has (NumPy lets go of the GIL in matmul), each
#   on one BLAS thread, when the batch keeps every thread busy (a multiple of the threads, or
#   at least four each).
#
# Every result is the same product as before. The BLAS thread count is process-wide, so it is
# set back as soon as the product is done. MINIGRAD_BLAS_POLICY=0 turns both off; where
# NumPy's BLAS is not an OpenBLAS whose thread count can be set (MKL, Apple's Accelerate),
# `matmul` is plain `np.matmul`.

_BLAS_SMALL = 1 << 18   # OpenBLAS runs products up to this size on one thread by itself
_ONE_THREAD = 1 << 21
_SPLIT_STACK = 1 << 23
_openblas = None  # (set_num_threads, get_num_threads) of NumPy's OpenBLAS; False: none / off
_pool = None      # (executor, workers) for split stacked products, made on first use


def _find_openblas():
    """The thread-count functions of the OpenBLAS NumPy loaded, or False."""
    import ctypes  # noqa: PLC0415
    import glob  # noqa: PLC0415

    if os.environ.get("MINIGRAD_BLAS_POLICY", "1").strip() == "0":
        return False
    here = os.path.dirname(np.__file__)
    for pattern in (os.path.join(os.path.dirname(here), "numpy.libs", "*openblas*"),
                    os.path.join(here, ".dylibs", "*openblas*")):
        for path in sorted(glob.glob(pattern)):
            try:
                lib = ctypes.CDLL(path)  # already loaded by NumPy: the same library, not a copy
            except OSError:
                continue
            for name in ("scipy_openblas_%s_num_threads64_", "scipy_openblas_%s_num_threads",
                         "openblas_%s_num_threads64_", "openblas_%s_num_threads"):
                setter = getattr(lib, name % "set", None)
                getter = getattr(lib, name % "get", None)
                if setter is not None and getter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    return setter, getter
    return False


def _forget_pool():
    global _pool
    _pool = None  # a forked child has none of its parent's threads


if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=_forget_pool)


def _split_stack(a, b, threads, out_dtype):
    """a @ b for (B, M, K) @ (B, K, N), the batch split across ``threads`` threads."""
    global _pool
    if _pool is None or _pool[1] < threads - 1:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        _pool = (ThreadPoolExecutor(threads - 1, thread_name_prefix="minigrad-matmul"), threads - 1)
    n = a.shape[0]
    out = np.empty((n, a.shape[1], b.shape[2]), dtype=out_dtype)
    cuts = [n * i // threads for i in range(threads + 1)]
    jobs = [_pool[0].submit(np.matmul, a[i:j], b[i:j], out=out[i:j]) for i, j in zip(cuts[1:-1], cuts[2:], strict=True)]
    np.matmul(a[:cuts[1]], b[:cuts[1]], out=out[:cuts[1]])
    for job in jobs:
        job.result()
    return out


def matmul(a, b):
    """``a @ b`` for backend arrays, with the host's BLAS threads shared out as above."""
    global _openblas
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return array_module(a, b).matmul(a, b)
    if a.ndim < 2 or b.ndim < 2:
        return a @ b
    work = max(a.size * b.shape[-1], b.size * a.shape[-2])  # multiply-adds
    if work <= _BLAS_SMALL or a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return a @ b
    if _openblas is None:
        _openblas = _find_openblas()
    if not _openblas:
        return a @ b
    setter, getter = _openblas
    before = getter()
    if before <= 1:
        return a @ b
    if work <= _ONE_THREAD:
        setter(1)
        try:
            return a @ b
        finally:
            setter(before)
    if work < _SPLIT_STACK or a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        return a @ b
    n = a.shape[0]
    if n < before or (n % before and n < 4 * before):
        return a @ b  # threads that would sit idle for part of the split
    setter(1)
    try:
        return _split_stack(a, b, before, np.result_type(a, b))
    finally:
        setter(before)


# -- the host allocator ---------------------------------------------------------------------------
#
# glibc's malloc serves an array of more than 128 KiB with a fresh mmap, and when such an array
# is freed it raises that threshold (up to 32 MiB) and its heap-trimming threshold (to twice
# that). A training step frees all its arrays at its end: when they add up to more than the
# trimming threshold, glibc gives the pages back to the OS and the next step faults every one of
# them in again. An attention-scores step with (32, 128, 128) float32 arrays, alone in its
# process, took 4.2 ms with 1504 page faults; in a process where PyTorch had run once (its own
# large frees had raised both thresholds), 2.1 ms with none. So on import, minigrad starts glibc
# where its own dynamic thresholds end up: arrays up to 32 MiB come from the heap, and up to
# 64 MiB of freed heap is kept for the next step. It leaves alone a process whose owner set
# glibc's malloc variables (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_,
# MALLOC_MMAP_MAX_ or GLIBC_TUNABLES); MINIGRAD_MALLOC=0 turns it off.

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 64 << 20
_USER_MALLOC_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_",
                     "GLIBC_TUNABLES")


def _glibc():
    """The C library of this process when it is glibc (it has mallopt), else None."""
    import ctypes  # noqa: PLC0415

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    if not hasattr(libc, "gnu_get_libc_version"):  # glibc only: musl's mallopt does nothing
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return libc


def _tune_malloc(environ=os.environ, find_libc=_glibc) -> bool:
    """Set glibc's mmap and trim thresholds as above; True when they were set."""
    if environ.get("MINIGRAD_MALLOC", "1").strip() == "0" or any(k in environ for k in _USER_MALLOC_VARS):
        return False
    if not sys.platform.startswith("linux"):
        return False
    libc = find_libc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


MALLOC_TUNED = _tune_malloc()  # whether glibc's thresholds were set at import
