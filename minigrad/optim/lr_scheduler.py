"""Learning-rate schedules (PyTorch's): call ``scheduler.step()`` once per epoch, after
``optimizer.step()``.

>>> sched = mg.optim.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
>>> for epoch in range(100):
...     train_one_epoch(); sched.step()
"""
from __future__ import annotations

import math
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "ExponentialLR", "LambdaLR", "MultiStepLR", "LinearLR",
           "OneCycleLR", "ReduceLROnPlateau"]


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
        self._is_initial = True  # the constructor's own step (PyTorch's _initial_mode)
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last ``step()``."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance one epoch and set the new learning rates (again on each replay of a captured
        step, mg.compile, that calls it)."""
        self.optimizer._run_schedule(self._advance)

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


def _lrs(optimizer):
    return [g["lr"] for g in optimizer.param_groups]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch in ``milestones`` (PyTorch's
    recurrence: ``lr * gamma ** count`` at a milestone, so the sequence is PyTorch's to the bit).

    >>> sched = mg.optim.lr_scheduler.MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        ms = list(milestones)
        if any(isinstance(m, bool) or not isinstance(m, int) for m in ms):
            raise TypeError(f"MultiStepLR: milestones must be ints, got {ms!r}")
        self.milestones = Counter(ms)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in _lrs(self.optimizer)]

    def state_dict(self) -> dict:
        d = super().state_dict()
        d["milestones"] = dict(self.milestones)  # int keys: mg.save keeps them
        return d

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): v for k, v in dict(self.milestones).items()})


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor going linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs, then keep it (PyTorch's recurrence, to the bit).

    >>> sched = mg.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)  # warm-up
    """

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        step = self.end_factor - self.start_factor
        scale = 1.0 + step / (self.total_iters * self.start_factor + (self.last_epoch - 1) * step)
        return [lr * scale for lr in lrs]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin), PyTorch's ``OneCycleLR``: call ``step()`` after every
    batch. The rate rises from ``max_lr / div_factor`` to ``max_lr`` over the first ``pct_start``
    of ``total_steps`` (or ``epochs * steps_per_epoch``), then anneals to
    ``initial_lr / final_div_factor`` (``three_phase``: back to the initial rate first); with
    ``cycle_momentum`` the momentum (or Adam's beta1) moves the opposite way.

    >>> sched = mg.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=10, steps_per_epoch=len(loader))
    """

    def __init__(self, optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: expected an optimizer, got {type(optimizer).__name__}")
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"OneCycleLR: total_steps must be a positive int, got {total_steps!r}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            for name, v in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise ValueError(f"OneCycleLR: {name} must be a positive int, got {v!r}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        n = self.total_steps
        if three_phase:
            self._phases = [
                [float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                [float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"],
                [n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"],
            ]
        else:
            self._phases = [
                [float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                [n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"],
            ]
        groups = optimizer.param_groups
        max_lrs = _per_group("max_lr", groups, max_lr)
        if last_epoch == -1:
            for m, g in zip(max_lrs, groups, strict=True):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"OneCycleLR: cycle_momentum needs an optimizer with momentum or betas; "
                                 f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for mx, base, g in zip(_per_group("max_momentum", groups, max_momentum),
                                       _per_group("base_momentum", groups, base_momentum), groups, strict=True):
                    if self.use_beta1:
                        g["betas"] = (mx, *g["betas"][1:])
                    else:
                        g["momentum"] = mx
                    g["max_momentum"] = mx
                    g["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, but total_steps is {self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[m0], g[m1], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    g["betas"] = (mom, *g["betas"][1:])
                else:
                    g["momentum"] = mom
        return lrs


def _per_group(name, groups, value):
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(f"OneCycleLR: expected {len(groups)} values of {name} (one per group), got {len(value)}")
        return list(value)
    return [value] * len(groups)


class ReduceLROnPlateau:
    """Multiply the learning rate by ``factor`` when a metric has stopped improving for
    ``patience`` epochs; PyTorch's ``ReduceLROnPlateau``: ``sched.step(val_loss)`` each epoch.

    Args:
        mode: 'min' (a loss) or 'max' (an accuracy).
        factor: the multiplier, < 1.
        patience: epochs without improvement tolerated before a reduction.
        threshold, threshold_mode: what counts as an improvement: 'rel' (beyond
            ``best * (1 -+ threshold)``) or 'abs' (beyond ``best -+ threshold``).
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: a floor (one number, or one per parameter group).
        eps: reductions smaller than this are skipped.

    >>> sched = mg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2)
    >>> for epoch in range(20):
    ...     train(); sched.step(validate())
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: expected an optimizer, got {type(optimizer).__name__}")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"ReduceLROnPlateau: expected {n} min_lrs (one per group), got {len(min_lr)}")
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * n
        self.factor = factor
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self.best = self.mode_worse
        self.num_bad_epochs = 0
        self.cooldown_counter = 0

    def step(self, metrics) -> None:
        """Record this epoch's metric (a number or a one-element tensor) and reduce the rates if
        it has not improved for more than ``patience`` epochs."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            for g, floor in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
                old = float(g["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    def _is_better(self, a, best):
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def get_last_lr(self) -> list[float]:
        """The learning rates after the last ``step()``."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer (save it with ``mg.save``)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
