"""The MinigradError family, beside the standard types users catch, and how an error raised under
a public function gets that function's name in front (``reraise``; ops/_registry.py's ``named``
decorates the public functions with it). The family's members that belong to one feature live
beside it: ``GradcheckError`` (gradcheck.py), ``AnomalyError`` (anomaly.py), ``CompileError``
(capture.py)."""
from __future__ import annotations


class MinigradError(Exception):
    """Base class of minigrad's own errors."""


class AxisError(MinigradError, IndexError, ValueError):
    """An axis out of range for a tensor's ndim (an IndexError and a ValueError, like NumPy's)."""


class ComplexNotSupported(MinigradError, TypeError):
    """A complex operand given to an op that refuses complex numbers (docs/complex.md lists them)."""


class BatchingFallback(Exception):
    """vmap (``_batched.py`` raises it): an op's forward made an array call on batched arrays that
    has no batching rule. The engine catches it around the op and returns ``fallback(op, arrays,
    params)``: the op's own batching rule, or the op run once per element."""

    def fallback(self, op, arrays, params):
        raise NotImplementedError


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
