"""PyTorch's products and ways of making tensors (issue 42, API.md "The PyTorch surface"): mm, bmm,
mv, addmm, outer, kron, norm, cdist, block_diag, cartesian_prod, broadcast_tensors, meshgrid,
diag_embed, repeat_interleave, logspace, linspace(steps=), triu_indices, tril_indices. Each is
compared with torch in float64 (values, and gradients through backward); errors name the op. The
registry test gradchecks the differentiable ones from their samples to order 2."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

INF = float("inf")


def _pair(*arrays):
    """The same float64 leaves in minigrad and torch."""
    ms = [mg.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ms, ts


def _check(mg_fn, th_fn, *arrays, atol=1e-10):
    """Values and the gradients of a weighted sum of every output, minigrad against torch."""
    ms, ts = _pair(*arrays)
    out, want = mg_fn(*ms), th_fn(*ts)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    wants = want if isinstance(want, (tuple, list)) else (want,)
    assert len(outs) == len(wants)
    rng = np.random.default_rng(5)
    loss_m, loss_t = 0, 0
    for o, w in zip(outs, wants, strict=True):
        assert o.shape == tuple(w.shape)
        np.testing.assert_allclose(o.detach().numpy(), w.detach().numpy(), atol=atol)
        if o.dtype.kind == "f":
            wt = rng.standard_normal(o.shape)
            loss_m = loss_m + (o * mg.tensor(wt)).sum()
            loss_t = loss_t + (w * torch.tensor(wt)).sum()
    if isinstance(loss_m, mg.Tensor) and loss_m.requires_grad:  # p=0 counts: no graph, as for other counts
        loss_m.backward()
    loss_t.backward()
    for m, t in zip(ms, ts, strict=True):  # no gradient in minigrad where torch's is all zeros (beta=0, counts)
        want = np.zeros(m.shape) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(np.zeros(m.shape) if m.grad is None else m.grad.numpy(), want, atol=atol)


R = np.random.default_rng(0).standard_normal


# -- products ------------------------------------------------------------------------------------------


def test_mm_bmm_mv_match_torch_and_are_methods():
    a, b = R((3, 4)), R((4, 2))
    _check(mg.mm, torch.mm, a, b)
    _check(lambda x, y: x.mm(y), lambda x, y: x.mm(y), a, b)
    _check(mg.bmm, torch.bmm, R((2, 3, 4)), R((2, 4, 5)))
    _check(lambda x, y: x.bmm(y), lambda x, y: x.bmm(y), R((2, 3, 4)), R((2, 4, 5)))
    _check(mg.mv, torch.mv, R((3, 4)), R(4))
    _check(lambda x, y: x.mv(y), lambda x, y: x.mv(y), R((3, 4)), R(4))


@pytest.mark.parametrize("shape, kw", [((3, 2), {}), ((2,), {"beta": 0.5, "alpha": 2.0}), ((1, 2), {"alpha": -1}),
                                       ((3, 1), {"beta": 0})])
def test_addmm_matches_torch(shape, kw):
    _check(lambda x, a, b: mg.addmm(x, a, b, **kw), lambda x, a, b: torch.addmm(x, a, b, **kw), R(shape), R((3, 4)), R((4, 2)))
    _check(lambda x, a, b: x.addmm(a, b, **kw), lambda x, a, b: x.addmm(a, b, **kw), R(shape), R((3, 4)), R((4, 2)))


def test_addmm_with_beta_zero_ignores_nans_in_input_as_torch_does():
    x = np.full((3, 2), np.nan)
    a, b = R((3, 4)), R((4, 2))
    got = mg.addmm(mg.tensor(x), mg.tensor(a), mg.tensor(b), beta=0).numpy()
    want = torch.addmm(torch.tensor(x), torch.tensor(a), torch.tensor(b), beta=0).numpy()
    np.testing.assert_allclose(got, want)


def test_outer_and_kron_match_torch_and_are_methods():
    _check(mg.outer, torch.outer, R(3), R(4))
    _check(lambda a, b: a.outer(b), lambda a, b: a.outer(b), R(3), R(4))
    _check(mg.kron, torch.kron, R((2, 3)), R((3, 2)))
    _check(lambda a, b: a.kron(b), lambda a, b: a.kron(b), R((2, 3)), R((3, 2)))


@pytest.mark.parametrize("call, bad, words", [
    (lambda: mg.mm(mg.ones(3, 4), mg.ones(3, 4)), ValueError, ["mm:", "(3, 4)"]),
    (lambda: mg.mm(mg.ones(2, 3, 4), mg.ones(4, 2)), ValueError, ["mm:", "2-D"]),
    (lambda: mg.bmm(mg.ones(2, 3, 4), mg.ones(3, 4, 5)), ValueError, ["bmm:", "batch"]),
    (lambda: mg.bmm(mg.ones(3, 4), mg.ones(4, 5)), ValueError, ["bmm:", "3-D"]),
    (lambda: mg.mv(mg.ones(3, 4), mg.ones(3)), ValueError, ["mv:", "(3,)"]),
    (lambda: mg.mv(mg.ones(3, 4), mg.ones(4, 1)), ValueError, ["mv:", "1-D"]),
    (lambda: mg.addmm(mg.ones(4, 2), mg.ones(3, 4), mg.ones(4, 2)), ValueError, ["addmm:", "(4, 2)", "(3, 2)"]),
])
def test_product_errors_name_the_op_and_shapes(call, bad, words):
    with pytest.raises(bad) as e:
        call()
    for w in words:
        assert w in str(e.value)


# -- norm and cdist ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, kw", [((), {}), (("fro",), {}), ((2,), {}), ((1,), {"dim": 0}), ((3,), {"dim": (0, 1)}),
                                      ((INF,), {"dim": 1}), ((-INF,), {"dim": 1}), ((2.5,), {"dim": -1, "keepdim": True}),
                                      (("fro",), {"dim": (0, 1)}), (("fro",), {"dim": 1}), (("nuc",), {"dim": (0, 1)}),
                                      ((0,), {"dim": 1})])
def test_norm_matches_torch_norm(args, kw):
    x = R((3, 4))
    _check(lambda t: mg.norm(t, *args, **kw), lambda t: torch.norm(t, *args, **kw), x)
    _check(lambda t: t.norm(*args, **kw), lambda t: t.norm(*args, **kw), x)


@pytest.mark.parametrize("p", [2, 3.0, 1])
def test_norm_gradient_at_a_zero_vector_is_torchs_zero(p):
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    _check(lambda t: t.norm(p, dim=1), lambda t: t.norm(p, dim=1), x)
    _check(lambda t: t[1].norm(p), lambda t: t[1].norm(p), x)


def test_linalg_norm_stays_numpys():
    x = R((3, 4))
    np.testing.assert_allclose(mg.linalg.norm(mg.tensor(x), 2).numpy(), np.linalg.norm(x, 2))  # the spectral norm
    np.testing.assert_allclose(mg.linalg.norm(mg.tensor(x), axis=1, keepdims=True).numpy(),
                               np.linalg.norm(x, axis=1, keepdims=True))
    assert not np.isclose(mg.norm(mg.tensor(x), 2).item(), np.linalg.norm(x, 2))  # torch's: the 2-norm of the entries
    np.testing.assert_allclose(mg.norm(mg.tensor(x), 2).item(), np.sqrt((x * x).sum()))


def test_norm_errors_name_the_op():
    with pytest.raises(ValueError, match="norm:"):
        mg.norm(mg.ones(3, 4), "bogus")
    with pytest.raises(ValueError, match="norm: p='nuc'"):
        mg.norm(mg.ones(3, 4), "nuc", dim=1)
    with pytest.raises(TypeError, match="norm:"):
        mg.norm(mg.arange(3))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, INF])
@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 3, 2), (2, 4, 2)), ((2, 3, 2), (4, 2))])
def test_cdist_matches_torch(shapes, p):
    _check(lambda a, b: mg.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), R(shapes[0]), R(shapes[1]))


def test_cdist_p0_counts_differing_coordinates():
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(mg.cdist(mg.tensor(a), mg.tensor(b), 0).numpy(), torch.cdist(torch.tensor(a), torch.tensor(b), 0).numpy())


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_cdist_gradient_at_zero_distance_is_torchs_zero(p):
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    b = np.array([[1.0, 2.0], [3.0, 0.0]])  # a's first row is b's first: distance 0
    _check(lambda x, y: mg.cdist(x, y, p), lambda x, y: torch.cdist(x, y, p), a, b)


def test_cdist_errors_name_the_op():
    with pytest.raises(ValueError, match=r"cdist: .*\(3, 4\).*\(5, 3\)"):
        mg.cdist(mg.ones(3, 4), mg.ones(5, 3))
    with pytest.raises(ValueError, match="cdist: p must be"):
        mg.cdist(mg.ones(3, 4), mg.ones(5, 4), -1.0)


# -- making tensors from tensors -------------------------------------------------------------------------


def test_broadcast_tensors_matches_torch():
    _check(mg.broadcast_tensors, torch.broadcast_tensors, R((3, 1)), R(4))
    _check(mg.broadcast_tensors, torch.broadcast_tensors, R((2, 1, 3)), R((4, 1)), R(3))
    with pytest.raises(ValueError, match=r"broadcast_tensors: shapes \[\(3,\), \(4,\)\]"):
        mg.broadcast_tensors(mg.ones(3), mg.ones(4))


@pytest.mark.parametrize("indexing", [None, "ij", "xy"])
@pytest.mark.parametrize("sizes", [(3, 4), (2, 3, 4), (5,)])
def test_meshgrid_matches_torch(sizes, indexing):
    kw = {} if indexing is None else {"indexing": indexing}
    th_kw = {"indexing": indexing or "ij"}  # PyTorch's default is 'ij'
    _check(lambda *ts: mg.meshgrid(*ts, **kw), lambda *ts: torch.meshgrid(*ts, **th_kw), *[R(n) for n in sizes])


def test_meshgrid_takes_a_list_and_np_meshgrid_stays_numpys():
    a, b = mg.arange(3.0), mg.arange(4.0)
    assert [g.shape for g in mg.meshgrid([a, b])] == [(3, 4), (3, 4)]
    assert [g.shape for g in np.meshgrid(np.arange(3.0), np.arange(4.0))] == [(4, 3), (4, 3)]
    with pytest.raises(ValueError, match="meshgrid: indexing"):
        mg.meshgrid(a, b, indexing="yx")
    with pytest.raises(ValueError, match="meshgrid: expects 0-D or 1-D"):
        mg.meshgrid(mg.ones(2, 2), a)


def test_cartesian_prod_matches_torch():
    _check(mg.cartesian_prod, torch.cartesian_prod, R(3), R(2))
    _check(mg.cartesian_prod, torch.cartesian_prod, R(2), R(2), R(3))
    _check(mg.cartesian_prod, torch.cartesian_prod, R(3))
    got = mg.cartesian_prod(mg.arange(2), mg.arange(3))
    want = torch.cartesian_prod(torch.arange(2), torch.arange(3))
    assert got.dtype == np.int64 and got.numpy().tolist() == want.tolist()
    with pytest.raises(ValueError, match="cartesian_prod: expects one or more 1-D"):
        mg.cartesian_prod(mg.ones(2, 2))


def test_block_diag_matches_torch():
    _check(mg.block_diag, torch.block_diag, R((2, 3)), R((1, 2)))
    _check(mg.block_diag, torch.block_diag, R(2), R((2, 2)), R(()))
    _check(mg.block_diag, torch.block_diag, R((2, 2)))
    got = mg.block_diag(mg.tensor([[1, 2]]), mg.tensor([[0.5]]))
    want = torch.block_diag(torch.tensor([[1, 2]]), torch.tensor([[0.5]], dtype=torch.float64))
    assert got.dtype == np.float64 and np.allclose(got.numpy(), want.numpy())
    with pytest.raises(ValueError, match="block_diag: inputs must have at most 2 dims"):
        mg.block_diag(mg.ones(2, 2, 2))


@pytest.mark.parametrize("shape, args", [((3,), ()), ((2, 3), (1,)), ((2, 3), (-1, 0, 2)), ((2, 3), (0, -1, 0)),
                                         ((2, 3), (2, 0, 1)), ((2, 2, 3), (-2, 1, 3))])
def test_diag_embed_matches_torch(shape, args):
    _check(lambda t: mg.diag_embed(t, *args), lambda t: torch.diag_embed(t, *args), R(shape))
    _check(lambda t: t.diag_embed(*args), lambda t: t.diag_embed(*args), R(shape))


def test_diag_embed_errors_name_the_op():
    with pytest.raises(ValueError, match="diag_embed: dim1 and dim2 must differ"):
        mg.diag_embed(mg.ones(3), 0, 1, 1)
    with pytest.raises(mg.AxisError, match="diag_embed"):
        mg.diag_embed(mg.ones(3), 0, 0, 5)


@pytest.mark.parametrize("repeats, dim", [(2, None), (3, 0), (2, 1), ([1, 0, 2], 1), ([2, 1], 0), ([1, 2, 0, 1, 1, 3], None)])
def test_repeat_interleave_matches_torch(repeats, dim):
    r_m = repeats if isinstance(repeats, int) else mg.tensor(repeats)
    r_t = repeats if isinstance(repeats, int) else torch.tensor(repeats)
    _check(lambda t: mg.repeat_interleave(t, r_m, dim), lambda t: torch.repeat_interleave(t, r_t, dim), R((2, 3)))
    _check(lambda t: t.repeat_interleave(r_m, dim=dim), lambda t: t.repeat_interleave(r_t, dim=dim), R((2, 3)))


def test_repeat_interleave_errors_name_the_op():
    with pytest.raises(ValueError, match="repeat_interleave"):
        mg.repeat_interleave(mg.ones(2, 3), mg.tensor([1, 2]), dim=1)
    with pytest.raises(ValueError, match="repeat_interleave: output_size=5"):
        mg.repeat_interleave(mg.ones(2, 3), 2, dim=0, output_size=5)


# -- factories ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, kw", [((0, 2, 3), {}), ((-1.0, 1.0, 5), {"base": 2.0}), ((1, 0, 4), {}), ((0, 1, 1), {}),
                                      ((0, 1, 0), {})])
def test_logspace_matches_torch(args, kw):
    got = mg.logspace(*args, **kw, dtype=np.float64)
    want = torch.logspace(*args, **kw, dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert mg.logspace(*args, **kw).dtype == mg.get_default_dtype()
    assert mg.logspace(0, 1, 3, requires_grad=True).requires_grad


def test_logspace_errors_name_the_op():
    with pytest.raises(ValueError, match="logspace: steps"):
        mg.logspace(0, 1, -1)


def test_linspace_takes_pytorchs_spelling_and_keeps_numpys():
    want = torch.linspace(0, 1, steps=5, dtype=torch.float64).numpy()
    np.testing.assert_allclose(mg.linspace(0, 1, steps=5, dtype=np.float64).numpy(), want)
    np.testing.assert_allclose(mg.linspace(0, end=1, steps=5, dtype=np.float64).numpy(), want)
    np.testing.assert_allclose(mg.linspace(0, 1, 5, dtype=np.float64).numpy(), want)
    np.testing.assert_allclose(mg.linspace(0, 1, num=5, dtype=np.float64).numpy(), want)
    assert mg.linspace(0, 1).shape == (50,)  # NumPy's default num
    with pytest.raises(TypeError, match="linspace: got both stop and its alias end="):
        mg.linspace(0, 1, end=2)
    with pytest.raises(TypeError, match="linspace: got both num and its alias steps="):
        mg.linspace(0, 1, 4, steps=5)
    with pytest.raises(TypeError, match="linspace: missing"):
        mg.linspace(0, steps=5)


@pytest.mark.parametrize("name", ["triu_indices", "tril_indices"])
@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (3, 4, 5), (2, 5, -3), (0, 3), (1, 1)])
def test_tri_indices_match_torch(name, args):
    got = getattr(mg, name)(*args)
    want = getattr(torch, name)(*args)
    assert got.dtype == np.int64 and got.shape == tuple(want.shape)
    assert got.numpy().tolist() == want.tolist()
    assert not got.requires_grad


def test_tri_indices_errors_name_the_op():
    with pytest.raises(TypeError, match="triu_indices: row must be an int"):
        mg.triu_indices(2.5, 3)
    with pytest.raises(ValueError, match="tril_indices: row and col must be >= 0"):
        mg.tril_indices(-1, 3)
