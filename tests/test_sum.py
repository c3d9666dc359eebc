"""Sum, the reference reduction: exactly the table in API.md, checked against NumPy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from conftest import to_np


def np_axis(axis):
    """The same axis spec as NumPy accepts it (NumPy takes no lists or arrays)."""
    if isinstance(axis, np.ndarray):
        return tuple(np.atleast_1d(axis).tolist())
    return tuple(axis) if isinstance(axis, list) else axis


def t64(a, requires_grad=False):
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# -- the worked example and the spec's shape examples ----------------------------------------

WORKED = np.arange(1, 49).reshape(2, 3, 2, 4)


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1, -2, -3, -4])
def test_worked_example_each_dim_keepdim(dim):
    x = mg.tensor(WORKED)
    out = x.sum(dim=dim, keepdim=True)
    want = WORKED.sum(axis=dim, keepdims=True)
    assert out.shape == want.shape
    assert out.dtype == np.int64
    np.testing.assert_array_equal(to_np(out), want)


def test_worked_example_values():
    x = mg.tensor(WORKED)
    # spelled out so that a broken NumPy comparison could not hide a wrong answer
    assert x.sum(dim=0, keepdim=True).tolist()[0][0][0] == [26, 28, 30, 32]
    assert x.sum(dim=1, keepdim=True).tolist()[1][0][1] == [111, 114, 117, 120]
    assert x.sum(dim=2, keepdim=True).tolist()[0][2][0] == [38, 40, 42, 44]
    assert x.sum(dim=3, keepdim=True).tolist()[1][2] == [[170], [186]]
    assert x.sum().item() == 48 * 49 // 2


@pytest.mark.parametrize(
    "axis, keepdims, shape",
    [([2, 3], True, (6, 12, 1, 1)), ([1], False, (6, 10, 24)), ([-2], False, (6, 12, 24))],
)
def test_spec_shape_examples(axis, keepdims, shape):
    x = mg.zeros(6, 12, 10, 24)
    assert x.sum(axis=axis, keepdims=keepdims).shape == shape
    assert mg.sum(x, dim=axis, keepdim=keepdims).shape == shape


# -- axis forms ------------------------------------------------------------------------------

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)


@pytest.mark.parametrize(
    "axis",
    [None, 0, 3, -1, -4, (0,), (1, 2), (-1, 0), [1], [0, 2, 3], [-3, -1], (0, 1, 2, 3),
     np.array([0, 2]), np.array([-1]), np.array([1, 2], dtype=np.uint8), np.int64(2), np.int32(-2)],
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_axis_forms_match_numpy(axis, keepdims):
    want = A.sum(axis=np_axis(axis), keepdims=keepdims)
    out = mg.tensor(A).sum(axis=axis, keepdims=keepdims)
    assert out.shape == want.shape
    np.testing.assert_allclose(to_np(out), want)
    out2 = mg.sum(mg.tensor(A), axis, keepdims)  # positional form of the function
    np.testing.assert_allclose(to_np(out2), want)


def test_axis_as_integer_tensor():
    out = mg.tensor(A).sum(axis=mg.tensor(np.array([0, -1])))
    np.testing.assert_allclose(to_np(out), A.sum(axis=(0, 3)))


@pytest.mark.parametrize("data", [A, np.arange(6).reshape(2, 3), np.array(5.0), np.zeros((0, 3))])
def test_empty_axis_is_an_identity_copy(data):
    x = mg.tensor(data)
    out = x.sum(axis=())
    assert out.shape == data.shape
    np.testing.assert_array_equal(to_np(out), np.sum(data, axis=()))
    assert out.dtype == np.sum(data, axis=()).dtype
    # a copy: writing to the result leaves the input alone
    if out.size:
        out.data.reshape(-1)[0] = 1000
        assert to_np(x).reshape(-1)[0] == data.reshape(-1)[0]
    assert out.sum(axis=(), keepdims=True).shape == data.shape
    assert x.sum(axis=[]).shape == data.shape


def test_empty_axis_gradient_is_identity():
    x = t64(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x.sum(axis=())
    assert y.requires_grad and y.shape == (2, 3)
    g = np.arange(6.0).reshape(2, 3) + 1
    y.backward(g)
    np.testing.assert_array_equal(to_np(x.grad), g)
    assert mg.gradcheck(lambda t: t.sum(axis=()), x)


def test_keepdims_and_alias_positional_equivalence():
    x = mg.tensor(A)
    assert x.sum(1, True).shape == (2, 1, 4, 5)
    assert x.sum(axis=1, keepdim=True).shape == (2, 1, 4, 5)
    assert x.sum(dim=1, keepdims=True).shape == (2, 1, 4, 5)
    assert x.sum(dim=(0, 2)).shape == (3, 5)
    assert x.sum(None, True).shape == (1, 1, 1, 1)


def test_zero_d_input():
    s = mg.tensor(np.float64(3.5))
    assert s.sum().shape == () and s.sum().item() == 3.5
    assert s.sum(keepdims=True).shape == ()
    assert s.sum(axis=()).item() == 3.5
    with pytest.raises(mg.AxisError):
        s.sum(axis=0)
    with pytest.raises(mg.AxisError):
        s.sum(axis=-1)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), ()])
def test_zero_size_dims(axis):
    a = np.zeros((2, 0, 3))
    out = mg.tensor(a).sum(axis=axis)
    want = a.sum(axis=axis)
    assert out.shape == want.shape
    np.testing.assert_array_equal(to_np(out), want)


def test_sum_of_array_likes():
    assert mg.sum([1, 2, 3]).item() == 6
    assert mg.sum(np.ones((2, 2)), axis=0).tolist() == [2.0, 2.0]


# -- dtypes ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "dtype, want",
    [(np.bool_, np.int64), (np.int8, np.int64), (np.int16, np.int64), (np.int32, np.int64),
     (np.int64, np.int64), (np.uint8, np.uint64), (np.uint16, np.uint64), (np.uint32, np.uint64),
     (np.uint64, np.uint64), (np.float16, np.float16), (np.float32, np.float32),
     (np.float64, np.float64)],
)
@pytest.mark.parametrize("axis", [None, 1, ()])
def test_result_dtype_follows_numpy(dtype, want, axis):
    a = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    out = mg.tensor(a).sum(axis=axis)
    assert out.dtype == want
    assert out.dtype == a.sum(axis=axis).dtype  # the same answer NumPy gives
    np.testing.assert_array_equal(to_np(out), a.sum(axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_dtype_argument_is_accumulation_and_result_dtype(dtype):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    out = mg.tensor(a).sum(axis=0, dtype=dtype)
    assert out.dtype == dtype
    np.testing.assert_array_equal(to_np(out), a.sum(axis=0, dtype=dtype))
    assert mg.tensor(a).sum(axis=(), dtype=dtype).dtype == dtype


def test_dtype_accumulates_wider():
    # 300 ones of uint8 overflow a uint8 accumulator; dtype=uint8 wraps, default does not
    a = np.full(300, 1, dtype=np.uint8)
    assert mg.tensor(a).sum().item() == 300
    assert mg.tensor(a).sum(dtype=np.uint8).item() == 300 % 256
    x = mg.tensor(np.full(4096, 0.1, dtype=np.float16))
    assert abs(x.sum(dtype=np.float64).item() - 409.6) < 0.2


def test_integer_sum_carries_no_gradient():
    x = t64([1.0, 2.0], requires_grad=True)
    y = x.sum(dtype=np.int64)
    assert y.dtype == np.int64 and not y.requires_grad


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [4, -5, (0, 4), [1, -7], np.array([9])])
def test_out_of_range_is_axis_error(axis):
    x = mg.tensor(A)
    with pytest.raises(mg.AxisError) as ei:
        x.sum(axis=axis)
    e = ei.value
    assert isinstance(e, IndexError) and isinstance(e, ValueError)
    msg = str(e)
    bad = [a for a in np.atleast_1d(axis).tolist() if not -4 <= a < 4][0]
    assert str(bad) in msg and "4" in msg and "ndim" in msg and "sum" in msg


def test_axis_error_is_catchable_as_either_builtin():
    x = mg.tensor(A)
    with pytest.raises(IndexError):
        x.sum(axis=10)
    with pytest.raises(ValueError):
        x.sum(axis=10)
    assert issubclass(mg.AxisError, mg.MinigradError)


@pytest.mark.parametrize("axis, dup", [((1, -3), 1), ((0, 0), 0), ([2, -2], 2), (np.array([3, -1]), 3)])
def test_duplicate_axes_are_value_error_naming_it(axis, dup):
    with pytest.raises(ValueError, match="duplicate") as ei:
        mg.tensor(A).sum(axis=axis)
    assert not isinstance(ei.value, mg.AxisError)
    assert str(dup) in str(ei.value)


@pytest.mark.parametrize("axis", [1.0, "1", (1.0,), (0, "a"), np.array([0.0]), True, (True,), 1.5j,
                                  np.array([[0, 1]])])
def test_wrong_axis_types_are_type_error(axis):
    with pytest.raises(TypeError):
        mg.tensor(A).sum(axis=axis)


def test_both_spellings_are_type_error():
    x = mg.tensor(A)
    with pytest.raises(TypeError, match="dim"):
        x.sum(axis=0, dim=0)
    with pytest.raises(TypeError, match="keepdim"):
        x.sum(keepdims=True, keepdim=True)
    with pytest.raises(TypeError):
        mg.sum(x, 0, dim=1)
    with pytest.raises(TypeError):
        mg.sum(x, axis=None, dim=None)  # both given, even as None


# -- backward --------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), [1, 2], (), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_gradcheck(axis, keepdims):
    x = t64(np.random.default_rng(1).standard_normal((2, 3, 2)), requires_grad=True)
    assert mg.gradcheck(lambda t: t.sum(axis=axis, keepdims=keepdims), x)
    assert mg.gradgradcheck(lambda t: (t * t).sum(axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((2, 0, 3), 1), ((2, 0, 3), (0, 2)), ((), None), ((), ())])
def test_gradcheck_zero_size_and_0d(shape, axis):
    x = t64(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    assert mg.gradcheck(lambda t: t.sum(axis=axis), x)
    y = x.sum(axis=axis)
    y.backward(np.ones(y.shape))
    assert x.grad.shape == shape


@pytest.mark.parametrize("axis, keepdims", [(1, False), ((0, 2), False), (1, True), (None, False)])
def test_backward_is_a_broadcast_view(axis, keepdims):
    x = mg.tensor(np.ones((3, 4, 5), dtype=np.float32), requires_grad=True)
    y = x.sum(axis=axis, keepdims=keepdims)
    g = np.random.default_rng(0).standard_normal(y.shape).astype(np.float32)
    y.backward(g)
    gx = x.grad.data
    assert gx.shape == (3, 4, 5)
    # a view: the reduced axes have stride 0 (no memory was filled)
    axes = range(3) if axis is None else np.atleast_1d(axis)
    for a in axes:
        assert gx.strides[a] == 0
    np.testing.assert_allclose(to_np(gx), np.broadcast_to(np.reshape(g, np.sum(np.ones((3, 4, 5)), axis=np_axis(axis), keepdims=True).shape), (3, 4, 5)))


@pytest.mark.parametrize("in_dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("acc", [None, np.float32, np.float64])
def test_backward_cast_to_input_dtype(in_dtype, acc):
    x = mg.tensor(np.ones((2, 3), dtype=in_dtype), requires_grad=True)
    y = x.sum(axis=1, dtype=acc)
    assert y.dtype == (in_dtype if acc is None else acc)
    y.backward(np.full(2, 2.0))
    assert x.grad.dtype == in_dtype
    assert x.grad.data.strides[1] == 0  # still a view after the cast
    np.testing.assert_array_equal(to_np(x.grad), np.full((2, 3), 2.0))


def test_backward_accumulates_and_second_order():
    x = t64([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x.sum(axis=0) * mg.tensor(np.array([1.0, 10.0]))).sum().backward()
    x.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [[2.0, 11.0], [2.0, 11.0]])
    x.grad = None
    y = (x.sum(axis=1) ** 2).sum()
    (g,) = mg.grad(y, x, create_graph=True)
    np.testing.assert_array_equal(to_np(g), [[6.0, 6.0], [14.0, 14.0]])
    (gg,) = mg.grad(g.sum(), x)
    np.testing.assert_array_equal(to_np(gg), np.full((2, 2), 4.0))


def test_tape_records_sum_axes():
    x = t64(np.ones((2, 3)), requires_grad=True)
    tape = mg.autograd.tape(x.sum(axis=-1, keepdims=True))
    assert [n.op for n in tape] == ["sum"]
    assert tape[0].output_shape == (2, 1)


# -- property tests against NumPy ------------------------------------------------------------

@st.composite
def sum_cases(draw):
    ndim = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    form = draw(st.sampled_from(["none", "int", "tuple", "list", "array", "empty"]))
    if form == "none" or (ndim == 0 and form not in ("empty", "none")):
        axis = None
    elif form == "empty":
        axis = ()
    elif form == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        # write each chosen axis as itself or as its negative twin
        signed = [a - ndim if draw(st.booleans()) else a for a in chosen]
        axis = tuple(signed) if form == "tuple" else signed if form == "list" else np.array(signed, dtype=np.int64)
    keepdims = draw(st.booleans())
    dtype = draw(st.sampled_from([np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32,
                                  np.float32, np.float64]))
    return shape, axis, keepdims, np.dtype(dtype)


@settings(max_examples=100, deadline=None)
@given(sum_cases(), st.integers(0, 2**31))
def test_property_sum_matches_numpy(case, seed):
    shape, axis, keepdims, dtype = case
    rng = np.random.default_rng(seed)
    a = (rng.integers(0, 5, size=shape)).astype(dtype)
    want = np.sum(a, axis=np_axis(axis), keepdims=keepdims)
    out = mg.tensor(a).sum(axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(want)
    assert out.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(to_np(out), want)


@settings(max_examples=50, deadline=None)
@given(sum_cases(), st.integers(0, 2**31))
def test_property_sum_backward_shape_and_value(case, seed):
    shape, axis, keepdims, _ = case
    rng = np.random.default_rng(seed)
    x = t64(rng.standard_normal(shape), requires_grad=True)
    y = x.sum(axis=axis, keepdims=keepdims)
    g = rng.standard_normal(y.shape)
    y.backward(g)
    assert x.grad.shape == shape and x.grad.dtype == np.float64
    keep_shape = np.sum(np.zeros(shape), axis=np_axis(axis), keepdims=True).shape
    np.testing.assert_allclose(to_np(x.grad), np.broadcast_to(np.reshape(g, keep_shape), shape))
