"""Check derivatives against central finite differences in float64: in reverse mode (backward)
and in forward mode (JVPs through dual levels), to order 3.

Order 1 checks ``fn``'s Jacobian. Order ``k + 1`` checks the Jacobian of a derivative function
of order ``k``: the reverse-mode one ``(x, v) -> J(x)ᵀ v`` (backward with ``create_graph``) or the
forward-mode one ``(x, u) -> J(x) u`` (the tangent a dual level gives). With one mode, each order
checks that mode over the same mode's derivative (reverse over reverse; forward over forward,
nested dual levels that never differentiate in reverse). With both modes, order ``k`` checks every
*composition*: each derivative function of order ``k - 1`` (built by either mode at each step)
checked in each mode, 2, 4, 8 paths at orders 1, 2, 3; a composition is written outermost first
("fwd over rev": forward mode applied to the reverse-mode derivative). Forward mode is also held
to the reverse mode through ⟨u, Jᵀv⟩ = ⟨Ju, v⟩ (JAX's check). At order 2 and above the finite
differences evaluate the lower order's function with the rules on arrays (first order), the
analytic side with the rules on Tensors, so the two paths of a rule are held to each other.
"""
from __future__ import annotations

import contextlib
import itertools

import numpy as np

from . import backward
from . import forward_ad as _fw
from .backend import array_module, to_numpy
from .errors import MinigradError
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .tensor import Tensor, wrap as _wrap

MODES = ("rev", "fwd")
_WHAT = {"rev": "reverse mode (backward)", "fwd": "forward mode (JVP)"}


class GradcheckError(MinigradError, RuntimeError):
    """Analytic and numeric derivatives disagree (raised by gradcheck / gradgradcheck).

    Attributes (None where they do not apply): ``mode`` ("rev" or "fwd"), ``order`` (1 to 3),
    ``composition`` (the modes of the path checked, outermost first, ``order`` of them:
    ``("fwd", "rev")`` is forward mode applied to the reverse-mode derivative, "fwd over rev";
    ``composition[0] == mode``; ``(mode,)`` at order 1), ``input`` (the position among the inputs
    of the function checked at that order: ``fn``'s at order 1), ``name`` (that input's name in the
    message: "input 0", "the tangent of input 0"...), ``element``, ``output``, ``analytic``,
    ``numeric``, ``suspect`` (the mode whose rules the numbers point at: ``mode``, or "rev" when
    forward mode agrees with finite differences and not with the reverse mode)."""

    def __init__(self, message="", *, mode=None, order=None, input=None, name=None, element=None,  # noqa: A002
                 output=None, analytic=None, numeric=None, suspect=None, composition=None):
        super().__init__(message)
        self.mode, self.order, self.input, self.name, self.element = mode, order, input, name, element
        self.output, self.analytic, self.numeric = output, analytic, numeric
        self.suspect = suspect or mode  # the mode whose rules the numbers point at (locate checks it)
        self.composition = tuple(composition) if composition else ((mode,) if mode else None)


def _over(composition):
    """A composition's name: ``("fwd", "rev")`` -> "fwd over rev"."""
    return " over ".join(composition)


# ---------------------------------------------------------------------------
# inputs and outputs
# ---------------------------------------------------------------------------


def _is_sparse(x):
    return hasattr(x, "_grad_target")


def _values_array(x):
    """The array gradcheck perturbs: a dense tensor's data, a sparse tensor's stored values."""
    return x._grad_target().data if _is_sparse(x) else x.data


def _grad_array(g):
    if g is None:
        return None
    return _values_array(g)


def _prepare(inputs):
    out = []
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype != np.float64:
                if x.dtype.kind != "f":
                    raise TypeError(f"gradcheck: inputs that require grad must be floating, got {x.dtype}")
                x = _wrap(x.data.astype(np.float64))
                x.requires_grad = True
            elif not x.is_leaf or not x.data.flags.c_contiguous if hasattr(x.data, "flags") else False:
                x = _wrap(x.data.copy())
                x.requires_grad = True
        elif _is_sparse(x) and x.requires_grad and x.dtype != np.float64:
            raise TypeError(f"gradcheck: sparse inputs must be float64, got {x.dtype}")
        out.append(x)
    return out


def _outputs(fn, inputs):
    out = fn(*inputs)
    outs = (out,) if isinstance(out, Tensor) or _is_sparse(out) else tuple(out)
    # the Tensors among the outputs: a Python number beside them (np.linalg.lstsq's rank) has no gradient
    return [o.to_dense() if _is_sparse(o) else o for o in outs if isinstance(o, Tensor) or _is_sparse(o)]


def _flat(a):
    return to_numpy(a).astype(np.float64).ravel()


def _flat_data(outs):
    return [_flat(o.data) for o in outs]


def _where(x, flat_index):
    shape = _values_array(x).shape
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def _float64(xp, a):
    """A float64 leaf that requires grad, on the array module ``xp``, holding host data ``a``."""
    t = _wrap(xp.asarray(np.asarray(a, dtype=np.float64)))
    t.requires_grad = True
    return t


def _dual(x, t, into):
    """``x`` carrying the tangent ``t`` (a Tensor of x's values' shape) at the innermost level, to be
    passed to the function checked ``into`` (a _Subject).

    When that function is built on a reverse-mode derivative (fwd over rev, fwd over fwd over
    rev...), which takes gradients with respect to its inputs, the dual view is made with grad mode
    on, so that the view of an ``x`` that requires grad is on its tape and requires grad too even
    where the caller runs under ``no_grad``. Elsewhere nothing records it (no cost to forward over
    forward)."""
    with enable_grad() if "rev" in into.chain else contextlib.nullcontext():
        if _is_sparse(x):
            if hasattr(x, "_make_dual"):  # a sparse primal's tangent: its indices, these values
                return _fw.make_dual(x, x._grad_like(t))
            return x._with_values(_fw.make_dual(x._grad_target(), t))
        return _fw.make_dual(x, t)


def _tangent(o):
    """``o``'s tangent at the innermost level; zeros (float64) where it carries none."""
    t = _fw.unpack_dual(o).tangent
    if t is None:
        return _wrap(array_module(o.data).zeros(o.shape, dtype=np.float64))
    return t


# ---------------------------------------------------------------------------
# complex inputs and outputs: checked as their real pairs
# ---------------------------------------------------------------------------
# A function of complex numbers is checked as torch.autograd.gradcheck checks it: as the function of
# the real and imaginary parts. Its Jacobian holds the Wirtinger derivatives (d/dz = (d/dx - i d/dy) / 2
# and d/dz* = (d/dx + i d/dy) / 2 are its columns combined), and backward's gradient in PyTorch's
# convention, dL/dx + i dL/dy, is one of its rows read as a complex number. So each complex input that
# requires grad is given as its real pairs (``view_as_real``: shape + (2,), a float64 leaf) and turned
# back into a complex tensor (``view_as_complex``) before ``fn``; each complex output is returned as its
# real pairs. Every check (both modes, every order, the fast one, locate) then runs on a real function,
# through the two conversion ops, whose own rules the registry test checks. A wrong conjugate in a rule
# is a wrong sign in the imaginary part of a gradient: a Jacobian mismatch at a pair's second element.

_PAIRS_NOTE = ("(complex inputs and outputs are checked as their real pairs, view_as_real: an element's last "
               "index is 0 for the real part, 1 for the imaginary part; docs/complex.md)")


def _as_real(fn, inputs, grad_outputs):
    """``fn`` and its inputs with complex numbers as real pairs (``fn.complex``: True once an input or
    an output was complex)."""
    from .ops.complex_ops import view_as_complex, view_as_real  # noqa: PLC0415 - the ops sit below, imported late

    cx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad and x.dtype.kind == "c"]

    def pairs(out):
        if isinstance(out, Tensor) and out.dtype.kind == "c":
            real_fn.complex = True
            return view_as_real(out)
        return out

    def real_fn(*xs):
        xs = list(xs)
        for i in cx:
            xs[i] = view_as_complex(xs[i])
        out = fn(*xs)
        return pairs(out) if isinstance(out, Tensor) or _is_sparse(out) else tuple(pairs(o) for o in out)

    real_fn.complex = bool(cx)  # (or an output was complex: pairs)
    inputs = list(inputs)
    for i in cx:
        x = _wrap(view_as_real(inputs[i].detach()).data.astype(np.float64))
        x.requires_grad = True
        inputs[i] = x
    if grad_outputs is not None:
        gos = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        grad_outputs = [pairs(g) for g in gos]
    return real_fn, inputs, grad_outputs


# ---------------------------------------------------------------------------
# the function checked at one order, and the derivative functions of the next
# ---------------------------------------------------------------------------


class _Subject:
    """A function checked at one order: ``fn(*inputs)``, the positions ``diff`` of its
    differentiable inputs, names for its inputs and outputs (for messages). Its numeric
    derivatives are kept, so the two modes at order 1 share them."""

    def __init__(self, fn, inputs, diff, names, out_name, order, seed, chain=()):
        self.fn, self.inputs, self.diff, self.names, self.out_name = fn, inputs, diff, names, out_name
        self.order, self.seed = order, seed
        self.chain = chain  # the modes that derived it from fn, outermost first (() for fn itself)
        self._columns = {}
        self._dirs = None
        self._numeric = {}
        self._fwd = {}
        self._rev = None

    def outputs(self):
        return _outputs(self.fn, self.inputs)

    def composition(self, mode):
        """The path checked when this function is checked in ``mode``, outermost first."""
        return (mode, *self.chain)

    def shape_of(self, i):
        return tuple(_values_array(self.inputs[i]).shape)

    # -- finite differences ------------------------------------------------
    def _evaluate(self):
        with no_grad():
            return _flat_data(self.outputs())

    def column(self, pos, k, eps):
        """Numeric Jacobian column: d outputs / d element ``k`` of input ``diff[pos]``."""
        key = (pos, k)
        if key not in self._columns:
            arr = _values_array(self.inputs[self.diff[pos]])
            flat = arr.reshape(-1)
            old = flat[k].item()
            flat[k] = old + eps
            plus = self._evaluate()
            flat[k] = old - eps
            minus = self._evaluate()
            flat[k] = old
            self._columns[key] = [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]
        return self._columns[key]

    def directions(self):
        """Random unit directions ``u`` (one per differentiable input) and output weights ``v``."""
        if self._dirs is None:
            rng = np.random.default_rng(self.seed)
            with no_grad():
                outs = self.outputs()
            us = []
            for i in self.diff:
                u = rng.standard_normal(self.shape_of(i))
                us.append(u / max(float(np.linalg.norm(u)), 1e-12))
            vs = [rng.standard_normal(o.shape) for o in outs]
            self._dirs = (us, vs)
        return self._dirs

    def numeric_projection(self, pos, eps):
        """``<(f(x + eps u) - f(x - eps u)) / 2 eps, v>`` with ``u`` along input ``diff[pos]``."""
        if pos not in self._numeric:
            us, vs = self.directions()
            arr = _values_array(self.inputs[self.diff[pos]])
            old = arr.copy()
            u = array_module(arr).asarray(us[pos])
            arr[...] = old + eps * u
            plus = self._evaluate()
            arr[...] = old - eps * u
            minus = self._evaluate()
            arr[...] = old
            self._numeric[pos] = sum(float(((p - m) / (2 * eps) * v.ravel()).sum())
                                     for p, m, v in zip(plus, minus, vs, strict=True))
        return self._numeric[pos]

    # -- analytic ------------------------------------------------------------
    def rev_projections(self):
        """``<(Jᵀ v) at input diff[pos], u>`` per differentiable input: one backward."""
        if self._rev is None:
            us, vs = self.directions()
            with enable_grad():
                outs = self.outputs()
                sel = [(o, _wrap(array_module(o.data).asarray(v).astype(o.dtype)))
                       for o, v in zip(outs, vs, strict=True) if o.requires_grad and o.dtype.kind == "f"]
                grads = (backward.grad([o for o, _ in sel], [self.inputs[i] for i in self.diff], [v for _, v in sel],
                                  allow_unused=True) if sel else [None] * len(self.diff))
            self._rev = [0.0 if g is None else float((_flat(_grad_array(g)) * u.ravel()).sum())
                         for g, u in zip(grads, us, strict=True)]
        return self._rev

    def jvp(self, pos, u):
        """The outputs' tangents (flat, host) with tangent ``u`` (an array) on input ``diff[pos]``."""
        args = list(self.inputs)
        i = self.diff[pos]
        with no_grad(), _fw.dual_level():
            args[i] = _dual(args[i], _wrap(u), self)
            return [_flat(_tangent(o).data) for o in _outputs(self.fn, args)]

    def fwd_projection(self, pos):
        """``<J u, v>`` with ``u`` along input ``diff[pos]``: one dual forward."""
        if pos not in self._fwd:
            us, vs = self.directions()
            xp = array_module(_values_array(self.inputs[self.diff[pos]]))
            ts = self.jvp(pos, xp.asarray(us[pos]))
            self._fwd[pos] = sum(float((t * v.ravel()).sum()) for t, v in zip(ts, vs, strict=True))
        return self._fwd[pos]


def _top(fn, inputs, diff):
    return _Subject(fn, inputs, diff, [f"input {i}" for i in range(len(inputs))], lambda j: f"output {j}", 1, 0)


def _rev_derived(s, grad_outputs=None):
    """The reverse-mode derivative of ``s`` as a function to check: ``(x, v) -> J(x)ᵀ v``, with
    the cotangents ``v`` (random, or ``grad_outputs``) as extra differentiable inputs."""
    fn, diff, n = s.fn, s.diff, len(s.inputs)
    with no_grad():
        outs = s.outputs()
    if grad_outputs is None:
        rng = np.random.default_rng(100 + s.order)
        grad_outputs = [_wrap(array_module(o.data).asarray(rng.standard_normal(o.shape))) for o in outs]
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(outs)} outputs")
    vs = []
    for g, o in zip(grad_outputs, outs, strict=True):
        g = _wrap(g.data.astype(np.float64)) if g.dtype != np.float64 else _wrap(g.data.copy())
        g.requires_grad = o.dtype.kind == "f"
        vs.append(g)

    def vjp(*args):
        xs, cos = args[:n], args[n:]
        # differentiated (grad mode on), the backward is recorded: the rules run on Tensors. Evaluated
        # for the finite differences (under no_grad), it is not: the rules run on arrays. So the
        # Tensor path is held to the array path, not only to itself.
        record = is_grad_enabled()
        with enable_grad():  # the forward is recorded either way: backward needs the tape
            ys = _outputs(fn, xs)
            sel = [(y, c) for y, c in zip(ys, cos, strict=True) if y.requires_grad and y.dtype.kind == "f"]
            grads = (backward.grad([y for y, _ in sel], [xs[i] for i in diff], [c for _, c in sel],
                              create_graph=record, allow_unused=True) if sel else [None] * len(diff))
        res = []
        for g, i in zip(grads, diff, strict=True):
            if g is None:  # unused input: its derivative is zero (keeps the output count fixed)
                g = _wrap(array_module(_values_array(xs[i])).zeros(xs[i].shape, dtype=np.float64))
            res.append(g.to_dense() if _is_sparse(g) else g)
        return tuple(res)

    names = s.names + [f"the cotangent of {s.out_name(j)}" for j in range(len(outs))]
    new_diff = list(diff) + [n + j for j, v in enumerate(vs) if v.requires_grad]
    return _Subject(vjp, list(s.inputs) + vs, new_diff, names,
                    lambda j: f"the gradient of {s.names[diff[j]]}", s.order + 1, s.seed + 1, ("rev", *s.chain))


def _fwd_derived(s):
    """The forward-mode derivative of ``s`` as a function to check: ``(x, u) -> J(x) u`` (the
    outputs' tangents at a dual level of its own), with the tangents ``u`` (random) as extra
    differentiable inputs. Checking it in forward mode opens a level outside that one."""
    fn, diff, n = s.fn, s.diff, len(s.inputs)
    rng = np.random.default_rng(200 + s.order)
    us = [_float64(array_module(_values_array(s.inputs[i])), rng.standard_normal(s.shape_of(i))) for i in diff]

    def jvp(*args):
        xs, ts = list(args[:n]), args[n:]
        with _fw.dual_level():
            for i, t in zip(diff, ts, strict=True):
                xs[i] = _dual(xs[i], t, s)
            return tuple(_tangent(o) for o in _outputs(fn, xs))

    names = s.names + [f"the tangent of {s.names[i]}" for i in diff]
    return _Subject(jvp, list(s.inputs) + us, list(diff) + list(range(n, n + len(diff))), names,
                    lambda j: f"the tangent of {s.out_name(j)}", s.order + 1, s.seed + 1, ("fwd", *s.chain))


# ---------------------------------------------------------------------------
# the checks
# ---------------------------------------------------------------------------


_IN = {"rev": "reverse mode", "fwd": "forward mode"}
_OF = {"rev": "reverse-mode derivative", "fwd": "forward-mode derivative"}
_FORMULA = {"rev": "(x, v) -> J(x)ᵀv", "fwd": "(x, u) -> J(x)u"}


def _tag(s, mode):
    """"mode fwd, order 2, fwd over rev": the mode, the order and (above order 1) the composition."""
    tag = f"mode {mode}, order {s.order}"
    return tag if s.order == 1 else f"{tag}, {_over(s.composition(mode))}"


def _order_note(s, mode):
    """What the function checked at ``s.order`` is, for a message: the path that built it."""
    if s.order == 1:
        return ""
    inner = s.chain[0]
    note = (f"; order {s.order} differentiates, in {_IN[mode]}, the {_OF[inner]} of order {s.order - 1}, "
            f"{_FORMULA[inner]}")
    for j, m in enumerate(s.chain[1:]):
        note += f", built on the {_OF[m]} of order {s.order - 2 - j}"
    if mode == "fwd" and set(s.chain) == {"fwd"}:
        note += " (nested dual levels)"
    return note


def _rev_jacobian(s):
    """``analytic[oi][pos]``: the (n_out, n_in) block of the Jacobian, one backward per output element."""
    with enable_grad():
        outs = s.outputs()
        diff_inputs = [s.inputs[i] for i in s.diff]
        analytic = []
        for oi, o in enumerate(outs):
            n_out = o.size
            rows = [np.zeros((n_out, _values_array(x).size)) for x in diff_inputs]
            if o.requires_grad and o.dtype.kind == "f":
                xp = array_module(o.data)
                sel = [qi for qi, q in enumerate(outs) if q.requires_grad and q.dtype.kind == "f"]
                for j in range(n_out):
                    go = xp.zeros(o.shape, dtype=o.dtype)
                    go.reshape(-1)[j] = 1
                    # by position: outputs may alias
                    gsel = [_wrap(go) if qi == oi else _wrap(xp.zeros(outs[qi].shape, dtype=outs[qi].dtype))
                            for qi in sel]
                    grads = backward.grad([outs[qi] for qi in sel], diff_inputs, gsel, retain_graph=True,
                                     allow_unused=True)
                    for r, g in zip(rows, grads, strict=True):
                        ga = _grad_array(g)
                        if ga is not None:
                            r[j] = _flat(ga)
            analytic.append(rows)
    return analytic


def _compare_columns(s, mode, column, tol):
    """Every Jacobian column ``column(pos, k)`` (one flat array per output) against the numeric one."""
    eps, atol, rtol = tol
    n_out = None
    for pos, i in enumerate(s.diff):
        x = s.inputs[i]
        size = _values_array(x).size
        for k in range(size):
            cols = s.column(pos, k, eps)
            got = column(pos, k)
            if n_out is None:
                n_out = len(got)
            if len(cols) != len(got):
                raise RuntimeError(
                    f"gradcheck: fn returned {len(got)} outputs with grad enabled but {len(cols)} under no_grad")
            for oi, (a, col) in enumerate(zip(got, cols, strict=True)):
                bad = np.abs(a - col) > atol + rtol * np.abs(col)
                bad |= np.isnan(a) != np.isnan(col)
                if bad.any():
                    j = int(np.argmax(bad))
                    oshape = s._out_shapes[oi]
                    oidx = tuple(int(t) for t in np.unravel_index(j, oshape)) if oshape else ()
                    where = _where(x, k)
                    sparse = ", stored values of a sparse tensor" if _is_sparse(x) else ""
                    raise GradcheckError(
                        f"gradcheck: Jacobian mismatch for {s.names[i]} (shape {s.shape_of(i)}{sparse}) at element "
                        f"{where}, {s.out_name(oi)} element {oidx}, in {_WHAT[mode]} ({_tag(s, mode)}): "
                        f"analytic {float(a[j])!r}, numeric {float(col[j])!r} "
                        f"(atol={atol}, rtol={rtol}, eps={eps}){_order_note(s, mode)}",
                        mode=mode, order=s.order, input=i, name=s.names[i], element=where, output=(oi, oidx),
                        analytic=float(a[j]), numeric=float(col[j]), composition=s.composition(mode))


def _full(s, mode, tol):
    with no_grad():
        s._out_shapes = [o.shape for o in s.outputs()]
    if mode == "rev":
        analytic = _rev_jacobian(s)
        _compare_columns(s, mode, lambda pos, k: [blocks[pos][:, k] for blocks in analytic], tol)
        return

    def column(pos, k):
        arr = _values_array(s.inputs[s.diff[pos]])
        u = array_module(arr).zeros(arr.shape, dtype=np.float64)
        u.reshape(-1)[k] = 1
        return s.jvp(pos, u)

    _compare_columns(s, mode, column, tol)
    _agree_with_rev(s, tol, checked=True)


def _projection_error(s, mode, pos, analytic, numeric, tol, against="finite differences"):
    eps, atol, rtol = tol
    i = s.diff[pos]
    return GradcheckError(
        f"gradcheck (fast): the directional derivative ({_tag(s, mode)}: {_WHAT[mode]}) along a "
        f"random direction u of {s.names[i]} (shape {s.shape_of(i)}), projected on random output weights v, disagrees with "
        f"{against}: analytic {analytic!r}, numeric {numeric!r} (atol={atol}, rtol={rtol}, eps={eps})"
        f"{_order_note(s, mode)}",
        mode=mode, order=s.order, input=i, name=s.names[i], analytic=analytic, numeric=numeric,
        composition=s.composition(mode))


def _fast(s, mode, tol):
    eps, atol, rtol = tol
    for pos in range(len(s.diff)):
        a = s.rev_projections()[pos] if mode == "rev" else s.fwd_projection(pos)
        n = s.numeric_projection(pos, eps)
        if not abs(a - n) <= atol + rtol * abs(n):
            raise _projection_error(s, mode, pos, a, n, tol)
    if mode == "fwd":
        _agree_with_rev(s, tol, checked=True)


def _agree_with_rev(s, tol, checked):
    """Forward mode held to the reverse mode: <u, Jᵀv> = <Ju, v> per differentiable input."""
    _, atol, rtol = tol
    for pos in range(len(s.diff)):
        f, r = s.fwd_projection(pos), s.rev_projections()[pos]
        if not abs(f - r) <= atol + rtol * abs(f):
            i = s.diff[pos]
            how = _over(s.composition("rev")) if s.order > 1 else "backward"
            raise GradcheckError(
                f"gradcheck: forward and reverse mode disagree ({_tag(s, 'fwd')}) for {s.names[i]} "
                f"(shape {s.shape_of(i)}): <J u, v> = {f!r} (forward mode), <u, Jᵀ v> = {r!r} (reverse mode, "
                f"{how}) for random u, v (atol={atol}, rtol={rtol})"
                + ("; the forward mode agrees with finite differences, so the reverse mode is wrong" if checked
                   else "") + _order_note(s, "fwd"),
                mode="fwd", order=s.order, input=i, name=s.names[i], analytic=f, numeric=r, suspect="rev",
                composition=s.composition("fwd"))


def _check(s, mode, fast, tol, fallback):
    if not fast:
        _full(s, mode, tol)
        return
    try:
        _fast(s, mode, tol)
    except GradcheckError as e:
        if not fallback or e.suspect != mode:
            raise
        try:
            _full(s, mode, tol)
        except GradcheckError as full:
            full.args = (f"{full.args[0]}\n(the fast check failed first: {e.args[0]})",)
            raise full from None
        raise


def _modes(modes):
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"gradcheck: modes must hold 'rev' and/or 'fwd', got {modes!r}")
    return tuple(dict.fromkeys(modes))


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, fast=False,
              locate=True, modes=("rev",), order=1) -> bool:
    """Compare derivatives with central finite differences, in float64, in reverse and/or forward
    mode, up to ``order``. Complex inputs and outputs are checked as their real pairs
    (``view_as_real``), which checks the Wirtinger derivatives as ``torch.autograd.gradcheck`` does.

    Args:
        fn: takes the inputs, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a sequence (non-Tensor items are passed through); those
            that require grad are checked. Sparse inputs are perturbed at their stored
            entries only.
        eps: finite-difference step. atol, rtol: tolerances (|a - n| <= atol + rtol |n|).
        raise_exception: raise ``GradcheckError`` on a mismatch (else return False).
        fast: compare, per input, one random projection ``vᵀ J u`` instead of the full Jacobian;
            on a failure the full check runs for the message.
        locate: on a mismatch, begin the error message with the first op of ``fn`` whose rule,
            checked alone along the failing composition (its outermost mode the one the numbers
            point at), is wrong (``mg.autograd.check_ops`` at order 1): its name, its position on
            the tape, the ``file:line`` that created it.
        modes: "rev" (backward) and/or "fwd" (forward mode: JVPs through dual levels, also held
            to the reverse mode through <u, Jᵀv> = <Ju, v>).
        order: 1 to 3, lowest first. Order ``k + 1`` checks a derivative function of order ``k``:
            ``(x, v) -> J(x)ᵀv`` (reverse mode) or ``(x, u) -> J(x)u`` (forward mode). With one
            mode, that mode over itself (rev over rev, fwd over fwd). With both, every
            composition: each derivative function of order ``k`` (built by either mode at each
            step, each built once) checked in both modes: 4 at order 2 (rev over rev, fwd over
            rev, rev over fwd, fwd over fwd), 8 at order 3. A failure names its composition,
            outermost first ("mode fwd, order 2, fwd over rev": forward mode applied to the
            reverse-mode derivative), also ``GradcheckError.composition``, ``("fwd", "rev")``.

    Returns:
        True when the derivatives agree.

    >>> mg.gradcheck(lambda x: (x * x).sum(), mg.randn(3, dtype="float64", requires_grad=True))
    True
    >>> mg.gradcheck(mg.sin, mg.randn(3, dtype="float64", requires_grad=True), modes=("rev", "fwd"), order=2)
    True
    """
    return _gradcheck(fn, inputs, (eps, atol, rtol), raise_exception, fast, locate, modes, order, None)


def _compositions(modes, order, only=None):
    """The compositions checked, in order, outermost mode first: at each order ``k``, each derivative
    function of order ``k - 1`` (its chain of modes; those built by one mode first) checked in each
    of ``modes`` in turn. One mode: only that mode over itself. ``only``: the suffixes of that one
    composition (the path to it), lowest order first."""
    for k in range(1, order + 1):
        if only is not None:
            yield tuple(only[len(only) - k:])
            continue
        for chain in sorted(itertools.product(modes, repeat=k - 1), key=lambda c: len(set(c)) > 1):
            for mode in modes:
                yield (mode, *chain)


def _subject(subjects, chain, grad_outputs):
    """The derivative function built along ``chain`` (outermost first) from ``subjects[()]``, built once
    per prefix and kept in ``subjects`` (a loop over the chain: at most 2 steps)."""
    for j in range(len(chain) - 1, -1, -1):
        key = chain[j:]
        if key not in subjects:
            inner = subjects[key[1:]]
            subjects[key] = (_rev_derived(inner, grad_outputs if not key[1:] else None) if key[0] == "rev"
                             else _fwd_derived(inner))
    return subjects[chain]


def _gradcheck(fn, inputs, tol, raise_exception, fast, locate, modes, order, grad_outputs, fallback=True,
               only=None):
    modes = _modes(modes)
    if order not in (1, 2, 3):
        raise ValueError(f"gradcheck: order must be 1, 2 or 3, got {order!r}")
    if isinstance(inputs, Tensor) or _is_sparse(inputs):
        inputs = (inputs,)
    fn, inputs, grad_outputs = _as_real(fn, list(inputs), grad_outputs)
    inputs = _prepare(inputs)
    diff = [i for i, x in enumerate(inputs) if (isinstance(x, Tensor) or _is_sparse(x)) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    subjects = {(): _top(fn, inputs, diff)}
    try:
        for mode, *chain in _compositions(modes, order, only):
            _check(_subject(subjects, tuple(chain), grad_outputs), mode, fast, tol, fallback and raise_exception)
    except GradcheckError as e:
        if not raise_exception:
            return False
        if fn.complex:
            e.args = (f"{e.args[0]}\n{_PAIRS_NOTE}",)
        if locate:
            found = _locate(fn, inputs, (e.suspect, *e.composition[1:]), tol)
            if found is not None:
                e.args = (f"{found}\n{e.args[0]}",)
        raise
    return True


def _locate(fn, inputs, path, tol):
    """The first op whose rules alone disagree along ``path`` (a composition, outermost first: the
    failing one with its outermost mode the suspect's), as a sentence (or None)."""
    from . import check  # noqa: PLC0415 - loaded on a failure only

    eps, atol, rtol = tol
    mode, order = path[0], len(path)
    try:
        if order == 1:
            row = check.check_ops(fn, *inputs, eps=eps, atol=atol, rtol=rtol, mode=mode).first_failure
            if row is not None:
                return f"{row.describe()} (the first op whose rule alone disagrees; mg.autograd.check_ops shows them all)"
            # check_ops checks real operands; an op of complex numbers is checked alone below, as real pairs
        calls = check.recorded(fn, inputs)
    except Exception:  # noqa: BLE001 - locating is a courtesy; the original error stands
        return None
    for position, call in calls:
        try:
            f, leaves = check.alone(call)
            _gradcheck(f, leaves, tol, True, True, False, tuple(dict.fromkeys(path)), order, None, fallback=False,
                       only=path)
        except GradcheckError as e:
            over = f" ({_over((e.suspect, *e.composition[1:]))})" if e.order > 1 else ""
            return (f"op {check.op_name(call)!r} (position {position} on the tape) at {check.fmt_where(call.where)}: "
                    f"its {_WHAT[e.suspect]} derivative of order {e.order} is wrong{over} for {e.name} of the op: analytic "
                    f"{e.analytic:.6g}, numeric {e.numeric:.6g} (the first op whose rules, checked alone, disagree)")
        except Exception:  # noqa: BLE001, S112 - an op that cannot run alone is passed over
            continue
    return None


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, fast=False, locate=True, modes=("rev",)) -> bool:
    """``gradcheck(..., order=2)``: first and second derivatives, in each of ``modes``.

    In reverse mode the second order is the gradcheck of ``(inputs, v) -> vᵀ J(inputs)``;
    ``grad_outputs`` (random when None) are those ``v`` (extra differentiable inputs). In forward
    mode it is the forward-mode gradcheck of ``(inputs, u) -> J(inputs) u``. With both modes each
    of those two functions is checked in both modes (the four compositions of ``gradcheck``).
    """
    return _gradcheck(fn, inputs, (eps, atol, rtol), raise_exception, fast, locate, modes, 2, grad_outputs)
