"""Issue 18: named regressions for what fuzzing minigrad against PyTorch (tests/test_fuzz.py) and by
hand turned up. Each test is one finding; every test runs on the default device (CPU, or the
device conftest chooses: fakecuda/CUDA)."""
import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import backend as be

from conftest import leaf_of, run_in_threads, to_np


def _ok(t, want):
    np.testing.assert_allclose(to_np(t), np.asarray(want, dtype=np.float64), rtol=0, atol=0)


def _raises(exc, fn, *names):
    """``fn()`` raises ``exc`` and its message names one of ``names`` (the function or its op)."""
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert any(n in msg for n in names), f"message does not name {names}: {msg!r}"
    return msg


# -- 1. a stale view as the root of backward -----------------------------------------------------

def _stale_view():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1.0
    v = b[:]
    return x, b, v


def test_stale_view_as_backward_root_reads_the_write():
    x, b, v = _stale_view()
    b.mul_(2.0)
    v.backward(mg.ones(3))
    _ok(x.grad, [2, 2, 2])


def test_stale_view_as_grad_output_reads_the_write():
    x, b, v = _stale_view()
    b.mul_(2.0)
    (gx,) = mg.grad(v, x, mg.ones(3))
    _ok(gx, [2, 2, 2])


def test_stale_view_keeps_retain_grad_taken_before_the_write():
    # the engine re-derives the view's history at the root (engine.edge -> inplace.refresh_view);
    # retain_grad() taken on the old history must follow it (ops/inplace.py:view_history)
    x, b, v = _stale_view()
    v.retain_grad()
    b.mul_(2.0)
    v.backward(mg.ones(3))
    _ok(x.grad, [2, 2, 2])
    assert v.grad is not None
    _ok(v.grad, [1, 1, 1])


def test_stale_view_inside_the_graph_keeps_retain_grad():
    x, b, v = _stale_view()
    v.retain_grad()
    b.mul_(2.0)
    (v * mg.tensor([1.0, 2.0, 3.0])).sum().backward()
    _ok(x.grad, [2, 4, 6])
    _ok(v.grad, [1, 2, 3])


# -- 2. grad mode per thread ---------------------------------------------------------------------

def test_overlapping_no_grad_in_two_threads_restores_grad_mode():
    barrier = threading.Barrier(2, timeout=10)
    seen = []

    def worker():
        for _ in range(20):
            with mg.no_grad():
                barrier.wait()  # both threads are inside their blocks now
                seen.append(mg.is_grad_enabled())
                barrier.wait()  # one leaves first, the other is still inside
            seen.append(not mg.is_grad_enabled())
            with mg.no_grad(), mg.enable_grad():
                seen.append(not mg.is_grad_enabled())

    run_in_threads(worker, worker)
    assert not any(seen)
    assert mg.is_grad_enabled()


def test_overlapping_backward_in_two_threads_restores_grad_mode():
    barrier = threading.Barrier(2, timeout=10)
    results = {}

    def worker(k):
        def f():
            x = mg.tensor(np.arange(1.0, 4.0) + k, requires_grad=True)
            for _ in range(20):
                x.grad = None
                barrier.wait()

                def hook(g):
                    # inside a first-order backward this thread does not record ...
                    results.setdefault(("inside", k), set()).add(mg.is_grad_enabled())

                y = x * x
                y.register_hook(hook)
                y.sum().backward()
                # ... and afterwards it records again
                results.setdefault(("after", k), set()).add(mg.is_grad_enabled())
            results[("grad", k)] = to_np(x.grad)
        return f

    run_in_threads(worker(0), worker(1))
    for k in (0, 1):
        assert results[("inside", k)] == {False}
        assert results[("after", k)] == {True}
        np.testing.assert_allclose(results[("grad", k)], 2 * (np.arange(1.0, 4.0) + k))
    assert mg.is_grad_enabled()


def test_no_grad_in_one_thread_while_another_runs_backward():
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.no_grad():
            inside.set()
            done.wait(10)
            seen["a"] = mg.is_grad_enabled()

    def b():
        inside.wait(10)
        x = mg.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        seen["b"] = mg.is_grad_enabled()
        seen["rg"] = (x * 2).requires_grad
        done.set()

    run_in_threads(a, b)
    assert seen == {"a": False, "b": True, "rg": True}


# -- 3. x ** 0 ------------------------------------------------------------------------------------

def test_pow_zero_exponent_gradient_at_zero_is_zero():
    x = leaf_of([0.0, 1.0, -2.0])
    (x ** 0).sum().backward()
    _ok(x.grad, [0, 0, 0])


def test_pow_tensor_exponent_with_zeros_at_zero_base():
    torch = pytest.importorskip("torch")
    xv, yv = [0.0, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, 1.5]
    x, y = leaf_of(xv), leaf_of(yv)
    (x ** y).sum().backward()
    tx = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(yv, dtype=torch.float64, requires_grad=True)
    (tx ** ty).sum().backward()
    assert np.isfinite(to_np(x.grad)).all()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-12)
    # d/dy 0**y at y = 0 is log(0) * 1 = -inf in PyTorch; at y = 2 it is 0 * log 0 -> 0 (PyTorch masks it)
    np.testing.assert_allclose(to_np(y.grad)[1:], ty.grad.numpy()[1:], rtol=1e-12)


# -- 4. NaN / inf do not leak through masks ------------------------------------------------------

def test_log_relu_times_zero_gives_zero_gradient_below_zero():
    y = leaf_of([-1.0, -0.5, 2.0])
    (mg.log(mg.relu(y)) * 0).sum().backward()
    _ok(y.grad, [0, 0, 0])


def test_std_of_a_constant_input_has_zero_gradient():
    y = leaf_of([3.0, 3.0, 3.0])
    y.std().backward()
    _ok(y.grad, [0, 0, 0])


def test_clip_selects_a_nan_upstream_gradient_away():
    y = leaf_of([-1.0, 0.5, 2.0])
    mg.clip(y, 0.0, 1.0).backward(mg.tensor([np.nan, 1.0, np.inf], dtype=mg.float64))
    _ok(y.grad, [0, 1, 0])


def test_max_ties_and_nan_upstream_select():
    y = leaf_of([[1.0, 5.0, 5.0], [2.0, 0.0, 1.0]])
    y.max(axis=0).backward(mg.tensor([np.nan, np.inf, 2.0], dtype=mg.float64))
    g = to_np(y.grad)
    assert np.isnan(g[1, 0]) and g[0, 0] == 0          # the nan goes to the winner only
    assert np.isinf(g[0, 1]) and g[1, 1] == 0
    np.testing.assert_array_equal(g[:, 2], [2.0, 0.0])
    z = leaf_of([1.0, 2.0, 2.0])
    z.max().backward()
    _ok(z.grad, [0, 0.5, 0.5])  # ties share the gradient evenly (PyTorch's max() without a dim)
    m = leaf_of([1.0, -3.0, 2.0])
    m.min(axis=0).backward(mg.tensor(1.0, dtype=mg.float64))
    _ok(m.grad, [0, 1, 0])


def test_maximum_minimum_select_the_upstream_gradient():
    a, b = leaf_of([1.0, 2.0, 3.0]), leaf_of([2.0, 1.0, 3.0])
    mg.maximum(a, b).backward(mg.tensor([np.inf, np.nan, 1.0], dtype=mg.float64))
    ga, gb = to_np(a.grad), to_np(b.grad)
    assert ga[0] == 0 and np.isnan(ga[1]) and ga[2] == 0.5
    assert np.isinf(gb[0]) and gb[1] == 0 and gb[2] == 0.5
    c, d = leaf_of([1.0, 2.0]), leaf_of([2.0, 1.0])
    mg.minimum(c, d).backward(mg.tensor([np.nan, 1.0], dtype=mg.float64))
    gc, gd = to_np(c.grad), to_np(d.grad)
    assert np.isnan(gc[0]) and gc[1] == 0 and gd[0] == 0 and gd[1] == 1


def test_where_selects_a_nan_upstream_gradient_away():
    y = leaf_of([1.0, 2.0, 3.0])
    w = mg.where(mg.tensor([True, False, True]), y, 0.0)
    w.backward(mg.tensor([1.0, np.nan, 1.0], dtype=mg.float64))
    _ok(y.grad, [1, 0, 1])


def test_setitem_overwritten_positions_select_a_nan_upstream_gradient_away():
    y = leaf_of([1.0, 2.0, 3.0])
    b = y * 1.0
    b[1] = 5.0
    b.backward(mg.tensor([1.0, np.nan, 1.0], dtype=mg.float64))
    _ok(y.grad, [1, 0, 1])
    # and an inf in the upstream gradient of an overwritten advanced-index position
    z = leaf_of([1.0, 2.0, 3.0, 4.0])
    c = z * 1.0
    c[mg.tensor([0, 2])] = mg.tensor([7.0, 8.0], dtype=mg.float64)
    c.backward(mg.tensor([np.inf, 1.0, -np.inf, 1.0], dtype=mg.float64))
    _ok(z.grad, [0, 1, 0, 1])


# -- 5. complex tensors cannot require grad ------------------------------------------------------

def test_complex_tensor_cannot_require_grad():
    msg = _raises(TypeError, lambda: mg.tensor(np.array([1 + 1j, 2]), requires_grad=True), "requires_grad")
    assert "complex128" in msg
    t = mg.tensor(np.array([1 + 1j], dtype=np.complex64))
    msg = _raises(TypeError, lambda: t.requires_grad_(), "requires_grad")
    assert "complex64" in msg


# -- 6. object arrays ----------------------------------------------------------------------------

def test_multiply_by_an_object_array_is_a_type_error():
    x = mg.ones(2, requires_grad=True)
    msg = _raises(TypeError, lambda: x * np.array([1, 2], dtype=object), "mul")
    assert "object" in msg
    _raises(TypeError, lambda: np.array([1, 2], dtype=object) * x, "mul")


# -- 7. .grad assignment is validated ------------------------------------------------------------

def _leaf3():
    return mg.ones(3, requires_grad=True)


def test_grad_assignment_wrong_shape_is_a_value_error():
    x = _leaf3()
    with pytest.raises(ValueError, match="grad"):
        x.grad = mg.ones(2)


def test_grad_assignment_wrong_type_is_a_type_error():
    x = _leaf3()
    with pytest.raises(TypeError, match="grad"):
        x.grad = "abc"


def test_grad_assignment_wrong_dtype_is_refused():
    x = _leaf3()
    with pytest.raises(TypeError, match="grad.*dtype"):
        x.grad = mg.ones(3, dtype=mg.float64)
    with pytest.raises(TypeError, match="grad.*dtype"):
        x.grad = mg.tensor([1, 2, 3])


def test_grad_assignment_wrong_device_is_refused():
    x = _leaf3()
    installed = False
    if x.device == "cpu":
        try:
            be.xp_for("cuda:0")
        except RuntimeError:
            be.use_fake_cupy()
            installed = True
        other = "cuda:0"
    else:
        other = "cpu"
    try:
        g = mg.ones(3, device=other)
        with pytest.raises(ValueError, match="grad.*(cpu|cuda)"):
            x.grad = g
    finally:
        if installed:
            be.use_fake_cupy(False)


def test_grad_assignment_none_is_always_allowed():
    x = _leaf3()
    x.grad = None
    assert x.grad is None
    (x * 2).sum().backward()
    x.grad = None
    assert x.grad is None
    x.grad = mg.zeros(3)
    _ok(x.grad, [0, 0, 0])


# -- 8. errors name the op and what was expected -------------------------------------------------

@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax"])
def test_softmax_with_a_tuple_axis_matches_torch(fn_name):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    x = leaf_of(a)
    y = getattr(mg, fn_name)(x, axis=(0, 2))
    tx = torch.tensor(a, requires_grad=True)
    lse = torch.logsumexp(tx, dim=(0, 2), keepdim=True)
    ty = tx - lse if fn_name == "log_softmax" else torch.exp(tx - lse)
    np.testing.assert_allclose(to_np(y), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    w = np.random.default_rng(4).standard_normal(a.shape)
    y.backward(mg.tensor(w))
    ty.backward(torch.tensor(w))
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_clip_with_a_string_bound_names_clip():
    x = mg.ones(3, requires_grad=True)
    _raises(TypeError, lambda: mg.clip(x, "a"), "clip")
    _raises(TypeError, lambda: mg.clip(x, 0.0, "b"), "clip")


def test_backward_with_a_string_gradient_names_backward():
    x = mg.ones(3, requires_grad=True)
    _raises(TypeError, lambda: (x * 2).backward("a"), "backward")


def test_dense_backward_with_a_sparse_gradient_names_backward():
    x = mg.ones((2, 3), requires_grad=True)
    s = mg.sparse.coo_tensor(np.array([[0], [1]]), np.array([1.0], dtype=np.float32), (2, 3))
    msg = _raises(TypeError, lambda: (x * 2).backward(s), "backward")
    assert "sparse" in msg and "to_dense" in msg


def test_recorded_setitem_with_a_bad_value_shape_starts_with_setitem():
    x = mg.ones((3, 4), requires_grad=True)
    b = x * 1.0

    def bad():
        b[0] = mg.ones(2, requires_grad=True)

    with pytest.raises(ValueError) as info:
        bad()
    assert str(info.value).startswith("setitem:"), str(info.value)
    # a value of shape (1,) broadcasts over the row (as in NumPy); its gradient sums back
    v = mg.ones(1, requires_grad=True)
    b[0] = v
    b.backward(mg.ones((3, 4)))
    _ok(v.grad, [4])
    _ok(x.grad, [[0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]])


def test_ragged_nested_list_names_tensor():
    msg = _raises(ValueError, lambda: mg.tensor([[1, 2], [3]]), "tensor")
    assert msg.startswith("tensor:") and "rectangular" in msg


def test_std_second_derivative_at_a_constant_row_is_finite():
    # found by tests/test_fuzz.py (seed 675887039): std's rule selected 0 at a constant row but
    # divided by the 0 std, so the grad of grad (div's rule, num / den**2) was 0 * NaN there
    torch = pytest.importorskip("torch")
    a = np.array([[3.0, 3.0, 3.0], [1.0, -2.0, 0.5]])
    w = np.array([0.7, -1.3])
    x = leaf_of(a)
    (gx,) = mg.grad((x.std(axis=1) * mg.tensor(w)).sum(), x, create_graph=True)
    (hx,) = mg.grad((gx * mg.tensor(a)).sum(), x)
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad((tx.std(dim=1, correction=0) * torch.tensor(w)).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(a)).sum(), tx)
    assert np.isfinite(to_np(hx)).all()
    np.testing.assert_allclose(to_np(gx), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(hx), th.numpy(), rtol=1e-10, atol=1e-14)


# -- an op whose operands are all Python numbers -----------------------------------------------

@pytest.mark.parametrize("expr, dtype, want", [
    (lambda: mg.add(2, 3), np.int64, 5),
    (lambda: mg.mul(2.0, 3.0), np.float32, 6.0),
    (lambda: mg.sub(1, 2.0), np.float32, -1.0),       # NumPy's promotion of the numbers, floats at the default dtype
    (lambda: mg.neg(1), np.int64, -1),
    (lambda: mg.pow(2.0, 3), np.float32, 8.0),
    (lambda: mg.exp(0.0), np.float32, 1.0),
    (lambda: mg.maximum(1.0, 2.0), np.float32, 2.0),
])
def test_numbers_only_give_a_tensor_as_mg_tensor_would(expr, dtype, want):
    # the data was a Python int or float (``mg.add(2, 3).data`` was 5, and its repr raised), or a
    # float64 array where ``mg.tensor(1.0)`` is float32
    t = expr()
    assert hasattr(t.data, "dtype") and t.shape == () and t.dtype == dtype
    _ok(t, want)
    assert t.device == mg.tensor(1.0).device


def test_numbers_only_follow_the_default_dtype():
    old = mg.get_default_dtype()
    mg.set_default_dtype(np.float64)
    try:
        assert mg.exp(1.0).dtype == np.float64
    finally:
        mg.set_default_dtype(old)


# -- NumPy's own errors inside an op's forward name the op -----------------------------------------

@pytest.mark.parametrize("expr, exc, name", [
    (lambda: -mg.tensor([True, False]), TypeError, "neg"),               # "The numpy boolean negative ..."
    (lambda: mg.tensor(True) - mg.tensor(False), TypeError, "sub"),
    (lambda: mg.tensor([1, 2]) ** -1, ValueError, "pow"),               # "Integers to negative integer powers ..."
])
def test_numpys_errors_in_a_forward_start_with_the_op(expr, exc, name):
    with pytest.raises(exc, match=f"^{name}: "):
        expr()


def test_an_error_that_names_its_op_is_not_named_twice():
    with pytest.raises(ValueError, match=r"^add: operands could not be broadcast"):
        mg.ones(2) + mg.ones(3)
    with pytest.raises(ValueError, match=r"^pow_: Integers to negative integer powers"):
        mg.tensor([1, 2]).pow_(-1)


# -- a NumPy scalar operand is weak, np.float64 too ----------------------------------------------

@pytest.mark.parametrize("scalar", [np.float64(2), np.float32(2), np.int64(2), np.float16(2)])
def test_numpy_scalar_operands_keep_the_tensors_dtype(scalar):
    # np.float64 is a Python float subclass, so it went through as a strongly typed NumPy scalar:
    # float32 * np.float64(2) was float64, where np.float32(2) and np.int64(2) kept float32 (and
    # torch.ones(2) * np.float64(2) is float32)
    t = mg.tensor([1.0, 2.0])
    assert (t * scalar).dtype == np.float32 and (scalar * t).dtype == np.float32
    assert (t + scalar).dtype == np.float32 and mg.maximum(t, scalar).dtype == np.float32
    _ok(t * scalar, [2.0, 4.0])


# -- mean with an integer dtype= --------------------------------------------------------------------

def test_mean_with_an_integer_dtype_is_numpys():
    # the sum was taken in int64, then divided: a float64 2.5 where NumPy gives int64 2
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for kwargs in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        want = (-a).mean(dtype=np.int64, **kwargs)
        got = mg.tensor(-a).mean(dtype=np.int64, **kwargs)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        _ok(got, want)
    assert mg.tensor(np.arange(6)).mean(dtype=np.int32).dtype == np.int32
    assert mg.tensor(a).mean(dtype=np.float16).dtype == np.float16
