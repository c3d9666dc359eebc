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
