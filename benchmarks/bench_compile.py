"""mg.compile (issue 21): compiled steps beside eager minigrad, the hand-written NumPy floor and
PyTorch eager, in the same run. Run:

    python benchmarks/bench_compile.py              # BENCH_THREADS=1 pins torch and NumPy's BLAS to one thread
    python benchmarks/bench_compile.py --steps 10000   # the memory run's length (0 to skip)

Workloads and targets:

- the 1000-op elementwise chain of bench_core.py, forward and backward: compiled <= 0.30x torch
  eager and <= 1.5x the NumPy floor;
- the MLP step of bench_mlp.py (64-128-128-10, tanh, cross-entropy, SGD, float32) at batch 64:
  compiled <= 1.10x the NumPy floor and <= 0.5x torch eager; at the full batch (1797):
  <= 1.02x the floor;
- memory: RSS over ``--steps`` replays of the batch-64 step stays flat.

``examples/digits.py --compile`` end to end against eager is timed by ``--examples``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads, report, torch_or_none  # noqa: E402
from bench_core import BLOCKS, chain_workloads  # noqa: E402
from bench_mlp import init_weights, load_data, make_minigrad, make_numpy, make_torch, rss_mib  # noqa: E402


def compiled_chain(n=16):
    """The chain of bench_core.py as one compiled step: leaves made once, gradients reset inside."""
    rng = np.random.default_rng(0)
    x0, a0, b0 = (rng.standard_normal(n) * 0.5 for _ in range(3))
    a0 = 0.5 + 0.1 * a0
    x, a, b = (mg.from_numpy(v).requires_grad_() for v in (x0, a0, b0))

    @mg.compile
    def step(x, a, b):
        x.grad = a.grad = b.grad = None
        y = x
        for _ in range(BLOCKS):
            y = ((y * a + b) * a + b).tanh()
        y.sum().backward()
        return x.grad

    return (lambda: step(x, a, b)), step


def compiled_mlp(weights, X, y):
    eager, model = make_minigrad(weights, X, y)
    xb = mg.tensor(X)
    yb = mg.tensor(y)
    opt = mg.optim.SGD(model.parameters(), lr=0.05)
    F = mg.nn.functional

    @mg.compile
    def step(x, t):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        return loss

    return (lambda: step(xb, yb)), step


def check_equal(weights, X, y):
    """Compiled and eager minigrad agree bitwise over a few steps (what the bench times is right)."""
    eager, m1 = make_minigrad(weights, X, y)
    run, step = compiled_mlp(weights, X, y)
    for _ in range(5):
        a, b = eager(), run()
        assert np.array_equal(a.data, b.data), "compiled MLP step differs from eager"
    assert step.stats.replays == 3
    c_run, c_step = compiled_chain()
    e_run = chain_workloads()[0]
    for _ in range(4):
        assert np.array_equal(c_run().data, e_run().data), "compiled chain differs from eager"


def memory_run(X, y, steps):
    weights = init_weights()
    run, step = compiled_mlp(weights, X[:64], y[:64])
    for _ in range(200):
        run()
    before = rss_mib()
    t0 = time.perf_counter()
    samples = []
    for i in range(steps):
        run()
        if i % max(1, steps // 10) == 0:
            samples.append(rss_mib())
    after = rss_mib()
    dt = time.perf_counter() - t0
    print(f"\n== memory over {steps} replays of the batch-64 MLP step ({dt:.1f}s, {dt / steps * 1e6:.0f}us each)")
    print(f"RSS {before:.1f} MiB after warm-up, {after:.1f} MiB at the end "
          f"(growth {after - before:+.1f} MiB; samples {', '.join(f'{s:.1f}' for s in samples)})")
    print(f"target: flat -> {'met' if after - before < 4 else 'MISSED'}")


def examples_run():
    ex = os.path.join(os.path.dirname(HERE), "examples", "digits.py")
    times = {}
    for flag in ([], ["--compile"]):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, ex, *flag], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)})
        times["compiled" if flag else "eager"] = time.perf_counter() - t0
    print(f"\n== examples/digits.py end to end: eager {times['eager']:.2f}s, --compile {times['compiled']:.2f}s "
          f"= {times['eager'] / times['compiled']:.2f}x faster (target >= 1.3x)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10_000, help="length of the memory run (0 to skip)")
    ap.add_argument("--examples", action="store_true", help="also time examples/digits.py with and without --compile")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    torch = torch_or_none()
    X, y = load_data()
    weights = init_weights()
    check_equal(weights, X[:64], y[:64])
    print(f"threads: torch {torch.get_num_threads() if torch else '-'}, NumPy's BLAS {blas_threads()} "
          "(BENCH_THREADS=N pins both)")

    rows, targets = [], {}
    mg_run, np_run, th_run, _bare = chain_workloads()
    c_run, _ = compiled_chain()
    fns = {"compiled": c_run, "minigrad": mg_run, "numpy": np_run}
    if th_run:
        fns["torch"] = th_run
    name = "chain 1000 ops (16 float64), fwd+bwd"
    rows.append((name, bench_side_by_side(fns, rounds=5)))
    targets[name] = ("compiled", "<= 1.5x numpy, <= 0.30x torch")

    for batch in (64, X.shape[0]):
        Xb, yb = X[:batch], y[:batch]
        fns = {"compiled": compiled_mlp(weights, Xb, yb)[0], "minigrad": make_minigrad(weights, Xb, yb)[0],
               "numpy": make_numpy(weights, Xb, yb)[0]}
        if torch is not None:
            fns["torch"] = make_torch(torch, weights, Xb, yb)[0]
        name = f"MLP step, batch {batch} (float32)"
        rows.append((name, bench_side_by_side(fns, rounds=3, repeat=args.repeat, min_time=0.2)))
        targets[name] = ("compiled", "<= 1.10x numpy, <= 0.5x torch" if batch == 64 else "<= 1.02x numpy")

    print("\n== mg.compile (issue 21): time per call, and the compiled step's ratios")
    for name, t in rows:
        cells = ", ".join(f"{k} {v * 1e6:.0f}us" for k, v in t.items())
        ratios = [f"{t['compiled'] / t['numpy']:.2f}x numpy"]
        if "torch" in t:
            ratios.append(f"{t['compiled'] / t['torch']:.2f}x torch eager")
        ratios.append(f"{t['minigrad'] / t['compiled']:.2f}x faster than eager")
        print(f"{name}: {cells}\n    compiled = {', '.join(ratios)}   (target {targets[name][1]})")
    report("mg.compile: eager minigrad and numpy for scale", [(n, {k: v for k, v in t.items() if k != "compiled"})
                                                               for n, t in rows], {})
    if args.examples:
        examples_run()
    if args.steps:
        memory_run(X, y, args.steps)


if __name__ == "__main__":
    main()
