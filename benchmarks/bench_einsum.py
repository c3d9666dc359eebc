"""Issue 5's workload: attention scores through einsum, forward + backward. Run:

    python benchmarks/bench_einsum.py

q, k of shape (32, 128, 64) float32; ``s = einsum("bqd,bkd->bqk", q, k)``,
``loss = (s * s).sum()``, forward + backward (gradients of q and k). Side by side,
in one run:

- minigrad ``mg.einsum`` (NumPy grammar, and the einops grammar);
- minigrad ``q @ k.mT`` (the same graph through matmul);
- PyTorch ``torch.einsum`` (the peer, reported as information: the ratio depends on the CPU's BLAS);
- the NumPy floor: ``np.einsum(optimize=True)`` forward and the two backward
  einsums written by hand;
- NumPy batched matmul, forward and hand-written backward.

Every implementation runs with the same number of threads: PyTorch's thread count
is set to what NumPy's BLAS uses (``BENCH_THREADS=N`` pins both to N). Times are the
best of several interleaved rounds (the machine is shared; best-of is the stable
statistic), each round itself best-of-N.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads  # noqa: E402

B, T, D = 32, 128, 64


def inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((B, T, D)).astype(np.float32), rng.standard_normal((B, T, D)).astype(np.float32))


def einsum_step(q0, k0, mg=mg):
    """minigrad's step (``mg``: the minigrad to time; compare.py passes another): the gradients
    of q and k of (einsum('bqd,bkd->bqk') ** 2).sum()."""
    q = mg.from_numpy(q0).requires_grad_()  # leaves made once, as torch's
    k = mg.from_numpy(k0).requires_grad_()

    def mg_einsum():
        q.grad = k.grad = None
        s = mg.einsum("bqd,bkd->bqk", q, k)
        (s * s).sum().backward()
        return q.grad.data, k.grad.data

    return mg_einsum


def numpy_floor(q0, k0, loss=False):
    """The floor the issue names: np.einsum(optimize=True), backward by hand; with ``loss``, it
    also computes the loss it differentiates, as every other row does."""
    def np_einsum():
        s = np.einsum("bqd,bkd->bqk", q0, k0, optimize=True)
        if loss:
            (s * s).sum()
        g = 2 * s
        gq = np.einsum("bqk,bkd->bqd", g, k0, optimize=True)
        gk = np.einsum("bqk,bqd->bkd", g, q0, optimize=True)
        return gq, gk

    return np_einsum


def workloads():
    q0, k0 = inputs()
    runs = {}
    q = mg.from_numpy(q0).requires_grad_()  # leaves made once, as torch's below
    k = mg.from_numpy(k0).requires_grad_()
    mg_einsum = einsum_step(q0, k0)

    def mg_einops():
        q.grad = k.grad = None
        s = mg.einsum(q, k, "batch seq_q d, batch seq_k d -> batch seq_q seq_k")
        (s * s).sum().backward()
        return q.grad.data, k.grad.data

    def mg_matmul():
        q.grad = k.grad = None
        s = q @ k.swapaxes(-1, -2)
        (s * s).sum().backward()
        return q.grad.data, k.grad.data

    np_einsum = numpy_floor(q0, k0)

    def np_matmul():
        s = np.matmul(q0, k0.transpose(0, 2, 1))
        g = 2 * s
        gq = np.matmul(g, k0)
        gk = np.matmul(g.transpose(0, 2, 1), q0)
        return gq, gk

    runs["minigrad einsum 'bqd,bkd->bqk'"] = mg_einsum
    runs["minigrad einsum (einops grammar)"] = mg_einops
    runs["minigrad q @ k.mT"] = mg_matmul
    np_einsum_loss = numpy_floor(q0, k0, loss=True)

    runs["numpy np.einsum(optimize=True) + manual bwd"] = np_einsum
    runs["numpy np.einsum + the loss + manual bwd"] = np_einsum_loss
    runs["numpy batched matmul + manual bwd"] = np_matmul
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(blas_threads())
        tq = torch.tensor(q0, requires_grad=True)
        tk = torch.tensor(k0, requires_grad=True)

        def th_einsum():
            tq.grad = tk.grad = None
            s = torch.einsum("bqd,bkd->bqk", tq, tk)
            (s * s).sum().backward()
            return tq.grad, tk.grad

        runs["torch.einsum"] = th_einsum
    ref = np_matmul()
    for name, fn in runs.items():  # every implementation computes the same gradients
        got = fn()
        for r, g in zip(ref, got, strict=True):
            g = g.detach().numpy() if hasattr(g, "detach") else np.asarray(g)
            assert np.allclose(r, g, rtol=1e-3, atol=1e-2), name
    return runs


def main(rounds: int = 5):
    runs = workloads()
    best = bench_side_by_side(runs, rounds=rounds, repeat=5, min_time=0.1)
    th = best.get("torch.einsum")
    floor = best["numpy np.einsum(optimize=True) + manual bwd"]
    mm = best["numpy batched matmul + manual bwd"]
    print(f"\n== einsum attention scores: q, k ({B}, {T}, {D}) float32, s = einsum('bqd,bkd->bqk'), "
          f"loss = (s*s).sum(), forward + backward; {blas_threads()} thread(s)")
    print(f"{'implementation':46s} {'time':>10s} {'/torch':>8s} {'/np.einsum':>11s} {'/np matmul':>11s}")
    for name, t in best.items():
        rt = f"{t / th:7.2f}x" if th else f"{'-':>8s}"
        print(f"{name:46s} {t * 1e3:8.3f}ms {rt} {t / floor:10.2f}x {t / mm:10.2f}x")
    mine = best["minigrad einsum 'bqd,bkd->bqk'"]
    r = mine / floor
    print(f"\nminigrad einsum / the NumPy floor (np.einsum + manual backward) = {r:.2f}x (target <= 1.0x)")
    fair = best["numpy np.einsum + the loss + manual bwd"]
    print(f"minigrad einsum / the floor that also computes the loss (s*s).sum() = {mine / fair:.2f}x "
          "(information: the floor above never computes the loss it differentiates)")
    if th:
        print(f"minigrad einsum / torch.einsum = {mine / th:.2f}x (information)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > (os.cpu_count() or 1):
        print(f"note: load average {load:.1f} on {os.cpu_count()} CPU(s) while timing: other processes "
              "competed for the cores (BLAS and torch threads suffer most); rerun on a quiet machine")


if __name__ == "__main__":
    main()
