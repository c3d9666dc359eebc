"""NumPy functions and ufuncs on Tensors run minigrad's ops (issue 19): the value matches NumPy,
the result is a recorded Tensor, backward reaches the leaves; what has no op raises TypeError;
np.asarray / .numpy() refuse a tensor that requires grad."""
import numpy as np
import pytest

import minigrad as mg
from conftest import dev, leaf, rnd, to_np


# name -> (build the leaves' host data, the call on NumPy arrays or Tensors alike)
CASES = {
    "sum-axis-keepdims": ([(3, 4)], lambda a: np.sum(a, axis=1, keepdims=True)),
    "sum-all": ([(3, 4)], lambda a: np.sum(a)),
    "sum-dtype": ([(3, 4)], lambda a: np.sum(a, 0, np.float64)),
    "mean": ([(3, 4)], lambda a: np.mean(a, axis=0)),
    "var-ddof": ([(3, 4)], lambda a: np.var(a, axis=1, ddof=1)),
    "std": ([(3, 4)], lambda a: np.std(a)),
    "max-axis": ([(3, 4)], lambda a: np.max(a, axis=1)),
    "amin": ([(3, 4)], lambda a: np.amin(a, axis=0, keepdims=True)),
    "matmul": ([(3, 4), (4, 2)], lambda a, b: np.matmul(a, b)),
    "einsum": ([(3, 4), (4, 2)], lambda a, b: np.einsum("ij,jk->ik", a, b)),
    "einsum-one": ([(3, 3)], lambda a: np.einsum("ii->i", a)),
    "where": ([(3, 4), (3, 4)], lambda a, b: np.where(a > 0, a, b)),
    "concatenate": ([(2, 3), (4, 3)], lambda a, b: np.concatenate([a, b], axis=0)),
    "concatenate-axis1": ([(2, 3), (2, 1)], lambda a, b: np.concatenate((a, b), 1)),
    "stack": ([(2, 3), (2, 3)], lambda a, b: np.stack([a, b], axis=1)),
    "maximum": ([(3, 4), (4,)], lambda a, b: np.maximum(a, b)),
    "minimum-scalar": ([(3, 4)], lambda a: np.minimum(a, 0.25)),
    "transpose": ([(2, 3, 4)], lambda a: np.transpose(a)),
    "transpose-axes": ([(2, 3, 4)], lambda a: np.transpose(a, (1, 2, 0))),
    "transpose-axes-kw": ([(2, 3, 4)], lambda a: np.transpose(a, axes=[2, 0, 1])),
    "reshape": ([(2, 6)], lambda a: np.reshape(a, (3, 4))),
    "reshape-minus-one": ([(2, 6)], lambda a: np.reshape(a, -1)),
    "reshape-kw": ([(2, 6)], lambda a: np.reshape(a, shape=(4, 3))),
    "swapaxes": ([(2, 3, 4)], lambda a: np.swapaxes(a, 0, 2)),
    "squeeze": ([(1, 3, 1)], lambda a: np.squeeze(a, axis=0)),
    "broadcast_to": ([(3,)], lambda a: np.broadcast_to(a, (2, 3))),
    "clip": ([(3, 4)], lambda a: np.clip(a, -0.5, 0.5)),
    "clip-kw": ([(3, 4)], lambda a: np.clip(a, a_min=None, a_max=0.3)),
    "outer": ([(3,), (4,)], lambda a, b: np.outer(a, b)),
    "copy": ([(3,)], lambda a: np.copy(a)),
    "exp": ([(3, 4)], lambda a: np.exp(a)),
    "log": ([(3, 4)], lambda a: np.log(np.abs(a) + 1)),
    "log1p-sqrt": ([(3, 4)], lambda a: np.log1p(np.sqrt(a * a + 1))),
    "sin-cos-tanh": ([(3, 4)], lambda a: np.sin(a) + np.cos(a) * np.tanh(a)),
    "add-sub-mul-div": ([(3, 4), (3, 4)], lambda a, b: np.divide(np.add(a, b), np.multiply(a, 2.0) - 7.0)),
    "subtract-negative": ([(3, 4), (4,)], lambda a, b: np.subtract(np.negative(a), b)),
    "power": ([(3, 4)], lambda a: np.power(np.abs(a) + 1, 1.5)),
    "absolute": ([(3, 4)], lambda a: np.absolute(a)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_numpy_function_matches_numpy_and_backward_reaches_the_leaves(name):
    shapes, fn = CASES[name]
    xs = [leaf(s, seed=i, away=(0.0, 0.5, -0.5, 0.3)) for i, s in enumerate(shapes)]
    out = fn(*xs)
    assert isinstance(out, mg.Tensor), f"{name}: got {type(out).__name__}"
    assert out.device == mg.get_default_device()
    want = fn(*[rnd(s, seed=i, away=(0.0, 0.5, -0.5, 0.3)) for i, s in enumerate(shapes)])
    np.testing.assert_allclose(to_np(out), want, rtol=1e-12, atol=1e-12)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    for x in xs:
        assert x.grad is not None and x.grad.shape == x.shape, name


def test_gradient_through_numpy_calls_matches_the_mg_functions():
    x = leaf((3, 4), seed=1)
    y = leaf((3, 4), seed=1)
    np.mean(np.exp(x) * np.sum(x, axis=0, keepdims=True)).backward()
    mg.mean(mg.exp(y) * mg.sum(y, axis=0, keepdims=True)).backward()
    np.testing.assert_allclose(to_np(x.grad), to_np(y.grad), rtol=1e-12)


def test_a_numpy_call_is_gradchecked():
    assert mg.gradcheck(lambda a, b: np.sum(np.maximum(np.matmul(a, b), 0.1) ** 2, axis=1), [
        leaf((3, 4), seed=0), leaf((4, 2), seed=1)])


def test_comparisons_and_argmax_return_plain_tensors():
    x = leaf((3, 4))
    for out, want in ((np.greater(x, 0), rnd((3, 4)) > 0), (np.equal(x, x), np.ones((3, 4), bool)),
                      (np.argmax(x, axis=1), rnd((3, 4)).argmax(axis=1)),
                      (np.logical_not(x > 0), ~(rnd((3, 4)) > 0))):
        assert isinstance(out, mg.Tensor) and not out.requires_grad
        np.testing.assert_array_equal(to_np(out), want)


@pytest.mark.parametrize("op", ["mul", "add", "sub", "truediv", "matmul", "pow", "gt"])
def test_ndarray_operator_tensor_returns_a_tensor(op):
    import operator

    f = getattr(operator, op)
    x = leaf((3, 3), low=0.5)
    a = dev(rnd((3, 3), seed=2, low=0.5))
    out = f(a, x)
    assert isinstance(out, mg.Tensor), f"ndarray {op} tensor gave {type(out).__name__}"
    np.testing.assert_allclose(to_np(out), f(to_np(a), to_np(x)), rtol=1e-12)
    if op != "gt":
        assert out.requires_grad
        out.sum().backward()
        assert x.grad is not None
    out2 = f(x, a)                                   # and the tensor on the left, as before
    assert isinstance(out2, mg.Tensor)


def test_numpy_scalar_operator_tensor_returns_a_tensor():
    x = leaf((3,))
    for out in (np.float64(2.0) * x, np.float32(1.0) + x, np.int64(3) - x):
        assert isinstance(out, mg.Tensor) and out.requires_grad


# -- what raises ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda x: np.median(x), "numpy.median"),
    (lambda x: np.fft.hfft(x), "numpy.fft.hfft"),
    (lambda x: np.unique(x), "numpy.unique"),
    (lambda x: np.i0(x), "numpy.i0"),
    (lambda x: np.linalg.cond(x.reshape(2, 2)), "numpy.linalg.cond"),  # (eigvals has an op now: issue 41)
    (lambda x: np.add.reduce(x), "numpy.add.reduce"),
    (lambda x: np.multiply.outer(x, x), "numpy.multiply.outer"),
])
@pytest.mark.parametrize("rg", [True, False])
def test_a_numpy_function_without_an_op_raises_type_error_naming_it(call, name, rg):
    x = leaf((4,)) if rg else leaf((4,)).detach()
    with pytest.raises(TypeError) as e:
        call(x)
    msg = str(e.value)
    assert name in msg and ".detach().numpy()" in msg


def test_out_is_a_type_error_naming_it():
    x = leaf((3,))
    buf = dev(np.zeros(3))
    with pytest.raises(TypeError, match="numpy.add: out="):
        np.add(x, 1.0, out=buf)
    with pytest.raises(TypeError, match="numpy.sum: out="):
        np.sum(x, out=buf[:1].reshape(()))
    if isinstance(buf, np.ndarray):                  # (a CuPy array's += is CuPy's business)
        with pytest.raises(TypeError, match="out="):
            buf += x                                 # ndarray += tensor is np.add(..., out=buf)


def test_an_option_minigrad_lacks_is_a_type_error_unless_at_its_default():
    x = leaf((2, 3))
    with pytest.raises(TypeError, match="numpy.sum: the argument initial=1"):
        np.sum(x, initial=1.0)
    with pytest.raises(TypeError, match="numpy.add: the argument dtype="):
        np.add(x, 1.0, dtype=np.float32)
    with pytest.raises(TypeError, match="numpy.reshape"):
        np.reshape(x, (3, 2), order="F")
    # NumPy's defaults spelled out are fine
    assert isinstance(np.add(x, 1.0, where=True, casting="same_kind"), mg.Tensor)
    assert isinstance(np.reshape(x, (3, 2), order="C"), mg.Tensor)


# -- conversion ------------------------------------------------------------------------------------

def test_numpy_and_asarray_refuse_a_tensor_that_requires_grad():
    x = mg.tensor([1.0, 2.0], requires_grad=True, device="cpu")
    for conv in (lambda t: t.numpy(), np.asarray, np.array, lambda t: np.asarray(t, dtype=np.float64)):
        with pytest.raises(RuntimeError, match=r"requires grad.*\.detach\(\)"):
            conv(x)
    y = x * 2                                        # a non-leaf too
    with pytest.raises(RuntimeError, match=r"\.detach\(\)"):
        y.numpy()
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])
    np.testing.assert_array_equal(np.array(y.detach()), [2.0, 4.0])
    assert x.tolist() == [1.0, 2.0] and float(y.sum()) == 6.0     # reading values still works


def test_numpy_and_asarray_work_without_grad():
    x = mg.tensor([1.0, 2.0], device="cpu")
    assert np.shares_memory(np.asarray(x), x.data)
    assert np.shares_memory(x.numpy(), x.data)
    with mg.no_grad():
        y = mg.tensor([1.0], requires_grad=True, device="cpu") * 2
    np.testing.assert_array_equal(y.numpy(), [2.0])


def test_numpy_on_the_device_needs_detach_then_copies(device):
    x = leaf((3,))
    with pytest.raises(RuntimeError, match=r"\.detach\(\)"):
        x.numpy()
    np.testing.assert_array_equal(x.detach().numpy(), rnd(3))
    if device != "cpu":
        with pytest.raises(TypeError, match="implicitly"):
            np.asarray(x.detach())


def test_the_dispatch_table_comes_from_the_registry():
    table = mg.ops.numpy_functions()
    for f in (np.exp, np.sum, np.mean, np.matmul, np.einsum, np.where, np.concatenate, np.stack,
              np.maximum, np.transpose, np.reshape):
        assert f in table
    assert table[np.sum] is mg.sum and table[np.exp] is mg.exp
