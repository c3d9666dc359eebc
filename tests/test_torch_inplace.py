"""PyTorch's in-place unary methods and in-place sampling (issue 42), against torch on the CPU.

The unary methods (``exp_`` ... ``triu_``): values, dtypes and gradients as torch's, the tensor written
(same object, storage and version bump), a view's write reaching its base, a leaf that requires grad
refused. Their second derivatives in all four compositions: tests/test_inplace_modes.py.

The draws (``uniform_ normal_ bernoulli_``, ``multinomial``): shapes, dtypes, ranges, rough moments,
reproducibility under ``mg.manual_seed``, a fresh draw on each replay of ``mg.compile``, and their
errors; multinomial's frequencies against its weights, with and without replacement.
"""
import numpy as np
import pytest
from conftest import rnd, to_np

import minigrad as mg

torch = pytest.importorskip("torch")

SIGNED = rnd((3, 4), seed=3, away=(0.0,))
POSITIVE = rnd((3, 4), seed=4, low=0.5)

# (method, its arguments, the data)
UNARY = [
    ("exp_", (), SIGNED), ("log_", (), POSITIVE), ("sqrt_", (), POSITIVE), ("abs_", (), SIGNED),
    ("neg_", (), SIGNED), ("sigmoid_", (), SIGNED), ("tanh_", (), SIGNED), ("relu_", (), SIGNED),
    ("sin_", (), SIGNED), ("cos_", (), SIGNED), ("floor_", (), SIGNED * 3), ("ceil_", (), SIGNED * 3),
    ("round_", (), SIGNED * 3), ("reciprocal_", (), SIGNED), ("square_", (), SIGNED),
    ("clamp_min_", (0.2,), rnd((3, 4), seed=5, away=(0.2,))),
    ("clamp_max_", (-0.1,), rnd((3, 4), seed=6, away=(-0.1,))),
    ("tril_", (), SIGNED), ("tril_", (-1,), SIGNED), ("triu_", (), SIGNED), ("triu_", (2,), SIGNED),
]
IDS = [f"{m}{a}" for m, a, _ in UNARY]


def _torch_call(name, t, args):
    return getattr(t, name)(*args)


@pytest.mark.parametrize("name,args,a", UNARY, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_dtype_match_torch(name, args, a, dtype):
    t = mg.tensor(a.astype(dtype))
    data, ver = t.data, t._version
    assert getattr(t, name)(*args) is t
    assert t.data is data and t._version == ver + 1
    want = _torch_call(name, torch.tensor(a.astype(dtype)), args)
    assert t.dtype == np.dtype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(to_np(t), want.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args,a", UNARY, ids=IDS)
def test_gradients_match_torch(name, args, a):
    w = rnd(a.shape, seed=9)
    x = mg.tensor(a, requires_grad=True)
    y = x * 1.5
    getattr(y, name)(*args)
    assert y._node.op == name  # recorded under the method's own name
    (y * mg.tensor(w) * x).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = tx * 1.5
    _torch_call(name, ty, args)
    (ty * torch.tensor(w) * tx).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,args,a", [c for c in UNARY if c[0] not in ("tril_", "triu_")],
                         ids=[i for i, c in zip(IDS, UNARY, strict=True) if c[0] not in ("tril_", "triu_")])
def test_a_row_view_writes_into_its_base_with_torchs_gradient(name, args, a):
    w = rnd(a.shape, seed=10)
    x = mg.tensor(a, requires_grad=True)
    y = x * 2.0
    getattr(y[1], name)(*args)
    (y * mg.tensor(w)).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = tx * 2.0
    _torch_call(name, ty[1], args)
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(y.detach()), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["tril_", "triu_"])
def test_triangles_of_a_batch_and_of_a_view(name):
    a = rnd((2, 3, 4), seed=11)
    t = mg.tensor(a)
    getattr(t[:, 1:], name)(1)
    want = torch.tensor(a)
    getattr(want[:, 1:], name)(1)
    np.testing.assert_array_equal(to_np(t), want.numpy())


def test_integer_tensors_keep_their_dtype_or_refuse_a_float_result():
    t = mg.tensor(np.array([-2, 3, -1]))
    t.abs_().neg_().clamp_min_(-2)
    assert t.dtype == np.int64 and t.tolist() == [-2, -2, -1]
    with pytest.raises(TypeError, match="^exp_: the result dtype float64 cannot be stored"):
        mg.tensor(np.array([1, 2])).exp_()
    m = mg.tensor(np.arange(9).reshape(3, 3))
    m.triu_()
    assert m.dtype == np.int64 and m.tolist() == [[0, 1, 2], [0, 4, 5], [0, 0, 8]]


@pytest.mark.parametrize("name,args", [("exp_", ()), ("clamp_min_", (0.0,)), ("tril_", ()), ("uniform_", ()),
                                       ("normal_", ()), ("bernoulli_", (0.5,))])
def test_a_leaf_that_requires_grad_is_refused_and_left_unchanged(name, args):
    w = mg.tensor(SIGNED, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{name}: a leaf tensor that requires grad"):
        getattr(w, name)(*args)
    assert w._version == 0
    np.testing.assert_array_equal(to_np(w), SIGNED)
    with mg.no_grad():
        getattr(w, name)(*args)
    assert w._version == 1


def test_clamp_min_and_max_take_a_tensor_bound_and_refuse_none():
    t = mg.tensor([[-1.0, 0.5], [2.0, -3.0]])
    t.clamp_min_(mg.tensor([0.0, 1.0]))
    assert t.tolist() == [[0.0, 1.0], [2.0, 1.0]]
    t.clamp_max_(mg.tensor([[1.5], [0.5]]))
    assert t.tolist() == [[0.0, 1.0], [0.5, 0.5]]
    with pytest.raises(ValueError, match="^clamp_min_: min must be"):
        t.clamp_min_(None)


# -- the draws ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_is_in_range_with_its_moments(dtype):
    t = mg.zeros(200, 100, dtype=dtype)
    assert t.uniform_(-2.0, 3.0) is t
    v = to_np(t)
    assert t.dtype == np.dtype(dtype) and v.shape == (200, 100)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.var() - 25 / 12) < 0.1
    u = to_np(mg.zeros(10000, dtype=dtype).uniform_())
    assert u.min() >= 0.0 and u.max() < 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_has_its_mean_and_std(dtype):
    v = to_np(mg.empty(20000, dtype=dtype).normal_(mean=3.0, std=0.5))
    assert v.dtype == np.dtype(dtype)
    assert abs(v.mean() - 3.0) < 0.02 and abs(v.std() - 0.5) < 0.02


def test_bernoulli_draws_zeros_and_ones_in_the_tensors_dtype():
    for dtype in (np.float32, np.float64, np.int64):
        v = to_np(mg.zeros(20000, dtype=dtype).bernoulli_(0.3))
        assert v.dtype == np.dtype(dtype) and set(np.unique(v)) <= {0, 1}
        assert abs(v.mean() - 0.3) < 0.02
    assert to_np(mg.ones(50).bernoulli_(0.0)).sum() == 0
    p = mg.tensor([0.0, 1.0, 0.5])  # a tensor of probabilities, broadcast over the rows
    v = to_np(mg.zeros(4000, 3).bernoulli_(p))
    assert (v[:, 0] == 0).all() and (v[:, 1] == 1).all() and abs(v[:, 2].mean() - 0.5) < 0.05


def test_draws_are_reproducible_under_manual_seed():
    def draws():
        mg.manual_seed(7)
        return [to_np(mg.zeros(3, 4).uniform_()), to_np(mg.zeros(5).normal_(1.0, 2.0)),
                to_np(mg.zeros(6).bernoulli_()), to_np(mg.multinomial(mg.tensor([1.0, 2.0, 3.0, 4.0]), 3)),
                to_np(mg.tensor([[1.0, 1.0], [0.0, 2.0]]).multinomial(4, replacement=True))]

    first, second = draws(), draws()
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    mg.manual_seed(8)
    assert not np.array_equal(to_np(mg.zeros(3, 4).uniform_()), first[0])


def test_a_draw_into_a_tensor_in_the_graph_sends_no_gradient_through_the_values():
    x = mg.tensor(SIGNED, requires_grad=True)
    y = x * 2.0
    z = y[0]
    z.normal_()
    assert y._node.op == "copy_slices" and z._node is not None
    (y * x).sum().backward()
    g = 4.0 * SIGNED
    g[0] = to_np(y.detach())[0]  # row 0: only y's direct factor x reaches x; the drawn values carry none
    np.testing.assert_allclose(to_np(x.grad), g, rtol=1e-12)


def test_the_draws_errors():
    with pytest.raises(TypeError, match="^uniform_: draws are floating-point"):
        mg.zeros(3, dtype=np.int64).uniform_()
    with pytest.raises(ValueError, match="^uniform_: expects from_ <= to"):
        mg.zeros(3).uniform_(2.0, 1.0)
    with pytest.raises(ValueError, match="^normal_: expects std >= 0"):
        mg.zeros(3).normal_(0.0, -1.0)
    with pytest.raises(ValueError, match=r"^bernoulli_: p must be in \[0, 1\]"):
        mg.zeros(3).bernoulli_(1.5)
    with pytest.raises(ValueError, match="does not broadcast"):
        mg.zeros(3).bernoulli_(mg.tensor([0.5, 0.5]))


def test_compile_draws_again_on_each_replay():
    @mg.compile
    def step(t):
        b = mg.zeros(4)
        b.uniform_()
        return t + b

    t = mg.zeros(4)
    outs = [to_np(step(t)) for _ in range(3)]
    assert not np.array_equal(outs[1], outs[2])
    assert all(((o >= 0) & (o < 1)).all() for o in outs)


# -- multinomial ----------------------------------------------------------------------------------------


def test_multinomial_with_replacement_follows_the_weights():
    w = np.array([1.0, 0.0, 3.0, 6.0])
    s = mg.multinomial(mg.tensor(w), 20000, replacement=True)
    assert s.dtype == np.int64 and s.shape == (20000,) and s.requires_grad is False
    freq = np.bincount(to_np(s), minlength=4) / 20000
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.015)
    assert freq[1] == 0


def test_multinomial_without_replacement_draws_each_category_once_in_order():
    w = mg.tensor([[5.0, 1.0, 0.0, 1.0], [0.0, 0.0, 2.0, 1.0]])
    s = to_np(w.multinomial(2))
    assert s.shape == (2, 2) and s.dtype == np.int64
    for row, ws in zip(s, to_np(w), strict=True):
        assert len(set(row)) == 2 and (ws[row] > 0).all()
    firsts = to_np(mg.multinomial(mg.tensor([[5.0, 1.0, 0.0, 1.0]] * 6000), 1))[:, 0]
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 6000, [5 / 7, 1 / 7, 0, 1 / 7], atol=0.02)
    full = to_np(mg.multinomial(mg.tensor([1.0, 2.0, 3.0]), 3))
    assert sorted(full.tolist()) == [0, 1, 2]


def test_multinomial_shapes_match_torchs():
    for shape, k, rep in [((5,), 3, False), ((4, 6), 2, True), ((1, 3), 7, True)]:
        w = np.abs(rnd(shape, seed=2)) + 0.1
        got = mg.multinomial(mg.tensor(w), k, replacement=rep)
        want = torch.multinomial(torch.tensor(w), k, replacement=rep)
        assert got.shape == tuple(want.shape) and str(want.dtype) == "torch.int64" and got.dtype == np.int64


def test_multinomial_errors():
    with pytest.raises(ValueError, match="^multinomial: cannot draw 3 samples without replacement from a row "
                                         "with only 2 non-zero weights"):
        mg.multinomial(mg.tensor([1.0, 0.0, 2.0]), 3)
    with pytest.raises(ValueError, match="^multinomial: cannot draw 4 samples without replacement from 3"):
        mg.multinomial(mg.tensor([1.0, 1.0, 2.0]), 4)
    with pytest.raises(ValueError, match="^multinomial: weights must be finite and non-negative"):
        mg.multinomial(mg.tensor([1.0, -1.0]), 1)
    with pytest.raises(ValueError, match="^multinomial: every row of weights must have a positive sum"):
        mg.multinomial(mg.tensor([[1.0, 1.0], [0.0, 0.0]]), 1, replacement=True)
    with pytest.raises(ValueError, match="^multinomial: input must be a 1-D or 2-D"):
        mg.multinomial(mg.ones(2, 2, 2), 1)
    with pytest.raises(ValueError, match="^multinomial: num_samples must be a positive int"):
        mg.multinomial(mg.ones(3), 0)
    with pytest.raises(TypeError, match="^multinomial: input must be floating-point"):
        mg.multinomial(mg.tensor([1, 2]), 1)
