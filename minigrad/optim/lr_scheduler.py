"""Learning-rate schedules (PyTorch's): call ``scheduler.step()`` once per epoch, after
``optimizer.step()``.

>>> sched = mg.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
>>> for epoch in range(100):
...     train_one_epoch(); sched.step()
"""
from __future__ import annotations

import math

from .. import _state
from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "ExponentialLR", "LambdaLR"]


class LRScheduler:
    """Base class: sets each group's ``lr`` from ``get_lr()`` at every ``step()``.

    ``base_lrs`` are the groups' learning rates when the scheduler was made (kept in each
    group as ``initial_lr``); ``last_epoch`` counts steps.
    """

    def __init__(self, optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a schedule")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last ``step()``."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance one epoch and set the new learning rates (again on each replay of a captured
        step, mg.compile, that calls it)."""
        _state.kernel(self._advance)

    def _advance(self):
        self.last_epoch += 1
        for g, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if int(step_size) <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size}")
        self.step_size = int(step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``: from the base rate
    down to ``eta_min`` over ``T_max`` epochs (and back up after, as PyTorch does)."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):  # noqa: N803
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * c for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """``base_lr * lr_lambda(epoch)`` (one function, or one per parameter group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(fns) != n:
            raise ValueError(f"LambdaLR: expected {n} lr_lambdas, got {len(fns)}")
        self.lr_lambdas = fns
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas, strict=True)]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
