"""Two versions of minigrad side by side in one process: the working tree and a git revision.

    python benchmarks/compare.py REV [--rounds N]

Issue 17 asks for the benchmarks "before and after, in the same runs". Separate runs of two
checkouts on a shared VM disagree by more than most changes are worth: its slow spells make the
same code 1.6x slower. This runs both versions and the NumPy floor in the same interleaved rounds
(``_harness.bench_side_by_side``), so that a slow spell falls on each alike, and prints each
version's ratio to the floor: the 1000-op chain (against the bare tape and the engine floor), the
MLP step at batch 64 and 1797, the einsum attention step and the dense sum.

REV's ``minigrad/`` is taken with ``git archive`` into a temporary folder and imported as the
package ``minigrad_rev``; the benchmark code is the working tree's for both. (A module of REV that
imports ``minigrad`` by name when called, as conv and pooling do, would get the working tree's;
none of these workloads reaches one.) Both versions share the process's allocator, so the two
large-array steps (einsum, sum) see each other's freed memory: read them as ranges over runs.
Calibrate first with ``python benchmarks/compare.py HEAD`` (identical code on both sides): on the
2-core development VM, in a slow spell, that read "now / rev" between 0.98 and 1.13, so a change
worth less than that needs several runs, in a quiet spell, before it is believed.
"""
from __future__ import annotations

import argparse
import atexit
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import bench_core  # noqa: E402
import bench_einsum  # noqa: E402
import bench_mlp  # noqa: E402
from _harness import bench_side_by_side  # noqa: E402


def load_revision(rev: str):
    """``minigrad/`` as it is at ``rev``, imported as the package ``minigrad_rev``."""
    data = subprocess.run(["git", "-C", ROOT, "archive", rev, "minigrad"], check=True,
                          capture_output=True).stdout
    where = tempfile.mkdtemp(prefix="minigrad_rev_")
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(where, filter="data")
    pkg = os.path.join(where, "minigrad")
    spec = importlib.util.spec_from_file_location("minigrad_rev", os.path.join(pkg, "__init__.py"),
                                                  submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["minigrad_rev"] = mod
    spec.loader.exec_module(mod)
    return mod


def workloads(old):
    """(name, {contender: fn}, the floor's name) for each workload: the working tree as "now",
    the revision as "rev", and the floors."""
    out = []
    now, _, _, bare = bench_core.chain_workloads()
    out.append(("chain 1000 ops (16 float64)", {"now": now, "rev": bench_core.chain_workloads(mg=old)[0],
                                                 "bare tape": bare, "engine floor": bare.engine}, "bare tape"))
    X, y = bench_mlp.load_data()
    weights = bench_mlp.init_weights()
    for n in (64, len(X)):
        step = bench_mlp.make_minigrad(weights, X[:n], y[:n])[0]
        out.append((f"MLP step, batch {n}", {"now": step,
                                             "rev": bench_mlp.make_minigrad(weights, X[:n], y[:n], mg=old)[0],
                                             "numpy": bench_mlp.make_numpy(weights, X[:n], y[:n])[0],
                                             "engine floor": bench_mlp.make_engine_floor(weights, X[:n], y[:n])[0]},
                    "numpy"))
    q0, k0 = bench_einsum.inputs()
    out.append(("einsum attention scores", {"now": bench_einsum.einsum_step(q0, k0),
                                            "rev": bench_einsum.einsum_step(q0, k0, mg=old),
                                            "numpy": bench_einsum.numpy_floor(q0, k0)}, "numpy"))
    for dtype in (np.float32, np.float64):
        now, np_run, _ = bench_core.sum_workloads(dtype)
        out.append((f"sum axis=1 {np.dtype(dtype).name}", {"now": now, "rev": bench_core.sum_workloads(dtype, mg=old)[0],
                                                           "numpy": np_run}, "numpy"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the git revision to compare the working tree with (e.g. HEAD~3)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds per workload (best of)")
    ap.add_argument("--only", default="", help="run the workloads whose name contains this (e.g. 'MLP step, batch 64')")
    args = ap.parse_args(argv)
    old = load_revision(args.rev)
    print(f"now: the working tree; rev: {args.rev}; best of {args.rounds} interleaved rounds")
    print(f"{'workload':30s} {'contender':14s} {'time':>11s} {'/ floor':>8s}")
    for name, fns, floor in workloads(old):
        if args.only not in name:
            continue
        best = bench_side_by_side(fns, rounds=args.rounds)
        for who, t in best.items():
            print(f"{name:30s} {who:14s} {t * 1e6:9.1f}us {t / best[floor]:7.2f}x")
        print(f"{'':30s} now / rev = {best['now'] / best['rev']:.3f}", flush=True)


if __name__ == "__main__":
    main()
