"""``Normal(loc, scale)``: the Gaussian, PyTorch's ``torch.distributions.Normal``, formula for formula."""
from __future__ import annotations

import math

from ..creation import randn
from ..engine import run_op
from ..nn.activations import NORMAL_CDF
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Normal"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class Normal(Distribution):
    """A normal distribution with mean ``loc`` and standard deviation ``scale`` (numbers or Tensors,
    broadcast together: their shape is ``batch_shape``).

    >>> d = mg.distributions.Normal(mg.tensor([0.0, 1.0]), 2.0)
    >>> d.batch_shape, d.sample((5,)).shape
    ((2,), (5, 2))
    """
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale, names=("loc", "scale"), dist="Normal")
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.loc, new.scale = self.loc.broadcast_to(batch_shape), self.scale.broadcast_to(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        """``loc + eps * scale`` with ``eps`` standard normal draws: differentiable in loc and scale."""
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._value(value, self.loc)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        value = self._value(value, self.loc)
        return run_op(NORMAL_CDF, (value - self.loc) / self.scale)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
