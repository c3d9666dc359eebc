"""Forward mode's machinery: dual levels (nesting, threads, their end), make_dual's checks, writes
through views, autograd.Function's jvp. Every registry op's forward-mode rule is checked, in both
modes and to second order, by tests/test_registry.py."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import forward_ad as fwAD

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
        seen["fw"] = y._fw
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
