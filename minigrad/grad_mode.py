"""Grad mode, per thread: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``is_grad_enabled``. Each block sets this thread's Mode (``_state``) and puts the old one back
on exit, so overlapping blocks in two threads never change each other's recording."""
from __future__ import annotations

import functools

from . import _state


def is_grad_enabled() -> bool:
    """Whether ops record the tape now, in this thread."""
    return _state.get().grad


class _GradMode:
    _value = True

    def __new__(cls, fn=None):
        # ``@mg.no_grad`` (no parentheses) decorates directly, as PyTorch allows
        self = super().__new__(cls)
        return self if fn is None else self(fn)

    def __enter__(self):
        self._tokens = getattr(self, "_tokens", [])
        self._tokens.append(_state.set_grad(self._value))
        return self

    def __exit__(self, *exc):
        _state.reset(self._tokens.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)

        return wrapper


class no_grad(_GradMode):
    """Context manager / decorator: ops run without recording the tape (in this thread).

    >>> with mg.no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    _value = False


class enable_grad(_GradMode):
    """Context manager / decorator: ops record the tape (inside ``no_grad`` too)."""

    _value = True


class set_grad_enabled(_GradMode):
    """``with mg.set_grad_enabled(False):`` — recording on or off, chosen by a value."""

    def __new__(cls, mode: bool):
        self = object.__new__(cls)
        self._value = bool(mode)
        return self
