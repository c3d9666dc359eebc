"""Activations, functional form: ``relu``, ``tanh``, ``sigmoid`` (the ops ``mg.relu``, ``mg.tanh``,
``mg.sigmoid`` themselves), ``leaky_relu``, ``elu``, ``softplus``, ``gelu`` (exact or tanh),
``silu``, ``softmax``, ``log_softmax``, ``mish``, ``hardtanh``, ``logsigmoid``, ``softmin`` and ``glu``
(their layers are in ``layers_activation.py``).

``gelu`` (exact) is ``x * Phi(x)`` with ``Phi`` the normal CDF: an op (``normal_cdf``) computed
from SciPy's ``erfc`` where installed, else a Cody rational approximation (accurate to a few ulps in
float64), and for float32 NumPy arrays from a float32 one in float32 array calls (``_normal_cdf32``);
its gradient ``exp(-x^2 / 2) / sqrt(2 pi)`` is an array-API rule like every other.

``minigrad.nn.functional`` exports these names; ``gelu`` and ``silu`` are composites
(``@composite``), gradchecked and gradgradchecked by the registry test from their samples.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend as _be
from ..engine import run_op
from ..ops import elementwise as _ew
from ..ops import reduce as _red
from ..creation import as_tensor
from ..ops._registry import randn as _r, Sample, composite, defop
from ..ops.math import _erfc_cody  # Cody's erfc lives with the ops (erf, erfc, erfinv)
from ..ops.elementwise import relu, sigmoid, tanh  # the ops themselves: F.relu is mg.relu (one function, one rule)

__all__ = ["relu", "tanh", "sigmoid", "leaky_relu", "elu", "softplus", "gelu", "silu", "softmax", "log_softmax"]


def leaky_relu(x, negative_slope: float = 0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x``; PyTorch's ``F.leaky_relu``.

    >>> F.leaky_relu(mg.tensor([-2.0, 3.0])).tolist()
    [-0.02, 3.0]
    """
    x = as_tensor(x, "leaky_relu")
    return _ew.where(x > 0, x, x * negative_slope)


def elu(x, alpha: float = 1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``; PyTorch's ``F.elu``.

    >>> round(F.elu(mg.tensor([-1.0])).item(), 4)
    -0.6321
    """
    x = as_tensor(x, "elu")
    pos = x > 0
    # exp of the negative side only: a large positive x never overflows in the branch not taken
    return _ew.where(pos, x, (_ew.where(pos, 0.0, x).exp() - 1.0) * alpha)


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (PyTorch's ``F.softplus``, its formula and its threshold).

    >>> round(F.softplus(mg.tensor([0.0])).item(), 4)
    0.6931
    """
    x = as_tensor(x, "softplus")
    bx = x * beta
    big = bx > threshold
    return _ew.where(big, x, _ew.where(big, 0.0, bx).exp().log1p() / beta)


def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along ``dim`` (default the last), computed stably."""
    return _red.softmax(as_tensor(x, "softmax"), dim)


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim`` (default the last), computed stably."""
    return _red.log_softmax(as_tensor(x, "log_softmax"), dim)


# -- gelu: x times the normal CDF ------------------------------------------------------------------

def _erfc_array(x):
    """erfc(x) elementwise on a NumPy/CuPy float array: SciPy's (or CuPy's) where installed,
    else Cody's approximation (``_erfc_cody``), which agrees with them to a few ulps."""
    xp = _be.array_module(x)
    try:
        if xp is np:
            from scipy.special import erfc  # noqa: PLC0415 - optional

            return erfc(x)
        if getattr(xp, "__name__", "") == "cupy":  # not the CPU stand-in
            from cupyx.scipy.special import erfc  # noqa: PLC0415 - optional

            return erfc(x)
    except ImportError:
        pass
    return _erfc_cody(x)


# Numerical Recipes' erfcc (Chebyshev-fitted: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), fractional
# error below 1.2e-7 everywhere), its constant term shifted by log(1/2): t exp(...) is then erfc(z) / 2
_ERFCC = (-1.26551223 + math.log(0.5), 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
          -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def _normal_cdf32(xp, x):
    """Phi(x) for a float32 array, in float32 array calls (erfcc above, in place): 1.3e-6 relative at worst
    for |x| < 3 (float32's rounding of x / sqrt 2, as SciPy's erfc of that argument has), 2e-5 in the far
    tail, where Phi(x) is below 1e-30. SciPy's erfc computes float32 one element at a time in float64:
    three times as long."""
    one = x.dtype.type
    z = xp.abs(x)
    z *= one(1 / math.sqrt(2.0))
    xp.minimum(z, one(11), out=z)  # erfc(11) / 2 is below float32's smallest number; z * z never overflows
    t = z + one(2)
    xp.divide(one(2), t, out=t)
    p = t * one(_ERFCC[9])
    for c in _ERFCC[8:0:-1]:
        p += one(c)
        p *= t
    p += one(_ERFCC[0])
    z *= z
    p -= z
    xp.exp(p, out=p)
    p *= t  # Phi(-|x|)
    s = (x > 0).astype(x.dtype)  # Phi(x) = p + s (1 - 2 p): arithmetic, as a branch per element costs more
    w = s * one(-2)
    w += one(1)
    p *= w
    p += s
    return p


def _normal_cdf(xp, x):
    if x.dtype == np.float32 and xp is np:
        return _normal_cdf32(xp, x)
    return 0.5 * _erfc_array(x * -(1.0 / math.sqrt(2.0)))


# Phi(x) = erfc(-x / sqrt 2) / 2; its gradient is the normal density exp(-x^2 / 2) / sqrt(2 pi)
NORMAL_CDF = defop("normal_cdf", _normal_cdf,
                   lambda ctx, g: (g * ctx.xp.exp((ctx.saved[0] * ctx.saved[0]) * -0.5) * (1.0 / math.sqrt(2.0 * math.pi)),),
                   save=(0,), kind="elementwise", samples=lambda rng: [Sample(_r(rng, 3, 4) * 2), Sample(_r(rng, 5))],
                   torch=lambda th, x: th.special.ndtr(x))


@composite("gelu", samples=lambda rng: [Sample(_r(rng, 3, 4)), Sample(_r(rng, 5), approximate="tanh")],
           export=False)
def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit, PyTorch's ``F.gelu``.

    ``approximate="none"``: ``x * Phi(x)`` with the exact normal CDF (an erf accurate to a
    few ulps in float64); ``"tanh"``: ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``.
    Differentiable to any order.

    >>> round(F.gelu(mg.tensor([1.0], dtype="float64")).item(), 6)
    0.841345
    """
    x = as_tensor(x, "gelu")
    if approximate == "none":
        return x * run_op(NORMAL_CDF, x)
    if approximate == "tanh":
        inner = (x + 0.044715 * (x * x * x)) * math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + inner.tanh())
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


@composite("silu", samples=lambda rng: [Sample(_r(rng, 3, 4))], export=False)
def silu(x):
    """``x * sigmoid(x)`` (swish), PyTorch's ``F.silu``."""
    x = as_tensor(x, "silu")
    return x * x.sigmoid()


# -- PyTorch's further activations: mish, hardtanh, logsigmoid, softmin, glu --------------------------------

__all__ += ["mish", "hardtanh", "logsigmoid", "softmin", "glu"]


def mish(x):
    """``x * tanh(softplus(x))``, PyTorch's ``F.mish`` (softplus linear above 20, no overflow).

    >>> round(F.mish(mg.tensor([1.0], dtype="float64")).item(), 6)
    0.865098
    """
    x = as_tensor(x, "mish")
    return x * softplus(x).tanh()


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """``x`` clipped to ``[min_val, max_val]``, PyTorch's ``F.hardtanh`` (gradient 1 strictly inside).

    >>> F.hardtanh(mg.tensor([-2.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    x = as_tensor(x, "hardtanh")
    inside = (x > min_val) & (x < max_val)
    return _ew.where(inside, x, x.clamp(min_val, max_val).detach())  # constant outside: gradient 0 there


def logsigmoid(x):
    """``log(sigmoid(x))`` computed as ``min(x, 0) - log1p(exp(-|x|))`` (stable for any x);
    PyTorch's ``F.logsigmoid``.

    >>> round(F.logsigmoid(mg.tensor([0.0], dtype="float64")).item(), 6)
    -0.693147
    """
    x = as_tensor(x, "logsigmoid")
    neg = x < 0
    return _ew.where(neg, x, 0.0) - _ew.where(neg, x, -x).exp().log1p()


def softmin(x, dim=None):
    """``softmax(-x, dim)``, PyTorch's ``F.softmin`` (``dim=None``: PyTorch's legacy choice, with a warning)."""
    x = as_tensor(x, "softmin")
    if dim is None:
        import warnings  # noqa: PLC0415

        warnings.warn("softmin: implicit dim is deprecated; pass dim= (PyTorch's legacy rule is used)",
                      UserWarning, stacklevel=2)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return softmax(-x, dim)


def glu(x, dim: int = -1):
    """Gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the two halves of ``x`` along ``dim``;
    PyTorch's ``F.glu`` (that dim must have an even size).

    >>> F.glu(mg.ones(2, 4)).shape
    (2, 2)
    """
    x = as_tensor(x, "glu")
    if x.ndim == 0:
        raise ValueError("glu: does not support scalars (a 0-d input)")
    n = x.shape[dim]
    if n % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {dim} is size {n} (input {x.shape})")
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()
