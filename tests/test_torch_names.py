"""PyTorch's names with PyTorch's semantics (issue 42, API.md "The PyTorch surface"): the dtype
aliases, ``set_grad_enabled`` as a plain call, and the indexing, masking and shape functions,
each against torch in float64 (values, and gradients through backward), and their errors, which
name the op and the shapes. The registry test gradchecks the same functions from their samples."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


# -- dtypes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, want", [("long", np.int64), ("int", np.int32), ("short", np.int16),
                                        ("half", np.float16), ("float", np.float32), ("double", np.float64),
                                        ("bool", np.bool_)])
def test_dtype_aliases_are_numpys_types_with_torchs_meaning(name, want):
    dt = getattr(mg, name)
    assert dt is want
    assert np.dtype(dt) == torch.empty(0, dtype=getattr(torch, name)).numpy().dtype
    assert mg.zeros((2,), dtype=dt).dtype == want and mg.tensor([1, 0], dtype=dt).dtype == want
    if name != "bool":
        assert mg.arange(3, dtype=dt).dtype == want


def test_dtype_aliases_leave_the_builtins_alone():
    ns = {}
    exec("from minigrad import *", ns)  # noqa: S102
    assert "float" not in ns and "int" not in ns and "bool" not in ns
    assert mg.tensor([1.0, 2.0]).sum().item() == 3.0


# -- set_grad_enabled ----------------------------------------------------------------------------


@pytest.fixture
def grad_on():
    yield
    mg.set_grad_enabled(True)


def test_set_grad_enabled_as_a_plain_call_switches_until_switched_back(grad_on):
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    mg.set_grad_enabled(False)
    assert not mg.is_grad_enabled()
    assert not (x * 2).requires_grad
    assert not (x * 3).requires_grad  # still off: a call, not a one-op switch
    mg.set_grad_enabled(True)
    assert mg.is_grad_enabled() and (x * 2).requires_grad


def test_set_grad_enabled_as_a_context_manager_restores_the_mode_it_found(grad_on):
    x = mg.tensor([1.0], requires_grad=True)
    with mg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with mg.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()
    mg.set_grad_enabled(False)
    with mg.set_grad_enabled(True):
        assert (x * 2).requires_grad
    assert not mg.is_grad_enabled()  # the plain call's mode comes back, as in PyTorch
    with mg.enable_grad():
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled()
    assert not mg.is_grad_enabled()


def test_set_grad_enabled_as_a_decorator(grad_on):
    @mg.set_grad_enabled(False)
    def f(x):
        return x * 2

    assert mg.is_grad_enabled()  # decorating switches nothing
    x = mg.tensor([1.0], requires_grad=True)
    assert not f(x).requires_grad and mg.is_grad_enabled()
    assert not f(x).requires_grad  # each call switches again
    cm = mg.set_grad_enabled(False)
    mg.set_grad_enabled(True)
    with cm:  # the same object entered twice switches each time
        assert not mg.is_grad_enabled()
    with cm:
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()


def test_set_grad_enabled_is_per_thread(grad_on):
    """A plain call in one thread never changes recording in another (PyTorch's grad mode is per thread)."""
    switched, go_on, seen = threading.Event(), threading.Event(), {}

    def worker():
        mg.set_grad_enabled(False)
        seen["worker"] = mg.is_grad_enabled()
        switched.set()
        go_on.wait(5)
        seen["worker_after"] = mg.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    switched.wait(5)
    seen["main"] = mg.is_grad_enabled()
    x = mg.tensor([1.0], requires_grad=True)
    seen["records"] = (x * 2).requires_grad
    mg.set_grad_enabled(False)  # and the main thread's switch does not reach the worker
    go_on.set()
    t.join(5)
    mg.set_grad_enabled(True)
    assert seen == {"worker": False, "main": True, "records": True, "worker_after": False}
    fresh = []
    t2 = threading.Thread(target=lambda: fresh.append(mg.is_grad_enabled()))
    mg.set_grad_enabled(False)
    t2.start()
    t2.join(5)
    assert fresh == [True]  # a new thread starts recording, whatever this one set


# -- the functions, against torch in float64 ------------------------------------------------------


def _leaves(args):
    """Float arrays -> float64 leaves that require grad, in both libraries; other arrays -> constants."""
    ms, ts = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            rg = a.dtype.kind == "f"
            ms.append(mg.tensor(a, requires_grad=rg))
            ts.append(torch.tensor(a, requires_grad=rg))
        else:
            ms.append(a)
            ts.append(a)
    return ms, ts


def same_as_torch(mg_fn, th_fn, *args, seed=0):
    """Values (shapes and dtypes too) and gradients through backward (a random weighting of every
    output) of ``mg_fn(*args)`` and ``th_fn(*args)``."""
    ms, ts = _leaves(args)
    out, tout = mg_fn(*ms), th_fn(*ts)
    outs, touts = (out, tout) if isinstance(out, (tuple, list)) else ((out,), (tout,))
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts, strict=True):
        assert o.shape == tuple(t.shape)
        assert o.dtype == t.detach().numpy().dtype
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(seed)
    pairs = [(o, t) for o, t in zip(outs, touts, strict=True) if t.requires_grad]
    assert [o.requires_grad for o, _ in pairs] == [True] * len(pairs)
    if not pairs:
        return out
    ws = [rng.standard_normal(o.shape) for o, _ in pairs]
    sum((o * mg.tensor(w)).sum() for (o, _), w in zip(pairs, ws, strict=True)).backward()
    sum((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, ws, strict=True)).backward()
    for m, t in zip(ms, ts, strict=True):
        if isinstance(m, mg.Tensor) and m.requires_grad:
            want = np.zeros(m.shape) if t.grad is None else t.grad.numpy()
            got = np.zeros(m.shape) if m.grad is None else m.grad.numpy()
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    return out


def _r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


I64 = np.int64


def _x(*shape):
    return mg.tensor(_r(*shape), requires_grad=True)


# -- PyTorch's views: narrow, select, t, chunk, unbind, movedim, unflatten, the *_as forms ---------------


def test_narrow_select_t():
    x = _r(2, 5, 3)
    for dim, start, length in [(0, 1, 1), (1, -3, 3), (2, 0, 0), (-1, 1, 2)]:
        same_as_torch(lambda a, d=dim, s=start, n=length: mg.narrow(a, d, s, n),
                      lambda a, d=dim, s=start, n=length: torch.narrow(a, d, s, n), x)
        same_as_torch(lambda a, d=dim, s=start, n=length: a.narrow(d, s, n),
                      lambda a, d=dim, s=start, n=length: a.narrow(d, s, n), x)
    for dim, i in [(0, 1), (1, -1), (2, 0), (-2, 4)]:
        same_as_torch(lambda a, d=dim, i=i: mg.select(a, d, i), lambda a, d=dim, i=i: torch.select(a, d, i), x)
        same_as_torch(lambda a, d=dim, i=i: a.select(d, i), lambda a, d=dim, i=i: a.select(d, i), x)
    for shape in [(2, 3), (3,), ()]:
        same_as_torch(lambda a: mg.t(a), lambda a: torch.t(a), _r(*shape))
        same_as_torch(lambda a: a.t(), lambda a: a.t(), _r(*shape))
    a = mg.tensor(_r(2, 5, 3))
    assert a.narrow(1, 1, 2)._base is a and a.select(1, 2)._base is a and a[0].t()._base is a  # views, as PyTorch's


def test_chunk_and_unbind():
    for shape, chunks, dim in [((5, 3), 3, 0), ((2, 6), 4, 1), ((2, 3), 1, -1), ((5, 2), 4, 0), ((6,), 4, 0),
                               ((0, 2), 2, 0), ((2, 3), 5, 1)]:
        x = _r(*shape)
        out = same_as_torch(lambda a, c=chunks, d=dim: mg.chunk(a, c, d), lambda a, c=chunks, d=dim: torch.chunk(a, c, d), x)
        assert isinstance(out, tuple)
        same_as_torch(lambda a, c=chunks, d=dim: a.chunk(c, dim=d), lambda a, c=chunks, d=dim: a.chunk(c, dim=d), x)
    for shape, dim in [((3, 2), 0), ((2, 3, 2), -2), ((4,), 0), ((0, 2), 0)]:
        x = _r(*shape)
        out = same_as_torch(lambda a, d=dim: mg.unbind(a, d), lambda a, d=dim: torch.unbind(a, d), x)
        assert isinstance(out, tuple)
        same_as_torch(lambda a, d=dim: a.unbind(dim=d), lambda a, d=dim: a.unbind(dim=d), x)


def test_movedim_unflatten():
    x = _r(2, 3, 4)
    for s, d in [(0, -1), ((0, 1), (2, 0)), (2, 0), ([1], [0])]:
        same_as_torch(lambda a, s=s, d=d: mg.movedim(a, s, d), lambda a, s=s, d=d: torch.movedim(a, s, d), x)
        same_as_torch(lambda a, s=s, d=d: a.movedim(s, d), lambda a, s=s, d=d: a.movedim(s, d), x)
    for shape, dim, sizes in [((2, 12), 1, (3, -1)), ((6, 2), 0, (2, 3)), ((2, 12), -1, (2, 2, 3)), ((4,), 0, [-1, 1])]:
        x = _r(*shape)
        same_as_torch(lambda a, d=dim, s=sizes: mg.unflatten(a, d, s), lambda a, d=dim, s=sizes: torch.unflatten(a, d, s), x)
        same_as_torch(lambda a, d=dim, s=sizes: a.unflatten(d, s), lambda a, d=dim, s=sizes: a.unflatten(d, s), x)


def test_the_as_forms():
    y = _r(2, 3, 4, seed=1)
    same_as_torch(lambda a: a.expand_as(mg.tensor(y)), lambda a: a.expand_as(torch.tensor(y)), _r(3, 1))
    same_as_torch(lambda a: mg.expand_as(a, mg.tensor(y)), lambda a: a.expand_as(torch.tensor(y)), _r(4))
    same_as_torch(lambda a: a.view_as(mg.tensor(y)), lambda a: a.view_as(torch.tensor(y)), _r(6, 4))
    same_as_torch(lambda a: a.reshape_as(mg.tensor(y)), lambda a: a.reshape_as(torch.tensor(y)), _r(4, 6))
    same_as_torch(lambda a: a.t().reshape_as(mg.tensor(y)), lambda a: a.t().reshape_as(torch.tensor(y)), _r(4, 6))


@pytest.mark.parametrize("call, err, pattern", [
    (lambda: mg.narrow(_x(2, 5), 1, 3, 3), ValueError, r"^narrow: start \(3\) \+ length \(3\) exceeds dim 1 of size 5 \(shape \(2, 5\)\)"),
    (lambda: mg.narrow(_x(2, 5), 1, -6, 1), IndexError, r"^narrow: start -6 is out of range for dim 1 of size 5"),
    (lambda: mg.narrow(_x(2, 5), 2, 0, 1), IndexError, r"^narrow: dim 2 is out of range .*\(shape \(2, 5\)\)"),
    (lambda: mg.select(_x(2, 5), 0, 2), IndexError, r"^select: index 2 is out of range for dim 0 of size 2 \(shape \(2, 5\)\)"),
    (lambda: mg.t(_x(2, 3, 4)), ValueError, r"^t: expects a tensor of at most 2 dims, got shape \(2, 3, 4\)"),
    (lambda: mg.chunk(_x(2, 3), 0), ValueError, r"^chunk: chunks must be greater than 0, got 0 \(shape \(2, 3\)\)"),
    (lambda: mg.chunk(_x(2, 3), 2, dim=2), IndexError, r"^chunk: dim 2 is out of range .*\(shape \(2, 3\)\)"),
    (lambda: mg.unbind(_x(2, 3), 3), IndexError, r"^unbind: dim 3 is out of range .*\(shape \(2, 3\)\)"),
    (lambda: mg.movedim(_x(2, 3), 0, 2), IndexError, r"^movedim: .*2"),
    (lambda: mg.unflatten(_x(2, 12), 1, (5, -1)), ValueError, r"^unflatten: sizes \(5, -1\) do not multiply to the size 12 of dim 1 \(shape \(2, 12\)\)"),
    (lambda: _x(3, 1).expand_as(_x(2, 4)), ValueError, r"^expand_as: cannot expand shape \(3, 1\) to other's shape \(2, 4\)"),
    (lambda: _x(2, 3).t().view_as(_x(6)), RuntimeError, r"^view_as: view: shape \(6,\) is not compatible with the strides"),
    (lambda: _x(2, 3).reshape_as(_x(4)), ValueError, r"^reshape_as: reshape: cannot reshape a tensor of shape \(2, 3\) \(6 elements\) into shape \(4,\)"),
])
def test_view_errors_name_the_op_and_the_shapes(call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()


# -- type_as, the new_* factories, is_tensor ---------------------------------------------------------


def test_type_as():
    for dt, tdt in [(np.float32, torch.float32), (np.float64, torch.float64), (np.int64, torch.int64)]:
        got = mg.tensor(_r(2, 3)).type_as(mg.zeros(1, dtype=dt))
        want = torch.tensor(_r(2, 3)).type_as(torch.zeros(1, dtype=tdt))
        assert got.dtype == dt
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    same_as_torch(lambda a: a.type_as(mg.zeros(1, dtype=mg.double)), lambda a: a.type_as(torch.zeros(1, dtype=torch.double)),
                  _r(2, 3))
    x = mg.tensor(_r(2, 3), requires_grad=True)
    x.type_as(mg.zeros(1)).sum().backward()  # float32 and back: the gradient keeps x's dtype
    assert x.grad.dtype == np.float64 and x.grad.tolist() == [[1.0] * 3] * 2


def test_new_factories_and_is_tensor():
    for dt, tdt in [(mg.double, torch.double), (mg.float, torch.float), (mg.long, torch.long)]:
        x, tx = mg.ones((2,), dtype=dt, requires_grad=False), torch.ones(2, dtype=tdt)
        pairs = [(x.new_zeros(2, 3), tx.new_zeros(2, 3)), (x.new_zeros((3,)), tx.new_zeros((3,))),
                 (x.new_ones([2]), tx.new_ones([2])), (x.new_full((2, 2), 2.5), tx.new_full((2, 2), 2.5)),
                 (x.new_tensor([[1, 2], [3, 4]]), tx.new_tensor([[1, 2], [3, 4]])),
                 (x.new_tensor(3.5), tx.new_tensor(3.5)), (mg.new_zeros(x, 2), tx.new_zeros(2)),
                 (x.new_zeros(2, dtype=mg.int), tx.new_zeros(2, dtype=torch.int))]
        for got, want in pairs:
            assert got.shape == tuple(want.shape) and got.dtype == want.numpy().dtype, (got, want)
            assert got.tolist() == want.tolist()
            assert not got.requires_grad and got.is_leaf and got.device == x.device
    x = mg.tensor([1.0, 2.0], dtype=mg.double, requires_grad=True)
    assert x.new_zeros(2, requires_grad=True).requires_grad
    y = x * 2
    c = x.new_tensor(y)  # a copy, detached (PyTorch warns and does the same)
    assert not c.requires_grad and c.tolist() == [2.0, 4.0]
    c.data[0] = 9.0
    assert y.tolist() == [2.0, 4.0]
    assert mg.is_tensor(x) and mg.is_tensor(y) and not mg.is_tensor(np.ones(2)) and not mg.is_tensor(1.0)
    assert not mg.is_tensor([x])
    import minigrad.sparse  # noqa: F401, PLC0415

    assert mg.is_tensor(mg.tensor([[0.0, 1.0]]).to_sparse_coo())


@pytest.mark.parametrize("call, err, pattern", [
    (lambda: _x(2, 3).type_as("float"), TypeError, r"^type_as: other must be a Tensor"),
    (lambda: _x(2).new_zeros("a"), TypeError, r"^new_zeros: zeros: shape entries must be ints"),
])
def test_factory_errors_name_the_op_and_the_shapes(call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()


# -- indexing and masking: gather, scatter, scatter_add, index_put, index_select, masked_fill/select ---


def test_gather():
    x = _r(3, 4)
    for dim, idx in [(1, [[0, 3], [1, 1], [2, 0]]), (0, [[2, 0, 1, 1], [0, 0, 2, 1], [1, 1, 1, 1], [0, 2, 0, 0]]),
                     (0, [[1, 2], [0, 0]]), (-1, [[3], [3], [0]])]:
        idx = np.array(idx, dtype=I64)
        same_as_torch(lambda a, i, d=dim: mg.gather(a, d, i), lambda a, i, d=dim: torch.gather(a, d, i), x, idx)
        same_as_torch(lambda a, i, d=dim: a.gather(d, i), lambda a, i, d=dim: a.gather(d, i), x, idx)
    same_as_torch(lambda a, i: a.gather(0, i), lambda a, i: a.gather(0, i), _r(2, 3, 4),
                  np.array([[[1, 0, 1, 1]], [[0, 0, 0, 1]]], dtype=I64))
    same_as_torch(lambda a, i: a.gather(0, i), lambda a, i: a.gather(0, i), np.array(2.5), np.array(0, dtype=I64))
    # repeated indices: the gradient adds up (gather's gradient is scatter_add)
    x = mg.tensor([1.0, 2.0, 3.0], dtype=mg.double, requires_grad=True)
    x.gather(0, mg.tensor([2, 2, 0])).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 2.0]


def test_scatter_and_scatter_add():
    x = _r(3, 4)
    idx = np.array([[2, 0, 1, 1], [0, 1, 2, 0]], dtype=I64)
    for f in (lambda a, d, i, s: torch.scatter(a, d, i, s), lambda a, d, i, s: a.scatter(d, i, s)):
        same_as_torch(lambda a, i, s: mg.scatter(a, 0, i, s), lambda a, i, s, f=f: f(a, 0, i, s), x, idx, _r(2, 4, seed=1))
    same_as_torch(lambda a, i, s: a.scatter(1, i, s), lambda a, i, s: a.scatter(1, i, s), x,
                  np.array([[3, 0], [1, 2]], dtype=I64), _r(2, 2, seed=1))
    same_as_torch(lambda a, i: a.scatter(-1, i, 1.5), lambda a, i: a.scatter(-1, i, 1.5), x,
                  np.array([[0], [2], [3]], dtype=I64))
    same_as_torch(lambda a, i: mg.scatter(a, 0, i, value=-2.0), lambda a, i: torch.scatter(a, 0, i, value=-2.0), x, idx)
    dup = np.array([[2, 0, 1, 1], [2, 0, 0, 1]], dtype=I64)
    for dim, i in [(0, idx), (0, dup), (1, np.array([[3, 3, 0], [1, 2, 1]], dtype=I64))]:
        s = _r(*i.shape, seed=2)
        same_as_torch(lambda a, i, s, d=dim: mg.scatter_add(a, d, i, s),
                      lambda a, i, s, d=dim: torch.scatter_add(a, d, i, s), x, i, s)
        same_as_torch(lambda a, i, s, d=dim: a.scatter_add(d, i, s), lambda a, i, s, d=dim: a.scatter_add(d, i, s), x, i, s)
    # index may be longer than input along dim itself (there only its values are bounded)
    same_as_torch(lambda a, s: a.scatter_add(1, mg.tensor([[0, 1, 0]]), s),
                  lambda a, s: a.scatter_add(1, torch.tensor([[0, 1, 0]]), s), _r(3, 2), _r(1, 3, seed=1))


def test_scatter_with_repeated_indices_has_pytorchs_gradient():
    """Where index repeats a position only one value lands there, yet every value's gradient is
    the gradient at its index (PyTorch's formula, gather of g); the input's is zero there."""
    x = mg.tensor(np.zeros((3, 2)), requires_grad=True)
    src = mg.tensor(np.arange(1.0, 5.0).reshape(2, 2), requires_grad=True)
    out = x.scatter(0, mg.tensor([[1, 0], [1, 2]]), src)
    w = np.arange(6.0).reshape(3, 2)
    (out * mg.tensor(w)).sum().backward()
    assert out.detach().numpy()[1, 0] in (1.0, 3.0)
    tx, ts = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True), torch.tensor(src.detach().numpy(), requires_grad=True)
    (torch.scatter(tx, 0, torch.tensor([[1, 0], [1, 2]]), ts) * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), ts.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_scatter_takes_the_part_of_a_larger_src_that_index_reaches():
    """PyTorch reads src[:index.shape]; its backward is undefined there (it raises), minigrad's is
    the gradient at the index for those entries and zero for the rest (held to finite differences)."""
    x, s = _r(3, 4), _r(2, 5, seed=1)
    idx = np.array([[3, 0], [1, 2]], dtype=I64)
    want = torch.scatter(torch.tensor(x), 1, torch.tensor(idx), torch.tensor(s)).numpy()
    wadd = torch.scatter_add(torch.tensor(x), 1, torch.tensor(idx), torch.tensor(s)).numpy()
    got = mg.scatter(mg.tensor(x), 1, mg.tensor(idx), mg.tensor(s))
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(mg.scatter_add(mg.tensor(x), 1, mg.tensor(idx), mg.tensor(s)).numpy(), wadd)
    xs = [mg.tensor(x, requires_grad=True), mg.tensor(s, requires_grad=True)]
    for f in (mg.scatter, mg.scatter_add):
        assert mg.gradcheck(lambda a, b, f=f: f(a, 1, mg.tensor(idx), b), xs, modes=("rev", "fwd"), order=2)


def test_index_select():
    x = _r(4, 3)
    for dim, idx in [(0, np.array([3, 0, 3])), (1, np.array([2, 1])), (-1, np.array(2)), (0, np.array([], dtype=I64))]:
        same_as_torch(lambda a, i, d=dim: mg.index_select(a, d, i), lambda a, i, d=dim: torch.index_select(a, d, i),
                      x, idx.astype(I64))
        same_as_torch(lambda a, i, d=dim: a.index_select(d, i), lambda a, i, d=dim: a.index_select(d, i), x, idx.astype(I64))
    for idx in (np.array([0]), np.array(0)):  # a 0-d input gives a 0-d result
        same_as_torch(lambda a, i: a.index_select(0, i), lambda a, i: a.index_select(0, i), np.array(2.5), idx.astype(I64))


def test_index_put():
    x = _r(4, 3)
    cases = [((np.array([0, 2]), np.array([1, 1])), _r(2, seed=1), False), ((np.array([1, 3]),), _r(3, seed=1), False),
             ((np.array([0, 0, 3]),), _r(3, 3, seed=1), True), ((np.array([0, 2, 0]), np.array([1, 1, 1])), _r(3, seed=1), True)]
    for idx, v, acc in cases:
        same_as_torch(lambda a, b, idx=idx, acc=acc: mg.index_put(a, tuple(mg.tensor(i) for i in idx), b, accumulate=acc),
                      lambda a, b, idx=idx, acc=acc: torch.index_put(a, tuple(torch.tensor(i) for i in idx), b, acc), x, v)
        same_as_torch(lambda a, b, idx=idx, acc=acc: a.index_put(tuple(mg.tensor(i) for i in idx), b, acc),
                      lambda a, b, idx=idx, acc=acc: a.index_put(tuple(torch.tensor(i) for i in idx), b, acc), x, v)


def test_masked_fill():
    x = _r(3, 4)
    m = np.random.default_rng(3).random((3, 4)) < 0.5
    for mask, value in [(m, 0.5), (np.array([True, False, False, True]), -2.0), (m, 3)]:
        same_as_torch(lambda a, k, v=value: mg.masked_fill(a, k, v), lambda a, k, v=value: torch.masked_fill(a, k, v), x, mask)
        same_as_torch(lambda a, k, v=value: a.masked_fill(k, v), lambda a, k, v=value: a.masked_fill(k, v), x, mask)
    # a 0-d tensor value takes the gradient summed where the mask is True
    same_as_torch(lambda a, k, v: a.masked_fill(k, v), lambda a, k, v: a.masked_fill(k, v), x, m, np.array(1.25))
    # the mask broadcasts the result up, as PyTorch's out-of-place masked_fill does
    same_as_torch(lambda a, k: mg.masked_fill(a, k, 1.0), lambda a, k: torch.masked_fill(a, k, 1.0), _r(4), m)
    # the result keeps the input's dtype (a float value into an integer tensor is truncated)
    xi = np.arange(4, dtype=I64)
    got = mg.masked_fill(mg.tensor(xi), mg.tensor(m[0]), 2.7)
    want = torch.masked_fill(torch.tensor(xi), torch.tensor(m[0]), 2.7)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    x32 = mg.tensor(x.astype(np.float32), requires_grad=True)
    assert x32.masked_fill(mg.tensor(m), mg.tensor(2.0, dtype=mg.double)).dtype == np.float32
    # NaN where the mask replaces it never leaks into the gradient (selected with where)
    a = mg.tensor([np.nan, 1.0], dtype=mg.double, requires_grad=True)
    (a.masked_fill(mg.tensor([True, False]), 0.0) ** 2).sum().backward()
    assert a.grad.tolist() == [0.0, 2.0]


def test_masked_select():
    m = np.random.default_rng(3).random((3, 4)) < 0.5
    same_as_torch(lambda a, k: mg.masked_select(a, k), lambda a, k: torch.masked_select(a, k), _r(3, 4), m)
    same_as_torch(lambda a, k: a.masked_select(k), lambda a, k: a.masked_select(k), _r(3, 1), m)
    same_as_torch(lambda a, k: a.masked_select(k), lambda a, k: a.masked_select(k), _r(2, 3, 4), m)
    same_as_torch(lambda a, k: a.masked_select(k), lambda a, k: a.masked_select(k), _r(3, 4), np.zeros(4, bool))


@pytest.mark.parametrize("call, err, pattern", [
    (lambda: mg.gather(_x(3, 2), 0, mg.tensor([[0, 0, 0]])), ValueError,
     r"^gather: index is larger than input at dim 1 \(shapes: input \(3, 2\), index \(1, 3\)"),
    (lambda: mg.gather(_x(3, 2), 0, mg.tensor([0, 1])), ValueError, r"^gather: .*same number of dims.*input \(3, 2\), index \(2,\)"),
    (lambda: mg.gather(_x(3), 0, mg.tensor([-1])), IndexError, r"^gather: index -1 is out of bounds for dim 0 with size 3 \(input shape \(3,\)\)"),
    (lambda: mg.gather(_x(3), 0, mg.tensor([3])), IndexError, r"^gather: index 3 is out of bounds"),
    (lambda: mg.gather(_x(3), 0, mg.tensor([0.0])), TypeError, r"^gather: index must be an integer tensor, got dtype float"),
    (lambda: mg.gather(_x(3), 1, mg.tensor([0])), IndexError, r"^gather: dim 1 is out of range .*\(shape \(3,\)\)"),
    (lambda: mg.scatter(_x(3, 2), 0, mg.tensor([[0, 1]]), _x(1, 1)), ValueError,
     r"^scatter: index is larger than src at dim 1 \(shapes: input \(3, 2\), index \(1, 2\), src \(1, 1\)"),
    (lambda: mg.scatter(_x(3, 2), 0, mg.tensor([0, 2]), _x(2)), ValueError, r"^scatter: input, index and src must have the same number of dims"),
    (lambda: mg.scatter(_x(3), 0, mg.tensor([0]), mg.ones(1, dtype=mg.float)), TypeError,
     r"^scatter: src dtype float32 differs from input dtype float64"),
    (lambda: mg.scatter(_x(3), 0, mg.tensor([0])), TypeError, r"^scatter: missing src"),
    (lambda: mg.scatter(_x(3), 0, mg.tensor([0]), _x(1), reduce="add"), ValueError, r"^scatter: reduce='add' is not supported"),
    (lambda: mg.scatter(_x(3), 0, mg.tensor([5]), 1.0), IndexError, r"^scatter: index 5 is out of bounds for dim 0 with size 3"),
    (lambda: mg.scatter_add(_x(3, 2), 0, mg.tensor([[0, 1, 0]]), _x(1, 3)), ValueError,
     r"^scatter_add: index is larger than input at dim 1 \(shapes: input \(3, 2\), index \(1, 3\), src \(1, 3\)"),
    (lambda: mg.index_select(_x(3, 2), 0, mg.tensor([[0]])), ValueError, r"^index_select: index must be 0-D or 1-D, got shape \(1, 1\) \(input shape \(3, 2\)\)"),
    (lambda: mg.index_select(_x(3, 2), 1, mg.tensor([-1])), IndexError, r"^index_select: index -1 is out of bounds for dim 1 with size 2"),
    (lambda: mg.index_put(_x(3, 2), (mg.tensor([0, 1]),), _x(3)), ValueError,
     r"^index_put: values of shape \(3,\) do not broadcast to the \(2, 2\) positions indexed in input of shape \(3, 2\)"),
    (lambda: mg.index_put(_x(3), (mg.tensor([0]),), mg.ones(1, dtype=mg.float)), TypeError,
     r"^index_put: values dtype float32 differs from input dtype float64"),
    (lambda: mg.index_select(_x(), 0, mg.tensor([0, 0])), ValueError, r"^index_select: index must be 0-D or 1-D with one entry for a 0-d input"),
    (lambda: mg.index_put(_x(3, 2), (mg.tensor([4]),), _x(2)), IndexError, r"^index_put: .*out of bounds.*\(tensor shape \(3, 2\)\)"),
    (lambda: mg.masked_fill(_x(3, 2), mg.ones((4, 5)) > 0, 1.0), ValueError,
     r"^masked_fill: mask of shape \(4, 5\) does not broadcast with input of shape \(3, 2\)"),
    (lambda: mg.masked_fill(_x(3), mg.tensor([1, 0, 1]), 1.0), TypeError, r"^masked_fill: mask must be a bool tensor, got dtype int64"),
    (lambda: mg.masked_fill(_x(3), mg.tensor([True, False, True]), _x(3)), ValueError,
     r"^masked_fill: value must be a number or a 0-d tensor, got shape \(3,\) \(input shape \(3,\)\)"),
    (lambda: mg.masked_select(_x(3, 2), mg.ones(3) > 0), ValueError, r"^masked_select: mask of shape \(3,\) does not broadcast with input of shape \(3, 2\)"),
])
def test_indexing_errors_name_the_op_and_the_shapes(call, err, pattern):
    with pytest.raises(err, match=pattern):
        call()
