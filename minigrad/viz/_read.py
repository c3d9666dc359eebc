"""Everything viz reads of the engine, in one place.

The rest of ``viz`` sees only what this module hands out of the engine (Node, the tape,
the op registry):

* ``op_kind(name)``: how an op is drawn (reduce, broadcast, elementwise, inplace,
  other), from the op registry.
* ``root_of(t)``: the Node (and output index) behind a tensor (``t._node``, ``t._output_index``;
  a sparse tensor's history is its values').
* ``collect(nodes)``: the ops reachable from ``nodes`` in the order they ran
  (``engine._collect``, which never recurses), as ``Ops``: ``NodeView`` views by position.
* ``NodeView(node)``: one Node as viz reads it. Its fields are the whole surface read:
  ``node.op``, ``.parents``, ``.meta``, ``.out_meta``, ``.info``, ``.consts``,
  ``.n_out``, ``.seq``, and on demand ``.freed``, ``.saved_bytes``, ``.retain``.
* ``fmt_bytes(n)``: byte counts the way the tape prints them.
* for the graph page (``mg.viz.html``): ``is_node(x)``, ``NodeView.where`` (the user's ``file:line``,
  recorded in anomaly mode), ``NodeView.out_array()`` and ``NodeView.saved_tensors()`` (values the rule kept),
  ``fmt_where``, ``is_profile(x)`` / ``profile_parts(p)`` (what a profile recorded: ``RecordView``
  views of its ops, their edges, their inputs, drawn whether or not the tensors are alive),
  ``is_program(x)`` / ``program_parts(x)`` (a compiled step's ``step.tape()``).
"""
from __future__ import annotations

import functools

from .. import backward as _bw
from .. import engine as _engine
from ..anomaly import fmt_where as _fmt_where
from ..ops import registry
from ..profile import Profile as _Profile
from ..tape import fmt_bytes as _fmt_bytes

# -- which kind of op a name is: from the op registry --------------------------------------------

_KINDS = {"reduce": "reduce", "broadcast": "broadcast", "elementwise": "elementwise"}
# writes whose other operand broadcasts to the tensor written (the in-place forms of registered ops)
_INPLACE = {"add_", "sub_", "mul_", "div_", "pow_", "remainder_", "copy_", "fill_"}


def base_name(op: str) -> str:
    """The op name without its namespace ("sparse.sum" -> "sum")."""
    return op.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=4096)
def op_kind(name: str) -> str:
    """"reduce", "broadcast", "elementwise", "inplace" or "other": how viz marks the op ``name``,
    read from its registry entry (``mg.ops.registry()[name].kind``).

    A reduction's backward broadcasts the gradient back; a broadcast's sums it back; an
    elementwise op broadcasts its inputs against each other; an in-place op broadcasts
    its operand to the tensor written (an in-place form is named after its op with a ``_``).
    """
    b = base_name(name)
    if b in _INPLACE:
        return "inplace"
    op = registry().get(b)
    return "other" if op is None else _KINDS.get(op.kind, "other")


# -- tensors and nodes -------------------------------------------------------------------------

def root_of(t) -> tuple:
    """(Node or None, output index) of a tensor: None for a leaf or a tensor outside any graph."""
    node = getattr(t, "_node", None)
    if node is None and not hasattr(t, "_node"):  # a container (sparse tensor): follow its values
        v = getattr(t, "values", None)
        v = v() if callable(v) else v
        node = getattr(v, "_node", None)
    return node, getattr(t, "_output_index", 0)


def collect(nodes) -> Ops:
    """The ops reachable from ``nodes``, in the order they ran (no recursion)."""
    return Ops(list(reversed(_bw._collect(nodes))) if nodes else [])


fmt_bytes = _fmt_bytes
fmt_where = _fmt_where


def is_node(x) -> bool:
    """Whether ``x`` is a recorded op (a Node of ``mg.autograd.tape(t)``)."""
    return type(x) is _engine.Node


def is_profile(x) -> bool:
    """Whether ``x`` is a ``mg.autograd.profile()`` result."""
    return isinstance(x, _Profile)


def profile_parts(p) -> tuple:
    """What a profile recorded, read from its record alone: (ops, ins, leaves, live).

    ``ops``: a ``RecordView`` per op, in the order they ran; ``ins[i]``: (input index, source) per
    recorded input of op ``i``, the source ``("n", position, output index)`` or ``("l", j)``;
    ``leaves[j]``: the leaf tensor while it is alive, else a ``GoneInput`` (also standing for an
    op recorded outside the profile); ``live``: id(Node) -> position for the Nodes still alive
    (what ``highlight=`` and value summaries find). Holds those Nodes while the caller does."""
    ops, ins, live = [], [], {}
    for i, r in enumerate(p.records):
        n = r.node()
        if n is not None:
            live[id(n)] = i
        ops.append(RecordView(r, n))
        ins.append(list(r.inputs))
    leaves = []
    for x in p.inputs:
        t = x.ref() if x.ref is not None else None
        leaves.append(t if t is not None else GoneInput(x))
    return ops, ins, leaves, live


class GoneInput:
    """A profile's input whose tensor is gone (or an op recorded outside the profile): what was
    recorded of it, read the way a leaf tensor is (``shape``, ``dtype``, ``name``, no value)."""

    __slots__ = ("shape", "dtype", "name", "op", "seq", "k")
    layout = "strided"
    data = grad = None
    requires_grad = True

    def __init__(self, x):
        self.shape, self.dtype, self.name, self.op, self.seq, self.k = x.shape, x.dtype, x.name, x.op, x.seq, x.k


def is_gone(leaf) -> bool:
    """Whether a graph's leaf is a ``GoneInput`` (what a profile recorded of it), not a tensor."""
    return type(leaf) is GoneInput


def is_program(x) -> bool:
    """Whether ``x`` is a compiled step's program (``step.tape()``)."""
    return callable(getattr(x, "dot_parts", None)) and hasattr(x, "_steps") and not hasattr(x, "_node")


def program_parts(x) -> dict:
    """A compiled program as plain data: name, inputs, live tensors (name -> tensor), listing
    lines, steps ((op name, registers made, names read) each) and the registers returned."""
    return {"name": x.name, "inputs": tuple(x.inputs), "live": {n: x._tensors[n] for n in x.live},
            "lines": tuple(x.lines), "steps": list(x._steps), "returns": list(x._ret_regs)}


class NodeView:
    """One recorded op as viz reads it (a thin view: one small object per op, nothing copied)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    op = property(lambda self: self.node.op, doc="the op name (str)")
    meta = property(lambda self: self.node.meta, doc="per input: (shape, dtype), None for a constant")
    out_meta = property(lambda self: self.node.out_meta, doc="(shape, dtype) of the (first) output")
    info = property(lambda self: self.node.info, doc="display attributes (axis, keepdims, pattern...) or None")
    consts = property(lambda self: self.node.consts, doc="((input index, shape, dtype), ...) of no-grad inputs")
    n_out = property(lambda self: self.node.n_out, doc="how many outputs")
    seq = property(lambda self: self.node.seq, doc="creation order")
    freed = property(lambda self: bool(self.node.freed), doc="saved arrays released after backward")
    saved_bytes = property(lambda self: self.node.saved_bytes, doc="bytes saved for backward")
    where = property(lambda self: self.node.__dict__.get("where"), doc="(file, line) in anomaly mode, else None")
    timing = None  # (forward s, backward s) from a profile's record (RecordView)
    gone = False   # whether the Node is gone (RecordView)

    def out_array(self):
        """The output's array when the rule kept it (and backward has not released it), else None."""
        return None if self.node.freed else self.node._out

    def saved_tensors(self) -> list:
        """The Tensors the rule kept (its inputs, mostly), until backward releases them."""
        if self.node.freed:
            return []
        return [s for s in self.node.saved if hasattr(s, "_node")]

    def inputs(self) -> list:
        """Per recorded input: (input index, producer, output index, is_node); constants skipped."""
        return _inputs(self.node.parents)

    def retained(self):
        """The output tensor when ``retain_grad()`` was called on it, else None."""
        r = self.node.retain
        return r() if r is not None else None


class RecordView(NodeView):
    """One op as a profile recorded it (``profile.OpRecord``), read like ``NodeView``: the record gives
    name, shapes, attributes, times and ``file:line``; the Node, while it is alive, its values."""

    __slots__ = ("rec",)

    def __init__(self, rec, node=None):
        self.rec, self.node = rec, node

    op = property(lambda self: self.rec.op)
    meta = property(lambda self: self.rec.meta)
    out_meta = property(lambda self: self.rec.out_meta)
    info = property(lambda self: self.rec.info)
    consts = property(lambda self: self.rec.consts)
    n_out = property(lambda self: self.rec.n_out)
    seq = property(lambda self: self.rec.seq)
    where = property(lambda self: self.rec.where)
    timing = property(lambda self: (self.rec.forward_s, self.rec.backward_s))
    gone = property(lambda self: self.node is None, doc="the Node is gone: its saved values with it")
    freed = property(lambda self: self.node is None or bool(self.node.freed))
    saved_bytes = property(lambda self: self.rec.saved_bytes if self.node is None else self.node.saved_bytes)

    def out_array(self):
        return None if self.node is None else NodeView.out_array(self)

    def saved_tensors(self) -> list:
        return [] if self.node is None else NodeView.saved_tensors(self)

    def inputs(self) -> list:
        raise TypeError("RecordView.inputs: a profile's edges are in profile_parts' ins")

    def retained(self):
        return None if self.node is None else NodeView.retained(self)


class Ops:
    """The ops of a graph by position, as ``NodeView`` views made on access (no long-lived object per op:
    on a 100 000-op graph those would keep the garbage collector busy)."""

    __slots__ = ("nodes",)

    def __init__(self, nodes):
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i) -> NodeView:
        return NodeView(self.nodes[i])

    def __iter__(self):
        return map(NodeView, self.nodes)

    def position(self) -> dict:
        """id(node) -> position, to find a node handed in by the user (highlight=)."""
        return {id(n): i for i, n in enumerate(self.nodes)}


def _inputs(parents) -> list:
    """Per recorded input: (input index, producer, output index, is_node); constants skipped."""
    Node = _engine.Node
    out = []
    for i, p in enumerate(parents):
        if p is None:
            continue
        c = type(p)
        if c is Node:
            out.append((i, p, 0, True))
        elif c is tuple:
            out.append((i, p[0], p[1], True))
        else:  # a leaf tensor
            out.append((i, p, 0, False))
    return out


def grad_of(t):
    """A tensor's gradient as the engine holds it (no warning for a non-leaf that was not retained)."""
    return t._grad if hasattr(t, "_grad") else getattr(t, "grad", None)
