"""DLPack both ways: t.__dlpack__ / t.__dlpack_device__ and mg.from_dlpack, zero copy (issue 19)."""
import numpy as np
import pytest

import minigrad as mg
from conftest import FAKE, to_np

torch = pytest.importorskip("torch")

# the CPU stand-in for CuPy has no DLPack (minigrad.testing.fakecupy.ndarray.__dlpack__ raises)
no_fake = pytest.mark.skipif(FAKE, reason="minigrad.testing.fakecupy has no DLPack export (its __dlpack__ raises "
                                          "TypeError, it has no __dlpack_device__ and no from_dlpack)")


def _host(device):
    if device != "cpu" and not FAKE:
        pytest.skip("torch here is CPU-only: the CUDA exchange needs a CUDA build of PyTorch")


@no_fake
def test_torch_from_dlpack_shares_memory_with_a_tensor(device):
    _host(device)
    t = mg.arange(6.0).reshape(2, 3)
    tt = torch.from_dlpack(t)
    assert tuple(tt.shape) == (2, 3) and tt.dtype == torch.float32
    tt[0, 1] = 42.0                     # a write through torch shows in minigrad
    assert to_np(t)[0, 1] == 42.0
    t.data[1, 2] = -7.0                 # and the other way
    assert tt[1, 2].item() == -7.0
    assert t.__dlpack_device__() == (1, 0)


@no_fake
def test_mg_from_dlpack_shares_memory_with_torch(device):
    _host(device)
    src = torch.arange(4, dtype=torch.float64)
    t = mg.from_dlpack(src)
    assert isinstance(t, mg.Tensor) and t.dtype == np.float64 and t.device == "cpu"
    assert not t.requires_grad and t.is_leaf
    t.data[1] = 9.0
    assert src[1].item() == 9.0
    src[2] = -3.0
    np.testing.assert_array_equal(to_np(t), [0.0, 9.0, -3.0, 3.0])


@no_fake
def test_round_trip_keeps_strides_and_dtypes(device):
    _host(device)
    x = mg.tensor(np.arange(12.0).reshape(3, 4)).T      # a non-contiguous view
    tt = torch.from_dlpack(x)
    np.testing.assert_array_equal(tt.numpy(), to_np(x))
    for dt in (np.float32, np.float64, np.int64, np.int32, np.bool_):
        a = np.ones(3, dtype=dt)
        back = mg.from_dlpack(torch.from_dlpack(mg.from_numpy(a)))
        assert back.dtype == dt
        assert np.shares_memory(back.data, a)


@no_fake
def test_a_tensor_that_requires_grad_hands_over_detached_data(device):
    _host(device)
    w = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tt = torch.from_dlpack(w)
    assert not tt.requires_grad
    tt[0] = 5.0
    assert w.detach().numpy()[0] == 5.0
    d = mg.from_dlpack(w)
    assert not d.requires_grad and d.is_leaf and np.shares_memory(d.data, w.data)
    r = mg.from_dlpack(torch.zeros(2), requires_grad=True)
    assert r.requires_grad and r.is_leaf


@no_fake
def test_numpy_from_dlpack_and_back(device):
    _host(device)
    a = mg.arange(4.0)
    b = np.from_dlpack(a)
    b[0] = 10.0
    assert a.data[0] == 10.0
    c = mg.from_dlpack(b)
    assert np.shares_memory(c.data, a.data)


def test_from_dlpack_refuses_objects_without_dlpack():
    with pytest.raises(TypeError, match="from_dlpack"):
        mg.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="from_dlpack"):
        mg.from_dlpack(object())


def test_from_dlpack_refuses_unknown_device_types():
    class Odd:
        def __dlpack_device__(self):
            return (8, 0)   # kDLMetal

        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

    with pytest.raises(TypeError, match="device type 8"):
        mg.from_dlpack(Odd())


@pytest.mark.skipif(not FAKE, reason="checks the fakecuda stand-in's refusal")
def test_fakecuda_tensors_have_no_dlpack(device):
    t = mg.ones(3)
    assert t.device == "cuda:0"
    with pytest.raises(TypeError, match="DLPack"):
        t.__dlpack__()
    with pytest.raises(TypeError, match="DLPack"):
        t.__dlpack_device__()
    with pytest.raises(TypeError):
        torch.from_dlpack(t)
