"""Devices: strings, moving data, mixed-device errors, factories, the default device, and every
op giving the same values and gradients on the CUDA device as on the CPU.

The ``cuda`` fixture is the GPU where CuPy and a GPU are present, else the CPU stand-in
``minigrad.testing.fakecupy`` (which refuses what CuPy refuses), so these run on every machine.
"""
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import backend as be

from conftest import to_np


@pytest.fixture
def cuda():
    """'cuda:0': the GPU where CuPy finds one, else the CPU stand-in for this test only."""
    installed = False
    try:
        be.xp_for("cuda:0")
    except RuntimeError:
        be.use_fake_cupy()
        installed = True
    yield "cuda:0"
    if installed:
        be.use_fake_cupy(False)


# -- device strings ---------------------------------------------------------------------


@pytest.mark.parametrize("spec, want", [("cpu", "cpu"), ("cuda", "cuda:0"), ("cuda:0", "cuda:0"), ("cuda:3", "cuda:3")])
def test_parse_device(spec, want):
    assert be.parse_device(spec) == want


@pytest.mark.parametrize("spec", ["gpu", "cuda:", "cuda:-1", "cuda:x", "CPU ", "tpu:0"])
def test_parse_device_rejects(spec):
    with pytest.raises(ValueError, match="expected 'cpu', 'cuda' or 'cuda:N'"):
        be.parse_device(spec)


def test_device_index_must_exist(cuda):
    with pytest.raises(ValueError, match="does not exist"):
        mg.zeros(2, device="cuda:63")


# -- moving ---------------------------------------------------------------------------------


def test_to_cuda_and_back(cuda):
    t = mg.tensor([[1.0, 2.0], [3.0, 4.0]], device="cpu")
    c = t.to(cuda)
    assert c.device == "cuda:0" and c.is_cuda and be.is_cupy_array(c.data)
    assert t.device == "cpu" and not t.is_cuda
    assert c.cuda() is c and c.to("cuda") is c and t.cpu() is t
    back = c.cpu()
    assert back.device == "cpu" and isinstance(back.data, np.ndarray)
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert t.cuda().device == "cuda:0" and t.cuda(0).device == "cuda:0"


def test_to_with_dtype(cuda):
    t = mg.tensor([1.0, 2.0], device="cpu")
    c = t.to(cuda, mg.float64)
    assert c.device == "cuda:0" and c.dtype == np.float64
    assert t.to(mg.float64).device == "cpu"
    assert c.to(dtype=mg.float32).device == "cuda:0"


def test_moving_copies(cuda):
    host = np.arange(4.0)
    c = mg.tensor(host, device=cuda)
    host[0] = 99.0
    assert c.numpy()[0] == 0.0  # the device got a copy
    h = c.numpy()
    assert type(h) is np.ndarray
    h[1] = 99.0
    assert c.numpy()[1] == 1.0  # numpy() of a CUDA tensor is a host copy


def test_no_implicit_conversion_of_cuda_tensors(cuda):
    c = mg.ones(3, device=cuda)
    with pytest.raises(TypeError, match=r"numpy\(\)"):
        np.asarray(c)
    with pytest.raises(TypeError, match=r"numpy\(\)"):
        np.array(c)
    assert c.tolist() == [1.0, 1.0, 1.0] and c[1].item() == 1.0
    assert float(c.sum()) == 3.0
    assert "device='cuda:0'" in repr(c)


def test_gradients_cross_devices(cuda):
    x = mg.tensor([1.0, 2.0, 3.0], device="cpu", requires_grad=True)
    (x.to(cuda) * 3).sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])
    y = mg.tensor([1.0, 2.0], device=cuda, requires_grad=True)
    (y.cpu() ** 2).sum().backward()
    assert y.grad.device == "cuda:0"
    np.testing.assert_allclose(y.grad.numpy(), [2.0, 4.0])


# -- mixing devices is an error naming both ---------------------------------------------


@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a ** b,
    lambda a, b: a @ b.T, lambda a, b: a < b, lambda a, b: a == b, lambda a, b: mg.maximum(a, b),
    lambda a, b: mg.where(a > 0, a, b), lambda a, b: mg.cat([a, b]), lambda a, b: mg.stack([a, b]),
], ids=["add", "sub", "mul", "div", "pow", "matmul", "lt", "eq", "maximum", "where", "cat", "stack"])
@pytest.mark.parametrize("order", ["cpu-cuda", "cuda-cpu"])
def test_mixed_devices_error_names_both(cuda, op, order):
    h = mg.ones(2, 3, device="cpu")
    d = mg.ones(2, 3, device=cuda)
    a, b = (h, d) if order == "cpu-cuda" else (d, h)
    with pytest.raises(RuntimeError) as e:
        op(a, b)
    assert "cpu" in str(e.value) and "cuda:0" in str(e.value)


def test_host_array_with_cuda_tensor_is_an_error(cuda):
    d = mg.ones(3, device=cuda)
    for f in (lambda: d + np.ones(3), lambda: np.ones(3) + d, lambda: d * np.ones(3, np.float32)):
        with pytest.raises(RuntimeError, match="cpu.*cuda:0|cuda:0.*cpu"):
            f()
    assert (d + 1.5).device == "cuda:0" and (d * np.float32(2)).device == "cuda:0"  # scalars are fine


def test_out_of_range_index_arrays_raise_on_device(cuda):
    # CuPy wraps out-of-range index arrays silently; minigrad checks them as NumPy does
    x = mg.ones(2, 3, device=cuda, requires_grad=True)
    for bad, where in ((lambda: x[[0, 7]], "index 7 .* axis 0 with size 2"),
                       (lambda: x[:, np.array([-4])], "index -4 .* axis 1 with size 3"),
                       (lambda: x[..., mg.tensor([1, 3], device=cuda)], "index 3 .* axis 1"),
                       (lambda: mg.index_add((2, 3), ([0], [5]), mg.ones(1, device=cuda)), "index_add: index 5")):
        with pytest.raises(IndexError, match=where):
            bad()
    t = mg.zeros(4, device=cuda)
    with pytest.raises(IndexError, match="setitem: index 4"):
        t[[1, 4]] = 1.0
    assert x[[0, -1], [2, -3]].shape == (2,) and x[np.array([True, False])].shape == (1, 3)


# -- factories and the default device -------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda d: mg.zeros(2, 3, device=d), lambda d: mg.ones((2,), device=d), lambda d: mg.full((2, 2), 7.0, device=d),
    lambda d: mg.empty(3, device=d), lambda d: mg.arange(5, device=d), lambda d: mg.linspace(0, 1, 5, device=d),
    lambda d: mg.eye(3, device=d), lambda d: mg.rand(2, 2, device=d, seed=0),
    lambda d: mg.randn(2, device=d, seed=0), lambda d: mg.randint(0, 5, size=(3,), device=d, seed=0),
    lambda d: mg.tensor([1.0, 2.0], device=d), lambda d: mg.tensor(np.ones(2), device=d),
    lambda d: mg.zeros_like(mg.ones(2, device=d)), lambda d: mg.ones_like(mg.ones(2, device=d)),
    lambda d: mg.full_like(mg.ones(2, device=d), 3.0),
    lambda d: mg.zeros(2, device=d, requires_grad=True),
], ids=["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "tensor-list",
        "tensor-array", "zeros_like", "ones_like", "full_like", "requires_grad"])
def test_factories_take_device(cuda, make):
    t = make(cuda)
    assert t.device == "cuda:0" and be.is_cupy_array(t.data)
    cpu = make("cpu")
    assert cpu.device == "cpu"
    np.testing.assert_allclose(t.detach().numpy(), cpu.detach().numpy())


def test_like_factories_can_move(cuda):
    d = mg.ones(2, device=cuda)
    assert mg.zeros_like(d, device="cpu").device == "cpu"


def test_set_default_device(cuda):
    prev = mg.get_default_device()
    try:
        mg.set_default_device("cuda")
        assert mg.get_default_device() == "cuda:0"
        assert mg.zeros(2).device == "cuda:0"
        assert mg.randn(2).device == "cuda:0"
        assert mg.tensor([1.0, 2.0]).device == "cuda:0"
        assert mg.tensor(np.ones(2)).device == "cuda:0"
        assert mg.zeros(2, device="cpu").device == "cpu"
        mg.set_default_device("cpu")
        assert mg.zeros(2).device == "cpu"
    finally:
        mg.set_default_device(prev)


# -- without CuPy ---------------------------------------------------------------------------


def test_missing_cupy_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(mg._xp, "_cupy", None)
    monkeypatch.setattr(be, "_cupyx", None)
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    prev = mg.get_default_device()
    t = mg.Tensor(np.ones(2), device="cpu")
    for ask in (lambda: mg.zeros(2, device="cuda"), lambda: t.to("cuda"), lambda: t.cuda(),
                lambda: mg.tensor([1.0], device="cuda:0"), lambda: mg.set_default_device("cuda")):
        with pytest.raises(RuntimeError, match=r"needs CuPy.*bash scripts/setup\.sh gpu.*pip install \"minigrad\[gpu\]\""):
            ask()
    assert mg.get_default_device() == prev


def test_importing_minigrad_does_not_import_cupy():
    code = ("import sys, minigrad as mg; x = mg.randn(3, requires_grad=True); (x * x).sum().backward(); "
            "print('cupy' in sys.modules, 'minigrad.testing' in sys.modules, 'minigrad.testing.fakecupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "", "PYTHONPATH": str(__import__("pathlib").Path(__file__).parents[1])})
    assert out.stdout.split() == ["False", "False", "False"]


# -- backend helpers on the device --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                   "uint32", "uint64", "bool", "complex64", "complex128"])
def test_index_add_every_dtype(cuda, dtype):
    xp = be.xp_for(cuda)
    idx = np.array([0, 0, 3, -1, 3, 3])
    vals = (np.arange(1, 7) % 2 == 1) if dtype == "bool" else np.arange(1, 7).astype(dtype)
    want = np.zeros(5, dtype=dtype)
    np.add.at(want, idx, vals)
    got = xp.zeros(5, dtype=dtype)
    mg.kernels.index_add(xp, got, xp.asarray(idx), xp.asarray(vals))
    np.testing.assert_array_equal(be.to_numpy(got), want)
    # 2-D target, a tuple of index arrays, broadcast values
    want2 = np.zeros((3, 2), dtype=dtype)
    np.add.at(want2, (idx[:3] % 3, idx[:3] % 2), vals[:1])
    got2 = xp.zeros((3, 2), dtype=dtype)
    mg.kernels.index_add(xp, got2, (xp.asarray(idx[:3] % 3), xp.asarray(idx[:3] % 2)), xp.asarray(vals[:1]))
    np.testing.assert_array_equal(be.to_numpy(got2), want2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "complex128"])
def test_bincount_add(cuda, dtype):
    xp = be.xp_for(cuda)
    idx = np.array([2, 0, 2, 1])
    w = np.array([1, 2, 3, 4]).astype(dtype)
    want = np.zeros(4, dtype=dtype)
    np.add.at(want, idx, w)
    got = mg.kernels.bincount_add(xp, xp.asarray(idx), xp.asarray(w), 4)
    assert be.is_cupy_array(got) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(be.to_numpy(got), want)
    w2 = np.arange(8).reshape(4, 2).astype(dtype)
    want2 = np.zeros((4, 2), dtype=dtype)
    np.add.at(want2, idx, w2)
    np.testing.assert_array_equal(be.to_numpy(mg.kernels.bincount_add(xp, xp.asarray(idx), xp.asarray(w2), 4)), want2)


def test_array_module(cuda):
    xp = be.xp_for(cuda)
    d, h = xp.zeros(2), np.zeros(2)
    assert be.array_module(d) is xp and be.array_module(h) is np and be.array_module(1.0) is np
    assert be.array_module(d, 2.0, d) is xp
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        be.array_module(d, h)
    assert be.device_of(d) == "cuda:0" and be.device_of(h) == "cpu"


# -- every op: same values and gradients on the device as on the CPU ------------------------------

R = np.random.default_rng(0)
A = R.standard_normal((3, 4))
B = R.standard_normal((3, 4))
P = np.abs(R.standard_normal((3, 4))) + 0.5  # positive, for log / sqrt / pow
ROW = R.standard_normal(4)
M = R.standard_normal((4, 5))
BM = R.standard_normal((2, 3, 4))

OPS = {
    "add-broadcast": ((A, ROW), lambda a, r: a + r),
    "sub-scalar": ((A,), lambda a: 2.0 - a),
    "mul": ((A, B), lambda a, b: a * b),
    "div": ((A, P), lambda a, p: a / p),
    "pow": ((P, B), lambda p, b: p ** b),
    "pow-scalar": ((A,), lambda a: a ** 3),
    "rpow": ((A,), lambda a: 2.0 ** a),
    "mod": ((A, P), lambda a, p: a % p),
    "neg-abs": ((A,), lambda a: abs(-a)),
    "exp-log-sqrt": ((P,), lambda p: mg.exp(p) + mg.log(p) + mg.sqrt(p)),
    "tanh-sigmoid-relu": ((A,), lambda a: mg.tanh(a) * mg.sigmoid(a) + mg.relu(a)),
    "sin-cos": ((A,), lambda a: mg.sin(a) * mg.cos(a)),
    "clip": ((A,), lambda a: mg.clip(a, -0.5, 0.5)),
    "maximum-minimum": ((A, B), lambda a, b: mg.maximum(a, b) - mg.minimum(a, 0.1)),
    "where": ((A, B), lambda a, b: mg.where(a > b, a, b * 2)),
    "sum-all": ((A,), lambda a: a.sum()),
    "sum-axis": ((BM,), lambda x: x.sum(axis=(0, -1), keepdims=True)),
    "sum-empty-axes": ((A,), lambda a: a.sum(axis=())),
    "mean-var-std": ((A,), lambda a: a.mean(0) + a.var(1).sum() + a.std()),
    "max-min": ((A,), lambda a: a.max(axis=1) + a.min(axis=0).sum()),
    "logsumexp": ((A,), lambda a: a.logsumexp(axis=1)),
    "softmax": ((A,), lambda a: a.softmax(-1) * mg.tensor(B, device=a.device)),
    "log_softmax": ((A,), lambda a: a.log_softmax(0) * mg.tensor(B, device=a.device)),
    "reshape-transpose": ((BM,), lambda x: x.reshape(6, 4).T.permute(1, 0).swapaxes(0, 1)),
    "squeeze-unsqueeze-expand": ((ROW,), lambda r: r.unsqueeze(0).expand(3, 4).flatten().reshape(3, 4, 1).squeeze(-1)),
    "broadcast_to": ((ROW,), lambda r: r.broadcast_to((2, 4))),
    "getitem-basic": ((BM,), lambda x: x[1, :, ::2]),
    "getitem-advanced": ((A,), lambda a: a[[0, 0, 2], [1, 1, 3]]),
    "getitem-tensor-index": ((A,), lambda a: a[mg.tensor([2, 0, 2], device=a.device)]),
    "getitem-mask": ((A,), lambda a: a[a > 0]),
    "cat-stack": ((A, B), lambda a, b: mg.cat([a, b], axis=1).sum(1) + mg.stack([a, b], axis=-1).sum((1, 2))),
    "matmul": ((A, M), lambda a, m: a @ m),
    "matmul-vec": ((ROW, M), lambda r, m: r @ m),
    "matmul-batched": ((BM, M), lambda x, m: x @ m),
    "outer": ((ROW, ROW), lambda a, b: mg.outer(a, b)),
    "astype-clone-contiguous": ((A,), lambda a: a.astype(np.float32).clone().T.contiguous()),
}


def _run(fn, arrays, device, grad):
    xs = [mg.tensor(a, dtype=np.float64, device=device, requires_grad=grad) for a in arrays]
    out = fn(*xs)
    if grad:
        out.backward(mg.tensor(np.cos(np.arange(out.size)).reshape(out.shape), dtype=out.dtype, device=device))
    return out, xs


@pytest.mark.parametrize("name", list(OPS))
def test_op_same_on_device(cuda, name):
    arrays, fn = OPS[name]
    ref, rxs = _run(fn, arrays, "cpu", True)
    out, xs = _run(fn, arrays, cuda, True)
    assert out.device == "cuda:0" and be.is_cupy_array(out.data)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    for x, rx in zip(xs, rxs, strict=True):
        assert x.grad.device == "cuda:0"
        np.testing.assert_allclose(x.grad.numpy(), rx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_no_grad_ops_on_device(cuda):
    a = mg.tensor(A, device=cuda)
    assert a.argmax(1).tolist() == np.argmax(A, 1).tolist()
    assert a.argmin().item() == int(np.argmin(A))
    assert (a // 0.5).device == "cuda:0" and (a > 0).any().item() and bool((a == a).all())
    assert mg.allclose(a, a) and mg.isclose(a, a + 1e-9).data.all()
    assert (~(a > 0)).dtype == np.bool_ and ((a > 0) & (a < 1)).device == "cuda:0"
    assert a.stride() == (4, 1) and a.T.stride() == (1, 4) and a[1].storage_offset() == 4


def test_strided_walk_on_device(cuda):
    t = mg.tensor(BM, device=cuda).permute(2, 0, 1)[1:]
    buf, shape, strides, off = mg.strided.layout(t)
    assert be.is_cupy_array(buf)
    for axis in range(3):
        got = mg.strided.sum(buf, shape, axis, strides, off)
        assert be.is_cupy_array(got)
        np.testing.assert_allclose(be.to_numpy(got), t.numpy().sum(axis))


def test_higher_order_on_device(cuda):
    x = mg.tensor([0.5, -1.0, 2.0], dtype=np.float64, device=cuda, requires_grad=True)
    (g,) = mg.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = mg.grad(g.sum(), x)
    assert gg.device == "cuda:0"
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.5, -1.0, 2.0]))


def test_gradcheck_on_device(cuda):
    x = mg.tensor(A, dtype=np.float64, device=cuda, requires_grad=True)
    y = mg.tensor(M, dtype=np.float64, device=cuda, requires_grad=True)
    f = lambda a, m: (a @ m).softmax(-1).logsumexp(0)  # noqa: E731
    assert mg.gradcheck(f, (x, y))
    assert mg.gradcheck(f, (x, y), fast=True)
    assert mg.gradgradcheck(lambda a: (a * a).tanh().sum(1), (x,))


def test_autograd_function_on_device(cuda):
    class Square(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x * g).data  # a raw device array is accepted too

    x = mg.tensor([1.0, 3.0], device=cuda, requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.device == "cuda:0"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])


# -- models (where mg.nn / mg.optim / save-load exist) --------------------------------------------


def test_module_to_and_training_on_device(cuda, tmp_path):
    nn = pytest.importorskip("minigrad.nn")
    optim = pytest.importorskip("minigrad.optim")
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    ref = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    ref.load_state_dict(model.state_dict())
    ref.to("cpu")
    assert model.to(cuda) is model
    assert all(p.device == "cuda:0" and p.is_leaf and p.requires_grad for p in model.parameters())
    x, y = mg.tensor(A, device=cuda), mg.tensor([0, 2, 1], device=cuda)
    for m, xx, yy in ((model, x, y), (ref, x.cpu(), y.cpu())):
        opt = optim.Adam(m.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad() if hasattr(opt, "zero_grad") else m.zero_grad()
            loss = nn.functional.cross_entropy(m(xx.astype(np.float32)), yy)
            loss.backward()
            opt.step()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        assert p.device == "cuda:0" and p.grad.device == "cuda:0"
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    # save writes host arrays; load gives them back on the CPU
    pytest.importorskip("minigrad.io")
    path = tmp_path / "m.npz"
    mg.save(model.state_dict(), str(path))
    with np.load(path, allow_pickle=False) as f:
        assert all(type(f[k]) is np.ndarray for k in f.files)
    sd = mg.load(str(path))
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(to_np(sd[k]), v.numpy())
