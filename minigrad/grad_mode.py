"""Grad mode, per thread: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` and
``is_grad_enabled``. Each block sets this thread's Mode (``_state``) and puts the old one back
on exit, so overlapping blocks in two threads never change each other's recording. A plain call
``set_grad_enabled(False)`` (PyTorch's) switches this thread's Mode until switched back; other
threads keep theirs."""
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

    def _fresh(self):
        """A new block of this kind, for one call of a decorated function."""
        return self.__class__()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self._fresh():
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
    """Recording on or off, chosen by a value, as PyTorch's: a plain call
    ``mg.set_grad_enabled(False)`` switches this thread's recording until it is switched back;
    ``with mg.set_grad_enabled(False):`` switches it for the block and puts the old mode back on
    exit; ``@mg.set_grad_enabled(False)`` does so around each call of the function.

    The call itself switches (so the plain call works), keeping the token that restores the mode
    it replaced; the ``with`` block's exit spends that token, and a decorator spends it at once
    (the decorated function switches on each call instead)."""

    def __new__(cls, mode: bool):
        self = object.__new__(cls)
        self._value = bool(mode)
        self._pending = _state.set_grad(self._value)  # PyTorch's: the call switches, not __enter__
        self._tokens = []
        return self

    def __enter__(self):
        token, self._pending = self._pending, None
        new = _state.set_grad(self._value)  # again: a plain call may have switched since
        self._tokens.append(token if token is not None else new)
        return self

    def _fresh(self):
        return set_grad_enabled(self._value)

    def __call__(self, fn):
        if self._pending is not None:  # decorating: the mode before the call comes back now
            _state.reset(self._pending)
            self._pending = None
        return super().__call__(fn)


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
