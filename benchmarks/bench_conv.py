"""conv2d forward + backward, and one training step of examples/cnn_digits.py, side by side (float32):

- minigrad: ``F.conv2d`` (pad, ``mg.strided.windows``, one copy of the windows with the output
  positions innermost, one einsum over (batch, group)) and ``backward`` for input and weight;
- the NumPy floor: the same algorithm by hand, with nothing to spare: pad, copy the windows view
  once in (N, C*kh*kw, H*W) order, one batched matmul forward, one each way backward (weight:
  batched then summed over the batch; input: W^T g as one GEMM over every sample, then the
  overlap-add of the kh*kw slabs);
- np.einsum(optimize=True) on the raw 6-D windows view (forward, weight and window gradients)
  plus the same overlap-add;
- torch.nn.functional.conv2d with the same thread count (when installed).

Target (issue 22): minigrad <= 1.1x the NumPy floor. Run:

    python benchmarks/bench_conv.py             # BENCH_THREADS=1 pins NumPy's BLAS and torch to one thread
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads, report, torch_or_none  # noqa: E402

F = mg.nn.functional
swv = np.lib.stride_tricks.sliding_window_view


# -- the NumPy floor: im2col + batched matmul, by hand ---------------------------------------------------


def np_conv_fwd(x, w, b=None, pad=1):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    v = swv(xp, (kh, kw), axis=(2, 3))                               # (n, c, oh, ow, kh, kw)
    cols = np.ascontiguousarray(v.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * kh * kw, oh * ow)
    # a stride-0 stack of the weight: NumPy's batched matmul runs BLAS per sample (measured faster
    # than broadcasting the 2-D weight)
    out = np.matmul(np.broadcast_to(w.reshape(o, -1), (n, o, cols.shape[1])), cols)  # (n, o, oh*ow)
    if b is not None:
        out += b[:, None]
    return out.reshape(n, o, oh, ow), cols


def overlap_add(gv, shape, pad):
    """gv (n, c, kh, kw, oh, ow) -> the input gradient (n, c, h, w)."""
    n, c, kh, kw, oh, ow = gv.shape
    gx = np.zeros((n, c, shape[2] + 2 * pad, shape[3] + 2 * pad), gv.dtype)
    for i in range(kh):
        for j in range(kw):
            gx[:, :, i:i + oh, j:j + ow] += gv[:, :, i, j]
    return gx[:, :, pad:gx.shape[2] - pad, pad:gx.shape[3] - pad]


def np_conv_bwd(g, cols, w, xshape, pad=1, need_x=True):
    n, o, oh, ow = g.shape
    g2 = g.reshape(n, o, oh * ow)
    gw = np.matmul(g2, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)
    gb = g2.sum(axis=(0, 2))
    gx = None
    if need_x:
        # one GEMM over every sample (K = o is short: a batch of n small GEMMs runs ~2x slower)
        gcols = np.ascontiguousarray(w.reshape(o, -1).T) @ g2.transpose(1, 0, 2).reshape(o, -1)
        gcols = gcols.reshape(xshape[1], w.shape[2], w.shape[3], n, oh, ow).transpose(3, 0, 1, 2, 4, 5)
        gx = overlap_add(gcols, xshape, pad)
    return gx, gw, gb


def np_einsum_conv(x, w, g, pad=1):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    v = swv(xp, w.shape[2:], axis=(2, 3))
    out = np.einsum("nchwkl,ockl->nohw", v, w, optimize=True)
    gw = np.einsum("nohw,nchwkl->ockl", g, v, optimize=True)
    gv = np.einsum("nohw,ockl->nckl hw".replace(" ", ""), g, w, optimize=True)
    return out, gw, overlap_add(gv, x.shape, pad)


# -- conv2d forward + backward ------------------------------------------------------------------------


def bench_conv(rounds):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 16, 32, 32)).astype(np.float32)
    w = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    g = rng.standard_normal((64, 32, 32, 32)).astype(np.float32)
    X, W, G = mg.tensor(x, requires_grad=True), mg.tensor(w, requires_grad=True), mg.tensor(g)

    def mg_step():
        X.grad = W.grad = None
        F.conv2d(X, W, padding=1).backward(G)

    def np_step():
        _, cols = np_conv_fwd(x, w)
        np_conv_bwd(g, cols, w, x.shape)

    def ein_step():
        np_einsum_conv(x, w, g)

    # the answers agree before anything is timed
    mg_step()
    out, cols = np_conv_fwd(x, w)
    gx, gw, _ = np_conv_bwd(g, cols, w, x.shape)
    np.testing.assert_allclose(F.conv2d(X, W, padding=1).detach().numpy(), out, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(X.grad.numpy(), gx, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(W.grad.numpy(), gw, rtol=1e-3, atol=1e-2)
    e_out, e_gw, e_gx = np_einsum_conv(x, w, g)
    np.testing.assert_allclose(e_gx, gx, rtol=1e-4, atol=1e-3)
    fns = {"minigrad": mg_step, "numpy": np_step, "einsum": ein_step}
    torch = torch_or_none()
    if torch is not None:
        tx, tw, tg = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True), torch.tensor(g)

        def th_step():
            tx.grad = tw.grad = None
            torch.nn.functional.conv2d(tx, tw, padding=1).backward(tg)

        fns["torch"] = th_step
    return bench_side_by_side(fns, rounds=rounds)


# -- the cnn_digits training step ------------------------------------------------------------------------


def bench_cnn_step(rounds, batch=64):
    import cnn_digits as ex  # noqa: PLC0415

    rng = np.random.default_rng(0)
    xb = rng.standard_normal((batch, 1, 8, 8)).astype(np.float32)
    yb = rng.integers(0, 10, batch)
    mg.manual_seed(0)
    model = ex.DigitsCNN()
    lr = 0.05
    opt = mg.optim.SGD(model.parameters(), lr=lr)
    X = mg.tensor(xb)
    params = {k: v.detach().numpy().copy() for k, v in model.named_parameters()}

    def mg_step():
        opt.zero_grad()
        loss = F.cross_entropy(model(X), yb)
        loss.backward()
        opt.step()

    def pool_fwd(a):
        n, c, h, w = a.shape
        r = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
        idx = r.argmax(-1)[..., None]
        return np.take_along_axis(r, idx, -1)[..., 0], idx

    def pool_bwd(g, idx, shape):
        n, c, h, w = shape
        z = np.zeros((n, c, h // 2, w // 2, 4), g.dtype)
        np.put_along_axis(z, idx, g[..., None], -1)
        return z.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)

    p = params

    def np_step():
        a1, cols1 = np_conv_fwd(xb, p["conv1.weight"], p["conv1.bias"])
        r1 = np.maximum(a1, 0)
        h1, i1 = pool_fwd(r1)
        a2, cols2 = np_conv_fwd(h1, p["conv2.weight"], p["conv2.bias"])
        r2 = np.maximum(a2, 0)
        h2, i2 = pool_fwd(r2)
        f = h2.reshape(batch, -1)
        logits = f @ p["fc.weight"].T + p["fc.bias"]
        z = logits - logits.max(1, keepdims=True)
        e = np.exp(z)
        sm = e / e.sum(1, keepdims=True)
        gl = sm
        gl[np.arange(batch), yb] -= 1
        gl /= batch
        gfw, gfb = gl.T @ f, gl.sum(0)
        gf = (gl @ p["fc.weight"]).reshape(h2.shape)
        ga2 = np.where(a2 > 0, pool_bwd(gf, i2, r2.shape), 0)
        gh1, gw2, gb2 = np_conv_bwd(ga2, cols2, p["conv2.weight"], h1.shape)
        ga1 = np.where(a1 > 0, pool_bwd(gh1, i1, r1.shape), 0)
        _, gw1, gb1 = np_conv_bwd(ga1, cols1, p["conv1.weight"], xb.shape, need_x=False)
        for k, gk in (("conv1.weight", gw1), ("conv1.bias", gb1), ("conv2.weight", gw2), ("conv2.bias", gb2),
                      ("fc.weight", gfw), ("fc.bias", gfb)):
            p[k] -= lr * gk

    fns = {"minigrad": mg_step, "numpy": np_step}
    torch = torch_or_none()
    if torch is not None:
        tm = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(128, 10))
        topt = torch.optim.SGD(tm.parameters(), lr=lr)
        tx, ty = torch.tensor(xb), torch.tensor(yb)

        def th_step():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tm(tx), ty).backward()
            topt.step()

        fns["torch"] = th_step
    return bench_side_by_side(fns, rounds=rounds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    print(f"NumPy {np.__version__}, BLAS threads {blas_threads()}, cpus {os.cpu_count()}")
    conv = bench_conv(a.rounds)
    step = bench_cnn_step(a.rounds)
    report("conv2d forward + backward (input and weight), float32", [
        ("x (64,16,32,32) * w (32,16,3,3), pad 1", conv),
    ], targets={"x (64,16,32,32) * w (32,16,3,3), pad 1": "<= 1.1x numpy"})
    e = conv["einsum"]
    print(f"{'  np.einsum(optimize=True) on the 6-D view':44s} {e * 1e6:9.1f}us  "
          f"(minigrad / einsum {conv['minigrad'] / e:.2f}x, numpy floor / einsum {conv['numpy'] / e:.2f}x)")
    report("cnn_digits training step (SGD), batch 64, float32", [("conv32-pool-conv32-pool-linear", step)])


if __name__ == "__main__":
    main()
