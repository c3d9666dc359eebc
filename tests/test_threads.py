"""Grad mode and the profiler are per thread: real threads, overlapping blocks, overlapping backward."""
import threading

import numpy as np

import minigrad as mg
from conftest import run_in_threads, to_np


def test_no_grad_in_one_thread_does_not_stop_recording_in_another():
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.no_grad():
            inside.set()
            done.wait(10)

    def b():
        inside.wait(10)
        x = mg.ones(3, requires_grad=True)
        seen["rg"] = (x * 2).requires_grad
        seen["enabled"] = mg.is_grad_enabled()
        done.set()

    run_in_threads(a, b)
    assert seen == {"rg": True, "enabled": True}


def test_overlapping_no_grad_blocks_leave_grad_mode_as_it_was():
    barrier = threading.Barrier(2)

    def worker(k):
        def f():
            for _ in range(200):
                with mg.no_grad():
                    barrier.wait(10) if k == 0 and _ % 50 == 0 else None
                    assert not mg.is_grad_enabled()
                assert mg.is_grad_enabled()
        return f

    def other():
        for i in range(200):
            if i % 50 == 0:
                barrier.wait(10)
            assert mg.is_grad_enabled()
            x = mg.ones(2, requires_grad=True)
            assert (x * 3).requires_grad

    run_in_threads(worker(0), other)
    assert mg.is_grad_enabled()


def test_overlapping_backward_calls_in_two_threads():
    def train(seed):
        def f():
            rng = np.random.default_rng(seed)
            for _ in range(200):
                w = mg.tensor(rng.standard_normal((8, 8)), requires_grad=True)
                x = mg.tensor(rng.standard_normal((4, 8)))
                loss = (x @ w).tanh().sum()
                loss.backward()
                assert w.grad is not None and mg.is_grad_enabled()
                expected = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.detach().numpy()) ** 2)
                np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-10)
        return f

    run_in_threads(train(0), train(1), train(2))
    assert mg.is_grad_enabled()


def test_concurrent_training_with_one_thread_evaluating_under_no_grad():
    """Two models train in two threads while a third evaluates under no_grad: every step of the
    trainers records and every parameter gets a gradient."""
    nn, F = mg.nn, mg.nn.functional
    failures = []

    def trainer(seed):
        def f():
            mg.manual_seed(seed)
            model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
            opt = mg.optim.SGD(model.parameters(), lr=0.1)
            rng = np.random.default_rng(seed)
            x = mg.tensor(rng.standard_normal((32, 8)), dtype=mg.float32)
            y = mg.tensor(rng.integers(0, 3, 32))
            for _ in range(300):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                if not loss.requires_grad:
                    failures.append("loss did not record")
                    continue
                loss.backward()
                if any(p.grad is None for p in model.parameters()):
                    failures.append("a parameter has no grad")
                opt.step()
        return f

    def evaluator():
        model = nn.Linear(8, 3)
        x = mg.randn(16, 8)
        for _ in range(600):
            with mg.no_grad():
                assert not model(x).requires_grad

    run_in_threads(trainer(0), trainer(1), evaluator)
    assert not failures, failures[:5]


def test_profile_is_per_thread():
    started, done = threading.Event(), threading.Event()
    counts = {}

    def profiled():
        with mg.autograd.profile() as p:
            started.set()
            done.wait(10)
            (mg.ones(3, requires_grad=True) * 2).sum()
        counts["mine"] = p.stats["mul"].calls if "mul" in p.stats else 0
        counts["others_seen"] = "exp" in p.stats

    def other():
        started.wait(10)
        for _ in range(20):
            mg.ones(3).exp()
        done.set()

    run_in_threads(profiled, other)
    assert counts == {"mine": 1, "others_seen": False}


# -- grad mode restored when blocks and backward passes overlap in two threads ---------------------

def test_overlapping_no_grad_in_two_threads_restores_grad_mode():
    barrier = threading.Barrier(2, timeout=10)
    seen = []

    def worker():
        for _ in range(20):
            with mg.no_grad():
                barrier.wait()  # both threads are inside their blocks now
                seen.append(mg.is_grad_enabled())
                barrier.wait()  # one leaves first, the other is still inside
            seen.append(not mg.is_grad_enabled())
            with mg.no_grad(), mg.enable_grad():
                seen.append(not mg.is_grad_enabled())

    run_in_threads(worker, worker)
    assert not any(seen)
    assert mg.is_grad_enabled()


def test_overlapping_backward_in_two_threads_restores_grad_mode():
    barrier = threading.Barrier(2, timeout=10)
    results = {}

    def worker(k):
        def f():
            x = mg.tensor(np.arange(1.0, 4.0) + k, requires_grad=True)
            for _ in range(20):
                x.grad = None
                barrier.wait()

                def hook(g):
                    # inside a first-order backward this thread does not record ...
                    results.setdefault(("inside", k), set()).add(mg.is_grad_enabled())

                y = x * x
                y.register_hook(hook)
                y.sum().backward()
                # ... and afterwards it records again
                results.setdefault(("after", k), set()).add(mg.is_grad_enabled())
            results[("grad", k)] = to_np(x.grad)
        return f

    run_in_threads(worker(0), worker(1))
    for k in (0, 1):
        assert results[("inside", k)] == {False}
        assert results[("after", k)] == {True}
        np.testing.assert_allclose(results[("grad", k)], 2 * (np.arange(1.0, 4.0) + k))
    assert mg.is_grad_enabled()


def test_no_grad_in_one_thread_while_another_runs_backward():
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with mg.no_grad():
            inside.set()
            done.wait(10)
            seen["a"] = mg.is_grad_enabled()

    def b():
        inside.wait(10)
        x = mg.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        seen["b"] = mg.is_grad_enabled()
        seen["rg"] = (x * 2).requires_grad
        done.set()

    run_in_threads(a, b)
    assert seen == {"a": False, "b": True, "rg": True}
