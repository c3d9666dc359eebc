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

from .. import _state
from .. import autograd as _ag
from .. import backend as _be
from ..tensor import Tensor, wrap as _wrap, zero_grads

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "LRScheduler", "StepLR", "CosineAnnealingLR",
           "ExponentialLR", "LambdaLR"]


class Optimizer:
    """Base class: holds ``param_groups`` (list of dicts with "params" and hyper-parameters)
    and per-parameter ``state``; subclasses define ``step()``."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}  # Tensor -> dict of that parameter's state
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params must be an iterable of Tensors (e.g. model.parameters()), got a single Tensor; wrap it in a list"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        if not isinstance(group, dict):
            raise TypeError(f"add_param_group: expected a dict, got {type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("optimizer can only optimize leaf tensors (parameters), got a computed one")
            if not p.requires_grad:
                raise ValueError(f"optimizer got a tensor of shape {p.shape} that does not require grad")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise ValueError("some parameters appear in more than one parameter group (or twice in one)")
        g = dict(self.defaults)
        g.update(group)
        g["params"] = params
        self._check_group(g)
        self.param_groups.append(g)

    def _check_group(self, g):
        lr = g.get("lr")
        if lr is None or not isinstance(lr, (int, float)) or lr < 0:
            raise ValueError(f"{type(self).__name__}: invalid learning rate {lr!r} (a number >= 0 is required)")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (``.grad = None``)."""
        _state.kernel(self._zero_grad, set_to_none)  # a captured step (mg.compile) does it again

    def _zero_grad(self, set_to_none):
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given.

        A captured step (mg.compile) calls the update again on each replay: it reads the
        hyper-parameters (a scheduled ``lr``), the state and the gradients of that moment."""
        loss = self._closure(closure)
        _state.kernel(self._update)
        return loss

    def _update(self):
        raise NotImplementedError

    def _closure(self, closure):
        if closure is None:
            return None
        with _ag.enable_grad():
            return closure()

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` (PyTorch's layout);
        arrays are host-independent backend arrays, save it with ``mg.save``."""
        index = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            gg = {k: v for k, v in g.items() if k != "params"}
            gg["params"] = ids
            groups.append(gg)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: (_wrap(v) if hasattr(v, "shape") else v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` returned (for the same parameters in the same order)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"load_state_dict: the saved state has {len(groups)} parameter groups, this optimizer {len(self.param_groups)}"
            )
        params = []
        for saved, own in zip(groups, self.param_groups, strict=True):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError(
                    f"load_state_dict: a saved parameter group has {len(saved['params'])} parameters, "
                    f"this optimizer's {len(own['params'])}"
                )
            params.extend(zip(saved["params"], own["params"], strict=True))
        saved_state = state_dict.get("state", {})
        new_state = {}
        for idx, p in params:
            st = saved_state.get(idx, saved_state.get(str(idx)))
            if st is None:
                continue
            entry = {}
            for k, v in st.items():
                if hasattr(v, "shape") and getattr(v, "ndim", 0) > 0 or isinstance(v, Tensor):
                    a = v.data if isinstance(v, Tensor) else v
                    if tuple(a.shape) != tuple(p.shape):
                        raise ValueError(
                            f"load_state_dict: state {k!r} of parameter {idx} has shape {tuple(a.shape)}, "
                            f"the parameter {tuple(p.shape)}"
                        )
                    a = _be.to_device(a, _be.device_of(p.data)) if _be.device_of(a) != _be.device_of(p.data) \
                        else a
                    entry[k] = a.astype(p.data.dtype, copy=True)
                elif hasattr(v, "shape"):  # 0-d array (step counts)
                    entry[k] = v.item() if hasattr(v, "item") else v
                else:
                    entry[k] = v
            new_state[p] = entry
        for saved, own in zip(groups, self.param_groups, strict=True):
            for k, v in saved.items():
                if k != "params":
                    own[k] = v.item() if hasattr(v, "item") and getattr(v, "ndim", 1) == 0 else v
        self.state = new_state

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


def _grad_array(p):
    g = p._grad
    if g is None:
        return None
    if g.__class__ is not Tensor and not isinstance(g, Tensor):  # a sparse gradient
        raise TypeError(
            "this optimizer needs dense gradients; got a sparse one (convert with .to_dense() "
            "or keep the parameter dense)"
        )
    return g.data


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


from . import lr_scheduler  # noqa: E402
from .lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, LRScheduler, StepLR  # noqa: E402
