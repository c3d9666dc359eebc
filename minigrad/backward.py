"""The reverse walk over the tape (``run_backward``, behind ``Tensor.backward`` and ``grad()``), and
``.grad``, where it accumulates.

Backward collects the Nodes reachable from its roots with an explicit stack, orders them by
creation (a Node always runs after its inputs' Nodes) and walks them in reverse, calling each
Node's rule. No Python recursion anywhere, and Nodes never point at their output Tensor, so a
graph dies with its output. In a first-order pass rules are handed backend arrays and gradients
add up as arrays; with ``create_graph`` (or inside a dual level, or while a capture watches) rules
are handed Tensors and every array call goes through ``run_op``.
"""
from __future__ import annotations

import operator
import time

import numpy as np

from . import _state
from . import _xp
from .engine import OPS, ArrayCtx, Node, _as_array, array_namespace, edge, run_op
from .tensor import Tensor, wrap

_get_mode = _state.get
_nd = np.ndarray
_NO_LEVELS = frozenset()


def run_backward(tensors, grads, retain_graph=False, create_graph=False, results=None):
    """The reverse pass. With ``results`` (a dict: id(leaf) or (id(node), index) -> slot) gradients
    are returned there instead of accumulated into leaves' ``.grad`` (``grad()``)."""
    # gradients are Tensors when recorded (create_graph) or carrying forward mode's tangents (a dual
    # level: forward over reverse); rules run on Tensors then, or when a capture (mg.compile) watches
    # their calls; otherwise on backend arrays, at the cost of their array calls
    graph = create_graph or _get_mode().fw is not None
    on_tensors = graph or _state.capture() is not None
    leaves = {}  # id(leaf) -> [leaf, its summed gradient]: hooks and .grad see the total once
    roots = _roots(tensors, grads, graph, on_tensors, leaves)
    token = _state.set_grad(create_graph)  # rules record only with create_graph
    order = ()
    try:
        order = _collect(roots) if roots else ()
        _walk(order, on_tensors, retain_graph, results, leaves)  # it hands each Node's gradient on and clears it
    except BaseException:
        for n in order:  # a pass that failed half-way leaves no gradient behind on any Node
            n.pending_grad = None
        raise
    finally:
        _state.reset(token)
    for leaf, g in leaves.values():
        _to_leaf(leaf, g, graph, on_tensors, results)


def _roots(tensors, grads, graph, on_tensors, leaves):
    """Seed each output's gradient on its Node (or straight onto a leaf); returns the Nodes."""
    roots = []
    for t, g in zip(tensors, grads, strict=True):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward: expected Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(
                "backward: the tensor does not require grad and has no grad_fn (was it computed "
                "under no_grad, or from tensors without requires_grad=True?)"
            )
        g = _seed(t, g, graph)
        g = g if on_tensors else g.data
        e = edge(t)  # a view written since it was taken is re-derived first
        add = _add_tensors if on_tensors else _add
        if isinstance(e, Tensor):  # a leaf
            _add_to(leaves, e, g, add)
            continue
        node, idx = (e, 0) if isinstance(e, Node) else e
        _node_add(node, idx, g, add)
        roots.append(node)
    return roots


def _seed(t, g, graph):
    """The gradient of root ``t`` (ones for a one-element ``t`` when not given), checked, as a Tensor."""
    if g is None:
        if t.dtype.kind == "c":
            raise RuntimeError(
                f"backward: grad can be implicitly created only for real outputs; this output is {t.dtype} "
                f"(shape {t.shape}). A gradient is of a real loss: backward a real function of it (.abs(), .real), "
                "or pass grad= (the gradient of a real loss with respect to it, docs/complex.md)")
        if t.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for one-element outputs; this "
                f"output has shape {t.shape}. Pass grad= (a tensor of shape {t.shape})"
            )
        return wrap(_state.array_step(_ones_like, t.data))
    if not isinstance(g, Tensor):
        if not (isinstance(g, (int, float, list, tuple, np.generic, np.ndarray)) or _xp.is_cupy_array(g)):
            raise TypeError(
                f"backward: grad must be a dense Tensor (or an array / number) of shape {t.shape}, "
                f"got {type(g).__name__} (a sparse one: pass its .to_dense())")
        g = wrap(_state.array_step(_asarray_like, g, t.data))
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
    while stack:
        for p in stack.pop().parents:
            if p is None or isinstance(p, Tensor):  # a constant, or a leaf
                continue
            if isinstance(p, tuple):  # (Node, output index)
                p = p[0]
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return sorted(seen, key=_seq_of, reverse=True)


_seq_of = operator.attrgetter("seq")


def _walk(order, on_tensors, retain_graph, results, leaves):
    """Run each Node's rule in ``order`` and hand the gradients on. While observers watch (a profile,
    anomaly mode) the ops a rule runs count as its backward time, not as forward calls (a capture,
    mg.compile, still sees them: they are the replay's backward)."""
    observers = _get_mode().observers
    token = _state.without_observers(_get_mode().grad) if observers else None
    if observers:
        observers = tuple(o for o in observers if o not in _get_mode().observers)
    add = _add_tensors if on_tensors else _add
    try:
        for n in order:
            g = n.pending_grad
            if g is None:
                if not retain_graph:
                    n.release()
                continue
            n.pending_grad = None
            grads = _run_rule(n, g, on_tensors, results, observers)
            if not retain_graph:
                n.release()
            _send(n, grads, leaves, on_tensors, add)
    finally:
        if token is not None:
            _state.reset(token)


def _rule(n, g, on_tensors):
    """Call ``n``'s rule: on Tensors (``ctx`` is the Node, ``xp`` records), or on backend arrays."""
    op = n.definition
    p = n.params or _NONE
    if on_tensors:
        return op.rule(n, g, **p)
    if op.rule_on_arrays:
        ctx = ArrayCtx(n, None)
        if _state.vmapping:  # vmap: a saved array may be batched where g is not
            ctx.xp = array_namespace(_xp.array_module(*_arrays(g), *_arrays(ctx.saved), *_arrays((ctx.out,))))
        else:
            ctx.xp = _NUMPY if isinstance(g, _nd) else array_namespace(_xp.array_module(g))
        return op.rule(ctx, g, **p)
    # a rule over Tensors only (autograd.Function): handed Tensors, its results taken back as arrays
    gt = [None if x is None else wrap(x) for x in g] if n.n_out != 1 else wrap(g)
    return tuple(None if r is None else r.data if isinstance(r, Tensor) else r for r in op.rule(n, gt, **p))


_NONE: dict = {}
_NUMPY = array_namespace(np)


def _arrays(vs):
    return [v for v in (vs if isinstance(vs, (list, tuple)) else (vs,)) if hasattr(v, "shape")]


def _run_rule(n, g, on_tensors, results, observers):
    """One Node's gradients: its hooks, retain_grad, grad()'s results and observers (profile,
    anomaly) see its output's gradient ``g`` (a list of them for several outputs); its saved
    tensors are checked; its rule runs."""
    if n.n_out == 1:
        if n._hooks:  # hooks see (and return) Tensors
            g = _call_hooks(n._hooks, g) if on_tensors else _call_hooks(n._hooks, wrap(g)).data
        t = n.retain() if n.retain is not None else None
        if t is not None:
            gt = g if on_tensors else wrap(g)
            t._grad = gt if t._grad is None else t._grad + gt
        if results is not None and (id(n), 0) in results:
            _result_add(results, (id(n), 0), g)
    elif results is not None:
        for i, gi in enumerate(g):
            if gi is not None and (id(n), i) in results:
                _result_add(results, (id(n), i), gi)
    n.check()
    if not observers:
        return _rule(n, g, on_tensors)
    t0 = time.perf_counter()
    grads = _rule(n, g, on_tensors)
    dt = time.perf_counter() - t0
    for o in observers:
        o.backward(n, dt, grads)
    return grads


def _send(n, grads, leaves, on_tensors, add):
    """Hand each input its gradient: checked against the input, summed back over broadcast axes,
    cast to the input's dtype (a real input of a complex op gets the real part), and added up where
    an input is used twice."""
    parents, meta = n.parents, n.meta
    for i, gi in enumerate(grads):  # at most one per input: the registry test and Function hold rules to it
        p = parents[i]
        if p is None or gi is None:
            continue
        if not isinstance(gi, _nd):
            gi = _checked(n, gi, on_tensors)
            if getattr(gi.data if on_tensors else gi, "vmap_levels", None):  # vmap: summed over the levels
                keep = n.batch_levels.get(i, _NO_LEVELS) if n.batch_levels else _NO_LEVELS  # it was not batched at
                gi = _settle_tensor(gi, keep) if on_tensors else gi.settle(keep)
        shape, dtype = meta[i]
        if gi.shape != shape:
            if not n.definition.broadcast:
                raise RuntimeError(f"internal error: the gradient rule of {n.op!r} returned shape "
                                   f"{gi.shape} for an input of shape {shape}")
            gi = sum_to(gi, shape)
        if gi.dtype != dtype:
            gi = (gi.real if gi.dtype.kind == "c" and dtype.kind != "c" else gi).astype(dtype)  # a real input's: real
        if isinstance(p, Node):
            _node_add(p, 0, gi, add)
        elif isinstance(p, tuple):
            _node_add(p[0], p[1], gi, add)
        else:
            _add_to(leaves, p, gi, add)


def _settle_tensor(g, keep):
    """A gradient Tensor batched at finished vmap levels its input was not batched at, summed over
    them (``vmap_out`` gives a level's batch as axis 0, _batched.py and batching.py)."""
    for level, size in g.data.to_settle(keep):
        g = run_op(OPS["vmap_out"], g, dim=0, level=level, size=size).sum(axis=0)
    return g


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


def _add(a, b):
    """Two gradients of one tensor, summed (first order: plain arrays)."""
    s = a + b
    return s if isinstance(s, _nd) else _as_array(s)


def _add_tensors(a, b):
    return a + b  # through run_op: recorded with create_graph, seen by a capture


def _add_to(leaves, leaf, g, add):
    """Add ``g`` to the gradient of ``leaf`` summed so far (``add``: of arrays, or of Tensors)."""
    e = leaves.get(id(leaf))
    if e is None:
        leaves[id(leaf)] = [leaf, g]
    else:
        e[1] = add(e[1], g)


def _node_add(node, idx, g, add):
    """Add ``g`` to the gradient of output ``idx`` of ``node`` summed so far."""
    if node.n_out == 1:
        node.pending_grad = g if node.pending_grad is None else add(node.pending_grad, g)
    else:
        if node.pending_grad is None:
            node.pending_grad = [None] * node.n_out
        cur = node.pending_grad[idx]
        node.pending_grad[idx] = g if cur is None else add(cur, g)


def _result_add(results, key, g):
    cur = results[key]
    results[key] = g if cur is None else cur + g


def _call_hooks(hooks, g):
    for h in hooks:
        r = h(g)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a gradient hook must return a Tensor or None, got {type(r).__name__}")
            g = r
    return g


def _ones_like(d):
    xp = np if isinstance(d, _nd) else _xp.array_module(d)
    return xp.array(1, dtype=d.dtype) if d.ndim == 0 else xp.ones(d.shape, dtype=d.dtype)  # the seed of a loss


def _asarray_like(g, d):
    return _xp.array_module(d).asarray(g, dtype=d.dtype)


# ---------------------------------------------------------------------------
# .grad: where backward accumulates (a captured step, mg.compile, writes it again on each replay)
# ---------------------------------------------------------------------------

def _to_leaf(leaf, g, graph, on_tensors, results):
    """A leaf's summed gradient: through its hooks, into ``.grad`` (or grad()'s results)."""
    if leaf._hooks:  # hooks see (and return) Tensors
        g = _call_hooks(leaf._hooks, g if on_tensors else wrap(g))
        g = g if on_tensors else g.data
    if results is not None:
        if id(leaf) in results:
            _result_add(results, id(leaf), g if on_tensors else wrap(g))
    elif graph:
        _state.array_step(_set_grad, leaf, g if leaf._grad is None else leaf._grad + g)
    else:
        _state.array_step(_into_grad, leaf, g.data if on_tensors else g)


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


def _readonly(a):
    """A read-only view of a gradient array, so that one array shared by two gradients is
    never changed through the other (NumPy only: CuPy has no read-only flag)."""
    if isinstance(a, _nd):
        a = a.view()
        a.setflags(write=False)
    return a


def _set_grad(t, g):
    t._grad = g


# ---------------------------------------------------------------------------
# the entry points
# ---------------------------------------------------------------------------

def backward(t, grad=None, retain_graph=False, create_graph=False) -> None:
    """Accumulate d(t)/d(leaf) into every leaf's ``.grad`` (bound as ``Tensor.backward``).

    Args:
        grad: the gradient of some scalar with respect to ``t`` (same shape); may be
            omitted for a one-element tensor.
        retain_graph: keep saved values so backward can run through the graph again.
        create_graph: record the backward pass (for higher-order gradients).
    """
    run_backward([t], [grad], retain_graph=retain_graph or create_graph, create_graph=create_graph)


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
    results = dict.fromkeys(keys)
    run_backward(outputs, grad_outputs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph, results=results)
    out = []
    for key, w in zip(keys, wrappers, strict=True):
        g = results[key]
        if g is None and not allow_unused:
            raise RuntimeError("grad: one of the differentiated tensors was not used to compute the outputs; "
                               "pass allow_unused=True to get None for it")
        if g is not None:
            g = g if isinstance(g, Tensor) else wrap(g)  # a first-order pass hands on arrays
            g = g if w is None else w._grad_like(g)
        out.append(g)
    return tuple(out)


def _grad_keys(inputs):
    """Where backward leaves each input's gradient (its leaf's id, or its (Node id, index)), and per
    input the tensor of another layout (sparse) whose ``_grad_target()`` it differentiates, whose
    ``_grad_like(g)`` shapes the result (None for a dense input)."""
    single = isinstance(inputs, Tensor) or hasattr(inputs, "_grad_target")
    keys, wrappers = [], []
    for x in (inputs,) if single else tuple(inputs):
        sp = getattr(x, "_grad_target", None)
        wrappers.append(x if sp is not None else None)
        if sp is not None:
            x = sp()
        if not isinstance(x, Tensor):
            raise TypeError(f"grad: inputs must be Tensors, got {type(x).__name__}")
        if not x._requires_grad:
            raise RuntimeError("grad: one of the inputs does not require grad")
        e = edge(x)
        keys.append(id(e) if isinstance(e, Tensor) else (id(e), 0) if isinstance(e, Node) else (id(e[0]), e[1]))
    return keys, wrappers
