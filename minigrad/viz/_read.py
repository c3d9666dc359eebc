"""Everything viz reads of the engine, in one place.

The engine (Node, the tape, the op registry) is being rebuilt; the rest of ``viz``
sees only what this module hands out, so this is the one file to re-point:

* ``op_kind(name)``: how an op is drawn (reduce, broadcast, elementwise, inplace,
  other). Today from name sets; later from the op registry.
* ``root_of(t)``: the Node (and output index) behind a tensor (``t._node``, ``t._oidx``;
  a sparse tensor's history is its values').
* ``collect(nodes)``: the Nodes reachable from ``nodes`` in the order they ran
  (``autograd._collect``, which never recurses).
* ``Op(node)``: one Node as viz reads it. Its fields are the whole surface read:
  ``node.op``, ``.parents``, ``.meta``, ``.out_meta``, ``.info``, ``.consts``,
  ``.n_out``, ``.seq``, and on demand ``.freed``, ``.saved_bytes``, ``.retain``.
* ``fmt_bytes(n)``: byte counts the way the tape prints them.
"""
from __future__ import annotations

import functools

from .. import autograd as _ag

# -- which kind of op a name is ---------------------------------------------------------------

_REDUCE = {
    "sum", "mean", "max", "min", "amax", "amin", "logsumexp", "prod", "var", "std", "norm", "nansum",
}
_BROADCAST = {"broadcast_to", "expand", "expand_as", "broadcast", "repeat", "tile"}
# ops that broadcast their inputs against each other the way NumPy does
_ELEMENTWISE = {
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "mod", "floordiv", "atan2", "hypot",
}
# in-place ops (a tensor rebased on the write): the other operand broadcasts to the tensor's shape
_INPLACE = {"add_", "sub_", "mul_", "div_", "pow_", "remainder_", "copy_", "fill_"}


def base_name(op: str) -> str:
    """The op name without its namespace ("sparse.sum" -> "sum")."""
    return op.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=4096)
def op_kind(name: str) -> str:
    """"reduce", "broadcast", "elementwise", "inplace" or "other": how viz marks the op ``name``.

    A reduction's backward broadcasts the gradient back; a broadcast's sums it back; an
    elementwise op broadcasts its inputs against each other; an in-place op broadcasts
    its operand to the tensor written.
    """
    b = base_name(name)
    if b in _REDUCE or b.endswith("_sum") or (b.startswith("sum") and b != "sum_to"):
        return "reduce"
    if b in _BROADCAST:
        return "broadcast"
    if b in _ELEMENTWISE:
        return "elementwise"
    if b in _INPLACE:
        return "inplace"
    return "other"


# -- tensors and nodes -------------------------------------------------------------------------

def root_of(t) -> tuple:
    """(Node or None, output index) of a tensor: None for a leaf or a tensor outside any graph."""
    node = getattr(t, "_node", None)
    if node is None and not hasattr(t, "_node"):  # a container (sparse tensor): follow its values
        v = getattr(t, "values", None)
        v = v() if callable(v) else v
        node = getattr(v, "_node", None)
    return node, getattr(t, "_oidx", 0)


def collect(nodes) -> list:
    """The Nodes reachable from ``nodes``, in the order they ran (no recursion)."""
    return list(reversed(_ag._collect(nodes))) if nodes else []


fmt_bytes = _ag._fmt_bytes


class Op:
    """One recorded op as viz reads it: plain fields, read once (dropped with the drawing)."""

    __slots__ = ("node", "op", "meta", "out_meta", "info", "consts", "n_out", "seq", "inputs")

    def __init__(self, node):
        self.node = node            # kept only to answer freed / saved_bytes / retained below
        self.op = node.op           # the op name (str)
        self.meta = node.meta       # per input: (shape, dtype), None for a constant
        self.out_meta = node.out_meta
        self.info = node.info       # display attributes (axis, keepdims, pattern...) or None
        self.consts = node.consts   # ((input index, shape, dtype), ...) of inputs that need no grad
        self.n_out = node.n_out
        self.seq = node.seq
        self.inputs = _inputs(node.parents)

    @property
    def freed(self) -> bool:
        return bool(self.node.freed)

    @property
    def saved_bytes(self) -> int:
        return self.node.saved_bytes

    def retained(self):
        """The output tensor when ``retain_grad()`` was called on it, else None."""
        r = self.node.retain
        return r() if r is not None else None


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
