"""Per-thread modes: whether ops record the tape, and who watches them run.

One ``ContextVar`` holds an immutable ``Mode``. ``no_grad()``, ``enable_grad()``,
``backward()``, ``profile()`` and ``detect_anomaly()`` set a new Mode and put the old one
back on exit (token reset), so overlapping blocks in two threads, or in two asyncio
tasks, never change each other's recording: each thread starts with the default Mode
(recording on, nobody watching), as PyTorch's grad mode does.

Observers (a profile, anomaly mode) are objects the engine calls; the engine imports
none of them. Their protocol:

- ``forward(name, seconds, out)`` after an op's forward ran (``out``: its array or arrays);
- ``recorded(node)`` after a Node was recorded;
- ``backward(node, seconds, grads)`` after a gradient rule ran in backward;
- ``inputs(node, args, datas)``, only for an observer whose ``wants_inputs`` is True
  (``mg.autograd.check_ops``): the op's operands as it was called;
- ``isolate``: True when ops run inside something the observer counts as one op (an
  ``autograd.Function``'s forward) should not be reported a second time.
"""
from __future__ import annotations

from contextvars import ContextVar


class Mode:
    """What apply and backward read on every op: ``grad`` (record?) and ``observers``."""

    __slots__ = ("grad", "observers")

    def __init__(self, grad: bool = True, observers: tuple = ()):
        self.grad = grad
        self.observers = observers

    def __repr__(self):
        return f"Mode(grad={self.grad}, observers={self.observers!r})"


_DEFAULT = Mode()
_mode: ContextVar[Mode] = ContextVar("minigrad_mode", default=_DEFAULT)
get = _mode.get


def set_grad(enabled: bool):
    """Switch recording for this thread; returns the token that ``reset`` takes."""
    m = _mode.get()
    if m.grad is enabled:
        return _mode.set(m)
    return _mode.set(Mode(enabled, m.observers))


def add_observer(obs):
    m = _mode.get()
    return _mode.set(Mode(m.grad, m.observers + (obs,)))


def without_observers(grad: bool):
    """A Mode with nobody watching (the inside of an ``autograd.Function``'s forward)."""
    return _mode.set(Mode(grad, ()))


def reset(token) -> None:
    _mode.reset(token)


def profiler():
    """The innermost active profile of this thread, or None."""
    for o in reversed(_mode.get().observers):
        if getattr(o, "is_profile", False):
            return o
    return None
