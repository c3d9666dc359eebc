"""mg.autograd.check_ops and gradcheck(locate=True): a wrong rule is located exactly (op name,
position on the tape, file:line of the test's own code); a correct graph of many registered ops
passes. On the default device (CPU, or fakecuda with MINIGRAD_DEVICE=fakecuda)."""
import os

import numpy as np
import pytest
from conftest import leaf

import minigrad as mg
from conftest import line_of as _line_of
from test_gradcheck import WrongJvp  # x * x, its gradient right, its tangent 3 x u

HERE = os.path.abspath(__file__)


def line_of(marker):
    return _line_of(marker, HERE)


class WrongFactor(mg.autograd.Function):
    """x * x with 3 x g as its gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g


class Transposed(mg.autograd.Function):
    """x @ w (square w) whose gradient for x uses w instead of w.T."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, x.T @ g


class NoBroadcastSum(mg.autograd.Function):
    """x + b with b (1, n) broadcast over the rows; the gradient for b takes one row of g
    instead of summing the rows."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, g):
        return g, g[:1]


def deep(x, w1, w2, b, bad=None):
    """About 30 ops; ``bad`` (a Function and how to call it) is planted in the middle."""
    h = (x @ w1 + b).tanh()                         # matmul, add, tanh
    h = h * h.sigmoid() + 0.5 * h                   # sigmoid, mul, mul, add
    h = h.reshape(h.shape[0], -1).T.T               # reshape, transpose x2
    if bad == "factor":
        h = WrongFactor.apply(h)  # BUG-factor
    elif bad == "transposed":
        h = Transposed.apply(h, w2)  # BUG-transposed
    elif bad == "broadcast":
        h = NoBroadcastSum.apply(h, b)  # BUG-broadcast
    h = mg.concatenate([h, h.exp() / 3], axis=1)    # exp, div, concatenate
    h = h.softmax(-1) + h.log_softmax(-1).exp()     # softmax, log_softmax, exp, add
    h = (h - h.mean(axis=0)) ** 2                   # mean (sum, div), sub, pow
    h = mg.log1p(h + 1.0).sqrt()                    # add, log1p, sqrt
    h = mg.maximum(h, h.sin() * 0.1)                # sin, mul, maximum
    h = h[:, 1:] * h[:, :-1]                        # getitem x2, mul
    # logsumexp, sum, abs, var (mean, sub, pow, ...), add, mul, max (of x: no near-ties), add
    return h.logsumexp(axis=1).sum() + h.abs().var() + (x * 1.5).max()


def inputs(seed=0):
    return (leaf((3, 4), seed=seed), leaf((4, 4), seed=seed + 1, scale=0.5),
            leaf((4, 4), seed=seed + 2, scale=0.5), leaf((1, 4), seed=seed + 3))


def test_correct_graph_of_registered_ops_passes():
    xs = inputs()
    report = mg.autograd.check_ops(deep, *xs)
    assert report.ok, str(report)
    assert report.first_failure is None and report.failures == []
    ops = {r.op for r in report.rows}
    assert len(ops) >= 20, ops
    assert {"matmul", "tanh", "softmax", "log_softmax", "concatenate", "maximum", "logsumexp"} <= ops
    assert not any(r.skipped for r in report.rows), [r for r in report.rows if r.skipped]
    assert all(r.file == HERE for r in report.rows)
    tape = mg.autograd.tape(deep(*xs))
    assert len({r.position for r in report.rows}) == len(tape) >= 28
    for r in report.rows:
        assert tape[r.position].op == r.op
    text = str(report)
    assert "matmul" in text and "all agree" in text and "test_check_ops.py" in text


@pytest.mark.parametrize("bad,name,input_index", [
    ("factor", "WrongFactor", 0), ("transposed", "Transposed", 0), ("broadcast", "NoBroadcastSum", 1),
])
def test_a_planted_wrong_rule_is_located_exactly(bad, name, input_index):
    xs = inputs()
    fn = lambda *a: deep(*a, bad=bad)  # noqa: E731
    report = mg.autograd.check_ops(fn, *xs)
    assert not report.ok
    row = report.first_failure
    assert [r.op for r in report.failures] == [name]       # nothing else is blamed
    assert row.op == name and row.input == input_index
    assert (row.file, row.line) == (HERE, line_of(f"BUG-{bad}"))
    assert mg.autograd.tape(fn(*xs))[row.position].op == name
    assert row.abs_err > 1e-3 and not row.ok
    assert abs(row.analytic - row.numeric) == pytest.approx(row.abs_err)
    # the input the rule gets right is reported right
    others = [r for r in report.rows if r.op == name and r.input != input_index]
    assert all(r.ok for r in others)
    assert "FAIL" in str(report) and name in str(report)


@pytest.mark.parametrize("bad,name", [("factor", "WrongFactor"), ("transposed", "Transposed"),
                                      ("broadcast", "NoBroadcastSum")])
def test_gradcheck_message_begins_with_the_located_op(bad, name):
    xs = inputs()
    fn = lambda *a: deep(*a, bad=bad)  # noqa: E731
    position = [n.op for n in mg.autograd.tape(fn(*xs))].index(name)
    with pytest.raises(mg.GradcheckError) as e:
        mg.gradcheck(fn, xs)
    msg = str(e.value)
    where = f"{os.path.relpath(HERE)}:{line_of(f'BUG-{bad}')}"
    assert msg.startswith(f"op '{name}' (position {position} on the tape) at {where}: gradient of input"), msg
    assert "Jacobian mismatch" in msg.splitlines()[1]       # the original message follows
    if bad == "factor":  # one random direction catches this one (not necessarily the others)
        with pytest.raises(mg.GradcheckError) as e:
            mg.gradcheck(fn, xs, fast=True)
        assert str(e.value).startswith(f"op '{name}'")
    with pytest.raises(mg.GradcheckError) as e:
        mg.gradcheck(fn, xs, locate=False)
    assert str(e.value).startswith("gradcheck: Jacobian mismatch")
    assert mg.gradcheck(fn, xs, raise_exception=False) is False


def test_float32_inputs_are_checked_in_float64():
    x = mg.randn(3, 3, requires_grad=True, seed=0)  # the default dtype
    report = mg.autograd.check_ops(lambda a: (a @ a).tanh().sum(), x)
    assert report.ok and x.dtype == mg.float32
    assert all(r.node.out_meta[1] == np.float64 for r in report.rows)


def test_several_outputs_constants_and_unused_inputs():
    x, y = leaf((2, 3)), leaf((2, 3), seed=1)
    c = mg.tensor(np.linspace(0.5, 1.0, 6).reshape(2, 3))  # needs no grad: a constant operand
    report = mg.autograd.check_ops(lambda a, b, k: ((a * k).exp(), a + 2.0), x, y, c)
    assert report.ok
    assert [(r.op, r.input) for r in report.rows] == [("mul", 0), ("exp", 0), ("add", 0)]
    assert mg.autograd.check_ops(lambda a: a.sum(), mg.tensor([1.0, 2.0])).rows == []  # nothing to check


def test_a_function_with_several_outputs_and_keyword_arguments():
    class SplitScale(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x, *, k=2.0):
            ctx.k = k
            return x * k, x.exp()

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * ctx.k + g2 * 0  # wrong for the second output

    x = leaf((3,))
    report = mg.autograd.check_ops(lambda a: sum(o.sum() for o in SplitScale.apply(a, k=3.0)), x)
    assert [r.op for r in report.failures] == ["SplitScale"]


def test_sparse_ops_are_checked_like_any_other():
    values = leaf((3,))
    s = mg.sparse.coo_tensor([[0, 1, 2], [1, 0, 2]], values, (3, 3))
    dense = leaf((3, 2), seed=1)

    def fn(v, d):
        sp = mg.sparse.coo_tensor([[0, 1, 2], [1, 0, 2]], v, (3, 3))
        return (mg.sparse.matmul(sp, d).tanh().sum() + mg.sparse.sum(sp, axis=0).to_dense().exp().sum())

    assert s.shape == (3, 3)
    report = mg.autograd.check_ops(fn, values, dense)
    assert report.ok, str(report)
    assert not any(r.skipped for r in report.rows), str(report)
    assert len(report.rows) >= 4


def test_forward_mode_rules_are_checked_alone():
    x = leaf((2, 3), 40)

    def f(a):
        h = a.sin() * a
        return WrongJvp.apply(h).exp()  # jvp-marker

    assert mg.autograd.check_ops(f, x).ok  # every gradient rule is right
    report = mg.autograd.check_ops(f, x, mode="fwd")
    bad = report.first_failure
    assert (bad.op, bad.position, bad.line, bad.mode) == ("WrongJvp", 2, line_of("jvp-marker"), "fwd")
    assert bad.rel_err == pytest.approx(0.5, rel=1e-4)
    assert "forward-mode derivative (JVP) of input 0 is wrong" in bad.describe()
    assert [r.op for r in report.rows if r.ok] == ["sin", "mul", "mul", "exp"]
    with pytest.raises(ValueError, match="mode"):
        mg.autograd.check_ops(f, x, mode="forward")
