"""Issue 41's FFT workload: the FFT of a 2**20-point complex128 signal, forward and backward (the
gradient of a real loss, sum(Re(w * fft(x)))), same run. Run:

    python benchmarks/bench_fft.py

The NumPy floor is ``np.fft.fft`` plus the adjoint transform (``np.fft.ifft(g, norm="forward")``),
what any reverse pass of an FFT must compute; torch.fft beside it for information. The target:
minigrad at most 1.2x the floor.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, torch_or_none  # noqa: E402

N = 1 << 20
TARGET = 1.2


def workloads(n=N):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    w0 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    w = mg.from_numpy(w0)

    def mg_run():
        x = mg.from_numpy(x0).requires_grad_()
        (mg.fft.fft(x) * w).real.sum().backward()
        return x.grad

    def np_run():  # forward, then the adjoint of the gradient of the loss w.r.t. fft(x), conj(w)
        y = np.fft.fft(x0)
        (y * w0).real.sum()
        return np.fft.ifft(np.conj(w0), norm="forward")

    torch = torch_or_none()
    th_run = None
    if torch is not None:
        wt = torch.from_numpy(w0)

        def th_run():
            x = torch.tensor(x0, requires_grad=True)
            (torch.fft.fft(x) * wt).real.sum().backward()
            return x.grad

        assert np.allclose(th_run().numpy(), np_run())
    assert np.allclose(mg_run().numpy(), np_run())
    return mg_run, np_run, th_run


def main():
    mg_run, np_run, th_run = workloads()
    fns = {"minigrad": mg_run, "numpy": np_run}
    if th_run is not None:
        fns["torch"] = th_run
    best = bench_side_by_side(fns, rounds=3, repeat=3, min_time=0.05)
    print(f"FFT of 2**20 complex128 points, forward and backward, same run (ms):")
    for k, v in best.items():
        print(f"  {k:10} {v * 1e3:8.2f}   {v / best['numpy']:.2f}x the NumPy floor")
    ratio = best["minigrad"] / best["numpy"]
    ok = ratio <= TARGET
    print(f"target: minigrad <= {TARGET}x the NumPy floor (np.fft.fft + the adjoint): {ratio:.2f} "
          f"{'met' if ok else 'MISSED'}")
    return ok


if __name__ == "__main__":
    main()
