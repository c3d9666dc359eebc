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


# -- modes and orders --------------------------------------------------------------------------------

class Square(mg.autograd.Function):
    """x * x with both rules right (written with ops, so they differentiate again)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return 2 * x * u


class WrongJvp(Square):
    """Right backward, forward-mode rule off by a factor 1.5."""

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return 3 * x * u


class WrongBackward(Square):
    """Right forward-mode rule, backward off by a factor 1.5."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g


class DetachedCubeJ(DetachedCube):
    """Right first derivatives in both modes, written with constants: the second ones are lost."""

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return u * mg.tensor(3 * to_np(x) ** 2)


class Times4Cube(mg.autograd.Function):
    """4 x^3, whose rules are right to first order only (constants)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 4 * x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * mg.tensor(12 * to_np(x) ** 2)

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return u * mg.tensor(12 * to_np(x) ** 2)


class Quartic(mg.autograd.Function):
    """x^4, whose rules go through Times4Cube: right to second order, the third is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Times4Cube.apply(x)

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return u * Times4Cube.apply(x)


def test_both_modes_and_every_order_pass_on_right_derivatives():
    x, y = leaf((2, 3), 20), leaf((2, 3), 21)
    f = lambda a, b: (a * b).tanh() + a.exp() * b  # noqa: E731
    for order in (1, 2, 3):
        assert mg.gradcheck(f, (x, y), modes=("rev", "fwd"), order=order)
        assert mg.gradcheck(f, (x, y), modes=("rev", "fwd"), order=order, fast=True)
    assert mg.gradcheck(Square.apply, x, modes="fwd", order=3)
    assert mg.gradgradcheck(f, (x, y), modes=("fwd",))


def test_forward_mode_catches_a_wrong_jvp_and_says_where():
    x = leaf((2, 3), 22)
    assert mg.gradcheck(lambda a: WrongJvp.apply(a.sin()), x)  # the reverse mode is right
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(lambda a: WrongJvp.apply(a.sin()), x, modes=("rev", "fwd"))
    e = ei.value
    assert (e.mode, e.order, e.input, e.element) == ("fwd", 1, 0, (0, 0))
    msg = str(e)
    assert msg.startswith("op 'WrongJvp' (position 1 on the tape)")  # located: the op, in forward mode
    assert "mode fwd, order 1" in msg and "input 0" in msg and "element (0, 0)" in msg
    xa = to_np(x)[0, 0]
    assert e.analytic == pytest.approx(3 * np.sin(xa) * np.cos(xa))
    assert e.numeric == pytest.approx(2 * np.sin(xa) * np.cos(xa), rel=1e-6)
    assert mg.gradcheck(WrongJvp.apply, x, modes="fwd", raise_exception=False) is False
    assert mg.gradcheck(WrongJvp.apply, x, modes="fwd", fast=True, raise_exception=False) is False


def test_forward_mode_is_held_to_the_reverse_mode():
    """The JVP is right, the backward wrong: forward mode alone sees it through <u, Jᵀv> = <Ju, v>,
    says the reverse mode is the one that is wrong, and locate checks the ops in reverse mode."""
    x = leaf((3,), 23)
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(WrongBackward.apply, x, modes="fwd")
    msg = str(ei.value)
    assert "forward and reverse mode disagree (mode fwd, order 1)" in msg and "the reverse mode is wrong" in msg
    assert msg.startswith("op 'WrongBackward'") and "gradient of input 0 is wrong" in msg


def test_order_2_failures_name_the_mode_and_order():
    x = leaf((3,), 24)
    assert mg.gradcheck(DetachedCubeJ.apply, x, modes=("rev", "fwd"))  # first order is right
    for mode in ("rev", "fwd"):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(DetachedCubeJ.apply, x, modes=mode, order=2)
        e = ei.value
        assert (e.mode, e.order) == (mode, 2)
        msg = str(e)
        assert f"mode {mode}, order 2" in msg and "analytic" in msg and "numeric" in msg
        assert msg.startswith("op 'DetachedCubeJ'") and "derivative of order 2 is wrong" in msg
        assert e.analytic == 0.0  # the lost second derivative
    with pytest.raises(mg.GradcheckError, match="mode fwd, order 2"):
        mg.gradgradcheck(DetachedCubeJ.apply, x, modes=("fwd",))


def test_order_3_failures_name_the_mode_and_order():
    x = leaf((3,), 25)
    assert mg.gradcheck(Quartic.apply, x, modes=("rev", "fwd"), order=2)
    for mode in ("rev", "fwd"):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(Quartic.apply, x, modes=mode, order=3)
        assert (ei.value.mode, ei.value.order) == (mode, 3)
        assert f"mode {mode}, order 3" in str(ei.value)
        with pytest.raises(mg.GradcheckError, match=f"mode {mode}, order 3"):
            mg.gradcheck(Quartic.apply, x, modes=mode, order=3, fast=True)


def test_forward_orders_nest_dual_levels_without_the_reverse_mode():
    """DetachedCube's backward is right to first order only; its JVP is right to every order. The
    forward-mode check to order 2 passes: forward over forward never runs backward twice."""

    class CubeJ(DetachedCube):
        @staticmethod
        def jvp(ctx, u):
            (x,) = ctx.saved_tensors
            return 3 * x * x * u

    x = leaf((3,), 26)
    assert mg.gradcheck(CubeJ.apply, x, modes="fwd", order=3)
    assert mg.gradcheck(CubeJ.apply, x, modes="rev", order=2, raise_exception=False) is False


def test_fast_falls_back_to_the_full_check_for_the_message():
    x = leaf((2, 4), 27)
    for mode, fn in (("rev", WrongAt.apply), ("fwd", WrongJvp.apply)):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(fn, x, modes=mode, fast=True, locate=False)
        msg = str(ei.value)
        assert msg.startswith("gradcheck: Jacobian mismatch for input 0")  # the full check's message
        assert f"(mode {mode}, order 1)" in msg
        assert "element (" in msg and ei.value.element is not None
        assert "(the fast check failed first: gradcheck (fast)" in msg
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(WrongAt.apply, x, fast=True, locate=False)
    assert ei.value.element == (1, 2)


def test_modes_and_order_are_checked():
    x = leaf((2,), 28)
    with pytest.raises(ValueError, match="modes"):
        mg.gradcheck(lambda a: a * 2, x, modes=("reverse",))
    with pytest.raises(ValueError, match="order"):
        mg.gradcheck(lambda a: a * 2, x, order=4)


def test_forward_mode_with_several_outputs_constants_and_float32():
    x, y = leaf((2, 3), 29, dtype=np.float32), leaf((2, 3), 30)
    f = lambda a, k, b: (a.sin() * k, (a * b).sum(axis=0), a.argmax(axis=1))  # noqa: E731
    assert mg.gradcheck(f, (x, 2.5, y * 1.0), modes=("rev", "fwd"), order=2)
    assert x.dtype == np.float32


def test_a_missing_forward_mode_rule_is_named():
    class NoJvp(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(RuntimeError, match="NoJvp"):
        mg.gradcheck(NoJvp.apply, leaf((2,), 31), modes="fwd")


def test_sparse_inputs_in_forward_mode():
    """Sparse inputs carry tangents on their stored values only (as they are perturbed)."""
    s = mg.sparse.coo_tensor([[0, 1, 1], [1, 0, 2]], mg.tensor([2.0, 3.0, -1.0], dtype="float64"), (2, 3),
                             requires_grad=True)
    w = leaf((3, 2), 32)
    assert mg.gradcheck(lambda a, b: mg.sparse.matmul(a, b), (s, w), modes=("rev", "fwd"), order=2)


def test_order_2_holds_a_rules_tensor_path_to_its_array_path():
    """A registered op's rule runs on arrays in first order and on Tensors when differentiated again.
    Order 2 evaluates the first derivative on arrays for its finite differences and on Tensors for
    its analytic side, so a rule whose two paths disagree fails there (in each mode)."""
    from minigrad.autograd import forward_ad as fwAD
    from minigrad.engine import TENSORS, Op, run_op

    def rule(ctx, g):
        (x,) = ctx.saved
        return ((3 if ctx.xp is TENSORS else 2) * x * g,)

    def jvp(ctx, u):
        (x,) = ctx.args
        return (3 if ctx.xp is TENSORS else 2) * x * u

    rev_wrong = Op("square_rev_two_ways", lambda xp, x: x * x, rule, save=(0,), jvp=fwAD.linear_jvp(0))
    fwd_wrong = Op("square_fwd_two_ways", lambda xp, x: x * x, lambda ctx, g: (2 * ctx.saved[0] * g,), save=(0,),
                   jvp=jvp)
    x = leaf((3,), 33)
    for op, mode in ((rev_wrong, "rev"), (fwd_wrong, "fwd")):
        assert mg.gradcheck(lambda a, op=op: run_op(op, a), x, modes=mode)  # order 1 (arrays) is right
        for fast in (False, True):
            with pytest.raises(mg.GradcheckError, match=f"mode {mode}, order 2") as ei:
                mg.gradcheck(lambda a, op=op: run_op(op, a), x, modes=mode, order=2, fast=fast)
            assert str(ei.value).startswith(f"op '{op.name}'")


# -- mixed compositions: both modes from order 2 -----------------------------------------------------

def _compositions_checked(monkeypatch):
    """Record the composition (outermost mode first) of every check gradcheck runs."""
    import sys

    gc = sys.modules["minigrad.gradcheck"]
    seen = []
    check = gc._check

    def recording(s, mode, *rest):
        seen.append(s.composition(mode))
        return check(s, mode, *rest)

    monkeypatch.setattr(gc, "_check", recording)
    return seen


def test_both_modes_check_the_four_compositions_of_order_2(monkeypatch):
    """sin, x * y and matmul pass rev over rev, fwd over rev, rev over fwd and fwd over fwd; one mode
    alone checks only that mode over itself, as before."""
    seen = _compositions_checked(monkeypatch)
    x, y = leaf((2, 3), 40), leaf((2, 3), 41)
    w = leaf((3, 4), 42)
    cases = [(mg.sin, (x,)), (lambda a, b: a * b, (x, y)), (lambda a, b: a @ b, (x, w))]
    for fn, xs in cases:
        for fast in (False, True):
            seen.clear()
            assert mg.gradcheck(fn, xs, modes=("rev", "fwd"), order=2, fast=fast)
            assert seen == [("rev",), ("fwd",),
                            ("rev", "rev"), ("fwd", "rev"), ("rev", "fwd"), ("fwd", "fwd")]
    for mode in ("rev", "fwd"):
        seen.clear()
        assert mg.gradcheck(mg.sin, x, modes=mode, order=2)
        assert seen == [(mode,), (mode, mode)]
    seen.clear()
    assert mg.gradgradcheck(lambda a, b: a * b, (x, y), modes=("rev", "fwd"), grad_outputs=mg.tensor(np.ones((2, 3))))
    assert len(seen) == 6


class DropsTangentInBackward(Square):
    """x * x whose backward reads x's primal, without its tangent: right to first order, and
    differentiated again in reverse (no dual level is open there), but the tangent of its gradient
    (fwd over rev: what hvp and hessian compute) loses x's part."""

    @staticmethod
    def backward(ctx, g):
        from minigrad.autograd import forward_ad as fwAD

        (x,) = ctx.saved_tensors
        return 2 * fwAD.unpack_dual(x).primal * g


class UnrecordedJvp(Square):
    """x * x whose JVP runs under no_grad: right in forward mode to every order (tangents pass
    through no_grad), but the reverse mode of the JVP (rev over fwd) sees a constant."""

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        with mg.no_grad():
            return 2 * x * u


def test_a_rule_wrong_only_in_fwd_over_rev_is_caught_and_named():
    x = leaf((3,), 43)
    assert mg.gradcheck(DropsTangentInBackward.apply, x, modes="rev", order=2)   # rev over rev
    assert mg.gradcheck(DropsTangentInBackward.apply, x, modes="fwd", order=2)   # fwd over fwd (+ rev over fwd)
    for fast in (False, True):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(DropsTangentInBackward.apply, x, modes=("rev", "fwd"), order=2, fast=fast)
        e = ei.value
        assert (e.mode, e.order, e.composition, e.input, e.element) == ("fwd", 2, ("fwd", "rev"), 0, (0,))
        msg = str(e)
        assert "Jacobian mismatch for input 0" in msg and "element (0,)" in msg
        assert "(mode fwd, order 2, fwd over rev)" in msg
        assert "in forward mode, the reverse-mode derivative of order 1" in msg
        # located: the op alone, along the same composition
        assert msg.startswith("op 'DropsTangentInBackward' (position 0 on the tape)")
        assert "derivative of order 2 is wrong (fwd over rev)" in msg.splitlines()[0]
        assert e.analytic == 0.0 and abs(e.numeric) > 1e-3  # x's part of the tangent of 2 x g is lost
    assert mg.gradcheck(DropsTangentInBackward.apply, x, modes=("rev", "fwd"), order=2,
                        raise_exception=False) is False


def test_a_rule_wrong_only_in_rev_over_fwd_is_caught_and_named():
    x = leaf((3,), 44)
    assert mg.gradcheck(UnrecordedJvp.apply, x, modes="rev", order=2)
    for fast in (False, True):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(UnrecordedJvp.apply, x, modes=("rev", "fwd"), order=2, fast=fast)
        e = ei.value
        assert (e.mode, e.order, e.composition, e.input) == ("rev", 2, ("rev", "fwd"), 0)
        assert "(mode rev, order 2, rev over fwd)" in str(e)
        assert str(e).startswith("op 'UnrecordedJvp'") and "(rev over fwd)" in str(e).splitlines()[0]
    # forward mode alone sees it too, through <u, Jᵀv> = <Ju, v>: it names the reverse composition
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(UnrecordedJvp.apply, x, modes="fwd", order=2)
    e = ei.value
    assert (e.mode, e.suspect, e.composition) == ("fwd", "rev", ("fwd", "fwd"))
    assert "forward and reverse mode disagree (mode fwd, order 2, fwd over fwd)" in str(e)
    assert "(reverse mode, rev over fwd)" in str(e)
    # locate checks the op alone along rev over fwd (the suspect outermost), not rev over rev
    assert str(e).startswith("op 'UnrecordedJvp'") and "(rev over fwd)" in str(e).splitlines()[0]


def test_each_planted_rule_fails_its_own_composition():
    """Four rules, four compositions: the first composition that fails names the rule's fault."""
    x = leaf((3,), 45)
    want = {DetachedCubeJ: ("rev", "rev"), DropsTangentInBackward: ("fwd", "rev"),
            UnrecordedJvp: ("rev", "fwd"), WrongJvp: ("fwd",), WrongBackward: ("rev",)}
    for cls, comp in want.items():
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(cls.apply, x, modes=("rev", "fwd"), order=2, locate=False)
        assert ei.value.composition == comp, cls.__name__
        assert ei.value.composition[0] == ei.value.mode and ei.value.order == len(comp)


def test_order_1_errors_carry_a_composition_of_one_mode():
    x = leaf((2, 4), 46)
    with pytest.raises(mg.GradcheckError) as ei:
        mg.gradcheck(WrongAt.apply, x, locate=False)
    assert ei.value.composition == ("rev",)
    assert " over " not in str(ei.value)


def test_order_3_with_both_modes_checks_the_eight_compositions(monkeypatch):
    seen = _compositions_checked(monkeypatch)
    x, y = leaf((2,), 47), leaf((2,), 48)
    assert mg.gradcheck(lambda a, b: (a * b).sin(), (x, y), modes=("rev", "fwd"), order=3)
    third = [c for c in seen if len(c) == 3]
    assert len(seen) == 2 + 4 + 8 and len(set(third)) == 8
    assert third[:4] == [("rev", "rev", "rev"), ("fwd", "rev", "rev"), ("rev", "fwd", "fwd"), ("fwd", "fwd", "fwd")]
    seen.clear()
    assert mg.gradcheck(lambda a, b: (a * b).sin(), (x, y), modes=("rev", "fwd"), order=3, fast=True)
    assert len(seen) == 14


class CubeThroughDroppedTangent(mg.autograd.Function):
    """x^3 whose rules call DropsTangentInBackward (x * x): right to order 2 in every composition; at
    order 3, the one that runs that op's backward inside a dual level (fwd over rev over rev) is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * DropsTangentInBackward.apply(x)

    @staticmethod
    def jvp(ctx, u):
        (x,) = ctx.saved_tensors
        return 3 * u * DropsTangentInBackward.apply(x)


def test_order_3_names_a_mixed_composition():
    x = leaf((3,), 49)
    assert mg.gradcheck(CubeThroughDroppedTangent.apply, x, modes=("rev", "fwd"), order=2)
    for mode in ("rev", "fwd"):
        assert mg.gradcheck(CubeThroughDroppedTangent.apply, x, modes=mode, order=3)
    for fast in (False, True):
        with pytest.raises(mg.GradcheckError) as ei:
            mg.gradcheck(CubeThroughDroppedTangent.apply, x, modes=("rev", "fwd"), order=3, fast=fast)
        e = ei.value
        assert (e.mode, e.order, e.composition) == ("fwd", 3, ("fwd", "rev", "rev"))
        assert "(mode fwd, order 3, fwd over rev over rev)" in str(e)
        # the op on fn's tape is the cube (the x * x inside its rules is not on it), checked alone along the path
        assert str(e).startswith("op 'CubeThroughDroppedTangent'")
        assert "derivative of order 3 is wrong (fwd over rev over rev)" in str(e).splitlines()[0]
