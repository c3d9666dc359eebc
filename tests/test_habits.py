"""PyTorch habits a user types in the first hour (issue 19): each works, or fails with a clear message."""
import warnings

import numpy as np
import pytest

import minigrad as mg


def test_a_one_element_tensor_formats_like_its_number():
    loss = mg.tensor(0.123456, dtype=mg.float64)
    assert f"{loss:.4f}" == "0.1235" and f"{mg.tensor([2.5]):.1f}" == "2.5"
    assert f"{mg.ones(2)}" == str(mg.ones(2))  # no spec: as str()


def test_comparison_methods():
    a, b = mg.tensor([1.0, 2.0, 3.0]), mg.tensor([3.0, 2.0, 1.0])
    for name, ref in [("eq", [False, True, False]), ("ne", [True, False, True]), ("lt", [True, False, False]),
                      ("le", [True, True, False]), ("gt", [False, False, True]), ("ge", [False, True, True])]:
        assert getattr(a, name)(b).tolist() == ref, name


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


def test_a_float64_batch_into_a_float32_linear_names_both_dtypes():
    layer = mg.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="linear: input dtype float64 differs from the weight's float32"):
        layer(mg.tensor(np.ones((4, 3))))
    assert layer(mg.ones(4, 3)).dtype == np.float32


def test_size_is_numpys_count_and_size_call_is_pytorchs():
    t = mg.zeros(2, 3)
    assert t.size == 6 and t.numel() == 6 and t.shape == (2, 3)
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-2) == 2  # PyTorch's method (API.md)


def test_max_over_an_axis_returns_values_and_argmax_the_indices():
    t = mg.tensor([[1.0, 5.0], [7.0, 2.0]])
    assert t.max(axis=1).tolist() == [5.0, 7.0]
    assert t.argmax(axis=1).tolist() == [1, 0]
