"""Grad mode and the profiler are per thread: real threads, overlapping blocks, overlapping backward."""
import threading

import numpy as np

import minigrad as mg
from conftest import run_in_threads


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
