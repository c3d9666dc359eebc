"""PyTorch's Tensor methods that share a name with a NumPy function (issue 42, API.md "The PyTorch
surface" and its spelling rule): ``t.tril(diagonal)``, ``t.triu``, ``t.diag``, ``t.roll(shifts, dims)``,
``t.tile(*dims)``, ``t.flip(*dims)``, ``t.where(condition, y)``, ``t.index_add(dim, index, source,
alpha)``, the ``dims=`` and ``shifts=`` keywords of ``mg.flip`` / ``mg.roll``, ``mg.index_add`` in
PyTorch's spelling, the in-place ``scatter_add_``, and ``F.unfold``, ``F.fold``, ``F.gumbel_softmax``.
Each against torch in float64: values, and gradients through backward; the errors name the op. The
registry test gradchecks the same methods from their samples."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(42)


def _pair(*shape):
    a = RNG.standard_normal(shape)
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _same(m_out, t_out, m_ins, t_ins):
    np.testing.assert_allclose(m_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = RNG.standard_normal(t_out.shape)
    (m_out * mg.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    for m, t in zip(m_ins, t_ins, strict=True):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


METHODS = [
    ("tril", (3, 4), lambda x: x.tril()),
    ("tril_diagonal", (2, 3, 4), lambda x: x.tril(1)),
    ("tril_kw", (4, 3), lambda x: x.tril(diagonal=-1)),
    ("triu", (3, 4), lambda x: x.triu()),
    ("triu_kw", (2, 4, 4), lambda x: x.triu(diagonal=2)),
    ("diag_vector", (3,), lambda x: x.diag()),
    ("diag_vector_k", (3,), lambda x: x.diag(-2)),
    ("diag_matrix", (3, 4), lambda x: x.diag(diagonal=1)),
    ("roll_flat", (3, 4), lambda x: x.roll(5)),
    ("roll_dim", (3, 4), lambda x: x.roll(-1, 1)),
    ("roll_dims", (2, 3, 4), lambda x: x.roll((1, 2), dims=(0, 2))),
    ("roll_kw", (3, 4), lambda x: x.roll(shifts=2, dims=0)),
    ("tile", (2, 3), lambda x: x.tile((2, 2))),
    ("tile_longer", (2, 3), lambda x: x.tile((2, 1, 3))),
    ("tile_shorter", (2, 3), lambda x: x.tile((2,))),
    ("tile_ints", (2, 3), lambda x: x.tile(2, 1, 2)),
    ("tile_int", (2, 3), lambda x: x.tile(3)),
    ("flip_dims", (2, 3, 4), lambda x: x.flip(dims=(0, 2))),
    ("flip_positional", (2, 3), lambda x: x.flip((1,))),
    ("flip_ints", (2, 3, 4), lambda x: x.flip(0, 2)),
]


@pytest.mark.parametrize("name, shape, call", METHODS, ids=[m[0] for m in METHODS])
def test_method_matches_torch(name, shape, call):
    x, t = _pair(*shape)
    _same(call(x), call(t), [x], [t])


def test_where_method_is_self_where_condition_else_y():
    x, tx = _pair(3, 4)
    y, ty = _pair(4)
    c = RNG.random((3, 4)) > 0.5
    _same(x.where(mg.tensor(c), y), tx.where(torch.tensor(c), ty), [x, y], [tx, ty])
    x, tx = _pair(3, 1)
    out, want = x.where(mg.tensor(c), 0.5), tx.where(torch.tensor(c), 0.5)
    _same(out, want, [x], [tx])


def test_function_keywords_flip_and_roll():
    x, t = _pair(2, 3, 4)
    _same(mg.flip(x, dims=(0, -1)), torch.flip(t, dims=(0, -1)), [x], [t])
    x, t = _pair(2, 3, 4)
    _same(mg.roll(x, shifts=(1, -2), dims=(1, 2)), torch.roll(t, shifts=(1, -2), dims=(1, 2)), [x], [t])
    x, t = _pair(2, 3)
    _same(mg.roll(x, shifts=4), torch.roll(t, shifts=4), [x], [t])
    # NumPy's spelling still gives NumPy's result
    a = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(mg.roll(mg.tensor(a), 1, 1).numpy(), np.roll(a, 1, 1))
    np.testing.assert_array_equal(mg.flip(mg.tensor(a), 0).numpy(), np.flip(a, 0))
    np.testing.assert_array_equal(mg.tril(mg.tensor(a), 1).numpy(), np.tril(a, 1))


def test_function_keyword_errors_name_the_op():
    x = mg.ones((2, 3))
    with pytest.raises(TypeError, match="flip: got both axis and its alias dims="):
        mg.flip(x, 0, dims=1)
    with pytest.raises(TypeError, match="roll: got both shift and its alias shifts="):
        mg.roll(x, 1, shifts=1)
    with pytest.raises(TypeError, match="roll: missing the shift"):
        mg.roll(x, dims=0)


def test_method_errors_name_the_op():
    x = mg.ones((2, 3))
    with pytest.raises(ValueError, match="tril: input must be at least 2-D"):
        mg.ones(3).tril()
    with pytest.raises(ValueError, match="diag: input must be 1-D or 2-D"):
        mg.ones((2, 2, 2)).diag()
    with pytest.raises(ValueError, match="roll: shifts .* and dims .* must have the same length"):
        x.roll((1, 2), dims=(0,))
    with pytest.raises(TypeError, match="tile: dims must be ints"):
        x.tile(2.0)


# -- index_add -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, dim, index, alpha", [((4, 3), 0, [3, 0, 3], 1), ((2, 5), 1, [4, 1], -0.5),
                                                      ((2, 3, 2), -2, [2, 2, 0, 1], 2.0), ((5,), 0, [1, 1], 3)])
def test_index_add_method_matches_torch(shape, dim, index, alpha):
    x, tx = _pair(*shape)
    sshape = list(shape)
    sshape[dim] = len(index)
    s, ts = _pair(*sshape)
    i = np.array(index)
    _same(x.index_add(dim, mg.tensor(i), s, alpha=alpha), tx.index_add(dim, torch.tensor(i), ts, alpha=alpha),
          [x, s], [tx, ts])


def test_index_add_of_a_0d_input_matches_torch():
    x, tx = _pair()
    s, ts = _pair()
    _same(x.index_add(0, mg.tensor([0]), s, alpha=3), tx.index_add(0, torch.tensor([0]), ts, alpha=3), [x, s], [tx, ts])


def test_index_add_function_takes_both_spellings():
    a, src = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3))
    want = torch.index_add(torch.tensor(a), 0, torch.tensor([1, 1]), torch.tensor(src)).numpy()
    for got in (mg.index_add(mg.tensor(a), 0, [1, 1], mg.tensor(src)),
                mg.index_add(mg.tensor(a), dim=0, index=mg.tensor([1, 1]), source=mg.tensor(src)),
                mg.index_add(input=mg.tensor(a), dim=0, index=[1, 1], source=mg.tensor(src), alpha=1)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    # minigrad's own (shape, idx, values) spelling keeps its meaning
    np.testing.assert_array_equal(mg.index_add((3,), mg.tensor([0, 2, 0]), mg.tensor([1.0, 2.0, 3.0])).numpy(),
                                  [4.0, 0.0, 2.0])


def test_index_add_errors_name_the_op():
    x = mg.zeros((4, 3))
    with pytest.raises(ValueError, match=r"index_add: source of shape \(2, 2\) must have shape \(2, 3\)"):
        x.index_add(0, mg.tensor([0, 1]), mg.zeros((2, 2)))
    with pytest.raises(TypeError, match="index_add: source dtype float32 differs from input dtype"):
        mg.zeros((4, 3), dtype=mg.double).index_add(0, mg.tensor([0]), mg.zeros((1, 3), dtype=mg.float))
    with pytest.raises(TypeError, match="index_add: index must be an integer tensor"):
        x.index_add(0, mg.tensor([0.0]), mg.zeros((1, 3)))
    with pytest.raises(IndexError, match="index_add"):
        x.index_add(0, mg.tensor([4]), mg.zeros((1, 3)))


# -- scatter_add_ ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dim, index", [(0, [[2, 0, 1, 1], [2, 0, 0, 1]]), (1, [[3, 3, 0], [1, 2, 1], [0, 0, 0]]),
                                        (-1, [[1], [0], [3]])])
def test_scatter_add_in_place_matches_torch(dim, index):
    x, tx = _pair(3, 4)
    i = np.array(index)
    s, ts = _pair(*i.shape)
    a, ta = x * 1.0, tx * 1.0
    assert a.scatter_add_(dim, mg.tensor(i), s) is a
    ta.scatter_add_(dim, torch.tensor(i), ts)
    _same(a, ta, [x, s], [tx, ts])


def test_scatter_add_in_place_refuses_a_leaf_and_names_the_op():
    w = mg.zeros((3, 4), requires_grad=True)
    with pytest.raises(RuntimeError, match="^scatter_add_: a leaf tensor that requires grad"):
        w.scatter_add_(0, mg.tensor([[0]]), mg.ones((1, 1)))
    with pytest.raises(TypeError, match="^scatter_add_: src dtype"):
        mg.zeros((3, 4), dtype=mg.double).scatter_add_(0, mg.tensor([[0]]), mg.ones((1, 1), dtype=mg.float))


# -- F.unfold, F.fold, F.gumbel_softmax ----------------------------------------------------------

F, TF = mg.nn.functional, torch.nn.functional

GEOMETRIES = [((2, 3, 5, 6), {"kernel_size": 2}),
              ((2, 3, 7, 6), {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (2, 1)}),
              ((1, 2, 6, 5), {"kernel_size": 3, "stride": 2, "padding": (1, 0)}),
              ((3, 5, 6), {"kernel_size": 3, "padding": (1, 0)}),  # unbatched
              ((1, 1, 4, 4), {"kernel_size": 4})]


@pytest.mark.parametrize("shape, kw", GEOMETRIES)
def test_unfold_matches_torch(shape, kw):
    x, t = _pair(*shape)
    _same(F.unfold(x, **kw), TF.unfold(t, **kw), [x], [t])


@pytest.mark.parametrize("shape, kw", GEOMETRIES)
def test_fold_matches_torch_and_is_unfolds_adjoint(shape, kw):
    blocks = TF.unfold(torch.zeros(shape, dtype=torch.float64), **kw).shape
    b, tb = _pair(*blocks)
    _same(F.fold(b, shape[-2:], **kw), TF.fold(tb, shape[-2:], **kw), [b], [tb])
    u, v = RNG.standard_normal(shape), RNG.standard_normal(tuple(blocks))  # <unfold(u), v> == <u, fold(v)>
    lhs = float((F.unfold(mg.tensor(u), **kw) * mg.tensor(v)).sum().item())
    rhs = float((mg.tensor(u) * F.fold(mg.tensor(v), shape[-2:], **kw)).sum().item())
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_unfold_and_fold_gradcheck():
    x = mg.tensor(RNG.standard_normal((1, 2, 5, 4)), requires_grad=True)
    assert mg.gradcheck(lambda a: F.unfold(a, (2, 3), padding=1, stride=(1, 2)), (x,))
    b = mg.tensor(RNG.standard_normal((1, 12, 10)), requires_grad=True)
    assert mg.gradcheck(lambda a: F.fold(a, (4, 5), (2, 3), stride=(2, 1), padding=(0, 1)), (b,))


def test_unfold_and_fold_errors_name_the_op():
    with pytest.raises(ValueError, match="unfold: input must be 3-D"):
        F.unfold(mg.zeros((2, 3)), 2)
    with pytest.raises(ValueError, match="unfold: no block fits"):
        F.unfold(mg.zeros((1, 1, 2, 2)), 3)
    with pytest.raises(TypeError, match="unfold: kernel_size must be an int or a pair"):
        F.unfold(mg.zeros((1, 1, 4, 4)), (1, 2, 3))
    with pytest.raises(ValueError, match="fold: the input has 5 blocks"):
        F.fold(mg.zeros((1, 4, 5)), (3, 3), 2)
    with pytest.raises(ValueError, match="fold: dim 1 of the input .* divisible"):
        F.fold(mg.zeros((1, 5, 4)), (3, 3), 2)


def _gumbel_noise_like(x, seed):
    mg.manual_seed(seed)
    u = mg.rand_like(x).numpy()
    return -np.log(-np.log1p(-u))


@pytest.mark.parametrize("tau, dim", [(1.0, -1), (0.5, 0), (2.0, 1)])
def test_gumbel_softmax_is_softmax_of_logits_plus_gumbel_noise(tau, dim):
    x, t = _pair(3, 4, 5)
    g = _gumbel_noise_like(x, 7)  # the draws gumbel_softmax makes from the same seed
    mg.manual_seed(7)
    y = F.gumbel_softmax(x, tau=tau, dim=dim)
    want = torch.softmax((t + torch.tensor(g)) / tau, dim)
    _same(y, want, [x], [t])
    np.testing.assert_allclose(y.detach().numpy().sum(dim), 1.0, rtol=1e-12)


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient():
    x, t = _pair(4, 6)
    g = torch.tensor(_gumbel_noise_like(x, 11))
    mg.manual_seed(11)
    y = F.gumbel_softmax(x, tau=0.7, hard=True)
    soft = torch.softmax((t + g) / 0.7, -1)
    hard = TF.one_hot(soft.argmax(-1), 6).double() - soft.detach() + soft  # PyTorch's straight-through form
    _same(y, hard, [x], [t])
    assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_array_equal(y.detach().numpy().sum(-1), 1.0)


def test_gumbel_softmax_draws_from_manual_seed_and_checks_its_arguments():
    x = mg.zeros((2, 8))
    mg.manual_seed(5)
    a = F.gumbel_softmax(x).numpy()
    b = F.gumbel_softmax(x).numpy()
    mg.manual_seed(5)
    np.testing.assert_array_equal(F.gumbel_softmax(x).numpy(), a)
    assert not np.array_equal(a, b)
    with pytest.raises(ValueError, match="gumbel_softmax: tau must be positive"):
        F.gumbel_softmax(x, tau=0.0)
    with pytest.raises(TypeError, match="gumbel_softmax: logits must be floating-point"):
        F.gumbel_softmax(mg.zeros((2,), dtype=mg.long))
