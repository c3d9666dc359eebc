"""Issue 4's workload: sum a random 3-D COO tensor over axis 1, forward and backward. Run:

    python benchmarks/bench_sparse.py [--nnz 1000000] [--side 1000]

A (side, side, side) float64 COO tensor with ``nnz`` distinct random coordinates,
coalesced, summed over axis 1; backward takes an upstream gradient in the result's
layout (sparse, same indices). Side by side in one run:

* minigrad: ``mg.sparse.sum(s, axis=1)`` then ``r.backward(sparse_grad)``;
* torch: ``torch.sparse.sum(s, dim=1)`` then ``r.backward(sparse_grad)`` on a COO tensor
  built with ``is_coalesced=True`` (so no extra coalesce is timed);
* SciPy: the same data prebuilt as a CSR matrix with the summed axis as its rows,
  shape (side, side * side), summed with ``m.sum(axis=0)`` (forward only; SciPy has no
  backward). Its result is dense (1, side * side), which is cheaper than a sparse one.
  The transposed layout, ``m.T.sum(axis=1)`` on a (side * side, side) CSR, is shown too.

Peak memory is measured with tracemalloc (NumPy reports its buffers to it) and given
relative to the input's size (indices + values).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minigrad as mg  # noqa: E402
from _harness import bench, torch_or_none  # noqa: E402


def make_data(side, nnz, seed=0):
    rng = np.random.default_rng(seed)
    total = side ** 3
    keys = np.unique(rng.integers(0, total, size=int(nnz * 1.05) + 16))
    keys = rng.permutation(keys)[:nnz]
    keys.sort()
    idx = np.stack(np.unravel_index(keys, (side, side, side))).astype(np.int64)
    vals = rng.standard_normal(idx.shape[1])
    return idx, vals


def minigrad_workload(idx, vals, side):
    s = mg.sparse.coo_tensor(idx, vals, (side, side, side), requires_grad=True)
    assert s.is_coalesced

    def fwd():
        return mg.sparse.sum(s, axis=1)

    r0 = fwd()
    # the upstream gradient in the result's layout, built once with the public constructor
    g = mg.sparse.coo_tensor(r0.indices.numpy().copy(), np.ones(r0.nnz), r0.shape)

    def fwd_bwd():
        s.grad = None
        r = mg.sparse.sum(s, axis=1)
        r.backward(g)
        return s.grad

    return s, fwd, fwd_bwd


def torch_workload(torch, idx, vals, side):
    ti = torch.from_numpy(idx)
    tv0 = torch.from_numpy(vals)

    def build(rg):
        v = tv0.clone().requires_grad_(rg)
        return v, torch.sparse_coo_tensor(ti, v, (side, side, side), is_coalesced=True)

    _, s = build(False)

    def fwd():
        return torch.sparse.sum(s, dim=1)

    r0 = fwd().coalesce()
    gidx, gval = r0.indices(), torch.ones(r0._nnz(), dtype=torch.float64)

    def fwd_bwd():
        v, s2 = build(True)
        r = torch.sparse.sum(s2, dim=1)
        g = torch.sparse_coo_tensor(gidx, gval, r.shape, is_coalesced=True)
        r.backward(g)
        return v.grad

    return fwd, fwd_bwd


def scipy_workloads(idx, vals, side):
    try:
        import scipy.sparse as sp
    except ImportError:
        return None, None
    cols = idx[0] * side + idx[2]
    m_rows = sp.csr_matrix((vals, (idx[1], cols)), shape=(side, side * side))  # summed axis = rows
    m_cols = sp.csr_matrix((vals, (cols, idx[1])), shape=(side * side, side))  # summed axis = columns
    return (lambda: m_rows.sum(axis=0)), (lambda: m_cols.sum(axis=1))


def one_pass_floor(idx, vals, side):
    """The single pass SciPy's ``sum(axis=0)`` makes, in NumPy: scatter-add every value into a
    dense (side * side,) array at its kept coordinates' key. It finds no coordinates (the result
    is dense), so it is a floor under any sparse-result sum, not a contender."""
    keys = idx[0] * side + idx[2]  # computed once, outside the timing
    return lambda: np.bincount(keys, weights=vals, minlength=side * side)


def timeit(fn, repeat):
    """Best wall-clock and best CPU (process) time per call, in seconds. CPU time is the
    steadier number on a shared machine; wall time is what a user waits (torch uses
    several threads, so its CPU time is larger than its wall time)."""
    fn()
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
    return min(walls), min(cpus)


def peak_bytes(fn):
    import gc

    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del out
    return peak


def never_densify_check():
    """The issue's bar: a (10^6)^3 COO tensor with 1000 entries, summed over each axis."""
    rng = np.random.default_rng(1)
    n = 10 ** 6
    idx = rng.integers(0, n, size=(3, 1000))
    s = mg.sparse.coo_tensor(idx, rng.standard_normal(1000), (n, n, n), requires_grad=True)
    worst_t, worst_m = 0.0, 0
    for axis in (0, 1, 2, (0, 2), None):
        def run(axis=axis):
            s.grad = None
            r = mg.sparse.sum(s, axis=axis)
            if isinstance(r, mg.Tensor):
                r.backward()
            else:
                r.backward(mg.sparse.coo_tensor(r.indices, np.ones(r.nnz), r.shape))
            return s.grad

        worst_t = max(worst_t, bench(run, repeat=3, min_time=0.05))
        worst_m = max(worst_m, peak_bytes(run))
    return worst_t, worst_m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=1000)
    ap.add_argument("--nnz", type=int, default=10 ** 6)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()

    idx, vals = make_data(a.side, a.nnz)
    nnz = idx.shape[1]
    in_bytes = idx.nbytes + vals.nbytes
    print(f"== sparse sum: ({a.side},)*3 COO float64, nnz={nnz}, coalesced, sum over axis 1 "
          f"(input {in_bytes / 2 ** 20:.1f} MiB)")

    s, mg_fwd, mg_fb = minigrad_workload(idx, vals, a.side)
    r = mg_fwd()
    print(f"result: {r.layout} shape={r.shape} nnz={r.nnz}")
    torch = torch_or_none()
    sc_rows, sc_cols = scipy_workloads(idx, vals, a.side)

    # correctness, side by side
    if torch is not None:
        tf, _ = torch_workload(torch, idx, vals, a.side)
        tr = tf().coalesce()
        assert np.array_equal(tr.indices().numpy(), r.indices.numpy())
        assert np.allclose(tr.values().numpy(), r.values.detach().numpy())
    if sc_rows is not None:
        dense = np.asarray(sc_rows()).reshape(a.side, a.side)
        ii = r.indices.numpy()
        assert np.allclose(dense[ii[0], ii[1]], r.values.detach().numpy())

    rep = a.repeat
    t = {}
    t["minigrad fwd"] = timeit(mg_fwd, rep)
    t["minigrad fwd+bwd"] = timeit(mg_fb, rep)
    if torch is not None:
        tf, tfb = torch_workload(torch, idx, vals, a.side)
        t["torch fwd"] = timeit(tf, max(3, rep // 2))
        t["torch fwd+bwd"] = timeit(tfb, max(3, rep // 2))
    sc_keys = []
    if sc_rows is not None:
        sc_keys = ["scipy csr.sum(axis=0) (summed axis = rows)", "scipy csr.sum(axis=1) (summed axis = cols)"]
        t[sc_keys[0]] = timeit(sc_rows, rep)
        t[sc_keys[1]] = timeit(sc_cols, rep)
    floor_key = "numpy: one bincount of the kept keys (dense)"
    t[floor_key] = timeit(one_pass_floor(idx, vals, a.side), rep)

    threads = f" (torch threads: {torch.get_num_threads()})" if torch is not None else ""
    print(f"\n{'workload':46s} {'wall':>10s} {'cpu':>10s}{threads}")
    for k, (w, c) in t.items():
        print(f"{k:46s} {w * 1e3:8.2f}ms {c * 1e3:8.2f}ms")

    print("\nratios (minigrad / other; lower is better for minigrad)")
    print(f"{'':46s} {'wall':>9s} {'cpu':>9s}  target")

    def ratio(name, a_key, b_key, tgt):
        (wa, ca), (wb, cb) = t[a_key], t[b_key]
        print(f"{name:46s} {wa / wb:8.3f}x {ca / cb:8.3f}x  {tgt}")

    if torch is not None:
        ratio("fwd+bwd vs torch fwd+bwd", "minigrad fwd+bwd", "torch fwd+bwd", "<= 0.20 (wall)")
        ratio("fwd vs torch fwd", "minigrad fwd", "torch fwd", "")
    for k in sc_keys:
        ratio("fwd vs " + k.split(" (")[0] + " " + k.split(" (")[1].rstrip(")").replace("summed axis = ", "axis="),
              "minigrad fwd", k, "<= 1.00")
    for k in sc_keys[:1]:
        ratio("fwd+bwd vs " + k.split(" (")[0] + " (scipy: no bwd)", "minigrad fwd+bwd", k, "")
    if sc_keys:
        ratio("one-bincount floor vs scipy csr.sum(axis=0)", floor_key, sc_keys[0], "")

    pf = peak_bytes(mg_fwd)
    pfb = peak_bytes(mg_fb)
    print(f"\npeak traced memory: fwd {pf / 2 ** 20:.1f} MiB = {pf / in_bytes:.2f}x input, "
          f"fwd+bwd {pfb / 2 ** 20:.1f} MiB = {pfb / in_bytes:.2f}x input "
          "(result and gradient included)")
    if torch is not None:
        torch.set_num_threads(torch.get_num_threads())

    wt, wm = never_densify_check()
    print(f"never densified: (10^6)^3 COO, nnz=1000, sum over 0/1/2/(0,2)/None + backward: "
          f"worst {wt * 1e3:.2f}ms, peak {wm / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
