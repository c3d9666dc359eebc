"""mg.autograd.detect_anomaly: names the op, position, input and line where NaN/inf first
appear (backward, and forward with check_forward=True); per thread; nothing runs without it."""
import os
import threading
import warnings

import numpy as np
import pytest

import minigrad as mg
from conftest import line_of as _line_of
from minigrad import _state

HERE = os.path.abspath(__file__)


def line_of(marker):
    return _line_of(marker, HERE)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "divide by zero" is the point here
        yield


def model(x, w):
    h = (x @ w).tanh()
    h = h * 2 + 1
    z = (h - h).sum(axis=1)                 # exactly 0 in every row
    y = z.log()  # NaN-LOG
    return (y * 0 + h.sum(axis=1)).mean()


def inputs():
    x = mg.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    w = mg.tensor(np.linspace(0.5, -0.5, 12).reshape(3, 4), requires_grad=True)
    return x, w


def test_backward_names_the_op_its_input_and_line():
    x, w = inputs()
    with mg.autograd.detect_anomaly():
        loss = model(x, w)     # log(0) = -inf in forward; its rule gives 0 / 0 = NaN... and 1/0
        with pytest.raises(mg.AnomalyError) as e:
            loss.backward()
    err = e.value
    assert isinstance(err, RuntimeError) and isinstance(err, mg.MinigradError)
    assert err.op == "log" and err.input == 0 and err.count == 2 and err.phase == "backward"
    assert (err.file, err.line) == (HERE, line_of("NaN-LOG"))
    assert err.node.op == "log" and err.node.where == (HERE, line_of("NaN-LOG"))
    assert err.position == err.node.seq
    msg = str(err)
    assert "'log'" in msg and "input 0" in msg and f"test_anomaly.py:{line_of('NaN-LOG')}" in msg
    assert "2 NaN/inf" in msg
    assert err.node in mg.autograd.tape(loss)
    # the highlighted picture: the op and its path to the loss in red
    plain = mg.viz.dot_source(loss)
    red = mg.viz.dot_source(loss, highlight=err.node)
    assert "#cc0000" in red and "#cc0000" not in plain
    assert "#cc0000" in mg.viz.graph(loss, highlight=err.node).source


def test_zero_times_inf_in_backward():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    big = mg.tensor([np.inf, 1.0])
    with mg.autograd.detect_anomaly():
        y = x * big  # ZERO-INF
        loss = (y.clip(-1.0, 1.0)).sum()    # clip passes 0 where |y| > 1: 0 * inf in mul's rule
        with pytest.raises(mg.AnomalyError) as e:
            loss.backward()
    assert e.value.op == "mul" and e.value.line == line_of("ZERO-INF") and e.value.input == 0


def test_finite_gradients_pass_and_grads_land():
    x, w = inputs()
    with mg.autograd.detect_anomaly(check_forward=True):
        loss = ((x @ w).tanh() ** 2).sum()
        loss.backward()
    assert np.isfinite(mg.backend.to_numpy(x.grad.data)).all()


def test_check_forward_names_the_first_op_producing_nan_or_inf():
    x = mg.tensor([1000.0, 1.0], requires_grad=True)
    with mg.autograd.detect_anomaly(check_forward=True):
        with pytest.raises(mg.AnomalyError) as e:
            y = x.exp() * 0  # FWD-EXP
            y.sum()
    err = e.value
    assert err.phase == "forward" and err.op == "exp" and err.count == 1   # exp overflowed first, not mul
    assert (err.file, err.line) == (HERE, line_of("FWD-EXP"))
    assert err.node is not None and err.node.op == "exp"
    assert "forward" in str(err) and f"test_anomaly.py:{line_of('FWD-EXP')}" in str(err)
    # the log of a negative number, under no_grad: no Node, raised at once
    with mg.autograd.detect_anomaly(check_forward=True), mg.no_grad():
        with pytest.raises(mg.AnomalyError) as e:
            mg.tensor([-1.0, 2.0]).log()  # FWD-LOG
    assert e.value.op == "log" and e.value.node is None and e.value.line == line_of("FWD-LOG")
    # without check_forward the forward is not checked
    with mg.autograd.detect_anomaly():
        mg.tensor([-1.0]).log()


def test_decorator_forms_and_stack():
    x = mg.tensor([0.0, 1.0], requires_grad=True)

    @mg.autograd.detect_anomaly
    def bare():
        x.sqrt().sum().backward()

    @mg.autograd.detect_anomaly(stack=True)
    def with_stack():
        x.sqrt().sum().backward()  # STACK

    with pytest.raises(mg.AnomalyError, match="'sqrt'"):
        bare()
    with pytest.raises(mg.AnomalyError) as e:
        with_stack()
    assert "stack (innermost last)" in str(e.value) and "in with_stack" in str(e.value)
    assert e.value.node.stack[-1].startswith(f"{HERE}:{line_of('STACK')} in with_stack")
    assert _state.get().observers == ()
    assert "detect_anomaly" in repr(mg.autograd.detect_anomaly())


def test_the_mode_is_per_thread():
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        x = mg.tensor([0.0, 1.0], requires_grad=True)
        ready.wait()
        seen["observers"] = _state.get().observers
        y = x.sqrt()
        seen["where"] = y._node.__dict__.get("where")
        y.sum().backward()             # inf gradient, no error: the mode is off in this thread
        seen["grad"] = mg.backend.to_numpy(x.grad.data)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with mg.autograd.detect_anomaly():
        assert len(_state.get().observers) == 1
        ready.set()
        done.wait(10)
    t.join()
    assert seen["observers"] == () and seen["where"] is None and np.isinf(seen["grad"][0])

    errors = []

    def inside():
        try:
            with mg.autograd.detect_anomaly():
                mg.tensor([0.0], requires_grad=True).sqrt().sum().backward()
        except mg.AnomalyError as e:
            errors.append(e.op)

    t = threading.Thread(target=inside)
    t.start()
    t.join()
    assert errors == ["sqrt"] and _state.get().observers == ()


def test_no_overhead_with_the_mode_off(monkeypatch):
    import minigrad.anomaly as anomaly

    def boom(*a, **k):
        raise AssertionError("a frame was looked up outside anomaly mode")

    monkeypatch.setattr(anomaly, "user_where", boom)
    monkeypatch.setattr(anomaly, "user_stack", boom)
    assert _state.get().observers == ()
    x, w = inputs()
    loss = model(x, w)
    assert all("where" not in n.__dict__ and "stack" not in n.__dict__ for n in mg.autograd.tape(loss))
    assert all(n.where is None for n in mg.autograd.tape(loss))
    loss.backward()                               # the NaN flows through silently
    assert _state.get().observers == ()
    with mg.autograd.detect_anomaly():
        assert len(_state.get().observers) == 1
    assert _state.get().observers == ()


def test_a_nan_tangent_names_the_op_and_line():
    """Forward mode: the first op whose output tangent holds NaN/inf raises, with file:line."""
    x = mg.tensor([0.0, 1.0], dtype=mg.float64)
    with mg.autograd.detect_anomaly(), pytest.raises(mg.AnomalyError, match="op 'sqrt'.*tangent") as e:
        mg.func.jvp(lambda x: mg.sqrt(x * 1.0).sum(), (x,), (mg.ones_like(x),))
    assert e.value.op == "sqrt" and e.value.phase == "forward mode" and e.value.file == __file__
    assert "from finite input tangents" in str(e.value)
    mg.func.jvp(lambda x: mg.sqrt(x * 1.0).sum(), (x,), (mg.ones_like(x),))  # outside the mode: nothing
