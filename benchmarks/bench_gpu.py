"""GPU benchmarks (issue 8): minigrad on CuPy against the machine's copy bandwidth and torch CUDA.

1. Dense sum of 10^9 float32 elements over one axis: the bandwidth it reaches (bytes read / time)
   against the measured device-to-device copy bandwidth ((read + write) / time). Goal >= 80 %.
2. One training step of an MLP (cross-entropy, SGD, float32) at batch 4096: minigrad against
   torch CUDA. Goal <= 1.5x torch.
3. Sparse sum at 10^8 stored entries: a (side, side, side) float64 COO tensor summed over axis 1,
   forward and forward + backward, minigrad against torch CUDA.

Run (needs CuPy and an NVIDIA GPU; torch with CUDA for the peer columns):

    python benchmarks/bench_gpu.py                 # everything at the sizes above
    python benchmarks/bench_gpu.py --only sum      # one part: sum, mlp, sparse
    python benchmarks/bench_gpu.py --fake          # the code path on the CPU stand-in, tiny sizes

Without a GPU it prints why and measures nothing (exit status 0). ``--fake`` runs the same
code on ``minigrad.testing.fakecupy`` at small sizes: it proves the script and the device code path
work, its timings mean nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minigrad as mg  # noqa: E402
from minigrad import backend as be  # noqa: E402

DEVICE = "cuda:0"


# -- timing --------------------------------------------------------------------------------------


def sync():
    be.xp_for(DEVICE).cuda.Device(0).synchronize()


def gpu_time(fn, sync_fn=None, repeat=5, min_time=0.3):
    """Best seconds per call of ``fn``, synchronising the device around each timed batch."""
    sync_fn = sync_fn or sync
    fn()
    sync_fn()
    number = 1
    while True:  # choose the batch so one timed batch takes about min_time / repeat
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync_fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeat or number >= 1 << 14:
            break
        number *= 2
    best = float("inf")
    for _ in range(repeat):
        sync_fn()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync_fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def torch_cuda():
    """torch when it is installed with a usable CUDA device, else None."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def fmt_t(t):
    return f"{'-':>13s}" if t is None else f"{t * 1e3:10.3f} ms"


# -- 1. dense sum against copy bandwidth -------------------------------------------------------------


def bench_sum(n, torch):
    xp = be.xp_for(DEVICE)
    print(f"\n== dense sum of {n:.3g} float32 over one axis, against the device copy bandwidth")
    src = xp.ones(n, dtype=np.float32)
    dst = xp.empty_like(src)
    t_copy = gpu_time(lambda: xp.copyto(dst, src))
    copy_bw = 2 * src.nbytes / t_copy
    print(f"copy {src.nbytes / 2**30:.2f} GiB device to device: {fmt_t(t_copy)}, {copy_bw / 1e9:8.1f} GB/s (read + write)")
    dst = None  # free it before the sums
    rows = int(round(n ** 0.5 / 10)) or 1  # e.g. 10^9 -> (3162, 316 228): both axes long
    cols = n // rows
    shapes = [((rows, cols), 0), ((rows, cols), 1), ((cols, rows), 0), ((cols, rows), 1)]
    print(f"{'shape':>20s} {'axis':>4s} {'minigrad':>13s} {'GB/s':>7s} {'/copy':>6s} {'cupy':>13s} {'torch':>13s}"
          f"  goal >= 80 % of copy")
    for shape, axis in shapes:
        a = src[: shape[0] * shape[1]].reshape(shape)
        x = mg.tensor(a, device=DEVICE)
        t_mg = gpu_time(lambda x=x, axis=axis: x.sum(axis=axis))
        t_cp = gpu_time(lambda a=a, axis=axis: a.sum(axis=axis))
        t_th = None
        if torch is not None:
            ta = torch.as_tensor(a, device="cuda")
            t_th = gpu_time(lambda ta=ta, axis=axis: ta.sum(dim=axis), torch.cuda.synchronize)
            assert np.allclose(be.to_numpy(x.sum(axis=axis).data), ta.sum(dim=axis).cpu().numpy(), rtol=1e-4)
        bw = a.nbytes / t_mg
        print(f"{str(shape):>20s} {axis:4d} {fmt_t(t_mg)} {bw / 1e9:7.1f} {bw / copy_bw:6.0%} {fmt_t(t_cp)} {fmt_t(t_th)}")


# -- 2. MLP step at batch 4096 -----------------------------------------------------------------------


def bench_mlp(batch, sizes_list, torch, lr=0.05):
    print(f"\n== MLP training step at batch {batch} (tanh, cross-entropy, SGD, float32)")
    print(f"{'sizes':>24s} {'minigrad':>13s} {'torch':>13s} {'/torch':>7s}  goal <= 1.5x torch")
    nn = mg.nn
    for sizes in sizes_list:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, sizes[-1], batch)
        weights = []
        for i, o in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1 / np.sqrt(i)
            weights.append((rng.uniform(-bound, bound, (o, i)).astype(np.float32),
                            rng.uniform(-bound, bound, o).astype(np.float32)))
        xp = be.xp_for(DEVICE)
        layers = []
        for k, (W, b) in enumerate(weights):
            lin = nn.Linear(W.shape[1], W.shape[0], device=DEVICE)
            lin.weight.data[...] = xp.asarray(W)  # the same start as torch's model below
            lin.bias.data[...] = xp.asarray(b)
            layers.append(lin)
            if k < len(weights) - 1:
                layers.append(nn.Tanh())
        model = nn.Sequential(*layers).to(DEVICE)
        opt = mg.optim.SGD(model.parameters(), lr=lr)
        xb, yb = mg.tensor(X, device=DEVICE), mg.tensor(y, device=DEVICE)
        ce = nn.functional.cross_entropy

        def step(opt=opt, model=model, xb=xb, yb=yb, ce=ce):
            opt.zero_grad()
            loss = ce(model(xb), yb)
            loss.backward()
            opt.step()
            return loss

        loss0 = float(step().item())
        t_mg = gpu_time(step)
        t_th = None
        if torch is not None:
            tl = []
            for k, (W, b) in enumerate(weights):
                lin = torch.nn.Linear(W.shape[1], W.shape[0])
                with torch.no_grad():
                    lin.weight.copy_(torch.from_numpy(W))
                    lin.bias.copy_(torch.from_numpy(b))
                tl.append(lin)
                if k < len(weights) - 1:
                    tl.append(torch.nn.Tanh())
            tmodel = torch.nn.Sequential(*tl).cuda()
            topt = torch.optim.SGD(tmodel.parameters(), lr=lr)
            xt, yt = torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda()

            def tstep(topt=topt, tmodel=tmodel, xt=xt, yt=yt):
                topt.zero_grad()
                loss = torch.nn.functional.cross_entropy(tmodel(xt), yt)
                loss.backward()
                topt.step()
                return loss

            loss0_t = float(tstep().item())
            assert abs(loss0 - loss0_t) < 1e-3 * max(1.0, abs(loss0_t)), (loss0, loss0_t)
            t_th = gpu_time(tstep, torch.cuda.synchronize)
        ratio = f"{t_mg / t_th:6.2f}x" if t_th else "     -"
        print(f"{'-'.join(map(str, sizes)):>24s} {fmt_t(t_mg)} {fmt_t(t_th)} {ratio}")


# -- 3. sparse sum at 10^8 stored entries ----------------------------------------------------------


def bench_sparse(nnz, side, torch):
    xp = be.xp_for(DEVICE)
    print(f"\n== sparse COO sum over axis 1: ({side},)*3 float64, {nnz:.3g} stored entries (coalesced)")
    t0 = time.perf_counter()
    total = side ** 3
    rs = xp.random.RandomState(0) if hasattr(xp, "random") else None
    if rs is not None:  # on the device: fast
        draws = (rs.random_sample(int(nnz * 1.05) + 16) * total).astype(np.int64)  # total may exceed 2^32
        keys = xp.unique(draws)
        keys = xp.sort(keys[rs.permutation(keys.shape[0])[:nnz]])
        vals = rs.standard_normal(keys.shape[0])
    else:  # the stand-in has no random module: build on the host, copy once
        rng = np.random.default_rng(0)
        k = np.unique(rng.integers(0, total, size=int(nnz * 1.05) + 16))
        k = np.sort(rng.permutation(k)[:nnz])
        keys, vals = xp.asarray(k), xp.asarray(rng.standard_normal(k.shape[0]))
    idx = xp.stack([keys // (side * side), (keys // side) % side, keys % side])
    sync()
    print(f"data built in {time.perf_counter() - t0:.1f}s")
    s = mg.sparse.coo_tensor(idx, vals, (side, side, side), requires_grad=True)
    r0 = mg.sparse.sum(s, axis=1)
    g = mg.sparse.coo_tensor(r0.indices.data.copy(), xp.ones(r0.nnz), r0.shape)

    def fwd():
        return mg.sparse.sum(s, axis=1)

    def fwd_bwd():
        s.grad = None
        r = mg.sparse.sum(s, axis=1)
        r.backward(g)
        return s.grad

    rows = [("forward", gpu_time(fwd, repeat=3)), ("forward + backward", gpu_time(fwd_bwd, repeat=3))]
    t_th = [None, None]
    if torch is not None:
        ti = torch.as_tensor(idx, device="cuda")
        tv0 = torch.as_tensor(vals, device="cuda")
        tv = tv0.clone().requires_grad_(True)
        ts = torch.sparse_coo_tensor(ti, tv, (side, side, side), is_coalesced=True)
        r_t = torch.sparse.sum(ts, dim=1)
        tg = torch.sparse_coo_tensor(r_t.indices(), torch.ones(r_t._nnz(), dtype=torch.float64, device="cuda"),
                                     r_t.shape, is_coalesced=True)
        np.testing.assert_allclose(be.to_numpy(r0.to_dense().data[:2]), r_t.to_dense()[:2].cpu().numpy(), rtol=1e-9)

        def tfwd():
            return torch.sparse.sum(ts, dim=1)

        def tfwd_bwd():
            tv.grad = None
            s2 = torch.sparse_coo_tensor(ti, tv, (side, side, side), is_coalesced=True)
            torch.sparse.sum(s2, dim=1).backward(tg)
            return tv.grad

        t_th = [gpu_time(tfwd, torch.cuda.synchronize, repeat=3), gpu_time(tfwd_bwd, torch.cuda.synchronize, repeat=3)]
    print(f"{'':>20s} {'minigrad':>13s} {'torch':>13s} {'/torch':>7s}")
    for (name, t), tt in zip(rows, t_th, strict=True):
        ratio = f"{t / tt:6.2f}x" if tt else "     -"
        print(f"{name:>20s} {fmt_t(t)} {fmt_t(tt)} {ratio}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["sum", "mlp", "sparse"], action="append")
    ap.add_argument("--fake", action="store_true", help="run on the CPU stand-in at tiny sizes (timings meaningless)")
    ap.add_argument("--n", type=float, default=1e9, help="elements of the dense sum")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--nnz", type=float, default=1e8)
    ap.add_argument("--side", type=int, default=2000)
    args = ap.parse_args(argv)
    parts = args.only or ["sum", "mlp", "sparse"]
    torch = None
    if args.fake:
        be.use_fake_cupy()
        args.n, args.batch, args.nnz, args.side = min(args.n, 1e6), min(args.batch, 256), min(args.nnz, 1e5), 200
        print("bench_gpu: on the CPU stand-in (minigrad.testing.fakecupy): the code path runs, the timings mean nothing")
    else:
        try:
            be.xp_for(DEVICE)
        except (RuntimeError, ValueError) as e:
            print(f"bench_gpu: skipped, no GPU to measure: {e}")
            return 0
        torch = torch_cuda()
        cp = be.xp_for(DEVICE)
        props = cp.cuda.runtime.getDeviceProperties(0)
        print(f"device: {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}, "
              f"CuPy {cp.__version__}, torch {torch.__version__ if torch else '- (no CUDA torch)'}")
    mg.set_default_device(DEVICE)
    if "sum" in parts:
        bench_sum(int(args.n), torch)
    if "mlp" in parts:
        bench_mlp(args.batch, [(64, 128, 128, 10), (784, 1024, 1024, 10)], torch)
    if "sparse" in parts:
        bench_sparse(int(args.nnz), args.side, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
