"""The activation layers of ``mg.nn``: ``ReLU``, ``Tanh``, ``Sigmoid``, ``LeakyReLU``, ``ELU``,
``Softplus``, ``GELU``, ``SiLU``, ``Softmax``, ``LogSoftmax``, ``Mish``, ``Hardtanh`` (PyTorch's names and
arguments). Each calls its
function in ``mg.nn.functional`` (written in ``activations.py``).

>>> model = mg.nn.Sequential(mg.nn.Linear(4, 8), mg.nn.GELU(), mg.nn.Linear(8, 2), mg.nn.Softmax(dim=-1))
"""
from __future__ import annotations

import numbers
import warnings

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ReLU", "Tanh", "Sigmoid", "LeakyReLU", "ELU", "Softplus", "GELU", "SiLU", "Softmax"]


class ReLU(Module):
    """max(x, 0)."""

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x):
        return F.sigmoid(x)


class LeakyReLU(Module):
    """``x`` where ``x > 0``, else ``negative_slope * x`` (``F.leaky_relu``)."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)`` (``F.elu``)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (``F.softplus``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = float(beta)
        self.threshold = float(threshold)

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class GELU(Module):
    """``x * Phi(x)`` (``approximate="none"``) or its tanh approximation (``"tanh"``)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``."""

    def forward(self, x):
        return F.silu(x)


def _legacy_softmax_dim(ndim):
    """PyTorch's legacy choice of dim for ``Softmax(dim=None)``."""
    warnings.warn("Softmax: implicit dim is deprecated; pass dim= (PyTorch's legacy rule is used)",
                  UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's ``nn.Softmax``; ``dim=None`` uses PyTorch's legacy
    choice, with a warning)."""

    def __init__(self, dim=None):
        super().__init__()
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"Softmax: dim must be an int or None, got {dim!r}")
        self.dim = dim

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        dim = self.dim if self.dim is not None else _legacy_softmax_dim(x.ndim)
        return F.softmax(x, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


# -- PyTorch's further activation layers -----------------------------------------------------------------

__all__ += ["LogSoftmax", "Mish", "Hardtanh"]


class LogSoftmax(Module):
    """``log_softmax`` along ``dim`` (PyTorch's ``nn.LogSoftmax``; ``dim=None`` uses PyTorch's legacy
    choice, with a warning)."""

    def __init__(self, dim=None):
        super().__init__()
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"LogSoftmax: dim must be an int or None, got {dim!r}")
        self.dim = dim

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        dim = self.dim if self.dim is not None else _legacy_softmax_dim(x.ndim)
        return F.log_softmax(x, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Mish(Module):
    """``x * tanh(softplus(x))`` (``F.mish``)."""

    def forward(self, x):
        return F.mish(x)


class Hardtanh(Module):
    """``x`` clipped to ``[min_val, max_val]`` (``F.hardtanh``)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
        self.min_val = float(min_val)
        self.max_val = float(max_val)

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"
