"""Function transforms, ``mg.func``: torch.func's ``grad``, ``grad_and_value``, ``vjp``, ``jvp``,
``linearize``, ``jacrev``, ``jacfwd``, ``hessian`` and ``hvp``, with its names, signatures and shapes.

Reverse transforms (grad, vjp, jacrev) run ``f`` on private inputs that require grad and call
``mg.grad``; forward ones (jvp, jacfwd) run it on dual tensors in a level of their own
(``forward_ad``): one pass, no reverse pass. They compose because each takes its inputs as they come:

- an input that an outer reverse transform (or the caller's own autograd) differentiates, one
  that requires grad, enters as a view of itself, so the inner gradient stays on the outer tape;
  the inner backward is then recorded (``create_graph``), as it is whenever an outer reverse
  transform is running (``f`` may close over the outer's variables);
- an input that carries tangents (an outer jvp or jacfwd) keeps them, and a backward pass inside a
  dual level computes gradients that carry tangents: forward over reverse, nothing recorded;
- forward_ad's levels keep the perturbations of nested forward transforms apart, and each reverse
  transform differentiates its own private inputs, so no transform sees another's perturbation.

Results are cut from the transform's own tape: they require grad only when an outer transform or
the caller's autograd differentiates the inputs or a tensor ``f`` closes over (a module's
parameter: the transform looks for one in f's graph), and carry only the tangents of outer levels.
"""
from __future__ import annotations

import contextvars
import functools

from . import _state
from . import backend as _be
from .backward import grad as _grad
from .engine import Node, run_op
from .forward_ad import dual_level, make_dual, tangent_of, unpack_dual
from .grad_mode import enable_grad, is_grad_enabled
from .ops.shape import ALIAS, stack as _stack
from .tensor import Tensor, wrap
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "hessian", "hvp", "jacfwd", "jacrev", "jvp", "linearize", "vjp", "vmap"]

# how many reverse transforms are running f in this thread: inside one, an inner transform records
# its backward (the outer may differentiate what f closes over, not only the inner's inputs)
_reverse_depth = contextvars.ContextVar("minigrad_func_reverse_depth", default=0)


# ---------------------------------------------------------------------------
# reverse mode: grad, grad_and_value, vjp, jacrev, linearize
# ---------------------------------------------------------------------------


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of the scalar ``func`` w.r.t. argument ``argnums``.

    Args:
        func: a function of Tensors (and anything else) returning a 0-d float Tensor, or
            ``(output, aux)`` with ``has_aux=True``.
        argnums: the position (an int) or positions (a tuple) of the arguments to differentiate;
            the others are passed as they are.
        has_aux: ``func`` returns ``(output, aux)``; the result is then ``(gradient, aux)``.

    Returns:
        a function of ``func``'s arguments returning the gradient (shaped like its argument), or a
        tuple of them when ``argnums`` is a tuple. Composes with every transform here.

    >>> x = mg.tensor([0.5, 1.0], dtype=mg.float64)
    >>> mg.func.grad(lambda x: mg.sin(x).sum())(x)             # cos(x)
    >>> mg.func.grad(mg.func.grad(mg.sin))(mg.tensor(0.5))       # -sin(0.5)
    """
    return _grad_transform(func, argnums, has_aux, "grad")


def grad_and_value(func, argnums=0, has_aux=False):
    """Like ``grad``, returning ``(gradient, value)`` (``(gradient, (value, aux))`` with
    ``has_aux``): the value costs nothing more, it is the forward the gradient needs.

    >>> g, loss = mg.func.grad_and_value(lambda w: ((w * x - y) ** 2).sum())(w)
    """
    return _grad_transform(func, argnums, has_aux, "grad_and_value")


def _grad_transform(f, argnums, has_aux, fname, name=None):
    with_value = fname == "grad_and_value"
    name = name or f"func.{fname}(f)(*args)"

    @functools.wraps(f)
    def transformed(*args, **kwargs):
        nums, single = _argnums(argnums, args, name)
        xs, res, graph = _run_reverse(f, args, kwargs, nums, name)
        out, aux = _split_aux(res, has_aux, name)
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}: expected f(*args) to return a scalar Tensor, got {type(out).__name__}")
        if out.dtype.kind == "c":
            raise RuntimeError(f"{name}: f(*args) returned a complex Tensor ({out.dtype}); a gradient is of a real "
                               "scalar: return a real function of it (.abs(), .real), or use func.vjp with a "
                               "cotangent (docs/complex.md)")
        if out.ndim != 0 or out.dtype.kind != "f":
            what = f"a Tensor of shape {out.shape}" if out.ndim else f"a Tensor of dtype {out.dtype}"
            raise RuntimeError(f"{name}: expected f(*args) to return a scalar (0-d) float Tensor, got {what}; "
                               f"for other outputs use func.vjp or func.jacrev")
        graph = _graph(graph, [out])
        gs = _pullback([out], [None], xs, graph, retain=graph)
        g = gs[0] if single else tuple(gs)
        if not graph:
            out, aux = _cut(out), _map(_cut, aux)
        if with_value:
            return (g, (out, aux)) if has_aux else (g, out)
        return (g, aux) if has_aux else g

    return transformed


def vjp(func, *primals, has_aux=False):
    """``(output, vjp_fn)``: ``func(*primals)``, and a function of a cotangent (shaped like the
    output: a Tensor, or a tuple for a tuple output) returning ``Jᵀ cotangent`` as a tuple, one
    gradient per primal. ``vjp_fn`` may be called many times: each call is one reverse pass.

    With ``has_aux``, ``func`` returns ``(output, aux)`` and vjp returns ``(output, vjp_fn, aux)``.

    >>> out, vjp_fn = mg.func.vjp(mg.sin, x)
    >>> (gx,) = vjp_fn(mg.ones_like(out))                       # cos(x)
    """
    name = "func.vjp"
    if not primals:
        raise TypeError(f"{name}: expected at least one primal (f is called as f(*primals))")
    xs, res, graph = _run_reverse(func, primals, {}, tuple(range(len(primals))), name, what="primals[{}]")
    out, aux = _split_aux(res, has_aux, name)
    outs, spec = _flatten(out, name)
    graph = _graph(graph, outs)

    def vjp_fn(cotangents):
        cts = _flatten_like(cotangents, spec, outs, "func.vjp: vjp_fn", "cotangent")
        return tuple(_pullback(outs, cts, xs, graph or _differentiated(cts), retain=True))

    if not graph:
        out, aux = _unflatten([_cut(o) for o in outs], spec), _map(_cut, aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False):
    """A function returning the Jacobian of ``func`` by reverse mode: one reverse pass per output
    element (a single one for a scalar output), all over one forward.

    The Jacobian w.r.t. an argument is shaped ``output.shape + argument.shape``; a tuple of them
    when ``argnums`` is a tuple; a tuple over outputs (each as above) when ``func`` returns a tuple.
    With ``has_aux``: ``(jacobian, aux)``.

    >>> mg.func.jacrev(lambda x: x ** 2)(mg.tensor([1.0, 2.0]))   # [[2, 0], [0, 4]]
    """
    @functools.wraps(func)
    def transformed(*args, **kwargs):
        name = "func.jacrev(f)(*args)"
        nums, single = _argnums(argnums, args, name)
        for i in nums:
            _float_tensor(args[i], name, f"argument {i}", sparse=False, complex=False)
        xs, res, graph = _run_reverse(func, args, kwargs, nums, name)
        out, aux = _split_aux(res, has_aux, name)
        outs, spec = _flatten(out, name)
        _real_outputs(outs, name)
        graph = _graph(graph, outs)
        jacs = []
        for o in outs:
            rows = []  # one per output element: the gradients of that element, per input
            if o._requires_grad and o.size:
                if o.ndim == 0:
                    rows.append(_pullback([o], [None], xs, graph, retain=True))
                else:
                    rows.extend(_pullback([o], [e], xs, graph, retain=True) for e in _basis(o))
            per = [_assemble([r[j] for r in rows], o.shape, x, axis=0) for j, x in enumerate(xs)]
            jacs.append(per[0] if single else tuple(per))
        jac = _unflatten(jacs, spec)
        if has_aux:
            return jac, (aux if graph else _map(_cut, aux))
        return jac

    return transformed


def linearize(func, *primals):
    """``(output, jvp_fn)``: ``func(*primals)``, and ``jvp_fn(*tangents)`` -> ``J tangents`` (shaped like
    the output) at those primals, from a linearisation kept in memory: no forward pass of ``func`` per call.

    The linearisation is the recorded reverse pass ``v -> Jᵀ v`` (built once, with ``create_graph``);
    each ``jvp_fn`` call transposes it with one reverse pass over that record (J u = ∂⟨Jᵀv, u⟩/∂v).
    It holds func's graph and its backward's while ``jvp_fn`` lives; where the tangents are known at
    once, ``jvp`` (forward mode, one pass) is cheaper.

    >>> out, jvp_fn = mg.func.linearize(mg.sin, x)
    >>> jvp_fn(u)                                               # cos(x) * u
    """
    name = "func.linearize"
    if not primals:
        raise TypeError(f"{name}: expected at least one primal (f is called as f(*primals))")
    xs, res, graph = _run_reverse(func, primals, {}, tuple(range(len(primals))), name, what="primals[{}]")
    outs, spec = _flatten(res, name)
    graph = _graph(graph, outs)
    live = [o for o in outs if o._requires_grad]
    with enable_grad():
        vs = [_zeros_like(o).requires_grad_() for o in live]  # v: any value, Jᵀv is linear in it
        gs = (_grad(live, xs, grad_outputs=vs, retain_graph=True, create_graph=True, allow_unused=True) if live
              else [None] * len(xs))

    def jvp_fn(*tangents):
        us = _check_tangents(primals, tangents, "func.linearize: jvp_fn")
        with enable_grad():
            s = None
            for g, u in zip(gs, us, strict=True):
                if g is not None and g.requires_grad:
                    term = _inner(g, u)
                    s = term if s is None else s + term
        ju = iter(_grad(s, vs, retain_graph=True, create_graph=graph or _differentiated(us), allow_unused=True)
                  if s is not None
                  else [None] * len(vs))
        jus = []
        for o in outs:
            j = next(ju) if o._requires_grad else None
            jus.append(_zeros_like(o) if j is None else j)
        return _unflatten(jus, spec)

    return (res if graph else _unflatten([_cut(o) for o in outs], spec)), jvp_fn


# ---------------------------------------------------------------------------
# forward mode: jvp, jacfwd; and the two that compose the modes: hessian, hvp
# ---------------------------------------------------------------------------


def jvp(func, primals, tangents, *, has_aux=False):
    """``(output, jvp_out)``: ``func(*primals)`` and ``J tangents``, by forward mode: each primal carries
    its tangent through one pass of ``func`` (dual tensors, a level of their own), no reverse pass.

    Args:
        primals: a tuple of float Tensors (``func(*primals)`` is called).
        tangents: a tuple of Tensors, one per primal, of its shape and dtype.
        has_aux: ``func`` returns ``(output, aux)``; jvp returns ``(output, jvp_out, aux)``.

    ``jvp_out`` is shaped like the output (a tuple for a tuple output); zeros where an output
    does not depend on the primals.

    >>> out, t = mg.func.jvp(mg.sin, (x,), (mg.ones_like(x),))   # sin(x), cos(x)
    """
    return _jvp(func, primals, tangents, has_aux, "func.jvp", plain=False)


def _jvp(func, primals, tangents, has_aux, name, plain):
    """``jvp``; ``plain``: no reverse pass will differentiate the tangents (``dual_level(_plain=True)``)."""
    primals, tangents = _check_pairs(primals, tangents, name)
    with dual_level(_plain=plain):
        res = func(*[make_dual(p, t) for p, t in zip(primals, tangents, strict=True)])
        out, aux = _split_aux(res, has_aux, name)
        outs, spec = _flatten(out, name)
        pairs = [unpack_dual(o) for o in outs]
        aux = _map(_primal, aux)
    out = _unflatten([p for p, _ in pairs], spec)
    jvp_out = _unflatten([_zeros_like(p) if t is None else t for p, t in pairs], spec)
    return (out, jvp_out, aux) if has_aux else (out, jvp_out)


def jacfwd(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of ``func`` by forward mode: one forward pass per input
    element, each carrying one basis tangent. Shapes as ``jacrev``: ``output.shape + argument.shape``,
    a tuple per argnum when ``argnums`` is a tuple, a tuple over outputs for a tuple output.
    Cheaper than jacrev where the inputs have fewer elements than the outputs.

    >>> mg.func.jacfwd(lambda x: x ** 2)(mg.tensor([1.0, 2.0]))   # [[2, 0], [0, 4]]
    """
    @functools.wraps(func)
    def transformed(*args, **kwargs):
        name = "func.jacfwd(f)(*args)"
        nums, single = _argnums(argnums, args, name)
        xs = [_float_tensor(args[i], name, f"argument {i}", sparse=False, complex=False) for i in nums]
        cols = [[] for _ in xs]  # per input, per element: the tangent of each output
        first = None  # the outputs' primals, structure and aux, from the first pass
        for j, (i, x) in enumerate(zip(nums, xs, strict=True)):
            for e in _basis(x):
                with dual_level():
                    a = list(args)
                    a[i] = make_dual(x, e)
                    out, aux = _split_aux(func(*a, **kwargs), has_aux, name)
                    outs, spec = _flatten(out, name)
                    _real_outputs(outs, name)
                    pairs = [unpack_dual(o) for o in outs]
                    if first is None:
                        first = [p for p, _ in pairs], spec, _map(_primal, aux)
                cols[j].append([_zeros_like(p) if t is None else t for p, t in pairs])
        if first is None:  # no input has an element: f's outputs give the shapes
            out, aux = _split_aux(func(*args, **kwargs), has_aux, name)
            outs, spec = _flatten(out, name)
            first = outs, spec, aux
        outs, spec, aux = first
        jacs = []
        for m, o in enumerate(outs):
            per = [_assemble([c[m] for c in cols[j]], o.shape, x, axis=-1) for j, x in enumerate(xs)]
            jacs.append(per[0] if single else tuple(per))
        jac = _unflatten(jacs, spec)
        return (jac, aux) if has_aux else jac

    return transformed


def hessian(func, argnums=0):
    """A function returning the Hessian of the scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``,
    forward over reverse (one reverse pass per input element, each carrying a basis tangent).
    Shaped ``argument.shape + argument.shape``; with ``argnums`` a tuple, a tuple of tuples:
    ``H[i][j]`` is shaped ``args[i].shape + args[j].shape``.

    >>> mg.func.hessian(lambda x: (x ** 3).sum())(mg.tensor([1.0, 2.0]))   # diag(6x)
    """
    h = jacfwd(jacrev(func, argnums), argnums)
    functools.update_wrapper(h, func)
    return h


def hvp(func, primals, tangents):
    """``(output, hvp)``: ``func(*primals)`` (a scalar) and the Hessian-vector product ``H tangents``,
    by forward over reverse: one forward pass carrying the tangents, one reverse pass whose
    gradients carry ``H tangents``; the Hessian is never formed. ``hvp`` is a tuple, one per primal
    (all primals are differentiated), each shaped like its primal.

    >>> loss, (hv,) = mg.func.hvp(lambda w: (w ** 4).sum(), (w,), (v,))   # 12 w² v
    """
    name = "func.hvp"
    primals, tangents = _check_pairs(primals, tangents, name)
    g = _grad_transform(func, tuple(range(len(primals))), False, "grad_and_value", name)
    # the forward pass's tangents are read by the reverse pass, never differentiated, unless a
    # transform outside this one differentiates the result
    plain = _reverse_depth.get() == 0 and not any(t.requires_grad for t in (*primals, *tangents))
    (_, value), (hv, _) = _jvp(g, primals, tangents, False, name, plain)
    return value, hv


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _run_reverse(f, args, kwargs, nums, name, what="argument {}"):
    """Run ``f`` for a reverse transform: ``args[nums]`` entered (``_enter``), grad mode on. Returns
    the entered inputs, f's result, and whether the backward must be recorded: True, False, or (when
    only the outputs can tell) the ids of the private leaves, for ``_graph``."""
    outer = is_grad_enabled()
    depth = _reverse_depth.get()
    graph = outer and (depth > 0 or any(isinstance(a, Tensor) and a._requires_grad for a in (*args, *kwargs.values())))
    token = _reverse_depth.set(depth + 1)
    try:
        with enable_grad():
            a, private = list(args), set()
            for i in nums:
                a[i] = _enter(_float_tensor(args[i], name, what.format(i)), outer, private)
            res = f(*a, **kwargs)
    finally:
        _reverse_depth.reset(token)
    if outer and not graph:  # the caller's autograd may still differentiate a tensor f closes over
        graph = private
    return [a[i] for i in nums], res, graph


def _graph(graph, outs):
    """Whether the backward must be recorded: ``graph`` as ``_run_reverse`` left it, resolved by
    whether the outputs' graph reaches a tensor that requires grad besides the private leaves."""
    if graph is True or graph is False:
        return graph
    stack, seen = [], set()
    for o in outs:
        if o._node is not None:
            stack.append(o._node)
        elif o._requires_grad and id(o) not in graph:
            return True
    while stack:
        for p in stack.pop().parents:
            c = p.__class__
            if c is tuple:
                p = p[0]
                c = p.__class__
            if c is Node:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
            elif p is not None and id(p) not in graph:
                return True
    return False


def _enter(x, connect, private):
    """``x`` as a reverse transform's input: it requires grad and carries ``x``'s tangents. A view of
    ``x`` on the outer tape when an outer pass differentiates ``x``, else a leaf of its own over
    ``x``'s data (``x``'s own flags are left alone), whose id goes into ``private``. A sparse ``x``
    enters through its stored values (its indices are constants)."""
    if _is_sparse(x):
        return x._with_values(_enter(x._grad_target(), connect, private))
    if connect and x._requires_grad:
        return run_op(ALIAS, x)  # (the identity, whose gradient and tangent pass through: make_dual's view)
    leaf = x.detach().requires_grad_()
    private.add(id(leaf))
    return _redual(leaf, x, cut=False)


def _redual(d, src, cut):
    """``d`` carrying ``src``'s tangents at every active level (cut from the tape when ``cut``)."""
    fw = _state.get().fw
    if fw is None or src._tangents is None:
        return d
    for level in fw.ids:  # outermost first: make_dual at a level keeps the tangents of those outside it
        t = tangent_of(src, level)
        if t is not None:
            d = make_dual(d, _cut(t) if cut else t, level=level)
    return d


def _cut(t):
    """``t`` cut from the tape (a transform's result that nothing outside differentiates), its
    tangents, cut too, kept."""
    if not isinstance(t, Tensor) or not t._requires_grad:
        return t
    return _redual(t.detach(), t, cut=True)


def _primal(t):
    """A Tensor without the innermost level's tangent (anything else as it is)."""
    return unpack_dual(t).primal if isinstance(t, Tensor) else t


def _differentiated(ts):
    """A reverse pass differentiates one of ``ts`` (the argument of a function a transform returned:
    ``vjp_fn``'s cotangent, ``jvp_fn``'s tangent), so the pass that uses it must record."""
    return is_grad_enabled() and any(isinstance(t, Tensor) and t._requires_grad for t in ts)


def _pullback(outs, cts, xs, graph, retain):
    """The gradients of ``Σ ⟨out, ct⟩`` w.r.t. ``xs``: zeros for an input not reached; an output
    that does not require grad adds nothing."""
    pairs = [(o, c) for o, c in zip(outs, cts, strict=True) if o._requires_grad]
    gs = (_grad([o for o, _ in pairs], xs, grad_outputs=[c for _, c in pairs], retain_graph=retain,
                create_graph=graph, allow_unused=True) if pairs else [None] * len(xs))
    return [_zeros_like(x) if g is None else g for g, x in zip(gs, xs, strict=True)]


def _basis(x):
    """The one-hot Tensors of ``x``'s shape, dtype and device, in C order."""
    xp = _be.array_module(x.data)
    for k in range(x.size):
        e = xp.zeros(x.size, dtype=x.dtype)
        e[k] = 1
        yield wrap(e.reshape(x.shape))


def _assemble(parts, out_shape, x, axis):
    """A Jacobian block shaped ``out_shape + x.shape`` from one part per output element (rows,
    ``axis=0``) or per input element (columns, ``axis=-1``)."""
    shape = tuple(out_shape) + tuple(x.shape)
    if not parts:
        return wrap(_be.array_module(x.data).zeros(shape, dtype=x.dtype))
    j = parts[0] if len(parts) == 1 else _stack(parts, axis=axis)
    return j if j.shape == shape else j.reshape(shape)


def _zeros_like(x):
    if _is_sparse(x):  # a sparse tensor's zero gradient or tangent: its indices, zero values
        return x._grad_like(_zeros_like(x._grad_target()))
    return wrap(_be.array_module(x.data).zeros(x.shape, dtype=x.dtype))


def _is_sparse(x):
    return hasattr(x, "_grad_target")


def _inner(g, u):
    """⟨g, u⟩ of a gradient and a tangent of one primal (a sparse one's: its values')."""
    if _is_sparse(g):
        g, u = g._grad_target(), u._grad_target()
    return (g * u).sum()


def _argnums(argnums, args, name):
    """``argnums`` as a tuple of non-negative positions, and whether it was one int."""
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, tuple) or not nums or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise TypeError(f"{name}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
    n = len(args)
    out = []
    for i in nums:
        if not -n <= i < n:
            raise ValueError(f"{name}: got argnums={argnums!r}, but f was called with {n} positional "
                             f"argument{'s' if n != 1 else ''}")
        out.append(i % n)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: argnums={argnums!r} names an argument twice")
    return tuple(out), single


def _float_tensor(x, name, what, sparse=True, complex=True):  # noqa: A002
    if _is_sparse(x) and not sparse:
        raise TypeError(f"{name}: {what} is a sparse tensor; a Jacobian is dense: pass its .to_dense(), or use "
                        "func.vjp / func.jvp, which take sparse primals and tangents")
    if not isinstance(x, Tensor) and not _is_sparse(x):
        raise TypeError(f"{name}: {what} is differentiated, so it must be a Tensor, got {type(x).__name__}")
    if x.dtype.kind == "c" and not complex:
        _no_complex_jacobian(name, what, x.dtype)
    if x.dtype.kind not in "fc":
        raise TypeError(f"{name}: {what} has dtype {x.dtype}; only floating-point and complex Tensors are "
                        "differentiated")
    return x


def _real_outputs(outs, name):
    for k, o in enumerate(outs):
        if o.dtype.kind == "c":
            _no_complex_jacobian(name, f"output {k}", o.dtype)


def _no_complex_jacobian(name, what, dtype):
    """A Jacobian of complex numbers has no one form (torch.func's jacrev and jacfwd refuse them too)."""
    raise RuntimeError(f"{name}: {what} is complex ({dtype}); a Jacobian is taken of real inputs and outputs only, "
                       "as torch.func's: differentiate the real pairs (mg.view_as_real / mg.view_as_complex), or "
                       "use func.vjp / func.jvp, which take complex primals (docs/complex.md)")


def _check_pairs(primals, tangents, name):
    """``primals`` and ``tangents`` as lists of float Tensors, pairwise of one shape and dtype."""
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"{name}: expected {what} to be a tuple of Tensors (f is called as f(*primals)), "
                            f"got {type(v).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"{name}: got {len(primals)} primals but {len(tangents)} tangents; "
                         "they must pair up")
    if not primals:
        raise ValueError(f"{name}: expected at least one primal")
    ps = [_float_tensor(p, name, f"primals[{i}]") for i, p in enumerate(primals)]
    return ps, _check_tangents(ps, tangents, name)


def _check_tangents(primals, tangents, name):
    if len(tangents) != len(primals):
        raise ValueError(f"{name}: expected {len(primals)} tangents, one per primal, got {len(tangents)}")
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        if not isinstance(t, Tensor) and not (_is_sparse(t) and _is_sparse(p)):
            raise TypeError(f"{name}: tangents[{i}] must be a Tensor{' (sparse, as its primal is)' if _is_sparse(p) else ''}"
                            f", got {type(t).__name__}")
        if t.shape != p.shape or t.dtype != p.dtype:
            raise ValueError(f"{name}: tangents[{i}] has shape {t.shape} and dtype {t.dtype}, but primals[{i}] "
                             f"has shape {p.shape} and dtype {p.dtype}; they must match")
    return list(tangents)


def _split_aux(res, has_aux, name):
    if not has_aux:
        return res, None
    if not (isinstance(res, tuple) and len(res) == 2):
        raise TypeError(f"{name}: with has_aux=True, f must return a pair (output, aux), "
                        f"got {type(res).__name__}{f' of length {len(res)}' if isinstance(res, tuple) else ''}")
    return res


def _flatten(out, name):
    """The Tensors of ``f``'s output (a Tensor, or tuples and lists of them, nested), and its
    structure for ``_unflatten``."""
    if isinstance(out, Tensor) or _is_sparse(out):
        return [out], None
    if isinstance(out, (tuple, list)):
        leaves, specs = [], []
        for o in out:
            sub, s = _flatten(o, name)
            leaves += sub
            specs.append((len(sub), s))
        return leaves, (type(out), specs)
    raise TypeError(f"{name}: expected f to return a Tensor or a tuple of Tensors, got {type(out).__name__}")


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    parts, i = [], 0
    for n, s in specs:
        parts.append(_unflatten(leaves[i:i + n], s))
        i += n
    return kind(*parts) if hasattr(kind, "_fields") else kind(parts)


def _flatten_like(v, spec, outs, name, what):
    """The leaves of ``v``, which must have ``f``'s output structure ``spec`` and shapes."""
    try:
        leaves, s = _flatten(v, name)
    except TypeError:
        leaves, s = None, None
    if leaves is None or _shape_of(s) != _shape_of(spec):
        raise TypeError(f"{name}: expected a {what} shaped like f's output (a Tensor, or a tuple as f returned), "
                        f"got {type(v).__name__}")
    for k, (c, o) in enumerate(zip(leaves, outs, strict=True)):
        if c.shape != o.shape:
            raise ValueError(f"{name}: {what} {k} has shape {c.shape}, but f's output {k} has shape {o.shape}")
    return leaves


def _shape_of(spec):
    return None if spec is None else tuple(_shape_of(s) for _, s in spec[1])


def _map(fn, obj):
    """``fn`` applied to every Tensor in ``obj`` (tuples, lists and dicts of them: an aux value)."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, (tuple, list)):
        parts = [_map(fn, o) for o in obj]
        return type(obj)(*parts) if hasattr(obj, "_fields") else type(obj)(parts)
    if isinstance(obj, dict):
        return {k: _map(fn, v) for k, v in obj.items()}
    return obj
