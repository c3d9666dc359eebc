"""Anomaly mode: ``with mg.autograd.detect_anomaly(): ...`` finds the op where NaN/inf appear.

While the mode is on (in this thread only: it is an observer in ``_state``'s per-thread Mode),
every recorded Node gets ``node.where``, the ``(file, line)`` of the user's code that created
it (the innermost frame outside the minigrad package), and with ``stack=True`` also
``node.stack``, a short stack of user frames. In backward, after each gradient rule, a gradient
with NaN/inf raises ``mg.AnomalyError`` naming the op, its position (``seq``), the input, the
count of bad elements and ``file:line``; ``err.node`` is the Node (``mg.viz.graph(loss,
highlight=err.node)`` draws it and its path in red). The mode stops at the first such rule, so
every gradient a rule receives from another rule is finite: the op named is the one that
turned finite gradients into non-finite ones. ``check_forward=True`` also checks every
forward output and names the op that first produced NaN/inf. In forward mode (dual levels,
``mg.func.jvp``...) every op's output tangent is checked too: the first op whose tangent holds
NaN/inf raises, naming the op, the level and ``file:line`` (``phase == "forward mode"``).

Outside the mode nothing here runs: the engine only calls observers when there are some.
"""
from __future__ import annotations

import functools
import os
import sys

from . import _state
from .backend import array_module
from .errors import MinigradError


class AnomalyError(MinigradError, RuntimeError):
    """Anomaly mode (``mg.autograd.detect_anomaly``) saw an op turn finite values into NaN/inf.

    Attributes: ``node`` (the op's Node, or None for a forward op that was not recorded),
    ``op`` (its name), ``position`` (its ``seq``), ``input`` (the input whose gradient went
    bad; None in forward), ``count`` (bad elements), ``file``, ``line`` (the user's code that
    created the op), ``phase`` ("backward", "forward" or "forward mode": a tangent).
    """

    def __init__(self, message, node=None, op=None, position=None, input=None, count=0,  # noqa: A002
                 file=None, line=None, phase="backward"):
        super().__init__(message)
        self.node = node
        self.op = op
        self.position = position
        self.input = input
        self.count = count
        self.file = file
        self.line = line
        self.phase = phase


__all__ = ["detect_anomaly", "user_where", "user_stack"]

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
_inside: dict = {}  # co_filename -> whether it is a file of the minigrad package


def _in_package(filename: str) -> bool:
    r = _inside.get(filename)
    if r is None:
        r = _inside[filename] = os.path.abspath(filename).startswith(_PKG)
    return r


def _user_frame():
    f = sys._getframe(1)
    while f is not None and _in_package(f.f_code.co_filename):
        f = f.f_back
    return f


def user_where():
    """``(file, line)`` of the innermost frame outside the minigrad package (None if none)."""
    f = _user_frame()
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def user_stack(limit: int = 8) -> tuple:
    """The user's frames below minigrad, innermost last: ``("file:line in func", ...)``."""
    f = _user_frame()
    out = []
    while f is not None and len(out) < limit:
        if not _in_package(f.f_code.co_filename):
            out.append(f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}")
        f = f.f_back
    return tuple(reversed(out))


def fmt_where(where) -> str:
    """``file:line``, the file relative to the working directory when it is below it."""
    if not where:
        return "<unknown location>"
    file, line = where
    try:
        rel = os.path.relpath(file)
        file = file if rel.startswith("..") else rel
    except ValueError:  # another drive (Windows)
        pass
    return f"{file}:{line}"


def _bad_count(a) -> int:
    """NaN/inf elements of a floating array (0 for anything else)."""
    dt = getattr(a, "dtype", None)
    if dt is None or dt.kind not in "fc":
        return 0
    xp = array_module(a)
    return int((~xp.isfinite(a)).sum())


def _flat(out):
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from _flat(o)
    elif out is not None:
        yield out


class _Anomaly:
    """The observer anomaly mode adds to this thread's Mode (protocol: ``minigrad/_state.py``)."""

    def __init__(self, check_forward: bool, stack: bool):
        self.check_forward = check_forward
        self.stack = stack
        self._pending = None  # a forward output with NaN/inf, raised once its Node exists

    # -- forward -----------------------------------------------------------------------
    def forward(self, name, seconds, out):
        if self._pending is not None:  # the previous op produced NaN/inf and was not recorded
            self.raise_pending(None)
        if not self.check_forward:
            return
        count = sum(_bad_count(a) for a in _flat(out))
        if count:
            self._pending = (name, count, user_where(), user_stack() if self.stack else None)
            if not _state.get().grad:  # nothing will be recorded: say it now
                self.raise_pending(None)

    def recorded(self, node):
        node.where = user_where()
        if self.stack:
            node.stack = user_stack()
        if self._pending is not None:
            self.raise_pending(node)

    def raise_pending(self, node):
        name, count, where, stack = self._pending
        self._pending = None
        pos = f" (seq {node.seq})" if node is not None else ""
        msg = (f"anomaly (forward): op {name!r}{pos} produced {count} NaN/inf value{'s' * (count != 1)}"
               f" at {fmt_where(where)}")
        if stack:
            msg += "\n  stack (innermost last):\n    " + "\n    ".join(stack)
        raise AnomalyError(msg, node=node, op=name, position=None if node is None else node.seq, count=count,
                           file=where[0] if where else None, line=where[1] if where else None,
                           phase="forward")

    # -- forward mode ------------------------------------------------------------------
    def tangent(self, name, level, tangents, inputs):
        """After an op computed its output's tangents at a dual level: NaN/inf there raises."""
        count = sum(_bad_count(t.data) for t in tangents if t is not None)
        if not count:
            return
        where = user_where()
        given = any(_bad_count(u) for u in inputs if u is not None)
        msg = (f"anomaly (forward mode): op {name!r} produced {count} NaN/inf tangent value{'s' * (count != 1)} "
               f"(dual level {level}) at {fmt_where(where)}"
               + (" from input tangents that already held NaN/inf (a tangent given to make_dual?)" if given
                  else " from finite input tangents"))
        if self.stack:
            msg += "\n  stack (innermost last):\n    " + "\n    ".join(user_stack())
        raise AnomalyError(msg, op=name, count=count, file=where[0] if where else None,
                           line=where[1] if where else None, phase="forward mode")

    # -- backward ----------------------------------------------------------------------
    def backward(self, node, seconds, grads):
        gs = grads if isinstance(grads, (tuple, list)) else (grads,)
        for i, (p, g) in enumerate(zip(node.parents, gs, strict=False)):
            if p is None or g is None:
                continue
            count = _bad_count(g.data if hasattr(g, "_requires_grad") else g)  # a Tensor, or (first order) an array
            if count:
                self._raise_backward(node, i, count, g)

    def _raise_backward(self, node, i, count, g):
        where = node.__dict__.get("where")
        loc = fmt_where(where) if where else "<not recorded: the op was created outside detect_anomaly>"
        shape = node.meta[i][0] if node.meta[i] is not None else getattr(g, "shape", "?")
        msg = (f"anomaly (backward): the gradient rule of op {node.op!r} (seq {node.seq}) returned "
               f"{count} NaN/inf value{'s' * (count != 1)} for input {i} (shape {tuple(shape)}) from a finite "
               f"incoming gradient; the op was created at {loc}")
        stack = node.__dict__.get("stack")
        if stack:
            msg += "\n  stack (innermost last):\n    " + "\n    ".join(stack)
        raise AnomalyError(msg, node=node, op=node.op, position=node.seq, input=i, count=count,
                           file=where[0] if where else None, line=where[1] if where else None)


class detect_anomaly:
    """Context manager / decorator: find the op where NaN/inf appear (in this thread).

    Args:
        check_forward: also check every forward output, naming the op that first produced NaN/inf.
        stack: keep a short stack of the user's frames on each Node (``node.stack``) and print it.

    >>> with mg.autograd.detect_anomaly():
    ...     loss = model(x).log().sum()
    ...     loss.backward()          # AnomalyError: ... op 'log' ... at train.py:12
    """

    def __new__(cls, check_forward=False, stack=False):
        self = super().__new__(cls)
        if callable(check_forward):  # @detect_anomaly without parentheses
            fn = check_forward
            self.__init__()
            return self(fn)
        return self

    def __init__(self, check_forward=False, stack=False):
        self.check_forward = bool(check_forward)
        self.stack = bool(stack)
        self._entered = []

    def __enter__(self):
        obs = _Anomaly(self.check_forward, self.stack)
        self._entered.append((obs, _state.add_observer(obs)))
        return self

    def __exit__(self, exc_type, exc, tb):
        obs, token = self._entered.pop()
        _state.reset(token)
        if exc_type is None and obs._pending is not None:
            obs.raise_pending(None)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_forward, self.stack):
                return fn(*a, **k)

        return wrapper

    def __repr__(self):
        return f"detect_anomaly(check_forward={self.check_forward}, stack={self.stack})"
