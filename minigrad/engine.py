"""The tape: how an op is defined (``Op``), the one ``run_op`` that runs and records every op,
and the backward engine.

An op is its forward over backend arrays, ``forward(xp, *arrays, **params)``, beside its
gradient rule, ``rule(ctx, g, **params) -> one gradient per input``, written once in the
array API (operators, array methods and ``ctx.xp``): ``g``, ``ctx.saved`` (the inputs it
asked to keep) and ``ctx.out`` (the output) are backend arrays in a first-order backward,
and Tensors when a higher derivative is taken, so the same text records a new graph
(see "what a rule calls" below, and docs/architecture.md).

``run_op(op, *args, **params)`` runs the forward, wraps the result, and records a Node when
this thread records (``minigrad._state``) and an input requires grad. Every op goes
through it: the registered ones, ``autograd.Function``, in-place writes and sparse ops.

The reverse pass over the Nodes is ``backward.py``.
"""
from __future__ import annotations

import functools
import itertools
import time
import weakref

import numpy as np

from . import _state
from . import backend as _be
from .errors import NAMED_ERRORS, MinigradError, reraise
from .tensor import Tensor, get_default_dtype, wrap

OPS: dict = {}        # every registered op's record by name (``ops._registry.defop`` fills it)
FUNCTIONS: dict = {}  # NumPy name -> minigrad's function of that name (filled where Tensor's methods are bound)
_seq = itertools.count()
_next_seq = _seq.__next__
_get_mode = _state.get
_perf = time.perf_counter
_nd = np.ndarray
_new = object.__new__


class Op:
    """The engine's record of one operation: a forward over backend arrays, its gradient rule,
    and what ``run_op`` and backward read. (What the rest of minigrad derives from an op, its
    public function, methods, NumPy names, samples and torch oracle, is its registry entry:
    ``ops/_registry.py``.)

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
        info: ``info(**params) -> dict`` the attributes the tape and pictures show (axis...).
        ufunc: the name of the NumPy/CuPy function the forward amounts to (``"add"``:
            ``forward(xp, x, y)`` is ``xp.add(x, y)``): run_op calls ``np.<ufunc>`` directly on NumPy
            arrays (no Python frame for the forward), a replay (``mg.compile``) on any.
        arrays: the rule is written in the array API (``ctx.xp``, operators, array methods): a
            first-order backward runs it on backend arrays. False: it is handed Tensors always
            (``autograd.Function``'s user code).
        jvp: the forward-mode rule, ``jvp(ctx, *tangents, **params)`` -> the output's tangent
            (None: zero), a tangent (or None) per input, written in the array API like ``rule``;
            ``ctx`` has ``xp``, ``op``, ``args`` (the inputs), ``out``, ``aux``, ``saved``.
            ``forward_ad.py`` derives it for linear, multilinear and elementwise ops.
    """

    __slots__ = ("name", "forward", "rule", "save", "save_at", "cross", "save_out", "aux", "broadcast", "view",
                 "kind", "n_out", "info", "ufunc", "np_ufunc", "arrays", "jvp")

    def __init__(self, name, forward, rule=None, *, save=(), cross=False, save_out=False, aux=False,
                 broadcast=False, view=False, kind="other", n_out=1, info=None, ufunc=None, arrays=True, jvp=None):
        self.name = name
        self.forward = forward
        self.rule = rule
        self.save = tuple(save)
        self.save_at = None if Ellipsis in self.save else self.save  # positions known without the call
        self.cross = cross
        self.save_out = save_out
        self.aux = aux
        self.broadcast = broadcast
        self.view = view
        self.kind = kind
        self.n_out = n_out
        self.info = info       # info(**params) -> the attributes the tape and pictures show
        self.ufunc = ufunc
        self.np_ufunc = getattr(np, ufunc) if ufunc else None  # what run_op calls on NumPy arrays
        self.arrays = arrays
        self.jvp = jvp

    def __repr__(self):
        return f"<Op {self.name}>"


class Node:
    """One recorded operation: what backward needs to send gradients to its inputs.

    On Tensors the Node is the rule's ``ctx``: ``saved`` (Tensors), ``out``, ``aux``, ``needs_input_grad``,
    ``meta`` (per input (shape, dtype), None for an input that needs no gradient).
    """

    __slots__ = ("op", "opdef", "parents", "meta", "out_meta", "params", "saved", "vers", "_out",
                 "aux", "seq", "_g", "freed", "special", "view_ver", "__dict__", "__weakref__")
    # rarely set: live in the instance __dict__ when set. Whoever sets one of the last three
    # also sets ``special``, which sends the node down the walk's full path
    xp = None         # the rule's namespace when it runs on Tensors (TENSORS, below)
    info = None       # attributes shown to readers (axis, keepdims, pattern...)
    consts = None     # ((input index, shape, dtype), ...) of Tensor inputs that need no grad
    where = None      # (file, line) of the user's code, in anomaly mode
    n_out = 1         # outputs (an autograd.Function may have several)
    _hooks = None     # hooks of the (non-leaf) output tensor
    retain = None     # weakref of the output when retain_grad()
    out_fw = None     # the output's tangents (forward mode), for ``out`` in a backward inside a dual level

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
        aux = self.aux
        if aux is not None:
            n += sum(getattr(a, "nbytes", 0) for a in (aux if isinstance(aux, (tuple, list)) else (aux,))
                     if a is not None)
        return int(n)

    @property
    def out(self) -> Tensor:
        """The output, for the rule: with ``create_graph`` it carries this Node's history."""
        t = wrap(self._out)
        if _get_mode().grad:
            t._node, t._rg = self, True
        if self.out_fw is not None:
            t._fw = self.out_fw
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
            if cell.version != v:
                what = "its output" if what == -1 else what if isinstance(what, str) else f"input {what}"
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: {what} of op {self.op!r} (output shape {self.out_meta[0]}) "
                    f"was saved at version {v} and is now at version {cell.version}. Do the in-place "
                    "operation on a clone, or after backward"
                )

    def release(self):
        self.saved = ()
        self._out = None
        if self.out_fw is not None:
            self.out_fw = None
        self.aux = None
        self.params = None
        self.freed = True


# ---------------------------------------------------------------------------
# run_op: run an op, wrap its result, record it
# ---------------------------------------------------------------------------

def const(v, op: str):
    """A non-Tensor operand as a backend value: Python scalars stay scalars (weakly typed), and
    NumPy scalars become Python ones, ``np.float64`` (a ``float`` subclass) too: as in PyTorch,
    ``float32 tensor * np.float64(2)`` stays float32."""
    if isinstance(v, np.generic):
        if v.dtype.kind in "OUSV":
            raise TypeError(f"{op}: unsupported operand {v!r} of dtype {v.dtype}")
        return v.item()
    if isinstance(v, (int, float, bool)):
        return v
    if isinstance(v, _nd) or _be.is_cupy_array(v):
        if v.dtype.kind in "OUSVMm":
            raise TypeError(f"{op}: unsupported operand of dtype {v.dtype} (expected numbers)")
        return v
    if isinstance(v, (list, tuple)):
        try:
            return Tensor(v).data
        except (TypeError, ValueError) as e:  # Tensor's message names ``tensor``; this one names the op
            raise type(e)(f"{op}: cannot use {type(v).__name__} operand as a tensor: {e}") from None
    if hasattr(v, "_grad_target"):  # a tensor of another layout (sparse), taking part in mg.grad only
        raise TypeError(f"{op}: {type(v).__name__} operands are not supported here (a sparse or other non-dense "
                        "tensor); use its own functions, or .to_dense()")
    if isinstance(v, complex):
        raise TypeError(f"{op}: complex operands are not supported (got {v!r})")
    raise TypeError(f"{op}: unsupported operand type {type(v).__name__} (expected a Tensor, an array or a number)")


def _number_arrays(nums):
    """Python numbers that are all of an op's operands, as 0-d arrays of one dtype: NumPy's
    promotion of them, with the default dtype for floats and the default device (``mg.tensor``'s)."""
    dt = np.result_type(*nums)
    dt = get_default_dtype() if dt.kind == "f" else dt
    dev = _be.get_default_device()
    return [np.asarray(v, dt) if dev == "cpu" else _be.to_device(np.asarray(v, dt), dev) for v in nums]


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
    if n.view_ver is not None and n.view_ver != x._storage.version and x._base is not None:
        n = x._refresh_view()  # the storage was written since this view was taken
    return n if x._oidx == 0 else (n, x._oidx)


def run_op(op: Op, *args, **params):
    """Run ``op`` on ``args`` (Tensors or constants) and record it when needed.

    Returns the output Tensor (a tuple of them for an op with several outputs).
    """
    mode = _get_mode()
    datas, rg, xp = _operands(op, args)                   # 1. the operands' arrays and module
    out = _forward(op, xp, args, datas, params, mode)     # 2. the forward
    aux = None
    if op.aux:
        out, aux = out
    record = rg and mode.grad and op.rule is not None
    if op.n_out != 1 and isinstance(out, tuple):
        return _wrap_many(op, out, args, datas, params, aux, record, mode)
    if out.__class__ is not _nd:
        out = _as_array(out)
    r = wrap(out)                                         # 3. the output
    if op.view and (op.view is True or _shares(out, datas[0])):
        _share_storage(r, args[0])
    if record and out.dtype.kind == "f":                  # 4. the record
        n = r._node = _record(op, args, datas, params, aux, out, r._storage, mode)
        r._rg = True
        if op.view:
            n.view_ver = r._storage.version
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
            if a._rg:
                rg = True
        else:
            d = const(a, op.name)
        if d.__class__ is not _nd:
            if hasattr(d, "shape"):
                dev = True
            else:
                scalars += 1
        datas.append(d)
    if scalars and scalars == len(datas):  # numbers only (``mg.exp(1.0)``): as tensors of them
        datas = _number_arrays(datas)
        dev = datas[0].__class__ is not _nd
    return datas, rg, _xp_of(op.name, datas) if dev else np


def _forward(op, xp, args, datas, params, mode):
    """The op's forward on the arrays; NumPy's errors re-raised naming the op."""
    try:
        if mode.observers:
            return _observed_forward(op, xp, args, datas, params, mode.observers)
        if xp is np and op.np_ufunc is not None and not params:  # xp.<ufunc>(*arrays): no Python frame
            return op.np_ufunc(*datas)
        return op.forward(xp, *datas, **params)
    except NAMED_ERRORS as e:  # NumPy's text ("boolean negative ... not supported") names the op first
        if isinstance(e, ValueError) and op.broadcast and "broadcast" in str(e):
            raise _broadcast_error(op, datas) from None
        if isinstance(e, MinigradError):  # a capture's or anomaly mode's own, with its attributes
            raise
        reraise(e, op.name)


def _observed_forward(op, xp, args, datas, params, observers):
    """``op``'s forward, timed and reported to each observer (a profile); only while one is active.
    A capture (``mg.compile``) is shown the whole call instead, and may hand back ``out`` with
    NumPy scalars made arrays (the arrays it will know again when later ops read them)."""
    t0 = _perf()
    out = op.forward(xp, *datas, **params)
    dt = _perf() - t0
    for o in observers:
        if getattr(o, "captures", False):
            out = o.op(op, xp, args, datas, params, out)
        else:
            o.forward(op.name, dt, out)
    return out


def _broadcast_error(op, datas):
    """The ValueError for operands of a broadcasting op whose shapes do not broadcast, naming them."""
    shapes = " and ".join(str(tuple(d.shape)) if hasattr(d, "shape") else "scalar" for d in datas)
    return ValueError(f"{op.name}: operands could not be broadcast together: shapes {shapes} "
                      "(NumPy broadcasting: trailing dims must match or be 1)")


def _share_storage(r, x):
    """Make ``r`` a view of ``x``: the same version counter, the same base (noted when it records nothing)."""
    r._storage = x._storage
    r._base = x if x._base is None else x._base
    if not r._base._rg:
        _note_plain_view(r)


def _record(op, args, datas, params, aux, out, out_storage, mode):
    """The Node for one call of ``op`` (its inputs' edges, what the rule saves, versions)."""
    n = _new(Node)
    n.op = op.name
    n.opdef = op
    n.parents, n.meta, consts, n_grad = _edges(args)
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
    n.saved, vers = _save(op, args, datas, n.parents, n_grad) if op.save else ((), ())
    if op.save_out:
        n._out = out
        vers += ((out_storage, out_storage.version, -1),)
    else:
        n._out = None
    n.vers = vers
    for o in mode.observers:
        o.recorded(n)
        # observers that ask for them (mg.autograd.check_ops) also get the op's operands
        # as called: Tensors and constants (``args``) and their backend arrays (``datas``)
        if getattr(o, "wants_inputs", False):
            o.inputs(n, args, datas)
    return n


def _edges(args):
    """Per input: its parent (the edge of a Tensor that requires grad, else None) and (shape, dtype)
    (None for a constant); the Tensor inputs that need no gradient; how many inputs need one."""
    parents = []
    meta = []
    consts = None
    n_grad = 0
    for a in args:
        if isinstance(a, Tensor):
            d = a.data
            if a._rg:
                parents.append(edge(a))
                meta.append((d.shape, d.dtype))
                n_grad += 1
                continue
            consts = (consts or ()) + ((len(parents), d.shape, d.dtype),)
        parents.append(None)
        meta.append(None)
    return tuple(parents), tuple(meta), consts, n_grad


def _save(op, args, datas, parents, n_grad):
    """What the rule reads as ``ctx.saved``, and the versions to check before it runs."""
    n_args = len(args)
    # ``cross``: an input is kept for the others' gradients; when it alone needs one, it is not kept
    alone = op.cross and n_grad == 1
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
        elif a is None or isinstance(a, (int, float, bool)):
            saved.append(a)
        else:
            saved.append(wrap(datas[i]))  # an array constant: the rule sees a Tensor
    return tuple(saved), tuple(vers)


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
        n = _record(op, args, datas, params, aux, outs[0], ts[0]._storage, mode)
        n.n_out, n.special = len(outs), True
        for k, t in enumerate(ts):
            if t.data.dtype.kind == "f":
                t._node, t._oidx, t._rg = n, k, True
    if mode.fw is not None:
        mode.fw.carry(op, args, datas, params, aux, ts)
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
    which makes the storage require grad can give it a history too (ops/inplace.py): a weak
    reference in its Storage's ``views``, where dead ones are dropped as the list grows."""
    st = v._storage
    views = st.views
    if views is None:
        views = st.views = []
    views.append(weakref.ref(v))
    n = len(views)
    if n > 32 and n & (n - 1) == 0:
        views[:] = [w for w in views if w() is not None]


# ---------------------------------------------------------------------------
# what a rule calls: ``ctx.xp``
# ---------------------------------------------------------------------------
# A rule is written once, in the array API: operators, array methods (``.sum``, ``.reshape``,
# ``.T``, ``.astype``) and ``ctx.xp.<name>``. ``xp.<name>`` is NumPy's function of that name
# where NumPy has one, else the registered op of that name, called with its forward's
# parameters. In a first-order backward ``xp`` is an ``ArrayNamespace`` over the backend module
# (NumPy, CuPy), so the rule costs its array calls; when a higher derivative is taken (or a
# capture watches), ``xp`` is ``TENSORS`` and every call records through ``run_op``.


class ArrayNamespace:
    """``xp`` for a rule on backend arrays: the module's functions, and each op's forward."""

    def __init__(self, module):
        self._module = module

    def run_op(self, op, *args, **params):
        """Run ``op`` on arrays: its forward (the escape from a name NumPy also uses, ``einsum``)."""
        return op.forward(self._module, *args, **params)

    def __getattr__(self, name):
        fn = getattr(np, name, None) and getattr(self._module, name, None)
        if fn is None:
            op = OPS.get(name)
            if op is None or op.forward is None:
                raise AttributeError(f"a gradient rule called xp.{name}: neither {self._module.__name__} "
                                     "nor the op registry has it")
            fn = functools.partial(op.forward, self._module)
        self.__dict__[name] = fn  # found once
        return fn


class TensorNamespace:
    """``xp`` for a rule on Tensors: minigrad's function of each NumPy name, and each op applied."""

    @staticmethod
    def run_op(op, *args, **params):
        """Run ``op`` on Tensors: recorded when this thread records."""
        return run_op(op, *args, **params)

    def __getattr__(self, name):
        fn = None
        if getattr(np, name, None) is not None:  # NumPy's name: minigrad's function of that name
            fn = FUNCTIONS.get(name)
        op = OPS.get(name)
        if fn is None and op is not None and op.forward is not None:
            fn = functools.partial(run_op, op)
        if fn is None:
            raise AttributeError(f"a gradient rule called xp.{name}, which minigrad cannot record: no "
                                 "differentiable function of that name, so a higher derivative would miss it")
        self.__dict__[name] = fn
        return fn


TENSORS = TensorNamespace()
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


Node.xp = TENSORS

# the entry point's old name, still imported by branches written before the rename (func.py,
# tests/test_registry.py, check.py's rework); remove once they say run_op
apply = run_op
