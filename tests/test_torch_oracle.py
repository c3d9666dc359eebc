"""PyTorch as an oracle: random compositions of ops, values and gradients compared in float64.

Each case builds a small random program (a seeded choice of unary, binary, reduction, shape,
indexing, joining and matmul steps) and runs it in minigrad and in torch side by side.
"""
import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

torch = pytest.importorskip("torch")


def T(a):
    """A torch leaf over a copy of a NumPy array."""
    return torch.tensor(np.array(a), dtype=torch.float64, requires_grad=True)


# -- the steps: each takes (rng, [(mg value, torch value)]) and returns a new pair or None ------

UNARY = [
    ("exp(tanh)", lambda x: x.tanh().exp(), lambda x: x.tanh().exp()),
    ("tanh", mg.tanh, torch.tanh),
    ("sigmoid", mg.sigmoid, torch.sigmoid),
    ("sin", mg.sin, torch.sin),
    ("cos", mg.cos, torch.cos),
    ("relu", mg.relu, torch.relu),
    # x * sign(x) is torch.abs with the same gradient (sign(x), 0 at 0); torch.abs's own double
    # backward imports torch's compiler stack on first use, seconds of start-up
    ("abs", mg.abs, lambda x: x * torch.sign(x)),
    ("neg", lambda x: -x, lambda x: -x),
    ("log(x²+1)", lambda x: mg.log(x * x + 1), lambda x: torch.log(x * x + 1)),
    ("sqrt(x²+1)", lambda x: (x * x + 1).sqrt(), lambda x: (x * x + 1).sqrt()),
    ("(x²+.5)**1.5", lambda x: (x * x + 0.5) ** 1.5, lambda x: (x * x + 0.5) ** 1.5),
    ("2**x", lambda x: 2.0 ** x.tanh(), lambda x: 2.0 ** x.tanh()),
    ("1/(x²+1)", lambda x: 1.0 / (x * x + 1), lambda x: 1.0 / (x * x + 1)),
    ("3-2x", lambda x: 3 - 2 * x, lambda x: 3 - 2 * x),
    ("clip", lambda x: mg.clip(x, -0.5, 0.7), lambda x: torch.clamp(x, -0.5, 0.7)),
]

BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("div", lambda a, b: a / (b * b + 1), lambda a, b: a / (b * b + 1)),
    ("pow", lambda a, b: (a * a + 0.5) ** b.tanh(), lambda a, b: (a * a + 0.5) ** b.tanh()),
    ("maximum", mg.maximum, torch.maximum),
    ("minimum", mg.minimum, torch.minimum),
    ("where", lambda a, b: mg.where(a > b, a, b * 2), lambda a, b: torch.where(a > b, a, b * 2)),
]


def _axis(rng, nd):
    return int(rng.integers(-nd, nd))


def step_unary(rng, vals):
    m, t = vals[rng.integers(len(vals))]
    name, fm, ft = UNARY[rng.integers(len(UNARY))]
    return name, fm(m), ft(t)


def step_binary(rng, vals):
    pairs = [(i, j) for i in range(len(vals)) for j in range(len(vals)) if _broadcasts(vals[i][0], vals[j][0])]
    i, j = pairs[rng.integers(len(pairs))]
    name, fm, ft = BINARY[rng.integers(len(BINARY))]
    return name, fm(vals[i][0], vals[j][0]), ft(vals[i][1], vals[j][1])


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a.shape, b.shape)
        return True
    except ValueError:
        return False


def step_reduce(rng, vals):
    cands = [v for v in vals if v[0].ndim >= 1 and v[0].size > 0]
    if not cands:
        return None
    m, t = cands[rng.integers(len(cands))]
    nd = m.ndim
    a = _axis(rng, nd)
    k = bool(rng.integers(2))
    kind = rng.integers(9)
    if kind == 0:
        if rng.integers(2) and nd >= 2:
            axes = (0, -1)
            return "sum(0,-1)", m.sum(axis=axes, keepdims=k), t.sum(dim=axes, keepdim=k)
        return "sum", m.sum(axis=a, keepdims=k), t.sum(dim=a, keepdim=k)
    if kind == 1:
        return "mean", m.mean(axis=a, keepdims=k), t.mean(dim=a, keepdim=k)
    if kind == 2:
        return "max", m.max(axis=a, keepdims=k), torch.amax(t, dim=a, keepdim=k)
    if kind == 3:
        return "min", m.min(axis=a, keepdims=k), torch.amin(t, dim=a, keepdim=k)  # dim=: the (values, indices) pair
    if kind == 4:
        return "logsumexp", m.logsumexp(axis=a, keepdims=k), torch.logsumexp(t, dim=a, keepdim=k)
    if kind == 5:
        return "softmax", m.softmax(a), torch.softmax(t, dim=a)
    if kind == 6:
        return "log_softmax", m.log_softmax(a), torch.log_softmax(t, dim=a)
    if kind == 7:
        return "var", m.var(axis=a, keepdims=k), t.var(dim=a, keepdim=k, correction=0)
    return "max(all)", m.max(), torch.amax(t)


def step_shape(rng, vals):
    m, t = vals[rng.integers(len(vals))]
    nd = m.ndim
    kind = rng.integers(8)
    if kind == 0 and nd >= 2:
        return "swapaxes", m.swapaxes(-1, -2), t.transpose(-1, -2)
    if kind == 1:
        return "reshape(-1)", m.reshape(-1), t.reshape(-1)
    if kind == 2 and nd <= 3:
        return "unsqueeze", m.unsqueeze(0), t.unsqueeze(0)
    if kind == 3 and nd >= 1 and m.shape[0] > 0:
        idx = rng.integers(0, m.shape[0], size=4)  # repeats likely: gradients must accumulate
        return "take", m[idx], t[torch.tensor(idx)]
    if kind == 4 and nd >= 1:
        return "slice", m[..., 1:], t[..., 1:]
    if kind == 5 and nd >= 2:
        perm = tuple(rng.permutation(nd).tolist())
        return "permute", m.permute(*perm), t.permute(*perm)
    if kind == 6 and nd <= 3:
        return "expand", m.unsqueeze(0).expand(2, *m.shape), t.unsqueeze(0).expand(2, *t.shape)
    if kind == 7 and nd >= 1:
        a = _axis(rng, nd)
        return "cat", mg.concatenate([m, m * 2], axis=a), torch.cat([t, t * 2], dim=a)
    if nd >= 1:
        return "stack", mg.stack([m, -m], axis=-1), torch.stack([t, -t], dim=-1)
    return None


def step_matmul(rng, vals, leaves):
    cands = [v for v in vals if v[0].ndim >= 1]
    if not cands:
        return None
    m, t = cands[rng.integers(len(cands))]
    n = m.shape[-1]
    shape = (n,) if rng.integers(3) == 0 else (n, int(rng.integers(1, 4)))
    if rng.integers(3) == 0 and m.ndim >= 3:
        shape = (m.shape[-3], *shape) if len(shape) == 2 else shape  # batched weight
    w = rng.standard_normal(shape)
    wm, wt = mg.tensor(w, requires_grad=True), T(w)
    leaves.append((wm, wt))
    return "matmul", m @ wm, t @ wt


STEPS = [step_unary, step_binary, step_reduce, step_shape]


def run_program(seed, n_steps=8):
    rng = np.random.default_rng(seed)
    base = tuple(int(s) for s in rng.integers(2, 5, size=rng.integers(1, 4)))
    leaves = []
    for _ in range(int(rng.integers(1, 4))):
        # a suffix of the base shape, with some dims set to 1: every pair broadcasts
        shape = base[int(rng.integers(0, len(base) + 1)):]
        shape = tuple(1 if rng.random() < 0.15 else s for s in shape)
        a = rng.standard_normal(shape)
        leaves.append((mg.tensor(a, requires_grad=True), T(a)))
    vals = list(leaves)
    n_inputs = len(vals)  # matmul steps append their weights to leaves, not to vals
    trace = []
    for _ in range(n_steps):
        if rng.random() < 0.12:
            r = step_matmul(rng, vals, leaves)
        else:
            r = STEPS[rng.integers(len(STEPS))](rng, vals)
        if r is None:
            continue
        name, m, t = r
        trace.append(f"{name}->{tuple(m.shape)}")
        assert tuple(m.shape) == tuple(t.shape), trace
        np.testing.assert_allclose(to_np(m), t.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=str(trace))
        vals.append((m, t))
    # a random linear read-out of every value, so each one's gradient matters
    loss_m, loss_t = 0, 0
    for m, t in vals[n_inputs:] or vals:
        w = rng.standard_normal(m.shape)
        loss_m = loss_m + (m * mg.tensor(w)).sum()
        loss_t = loss_t + (t * torch.tensor(w)).sum()
    return leaves, loss_m, loss_t, trace


@pytest.mark.parametrize("seed", range(60))
def test_random_composition_values_and_gradients(seed):
    leaves, loss_m, loss_t, trace = run_program(seed)
    np.testing.assert_allclose(loss_m.item(), loss_t.item(), rtol=1e-10, atol=1e-12, err_msg=str(trace))
    loss_m.backward()
    loss_t.backward()
    for i, (m, t) in enumerate(leaves):
        gt = t.grad
        if gt is None:
            assert m.grad is None or np.all(to_np(m.grad) == 0), (i, trace)
            continue
        assert m.grad is not None, (i, trace)
        assert m.grad.shape == tuple(gt.shape) and m.grad.dtype == np.float64
        np.testing.assert_allclose(to_np(m.grad), gt.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=f"leaf {i}: {trace}")


@pytest.mark.parametrize("seed", range(8))
def test_random_composition_second_order(seed):
    leaves, loss_m, loss_t, trace = run_program(1000 + seed, n_steps=5)
    xs_m = [m for m, _ in leaves]
    xs_t = [t for _, t in leaves]
    gm = mg.grad(loss_m, xs_m, create_graph=True, allow_unused=True)
    gt = torch.autograd.grad(loss_t, xs_t, create_graph=True, allow_unused=True)
    # differentiate a scalar of the first derivatives again
    rng = np.random.default_rng(seed)
    s_m, s_t = 0, 0
    for a, b in zip(gm, gt, strict=True):
        if b is None or not b.requires_grad:
            continue
        w = rng.standard_normal(tuple(b.shape))
        s_m = s_m + (a * mg.tensor(w)).sum()
        s_t = s_t + (b * torch.tensor(w)).sum()
    # torch marks some constant first derivatives as requiring grad; minigrad records only
    # what depends on a leaf, so a constant there means torch's second derivatives are all zero
    live_m = isinstance(s_m, mg.Tensor) and s_m.requires_grad
    live_t = isinstance(s_t, torch.Tensor) and s_t.requires_grad
    hm = mg.grad(s_m, xs_m, allow_unused=True) if live_m else [None] * len(xs_m)
    ht = torch.autograd.grad(s_t, xs_t, allow_unused=True) if live_t else [None] * len(xs_t)
    for a, b in zip(hm, ht, strict=True):
        if a is None or b is None:
            for h in (a, b):
                assert h is None or np.all(to_np(h) == 0), trace
            continue
        np.testing.assert_allclose(to_np(a), b.numpy(), rtol=1e-8, atol=1e-10, err_msg=str(trace))


# -- targeted comparisons where conventions could differ ---------------------------------------------

def test_ties_match_torch_amax_and_maximum():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    xm, xt = mg.tensor(a, requires_grad=True), T(a)
    (xm.max(axis=1) * mg.tensor(np.array([1.0, 2.0]))).sum().backward()
    (torch.amax(xt, dim=1) * torch.tensor([1.0, 2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy())
    b = np.array([3.0, 1.0, 2.0])
    ym, yt = mg.tensor(b, requires_grad=True), T(b)
    xm.grad = None
    xt.grad = None
    mg.maximum(xm, ym).sum().backward()
    torch.maximum(xt, yt).sum().backward()
    np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy())
    np.testing.assert_allclose(to_np(ym.grad), yt.grad.numpy())


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((4, 2, 3), (3, 5)),
                                    ((2, 1, 2, 3), (3, 3, 4)), ((3,), (2, 3, 4))])
def test_matmul_matches_torch(sa, sb):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    am, bm, at, bt = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True), T(a), T(b)
    om, ot = am @ bm, at @ bt
    np.testing.assert_allclose(to_np(om), ot.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(om.shape)
    (om * mg.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(am.grad), at.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(bm.grad), bt.grad.numpy(), rtol=1e-12)


def test_pow_gradient_at_zero_base_matches_torch():
    x, y = np.array([0.0, 0.0, 2.0]), np.array([2.0, 0.5, 3.0])
    xm, ym, xt, yt = mg.tensor(x, requires_grad=True), mg.tensor(y, requires_grad=True), T(x), T(y)
    with np.errstate(divide="ignore"):  # d/dx x**0.5 at 0 is inf, in both
        (xm ** ym).sum().backward()
    (xt ** yt).sum().backward()
    np.testing.assert_allclose(to_np(ym.grad), yt.grad.numpy())
    np.testing.assert_allclose(to_np(xm.grad)[[0, 2]], xt.grad.numpy()[[0, 2]])
