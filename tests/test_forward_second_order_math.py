"""Forward mode to second order for the ops whose JVP is written out rather than derived (the
reductions and scans, the losses, np.linalg), from each op's registry samples, in float64 on the
device under test, against central differences of first-order results:

- the JVP on backend arrays (inputs that need no gradient: the rule's first-order path; the
  registry-wide test in test_forward_mode.py runs it on Tensors);
- forward over forward: the tangent of the inner level's tangent, D²f[u, w], against the
  difference of the first-order JVP along ``u``;
- forward over reverse: the tangent of a gradient (a Hessian-vector product), against the
  difference of the gradient along ``u``.

The second-order checks run the rules on Tensors, so they also exercise the forward-mode rules of
the ops those rules call (reshape, permute, matmul...), and, forward over reverse, a rule that
reads its output (``ctx.out``) sees that output with its tangents.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import forward_ad as fwAD
from test_registry import REG, _call, _inputs

OURS = ["std", "max", "min", "logsumexp", "softmax", "log_softmax", "prod", "cumsum", "cumprod",
        "nll_loss", "nll_loss_backward", "binary_cross_entropy_with_logits", "cross_entropy", "cross_entropy_backward",
        "inv", "det", "logabsdet", "solve", "cholesky", "eigvalsh", "eigh_vectors", "qr_q", "qr_r",
        "svdvals", "svd_u", "svd_vh"]
EPS = 1e-5


def _cases(name, device, requires_grad):
    """(fn, inputs, positions of the differentiable ones) per sample of ``name``."""
    op = REG[name]
    for sample in op.samples(np.random.default_rng(0)):
        xs = _inputs(sample, device)
        diff = [i for i, x in enumerate(xs) if isinstance(x, mg.Tensor) and x.requires_grad]
        if not diff:
            continue
        if not requires_grad:
            xs = [x.detach() if isinstance(x, mg.Tensor) else x for x in xs]
        yield sample, _call(op, sample, device), xs, diff


def _randn(rng, x, device):
    return mg.tensor(rng.standard_normal(x.shape), device=device)


def _shift(xs, diff, us, s):
    out = list(xs)
    for i, u in zip(diff, us, strict=True):
        out[i] = xs[i].detach() + s * u
    return out


def _jvp(fn, xs, diff, ws):
    """The first-order JVP of ``fn`` at ``xs`` along ``ws`` (on arrays when ``xs`` need no gradient)."""
    with fwAD.dual_level():
        p, t = fwAD.unpack_dual(fn(*_duals(xs, diff, ws)))
        return (mg.zeros_like(p) if t is None else t).numpy()


def _duals(xs, diff, us):
    out = list(xs)
    for i, u in zip(diff, us, strict=True):
        out[i] = fwAD.make_dual(xs[i], u)
    return out


def _fof(fn, xs, diff, us, ws):
    """D²f[u, w]: the tangent (level outside) of the tangent (level inside)."""
    with fwAD.dual_level():
        outer = _duals(xs, diff, us)
        with fwAD.dual_level():
            p, t = fwAD.unpack_dual(fn(*_duals(outer, diff, ws)))
        assert t is not None
        tt = fwAD.unpack_dual(t).tangent
        return np.zeros(p.shape) if tt is None else tt.numpy()


def _hvp(fn, xs, diff, us, v):
    """The tangent of the gradient of <f, v>: the Hessian of <f, v> applied to u."""
    with fwAD.dual_level():
        duals = _duals(xs, diff, us)
        gs = mg.grad((fn(*duals) * v).sum(), [duals[i] for i in diff], allow_unused=True)
        out = []
        for i, g in zip(diff, gs, strict=True):
            t = None if g is None else fwAD.unpack_dual(g).tangent
            out.append(np.zeros(xs[i].shape) if t is None else t.numpy())
        return out


@pytest.mark.parametrize("name", OURS)
def test_jvp_on_arrays_matches_finite_differences(name, device):
    rng = np.random.default_rng(1)
    for sample, fn, xs, diff in _cases(name, device, requires_grad=False):
        us = [_randn(rng, xs[i], device) for i in diff]
        t = _jvp(fn, xs, diff, us)
        with mg.no_grad():
            num = (fn(*_shift(xs, diff, us, EPS)).numpy() - fn(*_shift(xs, diff, us, -EPS)).numpy()) / (2 * EPS)
        np.testing.assert_allclose(t, num, rtol=1e-5, atol=1e-6, err_msg=f"{name} {sample}")


@pytest.mark.parametrize("name", OURS)
def test_forward_over_forward(name, device):
    rng = np.random.default_rng(2)
    for sample, fn, xs, diff in _cases(name, device, requires_grad=False):
        us = [_randn(rng, xs[i], device) for i in diff]
        ws = [_randn(rng, xs[i], device) for i in diff]
        got = _fof(fn, xs, diff, us, ws)
        plus, minus = _jvp(fn, _shift(xs, diff, us, EPS), diff, ws), _jvp(fn, _shift(xs, diff, us, -EPS), diff, ws)
        num = (plus - minus) / (2 * EPS)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6, err_msg=f"{name} {sample}")


def _grads_at(fn, xs, diff, us, s, v):
    shifted = _shift(xs, diff, us, s)
    for i in diff:
        shifted[i] = shifted[i].requires_grad_()
    gs = mg.grad((fn(*shifted) * v).sum(), [shifted[i] for i in diff], allow_unused=True)
    return [np.zeros(xs[i].shape) if g is None else g.detach().numpy() for i, g in zip(diff, gs, strict=True)]


@pytest.mark.parametrize("name", OURS)
def test_forward_over_reverse(name, device):
    rng = np.random.default_rng(3)
    for sample, fn, xs, diff in _cases(name, device, requires_grad=True):
        us = [_randn(rng, xs[i], device) for i in diff]
        with mg.no_grad():
            v = _randn(rng, fn(*xs), device)
        got = _hvp(fn, xs, diff, us, v)
        plus, minus = _grads_at(fn, xs, diff, us, EPS, v), _grads_at(fn, xs, diff, us, -EPS, v)
        for g, p, m in zip(got, plus, minus, strict=True):
            np.testing.assert_allclose(g, (p - m) / (2 * EPS), rtol=1e-5, atol=1e-6, err_msg=f"{name} {sample}")
