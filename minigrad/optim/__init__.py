"""Optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam, AdamW, RMSprop, Adagrad;
learning-rate schedules in ``mg.optim.lr_scheduler`` (also here: ``mg.optim.StepLR``,
``CosineAnnealingLR``, ``ReduceLROnPlateau``, ``OneCycleLR``...).

Each update follows PyTorch's formulas operation for operation (float64 results agree to
~1e-16). Updates are array operations (nothing records them) that write each parameter's own array in place
(bumping its version counter); gradients are only read.

>>> opt = mg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
>>> opt.zero_grad(); loss.backward(); opt.step()
"""
from __future__ import annotations

import math

from .. import backend as _be
from . import lr_scheduler
from .lr_scheduler import (
    CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler, MultiStepLR, OneCycleLR, ReduceLROnPlateau,
    StepLR,
)
from .optimizer import Optimizer, _grad_array, _with_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler", "LRScheduler", "StepLR",
           "CosineAnnealingLR", "ExponentialLR", "LambdaLR", "MultiStepLR", "LinearLR", "OneCycleLR",
           "ReduceLROnPlateau"]


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's update:

    ``g = grad + weight_decay * p``; with momentum ``buf = momentum * buf + (1 - dampening) * g``
    (``buf = g`` the first time), ``g = g + momentum * buf`` (Nesterov) or ``g = buf``;
    ``p -= lr * g``.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False, weight_decay: float = 0.0, maximize: bool = False):
        if momentum < 0:
            raise ValueError(f"SGD: invalid momentum {momentum} (must be >= 0)")
        if weight_decay < 0:
            raise ValueError(f"SGD: invalid weight_decay {weight_decay} (must be >= 0)")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                                      weight_decay=weight_decay, maximize=maximize))

    def _update(self):  # arrays only: nothing here records, so no no_grad() is needed
        for group in self.param_groups:
            lr = group["lr"]
            momentum = group["momentum"]
            wd = group["weight_decay"]
            plain = momentum == 0 and wd == 0 and not group["maximize"]
            for p in group["params"]:
                g = _grad_array(p)
                if g is None:
                    continue
                d = p.data
                if plain:  # the hot path: one scaled temporary, one in-place subtract
                    d -= lr * g
                    p._storage.version += 1
                    continue
                if group["maximize"]:
                    g = -g
                if wd != 0:
                    g = g + wd * d
                if momentum != 0:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        # an array, never a NumPy scalar (0-d arithmetic gives one), so the
                        # in-place updates below reach the stored buffer
                        buf = _be.array_module(d).array(g, copy=True)
                        st["momentum_buffer"] = buf
                    else:
                        buf *= momentum
                        buf += (1 - group["dampening"]) * g
                    g = g + momentum * buf if group["nesterov"] else buf
                d -= lr * g
                p._storage.version += 1


class Adam(Optimizer):
    """Adam (Kingma & Ba), PyTorch's update, with optional L2 ``weight_decay`` added to the
    gradient and ``amsgrad``. For decoupled weight decay use ``AdamW``."""

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 amsgrad: bool = False, maximize: bool = False):
        if not 0.0 <= eps:
            raise ValueError(f"{type(self).__name__}: invalid eps {eps}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"{type(self).__name__}: invalid betas {tuple(betas)} (each must be in [0, 1))")
        if weight_decay < 0:
            raise ValueError(f"{type(self).__name__}: invalid weight_decay {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update(self):
        """One Adam update of every parameter that has a gradient (arrays only: nothing records)."""
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            for p, d, xp, g in _with_grads(group):
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = {
                        "step": 0,
                        "exp_avg": xp.zeros_like(d),
                        "exp_avg_sq": xp.zeros_like(d),
                    }
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = xp.zeros_like(d)
                st["step"] += 1
                step = st["step"]
                if wd != 0:
                    if self._decoupled:
                        d *= 1 - lr * wd
                    else:
                        g = g + wd * d
                m, v = st["exp_avg"], st["exp_avg_sq"]
                # m.lerp_(g, 1 - beta1), as PyTorch computes it (weight < 0.5)
                w1 = 1 - beta1
                if w1 < 0.5:
                    m += w1 * (g - m)
                else:
                    m[...] = g - (g - m) * (1 - w1)
                v *= beta2
                v += (1 - beta2) * (g * g)
                bc1 = 1 - beta1 ** step
                bc2 = 1 - beta2 ** step
                step_size = lr / bc1
                bc2_sqrt = math.sqrt(bc2)
                if group["amsgrad"]:
                    vmax = st["max_exp_avg_sq"]
                    xp.maximum(vmax, v, out=vmax)
                    denom = xp.sqrt(vmax) / bc2_sqrt
                else:
                    denom = xp.sqrt(v) / bc2_sqrt
                denom += eps
                d -= step_size * (m / denom)
                p._storage.version += 1


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam step. PyTorch's default ``weight_decay=1e-2``."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)



class RMSprop(Optimizer):
    """RMSprop, PyTorch's update: ``g = grad + weight_decay * p``;
    ``v = alpha * v + (1 - alpha) * g^2``; centered: ``m = lerp(m, g, 1 - alpha)`` and
    ``avg = sqrt(v - m^2) + eps``, else ``avg = sqrt(v) + eps``; with momentum
    ``buf = momentum * buf + g / avg``, ``p -= lr * buf``, else ``p -= lr * g / avg``.

    >>> opt = mg.optim.RMSprop(model.parameters(), lr=0.01, momentum=0.9, centered=True)
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False, maximize: bool = False):
        for name, v in (("eps", eps), ("momentum", momentum), ("weight_decay", weight_decay), ("alpha", alpha)):
            if not v >= 0.0:
                raise ValueError(f"RMSprop: invalid {name} {v} (must be >= 0)")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _update(self):
        """One RMSprop update of every parameter that has a gradient (arrays only: nothing records)."""
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            for p, d, xp, g in _with_grads(group):
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = {"step": 0, "square_avg": xp.zeros_like(d)}
                    if momentum > 0:
                        st["momentum_buffer"] = xp.zeros_like(d)
                    if group["centered"]:
                        st["grad_avg"] = xp.zeros_like(d)
                st["step"] += 1
                if wd != 0:
                    g = g + wd * d
                v = st["square_avg"]
                v *= alpha
                v += (1 - alpha) * (g * g)
                if group["centered"]:
                    m = st["grad_avg"]
                    _lerp(m, g, 1 - alpha)
                    avg = xp.sqrt(v - m * m)
                else:
                    avg = xp.sqrt(v)
                avg += eps
                if momentum > 0:
                    buf = st["momentum_buffer"]
                    buf *= momentum
                    buf += g / avg
                    d -= lr * buf
                else:
                    d -= lr * (g / avg)
                p._storage.version += 1


def _lerp(m, g, w):
    """``m.lerp_(g, w)`` in place, as PyTorch computes it (two formulas, split at w = 0.5)."""
    if w < 0.5:
        m += w * (g - m)
    else:
        m[...] = g - (g - m) * (1 - w)


class Adagrad(Optimizer):
    """Adagrad, PyTorch's update: ``g = grad + weight_decay * p``;
    ``clr = lr / (1 + (step - 1) * lr_decay)``; ``sum += g^2``; ``p -= clr * g / (sqrt(sum) + eps)``.

    >>> opt = mg.optim.Adagrad(model.parameters(), lr=0.1)
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, maximize: bool = False):
        for name, v in (("lr_decay", lr_decay), ("weight_decay", weight_decay),
                        ("initial_accumulator_value", initial_accumulator_value), ("eps", eps)):
            if not v >= 0.0:
                raise ValueError(f"Adagrad: invalid {name} {v} (must be >= 0)")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize))

    def _update(self):
        """One Adagrad update of every parameter that has a gradient (arrays only: nothing records)."""
        for group in self.param_groups:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p, d, xp, g in _with_grads(group):
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = {"step": 0, "sum": xp.full_like(d, group["initial_accumulator_value"])}
                st["step"] += 1
                if wd != 0:
                    g = g + wd * d
                clr = lr / (1 + (st["step"] - 1) * group["lr_decay"])
                s = st["sum"]
                s += g * g
                std = xp.sqrt(s)
                std += eps
                d -= clr * (g / std)
                p._storage.version += 1
