"""mg.compile: refusals (naming the user's line), fallback, guards, bitwise equality with eager
over whole training loops, signatures and stats, the tape, threads, and flat memory over many
replays. Every comparison runs the same loop twice from the same seed, once eager and once
compiled, and compares what each step returned and every parameter, gradient, buffer and
optimizer state after it, bit for bit. Runs on the default device (MINIGRAD_DEVICE)."""
import functools
import math
import os
import types
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from conftest import DEVICE, FAKE, line_of, load_example, run_in_threads, to_np
from minigrad import nn

HERE = os.path.abspath(__file__)
N = 30  # steps per comparison
REAL_GPU = DEVICE != "cpu" and not FAKE
SGD, Adam, AdamW = mg.optim.SGD, mg.optim.Adam, mg.optim.AdamW


# -- helpers ----------------------------------------------------------------------------------------


def _snap(v):
    """A host copy of what a step returned or a world holds (Tensors, arrays, containers)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, mg.Tensor):
        return ("T", np.array(to_np(v), copy=True))
    if mg.sparse.is_sparse(v):
        return ("S", _snap(v.values))
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return ("A", np.array(mg.backend.to_numpy(v), copy=True))
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, [_snap(x) for x in v])
    if isinstance(v, dict):
        return ("dict", [(k, _snap(x)) for k, x in v.items()])
    raise TypeError(type(v))


def _same(a, b, where):
    """Equal bit for bit (NaNs with the same payload, -0.0 apart from 0.0): the promise on the CPU
    (and on fakecuda, NumPy underneath). On a real GPU, where atomic scatter-adds may sum in another
    order, close."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape, b.shape)
        if REAL_GPU and a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6, err_msg=where)
            return
        if a.tobytes() != b.tobytes():
            bad = np.argwhere(a != b)[:3]
            raise AssertionError(f"{where}: values differ at {bad.tolist()}: eager {a[tuple(bad[0])] if len(bad) else a}, "
                                 f"compiled {b[tuple(bad[0])] if len(bad) else b}")
        return
    if isinstance(a, (tuple, list)):
        assert isinstance(b, type(a)) and len(a) == len(b), (where, a, b)
        if len(a) == 2 and isinstance(a[0], str) and a[0] == b[0]:  # (label, value)
            _same(a[1], b[1], f"{where}/{a[0]}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
        return
    assert type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))), (where, a, b)


def _world_state(w):
    """Everything a step may change: parameters, their gradients, buffers, optimizer state and
    hyper-parameters, a scheduler's counters, and any extra tensors the world lists."""
    s = []
    for j, m in enumerate(w.models):
        for k, p in m.named_parameters():
            s.append((f"model{j}.{k}", p))
            s.append((f"model{j}.{k}.grad", p.grad))
        for k, b in m.named_buffers():
            s.append((f"model{j}.{k}", b))
    for j, t in enumerate(w.tensors):
        s.append((f"tensor{j}", t))
        s.append((f"tensor{j}.grad", t.grad))
    if w.opt is not None:
        for j, st in enumerate(w.opt.state.values()):
            s.extend((f"opt.state[{j}].{k}", v) for k, v in sorted(st.items()))
        for j, g in enumerate(w.opt.param_groups):
            s.extend((f"opt.group{j}.{k}", v) for k, v in sorted(g.items()) if k != "params")
    if w.sched is not None:
        s.append(("sched", (w.sched.last_epoch, w.sched.get_last_lr())))
    return _snap(s)


def world(step, models=(), opt=None, sched=None, tensors=()):
    return types.SimpleNamespace(step=step, models=list(models), opt=opt, sched=sched, tensors=list(tensors))


def _data(i, shape=(16, 4), classes=3, dtype=np.float32):
    rng = np.random.default_rng(1000 + i)
    x = mg.tensor(rng.standard_normal(shape).astype(dtype))
    y = mg.tensor(rng.integers(0, classes, shape[0]))
    return (x, y), {}


def run_loop(build, batch=_data, n=N, between=None, compiled=False, seed=0, fallback=False):
    """Build a world from ``seed`` and run ``n`` steps; returns (per-step records, compiled step or None)."""
    mg.manual_seed(seed)
    w = build()
    step = mg.compile(w.step, fallback=fallback) if compiled else w.step
    rec = []
    for i in range(n):
        if between is not None:
            between(w, i)
        args, kwargs = batch(i)
        out = step(*args, **kwargs)
        rec.append((_snap(out), _world_state(w)))
    return rec, (step if compiled else None)


def vs_eager(build, batch=_data, n=N, between=None, captures=1, **kw):
    """The loop compiled equals the loop eager, bit for bit, step by step; returns the stats."""
    eager, _ = run_loop(build, batch, n, between, **kw)
    comp, step = run_loop(build, batch, n, between, compiled=True, **kw)
    for i, (e, c) in enumerate(zip(eager, comp, strict=True)):
        _same(e[0], c[0], f"step {i}: returned")
        _same(e[1], c[1], f"step {i}: state")
    st = step.stats
    if captures is not None:
        assert st.captures == captures, st
        assert st.fallbacks == 0, st
        assert st.replays == n - st.eager - st.captures > 0, st
    return st


def compare(case):
    """``vs_eager`` over one row of a table (its arguments), then the row's ``expect``: stats by name."""
    case = dict(case)
    expect = case.pop("expect", {})
    st = vs_eager(**case)
    got = st.as_dict()
    assert {k: got[k] for k in expect} == expect, st
    return st


def _row(name, build, **kw):
    """One loop of a table: its world (``build``) and ``vs_eager``'s other arguments, with ``expect``."""
    return pytest.param(dict(build=build, **kw), id=name)


def _train(opt, loss_of, sched=None):
    """The usual step: zero the gradients, the loss of the batch, backward, the update (and the schedule)."""
    def step(*args, **kwargs):
        opt.zero_grad()
        loss = loss_of(*args, **kwargs)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return loss

    return step


def _xent(model):
    return lambda x, y: F.cross_entropy(model(x), y)


def mlp(*extra, d_in=4, hidden=8, classes=3):
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), *extra, nn.Linear(hidden, classes))


def classifier(make_opt, make_sched=None, sched_inside=True, extra=()):
    """An MLP trained with cross-entropy; the scheduler steps inside the step or is left to ``between``."""
    def build():
        model = mlp(*extra)
        opt = make_opt(model.parameters())
        sched = make_sched(opt) if make_sched else None
        return world(_train(opt, _xent(model), sched if sched_inside else None), [model], opt, sched)
    return build


def _refused(step, args, marker, what):
    """The first call runs eagerly; the second (the capture) is refused naming this file and the
    line marked ``# marker``."""
    step(*args)
    with pytest.raises(mg.CompileError, match=what) as e:
        step(*args)
    line = line_of(marker, HERE)
    assert os.path.abspath(e.value.file) == HERE
    assert e.value.line == line
    msg = str(e.value)
    assert f"{os.path.basename(HERE)}:{line} cannot be replayed" in msg
    assert ("Move it out of the compiled function" in msg or "as an argument" in msg) and "fallback=True" in msg
    assert step.stats.captures == 0 and step.stats.eager == 1
    return e.value


# -- 1. refusals ----------------------------------------------------------------------------------


def _model_and_data():
    mg.manual_seed(0)
    model = mlp()
    (x, y), _ = _data(0)
    return model, x, y


def test_refuses_item():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        v = loss.item()  # item
        return loss * v

    e = _refused(step, (x, y), "item", r"^mg\.compile: \.item\(\) at ")
    assert e.what == ".item()"


def test_refuses_float():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        return loss * float(loss)  # float

    _refused(step, (x, y), "float", r"\.item\(\) at ")


def test_refuses_if_on_a_tensor():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        if loss < 1:  # bool
            loss = loss * 2
        return loss

    e = _refused(step, (x, y), "bool", r"bool\(\) of a tensor \(an `if` or `while` on a tensor's value\) at ")
    assert e.what.startswith("bool()")


def test_refuses_numpy():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        out = model(x)
        host = out.detach().numpy()  # numpy
        return out, host

    _refused(step, (x, y), "numpy", r"\.numpy\(\) at ")


def test_refuses_tolist():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        return loss, loss.detach().tolist()  # tolist

    _refused(step, (x, y), "tolist", r"\.tolist\(\) at ")


def test_refuses_printing_a_tensor():
    """A replay runs no Python: a print would show values only while eager and capturing."""
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        text = str(loss)  # print
        return loss, text

    _refused(step, (x, y), "print", r"printing a tensor's values \(repr/str\) at ")


def test_refuses_a_result_computed_outside_the_step():
    """A tensor an earlier op made (carried state such as an RNN's hidden state) would be read as
    the same object on every replay, while eager reads whatever the name holds then."""
    model, x, y = _model_and_data()
    state = {"h": model(x)}

    @mg.compile
    def step(x, y):
        return F.cross_entropy(model(x) + state["h"], y)  # carried

    _refused(step, (x, y), "carried", r"computed outside the step \(by op 'linear'\)")


def test_refuses_batchnorm_with_a_cumulative_average():
    """BatchNorm(momentum=None) turns num_batches_tracked into a Python number each step."""
    mg.manual_seed(0)
    bn = mg.nn.BatchNorm1d(3, momentum=None)
    x = mg.randn(8, 3)

    @mg.compile
    def step(x):
        return bn(x).sum()  # bn

    e = _refused(step, (x,), "bn", r"BatchNorm1d\(momentum=None\) in training")
    assert "num_batches_tracked" in str(e)


def test_refuses_np_asarray():
    model, x, y = _model_and_data()
    if x.is_cuda:
        pytest.skip("np.asarray of a device tensor is a TypeError before any capture (as CuPy's)")

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        return loss, np.asarray(loss.detach())  # asarray

    _refused(step, (x, y), "asarray", r"np\.asarray\(\) of a tensor \(__array__\) at ")


def test_refuses_a_new_parameter():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        scale = nn.Parameter(mg.ones(3))  # parameter
        return F.cross_entropy(model(x) * scale, y)

    e = _refused(step, (x, y), "parameter", r"creating a tensor that requires grad \(a new parameter\) at ")
    assert e.what == "creating a tensor that requires grad (a new parameter)"


def test_refuses_requires_grad_on_a_new_tensor():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        noise = mg.zeros(16, 3, requires_grad=True)  # requires_grad
        return F.cross_entropy(model(x) + noise, y)

    _refused(step, (x, y), "requires_grad", r"creating a tensor that requires grad \(a new parameter\) at ")


def test_refuses_setting_a_module_attribute():
    model, x, y = _model_and_data()
    heads = [nn.Linear(3, 3), nn.Linear(3, 3)]  # made before: only the assignment is refused

    @mg.compile
    def step(x, y):
        model.head = heads[0]  # module
        return F.cross_entropy(model.head(model(x)), y)

    e = _refused(step, (x, y), "module", r"changing a module's structure \(setting Sequential\.head\) at ")
    assert e.what == "changing a module's structure (setting Sequential.head)"


def test_refuses_a_new_linear_made_and_assigned_inside():
    """``model.head = nn.Linear(...)`` inside: the first thing a replay could not repeat is the
    new layer's parameters, refused on that same line."""
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        model.head = nn.Linear(3, 3)  # newlinear
        return F.cross_entropy(model.head(model(x)), y)

    _refused(step, (x, y), "newlinear", r"(a new parameter|changing a module's structure).* at ")


def test_refuses_add_into_an_input():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        x.add_(1.0)  # add_
        return F.cross_entropy(model(x), y)

    e = _refused(step, (x, y), "add_", r"an in-place write into argument 0 of the compiled function "
                                       r"\(shape \(16, 4\)\) at ")
    assert e.what.startswith("an in-place write into argument")


def test_refuses_setitem_into_an_input():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        x[:, 0] = 0.0  # setitem
        return F.cross_entropy(model(x), y)

    _refused(step, (x, y), "setitem", r"an in-place write into argument 0 of the compiled function "
                                      r"\(shape \(16, 4\)\) at ")


def test_refuses_augmented_assignment_into_an_input():
    model, x, y = _model_and_data()

    @mg.compile
    def step(x, y):
        x *= 2.0  # imul
        return F.cross_entropy(model(x), y)

    _refused(step, (x, y), "imul", r"an in-place write into argument 0 of the compiled function .* at ")


def test_fallback_runs_eagerly_with_one_warning():
    def build():
        model = mlp()
        opt = SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if loss.item() > 0.5:  # a Python decision on a value: this one cannot be replayed
                loss = loss * 2
            loss.backward()
            opt.step()
            return loss

        return world(step, [model], opt)

    eager, _ = run_loop(build, n=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        comp, step = run_loop(build, n=8, compiled=True, fallback=True)
    for i, (e, c) in enumerate(zip(eager, comp, strict=True)):
        _same(e, c, f"step {i}")
    mine = [w for w in caught if "mg.compile" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert issubclass(mine[0].category, RuntimeWarning)
    assert "runs eagerly" in str(mine[0].message) and ".item()" in str(mine[0].message)
    assert step.stats.as_dict() == {"eager": 1, "captures": 0, "replays": 0, "fallbacks": 7}
    assert step.tape() is None


# -- 2. guards --------------------------------------------------------------------------------------



def _sgd_world(momentum=0.9):
    def build():
        model = mlp()
        opt = SGD(model.parameters(), lr=0.1, momentum=momentum)
        return world(_train(opt, _xent(model)), [model], opt)
    return build


def _weighted_sum_world(values, lr):
    """One parameter ``w`` of ``values``, trained on ``((x w).sum(axis=1) ** 2).mean()``."""
    def build():
        w = mg.tensor(values, requires_grad=True)
        opt = SGD([w], lr=lr)
        return world(_train(opt, lambda x, *y: ((x * w).sum(axis=1) ** 2).mean()), opt=opt, tensors=[w])
    return build


def _accumulating_world():
    """A step that accumulates into ``.grad`` (no zero_grad inside)."""
    model = mlp()
    opt = SGD(model.parameters(), lr=0.01)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return world(step, [model], opt)


def _replace_weight_data(w, i):
    if i in (5, 11):
        lin = w.models[0][0]
        lin.weight.data = mg.backend.to_device(np.full(lin.weight.shape, 0.01 * i, np.float32), lin.weight.device)


def _reload_state_dict(w, i):
    m = w.models[0]
    if i == 3:
        w.saved = {k: v.detach().clone() for k, v in m.state_dict().items()}
    if i in (8, 15):
        m.load_state_dict(w.saved)


def _shrink_parameter(w, i):
    if i == 10:  # (4,) -> (1,): still broadcasts against x, but the captured program is stale
        (t,) = w.tensors
        t.data = mg.backend.to_device(np.array([0.75], np.float32), t.device)
        t.grad = None


def _freeze_first_layer(w, i):
    """Freezing the first layer between calls: the program captured with it trainable is not replayed."""
    if i == 10:
        w.models[0][0].requires_grad_(False)
        w.models[0][0].zero_grad()


def _to_float64(w, i):
    if i == 10:
        w.models[0].to(np.float64)


def _float32_then_float64(i):
    return _data(i, dtype=np.float32 if i < 10 else np.float64)


def _set_grads_by_hand(w, i):
    """``.grad`` set by hand, or cleared, between calls: the step adds into whatever it holds at the call."""
    lin = w.models[0][0]
    if i == 6:
        lin.weight.grad = mg.ones(*lin.weight.shape)
    if i == 12:
        lin.bias.grad = None
    if i == 18:
        w.opt.zero_grad()


GUARDS = [
    _row("parameter_data_replaced_same_shape_is_read_live", _sgd_world(), between=_replace_weight_data),
    _row("load_state_dict_is_seen", _sgd_world(), between=_reload_state_dict),
    _row("parameter_of_a_new_shape_captures_again", _weighted_sum_world(np.linspace(0.5, 1.5, 4, dtype=np.float32), 0.1),
         between=_shrink_parameter, captures=2,
         expect={"eager": 1}),  # the input signature did not change: the guard captured again at once
    _row("requires_grad_of_a_parameter_changed", _sgd_world(momentum=0.0), between=_freeze_first_layer, captures=2),
    _row("dtype_of_parameters_changed", _sgd_world(momentum=0.0), batch=_float32_then_float64, between=_to_float64,
         captures=2, expect={"eager": 2}),  # a new input dtype: a new signature, first call eager
    _row("grad_set_by_hand_is_read_live", _accumulating_world, between=_set_grads_by_hand),
]


@pytest.mark.parametrize("case", GUARDS)
def test_guard(case):
    compare(case)


def test_guard_load_state_dict_from_a_file_is_seen(tmp_path):
    def between(w, i):
        m = w.models[0]
        path = tmp_path / f"{id(w)}.npz"
        if i == 2:
            mg.save(m.state_dict(), str(path))
        if i == 9:
            m.load_state_dict(mg.load(str(path)))

    vs_eager(_sgd_world(), between=between)


def test_guard_grad_of_another_shape_is_refused():
    mg.manual_seed(0)
    model = mlp()
    opt = SGD(model.parameters(), lr=0.01)

    @mg.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    (x, y), _ = _data(0)
    for _ in range(4):
        step(x, y)
    assert step.stats.replays == 2
    w = model[0].weight
    with pytest.raises(ValueError, match="assigned grad has shape"):
        w.grad = mg.zeros(3, 3)
    before = to_np(w).copy()
    w.grad.data = mg.backend.to_device(np.zeros((2, 2), np.float32), w.device)  # behind the setter's back
    with pytest.raises(RuntimeError, match="replaced by one of another shape"):
        step(x, y)
    assert np.array_equal(to_np(w), before)  # the update did not run on stale gradients


@pytest.fixture
def other_device(device):
    """A device other than the default one: 'cpu' when the tests run on a CUDA device, else
    'cuda:0' (the GPU, or the CPU stand-in minigrad.testing.fakecupy for this test only)."""
    if device != "cpu":
        yield "cpu"
        return
    installed = False
    try:
        mg.backend.xp_for("cuda:0")
    except RuntimeError:
        mg.backend.use_fake_cupy()
        installed = True
    yield "cuda:0"
    if installed:
        mg.backend.use_fake_cupy(False)


def test_guard_device_change(device, other_device):
    """The model and the data move to another device and back: each device gets its own capture,
    and every step equals eager."""
    def between(w, i):
        if i == 8:
            w.models[0].to(other_device)
        if i == 16:
            w.models[0].to(device)

    def batch(i):
        (x, y), _ = _data(i)
        d = other_device if 8 <= i < 16 else device
        return (x.to(d), y.to(d)), {}

    st = vs_eager(_sgd_world(momentum=0.0), batch=batch, between=between, captures=2)
    assert st.eager == 2


def test_guard_model_moved_but_not_the_data(device, other_device):
    """The parameters move, the inputs do not: the same signature, but the program read the
    parameters on the old device. It captures again, and the capture fails as eager does."""
    mg.manual_seed(0)
    model = mlp()
    opt = SGD(model.parameters(), lr=0.1)

    @mg.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    (x, y), _ = _data(0)
    for _ in range(3):
        step(x, y)
    model.to(other_device)
    with pytest.raises(RuntimeError, match="device"):
        step(x, y)
    assert step.stats.replays == 1


# -- 3. compiled equals eager, bit for bit ---------------------------------------------------------
# Each row of EQUAL is one loop: its world (``build``), its batches, how many steps, and the stats
# expected beside the bitwise comparison ``vs_eager`` makes.

OPTIMIZERS = {
    "sgd": lambda ps: SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: SGD(ps, lr=0.05, momentum=0.9),
    "sgd_dampening": lambda ps: SGD(ps, lr=0.05, momentum=0.9, dampening=0.3),
    "sgd_nesterov": lambda ps: SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda ps: SGD(ps, lr=0.05, weight_decay=1e-2),
    "sgd_nesterov_weight_decay": lambda ps: SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-2),
    "sgd_maximize": lambda ps: SGD(ps, lr=0.01, momentum=0.5, maximize=True),
    "adam": lambda ps: Adam(ps, lr=1e-2),
    "adam_weight_decay": lambda ps: Adam(ps, lr=1e-2, weight_decay=1e-2),
    "adam_amsgrad": lambda ps: Adam(ps, lr=1e-2, amsgrad=True),
    "adamw": lambda ps: AdamW(ps, lr=1e-2),
    "adamw_amsgrad": lambda ps: AdamW(ps, lr=1e-2, amsgrad=True, betas=(0.8, 0.99)),
}

SCHEDULERS = {
    "steplr": lambda o: mg.optim.lr_scheduler.StepLR(o, step_size=4, gamma=0.5),
    "cosine": lambda o: mg.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-3),
    "exponential": lambda o: mg.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "lambda": lambda o: mg.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (1 + e)),
}


def _sched_by_hand(w, i):
    if i % 3 == 2:  # stepped by hand, every third call
        w.sched.step()


def _lr_by_hand(w, i):
    for g in w.opt.param_groups:
        g["lr"] = 0.05 / (1 + i) if i % 4 else 0.0


def _momentum_and_betas_by_hand(w, i):
    for g in w.opt.param_groups:
        if "momentum" in g:
            g["momentum"] = 0.9 if i < 10 else 0.5 if i < 20 else 0.0
            g["nesterov"] = 10 <= i < 20
        else:
            g["betas"] = (0.9, 0.999) if i < 15 else (0.5, 0.9)


def _float64_mlp():
    model = mlp().to(np.float64)
    opt = Adam(model.parameters(), lr=1e-2)
    return world(_train(opt, _xent(model)), [model], opt)


def _dropout_functional():
    """F.dropout with a Python-scalar p (part of the signature) beside nn.Dropout."""
    model = mlp(nn.Dropout(0.5))
    opt = Adam(model.parameters(), lr=1e-2)
    return world(_train(opt, lambda x, y, p: F.cross_entropy(model(F.dropout(x, p)), y)), [model], opt)


def _dropout_p_batch(i):
    (x, y), _ = _data(i)
    return (x, y, 0.2 if i < 15 else 0.4), {}


def _randn_inside():
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        noise = mg.randn(*x.shape) * 0.1 + mg.rand(x.shape[0], 1)
        perm = mg.randint(0, 2, size=(x.shape[0],))
        loss = F.cross_entropy(model(x + noise), y) + (perm * 0).sum()
        loss.backward()
        opt.step()
        return loss, noise

    return world(step, [model], opt)


def _batchnorm_mlp():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    return world(_train(opt, _xent(model)), [model], opt)


def _conv2d_and_pooling():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 4, 3, stride=1), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(4, 3))
    opt = AdamW(model.parameters(), lr=1e-2)
    return world(_train(opt, _xent(model)), [model], opt)


class _LayersNet(nn.Module):
    """Conv1d and pooling with padding (max with its indices), adaptive pooling, the activations
    (GELU exact and tanh, SiLU, Sigmoid, Softmax), in one model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 4, 3, padding=2, dilation=2)
        self.conv2 = nn.Conv2d(1, 2, 3, padding=1, stride=2)
        self.lin = nn.Linear(4 * 2 + 2 * 2 * 2, 6)
        self.gelu, self.gelu_tanh, self.silu = nn.GELU(), nn.GELU(approximate="tanh"), nn.SiLU()

    def forward(self, a, b):
        h = self.gelu(self.conv1(a))
        h, where = F.max_pool1d(h, 3, stride=2, padding=1, return_indices=True)
        h = F.avg_pool1d(F.pad(h, (1, 0)), 2) + 0.0 * where.astype(h.dtype).sum()
        g = self.silu(self.conv2(b))
        g = F.max_pool2d(g, 3, stride=2, padding=1) + F.avg_pool2d(g, 3, stride=1, padding=1,
                                                        count_include_pad=False)[..., ::2, ::2]
        g = F.adaptive_avg_pool2d(g, (2, 2))
        z = mg.concatenate([h.reshape(h.shape[0], -1), g.reshape(g.shape[0], -1)], axis=1)
        return self.gelu_tanh(self.lin(z))


def _layers_and_losses():
    """_LayersNet trained on every loss at once."""
    model = _LayersNet()
    opt = Adam(model.parameters(), lr=1e-2)

    def loss_of(a, b, y, t):
        out = model(a, b)
        return (F.cross_entropy(out[:, :3], y) + F.nll_loss(F.log_softmax(out[:, 3:], dim=1), y)
                + F.binary_cross_entropy_with_logits(out[:, :3], t) + F.mse_loss(F.sigmoid(out), F.softmax(out, dim=1))
                + F.tanh(out).mean() + F.relu(out).mean())

    return world(_train(opt, loss_of), [model], opt)


def _layers_batch(i):
    rng = np.random.default_rng(i)
    f = np.float32
    return (mg.tensor(rng.standard_normal((5, 2, 8)).astype(f)), mg.tensor(rng.standard_normal((5, 1, 7, 7)).astype(f)),
            mg.tensor(rng.integers(0, 3, 5)), mg.tensor((rng.random((5, 3)) < 0.5).astype(f))), {}


_TABLE = np.linspace(0.5, 1.5, 3).astype(np.float32)


def _tensors_made_inside():
    """mg.tensor of a host constant, of a list and of an intermediate, factories, and a tensor
    made in the step then written in place: made again on each replay, as eager makes them."""
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        weights = mg.tensor(_TABLE)                      # a copy of a host constant
        weights *= 2.0                                   # written in place: the next call starts again
        shift = mg.tensor([[0.1, -0.1, 0.0]])            # from a list
        frozen = mg.tensor(logits.detach())              # a copy of an intermediate
        frozen += 1.0
        buf = mg.zeros(x.shape[0], 3)
        buf[:, 1] = logits[:, 1].detach()
        buf.add_(mg.ones_like(buf) * mg.arange(3).astype(buf.dtype) + mg.full((1, 3), 0.5))
        loss = F.cross_entropy(logits * weights + shift, y) + 1e-3 * (frozen * buf).mean()
        loss.backward()
        opt.step()
        return loss, weights, frozen, buf

    return world(step, [model], opt)


class _Attention(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.d = d

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        a = F.softmax(mg.einsum("bqd,bkd->bqk", q, k) / math.sqrt(self.d), dim=-1)
        return self.o(mg.einsum("bqk,bkd->bqd", a, v))


def _einsum_attention():
    model = _Attention()
    opt = Adam(model.parameters(), lr=1e-2)
    return world(_train(opt, lambda x, y: F.mse_loss(model(x), y)), [model], opt)


def _attention_batch(i):
    rng = np.random.default_rng(i)
    return (mg.tensor(rng.standard_normal((2, 5, 8)).astype(np.float32)),
            mg.tensor(rng.standard_normal((2, 5, 8)).astype(np.float32))), {}


def _embedding_and_layernorm():
    emb, norm, head = nn.Embedding(10, 8), nn.LayerNorm(8), nn.Linear(8, 3)
    opt = AdamW(list(emb.parameters()) + list(norm.parameters()) + list(head.parameters()), lr=1e-2)
    return world(_train(opt, lambda tokens, y: F.cross_entropy(head(norm(emb(tokens)).mean(axis=1)), y)),
                 [emb, norm, head], opt)


def _tokens_batch(i):
    rng = np.random.default_rng(i)
    return (mg.tensor(rng.integers(0, 10, (6, 5))), mg.tensor(rng.integers(0, 3, 6))), {}


def _sparse_matmul_and_sum():
    rng = np.random.default_rng(7)
    idx = np.array([[0, 1, 1, 2, 3, 3], [2, 0, 5, 1, 4, 0]])
    s = mg.sparse.coo_tensor(idx, rng.standard_normal(6).astype(np.float32), (4, 6), requires_grad=True)
    a = mg.sparse.coo_tensor(idx, rng.standard_normal(6).astype(np.float32), (4, 6))  # a constant
    w = mg.tensor(rng.standard_normal((6, 3)).astype(np.float32), requires_grad=True)
    opt = SGD([s.values, w], lr=0.05, momentum=0.9)

    def loss_of(x, y):
        h = mg.sparse.matmul(s, w) + mg.sparse.matmul(a, x)   # sparse @ dense, both layouts
        col = mg.sparse.sum(s, axis=0).to_dense()              # sparse sum: a sparse (6,)
        return F.cross_entropy(h, y) + (col * col).sum() * 0.01 + mg.sparse.sum(s) * 0.1

    return world(_train(opt, loss_of), opt=opt, tensors=[s.values, w])


def _sparse_csr_matmul():
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((4, 6)) * (rng.random((4, 6)) < 0.4)
    s = mg.tensor(dense.astype(np.float32)).to_sparse_csr()
    w = mg.tensor(rng.standard_normal((6, 3)).astype(np.float32), requires_grad=True)
    opt = Adam([w], lr=1e-2)
    return world(_train(opt, lambda x, y: F.cross_entropy(mg.sparse.matmul(s, w * x), y)), opt=opt, tensors=[w])


def _sparse_batch(i):
    rng = np.random.default_rng(i)
    return (mg.tensor(rng.standard_normal((6, 3)).astype(np.float32)), mg.tensor(rng.integers(0, 3, 4))), {}


class ScaledTanh(mg.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        y = (x * s).tanh()
        ctx.save_for_backward(x, s, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, s, y = ctx.saved_tensors
        d = g * (1 - y * y)
        return d * s, (d * x).sum(axis=0)


def _autograd_function():
    lin, head = nn.Linear(4, 8), nn.Linear(8, 3)
    s = mg.tensor(np.linspace(0.5, 1.5, 8, dtype=np.float32), requires_grad=True)
    opt = Adam(list(lin.parameters()) + [s] + list(head.parameters()), lr=1e-2)
    return world(_train(opt, lambda x, y: F.cross_entropy(head(ScaledTanh.apply(lin(x), s)), y)), [lin, head], opt,
                 tensors=[s])


def _inplace_ops_on_intermediates():
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)
    lin1, lin2 = model[0], model[2]

    def step(x, y):
        opt.zero_grad()
        h = lin1(x)
        h.mul_(2.0)
        h[:, 0] = 0.0
        h += 0.5
        h.clamp_(min=0.0)
        h[1:3] *= 3.0  # through a view
        loss = F.cross_entropy(lin2(h), y)
        loss.backward()
        opt.step()
        return loss, h

    return world(step, [model], opt)


def _inplace_on_a_no_grad_buffer():
    """A running average kept by hand in a plain tensor (read live, written in place)."""
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05)
    avg = mg.zeros(())
    count = mg.zeros((), dtype=np.int64)

    train = _train(opt, _xent(model))

    def step(x, y):
        loss = train(x, y)
        with mg.no_grad():
            avg.mul_(0.9).add_(loss.detach() * 0.1)
            count.add_(1)
        return loss

    return world(step, [model], opt, tensors=[avg, count])


_ROWS = np.array([0, 2, 2, 5])


def _constant_index_array():
    """x[np.array(...)] inside the step: backward reads the index array (saved by the op) again."""
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)
    return world(_train(opt, lambda x, y: F.cross_entropy(model(x)[_ROWS], y[_ROWS])), [model], opt)


def _inplace_write_into_a_grad():
    """Gradients scaled in place between backward and the update (as a loss-scale unscaling does)."""
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        (loss * 8.0).backward()
        for p in model.parameters():
            p.grad.div_(8.0)
        opt.step()
        return loss

    return world(step, [model], opt)


def _clip_grad_norm(norm_type):
    def build():
        model = mlp()
        opt = SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            total = mg.nn.utils.clip_grad_norm_(model.parameters(), 0.3, norm_type=norm_type)
            opt.step()
            return loss, total

        return world(step, [model], opt)
    return build


def _some_clip_batch(i):  # some steps clip, some do not
    (x, y), _ = _data(i)
    return (x * (0.05 if i % 3 else 4.0), y), {}


def _clip_grad_value():
    model = mlp()
    opt = Adam(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        mg.nn.utils.clip_grad_value_(model.parameters(), 0.05)
        opt.step()
        return loss

    return world(step, [model], opt)


def _mg_grad_with_a_manual_update():
    model = mlp()
    params = list(model.parameters())

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        grads = mg.grad(loss, params)
        with mg.no_grad():
            for p, g in zip(params, grads, strict=True):
                p -= 0.1 * g
        return loss, grads

    return world(step, [model])


def _gradient_penalty():
    """A gradient penalty: mg.grad with create_graph=True, then backward through it."""
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = Adam(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        (gx,) = mg.grad(loss, [x], create_graph=True)
        total = loss + (gx * gx).sum()
        total.backward()
        opt.step()
        return total, gx

    return world(step, [model], opt)


def _inputs_require_grad(i):
    (x, y), _ = _data(i)
    return (x.requires_grad_(), y), {}


def _backward_of_a_gradient():
    w = mg.tensor(np.linspace(-1, 1, 4, dtype=np.float32), requires_grad=True)
    opt = SGD([w], lr=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = ((x * w).tanh().sum(axis=1) ** 2).mean()
        (g,) = mg.grad(loss, [w], create_graph=True)
        (g * g).sum().backward()
        opt.step()
        return loss, g

    return world(step, opt=opt, tensors=[w])


def _penalty_on_recorded_grads():
    """backward(create_graph=True) sets each .grad to a recorded tensor; the step reads them, and
    the optimizer steps on them."""
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward(create_graph=True)
        penalty = mg.stack([(p.grad * p.grad).sum() for p in model.parameters()]).sum()
        opt.step()
        return loss, penalty

    return world(step, [model], opt)


def _grad_assigned_inside():
    model = mlp()
    opt = Adam(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        for p in model.parameters():
            p.grad = p.grad * 0.5 + 0.01
        model[2].bias.grad = None  # this one is not updated
        opt.step()
        return loss

    return world(step, [model], opt)


def _target_network():
    """A target network updated from the trained one (an exponential moving average of its
    parameters, read through .detach()) inside the step."""
    model, target = mlp(), mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y) + 0.1 * F.mse_loss(model(x), target(x).detach())
        loss.backward()
        opt.step()
        with mg.no_grad():
            for p, q in zip(model.parameters(), target.parameters(), strict=True):
                q.mul_(0.9).add_(p.detach() * 0.1)
        return loss

    return world(step, [model, target], opt)


@functools.cache
def _example(name):
    return load_example(name)


@functools.cache
def _char_text():
    return _example("char_transformer").load_text()


def _char_transformer():
    """examples/char_transformer.py's training step (nanoGPT's model: token and position embeddings
    with weight tying, causal attention by split/view/transpose and masked_fill of a tril buffer,
    dropout, GELU, LayerNorm, clip_grad_norm_, AdamW with two parameter groups, cosine schedule
    stepped inside)."""
    ex = _example("char_transformer")
    vocab, _, _ = _char_text()
    model = ex.CharTransformer(len(vocab), context=16, d_model=32, n_heads=4, n_layers=1)
    decay = [p for n, p in model.named_parameters() if n.endswith("weight") and p.ndim == 2]
    other = [p for n, p in model.named_parameters() if not (n.endswith("weight") and p.ndim == 2)]
    opt = AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                lr=3e-3, betas=(0.9, 0.98))
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=N)

    def step(x, y):
        opt.zero_grad()
        loss = ex.loss_of(model, x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return loss

    return world(step, [model], opt, sched)


def _char_batch(i):
    ex = _example("char_transformer")
    x, y = ex.batches(_char_text()[1], 16, 4, np.random.default_rng(i))
    return (mg.tensor(x), mg.tensor(y)), {}


def _digits_cnn():
    """examples/cnn_digits.py's model (conv, padding, max pooling) with its AdamW and cosine schedule."""
    ex = _example("cnn_digits")
    model = ex.DigitsCNN(c1=8, c2=8)
    opt = AdamW(model.parameters(), lr=ex.LR, weight_decay=1e-4)
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=N)
    return world(_train(opt, _xent(model), sched), [model], opt, sched)


def _returning(kind):
    """A step that returns a tuple, a dict, a list with None, or None."""
    def build():
        model = mlp()
        opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            if kind == "tuple":
                return loss, logits, (logits.argmax(axis=1) == y).astype(np.float32).mean()
            if kind == "dict":
                return {"loss": loss, "logits": logits, "n": 16, "name": "ok"}
            if kind == "list":
                return [loss, None, x]
            return None

        return world(step, [model], opt)
    return build


def _scalar_arguments():
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y, scale, smooth=False):
        opt.zero_grad()
        loss = F.cross_entropy(model(x * scale), y)
        if smooth:
            loss = loss + 0.1 * (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return world(step, [model], opt)


_SCALES = [0.5] * 5 + [2.0] * 5 + [0.5] * 5 + [2.0, 0.5] * 8


def _scalar_batch(i):
    (x, y), _ = _data(i)
    return (x, y, _SCALES[i]), {"smooth": i >= 20}


def _keyword_arguments():
    model = mlp()
    opt = Adam(model.parameters(), lr=1e-2)

    def step(*, inputs, target, weight=1.0):
        opt.zero_grad()
        loss = F.cross_entropy(model(inputs), target) * weight
        loss.backward()
        opt.step()
        return {"loss": loss}

    return world(step, [model], opt)


def _keyword_batch(i):
    (x, y), _ = _data(i)
    return (), {"target": y, "inputs": x, "weight": 0.5}


def _container_arguments():
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05)
    return world(_train(opt, lambda batch, extra: F.cross_entropy(model(batch["x"] + extra[0]), batch["y"])),
                 [model], opt)


def _container_batch(i):
    (x, y), _ = _data(i)
    shift = mg.backend.to_device(np.full((4,), 0.01 * i, np.float32), x.device)
    return ({"x": x, "y": y}, [mg.tensor(shift)]), {}


EQUAL = [
    *(_row(f"optimizer-{o}", classifier(OPTIMIZERS[o])) for o in OPTIMIZERS),
    *(_row(f"scheduler-{o}-{s}-{where}", classifier(OPTIMIZERS[o], SCHEDULERS[s], sched_inside=where == "inside"),
           between=None if where == "inside" else _sched_by_hand, expect={"replays": N - 2})
      for o in ("sgd_momentum", "adamw") for s in SCHEDULERS for where in ("inside", "outside")),
    *(_row(f"lr_changed_by_hand-{o}", classifier(OPTIMIZERS[o]), between=_lr_by_hand) for o in ("sgd_momentum", "adam")),
    *(_row(f"momentum_and_betas_changed_by_hand-{o}", classifier(OPTIMIZERS[o]), between=_momentum_and_betas_by_hand)
      for o in ("sgd_momentum", "adam")),
    _row("float64_model", _float64_mlp, batch=lambda i: _data(i, dtype=np.float64)),
    _row("dropout_draws_the_same_masks", classifier(OPTIMIZERS["sgd_momentum"], extra=(nn.Dropout(0.3),)),
         expect={"replays": N - 2}),
    _row("dropout_functional_with_p_as_an_argument", _dropout_functional, batch=_dropout_p_batch, captures=2),
    _row("randn_inside_the_step", _randn_inside),
    _row("batchnorm_running_statistics", _batchnorm_mlp),
    _row("conv2d_and_pooling", _conv2d_and_pooling, batch=lambda i: _data(i, shape=(6, 1, 8, 8)), n=12),
    _row("more_layers_activations_and_losses", _layers_and_losses, batch=_layers_batch, n=12),
    _row("tensors_made_inside_the_step", _tensors_made_inside),
    _row("einsum_attention", _einsum_attention, batch=_attention_batch),
    _row("embedding_and_layernorm", _embedding_and_layernorm, batch=_tokens_batch),
    _row("sparse_matmul_and_sum", _sparse_matmul_and_sum, batch=_sparse_batch),
    _row("sparse_csr_matmul", _sparse_csr_matmul, batch=_sparse_batch),
    _row("autograd_function", _autograd_function),
    _row("inplace_ops_on_intermediates", _inplace_ops_on_intermediates),
    _row("inplace_on_a_no_grad_buffer_inside_the_step", _inplace_on_a_no_grad_buffer),
    _row("indexing_with_a_constant_index_array", _constant_index_array),
    _row("inplace_write_into_a_grad_inside_the_step", _inplace_write_into_a_grad),
    *(_row(f"clip_grad_norm_inside-{t}", _clip_grad_norm(t), batch=_some_clip_batch) for t in (2.0, 1.0, math.inf)),
    _row("clip_grad_value_inside", _clip_grad_value),
    _row("mg_grad_inside_with_a_manual_update", _mg_grad_with_a_manual_update),
    _row("create_graph_double_backward_inside", _gradient_penalty, batch=_inputs_require_grad),
    _row("backward_with_create_graph_inside", _backward_of_a_gradient),
    _row("backward_create_graph_then_a_penalty_on_the_gradients", _penalty_on_recorded_grads),
    _row("grad_assigned_inside_the_step", _grad_assigned_inside),
    _row("detach_of_a_parameter_inside_the_step", _target_network),
    _row("example_char_transformer_training_step", _char_transformer, batch=_char_batch, n=12),
    _row("example_digits_cnn_training_step", _digits_cnn,
         batch=lambda i: _data(i, shape=(16, 1, 8, 8), classes=10), n=12),
    *(_row(f"returns_{kind}", _returning(kind)) for kind in ("tuple", "dict", "list", "none")),
    # signatures (0.5, False), (2.0, False), (2.0, True), (0.5, True): each eager once, captured once
    _row("python_scalar_arguments_make_new_signatures", _scalar_arguments, batch=_scalar_batch, captures=None,
         expect={"eager": 4, "captures": 4, "replays": N - 8, "fallbacks": 0}),
    _row("keyword_arguments", _keyword_arguments, batch=_keyword_batch),
    _row("array_and_nested_container_arguments", _container_arguments, batch=_container_batch),
]


@pytest.mark.parametrize("case", EQUAL)
def test_compiled_equals_eager(case):
    compare(case)


def test_batchnorm_eval_step_after_training():
    """Two compiled steps on one model: a training step and an evaluation step (eval mode set
    inside it, under no_grad), interleaved."""
    def build():
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
        opt = Adam(model.parameters(), lr=1e-2)

        def train(x, y):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        def evaluate(x):
            model.eval()
            with mg.no_grad():
                return model(x)

        return world((train, evaluate), [model], opt)

    recs = []
    for compiled in (False, True):
        mg.manual_seed(0)
        w = build()
        train, evaluate = (mg.compile(f) for f in w.step) if compiled else w.step
        rec = []
        for i in range(N):
            (x, y), _ = _data(i)
            rec.append((_snap(train(x, y)), _snap(evaluate(x)), _world_state(w)))
        recs.append(rec)
    for i, (e, c) in enumerate(zip(*recs, strict=True)):
        _same(e, c, f"step {i}")
    assert train.stats.replays == N - 2 and evaluate.stats.replays == N - 2



def test_returned_tensors_hold_the_replayed_values():
    mg.manual_seed(0)
    model = mlp()
    opt = SGD(model.parameters(), lr=0.1)

    @mg.compile
    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return loss, logits

    (x, y), _ = _data(0)
    outs = []
    for _ in range(6):
        loss, logits = step(x, y)
        outs.append((loss, logits))
    assert step.stats.replays == 4
    # each call returned its own arrays: the earlier results were not overwritten by later replays
    losses = [float(to_np(o[0])) for o in outs]
    assert len(set(losses)) == len(losses)
    assert outs[-1][0] is not outs[-2][0] and outs[-1][1].data is not outs[-2][1].data
    assert not outs[-1][0].requires_grad or outs[-1][0].grad_fn is None



# -- 4. signatures and stats -----------------------------------------------------------------------


def _shape_change_batch(i):
    return _data(i, shape=(16, 4) if i < 10 or i >= 20 else (8, 4))


def _returning_the_input_grad():
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05)

    train = _train(opt, _xent(model))

    def step(x, y):
        return train(x, y), x.grad

    return world(step, [model], opt)


def _input_requires_grad_for_a_while(i):
    (x, y), _ = _data(i)
    return (x.requires_grad_(10 <= i < 20), y), {}


def _dtype_change_batch(i):
    (x, _), _ = _data(i, dtype=np.float32 if i % 10 < 5 else np.float64)
    return (x,), {}


SIGNATURES = [
    _row("new_shape_captures_again", _sgd_world(), batch=_shape_change_batch, captures=2,
         expect={"eager": 2, "captures": 2, "replays": N - 4, "fallbacks": 0}),
    _row("requires_grad_of_an_input_changes_the_signature", _returning_the_input_grad,
         batch=_input_requires_grad_for_a_while, captures=2, expect={"eager": 2}),
    _row("dtype_of_an_input_changes_the_signature", _weighted_sum_world(np.linspace(-1, 1, 4), 0.01),  # float64
         batch=_dtype_change_batch, captures=2, expect={"eager": 2, "replays": N - 4}),
]


@pytest.mark.parametrize("case", SIGNATURES)
def test_signature(case):
    compare(case)


def test_stats_counts_and_repr():
    mg.manual_seed(0)
    model = mlp()
    step = mg.compile(lambda x: model(x).sum())
    (x, _), _ = _data(0)
    assert step.stats.as_dict() == {"eager": 0, "captures": 0, "replays": 0, "fallbacks": 0}
    step(x)
    assert step.stats.eager == 1 and step.stats["captures"] == 0
    step(x)
    assert step.stats.captures == 1
    for _ in range(3):
        step(x)
    assert step.stats["replays"] == 3
    assert "replays=3" in repr(step.stats) and "mg.compile" in repr(step)


def test_decorator_forms():
    @mg.compile
    def a(x):
        return x * 2

    @mg.compile(fallback=True)
    def b(x):
        return x * 3

    assert isinstance(a, mg.compile(lambda: None).__class__) and a.fallback is False and b.fallback is True
    assert a.__name__ == "a" and b.__wrapped__ is b.fn
    x = mg.ones(3)
    for _ in range(4):
        np.testing.assert_array_equal(to_np(a(x)), 2 * np.ones(3, np.float32))
        np.testing.assert_array_equal(to_np(b(x)), 3 * np.ones(3, np.float32))
    with pytest.raises(TypeError, match="expected a function"):
        mg.compile(3)


# -- 5. the tape ----------------------------------------------------------------------------------


def test_tape_lists_the_program_and_draws():
    mg.manual_seed(0)
    model = mlp(nn.Dropout(0.2))
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)

    @mg.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    assert step.tape() is None
    (x, y), _ = _data(0)
    for _ in range(3):
        step(x, y)
    tape = step.tape()
    assert len(tape) > 0 and len(list(tape)) == len(tape)
    text = repr(tape)
    for name in ("linear", "relu", "cross_entropy", "cross_entropy_backward", "matmul", "_into_grad",
                 "_dropout_mask", "_zero_grad", "SGD._update"):
        assert name in text, name
    assert text.startswith("compiled ") and "inputs: a0, a1" in text and "read live: T" in text
    assert "return" in text.splitlines()[-1]
    dot = mg.viz.dot_source(tape)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert "cross_entropy" in dot and "->" in dot and "a0" in dot


# -- 6. threads -------------------------------------------------------------------------------------


def test_two_threads_each_with_its_own_compiled_step():
    """Two models trained at once in two threads, each with its own compiled step (no random
    draws inside: minigrad's generator is shared by threads), equal to the same loops run eagerly."""
    def build(seed):
        mg.manual_seed(seed)
        model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
        opt = Adam(model.parameters(), lr=1e-2) if seed else SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return world(step, [model], opt)

    steps = 60
    batches = [_data(i)[0] for i in range(steps)]

    def train(w, step, out):
        def f():
            for x, y in batches:
                out.append((_snap(step(x, y)), _world_state(w)))
        return f

    eager = {}
    for seed in (0, 1):
        w = build(seed)
        eager[seed] = []
        train(w, w.step, eager[seed])()
    worlds = {seed: build(seed) for seed in (0, 1)}
    steps_c = {seed: mg.compile(w.step) for seed, w in worlds.items()}
    got = {0: [], 1: []}
    run_in_threads(*(train(worlds[s], steps_c[s], got[s]) for s in (0, 1)))
    for s in (0, 1):
        assert len(got[s]) == steps
        for i, (e, c) in enumerate(zip(eager[s], got[s], strict=True)):
            _same(e, c, f"thread {s} step {i}")
        assert steps_c[s].stats.replays == steps - 2


def test_eager_thread_beside_a_capturing_thread():
    """One thread captures and replays while another runs eager ops: the other thread's ops are
    not written into the capture, and its results are its own."""
    mg.manual_seed(0)
    model = mlp()
    opt = SGD(model.parameters(), lr=0.05)

    def body(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = mg.compile(body)
    batches = [_data(i)[0] for i in range(40)]
    errors = []

    def other():
        rng = np.random.default_rng(5)
        for _ in range(300):
            a = rng.standard_normal((5, 5))
            w = mg.tensor(a, requires_grad=True)
            (w @ w).sum().backward()
            if not np.allclose(to_np(w.grad), (np.ones((5, 5)) @ a.T + a.T @ np.ones((5, 5)))):
                errors.append("wrong gradient in the eager thread")

    def trainer():
        for x, y in batches:
            step(x, y)

    run_in_threads(trainer, other)
    assert not errors
    assert step.stats.replays == 38
    alone = mg.compile(body)  # the same step captured with no other thread running
    for x, y in batches[:2]:
        alone(x, y)
    assert list(step.tape()) == list(alone.tape())  # nothing of the other thread's ops got in


# -- 7. memory --------------------------------------------------------------------------------------


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc (Linux)")
def test_ten_thousand_replays_leave_rss_flat():
    import gc

    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
    opt = Adam(model.parameters(), lr=1e-3)

    @mg.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    (x, y), _ = _data(0, shape=(64, 16), classes=2)  # a leaked activation would be 8 KiB a replay
    for _ in range(500):
        step(x, y)
    gc.collect()
    before = _rss()
    for _ in range(10_000):
        step(x, y)
    gc.collect()
    grown = _rss() - before
    assert step.stats.replays == 10_498
    assert grown < 3 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10,000 replays"


def test_guard_train_and_eval_flipped_outside_the_step():
    """A module's mode is Python the step reads: eval() after a capture in training captures again
    (no dropout on replay), and train() again brings the masks back, as eager."""
    def run(compiled):
        mg.manual_seed(0)
        model = mg.nn.Sequential(mg.nn.Linear(4, 8), mg.nn.Dropout(0.5), mg.nn.Linear(8, 2))
        fwd = mg.compile(lambda x: model(x)) if compiled else (lambda x: model(x))
        x = mg.ones(3, 4)
        outs = []
        for mode in ("train",) * 4 + ("eval",) * 3 + ("train",) * 3:
            getattr(model, mode)()
            with mg.no_grad():
                outs.append(fwd(x).numpy())
        return outs, fwd

    eager, _ = run(False)
    compiled, fwd = run(True)
    for a, b in zip(eager, compiled, strict=True):
        assert np.array_equal(a, b)
    assert fwd.stats.captures == 3 and fwd.stats.replays == 6  # calls 3-4, 6-7, 9-10
