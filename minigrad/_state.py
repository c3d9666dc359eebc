"""Per-thread modes: whether ops record the tape, and the active profile.

Each is a ``ContextVar``: ``no_grad()``, ``enable_grad()``, ``backward()`` and ``profile()``
set a value and put the old one back on exit (a token reset), so overlapping blocks in two
threads (or two asyncio tasks) never change each other's recording. A new thread starts
with the defaults (recording on, no profile), as PyTorch's grad mode does.
"""
from __future__ import annotations

from contextvars import ContextVar

_grad: ContextVar[bool] = ContextVar("minigrad_grad_enabled", default=True)
_profiler: ContextVar = ContextVar("minigrad_profiler", default=None)

grad_enabled = _grad.get   # whether ops record the tape in this thread
profiler = _profiler.get   # the active Profile of this thread, or None


def set_grad(enabled: bool):
    """Switch recording for this thread; returns the token ``reset_grad`` takes."""
    return _grad.set(bool(enabled))


def reset_grad(token) -> None:
    _grad.reset(token)


def set_profiler(p):
    """Make ``p`` (a Profile or None) this thread's active profile; returns the token."""
    return _profiler.set(p)


def reset_profiler(token) -> None:
    _profiler.reset(token)
