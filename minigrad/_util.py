"""Small shared helpers."""
import numbers

import numpy as np

from .errors import AxisError


NOARG = type("NoArg", (), {"__repr__": lambda self: "<not given>"})()  # "argument not given"


def pick(name_a, a, name_b, b, default, op):
    """Resolve a NumPy/PyTorch keyword alias pair (axis/dim, keepdims/keepdim)."""
    if a is not NOARG and b is not NOARG:
        raise TypeError(f"{op}: got both {name_a}= and its alias {name_b}=; give one")
    if a is not NOARG:
        return a
    if b is not NOARG:
        return b
    return default


def axis_index(axis, ndim, op) -> int:
    """One int ``axis`` of an ``ndim``-d shape as an index in ``[0, ndim)`` (negative counts from the
    end); a non-int raises TypeError and one out of range AxisError, naming ``op``."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{op}: axis must be one int, got {type(axis).__name__} {axis!r}")
    a = int(axis)
    if not -ndim <= a < ndim:
        if ndim == 0:
            raise AxisError(f"{op}: a 0-d shape has no axis to sum (got axis {a})")
        raise AxisError(f"{op}: axis {a} is out of bounds for ndim {ndim} (valid range [{-ndim}, {ndim - 1}])")
    return a + ndim if a < 0 else a
