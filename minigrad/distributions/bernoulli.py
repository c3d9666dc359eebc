"""``Bernoulli(probs=|logits=)``: a 0/1 draw per batch element, PyTorch's
``torch.distributions.Bernoulli``, formula for formula."""
from __future__ import annotations

import math

import numpy as np

from ..creation import arange, rand
from ..grad_mode import no_grad
from ..ops.elementwise import where
from ..ops.losses import bce_op
from . import constraints
from .distribution import Distribution, broadcast_all, lazy_property

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """1 with probability ``probs`` (in [0, 1]), else 0; or given ``logits`` (log-odds). Draws are
    floats of the parameter's dtype, as PyTorch's.

    >>> d = mg.distributions.Bernoulli(logits=mg.tensor([0.0, 2.0]))
    >>> d.sample((3,)).shape
    (3, 2)
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: either `probs` or `logits` must be specified, but not both.")
        name = "probs" if probs is not None else "logits"
        (param,) = broadcast_all(probs if probs is not None else logits, names=(name,), dist="Bernoulli")
        setattr(self, name, param)
        self._param = param
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].broadcast_to(batch_shape))
                new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        """Log-odds: ``log(p) - log1p(-p)`` with ``p`` clamped away from 0 and 1 (PyTorch's)."""
        eps = float(np.finfo(self.probs.dtype).eps)
        p = self.probs.clamp(min=eps, max=1 - eps)
        return p.log() - (-p).log1p()

    @lazy_property
    def probs(self):
        """Probabilities: ``sigmoid(logits)``."""
        return self.logits.sigmoid()

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).astype(self.probs.dtype)
        return where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """0.0/1.0 draws of shape ``sample_shape + batch_shape`` (``u < probs`` for uniform ``u``)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs
            return (rand(shape, dtype=p.dtype, device=p.device) < p).astype(p.dtype)

    def log_prob(self, value):
        value = self._value(value, self._param)
        logits, value = broadcast_all(self.logits, value, names=("logits", "value"), dist="Bernoulli.log_prob")
        return -bce_op(logits, value, "none")

    def entropy(self):
        return bce_op(self.logits, self.probs, "none")

    def enumerate_support(self, expand=True):
        """``0., 1.`` along a new first axis, shaped ``(2,) + batch_shape`` (``(2, 1, ...)`` without ``expand``)."""
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.broadcast_to((2,) + self._batch_shape) if expand else values
