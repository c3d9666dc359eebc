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
from _harness import bench_side_by_side  # noqa: E402
from bench_core import BLOCKS, chain_workloads as _core_chain  # noqa: E402

OPS = 5 * BLOCKS  # bench_core's blocks: 5 ops each
TARGET = 1.1


def chain_workloads(dtype):
    mg_run, np_run, th_run, _ = _core_chain(dtype=dtype)  # bench_core's chain, in this dtype
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
