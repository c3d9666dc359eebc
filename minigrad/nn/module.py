"""``Module`` and ``Parameter``: the registry of parameters, buffers and children, state dicts.

Re-exported as ``mg.nn.Module`` / ``mg.nn.Parameter``; the layers are in ``layers.py``.
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from .. import _state
from .. import backend as _be
from .._util import NOARG
from ..errors import MinigradError
from ..optim.optimizer import zero_grads
from ..tensor import Storage, Tensor, get_default_dtype


class StateDictError(MinigradError, RuntimeError):
    """``load_state_dict`` found missing, unexpected or wrong-shaped entries."""


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable (``requires_grad=True`` by default).

    ``Parameter(data)`` shares ``data``'s storage when it is a Tensor or an array.

    >>> w = mg.nn.Parameter(mg.zeros(3, 2))
    >>> w.requires_grad
    True
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = np.empty((0,), dtype=get_default_dtype())
        Tensor.__init__(self, data)
        if isinstance(data, Tensor):
            self._storage = data._storage  # the same storage, the same version counter
        if requires_grad:
            self.requires_grad = True

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__


def _check_name(name, kind):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name must be a str, got {type(name).__name__}")
    if "." in name or name == "":
        raise KeyError(f"{kind} name {name!r} must be non-empty and contain no '.'")


class Module:
    """Base class of layers and models.

    Assigning a ``Parameter`` or a ``Module`` to an attribute registers it; ``parameters()``,
    ``state_dict()``, ``to()``, ``train()``/``eval()`` then walk the tree of modules.
    Subclasses define ``forward``; calling the module calls it.

    >>> class MLP(mg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = mg.nn.Linear(2, 16)
    ...         self.fc2 = mg.nn.Linear(16, 1)
    ...     def forward(self, x):
    ...         return self.fc2(self.fc1(x).relu())
    """

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_param_names"] = {}     # name -> None, in registration order
        d["_module_names"] = {}
        d["_buffer_names"] = {}    # name -> persistent (bool)

    # -- registration -----------------------------------------------------------------------
    def _registries(self):
        d = self.__dict__
        if "_param_names" not in d:
            raise AttributeError(
                f"cannot assign parameters, modules or buffers to {type(self).__name__} before "
                "Module.__init__() runs: call super().__init__() first in __init__"
            )
        return d["_param_names"], d["_module_names"], d["_buffer_names"]

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, (Parameter, Module)):
            _state.refuse(f"changing a module's structure (setting {type(self).__name__}.{name})")
        if isinstance(value, Parameter):
            params, modules, buffers = self._registries()
            modules.pop(name, None)
            buffers.pop(name, None)
            params[name] = None
        elif isinstance(value, Module):
            params, modules, buffers = self._registries()
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = None
        elif "_param_names" in d and name in d["_param_names"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter {name!r} of {type(self).__name__} "
                    "(an nn.Parameter or None is expected; wrap it: nn.Parameter(t))"
                )
        elif "_module_names" in d and name in d["_module_names"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as child module {name!r} of {type(self).__name__} "
                    "(an nn.Module or None is expected)"
                )
        elif "_buffer_names" in d and name in d["_buffer_names"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (a Tensor or None is expected)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        for reg in ("_param_names", "_module_names", "_buffer_names"):
            if reg in d:
                d[reg].pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a Parameter, or None for an absent one such as ``bias=False``)."""
        _check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be an nn.Parameter or None, got {type(param).__name__}")
        params, modules, buffers = self._registries()
        modules.pop(name, None)
        buffers.pop(name, None)
        params[name] = None
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Register a Tensor that is state but not a parameter (saved in ``state_dict`` when persistent)."""
        _check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got {type(tensor).__name__}")
        params, modules, buffers = self._registries()
        params.pop(name, None)
        modules.pop(name, None)
        buffers[name] = bool(persistent)
        object.__setattr__(self, name, tensor)

    def add_module(self, name: str, module) -> None:
        """Register a child module under ``name``."""
        _check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be an nn.Module or None, got {type(module).__name__}")
        params, modules, buffers = self._registries()
        params.pop(name, None)
        buffers.pop(name, None)
        modules[name] = None
        object.__setattr__(self, name, module)

    # -- calling --------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward(...)")

    def __call__(self, x=NOARG, /, *args, **kwargs):
        if _state.active:  # a captured step (mg.compile) replays this mode only (train() / eval())
            _state.guard(self, "training")
        if args or kwargs:
            return self.forward(*args, **kwargs) if x is NOARG else self.forward(x, *args, **kwargs)
        # one input, the common call (every layer of a Sequential): passed on without packing
        # it into an argument tuple, which costs as much again as the call
        return self.forward() if x is NOARG else self.forward(x)

    # -- walking the tree -------------------------------------------------------------------------
    def named_children(self):
        """(name, module) of the direct children, in registration order."""
        d = self.__dict__
        for name in d["_module_names"]:
            m = d[name]
            if m is not None:
                yield name, m

    def children(self):
        """The direct child modules."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) of this module and every descendant, parents first; a module
        reachable by two names is listed once unless ``remove_duplicate=False``."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen and (remove_duplicate or name.count(".") > 1000):
                continue
            seen.add(id(m))
            yield name, m
            kids = list(m.named_children())
            for cname, c in reversed(kids):
                stack.append((f"{name}.{cname}" if name else cname, c))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def _named_members(self, names: str, prefix: str, recurse: bool):
        """(dotted name, tensor) of the members listed in each module's ``names`` (``_param_names``
        or ``_buffer_names``), modules parents first; a tensor held by two modules is listed once."""
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mname, m in mods:
            d = m.__dict__
            for name in d[names]:
                t = d[name]
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mname}.{name}" if mname else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """(dotted name, Parameter) pairs; a parameter shared by two modules is listed once."""
        return self._named_members("_param_names", prefix, recurse)

    def parameters(self, recurse: bool = True):
        """The trainable tensors, for an optimizer: ``mg.optim.SGD(model.parameters(), lr=0.1)``."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        """(dotted name, buffer) pairs; a buffer shared by two modules is listed once."""
        return self._named_members("_buffer_names", prefix, recurse)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant, then on this module; returns self."""
        for m in reversed(list(self.modules())):
            fn(m)
        return self

    # -- modes and gradients ------------------------------------------------------------------------
    def train(self, mode: bool = True):
        """Training mode (Dropout active) for this module and its descendants; returns self."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        for m in self.modules():  # (a captured step, mg.compile, sets them again on each replay)
            _state.assign(m, "training", mode)
        return self

    def eval(self):
        """Evaluation mode (Dropout off); returns self."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of every parameter (``.grad = None``, or zeros)."""
        zero_grads(self.parameters(), set_to_none)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    # -- state ----------------------------------------------------------------------------------------
    def _state_items(self):
        """(key, tensor) of every parameter and persistent buffer, shared ones under each name."""
        for mname, m in self.named_modules(remove_duplicate=False):
            d = m.__dict__
            for pname in d["_param_names"]:
                p = d[pname]
                if p is not None:
                    yield (f"{mname}.{pname}" if mname else pname), p
            for bname, persistent in d["_buffer_names"].items():
                b = d[bname]
                if b is not None and persistent:
                    yield (f"{mname}.{bname}" if mname else bname), b

    def state_dict(self, keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Every parameter and persistent buffer by dotted name, as Tensors sharing storage.

        Save it with ``mg.save(model.state_dict(), "model.npz")``.
        """
        out = OrderedDict()
        for k, t in self._state_items():
            out[k] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True):
        """Copy values into this module's parameters and buffers (in place, keeping dtype and device).

        Args:
            state_dict: a mapping from dotted names to Tensors or arrays (``mg.load`` of a saved one).
            strict: missing or unexpected keys are an error (default). A value whose shape
                differs from the parameter's is always an error.

        Returns:
            ``(missing_keys, unexpected_keys)``.

        Raises:
            StateDictError listing every problem at once; nothing is written then.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"load_state_dict: expected a mapping of names to tensors, got {type(state_dict).__name__}")
        own = OrderedDict(self._state_items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        wrong = []
        values = {}
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            a = v.data if isinstance(v, Tensor) else v
            if not hasattr(a, "shape"):
                a = np.asarray(a)
            if getattr(a, "dtype", None) is not None and a.dtype == object:
                wrong.append(f"{k}: value holds Python objects, not numbers")
                continue
            if tuple(a.shape) != tuple(t.shape):
                wrong.append(f"{k}: shape {tuple(a.shape)} in the state dict, {tuple(t.shape)} in the model")
                continue
            values[k] = a
        problems = []
        if strict and missing:
            problems.append("missing key(s): " + ", ".join(repr(k) for k in missing))
        if strict and unexpected:
            problems.append("unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
        if wrong:
            problems.append("wrong shape(s): " + "; ".join(wrong))
        if problems:
            raise StateDictError(
                f"error(s) loading state_dict into {type(self).__name__}:\n  " + "\n  ".join(problems)
                + ("\n  (pass strict=False to skip missing and unexpected keys)" if strict and (missing or unexpected) else "")
            )
        for k, a in values.items():
            t = own[k]
            d = t.data
            if _be.is_cupy_array(d) or _be.is_cupy_array(a):
                a = _be.to_device(a, _be.device_of(d))
            d[...] = a  # casts to the parameter's dtype
            t._storage.version += 1
        return _IncompatibleKeys(missing, unexpected)

    # -- devices and dtypes -------------------------------------------------------------------------------
    def to(self, device=None, dtype=None):
        """Move every parameter and buffer to ``device`` and/or cast floating ones to ``dtype``, in place.

        Parameters keep their identity (an optimizer built before still updates them).
        Returns self.
        """
        if isinstance(device, (np.dtype, type)) and dtype is None:
            device, dtype = None, device
        dev = _be.parse_device(device) if device is not None else None
        dt = np.dtype(dtype) if dtype is not None else None
        if dt is not None and dt.kind not in "fc":
            raise TypeError(f"Module.to: dtype must be floating, got {dt}")
        seen = set()
        for _, t in list(self.named_parameters()) + list(self.named_buffers()):
            if id(t) in seen:
                continue
            seen.add(id(t))
            a = t.data
            changed = False
            if dev is not None and _be.device_of(a) != dev:
                a = _be.to_device(a, dev)
                changed = True
            if dt is not None and a.dtype.kind in "fc" and a.dtype != dt:
                a = a.astype(dt)
                changed = True
            if changed:
                t.data = a
                t._storage = Storage()
                if t.grad is not None:
                    g = t.grad.data
                    if dev is not None:
                        g = _be.to_device(g, dev)
                    if dt is not None and g.dtype != dt:
                        g = g.astype(dt)
                    t.grad = Tensor(g, device=_be.device_of(g))  # not the default device: the parameter's
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def float(self):
        return self.to(dtype=np.float32)

    def double(self):
        return self.to(dtype=np.float64)

    # -- printing ---------------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (its settings)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        kids = list(self.named_children())
        if not kids:
            return f"{type(self).__name__}({extra})"
        lines = [extra] if extra else []
        for name, m in kids:
            lines.append(f"({name}): " + repr(m).replace("\n", "\n  "))
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def num_parameters(self) -> int:
        """How many scalars the parameters hold."""
        return int(sum(p.size for p in self.parameters()))
