"""mg.distributions (issue 42): Normal, Uniform, Categorical, Bernoulli and kl_divergence against
torch.distributions in float64 (values, and the parameters' gradients through backward), the
reparameterised rsample's pathwise gradient, sample shapes and dtypes, draws from
mg.manual_seed's generator (reproducible, and redrawn on a compiled step's replay), gradchecks in
both modes to order 2, and PyTorch's argument validation."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

D = mg.distributions
RTOL, ATOL = 1e-10, 1e-12


def _torch():
    return pytest.importorskip("torch")


def _r(seed=0):
    return np.random.default_rng(seed)


# -- the cases: each builds the same distribution in both libraries from float64 arrays ------------

def _normal_case():
    r = _r(1)
    return dict(make=lambda L, loc, scale: L.Normal(loc, scale),
                params=[r.standard_normal((2, 3)), r.random(3) + 0.5], value=r.standard_normal((4, 2, 3)),
                quantities=("log_prob", "cdf", "entropy", "mean", "mode", "stddev", "variance", "perplexity"))


def _uniform_case():
    r = _r(2)
    low = r.standard_normal((2, 3))
    high = low + r.random((2, 3)) + 0.5
    value = low + r.uniform(0.05, 0.95, (4, 2, 3)) * (high - low)
    return dict(make=lambda L, lo, hi: L.Uniform(lo, hi), params=[low, high], value=value,
                quantities=("log_prob", "cdf", "icdf", "entropy", "mean", "stddev", "variance"),
                icdf_value=r.uniform(0.05, 0.95, (4, 2, 3)))


def _categorical_case(by):
    r = _r(3)
    p = r.random((2, 3, 4)) + 0.1 if by == "probs" else r.standard_normal((2, 3, 4)) * 2
    return dict(make=lambda L, x: L.Categorical(**{by: x}), params=[p], value=r.integers(0, 4, (5, 2, 3)),
                quantities=("log_prob", "entropy", "probs", "logits", "perplexity"))


def _bernoulli_case(by):
    r = _r(4)
    p = r.uniform(0.1, 0.9, (2, 3)) if by == "probs" else r.standard_normal((2, 3)) * 2
    return dict(make=lambda L, x: L.Bernoulli(**{by: x}), params=[p], value=r.integers(0, 2, (5, 2, 3)) * 1.0,
                quantities=("log_prob", "entropy", "mean", "variance", "stddev", "probs", "logits"))


CASES = {"normal": _normal_case, "uniform": _uniform_case,
         "categorical-probs": lambda: _categorical_case("probs"), "categorical-logits": lambda: _categorical_case("logits"),
         "bernoulli-probs": lambda: _bernoulli_case("probs"), "bernoulli-logits": lambda: _bernoulli_case("logits")}


def _quantity(d, name, value, icdf_value):
    if name in ("log_prob", "cdf"):
        return getattr(d, name)(value)
    if name == "icdf":
        return d.icdf(icdf_value)
    if name in ("entropy", "perplexity"):
        return getattr(d, name)()
    return getattr(d, name)


def _value(lib, a, torch):
    if lib is torch:
        return torch.tensor(a)
    return mg.tensor(a)


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_gradients_equal_torch(case):
    torch = _torch()
    c = CASES[case]()
    for name in c["quantities"]:
        ours_p = [mg.tensor(a, requires_grad=True) for a in c["params"]]
        theirs_p = [torch.tensor(a, requires_grad=True) for a in c["params"]]
        ours = _quantity(c["make"](D, *ours_p), name, _value(mg, c["value"], torch),
                         _value(mg, c.get("icdf_value", 0.5), torch))
        theirs = _quantity(c["make"](torch.distributions, *theirs_p), name, torch.tensor(c["value"]),
                           torch.tensor(c.get("icdf_value", 0.5)))
        assert tuple(ours.shape) == tuple(theirs.shape), (case, name)
        assert ours.dtype == np.float64, (case, name)
        np.testing.assert_allclose(to_np(ours), theirs.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{case} {name}")
        w = _r(9).standard_normal(tuple(ours.shape))
        (ours * mg.tensor(w)).sum().backward()
        (theirs * torch.tensor(w)).sum().backward()
        for i, (o, t) in enumerate(zip(ours_p, theirs_p, strict=True)):
            want = np.zeros(o.shape) if t.grad is None else t.grad.numpy()
            got = np.zeros(o.shape) if o.grad is None else to_np(o.grad)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{case} {name}: grad of param {i}")


def test_categorical_mean_variance_mode_and_support_equal_torch():
    torch = _torch()
    p = _r(5).random((3, 4)) + 0.1
    ours, theirs = D.Categorical(mg.tensor(p)), torch.distributions.Categorical(torch.tensor(p))
    for name in ("mean", "variance", "mode", "param_shape"):
        np.testing.assert_array_equal(to_np(getattr(ours, name)) if name != "param_shape" else ours.param_shape,
                                      np.asarray(getattr(theirs, name)))
    assert ours.mode.dtype == np.int64
    for expand in (True, False):
        e = ours.enumerate_support(expand)
        assert e.dtype == np.int64
        np.testing.assert_array_equal(to_np(e), theirs.enumerate_support(expand).numpy())
    b, tb = D.Bernoulli(mg.tensor([0.2, 0.5, 0.9])), torch.distributions.Bernoulli(torch.tensor([0.2, 0.5, 0.9]))
    np.testing.assert_array_equal(to_np(b.mode), tb.mode.numpy())
    np.testing.assert_array_equal(to_np(b.enumerate_support()), tb.enumerate_support().numpy())
    u, tu = D.Uniform(0.0, mg.tensor([1.0, 2.0])), torch.distributions.Uniform(0.0, torch.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(to_np(u.mode), tu.mode.numpy())


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")  # log(0) = -inf, as NumPy warns
def test_uniform_log_prob_outside_the_support_is_minus_inf_without_validation():
    torch = _torch()
    v = np.array([-0.5, 0.0, 0.5, 1.0, 1.5])
    ours = D.Uniform(0.0, 1.0, validate_args=False).log_prob(mg.tensor(v))
    theirs = torch.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(torch.tensor(v))
    np.testing.assert_array_equal(to_np(ours), theirs.numpy())


# -- kl_divergence ----------------------------------------------------------------------------------

def _kl_cases():
    r = _r(6)
    sc = lambda *s: r.random(s) + 0.5  # noqa: E731
    lo = r.standard_normal(3)
    return {
        "normal-normal": (lambda L, a, b, c, d: (L.Normal(a, b), L.Normal(c, d)),
                          [r.standard_normal((2, 3)), sc(3), r.standard_normal(3), sc(2, 3)]),
        "categorical-categorical": (lambda L, a, b: (L.Categorical(probs=a), L.Categorical(logits=b)),
                                    [r.random((2, 4)) + 0.1, r.standard_normal((3, 1, 4))]),
        "bernoulli-bernoulli": (lambda L, a, b: (L.Bernoulli(probs=a), L.Bernoulli(logits=b)),
                                [r.uniform(0.1, 0.9, (2, 3)), r.standard_normal((2, 3))]),  # torch's masks do not broadcast
        "uniform-uniform": (lambda L, a, b, c, d: (L.Uniform(a, b), L.Uniform(c, d)),
                            [lo, lo + 1.0, lo - r.random(3) - 0.1, lo + 1.0 + r.random(3) + 0.1]),
        "uniform-normal": (lambda L, a, b, c, d: (L.Uniform(a, b), L.Normal(c, d)),
                           [lo, lo + sc(3), r.standard_normal(3), sc(3)]),
    }


@pytest.mark.parametrize("pair", sorted(_kl_cases()))
def test_kl_divergence_equals_torch(pair):
    torch = _torch()
    make, params = _kl_cases()[pair]
    ours_p = [mg.tensor(a, requires_grad=True) for a in params]
    theirs_p = [torch.tensor(a, requires_grad=True) for a in params]
    ours = D.kl_divergence(*make(D, *ours_p))
    theirs = torch.distributions.kl_divergence(*make(torch.distributions, *theirs_p))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(to_np(ours), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)
    w = _r(7).standard_normal(tuple(ours.shape))
    (ours * mg.tensor(w)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()
    for o, t in zip(ours_p, theirs_p, strict=True):
        np.testing.assert_allclose(to_np(o.grad), t.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_kl_divergence_infinite_where_the_support_is_not_covered():
    torch = _torch()
    p, q = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]), np.array([[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    ours = D.kl_divergence(D.Categorical(mg.tensor(p)), D.Categorical(mg.tensor(q)))
    theirs = torch.distributions.kl_divergence(torch.distributions.Categorical(torch.tensor(p)),
                                               torch.distributions.Categorical(torch.tensor(q)))
    np.testing.assert_array_equal(to_np(ours), theirs.numpy())
    bp, bq = np.array([0.0, 1.0, 0.3, 0.3]), np.array([0.5, 0.5, 0.0, 1.0])
    ours = D.kl_divergence(D.Bernoulli(mg.tensor(bp)), D.Bernoulli(mg.tensor(bq)))
    theirs = torch.distributions.kl_divergence(torch.distributions.Bernoulli(torch.tensor(bp)),
                                               torch.distributions.Bernoulli(torch.tensor(bq)))
    np.testing.assert_allclose(to_np(ours), theirs.numpy(), rtol=RTOL, atol=ATOL)
    u = D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0))
    assert to_np(u) == np.inf


def test_kl_divergence_of_an_unregistered_pair_and_register_kl():
    with pytest.raises(NotImplementedError, match="No KL.*Bernoulli.*Normal"):
        D.kl_divergence(D.Bernoulli(0.3), D.Normal(0.0, 1.0))

    class Wide(D.Normal):
        pass

    assert to_np(D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0))) == 0.0  # the base class's pair

    @D.register_kl(Wide, D.Normal)
    def _kl_wide(p, q):
        return mg.tensor(42.0)

    try:
        assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 42.0  # the more specific pair wins
        assert D.kl_divergence(Wide(0.0, 1.0), Wide(0.0, 1.0)).item() == 42.0
    finally:
        del D.kl._KL[Wide, D.Normal]
    with pytest.raises(TypeError, match="register_kl"):
        D.register_kl(D.Normal, "Normal")


# -- rsample: the pathwise gradient -------------------------------------------------------------------

def test_normal_rsample_gradient_is_the_pathwise_derivative():
    torch = _torch()
    r = _r(8)
    loc, scale = mg.tensor(r.standard_normal(3), requires_grad=True), mg.tensor(r.random(3) + 0.5, requires_grad=True)
    mg.manual_seed(11)
    x = D.Normal(loc, scale).rsample((4, 2))
    assert tuple(x.shape) == (4, 2, 3) and x.requires_grad
    eps = (to_np(x) - to_np(loc)) / to_np(scale)  # the noise drawn
    mg.manual_seed(11)
    np.testing.assert_allclose(to_np(mg.randn(4, 2, 3, dtype=mg.float64)), eps, rtol=1e-12)  # the draws behind it
    w = r.standard_normal((4, 2, 3))
    (x * mg.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(loc.grad), w.sum(axis=(0, 1)), rtol=RTOL, atol=ATOL)  # d x / d loc = 1
    np.testing.assert_allclose(to_np(scale.grad), (w * eps).sum(axis=(0, 1)), rtol=RTOL, atol=ATOL)  # = eps
    tl, ts = torch.tensor(to_np(loc), requires_grad=True), torch.tensor(to_np(scale), requires_grad=True)
    (torch.tensor(w) * (tl + torch.tensor(eps) * ts)).sum().backward()  # torch's rsample given the same noise
    np.testing.assert_allclose(to_np(loc.grad), tl.grad.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_np(scale.grad), ts.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_uniform_rsample_gradient_is_the_pathwise_derivative():
    torch = _torch()
    r = _r(9)
    low = mg.tensor(r.standard_normal(3), requires_grad=True)
    high = mg.tensor(to_np(low) + r.random(3) + 0.5, requires_grad=True)
    mg.manual_seed(12)
    x = D.Uniform(low, high).rsample((5,))
    u = (to_np(x) - to_np(low)) / (to_np(high) - to_np(low))
    mg.manual_seed(12)
    np.testing.assert_allclose(to_np(mg.rand(5, 3, dtype=mg.float64)), u, rtol=1e-12)  # the draws behind it
    assert ((to_np(x) >= to_np(low)) & (to_np(x) < to_np(high))).all()
    w = r.standard_normal((5, 3))
    (x * mg.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(low.grad), (w * (1 - u)).sum(axis=0), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_np(high.grad), (w * u).sum(axis=0), rtol=RTOL, atol=ATOL)
    tl, th = torch.tensor(to_np(low), requires_grad=True), torch.tensor(to_np(high), requires_grad=True)
    (torch.tensor(w) * (tl + torch.tensor(u) * (th - tl))).sum().backward()
    np.testing.assert_allclose(to_np(low.grad), tl.grad.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_np(high.grad), th.grad.numpy(), rtol=RTOL, atol=ATOL)


def test_sample_has_no_gradient_and_rsample_only_where_torch_has_it():
    loc = mg.tensor([0.0, 1.0], requires_grad=True)
    assert not D.Normal(loc, 1.0).sample((3,)).requires_grad
    assert D.Normal(loc, 1.0).rsample((3,)).requires_grad
    for d in (D.Categorical(mg.tensor([0.5, 0.5])), D.Bernoulli(0.5)):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError, match=f"{type(d).__name__} has no rsample"):
            d.rsample()
    assert D.Normal.has_rsample and D.Uniform.has_rsample


# -- sample shapes, dtypes, devices ---------------------------------------------------------------------

BATCHES = [(), (3,), (2, 3)]
SAMPLE_SHAPES = [(), (4,), (2, 5), 3]


def _makers():
    return {
        "normal": lambda L, t, b: L.Normal(t(np.zeros(b)), t(np.ones(b))),
        "uniform": lambda L, t, b: L.Uniform(t(np.zeros(b)), t(np.ones(b))),
        "categorical": lambda L, t, b: L.Categorical(t(np.full(b + (4,), 0.25))),
        "bernoulli": lambda L, t, b: L.Bernoulli(t(np.full(b, 0.5))),
    }


@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("kind", sorted(_makers()))
def test_sample_shapes_and_dtypes_equal_torch(kind, batch):
    torch = _torch()
    make = _makers()[kind]
    ours = make(D, lambda a: mg.tensor(a, dtype=mg.float32), batch)
    theirs = make(torch.distributions, lambda a: torch.tensor(a, dtype=torch.float32), batch)
    assert ours.batch_shape == tuple(theirs.batch_shape) == batch and ours.event_shape == () == tuple(theirs.event_shape)
    for s in SAMPLE_SHAPES:
        ts = (s,) if isinstance(s, int) else s
        want = tuple(theirs.sample(ts).shape)
        for draw in ("sample", "rsample") if ours.has_rsample else ("sample",):
            x = getattr(ours, draw)(s)
            assert tuple(x.shape) == want == ours._extended_shape(s), (kind, batch, s, draw)
            assert x.dtype == (np.int64 if kind == "categorical" else np.float32), (kind, draw, x.dtype)
            assert x.device == mg.get_default_device()


def test_python_number_parameters_give_an_empty_batch_in_the_default_dtype():
    torch = _torch()
    for ours, theirs in [(D.Normal(0.0, 1.0), torch.distributions.Normal(0.0, 1.0)),
                         (D.Uniform(0, 2), torch.distributions.Uniform(0, 2)),
                         (D.Bernoulli(0.3), torch.distributions.Bernoulli(0.3))]:
        assert ours.batch_shape == () and ours.sample().shape == ()
        assert ours.mean.dtype == np.float32 and ours.sample().dtype == np.float32
        np.testing.assert_allclose(to_np(ours.mean), theirs.mean.numpy(), rtol=1e-7)
    d = D.Normal(mg.tensor([0.0, 1.0], dtype=mg.float64), 2)  # the number takes the tensor's dtype
    assert d.scale.dtype == np.float64 and d.batch_shape == (2,)
    assert D.Normal(mg.zeros(2, 1), mg.ones(3)).batch_shape == (2, 3)
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Normal(mg.zeros(3), 1.0)) == "Normal(loc: (3,), scale: (3,))"


def test_expand():
    torch = _torch()
    p = _r(10).random(4) + 0.1
    for ours, theirs in [(D.Normal(mg.tensor([0.5]), mg.tensor([2.0])), torch.distributions.Normal(torch.tensor([0.5]), torch.tensor([2.0]))),
                         (D.Categorical(mg.tensor(p)), torch.distributions.Categorical(torch.tensor(p))),
                         (D.Bernoulli(logits=mg.tensor(0.3)), torch.distributions.Bernoulli(logits=torch.tensor(0.3))),
                         (D.Uniform(mg.tensor(0.0), mg.tensor(1.5)), torch.distributions.Uniform(torch.tensor(0.0), torch.tensor(1.5)))]:
        e, te = ours.expand((2, 3)), theirs.expand((2, 3))
        assert type(e) is type(ours) and e.batch_shape == (2, 3) and e.sample((5,)).shape == (5, 2, 3)
        np.testing.assert_allclose(to_np(e.entropy()), te.entropy().numpy(), rtol=1e-6)


# -- the generator: mg.manual_seed ----------------------------------------------------------------------

def _all_draws():
    probs = mg.tensor([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
    return [D.Normal(mg.zeros(2), mg.ones(2)).sample((3,)), D.Normal(mg.zeros(2), mg.ones(2)).rsample((3,)),
            D.Uniform(mg.zeros(2), mg.ones(2)).rsample((3,)), D.Categorical(probs).sample((3,)),
            D.Bernoulli(mg.tensor([0.3, 0.6])).sample((3,))]


def test_sampling_is_reproducible_under_manual_seed():
    mg.manual_seed(123)
    a = [to_np(x) for x in _all_draws()]
    mg.manual_seed(123)
    b = [to_np(x) for x in _all_draws()]
    c = [to_np(x) for x in _all_draws()]  # the generator moved on
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, z) for x, z in zip(a, c, strict=True))
    mg.manual_seed(123)
    x = D.Normal(mg.zeros(2), mg.ones(2)).sample((3,))
    mg.manual_seed(123)
    np.testing.assert_array_equal(to_np(x), to_np(mg.randn(3, 2)))  # the very generator mg.randn draws from


def test_draws_follow_the_distribution():
    mg.manual_seed(0)
    n = 20000
    counts = np.bincount(to_np(D.Categorical(mg.tensor([0.2, 0.3, 0.5])).sample((n,))), minlength=3) / n
    np.testing.assert_allclose(counts, [0.2, 0.3, 0.5], atol=0.02)
    none = to_np(D.Categorical(mg.tensor([[0.5, 0.0, 0.5], [0.0, 0.0, 1.0]])).sample((n,)))
    assert set(none[:, 0].tolist()) == {0, 2} and set(none[:, 1].tolist()) == {2}  # never a zero-probability one
    b = to_np(D.Bernoulli(mg.tensor([0.0, 0.25, 1.0])).sample((n,)))
    assert set(np.unique(b).tolist()) <= {0.0, 1.0} and abs(b[:, 1].mean() - 0.25) < 0.02
    assert b[:, 0].max() == 0.0 and b[:, 2].min() == 1.0
    x = to_np(D.Normal(mg.tensor(2.0, dtype=mg.float64), 3.0).sample((n,)))
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
    u = to_np(D.Uniform(-1.0, 3.0).sample((n,)))
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05


def test_a_compiled_step_redraws_on_each_replay_as_eager_does():
    def step(loc, scale, probs):
        d = D.Normal(loc, scale)
        x = d.rsample((4,))
        k = D.Categorical(probs).sample((4,))
        return x, d.log_prob(x), k, D.Bernoulli(probs).sample()

    loc, scale = mg.tensor([0.0, 1.0], dtype=mg.float64), mg.tensor([1.0, 2.0], dtype=mg.float64)
    probs = mg.tensor([0.2, 0.8], dtype=mg.float64)
    runs, compiled = [], mg.compile(step)
    for fn in (step, compiled):
        mg.manual_seed(5)
        runs.append([[to_np(t) for t in fn(loc, scale, probs)] for _ in range(4)])
    for eager_call, compiled_call in zip(*runs, strict=True):
        for a, b in zip(eager_call, compiled_call, strict=True):
            np.testing.assert_array_equal(a, b)
    assert compiled.stats.replays == 2 and compiled.stats.fallbacks == 0
    assert not np.array_equal(runs[1][2][0], runs[1][3][0])  # replays draw fresh numbers


# -- gradchecks: both modes, to order 2 -------------------------------------------------------------

def _leaf(a):
    return mg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def _gradcheck_cases():
    r = _r(13)
    x = mg.tensor(r.standard_normal((2, 3)))
    loc, scale = _leaf(r.standard_normal(3)), _leaf(r.random(3) + 0.5)
    low = _leaf(r.standard_normal(3))
    high = _leaf(to_np(low) + r.random(3) + 1.0)
    inside = mg.tensor(to_np(low) + 0.5)
    probs, logits = _leaf(r.random((2, 4)) + 0.1), _leaf(r.standard_normal((2, 4)))
    k = mg.tensor(r.integers(0, 4, (3, 2)))
    bp, bl = _leaf(r.uniform(0.1, 0.9, 3)), _leaf(r.standard_normal(3))
    y = mg.tensor(r.integers(0, 2, (2, 3)) * 1.0)
    q_loc, q_scale = _leaf(r.standard_normal(3)), _leaf(r.random(3) + 0.5)

    def seeded(f):
        def run(*a):
            mg.manual_seed(3)  # the same noise at every evaluation: rsample is then a function of its parameters
            return f(*a)
        return run

    N, U, C, B, KL = D.Normal, D.Uniform, D.Categorical, D.Bernoulli, D.kl_divergence
    return {
        "normal.log_prob": (lambda a, b: N(a, b).log_prob(x), (loc, scale)),
        "normal.entropy": (lambda a, b: N(a, b).entropy(), (loc, scale)),
        "normal.cdf": (lambda a, b: N(a, b).cdf(x), (loc, scale)),
        "normal.rsample": (seeded(lambda a, b: N(a, b).rsample((2,))), (loc, scale)),
        "normal.kl": (lambda a, b, c, d: KL(N(a, b), N(c, d)), (loc, scale, q_loc, q_scale)),
        "uniform.log_prob": (lambda a, b: U(a, b).log_prob(inside), (low, high)),
        "uniform.entropy": (lambda a, b: U(a, b).entropy(), (low, high)),
        "uniform.cdf": (lambda a, b: U(a, b).cdf(inside), (low, high)),
        "uniform.rsample": (seeded(lambda a, b: U(a, b).rsample((2,))), (low, high)),
        "uniform.kl_normal": (lambda a, b, c, d: KL(U(a, b), N(c, d)), (low, high, q_loc, q_scale)),
        "categorical.log_prob.probs": (lambda p: C(probs=p).log_prob(k), (probs,)),
        "categorical.log_prob.logits": (lambda p: C(logits=p).log_prob(k), (logits,)),
        "categorical.entropy": (lambda p: C(probs=p).entropy(), (probs,)),
        "categorical.kl": (lambda p, q: KL(C(probs=p), C(logits=q)), (probs, logits)),
        "bernoulli.log_prob.probs": (lambda p: B(probs=p).log_prob(y), (bp,)),
        "bernoulli.log_prob.logits": (lambda p: B(logits=p).log_prob(y), (bl,)),
        "bernoulli.entropy": (lambda p: B(probs=p).entropy(), (bp,)),
        "bernoulli.kl": (lambda p, q: KL(B(probs=p), B(logits=q)), (bp, bl)),
    }


@pytest.mark.parametrize("name", sorted(_gradcheck_cases()))
def test_gradcheck_both_modes_order_2(name):
    fn, xs = _gradcheck_cases()[name]
    assert mg.gradcheck(fn, xs, modes=("rev", "fwd"), order=2)


# -- validation: PyTorch's checks and messages ----------------------------------------------------------

@pytest.mark.parametrize("make, words", [
    (lambda: D.Normal(0.0, -1.0), ["parameter scale", "Normal(loc: 0.0, scale: -1.0)", "GreaterThan(lower_bound=0.0)", "-1.0"]),
    (lambda: D.Normal(mg.zeros(2), mg.tensor([1.0, np.nan])), ["parameter scale", "shape (2,)", "nan"]),
    (lambda: D.Normal(mg.tensor([np.nan]), 1.0), ["parameter loc", "Real()"]),
    (lambda: D.Uniform(mg.tensor([0.0, 2.0]), mg.tensor([1.0, 1.0])), ["parameter low", "Uniform", "LessThan"]),
    (lambda: D.Categorical(mg.tensor([0.5, -0.1])), ["parameter probs", "Categorical", "Simplex()"]),
    (lambda: D.Categorical(logits=mg.tensor([0.5, np.nan])), ["parameter logits", "IndependentConstraint(Real(), 1)"]),
    (lambda: D.Bernoulli(mg.tensor(1.5)), ["parameter probs", "Bernoulli(probs: 1.5)", "Interval(lower_bound=0.0, upper_bound=1.0)"]),
    (lambda: D.Normal(mg.zeros(2), 1.0).log_prob(mg.zeros(3)), ["Normal", "not broadcastable", "(3,) vs (2,)"]),
    (lambda: D.Categorical(mg.tensor([0.5, 0.5])).log_prob(mg.tensor(2)), ["value argument", "IntegerInterval(lower_bound=0, upper_bound=1)", "Categorical"]),
    (lambda: D.Categorical(mg.tensor([0.5, 0.5])).log_prob(mg.tensor(0.5)), ["value argument", "IntegerInterval"]),
    (lambda: D.Bernoulli(0.5).log_prob(mg.tensor(0.5)), ["value argument", "Boolean()", "Bernoulli"]),
    (lambda: D.Uniform(0.0, 1.0).log_prob(mg.tensor(2.0)), ["value argument", "Interval(lower_bound=0.0, upper_bound=1.0)", "Uniform(low: 0.0, high: 1.0)"]),
    (lambda: D.Categorical(), ["Categorical", "either `probs` or `logits`"]),
    (lambda: D.Bernoulli(0.3, logits=0.1), ["Bernoulli", "but not both"]),
    (lambda: D.Categorical(mg.tensor(0.5)), ["Categorical", "at least one-dimensional", "shape ()"]),
    (lambda: D.Normal(mg.zeros(2), mg.ones(3)), ["Normal", "loc of shape (2,)", "scale of shape (3,)"]),
    (lambda: D.Normal("a", 1.0), ["Normal", "loc must be a Tensor or a number", "str"]),
])
def test_validation_errors_name_the_distribution_and_the_bad_value(make, words):
    with pytest.raises(ValueError) as info:
        make()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_sample_shape_errors_and_missing_methods():
    with pytest.raises(TypeError, match="Normal: sample_shape must be a tuple of non-negative ints"):
        D.Normal(0.0, 1.0).sample((2.5,))
    with pytest.raises(TypeError, match="Uniform: sample_shape"):
        D.Uniform(0.0, 1.0).rsample((-1,))
    with pytest.raises(NotImplementedError, match="Categorical does not implement cdf"):
        D.Categorical(mg.tensor([0.5, 0.5])).cdf(mg.tensor(0))
    with pytest.raises(NotImplementedError, match="Normal does not implement icdf"):
        D.Normal(0.0, 1.0).icdf(mg.tensor(0.5))


@pytest.mark.filterwarnings("ignore:invalid value encountered in log")  # log(-1) = nan
def test_validate_args_false_and_the_default_switch():
    d = D.Normal(0.0, -1.0, validate_args=False)  # no check, as in PyTorch
    assert np.isnan(to_np(d.log_prob(mg.tensor(0.0))))
    assert to_np(D.Categorical(mg.tensor([0.5, 0.5]), validate_args=False).log_prob(mg.tensor(1))) == np.float32(np.log(0.5))
    D.Distribution.set_default_validate_args(False)
    try:
        D.Bernoulli(1.5)
        assert D.Bernoulli(0.5).log_prob(mg.tensor(0.5)).shape == ()
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Bernoulli"):
        D.Bernoulli(1.5)
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args("yes")


def test_values_given_as_numbers_or_arrays():
    d = D.Normal(mg.tensor([0.0, 1.0], dtype=mg.float64), 1.0)
    np.testing.assert_array_equal(to_np(d.log_prob(0.5)), to_np(d.log_prob(mg.tensor([0.5, 0.5], dtype=mg.float64))))
    assert d.log_prob([0.5, 0.5]).dtype == np.float64
    np.testing.assert_array_equal(to_np(D.Categorical(mg.tensor([0.25, 0.75])).log_prob(1)), np.float32(np.log(0.75)))


def test_support_and_constraints():
    c = D.constraints
    np.testing.assert_array_equal(to_np(c.positive.check(mg.tensor([-1.0, 0.0, 2.0]))), [False, False, True])
    np.testing.assert_array_equal(to_np(c.simplex.check(mg.tensor([[0.5, 0.5], [0.7, 0.7]]))), [True, False])
    np.testing.assert_array_equal(to_np(D.Categorical(mg.tensor([0.2, 0.8])).support.check(mg.tensor([0, 1, 2]))), [True, True, False])
    assert repr(D.Normal(0.0, 1.0).support) == "Real()" and repr(D.Bernoulli(0.5).support) == "Boolean()"
    assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)


def test_import_minigrad_does_not_load_distributions():
    code = ("import sys, minigrad as mg; assert 'minigrad.distributions' not in sys.modules; "
            "mg.distributions.Normal; assert 'minigrad.distributions' in sys.modules; "
            "from minigrad.distributions import Normal, kl_divergence")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(__file__).resolve().parent.parent)
