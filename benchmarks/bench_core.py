"""Issue 2's workloads: a 1000-op elementwise chain, and sum over an axis. Run:

    python benchmarks/bench_core.py

Each is timed for minigrad, hand-written NumPy (forward + manual backward: the floor) and
PyTorch CPU (when installed), in the same run.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _bare_tape import chain as bare_chain, chain_engine_floor, chain_tensor_rules  # noqa: E402
from _harness import bench_side_by_side, report, torch_or_none  # noqa: E402

BLOCKS = 200  # each block tanh((x*a+b)*a+b) is 5 ops (mul, add, mul, add, tanh): 1000 ops


def chain_workloads(n=16, mg=mg, dtype="float64"):  # mg: the minigrad to time (compare.py passes another)
    """The 1000-op chain for minigrad, NumPy (the floor: forward and a hand-written backward) and
    torch. ``dtype`` complex128 (bench_complex.py): complex inputs, the gradient of Re(sum(y)) with
    PyTorch's conjugates in the floor (the bare-tape floors are real only)."""
    rng = np.random.default_rng(0)
    x0, a0, b0 = (rng.standard_normal(n) * 0.5 for _ in range(3))
    a0 = 0.5 + 0.1 * a0
    cplx = np.dtype(dtype).kind == "c"
    if cplx:
        x0, a0, b0 = (v + 0.1j * rng.standard_normal(n) for v in (x0, a0, b0))
    cj = np.conj if cplx else (lambda v: v)

    def mg_run():
        x = mg.from_numpy(x0).requires_grad_()
        a = mg.from_numpy(a0).requires_grad_()
        b = mg.from_numpy(b0).requires_grad_()
        y = x
        for _ in range(BLOCKS):
            y = ((y * a + b) * a + b).tanh()
        (y.sum().real if cplx else y.sum()).backward()
        return x.grad

    def np_run():  # the gradient of Re(sum(y)): PyTorch's convention, g conj(f'(z)) per op
        a, b = a0, b0
        ac = cj(a)
        y = x0
        tape = []
        for _ in range(BLOCKS):
            u = y * a + b
            v = u * a + b
            t = np.tanh(v)
            tape.append((y, u, t))
            y = t
        gy = np.ones_like(y)
        ga = np.zeros_like(a)
        gb = np.zeros_like(b)
        for yprev, u, t in reversed(tape):
            gv = gy * cj(1 - t * t)
            gb += gv
            ga += gv * cj(u)
            gu = gv * ac
            gb += gu
            ga += gu * cj(yprev)
            gy = gu * ac
        return gy

    torch = torch_or_none()
    th_run = None
    if torch is not None:
        def th_run():
            x = torch.tensor(x0, requires_grad=True)
            a = torch.tensor(a0, requires_grad=True)
            b = torch.tensor(b0, requires_grad=True)
            y = x
            for _ in range(BLOCKS):
                y = ((y * a + b) * a + b).tanh()
            (y.sum().real if cplx else y.sum()).backward()
            return x.grad

        assert np.allclose(th_run().numpy(), mg_run().numpy())
    assert np.allclose(np_run(), mg_run().numpy())
    if cplx:
        return mg_run, np_run, th_run, None

    def bare_run():
        return bare_chain(x0, a0, b0, BLOCKS)

    def rules_run():
        return chain_tensor_rules(x0, a0, b0, BLOCKS)

    def engine_run():
        return chain_engine_floor(x0, a0, b0, BLOCKS)

    for floor in (bare_run, rules_run, engine_run):
        assert np.allclose(floor(), mg_run().numpy())
    bare_run.tensor_rules = rules_run
    bare_run.engine = engine_run
    return mg_run, np_run, th_run, bare_run


def sum_workloads(dtype, mg=mg):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((100, 1000, 100)).astype(dtype)
    w0 = rng.standard_normal((100, 100)).astype(dtype)

    x = mg.from_numpy(x0).requires_grad_()  # leaves made once, as for torch below
    w = mg.from_numpy(w0).requires_grad_()

    def mg_run():
        x.grad = w.grad = None
        y = x.sum(axis=1)
        (y * w).sum().backward()
        return x.grad

    def np_run():
        y = x0.sum(axis=1)
        _ = (y * w0).sum()
        gy = w0  # d/dy of sum(y*w)
        gw = y  # noqa: F841
        return np.broadcast_to(gy[:, None, :], x0.shape)

    torch = torch_or_none()
    th_run = None
    if torch is not None:
        xt = torch.from_numpy(x0)
        wt = torch.from_numpy(w0)

        def th_run():
            x = xt.detach().requires_grad_()
            w = wt.detach().requires_grad_()
            y = x.sum(dim=1)
            (y * w).sum().backward()
            return x.grad

    assert np.allclose(np_run(), mg_run().numpy())
    return mg_run, np_run, th_run


def main():
    rows = []
    targets = {}
    mg_run, np_run, th_run, bare_run = chain_workloads()
    fns = {"minigrad": mg_run, "numpy": np_run, "bare": bare_run, "rules": bare_run.tensor_rules,
           "engine": bare_run.engine}
    if th_run:
        fns["torch"] = th_run
    t = bench_side_by_side(fns)
    bare = t.pop("bare")
    rules = t.pop("rules")
    engine = t.pop("engine")
    name = "chain 1000 ops (16 float64), fwd+bwd"
    rows.append((name, t))
    targets[name] = "<= 2.0x the bare tape"
    for dtype in (np.float32, np.float64):
        mg_run, np_run, th_run = sum_workloads(dtype)
        fns = {"minigrad": mg_run, "numpy": np_run}
        if th_run:
            fns["torch"] = th_run
        t = bench_side_by_side(fns, rounds=9)
        name = f"sum axis=1 (100,1000,100) {np.dtype(dtype).name}, fwd+bwd"
        rows.append((name, t))
        targets[name] = "<= 1.05x numpy"
    report("core (issue 17)", rows, targets)
    per_op = rows[0][1]["minigrad"] / 1000
    print(f"\nchain: minigrad {per_op * 1e6:.2f} us per op (forward + backward)")
    th = rows[0][1].get("torch")
    print(f"chain on a bare Python tape (benchmarks/_bare_tape.py: one Wengert list, no checks, views, "
          f"versions or broadcasting): {bare * 1e3:.2f} us per op"
          + (f" = {bare / th:.2f}x torch: the floor of any Python tape" if th else ""))
    print(f"minigrad / bare tape = {rows[0][1]['minigrad'] / bare:.2f}x (target <= 2.0x)")
    print(f"the bare tape with rules over Tensors (minigrad's design; _bare_tape.chain_tensor_rules): "
          f"{rules * 1e3:.2f} us per op = {rules / bare:.2f}x the bare tape; minigrad = "
          f"{rows[0][1]['minigrad'] / rules:.2f}x that floor")
    print(f"the engine floor (_bare_tape.chain_engine_floor: rules over Tensors, plus per op the grad mode, "
          f"a Tensor with grad and version, a Node with edges, shapes and saved versions; a walk of the "
          f"reachable Nodes): {engine * 1e3:.2f} us per op = {engine / bare:.2f}x the bare tape; minigrad = "
          f"{rows[0][1]['minigrad'] / engine:.2f}x that floor")


if __name__ == "__main__":
    main()
