"""Issue 18: an invalid argument raises an error that names the function the user called, not
the helper or op it went through (``permute:`` for ``transpose``, ``item:`` or Python's ``int()``
text for an axis, ``sub:`` for ``allclose``, Python's arity text for the casts). One test per
family; ``tests/test_fuzz.py::test_invalid_arguments_raise_named_errors`` covers every function."""
import re

import numpy as np
import pytest

import minigrad as mg


def _x():
    return mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)


def test_transpose_names_itself_not_permute_or_swapaxes():
    x = _x()
    with pytest.raises(TypeError, match=r"^transpose: permute: shape entries must be ints, got str"):
        mg.transpose(x, ("a", 0))
    with pytest.raises(TypeError, match=r"^transpose: swapaxes: dim must be an int"):
        x.transpose(x, 0)
    with pytest.raises(ValueError, match=r"^transpose: permute: got 1 dims"):
        x.transpose(0)


def test_argmax_with_a_bad_axis_names_argmax():
    x = _x()
    with pytest.raises(TypeError, match=r"^argmax: axis array must hold integers, got dtype float"):
        x.argmax(x)  # was ``item: only one-element tensors ...``
    with pytest.raises(TypeError, match=r"^argmin: axis must be None, an int"):
        mg.argmin(x, object())  # was Python's ``int() argument must be ...``
    with pytest.raises(TypeError, match=r"^argmax: axis must be an int or None, got tuple"):
        x.argmax((0, 1))
    with pytest.raises(mg.errors.AxisError, match=r"^argmax: axis 5 is out of bounds"):
        x.argmax(5)
    assert x.argmax(mg.tensor(1)).tolist() == [2, 2]  # a 0-d integer tensor is still an axis


def test_reductions_name_themselves_for_a_tensor_keepdims_or_an_object_axis():
    x = _x()
    with pytest.raises(ValueError, match=r"^sum: the truth value of a tensor"):
        x.sum(0, x)
    with pytest.raises(TypeError, match=r"^any: "):
        x.any(object())


def test_allclose_names_allclose_not_sub():
    with pytest.raises(ValueError, match=r"^allclose: isclose: sub: operands could not be broadcast"):
        mg.allclose(_x(), mg.ones((4, 5)))


@pytest.mark.parametrize("cast", ["double", "float", "long"])
def test_casts_with_an_argument_name_the_cast(cast):
    x = _x()
    with pytest.raises(TypeError, match="^" + re.escape(f"{cast}: takes no arguments")):
        getattr(x, cast)(1)
    with pytest.raises(TypeError, match="^" + re.escape(f"{cast}: takes no arguments") + r".*dtype="):
        getattr(x, cast)(dtype=np.float64)
    assert getattr(x, cast)().dtype == {"double": np.float64, "float": np.float32, "long": np.int64}[cast]


def test_clip_with_a_bad_bound_names_clip():
    x = _x()
    with pytest.raises(ValueError, match=r"^clip: maximum: operands could not be broadcast"):
        x.clip(mg.ones((4, 5)))
    with pytest.raises(ValueError, match=r"^clip: minimum: operands could not be broadcast"):
        x.clamp(max=mg.ones((4, 5)))
    with pytest.raises(TypeError, match=r"^clip: min must be a number"):  # named already: unchanged
        mg.clip(x, "a")


def test_fill_and_copy_with_a_bad_value_name_the_write():
    x = _x().detach()
    with pytest.raises(TypeError, match=r"^fill_: tensor: cannot make a tensor from list data"):
        x.fill_([None])
    with pytest.raises(TypeError, match=r"^copy_: tensor: cannot make a tensor from tuple data"):
        x.copy_((1, "a"))
    with pytest.raises(TypeError, match=r"^add_: tensor: cannot make a tensor from list data"):
        x.add_([None])
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # nothing was written


def test_renamed_errors_keep_their_type_and_traceback():
    from minigrad.errors import AxisError

    with pytest.raises(AxisError) as e:
        mg.mean(_x(), axis=(0, 7))
    assert isinstance(e.value, IndexError) and isinstance(e.value, ValueError)
    assert str(e.value).startswith("mean: axis 7 is out of bounds")
    with pytest.raises(TypeError) as e:
        mg.sum(_x(), axis=(1, "a"))
    assert str(e.value).startswith("sum: every axis must be an int")
    assert "normalize_axis" in [f.name for f in e.traceback]  # where it was raised is still shown


# -- NumPy's own errors inside an op's forward name the op, once -----------------------------------

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
