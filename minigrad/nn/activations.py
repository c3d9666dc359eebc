"""Activations, functional form: ``relu``, ``tanh``, ``sigmoid`` (the ops ``mg.relu``, ``mg.tanh``,
``mg.sigmoid`` themselves), ``leaky_relu``, ``elu``, ``softplus``, ``gelu`` (exact or tanh),
``silu``, ``softmax``, ``log_softmax``, ``mish``, ``hardtanh``, ``logsigmoid``, ``softmin`` and ``glu``
(their layers are in ``layers_activation.py``).

``gelu`` (exact) is ``x * Phi(x)`` with ``Phi`` the normal CDF: an op (``normal_cdf``) computed
from a Cody rational approximation of ``erfc`` (accurate to a few ulps in float64), whose
gradient ``exp(-x^2 / 2) / sqrt(2 pi)`` is an array-API rule like every other.

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

# W. J. Cody's rational approximations of erf / erfc (Math. Comp. 23, 1969; netlib specfun CALERF)
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
          1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
          8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
          2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
          3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
          6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
          2.33520497626869185e-3)
_SQRPI = 5.6418958354775628695e-1  # 1 / sqrt(pi)


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


def _erfc_cody(x):
    """erfc(x) elementwise, to a few ulps in float64: Cody's three ranges, every op an array op."""
    xp = _be.array_module(x)
    x64 = x.astype(np.float64)
    y = xp.abs(x64)
    # |x| <= 0.46875: erf(y) = y P(y^2) / Q(y^2)
    ysq = y * y
    num = _ERF_A[4] * ysq
    den = ysq
    for i in range(3):
        num = (num + _ERF_A[i]) * ysq
        den = (den + _ERF_B[i]) * ysq
    small = 1.0 - y * (num + _ERF_A[3]) / (den + _ERF_B[3])
    # 0.46875 < |x| <= 4: erfc(y) = exp(-y^2) P(y) / Q(y)
    num = _ERF_C[8] * y
    den = y
    for i in range(7):
        num = (num + _ERF_C[i]) * y
        den = (den + _ERF_D[i]) * y
    mid = (num + _ERF_C[7]) / (den + _ERF_D[7])
    # |x| > 4: erfc(y) = exp(-y^2) / y (1 / sqrt(pi) + P(1/y^2) / (y^2 Q(1/y^2)))
    yl = xp.maximum(y, 4.0)
    isq = 1.0 / (yl * yl)
    num = _ERF_P[5] * isq
    den = isq
    for i in range(4):
        num = (num + _ERF_P[i]) * isq
        den = (den + _ERF_Q[i]) * isq
    large = (_SQRPI - isq * (num + _ERF_P[4]) / (den + _ERF_Q[4])) / yl
    # exp(-y^2) as exp(-t^2) exp(-(y - t)(y + t)) with t = y rounded down to 1/16: no lost digits
    t = xp.floor(y * 16.0) / 16.0
    scale = xp.exp(-t * t) * xp.exp(-(y - t) * (y + t))
    tail = scale * xp.where(y <= 4.0, mid, large)
    pos = xp.where(y <= 0.46875, small, tail)               # erfc(|x|)
    out = xp.where(x64 < 0, 2.0 - pos, pos)
    return out.astype(x.dtype, copy=False)


def _normal_cdf(xp, x):
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
