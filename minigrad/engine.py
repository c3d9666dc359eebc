"""The tape: ``Op``, an op's record (its forward over backend arrays beside its gradient rule);
``run_op``, the one way every op runs and is recorded; ``Node``, the record of one call; and
``ctx.xp``, what a rule calls. docs/architecture.md reads it in that order; backward.py walks
the Nodes back, forward_ad.py carries tangents through ``run_op``.
"""
from __future__ import annotations

import functools
import itertools
import time
import weakref

import numpy as np

from . import _state
from . import _xp
from .errors import NAMED_ERRORS, BatchingFallback, ComplexNotSupported, MinigradError, reraise
from .tensor import Tensor, get_default_dtype, wrap

OPS: dict = {}        # every registered op's record by name (ops/_registry.defop fills it)
FUNCTIONS: dict = {}  # NumPy name -> minigrad's function of that name (ops/__init__ fills it)
_next_seq = itertools.count().__next__
_get_mode = _state.get
_nd = np.ndarray


class Op:
    """The engine's record of one operation: what ``run_op`` and backward read. (What the rest of
    minigrad derives from an op, its public function, methods, NumPy names, samples and torch
    oracle, is its registry entry: ops/_registry.py.)

    - ``forward(xp, *arrays, **params)``: the output array (a tuple when ``n_out > 1``;
      ``(out, aux)`` with ``aux``: values the rule reads as ``ctx.aux``).
    - ``rule(ctx, g, **params)``: a gradient (or None) per input; None: not differentiable.
    - ``save``: the inputs the rule reads as ``ctx.saved`` (``(1, ...)``: every one from 1 on;
      ``(1, ..., -1)``: up to the last); ``save_for_others``: an input is saved only when another
      one needs a gradient (``x * y``); ``save_out``: the rule reads the output as ``ctx.out``.
    - ``broadcast``: the rule returns output-shaped gradients and backward sums each back to its
      input's shape (``sum_to``); ``view``: the output shares input 0's storage (True), or may
      ("maybe": checked).
    - ``kind``: how pictures draw it; ``info(**params)``: the attributes the tape shows (axis...).
    - ``ufunc``: the forward is ``xp.<ufunc>``: a replay (mg.compile) calls that directly.
    - ``rule_on_arrays``: the rule is written in the array API; False: it is handed Tensors always
      (``autograd.Function``'s user code).
    - ``jvp(ctx, *tangents, **params)``: the forward-mode rule, the output's tangent (forward_ad.py
      derives it for elementwise, linear and multilinear ops).
    - ``batch(forward, arrays, params)``: vmap's batching rule, for an op whose forward cannot run on
      batched arrays as it is written (_batched.py; the registry derives an elementwise op's: its
      forward on the physical arrays, aligned); None: the forward batches its own array calls.
    - ``complex``: what the op does with complex operands (docs/complex.md). False: it refuses them,
      naming itself (``run_op``); ``"holomorphic"``: the rule is written for real numbers as
      ``g f'(x)``, and a Node with a complex output records ``twin`` instead, the same op with the
      rule for complex numbers (the registry derives it: ``ops/_registry.complex_twin``), so a real
      pass calls the text itself; True: the rule's text is right for complex numbers as it stands
      (its conjugates placed, or real coefficients only: views, sums, indexing).
    """

    __slots__ = ("name", "forward", "rule", "save", "save_at", "save_for_others", "save_out", "aux", "broadcast", "view",
                 "kind", "n_out", "info", "ufunc", "rule_on_arrays", "jvp", "batch", "complex", "twin")

    def __init__(self, name, forward, rule=None, *, save=(), save_for_others=False, save_out=False, aux=False,
                 broadcast=False, view=False, kind="other", n_out=1, info=None, ufunc=None, rule_on_arrays=True, jvp=None,
                 batch=None, complex=False):  # noqa: A002 - the op's complex support
        self.complex, self.twin = complex, None
        self.name, self.forward, self.rule = name, forward, rule
        self.save = tuple(save)
        self.save_at = None if Ellipsis in self.save else self.save  # the positions, when known without the call
        self.save_for_others, self.save_out, self.aux, self.broadcast = save_for_others, save_out, aux, broadcast
        self.view, self.kind, self.n_out, self.info, self.rule_on_arrays, self.jvp = view, kind, n_out, info, rule_on_arrays, jvp
        self.ufunc = ufunc
        self.batch = batch

    def __repr__(self):
        return f"<Op {self.name}>"


class Node:
    """One recorded call of an op: what backward needs to send gradients to its inputs. ``op``
    is the op's name (the tape's), ``definition`` its record; ``parents``: per input, the edge of an
    input that requires grad (its Node, ``(Node, output index)``, or the leaf), else None;
    ``meta``: per such input its (shape, dtype). A rule on Tensors reads the Node as its ``ctx``:
    ``saved``, ``out``, ``aux``, ``params``. (tape.py adds the views the printed tape reads.)
    """

    __slots__ = ("op", "definition", "parents", "meta", "out_meta", "params", "saved", "saved_versions", "_out",
                 "aux", "seq", "pending_grad", "freed", "view_version", "__dict__", "__weakref__")
    # rarely set: in the instance __dict__ when set
    xp = None         # the rule's namespace on Tensors (TENSORS, below)
    info = None       # attributes shown to readers (axis, keepdims, pattern...)
    consts = None     # ((input index, shape, dtype), ...) of Tensor inputs that need no grad (pictures)
    batch_levels = None  # {input index: the vmap levels its array is batched at} (vmap: _batched.py)
    where = None      # (file, line) of the user's code, in anomaly mode
    n_out = 1         # outputs (an autograd.Function may have several)
    _hooks = None     # hooks of the (non-leaf) output tensor
    retain = None     # weakref of the output when retain_grad()
    out_tangents = None     # the output's tangents (forward mode), for ``ctx.out`` in a backward inside a dual level

    @property
    def out(self) -> Tensor:
        """The output, for a rule on Tensors: with ``create_graph`` it carries this Node's history."""
        t = wrap(self._out)
        if _get_mode().grad:
            t._node, t._requires_grad = self, True
        if self.out_tangents is not None:
            t._tangents = self.out_tangents
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
        for cell, v, what in self.saved_versions:
            if cell.version != v:
                what = "its output" if what == -1 else what if isinstance(what, str) else f"input {what}"
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: {what} of op {self.op!r} (output shape {self.out_meta[0]}) "
                    f"was saved at version {v} and is now at version {cell.version}. Do the in-place "
                    "operation on a clone, or after backward"
                )

    def release(self):
        """Drop what backward needed (after it ran, unless ``retain_graph``)."""
        self.saved = ()
        self._out = self.aux = self.params = None
        if self.out_tangents is not None:
            self.out_tangents = None
        self.freed = True


# ---------------------------------------------------------------------------
# run_op: operands, forward, output, record
# ---------------------------------------------------------------------------

def run_op(op: Op, *args, **params):
    """Run ``op`` on ``args`` (Tensors or constants), and record it when this thread records and
    an input requires grad. Returns the output Tensor (a tuple of them for several outputs)."""
    mode = _get_mode()
    datas, rg, xp = _operands(op, args)                   # 1. the operands' arrays and module
    if not op.complex:
        _real_only(op, datas)
    out = _forward(op, xp, args, datas, params, mode)     # 2. the forward
    aux = None
    if op.aux:
        out, aux = out
    record = rg and mode.grad and op.rule is not None
    if op.n_out != 1 and isinstance(out, tuple):
        return _outputs(op, out, args, datas, params, aux, record, mode)
    if not isinstance(out, _nd):
        out = _as_array(out)
    r = wrap(out)                                         # 3. the output
    if op.view and (op.view is True or out.size == 0 or _xp.shares_memory(out, datas[0])):  # empty: a view still
        _share_storage(r, args[0])
    kind = out.dtype.kind
    if record and kind in "fc":                           # 4. the record (``twin``: a holomorphic op's complex rule)
        n = r._node = _record(op if kind == "f" or op.twin is None else op.twin, args, datas, params, aux, out,
                              r._storage, mode)
        r._requires_grad = True
        if op.view:
            n.view_version = r._storage.version
    if mode.fw is not None:                               # 5. forward mode's tangents (forward_ad.py)
        mode.fw.carry(op, args, datas, params, aux, r)
    return r


def _operands(op, args):
    """The operands' backend arrays (constants made arrays or Python numbers), whether one requires
    grad, and their array module (an error naming the op when host and device arrays are mixed)."""
    datas = []
    rg = False
    dev = False  # a device (CuPy) array among the operands
    scalars = 0  # Python numbers among them
    for a in args:
        if isinstance(a, Tensor):
            d = a.data
            if a._requires_grad:
                rg = True
        else:
            d = const(a, op.name)
        if not isinstance(d, _nd):
            if hasattr(d, "shape"):
                dev = True
            else:
                scalars += 1
        datas.append(d)
    if scalars and scalars == len(datas):  # numbers only (``mg.exp(1.0)``): tensors of them, as mg.tensor makes
        dt = np.result_type(*datas)
        dt = get_default_dtype() if dt.kind == "f" else np.result_type(get_default_dtype(), np.complex64) \
            if dt.kind == "c" else dt
        datas = [Tensor(v, dtype=dt).data for v in datas]
        dev = not isinstance(datas[0], _nd)
    if not dev:
        return datas, rg, np
    try:
        return datas, rg, _xp.array_module(*datas)
    except RuntimeError as e:
        raise RuntimeError(f"{op.name}: {e}; move one with .to(device)") from None


def _real_only(op, datas):
    """Refuse complex operands of an op that does not take them (``Op.complex`` False), naming it."""
    for d in datas:
        if d.dtype.kind == "c" if hasattr(d, "dtype") else isinstance(d, complex):
            raise ComplexNotSupported(f"{op.name}: complex operands are not supported (got dtype "
                            f"{getattr(d, 'dtype', 'complex')}); docs/complex.md lists the ops that refuse "
                            "complex numbers and why")


def const(v, name: str):
    """A non-Tensor operand of the op ``name`` as a backend value: Python numbers stay numbers
    (weakly typed), NumPy scalars become Python ones (as in PyTorch, ``float32 tensor *
    np.float64(2)`` stays float32), arrays stay arrays, nested lists become ``mg.tensor``'s arrays."""
    if isinstance(v, np.generic):
        if v.dtype.kind in "OUSV":
            raise TypeError(f"{name}: unsupported operand {v!r} of dtype {v.dtype}")
        return v.item()
    if isinstance(v, (int, float, bool, complex)):
        return v
    if isinstance(v, _nd) or _xp.is_cupy_array(v):
        if v.dtype.kind in "OUSVMm":
            raise TypeError(f"{name}: unsupported operand of dtype {v.dtype} (expected numbers)")
        return v
    if isinstance(v, (list, tuple)):
        try:
            return Tensor(v).data
        except (TypeError, ValueError) as e:  # Tensor's message names ``tensor``; this one names the op
            raise type(e)(f"{name}: cannot use {type(v).__name__} operand as a tensor: {e}") from None
    if getattr(v, "vmap_levels", None):  # vmap: a batched Tensor's array passed on as a constant (an index's .data)
        return v
    raise TypeError(f"{name}: unsupported operand type {type(v).__name__} (expected a Tensor, an array or a "
                    "number; a sparse tensor has functions of its own, or .to_dense())")


def _forward(op, xp, args, datas, params, mode):
    """The op's forward on the arrays; NumPy's errors re-raised naming the op."""
    try:
        if mode.observers:
            return _observed_forward(op, xp, args, datas, params, mode.observers)
        return op.forward(xp, *datas, **params)
    except BatchingFallback as e:  # vmap: an array call without a batching rule
        return e.fallback(op, datas, params)
    except NAMED_ERRORS as e:  # NumPy's text ("boolean negative ... not supported") names the op first
        if isinstance(e, ValueError) and op.broadcast and "broadcast" in str(e):
            shapes = " and ".join(str(tuple(d.shape)) if hasattr(d, "shape") else "scalar" for d in datas)
            raise ValueError(f"{op.name}: operands could not be broadcast together: shapes {shapes} "
                             "(NumPy broadcasting: trailing dims must match or be 1)") from None
        if isinstance(e, MinigradError):  # a capture's or anomaly mode's own, with its attributes
            raise
        reraise(e, op.name)


def _observed_forward(op, xp, args, datas, params, observers):
    """``op``'s forward, timed and reported to each observer (a profile); only while one is active.
    A capture (``mg.compile``) is shown the whole call instead, and may hand back ``out`` with
    NumPy scalars made arrays (the arrays it will know again when later ops read them)."""
    t0 = time.perf_counter()
    out = op.forward(xp, *datas, **params)
    dt = time.perf_counter() - t0
    for o in observers:
        if getattr(o, "captures", False):
            out = o.op(op, xp, args, datas, params, out)
        else:
            o.forward(op.name, dt, out)
    return out


def _as_array(out):
    """NumPy reductions and ufuncs on 0-d input return scalars: keep arrays."""
    return np.asarray(out) if isinstance(out, np.generic) else out


def _share_storage(r, x):
    """Make ``r`` a view of ``x``: the same storage (version counter), the same base. A view of
    storage that records nothing is remembered in its Storage's ``views`` (weakly, dead ones
    dropped as the list grows), so that a recorded in-place write which makes the storage require
    grad can give it a history too (ops/inplace.py)."""
    st = r._storage = x._storage
    base = r._base = x if x._base is None else x._base
    if not base._requires_grad:
        views = st.views
        if views is None:
            views = st.views = []
        views.append(weakref.ref(r))
        n = len(views)
        if n > 32 and n & (n - 1) == 0:
            views[:] = [w for w in views if w() is not None]


def _outputs(op, outs, args, datas, params, aux, record, mode):
    """Several outputs (autograd.Function): one Node, each output Tensor its (Node, index)."""
    outs = tuple(_as_array(o) for o in outs)
    ts = tuple(wrap(o) for o in outs)
    if record and any(o.dtype.kind in "fc" for o in outs):
        twin = op.twin if op.twin is not None and any(o.dtype.kind == "c" for o in outs) else op
        n = _record(twin, args, datas, params, aux, outs[0], ts[0]._storage, mode, len(outs))
        for k, t in enumerate(ts):
            if t.data.dtype.kind in "fc":
                t._node, t._output_index, t._requires_grad = n, k, True
    if mode.fw is not None:
        mode.fw.carry(op, args, datas, params, aux, ts)
    return ts


def _record(op, args, datas, params, aux, out, out_storage, mode, n_out=1):
    """The Node for one call of ``op``: its inputs' edges, what the rule saves, their versions."""
    n = Node()
    n.op, n.definition = op.name, op
    n.parents, n.meta, consts, n_grad, levels = _edges(args)
    if levels is not None:
        n.batch_levels = levels
    n.out_meta = (out.shape, out.dtype)
    n.params = params or None
    n.aux = aux
    n.seq = _next_seq()
    n.pending_grad = None
    n.freed = False
    n.view_version = None
    if consts is not None:
        n.consts = consts
    if op.info is not None:
        n.info = op.info(**params)
    n.saved, vers = _save(op, args, datas, n.parents, n_grad) if op.save else ((), ())
    n._out = out if op.save_out else None
    n.saved_versions = vers + ((out_storage, out_storage.version, -1),) if op.save_out else vers
    if n_out != 1:
        n.n_out = n_out
    if mode.observers and op.kind != "function":  # a Function's Node is reported once complete (function.py)
        report(n, args, datas, mode.observers)
    return n


def report(n, args, datas, observers):
    """Show the observers (a profile, anomaly mode, check_ops) the Node ``n`` just recorded."""
    for o in observers:
        o.recorded(n)
        if getattr(o, "wants_inputs", False):  # mg.autograd.check_ops: the op's operands as called
            o.inputs(n, args, datas)


def edge(x):
    """The parent entry of an input that requires grad: its Node (or (Node, i)) or the leaf."""
    n = x._node
    if n is None:
        return x
    if n.view_version is not None and n.view_version != x._storage.version and x._base is not None:
        n = x._refresh_view()  # the storage was written since this view was taken
    return n if x._output_index == 0 else (n, x._output_index)


def _edges(args):
    """Per input: its parent (the edge of a Tensor that requires grad, else None) and (shape, dtype)
    (None for a constant); the Tensor inputs that need no gradient; how many inputs need one; the
    vmap levels of the batched ones that do (None when none is)."""
    parents = []
    meta = []
    consts = levels = None
    n_grad = 0
    for a in args:
        if isinstance(a, Tensor):
            d = a.data
            if a._requires_grad:
                parents.append(edge(a))
                meta.append((d.shape, d.dtype))
                n_grad += 1
                if d.__class__ is not _nd and getattr(d, "vmap_levels", None):  # vmap (backward.py's _send)
                    levels = (levels or {}) | {len(parents) - 1: d.vmap_levels}
                continue
            consts = (consts or ()) + ((len(parents), d.shape, d.dtype),)
        parents.append(None)
        meta.append(None)
    return tuple(parents), tuple(meta), consts, n_grad, levels


def _save(op, args, datas, parents, n_grad):
    """What the rule reads as ``ctx.saved``, and the versions to check before it runs."""
    n_args = len(args)
    alone = op.save_for_others and n_grad == 1  # an input is kept for the others' gradients only
    saved = []
    vers = []
    for i in op.save_at or _positions(op.save, n_args):
        if i >= n_args:
            continue
        a = args[i]
        if alone and parents[i] is not None:
            saved.append(None)
        elif isinstance(a, Tensor):
            saved.append(a)
            st = a._storage
            vers.append((st, st.version, i))
        elif a is None or isinstance(a, (int, float, bool, complex)):
            saved.append(a)
        else:
            saved.append(wrap(datas[i]))  # an array constant: the rule sees a Tensor
    return tuple(saved), tuple(vers)


def _positions(save, n):
    """The argument positions ``save`` names among ``n``: ``(1, ...)`` is every one from 1 on,
    ``(1, ..., -1)`` every one from 1 up to the last (excluded)."""
    if Ellipsis not in save:
        return save
    k = save.index(Ellipsis)
    head, tail = save[:k], save[k + 1:]
    end = n + tail[0] if tail else n
    return tuple(p for p in head if p < end) + tuple(range(head[-1] + 1 if head else 0, end))


# ---------------------------------------------------------------------------
# what a rule calls: ``ctx.xp``
# ---------------------------------------------------------------------------
# ``xp.<name>`` is NumPy's function of that name where NumPy has one, else the registered op of
# that name (called with its forward's parameters); ``xp.run_op(OP, ...)`` runs an op whose name
# NumPy also uses. A first-order backward hands rules an ``ArrayNamespace`` (the arrays' module);
# a higher-order one (or a capture) hands them ``TENSORS``, which records through ``run_op``.


class ArrayNamespace:
    """``xp`` for a rule on backend arrays: the module's functions, and each op's forward."""

    def __init__(self, module):
        self._module = module

    def run_op(self, op, *args, **params):
        try:
            return op.forward(self._module, *args, **params)
        except BatchingFallback as e:  # vmap: the op's batching rule, or once per element
            return e.fallback(op, args, params)

    def __getattr__(self, name):
        fn = getattr(np, name, None) and getattr(self._module, name, None)
        if fn is None:
            op = OPS.get(name)
            if op is None or op.forward is None:
                raise AttributeError(f"a gradient rule called xp.{name}: neither {self._module.__name__} "
                                     "nor the op registry has it")
            fn = functools.partial(self.run_op, op)
        self.__dict__[name] = fn  # found once
        return fn


class TensorNamespace:
    """``xp`` for a rule on Tensors: minigrad's function of each NumPy name, and each op run."""

    run_op = staticmethod(run_op)

    def __getattr__(self, name):
        fn = FUNCTIONS.get(name) if getattr(np, name, None) is not None else None
        op = OPS.get(name)
        if fn is None and op is not None and op.forward is not None:
            fn = functools.partial(run_op, op)
        if fn is None:
            raise AttributeError(f"a gradient rule called xp.{name}, which minigrad cannot record: no "
                                 "differentiable function of that name, so a higher derivative would miss it")
        self.__dict__[name] = fn
        return fn


TENSORS = Node.xp = TensorNamespace()
_ARRAYS: dict = {}


def array_namespace(module) -> ArrayNamespace:
    """The ``xp`` of rules on ``module``'s arrays (one per module)."""
    ns = _ARRAYS.get(module)
    if ns is None:
        ns = _ARRAYS[module] = ArrayNamespace(module)
    return ns


class ArrayCtx:
    """What a rule reads in a first-order backward: its Node's values as backend arrays."""

    __slots__ = ("xp", "saved", "out", "aux", "parents", "meta")

    def __init__(self, node, xp):
        self.xp = xp
        saved = node.saved
        self.saved = tuple([s.data if isinstance(s, Tensor) else s for s in saved]) if saved else saved
        self.out = node._out
        self.aux = node.aux
        self.parents = node.parents
        self.meta = node.meta
