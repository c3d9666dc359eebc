"""Everything viz reads of the engine, in one place.

The rest of ``viz`` sees only what this module hands out of the engine (Node, the tape,
the op registry):

* ``op_kind(name)``: how an op is drawn (reduce, broadcast, elementwise, inplace,
  other), from the op registry.
* ``root_of(t)``: the Node (and output index) behind a tensor (``t._node``, ``t._oidx``;
  a sparse tensor's history is its values').
* ``collect(nodes)``: the ops reachable from ``nodes`` in the order they ran
  (``engine._collect``, which never recurses), as ``Ops``: ``Op`` views by position.
* ``Op(node)``: one Node as viz reads it. Its fields are the whole surface read:
  ``node.op``, ``.parents``, ``.meta``, ``.out_meta``, ``.info``, ``.consts``,
  ``.n_out``, ``.seq``, and on demand ``.freed``, ``.saved_bytes``, ``.retain``.
* ``fmt_bytes(n)``: byte counts the way the tape prints them.
* for the graph page (``mg.viz.html``): ``is_node(x)``, ``Op.where`` (the user's ``file:line``,
  recorded in anomaly mode), ``Op.out_array()`` and ``Op.saved_tensors()`` (values the rule kept),
  ``fmt_where``, ``is_profile(x)`` / ``profile_nodes(p)`` (a profile's Nodes, timings and
  ``file:line``), ``is_program(x)`` / ``program_parts(x)`` (a compiled step's ``step.tape()``).
"""
from __future__ import annotations

import functools

from .. import backward as _bw
from .. import engine as _ag
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
    return node, getattr(t, "_oidx", 0)


def collect(nodes) -> Ops:
    """The ops reachable from ``nodes``, in the order they ran (no recursion)."""
    return Ops(list(reversed(_bw._collect(nodes))) if nodes else [])


fmt_bytes = _fmt_bytes
fmt_where = _fmt_where


def is_node(x) -> bool:
    """Whether ``x`` is a recorded op (a Node of ``mg.autograd.tape(t)``)."""
    return type(x) is _ag.Node


def is_profile(x) -> bool:
    """Whether ``x`` is a ``mg.autograd.profile()`` result."""
    return isinstance(x, _Profile)


def profile_nodes(p) -> list[tuple]:
    """(node, forward s, backward s, (file, line) or None) per live op the profile recorded."""
    return p.nodes()


def is_program(x) -> bool:
    """Whether ``x`` is a compiled step's program (``step.tape()``)."""
    return callable(getattr(x, "dot_parts", None)) and hasattr(x, "_steps") and not hasattr(x, "_node")


def program_parts(x) -> dict:
    """A compiled program as plain data: name, inputs, live tensors (name -> tensor), listing
    lines, steps ((op name, registers made, names read) each) and the registers returned."""
    return {"name": x.name, "inputs": tuple(x.inputs), "live": {n: x._tensors[n] for n in x.live},
            "lines": tuple(x.lines), "steps": list(x._steps), "returns": list(x._ret_regs)}


class Op:
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


class Ops:
    """The ops of a graph by position, as ``Op`` views made on access (no long-lived object per op:
    on a 100 000-op graph those would keep the garbage collector busy)."""

    __slots__ = ("nodes",)

    def __init__(self, nodes):
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i) -> Op:
        return Op(self.nodes[i])

    def __iter__(self):
        return map(Op, self.nodes)

    def position(self) -> dict:
        """id(node) -> position, to find a node handed in by the user (highlight=)."""
        return {id(n): i for i, n in enumerate(self.nodes)}


def _inputs(parents) -> list:
    """Per recorded input: (input index, producer, output index, is_node); constants skipped."""
    Node = _ag.Node
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
