"""Parameter initialisation, PyTorch's formulas.

Every function fills a Tensor in place (keeping its dtype, float32 by default, and its
device), bumps its version counter and returns it. Random ones draw from the generator
that ``mg.manual_seed`` seeds.

>>> w = mg.nn.Parameter(mg.empty(128, 64))
>>> mg.nn.init.kaiming_uniform_(w, a=math.sqrt(5))   # nn.Linear's default
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend as _be
from .. import creation as _creation

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "xavier_uniform_",
    "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
]


def _fill(t, values):
    """Write host ``values`` into ``t``'s storage (same dtype, same device), bump its version."""
    d = t.data
    if _be.is_cupy_array(d):
        values = _be.to_device(values.astype(d.dtype, copy=False), _be.device_of(d))
    d[...] = values
    t._storage.version += 1
    return t


def _gen():
    return _creation._rng


def uniform_(t, a: float = 0.0, b: float = 1.0):
    """Fill with samples from U(a, b)."""
    return _fill(t, _gen().uniform(a, b, t.shape).astype(t.dtype, copy=False))


def normal_(t, mean: float = 0.0, std: float = 1.0):
    """Fill with samples from N(mean, std**2)."""
    return _fill(t, (_gen().standard_normal(t.shape) * std + mean).astype(t.dtype, copy=False))


def constant_(t, val: float):
    """Fill with ``val``."""
    t.data[...] = val
    t._storage.version += 1
    return t


def zeros_(t):
    return constant_(t, 0)


def ones_(t):
    return constant_(t, 1)


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(t):
    shape = t.shape
    if len(shape) < 2:
        raise ValueError(
            f"fan in and fan out cannot be computed for a tensor with fewer than 2 dims (shape {tuple(shape)})"
        )
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(t, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(t)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(t, gain: float = 1.0):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(t)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(t, -a, a)


def xavier_normal_(t, gain: float = 1.0):
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan)."""
    fan = _fan(t, mode)
    if fan == 0:
        return t
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    fan = _fan(t, mode)
    if fan == 0:
        return t
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
