"""The base class of every optimizer: parameter groups, ``zero_grad``, ``step`` as one kernel,
state dicts (PyTorch's layout). ``mg.optim`` holds the optimizers; ``lr_scheduler`` the schedules."""
from __future__ import annotations

from .. import _state
from .. import autograd as _ag
from .. import backend as _be
from ..tensor import Tensor, wrap as _wrap


def zero_grads(params, set_to_none: bool = True) -> None:
    """Forget the gradients of ``params`` (``.grad = None``, or zeros): optimizers' and modules'
    ``zero_grad``, again on each replay of a captured step (mg.compile), as the update."""
    _state.array_step(_zero_grads, tuple(params), set_to_none)


def _zero_grads(params, set_to_none):
    for p in params:
        g = p._grad
        p._grad = None if set_to_none or g is None else _wrap(g.data * 0)


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
        zero_grads([p for group in self.param_groups for p in group["params"]], set_to_none)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given.

        A captured step (mg.compile) calls the update again on each replay: it reads the
        hyper-parameters (a scheduled ``lr``), the state and the gradients of that moment."""
        loss = self._closure(closure)
        _state.array_step(self._update)
        return loss

    def _update(self):
        raise NotImplementedError

    def _run_schedule(self, advance):
        """``advance()``, a learning-rate schedule's step (lr_scheduler.py), which sets the groups'
        ``lr``: like the update, a captured step (mg.compile) runs it again on each replay."""
        _state.array_step(advance)

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


def _with_grads(group):
    """(parameter, its array, the array module, its gradient array) for each parameter of ``group``
    that has a gradient; the gradient negated when the group maximizes. A complex parameter is given
    as its real pairs (PyTorch 2's ``view_as_real``: flat, a view that writes through), so that an
    update's squares (Adam's second moment, RMSprop's, Adagrad's) are kept per part, as PyTorch's."""
    for p in group["params"]:
        g = _grad_array(p)
        if g is None:
            continue
        d = p.data
        xp = _be.array_module(d)
        if d.dtype.kind == "c":
            d, g = _pairs(xp, d, p), _pairs(xp, xp.ascontiguousarray(g))
        yield p, d, xp, (-g if group.get("maximize") else g)


def _pairs(xp, a, p=None):
    """A complex array's flat real pairs, a view of it (``p``: the parameter, named when it cannot be)."""
    if not a.flags.c_contiguous:
        raise ValueError(f"optimizer: the complex parameter of shape {p.shape} is not contiguous, so its real pairs "
                         "cannot be updated in place; make it contiguous (.contiguous()) before the optimizer takes it")
    return a.reshape(-1).view(a.real.dtype)


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
