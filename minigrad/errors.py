"""The MinigradError family, beside the standard types users catch, and how a public function
puts its name in front of the errors raised under it."""
from __future__ import annotations

import functools


class MinigradError(Exception):
    """Base class of minigrad's own errors."""


class AxisError(MinigradError, IndexError, ValueError):
    """An axis out of range for a tensor's ndim (an IndexError and a ValueError, like NumPy's)."""


class GradcheckError(MinigradError, RuntimeError):
    """Analytic and numeric gradients disagree (raised by gradcheck / gradgradcheck)."""


class AnomalyError(MinigradError, RuntimeError):
    """Anomaly mode (``mg.autograd.detect_anomaly``) saw an op turn finite values into NaN/inf.

    Attributes: ``node`` (the op's Node, or None for a forward op that was not recorded),
    ``op`` (its name), ``position`` (its ``seq``), ``input`` (the input whose gradient went
    bad; None in forward), ``count`` (bad elements), ``file``, ``line`` (the user's code that
    created the op), ``phase`` ("backward" or "forward").
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


class CompileError(MinigradError, RuntimeError):
    """``mg.compile`` met Python that a replay cannot repeat (``.item()``, ``bool(t)``, a new
    parameter, an in-place write into an input...). Attributes: ``what`` (the construct),
    ``file`` and ``line`` (the user's code that did it)."""

    def __init__(self, message, what=None, file=None, line=None):
        super().__init__(message)
        self.what = what
        self.file = file
        self.line = line


# -- errors that name the public function the user called -------------------------------------

NAMED_ERRORS = (TypeError, ValueError, IndexError, RuntimeError)


def renamed(e, name):
    """``e`` with its message starting ``name: `` (the public function the user called), its type
    kept: ``e`` itself when its message already starts so or can be rewritten in place, else a new
    exception of its type (or of the standard type it derives from, for one that cannot be built
    from a message)."""
    msg = str(e)
    if msg.startswith(f"{name}:"):
        return e
    msg = f"{name}: {msg}"
    e.args = (msg,)
    if str(e) == msg:
        return e
    try:
        new = type(e)(msg)
    except Exception:  # noqa: BLE001 - a constructor that wants more than a message
        new = None
    if new is None or str(new) != msg:
        new = next(t for t in NAMED_ERRORS if isinstance(e, t))(msg)
    return new


def reraise(e, name):
    """Raise ``renamed(e, name)`` from an ``except`` block, with ``e``'s traceback."""
    r = renamed(e, name)
    if r is e:
        raise e
    raise r.with_traceback(e.__traceback__) from None


def named(name):
    """Decorator for a public function: an error raised by the helpers and ops it calls (``item:``,
    ``permute:``, NumPy's or Python's own text) names ``name`` first, e.g. ``transpose: permute: ...``."""
    def deco(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except NAMED_ERRORS as e:
                reraise(e, name)

        return call

    return deco
