"""Explicit, opt-in control of the host BLAS thread count.

minigrad never changes the host process by itself: importing it, or running any op, leaves
BLAS's threads, the allocator and the garbage collector as the user set them. Where fewer
BLAS threads help (tiny models on a few cores), ask for it yourself:

>>> mg.set_num_threads(1)      # NumPy's BLAS (OpenBLAS, MKL, BLIS...) on one thread
>>> mg.get_num_threads()
1

Both use threadpoolctl (``pip install threadpoolctl``, an optional dependency).
"""
from __future__ import annotations

__all__ = ["set_num_threads", "get_num_threads"]

_limiter = None  # the threadpoolctl limit in force (kept alive: the limit holds while it lives)


def _threadpoolctl(op):
    try:
        import threadpoolctl  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError as e:
        raise ImportError(
            f"{op}: controlling BLAS threads needs threadpoolctl, which is not installed: "
            "`pip install threadpoolctl` (or set OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before starting Python)"
        ) from e
    return threadpoolctl


def set_num_threads(n: int) -> None:
    """Set the number of threads the host BLAS that NumPy uses may run (process-wide, until changed).

    Args:
        n: a positive int.

    Raises:
        ImportError: threadpoolctl is not installed (the message says how to install it).
        ValueError: ``n`` is not a positive int.
    """
    global _limiter
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    tpc = _threadpoolctl("set_num_threads")
    _limiter = tpc.threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    """The number of threads the host BLAS that NumPy uses runs now."""
    tpc = _threadpoolctl("get_num_threads")
    blas = [i for i in tpc.threadpool_info() if i.get("user_api") == "blas"]
    blas.sort(key=lambda i: "numpy" not in i.get("filepath", ""))  # NumPy's own BLAS first
    if not blas:
        raise RuntimeError("get_num_threads: threadpoolctl found no BLAS library loaded by NumPy")
    return int(blas[0]["num_threads"])
