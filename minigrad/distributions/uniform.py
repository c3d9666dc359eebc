"""``Uniform(low, high)``: the uniform distribution on ``[low, high)``, PyTorch's
``torch.distributions.Uniform``, formula for formula."""
from __future__ import annotations

import math

from ..creation import rand
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform draws in ``[low, high)`` (numbers or Tensors, broadcast together; ``low < high``).

    >>> d = mg.distributions.Uniform(0.0, mg.tensor([1.0, 2.0]))
    >>> d.rsample((3,)).shape
    (3, 2)
    """
    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high, names=("low", "high"), dist="Uniform")
        super().__init__(tuple(self.low.shape), validate_args=validate_args)  # checks low < high

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.low, new.high = self.low.broadcast_to(batch_shape), self.high.broadcast_to(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        """``low + u * (high - low)`` with ``u`` uniform draws in [0, 1): differentiable in low and high."""
        u = rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = self._value(value, self.low)
        lb = (self.low <= value).astype(self.low.dtype)
        ub = (self.high > value).astype(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        value = self._value(value, self.low)
        return ((value - self.low) / (self.high - self.low)).clip(0, 1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()
