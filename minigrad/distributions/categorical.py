"""``Categorical(probs=|logits=)``: one of K categories per batch element, PyTorch's
``torch.distributions.Categorical``, formula for formula."""
from __future__ import annotations

import math

import numpy as np

from ..creation import arange, full, rand
from ..grad_mode import no_grad
from ..ops.join import take_along_axis
from . import constraints
from .distribution import Distribution, broadcast_all, lazy_property

__all__ = ["Categorical"]


class Categorical(Distribution):
    """A distribution over ``0 .. K-1``, given ``probs`` (non-negative, normalised along the last
    axis) or ``logits`` (unnormalised log-probabilities) of shape ``batch_shape + (K,)``; a draw is
    an int64 index.

    >>> d = mg.distributions.Categorical(logits=mg.zeros(2, 3))
    >>> d.batch_shape, d.sample((4,)).shape
    ((2,), (4, 2))
    """
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: either `probs` or `logits` must be specified, but not both.")
        name = "probs" if probs is not None else "logits"
        (param,) = broadcast_all(probs if probs is not None else logits, names=(name,), dist="Categorical")
        if param.ndim < 1:
            raise ValueError(f"Categorical: `{name}` parameter must be at least one-dimensional "
                             f"(batch_shape + (number of categories,)), got shape {tuple(param.shape)}.")
        if probs is not None:
            self.probs = param / param.sum(axis=-1, keepdims=True)
        else:
            self.logits = param - param.logsumexp(axis=-1, keepdims=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].broadcast_to(param_shape))
                new._param = new.__dict__[name]
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        """Normalised log-probabilities: ``log(probs)``, clamped away from 0 and 1 (PyTorch's)."""
        eps = float(np.finfo(self.probs.dtype).eps)
        return self.probs.clamp(min=eps, max=1 - eps).log()

    @lazy_property
    def probs(self):
        """Probabilities: ``softmax(logits)`` along the last axis."""
        return self.logits.softmax(axis=-1)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def variance(self):
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(axis=-1)

    def sample(self, sample_shape=()):
        """int64 indices of shape ``sample_shape + batch_shape``, by inverting the cumulative
        probabilities at uniform draws from ``mg.manual_seed``'s generator."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            cum = self.probs.cumsum(axis=-1)
            u = rand(shape + (1,), dtype=cum.dtype, device=cum.device) * cum[..., -1:]
            # the index is how many of the first K - 1 cumulative sums lie at or below u
            return (cum[..., :-1] <= u).sum(axis=-1).astype(np.int64)

    def log_prob(self, value):
        value = self._value(value, self._param, dtype=np.int64).astype(np.int64)
        logits = self.logits
        try:
            shape = np.broadcast_shapes(tuple(value.shape) + (1,), tuple(logits.shape))
        except ValueError:
            raise ValueError(f"Categorical.log_prob: value of shape {tuple(value.shape)} does not broadcast with "
                             f"batch_shape {self._batch_shape}") from None
        index = value.unsqueeze(-1).broadcast_to(shape[:-1] + (1,))
        return take_along_axis(logits.broadcast_to(shape), index, axis=-1).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype).min)
        return -(self.logits.clamp(min=min_real) * self.probs).sum(axis=-1)

    def enumerate_support(self, expand=True):
        """``0 .. K-1`` along a new first axis, shaped ``(K,) + batch_shape`` (``(K, 1, ...)`` without
        ``expand``)."""
        values = arange(self._num_events, dtype=np.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.broadcast_to((self._num_events,) + self._batch_shape) if expand else values
