"""The CPU stand-in for CuPy refuses what CuPy refuses (so the device tests mean something)."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.testing import fakecupy as fcp


@pytest.fixture
def a():
    return fcp.arange(6, dtype=np.float32).reshape(2, 3)


def test_no_implicit_conversion_to_numpy(a):
    for convert in (np.asarray, np.array, lambda x: np.asarray(x, dtype=np.float64), lambda x: x.__array__()):
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
            convert(a)


def test_explicit_transfers_copy(a):
    h = a.get()
    assert type(h) is np.ndarray
    h[0, 0] = 99
    assert a[0, 0].item() == 0  # get() is a copy, not a view of device memory
    host = np.ones(3)
    d = fcp.asarray(host)
    host[0] = 5
    assert d.get().tolist() == [1.0, 1.0, 1.0]  # asarray(host) copied to the device
    assert type(fcp.asnumpy(d)) is np.ndarray


@pytest.mark.parametrize("mix", [
    lambda d, h: d + h,
    lambda d, h: h + d,
    lambda d, h: d * h,
    lambda d, h: d @ h.T,
    lambda d, h: d < h,
    lambda d, h: np.add(d, h),
    lambda d, h: np.maximum(h, d),
    lambda d, h: fcp.where(d > 0, d, h),
    lambda d, h: fcp.concatenate([d, h]),
    lambda d, h: d.__setitem__(0, h[0]),
    lambda d, h: d.__iadd__(h),
], ids=["add", "radd", "mul", "matmul", "lt", "np.add", "np.maximum", "where", "concatenate", "setitem", "iadd"])
def test_mixing_with_host_arrays_fails(a, mix):
    with pytest.raises(TypeError, match="Unsupported type"):
        mix(a, np.ones((2, 3), dtype=np.float32))


def test_scalars_mix_fine(a):
    for s in (2, 2.5, True, np.float32(2), np.float64(2), np.int64(2)):
        r = a * s
        assert isinstance(r, fcp.ndarray)
        r = s * a
        assert isinstance(r, fcp.ndarray)


def test_device_array_attributes(a):
    assert a.device.id == 0
    assert isinstance(a.data.ptr, int)
    assert a.flags.c_contiguous and not hasattr(a.flags, "writeable")
    assert a.T.base is not None and a.strides == (12, 4)


def test_reductions_and_integer_indexing_give_0d_arrays(a):
    for r in (a.sum(), a.max(), a[0, 1], a.mean(), np.sum(a), fcp.allclose(a, a)):
        assert isinstance(r, fcp.ndarray) and r.ndim == 0
    assert float(a.sum()) == 15.0 and bool(a[1, 1]) and int(a[1, 2]) == 5


def test_numpy_functions_dispatch_only_where_cupy_has_them(a):
    assert isinstance(np.concatenate([a, a]), fcp.ndarray)
    assert isinstance(np.exp(a), fcp.ndarray)
    with pytest.raises(TypeError):
        np.add.at(a, [0], 1.0)  # does not dispatch: cupyx.scatter_add is the CuPy way
    with pytest.raises(TypeError):
        np.apply_along_axis(lambda r: r, 0, a)  # NumPy-only
    with pytest.raises(AttributeError, match="CuPy has no"):
        fcp.busday_count  # noqa: B018 - a NumPy-only name
    assert not hasattr(fcp.maximum, "reduceat") and hasattr(fcp.add, "reduceat")


def test_numpy_linalg_dispatches_to_cupy_linalg(a):
    n = np.linalg.norm(a)  # CuPy's ndarray sends np.linalg.<name> to cupy.linalg.<name>
    assert isinstance(n, fcp.ndarray) and n.ndim == 0
    assert float(n.get()) == pytest.approx(np.linalg.norm(a.get()))
    with pytest.raises(TypeError):
        np.linalg.cond(a[:, :2])  # not in the stand-in's cupy.linalg


def test_cupy_restrictions(a):
    with pytest.raises(TypeError, match="lexsort"):
        fcp.lexsort((a[0], a[1]))
    assert fcp.lexsort(fcp.stack([a[0], a[1]])).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="stable"):
        fcp.sort(a, kind="quicksort")
    with pytest.raises(TypeError, match="dtype"):
        fcp.asarray(np.array(["x"]))
    with pytest.raises(TypeError, match="dtype"):
        a.astype(object)


def test_scatter_add_takes_atomic_add_dtypes_only():
    t = fcp.zeros(3, dtype=np.float32)
    fcp.cupyx.scatter_add(t, fcp.asarray([0, 0, 2]), fcp.ones(3, dtype=np.float32))
    assert t.get().tolist() == [2.0, 0.0, 1.0]
    for dt in (np.int64, np.int8, np.bool_, np.complex64):
        with pytest.raises(TypeError, match="scatter_add only supports"):
            fcp.cupyx.scatter_add(fcp.zeros(3, dtype=dt), fcp.asarray([0, 0]), 1)
        with pytest.raises(TypeError, match="scatter_add only supports"):
            fcp.add.at(fcp.zeros(3, dtype=dt), fcp.asarray([0, 0]), 1)


def test_tensor_wins_reflected_operators(a, monkeypatch):
    monkeypatch.setattr(mg._xp, "_cupy", fcp)
    monkeypatch.setattr(mg.backend, "_cupyx", fcp.cupyx)
    t = mg.tensor([1.0, 2.0, 3.0], device="cpu")
    with pytest.raises(RuntimeError, match="cpu"):
        a * t  # the Tensor's __rmul__ runs and refuses to mix devices


def test_integer_index_arrays_wrap_like_cupy():
    # CuPy does not bounds-check index arrays (NumPy raises): the stand-in wraps too, so code
    # that relies on NumPy's IndexError fails here as it would on the GPU
    a = fcp.arange(4)
    assert a[fcp.asarray([5, -6])].tolist() == [1, 2]
    assert a.take(fcp.asarray([4])).tolist() == [0]
    b = fcp.zeros(4, dtype=np.float32)
    fcp.cupyx.scatter_add(b, fcp.asarray([4, 5]), 1.0)
    assert b.get().tolist() == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(IndexError):
        a[4]  # scalar indices are checked, as in CuPy
