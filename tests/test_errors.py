"""Bad input gets a clear error that names the op and the shapes or values involved."""
import numpy as np
import pytest

import minigrad as mg
from conftest import dev, raises_naming


def ones(*shape, requires_grad=False):
    return mg.ones(*shape, dtype=np.float64, requires_grad=requires_grad)


# -- broadcasting ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, f",
    [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
     ("div", lambda a, b: a / b), ("pow", lambda a, b: a ** b), ("maximum", mg.maximum),
     ("minimum", mg.minimum), ("lt", lambda a, b: a < b), ("eq", lambda a, b: a == b)],
)
def test_broadcast_mismatch_names_op_and_shapes(name, f):
    a, b = ones(2, 3, requires_grad=True), ones(4, 3)
    with pytest.raises(ValueError) as ei:
        f(a, b)
    msg = str(ei.value)
    assert name in msg and "(2, 3)" in msg and "(4, 3)" in msg


def test_broadcast_mismatch_with_array_operand():
    with pytest.raises(ValueError, match=r"mul.*\(2, 3\).*\(4,\)"):
        ones(2, 3) * dev(np.ones(4))


def test_where_mismatch_names_all_shapes():
    with pytest.raises(ValueError) as ei:
        mg.where(dev(np.ones((2, 3), bool)), ones(2, 3), ones(5))
    msg = str(ei.value)
    assert "where" in msg and "(2, 3)" in msg and "(5,)" in msg


def test_broadcast_to_and_expand_mismatch():
    with pytest.raises(ValueError, match=r"broadcast_to.*\(2, 3\).*\(3, 3\)"):
        ones(2, 3).broadcast_to((3, 3))
    with pytest.raises(ValueError, match="expand"):
        ones(2, 3).expand(3)
    with pytest.raises(ValueError, match=r"sum_to.*\(2, 3\)"):
        mg.sum_to(ones(2, 3), (4, 3))


# -- matmul -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "sa, sb",
    [((2, 3), (4, 3)), ((3,), (4,)), ((2, 3), (2,)), ((5,), (2, 3)), ((2, 2, 3), (3, 3, 4))],
)
def test_matmul_mismatch_names_shapes(sa, sb):
    with pytest.raises(ValueError) as ei:
        ones(*sa, requires_grad=True) @ ones(*sb)
    msg = str(ei.value)
    assert "matmul" in msg and str(sa) in msg and str(sb) in msg


def test_matmul_of_0d_is_an_error():
    with pytest.raises(ValueError, match=r"matmul.*\(\)"):
        mg.matmul(ones(), ones(3))


# -- axes -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, f",
    [("sum", lambda t: t.sum(axis=2)), ("mean", lambda t: t.mean(axis=-3)), ("max", lambda t: t.max(axis=5)),
     ("min", lambda t: t.min(axis=(0, 2))), ("var", lambda t: t.var(axis=2)),
     ("logsumexp", lambda t: t.logsumexp(axis=3)), ("softmax", lambda t: t.softmax(2)),
     ("log_softmax", lambda t: t.log_softmax(-3)), ("argmax", lambda t: t.argmax(axis=2)),
     ("squeeze", lambda t: t.squeeze(3)), ("flatten", lambda t: t.flatten(3)),
     ("swapaxes", lambda t: t.swapaxes(0, 5)), ("concatenate", lambda t: mg.concatenate([t, t], axis=2)),
     ("stack", lambda t: mg.stack([t, t], axis=4)), ("unsqueeze", lambda t: t.unsqueeze(4))],
)
def test_bad_axis_names_op_axis_and_ndim(name, f):
    with pytest.raises(mg.AxisError) as ei:
        f(ones(2, 3, requires_grad=True))
    e = ei.value
    assert isinstance(e, IndexError) and isinstance(e, ValueError)
    msg = str(e)
    assert name in msg and "ndim" in msg
    assert any(str(k) in msg for k in (2, 3, 4, 5, -3))


def test_duplicate_and_wrong_type_axes():
    with pytest.raises(ValueError, match=r"sum.*duplicate.*1"):
        ones(2, 3, 4, 5).sum(axis=(1, -3))
    with pytest.raises(ValueError, match=r"mean.*duplicate"):
        ones(2, 3).mean(axis=(0, -2))
    with pytest.raises(TypeError, match="sum"):
        ones(2, 3).sum(axis=1.0)
    with pytest.raises(TypeError, match="sum"):
        ones(2, 3).sum(axis="0")
    with pytest.raises(TypeError, match="max"):
        ones(2, 3).max(axis=0, dim=0)
    with pytest.raises(ValueError, match="permute"):
        ones(2, 3).permute(0, 0)


def test_reshape_mismatch_names_shapes():
    with pytest.raises(ValueError) as ei:
        ones(2, 3).reshape(5)
    msg = str(ei.value)
    assert "reshape" in msg and "(2, 3)" in msg and "(5,)" in msg
    with pytest.raises(RuntimeError, match=r"view.*reshape"):
        ones(2, 3).T.view(6)


def test_index_out_of_range_names_tensor_shape():
    with pytest.raises(IndexError, match=r"getitem.*\(2, 3\)"):
        ones(2, 3)[3]
    with pytest.raises(IndexError, match="getitem"):
        ones(2, 3)[0, 0, 0]
    with pytest.raises(IndexError, match="float64"):
        ones(2, 3)[np.array([0.0])]


def test_concatenate_and_stack_mismatch_name_shapes():
    with pytest.raises(ValueError, match=r"concatenate.*\(2, 3\).*\(3, 3\)"):
        mg.concatenate([ones(2, 3), ones(3, 3)], axis=1)
    with pytest.raises(ValueError, match=r"stack.*\(2,\).*\(3,\)"):
        mg.stack([ones(2), ones(3)])


# -- dtypes -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_grad_dtype_error_says_floating_and_names_dtype(dtype):
    with pytest.raises(TypeError) as ei:
        mg.tensor(np.zeros(2, dtype=dtype), requires_grad=True)
    msg = str(ei.value)
    assert "floating" in msg and str(np.dtype(dtype)) in msg and "requires_grad" in msg


def test_non_numeric_data_and_operands():
    with pytest.raises(TypeError, match="tensor"):
        mg.tensor(["a", "b"])
    with pytest.raises(TypeError, match="tensor"):
        mg.tensor([object()])
    with pytest.raises(TypeError, match=r"add.*str"):
        ones(2) + "x"
    with pytest.raises(TypeError, match=r"mul.*NoneType"):
        ones(2) * None
    with pytest.raises(TypeError, match="set_default_dtype"):
        mg.set_default_dtype(np.int32)


def test_gradcheck_of_integer_input():
    with pytest.raises(TypeError):
        mg.gradcheck(lambda t: t, mg.tensor([1, 2], requires_grad=True))


# -- backward misuse --------------------------------------------------------------------------

def test_second_backward_message():
    x = ones(2, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    msg = str(ei.value)
    assert "retain_graph=True" in msg and "second time" in msg


def test_implicit_grad_message_names_shape():
    with pytest.raises(RuntimeError) as ei:
        (ones(2, 3, requires_grad=True) * 2).backward()
    msg = str(ei.value)
    assert "backward" in msg and "(2, 3)" in msg and "grad" in msg


def test_wrong_shape_grad_message_names_both_shapes():
    with pytest.raises(RuntimeError) as ei:
        (ones(2, 3, requires_grad=True) * 2).backward(ones(3, 2))
    msg = str(ei.value)
    assert "backward" in msg and "(3, 2)" in msg and "(2, 3)" in msg


def test_backward_without_grad_fn_message():
    with pytest.raises(RuntimeError, match=r"backward.*require"):
        ones(2).sum().backward()


def test_mg_grad_misuse():
    x = ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        mg.grad((x * 2).sum(), [x, ones(1, requires_grad=True)])
    with pytest.raises(RuntimeError, match="grad"):
        mg.grad((x * 2).sum(), ones(2))
    with pytest.raises(ValueError, match="grad_outputs"):
        mg.grad([x * 2, x * 3], x, grad_outputs=[ones(2)])


def test_item_len_bool_misuse():
    with pytest.raises(ValueError, match=r"item.*\(2, 3\)"):
        ones(2, 3).item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ones(2))
    with pytest.raises(TypeError, match="0-d"):
        len(ones())
    with pytest.raises(ValueError, match=r"zeros.*-1"):
        mg.zeros(-1)
    with pytest.raises(TypeError, match="zeros"):
        mg.zeros(2.5)
    with pytest.raises(ValueError, match="tpu"):
        mg.tensor([1.0], device="tpu")


# -- object arrays, string arguments, ragged lists, a sparse gradient ------------------------------

def test_multiply_by_an_object_array_is_a_type_error():
    x = mg.ones(2, requires_grad=True)
    msg = raises_naming(TypeError, lambda: x * np.array([1, 2], dtype=object), "mul")
    assert "object" in msg
    raises_naming(TypeError, lambda: np.array([1, 2], dtype=object) * x, "mul")


def test_clip_with_a_string_bound_names_clip():
    x = mg.ones(3, requires_grad=True)
    raises_naming(TypeError, lambda: mg.clip(x, "a"), "clip")
    raises_naming(TypeError, lambda: mg.clip(x, 0.0, "b"), "clip")


def test_backward_with_a_string_gradient_names_backward():
    x = mg.ones(3, requires_grad=True)
    raises_naming(TypeError, lambda: (x * 2).backward("a"), "backward")


def test_dense_backward_with_a_sparse_gradient_names_backward():
    x = mg.ones((2, 3), requires_grad=True)
    s = mg.sparse.coo_tensor(np.array([[0], [1]]), np.array([1.0], dtype=np.float32), (2, 3))
    msg = raises_naming(TypeError, lambda: (x * 2).backward(s), "backward")
    assert "sparse" in msg and "to_dense" in msg


def test_ragged_nested_list_names_tensor():
    msg = raises_naming(ValueError, lambda: mg.tensor([[1, 2], [3]]), "tensor")
    assert msg.startswith("tensor:") and "rectangular" in msg
