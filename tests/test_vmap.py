"""mg.func.vmap and the transforms built on it (jacrev, jacfwd, hessian), compared with torch.func:
in_dims and out_dims in every form, pytrees in and out, chunks, nesting, randomness, compositions
with every transform in both orders, per-sample gradients and ensembles of nn modules
(functional_call, stack_module_state), the errors that name what went wrong, and that ``func``
runs once (or once per chunk), never once per element.

Cases are written once over a module ``m`` (minigrad or torch), so both libraries run the same text.
"""
import warnings

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

from test_func import _data, _torch, mgt, tht  # noqa: F401 - the cases' helpers, shared with test_func

F = mg.func


def _np(x):
    """A result as nested lists (dicts) of host arrays (Tensors of either library)."""
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if isinstance(x, mg.Tensor):
        return to_np(x)
    if isinstance(x, np.ndarray):
        return x
    return x.detach().numpy()


def _close(got, want, rtol=1e-10, atol=1e-12):
    _same(_np(got), _np(want), rtol, atol)


def _same(got, want, rtol, atol):
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (got.keys(), want.keys())
        for k in want:
            _same(got[k], want[k], rtol, atol)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w, rtol, atol)
    else:
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _both(fn):
    """``fn(m)`` builds a function over the module ``m``: minigrad's and torch's."""
    return fn(mg), fn(_torch())


# -- in_dims, out_dims, structures, chunks, nesting ------------------------------------------------

CASES = {
    # name: (function of m, argument shapes, in_dims, out_dims)
    "int": (lambda m: lambda a, b: m.sin(a) * b, [(5, 3), (5, 3)], 0, 0),
    "negative": (lambda m: lambda a, b: a @ b, [(3, 4, 5), (4,)], (-1, None), 0),
    "none_and_middle": (lambda m: lambda a, b: (a * b).sum(0), [(3, 6, 2), (3, 2)], (1, None), -1),
    "out_dims": (lambda m: lambda a: (a.exp(), a.sum()), [(4, 3, 2)], 2, (1, 0)),
    "tuple_in_tuple": (lambda m: lambda ab, c: ab[0] * ab[1] + c, [((4, 3), (3, 4)), (3,)], ((0, 1), None), 0),
    "dict_in_out": (lambda m: lambda d: {"s": d["x"].sum(), "p": [d["x"] * d["y"], d["y"]]},
                    [{"x": (2, 5), "y": (5, 2)}], ({"x": 1, "y": 0},), 0),
    "list_out": (lambda m: lambda a: [a.tanh(), a.sum(-1)], [(6, 2, 3)], 0, 0),
}


def _make(shape, seed):
    if isinstance(shape, dict):
        return {k: _make(s, seed + i) for i, (k, s) in enumerate(shape.items())}
    if isinstance(shape, tuple) and shape and isinstance(shape[0], tuple):
        return tuple(_make(s, seed + i) for i, s in enumerate(shape))
    return _data(shape, seed)


def _convert(tree, to):
    if isinstance(tree, dict):
        return {k: _convert(v, to) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(_convert(v, to) for v in tree)
    return to(tree)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("chunk_size", [None, 2])
def test_vmap_matches_torch(case, chunk_size):
    torch = _torch()
    fn, shapes, in_dims, out_dims = CASES[case]
    fm, ft = _both(fn)
    args = [_make(s, i) for i, s in enumerate(shapes)]
    want = torch.func.vmap(ft, in_dims, out_dims, chunk_size=chunk_size)(*[_convert(a, tht) for a in args])
    got = F.vmap(fm, in_dims, out_dims, chunk_size=chunk_size)(*[_convert(a, mgt) for a in args])
    _close(got, want)


def test_nested_vmap_matches_torch():
    torch = _torch()
    A, B = _data((4, 5, 3), 0), _data((5, 3), 1)
    for fn, inner, outer in [
        (lambda m: lambda a, b: (a * b).sum(), 0, (0, None)),
        (lambda m: lambda a, b: b @ a, (0, None), (1, None)),
        (lambda m: lambda a, b: m.tanh(a) + b, (0, None), (1, None)),
    ]:
        fm, ft = _both(fn)
        want = torch.func.vmap(torch.func.vmap(ft, in_dims=inner), in_dims=outer)(tht(A), tht(B))
        got = F.vmap(F.vmap(fm, in_dims=inner), in_dims=outer)(mgt(A), mgt(B))
        _close(got, want)


def test_unbatched_output_and_keywords():
    torch = _torch()
    x, c = _data((4, 3), 0), _data(3, 1)
    # an output that does not depend on the batch comes out broadcast, as torch's; keywords are not batched
    fm, ft = _both(lambda m: lambda a, *, k: (a * k, k * 2))
    _close(F.vmap(fm)(mgt(x), k=mgt(c)), torch.func.vmap(ft)(tht(x), k=tht(c)))
    # out_dims=None for an output that is the same for all elements
    got = F.vmap(lambda a, k: (a * k, k.sum()), in_dims=(0, None), out_dims=(0, None))(mgt(x), mgt(c))
    np.testing.assert_allclose(to_np(got[1]), c.sum())


# -- func runs once, or once per chunk ----------------------------------------------------------------

def test_func_runs_once_per_call_and_once_per_chunk():
    calls = []

    def f(a, w):
        calls.append(a.shape)
        return mg.tanh(a @ w).sum()

    x, w = mgt(_data((64, 8), 0)), mgt(_data((8, 3), 1))
    out = F.vmap(f, in_dims=(0, None))(x, w)
    assert calls == [(8,)] and out.shape == (64,)
    calls.clear()
    chunked = F.vmap(f, in_dims=(0, None), chunk_size=10)(x, w)
    assert len(calls) == 7  # 64 elements in chunks of 10
    np.testing.assert_allclose(to_np(chunked), to_np(out), rtol=1e-12)
    calls.clear()
    F.vmap(F.grad(f, argnums=1), in_dims=(0, None))(x, w)  # per-sample gradients: one traced pass
    assert calls == [(8,)]
    calls.clear()
    F.jacrev(lambda w: F.vmap(f, in_dims=(0, None))(x, w))(w)
    assert calls == [(8,)]
    calls.clear()
    F.jacfwd(lambda w: F.vmap(f, in_dims=(0, None))(x, w))(w)
    assert calls == [(8,)]


# -- randomness ----------------------------------------------------------------------------------------

DRAWS = {
    "randn": lambda a: a + mg.randn(3, dtype=a.dtype),
    "rand": lambda a: a + mg.rand(3, dtype=a.dtype),
    "dropout": lambda a: mg.nn.functional.dropout(a + 1, p=0.5, training=True),
}


@pytest.mark.parametrize("draw", sorted(DRAWS))
def test_randomness(draw):
    fn = DRAWS[draw]
    x = mg.zeros(6, 3, dtype=mg.float64)
    with pytest.raises(RuntimeError, match=r"randomness='error'.*'different'.*'same'"):
        F.vmap(fn)(x)
    mg.manual_seed(0)
    diff = to_np(F.vmap(fn, randomness="different")(x))
    assert not all(np.array_equal(diff[0], r) for r in diff[1:])  # independent draws per element
    same = to_np(F.vmap(fn, randomness="same")(x))
    assert all(np.array_equal(same[0], r) for r in same[1:])  # one draw shared by all
    if draw == "dropout":
        assert set(np.unique(diff)) <= {0.0, 2.0} and set(np.unique(same)) <= {0.0, 2.0}
    # not drawing at all is fine under "error": dropout in eval mode
    F.vmap(lambda a: mg.nn.functional.dropout(a, p=0.5, training=False))(x)


def test_jacfwd_passes_randomness_on():
    x = mgt(_data(3, 0))
    with pytest.raises(RuntimeError, match="randomness"):
        F.jacfwd(lambda a: a * mg.rand(3, dtype=a.dtype))(x)
    j = F.jacfwd(lambda a: a * mg.rand(3, dtype=a.dtype), randomness="same")(x)
    assert np.count_nonzero(to_np(j) - np.diag(np.diag(to_np(j)))) == 0


# -- compositions in both orders -------------------------------------------------------------------

def _loss(m):
    return lambda w, x, y: ((m.tanh(x @ w) - y) ** 2).mean()


def test_vmap_of_grad_vjp_jvp_hessian():
    torch = _torch()
    W, X, Y, U = _data((3, 4), 0), _data((5, 3), 1), _data((5, 4), 2), _data((5, 3), 3)
    fm, ft = _both(_loss)
    # per-sample gradients: vmap(grad)
    _close(F.vmap(F.grad(fm), in_dims=(None, 0, 0))(mgt(W), mgt(X), mgt(Y)),
           torch.func.vmap(torch.func.grad(ft), in_dims=(None, 0, 0))(tht(W), tht(X), tht(Y)))
    # vmap(vjp): the vjp taken inside, per element
    hm, ht = _both(lambda m: lambda x: m.sin(x) * x.sum())
    _close(F.vmap(lambda x, u: F.vjp(hm, x)[1](u)[0])(mgt(X), mgt(U)),
           torch.func.vmap(lambda x, u: torch.func.vjp(ht, x)[1](u)[0])(tht(X), tht(U)))
    # vmap over one vjp_fn: a batch of cotangents (a Jacobian's rows)
    _, fn_m = F.vjp(hm, mgt(X[0]))
    _, fn_t = torch.func.vjp(ht, tht(X[0]))
    _close(F.vmap(fn_m)(mgt(U)), torch.func.vmap(fn_t)(tht(U)))
    # vmap(jvp)
    _close(F.vmap(lambda x, u: F.jvp(hm, (x,), (u,)))(mgt(X), mgt(U)),
           torch.func.vmap(lambda x, u: torch.func.jvp(ht, (x,), (u,)))(tht(X), tht(U)))
    # vmap(hessian)
    sm, st = _both(lambda m: lambda x: (m.sin(x) ** 3).sum() * x.prod())
    _close(F.vmap(F.hessian(sm))(mgt(X)), torch.func.vmap(torch.func.hessian(st))(tht(X)))
    # indexing under two levels (its backward, index_add, batches there too: no per-element loop)
    im, it = _both(lambda m: lambda x: (m.sin(x) ** 3).sum() * x[0])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="vmap: op")  # minigrad's fallback warning
        _close(F.vmap(F.hessian(im))(mgt(X)), torch.func.vmap(torch.func.hessian(it))(tht(X)))
    # vmap(jacrev), vmap(jacfwd)
    _close(F.vmap(F.jacrev(hm))(mgt(X)), torch.func.vmap(torch.func.jacrev(ht))(tht(X)))
    _close(F.vmap(F.jacfwd(hm))(mgt(X)), torch.func.vmap(torch.func.jacfwd(ht))(tht(X)))


def test_transforms_of_a_function_that_calls_vmap():
    torch = _torch()
    W, X, Y = _data((3, 4), 0), _data((5, 3), 1), _data((5, 4), 2)
    fm, ft = _both(_loss)
    vm = lambda w: F.vmap(fm, in_dims=(None, 0, 0))(w, mgt(X), mgt(Y))  # noqa: E731
    vt = lambda w: torch.func.vmap(ft, in_dims=(None, 0, 0))(w, tht(X), tht(Y))  # noqa: E731
    _close(F.grad(lambda w: vm(w).sum())(mgt(W)), torch.func.grad(lambda w: vt(w).sum())(tht(W)))
    _close(F.jacrev(vm)(mgt(W)), torch.func.jacrev(vt)(tht(W)))
    _close(F.jacfwd(vm)(mgt(W)), torch.func.jacfwd(vt)(tht(W)))
    _close(F.hessian(lambda w: vm(w).sum())(mgt(W)), torch.func.hessian(lambda w: vt(w).sum())(tht(W)))
    # and the caller's own autograd through vmap
    w = mgt(W).requires_grad_()
    vm(w).sum().backward()
    _close(w.grad, torch.func.grad(lambda w: vt(w).sum())(tht(W)))


# -- jacrev / jacfwd / hessian on vmap: chunks, pytrees -------------------------------------------

@pytest.mark.parametrize("chunk_size", [None, 1, 3, 100])
def test_jacrev_chunks_match_torch(chunk_size):
    torch = _torch()
    fm, ft = _both(lambda m: lambda x, y: (m.tanh(x @ y), (x ** 2).sum()))
    X, Y = _data((2, 3), 0), _data((3, 2), 1)
    want = torch.func.jacrev(ft, argnums=(0, 1))(tht(X), tht(Y))
    _close(F.jacrev(fm, argnums=(0, 1), chunk_size=chunk_size)(mgt(X), mgt(Y)), want)
    with pytest.raises(ValueError, match="chunk_size must be None or a positive int, got 0"):
        F.jacrev(fm, chunk_size=0)


def test_pytrees_in_every_transform():
    torch = _torch()
    P = {"w": _data((3, 2), 0), "b": _data(2, 1)}
    X, Y = _data((4, 3), 2), _data((4, 2), 3)
    fm, ft = _both(lambda m: lambda p, x, y: ((m.tanh(x @ p["w"] + p["b"]) - y) ** 2).mean())
    pm, pt = _convert(P, mgt), _convert(P, tht)
    args_m, args_t = (pm, mgt(X), mgt(Y)), (pt, tht(X), tht(Y))
    g = F.grad(fm)(*args_m)
    assert isinstance(g, dict) and list(g) == ["w", "b"]
    _close(g, torch.func.grad(ft)(*args_t))
    _close(F.grad_and_value(fm)(*args_m), torch.func.grad_and_value(ft)(*args_t))
    _close(F.grad(fm, argnums=(0, 1))(*args_m), torch.func.grad(ft, argnums=(0, 1))(*args_t))
    for name in ("jacrev", "jacfwd", "hessian"):
        _close(getattr(F, name)(fm)(*args_m), getattr(torch.func, name)(ft)(*args_t))
    # a dict output, a dict input: a dict of dicts
    om, ot = _both(lambda m: lambda p: {"y": m.sin(p["w"]).sum(0), "z": (p["b"] * 2, p["b"].sum())})
    for name in ("jacrev", "jacfwd"):
        _close(getattr(F, name)(om)(pm), getattr(torch.func, name)(ot)(pt))
    # vjp: cotangents of the output's structure (dict keys in any order), gradients of the primals'
    out_m, fn_m = F.vjp(om, pm)
    out_t, fn_t = torch.func.vjp(ot, pt)
    _close(out_m, out_t)
    ct = {"y": _data(2, 5), "z": (_data(2, 6), _data((), 7))}
    _close(fn_m({"z": _convert(ct["z"], mgt), "y": mgt(ct["y"])}), fn_t(_convert(ct, tht)))
    # jvp and hvp: primals and tangents as pytrees
    T = {"w": _data((3, 2), 8), "b": _data(2, 9)}
    _close(F.jvp(om, (pm,), (_convert(T, mgt),)), torch.func.jvp(ot, (pt,), (_convert(T, tht),)))
    sm = lambda p: (p["w"] ** 3).sum() + (p["b"] ** 2).sum()  # noqa: E731
    _, (hv,) = F.hvp(sm, (pm,), (_convert(T, mgt),))
    _close(hv, {"w": 6 * P["w"] * T["w"], "b": 2 * T["b"]}, rtol=1e-12)
    with pytest.raises(TypeError, match=r"tangents\[0\] must have the structure of primals\[0\]"):
        F.jvp(om, (pm,), ({"w": mgt(T["w"])},))
    with pytest.raises(TypeError, match=r"argument 0 \(a dict: its leaf 1\) is differentiated, so it must be a Tensor"):
        F.grad(lambda p: p["w"].sum())({"w": pm["w"], "n": 3})


# -- functional_call and stack_module_state --------------------------------------------------------

def _mlp(seed, dropout=0.0):
    mg.manual_seed(seed)
    layers = [mg.nn.Linear(4, 8), mg.nn.Tanh()]
    if dropout:
        layers.append(mg.nn.Dropout(dropout))
    return mg.nn.Sequential(*layers, mg.nn.Linear(8, 3)).double()


def _torch_twin(model):
    torch = _torch()
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), t.named_parameters(), strict=True):
            q.copy_(torch.from_numpy(to_np(p)))
    return t


def test_per_sample_gradients_of_an_mlp_match_torch():
    torch = _torch()
    model = _mlp(0)
    tmodel = _torch_twin(model)
    X, Y = _data((16, 4), 1), np.random.default_rng(2).integers(0, 3, 16)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

    def loss_fn(p, x, y):  # PyTorch's tutorial, word for word
        out = F.functional_call(model, p, (x[None],))
        return mg.nn.functional.cross_entropy(out, y[None])

    def tloss_fn(p, x, y):
        out = torch.func.functional_call(tmodel, p, (x[None],))
        return torch.nn.functional.cross_entropy(out, y[None])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an op still on the per-element fallback is fine here
        got = F.vmap(F.grad(loss_fn), in_dims=(None, 0, 0))(params, mgt(X), mg.tensor(Y))
    want = torch.func.vmap(torch.func.grad(tloss_fn), in_dims=(None, 0, 0))(tparams, tht(X), torch.tensor(Y))
    _close(got, want)
    # the sum of the per-sample gradients is the batch's gradient
    total = F.grad(lambda p: mg.nn.functional.cross_entropy(F.functional_call(model, p, mgt(X)), mg.tensor(Y),
                                                            reduction="sum"))(params)
    _close({k: v.sum(0) for k, v in got.items()}, total)
    assert all(p._node is None and p.grad is None for p in model.parameters())  # the model is untouched


def test_ensemble_with_stack_module_state_matches_torch():
    torch = _torch()
    models = [_mlp(s) for s in range(5)]
    tmodels = [_torch_twin(m) for m in models]
    params, buffers = F.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    assert list(params) == list(tparams) and params["0.weight"].shape == (5, 8, 4)
    assert all(p.requires_grad and p.is_leaf for p in params.values())
    X = _data((7, 4), 3)
    base = models[0]

    def run(p, b, x):
        return F.functional_call(base, (p, b), (x,))

    got = F.vmap(run, in_dims=(0, 0, None))(params, buffers, mgt(X))
    tbase = tmodels[0]
    want = torch.func.vmap(lambda p, b, x: torch.func.functional_call(tbase, (p, b), (x,)),
                           in_dims=(0, 0, None))(tparams, tbuffers, tht(X))
    _close(got, want)
    for k, m in enumerate(models):
        np.testing.assert_allclose(to_np(got[k]), to_np(m(mgt(X))), rtol=1e-12)
    # every model's gradient in one backward
    F.vmap(run, in_dims=(0, 0, None))(params, buffers, mgt(X)).sum().backward()
    assert params["0.weight"].grad.shape == (5, 8, 4)
    with pytest.raises(RuntimeError, match="same mode"):
        F.stack_module_state([models[0], _mlp(1).eval()])
    with pytest.raises(RuntimeError, match="one class"):
        F.stack_module_state([models[0], mg.nn.Linear(4, 3)])


def test_functional_call_leaves_the_module_unchanged():
    model = _mlp(0)
    before = {k: v for k, v in model.named_parameters()}
    x = mgt(_data((2, 4), 1))
    zeros = {k: mg.zeros_like(v) for k, v in before.items()}
    np.testing.assert_allclose(to_np(F.functional_call(model, zeros, (x,))), 0)
    np.testing.assert_allclose(to_np(F.functional_call(model, zeros, x)), 0)  # one argument, not a tuple
    assert {k: v for k, v in model.named_parameters()} == before  # the same objects
    # a part of the parameters, the rest the module's own; several dicts; keywords
    part = F.functional_call(model, ({"2.bias": zeros["2.bias"]}, {"2.weight": zeros["2.weight"]}), (x,))
    np.testing.assert_allclose(to_np(part), 0)
    with pytest.raises(ValueError, match="several values"):
        F.functional_call(model, ({"2.bias": zeros["2.bias"]}, {"2.bias": zeros["2.bias"]}), (x,))
    with pytest.raises(RuntimeError, match=r"missing key\(s\) \['0.bias'"):
        F.functional_call(model, {k: v for k, v in zeros.items() if k != "0.bias"}, (x,), strict=True)
    with pytest.raises(RuntimeError, match=r"unexpected key\(s\) \['nope'\]"):
        F.functional_call(model, {**zeros, "nope": x}, (x,), strict=True)
    # the module is restored when the call raises
    with pytest.raises(ValueError):  # a (5, 5) weight on (2, 4) inputs
        F.functional_call(model, {"0.weight": mg.zeros(5, 5, dtype=mg.float64)}, (x,))
    assert {k: v for k, v in model.named_parameters()} == before
    assert model[0].weight is before["0.weight"]
    # buffers too
    bn = mg.nn.BatchNorm1d(4).double().eval()
    mean = bn.running_mean
    out = F.functional_call(bn, {"running_mean": mg.ones(4, dtype=mg.float64)}, (x,))
    np.testing.assert_allclose(to_np(out), (to_np(x) - 1) / np.sqrt(1 + 1e-5), rtol=1e-6)
    assert bn.running_mean is mean


def test_functional_call_ties_weights():
    class Tied(mg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = mg.nn.Linear(3, 3, bias=False)
            self.b = mg.nn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied().double()
    x = mgt(_data((2, 3), 0))
    w = mg.eye(3, dtype=mg.float64) * 2
    np.testing.assert_allclose(to_np(F.functional_call(m, {"a.weight": w}, (x,))), 4 * to_np(x))
    untied = F.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)  # b keeps the module's weight
    np.testing.assert_allclose(to_np(untied), to_np(x) @ (2 * to_np(m.a.weight).T), rtol=1e-12)
    with pytest.raises(ValueError, match="tied"):
        F.functional_call(m, {"a.weight": w, "b.weight": w * 2}, (x,))


# -- errors that name the problem ------------------------------------------------------------------

def test_errors_name_the_problem():
    x, y = mg.randn(4, 3), mg.randn(5, 3)
    with pytest.raises(TypeError, match=r"^func\.vmap: the function must return Tensors .*got float"):
        F.vmap(lambda a: 1.0)(x)
    with pytest.raises(RuntimeError, match=r"\.item\(\) of a batched tensor.*data-dependent control flow"):
        F.vmap(lambda a: a.sum().item())(x)
    with pytest.raises(RuntimeError, match=r"of a batched tensor.*data-dependent control flow"):
        F.vmap(lambda a: mg.tensor(float(a.sum())))(x)
    with pytest.raises(RuntimeError, match=r"bool\(\) of a batched tensor"):
        F.vmap(lambda a: a if a.sum() > 0 else -a)(x)
    z = mg.zeros(3)

    def write(a):
        z[:] = a
        return a

    with pytest.raises(RuntimeError, match=r"in-place write of a batched value into an unbatched tensor \(shape \(3,\)\)"):
        F.vmap(write)(x)
    with pytest.raises(RuntimeError, match=r"add_: an in-place write of a batched value into an unbatched tensor"):
        F.vmap(lambda a: z.add_(a))(x)
    with pytest.raises(ValueError, match=r"different batch sizes: input 0 has size 4 .*input 1 has size 5"):
        F.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match=r"in_dim=2 is out of range for an input of shape \(4, 3\)"):
        F.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match=r"in_dim=-3 is out of range"):
        F.vmap(lambda a: a, in_dims=-3)(x)
    with pytest.raises(ValueError, match=r"in_dims has 1 entries, but the function was called with 2 positional"):
        F.vmap(lambda a, b: a, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match=r"in_dims\[0\] is a dict with keys \['b'\], but the matching input is a dict "
                                         r"with keys \['a'\]"):
        F.vmap(lambda d: d["a"], in_dims=({"b": 0},))({"a": x})
    with pytest.raises(ValueError, match=r"in_dim=0 was given for an input of type int"):
        F.vmap(lambda a, b: a, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match="no input is batched"):
        F.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match=r"out_dim=3 is out of range for an output of shape \(3,\)"):
        F.vmap(lambda a: a, out_dims=3)(x)
    with pytest.raises(ValueError, match=r"out_dims has 1 entries, but the function returned 2"):
        F.vmap(lambda a: (a, a), out_dims=(0,))(x)
    with pytest.raises(ValueError, match="out_dims is None for an output that is batched"):
        F.vmap(lambda a: a, out_dims=None)(x)
    with pytest.raises(ValueError, match="randomness must be one of"):
        F.vmap(lambda a: a, randomness="sometimes")


def test_vmap_and_vmap_of_grad_gradcheck_in_every_composition():
    """vmap's two ops (a batch axis in, out) and a per-element gradient under vmap, held to finite
    differences to order 2 in both modes: the four compositions (reverse or forward over reverse or
    forward) of the batched computation."""
    x = mg.tensor(_data((3, 4), 7), requires_grad=True)
    f = lambda x: F.vmap(lambda r: mg.sin(r) * r.sum(), in_dims=1, out_dims=0)(x)  # noqa: E731
    assert mg.gradcheck(f, [x], modes=("rev", "fwd"), order=2)
    g = lambda x: F.vmap(F.grad(lambda r: (mg.sin(r) ** 2).sum() * r[0]))(x)  # noqa: E731
    assert mg.gradcheck(g, [x], modes=("rev", "fwd"), order=2)
