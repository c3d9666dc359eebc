"""``Distribution``, the base of ``mg.distributions`` (PyTorch's ``torch.distributions.Distribution``):
the batch and event shapes, the sample shape rule, argument validation, and the parts every
distribution shares.

A distribution's methods are built from minigrad's differentiable ops, so ``log_prob``,
``entropy``, ``rsample`` and the moments carry gradients back to the parameters (to any order, in
both modes) with no rule of their own. Random draws come from ``mg.manual_seed``'s generator
(``mg.rand``, ``mg.randn``: ``creation.py``'s draws, which a compiled step makes again on each
replay).

Validation (``validate_args``, on by default as in PyTorch) reads the parameters' values, so it
runs eagerly only: while ``mg.compile`` captures a step it is skipped (a replay runs no Python),
the step's first, eager call having checked them."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _state
from .. import backend as _be
from ..creation import tensor as _tensor
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints

__all__ = ["Distribution", "broadcast_all"]


class Distribution:
    """The base class: ``batch_shape`` (independent distributions side by side), ``event_shape``
    (the shape of one draw), ``sample``/``rsample``, ``log_prob``, ``entropy``, the moments."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = True  # PyTorch's default (``__debug__``)
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made after this (PyTorch's)."""
        if value not in (True, False):
            raise ValueError(f"Distribution.set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._checking():
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint) or param not in self.__dict__:
                    continue  # a parameter derived on first use (Categorical's logits from its probs)
                value = self.__dict__[param]
                if not _all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                        f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                        f"values:\n{_values(value)}")

    def _checking(self) -> bool:
        """Whether to validate now: asked for, and no capture (mg.compile) running."""
        return bool(self._validate_args) and _state.capture() is None

    # -- shapes ------------------------------------------------------------------------------------

    @property
    def batch_shape(self) -> tuple:
        """The shape over which parameters are batched (independent distributions side by side)."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        """The shape of a single draw (``()`` for the scalar distributions here)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        """``sample_shape + batch_shape + event_shape``: the shape of ``sample(sample_shape)``."""
        return _sample_shape(sample_shape, self) + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement expand")

    # -- moments -----------------------------------------------------------------------------------

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        """The standard deviation: ``variance.sqrt()`` unless the distribution says otherwise."""
        return self.variance.sqrt()

    # -- draws and densities -----------------------------------------------------------------------

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(
            f"{type(self).__name__} has no rsample: its draws are not a differentiable function of its parameters "
            f"(has_rsample is False). Use sample(), and a score-function estimator (log_prob(x) * reward) for "
            "gradients")

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        """``exp(entropy())``, batched over ``batch_shape``."""
        return self.entropy().exp()

    # -- validation --------------------------------------------------------------------------------

    def _value(self, value, like: Tensor, dtype=None) -> Tensor:
        """``value`` as a Tensor (a number or array takes ``like``'s device and dtype, or ``dtype``),
        checked against the batch and event shapes and the support when validating (PyTorch's
        checks and messages)."""
        if not isinstance(value, Tensor):
            if isinstance(value, bool) or not (isinstance(value, (numbers.Real, list, tuple, np.ndarray))
                                               or _be.is_cupy_array(value)):
                raise ValueError(f"{type(self).__name__}: the value argument to log_prob must be a Tensor "
                                 f"(or a number or array), got {type(value).__name__}")
            value = _tensor(value, dtype=like.dtype if dtype is None else dtype, device=like.device)
        if self._checking():
            self._validate_sample(value)
        return value

    def _validate_sample(self, value: Tensor) -> None:
        shape, event = tuple(value.shape), self._event_shape
        if shape[len(shape) - len(event):] != event:
            raise ValueError(f"{type(self).__name__}: the right-most size of value must match event_shape: "
                             f"{shape} vs {event}.")
        expected = self._batch_shape + event
        for i, j in zip(reversed(shape), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"{type(self).__name__}: value is not broadcastable with batch_shape+event_shape: "
                                 f"{shape} vs {expected}.")
        support = self.support
        if not _all_true(support.check(value)):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be within the support "
                f"({support!r}) of the distribution {self!r}, but found invalid values:\n{_values(value)}")

    def __repr__(self):
        shown = []
        for p in self.arg_constraints:
            v = self.__dict__.get(p)
            if isinstance(v, Tensor):
                shown.append(f"{p}: {_values(v).item() if v.data.size == 1 else tuple(v.shape)}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _sample_shape(sample_shape, dist) -> tuple:
    """``sample_shape`` as a tuple of ints (an int is a 1-D shape)."""
    shape = (sample_shape,) if isinstance(sample_shape, numbers.Integral) else sample_shape
    try:
        shape = tuple(shape)
    except TypeError:
        shape = None
    if shape is None or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0 for s in shape):
        raise TypeError(f"{type(dist).__name__}: sample_shape must be a tuple of non-negative ints "
                        f"(a torch.Size), got {sample_shape!r}")
    return tuple(int(s) for s in shape)


def _values(t: Tensor) -> np.ndarray:
    """A tensor's values on the host, for a message (an explicit copy from a device)."""
    return _be.to_numpy(t.data)


def _all_true(check: Tensor) -> bool:
    return bool(_values(check).all())


class lazy_property:
    """A parameter derived on first use and kept (PyTorch's): Categorical's ``logits`` from its
    ``probs``, or the other way round. The instance's own attribute, once set, wins."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = self.fn(obj)
        obj.__dict__[self.__name__] = value
        return value


def broadcast_all(*values, names=None, dist="distribution"):
    """The parameters ``values`` as Tensors broadcast to one shape (PyTorch's ``broadcast_all``):
    numbers take the first Tensor's dtype and device (the default dtype when there is none);
    arrays and lists become Tensors. ``names`` and ``dist`` name them in errors."""
    names = names or [f"argument {i}" for i in range(len(values))]
    first = next((v for v in values if isinstance(v, Tensor)), None)
    out = []
    for name, v in zip(names, values, strict=True):
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, numbers.Real) and not isinstance(v, bool):
            out.append(_tensor(float(v), dtype=None if first is None else first.dtype,
                               device=None if first is None else first.device))
        elif isinstance(v, (list, tuple, np.ndarray)) or _be.is_cupy_array(v):
            out.append(_tensor(v, device=None if first is None else first.device))
        else:
            raise ValueError(f"{dist}: {name} must be a Tensor or a number, got {type(v).__name__}")
    try:
        shape = np.broadcast_shapes(*(t.shape for t in out))
    except ValueError:
        raise ValueError(f"{dist}: the parameters do not broadcast together: " + ", ".join(
            f"{n} of shape {tuple(t.shape)}" for n, t in zip(names, out, strict=True))) from None
    return tuple(t if tuple(t.shape) == shape else t.broadcast_to(shape) for t in out)
