"""RMSprop, Adagrad and the schedulers of issue 33 against PyTorch: parameters over 25 steps in
float64 to 1e-10, learning-rate sequences exactly (==), and optimizer and scheduler state
through state_dict(), mg.save and mg.load."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

SHAPES = [(4, 3), (3,)]
STEPS = 25


def _torch():
    return pytest.importorskip("torch")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s) for s in SHAPES]
    targets = [rng.standard_normal(s) for s in SHAPES]
    return inits, targets


def _loss(lib, params, targets, step):
    # a smooth loss whose gradient changes with the parameters (so state matters): sum((p - t)^2 * (1 + step/10))
    return sum((((p - lib.tensor(t)) ** 2) * (1 + step / 10)).sum() for p, t in zip(params, targets, strict=True))


def _run(lib, name, kwargs, sched=None, steps=STEPS, state=None):
    inits, targets = _data()
    params = [lib.tensor(a.copy(), requires_grad=True) for a in inits]
    opt = getattr(lib.optim, name)(params, **kwargs)
    s = sched[0](lib, opt, **sched[1]) if sched else None
    hist, lrs = [], []
    for k in range(steps):
        opt.zero_grad()
        _loss(lib, params, targets, k).backward()
        opt.step()
        if s is not None:
            s.step()
        lrs.append(opt.param_groups[0]["lr"])
        hist.append([(to_np(p) if lib is mg else p.detach().numpy()).copy() for p in params])
    return hist, lrs


OPT_CASES = [
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.3, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", OPT_CASES, ids=[f"{n}{k}" for n, k in OPT_CASES])
def test_optimizers_match_torch_over_25_steps(name, kwargs):
    torch = _torch()
    ours, _ = _run(mg, name, kwargs)
    theirs, _ = _run(torch, name, kwargs)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa, pb, rtol=1e-10, atol=1e-10, err_msg=f"{name} {kwargs} step {k + 1}")


def _sched(name):
    def make(lib, opt, **kw):
        return getattr(lib.optim.lr_scheduler, name)(opt, **kw)

    return make


SCHED_CASES = [
    ("MultiStepLR", dict(milestones=[3, 7, 7, 15], gamma=0.3)),
    ("LinearLR", dict(start_factor=0.1, total_iters=6)),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.2, total_iters=10)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30)),
    ("OneCycleLR", dict(max_lr=0.5, epochs=5, steps_per_epoch=6, anneal_strategy="linear", pct_start=0.4)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30, three_phase=True, div_factor=10.0, final_div_factor=100.0)),
]


@pytest.mark.parametrize("opt_name,opt_kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1))])
@pytest.mark.parametrize("name,kwargs", SCHED_CASES, ids=[f"{n}{k}" for n, k in SCHED_CASES])
def test_schedulers_give_torchs_lr_sequence_exactly(name, kwargs, opt_name, opt_kw):
    torch = _torch()
    ours, lr_ours = _run(mg, opt_name, opt_kw, (_sched(name), kwargs))
    theirs, lr_theirs = _run(torch, opt_name, opt_kw, (_sched(name), kwargs))
    assert lr_ours == lr_theirs  # exactly, float for float
    for a, b in zip(ours, theirs, strict=True):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa, pb, rtol=1e-10, atol=1e-10)


def test_one_cycle_cycles_momentum_and_beta1_as_torch():
    torch = _torch()
    for opt_name, key in (("SGD", "momentum"), ("Adam", "betas")):
        seqs = []
        for lib in (mg, torch):
            p = lib.zeros(2, requires_grad=True)
            opt = getattr(lib.optim, opt_name)([p], lr=0.1)
            s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=12)
            seq = []
            for _ in range(12):
                opt.step()
                s.step()
                seq.append((opt.param_groups[0]["lr"], opt.param_groups[0][key]))
            seqs.append(seq)
        assert seqs[0] == seqs[1]
    p = mg.zeros(1, requires_grad=True)
    s = mg.optim.lr_scheduler.OneCycleLR(mg.optim.SGD([p], lr=0.1), max_lr=1.0, total_steps=2)
    s.step()
    s.step()  # PyTorch allows one step past the end (it is what the loop's last step() does)
    with pytest.raises(ValueError, match="OneCycleLR: stepped 3 times, but total_steps is 2"):
        s.step()
    with pytest.raises(ValueError, match="OneCycleLR: cycle_momentum needs an optimizer with momentum or betas; "
                                         "Adagrad has neither"):
        mg.optim.lr_scheduler.OneCycleLR(mg.optim.Adagrad([p]), max_lr=1.0, total_steps=5)


PLATEAU_CASES = [
    dict(),
    dict(mode="max", factor=0.5, patience=1),
    dict(patience=2, cooldown=2, threshold=0.05, threshold_mode="abs"),
    dict(patience=0, factor=0.5, min_lr=0.02),
    dict(mode="max", threshold_mode="abs", threshold=0.1, patience=1, cooldown=1),
]


@pytest.mark.parametrize("kwargs", PLATEAU_CASES, ids=[str(k) for k in PLATEAU_CASES])
def test_reduce_lr_on_plateau_gives_torchs_lr_sequence_exactly(kwargs):
    torch = _torch()
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.9, 0.9, 0.91, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6,
               0.7, 0.8, 0.9] + [0.9] * 20
    seqs = []
    for lib in (mg, torch):
        p = lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seq = []
        for m in metrics:
            opt.step()
            s.step(m)
            seq.append((s.get_last_lr()[0], s.num_bad_epochs, s.cooldown_counter, s.best))
        seqs.append(seq)
    assert seqs[0] == seqs[1]
    assert seqs[0][-1][0] < 0.1  # it did reduce
    # a metric may be a one-element tensor (the loss itself)
    s = mg.optim.lr_scheduler.ReduceLROnPlateau(mg.optim.SGD([mg.zeros(1, requires_grad=True)], lr=0.1))
    s.step(mg.tensor(0.5))
    assert s.best == 0.5


def test_scheduler_arguments_are_checked_with_messages():
    opt = mg.optim.SGD([mg.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="ReduceLROnPlateau: factor must be < 1, got 1.5"):
        mg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="OneCycleLR: give total_steps, or both epochs and steps_per_epoch"):
        mg.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(TypeError, match=r"MultiStepLR: milestones must be ints, got \[2.5\]"):
        mg.optim.lr_scheduler.MultiStepLR(opt, milestones=[2.5])
    with pytest.raises(ValueError, match="RMSprop: invalid momentum -1"):
        mg.optim.RMSprop(opt.param_groups[0]["params"], momentum=-1)
    assert mg.optim.OneCycleLR is mg.optim.lr_scheduler.OneCycleLR
    assert mg.optim.ReduceLROnPlateau is mg.optim.lr_scheduler.ReduceLROnPlateau


RESUME_CASES = [
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True), ("MultiStepLR", dict(milestones=[4, 12], gamma=0.5))),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01), ("LinearLR", dict(start_factor=0.2, total_iters=8))),
    ("Adam", dict(lr=0.05), ("OneCycleLR", dict(max_lr=0.2, total_steps=30))),
    ("SGD", dict(lr=0.1, momentum=0.9), ("ReduceLROnPlateau", dict(patience=1, factor=0.5))),
]


@pytest.mark.parametrize("name,kwargs,sched", RESUME_CASES, ids=[c[0] + c[2][0] for c in RESUME_CASES])
def test_state_round_trips_through_save_and_load(tmp_path, name, kwargs, sched):
    """Ten steps, a checkpoint (optimizer and scheduler state_dict through mg.save / mg.load into
    new objects), ten more: the parameters and rates equal an uninterrupted run exactly."""
    inits, targets = _data()

    def make(params):
        opt = getattr(mg.optim, name)(params, **kwargs)
        return opt, getattr(mg.optim.lr_scheduler, sched[0])(opt, **sched[1])

    def steps(params, opt, s, ks):
        for k in ks:
            opt.zero_grad()
            loss = _loss(mg, params, targets, k)
            loss.backward()
            opt.step()
            s.step(loss.item()) if sched[0] == "ReduceLROnPlateau" else s.step()

    ref = [mg.tensor(a.copy(), requires_grad=True) for a in inits]
    ro, rs = make(ref)
    steps(ref, ro, rs, range(20))

    params = [mg.tensor(a.copy(), requires_grad=True) for a in inits]
    opt, s = make(params)
    steps(params, opt, s, range(10))
    path = tmp_path / "ckpt.pt"
    mg.save({"params": [p.detach() for p in params], "opt": opt.state_dict(), "sched": s.state_dict()}, path)
    ck = mg.load(path)
    params2 = [mg.tensor(p, requires_grad=True) for p in ck["params"]]
    opt2, s2 = make(params2)
    opt2.load_state_dict(ck["opt"])
    s2.load_state_dict(ck["sched"])
    steps(params2, opt2, s2, range(10, 20))
    for a, b in zip(params2, ref, strict=True):
        np.testing.assert_array_equal(to_np(a), to_np(b))
    assert opt2.param_groups[0]["lr"] == ro.param_groups[0]["lr"]
    assert s2.get_last_lr() == rs.get_last_lr()
    assert not math.isnan(opt2.param_groups[0]["lr"])
