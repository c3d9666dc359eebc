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


class inference_mode(_GradMode):
    """``with mg.inference_mode():`` — PyTorch's inference mode: no tape is recorded, as in
    ``no_grad`` (minigrad has no separate inference tensors; results are ordinary tensors that
    do not require grad). ``inference_mode(False)`` records as usual. Also a decorator.

    >>> with mg.inference_mode():
    ...     y = model(x)       # y.requires_grad is False
    """

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @mg.inference_mode without parentheses
            return cls()(mode)
        self = object.__new__(cls)
        self._value = not bool(mode)
        return self

    def __call__(self, fn):
        value = self._value

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with inference_mode(not value):
                return fn(*a, **k)

        return wrapper
