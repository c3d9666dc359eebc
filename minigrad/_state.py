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
  (``mg.autograd.check_ops``): the op's operands as it was called.

Forward mode's dual levels (``forward_ad.dual_level``) ride on the Mode too: ``fw`` is None,
or the object that carries tangents through each op (``forward_ad.Levels``).
"""
from __future__ import annotations

from contextvars import ContextVar


class Mode:
    """What run_op and backward read on every op: ``grad`` (record?), ``observers``, and ``fw``
    (forward mode's active dual levels, or None)."""

    __slots__ = ("grad", "observers", "fw")

    def __init__(self, grad: bool = True, observers: tuple = (), fw=None):
        self.grad = grad
        self.observers = observers
        self.fw = fw

    def __repr__(self):
        return f"Mode(grad={self.grad}, observers={self.observers!r}, fw={self.fw!r})"


_DEFAULT = Mode()
_mode: ContextVar[Mode] = ContextVar("minigrad_mode", default=_DEFAULT)
get = _mode.get


_NO_GRAD = Mode(False)  # immutable like _DEFAULT: no_grad() and backward share it when nobody watches


def set_grad(enabled: bool):
    """Switch recording for this thread; returns the token that ``reset`` takes."""
    m = _mode.get()
    if m.grad is enabled:
        return _mode.set(m)
    if not m.observers and m.fw is None:
        return _mode.set(_DEFAULT if enabled else _NO_GRAD)
    return _mode.set(Mode(enabled, m.observers, m.fw))


def add_observer(obs):
    m = _mode.get()
    return _mode.set(Mode(m.grad, m.observers + (obs,), m.fw))


def without_observers(grad: bool, fw: bool = True):
    """A Mode with nobody watching but a capture, which still writes the array calls down (the
    inside of an ``autograd.Function``'s forward, without forward mode either: its jvp gives the
    tangents; backward's rules, timed as the rule's backward)."""
    m = _mode.get()
    keep = tuple(o for o in m.observers if getattr(o, "captures", False))
    return _mode.set(Mode(grad, keep, m.fw if fw else None))


def set_levels(fw):
    """Forward mode's active dual levels for this thread (None: none); returns the token."""
    m = _mode.get()
    return _mode.set(Mode(m.grad, m.observers, fw))


def reset(token) -> None:
    _mode.reset(token)


# ---------------------------------------------------------------------------
# capture (mg.compile): array steps that run outside ``run_op``, and what cannot be replayed
# ---------------------------------------------------------------------------
# How many captures are under way, in any thread: a hint that lets the doors below (taken on
# every leaf and module call) skip the ContextVar when nobody captures. The capture itself is per
# thread (an observer in the Mode, with ``captures = True``), like every other mode.
# Speed: without it the MLP step costs 0.7% more instructions, past the 1% the core may cost.
active = 0
# How many vmap levels are open, in any thread (``_batched.py``): a hint for backward and forward
# mode, whose rules then look for batched arrays among all their operands, not only the gradient.
vmapping = 0


def capture():
    """The capture (``mg.compile``) this thread is running, or None."""
    if not active:
        return None
    for o in _mode.get().observers:
        if getattr(o, "captures", False):
            return o
    return None


def array_step(fn, *args):
    """``fn(*args)``: an array step that does not go through ``run_op`` (a random draw, a gradient
    added into ``.grad``, an optimizer's update). A capture records it, to call it again on
    replay with the arguments of that moment (arrays it made, tensors and objects it reads live)."""
    if active:
        c = capture()
        if c is not None:
            return c.array_step(fn, args)
    return fn(*args)


def _tell(method: str, *args) -> None:
    """Call ``method`` of this thread's capture, if one runs (the notes below)."""
    if active:
        c = capture()
        if c is not None:
            getattr(c, method)(*args)


def refuse(what: str) -> None:
    """Python that a replay cannot repeat (``.item()``, ``bool(t)``, a new parameter...): a
    capture raises ``CompileError`` naming the user's line, or (``fallback=True``) gives up
    capturing and lets the call go on eagerly."""
    _tell("refuse", what)


def note_write(t) -> None:
    """An in-place write into ``t`` is about to run (a capture refuses writes into its inputs)."""
    _tell("write", t)


def guard(obj, attr: str) -> None:
    """The step reads ``obj.attr`` as Python (a module's ``training``): a capture checks, before
    each replay, that it still has the value it had, and captures again when it has not."""
    _tell("guard", obj, attr)


def assign(obj, attr: str, value) -> None:
    """``obj.attr = value``, Python state a step sets (``model.train()``, ``t.grad = g``): a capture
    sets it again on each replay, and does not guard its value."""
    _tell("assign", obj, attr, value)
    setattr(obj, attr, value)
