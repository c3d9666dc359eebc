"""Forward mode's machinery: dual levels (nesting, threads, their end), make_dual's checks, writes
through views, autograd.Function's jvp. Every registry op's forward-mode rule is checked, in both
modes and to second order, by tests/test_registry.py."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import forward_ad as fwAD
from conftest import to_np

def test_forward_over_forward_and_forward_over_reverse():
    x = mg.tensor([0.3, 0.7], dtype=mg.float64)
    one = mg.ones_like(x)
    with fwAD.dual_level():
        a = fwAD.make_dual(x, one)
        with fwAD.dual_level():
            y = mg.sin(fwAD.make_dual(a, one))
            _, t1 = fwAD.unpack_dual(y)
        _, t2 = fwAD.unpack_dual(t1)
    np.testing.assert_allclose(t1.numpy(), np.cos(x.numpy()))
    np.testing.assert_allclose(t2.numpy(), -np.sin(x.numpy()))
    x = mg.tensor([0.3, 0.7], dtype=mg.float64, requires_grad=True)
    v = mg.tensor([1.0, 2.0], dtype=mg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        (g,) = mg.grad((d ** 3).sum(), d)
        _, hv = fwAD.unpack_dual(g)
    np.testing.assert_allclose(hv.numpy(), 6 * x.detach().numpy() * v.numpy())


def test_make_dual_checks_and_levels():
    x = mg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no dual level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="shape"):
            fwAD.make_dual(x, mg.tensor([1.0]))
        with pytest.raises(TypeError, match="dtype"):
            fwAD.make_dual(x, mg.tensor([1.0, 2.0], dtype=mg.float64))
        d = fwAD.make_dual(x, mg.tensor([1.0, 1.0]))
        assert fwAD.unpack_dual(d).tangent is not None
    assert fwAD.unpack_dual(d).tangent is None  # dropped with its level


def test_in_place_write_through_a_view_updates_the_base_tangent():
    x = mg.tensor([1.0, 2.0, 3.0, 4.0], dtype=mg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), mg.tensor([1.0, 1.0, 1.0, 1.0], dtype=mg.float64))
        d[1:3] *= 3.0
        _, t = fwAD.unpack_dual(d)
        np.testing.assert_allclose(t.numpy(), [1.0, 3.0, 3.0, 1.0])
        b = mg.zeros(4, dtype=mg.float64)
        b[2:] = d[:2] * 2
        np.testing.assert_allclose(fwAD.unpack_dual(b).tangent.numpy(), [0.0, 0.0, 2.0, 6.0])


def test_a_function_without_jvp_is_named():
    class Cube(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class CubeJ(Cube):
        @staticmethod
        def jvp(ctx, u):
            (x,) = ctx.saved_tensors
            return 3 * x * x * u

    x = mg.tensor([2.0], dtype=mg.float64)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Cube"):
            Cube.apply(fwAD.make_dual(x, mg.ones_like(x)))
        y = CubeJ.apply(fwAD.make_dual(x, mg.ones_like(x)))
        assert float(fwAD.unpack_dual(y).tangent.item()) == 12.0


def test_a_view_taken_before_its_base_was_written_reads_the_base_tangent():
    x = mg.tensor([1.0, 2.0], dtype=mg.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, mg.tensor([1.0, 10.0], dtype=mg.float64))
        y = mg.zeros(4, dtype=mg.float64)
        w = y[0:2]
        y[1:3] = d * 3
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [0.0, 3.0, 30.0, 0.0])
        np.testing.assert_allclose(fwAD.unpack_dual(w * 1).tangent.numpy(), [0.0, 3.0])


def test_import_as_pytorch_users_write_it():
    import minigrad.autograd.forward_ad as fw  # noqa: PLC0415 - the import is what is tested

    assert fw is fwAD and fw.dual_level is mg.autograd.forward_ad.dual_level


def test_dual_levels_are_per_thread():
    import threading  # noqa: PLC0415

    x = mg.tensor([1.0, 2.0], dtype=mg.float64)
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        y = mg.sin(x)  # this thread has no dual level: nothing is carried, nothing raises
        seen["fw"] = y._tangents
        seen["unpack"] = fwAD.unpack_dual(y).tangent
        done.set()

    th = threading.Thread(target=other)
    th.start()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, mg.ones_like(x))
        inside.set()
        done.wait()
        assert fwAD.unpack_dual(mg.sin(d)).tangent is not None
    th.join()
    assert seen == {"fw": None, "unpack": None}


# -- no conversion drops a tangent silently ---------------------------------------------------------


@pytest.mark.parametrize("convert", [
    lambda x, y: np.r_[x, y], lambda x, y: np.c_[x, y], lambda x, y: np.asarray(x), lambda x, y: np.array(y),
    lambda x, y: x.numpy(), lambda x, y: mg.tensor([x[0], y[1]])],
    ids=["r_", "c_", "asarray", "array", "numpy", "tensor_of_list"])
def test_a_tensor_with_a_tangent_refuses_numpy_conversion(convert):
    """As a tensor that requires grad does: the error names the level and what to write instead."""
    x, y = mg.tensor([0.5, 1.0], dtype=mg.float64), mg.tensor([2.0, 3.0], dtype=mg.float64)
    with pytest.raises((RuntimeError, TypeError), match=r"tangent \(forward mode, dual level \d+\).*unpack_dual"):
        mg.func.jvp(convert, (x, y), (mg.ones_like(x), mg.ones_like(y)))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, mg.ones_like(x))
        assert to_np(fwAD.unpack_dual(d).primal).shape == (2,)  # the primal converts
    assert to_np(d).shape == (2,)  # the level is gone: so is the tangent


def test_numpy_functions_minigrad_dispatches_keep_the_tangent():
    x, y = mg.tensor([0.5, 1.0], dtype=mg.float64), mg.tensor([2.0, 3.0], dtype=mg.float64)
    _, t = mg.func.jvp(lambda x, y: np.append(np.concatenate([x, y]), x * y), (x, y), (mg.ones_like(x), mg.ones_like(y)))
    np.testing.assert_allclose(to_np(t), [1, 1, 1, 1, 2.5, 4.0])


def test_reverse_over_forward_through_a_row_write_matches_torch_func():
    """The issue's smallest case: grad of a jvp's tangent through ``A[1] = b``: the tangent's write is
    on the tape, so uA's gradient is w with row 1 zeroed and ub's is w[1]."""
    rng = np.random.default_rng(0)
    A, b, uA, ub, w = (rng.standard_normal(s) for s in ((3, 4), 4, (3, 4), 4, (3, 4)))

    def run(m, fn):
        def f(A, b):
            A = A.clone()
            A[1] = b
            return A
        T = lambda a: m.tensor(a, dtype=m.float64)  # noqa: E731
        loss = lambda A, b, uA, ub: (fn.jvp(f, (A, b), (uA, ub))[1] * T(w)).sum()  # noqa: E731
        return [to_np(g) if m is mg else g.numpy() for g in fn.grad(loss, argnums=(2, 3))(T(A), T(b), T(uA), T(ub))]

    gA, gb = run(mg, mg.func)
    np.testing.assert_allclose(gA, w * (np.arange(3) != 1)[:, None])
    np.testing.assert_allclose(gb, w[1])
    torch = pytest.importorskip("torch")
    for mine, ref in zip((gA, gb), run(torch, torch.func), strict=True):
        np.testing.assert_allclose(mine, ref)


def test_forward_over_forward_zeroes_the_tangents_of_a_zeroed_row():
    """``a[0].zero_()``: the row's tangent and its own tangent (second order) are zero."""
    rng = np.random.default_rng(1)
    x, y, u, v = (mg.tensor(rng.standard_normal((3, 4)), dtype=mg.float64) for _ in range(4))

    def g(x, y):
        a = x.clone()
        a[0].zero_()
        a[2].fill_(1.5)
        return a * a * y

    inner = lambda x: mg.func.jvp(lambda x: g(x, y), (x,), (u,))[1]  # noqa: E731
    _, second = mg.func.jvp(inner, (x,), (v,))
    keep = (np.arange(3) == 1)[:, None]
    np.testing.assert_allclose(to_np(second), np.where(keep, 2 * to_np(u) * to_np(v) * to_np(y), 0.0))
