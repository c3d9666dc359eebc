"""Optimizers: SGD (momentum, dampening, Nesterov, weight decay), Adam, AdamW; learning-rate
schedules in ``mg.optim.lr_scheduler`` (also here: ``mg.optim.StepLR``, ``CosineAnnealingLR``).

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
from .lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, LRScheduler, StepLR
from .optimizer import Optimizer, _grad_array

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "LRScheduler", "StepLR", "CosineAnnealingLR",
           "ExponentialLR", "LambdaLR"]


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
                    p._ver[0] += 1
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
                p._ver[0] += 1


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
            for p in group["params"]:
                g = _grad_array(p)
                if g is None:
                    continue
                d = p.data
                xp = _be.array_module(d)
                if group["maximize"]:
                    g = -g
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
                p._ver[0] += 1


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam step. PyTorch's default ``weight_decay=1e-2``."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)

