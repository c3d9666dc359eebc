"""The tape: how an op is defined (``Op``), the one ``apply`` that runs and records every op,
and the backward engine.

An op is its forward over backend arrays, ``forward(xp, *arrays, **params)``, beside its
gradient rule, ``rule(ctx, g, **params) -> one gradient per input``. A rule always sees
Tensors: ``g``, ``ctx.saved`` (the inputs it asked to keep) and ``ctx.out`` (the output).
In a first-order backward the engine turns recording off, so the Tensor ops a rule calls
cost one array operation each and record nothing; with ``create_graph=True`` the very same
code records a new graph, which is how second derivatives come for free. A rule cannot
silently drop out of the graph by calling a NumPy function on an array: it never holds one
(``ctx.aux`` excepted: constants the forward computed, such as masks and indices).

``apply(op, *args, **params)`` runs the forward, wraps the result, and records a Node when
this thread records (``minigrad._state``) and an input requires grad. Every op goes
through it: the registered ones, ``autograd.Function``, in-place writes and sparse ops.

Backward collects the Nodes reachable from its roots with an explicit stack, orders them by
creation (a Node always runs after its inputs' Nodes), and walks them in reverse. No Python
recursion anywhere, and Nodes never point at their output Tensor, so a graph dies with its
output.
"""
from __future__ import annotations

import itertools
import operator
import time

import numpy as np

from . import _state
from . import backend as _be
from .tensor import Tensor, wrap

_seq = itertools.count()
_next_seq = _seq.__next__
_get_mode = _state.get
_perf = time.perf_counter
_nd = np.ndarray
_new = object.__new__


class Op:
    """One operation: a forward over backend arrays and its gradient rule, plus what the
    rest of minigrad derives from it (Tensor methods, exports, NumPy dispatch, pictures).

    Args:
        name: the name on the tape, in profiles and pictures.
        forward: ``forward(xp, *arrays, **params)`` -> the output array (a tuple for
            ``n_out > 1``; ``(out, aux)`` when ``aux``).
        rule: ``rule(ctx, g, **params)`` -> a tuple with a Tensor (or None) per input.
            None: not differentiable (its outputs never require grad).
        save: positions of the inputs the rule reads as ``ctx.saved`` (in that order).
        cross: save input ``i`` only when another input needs a gradient (``x * y``: ``x``
            is needed only for ``y``'s gradient).
        save_out: the rule reads the output as ``ctx.out``.
        aux: the forward returns ``(out, aux)``; the rule reads ``ctx.aux`` (constants).
        broadcast: inputs broadcast against each other; the engine sums each gradient back
            to its input's shape (``sum_to``), so the rule returns output-shaped gradients.
        view: the output shares input 0's storage (True), or may ("maybe": checked).
        kind: how pictures draw it: "elementwise", "reduce", "broadcast", "view", "other".
        samples: ``samples(rng) -> [Sample, ...]`` the inputs its tests use.
        info: ``info(**params) -> dict`` the attributes the tape and pictures show (axis...).
        torch: ``torch(torch_module, *args, **kwargs)`` the same computation in PyTorch.
    """

    __slots__ = ("name", "forward", "rule", "save", "cross", "save_out", "aux", "broadcast", "view",
                 "kind", "samples", "torch", "n_out", "frontend", "method", "dunders", "export",
                 "numpy", "inplace", "doc", "info")

    def __init__(self, name, forward, rule=None, *, save=(), cross=False, save_out=False, aux=False,
                 broadcast=False, view=False, kind="other", samples=None, torch=None, n_out=1, info=None):
        self.name = name
        self.forward = forward
        self.rule = rule
        self.save = tuple(save)
        self.cross = cross
        self.save_out = save_out
        self.aux = aux
        self.broadcast = broadcast
        self.view = view
        self.kind = kind
        self.samples = samples
        self.torch = torch
        self.n_out = n_out
        self.info = info       # info(**params) -> the attributes the tape and pictures show
        self.frontend = None   # the public function (set by ops.public)
        self.method = ()       # Tensor method names bound to the frontend
        self.dunders = ()      # operator names; a name starting "__r" gets the reflected call
        self.export = None     # the name under ``minigrad``
        self.numpy = ()        # NumPy functions / ufuncs that dispatch to the frontend
        self.inplace = ()      # in-place method names (``add_``, ``__iadd__``) reusing this rule
        self.doc = None

    @property
    def differentiable(self) -> bool:
        return self.rule is not None

    def __repr__(self):
        return f"<Op {self.name}>"


class Node:
    """One recorded operation: what backward needs to send gradients to its inputs.

    The rule's ``ctx``: ``saved`` (Tensors), ``out``, ``aux``, ``needs_input_grad``,
    ``meta`` (per input (shape, dtype), None for an input that needs no gradient).
    """

    __slots__ = ("op", "opdef", "parents", "meta", "out_meta", "params", "saved", "vers", "_out",
                 "aux", "seq", "_g", "freed", "special", "view_ver", "__dict__", "__weakref__")
    # rarely set: live in the instance __dict__ when set; setting one of the three below also
    # sets ``special``, which sends the node down the walk's full path
    info = None       # attributes shown to readers (axis, keepdims, pattern...)
    consts = None     # ((input index, shape, dtype), ...) of Tensor inputs that need no grad
    where = None      # (file, line) of the user's code, in anomaly mode

    def _special(name, default, doc):
        def get(self):
            return self.__dict__.get(name, default)

        def set_(self, value):
            self.__dict__[name] = value
            self.special = True

        return property(get, set_, doc=doc)

    n_out = _special("n_out", 1, "outputs (an autograd.Function may have several)")
    _hooks = _special("_hooks", None, "hooks of the (non-leaf) output tensor")
    retain = _special("retain", None, "weakref of the output when retain_grad()")
    del _special

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
        n = sum(getattr(s.data if isinstance(s, Tensor) else s, "nbytes", 0) for s in self.saved)
        n += getattr(self._out, "nbytes", 0)
        if self.aux:
            n += sum(getattr(a, "nbytes", 0) for a in self.aux if a is not None)
        return int(n)

    @property
    def out(self) -> Tensor:
        """The output, for the rule: with ``create_graph`` it carries this Node's history."""
        t = wrap(self._out)
        if _get_mode().grad:
            t._node, t._rg = self, True
        return t

    def __repr__(self):
        return f"<Node {self.op} #{self.seq} -> {self.out_meta[0]}>"

    def check(self):
        """Refuse a freed graph, or saved tensors changed in place since they were saved."""
        if self.freed:
            raise RuntimeError(
                f"trying to backward through the graph a second time (op {self.op!r}): its saved "
                "values were freed after the first backward. Pass retain_graph=True to the first "
                "backward() if you need to call it twice"
            )
        for cell, v, what in self.vers:
            if cell[0] != v:
                what = "its output" if what == -1 else what if isinstance(what, str) else f"input {what}"
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: {what} of op {self.op!r} (output shape {self.out_meta[0]}) "
                    f"was saved at version {v} and is now at version {cell[0]}. Do the in-place "
                    "operation on a clone, or after backward"
                )

    def release(self):
        self.saved = ()
        self._out = None
        self.aux = None
        self.params = None
        self.freed = True


# ---------------------------------------------------------------------------
# apply: run an op, wrap its result, record it
# ---------------------------------------------------------------------------

def const(v, op: str):
    """A non-Tensor operand as a backend value: Python scalars stay scalars (weakly typed)."""
    if isinstance(v, (int, float, bool)):
        return v
    if isinstance(v, np.generic):
        if v.dtype.kind in "OUSV":
            raise TypeError(f"{op}: unsupported operand {v!r} of dtype {v.dtype}")
        return v.item()
    if isinstance(v, _nd) or _be.is_cupy_array(v):
        if v.dtype.kind in "OUSVMm":
            raise TypeError(f"{op}: unsupported operand of dtype {v.dtype} (expected numbers)")
        return v
    if isinstance(v, (list, tuple)):
        return Tensor(v).data
    if hasattr(v, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: sparse tensors are not supported here; use mg.sparse functions or .to_dense()")
    if isinstance(v, complex):
        raise TypeError(f"{op}: complex operands are not supported (got {v!r})")
    raise TypeError(f"{op}: unsupported operand type {type(v).__name__} (expected a Tensor, an array or a number)")


def _xp_of(op, datas):
    """The array module of an op's operands; an error naming the op and both devices when mixed."""
    try:
        return _be.array_module(*datas)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e}; move one with .to(device)") from None


def edge(x):
    """The parent entry of an input that requires grad: its Node (or (Node, i)) or the leaf."""
    n = x._node
    if n is None:
        return x
    if n.view_ver is not None and n.view_ver != x._ver[0] and x._base is not None:
        n = x._refresh_view()  # the storage was written since this view was taken
    return n if x._oidx == 0 else (n, x._oidx)


def apply(op: Op, *args, **params):
    """Run ``op`` on ``args`` (Tensors or constants) and record it when needed.

    Returns the output Tensor (a tuple of them for an op with several outputs).
    """
    mode = _get_mode()
    datas = []
    rg = False
    dev = False  # a device (CuPy) array among the operands
    for a in args:
        if a.__class__ is Tensor or isinstance(a, Tensor):
            d = a.data
            if a._rg:
                rg = True
        else:
            d = const(a, op.name)
        if d.__class__ is not _nd and hasattr(d, "shape"):
            dev = True
        datas.append(d)
    xp = _xp_of(op.name, datas) if dev else np
    try:
        if mode.observers:
            t0 = _perf()
            out = op.forward(xp, *datas, **params)
            dt = _perf() - t0
            for o in mode.observers:
                o.forward(op.name, dt, out)
        else:
            out = op.forward(xp, *datas, **params)
    except ValueError as e:
        if "broadcast" not in str(e) or not op.broadcast:
            raise
        shapes = " and ".join(str(tuple(d.shape)) if hasattr(d, "shape") else "scalar" for d in datas)
        raise ValueError(f"{op.name}: operands could not be broadcast together: shapes {shapes} "
                         "(NumPy broadcasting: trailing dims must match or be 1)") from None
    aux = None
    if op.aux:
        out, aux = out
    record = rg and mode.grad and op.rule is not None
    if op.n_out != 1 and isinstance(out, tuple):
        return _wrap_many(op, out, args, datas, params, aux, record, mode)
    if out.__class__ is not _nd:
        out = _as_array(out)
    r = _new(Tensor)  # wrap(), inline: every op runs this
    r.data = out
    r._rg = False
    r._grad = r._node = None
    r._oidx = 0
    if op.view and (op.view is True or _shares(out, datas[0])):
        x = args[0]
        r._ver = x._ver
        r._base = x if x._base is None else x._base
        if not r._base._rg:
            _note_plain_view(r)
    else:
        r._ver = [0]
    if record and out.dtype.kind == "f":
        n = _record(op, args, datas, params, aux, out, r._ver, mode)
        r._node = n
        r._rg = True
        if op.view:
            n.view_ver = r._ver[0]
    return r


def _record(op, args, datas, params, aux, out, out_ver, mode):
    """The Node for one call of ``op`` (its inputs' edges, what the rule saves, versions)."""
    parents = []
    meta = []
    consts = None
    for a, d in zip(args, datas):
        if isinstance(a, Tensor):
            if a._rg:
                m = a._node  # edge(a), inline for the common case
                parents.append(a if m is None else m if m.view_ver is None and a._oidx == 0 else edge(a))
                meta.append((d.shape, d.dtype))
                continue
            consts = (consts or ()) + ((len(parents), d.shape, d.dtype),)
        parents.append(None)
        meta.append(None)
    n = _new(Node)
    n.op = op.name
    n.opdef = op
    n.parents = parents = tuple(parents)
    n.meta = tuple(meta)
    n.out_meta = (out.shape, out.dtype)
    n.params = params or None
    n.aux = aux
    n.seq = _next_seq()
    n._g = None
    n.freed = n.special = False
    n.view_ver = None
    if consts is not None:
        n.consts = consts
    if op.info is not None:
        n.info = op.info(**params)
    if op.save:
        n.saved, vers = _save(op, args, datas, parents)
    else:
        n.saved = vers = ()
    if op.save_out:
        n._out = out
        vers += ((out_ver, out_ver[0], -1),)
    else:
        n._out = None
    n.vers = vers
    if mode.observers:
        for o in mode.observers:
            o.recorded(n)
    return n


def _save(op, args, datas, parents):
    """What the rule reads as ``ctx.saved``, and the versions to check before it runs."""
    saved = []
    vers = ()
    positions = op.save if op.save[-1] is not Ellipsis and Ellipsis not in op.save \
        else _positions(op.save, len(args))
    needing = len(parents) - parents.count(None) if op.cross else 0
    for i in positions:
        if i >= len(args):
            continue
        a = args[i]
        if op.cross and needing - (parents[i] is not None) == 0:  # nobody else needs it
            saved.append(None)
        elif isinstance(a, Tensor):
            saved.append(a)
            vers += ((a._ver, a._ver[0], i),)
        elif a is None or isinstance(a, (int, float, bool)):
            saved.append(a)
        else:
            saved.append(wrap(datas[i]))  # an array constant: the rule sees a Tensor
    return tuple(saved), vers


def _positions(save, n):
    """The argument positions ``save`` names: ``(1, ...)`` is every one from 1 on, ``(1, ..., -1)``
    every one from 1 up to the last (excluded)."""
    if Ellipsis not in save:
        return save
    k = save.index(Ellipsis)
    head, tail = save[:k], save[k + 1:]
    end = n + tail[0] if tail else n
    return tuple(p for p in head if p < end) + tuple(range(head[-1] + 1 if head else 0, end))


def _wrap_many(op, outs, args, datas, params, aux, record, mode):
    """Several outputs (autograd.Function): one Node, each output Tensor its (Node, index)."""
    outs = tuple(_as_array(o) for o in outs)
    ts = tuple(wrap(o) for o in outs)
    if record and any(o.dtype.kind == "f" for o in outs):
        n = _record(op, args, datas, params, aux, outs[0], ts[0]._ver, mode)
        n.n_out = len(outs)
        for k, t in enumerate(ts):
            if t.data.dtype.kind == "f":
                t._node, t._oidx, t._rg = n, k, True
    return ts


def _as_array(out):
    """NumPy reductions and ufuncs on 0-d input return scalars: keep arrays."""
    if isinstance(out, np.generic):
        return np.asarray(out)
    return out


def _shares(out, xd) -> bool:
    if out.size == 0 or xd.size == 0:
        return True
    return bool(_be.array_module(xd).may_share_memory(out, xd))


def _note_plain_view(v):
    """Remember a view of storage that does not require grad, so that a recorded in-place write
    which makes the storage require grad can give it a history too (ops/inplace.py). The weak
    references ride on the storage's version cell, ``_ver[1:]``; dead ones are dropped as it grows."""
    import weakref

    cell = v._ver
    cell.append(weakref.ref(v))
    n = len(cell)
    if n > 32 and n & (n - 1) == 0:
        cell[1:] = [w for w in cell[1:] if w() is not None]


# ---------------------------------------------------------------------------
# grad mode (per thread)
# ---------------------------------------------------------------------------

def is_grad_enabled() -> bool:
    """Whether ops record the tape now, in this thread."""
    return _get_mode().grad


class _GradMode:
    _value = True

    def __new__(cls, fn=None):
        # ``@mg.no_grad`` (no parentheses) decorates directly, as PyTorch allows
        self = super().__new__(cls)
        return self if fn is None else self(fn)

    def __enter__(self):
        self._tokens = getattr(self, "_tokens", [])
        self._tokens.append(_state.set_grad(self._value))
        return self

    def __exit__(self, *exc):
        _state.reset(self._tokens.pop())
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self.__class__():
                return fn(*a, **k)

        return wrapper


class no_grad(_GradMode):
    """Context manager / decorator: ops run without recording the tape (in this thread).

    >>> with mg.no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    _value = False


class enable_grad(_GradMode):
    """Context manager / decorator: ops record the tape (inside ``no_grad`` too)."""

    _value = True


class set_grad_enabled(_GradMode):
    """``with mg.set_grad_enabled(False):`` — recording on or off, chosen by a value."""

    def __new__(cls, mode: bool):
        self = object.__new__(cls)
        self._value = bool(mode)
        return self


# ---------------------------------------------------------------------------
# backward
# ---------------------------------------------------------------------------

def _seed(t, g, graph):
    """The output gradient of root ``t``, checked and as a Tensor."""
    if g is None:
        if t.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; this "
                f"output has shape {t.shape}. Pass grad= (a tensor of shape {t.shape})"
            )
        d = t.data
        return wrap(_be.array_module(d).ones(d.shape, dtype=d.dtype))
    if hasattr(g, "_sparse_values_for_grad"):
        raise TypeError(
            f"backward: got a sparse gradient for a dense output of shape {t.shape}; pass a dense "
            "Tensor (s.to_dense()) of that shape")
    if not isinstance(g, Tensor):
        if isinstance(g, (str, bytes)) or not (isinstance(g, (int, float, list, tuple, np.generic))
                                              or hasattr(g, "shape")):
            raise TypeError(
                f"backward: grad must be a Tensor (or an array / number) of shape {t.shape}, "
                f"got {type(g).__name__}")
        g = wrap(_be.array_module(t.data).asarray(g, dtype=t.dtype))
    if g.shape != t.shape:
        raise RuntimeError(
            f"backward: grad has shape {g.shape} but the output has shape {t.shape}; they must match exactly"
        )
    if g.dtype != t.dtype:
        g = g.astype(t.dtype)
    return g if graph else wrap(g.data)


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
    """The reverse pass. With ``capture`` (a dict: id(leaf) or (id(node), index) -> slot)
    gradients are returned there instead of accumulated into leaves' ``.grad`` (``mg.grad``)."""
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
        g = _seed(t, g, graph)
        e = edge(t)  # a view written since it was taken is re-derived first
        if e.__class__ is not Node and e.__class__ is not tuple:  # a leaf
            _add_to(leaves, e, g)
            continue
        node, idx = (e, 0) if e.__class__ is Node else e
        _node_add(node, idx, g)
        roots.append(node)
    token = _state.set_grad(graph)  # rules record only with create_graph
    order = ()
    try:
        order = _collect(roots) if roots else ()
        _walk(order, graph, retain_graph, capture, leaves)
    finally:
        _state.reset(token)
        for n in order:
            n._g = None
    for leaf, g in leaves.values():
        if leaf._hooks:
            g = _call_hooks(leaf._hooks, g)
        if capture is not None:
            if id(leaf) in capture:
                _capture_add(capture, id(leaf), g)
        else:
            _accumulate_leaf(leaf, g, graph)


def _walk(order, graph, retain_graph, capture, leaves):
    observers = _get_mode().observers
    if observers:  # the ops rules run count as their rule's backward time, not as forward calls
        token = _state.without_observers(graph)
        try:
            return _walk_nodes(order, graph, retain_graph, capture, leaves, observers)
        finally:
            _state.reset(token)
    return _walk_nodes(order, graph, retain_graph, capture, leaves, ())


def _walk_nodes(order, graph, retain_graph, capture, leaves, observers):
    plain = capture is None and not observers
    for n in order:
        g = n._g
        if g is None:
            if not retain_graph:
                n.release()
            continue
        n._g = None
        if plain and not n.special:
            if n.freed:
                n.check()
            for cell, v, _ in n.vers:
                if cell[0] != v:
                    n.check()
            p = n.params
            grads = n.opdef.rule(n, g) if p is None else n.opdef.rule(n, g, **p)
        else:
            grads = _run_rule(n, g, graph, capture, observers)
        if not retain_graph:
            n.release()
        _send(n, grads, leaves, graph)


def _run_rule(n, g, graph, capture, observers):
    """The full path for one node: hooks, retain_grad, mg.grad's capture, several outputs,
    observers (profile, anomaly)."""
    if n.n_out == 1:
        if n._hooks:
            g = _call_hooks(n._hooks, g)
        if n.retain is not None:
            t = n.retain()
            if t is not None:
                t._grad = g if t._grad is None else t._grad + g
        if capture is not None and (id(n), 0) in capture:
            _capture_add(capture, (id(n), 0), g)
    elif capture is not None:
        for i, gi in enumerate(g):
            if gi is not None and (id(n), i) in capture:
                _capture_add(capture, (id(n), i), gi)
    n.check()
    p = n.params or {}
    if not observers:
        return n.opdef.rule(n, g, **p)
    t0 = _perf()
    grads = n.opdef.rule(n, g, **p)
    dt = _perf() - t0
    for o in observers:
        o.backward(n, dt, grads)
    return grads


def _send(n, grads, leaves, graph):
    """Hand each input its gradient: checked against the input, summed where inputs repeat
    (in a first-order pass the sums are plain array additions: nothing records them)."""
    for p, gi, m in zip(n.parents, grads, n.meta, strict=False):
        if p is None or gi is None:
            continue
        if gi.__class__ is not Tensor and not isinstance(gi, Tensor):
            raise TypeError(f"the gradient rule of {n.op!r} returned {type(gi).__name__}, expected a Tensor")
        d = gi.data
        if d.shape != m[0]:
            if not n.opdef.broadcast:
                raise RuntimeError(
                    f"internal error: the gradient rule of {n.op!r} returned shape "
                    f"{d.shape} for an input of shape {m[0]}"
                )
            gi = gi.sum_to(m[0])
        dt = d.dtype
        if dt is not m[1] and dt != m[1]:
            gi = gi.astype(m[1])
        c = p.__class__
        if c is Node and not p.special:
            pg = p._g
            p._g = gi if pg is None else pg + gi if graph else wrap(_as_array(pg.data + gi.data))
        elif c is Node:
            _node_add(p, 0, gi)
        elif c is tuple:
            _node_add(p[0], p[1], gi)
        else:
            e = leaves.get(id(p))
            if e is None:
                leaves[id(p)] = [p, gi]
            else:
                e[1] = e[1] + gi if graph else wrap(_as_array(e[1].data + gi.data))


def _add_to(leaves, leaf, g):
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


def _capture_add(capture, key, g):
    cur = capture[key]
    capture[key] = g if cur is None else cur + g


def _call_hooks(hooks, g):
    for h in hooks:
        r = h(g)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a gradient hook must return a Tensor or None, got {type(r).__name__}")
            g = r
    return g


def _accumulate_leaf(leaf, g, graph):
    if graph:
        leaf._grad = g if leaf._grad is None else leaf._grad + g
        return
    total = g.data if leaf._grad is None else _as_array(leaf._grad.data + g.data)
    leaf._grad = wrap(_readonly(total))


def _readonly(a):
    """A read-only view of a gradient array, so that one array shared by two gradients is
    never changed through the other (NumPy only: CuPy has no read-only flag)."""
    if a.__class__ is _nd:
        a = a.view()
        a.flags.writeable = False
    return a


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
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor) or hasattr(inputs, "_sparse_values_for_grad")
    inputs_t = (inputs,) if single else tuple(inputs)
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
    keys, wrappers, capture = [], [], {}
    for x in inputs_t:
        sp = getattr(x, "_sparse_values_for_grad", None)
        wrappers.append(x if sp is not None else None)
        if sp is not None:
            x = sp()
        if not isinstance(x, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(x).__name__}")
        if not x._rg:
            raise RuntimeError("grad: one of the inputs does not require grad")
        e = edge(x)
        key = (id(e), 0) if e.__class__ is Node else (id(e[0]), e[1]) if e.__class__ is tuple else id(e)
        keys.append(key)
        capture[key] = None
    run_backward(outputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph, capture=capture)
    result = []
    for key, w in zip(keys, wrappers, strict=True):
        g = capture[key]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "grad: one of the differentiated tensors was not used to compute the outputs; "
                    "pass allow_unused=True to get None for it"
                )
            result.append(None)
            continue
        result.append(g if w is None else w._grad_like(g))
    return tuple(result)


def backward(t, grad=None, retain_graph=False, create_graph=False) -> None:
    """Accumulate d(t)/d(leaf) into every leaf's ``.grad`` (bound as ``Tensor.backward``).

    Args:
        grad: the gradient of some scalar with respect to ``t`` (same shape); may be
            omitted for a one-element tensor.
        retain_graph: keep saved values so backward can run through the graph again.
        create_graph: record the backward pass (for higher-order gradients).
    """
    run_backward([t], [grad], retain_graph=retain_graph or create_graph, create_graph=create_graph)
