"""PyTorch's ordering functions and scans (issue 42): sort/argsort/split in PyTorch's spelling beside
NumPy's, topk, median, quantile, cummax, cummin, logcumsumexp, std_mean, var_mean, unique, bincount,
bucketize, searchsorted, each against torch in float64 (values, indices, and gradients through
backward, ties included where PyTorch says where the gradient goes), and their errors, which name
the op. The registry test gradchecks the differentiable ones from their samples (no ties there)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

TIED = np.array([[0.5, -1.0, 0.5, 2.0, 0.5], [1.5, 1.5, -0.5, 1.5, -0.5], [0.1, 0.2, 0.1, 0.2, 0.3]])


def _host(t):
    return t.detach().numpy() if isinstance(t, mg.Tensor) else t.detach().cpu().numpy()


def _same(x, f_mg, f_th, seed=0):
    """Values (every output, indices too) and the gradient of a random projection of the float outputs."""
    a = mg.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    out, want = f_mg(a), f_th(b)
    outs, wants = (out, want) if isinstance(out, tuple) else ((out,), (want,))
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants, strict=True):
        assert o.shape == tuple(w.shape)
        assert o.dtype == _host(w).dtype, (o.dtype, w.dtype)
        np.testing.assert_allclose(_host(o), _host(w), rtol=1e-12, atol=1e-12)
    rng = np.random.default_rng(seed)
    pairs = [(o, w) for o, w in zip(outs, wants, strict=True) if o.dtype.kind == "f"]
    ws = [rng.standard_normal(o.shape) for o, _ in pairs]
    sum((o * mg.tensor(v)).sum() for (o, _), v in zip(pairs, ws, strict=True)).backward()
    sum((w * torch.tensor(v)).sum() for (_, w), v in zip(pairs, ws, strict=True)).backward()
    np.testing.assert_allclose(_host(a.grad), b.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- sort, argsort, split: two spellings ---------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_pytorch_spelling_with_ties_matches_stable_torch(dim, descending):
    _same(TIED, lambda t: mg.sort(t, dim=dim, descending=descending, stable=True),
          lambda t: torch.sort(t, dim=dim, descending=descending, stable=True))
    _same(TIED, lambda t: t.sort(dim, descending), lambda t: torch.sort(t, dim=dim, descending=descending, stable=True))


def test_sort_numpy_spelling_stays_numpys():
    x = mg.tensor(TIED)
    out = mg.sort(x, 0)
    assert isinstance(out, mg.Tensor)
    np.testing.assert_array_equal(out.numpy(), np.sort(TIED, 0))
    np.testing.assert_array_equal(np.sort(x, axis=None).numpy(), np.sort(TIED, axis=None))
    values, indices = x.sort()  # Tensor.sort is PyTorch's (NumPy's ndarray.sort sorts in place)
    np.testing.assert_array_equal(values.numpy(), np.sort(TIED, -1))


def test_argsort_both_spellings():
    x = mg.tensor(TIED)
    np.testing.assert_array_equal(mg.argsort(x, 0).numpy(), np.argsort(TIED, 0, kind="stable"))
    for dim in (0, 1):
        for desc in (False, True):
            want = torch.argsort(torch.tensor(TIED), dim=dim, descending=desc, stable=True).numpy()
            np.testing.assert_array_equal(mg.argsort(x, dim=dim, descending=desc).numpy(), want)
            np.testing.assert_array_equal(x.argsort(dim, desc).numpy(), want)
    np.testing.assert_array_equal(mg.argsort(mg.tensor([True, False, True]), dim=0, descending=True).numpy(),
                                  [0, 2, 1])


@pytest.mark.parametrize("size, dim", [(2, 0), (4, 1), ([1, 4], 1), ([3, 0], 0), (5, 1)])
def test_split_pytorch_spelling(size, dim):
    x = np.random.default_rng(0).standard_normal((3, 5))
    _same(x, lambda t: t.split(size, dim), lambda t: torch.split(t, size, dim))
    _same(x, lambda t: mg.split(t, size, dim=dim), lambda t: torch.split(t, size, dim))


def test_split_numpy_spelling_stays_numpys():
    x = np.arange(12.0).reshape(4, 3)
    parts = mg.split(mg.tensor(x), 2)  # two equal sections (PyTorch's would be pieces of size 2: the same here)
    assert [p.shape for p in parts] == [(2, 3), (2, 3)]
    parts = mg.split(mg.tensor(x), [1, 2], axis=1)  # cuts at 1 and 2 (PyTorch's: sizes 1 and 2)
    assert [p.shape for p in parts] == [(4, 1), (4, 1), (4, 1)]
    assert [p.shape for p in mg.split(mg.tensor(x), [1, 2], dim=1)] == [(4, 1), (4, 2)]
    with pytest.raises(ValueError, match="split"):
        mg.split(mg.tensor(x), [1, 1], dim=1)
    with pytest.raises(ValueError, match="split"):
        mg.tensor(x).split(0)


# -- topk, median, quantile ------------------------------------------------------------------------------


@pytest.mark.parametrize("k, dim, largest", [(2, -1, True), (3, 1, False), (1, 0, True), (3, 0, False), (5, 1, True)])
def test_topk_matches_torch(k, dim, largest):
    x = np.random.default_rng(1).permutation(15).reshape(3, 5) * 0.5
    _same(x, lambda t: mg.topk(t, k, dim, largest), lambda t: torch.topk(t, k, dim, largest))
    _same(x, lambda t: t.topk(k, dim=dim, largest=largest), lambda t: torch.topk(t, k, dim, largest))


def test_topk_errors_name_it():
    with pytest.raises(ValueError, match="topk"):
        mg.topk(mg.tensor([1.0, 2.0]), 3)
    with pytest.raises(TypeError, match="topk"):
        mg.topk(mg.tensor([1.0, 2.0]), 1.5)


def test_median_is_the_lower_median_unlike_numpys():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    assert mg.median(mg.tensor(x)).item() == 2.0 == torch.median(torch.tensor(x)).item()
    assert np.median(x) == 2.5
    _same(np.random.default_rng(2).standard_normal((3, 4)), lambda t: t.median(), lambda t: t.median())


@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False)])
def test_median_dim_matches_torch(dim, keepdim):
    x = np.random.default_rng(3).permutation(20).reshape(4, 5) * 0.5
    _same(x, lambda t: mg.median(t, dim, keepdim), lambda t: torch.median(t, dim, keepdim))


def test_median_tie_gradient_goes_to_one_element():
    x = mg.tensor([2.0, 1.0, 2.0, 3.0, 2.0], requires_grad=True)
    mg.median(x).backward()
    g = x.grad.numpy()
    assert g.sum() == 1.0 and np.count_nonzero(g) == 1 and x.detach().numpy()[g.argmax()] == 2.0
    values, indices = mg.median(mg.tensor(TIED), 1)
    np.testing.assert_array_equal(values.numpy(), torch.median(torch.tensor(TIED), 1).values.numpy())
    np.testing.assert_array_equal(TIED[np.arange(3), indices.numpy()], values.numpy())


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("q, dim, keepdim", [(0.3, None, False), (0.5, 1, False), ([0.0, 0.25, 0.5, 1.0], 1, True),
                                             ([0.1, 0.9], 0, False), (0.62, None, True)])
def test_quantile_matches_torch(q, dim, keepdim, interpolation):
    x = np.random.default_rng(4).permutation(24).reshape(4, 6) * 0.25
    tq = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
    _same(x, lambda t: mg.quantile(t, q, dim, keepdim, interpolation=interpolation),
          lambda t: torch.quantile(t, tq, dim, keepdim, interpolation=interpolation))
    _same(x, lambda t: t.quantile(mg.tensor(q, dtype=mg.double) if isinstance(q, list) else q, dim=dim, keepdim=keepdim,
                                  interpolation=interpolation),
          lambda t: torch.quantile(t, tq, dim, keepdim, interpolation=interpolation))


def test_quantile_errors_name_it():
    x = mg.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="quantile"):
        mg.quantile(x, 1.5)
    with pytest.raises(ValueError, match="quantile"):
        mg.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="quantile"):
        mg.quantile(mg.tensor([1, 2]), 0.5)


# -- cummax, cummin, logcumsumexp, std_mean, var_mean ---------------------------------------------------


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_match_torch_ties_to_the_later_index(name, dim):
    _same(TIED, lambda t: getattr(mg, name)(t, dim), lambda t: getattr(torch, name)(t, dim))
    _same(TIED, lambda t: getattr(t, name)(dim), lambda t: getattr(torch, name)(t, dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_matches_torch_far_apart_values_too(dim):
    x = np.array([[-300.0, 0.5, 2.0, 700.0], [4.0, -30.0, 1.0, 1.0], [0.0, 0.0, 0.0, -1e3]])
    _same(x, lambda t: mg.logcumsumexp(t, dim), lambda t: torch.logcumsumexp(t, dim))
    _same(x, lambda t: t.logcumsumexp(dim), lambda t: torch.logcumsumexp(t, dim))
    a = mg.tensor(x, requires_grad=True)  # forward mode against finite differences (torch.func.jvp's is off far out)
    assert mg.gradcheck(lambda t: mg.logcumsumexp(t, dim), [a], modes=("rev", "fwd"))


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"dim": 0, "correction": 0}])
def test_std_mean_var_mean_match_torch(name, kw):
    x = np.random.default_rng(5).standard_normal((3, 4))
    _same(x, lambda t: getattr(mg, name)(t, **kw), lambda t: getattr(torch, name)(t, **kw))


# -- not differentiated: unique, bincount, bucketize, searchsorted -------------------------------------


def _ints(out, want):
    outs, wants = (out, want) if isinstance(out, tuple) else ((out,), (want,))
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants, strict=True):
        assert o.dtype == w.numpy().dtype and o.shape == tuple(w.shape)
        np.testing.assert_array_equal(o.numpy(), w.numpy())


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
def test_unique_matches_torch(kw):
    x = np.array([[3, 1, 3], [2, 1, 7]])
    _ints(mg.unique(mg.tensor(x), **kw), torch.unique(torch.tensor(x), **kw))
    _ints(mg.tensor(x).unique(**kw), torch.tensor(x).unique(**kw))
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]])
    _ints(mg.unique(mg.tensor(rows), dim=0, **kw), torch.unique(torch.tensor(rows), dim=0, **kw))
    f = mg.unique(mg.tensor([0.5, -1.0, 0.5], requires_grad=True))
    assert not f.requires_grad


def test_bincount_matches_torch():
    x = np.array([0, 1, 1, 4, 1])
    _ints(mg.bincount(mg.tensor(x)), torch.bincount(torch.tensor(x)))
    _ints(mg.bincount(mg.tensor(x), minlength=8), torch.bincount(torch.tensor(x), minlength=8))
    w = np.array([0.5, 1.0, -2.0, 3.0, 0.25])
    for dt in (np.float64, np.float32):
        out = mg.bincount(mg.tensor(x), mg.tensor(w.astype(dt)))
        want = torch.bincount(torch.tensor(x), torch.tensor(w.astype(dt)))
        assert out.dtype == want.numpy().dtype
        np.testing.assert_allclose(out.numpy(), want.numpy())
    with pytest.raises(ValueError, match="bincount"):
        mg.bincount(mg.tensor([1, -1]))
    with pytest.raises(TypeError, match="bincount"):
        mg.bincount(mg.tensor([[1, 2]]))


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_and_searchsorted_match_torch(right):
    b = np.array([1.0, 2.0, 2.0, 5.0])
    v = np.array([[0.0, 1.0, 2.0], [3.0, 5.0, 9.0]])
    _ints(mg.bucketize(mg.tensor(v), mg.tensor(b), right=right),
          torch.bucketize(torch.tensor(v), torch.tensor(b), right=right))
    _ints(mg.searchsorted(mg.tensor(b), mg.tensor(v), right=right),
          torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right))
    seq = np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])
    _ints(mg.searchsorted(mg.tensor(seq), mg.tensor(v), right=right),
          torch.searchsorted(torch.tensor(seq), torch.tensor(v), right=right))
    side = "right" if right else "left"
    np.testing.assert_array_equal(np.searchsorted(mg.tensor(b), mg.tensor(v), side=side).numpy(),
                                  np.searchsorted(b, v, side=side))
    assert mg.bucketize(3.0, mg.tensor(b)).item() == torch.bucketize(3.0, torch.tensor(b)).item()


def test_bucketize_searchsorted_errors_name_them():
    with pytest.raises(ValueError, match="bucketize"):
        mg.bucketize(mg.tensor([1.0]), mg.tensor([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="searchsorted"):
        mg.searchsorted(mg.tensor([[1.0, 2.0]]), mg.tensor([[1.0], [2.0]]))


def test_nan_and_zero_dim_cases_follow_their_library():
    nan = float("nan")
    x = np.array([[1.0, nan, 2.0], [1.0, 2.0, 3.0]])
    _same(x, lambda t: mg.median(t, 1), lambda t: torch.median(t, 1))
    assert np.isnan(mg.median(mg.tensor(x)).item()) and np.isnan(torch.median(torch.tensor(x)).item())
    assert mg.argsort(mg.tensor(3.0)).shape == np.argsort(np.array(3.0)).shape == (1,)  # NumPy's spelling
    assert mg.argsort(mg.tensor(3.0), dim=0).shape == tuple(torch.argsort(torch.tensor(3.0), dim=0).shape) == ()
    values, indices = mg.sort(mg.tensor(3.0), dim=0)
    assert values.shape == indices.shape == () and indices.item() == 0


@pytest.mark.parametrize("q", [0.5, [0.1, 0.7]])
def test_quantile_of_a_row_with_nan_is_nan_as_torchs(q):
    x = np.array([[1.0, float("nan"), 2.0, 0.5], [1.0, 2.0, 3.0, 4.0]])
    tq = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
    _same(x, lambda t: mg.quantile(t, q, 1), lambda t: torch.quantile(t, tq, 1))
    _same(x, lambda t: mg.quantile(t, q), lambda t: torch.quantile(t, tq))


@pytest.mark.parametrize("call, name", [
    (lambda x: mg.sort(x, dim=5), "sort"), (lambda x: x.sort(7), "sort"), (lambda x: mg.argsort(x, dim=3), "argsort"),
    (lambda x: x.split(2, 4), "split"), (lambda x: mg.median(x, 2), "median"), (lambda x: mg.median(x, keepdim=True), "median"),
    (lambda x: mg.cummax(x, 2), "cummax"), (lambda x: mg.cummin(x, -3), "cummin"),
    (lambda x: mg.logcumsumexp(x, 2), "logcumsumexp"), (lambda x: mg.quantile(x, 0.5, 3), "quantile"),
    (lambda x: mg.unique(x, dim=2), "unique"), (lambda x: mg.std_mean(x, 5), "std_mean"),
    (lambda x: mg.var_mean(x, correction=True), "var_mean"), (lambda x: mg.topk(x, 2, 9), "topk"),
    (lambda x: mg.logcumsumexp(mg.tensor([1, 2]), 0), "logcumsumexp"), (lambda x: mg.searchsorted(x, x, side="up"), "searchsorted"),
])
def test_errors_name_the_op(call, name):
    x = mg.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        call(x)
    assert str(info.value).startswith(f"{name}:"), str(info.value)
