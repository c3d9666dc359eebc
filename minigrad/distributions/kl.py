"""``kl_divergence(p, q)``: KL(p || q) batched over the batch shape, PyTorch's formulas, and
``register_kl`` to add a pair (the most specific registered pair of classes wins)."""
from __future__ import annotations

import math

from ..nn.activations import softplus
from ..ops.elementwise import where
from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """A decorator: ``@register_kl(P, Q)`` makes ``fn(p, q)`` the KL divergence of a ``P`` from a ``Q``
    (and of their subclasses, where no more specific pair is registered)."""
    if not (isinstance(type_p, type) and isinstance(type_q, type)):
        raise TypeError(f"register_kl: expected two Distribution classes, got {type_p!r} and {type_q!r}")

    def decorator(fn):
        _KL[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], one value per batch element (shape ``batch_shape``).

    >>> N = mg.distributions.Normal
    >>> round(mg.distributions.kl_divergence(N(0.0, 1.0), N(1.0, 1.0)).item(), 3)
    0.5
    """
    found = [(type(p).__mro__.index(a), type(q).__mro__.index(b), fn) for (a, b), fn in _KL.items()
             if isinstance(p, a) and isinstance(q, b)]
    if not found:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__} "
            f"(registered pairs: {', '.join(f'{a.__name__}-{b.__name__}' for a, b in _KL)}; "
            "add one with @mg.distributions.register_kl)")
    return min(found, key=lambda f: f[:2])[2](p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = where(q.probs == 0, math.inf, t)  # PyTorch writes these in place; where keeps the gradient's zeros
    t = where(p.probs == 0, 0.0, t)
    return t.sum(axis=-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(q.probs == 0, math.inf, t1)
    t1 = where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(q.probs == 1, math.inf, t2)
    t2 = where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common).log()
    t2 = common ** 2 / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale ** 2
