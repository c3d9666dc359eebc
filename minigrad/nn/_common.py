"""Argument checks the functional forms (``conv.py``, ``pool.py``) and the layers (``layers*.py``)
share: an int or a tuple of ints as a tuple (``ntuple``), a size that must be a positive int
(``positive_int``). Each error names the function or layer and the argument."""
from __future__ import annotations

import numbers

import numpy as np


def ntuple(v, n, name, op, minimum=1):
    """An int or a sequence of ``n`` ints, as a tuple of ``n`` ints >= ``minimum``."""
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        v = (int(v),) * n
    try:
        v = tuple(v)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}") from None
    if len(v) != n or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral) for s in v):
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    if any(s < minimum for s in v):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {v!r}")
    return tuple(int(s) for s in v)


def positive_int(value, layer, arg):
    """``value`` as an int, which must be positive: a ValueError naming the layer and the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{layer}: {arg} must be a positive int, got {value!r}")
    return int(value)
