"""Instructions per batch-64 MLP step, counted by valgrind's callgrind inside the timed loop only:
the NumPy floor, the engine floor and minigrad.

Timings on a shared VM move by more than most changes to the Python path are worth (see
compare.py). A count of user-space instructions does not: two runs of the same code agree to
within a few hundred instructions in 2.9 million. It counts work, not time (a cache miss costs
nothing here), so use it to compare two versions of the Python path, and the timed benchmarks
for the ratios. Needs ``valgrind`` on the PATH; BLAS runs on one thread, hashing is seeded.

    python benchmarks/icount.py                     # numpy, engine floor, minigrad (about 4 min)
    python benchmarks/icount.py --only minigrad --minigrad /path/to/other/checkout
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WHO = ("numpy", "engine floor", "minigrad")


def _child(who, steps, path):
    """Run inside valgrind: warm up, then ``steps`` steps inside functools.reduce, the one C
    function callgrind collects in (nothing else in the process calls it)."""
    sys.path.insert(0, path)
    import minigrad  # first: bench_mlp then gets this one

    sys.path.insert(0, HERE)
    import bench_mlp

    X, y = bench_mlp.load_data()
    w = bench_mlp.init_weights()
    make = {"numpy": bench_mlp.make_numpy, "engine floor": bench_mlp.make_engine_floor,
            "minigrad": functools.partial(bench_mlp.make_minigrad, mg=minigrad)}[who]
    step = make(w, X[:64], y[:64])[0]
    for _ in range(10):
        step()
    functools.reduce(lambda acc, _: step(), range(steps), None)


def count(who, steps, path):
    """User-space instructions per step of ``who``."""
    fd, out = tempfile.mkstemp(suffix=".callgrind")
    os.close(fd)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    try:
        subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
                        f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__),
                        "--child", who, str(steps), path], env=env, check=True, capture_output=True)
        with open(out) as f:
            total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
    finally:
        os.unlink(out)
    return total / steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--only", choices=WHO, help="count one of them")
    ap.add_argument("--minigrad", default=ROOT, help="the checkout whose minigrad/ to count (default: this one)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        who, steps, path = args.child
        return _child(who, int(steps), path)
    if shutil.which("valgrind") is None:
        sys.exit("icount.py needs valgrind (apt-get install valgrind)")
    counts = {}
    for who in ([args.only] if args.only else WHO):
        counts[who] = count(who, args.steps, args.minigrad)
        extra = f" (+{(counts[who] - counts['numpy']) / 1e3:.0f} k over numpy)" if "numpy" in counts and who != "numpy" else ""
        print(f"{who:14s} {counts[who] / 1e6:.3f} M instructions per step{extra}", flush=True)


if __name__ == "__main__":
    main()
