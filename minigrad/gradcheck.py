"""Check analytic gradients against central finite differences in float64."""
from __future__ import annotations

import numpy as np

from . import autograd as _ag
from .backend import array_module, to_numpy
from .errors import MinigradError
from .tensor import Tensor, wrap as _wrap


class GradcheckError(MinigradError, RuntimeError):
    """Analytic and numeric gradients disagree (raised by gradcheck / gradgradcheck)."""



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


def _flat_data(outs):
    return [to_numpy(o.data).astype(np.float64).ravel() for o in outs]


def _where(x, flat_index):
    shape = _values_array(x).shape
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, fast=False,
              locate=True) -> bool:
    """Compare backward with central finite differences, in float64.

    Args:
        fn: takes the inputs, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a sequence (non-Tensor items are passed through); those
            that require grad are checked. Sparse inputs are perturbed at their stored
            entries only.
        eps: finite-difference step. atol, rtol: tolerances (|a - n| <= atol + rtol |n|).
        raise_exception: raise ``GradcheckError`` on a mismatch (else return False).
        fast: compare one random directional derivative instead of the full Jacobian.
        locate: on a mismatch, check every op of ``fn`` alone (``mg.autograd.check_ops``) and
            begin the error message with the first op whose rule is wrong: its name, its
            position on the tape, the ``file:line`` that created it, the input and the error.

    Returns:
        True when the gradients agree.

    >>> mg.gradcheck(lambda x: (x * x).sum(), mg.randn(3, dtype="float64", requires_grad=True))
    True
    """
    if isinstance(inputs, Tensor) or _is_sparse(inputs):
        inputs = (inputs,)
    inputs = _prepare(list(inputs))
    diff = [i for i, x in enumerate(inputs) if (isinstance(x, Tensor) or _is_sparse(x)) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    try:
        if fast:
            _fast_check(fn, inputs, diff, eps, atol, rtol)
        else:
            _full_check(fn, inputs, diff, eps, atol, rtol)
    except GradcheckError as e:
        if not raise_exception:
            return False
        if locate:
            found = _locate(fn, inputs, eps, atol, rtol)
            if found is not None:
                raise GradcheckError(f"{found}\n{e}") from None
        raise
    return True


def _locate(fn, inputs, eps, atol, rtol):
    """The first op whose rule alone disagrees with finite differences, as a sentence (or None)."""
    from .check import check_ops  # noqa: PLC0415 - loaded on a failure only

    try:
        report = check_ops(fn, *inputs, eps=eps, atol=atol, rtol=rtol)
    except Exception:  # noqa: BLE001 - locating is a courtesy; the original error stands
        return None
    row = report.first_failure
    if row is None:
        return None
    return f"{row.describe()} (the first op whose rule alone disagrees; mg.autograd.check_ops shows them all)"


def _numeric_column(fn, inputs, arr, k, eps):
    flat = arr.reshape(-1)
    old = flat[k].item()
    flat[k] = old + eps
    with _ag.no_grad():
        plus = _flat_data(_outputs(fn, inputs))
    flat[k] = old - eps
    with _ag.no_grad():
        minus = _flat_data(_outputs(fn, inputs))
    flat[k] = old
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


def _full_check(fn, inputs, diff, eps, atol, rtol):
    outs = _outputs(fn, inputs)
    diff_inputs = [inputs[i] for i in diff]
    # analytic Jacobian, one backward per output element: J[o][i] has shape (out_size, in_size)
    analytic = []
    for oi, o in enumerate(outs):
        n_out = o.size
        rows = [np.zeros((n_out, _values_array(x).size)) for x in diff_inputs]
        if o.requires_grad and o.dtype.kind == "f":
            xp = array_module(o.data)
            for j in range(n_out):
                go = xp.zeros(o.shape, dtype=o.dtype)
                go.reshape(-1)[j] = 1
                gos = [_wrap(go) if qi == oi else None for qi in range(len(outs))]  # by position: outputs may alias
                sel = [q for q in outs if q.requires_grad]
                gsel = [g if g is not None else _wrap(xp.zeros(q.shape, dtype=q.dtype))
                        for q, g in zip(outs, gos, strict=True) if q.requires_grad]
                grads = _ag.grad(sel, diff_inputs, gsel, retain_graph=True, allow_unused=True)
                for r, g in zip(rows, grads, strict=True):
                    ga = _grad_array(g)
                    if ga is not None:
                        r[j] = to_numpy(ga).astype(np.float64).ravel()
        analytic.append(rows)
    for pos, i in enumerate(diff):
        x = inputs[i]
        arr = _values_array(x)
        for k in range(arr.size):
            cols = _numeric_column(fn, inputs, arr, k, eps)
            if len(cols) != len(outs):
                raise RuntimeError(
                    f"gradcheck: fn returned {len(outs)} outputs with grad enabled but {len(cols)} under no_grad"
                )
            for oi, col in enumerate(cols):
                a = analytic[oi][pos][:, k]
                bad = np.abs(a - col) > atol + rtol * np.abs(col)
                bad |= np.isnan(a) != np.isnan(col)
                if bad.any():
                    j = int(np.argmax(bad))
                    oshape = outs[oi].shape
                    oidx = tuple(int(t) for t in np.unravel_index(j, oshape)) if oshape else ()
                    raise GradcheckError(
                        f"gradcheck: Jacobian mismatch for input {i} (shape {tuple(arr.shape)}"
                        f"{', stored values of a sparse tensor' if _is_sparse(x) else ''}) at element "
                        f"{_where(x, k)}, output {oi} element {oidx}: analytic {float(a[j])!r}, numeric {float(col[j])!r} "
                        f"(atol={atol}, rtol={rtol}, eps={eps})"
                    )


def _fast_check(fn, inputs, diff, eps, atol, rtol):
    rng = np.random.default_rng(0)
    outs = _outputs(fn, inputs)
    vs = []
    for o in outs:
        xp = array_module(o.data)
        vs.append(_wrap(xp.asarray(rng.standard_normal(o.shape)).astype(o.dtype)))
    us = []
    for i in diff:
        arr = _values_array(inputs[i])
        u = rng.standard_normal(arr.shape)
        us.append(u / max(np.linalg.norm(u), 1e-12))
    sel = [(o, v) for o, v in zip(outs, vs, strict=True) if o.requires_grad]
    analytic = 0.0
    if sel:
        grads = _ag.grad([o for o, _ in sel], [inputs[i] for i in diff], [v for _, v in sel],
                         retain_graph=True, allow_unused=True)
        for g, u in zip(grads, us, strict=True):
            ga = _grad_array(g)
            if ga is not None:
                analytic += float((to_numpy(ga).astype(np.float64) * u).sum())
    arrs = [_values_array(inputs[i]) for i in diff]
    olds = [a.copy() for a in arrs]
    xps = [array_module(a) for a in arrs]
    for a, old, u, xp in zip(arrs, olds, us, xps, strict=True):
        a[...] = old + eps * xp.asarray(u)
    with _ag.no_grad():
        plus = _flat_data(_outputs(fn, inputs))
    for a, old, u, xp in zip(arrs, olds, us, xps, strict=True):
        a[...] = old - eps * xp.asarray(u)
    with _ag.no_grad():
        minus = _flat_data(_outputs(fn, inputs))
    for a, old in zip(arrs, olds, strict=True):
        a[...] = old
    numeric = 0.0
    for p, m, v in zip(plus, minus, vs, strict=True):
        numeric += float(((p - m) / (2 * eps) * to_numpy(v.data).ravel()).sum())
    if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
        raise GradcheckError(
            f"gradcheck (fast): the directional derivative along a random direction of inputs "
            f"{diff} disagrees: analytic {analytic!r}, numeric {numeric!r} (atol={atol}, rtol={rtol}, eps={eps}); "
            "run with fast=False to find the element"
        )


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, fast=False, locate=True) -> bool:
    """Check second derivatives: gradcheck of the function (inputs, v) -> v^T J(inputs).

    ``grad_outputs`` (random when None) become extra differentiable inputs. ``locate`` as in
    ``gradcheck`` (it checks the ops of the forward, whose first-order rules feed the second).
    """
    if isinstance(inputs, Tensor) or _is_sparse(inputs):
        inputs = (inputs,)
    inputs = _prepare(list(inputs))
    n = len(inputs)
    diff = [i for i, x in enumerate(inputs) if (isinstance(x, Tensor) or _is_sparse(x)) and x.requires_grad]
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        grad_outputs = []
        for o in outs:
            xp = array_module(o.data)
            grad_outputs.append(_wrap(xp.asarray(rng.standard_normal(o.shape))))
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    gos = []
    for g in grad_outputs:
        g = _wrap(g.data.astype(np.float64)) if g.dtype != np.float64 else _wrap(g.data.copy())
        g.requires_grad = True
        gos.append(g)

    def first_derivatives(*args):
        xs, vs = args[:n], args[n:]
        # gradcheck evaluates this under no_grad for the finite differences; the first
        # derivatives need the tape all the same
        with _ag.enable_grad():
            ys = _outputs(fn, xs)
            sel = [(y, v) for y, v in zip(ys, vs, strict=True) if y.requires_grad]
            grads = _ag.grad([y for y, _ in sel], [xs[i] for i in diff], [v for _, v in sel],
                             create_graph=True, allow_unused=True)
        res = []
        for g, i in zip(grads, diff, strict=True):
            if g is None:  # unused input: its first derivative is zero (keeps the output count fixed)
                g = _wrap(array_module(_values_array(xs[i])).zeros(xs[i].shape, dtype=np.float64))
            res.append(g.to_dense() if _is_sparse(g) else g)
        return tuple(res)

    return gradcheck(first_derivatives, list(inputs) + gos, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast=fast, locate=locate)
