"""One training step of an MLP 64-128-128-10 (tanh, softmax cross-entropy, plain SGD) on the
digits data, float32, side by side:

- minigrad (nn.Sequential + F.cross_entropy + optim.SGD),
- hand-written NumPy forward + manual backward (the floor), and the same tuned by hand (in
  place, BLAS column sums) to show what NumPy itself can reach,
- the engine floor (``_bare_tape``: the leanest tape with minigrad's per-op guarantees), for scale,
- PyTorch CPU with the same number of threads (when installed).

Targets (issue 17), against the plain NumPy floor in the same run: batch 64 <= 1.4x, full batch
(1797) <= 1.1x; the torch ratios are reported as information (they depend on the CPU's BLAS). Also checks that
memory stays flat over 10 000 steps. Run:

    python benchmarks/bench_mlp.py            # BENCH_THREADS=1 pins torch and NumPy's BLAS to one thread
    python benchmarks/bench_mlp.py --steps 10000   # the memory run's length (default 10000)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads, report, torch_or_none  # noqa: E402

SIZES = (64, 128, 128, 10)
LR = 0.05


def load_data():
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - a stand-in of the same shape
        rng = np.random.default_rng(0)
        return rng.random((1797, 64), dtype=np.float32), rng.integers(0, 10, 1797)
    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32), y.astype(np.int64)


def init_weights(seed=0):
    """PyTorch's default Linear init, as float32 arrays: [(W (out, in), b (out,)), ...]."""
    rng = np.random.default_rng(seed)
    out = []
    for i, o in zip(SIZES[:-1], SIZES[1:], strict=True):
        bound = 1 / np.sqrt(i)
        out.append((rng.uniform(-bound, bound, (o, i)).astype(np.float32),
                    rng.uniform(-bound, bound, o).astype(np.float32)))
    return out


# -- minigrad ----------------------------------------------------------------------------------


def make_minigrad(weights, X, y, mg=mg):  # mg: the minigrad to time (compare.py passes another)
    nn = mg.nn
    layers = []
    for k, (W, b) in enumerate(weights):
        lin = nn.Linear(W.shape[1], W.shape[0])
        lin.weight.data[...] = W
        lin.bias.data[...] = b
        layers.append(lin)
        if k < len(weights) - 1:
            layers.append(nn.Tanh())
    model = nn.Sequential(*layers)
    opt = mg.optim.SGD(model.parameters(), lr=LR)
    xb = mg.tensor(X)
    cross_entropy = nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = cross_entropy(model(xb), y)
        loss.backward()
        opt.step()
        return loss

    return step, model


# -- the NumPy floor ---------------------------------------------------------------------------


def make_numpy(weights, X, y):
    Ws = [(W.copy(), b.copy()) for W, b in weights]
    n = X.shape[0]
    rows = np.arange(n)
    lr = np.float32(LR)

    def step():
        (W1, b1), (W2, b2), (W3, b3) = Ws
        h1 = np.tanh(X @ W1.T + b1)
        h2 = np.tanh(h1 @ W2.T + b2)
        z = h2 @ W3.T + b3
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = (np.log(s[:, 0]) - z[rows, y]).mean()
        g = e / s
        g[rows, y] -= 1
        g /= n
        gW3 = g.T @ h2
        gb3 = g.sum(0)
        gh2 = g @ W3
        gh2 *= 1 - h2 * h2
        gW2 = gh2.T @ h1
        gb2 = gh2.sum(0)
        gh1 = gh2 @ W2
        gh1 *= 1 - h1 * h1
        gW1 = gh1.T @ X
        gb1 = gh1.sum(0)
        for (W, b), gW, gb in zip(Ws, (gW1, gW2, gW3), (gb1, gb2, gb3), strict=True):
            W -= lr * gW
            b -= lr * gb
        return loss

    return step, Ws


def make_numpy_tuned(weights, X, y):
    """The floor again, tuned by hand: activations overwritten in place, the tanh derivative
    built in the dead activation, bias gradients as BLAS column sums. What NumPy itself can do."""
    Ws = [(W.copy(), b.copy()) for W, b in weights]
    n = X.shape[0]
    rows = np.arange(n)
    lr = np.float32(LR)
    ones = np.ones(n, dtype=np.float32)

    def step():
        (W1, b1), (W2, b2), (W3, b3) = Ws
        h1 = X @ W1.T
        h1 += b1
        np.tanh(h1, out=h1)
        h2 = h1 @ W2.T
        h2 += b2
        np.tanh(h2, out=h2)
        z = h2 @ W3.T
        z += b3
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = (np.log(s[:, 0]) - z[rows, y]).mean()
        e /= s
        e[rows, y] -= 1
        e *= np.float32(1 / n)
        grads = [None, None, (e.T @ h2, ones @ e)]
        gh = e @ W3
        for k, (h, below) in enumerate(((h2, h1), (h1, X))):
            np.multiply(h, h, out=h)
            np.subtract(1, h, out=h)
            gh *= h
            grads[1 - k] = (gh.T @ below, ones @ gh)
            if k == 0:
                gh = gh @ W2
        for (W, b), (gW, gb) in zip(Ws, grads, strict=True):
            gW *= lr
            W -= gW
            gb *= lr
            b -= gb
        return loss

    return step, Ws


# -- the engine floor --------------------------------------------------------------------------


def make_engine_floor(weights, X, y):
    """The step on ``_bare_tape``'s engine floor: the leanest tape with what minigrad's API and
    guarantees need per op (grad mode, versions, input shapes, a walk in creation order)."""
    import _bare_tape as ef

    tape = ef.EngineTape()
    params = [tape.leaf(a.copy()) for W, b in weights for a in (W, b)]
    xb = ef._tensor(X)
    lr = np.float32(LR)

    def step():
        ef.zero_grad(params)
        W1, b1, W2, b2, W3, b3 = params
        h = ef.linear(xb, W1, b1).tanh()
        h = ef.linear(h, W2, b2).tanh()
        loss = ef.cross_entropy(ef.linear(h, W3, b3), y)
        tape.backward(loss, tape.seed(loss))
        ef.sgd_step(params, lr)
        return loss

    return step, params


# -- PyTorch -----------------------------------------------------------------------------------


def make_torch(torch, weights, X, y):
    layers = []
    for k, (W, b) in enumerate(weights):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if k < len(weights) - 1:
            layers.append(torch.nn.Tanh())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xt = torch.from_numpy(X)
    yt = torch.from_numpy(y)
    ce = torch.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = ce(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step, model


# -- checks ------------------------------------------------------------------------------------


def check_agreement(weights, X, y, torch):
    """A few steps of each implementation land on the same weights (float32 tolerance)."""
    s_mg, model = make_minigrad(weights, X, y)
    s_np, Ws = make_numpy(weights, X, y)
    for _ in range(3):
        l_mg = float(s_mg().item())
        l_np = float(s_np())
    W_mg = model[0].weight.detach().numpy()
    assert np.allclose(W_mg, Ws[0][0], atol=1e-5), "minigrad and the NumPy floor disagree"
    s_floor, Wf = make_engine_floor(weights, X, y)
    for _ in range(3):
        l_floor = float(s_floor().data)
    assert np.allclose(Wf[0].data, Ws[0][0], atol=1e-5) and abs(l_floor - l_np) < 1e-4, \
        "the engine floor disagrees"
    s_tuned, Wt = make_numpy_tuned(weights, X, y)
    for _ in range(3):
        s_tuned()
    assert np.allclose(Wt[0][0], Ws[0][0], atol=1e-5), "the tuned NumPy floor disagrees"
    assert abs(l_mg - l_np) < 1e-4, (l_mg, l_np)
    if torch is not None:
        s_th, tmodel = make_torch(torch, weights, X, y)
        for _ in range(3):
            s_th()
        assert np.allclose(W_mg, tmodel[0].weight.detach().numpy(), atol=1e-5), "minigrad and torch disagree"
    for W, _ in ((model[0].weight, None), (model[2].weight, None)):
        assert W.dtype == np.float32, W.dtype


def rss_mib():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_run(X, y, steps):
    """RSS and tracemalloc-traced memory across ``steps`` training steps at batch 64."""
    import tracemalloc

    step, _ = make_minigrad(init_weights(), X[:64], y[:64])
    for _ in range(200):  # warm up allocator pools
        step()
    marks = []
    tracemalloc.start()
    t0 = time.perf_counter()
    for i in range(steps):
        step()
        if i % max(1, steps // 10) == 0 or i == steps - 1:
            cur, _peak = tracemalloc.get_traced_memory()
            marks.append((i, cur / 2**10, rss_mib()))
    tracemalloc.stop()
    dt = time.perf_counter() - t0
    print(f"\n== memory over {steps} steps (batch 64; tracemalloc slows it: {dt:.1f}s)")
    print(f"{'step':>8s} {'traced KiB':>11s} {'RSS MiB':>9s}")
    for i, kib, rss in marks:
        print(f"{i:8d} {kib:11.1f} {rss:9.1f}")
    growth = marks[-1][1] - marks[1][1]
    print(f"traced growth after the first mark: {growth:+.1f} KiB; RSS {marks[1][2]:.1f} -> {marks[-1][2]:.1f} MiB")
    return growth


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10_000, help="length of the memory run (0 to skip)")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)

    torch = torch_or_none()
    X, y = load_data()
    weights = init_weights()
    check_agreement(weights, X[:64], y[:64], torch)
    print(f"threads: torch {torch.get_num_threads() if torch else '-'}, NumPy's BLAS {blas_threads()} "
          "(BENCH_THREADS=N pins both)")

    rows = []
    targets = {}
    tuned = {}
    floors = {}
    for batch in (64, X.shape[0]):
        Xb, yb = X[:batch], y[:batch]
        impls = {"minigrad": make_minigrad(weights, Xb, yb)[0], "numpy": make_numpy(weights, Xb, yb)[0],
                 "numpy, tuned": make_numpy_tuned(weights, Xb, yb)[0],
                 "engine floor": make_engine_floor(weights, Xb, yb)[0]}
        if torch is not None:
            impls["torch"] = make_torch(torch, weights, Xb, yb)[0]
        times = bench_side_by_side(impls, rounds=3, repeat=args.repeat, min_time=0.2)
        name = f"MLP step, batch {batch}"
        rows.append((name, times))
        tuned[name] = times.pop("numpy, tuned")
        floors[name] = times.pop("engine floor"), times["minigrad"], times["numpy"]
        targets[name] = "<= 1.4x numpy" if batch == 64 else "<= 1.1x numpy"
    report("MLP 64-128-128-10 tanh, cross-entropy, SGD (float32), one training step", rows, targets)
    parts = []
    for name, times in rows:
        t = tuned[name]
        parts.append(f"{name.split(', ')[1]}: {t * 1e6:.1f}us"
                     + (f" = {t / times['torch']:.2f}x torch" if "torch" in times else ""))
    print("NumPy tuned by hand (in place, BLAS column sums), for scale: " + "; ".join(parts))
    print("the engine floor (_bare_tape: the leanest tape with minigrad's per-op guarantees, one path "
          "per arity), for scale: " + "; ".join(
              f"{name.split(', ')[1]}: {f * 1e6:.1f}us = {f / n:.2f}x numpy; minigrad {m / f:.2f}x it"
              for name, (f, m, n) in floors.items()))
    anomaly_overhead(weights, X[:64], y[:64], args.repeat)
    if args.steps:
        memory_run(X, y, args.steps)


def anomaly_overhead(weights, X, y, repeat):
    """The batch-64 step inside ``mg.autograd.detect_anomaly()`` beside the same step outside it
    (outside the mode nothing is looked up: no frames, no checks)."""
    plain = make_minigrad(weights, X, y)[0]
    step = make_minigrad(weights, X, y)[0]

    def in_mode():
        with mg.autograd.detect_anomaly():
            return step()

    times = bench_side_by_side({"off": plain, "on": in_mode}, rounds=3, repeat=repeat, min_time=0.2)
    print(f"anomaly mode on the batch-64 step: {times['on'] * 1e6:.1f}us inside detect_anomaly(), "
          f"{times['off'] * 1e6:.1f}us outside = {times['on'] / times['off']:.2f}x")


if __name__ == "__main__":
    main()
