"""``mg.autograd``: the public face of the tape.

The engine itself (Node, apply, backward, grad, grad mode) lives in ``minigrad/engine.py``;
user-defined ops in ``function.py``; the printable tape in ``tape.py``; the profile in
``profile.py``. This module only gathers their public names.
"""
from __future__ import annotations

from .backward import grad
from .engine import Node, enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .function import Function, FunctionCtx
from .tape import Tape, tape

__all__ = ["Function", "FunctionCtx", "Node", "Tape", "enable_grad", "grad", "is_grad_enabled", "no_grad",
           "profile", "set_grad_enabled", "tape"]


def profile():
    """Context manager collecting, per op, calls, forward time, backward time and bytes saved.

    >>> with mg.autograd.profile() as p:
    ...     (x * x).sum().backward()
    >>> print(p.table())
    """
    from .profile import Profile  # noqa: PLC0415 - the profile module loads on first use

    return Profile()
