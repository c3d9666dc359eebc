"""Optimizers and schedules against PyTorch's, step by step in float64 (to 1e-10)."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

SHAPES = [(4, 3), (3,), (2, 2, 2)]
STEPS = 6


def _grads(seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]


def _inits(seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


def run_minigrad(cls, kwargs, grads, inits, sched=None):
    params = [mg.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = cls(params, **kwargs)
    s = sched(opt) if sched else None
    hist = []
    for gs in grads:
        opt.zero_grad()
        # the gradient arrives through backward, as in training: d/dp sum(p * g) = g
        loss = sum((p * mg.tensor(g)).sum() for p, g in zip(params, gs, strict=True))
        loss.backward()
        opt.step()
        if s:
            s.step()
        hist.append([to_np(p).copy() for p in params])
    return hist, opt


def run_torch(torch, cls, kwargs, grads, inits, sched=None):
    params = [torch.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = cls(params, **kwargs)
    s = sched(opt) if sched else None
    hist = []
    for gs in grads:
        opt.zero_grad()
        for p, g in zip(params, gs, strict=True):
            p.grad = torch.from_numpy(g.copy())
        opt.step()
        if s:
            s.step()
        hist.append([p.detach().numpy().copy() for p in params])
    return hist


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=3e-2, betas=(0.3, 0.9), maximize=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch_float64(name, kwargs):
    torch = pytest.importorskip("torch")
    grads, inits = _grads(), _inits()
    ours, _ = run_minigrad(getattr(mg.optim, name), kwargs, grads, inits)
    ref = run_torch(torch, getattr(torch.optim, name), kwargs, grads, inits)
    for step, (a, b) in enumerate(zip(ours, ref, strict=True)):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-10, err_msg=f"{name} {kwargs} step {step}")


@pytest.mark.parametrize("sched_name, kwargs", [
    ("StepLR", dict(step_size=2, gamma=0.5)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=1e-3)),
])
def test_schedules_match_torch(sched_name, kwargs):
    torch = pytest.importorskip("torch")
    grads, inits = _grads(), _inits()
    ours, opt = run_minigrad(mg.optim.SGD, dict(lr=0.1, momentum=0.9), grads, inits,
                             lambda o: getattr(mg.optim.lr_scheduler, sched_name)(o, **kwargs))
    ref = run_torch(torch, torch.optim.SGD, dict(lr=0.1, momentum=0.9), grads, inits,
                    lambda o: getattr(torch.optim.lr_scheduler, sched_name)(o, **kwargs))
    for a, b in zip(ours, ref, strict=True):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-10)


@pytest.mark.parametrize("sched_name, kwargs", [
    ("StepLR", dict(step_size=3, gamma=0.1)),
    ("CosineAnnealingLR", dict(T_max=10)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("ExponentialLR", dict(gamma=0.9)),
])
def test_schedule_lrs_match_torch(sched_name, kwargs):
    torch = pytest.importorskip("torch")
    p = mg.zeros(1, requires_grad=True)
    tp = torch.zeros(1, requires_grad=True)
    opt = mg.optim.SGD([p], lr=0.5)
    topt = torch.optim.SGD([tp], lr=0.5)
    s = getattr(mg.optim.lr_scheduler, sched_name)(opt, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, sched_name)(topt, **kwargs)
    for _ in range(25):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
        opt.step()
        topt.step()
        s.step()
        ts.step()


def test_scheduler_aliases():
    assert mg.optim.StepLR is mg.optim.lr_scheduler.StepLR
    assert mg.optim.CosineAnnealingLR is mg.optim.lr_scheduler.CosineAnnealingLR


def test_lambda_lr_warmup():
    p = mg.zeros(1, requires_grad=True)
    opt = mg.optim.Adam([p], lr=1.0)
    s = mg.optim.lr_scheduler.LambdaLR(opt, lambda e: min(1.0, (e + 1) / 4))
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        s.step()
    assert lrs == [0.25, 0.5, 0.75, 1.0, 1.0]


def test_param_groups_have_their_own_lr():
    a = mg.ones(2, requires_grad=True)
    b = mg.ones(2, requires_grad=True)
    opt = mg.optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    np.testing.assert_allclose(to_np(a), 0.9, rtol=1e-6)
    np.testing.assert_allclose(to_np(b), 0.0, atol=1e-6)


def test_step_keeps_float32_grads_untouched_and_bumps_version():
    w = mg.randn(3, 3, requires_grad=True)
    (w * w).sum().backward()
    g = to_np(w.grad).copy()
    v = w._storage.version
    for cls, kw in ((mg.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.1)), (mg.optim.Adam, {}),
                    (mg.optim.AdamW, {})):
        opt = cls([w], **kw)
        opt.step()
        opt.step()
        assert w.dtype == np.float32
        np.testing.assert_array_equal(to_np(w.grad), g)
        for st in opt.state.values():
            for val in st.values():
                if hasattr(val, "dtype"):
                    assert val.dtype == np.float32
    assert w._storage.version > v


def test_parameters_without_grad_are_skipped():
    a = mg.ones(2, requires_grad=True)
    b = mg.ones(2, requires_grad=True)
    opt = mg.optim.Adam([a, b], lr=0.1)
    a.sum().backward()
    opt.step()
    assert (to_np(b) == 1).all() and (to_np(a) != 1).all()


def test_zero_grad():
    a = mg.ones(2, requires_grad=True)
    opt = mg.optim.SGD([a], lr=0.1)
    a.sum().backward()
    opt.zero_grad()
    assert a.grad is None


def test_closure_returns_loss():
    a = mg.ones(2, requires_grad=True)
    opt = mg.optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == pytest.approx(2.0)


def test_errors():
    a = mg.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="learning rate"):
        mg.optim.SGD([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        mg.optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        mg.optim.Adam([a], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        mg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="single Tensor"):
        mg.optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="leaf"):
        mg.optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="does not require grad"):
        mg.optim.SGD([mg.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="more than one"):
        mg.optim.SGD([a, a], lr=0.1)


def test_state_dict_roundtrip_continues_identically(tmp_path):
    grads, inits = _grads(), _inits()

    def make():
        params = [mg.tensor(a.copy(), requires_grad=True) for a in inits]
        return params, mg.optim.Adam(params, lr=0.01, amsgrad=True)

    def feed(params, opt, gs):
        for p, g in zip(params, gs, strict=True):
            p.grad = mg.tensor(g)
        opt.step()

    p1, o1 = make()
    for gs in grads[:3]:
        feed(p1, o1, gs)
    mg.save({"params": [p.detach() for p in p1], "opt": o1.state_dict()}, tmp_path / "ck.npz")
    for gs in grads[3:]:
        feed(p1, o1, gs)

    ck = mg.load(tmp_path / "ck.npz")
    p2, o2 = make()
    for p, saved in zip(p2, ck["params"], strict=True):
        p.data[...] = saved.data
    o2.load_state_dict(ck["opt"])
    assert o2.state[p2[0]]["step"] == 3
    for gs in grads[3:]:
        feed(p2, o2, gs)
    for a, b in zip(p1, p2, strict=True):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_cosine_reaches_eta_min():
    p = mg.zeros(1, requires_grad=True)
    opt = mg.optim.SGD([p], lr=1.0)
    s = mg.optim.CosineAnnealingLR(opt, T_max=10, eta_min=0.1)
    for _ in range(10):
        s.step()
    assert s.get_last_lr()[0] == pytest.approx(0.1)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    assert math.isclose(s.base_lrs[0], 1.0)


# -- longer runs against PyTorch: parameter groups, skipped steps, schedules, float32 ---------------

LONG_SHAPES = [(4, 3), (3,), (0, 2)]
LONG_STEPS = 40


def _long_run(lib, torch, name, kwargs, sched=None, dtype=np.float64):
    """40 steps; two parameter groups (the second with its own lr and weight decay); each
    parameter misses its gradient on about one step in five (it must then be left alone)."""
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s).astype(dtype) for s in LONG_SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in LONG_SHAPES] for _ in range(LONG_STEPS)]
    has = rng.random((LONG_STEPS, len(LONG_SHAPES))) > 0.2
    if lib == "mg":
        params = [mg.tensor(a, requires_grad=True) for a in inits]
        optim, wrap = mg.optim, mg.tensor
    else:
        params = [torch.tensor(a, requires_grad=True) for a in inits]
        optim, wrap = torch.optim, torch.tensor
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": 0.003, "weight_decay": 0.2}]
    opt = getattr(optim, name)(groups, **kwargs)
    s = getattr(optim.lr_scheduler, sched[0])(opt, **sched[1]) if sched else None
    for t in range(LONG_STEPS):
        opt.zero_grad()
        for p, g, h in zip(params, grads[t], has[t], strict=True):
            if h:
                p.grad = wrap(g.copy())
        opt.step()
        if s:
            s.step()
    return [to_np(p) if lib == "mg" else p.detach().numpy() for p in params]


LONG_CASES = [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.5, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.6), eps=1e-3)),
]


@pytest.mark.parametrize("sched", [None, ("StepLR", dict(step_size=7, gamma=0.5)),
                                   ("CosineAnnealingLR", dict(T_max=13, eta_min=1e-4))],
                         ids=["constant", "StepLR", "cosine"])
@pytest.mark.parametrize("name, kwargs", LONG_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LONG_CASES)])
def test_long_runs_match_torch(name, kwargs, sched):
    torch = pytest.importorskip("torch")
    ours = _long_run("mg", torch, name, kwargs, sched)
    ref = _long_run("torch", torch, name, kwargs, sched)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name, kwargs", LONG_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LONG_CASES)])
def test_float32_runs_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    ours = _long_run("mg", torch, name, kwargs, dtype=np.float32)
    ref = _long_run("torch", torch, name, kwargs, dtype=np.float32)
    for a, b in zip(ours, ref, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(momentum=0.9), dict(momentum=0.9, nesterov=True), dict(lr=0.1),
                                    dict(weight_decay=0.1)])
def test_sgd_scalar_parameter_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    kwargs = {"lr": 0.1, **kwargs}
    p = mg.tensor(1.0, dtype="float64", requires_grad=True)
    tp = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    opt, topt = mg.optim.SGD([p], **kwargs), torch.optim.SGD([tp], **kwargs)
    for g in (1.0, -0.5, 2.0, 0.25):
        p.grad = mg.tensor(g, dtype="float64")
        tp.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        topt.step()
        assert abs(p.item() - tp.item()) < 1e-12


@pytest.mark.parametrize("kwargs", [dict(momentum=0.9, weight_decay=0.1), dict(momentum=0.9, maximize=True),
                                    dict(momentum=0.9, nesterov=True, weight_decay=0.1)])
def test_sgd_scalar_parameter_momentum_with_weight_decay_or_maximize(kwargs):
    torch = pytest.importorskip("torch")
    p = mg.tensor(1.0, dtype="float64", requires_grad=True)
    tp = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    opt, topt = mg.optim.SGD([p], lr=0.1, **kwargs), torch.optim.SGD([tp], lr=0.1, **kwargs)
    for _ in range(3):
        p.grad = mg.tensor(1.0, dtype="float64")
        tp.grad = torch.tensor(1.0, dtype=torch.float64)
        opt.step()
        topt.step()
    assert abs(p.item() - tp.item()) < 1e-12  # was 0.476279 against torch's 0.388169 before the fix


def test_adam_scalar_parameter_matches_torch():
    torch = pytest.importorskip("torch")
    for cls, kw in (("Adam", dict(weight_decay=0.1, maximize=True)), ("AdamW", dict(amsgrad=True))):
        p = mg.tensor(1.0, dtype="float64", requires_grad=True)
        tp = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
        opt, topt = getattr(mg.optim, cls)([p], lr=0.1, **kw), getattr(torch.optim, cls)([tp], lr=0.1, **kw)
        for g in (1.0, -0.5, 2.0):
            p.grad = mg.tensor(g, dtype="float64")
            tp.grad = torch.tensor(g, dtype=torch.float64)
            opt.step()
            topt.step()
        assert abs(p.item() - tp.item()) < 1e-12


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_with_schedules_matches_torch(name):
    torch = pytest.importorskip("torch")
    grads, inits = _grads(), _inits()
    for sched_name, kw in (("StepLR", dict(step_size=2, gamma=0.5)), ("CosineAnnealingLR", dict(T_max=4))):
        ours, _ = run_minigrad(getattr(mg.optim, name), dict(lr=0.05), grads, inits,
                               lambda o, n=sched_name, k=kw: getattr(mg.optim.lr_scheduler, n)(o, **k))
        ref = run_torch(torch, getattr(torch.optim, name), dict(lr=0.05), grads, inits,
                        lambda o, n=sched_name, k=kw: getattr(torch.optim.lr_scheduler, n)(o, **k))
        for a, b in zip(ours, ref, strict=True):
            for pa, pb in zip(a, b, strict=True):
                np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-10)


def test_defaults_match_torch():
    torch = pytest.importorskip("torch")
    p = mg.zeros(1, requires_grad=True)
    tp = torch.zeros(1, requires_grad=True)
    for name in ("SGD", "Adam", "AdamW"):
        ours = getattr(mg.optim, name)([p]).param_groups[0]
        theirs = getattr(torch.optim, name)([tp]).param_groups[0]
        for k in ("lr", "momentum", "dampening", "nesterov", "weight_decay", "betas", "eps", "amsgrad", "maximize"):
            if k in theirs and k in ours:
                assert ours[k] == (tuple(theirs[k]) if k == "betas" else theirs[k]), (name, k)
