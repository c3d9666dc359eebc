"""Issue 41's complex workload: bench_core's 1000-op elementwise chain (200 blocks of
tanh((y * a + b) * a + b), forward and backward) in complex128 beside the same chain in float64, on
16-element arrays (where Python is what there is to measure), same run. Run:

    python benchmarks/bench_complex.py

Each chain is timed for minigrad, hand-written NumPy (forward + manual backward, the floor; the
complex one with PyTorch's conjugates) and PyTorch CPU (when installed). The target: minigrad's
complex chain costs at most 1.1x its real chain per op.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, torch_or_none  # noqa: E402

BLOCKS = 200  # 5 ops a block: 1000 ops
OPS = 5 * BLOCKS
TARGET = 1.1


def chain_workloads(dtype, n=16, mg=mg):
    rng = np.random.default_rng(0)
    x0, a0, b0 = (rng.standard_normal(n) * 0.5 for _ in range(3))
    a0 = 0.5 + 0.1 * a0
    if np.dtype(dtype).kind == "c":
        x0, a0, b0 = (v + 0.1j * rng.standard_normal(n) for v in (x0, a0, b0))

    def mg_run():
        x = mg.from_numpy(x0).requires_grad_()
        a = mg.from_numpy(a0).requires_grad_()
        b = mg.from_numpy(b0).requires_grad_()
        y = x
        for _ in range(BLOCKS):
            y = ((y * a + b) * a + b).tanh()
        y.sum().real.backward() if y.dtype.kind == "c" else y.sum().backward()
        return x.grad

    def np_run():  # the gradient of Re(sum(y)): PyTorch's convention, g conj(f'(z)) per op
        a, b = a0, b0
        ac = np.conj(a)
        y = x0
        tape = []
        for _ in range(BLOCKS):
            u = y * a + b
            t = np.tanh(u * a + b)
            tape.append((y, u, t))
            y = t
        gy = np.ones_like(y)
        ga = np.zeros_like(a)
        gb = np.zeros_like(b)
        for yprev, u, t in reversed(tape):
            gv = gy * np.conj(1 - t * t)
            gb += gv
            ga += gv * np.conj(u)
            gu = gv * ac
            gb += gu
            ga += gu * np.conj(yprev)
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
            (y.sum().real if y.is_complex() else y.sum()).backward()
            return x.grad

        assert np.allclose(th_run().numpy(), mg_run().numpy())
    assert np.allclose(np_run(), mg_run().numpy())
    return mg_run, np_run, th_run


def main():
    fns = {}
    for dt in ("float64", "complex128"):
        mg_run, np_run, th_run = chain_workloads(dt)
        fns[("minigrad", dt)], fns[("numpy", dt)] = mg_run, np_run
        if th_run is not None:
            fns[("torch", dt)] = th_run
    best = bench_side_by_side(fns)
    print(f"1000-op chain, 16 elements, forward + backward: per op (µs), same run")
    print(f"{'':10} {'float64':>9} {'complex128':>11} {'complex / real':>15}")
    ratios = {}
    for lib in ("minigrad", "numpy", "torch"):
        if (lib, "float64") not in best:
            continue
        r, c = best[(lib, "float64")] / OPS * 1e6, best[(lib, "complex128")] / OPS * 1e6
        ratios[lib] = c / r
        print(f"{lib:10} {r:9.2f} {c:11.2f} {c / r:15.3f}")
    over = {dt: best[("minigrad", dt)] / best[("numpy", dt)] for dt in ("float64", "complex128")}
    print(f"minigrad over the NumPy floor: float64 {over['float64']:.2f}x, complex128 {over['complex128']:.2f}x")
    ok = ratios["minigrad"] <= TARGET
    print(f"target: minigrad's complex chain <= {TARGET}x its real chain per op: "
          f"{ratios['minigrad']:.3f} {'met' if ok else 'MISSED'}")
    return ok


if __name__ == "__main__":
    main()
