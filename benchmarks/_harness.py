"""Side-by-side timing helpers: best-of-N wall time, ratios against the floor and peers."""
from __future__ import annotations

import os
import time


def bench(fn, repeat=7, number=None, min_time=0.2):
    """Best time per call of ``fn`` in seconds (auto-chooses the inner loop count)."""
    fn()  # warm up
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            dt = time.perf_counter() - t0
            if dt >= min_time / repeat or number >= 1 << 20:
                break
            number *= 2
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def bench_side_by_side(fns, rounds=5, repeat=3, min_time=0.05):
    """Best time per call of each of ``fns`` ({name: fn}), measured in alternating rounds (each a
    ``bench(fn, repeat, min_time=min_time)``) so that a slow spell of the machine (another
    process, memory bandwidth) falls on every contender alike rather than on whichever ran then."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            best[k] = min(best[k], bench(fn, repeat=repeat, min_time=min_time))
    return best


def _pin_threads():
    """``BENCH_THREADS=N`` pins NumPy's BLAS to N threads too (threadpoolctl, when installed), so
    that every library in a comparison gets the same number; torch_or_none() pins torch's."""
    env = os.environ.get("BENCH_THREADS")
    if not env:
        return None
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415
    except ImportError:
        print(f"BENCH_THREADS={env}: threadpoolctl is not installed, so NumPy's BLAS keeps its own "
              "thread count (set OPENBLAS_NUM_THREADS as well)")
        return None
    return threadpool_limits(limits=int(env))


_PINNED = _pin_threads()  # kept: the limit holds while the object lives


def blas_threads() -> int:
    """How many threads NumPy's BLAS uses (threadpoolctl when installed, else the CPU count)."""
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415

        # NumPy's own BLAS first: torch and SciPy may bring BLAS libraries of their own
        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        blas.sort(key=lambda i: "numpy" not in i.get("filepath", ""))
        if blas:
            return int(blas[0]["num_threads"])
    except ImportError:
        pass
    env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return int(env) if env else (os.cpu_count() or 1)


def torch_or_none():
    try:
        import torch  # noqa: PLC0415

        torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1)))
        return torch
    except ImportError:
        return None


def report(title, rows, targets=None):
    """rows: list of (workload, {impl: seconds}). Prints times and ratios to numpy and torch."""
    print(f"\n== {title}")
    print(f"{'workload':44s} {'minigrad':>11s} {'numpy':>11s} {'torch':>11s} {'/numpy':>8s} {'/torch':>8s}  target")
    for name, t in rows:
        mg_t, np_t, th_t = t.get("minigrad"), t.get("numpy"), t.get("torch")

        def f(x):
            return f"{x * 1e6:9.1f}us" if x is not None else f"{'-':>11s}"

        rn = f"{mg_t / np_t:7.2f}x" if np_t else f"{'-':>8s}"
        rt = f"{mg_t / th_t:7.2f}x" if th_t else f"{'-':>8s}"
        tgt = (targets or {}).get(name, "")
        print(f"{name:44s} {f(mg_t)} {f(np_t)} {f(th_t)} {rn} {rt}  {tgt}")
