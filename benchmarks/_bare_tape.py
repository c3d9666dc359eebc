"""The leanest Python tape we could write for bench_core's chain: what recording and replaying
1000 ops costs in CPython before any of minigrad's features.

It keeps one Wengert list (no graph walk, no sort), one small object per op, and
no checks: no versions, views, broadcasting, dtypes, hooks, profile, freeing or errors.
It only supports ``*``, ``+`` and ``tanh`` on arrays of one shape. It is not
usable as an engine; it measures the floor of any Python tape above the NumPy calls.
"""
from __future__ import annotations

import numpy as np

_new = object.__new__


class Var:
    __slots__ = ("data", "i")  # i: the slot of this value's gradient in the tape's list


class Tape:
    def __init__(self):
        self.ops = []   # (rule, out_slot, in_slots, saved) in the order they ran
        self.n = 0

    def leaf(self, a):
        v = _new(Var)
        v.data = a
        v.i = self.n
        self.n += 1
        return v

    def _out(self, data, rule, ins, saved):
        v = _new(Var)
        v.data = data
        v.i = self.n
        self.n += 1
        self.ops.append((rule, v.i, ins, saved))
        return v

    def mul(self, x, y):
        xd, yd = x.data, y.data
        return self._out(xd * yd, _mul_rule, (x.i, y.i), (xd, yd))

    def add(self, x, y):
        return self._out(x.data + y.data, _add_rule, (x.i, y.i), None)

    def tanh(self, x):
        out = np.tanh(x.data)
        return self._out(out, _tanh_rule, (x.i,), out)

    def seed(self, root):
        return np.ones_like(root.data)

    def array(self, g):
        return g

    def backward(self, root, g):
        grads = [None] * self.n
        grads[root.i] = g
        for rule, o, ins, saved in reversed(self.ops):
            g = grads[o]
            if g is None:
                continue
            for i, gi in zip(ins, rule(g, saved), strict=True):
                cur = grads[i]
                grads[i] = gi if cur is None else cur + gi
        return grads


def _mul_rule(g, saved):
    x, y = saved
    return g * y, g * x


def _add_rule(g, saved):
    return g, g


def _tanh_rule(g, y):
    return (g * (1 - y * y),)


def chain(x0, a0, b0, blocks, tape=None):
    """bench_core's chain on the bare tape (or ``tape``, a Tape class): the gradient of sum(y)
    with respect to x."""
    t = (tape or Tape)()
    x, a, b = t.leaf(x0), t.leaf(a0), t.leaf(b0)
    mul, add, tanh = t.mul, t.add, t.tanh
    y = x
    for _ in range(blocks):
        y = tanh(add(mul(add(mul(y, a), b), a), b))
    return t.array(t.backward(y, t.seed(y))[x.i])


# -- the same tape, with rules written over tensors (minigrad's choice, docs/architecture.md) ----------
# A rule that only ever sees Tensors cannot drop out of a second-order graph, but each array
# operation in it then makes one Tensor object: this is that cost and nothing else (no Node, no
# checks), the floor of an engine whose rules see Tensors.


class T:
    __slots__ = ("data",)

    def __mul__(self, o):
        t = _new(T)
        t.data = self.data * (o.data if o.__class__ is T else o)
        return t

    def __add__(self, o):
        t = _new(T)
        t.data = self.data + (o.data if o.__class__ is T else o)
        return t

    def __rsub__(self, o):
        t = _new(T)
        t.data = o - self.data
        return t


def _wrap(a):
    t = _new(T)
    t.data = a
    return t


class TensorRuleTape(Tape):
    """Values stay arrays in the forward; the backward hands rules (and sums) Tensors."""

    def mul(self, x, y):
        return self._out(x.data * y.data, _mul_rule, (x.i, y.i), (_wrap(x.data), _wrap(y.data)))

    def tanh(self, x):
        out = np.tanh(x.data)
        return self._out(out, _tanh_rule, (x.i,), _wrap(out))

    def seed(self, root):
        return _wrap(np.ones_like(root.data))

    def array(self, g):
        return g.data


def chain_tensor_rules(x0, a0, b0, blocks):
    """``chain`` with rules over Tensors: the floor of minigrad's design for this workload."""
    return chain(x0, a0, b0, blocks, TensorRuleTape)
