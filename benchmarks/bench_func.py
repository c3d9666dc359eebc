"""mg.func (issue 31): forward mode and the function transforms, each against a baseline timed in
the same run. Run:

    python benchmarks/bench_func.py          # BENCH_THREADS=1 pins torch and NumPy's BLAS to one thread

Workloads, ratios and targets (reported here, never asserted in tests):

- ``jvp`` of the 1000-op chain of bench_core.py (16 float64): ``mg.func.jvp`` / the eager forward
  alone (inputs that require no grad: nothing recorded), target <= 2.5x;
- ``hvp`` of the batch-64 MLP loss of bench_mlp.py (64-128-128-10, tanh, cross-entropy, float32)
  w.r.t. its six parameters: ``mg.func.hvp`` / one eager gradient (forward and backward,
  ``mg.grad``), target <= 4x;
- ``jacrev``, ``jacfwd`` and ``hessian`` of a 50-parameter function (``tanh(A x + b)``, and the
  sum of its squares for the Hessian; float64), with ``jacrev(jacrev)`` beside the Hessian: each
  one batched pass (vmap, issue 40), target <= 1.0x torch.func's in the same run;
- per-sample gradients of the batch-64 MLP's loss (issue 40): ``vmap(grad(loss), in_dims=(None, 0, 0))``
  over a dict of the six parameters, as PyTorch's tutorial writes it, / one batched gradient
  (``mg.grad`` of the batch's loss), target <= 4x; and against torch.func's per-sample gradients,
  target <= 1.0x, or <= 1.2x the NumPy floor where that floor is itself slower than torch.func.
  The floor is the same computation written by hand in NumPy: the batch's forward, its deltas
  backwards, and one einsum of the outer products per layer (``bi,bj->bij``).

Each row also shows torch.func's figure and ratio in the same run (torch CPU, when installed).
A workload that reaches an op without a forward-mode rule prints the op instead of a time.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import minigrad as mg  # noqa: E402
from _harness import bench_side_by_side, blas_threads, torch_or_none  # noqa: E402
from bench_core import BLOCKS  # noqa: E402
from bench_mlp import init_weights, load_data  # noqa: E402

F = mg.func


# -- the workloads: each returns {name: fn} for minigrad ("minigrad", "base") and torch ("torch", "torch base")

def chain_jvp(torch, n=16):
    """jvp of bench_core's chain w.r.t. x (a and b are constants), and the forward alone."""
    rng = np.random.default_rng(0)
    x0, a0, b0 = (rng.standard_normal(n) * 0.5 for _ in range(3))
    a0 = 0.5 + 0.1 * a0
    u0 = rng.standard_normal(n)

    def chain(y, a, b):
        for _ in range(BLOCKS):
            y = ((y * a + b) * a + b).tanh()
        return y

    x, a, b, u = (mg.from_numpy(v) for v in (x0, a0, b0, u0))
    f = lambda x: chain(x, a, b)  # noqa: E731
    fns = {"minigrad": lambda: F.jvp(f, (x,), (u,)), "base": lambda: f(x)}
    if torch is not None:
        xt, at, bt, ut = (torch.from_numpy(v) for v in (x0, a0, b0, u0))
        ft = lambda x: chain(x, at, bt)  # noqa: E731
        fns["torch"] = lambda: torch.func.jvp(ft, (xt,), (ut,))
        fns["torch base"] = lambda: ft(xt)
        np.testing.assert_allclose(fns["minigrad"]()[1].numpy(), fns["torch"]()[1].numpy(), rtol=1e-10, atol=1e-12)
    return fns


def mlp_hvp(torch, batch=64):
    """hvp of the MLP's loss w.r.t. its parameters, and one gradient of it (forward and backward)."""
    X, y = load_data()
    X, y = X[:batch], y[:batch]
    weights = [a for W, b in init_weights() for a in (W, b)]
    rng = np.random.default_rng(1)
    vs0 = [rng.standard_normal(w.shape).astype(np.float32) for w in weights]

    def make(lib, linear, tanh, cross_entropy, asarray):
        xb, yb = asarray(X), asarray(y)

        def loss(*ps):
            h = xb
            for k in range(0, len(ps), 2):
                h = linear(h, ps[k], ps[k + 1])
                if k < len(ps) - 2:
                    h = tanh(h)
            return cross_entropy(h, yb)

        return loss, [asarray(w) for w in weights], [asarray(v) for v in vs0]

    loss, ps, vs = make(mg, mg.nn.functional.linear, mg.tanh, mg.nn.functional.cross_entropy, mg.tensor)
    leaves = [p.detach().requires_grad_() for p in ps]
    every = tuple(range(len(ps)))
    fns = {"minigrad": lambda: F.hvp(loss, tuple(ps), tuple(vs)), "base": lambda: mg.grad(loss(*leaves), leaves)}
    if torch is not None:
        nnf = torch.nn.functional
        lt, pt, vt = make(torch, nnf.linear, torch.tanh, nnf.cross_entropy, torch.from_numpy)
        tleaves = [p.detach().requires_grad_() for p in pt]
        fns["torch"] = lambda: torch.func.jvp(torch.func.grad(lt, argnums=every), tuple(pt), tuple(vt))
        fns["torch base"] = lambda: torch.autograd.grad(lt(*tleaves), tleaves)
        for got, want in zip(fns["minigrad"]()[1], fns["torch"]()[1], strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3, atol=1e-5)
    return fns


def jacobians(torch, n=50):
    """jacrev / jacfwd of tanh(A x + b) (50 -> 50) and the Hessian of the sum of its squares."""
    rng = np.random.default_rng(2)
    A0, b0, x0 = rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal(n) * 0.1, rng.standard_normal(n)

    def make(lib, tanh, asarray):
        A, b = asarray(A0), asarray(b0)

        def vec(x):
            return tanh(A @ x + b)

        def scal(x):
            return (vec(x) ** 2).sum()

        return vec, scal, asarray(x0)

    vec, scal, x = make(mg, mg.tanh, mg.tensor)
    out = {"jacrev (50 -> 50)": {"minigrad": lambda: F.jacrev(vec)(x)},
           "jacfwd (50 -> 50)": {"minigrad": lambda: F.jacfwd(vec)(x)},
           "hessian (50 -> 1)": {"minigrad": lambda: F.hessian(scal)(x)},
           "jacrev(jacrev) (50 -> 1)": {"minigrad": lambda: F.jacrev(F.jacrev(scal))(x)}}
    if torch is not None:
        vt, st, xt = make(torch, torch.tanh, torch.from_numpy)
        out["jacrev (50 -> 50)"]["torch"] = lambda: torch.func.jacrev(vt)(xt)
        out["jacfwd (50 -> 50)"]["torch"] = lambda: torch.func.jacfwd(vt)(xt)
        out["hessian (50 -> 1)"]["torch"] = lambda: torch.func.hessian(st)(xt)
        out["jacrev(jacrev) (50 -> 1)"]["torch"] = lambda: torch.func.jacrev(torch.func.jacrev(st))(xt)
        for fns in out.values():
            np.testing.assert_allclose(fns["minigrad"]().numpy(), fns["torch"]().numpy(), rtol=1e-9, atol=1e-12)
    return out


def per_sample_grads(torch, batch=64):
    """Every example's gradient of the MLP's loss (a dict of six (64, ...) arrays), one batched
    gradient, torch.func's per-sample gradients and the hand-written NumPy floor."""
    X, y = load_data()
    X, y = X[:batch], y[:batch]
    weights = init_weights()
    names = [f"{k}{i}" for i in range(len(weights)) for k in ("w", "b")]
    arrays = [a for W, b in weights for a in (W, b)]

    def make(linear, tanh, cross_entropy, asarray):
        def loss(p, x, yy):
            h = x
            for i in range(len(weights)):
                h = linear(h, p[f"w{i}"], p[f"b{i}"])
                if i < len(weights) - 1:
                    h = tanh(h)
            return cross_entropy(h, yy)

        return loss, {k: asarray(a) for k, a in zip(names, arrays, strict=True)}, asarray(X), asarray(y)

    loss, params, xb, yb = make(mg.nn.functional.linear, mg.tanh, mg.nn.functional.cross_entropy, mg.tensor)
    one = lambda p, x, yy: loss(p, x[None], yy[None])  # noqa: E731 - one example, as a batch of one
    leaves = {k: v.detach().requires_grad_() for k, v in params.items()}
    order = list(leaves.values())
    fns = {"minigrad": lambda: F.vmap(F.grad(one), in_dims=(None, 0, 0))(params, xb, yb),
           "base": lambda: mg.grad(loss(leaves, xb, yb), order),
           "floor": lambda: _psg_floor(arrays, X, y)}
    if torch is not None:
        nnf = torch.nn.functional
        lt, pt, xt, yt = make(nnf.linear, torch.tanh, nnf.cross_entropy, torch.from_numpy)
        onet = lambda p, x, yy: lt(p, x[None], yy[None])  # noqa: E731
        tleaves = {k: v.detach().requires_grad_() for k, v in pt.items()}
        fns["torch"] = lambda: torch.func.vmap(torch.func.grad(onet), in_dims=(None, 0, 0))(pt, xt, yt)
        fns["torch base"] = lambda: torch.autograd.grad(lt(tleaves, xt, yt), list(tleaves.values()))
        got, want = fns["minigrad"](), fns["torch"]()
        for k in names:
            np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-3, atol=1e-6)
    got, floor = fns["minigrad"](), fns["floor"]()
    for k in names:
        np.testing.assert_allclose(got[k].numpy(), floor[k], rtol=1e-3, atol=1e-6)
    return fns


def _psg_floor(arrays, X, y):
    """Per-sample gradients by hand in NumPy: the batch's forward, each example's deltas backwards,
    one einsum of outer products per weight (the deltas themselves are the biases' gradients)."""
    Ws, bs = arrays[0::2], arrays[1::2]
    hs = [X]
    for i, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        z = hs[-1] @ W.T + b
        hs.append(np.tanh(z) if i < len(Ws) - 1 else z)
    z = hs[-1]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1  # each example's d loss / d logits (its loss is a batch of one's mean)
    d, out = p, {}
    for i in range(len(Ws) - 1, -1, -1):
        out[f"w{i}"] = np.einsum("bi,bj->bij", d, hs[i])
        out[f"b{i}"] = d
        if i:
            d = (d @ Ws[i]) * (1 - hs[i] ** 2)
    return out


# -- the table --------------------------------------------------------------------------------------

def _us(t):
    return f"{t * 1e6:10.1f}us" if t is not None else f"{'-':>12s}"


def _ratio(a, b):
    return f"{a / b:7.2f}x" if a is not None and b else f"{'-':>8s}"


def _missing_rule(e):
    return isinstance(e, RuntimeError) and "forward-mode rule" in str(e)


def run(name, make, torch, rounds, target=None, base=None, vs="base"):
    """Time one workload's functions side by side; returns its row (or None, having said why).
    ``target`` bounds minigrad's time over the ``vs`` entry's ("base" or "torch")."""
    try:
        fns = make(torch)
        fns["minigrad"]()
    except RuntimeError as e:
        if not _missing_rule(e):
            raise
        print(f"{name}: not timed, {e}")
        return None
    t = bench_side_by_side(fns, rounds=rounds)
    return name, t, target, base, vs


def main(argv=None):
    ap = argparse.ArgumentParser(description="mg.func's transforms against same-run baselines and torch.func.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per workload (best time kept)")
    args = ap.parse_args(argv)
    torch = torch_or_none()
    print(f"threads: torch {torch.get_num_threads() if torch else '-'}, NumPy's BLAS {blas_threads()} "
          "(BENCH_THREADS=N pins both)")
    rows = [run("jvp, chain 1000 ops (16 float64)", chain_jvp, torch, args.rounds, "<= 2.5x", "the eager forward"),
            run("hvp, MLP loss batch 64 (float32)", mlp_hvp, torch, args.rounds, "<= 4x", "one eager gradient")]
    try:
        jacs = jacobians(torch)
    except RuntimeError as e:
        if not _missing_rule(e):
            raise
        print(f"jacobians of a 50-parameter function: not timed, {e}")
        jacs = {}
    for name, fns in jacs.items():
        if name.startswith("jacrev(jacrev)"):
            rows.append(run(name, lambda _torch, fns=fns: fns, torch, args.rounds))
        else:
            rows.append(run(name, lambda _torch, fns=fns: fns, torch, args.rounds, "<= 1.0x", "torch.func", "torch"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows.append(run("per-sample grads, MLP batch 64", per_sample_grads, torch, args.rounds, "<= 4x",
                        "one batched gradient"))
    for w in {str(w.message) for w in caught}:
        print(f"per-sample grads: {w}")

    print("\n== mg.func (issue 31): time per call; ratios to the same-run baseline and to torch.func")
    print(f"{'workload':34s} {'minigrad':>12s} {'baseline':>12s} {'ratio':>8s} {'target':>8s}  "
          f"{'torch.func':>12s} {'baseline':>12s} {'ratio':>8s} {'mg/torch':>8s}")
    for row in rows:
        if row is None:
            continue
        name, t, target, base, vs = row
        m, b, th, thb = t.get("minigrad"), t.get("base"), t.get("torch"), t.get("torch base")
        print(f"{name:34s} {_us(m)} {_us(b)} {_ratio(m, b)} {target if vs == 'base' and target else '-':>8s}  "
              f"{_us(th)} {_us(thb)} {_ratio(th, thb)} {_ratio(m, th)}")
    for row in rows:
        if row is not None and row[2]:
            name, t, target, base, vs = row
            if t.get(vs) is None:
                continue
            _verdict(name, t["minigrad"] / t[vs], target, base)
            if "floor" in t:
                _floor_verdict(name, t)


def _verdict(name, r, target, base):
    limit = float(target.split()[-1].rstrip("x"))
    print(f"{name}: {r:.2f}x {base} (target {target}) -> {'met' if r <= limit else 'MISSED'}")


def _floor_verdict(name, t):
    """Against torch.func: <= 1.0x its time, or <= 1.2x the NumPy floor where the floor is slower."""
    m, fl, th = t["minigrad"], t["floor"], t.get("torch")
    print(f"{name}: the NumPy floor (one einsum of outer products per layer) {_us(fl).strip()}, "
          f"minigrad {m / fl:.2f}x it")
    if th is None:
        return
    if fl > th:
        _verdict(name, m / fl, "<= 1.2x", f"the NumPy floor (slower than torch.func's {_us(th).strip()})")
    else:
        _verdict(name, m / th, "<= 1.0x", "torch.func")


if __name__ == "__main__":
    main()
