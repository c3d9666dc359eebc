"""gradcheck and gradgradcheck themselves: they pass on right gradients, catch wrong ones,
and say where."""
import numpy as np
import pytest

import minigrad as mg
from conftest import leaf, to_np


class WrongAt(mg.autograd.Function):
    """x * x with a backward that is wrong at element (1, 2) only."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        bump = np.zeros(x.shape)
        bump[1, 2] = 1.0
        return g * 2 * x + g * mg.tensor(bump)


class DetachedCube(mg.autograd.Function):
    """Right first derivative, but written with a constant: its second derivative is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * mg.tensor(3 * to_np(x) ** 2)


def test_passes_on_right_gradients():
    x, y = leaf((2, 3), 1), leaf((3,), 2)
    assert mg.gradcheck(lambda a, b: (a * b).tanh(), (x, y)) is True
    assert mg.gradcheck(lambda a, b: (a * b).tanh(), [x, y], fast=True) is True
    assert mg.gradgradcheck(lambda a, b: (a * b).tanh(), (x, y)) is True
    assert mg.gradgradcheck(lambda a, b: (a * b).tanh(), (x, y), fast=True) is True


def test_single_tensor_and_passthrough_inputs():
    x = leaf((3,), 3)
    assert mg.gradcheck(lambda a: a.exp(), x)
    assert mg.gradcheck(lambda a, k, c: a * k + c, (x, 2.5, mg.tensor(np.ones(3))))
    assert mg.gradcheck(lambda a, axis: a.logsumexp(axis=axis), (leaf((2, 3), 4), 1))


def test_multiple_outputs_and_non_differentiable_outputs():
    x = leaf((2, 3), 5)
    assert mg.gradcheck(lambda a: (a.exp(), a.sum(axis=0)), x)
    assert mg.gradcheck(lambda a: (a.sin(), a.argmax(axis=1)), x)
    assert mg.gradgradcheck(lambda a: (a.exp(), (a * a).sum(axis=0)), x)


def test_zero_size_and_0d_inputs():
    assert mg.gradcheck(lambda a: a * 2, leaf((0, 3)))
    assert mg.gradcheck(lambda a: a.exp() * a, leaf(()))
    assert mg.gradgradcheck(lambda a: a.exp() * a, leaf(()))


def test_float32_inputs_are_checked_in_float64():
    x = leaf((3,), 6, dtype=np.float32)
    seen = []

    def f(a):
        seen.append(a.dtype)
        return (a * a).sum()

    assert mg.gradcheck(f, x)
    assert set(seen) == {np.dtype(np.float64)}
    assert x.dtype == np.float32  # the caller's tensor is untouched


def test_inputs_are_restored():
    x = leaf((2, 3), 7)
    before = to_np(x).copy()
    mg.gradcheck(lambda a: a.exp(), x)
    mg.gradcheck(lambda a: a.exp(), x, fast=True)
    np.testing.assert_array_equal(to_np(x), before)
    assert x.grad is None


def test_catches_a_wrong_gradient_and_says_where():
    x = leaf((2, 4), 8)
    c = leaf((3,), 9)
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(lambda k, a: WrongAt.apply(a) + k.sum(), (c, x))
    msg = str(ei.value)
    assert "input 1" in msg                 # which input
    assert "(1, 2)" in msg                  # which element
    assert "analytic" in msg and "numeric" in msg
    xa = to_np(x)[1, 2]
    # the analytic value printed is 2x + 1, the numeric one 2x
    nums = [float(t.rstrip(",")) for t in msg.replace("(", " ").replace(")", " ").split()
            if t.rstrip(",").lstrip("-").replace(".", "", 1).replace("e-", "", 1).isdigit()]
    assert any(abs(v - (2 * xa + 1)) < 1e-6 for v in nums)
    assert any(abs(v - 2 * xa) < 1e-4 for v in nums)


def test_error_is_a_runtime_error_and_minigrad_error():
    assert issubclass(mg.GradcheckError, RuntimeError)
    assert issubclass(mg.GradcheckError, mg.MinigradError)


def test_raise_exception_false_returns_false():
    x = leaf((2, 3), 10)
    assert mg.gradcheck(WrongAt.apply, x, raise_exception=False) is False
    assert mg.gradcheck(WrongAt.apply, x, raise_exception=False, fast=True) is False


def test_fast_mode_catches_a_wrong_gradient():
    x = leaf((2, 3), 11)
    with pytest.raises(mg.GradcheckError, match="analytic"):
        mg.gradcheck(WrongAt.apply, x, fast=True)


def test_gradgradcheck_catches_a_lost_second_derivative():
    x = leaf((3,), 12)
    assert mg.gradcheck(DetachedCube.apply, x)  # first order is right
    with pytest.raises(mg.GradcheckError):
        mg.gradgradcheck(DetachedCube.apply, x)
    assert mg.gradgradcheck(DetachedCube.apply, x, raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs():
    x = leaf((2, 3), 13)
    v = mg.tensor(np.ones((2, 3)))
    assert mg.gradgradcheck(lambda a: a.sin() * a, x, grad_outputs=v)
    assert mg.gradgradcheck(lambda a: a.sin() * a, x, grad_outputs=[v])


def test_tolerances_and_eps_are_used():
    x = leaf((3,), 14)
    # a deliberately huge step makes the central difference of exp visibly off
    with pytest.raises(mg.GradcheckError):
        mg.gradcheck(lambda a: a.exp() * 100, x, eps=0.5, atol=1e-5, rtol=1e-5)
    assert mg.gradcheck(lambda a: a.exp() * 100, x, eps=0.5, atol=1e3, rtol=1.0)


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="requires grad"):
        mg.gradcheck(lambda a: a * 2, mg.tensor(np.ones(2)))
