"""The backward engine: the reverse walk over the tape, ``grad()`` and ``Tensor.backward``.

Backward collects the Nodes reachable from its roots with an explicit stack, orders them by
creation (a Node always runs after its inputs' Nodes), and walks them in reverse, calling each
Node's rule (``engine.Op.rule``). No Python recursion anywhere, and Nodes never point at their
output Tensor, so a graph dies with its output. In a first-order pass rules run on backend
arrays and gradients add up as plain arrays; with ``create_graph`` they run on Tensors and record.
"""
from __future__ import annotations

import operator
import time
import warnings

import numpy as np

from . import _state
from . import backend as _be
from .engine import ArrayCtx, Node, _as_array, array_namespace, edge
from .tensor import Tensor, wrap

_get_mode = _state.get
_perf = time.perf_counter
_nd = np.ndarray

def _seed(t, g, graph):
    """The output gradient of root ``t``, checked and as a Tensor."""
    if g is None:
        if t.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; this "
                f"output has shape {t.shape}. Pass grad= (a tensor of shape {t.shape})"
            )
        return wrap(_state.kernel(_ones_like, t.data))
    if hasattr(g, "_grad_target"):  # a tensor of another layout (sparse)
        raise TypeError(f"backward: got a {type(g).__name__} gradient (a sparse or other non-dense tensor) for "
                        f"a dense output of shape {t.shape}; pass a dense Tensor (.to_dense()) of that shape")
    if not isinstance(g, Tensor):
        if not (isinstance(g, (int, float, list, tuple, np.generic, np.ndarray)) or _be.is_cupy_array(g)):
            raise TypeError(
                f"backward: grad must be a Tensor (or an array / number) of shape {t.shape}, "
                f"got {type(g).__name__}")
        g = wrap(_state.kernel(_asarray_like, g, t.data))
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
    # Gradients are Tensors when they are recorded (create_graph) or carry forward mode's tangents
    # (a dual level is active: forward over reverse). Rules run on Tensors then, or when a capture
    # (mg.compile) watches their calls; otherwise on backend arrays, at the cost of their array calls.
    graph = create_graph or _get_mode().fw is not None
    on_tensors = graph or _state.capture() is not None
    # id(leaf) -> [leaf, summed gradient]: hooks and .grad see the total once; the sum is a
    # Tensor with create_graph, else an array
    leaves = {}
    roots = _roots(tensors, grads, graph, on_tensors, leaves)
    token = _state.set_grad(create_graph)  # rules record only with create_graph
    order = ()
    try:
        order = _collect(roots) if roots else ()
        _walk(order, graph, on_tensors, retain_graph, capture, leaves)  # it hands each Node's gradient on and clears it
    except BaseException:
        for n in order:  # a pass that failed half-way leaves no gradient behind on any Node
            n._g = None
        raise
    finally:
        _state.reset(token)
    for leaf, g in leaves.values():  # g: a Tensor with create_graph, else an array
        _to_leaf(leaf, g, graph, capture)


def _roots(tensors, grads, graph, on_tensors, leaves):
    """Seed each output's gradient on its Node (or straight onto a leaf); returns the Nodes."""
    roots = []
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
            _add_to(leaves, e, g if graph else g.data)
            continue
        node, idx = (e, 0) if e.__class__ is Node else e
        _node_add(node, idx, g if on_tensors else g.data)
        roots.append(node)
    return roots


def _to_leaf(leaf, g, graph, capture):
    """A leaf's summed gradient: through its hooks, into ``.grad`` (or mg.grad's capture)."""
    if leaf._hooks:  # hooks see (and return) Tensors
        g = _call_hooks(leaf._hooks, g if graph else wrap(g))
        g = g if graph else g.data
    if capture is not None:
        if id(leaf) in capture:
            _capture_add(capture, id(leaf), g if graph else wrap(g))
    elif graph:
        g = g if leaf._grad is None else leaf._grad + g
        _state.kernel(_set_grad, leaf, g)  # a captured step (mg.compile) sets it again on each replay
    elif _state.active:  # a captured step (mg.compile) adds it again on each replay
        _state.kernel(_into_grad, leaf, g)
    else:  # (as Tensor() does: the kernel door costs a call and a * call per leaf otherwise)
        _into_grad(leaf, g)


def _walk(order, graph, on_tensors, retain_graph, capture, leaves):
    observers = _get_mode().observers
    if observers:  # the ops rules run count as their rule's backward time, not as forward calls
        # (a capture, mg.compile, still records them: they are the replay's backward)
        token = _state.without_observers(_get_mode().grad)
        observers = tuple(o for o in observers if o not in _get_mode().observers)
        try:
            return _walk_nodes(order, graph, on_tensors, retain_graph, capture, leaves, observers)
        finally:
            _state.reset(token)
    return _walk_nodes(order, graph, on_tensors, retain_graph, capture, leaves, ())


def _walk_nodes(order, graph, on_tensors, retain_graph, capture, leaves, observers):
    plain = capture is None and not observers
    add = _add_tensors if graph else _add_captured if on_tensors else _add
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
                if cell.version != v:
                    n.check()
            grads = _rule(n, g, on_tensors)
        else:
            grads = _run_rule(n, g, on_tensors, capture, observers)
        if not retain_graph:
            n.release()
        _send(n, grads, leaves, on_tensors, add)


def _rule(n, g, on_tensors):
    """Call ``n``'s rule: on Tensors (``ctx`` is the Node, ``xp`` records), or on backend arrays."""
    op = n.opdef
    p = n.params or _NONE
    if on_tensors:
        return op.rule(n, g, **p)
    if op.arrays:
        xp = _NUMPY if g.__class__ is _nd else array_namespace(_be.array_module(g))
        return op.rule(ArrayCtx(n, xp), g, **p)
    # a rule over Tensors only (autograd.Function): handed Tensors, its results taken back as arrays
    gt = [None if x is None else wrap(x) for x in g] if n.n_out != 1 else wrap(g)
    return tuple(None if r is None else r.data if isinstance(r, Tensor) else r for r in op.rule(n, gt, **p))


_NONE: dict = {}
_NUMPY = array_namespace(np)


def _run_rule(n, g, on_tensors, capture, observers):
    """The full path for one node: hooks, retain_grad, mg.grad's capture, several outputs,
    observers (profile, anomaly)."""
    if n.n_out == 1:
        if n._hooks:  # hooks see (and return) Tensors
            g = _call_hooks(n._hooks, g) if on_tensors else _call_hooks(n._hooks, wrap(g)).data
        if n.retain is not None:
            t = n.retain()
            if t is not None:
                gt = g if on_tensors else wrap(g)
                t._grad = gt if t._grad is None else t._grad + gt
        if capture is not None and (id(n), 0) in capture:
            _capture_add(capture, (id(n), 0), g)
    elif capture is not None:
        for i, gi in enumerate(g):
            if gi is not None and (id(n), i) in capture:
                _capture_add(capture, (id(n), i), gi)
    n.check()
    if not observers:
        return _rule(n, g, on_tensors)
    t0 = _perf()
    grads = _rule(n, g, on_tensors)
    dt = _perf() - t0
    for o in observers:
        o.backward(n, dt, grads)
    return grads


def _send(n, grads, leaves, on_tensors, add):
    """Hand each input its gradient: checked against the input, summed back over broadcast axes,
    cast to the input's dtype, and added up where an input is used twice."""
    parents, meta = n.parents, n.meta
    for i, gi in enumerate(grads):  # at most one per input: the registry test and Function hold rules to it
        p = parents[i]
        if p is None or gi is None:
            continue
        if gi.__class__ is not _nd:
            gi = _checked(n, gi, on_tensors)
        shape, dtype = meta[i]
        if gi.shape != shape:
            if not n.opdef.broadcast:
                raise RuntimeError(
                    f"internal error: the gradient rule of {n.op!r} returned shape "
                    f"{gi.shape} for an input of shape {shape}"
                )
            gi = sum_to(gi, shape)
        dt = gi.dtype
        if dt is not dtype and dt != dtype:
            gi = gi.astype(dtype)
        c = p.__class__
        if c is Node and not p.special:
            pg = p._g
            p._g = gi if pg is None else add(pg, gi)
        elif c is Node:
            _node_add(p, 0, gi)
        elif c is tuple:
            _node_add(p[0], p[1], gi)
        else:
            if on_tensors and add is not _add_tensors:  # a capture's Tensors: leaves sum arrays
                gi = gi.data
            e = leaves.get(id(p))
            if e is None:
                leaves[id(p)] = [p, gi]
            else:
                e[1] = add(e[1], gi) if add is not _add_captured else _state.kernel(_add, e[1], gi)


def _checked(n, g, on_tensors):
    """A rule's gradient as the pass needs it: a Tensor on Tensors, else a backend array."""
    if isinstance(g, Tensor):
        return g if on_tensors else g.data
    if on_tensors or not hasattr(g, "shape"):
        raise TypeError(f"the gradient rule of {n.op!r} returned {type(g).__name__}, expected "
                        f"{'a Tensor' if on_tensors else 'an array'}")
    return _as_array(g)  # a NumPy scalar (a reduction of a 0-d array) as a 0-d array


def sum_to(g, shape):
    """The one inverse of broadcasting: sum ``g`` (an array or a Tensor) down to ``shape``,
    over its leading axes and the axes where ``shape`` has size 1."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape) if lead else g


def _add_to(leaves, leaf, g):
    e = leaves.get(id(leaf))
    if e is None:
        leaves[id(leaf)] = [leaf, g]
    else:
        e[1] = e[1] + g  # Tensors, or (first order) arrays


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


def _into_grad(leaf, g):
    """``leaf.grad += g`` (first order): a new read-only array, never a write into the old one.
    Returns the new ``.grad`` (a capture knows it, and its array, again when later steps read them)."""
    cur = leaf._grad
    if cur is None:
        total = g
    else:
        if cur.data.shape != g.shape:
            raise RuntimeError(
                f"backward: the .grad of a tensor of shape {leaf.data.shape} has shape {cur.data.shape}; "
                "it was replaced by one of another shape, so the new gradient cannot be added to it")
        total = _as_array(cur.data + g)
    leaf._grad = t = wrap(_readonly(total))
    return t


def _set_grad(t, g):
    t._grad = g


def _get_grad(t):
    g = t._grad
    if g is None and t._node is not None and t._node.retain is None and not t.__dict__.get("_warned"):
        t.__dict__["_warned"] = True
        warnings.warn("The .grad attribute of a tensor that is not a leaf is not populated during backward(); "
                      "call .retain_grad() on it before backward() if you want its gradient", UserWarning, stacklevel=2)
    return g


def _assign_grad(t, g):
    if g is not None:
        if not isinstance(g, Tensor):
            raise TypeError(f"grad: assigned grad must be a Tensor or None, got {type(g).__name__}")
        if g.shape != t.shape:
            raise ValueError(f"grad: assigned grad has shape {g.shape} but the tensor has shape {t.shape}")
        if g.dtype != t.dtype:
            raise TypeError(f"grad: assigned grad has dtype {g.dtype} but the tensor has dtype {t.dtype}")
        if g.device != t.device:
            raise ValueError(f"grad: assigned grad is on {g.device} but the tensor is on {t.device}")
    _state.kernel(_set_grad, t, g)  # a captured step (mg.compile) assigns it again on each replay


# Tensor.grad (bound by minigrad.ops): reading it on a non-leaf that did not retain_grad() warns
# once, as PyTorch does; setting it is checked, and replayed by a captured step
GRAD = property(_get_grad, _assign_grad, doc="The gradient accumulated by ``backward()`` (a Tensor), or None.")


def zero_grads(params, set_to_none: bool = True) -> None:
    """Forget the gradients of ``params`` (``.grad = None``, or zeros): ``zero_grad`` of optimizers
    and modules (again on each replay of a captured step, mg.compile)."""
    _state.kernel(_zero_grads, tuple(params), set_to_none)


def _zero_grads(params, set_to_none):
    for p in params:
        g = p._grad
        p._grad = None if set_to_none or g is None else wrap(g.data * 0)


def _ones_like(d):
    xp = np if d.__class__ is _nd else _be.array_module(d)
    return xp.array(1, dtype=d.dtype) if d.ndim == 0 else xp.ones(d.shape, dtype=d.dtype)  # the seed of a loss


def _asarray_like(g, d):
    return _be.array_module(d).asarray(g, dtype=d.dtype)


def _add(a, b):
    """Two gradients of one tensor, summed (first order: plain arrays)."""
    s = a + b
    return s if s.__class__ is _nd else _as_array(s)


def _add_tensors(a, b):
    return a + b  # recorded: create_graph


def _add_captured(a, b):
    return wrap(_state.kernel(_add, a.data, b.data))  # a capture replays the sum of the arrays


_add.ufunc = "add"  # what a replay (mg.compile) may call instead, when the sum is an array


def _readonly(a):
    """A read-only view of a gradient array, so that one array shared by two gradients is
    never changed through the other (NumPy only: CuPy has no read-only flag)."""
    if a.__class__ is _nd:
        a = a.view()
        a.setflags(False)  # write=False, passed by position: a keyword costs more than the view
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
    grad_outputs = ([None] * len(outputs) if grad_outputs is None
                    else [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs))
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    keys, wrappers = _grad_keys(inputs)
    capture = dict.fromkeys(keys)
    run_backward(outputs, grad_outputs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph, capture=capture)
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
        g = g if isinstance(g, Tensor) else wrap(g)  # a first-order pass hands on arrays
        result.append(g if w is None else w._grad_like(g))
    return tuple(result)


def _grad_keys(inputs):
    """Where backward leaves each input's gradient (its leaf's id, or its (Node id, index)), and
    per input the sparse tensor that shapes the result (None for a dense input)."""
    single = isinstance(inputs, Tensor) or hasattr(inputs, "_grad_target")
    keys, wrappers = [], []
    for x in (inputs,) if single else tuple(inputs):
        sp = getattr(x, "_grad_target", None)
        wrappers.append(x if sp is not None else None)
        if sp is not None:
            x = sp()
        if not isinstance(x, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(x).__name__}")
        if not x._rg:
            raise RuntimeError("grad: one of the inputs does not require grad")
        e = edge(x)
        keys.append((id(e), 0) if e.__class__ is Node else (id(e[0]), e[1]) if e.__class__ is tuple else id(e))
    return keys, wrappers


def backward(t, grad=None, retain_graph=False, create_graph=False) -> None:
    """Accumulate d(t)/d(leaf) into every leaf's ``.grad`` (bound as ``Tensor.backward``).

    Args:
        grad: the gradient of some scalar with respect to ``t`` (same shape); may be
            omitted for a one-element tensor.
        retain_graph: keep saved values so backward can run through the graph again.
        create_graph: record the backward pass (for higher-order gradients).
    """
    run_backward([t], [grad], retain_graph=retain_graph or create_graph, create_graph=create_graph)
