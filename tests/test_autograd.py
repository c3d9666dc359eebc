"""The tape and the backward engine: accumulation, graph lifetime, higher order, hooks,
grad modes, user-defined Functions, the readable tape."""
import gc
import sys
import warnings
import weakref

import numpy as np
import pytest

import minigrad as mg
from conftest import exact, leaf_of, to_np
from minigrad import backend as be


# -- accumulation ----------------------------------------------------------------------------

def test_reused_tensor_gradients_add_up():
    x = leaf_of([1.0, 2.0, 3.0])
    y = x * x + x * 3 + x  # x feeds four uses
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), 2 * to_np(x) + 4)


def test_diamond_graph():
    x = leaf_of(2.0)
    a = x * 3
    b = a * a      # a used twice
    c = a + b      # a used a third time
    c.backward()
    # c = 3x + 9x^2 -> dc/dx = 3 + 18x
    assert x.grad.item() == 3 + 18 * 2.0


def test_same_tensor_both_operands():
    x = leaf_of([3.0])
    (x * x).backward()
    assert x.grad.item() == 6.0
    x.grad = None
    (x / x).backward()
    assert abs(x.grad.item()) < 1e-15
    x.grad = None
    (x - x + x).sum().backward()
    assert x.grad.item() == 1.0


def test_backward_accumulates_into_grad_across_calls():
    x = leaf_of([1.0, 2.0])
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [5.0, 5.0])


def test_zero_d_backward():
    x = leaf_of(2.0)
    y = x * x * x
    y.backward()
    assert x.grad.shape == () and x.grad.item() == 12.0
    assert x.grad.data.shape == () and not isinstance(x.grad.data, np.generic)  # an array, not a scalar
    x32 = mg.tensor(2.0, requires_grad=True)
    (x32 * x32).backward()
    assert x32.grad.dtype == np.float32 and x32.grad.item() == 4.0


def test_one_element_non_scalar_backward_needs_no_grad():
    x = leaf_of([[2.0]])
    (x * x).backward()
    assert x.grad.shape == (1, 1) and x.grad.item() == 4.0


def test_leaf_backward_itself():
    x = leaf_of([1.0, 2.0])
    x.backward(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(to_np(x.grad), [3.0, 4.0])


def test_backward_with_explicit_grad_array_tensor_and_dtype_cast():
    x = leaf_of([1.0, 2.0], dtype=np.float32)
    y = x * 2
    y.backward(mg.tensor(np.array([1.0, 10.0])))  # a float64 grad for a float32 output
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(to_np(x.grad), [2.0, 20.0])
    x.grad = None
    (x * 2).backward([1.0, 1.0])  # a list is accepted too
    np.testing.assert_array_equal(to_np(x.grad), [2.0, 2.0])


def test_gradient_is_not_shared_between_leaves():
    # one gradient array feeding two leaves must not alias writably
    a, b = leaf_of([1.0, 2.0]), leaf_of([3.0, 4.0])
    (a + b).sum().backward()
    ga = a.grad.data
    if not hasattr(ga.flags, "writeable"):
        pytest.skip("device arrays have no read-only flag: gradients may share memory, never write into .grad")
    if ga.flags.writeable:
        ga[0] = 100.0
    else:  # read-only views: nothing can be written through them
        with pytest.raises(ValueError):
            ga[0] = 100.0
    assert b.grad.numpy()[0] == 1.0


def test_grads_only_for_inputs_requiring_them():
    x = leaf_of([1.0])
    c = mg.tensor(np.array([2.0]))
    (x * c).backward()
    assert c.grad is None and x.grad.item() == 2.0


# -- misuse ----------------------------------------------------------------------------------

def test_second_backward_through_freed_graph_names_retain_graph():
    x = leaf_of([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = leaf_of([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    g1 = to_np(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(to_np(x.grad), 2 * g1)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_backward_through_a_freed_shared_subgraph():
    x = leaf_of([1.0, 2.0])
    h = x.exp()
    h.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        (h * 2).sum().backward()


def test_non_scalar_backward_without_grad_raises():
    x = leaf_of([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"one-element|\(2,\)"):
        (x * 2).backward()


@pytest.mark.parametrize("g", [np.ones(3), np.ones((2, 1)), mg.ones(1, 2), [1.0]])
def test_wrong_shape_grad_raises(g):
    x = leaf_of([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"shape") as ei:
        (x * 2).backward(g)
    assert "(2,)" in str(ei.value)


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="require"):
        mg.tensor([1.0]).backward()
    x = leaf_of([1.0])
    with mg.no_grad():
        y = x * 2
    with pytest.raises(RuntimeError):
        y.backward()


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.bool_])
def test_only_floats_may_require_grad(dtype):
    with pytest.raises(TypeError, match="floating"):
        mg.tensor(np.zeros(2, dtype=dtype), requires_grad=True)
    t = mg.tensor(np.zeros(2, dtype=dtype))
    with pytest.raises(TypeError, match=str(np.dtype(dtype))):
        t.requires_grad_()
    with pytest.raises(TypeError):
        t.requires_grad = True
    with pytest.raises(TypeError):
        mg.zeros(2, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_floats_may_require_grad(dtype):
    t = mg.zeros(2, dtype=dtype, requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None


def test_requires_grad_of_non_leaf_cannot_be_turned_off():
    y = leaf_of([1.0]) * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad = False


def test_integer_results_carry_no_gradient():
    x = leaf_of([1.5, 2.5])
    for y in (x.argmax(), x > 1, x.astype(np.int64), x // 1):
        assert not y.requires_grad


# -- higher order ----------------------------------------------------------------------------

def test_create_graph_gives_second_derivative():
    x = leaf_of([0.5, 1.0, 2.0])
    y = (x.sin() * x).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    np.testing.assert_allclose(to_np(g), np.cos(to_np(x)) * to_np(x) + np.sin(to_np(x)))
    x.grad = None
    g.sum().backward()
    xs = to_np(x)
    np.testing.assert_allclose(to_np(x.grad), -np.sin(xs) * xs + 2 * np.cos(xs))


def test_mg_grad_third_order():
    x = leaf_of(2.0)
    y = x ** 4
    (g1,) = mg.grad(y, x, create_graph=True)
    (g2,) = mg.grad(g1, x, create_graph=True)
    (g3,) = mg.grad(g2, x)
    assert (g1.item(), g2.item(), g3.item()) == (32.0, 48.0, 48.0)
    assert x.grad is None  # mg.grad does not accumulate


def test_mg_grad_multiple_inputs_outputs_and_options():
    a, b = leaf_of([1.0, 2.0]), leaf_of([3.0, 4.0])
    u = (a * b).sum()
    v = (a * a).sum()
    ga, gb = mg.grad([u, v], [a, b])
    np.testing.assert_array_equal(to_np(ga), to_np(b) + 2 * to_np(a))
    np.testing.assert_array_equal(to_np(gb), to_np(a))
    w = a * b
    (gw,) = mg.grad(w, a, grad_outputs=mg.tensor(np.array([1.0, 10.0])))
    np.testing.assert_array_equal(to_np(gw), [3.0, 40.0])
    c = leaf_of([0.0])
    with pytest.raises(RuntimeError, match="allow_unused"):
        mg.grad((a * 2).sum(), [a, c])
    ga2, gc2 = mg.grad((a * 2).sum(), [a, c], allow_unused=True)
    assert gc2 is None and ga2.tolist() == [2.0, 2.0]


def test_mg_grad_wrt_non_leaf():
    x = leaf_of([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = mg.grad(y, h)
    np.testing.assert_array_equal(to_np(gh), 2 * to_np(h))


def test_mg_grad_retain_graph_default_follows_create_graph():
    x = leaf_of([1.0])
    y = (x * x).sum()
    mg.grad(y, x)
    with pytest.raises(RuntimeError, match="retain_graph"):
        mg.grad(y, x)
    y = (x * x).sum()
    mg.grad(y, x, create_graph=True)
    mg.grad(y, x)  # the graph was kept


def test_hessian_vector_product():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = leaf_of([1.0, -1.0])
    A = mg.tensor(a)
    f = (x * (A @ x)).sum() * 0.5  # Hessian is A
    (g,) = mg.grad(f, x, create_graph=True)
    v = mg.tensor(np.array([1.0, 2.0]))
    (hv,) = mg.grad((g * v).sum(), x)
    np.testing.assert_allclose(to_np(hv), a @ np.array([1.0, 2.0]))


def test_first_order_backward_records_nothing():
    x = leaf_of([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    assert not x.grad.requires_grad and x.grad.grad_fn is None


# -- grad modes ------------------------------------------------------------------------------

def test_no_grad_context():
    x = leaf_of([1.0])
    assert mg.is_grad_enabled()
    with mg.no_grad():
        assert not mg.is_grad_enabled()
        y = x * 2
    assert mg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_enable_grad_inside_no_grad():
    x = leaf_of([1.0])
    with mg.no_grad():
        with mg.enable_grad():
            assert mg.is_grad_enabled()
            y = x * 2
        assert not mg.is_grad_enabled()
    assert y.requires_grad


def test_grad_modes_as_decorators():
    x = leaf_of([1.0])

    @mg.no_grad()
    def f(t):
        return t * 2, mg.is_grad_enabled()

    @mg.no_grad
    def f_bare(t):
        return t * 2

    @mg.enable_grad()
    def g(t):
        return t * 2

    y, enabled = f(x)
    assert not y.requires_grad and not enabled
    assert not f_bare(x).requires_grad
    assert f.__name__ == "f"
    with mg.no_grad():
        assert g(x).requires_grad
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()


def test_no_grad_restores_on_exception():
    with pytest.raises(ZeroDivisionError):
        with mg.no_grad():
            raise ZeroDivisionError
    assert mg.is_grad_enabled()


def test_detach():
    x = leaf_of([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.data, y.data)
    z = d * x
    z.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), to_np(d))  # nothing flowed through d


# -- retain_grad and hooks -------------------------------------------------------------------

def test_retain_grad():
    x = leaf_of([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    m = h * 2  # not retained
    (h * m).sum().backward()
    np.testing.assert_array_equal(to_np(h.grad), 4 * to_np(h))
    assert m.grad is None
    x.retain_grad()  # harmless on a leaf


def test_hook_on_leaf_replaces_and_removes():
    x = leaf_of([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(to_np(g).copy()) or g * 10)
    (x * x).sum().backward()
    np.testing.assert_array_equal(seen[0], [2.0, 4.0])  # the summed gradient, once
    np.testing.assert_array_equal(to_np(x.grad), [20.0, 40.0])
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [2.0, 4.0])
    assert len(seen) == 1


def test_hook_on_non_leaf_sees_total_and_replaces():
    x = leaf_of([1.0, 2.0])
    h = x * 2
    seen = []

    def hook(g):
        seen.append(to_np(g).copy())
        return g * 0 + 1.0

    h.register_hook(hook)
    (h * h + h).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], 2 * to_np(h) + 1)
    np.testing.assert_array_equal(to_np(x.grad), [2.0, 2.0])  # d h/dx * replaced grad (1)


def test_hook_returning_none_keeps_gradient_and_hooks_chain():
    x = leaf_of([1.0])
    x.register_hook(lambda g: None)
    x.register_hook(lambda g: g * 3)
    x.register_hook(lambda g: g + 1)
    (x * 2).backward()
    assert x.grad.item() == 7.0


def test_hook_must_return_tensor_or_none():
    x = leaf_of([1.0])
    x.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="hook"):
        (x * 2).backward()


def test_hook_needs_requires_grad():
    with pytest.raises(RuntimeError):
        mg.tensor([1.0]).register_hook(lambda g: g)


def test_hooks_under_create_graph():
    x = leaf_of([2.0])
    x.register_hook(lambda g: g * 2)
    (g,) = mg.grad((x ** 3).sum(), x, create_graph=True)
    assert g.item() == 2 * 12.0 and g.requires_grad  # as torch.autograd.grad: hooks apply
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.item() == 24.0 and x.grad.requires_grad
    h = x * 1
    h.register_hook(lambda g: g * 5)
    (gh,) = mg.grad((h ** 3).sum(), h)
    assert gh.item() == 5 * 12.0


# -- autograd.Function -----------------------------------------------------------------------

class Cube(mg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ExpOut(mg.autograd.Function):
    """Saves its own output for backward."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class ScaleAndExp(mg.autograd.Function):
    """Two inputs (one a Python number), two outputs."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        e = x.exp()
        ctx.save_for_backward(e)
        return x * k, e

    @staticmethod
    def backward(ctx, ga, gb):
        (e,) = ctx.saved_tensors
        return ga * ctx.k + gb * e, None


def test_function_forward_backward():
    x = leaf_of([1.0, 2.0])
    y = Cube.apply(x)
    assert y.requires_grad and not y.is_leaf and y.grad_fn.op == "Cube"
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), 3 * to_np(x) ** 2)
    assert mg.gradcheck(Cube.apply, x)
    assert mg.gradgradcheck(Cube.apply, x)


def test_function_forward_runs_without_recording():
    class Probe(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.inner = x * 2
            return ctx.inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Probe.apply(leaf_of([1.0]))
    assert y.grad_fn.op == "Probe"
    assert len(mg.autograd.tape(y)) == 1


def test_function_saving_its_output():
    x = leaf_of([0.5, 1.0])
    ExpOut.apply(x).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.exp(to_np(x)))
    assert mg.gradcheck(ExpOut.apply, x)
    assert mg.gradgradcheck(ExpOut.apply, x)


def test_function_multi_output():
    x = leaf_of([0.5, 1.0])
    a, b = ScaleAndExp.apply(x, 3.0)
    assert a.requires_grad and b.requires_grad
    a.sum().backward()  # only one output used: the other's gradient is zeros
    np.testing.assert_array_equal(to_np(x.grad), [3.0, 3.0])
    x.grad = None
    a, b = ScaleAndExp.apply(x, 3.0)
    (a + b).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), 3.0 + np.exp(to_np(x)))
    assert mg.gradcheck(lambda t: ScaleAndExp.apply(t, 2.0), x)
    assert mg.gradgradcheck(lambda t: ScaleAndExp.apply(t, 2.0), x)


def test_function_needs_input_grad_and_no_grad_inputs():
    seen = {}

    class Mul(mg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a, b = leaf_of([2.0]), mg.tensor(np.array([5.0]))
    Mul.apply(a, b).backward()
    assert seen["needs"] == (True, False)
    assert a.grad.item() == 5.0 and b.grad is None
    out = Mul.apply(mg.tensor([1.0]), mg.tensor([2.0]))
    assert not out.requires_grad


def test_function_wrong_gradient_count_or_shape_raises():
    class BadCount(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    with pytest.raises(RuntimeError, match="BadCount"):
        BadCount.apply(leaf_of([1.0, 2.0])).sum().backward()
    with pytest.raises(RuntimeError, match="BadShape"):
        BadShape.apply(leaf_of([1.0, 2.0])).sum().backward()


# -- the tape --------------------------------------------------------------------------------

def test_tape_lists_ops_in_run_order_with_metadata():
    x = leaf_of(np.ones((2, 3)), dtype=np.float32)
    w = leaf_of(np.ones((3, 4)), dtype=np.float32)
    loss = ((x @ w).tanh().sum(axis=1) * 2.0).mean()
    tape = mg.autograd.tape(loss)
    ops = [n.op for n in tape]
    assert ops[:3] == ["matmul", "tanh", "sum"] and ops[-1] == "div"
    mm = tape[0]
    assert mm.inputs == (((2, 3), np.dtype(np.float32)), ((3, 4), np.dtype(np.float32)))
    assert mm.output_shape == (2, 4) and mm.output_dtype == np.float32
    assert tape[-1].output_shape == ()
    text = str(tape)
    lines = text.splitlines()
    assert "op" in lines[0] and "output" in lines[0]
    rows = [ln for ln in lines if ln.split()[:1] and ln.split()[0].isdigit()]
    assert [r.split()[1] for r in rows[:len(ops)]] == ops  # one row per node, in run order
    assert "(2, 3)" in rows[0] and "(3, 4)" in rows[0] and "(2, 4)" in rows[0]
    assert "const" in text  # the Python scalar operand
    assert repr(tape) == text


def test_tape_of_leaf_and_constant_is_empty():
    assert len(mg.autograd.tape(leaf_of([1.0]))) == 0
    assert len(mg.autograd.tape(mg.tensor([1.0]) * 2)) == 0
    str(mg.autograd.tape(leaf_of([1.0])))  # printable


def test_tape_shared_nodes_appear_once():
    x = leaf_of([1.0])
    h = x.exp()
    tape = mg.autograd.tape(h * h + h)
    assert [n.op for n in tape] == ["exp", "mul", "add"]


def test_print_tape(capsys):
    x = leaf_of([1.0, 2.0])
    print(mg.autograd.tape((x * 2).sum()))
    out = capsys.readouterr().out
    assert "mul" in out and "sum" in out


# -- depth and lifetime ----------------------------------------------------------------------

def test_100k_op_chain_backward():
    limit = sys.getrecursionlimit()
    x = leaf_of(np.ones(4))
    y = x
    for _ in range(50_000):
        y = y * 1.0
        y = y + 0.0
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.ones(4))
    assert len(mg.autograd.tape(y)) == 100_000
    assert sys.getrecursionlimit() == limit
    del y  # freeing a deep graph must not recurse either


def test_deep_graph_is_freed_without_recursion():
    x = leaf_of([1.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    del y  # a recursive destructor would overflow the C stack here
    gc.collect()


@pytest.fixture
def no_gc():
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


def test_finished_graph_is_freed_without_the_cycle_collector(no_gc):
    x = leaf_of(np.ones((3, 3)))
    h = (x @ x).exp()
    y = (h * x).sum()
    node = weakref.ref(y.grad_fn)
    inner = weakref.ref(h.grad_fn)
    h_ref = weakref.ref(h)
    y.backward()
    del h
    assert h_ref() is None  # the graph holds no reference back to its output tensors
    del y
    assert node() is None and inner() is None
    assert x.grad is not None


def test_unused_graph_is_freed_without_the_cycle_collector(no_gc):
    x = leaf_of([1.0, 2.0])
    y = x.exp().sin().sum()
    refs = [weakref.ref(n) for n in mg.autograd.tape(y)]
    assert all(r() is not None for r in refs)
    del y
    assert all(r() is None for r in refs)


def test_graph_freed_after_create_graph_and_function_nodes(no_gc):
    x = leaf_of([1.0, 2.0])
    y = (ExpOut.apply(x) * Cube.apply(x)).sum()
    (g,) = mg.grad(y, x, create_graph=True)
    refs = [weakref.ref(n) for n in mg.autograd.tape(y)] + [weakref.ref(n) for n in mg.autograd.tape(g)]
    del y, g
    assert all(r() is None for r in refs)


def test_saved_arrays_released_after_backward():
    x = leaf_of(np.ones(1000))
    y = x.exp()
    z = (y * x).sum()
    node = y.grad_fn
    assert node.saved_bytes > 0
    z.backward()
    assert node.saved_bytes == 0


# -- reading .grad of a non-leaf; .grad assignment is validated ------------------------------------

def test_reading_grad_of_a_non_leaf_warns_once_and_points_to_retain_grad():
    x = mg.ones(3, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="retain_grad"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None  # once per tensor
        assert x.grad is not None  # leaves never warn


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
    exact(x.grad, [0, 0, 0])


class _ScaleInPlace(mg.autograd.Function):
    """``x *= y`` in place, marked dirty (PyTorch's habit for a Function that writes its input)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        ctx.y = y
        ctx.mark_dirty(x)
        x.mul_(y)
        return x

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y, None

    @staticmethod
    def jvp(ctx, tx, ty):
        return tx * ctx.y


def test_a_function_that_writes_in_place_carries_gradients_and_tangents_in_every_mode():
    """mark_dirty: the written input (a row of a clone here, a view) is the Function's output,
    through its history and its tangents, so the four compositions of order 2 hold."""
    rng = np.random.default_rng(0)
    y = mg.tensor(rng.standard_normal(4), dtype=mg.float64)

    def f(x):
        a = x.clone()
        out = _ScaleInPlace.apply(a[1], y)
        return a * a * out.sum()

    x = mg.tensor(rng.standard_normal((3, 4)), dtype=mg.float64, requires_grad=True)
    assert mg.gradcheck(f, [x], modes=("rev", "fwd"), order=2)
    a = x.detach().clone()
    with pytest.raises(RuntimeError, match="mark_dirty"):
        class _Bad(_ScaleInPlace):
            @staticmethod
            def forward(ctx, x, y):
                ctx.mark_dirty(x)
                return x * y
        _Bad.apply(a, y)
