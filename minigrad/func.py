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

from . import _batched
from . import _pytree
from . import _state
from . import backend as _be
from ._util import NOARG, pick
from .backward import grad as _grad
from .engine import Node, run_op
from .forward_ad import dual_level, make_dual, tangent_of, unpack_dual
from .grad_mode import enable_grad, is_grad_enabled
from .ops.shape import ALIAS, stack as _stack
from .tensor import Tensor, wrap
from .vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "hvp", "jacfwd", "jacrev", "jvp", "linearize",
           "stack_module_state", "vjp", "vmap"]

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
        xs, groups, res, graph = _run_reverse(f, args, kwargs, nums, name)
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
        g = _regroup(_pullback([out], [None], xs, graph, retain=graph), groups, single)
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
    xs, groups, res, graph = _run_reverse(func, primals, {}, tuple(range(len(primals))), name, what="primals[{}]")
    out, aux = _split_aux(res, has_aux, name)
    outs, spec = _flatten(out, name)
    graph = _graph(graph, outs)

    def vjp_fn(cotangents):
        cts = _flatten_like(cotangents, spec, outs, "func.vjp: vjp_fn", "cotangent")
        return _regroup(_pullback(outs, cts, xs, graph or _differentiated(cts), retain=True), groups, False)

    if not graph:
        out, aux = _pytree.unflatten([_cut(o) for o in outs], spec), _map(_cut, aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of ``func`` by reverse mode: one forward, then one batched
    reverse pass (``vmap`` over the pullback, the identity as a batch of cotangents), or one pass per
    ``chunk_size`` output elements.

    The Jacobian of an output w.r.t. an argument is shaped ``output.shape + argument.shape``; a
    pytree argument (a dict of parameters) gives a Jacobian of its structure; a tuple of them when
    ``argnums`` is a tuple; the output's structure (a tuple, list or dict of outputs) holds them.
    With ``has_aux``: ``(jacobian, aux)``.

    >>> mg.func.jacrev(lambda x: x ** 2)(mg.tensor([1.0, 2.0]))   # [[2, 0], [0, 4]]
    """
    _check_chunk(chunk_size, "func.jacrev")

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        name = "func.jacrev(f)(*args)"
        nums, single = _argnums(argnums, args, name)
        _leaves_of(args, nums, name, "argument {}", sparse=False, complex=False)
        xs, groups, res, graph = _run_reverse(func, args, kwargs, nums, name, sparse=False)
        out, aux = _split_aux(res, has_aux, name)
        outs, spec = _flatten(out, name)
        _real_outputs(outs, name)
        graph = _graph(graph, outs)
        blocks = _jacrev_blocks(outs, xs, graph, chunk_size)
        jac = _pytree.unflatten([_regroup(b, groups, single) for b in blocks], spec)
        if has_aux:
            return jac, (aux if graph else _map(_cut, aux))
        return jac

    return transformed


def _jacrev_blocks(outs, xs, graph, chunk_size):
    """Per output, per input: the Jacobian block shaped ``out.shape + x.shape``, by one reverse pass
    over a batch of one-hot cotangents (one per element of every output that requires grad)."""
    live = [o for o in outs if o._requires_grad and o.size]
    total = sum(o.size for o in live)
    rows = None
    if total == 1:  # one scalar: a plain pass, its cotangent one
        o = live[0]
        gs = _pullback(live, [_ones_like(o)], xs, graph, retain=True)
        rows = [g.reshape((1,) + tuple(x.shape)) for g, x in zip(gs, xs, strict=True)]
    elif total:
        xp = _be.array_module(_batched.innermost(live[0].data))
        eye, cts, off = xp.eye(total), [], 0
        for o in live:
            cts.append(wrap(eye[:, off:off + o.size].astype(o.dtype, copy=False).reshape((total,) + tuple(o.shape))))
            off += o.size
        rows = vmap(lambda *c: tuple(_pullback(live, list(c), xs, graph, retain=True)), chunk_size=chunk_size)(*cts)
    blocks, off = [], 0
    for o in outs:
        if any(o is v for v in live):
            per = [_block(r, off, o, x) for r, x in zip(rows, xs, strict=True)]
            off += o.size
        else:
            per = [_zeros(tuple(o.shape) + tuple(x.shape), x) for x in xs]
        blocks.append(per)
    return blocks


def _block(rows, off, o, x):
    """Rows ``off:off + o.size`` of a batch of gradients w.r.t. ``x``, shaped ``o.shape + x.shape``."""
    part = rows if rows.shape[0] == o.size else rows[off:off + o.size]
    shape = tuple(o.shape) + tuple(x.shape)
    return part if part.shape == shape else part.reshape(shape)


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
    xs, groups, res, graph = _run_reverse(func, primals, {}, tuple(range(len(primals))), name, what="primals[{}]")
    outs, spec = _flatten(res, name)
    graph = _graph(graph, outs)
    live = [o for o in outs if o._requires_grad]
    with enable_grad():
        vs = [_zeros_like(o).requires_grad_() for o in live]  # v: any value, Jᵀv is linear in it
        gs = (_grad(live, xs, grad_outputs=vs, retain_graph=True, create_graph=True, allow_unused=True) if live
              else [None] * len(xs))

    def jvp_fn(*tangents):
        us = _check_tangents(primals, xs, tangents, "func.linearize: jvp_fn")
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
        return _pytree.unflatten(jus, spec)

    return (res if graph else _pytree.unflatten([_cut(o) for o in outs], spec)), jvp_fn


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
    ps, ts, specs = _check_pairs(primals, tangents, name)
    with dual_level(_plain=plain):
        duals = iter([make_dual(p, t) for p, t in zip(ps, ts, strict=True)])
        res = func(*[_pytree.unflatten(duals, s) for s in specs])
        out, aux = _split_aux(res, has_aux, name)
        outs, spec = _flatten(out, name)
        pairs = [unpack_dual(o) for o in outs]
        aux = _map(_primal, aux)
    out = _pytree.unflatten([p for p, _ in pairs], spec)
    jvp_out = _pytree.unflatten([_zeros_like(p) if t is None else t for p, t in pairs], spec)
    return (out, jvp_out, aux) if has_aux else (out, jvp_out)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of ``func`` by forward mode: ``vmap`` of one ``jvp`` whose
    tangents are the one-hot basis of the inputs (a batch of them, one per input element): the
    primal runs once, the tangents as one batch. Shapes as ``jacrev``: ``output.shape +
    argument.shape``, pytree arguments and outputs as there. Cheaper than jacrev where the inputs
    have fewer elements than the outputs. ``randomness`` is vmap's, for random draws in ``func``.

    >>> mg.func.jacfwd(lambda x: x ** 2)(mg.tensor([1.0, 2.0]))   # [[2, 0], [0, 4]]
    """
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"func.jacfwd: randomness must be 'error', 'different' or 'same', got {randomness!r}")

    @functools.wraps(func)
    def transformed(*args, **kwargs):
        name = "func.jacfwd(f)(*args)"
        nums, single = _argnums(argnums, args, name)
        xs, groups = _leaves_of(args, nums, name, "argument {}", sparse=False, complex=False)
        total = sum(x.size for x in xs)
        kept = []  # what f returned beside its tangents: its structure, aux's leaves that are no Tensors

        def push(*ts):
            with dual_level():
                duals = iter([make_dual(x, t) for x, t in zip(xs, ts, strict=True)])
                a = list(args)
                for i, (_, s) in zip(nums, groups, strict=True):
                    a[i] = _pytree.unflatten(duals, s)
                out, aux = _split_aux(func(*a, **kwargs), has_aux, name)
                outs, spec = _flatten(out, name)
                _real_outputs(outs, name)
                pairs = [unpack_dual(o) for o in outs]
                aux_leaves, aux_spec = _pytree.flatten(_map(_primal, aux))
            kept[:] = [spec, aux_leaves, aux_spec]
            tensors = tuple(a for a in aux_leaves if isinstance(a, Tensor))
            return tuple(_zeros_like(p) if t is None else t for p, t in pairs), tensors

        if total == 0:  # no input has an element: f's outputs give the shapes
            out, aux = _split_aux(func(*args, **kwargs), has_aux, name)
            outs, spec = _flatten(out, name)
            jac = _pytree.unflatten([_regroup([_zeros(tuple(o.shape) + tuple(x.shape), x) for x in xs], groups, single)
                                     for o in outs], spec)
            return (jac, aux) if has_aux else jac
        xp = _be.array_module(_batched.innermost(xs[0].data))
        eye, basis, off = xp.eye(total), [], 0
        for x in xs:
            basis.append(wrap(eye[:, off:off + x.size].astype(x.dtype, copy=False).reshape((total,) + tuple(x.shape))))
            off += x.size
        shared = randomness != "different"  # aux (from the primals) is the same for every basis element
        cols, aux_t = vmap(push, out_dims=(-1, None if shared else 0), randomness=randomness)(*basis)
        spec, aux_leaves, aux_spec = kept
        jacs = []
        for t in cols:  # t: o.shape + (total,)
            oshape, per, off = tuple(t.shape[:-1]), [], 0
            for x in xs:
                part = t if x.size == total else t[..., off:off + x.size]
                per.append(part.reshape(oshape + tuple(x.shape)))
                off += x.size
            jacs.append(_regroup(per, groups, single))
        jac = _pytree.unflatten(jacs, spec)
        if not has_aux:
            return jac
        it = iter(aux_t if shared else [a[0] for a in aux_t])
        aux = _pytree.unflatten([next(it) if isinstance(a, Tensor) else a for a in aux_leaves], aux_spec)
        return jac, aux

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
    _check_pairs(primals, tangents, name)
    g = _grad_transform(func, tuple(range(len(primals))), False, "grad_and_value", name)
    # the forward pass's tangents are read by the reverse pass, never differentiated, unless a
    # transform outside this one differentiates the result
    plain = _reverse_depth.get() == 0 and not any(t.requires_grad for t in _pytree.flatten((primals, tangents))[0])
    (_, value), (hv, _) = _jvp(g, primals, tangents, False, name, plain)
    return value, hv


# ---------------------------------------------------------------------------
# modules as functions: functional_call, stack_module_state
# ---------------------------------------------------------------------------

_MISSING = object()


def functional_call(module, params_and_buffers=NOARG, args=None, kwargs=None, *, tie_weights=True, strict=False,
                    parameter_and_buffer_dicts=NOARG):
    """``module(*args, **kwargs)`` with the given Tensors in place of its parameters and buffers, as
    ``torch.func.functional_call``: the module is the same object before and after (its own tensors
    are put back, even when the call raises).

    Args:
        module: an ``nn.Module`` (anything with ``named_modules``, ``named_parameters`` and
            ``named_buffers``).
        params_and_buffers: a dict from dotted names (``"0.weight"``, as ``named_parameters``
            gives them) to Tensors, or a tuple of such dicts (no name twice). The Tensors may be
            batched (``vmap``) or differentiated (``grad``). PyTorch's keyword for it,
            ``parameter_and_buffer_dicts=``, is taken too.
        args: the positional arguments (a tuple; anything else is the one argument).
        kwargs: the keyword arguments.
        tie_weights: a tensor the module holds under several names (tied weights) is replaced under
            all of them by the value given for any one.
        strict: every parameter and buffer must be given, and no other name.

    Names the dicts leave out keep the module's own tensors. Per-sample gradients:

    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> loss = lambda p, x, y: F.cross_entropy(mg.func.functional_call(model, p, (x[None],)), y[None])
    >>> mg.func.vmap(mg.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    """
    name = "func.functional_call"
    given = pick("params_and_buffers", params_and_buffers, "parameter_and_buffer_dicts", parameter_and_buffer_dicts,
                 NOARG, name)
    if given is NOARG:
        raise TypeError(f"{name}: missing the parameters and buffers (params_and_buffers: a dict of Tensors)")
    given = _merge_dicts(given, name)
    own = _named_tensors(module, name)
    if tie_weights:
        given = _tie(given, own, name)
    if strict:
        missing, unexpected = sorted(set(own) - set(given)), sorted(set(given) - set(own))
        if missing or unexpected:
            raise RuntimeError(f"{name}: with strict=True every parameter and buffer of {type(module).__name__} must be "
                               f"given, and nothing else: missing key(s) {missing}, unexpected key(s) {unexpected}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    swapped = []  # (submodule, attribute, what it held)
    try:
        for key, t in given.items():
            m, attr = _owner(module, key, name)
            swapped.append((m, attr, m.__dict__.get(attr, _MISSING)))
            object.__setattr__(m, attr, t)  # beside Module.__setattr__, which takes Parameters only
        return module(*args, **(kwargs or {}))
    finally:
        for m, attr, old in reversed(swapped):
            if old is _MISSING:
                object.__delattr__(m, attr)
            else:
                object.__setattr__(m, attr, old)


def stack_module_state(models):
    """``(params, buffers)``: two dicts from the models' parameter and buffer names to their Tensors
    stacked on a new leading axis (one row per model), as ``torch.func.stack_module_state``: the
    state of an ensemble, for ``vmap(functional_call)``. The stacked parameters are new leaves that
    require grad (when the models' do); the models are left as they are.

    >>> params, buffers = mg.func.stack_module_state(models)
    >>> run = lambda p, b, x: mg.func.functional_call(models[0], (p, b), (x,))
    >>> mg.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)   # every model on x
    """
    name = "func.stack_module_state"
    models = list(models)
    if not models:
        raise RuntimeError(f"{name}: expected at least one model, got none")
    kinds = {type(m) for m in models}
    if len(kinds) > 1:
        raise RuntimeError(f"{name}: expected models of one class, got {sorted(k.__name__ for k in kinds)}")
    if len({bool(getattr(m, "training", False)) for m in models}) > 1:
        raise RuntimeError(f"{name}: expected all models in the same mode (train() or eval()), got both")
    out = []
    for what in ("named_parameters", "named_buffers"):
        per = [dict(getattr(m, what)()) for m in models]
        stacked = {}
        for key in per[0]:
            ts = [p[key] for p in per]
            if len({t.shape for t in ts}) > 1:
                raise ValueError(f"{name}: {key!r} has different shapes across the models: {[t.shape for t in ts]}")
            rg = {bool(t.requires_grad) for t in ts}
            if len(rg) > 1:
                raise RuntimeError(f"{name}: {key!r} requires grad in some models and not in others")
            s = _stack([t.detach() for t in ts])
            stacked[key] = s.requires_grad_() if rg == {True} else s
        out.append(stacked)
    return out[0], out[1]


def _merge_dicts(dicts, name):
    if isinstance(dicts, dict):
        dicts = (dicts,)
    if not isinstance(dicts, (tuple, list)) or not all(isinstance(d, dict) for d in dicts):
        raise TypeError(f"{name}: expected a dict of Tensors (or a tuple of dicts), got {type(dicts).__name__}")
    merged = {}
    for d in dicts:
        twice = sorted(set(d) & set(merged))
        if twice:
            raise ValueError(f"{name}: got several values for the key(s) {twice}")
        merged.update(d)
    return merged


def _named_tensors(module, name):
    """Every dotted name of the module's parameters and buffers (a shared one under each name)."""
    if not hasattr(module, "named_modules") or not callable(module):
        raise TypeError(f"{name}: expected an nn.Module, got {type(module).__name__}")
    own = {}
    for mname, m in module.named_modules(remove_duplicate=False):
        for key, t in (*m.named_parameters(recurse=False), *m.named_buffers(recurse=False)):
            own[f"{mname}.{key}" if mname else key] = t
    return own


def _tie(given, own, name):
    """``given`` with each tied tensor's value under all of its names."""
    names_of = {}
    for key, t in own.items():
        names_of.setdefault(id(t), []).append(key)
    out = dict(given)
    for keys in names_of.values():
        if len(keys) < 2:
            continue
        have = [k for k in keys if k in given]
        if not have:
            continue
        if any(given[k] is not given[have[0]] for k in have[1:]):
            raise ValueError(f"{name}: {have} are tied (one tensor) in the module, but got different values for them; "
                             "give one, or pass tie_weights=False")
        for k in keys:
            out[k] = given[have[0]]
    return out


def _owner(module, key, name):
    """The submodule holding the dotted name ``key``, and the attribute's name in it."""
    *path, attr = key.split(".")
    m = module
    for p in path:
        sub = getattr(m, p, None)
        if sub is None or not hasattr(sub, "named_modules"):
            raise KeyError(f"{name}: {key!r} names no submodule of {type(module).__name__} (no {p!r})")
        m = sub
    return m, attr


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _run_reverse(f, args, kwargs, nums, name, what="argument {}", sparse=True):
    """Run ``f`` for a reverse transform: the leaves of ``args[nums]`` (pytrees of float Tensors)
    entered (``_enter``), grad mode on. Returns the entered leaves, their groups (``_regroup``), f's
    result, and whether the backward must be recorded: True, False, or (when only the outputs can
    tell) the ids of the private leaves, for ``_graph``."""
    xs, groups = _leaves_of(args, nums, name, what, sparse)
    outer = is_grad_enabled()
    depth = _reverse_depth.get()
    graph = outer and (depth > 0 or any(a._requires_grad for a in _pytree.flatten((args, kwargs))[0]
                                        if isinstance(a, Tensor)))
    token = _reverse_depth.set(depth + 1)
    try:
        with enable_grad():
            a, private = list(args), set()
            entered = [_enter(x, outer, private) for x in xs]
            it = iter(entered)
            for i, (_, s) in zip(nums, groups, strict=True):
                a[i] = _pytree.unflatten(it, s)
            res = f(*a, **kwargs)
    finally:
        _reverse_depth.reset(token)
    if outer and not graph:  # the caller's autograd may still differentiate a tensor f closes over
        graph = private
    return entered, groups, res, graph


def _leaves_of(args, nums, name, what, sparse=True, complex=True):  # noqa: A002
    """The leaves of ``args[i]`` for ``i`` in ``nums`` (each a pytree of float Tensors), checked, and
    per argument ``(number of leaves, structure)`` for ``_regroup``."""
    leaves, groups = [], []
    for i in nums:
        ls, spec = _pytree.flatten(args[i])
        w = what.format(i)
        for k, x in enumerate(ls):
            _float_tensor(x, name, w if spec is None else f"{w} (a {type(args[i]).__name__}: its leaf {k})", sparse,
                          complex)
        leaves += ls
        groups.append((len(ls), spec))
    return leaves, groups


def _regroup(flat, groups, single):
    """Results, one per differentiated leaf, in their arguments' structures: the one argument's
    (``single``), or a tuple with one per argument."""
    it = iter(flat)
    parts = [_pytree.unflatten(it, s) for _, s in groups]
    return parts[0] if single else tuple(parts)


def _check_chunk(chunk_size, name):
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"{name}: chunk_size must be None or a positive int, got {chunk_size!r}")


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


def _zeros(shape, like):
    """Zeros of ``shape`` with ``like``'s dtype and device."""
    return wrap(_be.array_module(_batched.innermost(like.data)).zeros(shape, dtype=like.dtype))


def _ones_like(x):
    return wrap(_be.array_module(_batched.innermost(x.data)).ones(x.shape, dtype=x.dtype))


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
    """The leaves of ``primals`` (a tuple of pytrees of float Tensors) and of ``tangents`` (the same
    structures, each leaf of its primal's shape and dtype), and each primal's structure."""
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"{name}: expected {what} to be a tuple of Tensors (f is called as f(*primals)), "
                            f"got {type(v).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"{name}: got {len(primals)} primals but {len(tangents)} tangents; "
                         "they must pair up")
    if not primals:
        raise ValueError(f"{name}: expected at least one primal")
    ps, groups = _leaves_of(primals, range(len(primals)), name, "primals[{}]")
    return ps, _check_tangents(primals, ps, tangents, name), [s for _, s in groups]


def _check_tangents(primals, leaves, tangents, name):
    """The leaves of ``tangents``, one pytree per primal of its structure (dict keys in any order),
    each leaf of its primal leaf's shape and dtype; ``leaves`` are the primals' leaves."""
    if len(tangents) != len(primals):
        raise ValueError(f"{name}: expected {len(primals)} tangents, one per primal, got {len(tangents)}")
    ts = []
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        spec = _pytree.flatten(p)[1]
        got = _leaves_as(t, spec)
        if got is None:
            raise TypeError(f"{name}: tangents[{i}] must have the structure of primals[{i}] "
                            f"({_pytree._describe(p)}), got {_pytree._describe(t)}")
        ts += [(f"[{i}]" if spec is None else f"[{i}] (leaf {k})", u) for k, u in enumerate(got)]
    out = []
    for (at, t), p in zip(ts, leaves, strict=True):
        if not isinstance(t, Tensor) and not (_is_sparse(t) and _is_sparse(p)):
            raise TypeError(f"{name}: tangents{at} must be a Tensor{' (sparse, as its primal is)' if _is_sparse(p) else ''}"
                            f", got {type(t).__name__}")
        if t.shape != p.shape or t.dtype != p.dtype:
            raise ValueError(f"{name}: tangents{at} has shape {t.shape} and dtype {t.dtype}, but primals{at} "
                             f"has shape {p.shape} and dtype {p.dtype}; they must match")
        out.append(t)
    return out


def _leaves_as(tree, spec):
    """The leaves of ``tree`` in the order of the structure ``spec`` (``_pytree.flatten``'s; a dict's
    keys may come in any order), or None where ``tree`` does not have that structure."""
    out = []
    return out if _take(tree, spec, out) else None


def _take(tree, spec, out):
    if spec is None:
        out.append(tree)
        return True
    if spec[0] is dict:
        if not isinstance(tree, dict) or set(tree) != set(spec[1]):
            return False
        return all(_take(tree[k], s, out) for k, s in zip(spec[1], spec[2], strict=True))
    if not isinstance(tree, (tuple, list)) or len(tree) != len(spec[1]):
        return False
    return all(_take(t, s, out) for t, s in zip(tree, spec[1], strict=True))


def _split_aux(res, has_aux, name):
    if not has_aux:
        return res, None
    if not (isinstance(res, tuple) and len(res) == 2):
        raise TypeError(f"{name}: with has_aux=True, f must return a pair (output, aux), "
                        f"got {type(res).__name__}{f' of length {len(res)}' if isinstance(res, tuple) else ''}")
    return res


def _flatten(out, name):
    """The Tensors of ``f``'s output (a Tensor, or tuples, lists and dicts of them, nested), and its
    structure for ``_pytree.unflatten``."""
    leaves, spec = _pytree.flatten(out)
    for o in leaves:
        if not isinstance(o, Tensor) and not _is_sparse(o):
            raise TypeError(f"{name}: expected f to return a Tensor, or tuples, lists and dicts of Tensors, "
                            f"got {type(o).__name__}" + ("" if spec is None else f" in a {type(out).__name__}"))
    return leaves, spec


def _flatten_like(v, spec, outs, name, what):
    """The leaves of ``v``, which must have ``f``'s output structure ``spec`` and shapes."""
    leaves = _leaves_as(v, spec)
    if leaves is None or not all(isinstance(c, Tensor) or _is_sparse(c) for c in leaves):
        raise TypeError(f"{name}: expected a {what} shaped like f's output (a Tensor, or the tuples, lists and "
                        f"dicts f returned), got {type(v).__name__}")
    for k, (c, o) in enumerate(zip(leaves, outs, strict=True)):
        if c.shape != o.shape:
            raise ValueError(f"{name}: {what} {k} has shape {c.shape}, but f's output {k} has shape {o.shape}")
    return leaves


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
