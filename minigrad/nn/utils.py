"""Gradient clipping and flat parameter vectors, PyTorch's ``torch.nn.utils``.

>>> loss.backward()
>>> total = mg.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
>>> opt.step()
"""
from __future__ import annotations

import math

from ..grad_mode import no_grad
from ..engine import run_op
from ..ops.elementwise import maximum, minimum
from ..ops._registry import defop
from ..ops.shape import concatenate
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _params(parameters, op):
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        ps = list(parameters)
    except TypeError:
        raise TypeError(f"{op}: expected a Tensor or an iterable of Tensors, got {type(parameters).__name__}") from None
    for p in ps:
        if not isinstance(p, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(p).__name__}")
    return ps


def _dense_grads(ps, op):
    grads = [p.grad for p in ps if p.grad is not None]
    for g in grads:
        if not isinstance(g, Tensor):
            raise TypeError(f"{op}: sparse gradients are not supported (got {type(g).__name__})")
    return grads


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False):
    """Scale the gradients in place so that their joint norm is at most ``max_norm``.

    Args:
        parameters: a Tensor or an iterable of Tensors (their ``.grad`` is changed in place;
            those without one are skipped).
        max_norm: the largest total norm allowed.
        norm_type: p of the p-norm over all gradients as one vector; ``float("inf")`` for the
            largest absolute value.
        error_if_nonfinite: raise a RuntimeError when the total norm is NaN or infinite.

    Returns:
        the total norm of the gradients before clipping, a one-element Tensor (PyTorch's
        formula: each gradient scaled by ``max_norm / (total + 1e-6)`` when that is below 1).

    >>> p = mg.nn.Parameter(mg.zeros(2)); p.grad = mg.tensor([3.0, 4.0])
    >>> mg.nn.utils.clip_grad_norm_([p], 1.0).item()
    5.0
    """
    ps = _params(parameters, "clip_grad_norm_")
    grads = _dense_grads(ps, "clip_grad_norm_")
    norm_type = float(norm_type)
    max_norm = float(max_norm)
    with no_grad():
        if not grads:
            return Tensor(0.0)
        if math.isinf(norm_type):
            total = grads[0].abs().max()
            for g in grads[1:]:
                total = maximum(total, g.abs().max())
        elif norm_type == 2.0:
            total = _sum([(g * g).sum() for g in grads]).sqrt()
        elif norm_type == 1.0:
            total = _sum([g.abs().sum() for g in grads])
        else:
            total = _sum([(g.abs() ** norm_type).sum() for g in grads]) ** (1.0 / norm_type)
        if error_if_nonfinite:
            total = run_op(_FINITE, total, norm_type=norm_type)
        coef = minimum(max_norm / (total + 1e-6), 1.0)  # as PyTorch: a NaN norm makes every gradient NaN
        for g in grads:
            g.mul_(coef)
    return total


def _finite(xp, total, norm_type):
    """``total``, checked finite (an op, so that a captured step, mg.compile, checks on each replay)."""
    if not bool(xp.isfinite(total).all()):
        raise RuntimeError(
            f"the total norm of order {norm_type} of the gradients is {total.reshape(()).item()}, so they "
            "cannot be clipped; pass error_if_nonfinite=False to clip anyway"
        )
    return total


# an op without a rule (the norm it checks is computed under no_grad): registered like every op
_FINITE = defop("clip_grad_norm_", _finite, kind="other")


def _sum(ts):
    out = ts[0]
    for t in ts[1:]:
        out = out + t
    return out


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``.

    >>> p = mg.nn.Parameter(mg.zeros(2)); p.grad = mg.tensor([-3.0, 0.5])
    >>> mg.nn.utils.clip_grad_value_([p], 1.0); p.grad.tolist()
    [-1.0, 0.5]
    """
    ps = _params(parameters, "clip_grad_value_")
    v = float(clip_value)
    with no_grad():
        for g in _dense_grads(ps, "clip_grad_value_"):
            g.clamp_(-v, v)


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and joined into one 1-D Tensor (differentiable).

    >>> mg.nn.utils.parameters_to_vector(mg.nn.Linear(3, 2).parameters()).shape
    (8,)
    """
    ps = _params(parameters, "parameters_to_vector")
    if not ps:
        raise ValueError("parameters_to_vector: got no parameters")
    devices = {p.device for p in ps}
    if len(devices) > 1:
        raise RuntimeError(f"parameters_to_vector: parameters lie on several devices {sorted(devices)}")
    return concatenate([p.reshape(-1) for p in ps])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters``, in place (their shapes and
    order as ``parameters_to_vector`` lays them out). Unlike PyTorch the parameters keep their
    own storage (a copy, not an alias of ``vec``).

    >>> lin = mg.nn.Linear(3, 2)
    >>> mg.nn.utils.vector_to_parameters(mg.zeros(8), lin.parameters())
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected vec to be a Tensor, got {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-D, got shape {vec.shape}")
    ps = _params(parameters, "vector_to_parameters")
    need = sum(p.size for p in ps)
    if need != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: the parameters hold {need} values, vec has {vec.shape[0]}")
    at = 0
    with no_grad():
        for p in ps:
            n = p.size
            p.copy_(vec[at:at + n].reshape(p.shape))
            at += n
