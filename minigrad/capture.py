"""The capture behind ``mg.compile`` (``compile.py``): the observer that writes a step's array
calls down while it runs eagerly, and the straight-line program made from them.

Each array an op or kernel returns gets a register (``r5``); an argument's array is ``a0``;
any other Tensor's array is read live (``T3.data``: a parameter, a buffer), a non-Tensor array
is a constant (``c2``), and a Tensor a kernel made (a ``.grad``) is a register too, so later
kernels get the replay's own. ``Program`` turns the calls into Python source, compiles it once,
and lists it (``CompiledTape``, what ``step.tape()`` returns).
"""
from __future__ import annotations

import builtins
import math
import re

import numpy as np

from . import backend as _be
from . import function as _function
from .anomaly import fmt_where, user_where
from .engine import _as_array
from .errors import MinigradError
from .tensor import Tensor, wrap


class CompileError(MinigradError, RuntimeError):
    """``mg.compile`` met Python that a replay cannot repeat (``.item()``, ``bool(t)``, a new
    parameter, an in-place write into an input...). Attributes: ``what`` (the construct),
    ``file`` and ``line`` (the user's code that did it)."""

    def __init__(self, message, what=None, file=None, line=None):
        super().__init__(message)
        self.what = what
        self.file = file
        self.line = line


_REG = re.compile(r"\b[ra]\d+\b")
_NAME = re.compile(r"\b[raTIc]\d+\b")  # what a step reads, for pictures
SCALARS = (bool, int, float, complex, str, bytes, type(None))


class Stale(Exception):
    """A guard failed: a live tensor changed shape, dtype, device or requires_grad."""

def is_array(v):
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic)

class Capture:
    """The observer that writes the program down while the capturing call runs eagerly."""

    captures = True
    wants_inputs = False

    def __init__(self, flat, fallback):
        self.fallback = fallback
        self.gave_up = None
        self.paused = 0      # > 0 inside a kernel (it is called again whole) or after giving up
        self.reg = {}        # id(array) -> the register holding it
        self.hold = []       # what the ids above belong to, kept alive while capturing
        self.glob = {"W": wrap, "AS": _as_array, "STALE": Stale}
        self.names = {}      # id(object) -> its global name in the program
        self.code = []       # (call, (path, register, made an array) per output, registers read, tape text)
        self.guards = []     # (tensor name, class, shape, dtype, requires_grad)
        self.values = {}     # (id(obj), attr) -> (obj, attr, value): Python the step read (a module's mode)
        self.assigned = set()  # (id(obj), attr) the step sets itself before reading (model.train() inside)
        self.inputs = []
        self.input_tensors = {}  # id(argument Tensor) -> its number
        self.treg = {}       # id(Tensor a kernel made, such as a .grad) -> its register
        self.input_vers = {}  # id(Storage) -> argument number
        self.n = 0
        for k, t in enumerate(flat):
            a = t.data if isinstance(t, Tensor) else t
            name = f"a{k}"
            self.reg[id(a)] = name
            self.inputs.append((name, isinstance(t, Tensor)))
            self.hold.append(a)
            if isinstance(t, Tensor):
                self.input_vers[id(t._storage)] = k
                self.input_tensors[id(t)] = k

    # -- the observer protocol (engine, backward, _state) -------------------------------------
    def recorded(self, node):
        pass

    def forward(self, name, seconds, out):
        pass

    def backward(self, node, seconds, grads):
        pass

    def op(self, op, xp, args, datas, params, out):
        """An op's forward ran: write down ``out = forward(xp, *operands, **params)``."""
        if self.paused or op.forward is _function._forward:  # a Function: the ops inside it are
            return out                                     # written down, not the Function
        ins = [self._operand(a, d, op.name) for a, d in zip(args, datas, strict=True)]
        if params:
            for v in params.values():
                if isinstance(v, Tensor) or (is_array(v) and id(v) in self.reg):
                    raise CompileError(f"mg.compile: internal error: op {op.name!r} takes an array "
                                       "computed in the step as a parameter, which a replay cannot update")
        if op.ufunc is not None and not params:  # the forward is xp.<ufunc>: call that directly
            call = f"{self._global(getattr(xp, op.ufunc), 'u')}({', '.join(ins)})"
        else:
            call = f"{self._global(op.forward, 'f')}({', '.join([self._global(xp, 'x')] + ins)}"
            if params:  # literal keywords where Python can write them (no dict to unpack per call)
                lits = {k: _literal(v) for k, v in params.items()}
                if all(v is not None for v in lits.values()):
                    call += "".join(f", {k}={v}" for k, v in lits.items())
                else:
                    call += f", **{self._global(params, 'p')}"
            call += ")"
        if op.aux:
            main, aux = out
            main, conv = _array_of(main)
            out = (main, aux)
            leaves = [((0,), main, conv)] + [((1,) + p, a, False) for p, a in _leaves(aux)]
        elif isinstance(out, tuple):
            pairs = [_array_of(o) for o in out]
            out = tuple(p[0] for p in pairs)
            leaves = [((i,), a, c) for i, (a, c) in enumerate(pairs)]
        else:
            out, conv = _array_of(out)
            leaves = [((), out, conv)]
        self._emit(call, leaves, ins, f"{op.name}({', '.join(ins)})")
        return out

    def array_step(self, fn, args):
        """An array step outside run_op (``_state.array_step``): call it, and write it down whole."""
        if self.paused:
            return fn(*args)
        ins = [self._kernel_arg(a) for a in args]
        self.paused += 1
        try:
            out = fn(*args)
        finally:
            self.paused -= 1
        uf = getattr(fn, "ufunc", None)  # a kernel that is xp.<ufunc> on arrays (a sum of gradients)
        if uf is not None and out.__class__ is not np.generic and is_array(out):
            call = f"{self._global(getattr(_be.array_module(out), uf), 'u')}({', '.join(ins)})"
        else:
            call = f"{self._global(fn, 'k')}({', '.join(ins)})"
        what = getattr(fn, "__qualname__", getattr(fn, "__name__", "kernel"))
        self._emit(call, [(p, a, False) for p, a in _leaves(out)], ins, f"{what}({', '.join(ins)})")
        return out

    def refuse(self, what, advice=None):
        if self.paused:
            return
        where = user_where()
        at = fmt_where(where) if where else "<unknown>"
        advice = advice or ("a replay runs only the array steps, not Python that reads tensor values "
                            "or changes what the step is. Move it out of the compiled function (e.g. "
                            "call loss.item() on what the step returns)")
        msg = f"{what} at {at} cannot be replayed: {advice}, or pass mg.compile(fn, fallback=True) to run this function eagerly"
        if self.fallback:
            self.gave_up = msg
            self.paused = 1 << 30  # nothing more to write down: the call goes on eagerly
            return
        raise CompileError(f"mg.compile: {msg}", what=what, file=where and where[0], line=where and where[1])

    def guard(self, obj, attr):
        if not self.paused and (id(obj), attr) not in self.assigned:
            self.values.setdefault((id(obj), attr), (obj, attr, getattr(obj, attr)))

    def assign(self, obj, attr, value):
        """The step sets ``obj.attr = value`` (``_state.assign``): set again on replay, never guarded."""
        if not self.paused:
            self.assigned.add((id(obj), attr))
            ins = [self._kernel_arg(a) for a in (obj, attr, value)]
            self._emit(f"{self._global(setattr, 'k')}({', '.join(ins)})", [], ins, f"setattr({', '.join(ins)})")

    def write(self, t):
        if self.paused:
            return
        k = self.input_vers.get(id(t._storage))
        if k is not None:
            self.refuse(f"an in-place write into argument {k} of the compiled function (shape {t.shape})")

    # -- operands -------------------------------------------------------------------------------
    def _global(self, obj, prefix):
        name = self.names.get(id(obj))
        if name is None:
            name = self.names[id(obj)] = f"{prefix}{len(self.names)}"
            self.glob[name] = obj
            self.hold.append(obj)
        return name

    def _value(self, v):
        if v is None or isinstance(v, (bool, int)) or (isinstance(v, float) and math.isfinite(v)):
            return repr(v)
        return self._global(v, "c")

    def _live(self, t):
        """A Tensor that existed before the call (a parameter, a buffer): read live at replay."""
        name = self.names.get(id(t))
        if name is None:
            if t._node is not None:  # an op's result from before the call: state a replay cannot follow
                self.refuse(f"reading a tensor of shape {t.shape} computed outside the step (by op "
                            f"{t._node.op!r}), not a parameter or buffer,",
                            "a replay would read this very tensor on every call, while eager reads "
                            "whatever the name holds then. Pass it to the step as an argument")
            name = self._global(t, "T")
            d = t.data
            self.guards.append((name, type(d), d.shape, d.dtype, t._requires_grad))
        return name

    def _operand(self, a, d, where):
        r = self.reg.get(id(d))
        if r is not None:
            return r
        if isinstance(a, Tensor):
            if id(a) in self.treg:
                return self.treg[id(a)] + ".data"
            return self._live(a) + ".data"
        return self._value(d)

    def _made(self, t):
        """The register of the array of a Tensor made during the step (None: a live tensor, one
        read as ``T3.data``, even if an op handed its very array on, as ``detach`` does)."""
        return None if id(t) in self.names else self.reg.get(id(t.data))

    def _kernel_arg(self, a):
        if isinstance(a, Tensor):
            if id(a) in self.treg:
                return self.treg[id(a)]
            if id(a) in self.input_tensors:
                return f"I{self.input_tensors[id(a)]}"
            r = self._made(a)
            return f"W({r})" if r is not None else self._live(a)  # made in the step: one over the replay's array
        if is_array(a):
            r = self.reg.get(id(a))
            return r if r is not None else self._global(a, "c")
        if isinstance(a, (list, tuple)) and any(
                (isinstance(v, Tensor) and self._made(v)) or (is_array(v) and id(v) in self.reg) for v in a):
            self.refuse("building a tensor from a list of tensors computed in the step (use mg.stack)")
        return self._value(a) if isinstance(a, SCALARS) else self._global(a, "o")

    def _emit(self, call, leaves, ins, text):
        regs = []
        for path, arr, conv in leaves:
            r = f"r{self.n}"
            self.n += 1
            if isinstance(arr, Tensor):  # a kernel made this tensor (a .grad): later kernels get it
                self.treg[id(arr)] = r
            else:
                self.reg[id(arr)] = r
            self.hold.append(arr)
            regs.append((path, r, conv))
        self.code.append((call, regs, sorted({r for i in ins for r in _REG.findall(i)}), text))

    # -- the program ------------------------------------------------------------------------------
    def finish(self, result, fname):
        ret = self._result(result)
        return Program(self, ret, fname)

    def _result(self, v):
        if isinstance(v, Tensor):
            if id(v) in self.input_tensors:
                return f"I{self.input_tensors[id(v)]}", []
            if id(v) in self.treg:
                return self.treg[id(v)], [self.treg[id(v)]]
            r = self._made(v)
            if r is not None:
                return f"W({r})", [r]
            return self._live(v), []
        if isinstance(v, (tuple, list)):
            parts = [self._result(x) for x in v]
            body = ", ".join(p[0] for p in parts)
            regs = [r for p in parts for r in p[1]]
            if isinstance(v, list):
                return f"[{body}]", regs
            return f"({body}{',' if len(parts) == 1 else ''})", regs
        if isinstance(v, dict):
            parts = [(self._value(k), *self._result(x)) for k, x in v.items()]
            return "{" + ", ".join(f"{k}: {e}" for k, e, _ in parts) + "}", [r for p in parts for r in p[2]]
        if is_array(v):
            r = self.reg.get(id(v))
            return (r, [r]) if r is not None else (self._global(v, "c"), [])
        return self._value(v), []


def _literal(v):
    """``v`` as Python source that evaluates to an equal value of the same type (None when it has none)."""
    if v is None or v.__class__ in (bool, int, str) or (v.__class__ is float and math.isfinite(v)):
        return repr(v)
    if v.__class__ is tuple:
        parts = [_literal(x) for x in v]
        if all(p is not None for p in parts):
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    return None


def _array_of(out):
    """``out`` as run_op keeps it: a NumPy scalar becomes a 0-d array (True: it was converted)."""
    if isinstance(out, np.generic):
        return np.asarray(out), True
    return out, False


def _leaves(out, path=()):
    """(path, array) of every array in a kernel's result or an op's aux (tuples, nested)."""
    if out is None:
        return []
    if isinstance(out, tuple):
        return [leaf for i, o in enumerate(out) for leaf in _leaves(o, path + (i,))]
    if isinstance(out, Tensor):  # the tensor, and its array as it is now
        return [(path, out), (path + ("data",), out.data)]
    if is_array(out) or isinstance(out, np.generic):
        return [(path, out)]
    return []


class Program:
    """The straight-line Python of one capture, and its listing."""

    def __init__(self, cap, ret, fname):
        ret_expr, ret_regs = ret
        last = {}
        for i, (_, _, reads, _) in enumerate(cap.code):
            for r in reads:
                last[r] = i
        keep = set(ret_regs)
        lines = ["def replay(A):"]
        for k, (name, is_tensor) in enumerate(cap.inputs):
            if is_tensor:
                lines.append(f"    I{k} = A[{k}]")
                lines.append(f"    {name} = I{k}.data")
            else:
                lines.append(f"    {name} = A[{k}]")
        for name, cls, shape, dtype, rg in cap.guards:
            g = cap.glob
            g[f"{name}_c"], g[f"{name}_s"], g[f"{name}_d"] = cls, shape, dtype
            lines.append(f"    d = {name}.data")
            lines.append(f"    if d.__class__ is not {name}_c or d.shape != {name}_s or d.dtype != {name}_d "
                         f"or {name}._requires_grad is not {rg}:")
            lines.append("        raise STALE")
        if cap.guards:
            lines.append("    del d")
        if cap.values:  # Python values the capture depended on (modules' train/eval)
            objs = [cap._global(obj, "o") for obj, _, _ in cap.values.values()]
            cap.glob["VALUES"] = tuple(v for _, _, v in cap.values.values())
            read = ", ".join(f"{o}.{attr}" for o, (_, attr, _) in zip(objs, cap.values.values(), strict=True))
            lines.append(f"    if ({read},) != VALUES:")
            lines.append("        raise STALE")
        listing = []
        steps = []  # (name, registers made, names read): what mg.viz draws
        for i, (call, regs, reads, text) in enumerate(cap.code):
            used = [(p, r, c) for p, r, c in regs if r in last and last[r] > i or r in keep]
            if not regs or not used:
                lines.append(f"    {call}")
            elif len(regs) == 1 and regs[0][0] == ():
                r, conv = regs[0][1], regs[0][2]
                lines.append(f"    {r} = {'AS(' + call + ')' if conv else call}")
            else:
                lines.append(f"    t = {call}")
                for p, r, conv in used:
                    e = "t" + "".join(f".{k}" if isinstance(k, str) else f"[{k}]" for k in p)
                    lines.append(f"    {r} = {'AS(' + e + ')' if conv else e}")
                lines.append("    del t")
            dead = sorted({r for r in reads if last.get(r) == i and r not in keep})
            if dead:
                lines.append(f"    del {', '.join(dead)}")
            outs = ", ".join(r for _, r, _ in regs)
            listing.append(f"{outs + ' = ' if outs else ''}{text}")
            steps.append((text.split("(", 1)[0], [r for _, r, _ in regs], _NAME.findall(call.split("(", 1)[1])))
        lines.append(f"    return {ret_expr}")
        self.source = "\n".join(lines)
        ns = dict(cap.glob)
        exec(builtins.compile(self.source, f"<mg.compile {fname}>", "exec"), ns)  # noqa: S102 - our own generated code
        self._replay = ns["replay"]
        self.tape = CompiledTape(fname, [n for n, _ in cap.inputs], [g[0] for g in cap.guards], listing, ret_expr,
                                 {k: v for k, v in cap.glob.items() if k[:1] in "T"}, steps, ret_regs)

    def run(self, flat):
        return self._replay(flat)


class CompiledTape:
    """The program a capture wrote: ``repr`` lists it, one array step per line."""

    def __init__(self, fname, inputs, live, lines, ret, tensors, steps, ret_regs):
        self.name = fname
        self.inputs = tuple(inputs)
        self.live = tuple(live)
        self.lines = tuple(lines)
        self.returns = ret
        self._tensors = tensors
        self._steps = steps
        self._ret_regs = ret_regs

    def dot_parts(self, rankdir="TB", title=None):
        """The pieces of the DOT text of this program (``mg.viz.dot_source(step.tape())``):
        a box per step, an edge per array it reads, arguments and live tensors as ellipses."""
        made = {}
        body = []
        shown = set()
        for n in self.inputs + self.live:
            label = n if n in self.inputs else f"{n} {tuple(self._tensors[n].shape)}"
            body.append(f'\t{n} [label="{label}" shape=ellipse fillcolor="#e8f4e8" style=filled]\n')
            shown.add(n)
        for i, (name, outs, reads) in enumerate(self._steps):
            body.append(f'\ts{i} [label="{i}: {name}" shape=box style=rounded]\n')
            for r in reads:
                src = made.get(r, r if r in shown else None)
                if src is not None:
                    body.append(f"\t{src} -> s{i}\n")
            for r in outs:
                made[r] = f"s{i}"
        for r in self._ret_regs:
            if r in made:
                body.append(f'\tret_{r} [label="returned {r}" shape=ellipse]\n\t{made[r]} -> ret_{r}\n')
        if title:
            body.insert(0, f'\tlabel="{title}" labelloc=t\n')
        return ("compiled", {"rankdir": rankdir}, {"fontsize": "10"}, {}, body)

    def __len__(self):
        return len(self.lines)

    def __iter__(self):
        return iter(self.lines)

    def __repr__(self):
        head = [f"compiled {self.name}: {len(self.lines)} array steps",
                f"  inputs: {', '.join(self.inputs) or '-'}"]
        if self.live:
            head.append("  read live: " + ", ".join(f"{n} {tuple(self._tensors[n].shape)}" for n in self.live))
        body = [f"  {i:4d}  {line}" for i, line in enumerate(self.lines)]
        return "\n".join(head + body + [f"  return {self.returns}"])

    __str__ = __repr__
