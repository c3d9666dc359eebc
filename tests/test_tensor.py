"""The Tensor: construction and dtypes, attributes, conversion, printing, factories."""
import numpy as np
import pytest

import minigrad as mg
from conftest import raises_naming, to_np


@pytest.fixture
def default_float32():
    prev = mg.get_default_dtype()
    mg.set_default_dtype(np.float32)
    yield
    mg.set_default_dtype(prev)


# -- construction ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "data, dtype",
    [(1.5, np.float32), ([1.0, 2.0], np.float32), ([[1, 2.5]], np.float32), (3, np.int64), ([1, 2], np.int64),
     (True, np.bool_), ([True, False], np.bool_), (np.float64(1.0), np.float64), (np.float16(1.0), np.float16),
     (np.arange(3, dtype=np.int32), np.int32), (np.ones(2, dtype=np.float64), np.float64),
     (np.ones(2, dtype=np.uint8), np.uint8)],
)
def test_default_dtypes(data, dtype, default_float32):
    assert mg.tensor(data).dtype == dtype


def test_default_dtype_can_change():
    prev = mg.get_default_dtype()
    try:
        mg.set_default_dtype(np.float64)
        assert mg.tensor([1.0]).dtype == np.float64
        assert mg.zeros(2).dtype == np.float64
        assert mg.randn(2).dtype == np.float64
        assert mg.tensor(np.ones(2, dtype=np.float32)).dtype == np.float32  # arrays keep theirs
    finally:
        mg.set_default_dtype(prev)
    assert mg.get_default_dtype() == prev


def test_explicit_dtype():
    assert mg.tensor([1, 2], dtype=np.float64).dtype == np.float64
    assert mg.tensor([1.7], dtype="int32").dtype == np.int32
    assert mg.tensor(np.ones(2), dtype=mg.float32).dtype == np.float32


def test_tensor_from_tensor_copies_and_detaches():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = mg.tensor(x)
    assert not y.requires_grad and y.is_leaf
    y.data[0] = 5.0
    assert x.detach().numpy()[0] == 1.0


def test_tensor_from_list_of_tensors():
    parts = [mg.tensor([1.0, 2.0]), mg.tensor([3.0, 4.0])]
    assert mg.tensor(parts).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_requires_grad_flag():
    x = mg.tensor([1.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    y = mg.tensor([1.0])
    assert y.requires_grad_() is y and y.requires_grad
    y.requires_grad_(False)
    assert not y.requires_grad
    z = x * 2
    assert z.requires_grad and not z.is_leaf and z.grad_fn is not None and z.grad_fn.op == "mul"


# -- attributes and conversion -------------------------------------------------------------------

def test_attributes():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    x = mg.tensor(a)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert x.ndim == 3 and x.size == 24 and len(x) == 2
    assert x.dtype == np.float64 and x.device == mg.get_default_device() and x.is_cuda == (x.device != "cpu")
    assert x.T.shape == (4, 3, 2)
    s = mg.tensor(2.0)
    assert s.shape == () and s.ndim == 0 and s.size == 1


def test_data_numpy_item_tolist():
    a = np.arange(6.0).reshape(2, 3)
    x = mg.tensor(a, device="cpu")  # on the CPU numpy() shares memory; test_device covers CUDA
    assert isinstance(x.data, np.ndarray)
    n = x.numpy()
    assert isinstance(n, np.ndarray) and np.shares_memory(n, x.data)
    assert x.tolist() == a.tolist()
    assert mg.tensor([[7.0]]).item() == 7.0 and isinstance(mg.tensor(7.0).item(), float)
    assert isinstance(mg.tensor(7).item(), int)
    assert float(mg.tensor([2.5])) == 2.5 and int(mg.tensor(3)) == 3
    assert [10, 20, 30][mg.tensor(1)] == 20
    np.testing.assert_array_equal(np.asarray(x), a)
    assert np.asarray(x, dtype=np.float32).dtype == np.float32


def test_astype_and_to_dtype():
    x = mg.tensor([1.5, 2.5], dtype=np.float32)
    assert x.astype(np.float64).dtype == np.float64
    assert x.to(np.float64).dtype == np.float64
    assert x.to(dtype=np.float64).dtype == np.float64
    assert x.to("cpu", np.float64).dtype == np.float64
    assert x.astype(np.int64).tolist() == [1, 2]
    assert x.long().dtype == np.int64 and x.double().dtype == np.float64 and x.float().dtype == np.float32
    assert x.astype(np.float32) is x


def test_detach_shares_memory():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and np.shares_memory(d.data, x.data)


def test_bool_and_iteration():
    assert bool(mg.tensor([1.0])) and not bool(mg.tensor(0.0))
    rows = list(mg.tensor(np.arange(6).reshape(3, 2)))
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError):
        iter(mg.tensor(1.0)).__next__()


def test_strides_and_contiguity():
    x = mg.tensor(np.zeros((3, 4), dtype=np.float32))
    assert x.stride() == (4, 1) and x.stride(0) == 4
    assert x.is_contiguous() and x.contiguous() is x
    t = x.T
    assert t.stride() == (1, 4) and not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.tolist() == t.tolist()
    assert x[1:, 2:].storage_offset() == 6


def test_repr():
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32, requires_grad=True)
    r = repr(x)
    assert r.startswith("tensor(") and "requires_grad=True" in r and "1." in r
    assert "grad_fn=<mul>" in repr(x * 2)
    assert "dtype=float64" in repr(mg.tensor(np.ones(2)))
    assert "dtype" not in repr(mg.tensor([1, 2]))
    assert str(x) == r


# -- factories ---------------------------------------------------------------------------------------

def test_zeros_ones_full_empty(default_float32):
    assert mg.zeros(2, 3).shape == (2, 3) and mg.zeros((2, 3)).shape == (2, 3)
    assert mg.zeros(2).dtype == np.float32 and mg.zeros(()).shape == ()
    assert mg.ones(2, dtype=np.int64).tolist() == [1, 1]
    assert mg.full((2,), 7).dtype == np.int64 and mg.full(2, 1.5).tolist() == [1.5, 1.5]
    assert mg.full(2, True).dtype == np.bool_
    assert mg.empty(0, 3).shape == (0, 3)
    z = mg.zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf


def test_like_factories():
    x = mg.tensor(np.ones((2, 3), dtype=np.float64))
    assert mg.zeros_like(x).dtype == np.float64 and mg.zeros_like(x).shape == (2, 3)
    assert mg.ones_like(x, dtype=np.int32).dtype == np.int32
    assert mg.full_like(x, 4.0).tolist() == [[4.0] * 3] * 2


def test_arange_linspace_eye(default_float32):
    assert mg.arange(5).tolist() == [0, 1, 2, 3, 4] and mg.arange(5).dtype == np.int64
    assert mg.arange(1, 7, 2).tolist() == [1, 3, 5]
    assert mg.arange(0, 1, 0.25).dtype == np.float32
    assert mg.arange(3, dtype=np.float64).dtype == np.float64
    np.testing.assert_allclose(to_np(mg.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(to_np(mg.eye(3)), np.eye(3))
    assert mg.eye(2, 3).shape == (2, 3)
    with pytest.raises(ValueError, match="step"):
        mg.arange(0, 5, 0)


def test_random_factories_are_seeded():
    a = mg.rand(3, 4, seed=1)
    assert a.shape == (3, 4) and np.array_equal(to_np(a), to_np(mg.rand(3, 4, seed=1)))
    assert 0 <= to_np(a).min() and to_np(a).max() < 1
    mg.manual_seed(7)
    b = to_np(mg.randn(5))
    mg.manual_seed(7)
    assert np.array_equal(b, to_np(mg.randn(5)))
    assert mg.randn(2, dtype=np.float64, requires_grad=True).requires_grad
    r = mg.randint(0, 3, size=(100,), seed=0)
    assert r.dtype == np.int64 and set(r.tolist()) <= {0, 1, 2}


def test_public_dtype_names():
    assert mg.float32 is np.float32 and mg.float64 is np.float64 and mg.int64 is np.int64
    assert mg.bool_ is np.bool_


# -- one-element formatting, size and numel, complex tensors ---------------------------------------

def test_a_one_element_tensor_formats_like_its_number():
    loss = mg.tensor(0.123456, dtype=mg.float64)
    assert f"{loss:.4f}" == "0.1235" and f"{mg.tensor([2.5]):.1f}" == "2.5"
    assert f"{mg.ones(2)}" == str(mg.ones(2))  # no spec: as str()


def test_size_is_numpys_count_and_size_call_is_pytorchs():
    t = mg.zeros(2, 3)
    assert t.size == 6 and t.numel() == 6 and t.shape == (2, 3)
    assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-2) == 2  # PyTorch's method (API.md)


def test_complex_tensors_require_grad_and_integer_ones_do_not():
    t = mg.tensor(np.array([1 + 1j, 2]), requires_grad=True)
    assert t.requires_grad and t.dtype == np.complex128
    assert mg.tensor(np.array([1 + 1j], dtype=np.complex64)).requires_grad_().requires_grad
    msg = raises_naming(TypeError, lambda: mg.tensor([1, 2]).requires_grad_(), "requires_grad")
    assert "int64" in msg and "complex" in msg


def test_python_complex_numbers_take_the_default_dtypes_complex_partner():
    """As PyTorch: complex Python data is complex64 beside the default float32, complex128 beside float64."""
    assert mg.tensor([1 + 2j, 3]).dtype == np.complex64
    assert mg.tensor(np.array([1 + 2j])).dtype == np.complex128  # an array keeps its dtype
    old = mg.get_default_dtype()
    mg.set_default_dtype(mg.float64)
    try:
        assert mg.tensor([1j]).dtype == np.complex128
    finally:
        mg.set_default_dtype(old)
