"""Dense ops: values against NumPy, gradients against finite differences (float64).

Elementwise, shape, indexing, joining, matmul, and the reductions other than sum
(sum has its own file, test_sum.py).
"""
import numpy as np
import pytest

import minigrad as mg
from conftest import check, dev, exact, leaf, leaf_of, rnd, to_np


# -- elementwise binary ------------------------------------------------------------------------

BROADCAST_PAIRS = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((2, 0), (1,)),
    ((1, 1), (2, 3)),
]

BINARY = {
    "add": (lambda a, b: a + b, np.add, {}),
    "sub": (lambda a, b: a - b, np.subtract, {}),
    "mul": (lambda a, b: a * b, np.multiply, {}),
    "div": (lambda a, b: a / b, np.divide, {"b_low": 0.5}),
    "pow": (lambda a, b: a ** b, np.power, {"a_low": 0.5}),
    "maximum": (mg.maximum, np.maximum, {}),
    "minimum": (mg.minimum, np.minimum, {}),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("sa, sb", BROADCAST_PAIRS)
def test_binary_broadcasting(name, sa, sb):
    f, npf, kw = BINARY[name]
    a = leaf(sa, 1, low=kw.get("a_low"))
    b = leaf(sb, 2, low=kw.get("b_low"))
    out = f(a, b)
    want = npf(a.detach().numpy(), b.detach().numpy())
    assert out.shape == want.shape and out.dtype == np.float64
    np.testing.assert_allclose(to_np(out), want, rtol=1e-12)
    check(f, a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_reflected_forms_with_scalars_and_arrays(name):
    f, npf, _ = BINARY[name]
    x = leaf((2, 3), 3, low=0.5)
    c = dev(np.full((3,), 1.5))  # a raw array on the tensors' device
    for left, right in [(x, 2.0), (2.0, x), (x, c), (c, x), (x, 3), (3, x)]:
        out = f(left, right)
        assert isinstance(out, mg.Tensor), (left, right)
        want = npf(to_np(left) if hasattr(left, "shape") else left,
                   to_np(right) if hasattr(right, "shape") else right)
        np.testing.assert_allclose(to_np(out), want, rtol=1e-12)
        assert out.dtype == np.float64  # Python scalars do not promote
        if isinstance(left, mg.Tensor):
            check(lambda t, r=right: f(t, r), x)
        else:
            check(lambda t, lf=left: f(lf, t), x)


def test_python_scalars_keep_float32():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    for y in (x + 1, 1 + x, x * 2.5, 2.5 / x, x ** 2, 2 ** x, -x, x - 1.0, 1.0 - x):
        assert y.dtype == np.float32


def test_pow_special_exponents():
    x = leaf((4,), 4, low=0.3)
    for p in (0, 1, 2, 3, 0.5, -1, -2.5):
        check(lambda t, p=p: t ** p, x)
    # x ** y with x == 0 has a finite gradient in y (x**y log x taken as 0 there)
    z = mg.tensor(np.array([0.0, 2.0]), requires_grad=False)
    y = mg.tensor(np.array([2.0, 2.0]), requires_grad=True)
    (z ** y).sum().backward()
    assert np.all(np.isfinite(to_np(y.grad)))
    np.testing.assert_allclose(to_np(y.grad), [0.0, 4.0 * np.log(2.0)])


def test_mod():
    a = mg.tensor(rnd((2, 3), 5, low=0.1) * 3, requires_grad=True)
    b = mg.tensor(rnd((3,), 6, low=1.0), requires_grad=True)
    np.testing.assert_allclose(to_np(a % b), np.mod(a.detach().numpy(), b.detach().numpy()))
    check(lambda x, y: x % y, a, b, gg=False)


def test_floordiv_has_no_gradient():
    a = leaf((3,), 7)
    out = a // 0.5
    np.testing.assert_array_equal(to_np(out), a.detach().numpy() // 0.5)
    assert not out.requires_grad


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_ties_split_evenly(op):
    f = getattr(mg, op)
    a = mg.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    b = mg.tensor(np.array([2.0, 2.0, 2.0]), requires_grad=True)
    f(a, b).sum().backward()
    if op == "maximum":
        np.testing.assert_array_equal(to_np(a.grad), [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(to_np(b.grad), [1.0, 0.5, 0.0])
    else:
        np.testing.assert_array_equal(to_np(a.grad), [1.0, 0.5, 0.0])
        np.testing.assert_array_equal(to_np(b.grad), [0.0, 0.5, 1.0])


def test_maximum_broadcast_scalar_tie_sums():
    a = mg.tensor(np.array([[2.0, 2.0], [1.0, 3.0]]), requires_grad=True)
    b = mg.tensor(np.array(2.0), requires_grad=True)
    mg.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(to_np(a.grad), [[0.5, 0.5], [0.0, 1.0]])
    assert b.grad.shape == () and b.grad.item() == 2.0  # 0.5 + 0.5 + 1 + 0


# -- where, clip, comparisons --------------------------------------------------------------------

@pytest.mark.parametrize("sc, sa, sb", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((3,), (2, 1), (2, 3)),
                                        ((0, 3), (3,), (0, 3)), ((), (), ())])
def test_where(sc, sa, sb):
    rng = np.random.default_rng(8)
    cond = dev(rng.random(sc) > 0.5)
    a, b = leaf(sa, 9), leaf(sb, 10)
    out = mg.where(cond, a, b)
    np.testing.assert_array_equal(to_np(out), np.where(to_np(cond), a.detach().numpy(), b.detach().numpy()))
    check(lambda x, y: mg.where(cond, x, y), a, b)
    check(lambda x: mg.where(mg.tensor(cond), x, 0.0), a)
    check(lambda y: mg.where(cond, 1.0, y), b)


def test_where_with_bool_tensor_condition_from_comparison():
    x = leaf((5,), 11, away=[0.0])
    y = mg.where(x > 0, x, x * 0.1)
    np.testing.assert_allclose(to_np(y), np.where(x.detach().numpy() > 0, x.detach().numpy(), x.detach().numpy() * 0.1))
    check(lambda t: mg.where(t > 0, t, t * 0.1), x)


@pytest.mark.parametrize("lo, hi", [(-0.5, 0.5), (None, 0.2), (-0.2, None)])
@pytest.mark.parametrize("shape", [(), (0,), (3, 4)])
def test_clip(lo, hi, shape):
    x = leaf(shape, 12, away=[v for v in (lo, hi) if v is not None])
    out = mg.clip(x, lo, hi)
    np.testing.assert_array_equal(to_np(out), np.clip(x.detach().numpy(), lo, hi))
    check(lambda t: mg.clip(t, lo, hi), x)
    check(lambda t: t.clamp(lo, hi), x)


def test_clip_gradient_inside_and_at_bounds():
    x = mg.tensor(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]), requires_grad=True)
    mg.clip(x, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [0.0, 1.0, 1.0, 1.0, 0.0])


def test_clip_with_tensor_bounds():
    x, lo = leaf((2, 3), 13), leaf((3,), 14)
    hi = lo + 1.0
    out = mg.clip(x, lo, hi)
    np.testing.assert_allclose(to_np(out), np.clip(x.detach().numpy(), lo.detach().numpy(), hi.detach().numpy()))
    check(lambda t, l: mg.clip(t, l, l + 1.0), x, lo)


def test_clip_needs_a_bound():
    with pytest.raises(ValueError, match="clip"):
        mg.clip(leaf((2,)), None, None)


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_return_bool_without_grad(op):
    import operator

    f = getattr(operator, op)
    a, b = leaf((2, 3), 15), leaf((3,), 16)
    out = f(a, b)
    assert out.dtype == np.bool_ and not out.requires_grad
    np.testing.assert_array_equal(to_np(out), f(a.detach().numpy(), b.detach().numpy()))
    np.testing.assert_array_equal(to_np(f(a, 0.0)), f(a.detach().numpy(), 0.0))
    np.testing.assert_array_equal(to_np(f(0.0, a)), f(0.0, a.detach().numpy()))


def test_logical_ops_on_bool_tensors():
    p = mg.tensor([True, False, True])
    q = mg.tensor([True, True, False])
    assert (p & q).tolist() == [True, False, False]
    assert (p | q).tolist() == [True, True, True]
    assert (p ^ q).tolist() == [False, True, True]
    assert (~p).tolist() == [False, True, False]


# -- unary math ----------------------------------------------------------------------------------

UNARY = {
    "exp": (mg.exp, np.exp, {}),
    "log": (mg.log, np.log, {"low": 0.3}),
    "sqrt": (mg.sqrt, np.sqrt, {"low": 0.3}),
    "tanh": (mg.tanh, np.tanh, {}),
    "sigmoid": (mg.sigmoid, lambda a: 1 / (1 + np.exp(-a)), {}),
    "relu": (mg.relu, lambda a: np.maximum(a, 0), {"away": [0.0]}),
    "sin": (mg.sin, np.sin, {}),
    "cos": (mg.cos, np.cos, {}),
    "abs": (mg.abs, np.abs, {"away": [0.0]}),
    "neg": (lambda t: -t, np.negative, {}),
}
UNARY_SHAPES = [(), (1,), (0,), (5,), (2, 3), (2, 0, 3)]


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", UNARY_SHAPES)
def test_unary(name, shape):
    f, npf, kw = UNARY[name]
    x = leaf(shape, 17, **kw)
    out = f(x)
    assert out.shape == shape and out.dtype == np.float64
    np.testing.assert_allclose(to_np(out), npf(x.detach().numpy()), rtol=1e-12, atol=1e-15)
    check(f, x, gg=name not in ("relu", "abs", "neg") or shape == (2, 3))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "cos", "abs"])
def test_unary_methods_and_float32(name):
    f = UNARY[name][0]
    x = mg.tensor(np.abs(rnd((3,), 18)) + 0.5, dtype=np.float32, requires_grad=True)
    out = getattr(x, name)()
    np.testing.assert_allclose(to_np(out), to_np(f(x)))
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == np.float32


def test_relu_and_abs_gradient_at_zero_is_zero():
    x = mg.tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    mg.relu(x).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [0.0, 0.0, 1.0])
    x.grad = None
    mg.abs(x).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [-1.0, 0.0, 1.0])
    assert abs(x).shape == (3,)


def test_sigmoid_is_stable_for_large_inputs():
    x = mg.tensor(np.array([-800.0, 0.0, 800.0]), requires_grad=True)
    y = mg.sigmoid(x)
    np.testing.assert_allclose(to_np(y), [0.0, 0.5, 1.0])
    y.sum().backward()
    assert np.all(np.isfinite(to_np(x.grad)))


def test_unary_accepts_array_likes():
    np.testing.assert_allclose(to_np(mg.exp([0.0, 1.0])), np.exp([0.0, 1.0]), rtol=1e-6)


# -- reductions other than sum ---------------------------------------------------------------------

AXES = [None, 0, -1, (0, 2), ()]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_mean(axis, keepdims):
    x = leaf((2, 3, 4), 20)
    out = x.mean(axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(to_np(out), x.detach().numpy().mean(axis=axis, keepdims=keepdims))
    check(lambda t: t.mean(axis=axis, keepdims=keepdims), x)
    assert mg.mean(x, dim=axis, keepdim=keepdims).shape == out.shape


def test_mean_of_ints_is_float64_and_zero_size():
    assert mg.tensor([1, 2]).mean().dtype == np.float64
    assert mg.tensor([1, 2]).mean().item() == 1.5
    with np.errstate(invalid="ignore"):
        m = mg.zeros(0, 3, dtype=np.float64).mean(axis=0)
        assert m.shape == (3,) and np.all(np.isnan(to_np(m)))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std(axis, ddof):
    x = leaf((2, 3, 4), 21)
    np.testing.assert_allclose(to_np(x.var(axis=axis, ddof=ddof)) if axis != () or ddof == 0 else 0,
                               x.detach().numpy().var(axis=axis, ddof=ddof) if axis != () or ddof == 0 else 0)
    if axis != () or ddof == 0:
        check(lambda t: t.var(axis=axis, ddof=ddof), x)
    np.testing.assert_allclose(to_np(x.std(axis=axis)), x.detach().numpy().std(axis=axis))
    if axis != ():  # std of a single element sits at sqrt's kink
        check(lambda t: t.std(axis=axis, keepdims=True), x)
    # PyTorch's spelling
    np.testing.assert_allclose(to_np(x.var(dim=1, correction=1)), x.detach().numpy().var(axis=1, ddof=1))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_max_min(op, axis, keepdims):
    x = leaf((2, 3, 4), 22)
    out = getattr(x, op)(axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(to_np(out), getattr(x.detach().numpy(), op)(axis=axis, keepdims=keepdims))
    check(lambda t: getattr(t, op)(axis=axis, keepdims=keepdims), x)
    if isinstance(axis, int):  # PyTorch's spelling: the (values, indices) pair (API.md, "NumPy or PyTorch spelling")
        assert getattr(mg, op)(x, dim=axis, keepdim=keepdims).values.shape == out.shape
    elif axis is not None:
        with pytest.raises(TypeError, match=f"{op}: dim= takes one int"):
            getattr(mg, op)(x, dim=axis, keepdim=keepdims)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_ties_split_evenly(op):
    v = 3.0 if op == "max" else -3.0
    x = mg.tensor(np.array([[v, 1.0, v], [0.0, 0.0, 0.0], [v, v, v]]), requires_grad=True)
    getattr(x, op)(axis=1).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), [[0.5, 0, 0.5], [1 / 3] * 3, [1 / 3] * 3])
    x.grad = None
    getattr(x, op)().backward()  # global: five tied extremes share one unit
    want = np.where(x.detach().numpy() == v, 0.2, 0.0)
    np.testing.assert_allclose(to_np(x.grad), want)
    # ties over a tuple of axes
    x.grad = None
    getattr(x, op)(axis=(0, 1), keepdims=True).backward(np.array([[2.0]]))
    np.testing.assert_allclose(to_np(x.grad), want * 2)


def test_max_min_0d_and_zero_size():
    s = leaf((), 23)
    assert s.max().item() == s.item()
    check(lambda t: t.max(), s)
    z = leaf((2, 0, 3), 24)
    assert z.max(axis=0).shape == (0, 3)
    check(lambda t: t.min(axis=2), z)
    with pytest.raises(ValueError, match="max"):
        z.max(axis=1)
    with pytest.raises(ValueError, match="min"):
        z.min()


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op):
    a = rnd((3, 4, 5), 25)
    x = mg.tensor(a)
    for axis in (None, 0, 1, -1):
        out = getattr(x, op)(axis=axis)
        assert out.dtype == np.int64 and not out.requires_grad
        np.testing.assert_array_equal(to_np(out), getattr(a, op)(axis=axis))
    assert getattr(mg, op)(x, dim=1, keepdim=True).shape == (3, 1, 5)
    with pytest.raises(ValueError):
        getattr(mg.zeros(0), op)()


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims):
    x = leaf((2, 3, 4), 26)
    want = np.log(np.exp(x.detach().numpy()).sum(axis=axis, keepdims=keepdims))
    np.testing.assert_allclose(to_np(x.logsumexp(axis=axis, keepdims=keepdims)), want)
    check(lambda t: t.logsumexp(axis=axis, keepdims=keepdims), x)


def test_logsumexp_is_stable_and_handles_edges():
    x = mg.tensor(np.array([1000.0, 1000.0, -np.inf]), requires_grad=True)
    y = x.logsumexp()
    np.testing.assert_allclose(y.item(), 1000.0 + np.log(2.0))
    y.backward()
    np.testing.assert_allclose(to_np(x.grad), [0.5, 0.5, 0.0])
    with np.errstate(divide="ignore"):
        e = mg.zeros(2, 0, dtype=np.float64).logsumexp(axis=1)
    np.testing.assert_array_equal(to_np(e), [-np.inf, -np.inf])
    check(lambda t: t.logsumexp(), leaf((), 27))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_log_softmax(op, axis):
    x = leaf((3, 4, 2), 28)
    a = x.detach().numpy()
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    sm = e / e.sum(axis=axis, keepdims=True)
    want = sm if op == "softmax" else np.log(sm)
    np.testing.assert_allclose(to_np(getattr(x, op)(axis)), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(to_np(getattr(mg, op)(x, dim=axis)), want, rtol=1e-12, atol=1e-15)
    check(lambda t: getattr(t, op)(axis), x)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_stable_and_zero_size(op):
    x = mg.tensor(np.array([1000.0, 0.0, -1000.0]), requires_grad=True)
    y = getattr(x, op)()
    assert np.all(np.isfinite(to_np(y)))
    (y * mg.tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
    assert np.all(np.isfinite(to_np(x.grad)))
    for shape, axis in [((2, 0, 3), 1), ((2, 0, 3), 0), ((0,), 0)]:
        z = leaf(shape, 29)
        out = getattr(z, op)(axis)
        assert out.shape == shape
        check(lambda t, a=axis: getattr(t, op)(a), z)


@pytest.mark.parametrize("shape", [(2, 1), (5, 3), (7, 16), (4, 17), (6, 40), (3, 4, 5), (2, 3, 33)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shift_by_max_matches_numpy_on_every_path(shape, dtype):
    # rows of up to 16 go through a transposed copy, longer ones through argmax; both give
    # NumPy's x - max exactly, NaN and infinities included, and never touch their input
    from minigrad.ops.reduce import shift_by_max

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[1] = np.nan
    x.reshape(-1)[-1] = np.inf
    x.reshape(-1)[-2] = -np.inf
    before = x.copy()
    with np.errstate(invalid="ignore"):
        for a in (x, x[..., ::-1], np.asfortranarray(x)):  # contiguous, strided, F-ordered
            got = shift_by_max(a, a.ndim - 1)
            np.testing.assert_array_equal(got, a - a.max(axis=-1, keepdims=True))
            assert got.dtype == a.dtype and not np.shares_memory(got, a)
    np.testing.assert_array_equal(x, before)
    got = shift_by_max(np.arange(6).reshape(2, 3), 1)  # integers: NumPy's own max
    np.testing.assert_array_equal(got, [[-2, -1, 0], [-2, -1, 0]])


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(64, 10), (64, 100), (3, 5, 7)])
def test_softmax_over_short_and_long_rows_is_c_ordered_and_right(op, shape):
    x = leaf(shape, 30)
    a = x.detach().numpy()
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    sm = e / e.sum(axis=-1, keepdims=True)
    out = getattr(x, op)()
    np.testing.assert_allclose(to_np(out), sm if op == "softmax" else np.log(sm), rtol=1e-12, atol=1e-15)
    assert out.detach().numpy().flags.c_contiguous  # a user's .view() of it works as for any result
    assert np.shares_memory(out.detach().numpy(), x.detach().numpy()) is False


_ZERO_SIZE_CASES = [((2, 0, 3), 0), ((2, 0, 3), -1), ((), None), ((1,), 0)]


@pytest.mark.parametrize(
    "op, shape, axis",
    [(op, s, a) for op in ("mean", "var", "std", "max", "min", "logsumexp", "softmax", "log_softmax")
     for s, a in _ZERO_SIZE_CASES
     if not (op in ("softmax", "log_softmax") and a is None)],  # softmax takes an axis
)
def test_reductions_on_zero_size_and_0d(op, shape, axis):
    x = leaf(shape, 49)
    if op in ("softmax", "log_softmax"):
        f = lambda t: getattr(t, op)(axis)  # noqa: E731
    else:
        f = lambda t: getattr(t, op)(axis=axis)  # noqa: E731
    out = f(x)
    if op in ("mean", "var", "std", "max", "min", "logsumexp"):
        want = {"logsumexp": lambda a: np.log(np.exp(a).sum(axis=axis))}.get(op, lambda a: getattr(a, op)(axis=axis))
        np.testing.assert_allclose(to_np(out), want(x.detach().numpy()))
    if op == "std" and x.size:
        return  # the std of one element is 0, where sqrt has no derivative: values only
    check(f, x)


# -- shape ops -------------------------------------------------------------------------------------

def test_reshape_and_view():
    x = leaf((2, 3, 4), 30)
    for shape in [(4, 6), (-1,), (24,), (2, -1), (1, 2, 3, 4, 1)]:
        out = x.reshape(*shape)
        np.testing.assert_array_equal(to_np(out), x.detach().numpy().reshape(shape))
        assert np.shares_memory(out.data, x.data)
        check(lambda t, s=shape: t.reshape(s), x)
    assert x.reshape((6, 4)).shape == x.view(6, 4).shape == mg.reshape(x, (6, 4)).shape
    check(lambda t: t.view(3, 8), x)
    s = leaf((), 31)
    assert s.reshape(1, 1).shape == (1, 1)
    check(lambda t: t.reshape(1), s)
    z = leaf((2, 0), 32)
    assert z.reshape(0, 5).shape == (0, 5)
    check(lambda t: t.reshape(-1), z)


def test_view_of_non_contiguous_raises_and_reshape_copies():
    x = leaf((3, 4), 33)
    t = x.T
    with pytest.raises(RuntimeError, match="view"):
        t.view(12)
    r = t.reshape(12)
    np.testing.assert_array_equal(to_np(r), x.detach().numpy().T.reshape(12))
    check(lambda a: a.T.reshape(12), x)


def test_transpose_permute_swapaxes():
    x = leaf((2, 3, 4), 34)
    a = x.detach().numpy()
    cases = [
        (lambda t: t.T, a.T),
        (lambda t: t.transpose(), a.transpose()),
        (lambda t: t.transpose(0, 2), a.swapaxes(0, 2)),
        (lambda t: t.transpose((1, 2, 0)), a.transpose(1, 2, 0)),
        (lambda t: t.permute(2, 0, 1), a.transpose(2, 0, 1)),
        (lambda t: t.permute((1, 0, 2)), a.transpose(1, 0, 2)),
        (lambda t: mg.permute(t, -1, 0, 1), a.transpose(2, 0, 1)),
        (lambda t: t.swapaxes(-1, 0), a.swapaxes(-1, 0)),
        (lambda t: mg.swapaxes(t, 1, 2), a.swapaxes(1, 2)),
        (lambda t: mg.transpose(t[0]), a[0].T),
        (lambda t: t[0].transpose(0, 1), a[0].T),
    ]
    for f, want in cases:
        out = f(x)
        np.testing.assert_array_equal(to_np(out), want)
        assert np.shares_memory(out.data, x.data)
        check(f, x)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_shape_ops_on_0d_and_zero_size(shape):
    x = leaf(shape, 35)
    a = x.detach().numpy()
    cases = [(lambda t: t.T, a.T), (lambda t: t.reshape(-1), a.reshape(-1)), (lambda t: t.flatten(), a.reshape(-1)),
             (lambda t: t.unsqueeze(0), a[None]), (lambda t: t[None, ...], a[None, ...]),
             (lambda t: t.broadcast_to((2,) + shape), np.broadcast_to(a, (2,) + shape))]
    if x.ndim:
        rev = tuple(range(x.ndim))[::-1]
        cases += [(lambda t: t.permute(*rev), a.transpose(rev)), (lambda t: t.swapaxes(0, -1), a.swapaxes(0, -1)),
                  (lambda t: t[::-1], a[::-1]), (lambda t: mg.concatenate([t, t]), np.concatenate([a, a]))]
    for f, want in cases:
        out = f(x)
        assert out.shape == want.shape
        np.testing.assert_array_equal(to_np(out), want)
        check(f, x)


def test_mT():
    x = leaf((2, 3, 4), 35)
    np.testing.assert_array_equal(to_np(x.mT), x.detach().numpy().swapaxes(-1, -2))


def test_squeeze_unsqueeze():
    x = leaf((1, 3, 1, 2), 36)
    a = x.detach().numpy()
    assert x.squeeze().shape == (3, 2)
    assert x.squeeze(0).shape == (3, 1, 2)
    assert x.squeeze(-2).shape == (1, 3, 2)
    assert x.squeeze((0, 2)).shape == (3, 2)
    assert x.squeeze(dim=2).shape == (1, 3, 2)
    assert mg.squeeze(x, 0).shape == (3, 1, 2)
    with pytest.raises(ValueError, match="squeeze"):
        x.squeeze(1)
    for d, shape in [(0, (1, 1, 3, 1, 2)), (4, (1, 3, 1, 2, 1)), (-1, (1, 3, 1, 2, 1)), (-5, (1, 1, 3, 1, 2))]:
        out = x.unsqueeze(d)
        assert out.shape == shape
        np.testing.assert_array_equal(to_np(out), np.expand_dims(a, d))
    with pytest.raises(IndexError):
        x.unsqueeze(5)
    check(lambda t: t.squeeze(), x)
    check(lambda t: t.unsqueeze(1), x)
    check(lambda t: mg.unsqueeze(t, -1), leaf((), 37))
    assert leaf((), 37).unsqueeze(0).shape == (1,)


@pytest.mark.parametrize(
    "src, target",
    [((3,), (2, 3)), ((2, 1), (2, 4)), ((1, 1), (3, 2, 5)), ((), (2, 2)), ((3,), (0, 3)), ((2, 3), (2, 3))],
)
def test_broadcast_to_and_expand(src, target):
    x = leaf(src, 38)
    out = x.broadcast_to(target)
    np.testing.assert_array_equal(to_np(out), np.broadcast_to(x.detach().numpy(), target))
    check(lambda t: t.broadcast_to(target), x)
    check(lambda t: mg.broadcast_to(t, target), x)
    sizes = tuple(-1 if i >= len(target) - len(src) and src[i - len(target) + len(src)] == s else s
                  for i, s in enumerate(target))
    out2 = x.expand(*sizes)
    assert out2.shape == target
    check(lambda t: t.expand(sizes), x)


def test_broadcast_gradient_sums_back():
    x = mg.tensor(np.array([[1.0], [2.0]]), requires_grad=True)
    y = x.broadcast_to((3, 2, 4))
    y.backward(np.ones((3, 2, 4)))
    np.testing.assert_array_equal(to_np(x.grad), [[12.0], [12.0]])


def test_sum_to_is_the_inverse_of_broadcasting():
    x = leaf((2, 3, 4), 39)
    for shape in [(3, 4), (1, 4), (3, 1), (2, 1, 4), (), (1,), (2, 3, 4)]:
        out = mg.sum_to(x, shape)
        assert out.shape == shape
        want = x.detach().numpy()
        lead = 3 - len(shape)
        want = want.sum(axis=tuple(range(lead))) if lead else want
        want = want.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1), keepdims=True)
        np.testing.assert_allclose(to_np(out), want)
        check(lambda t, s=shape: mg.sum_to(t, s), x)
    with pytest.raises(ValueError, match="sum_to"):
        mg.sum_to(x, (5, 4))


def test_flatten():
    x = leaf((2, 3, 4), 40)
    assert x.flatten().shape == (24,)
    assert x.flatten(1).shape == (2, 12)
    assert x.flatten(0, 1).shape == (6, 4)
    assert x.flatten(-2, -1).shape == (2, 12)
    assert mg.flatten(x).shape == (24,)
    assert leaf((), 41).flatten().shape == (1,)
    assert x.ravel().shape == (24,)
    check(lambda t: t.flatten(1), x)


def test_views_share_storage_and_version():
    x = mg.tensor(np.arange(6.0).reshape(2, 3))
    v = x[0]
    v.data[0] = 100.0
    assert x.numpy()[0, 0] == 100.0
    assert x.T.stride() == (1, 3) and not x.T.is_contiguous()
    assert x[:, 1:].storage_offset() == 1


# -- indexing -------------------------------------------------------------------------------------

BASIC = [
    (1,),
    (-1,),
    (slice(None, None, -1),),
    (slice(1, None), 2),
    (Ellipsis, 1),
    (None, 0),
    (0, slice(None), None, slice(1, 3)),
    (slice(None, None, 2), slice(None), -1),
    (1, 2, 3),
    (slice(5, 7),),  # empty slice
]


@pytest.mark.parametrize("idx", BASIC, ids=[str(i) for i in BASIC])
def test_getitem_basic_is_a_view(idx):
    x = leaf((2, 3, 4), 42)
    out = x[idx]
    want = x.detach().numpy()[idx]
    assert out.shape == want.shape
    np.testing.assert_array_equal(to_np(out), want)
    if want.size:
        assert np.shares_memory(out.data, x.data)
    check(lambda t: t[idx], x)


ADVANCED = [
    [0, 0, 1],
    ([1, 0], slice(None), [3, 3]),
    (slice(None), [2, 2, 0]),
    (np.array([[0, 1], [1, 1]]),),
    ([0, 1], [2, 2]),
    (Ellipsis, [0, 0, 0]),
    ([-1, 0, -1],),
    ([],),
    (np.array([True, False]),),
    (slice(None), np.array([True, False, True])),
]


@pytest.mark.parametrize("idx", ADVANCED, ids=[str(i) for i in range(len(ADVANCED))])
def test_getitem_advanced(idx):
    x = leaf((2, 3, 4), 43)
    np_idx = tuple(np.asarray(i, dtype=np.int64) if isinstance(i, list) else i
                   for i in (idx if isinstance(idx, tuple) else (idx,)))
    out = x[idx]
    want = x.detach().numpy()[np_idx]
    assert out.shape == want.shape
    np.testing.assert_array_equal(to_np(out), want)
    check(lambda t: t[idx], x)


def test_getitem_repeated_indices_accumulate():
    x = mg.tensor(np.arange(5.0), requires_grad=True)
    x[[0, 0, 0, 3, 3, 4]].sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [3.0, 0.0, 0.0, 2.0, 1.0])
    x.grad = None
    idx = mg.tensor(np.array([[1, 1], [1, 2]]))
    y = x[idx]
    assert y.shape == (2, 2)
    y.backward(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(to_np(x.grad), [0.0, 6.0, 4.0, 0.0, 0.0])
    m = mg.tensor(np.zeros((3, 2)), requires_grad=True)
    m[[2, 2], [1, 1]].sum().backward()
    np.testing.assert_array_equal(to_np(m.grad), [[0, 0], [0, 0], [0, 2.0]])


def test_getitem_with_tensor_and_mask_indices():
    x = leaf((4, 3), 44)
    mask = x > 0
    out = x[mask]
    np.testing.assert_array_equal(to_np(out), x.detach().numpy()[x.detach().numpy() > 0])
    check(lambda t: t[mask], x)
    i = mg.tensor([3, 1])
    np.testing.assert_array_equal(to_np(x[i]), x.detach().numpy()[[3, 1]])
    np.testing.assert_array_equal(to_np(x[mg.tensor(2)]), x.detach().numpy()[2])  # 0-d int tensor: basic


def test_getitem_0d_and_chained():
    x = leaf((3, 4), 45)
    s = x[1, 2]
    assert s.shape == () and s.item() == x.detach().numpy()[1, 2]
    check(lambda t: t[1:][:, ::2][[0, 1, 1]], x)
    check(lambda t: t[None, ..., None][0, :, 1], x)


def test_getitem_out_of_range_names_shape():
    x = leaf((2, 3), 46)
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        x[5]
    with pytest.raises(IndexError):
        x[[0, 7]]
    with pytest.raises(IndexError):
        x[np.array([0.5])]


def test_index_add():
    v = leaf((3,), 47)
    out = mg.index_add((4,), mg.tensor([0, 0, 3]), v)
    a = v.detach().numpy()
    np.testing.assert_allclose(to_np(out), [a[0] + a[1], 0, 0, a[2]])
    check(lambda t: mg.index_add((4,), [0, 0, 3], t), v)


def test_iteration_and_len():
    x = leaf((3, 2), 48)
    rows = list(x)
    assert len(rows) == len(x) == 3
    mg.stack(rows).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.ones((3, 2)))


# -- joining --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "shapes, axis",
    [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 3)], -1), ([(2, 0), (2, 3)], 1),
     ([(3,)], 0), ([(1, 2, 2), (1, 2, 2)], -2), ([(0, 3), (0, 3)], 0)],
)
def test_concatenate(shapes, axis):
    xs = [leaf(s, 50 + i) for i, s in enumerate(shapes)]
    out = mg.concatenate(xs, axis=axis)
    want = np.concatenate([x.detach().numpy() for x in xs], axis=axis)
    np.testing.assert_array_equal(to_np(out), want)
    np.testing.assert_array_equal(to_np(mg.cat(xs, dim=axis)), want)
    check(lambda *ts: mg.concatenate(ts, axis), *xs)


def test_concatenate_with_constants_and_errors():
    x = leaf((2,), 55)
    out = mg.concatenate([x, np.array([7.0]), mg.tensor(np.array([8.0]))])
    out.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [1.0, 1.0])
    with pytest.raises(ValueError, match="concatenate"):
        mg.concatenate([leaf((2, 3)), leaf((3, 2))], axis=0)
    with pytest.raises(ValueError, match="concatenate"):
        mg.concatenate([])
    with pytest.raises(ValueError, match="concatenate"):
        mg.concatenate([leaf(()), leaf(())])
    with pytest.raises(IndexError):
        mg.concatenate([leaf((2,)), leaf((2,))], axis=1)


@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (3,)])
@pytest.mark.parametrize("axis", [0, -1, "last"])
def test_stack(shape, axis):
    axis = len(shape) if axis == "last" else axis
    xs = [leaf(shape, 60 + i) for i in range(3)]
    out = mg.stack(xs, axis=axis)
    want = np.stack([x.detach().numpy() for x in xs], axis=axis)
    np.testing.assert_array_equal(to_np(out), want)
    np.testing.assert_array_equal(to_np(mg.stack(xs, dim=axis)), want)
    check(lambda *ts: mg.stack(ts, axis), *xs)


def test_stack_errors():
    with pytest.raises(ValueError, match="stack"):
        mg.stack([leaf((2,)), leaf((3,))])
    with pytest.raises(IndexError, match="stack"):
        mg.stack([leaf((2,)), leaf((2,))], axis=3)
    with pytest.raises(ValueError, match="stack"):
        mg.stack([])


@pytest.mark.parametrize("sa, sb", [((3,), (4,)), ((2, 2), (3,)), ((0,), (2,)), ((), (2,))])
def test_outer(sa, sb):
    a, b = leaf(sa, 70), leaf(sb, 71)
    out = mg.outer(a, b)
    np.testing.assert_allclose(to_np(out), np.outer(a.detach().numpy(), b.detach().numpy()))
    check(mg.outer, a, b)


MATMUL = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((3,), (2, 3, 4)),
    ((2, 4, 3), (3,)),
    ((2, 1, 2, 3), (4, 3, 2)),
    ((1, 2, 3), (2, 1, 3, 2)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((0, 2, 3), (3, 1)),
]


@pytest.mark.parametrize("sa, sb", MATMUL)
def test_matmul(sa, sb):
    a, b = leaf(sa, 80), leaf(sb, 81)
    out = mg.matmul(a, b)
    want = np.matmul(a.detach().numpy(), b.detach().numpy())
    assert out.shape == want.shape
    np.testing.assert_allclose(to_np(out), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(a @ b), want, rtol=1e-12, atol=1e-12)
    check(mg.matmul, a, b)


def test_matmul_with_arrays_and_methods():
    a = leaf((2, 3), 82)
    c = dev(rnd((3, 2), 83))
    np.testing.assert_allclose(to_np(a @ c), a.detach().numpy() @ to_np(c))
    np.testing.assert_allclose(to_np(c @ a), to_np(c) @ a.detach().numpy())
    np.testing.assert_allclose(to_np(a.matmul(c)), a.detach().numpy() @ to_np(c))
    np.testing.assert_allclose(to_np(mg.dot(a[0], a[1])), a.detach().numpy()[0] @ a.detach().numpy()[1])
    check(lambda t: c @ t, a)


def test_matmul_gradient_values():
    a = mg.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    b = mg.tensor(np.array([[5.0], [6.0]]), requires_grad=True)
    (a @ b).sum().backward()
    np.testing.assert_array_equal(to_np(a.grad), [[5.0, 6.0], [5.0, 6.0]])
    np.testing.assert_array_equal(to_np(b.grad), [[4.0], [6.0]])


# -- casts, clone, devices ---------------------------------------------------------------------

def test_astype_between_floats_is_differentiable():
    x = mg.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = x.astype(np.float64)
    assert y.dtype == np.float64 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(to_np(x.grad), [2.0, 4.0])
    assert not x.astype(np.int64).requires_grad
    assert x.double().dtype == np.float64 and x.float() is x
    # float32 in the middle: a coarser step keeps its rounding out of the difference quotient
    assert mg.gradcheck(lambda t: t.astype(np.float32).astype(np.float64), leaf((3,), 84), eps=1e-2, atol=1e-3)


def test_clone_is_a_copy_with_gradient():
    x = leaf((2, 2), 85)
    c = x.clone()
    assert not np.shares_memory(c.data, x.data)
    check(lambda t: t.clone(), x)


def test_to_cpu_is_identity():
    x = mg.tensor(rnd((2,), 86), requires_grad=True, device="cpu")
    assert x.to("cpu") is x and x.cpu() is x


def test_square_by_mul_gives_each_use_its_gradient():
    a = np.arange(1.0, 7.0).reshape(2, 3)
    x = mg.tensor(a.copy(), requires_grad=True)
    (x * x * 3.0).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), 6 * a)
    # two leaves over one array: each gets g * the other
    shared = mg.tensor(a.copy()).data
    p, q = mg.tensor(shared, requires_grad=True), mg.tensor(shared, requires_grad=True)
    (p * q).sum().backward()
    np.testing.assert_allclose(to_np(p.grad), a)
    np.testing.assert_allclose(to_np(q.grad), a)
    mg.gradcheck(lambda t: t * t, mg.tensor(a.copy(), requires_grad=True))
    mg.gradgradcheck(lambda t: t * t, mg.tensor(a.copy(), requires_grad=True))
    x = mg.tensor(a.copy(), requires_grad=True)
    y = x + 1.0
    (y * y).sum().backward()  # a non-leaf squared: one Node on both sides
    np.testing.assert_allclose(to_np(x.grad), 2 * (a + 1))
    # squared under a sum: the gradient arrives as one value broadcast, and goes back as 2 g x
    for dtype in (np.float32, np.float64):
        x = mg.tensor(a.astype(dtype), requires_grad=True)
        (x * x).sum().backward()
        assert x.grad.dtype == dtype
        np.testing.assert_allclose(to_np(x.grad), 2 * a, rtol=1e-6)
    x = mg.zeros(2, 0, 3, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.shape == (2, 0, 3)


# -- comparison methods, max and argmax over an axis -----------------------------------------------

def test_comparison_methods():
    a, b = mg.tensor([1.0, 2.0, 3.0]), mg.tensor([3.0, 2.0, 1.0])
    for name, ref in [("eq", [False, True, False]), ("ne", [True, False, True]), ("lt", [True, False, False]),
                      ("le", [True, True, False]), ("gt", [False, False, True]), ("ge", [False, True, True])]:
        assert getattr(a, name)(b).tolist() == ref, name


def test_max_over_an_axis_returns_values_and_argmax_the_indices():
    t = mg.tensor([[1.0, 5.0], [7.0, 2.0]])
    assert t.max(axis=1).tolist() == [5.0, 7.0]
    assert t.argmax(axis=1).tolist() == [1, 0]


# -- x ** 0 and 0 ** y -----------------------------------------------------------------------------

def test_pow_zero_exponent_gradient_at_zero_is_zero():
    x = leaf_of([0.0, 1.0, -2.0])
    (x ** 0).sum().backward()
    exact(x.grad, [0, 0, 0])


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


# -- NaN / inf do not leak through masks: masking rules select, never multiply ---------------------

def test_log_relu_times_zero_gives_zero_gradient_below_zero():
    y = leaf_of([-1.0, -0.5, 2.0])
    (mg.log(mg.relu(y)) * 0).sum().backward()
    exact(y.grad, [0, 0, 0])


def test_std_of_a_constant_input_has_zero_gradient():
    y = leaf_of([3.0, 3.0, 3.0])
    y.std().backward()
    exact(y.grad, [0, 0, 0])


def test_clip_selects_a_nan_upstream_gradient_away():
    y = leaf_of([-1.0, 0.5, 2.0])
    mg.clip(y, 0.0, 1.0).backward(mg.tensor([np.nan, 1.0, np.inf], dtype=mg.float64))
    exact(y.grad, [0, 1, 0])


def test_max_ties_and_nan_upstream_select():
    y = leaf_of([[1.0, 5.0, 5.0], [2.0, 0.0, 1.0]])
    y.max(axis=0).backward(mg.tensor([np.nan, np.inf, 2.0], dtype=mg.float64))
    g = to_np(y.grad)
    assert np.isnan(g[1, 0]) and g[0, 0] == 0          # the nan goes to the winner only
    assert np.isinf(g[0, 1]) and g[1, 1] == 0
    np.testing.assert_array_equal(g[:, 2], [2.0, 0.0])
    z = leaf_of([1.0, 2.0, 2.0])
    z.max().backward()
    exact(z.grad, [0, 0.5, 0.5])  # ties share the gradient evenly (PyTorch's max() without a dim)
    m = leaf_of([1.0, -3.0, 2.0])
    m.min(axis=0).backward(mg.tensor(1.0, dtype=mg.float64))
    exact(m.grad, [0, 1, 0])


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
    exact(y.grad, [1, 0, 1])


# -- softmax over a tuple axis, std's second derivative at a constant row, mean with an integer dtype ---

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


def test_mean_with_an_integer_dtype_is_numpys():
    # the sum was taken in int64, then divided: a float64 2.5 where NumPy gives int64 2
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for kwargs in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
        want = (-a).mean(dtype=np.int64, **kwargs)
        got = mg.tensor(-a).mean(dtype=np.int64, **kwargs)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        exact(got, want)
    assert mg.tensor(np.arange(6)).mean(dtype=np.int32).dtype == np.int32
    assert mg.tensor(a).mean(dtype=np.float16).dtype == np.float16


# -- an op whose operands are all Python numbers; NumPy scalar operands are weak -------------------

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
    exact(t, want)
    assert t.device == mg.tensor(1.0).device


def test_numbers_only_follow_the_default_dtype():
    old = mg.get_default_dtype()
    mg.set_default_dtype(np.float64)
    try:
        assert mg.exp(1.0).dtype == np.float64
    finally:
        mg.set_default_dtype(old)


@pytest.mark.parametrize("scalar", [np.float64(2), np.float32(2), np.int64(2), np.float16(2)])
def test_numpy_scalar_operands_keep_the_tensors_dtype(scalar):
    # np.float64 is a Python float subclass, so it went through as a strongly typed NumPy scalar:
    # float32 * np.float64(2) was float64, where np.float32(2) and np.int64(2) kept float32 (and
    # torch.ones(2) * np.float64(2) is float32)
    t = mg.tensor([1.0, 2.0])
    assert (t * scalar).dtype == np.float32 and (scalar * t).dtype == np.float32
    assert (t + scalar).dtype == np.float32 and mg.maximum(t, scalar).dtype == np.float32
    exact(t * scalar, [2.0, 4.0])
