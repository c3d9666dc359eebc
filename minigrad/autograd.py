"""The tape and the backward engine.

Every op that runs while gradients are enabled and an input requires grad
records a ``Node``: the op name, its gradient rule, its parents (the producing
Node of each input, the leaf Tensor itself, or None), what it saved and the
storage versions of what it saved. ``backward`` collects the Nodes reachable
from the outputs with an explicit stack, orders them by creation (sequence
number: a Node always runs after its inputs' Nodes), and walks them in
reverse. No Python recursion anywhere, and Nodes never point at their output
Tensor, so a graph dies with its output.

A gradient rule has the signature ``rule(ctx, g, saved) -> tuple`` (one entry
per input, None where no gradient is needed). In a first-order pass ``g`` and
``saved`` are backend arrays and the rule runs without recording; with
``create_graph=True`` they are Tensors and the same rule code records a new
graph, which is how higher derivatives come for free. Rules therefore use
operators, methods both arrays and Tensors have, and the ``ops._dual``
helpers.
"""
from __future__ import annotations

import itertools
import operator
import time
import functools

import numpy as _np

from . import _state

_seq = itertools.count()

# Bound by tensor.py once the class exists (tensor.py imports this module first).
Tensor = None
_wrap = None


class Node:
    """One recorded operation: what backward needs to send gradients to its inputs."""

    # every op creates one: only the fields set per op are slots set in __init__; the
    # rarely used ones are class-level defaults, overridden in the instance __dict__
    __slots__ = (
        "op", "rule", "parents", "meta", "out_meta", "attrs", "seq", "saved", "saved_t",
        "vers", "_g", "freed", "out_pos", "view_ver", "_slow", "__dict__", "__weakref__",
    )
    info = None     # attributes shown to readers (axis, keepdims, pattern...)
    consts = None   # ((input index, shape, dtype), ...) of Tensor inputs that need no grad: drawn by viz

    def __init__(self, op, rule, parents, meta, out_meta, attrs=None):
        self.op = op
        self.rule = rule
        self.parents = parents      # per input: Node, (Node, output index), leaf Tensor or None
        self.meta = meta            # per input: (shape, dtype) or None
        self.out_meta = out_meta    # (shape, dtype) of the output (first output)
        self.attrs = attrs          # op attributes the rule needs (axis, shapes...)
        self.seq = next(_seq)       # creation order: a Node runs after its inputs' Nodes
        self.saved = ()             # backend arrays for the first-order rule
        self.saved_t = ()           # Tensors behind `saved` (None where a raw array)
        self.vers = ()              # ((version_cell, version_at_save, index in saved), ...)
        self._g = None              # gradient accumulated during backward
        self.freed = False
        self.out_pos = -1           # index in `saved` of the output's array
        self.view_ver = None        # view ops: the storage version when the view was taken
        self._slow = False          # True once hooks, retain_grad or several outputs need the full walk

    # Rare extras live in the instance __dict__; setting one sends the node down the
    # walk's full path (``_slow``), so the common node pays nothing for them.
    def _extra(name, default, doc):
        def get(self):
            return self.__dict__.get(name, default)

        def set_(self, value):
            self.__dict__[name] = value
            if value is not None and value != default:
                self._slow = True

        return property(get, set_, doc=doc)

    n_out = _extra("n_out", 1, "outputs (autograd.Function may have several)")
    hooks = _extra("hooks", None, "hooks of the (non-leaf) output tensor")
    retain = _extra("retain", None, "weakref of the output when retain_grad()")
    del _extra

    # -- the view the public tape shows ------------------------------------
    @property
    def inputs(self):
        """Shapes/dtypes of the inputs as (shape, dtype) pairs, None for constants."""
        return self.meta

    @property
    def output_shape(self):
        return self.out_meta[0]

    @property
    def output_dtype(self):
        return self.out_meta[1]

    @property
    def needs_input_grad(self):
        return tuple(p is not None for p in self.parents)

    @property
    def saved_bytes(self) -> int:
        if not self.saved:
            return 0
        return int(sum(getattr(a, "nbytes", 0) for a in self.saved))

    def __repr__(self):
        return f"<Node {self.op} #{self.seq} -> {self.out_meta[0]}>"

    # -- saving ---------------------------------------------------------------
    def save(self, items, out=None):
        """Save Tensors/arrays for the rule; ``out`` marks the output Tensor by identity."""
        raw = []
        ts = []
        vers = []
        for i, s in enumerate(items):
            if s is out and out is not None:
                raw.append(s.data)
                ts.append(None)
                self.out_pos = i
                vers.append((s._ver, s._ver[0], i))
            elif isinstance(s, Tensor):
                raw.append(s.data)
                ts.append(s)
                vers.append((s._ver, s._ver[0], i))
            else:
                raw.append(s)
                ts.append(None)
        self.saved = tuple(raw)
        self.saved_t = tuple(ts)
        self.vers = tuple(vers)

    def _check(self):
        """Refuse a freed graph, or saved tensors changed in place since they were saved."""
        if self.freed:
            raise RuntimeError(
                f"trying to backward through the graph a second time (op {self.op!r}): its saved "
                "values were freed after the first backward. Pass retain_graph=True to the first "
                "backward() if you need to call it twice"
            )
        for cell, v, i in self.vers:
            if cell[0] != v:
                what = "its output" if i == self.out_pos else f"input {i}"
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: {what} of op {self.op!r} (output shape {self.out_meta[0]}) "
                    f"was saved at version {v} and is now at version {cell[0]}. Do the in-place "
                    "operation on a clone, or after backward"
                )

    def _unpack(self, graph: bool):
        self._check()
        if not graph:
            return self.saved
        out = []
        for i, (a, t) in enumerate(zip(self.saved, self.saved_t, strict=True)):
            if t is not None:
                out.append(t)
            elif i == self.out_pos:
                w = _wrap(a)
                w._node = self
                w._rg = True
                out.append(w)
            else:
                out.append(a)
        return tuple(out)

    def release(self):
        self.saved = ()
        self.saved_t = ()
        self.freed = True


def is_grad_enabled() -> bool:
    """Whether ops record the tape now, in this thread."""
    return _state.grad_enabled()


class _GradMode:
    _value = True

    def __new__(cls, fn=None):
        # ``@mg.no_grad`` (no parentheses) decorates directly, as PyTorch allows
        self = super().__new__(cls)
        return self if fn is None else self(fn)

    def __enter__(self):
        if "_tokens" not in self.__dict__:
            self._tokens = []
        self._tokens.append(_state.set_grad(self._value))
        return self

    def __exit__(self, *exc):
        _state.reset_grad(self._tokens.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)

        return wrapper


class no_grad(_GradMode):
    """Context manager / decorator: ops run without recording the tape.

    >>> with mg.no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    _value = False


class enable_grad(_GradMode):
    """Context manager / decorator: ops record the tape (inside ``no_grad`` too)."""

    _value = True


# ---------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------

def _as_grad_array(t, g, graph):
    """Validate a user-given output gradient against tensor ``t``."""
    if g is None:
        if t.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; this "
                f"output has shape {t.shape}. Pass grad= (a tensor of shape {t.shape})"
            )
        d = t.data
        if d.__class__ is _np.ndarray:  # np.array, not np.ones: a third of the time for a loss
            g = _np.array(1, dtype=d.dtype).reshape(d.shape)
        else:
            g = t._xp().ones(d.shape, dtype=d.dtype)
    elif isinstance(g, Tensor):
        if g.shape != t.shape:
            raise RuntimeError(
                f"backward: grad has shape {g.shape} but the output has shape {t.shape}; "
                "they must match exactly"
            )
        g = g if graph else g.data
    else:
        xp = t._xp()
        g = xp.asarray(g, dtype=t.dtype)
        if g.shape != t.shape:
            raise RuntimeError(
                f"backward: grad has shape {g.shape} but the output has shape {t.shape}; "
                "they must match exactly"
            )
    if graph and not isinstance(g, Tensor):
        g = _wrap(g)
    if not graph and g.dtype != t.dtype:
        g = g.astype(t.dtype)
    return g


def _call_hooks(hooks, g, graph):
    for h in hooks:
        r = h(g if graph else _gwrap(g))
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a gradient hook must return a Tensor or None, got {type(r).__name__}")
            g = r if graph else r.data
    return g


def _accumulate_leaf(leaf, g, graph):
    if leaf._hooks:
        g = _call_hooks(leaf._hooks, g, graph)
    if graph:
        leaf.grad = g if leaf.grad is None else leaf.grad + g
    elif leaf.grad is None:
        leaf.grad = _wrap(_readonly(g))
    else:
        leaf.grad = _wrap(_readonly(leaf.grad.data + g))


def _gwrap(g):
    """A Tensor over a first-order gradient (NumPy arithmetic on 0-d arrays gives scalars)."""
    return _wrap(_np.asarray(g) if isinstance(g, _np.generic) else g)


def _readonly(a):
    """A read-only view of a gradient array, so that one array shared by two
    gradients is never changed through the other (NumPy only)."""
    if a.__class__ is _np.ndarray:  # the common case, first
        a = a.view()
        a.setflags(write=False)
        return a
    if isinstance(a, _np.generic):
        a = _np.asarray(a)
    flags = getattr(a, "flags", None)
    if flags is not None and hasattr(flags, "writeable"):
        a = a.view()
        a.flags.writeable = False
    return a


def _collect(roots):
    """Every Node reachable from ``roots``, in reverse creation order (no recursion)."""
    seen = set(roots)
    stack = list(seen)
    pop, push, add = stack.pop, stack.append, seen.add
    while stack:
        for p in pop().parents:
            c = p.__class__
            if c is Node:
                if p not in seen:
                    add(p)
                    push(p)
            elif c is tuple:
                p = p[0]
                if p not in seen:
                    add(p)
                    push(p)
    order = list(seen)
    order.sort(key=_seq_of, reverse=True)
    return order


_seq_of = operator.attrgetter("seq")


def run_backward(tensors, grads, retain_graph=False, create_graph=False, capture=None):
    """The reverse pass. With ``capture`` (a dict id(leaf-or-(node,idx)) -> slot) gradients
    are returned there instead of accumulated into leaves' ``.grad`` (``mg.grad``)."""
    graph = create_graph
    roots = []
    leaves = {}  # id(leaf) -> [leaf, summed gradient]: hooks and .grad see the total once
    for t, g in zip(tensors, grads, strict=True):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward: expected Tensors, got {type(t).__name__}")
        if not t._rg:
            raise RuntimeError(
                "backward: the tensor does not require grad and has no grad_fn (was it computed "
                "under no_grad, or from tensors without requires_grad=True?)"
            )
        g = _as_grad_array(t, g, graph)
        node = t._node
        if node is None:
            _leaf_add(leaves, t, g)
            continue
        _node_add(node, t._oidx, g)
        roots.append(node)
    token = _state.set_grad(graph)  # rules record only with create_graph (this thread only)
    order = ()
    try:
        order = _collect(roots) if roots else ()
        _walk(order, graph, retain_graph, capture, leaves)
    finally:
        _state.reset_grad(token)
        for n in order:
            n._g = None
    for leaf, g in leaves.values():
        if capture is not None:
            if id(leaf) in capture:
                if leaf._hooks:  # mg.grad sees hooked gradients too, as PyTorch's does
                    g = _call_hooks(leaf._hooks, g, graph)
                _capture_add(capture, id(leaf), g)
        else:
            _accumulate_leaf(leaf, g, graph)


def _walk(order, graph, retain_graph, capture, leaves):
    prof = _state.profiler()
    plain = not graph and capture is None and prof is None  # the first-order pass of backward()
    for n in order:
        g = n._g
        if g is None:
            if not retain_graph:
                n.saved = n.saved_t = ()
                n.freed = True
            continue
        n._g = None
        if plain and not n._slow:
            if n.freed:
                n._check()
            for cell, v, _i in n.vers:
                if cell[0] != v:
                    n._check()
            grads_in = n.rule(n, g, n.saved)
        else:
            grads_in = _run_rule(n, g, graph, capture, prof)
        if not retain_graph:
            n.saved = n.saved_t = ()
            n.freed = True
        # a rule may return a gradient for an optional input that was not given (e.g. a bias): ignored
        for p, gi, m in zip(n.parents, grads_in, n.meta, strict=False):
            if p is None or gi is None:
                continue
            if gi.shape != m[0]:
                raise RuntimeError(
                    f"internal error: the gradient rule of {n.op!r} returned shape "
                    f"{gi.shape} for an input of shape {m[0]}"
                )
            dt = gi.dtype
            if dt is not m[1] and dt != m[1]:
                gi = gi.astype(m[1])
            tp = p.__class__
            if tp is Node:
                if p._slow and p.n_out != 1:
                    _node_add(p, 0, gi)
                else:
                    pg = p._g
                    p._g = gi if pg is None else pg + gi
            elif tp is tuple:
                _node_add(p[0], p[1], gi)
            else:
                e = leaves.get(id(p))
                if e is None:
                    leaves[id(p)] = [p, gi]
                else:
                    e[1] = e[1] + gi


def _run_rule(n, g, graph, capture, prof):
    """The full path for one node: hooks, retain_grad, mg.grad's capture, several outputs,
    create_graph's Tensors, the profile."""
    if n.n_out == 1:
        if n.hooks:
            g = _call_hooks(n.hooks, g, graph)
        if n.retain is not None:
            _retain(n, g, graph)
        if capture is not None and (id(n), 0) in capture:
            _capture_add(capture, (id(n), 0), g)
    else:
        g = _fill_multi(n, g, capture)
    if graph:
        saved = n._unpack(True)
    else:
        if n.freed:
            n._check()
        for cell, v, _i in n.vers:
            if cell[0] != v:
                n._check()
        saved = n.saved
    if prof is None:
        return n.rule(n, g, saved)
    t0 = time.perf_counter()
    grads_in = n.rule(n, g, saved)
    prof._add_backward(n.op, time.perf_counter() - t0)
    return grads_in


def _leaf_add(leaves, leaf, g):
    e = leaves.get(id(leaf))
    if e is None:
        leaves[id(leaf)] = [leaf, g]
    else:
        e[1] = e[1] + g


def _node_add(node, idx, g):
    if node.n_out == 1:
        node._g = g if node._g is None else node._g + g
    else:
        if node._g is None:
            node._g = [None] * node.n_out
        cur = node._g[idx]
        node._g[idx] = g if cur is None else cur + g


def _fill_multi(n, gs, capture):
    """Multi-output node (autograd.Function): capture per output; the rule fills missing ones."""
    if capture is not None:
        for i, g in enumerate(gs):
            if g is not None and (id(n), i) in capture:
                _capture_add(capture, (id(n), i), g)
    return gs


def _capture_add(capture, key, g):
    cur = capture[key]
    capture[key] = g if cur is None else cur + g


def _retain(n, g, graph):
    t = n.retain()
    if t is None:
        return
    gt = g if graph else _gwrap(g)
    t.grad = gt if t.grad is None else t.grad + gt


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned instead of accumulated.

    Args:
        outputs: a Tensor or a sequence of Tensors.
        inputs: a Tensor or a sequence of Tensors (leaves or not).
        grad_outputs: the gradients of the outputs (None for one-element outputs).
        retain_graph: keep the graph for another backward (defaults to ``create_graph``).
        create_graph: record the backward pass, so the result can be differentiated again.
        allow_unused: return None for an input the outputs do not depend on, instead of raising.

    Returns:
        a tuple with one gradient Tensor (or None) per input.

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> (gx,) = mg.grad((x * x).sum(), x)     # gx == 2 * x
    """
    single_out = isinstance(outputs, Tensor)
    outputs = [outputs] if single_out else list(outputs)
    inputs_t = (inputs,) if isinstance(inputs, Tensor) or hasattr(inputs, "_sparse_values_for_grad") else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    keys = []
    capture = {}
    wrappers = []
    for x in inputs_t:
        sp = getattr(x, "_sparse_values_for_grad", None)
        if sp is not None:
            wrappers.append(x)
            x = sp()
        else:
            wrappers.append(None)
        if not isinstance(x, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(x).__name__}")
        if not x._rg:
            raise RuntimeError("grad: one of the inputs does not require grad")
        key = id(x) if x._node is None else (id(x._node), x._oidx)
        keys.append(key)
        capture[key] = None
    run_backward(outputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph, capture=capture)
    result = []
    for _x, key, w in zip(inputs_t, keys, wrappers, strict=True):
        g = capture[key]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "grad: one of the differentiated tensors was not used to compute the outputs; "
                    "pass allow_unused=True to get None for it"
                )
            result.append(None)
            continue
        g = g if isinstance(g, Tensor) else _gwrap(g)
        if w is not None:
            g = w._grad_like(g)
        result.append(g)
    return tuple(result)


# ---------------------------------------------------------------------------
# The tape, as users see it
# ---------------------------------------------------------------------------

class Tape(list):
    """The Nodes that produced a tensor, in the order they ran; prints as a table:
    index, op, input shapes -> output shape, dtype, bytes saved for backward ("freed"
    once a backward released them), and the op's attributes (axis, keepdims...)."""

    def __str__(self):
        rows = [("#", "op", "inputs -> output", "dtype", "saved", "attrs")]
        total = 0
        for i, n in enumerate(self):
            ins = ", ".join("const" if m is None else str(tuple(m[0])) for m in n.meta)
            total += n.saved_bytes
            saved = "freed" if n.freed else _fmt_bytes(n.saved_bytes)
            rows.append((str(i), n.op, f"{ins} -> {tuple(n.out_meta[0])}", str(n.out_meta[1]), saved,
                         _fmt_info(n.info)))
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        lines = []
        for j, r in enumerate(rows):
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
            if j == 0:
                lines.append("  ".join("-" * w for w in widths).rstrip())
        lines.append(f"{len(self)} ops, {_fmt_bytes(total)} saved for backward")
        return "\n".join(lines)

    __repr__ = __str__


def _fmt_info(info) -> str:
    """An op's display attributes as 'axis=(1,) keepdims=False'."""
    if not info:
        return ""
    return " ".join(f"{k}={v}" for k, v in info.items())


def _fmt_bytes(b: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return str(b)


def tape(t) -> Tape:
    """The recorded operations that produced ``t``, in the order they ran.

    Each entry is a Node with ``.op``, ``.inputs`` ((shape, dtype) per input, None
    for constants), ``.output_shape``, ``.output_dtype``; ``print()`` gives a table.

    >>> print(mg.autograd.tape((x * 2).sum()))
    """
    if not hasattr(t, "_node") and hasattr(t, "_values"):  # a sparse tensor: its history is its values'
        t = t._values
    node = t._node if hasattr(t, "_node") else t
    if node is None:
        return Tape()
    return Tape(reversed(_collect([node])))


# ---------------------------------------------------------------------------
# User-defined ops (PyTorch's habit)
# ---------------------------------------------------------------------------

class FunctionCtx:
    """What ``forward`` and ``backward`` of an ``autograd.Function`` share."""

    def __init__(self):
        self._saved = ()
        self._node = None
        self.needs_input_grad = ()
        self._graph = False

    def save_for_backward(self, *tensors):
        """Save tensors for backward (their versions are checked before use)."""
        self._saved = tensors

    @property
    def saved_tensors(self):
        out = []
        for s in self._saved:
            if type(s) is tuple and len(s) == 3 and s[0] is _OUTPUT:
                w = _wrap(s[2])
                if self._graph and self._node is not None:
                    w._node, w._oidx, w._rg = self._node, s[1], True
                out.append(w)
            else:
                out.append(s)
        return tuple(out)

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors


_OUTPUT = object()


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``.apply``.

    >>> class Square(mg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> y = Square.apply(mg.tensor([3.0], requires_grad=True))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("autograd.Function subclasses must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("autograd.Function subclasses must define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        prof = _state.profiler()
        res = _forward(cls, ctx, args, kwargs, prof)
        single = not isinstance(res, (tuple, list))
        outs = (res,) if single else tuple(res)
        for o in outs:
            if not isinstance(o, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return Tensors, got {type(o).__name__}")
        wrapped = tuple(_wrap(o.data) for o in outs)
        need = _state.grad_enabled() and any(ctx.needs_input_grad)
        if need:
            from .ops._core import edge

            parents = tuple(edge(a) if isinstance(a, Tensor) and a._rg else None for a in args)
            meta = tuple((a.data.shape, a.data.dtype) if isinstance(a, Tensor) and a._rg else None for a in args)
            node = Node(cls.__name__, _function_rule, parents, meta, (outs[0].shape, outs[0].dtype), attrs=ctx)
            node.n_out = len(outs)
            ctx._out_meta = tuple((o.shape, o.dtype) for o in outs)
            ctx._cls = cls
            saved = []
            for s in ctx._saved:
                k = next((k for k, o in enumerate(outs) if s is o), None)
                saved.append((_OUTPUT, k, s.data) if k is not None else s)
            ctx._saved = tuple(saved)
            node.save(tuple(s for s in saved if isinstance(s, Tensor)))
            if prof is not None:
                prof._add_saved(cls.__name__, node.saved_bytes)
            nd = getattr(ctx, "_non_diff", ())
            for k, w in enumerate(wrapped):
                if w.data.dtype.kind in "fc" and not any(o is outs[k] for o in nd):
                    w._node, w._oidx, w._rg = node, k, True
        return wrapped[0] if single else wrapped


def _forward(cls, ctx, args, kwargs, prof):
    """Run ``cls.forward`` unrecorded. A profile shows the Function as one op: it is set aside
    meanwhile, so the ops inside are not counted a second time."""
    token = _state.set_profiler(None)
    t0 = time.perf_counter()
    try:
        with no_grad():
            res = cls.forward(ctx, *args, **kwargs)
    finally:
        _state.reset_profiler(token)
    if prof is not None:
        prof._add_forward(cls.__name__, time.perf_counter() - t0)
    return res


def _function_rule(node, g, saved):
    ctx = node.attrs
    graph = _state.grad_enabled()
    gs = list(g) if node.n_out > 1 else [g]
    for k, gk in enumerate(gs):
        if gk is None:
            shape, dtype = ctx._out_meta[k]
            from .backend import array_module

            ref = next(x for x in gs if x is not None)
            xp = array_module(ref.data if isinstance(ref, Tensor) else ref)
            gs[k] = xp.zeros(shape, dtype=dtype)
        if not isinstance(gs[k], Tensor):
            gs[k] = _gwrap(gs[k])
    ctx._node, ctx._graph = node, graph
    try:
        res = ctx._cls.backward(ctx, *gs)
    finally:
        ctx._node = None
    res = (res,) if not isinstance(res, (tuple, list)) else tuple(res)
    if len(res) != len(node.parents):
        raise RuntimeError(
            f"{node.op}.backward returned {len(res)} gradients, but forward took {len(node.parents)} inputs"
        )
    out = []
    for r, p, m in zip(res, node.parents, node.meta, strict=True):
        if p is None or r is None:
            out.append(None)
            continue
        if not isinstance(r, Tensor):
            from .backend import array_module

            # the gradients' device: a raw array or list becomes an array there (a host array
            # returned for a device input is an error naming both devices)
            r = _wrap(array_module(r, gs[0].data).asarray(r, dtype=m[1]))
        if r.shape != m[0]:
            raise RuntimeError(
                f"{node.op}.backward returned a gradient of shape {r.shape} for an input of shape {m[0]}"
            )
        out.append(r if graph else r.data)
    return tuple(out)


# ---------------------------------------------------------------------------
# The profile (minigrad/profile.py): ops and the engine report to the thread's active profile
# ---------------------------------------------------------------------------

def profile():
    """Context manager collecting, per op, calls, forward time, backward time and bytes saved.

    >>> with mg.autograd.profile() as p:
    ...     (x * x).sum().backward()
    >>> print(p.table())
    """
    from .profile import Profile

    return Profile()
