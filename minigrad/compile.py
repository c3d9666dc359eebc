"""``mg.compile``: capture a training step once, replay its array calls.

In eager mode every op costs a few microseconds of Python: a Tensor, a Node, checks, the rule's
own Python in backward. A step that runs the same ops every call can skip all of it: the second
call for an input signature runs eagerly while a capture (an observer in this thread's Mode,
``minigrad._state``) writes down every array step it performs, and later calls run only those.

What the capture sees:

- every op's forward, through ``engine.run_op`` (the ops inside gradient rules too: a first-order
  rule is Tensor ops with recording off, so backward is a list of forwards like any other, and
  gradients are summed by ops);
- the array steps that are not ops, through ``_state.array_step``, in three places only: backward's
  accumulation (the seed, ``.grad`` += ...), the optimizer (its ``step``, ``zero_grad``, a
  scheduler's ``step``) and creation.py (``Tensor(...)``, ``mg.zeros`` and friends, random draws,
  a tensor's own copy before a write). A kernel is called again on replay with the arguments of
  that moment: an optimizer reads its ``lr`` and state then;
- Python state the step sets, through ``_state.assign`` (``model.train()``, ``t.grad = g``), set
  again on replay;
- Python that a replay cannot repeat, through ``_state.refuse``: ``.item()``, ``bool(t)``,
  ``.numpy()``, new parameters, module changes, and in-place writes into the inputs.

Each array an op or kernel returns gets a register. An operand is a register when its array is
one; otherwise it is read live from its Tensor (a parameter, a buffer: ``T3.data`` at the
moment of use, so a replaced or updated array is seen) or, for a non-Tensor array, it is a
constant. The program becomes straight-line Python (``r5 = f3(x0, r1, T0.data)``), compiled
once, with ``del`` after each register's last use so memory is freed as eagerly as the tape
frees it. Guards at the top of a replay check that each live tensor still has the shape,
dtype, device and ``requires_grad`` it had at capture, and each module called still has its
``training`` mode; when one does not, the step captures again instead of replaying.

What a replay cannot see: Python values the function reads but is not given (a closure
variable rebound to another Tensor, a global counter, a layer added to a model), and
NumPy run by hand on ``.data`` inside the function. docs/compile.md says so to users.
"""
from __future__ import annotations

import functools
import threading
import types
import warnings

import numpy as np

from . import _state
from . import backend as _be
from .capture import SCALARS, Capture, CompileError, Stale, is_array
from .tensor import Tensor

__all__ = ["compile", "Compiled", "CompileError"]

_lock = threading.Lock()
_nd = np.ndarray


class CompileStats:
    """How a compiled step's calls ran: ``eager`` (first calls of a signature), ``captures``,
    ``replays``, ``fallbacks`` (eager calls of a function that could not be captured)."""

    __slots__ = ("eager", "captures", "replays", "fallbacks")

    def __init__(self):
        self.eager = self.captures = self.replays = self.fallbacks = 0

    def __getitem__(self, key):
        return getattr(self, key)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "CompileStats(" + ", ".join(f"{k}={v}" for k, v in self.as_dict().items()) + ")"


def compile(fn=None, *, fallback: bool = False):  # noqa: A001 - the public name, as torch.compile
    """Capture ``fn`` once and replay its array steps on later calls.

    The first call with a new input signature (each Tensor or array argument's shape, dtype,
    device and ``requires_grad``; the values of Python scalar arguments) runs eagerly, the
    second runs eagerly while capturing, later calls replay: the forwards, the gradient rules,
    the accumulation into ``.grad``, the optimizer's update, ``zero_grad`` and random draws,
    bitwise equal to eager on the CPU. Parameters, optimizer state and hyper-parameters are
    read live at each replay.

    Args:
        fn: the step: takes Tensors (and Python scalars), returns a Tensor, a tuple of them,
            or None. Usable as ``@mg.compile`` or ``@mg.compile(fallback=True)``.
        fallback: run a function that cannot be captured eagerly (one warning) instead of
            raising ``mg.CompileError``.

    >>> @mg.compile
    ... def step(x, y):
    ...     opt.zero_grad()
    ...     loss = F.cross_entropy(model(x), y)
    ...     loss.backward()
    ...     opt.step()
    ...     return loss
    """
    if fn is None:
        return functools.partial(compile, fallback=fallback)
    if not callable(fn):
        raise TypeError(f"compile: expected a function, got {type(fn).__name__}")
    return Compiled(fn, fallback)


class Compiled:
    """A compiled step: call it as the function. ``stats``, ``tape()``."""

    def __init__(self, fn, fallback=False):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.fallback = fallback
        self.stats = CompileStats()
        self._calls = {}     # signature -> eager calls so far
        self._programs = {}  # signature -> _Program
        self._eager = set()  # signatures that could not be captured (fallback=True)
        self._last = None    # the last program captured (tape())
        self._warned = False

    def __call__(self, *args, **kwargs):
        if _state.active and _state.capture() is not None:
            return self.fn(*args, **kwargs)  # inside another step's capture: it writes these ops down
        flat = []
        key = _signature(args, kwargs, flat)
        prog = self._programs.get(key)
        if prog is not None:
            try:
                out = prog.run(flat)
            except Stale:
                del self._programs[key]
                return self._capture(key, args, kwargs, flat)
            self.stats.replays += 1
            return out
        if key in self._eager:
            self.stats.fallbacks += 1
            return self.fn(*args, **kwargs)
        n = self._calls.get(key, 0)
        self._calls[key] = n + 1
        if n == 0:
            self.stats.eager += 1
            return self.fn(*args, **kwargs)
        return self._capture(key, args, kwargs, flat)

    def __get__(self, obj, objtype=None):
        """``@mg.compile`` on a method: ``model.step(x)`` passes the instance (one program per instance)."""
        return self if obj is None else types.MethodType(self, obj)

    def _capture(self, key, args, kwargs, flat):
        cap = Capture(flat, self.fallback)
        token = _state.add_observer(cap)
        with _lock:
            _state.active += 1
        try:
            result = self.fn(*args, **kwargs)
        finally:
            with _lock:
                _state.active -= 1
            _state.reset(token)
        if cap.gave_up is not None:
            self._eager.add(key)
            self.stats.fallbacks += 1
            if not self._warned:
                self._warned = True
                warnings.warn(f"mg.compile: {_name(self.fn)} runs eagerly: {cap.gave_up}", RuntimeWarning,
                              stacklevel=3)
            return result
        prog = cap.finish(result, _name(self.fn))
        self._programs[key] = self._last = prog
        self.stats.captures += 1
        return result

    def tape(self):
        """The captured program of the last capture (its ``repr`` is the listing; ``.to_dot()``
        for ``mg.viz``). None before the first capture."""
        return None if self._last is None else self._last.tape

    def __repr__(self):
        return f"<mg.compile {_name(self.fn)}: {self.stats}>"


def _name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _signature(args, kwargs, flat):
    """The key a capture is valid for; appends each Tensor or array argument to ``flat``."""
    key = []
    seen = {}  # id -> position in flat: step(x, x) and step(x, z) are different programs
    stack = [kwargs, args] if kwargs else [args]
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            d = v.data
            n = len(flat)
            dev = d.__class__ if d.__class__ is _nd else _be.device_of(d)
            key.append((d.shape, d.dtype, dev, v._requires_grad, seen.setdefault(id(v), n), seen.setdefault(id(d), n)))
            flat.append(v)
        elif isinstance(v, tuple) or isinstance(v, list):
            key.append((v.__class__, len(v)))
            stack.extend(reversed(v))
        elif isinstance(v, SCALARS) or isinstance(v, np.generic):
            key.append((v.__class__, v))
        elif is_array(v):
            dev = v.__class__ if v.__class__ is _nd else _be.device_of(v)
            key.append(("A", v.shape, v.dtype, dev, seen.setdefault(id(v), len(flat))))
            flat.append(v)
        elif isinstance(v, dict):
            key.append((dict, tuple(v)))
            stack.extend(reversed(list(v.values())))
        else:  # a module, an optimizer, a sparse tensor: the same object, the same program
            key.append(("O", id(v)))
    return tuple(key)
