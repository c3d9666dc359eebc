"""``mg.autograd.check_ops(fn, *inputs)``: which op's gradient rule is wrong?

``gradcheck`` says *that* a function's gradient is wrong; ``check_ops`` says *where*. It runs
``fn`` once in float64 under an observer that keeps, for every Node recorded, the op's
operands (values copied, floating ones as float64), its parameters, and the user's
``file:line`` that created it. Then it checks each op of the tape *alone*, Chainer's
``check_backward``: a random upstream gradient ``v`` (output-shaped) and a random unit
direction ``u`` per differentiable input; the analytic value is ``<rule's gradient for v, u>``,
the numeric one ``<(f(x + eps u) - f(x - eps u)) / 2 eps, v>``; they agree when
``|analytic - numeric| <= atol + rtol |numeric|``. Each op is re-run on fresh leaves:
registered ops through ``engine.run_op(node.definition, ...)``, ``autograd.Function`` subclasses
through ``cls.apply`` (so their own ``forward``/``backward`` are what is checked).
With ``mode="fwd"`` each op's forward-mode rule is checked the same way: the analytic value is
``<the output's tangent when input i carries u, v>`` (a dual level around the op alone).
``recorded`` and ``alone`` give gradcheck the ops of a tape one by one, to check them to any order.
"""
from __future__ import annotations

import numpy as np

from . import _state
from . import forward_ad as _fw
from .anomaly import fmt_where, user_where
from .backend import array_module, to_numpy
from .backward import _collect, grad as _grad
from .engine import run_op
from .grad_mode import enable_grad, no_grad
from .tensor import Tensor, wrap

__all__ = ["check_ops", "CheckReport", "OpCheck"]


class OpCheck:
    """One row of a ``CheckReport``: one input of one op on the tape."""

    __slots__ = ("op", "position", "file", "line", "input", "abs_err", "rel_err", "analytic", "numeric", "ok",
                 "node", "skipped", "mode")

    def __init__(self, op, position, file, line, input, abs_err=0.0, rel_err=0.0,  # noqa: A002
                 analytic=0.0, numeric=0.0, ok=True, node=None, skipped=None, mode="rev"):
        self.op = op
        self.position = position
        self.file = file
        self.line = line
        self.input = input
        self.abs_err = abs_err
        self.rel_err = rel_err
        self.analytic = analytic
        self.numeric = numeric
        self.ok = ok
        self.node = node          # the Node checked (of the float64 run)
        self.skipped = skipped    # why the op could not be re-run alone (then ok is True)
        self.mode = mode          # "rev": the gradient rule was checked; "fwd": the forward-mode rule

    @property
    def where(self) -> str:
        return fmt_where((self.file, self.line) if self.file else None)

    def describe(self) -> str:
        """One sentence: op, position, file:line, input, errors."""
        what = "gradient" if self.mode == "rev" else "forward-mode derivative (JVP)"
        return (f"op {self.op!r} (position {self.position} on the tape) at {self.where}: {what} of input "
                f"{self.input} is wrong: analytic {self.analytic:.6g}, numeric {self.numeric:.6g} "
                f"(abs err {self.abs_err:.3g}, rel err {self.rel_err:.3g})")

    def __repr__(self):
        state = "ok" if self.ok and not self.skipped else "skipped" if self.skipped else "FAIL"
        return (f"OpCheck({self.op!r}, position={self.position}, {self.where}, input={self.input}, "
                f"abs_err={self.abs_err:.3g}, rel_err={self.rel_err:.3g}, {state})")


class CheckReport:
    """What ``check_ops`` found: ``rows`` (one per op and differentiable input, in tape order),
    ``failures``, ``first_failure`` (None when ``ok``), ``ok``; ``str()`` is a table."""

    def __init__(self, rows, tolerances):
        self.rows = rows
        self.tolerances = tolerances

    @property
    def failures(self) -> list:
        return [r for r in self.rows if not r.ok]

    @property
    def first_failure(self):
        return next((r for r in self.rows if not r.ok), None)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def __bool__(self):
        return self.ok

    def table(self) -> str:
        head = ("#", "op", "input", "file:line", "analytic", "numeric", "abs err", "rel err", "")
        rows = [head]
        for r in self.rows:
            state = "ok" if r.ok and not r.skipped else f"skipped ({r.skipped})" if r.skipped else "FAIL"
            rows.append((str(r.position), r.op, str(r.input), r.where, f"{r.analytic:.6g}", f"{r.numeric:.6g}",
                         f"{r.abs_err:.2e}", f"{r.rel_err:.2e}", state))
        widths = [max(len(x[c]) for x in rows) for c in range(len(head))]
        lines = []
        for j, x in enumerate(rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths))
        n_ops = len({r.position for r in self.rows})
        eps, atol, rtol = self.tolerances
        bad = self.failures
        lines.append(f"{n_ops} ops, {len(self.rows)} inputs checked (eps={eps}, atol={atol}, rtol={rtol}): "
                     + ("all agree" if not bad else f"{len(bad)} wrong; first: {bad[0].describe()}"))
        return "\n".join(lines)

    __str__ = table

    def __repr__(self):
        return f"<CheckReport: {len(self.rows)} rows, {len(self.failures)} failures>"


# ---------------------------------------------------------------------------
# recording: an observer that keeps each recorded op's operands
# ---------------------------------------------------------------------------

class _Call:
    __slots__ = ("node", "args", "params", "where")


class _Recorder:
    """The observer ``check_ops`` adds (protocol: ``minigrad/_state.py``; ``wants_inputs``
    asks ``engine._record`` to pass the operands as well)."""

    wants_inputs = True

    def __init__(self):
        self.calls = {}

    def forward(self, name, seconds, out):
        pass

    def recorded(self, node):
        pass

    def backward(self, node, seconds, grads):
        pass

    def inputs(self, node, args, datas):
        if id(node) in self.calls:
            return
        c = _Call()
        c.node = node
        c.where = user_where()
        vals = []
        for a, d in zip(args, datas, strict=True):
            vals.append(("T", _copy64(d)) if isinstance(a, Tensor) else ("C", _copy(a)))
        c.args = vals
        p = dict(node.params or {})
        if "cls" in p and "ctx" in p:  # an autograd.Function: the user's own arguments
            orig = {id(a): i for i, a in enumerate(args) if isinstance(a, Tensor)}
            p["args"] = tuple(("A", orig[id(a)]) if isinstance(a, Tensor) else ("C", a) for a in p["args"])
        c.params = p
        self.calls[id(node)] = c


def _copy64(d):
    d = d.copy()
    if d.dtype.kind == "f" and d.dtype != np.float64:
        d = d.astype(np.float64)
    return d


def _copy(a):
    return a.copy() if hasattr(a, "copy") and hasattr(a, "shape") else a


# ---------------------------------------------------------------------------
# checking one op alone
# ---------------------------------------------------------------------------

def _call_op(call, targs):
    """Run the recorded op on ``targs`` (its operands, Tensors where it had Tensors)."""
    p = call.params
    if "cls" in p and "ctx" in p:
        uargs = [targs[v] if k == "A" else v for k, v in p["args"]]
        out = p["cls"].apply(*uargs, **p["kwargs"])
    else:
        out = run_op(call.node.definition, *targs, **p)
    return [out] if isinstance(out, Tensor) else list(out)


def _run(call, vals, diff, need_grad, dual=None):
    """Run the recorded op on ``vals`` (arrays per Tensor operand); returns (outputs, leaves).
    ``dual``: ``(i, u)``, operand ``i`` carries the tangent ``u`` (inside a dual level)."""
    leaves = {}
    targs = []
    for i, (kind, v) in enumerate(call.args):
        if kind == "T":
            t = wrap(vals[i].copy())
            if need_grad and i in diff:
                t.requires_grad = True
                leaves[i] = t
            if dual is not None and dual[0] == i:
                t = _fw.make_dual(t, wrap(dual[1]))
            targs.append(t)
        else:
            targs.append(v)
    return _call_op(call, targs), leaves


def _dot(a, b) -> float:
    return float((to_numpy(a).astype(np.float64) * to_numpy(b).astype(np.float64)).sum())


def op_name(call) -> str:
    """The name a report gives the op of a recorded call (a Function subclass's class name)."""
    node = call.node
    return node.definition.name if getattr(node.definition, "kind", None) == "function" else node.op


def _tangents_dot(call, base, diff, i, u, vmap_by_pos):
    """``<the outputs' tangents, v>`` with operand ``i`` carrying the tangent ``u``."""
    with no_grad(), _fw.dual_level():
        outs, _ = _run(call, base, diff, False, dual=(i, u))
        total = 0.0
        for pos, o in enumerate(outs):
            v = vmap_by_pos.get(pos)
            t = _fw.unpack_dual(o).tangent
            if v is not None and t is not None:
                total += _dot(t.data, v.data)
    return total


def _check_call(call, position, rng, eps, atol, rtol, mode="rev"):
    node = call.node
    diff = [i for i, p in enumerate(node.parents) if p is not None]
    file, line = call.where if call.where else (None, None)
    name = op_name(call)
    base = {i: v for i, (k, v) in enumerate(call.args) if k == "T"}
    us = {}
    for i in diff:
        u = rng.standard_normal(base[i].shape)
        u /= max(float(np.linalg.norm(u)), 1e-12)
        us[i] = array_module(base[i]).asarray(u)
    try:
        with enable_grad():
            outs, leaves = _run(call, base, diff, True)
        sel = [o for o in outs if o.requires_grad and o.dtype.kind == "f"]
        vs = [wrap(array_module(o.data).asarray(rng.standard_normal(o.shape)).astype(o.dtype)) for o in sel]
        order = [i for i in diff if i in leaves]
        ga = {}
        if mode == "rev":
            grads = _grad(sel, [leaves[i] for i in order], vs, allow_unused=True) if sel and order else ()
            ga = dict(zip(order, grads, strict=True))
        vmap = {id(o): v for o, v in zip(sel, vs, strict=True)}
        vpos = {pos: vmap[id(o)] for pos, o in enumerate(outs) if id(o) in vmap}
        rows = []
        for i in diff:
            if mode == "rev":
                g = ga.get(i)
                analytic = 0.0 if g is None else _dot(g.data, us[i])
            else:
                analytic = _tangents_dot(call, base, diff, i, us[i], vpos)
            with no_grad():
                plus, _ = _run(call, {**base, i: base[i] + eps * us[i]}, diff, False)
                minus, _ = _run(call, {**base, i: base[i] - eps * us[i]}, diff, False)
            numeric = 0.0
            for pos, (p_, m_) in enumerate(zip(plus, minus, strict=True)):
                v = vpos.get(pos)
                if v is not None:
                    numeric += _dot((p_.data - m_.data) / (2 * eps), v.data)
            err = abs(analytic - numeric)
            ok = bool(err <= atol + rtol * abs(numeric))  # NaN fails
            rel = err / abs(numeric) if numeric != 0 else (0.0 if err == 0 else float("inf"))
            rows.append(OpCheck(name, position, file, line, i, err, rel, analytic, numeric, ok, node, mode=mode))
        return rows
    except Exception as e:  # noqa: BLE001 - an op that cannot run alone is reported, not fatal
        why = f"{type(e).__name__}: {e}".splitlines()[0][:80]
        return [OpCheck(name, position, file, line, i, float("nan"), float("nan"), float("nan"), float("nan"),
                        True, node, skipped=why, mode=mode) for i in diff]


def alone(call):
    """The op of a recorded call as a function of its differentiable operands, and fresh float64
    leaves holding their recorded values: ``(fn, leaves)``, for checking it alone to any order."""
    diff = [i for i, p in enumerate(call.node.parents) if p is not None]
    base = {i: v for i, (k, v) in enumerate(call.args) if k == "T"}
    leaves = []
    for i in diff:
        t = wrap(base[i].copy())
        t.requires_grad = True
        leaves.append(t)

    def fn(*xs):
        given = dict(zip(diff, xs, strict=True))
        targs = [given[i] if i in given else wrap(v.copy()) if k == "T" else v
                 for i, (k, v) in enumerate(call.args)]
        outs = _call_op(call, targs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return fn, leaves


def _float64_inputs(inputs):
    out = []
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype.kind != "f":
                raise TypeError(f"check_ops: inputs that require grad must be floating, got {x.dtype}")
            x = wrap(x.data.astype(np.float64))  # a fresh float64 leaf (a copy)
            x.requires_grad = True
        out.append(x)
    return out


def recorded(fn, inputs):
    """Run ``fn`` once in float64 under the recording observer: ``[(position, call), ...]``, the
    ops on the outputs' tape in tape order, with their operands."""
    inputs = _float64_inputs(inputs)
    rec = _Recorder()
    token = _state.add_observer(rec)
    try:
        with enable_grad():
            out = fn(*inputs)
    finally:
        _state.reset(token)
    outs = (out,) if not isinstance(out, (tuple, list)) else tuple(out)
    roots = []
    for o in outs:
        if not isinstance(o, Tensor) and hasattr(o, "_values"):  # sparse: its history is its values'
            o = o._values
        if isinstance(o, Tensor) and o._node is not None:
            roots.append(o._node)
    tape = list(reversed(_collect(roots))) if roots else []
    return [(position, rec.calls[id(node)]) for position, node in enumerate(tape) if id(node) in rec.calls]


def check_ops(fn, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, mode="rev") -> CheckReport:
    """Check every recorded op's gradient rule (or forward-mode rule) alone against central differences.

    Args:
        fn: takes the inputs, returns a Tensor or a tuple of Tensors.
        *inputs: passed to ``fn``; Tensors that require grad become float64 leaves first.
        eps: the finite-difference step. atol, rtol: tolerances (``|a - n| <= atol + rtol |n|``).
        seed: seeds the random upstream gradients and directions.
        mode: "rev" checks each op's gradient rule (``<rule's gradient for v, u>``); "fwd" its
            forward-mode rule (``<the output's tangent for u, v>``).

    Returns:
        a ``CheckReport``: ``.ok``, ``.rows`` (``OpCheck``: ``.op``, ``.position``, ``.file``,
        ``.line``, ``.input``, ``.abs_err``, ``.rel_err``, ``.analytic``, ``.numeric``, ``.ok``),
        ``.failures``, ``.first_failure``; ``print(report)`` shows a table.

    >>> report = mg.autograd.check_ops(lambda a, b: (a @ b).tanh().sum(), x, w)
    >>> report.ok
    True
    """
    if mode not in ("rev", "fwd"):
        raise ValueError(f"check_ops: mode must be 'rev' or 'fwd', got {mode!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for position, call in recorded(fn, inputs):
        rows.extend(_check_call(call, position, rng, eps, atol, rtol, mode))
    return CheckReport(rows, (eps, atol, rtol))
