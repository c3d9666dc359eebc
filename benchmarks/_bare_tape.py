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


# -- the floor of an engine: what each op must keep for the features minigrad promises -------------
# On top of rules over Tensors, the least that the API and its guarantees need, written as leanly
# as we can (one path per arity, nothing shared, no error messages):
# - each op reads the thread's grad mode (a ContextVar, as minigrad's per-thread modes);
# - each output is a Tensor with what the API reads: data, requires_grad, grad, grad_fn and a
#   version counter (in-place safety);
# - each recorded op is a Node: its inputs' edges, their shapes and dtypes (a broadcast gradient is
#   summed back to its input, a mixed-dtype one cast), the tensors its rule reads with their versions
#   at that moment, and its place in creation order;
# - backward walks the Nodes reachable from the root in reverse creation order (no recursion, any
#   graph, not a Wengert list of everything recorded), checks each saved version, checks each gradient
#   against its input, sums gradients, accumulates leaves' grads, and frees what each Node saved;
# - rules call the same ops (recording off), so create_graph would record them.
# Left out: views, hooks, observers (profile, anomaly), several outputs, devices, error messages.

import contextvars  # noqa: E402
import operator  # noqa: E402

_mode = contextvars.ContextVar("floor_grad_mode", default=True)


class ET:
    __slots__ = ("data", "rg", "grad", "node", "ver")

    def __mul__(self, o):
        return _op2(self, o, self.data * o.data, _mul_rule, (self, o))  # the bare tape's rules serve

    def __add__(self, o):
        return _op2(self, o, self.data + o.data, _add_rule, None)

    def tanh(self):
        out = np.tanh(self.data)
        t = _op1(self, out, _et_tanh_rule, None)
        if t.node is not None:
            t.node.saved = (out,)  # the output's array (not the Tensor: no cycle); the rule wraps it
            t.node.saved_versions = ((t.ver, 0),)
        return t


class ENode:
    __slots__ = ("rule", "parents", "meta", "saved", "saved_versions", "seq", "g")


_eseq = [0]
_seq_of = operator.attrgetter("seq")


def _tensor(data):
    t = _new(ET)
    t.data = data
    t.rg = False
    t.grad = t.node = None
    t.ver = [0]
    return t


def _node(rule, parents, meta, saved):
    n = _new(ENode)
    n.rule = rule
    n.parents = parents
    n.meta = meta
    n.saved = saved
    if saved is None:
        n.saved_versions = ()
    elif len(saved) == 2:
        x, y = saved
        n.saved_versions = ((x.ver, x.ver[0]), (y.ver, y.ver[0]))
    else:
        n.saved_versions = ((saved[0].ver, saved[0].ver[0]),)
    n.seq = _eseq[0]
    _eseq[0] += 1
    n.g = None
    return n


def _op1(x, out, rule, saved):
    t = _tensor(out)
    if x.rg and _mode.get():
        d = x.data
        t.node = _node(rule, (x.node or x,), ((d.shape, d.dtype),), saved)
        t.rg = True
    return t


def _op2(x, y, out, rule, saved):
    t = _tensor(out)
    if (x.rg or y.rg) and _mode.get():
        xd, yd = x.data, y.data
        t.node = _node(rule, ((x.node or x) if x.rg else None, (y.node or y) if y.rg else None),
                       ((xd.shape, xd.dtype), (yd.shape, yd.dtype)), saved)
        t.rg = True
    return t


def _et_tanh_rule(g, saved):
    y = _tensor(saved[0])  # one op, as minigrad's tanh_backward: g (1 - y^2)
    yd = y.data
    return (_op2(g, y, g.data * (1.0 - yd * yd), _first_order_only, (g, y)),)


def _first_order_only(g, saved):  # the second order of the rules' ops: never runs in these benchmarks
    raise NotImplementedError


class EngineTape:
    """The engine floor: ``leaf``/``mul``/``add``/``tanh`` as ``Tape``'s, over ``ET`` tensors."""

    def leaf(self, a):
        t = _tensor(a)
        t.rg = True
        return t

    def mul(self, x, y):
        return x * y

    def add(self, x, y):
        return x + y

    def tanh(self, x):
        return x.tanh()

    def seed(self, root):
        return _tensor(np.ones_like(root.data))

    def array(self, g):
        return g

    def backward(self, root, g):
        token = _mode.set(False)
        try:
            self._walk(root, g)
        finally:
            _mode.reset(token)
        return self

    def _walk(self, root, g):
        root.node.g = g
        seen = {root.node}
        stack = [root.node]
        while stack:
            for p in stack.pop().parents:
                if p.__class__ is ENode and p not in seen:
                    seen.add(p)
                    stack.append(p)
        order = sorted(seen, key=_seq_of, reverse=True)
        leaves = {}
        for n in order:
            g = n.g
            n.g = None
            for cell, v in n.saved_versions:
                if cell[0] != v:
                    raise RuntimeError("modified in place")
            for p, gi, (shape, dtype) in zip(n.parents, n.rule(g, n.saved), n.meta, strict=True):
                if p is None:
                    continue
                d = gi.data
                if d.shape != shape:
                    gi = _tensor(d.sum(axis=tuple(range(d.ndim - len(shape)))).reshape(shape))
                if d.dtype != dtype:
                    gi = _tensor(d.astype(dtype))
                if p.__class__ is ENode:
                    p.g = gi if p.g is None else p.g + gi
                else:
                    cur = leaves.get(id(p))
                    leaves[id(p)] = (p, gi.data if cur is None else cur[1] + gi.data)
            n.saved = None
        for leaf, total in leaves.values():
            leaf.grad = _tensor(total)


def chain_engine_floor(x0, a0, b0, blocks):
    """bench_core's chain on the engine floor: the gradient of sum(y) with respect to x."""
    t = EngineTape()
    x, a, b = t.leaf(x0), t.leaf(a0), t.leaf(b0)
    y = x
    for _ in range(blocks):
        y = ((y * a + b) * a + b).tanh()
    t.backward(y, t.seed(y))
    return x.grad.data


# -- the engine floor for bench_mlp's step: linear, tanh, softmax cross-entropy and SGD -------------
# The same floor (ET tensors, ENode, EngineTape's walk) with the three ops the MLP step records. As
# minigrad's, linear is one op (x @ w.T + b) whose rule skips the input's gradient when the input
# needs none, and cross-entropy is one op whose forward keeps softmax for its rule, which makes
# (softmax - onehot) * g / n as one op. Left out beside the chain's list: modules (the step calls
# the functions), the read-only view of each .grad, and input checks (the target bounds check stays:
# NumPy would wrap a negative target silently).


def _op3(x, w, b, out, rule, saved):
    t = _tensor(out)
    if (x.rg or w.rg or b.rg) and _mode.get():
        xd, wd, bd = x.data, w.data, b.data
        t.node = _node(rule, ((x.node or x) if x.rg else None, (w.node or w) if w.rg else None,
                              (b.node or b) if b.rg else None),
                       ((xd.shape, xd.dtype), (wd.shape, wd.dtype), (bd.shape, bd.dtype)), saved)
        t.rg = True
    return t


def linear(x, w, b):
    out = x.data @ w.data.T
    out += b.data  # a fresh array: the bias goes in in place, as minigrad's linear does
    return _op3(x, w, b, out, _linear_rule, (x, w))


def _linear_rule(g, saved):
    x, w = saved
    gd = g.data
    gx = _op2(g, w, gd @ w.data, _first_order_only, (g, w)) if x.rg else None
    gw = _op2(g, x, gd.T @ x.data, _first_order_only, (g, x))
    gb = _op1(g, np.add.reduce(gd, 0), _first_order_only, None)
    return gx, gw, gb


def cross_entropy(z, target):
    """The mean softmax cross-entropy of logits ``z`` (N, C) and integer ``target`` (N,)."""
    zd = z.data
    n, c = zd.shape
    if n and int(target.view(np.uint64).max()) >= c:  # one pass: negatives are huge unsigned
        raise IndexError("target out of bounds")
    s = zd - zd.max(axis=1, keepdims=True)
    picked = s[np.arange(n), target]
    np.exp(s, out=s)
    sums = np.add.reduce(s, 1, None, None, True)
    loss = np.log(sums[:, 0])
    loss -= picked
    s /= sums  # softmax(z): the rule's
    t = _tensor(np.asarray(loss.mean()))
    if z.rg and _mode.get():
        t.node = node = _node(_ce_rule, (z.node or z,), ((zd.shape, zd.dtype),), None)
        node.saved = (target, s)
        node.saved_versions = ((z.ver, z.ver[0]),)  # the logits are saved for the second order
        t.rg = True
    return t


def _ce_rule(g, saved):
    target, probs = saved
    p = probs.copy()
    n = p.shape[0]
    p[np.arange(n), target] -= 1
    p *= g.data / n
    return (_op1(g, p, _first_order_only, None),)


def sgd_step(params, lr):
    """``p -= lr * p.grad`` for each parameter with a gradient; an in-place write bumps the version."""
    for p in params:
        g = p.grad
        if g is not None:
            p.data -= lr * g.data
            p.ver[0] += 1


def zero_grad(params):
    for p in params:
        p.grad = None
