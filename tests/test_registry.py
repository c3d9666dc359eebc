"""Every op in the registry, from its own sample inputs: gradcheck in float64 in both modes (reverse
and forward) to order 2, in the four compositions (rev over rev, fwd over rev, rev over fwd, fwd over fwd), values, gradients and forward-mode tangents against PyTorch (``torch.func.jvp``)
where PyTorch has the op. An op registered without samples fails here, and so does one without a
forward-mode rule (naming it). The whole file runs again under MINIGRAD_DEVICE=fakecuda (conftest's device)."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn  # noqa: F401 - modules that register ops of their own (conv, pooling, GELU...)
import minigrad.sparse  # noqa: F401
import minigrad.strided  # noqa: F401
from minigrad.engine import run_op
from minigrad.ops._registry import OnDevice

REG = mg.ops.registry()


@pytest.fixture(autouse=True)
def _one_gradient_per_input(monkeypatch):
    """Backward hands a rule's i-th gradient to the op's i-th input: a rule returns at most one
    gradient per input (fewer: the rest get none)."""
    from minigrad import backward

    send = backward._send

    def checked(n, grads, *rest):
        assert len(grads) <= len(n.parents), \
            f"the rule of {n.op!r} returned {len(grads)} gradients for {len(n.parents)} inputs"
        return send(n, grads, *rest)

    monkeypatch.setattr(backward, "_send", checked)


def _differentiable(op):
    """A primitive with a rule, or a composite (built from other ops) that declares samples, whatever
    kind pictures draw it as (a reduction such as ``mean`` is a composite too)."""
    return op.rule is not None or op.kind == "composite" or (op.forward is None and op.samples is not None)


DIFF = sorted(name for name, op in REG.items() if _differentiable(op))


def _inputs(sample, device):
    """Float arrays -> leaves that require grad (float64, on the device; complex ones complex128);
    int/bool arrays -> constants."""
    out = []
    for k, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            diff = a.dtype.kind in "fc" and k not in sample.nondiff
            wide = np.complex128 if a.dtype.kind == "c" else np.float64
            out.append(mg.tensor(a.astype(wide) if a.dtype.kind in "fc" else a, device=device,
                                 requires_grad=diff))
        else:
            out.append(a)
    return out


def _on_device(v, device):
    """Index arrays and structures among the keyword arguments, on the device under test."""
    if isinstance(v, OnDevice):
        return v.make(mg.backend.xp_for(device))
    if isinstance(v, np.ndarray) and v.dtype.kind in "biu":
        return mg.backend.to_device(v, device)
    if isinstance(v, tuple) and any(isinstance(e, np.ndarray) for e in v):
        return tuple(_on_device(e, device) for e in v)
    return v


def _call(op, sample, device):
    kwargs = {k: _on_device(v, device) for k, v in sample.kwargs.items()}
    if op.forward is not None:
        return lambda *xs: run_op(op, *xs, **kwargs)
    return lambda *xs: op.frontend(*xs, **kwargs)


def test_every_differentiable_op_declares_samples():
    missing = [name for name in DIFF if REG[name].samples is None]
    assert not missing, f"ops registered without samples (add samples= beside the definition): {missing}"


def test_the_registry_drives_methods_exports_and_numpy_dispatch():
    assert mg.exp is REG["exp"].frontend and mg.Tensor.exp is REG["exp"].frontend
    assert mg.log1p is REG["log1p"].frontend and mg.Tensor.log1p is REG["log1p"].frontend
    assert mg.ops.numpy_functions()[np.log1p] is mg.log1p
    for name, fn in mg.ops.exports().items():
        assert getattr(mg, name) is fn, name
    for op in REG.values():
        for m in op.method:
            assert getattr(mg.Tensor, m) is op.frontend, (op.name, m)


MODES = ("rev", "fwd")


@pytest.mark.parametrize("name", DIFF)
def test_gradcheck_both_modes_to_order_2(name, device):
    """Order 1: the full Jacobian in reverse and forward mode (forward mode also held to the reverse
    through <u, Jᵀv> = <Ju, v>). Order 2: the four compositions (reverse over reverse, forward over
    reverse, reverse over forward, forward over forward: gradcheck with both modes), as random
    projections (fast=True: a tenth of the full check's time; a failure reruns the full check for
    its message). A missing forward-mode rule raises naming the op."""
    op = REG[name]
    if op.samples is None:
        pytest.fail(f"{name}: registered without samples")
    _gradchecks(op, op.samples(np.random.default_rng(0)), device)


def _gradchecks(op, samples, device):
    name = op.name
    for sample in samples:
        xs = _inputs(sample, device)
        if not any(isinstance(x, mg.Tensor) and x.requires_grad for x in xs):
            continue
        fn = _call(op, sample, device)
        assert mg.gradcheck(fn, xs, modes=MODES), (name, sample)
        assert mg.gradcheck(fn, xs, modes=MODES, order=2, fast=True), (name, sample)


TORCHED = sorted(name for name in DIFF if REG[name].torch is not None)


@pytest.mark.parametrize("name", TORCHED)
def test_values_and_gradients_match_torch(name, device):
    op = REG[name]
    _against_torch(op, op.samples(np.random.default_rng(0)), device)


def _weights(rng, o):
    """Random weights of a loss sum(o * w): complex ones for a complex output (the loss is then Re sum(o w))."""
    w = rng.standard_normal(o.shape)
    return w + 1j * rng.standard_normal(o.shape) if o.dtype.kind == "c" else w


def _real_loss(terms):
    """The sum of the terms, its real part when complex (backward takes a real loss)."""
    total = sum(terms)
    cx = total.is_complex() if hasattr(total, "is_complex") else total.dtype.kind == "c"
    return total.real if cx else total


def _against_torch(op, samples, device):
    torch = pytest.importorskip("torch")
    name = op.name
    rng = np.random.default_rng(1)
    for sample in samples:
        xs = _inputs(sample, device)
        out = _call(op, sample, device)(*xs)
        ts = []
        for x in xs:
            if isinstance(x, mg.Tensor):
                ts.append(torch.tensor(x.detach().numpy(), requires_grad=x.requires_grad))
            else:
                ts.append(x)
        tout = op.torch(torch, *_promoted(torch, ts), **sample.kwargs)
        outs, touts = (out, tout) if isinstance(out, (tuple, list)) else ((out,), (tout,))  # chunk, unbind: tuples
        assert len(outs) == len(touts), (name, sample, len(outs), len(touts))
        for o, t in zip(outs, touts, strict=True):
            assert o.shape == tuple(t.shape), (name, sample, o.shape, tuple(t.shape))
            np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
        outs = [(o, t) for o, t in zip(outs, touts, strict=True) if o.requires_grad]
        if not outs:
            continue
        ws = [_weights(rng, o) for o, _ in outs]
        _real_loss([(o * mg.tensor(w, device=device)).sum() for (o, _), w in zip(outs, ws, strict=True)]).backward()
        _real_loss([(t * torch.tensor(w)).sum() for (_, t), w in zip(outs, ws, strict=True)]).backward()
        for x, t in zip(xs, ts, strict=True):
            if isinstance(x, mg.Tensor) and x.requires_grad:
                np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def _promoted(torch, ts):
    """Real float tensors beside complex ones made complex, for PyTorch (whose matmul and others want one
    dtype; NumPy and minigrad promote): the real leaf's gradient is then the real part, as minigrad's."""
    cx = [t.dtype for t in ts if isinstance(t, torch.Tensor) and t.is_complex()]
    if not cx:
        return ts
    return [t.to(cx[0]) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in ts]


def _torch_args(xs, torch):
    return [torch.tensor(x.detach().numpy()) if isinstance(x, mg.Tensor) else x for x in xs]


def _joined(out):
    """An op's output, or its outputs (split) joined flat, on the host."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return np.concatenate([np.asarray(o).ravel() for o in outs])


def _torch_jvp(torch, f, primals, tangents):
    """``torch.func.jvp(f, primals, tangents)``'s tangent; an oracle that reads its input's values
    (the sign fixes of qr's, svd's and eigh's vectors call ``.numpy()``, which functorch's wrapped
    tensors refuse) runs under PyTorch's dual tensors instead, the same forward mode."""
    try:
        return torch.func.jvp(f, primals, tangents)[1]
    except RuntimeError as e:
        if "storage" not in str(e):
            raise
    import torch.autograd.forward_ad as tfw

    with tfw.dual_level():
        out = f(*[tfw.make_dual(p, t) for p, t in zip(primals, tangents, strict=True)])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        ts = [tfw.unpack_dual(o).tangent for o in outs]
        ts = [torch.zeros_like(o) if t is None else t for o, t in zip(outs, ts, strict=True)]
    return ts if isinstance(out, (tuple, list)) else ts[0]


@pytest.mark.parametrize("name", TORCHED)
def test_tangents_match_torch_func_jvp(name, device):
    """Forward mode against PyTorch's (``torch.func.jvp`` of the op's torch oracle), with the same
    random tangents on every differentiable input."""
    op = REG[name]
    _tangents_against_torch(op, op.samples(np.random.default_rng(0)), device)


def _tangents_against_torch(op, samples, device):
    torch = pytest.importorskip("torch")
    from minigrad.autograd import forward_ad as fwAD

    name = op.name
    rng = np.random.default_rng(2)
    for sample in samples:
        xs = _inputs(sample, device)
        diff = [k for k, x in enumerate(xs) if isinstance(x, mg.Tensor) and x.requires_grad]
        if not diff:
            continue
        us = {k: _weights(rng, xs[k]) for k in diff}
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x.detach(), mg.tensor(us[k], device=device)) if k in us else x
                     for k, x in enumerate(xs)]
            out = _call(op, sample, device)(*duals)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            got = []
            for o in outs:
                t = fwAD.unpack_dual(o).tangent
                got.append(np.zeros(o.shape) if t is None else t.numpy())
        targs = _torch_args(xs, torch)

        def f(*prim, targs=targs, diff=diff, kwargs=sample.kwargs):
            args = list(targs)
            for k, p in zip(diff, prim, strict=True):
                args[k] = p
            return op.torch(torch, *_promoted(torch, args), **kwargs)

        want = _torch_jvp(torch, f, tuple(targs[k] for k in diff), tuple(torch.tensor(us[k]) for k in diff))
        want = want if isinstance(want, (tuple, list)) else (want,)
        np.testing.assert_allclose(_joined(got), _joined([w.detach().numpy() for w in want]), rtol=1e-9,
                                   atol=1e-12, err_msg=f"{name} {sample}: forward mode against torch.func.jvp")


# -- complex numbers: every op that takes them, on complex samples (its own, or derived from its real ones:
# Entry.complex_samples), in both modes to order 2 (gradcheck checks complex numbers as real pairs, the
# Wirtinger derivatives), and against PyTorch's values, gradients and tangents

COMPLEX = sorted(name for name in DIFF if REG[name].complex and REG[name].complex_samples(np.random.default_rng(0)))


def test_the_ops_numpy_defines_on_complex_numbers_take_them():
    """Every elementwise op NumPy defines on complex numbers, the reductions, products, shape, view,
    indexing and joining ops of issue 41, by their registry names."""
    want = {"add", "sub", "mul", "div", "pow", "neg", "exp", "log", "log1p", "sqrt", "sin", "cos", "tanh", "abs",
            "reciprocal", "square", "exp2", "expm1", "log2", "log10", "tan", "arcsin", "arccos", "arctan", "sinh",
            "cosh", "arcsinh", "arccosh", "arctanh", "float_power", "conj", "real", "imag", "angle", "positive",
            "sum", "mean", "prod", "cumsum", "matmul", "einsum", "reshape", "permute", "broadcast_to", "getitem",
            "concatenate", "stack", "transpose", "flatten", "squeeze", "view_as_real", "view_as_complex",
            "complex", "polar", "where", "index_put", "setitem"}
    assert not want - set(COMPLEX), sorted(want - set(COMPLEX))


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_gradcheck_both_modes_to_order_2(name, device):
    op = REG[name]
    _gradchecks(op, op.complex_samples(np.random.default_rng(0)), device)


@pytest.mark.parametrize("name", sorted(n for n in COMPLEX if REG[n].torch is not None))
def test_complex_values_gradients_and_tangents_match_torch(name, device):
    op = REG[name]
    _against_torch(op, op.complex_samples(np.random.default_rng(0)), device)
    _tangents_against_torch(op, op.complex_samples(np.random.default_rng(0)), device)


def test_a_new_elementwise_op_is_one_definition():
    """log1p was added as one row(..., family=UNARY) line in ops/elementwise.py: method, export, NumPy entry."""
    x = mg.tensor([1e-10, 0.5], dtype=mg.float64, requires_grad=True)
    y = x.log1p()
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), np.log1p([1e-10, 0.5]))
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.array([1e-10, 0.5])))
    assert REG["log1p"].export == "log1p" and "log1p" in REG["log1p"].method


UFUNC = sorted(name for name, op in REG.items() if getattr(op, "ufunc", None))


@pytest.mark.parametrize("name", UFUNC)
def test_an_ops_ufunc_is_its_forward(name):
    """``Op.ufunc`` says the forward is ``xp.<ufunc>``: apply calls that instead on NumPy arrays, and
    a replay (mg.compile) on any, so the two must give the same bits, on every sample, in float32
    and float64 (under MINIGRAD_DEVICE=fakecuda apply calls the forward: both are run)."""
    op = REG[name]
    xp = mg.backend.xp_for(mg.get_default_device())
    for sample in op.samples(np.random.default_rng(0)):
        for dt in (np.float32, np.float64):
            args = [mg.backend.to_device(a.astype(dt), mg.get_default_device()) if isinstance(a, np.ndarray) else a
                    for a in sample.args]
            want = op.forward(xp, *args, **sample.kwargs)
            got = getattr(xp, op.ufunc)(*args, **sample.kwargs)
            assert type(got) is type(want) and got.dtype == want.dtype
            assert mg.backend.to_numpy(got).tobytes() == mg.backend.to_numpy(want).tobytes()


def test_defop_refuses_a_differentiable_op_without_a_forward_mode_rule():
    """At definition, not when the registry test first runs it: the message names the op and the ways out."""
    from minigrad.ops._registry import defop

    with pytest.raises(TypeError, match=r"defop: op 'no_jvp_probe' has a gradient rule but no forward-mode rule.*linear_jvp"):
        defop("no_jvp_probe", lambda xp, x: x[::-1], lambda ctx, g: (g[::-1],), kind="other")
    assert "no_jvp_probe" not in mg.ops.registry()
