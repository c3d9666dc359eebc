"""The sets a distribution's parameters and values live in (PyTorch's ``torch.distributions.constraints``,
the ones the distributions here use). ``c.check(value)`` is a bool Tensor, elementwise over the
batch (an ``event_dim`` of 1 reduces the last axis: ``simplex``); ``repr(c)`` is PyTorch's, so
that a validation error reads as PyTorch's does."""
from __future__ import annotations

import numpy as np

from .. import backend as _be
from ..creation import as_tensor

__all__ = ["Constraint", "real", "real_vector", "positive", "unit_interval", "simplex", "boolean", "interval",
           "integer_interval", "greater_than", "less_than", "dependent", "is_dependent"]


class Constraint:
    """A set of values: ``check(value)`` says, per batch element, whether ``value`` is in it."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A set that depends on other parameters (checked by the distribution itself, or not at all)."""

    def __init__(self, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def check(self, value):
        raise ValueError("dependent constraints cannot be checked")


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value):
        value = as_tensor(value, "Real.check")
        return value == value  # False for NaN (PyTorch's check)


class _RealVector(Constraint):
    event_dim = 1

    def check(self, value):
        value = as_tensor(value, "IndependentConstraint.check")
        return (value == value).all(axis=-1)

    def __repr__(self):
        return "IndependentConstraint(Real(), 1)"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return as_tensor(value, "GreaterThan.check") > self.lower_bound

    def __repr__(self):
        return f"GreaterThan(lower_bound={_show(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return as_tensor(value, "LessThan.check") < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={_show(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = as_tensor(value, "Interval.check")
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={_show(self.lower_bound)}, upper_bound={_show(self.upper_bound)})"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = as_tensor(value, "IntegerInterval.check")
        return ((value % 1) == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        value = as_tensor(value, "Boolean.check")
        return (value == 0) | (value == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        value = as_tensor(value, "Simplex.check")
        return (value >= 0).all(axis=-1) & ((value.sum(axis=-1) - 1).abs() < 1e-6)


def _show(bound):
    """A bound as PyTorch prints it: a number, or a tensor's values."""
    if not hasattr(bound, "data"):
        return bound
    values = _be.to_numpy(bound.data)  # an explicit copy from a device, for a message
    return values.item() if values.size == 1 else f"tensor({np.array2string(values, separator=', ')})"


real = _Real()
real_vector = _RealVector()
positive = _GreaterThan(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
boolean = _Boolean()
interval = _Interval
integer_interval = _IntegerInterval
greater_than = _GreaterThan
less_than = _LessThan
dependent = _Dependent()
